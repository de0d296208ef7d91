/* SPDX-License-Identifier: GPL-2.0 */
/*
 * access.h - which processes an HTTP client of `kpprof serve` may see: the
 * rule of /proc/PID/maps (ptrace read access), for processes that may
 * have exited.  A client that is not root, CAP_PERFMON or CAP_SYS_ADMIN
 * (peer.h) sees a process only when
 *   - every record the process wrote carried the client's uid (the kernel
 *     stamps it; a process that changed uid, e.g. a daemon dropping root,
 *     is not the client's), and
 *   - while it lives, /proc/PID/maps is owned by the client's uid (the kernel
 *     gives a non-dumpable process's /proc files to root: setuid, setgid,
 *     PR_SET_DUMPABLE 0) and its real, effective, saved and fs uids are the
 *     client's.  A process once seen failing that stays hidden after exit.
 */
#ifndef KPPROF_ACCESS_H
#define KPPROF_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "agg.h"
#include "peer.h"

struct kpp_access;

struct kpp_access *kpp_access__new(void);
void kpp_access__free(struct kpp_access *a);
/* kpp_access__note - process @serial (pid @pid) wrote a record stamped @uid. */
void kpp_access__note(struct kpp_access *a, uint32_t pid, uint64_t serial, uint32_t uid);
/* kpp_access__prune - forget processes @agg no longer holds. */
void kpp_access__prune(struct kpp_access *a, const struct kpp_agg *agg);
/* kpp_access__may_see - may @peer see process @p? */
bool kpp_access__may_see(struct kpp_access *a, const struct kpp_peer *peer,
			 const struct kpp_proc *p);

/*
 * struct kpp_pidset - the processes a client may see, taken once per
 * request under the session lock: (pid, serial) pairs, so that a pid
 * reused since by another process (another user's) is not in it.
 */
struct kpp_pidset_ent {
	uint32_t pid;
	uint64_t serial;
};

struct kpp_pidset {
	bool all;
	const struct kpp_agg *agg;	/* taken from: kpp_pidset__has looks here */
	struct kpp_pidset_ent *pids;
	size_t n, cap;
};

/* 0 or -ENOMEM. */
int kpp_pidset__take(struct kpp_pidset *set, struct kpp_access *a, const struct kpp_peer *peer,
		     const struct kpp_agg *agg);
/*
 * kpp_pidset__has - a kpp_pid_filter: the process under @pid in the agg the
 * set was taken from (so: under the session lock) is one of the set.
 */
bool kpp_pidset__has(void *set, uint32_t pid);
/* kpp_pidset__has_proc - process (@pid, @serial) is one of the set (any agg, a copy). */
bool kpp_pidset__has_proc(const struct kpp_pidset *set, uint32_t pid, uint64_t serial);
void kpp_pidset__release(struct kpp_pidset *set);

#endif
