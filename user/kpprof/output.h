/* SPDX-License-Identifier: GPL-2.0 */
/* output.h - write the heap, mutex and block profiles of a session into a directory. */
#ifndef KPPROF_OUTPUT_H
#define KPPROF_OUTPUT_H

#include "session.h"
#include "view.h"

/* 0, or 1 after printing why not.  @quiet: no "wrote" lines. */
int kpp_output__dir(struct kpp_session *s, const char *dir, kpp_pid_filter filter,
		    void *ctx, bool quiet);
/*
 * mkdir for one level, with a clear message; 0 or 1.  Refuses (1) a
 * directory another user could tamper with: see kpp_output__open_dir.
 */
int kpp_output__mkdir(const char *verb, const char *dir);
/*
 * kpp_output__open_dir - an O_PATH fd on @dir, after checking every
 * directory of its resolved path: owned by us or root, and not writable by
 * group or others unless sticky.  -1 after printing why not.
 */
int kpp_output__open_dir(const char *verb, const char *dir);
/* The collector's losses since the session opened, for a warning; true if any. */
bool kpp_output__losses(const struct kpp_session *s, char *buf, size_t len);
/* A profile's comment: the losses, then the processes whose shim stopped
 * under seccomp (kpp_output__quiet_procs). */
void kpp_output__comment(const struct kpp_session *s, char *buf, size_t len);
/* "; pid N: seccomp filter installed, ..." per such process; true if any. */
bool kpp_output__quiet_procs(const struct kpp_session *s, char *buf, size_t len);

#endif
