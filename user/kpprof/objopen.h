/* SPDX-License-Identifier: GPL-2.0 */
/*
 * objopen.h - open files on behalf of a producer with no more rights than
 * it has (see objopen.c for the rules).
 */
#ifndef KPPROF_OBJOPEN_H
#define KPPROF_OBJOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"

/* true if @fd is on /proc, /sys or another pseudo file system (or unknown). */
bool kpp_fd_on_pseudo_fs(int fd);
/* @fd if it is a regular file on a real file system, else closed and -EINVAL. */
int kpp_keep_regular(int fd);
/* openat2(@dfd, @path, @resolve) of a regular file only (looked at with O_PATH first). */
int kpp_openat2_regular(int dfd, const char *path, uint64_t resolve, bool nofollow);
/*
 * kpp_open_as_producer - absolute @path inside the root of live process
 * @pid, opened with its file-system credentials, only while it is wholly
 * @uid's (its records' uid).  -errno if it could not.
 */
int kpp_open_as_producer(uint32_t pid, uint32_t uid, const char *path, bool nofollow);
/* kpp_open_as_uid - absolute @path as we see it, opened with fsuid @uid,
 * fsgid nogroup and no supplementary groups. */
int kpp_open_as_uid(uint32_t uid, const char *path);
/*
 * kpp_pid_is_producers - process @pid is wholly @uid's (all uids @uid, all
 * gids one) and dumpable: the process whose records say @uid, not a reused
 * pid nor a setuid/setgid program exec'd since.  Always true for @uid 0
 * (root's claims: the process now has no more rights than root).
 */
bool kpp_pid_is_producers(uint32_t pid, uint32_t uid);
/*
 * kpp_open_map_files - /proc/@pid/map_files/START-END of @m, and its target
 * as the process sees it in @real ("" if unknown); only while @pid is
 * wholly @m->uid's and dumpable.
 */
int kpp_open_map_files(uint32_t pid, const struct kpp_map *m, char *real, size_t len);
/*
 * kpp_proc_gone - process @pid has no memory left to open files through
 * (reaped, a zombie, or in do_exit()), judged by its thread-group leader;
 * kpp_proc_stat_gone - the task whose /proc/.../stat @fd was opened on is
 * (reaped since included): that task, not whatever holds its pid now.
 */
bool kpp_proc_gone(uint32_t pid);
bool kpp_proc_stat_gone(int fd);

#endif
