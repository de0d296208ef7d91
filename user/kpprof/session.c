// SPDX-License-Identifier: GPL-2.0
/* session.c - device + decoder + ring + aggregation, for the consuming verbs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "notes.h"
#include "profile_write.h"
#include "session.h"

int kpp_parse_u64(const char *verb, const char *opt, const char *arg, uint64_t *out)
{
	char *end;

	if (!arg || !*arg || *arg == '-') {
		fprintf(stderr, "kpprof %s: %s needs a non-negative number\n", verb, opt);
		return 1;
	}
	errno = 0;
	*out = strtoull(arg, &end, 0);
	if (errno || *end) {
		fprintf(stderr, "kpprof %s: %s: '%s' is not a number\n", verb, opt, arg);
		return 1;
	}
	return 0;
}

int kpp_session__record(void *ctx, const void *data, size_t len)
{
	struct kpp_session *s = ctx;
	struct kpp_rec r;
	int err;

	if (kpp_decoder__decode(s->dec, data, len, &r)) {
		/* Counted and reported by stat/comment; one bad record stops nothing. */
		((struct kpp_agg_stats *)kpp_agg__stats(s->agg))->bad_records++;
		return 0;
	}
	if (s->only_root && r.kind != KPPROF_REC_COMM && r.kind != KPPROF_REC_CYCLE &&
	    !kpp_agg__descends_from(s->agg, r.tgid, s->root)) {
		s->skipped++;
		return 0;
	}
	if (r.kind == KPPROF_REC_NOTE) {
		const struct kpp_proc *p = kpp_agg__proc(s->agg, r.tgid);

		kpp_note__say(stderr, &r, p ? p->comm : NULL);
	}
	err = kpp_agg__add(s->agg, &r);
	if (!err && r.kind == KPPROF_REC_MMAP && s->sym) {
		/*
		 * Open the object now, while the process lives (its files may
		 * exist only in its mount namespace or root): cached by
		 * build-id, it still symbolizes after the process exited.
		 */
		const struct kpp_map *m = kpp_proc__map_for(kpp_agg__proc(s->agg, r.tgid),
							    r.mmap.start);

		if (m)
			kpp_symbolizer__prefetch(s->sym, r.tgid, m);
	}
	return err == -ENOMEM ? err : 0;
}

void kpp_session__close(struct kpp_session *s)
{
	kpp_ring__free(s->ring);
	kpp_decoder__free(s->dec);
	kpp_agg__free(s->agg);
	kpp_symbolizer__free(s->sym);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int kpp_session__open(struct kpp_session *s, const struct kpp_agg_limits *lim)
{
	char err_buf[256];
	char *format;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = kpprof_dev__open();
	if (s->fd < 0) {
		fprintf(stderr, "kpprof: %s: %s\n", KPPROF_DEVICE_PATH, kpprof_dev__explain(s->fd));
		s->fd = -1;
		return 1;
	}
	err = kpprof_dev__info(s->fd, &s->info);
	if (err) {
		fprintf(stderr, "kpprof: GET_INFO: %s\n", kpprof_dev__explain(err));
		goto fail;
	}
	if (s->info.abi_version != KPPROF_ABI_VERSION) {
		fprintf(stderr, "kpprof: the module speaks ABI %u, this collector %u: rebuild them together\n",
			s->info.abi_version, KPPROF_ABI_VERSION);
		goto fail;
	}
	err = kpprof_dev__format(s->fd, &format);
	if (err) {
		fprintf(stderr, "kpprof: GET_FORMAT: %s\n", kpprof_dev__explain(err));
		goto fail;
	}
	s->dec = kpp_decoder__new(format, err_buf, sizeof(err_buf));
	free(format);
	if (!s->dec) {
		fprintf(stderr, "kpprof: cannot use the module's record format: %s\n", err_buf);
		goto fail;
	}
	s->agg = kpp_agg__new(lim);
	s->sym = kpp_symbolizer__new();
	if (!s->agg || !s->sym) {
		fprintf(stderr, "kpprof: out of memory\n");
		goto fail;
	}
	s->ring = kpp_ring__new(s->fd, kpp_session__record, s);
	if (!s->ring) {
		fprintf(stderr, "kpprof: cannot attach to the ring: %s\n", kpprof_dev__explain(-errno));
		goto fail;
	}
	kpprof_dev__stats(s->fd, &s->base);
	return 0;
fail:
	kpp_session__close(s);
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int kpp_session__settle(struct kpp_session *s, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint64_t target;

	/*
	 * Ask for a new cycle c: every record accepted before it is in cycle
	 * < c, and the kernel's cycle record for c (or any later record)
	 * proves them complete.  If that cycle record is dropped (ring full),
	 * ask again.
	 */
	while (now_ms() < deadline) {
		int err = kpprof_dev__advance_cycle(s->fd, &target);

		if (err)
			return err;
		for (int i = 0; i < 20 && now_ms() < deadline; i++) {
			int n = kpp_session__poll(s, 50);

			if (n < 0)
				return n;
			if (kpp_agg__first_incomplete(s->agg) >= target)
				return 0;
		}
	}
	return -ETIMEDOUT;
}

static int reap_one(void *ctx, struct kpp_proc *p)
{
	(void)ctx;
	if (p->state == KPP_PROC_ALIVE && p->pid && kill(p->pid, 0) && errno == ESRCH) {
		p->state = KPP_PROC_EXITED;
	}
	return 0;
}

void kpp_session__reap(struct kpp_session *s)
{
	kpp_agg__for_each_proc(s->agg, reap_one, NULL);
}

struct learn_ctx {
	uint32_t pids[256];
	int n;
};

struct learn_ctx_s {
	struct learn_ctx l;
	const struct kpp_session *s;
};

static int want_maps(void *c, struct kpp_proc *p)
{
	struct learn_ctx_s *ctx = c;

	/* record: only the processes it profiles; the rest have no buckets. */
	if (ctx->s->only_root && !kpp_agg__descends_from(ctx->s->agg, p->pid, ctx->s->root))
		return 0;
	if (p->state == KPP_PROC_ALIVE && p->pid && !p->nr_maps && ctx->l.n < 256)
		ctx->l.pids[ctx->l.n++] = p->pid;
	return 0;
}

void kpp_session__learn_maps(struct kpp_session *s)
{
	struct learn_ctx_s ctx = { .s = s };

	kpp_agg__for_each_proc(s->agg, want_maps, &ctx);
	for (int i = 0; i < ctx.l.n; i++) {
		const struct kpp_proc *p;

		kpp_proc__read_maps(s->agg, ctx.l.pids[i]);
		p = kpp_agg__proc(s->agg, ctx.l.pids[i]);
		for (size_t k = 0; p && s->sym && k < p->nr_maps; k++)
			kpp_symbolizer__prefetch(s->sym, p->pid, &p->maps[k]);
	}
}

int kpp_session__poll(struct kpp_session *s, int timeout_ms)
{
	int n = kpp_ring__poll(s->ring, timeout_ms);

	if (n < 0 && !s->ring_error) {
		/* Said once: a corrupt ring (EPROTO) or no memory stays so. */
		fprintf(stderr, "kpprof: reading the ring: %s%s\n", strerror(-n),
			n == -EPROTO ? " (corrupt entry; profiles stop here)" : "");
		s->ring_error = n;
	}
	return n;
}
