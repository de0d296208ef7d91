/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proc.h - whether a process still exists, for the collector's rules that
 * end a process's life in the profiles (session.c), judge what it can still
 * open (objopen.c) and check a pid named on the command line (collect.c).
 */
#ifndef KPPROF_PROC_H
#define KPPROF_PROC_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * kpp_proc_reaped - no process holds pid @pid any more (not even a zombie).
 * 0 and pids above INT_MAX are never a process: kill() would take them for
 * our own process group or another group, so they answer false (no claim
 * either way), and a caller that must refuse them checks them itself.
 * EPERM (another user's process) is not reaped.
 */
static inline bool kpp_proc_reaped(uint64_t pid)
{
	if (!pid || pid > INT_MAX)
		return false;
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

#endif
