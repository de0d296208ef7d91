/* SPDX-License-Identifier: GPL-2.0 */
/*
 * session.h - what every consuming verb (record, collect, serve) shares:
 * the device, the decoder built from the module's format text, the ring,
 * the aggregation and the symbolizer.  Errors are printed here, once, as
 * one line that says what is wrong and what to do.
 */
#ifndef KPPROF_SESSION_H
#define KPPROF_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "agg.h"
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

/* Shared by the verbs: parse a non-negative integer option or say why not. */
int kpp_parse_u64(const char *verb, const char *opt, const char *arg, uint64_t *out);

#endif
