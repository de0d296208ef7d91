/* SPDX-License-Identifier: GPL-2.0 */
/*
 * session.h - what every consuming verb (record, collect, serve) shares:
 * the device, the decoder built from the module's format text, the ring,
 * the aggregation and the symbolizer.  Errors are printed here, once, as
 * one line that says what is wrong and what to do.
 */
#ifndef KPPROF_SESSION_H
#define KPPROF_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agg.h"
#include "collector_stats.h"
#include "decode.h"
#include "ring.h"
#include "symbolize.h"

struct kpp_session {
	int fd;
	struct kpprof_info info;
	struct kpp_decoder *dec;
	struct kpp_agg *agg;
	struct kpp_ring *ring;
	struct kpp_symbolizer *sym;
	/* record: only @root and its descendants are aggregated. */
	bool only_root;
	uint32_t root;
	uint64_t skipped;	/* records of other processes (only_root) */
	int ring_error;		/* first error reading the ring, reported once */
	/*
	 * The kernel's counters when this session attached: they count over
	 * the module's lifetime, and only drops since then undercount our
	 * profiles (an old drop must not warn forever).
	 */
	struct kpprof_stats base;
	/*
	 * The symbolizer shared with threads that symbolize without the
	 * drainer's lock (kpp_session__share_symbolizer): prefetches the
	 * ring callback could not do at once wait here, bounded.
	 */
	bool sym_shared;
	pthread_mutex_t sym_lock;
	struct kpp_pending_prefetch *pending;
	size_t nr_pending;
	uint64_t prefetch_deferred, prefetch_lost;
	struct kpp_collector_stats pub;	/* for `kpprof stat` */
	/* serve: told of each record once aggregated (whose uid wrote what). */
	void (*on_record)(struct kpp_session *s, const struct kpp_rec *r);
};

/* kpp_session__open - 0, or 1 after printing why not. */
int kpp_session__open(struct kpp_session *s, const struct kpp_agg_limits *lim);
void kpp_session__close(struct kpp_session *s);
/*
 * kpp_session__settle - end the current cycle and read the ring until the
 * kernel's cycle record proves it complete, so the profile holds every
 * record accepted so far.  0, or -ETIMEDOUT.
 */
int kpp_session__settle(struct kpp_session *s, int timeout_ms);
/* kpp_session__poll - kpp_ring__poll, reporting the first error once. */
int kpp_session__poll(struct kpp_session *s, int timeout_ms);
/* Feed one ring record (the ring callback; exposed for tests). */
int kpp_session__record(void *ctx, const void *data, size_t len);
/* Mark processes that vanished without an EXIT record (killed) as exited. */
void kpp_session__reap(struct kpp_session *s);
/* Fill in /proc maps for live processes no MMAP record described. */
void kpp_session__learn_maps(struct kpp_session *s);

/*
 * Symbolizing off the lock the ring drainer needs (review M8).  A server
 * whose request threads symbolize calls kpp_session__share_symbolizer()
 * once, before they start.  From then on the ring callback never waits
 * for the symbolizer: a prefetch (MMAP record) that finds it busy is
 * queued (at most KPP_PENDING_PREFETCH, then counted as lost: the object
 * is then opened at its first lookup) and done by the next record or poll
 * that finds it free.  Threads hold the symbolizer with sym_lock/unlock
 * around kpp_profile__encode_gz/write_legacy/kpp_symbolizer__lookup_pid,
 * on copies taken under the drainer's lock (kpp_view__detach,
 * kpp_agg__copy_procs).  The lock order is: the drainer's lock, then the
 * symbolizer's, never the other way round.
 */
#define KPP_PENDING_PREFETCH 1024
int kpp_session__share_symbolizer(struct kpp_session *s);
void kpp_session__sym_lock(struct kpp_session *s);
void kpp_session__sym_unlock(struct kpp_session *s);

/* Shared by the verbs: parse a non-negative integer option or say why not. */
int kpp_parse_u64(const char *verb, const char *opt, const char *arg, uint64_t *out);

#endif
