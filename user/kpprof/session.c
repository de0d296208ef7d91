// SPDX-License-Identifier: GPL-2.0
/* session.c - device + decoder + ring + aggregation, for the consuming verbs. */
#include <errno.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "notes.h"
#include "proc.h"
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

struct kpp_pending_prefetch {
	uint32_t pid;
	struct kpp_map m;	/* path malloc'd */
};

int kpp_session__share_symbolizer(struct kpp_session *s)
{
	int err = pthread_mutex_init(&s->sym_lock, NULL);

	if (err)
		return -err;
	s->pending = calloc(KPP_PENDING_PREFETCH, sizeof(*s->pending));
	if (!s->pending) {
		pthread_mutex_destroy(&s->sym_lock);
		return -ENOMEM;
	}
	s->sym_shared = true;
	return 0;
}

void kpp_session__sym_lock(struct kpp_session *s)
{
	if (s->sym_shared)
		pthread_mutex_lock(&s->sym_lock);
}

void kpp_session__sym_unlock(struct kpp_session *s)
{
	if (s->sym_shared)
		pthread_mutex_unlock(&s->sym_lock);
}

/* Prefetches that waited for the symbolizer; it is held. */
static void run_pending(struct kpp_session *s)
{
	for (size_t i = 0; i < s->nr_pending; i++) {
		kpp_symbolizer__prefetch(s->sym, s->pending[i].pid, &s->pending[i].m);
		free(s->pending[i].m.path);
	}
	s->nr_pending = 0;
}

/*
 * prefetch - open @m's object now, while @pid lives; never waits for a
 * symbolizer another thread holds (queued instead, see session.h).
 */
static void prefetch(struct kpp_session *s, uint32_t pid, const struct kpp_map *m)
{
	struct kpp_pending_prefetch *q;

	if (!s->sym)
		return;
	if (!s->sym_shared) {
		kpp_symbolizer__prefetch(s->sym, pid, m);
		return;
	}
	if (!pthread_mutex_trylock(&s->sym_lock)) {
		run_pending(s);
		kpp_symbolizer__prefetch(s->sym, pid, m);
		pthread_mutex_unlock(&s->sym_lock);
		return;
	}
	if (s->nr_pending == KPP_PENDING_PREFETCH) {
		s->prefetch_lost++;
		return;
	}
	q = &s->pending[s->nr_pending];
	q->pid = pid;
	q->m = *m;
	q->m.path = strdup(m->path);
	if (!q->m.path) {
		s->prefetch_lost++;
		return;
	}
	s->nr_pending++;
	s->prefetch_deferred++;
}

/* Run what waited, if the symbolizer is free now. */
static void try_pending(struct kpp_session *s)
{
	if (!s->nr_pending || pthread_mutex_trylock(&s->sym_lock))
		return;
	run_pending(s);
	pthread_mutex_unlock(&s->sym_lock);
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
	/*
	 * record: only the command's tree.  A COMM record is kept when it
	 * names a member or a new child of one (its ppid is a member), so
	 * the tree is followed and the rest of the machine's processes cost
	 * nothing (no process table of every pid, no per-exit work).
	 */
	if (s->only_root && r.kind != KPPROF_REC_CYCLE &&
	    !kpp_agg__descends_from(s->agg, r.tgid, s->root) &&
	    !(r.kind == KPPROF_REC_COMM && r.comm.reason != KPPROF_COMM_EXIT &&
	      kpp_agg__descends_from(s->agg, r.comm.ppid, s->root))) {
		s->skipped++;
		return 0;
	}
	if (r.kind == KPPROF_REC_NOTE) {
		const struct kpp_proc *p = kpp_agg__proc(s->agg, r.tgid);

		kpp_note__say(stderr, &r, p ? p->comm : NULL);
	}
	err = kpp_agg__add(s->agg, &r);
	if (!err && s->on_record)
		s->on_record(s, &r);
	if (!err && r.kind == KPPROF_REC_MMAP && s->sym) {
		/*
		 * Open the object now, while the process lives (its files may
		 * exist only in its mount namespace or root): cached by
		 * build-id, it still symbolizes after the process exited.
		 */
		const struct kpp_map *m = kpp_proc__map_for(kpp_agg__proc(s->agg, r.tgid),
							    r.mmap.start);

		if (m)
			prefetch(s, r.tgid, m);
	} else if (s->nr_pending) {
		try_pending(s);
	}
	return err == -ENOMEM ? err : 0;
}

void kpp_session__close(struct kpp_session *s)
{
	for (size_t i = 0; i < s->nr_pending; i++)
		free(s->pending[i].m.path);
	free(s->pending);
	if (s->sym_shared)
		pthread_mutex_destroy(&s->sym_lock);
	kpp_collector_stats__close(&s->pub);
	kpp_ring__free(s->ring);
	kpp_decoder__free(s->dec);
	kpp_agg__free(s->agg);
	kpp_symbolizer__free(s->sym);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/*
 * The module refuses a collector in a pid namespace of its own (EXDEV);
 * in the host's, /proc must be the host's too: every pid the records
 * carry is looked up there (who may see it, its files, whether it is
 * gone).  A /proc mounted for another pid namespace has no /proc/self
 * for us, or names another pid; anything but a proc file system there
 * (a tmpfs with a self link) is refused too.
 */
static bool proc_is_ours(void)
{
	char buf[32], want[32];
	struct statfs fs;
	ssize_t n;

	if (statfs("/proc", &fs) || fs.f_type != PROC_SUPER_MAGIC) {
		fprintf(stderr, "kpprof: /proc is not a proc file system: run the collector with the host's /proc\n");
		return false;
	}
	n = readlink("/proc/self", buf, sizeof(buf) - 1);
	snprintf(want, sizeof(want), "%d", (int)getpid());
	if (n > 0) {
		buf[n] = '\0';
		if (!strcmp(buf, want))
			return true;
	}
	fprintf(stderr, "kpprof: /proc is not of the host's pid namespace (/proc/self %s, our pid %s): "
		"run the collector with the host's /proc\n", n > 0 ? buf : "missing", want);
	return false;
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
	if (!proc_is_ours())
		goto fail;
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
	if (p->state == KPP_PROC_ALIVE && kpp_proc_reaped(p->pid))
		kpp_agg__proc_exited(ctx, p);
	return 0;
}

void kpp_session__reap(struct kpp_session *s)
{
	kpp_agg__for_each_proc(s->agg, reap_one, s->agg);
	kpp_agg__expire(s->agg);
	/* serve's loop reaps without kpp_session__poll: publish here too. */
	kpp_collector_stats__publish(&s->pub, s);
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
	if (p->state == KPP_PROC_ALIVE && p->pid && ctx->l.n < 256 &&
	    (!p->nr_maps || kpp_proc__want_reread(p->pid)))
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
			prefetch(s, p->pid, &p->maps[k]);
	}
}

int kpp_session__poll(struct kpp_session *s, int timeout_ms)
{
	int n = kpp_ring__poll(s->ring, timeout_ms);

	if (s->nr_pending)
		try_pending(s);
	kpp_collector_stats__publish(&s->pub, s);
	if (n < 0 && !s->ring_error) {
		/* Said once: a corrupt ring (EPROTO) or no memory stays so. */
		fprintf(stderr, "kpprof: reading the ring: %s%s\n", strerror(-n),
			n == -EPROTO ? " (corrupt entry; profiles stop here)" : "");
		s->ring_error = n;
	}
	return n;
}
