// SPDX-License-Identifier: GPL-2.0
/* output.c - the three profiles of a session, written as DIR/{heap,mutex,block}.pb.gz. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dev.h"
#include "output.h"
#include "profile_write.h"

int kpp_output__mkdir(const char *verb, const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "kpprof %s: cannot create directory %s: %s\n", verb, dir, strerror(errno));
		return 1;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "kpprof %s: %s is not a directory\n", verb, dir);
		return 1;
	}
	return 0;
}

/* One sentence per process whose shim stopped under a seccomp filter. */
struct quiet_ctx {
	char *buf;
	size_t len, used;
	unsigned int n;
};

static int note_quiet(void *ctx, struct kpp_proc *p)
{
	struct quiet_ctx *q = ctx;
	int n;

	if (!p->seccomp_stopped || q->used >= q->len)
		return 0;
	n = snprintf(q->buf + q->used, q->len - q->used,
		     "; pid %u: seccomp filter installed, heap/lock sampling stopped (%llu events not recorded)",
		     p->pid, (unsigned long long)p->seccomp_unsent);
	if (n > 0)
		q->used += (size_t)n;
	q->n++;
	return 0;
}

bool kpp_output__quiet_procs(const struct kpp_session *s, char *buf, size_t len)
{
	struct quiet_ctx q = { buf, len, 0, 0 };

	if (len)
		buf[0] = '\0';
	kpp_agg__for_each_proc(s->agg, note_quiet, &q);
	return q.n != 0;
}

bool kpp_output__losses(const struct kpp_session *s, char *buf, size_t len)
{
	const struct kpp_agg_stats *a = kpp_agg__stats(s->agg);
	struct kpprof_stats st = { 0 };
	uint64_t d[KPPROF_DROP_REASONS];

	kpprof_dev__stats(s->fd, &st);
	/* Only what was dropped while this session listened. */
	for (int i = 0; i < KPPROF_DROP_REASONS; i++)
		d[i] = st.dropped[i] >= s->base.dropped[i] ? st.dropped[i] - s->base.dropped[i] : 0;
	snprintf(buf, len,
		 "kpprof: ring drops %llu (full) %llu (disabled) %llu (share), bad records %llu, "
		 "over caps: buckets %llu stacks %llu live %llu, unknown frees %llu, "
		 "processes dropped %llu, producer rings lost %llu (emptied %llu)",
		 (unsigned long long)d[KPPROF_DROP_RING_FULL],
		 (unsigned long long)d[KPPROF_DROP_DISABLED],
		 (unsigned long long)d[KPPROF_DROP_SHARE],
		 (unsigned long long)a->bad_records, (unsigned long long)a->over_buckets,
		 (unsigned long long)a->over_stacks, (unsigned long long)a->over_live,
		 (unsigned long long)a->unknown_frees, (unsigned long long)a->procs_dropped,
		 (unsigned long long)a->lost_records, (unsigned long long)a->lost_resets);
	/* Unknown frees are normal (allocations sampled before we attached). */
	return d[KPPROF_DROP_RING_FULL] || d[KPPROF_DROP_SHARE] ||
	       a->bad_records || a->over_buckets || a->lost_records || a->lost_resets ||
	       a->over_stacks || a->over_live;
}

void kpp_output__comment(const struct kpp_session *s, char *buf, size_t len)
{
	size_t used;

	kpp_output__losses(s, buf, len);
	used = strlen(buf);
	kpp_output__quiet_procs(s, buf + used, len - used);
}

int kpp_output__dir(struct kpp_session *s, const char *dir, kpp_pid_filter filter,
		    void *ctx, bool quiet)
{
	static const struct { const char *file; int type; } outs[] = {
		{ "heap.pb.gz", KPP_HEAP },
		{ "mutex.pb.gz", KPP_MUTEX },
		{ "block.pb.gz", KPP_BLOCK },
	};
	char comment[2048], stopped[1024];
	struct kpp_write_opts o = { .comment = comment };

	if (kpp_output__losses(s, comment, sizeof(comment)) && !quiet)
		fprintf(stderr, "kpprof: warning: records were lost, the profiles undercount: %s\n",
			comment + strlen("kpprof: "));
	/* said once on stderr, and in every profile's comment */
	if (kpp_output__quiet_procs(s, stopped, sizeof(stopped)) && !quiet)
		fprintf(stderr, "kpprof: warning: %s\n", stopped + 2);
	kpp_output__comment(s, comment, sizeof(comment));
	kpp_session__learn_maps(s);
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		struct kpp_view v;
		char path[4096];
		int err;

		snprintf(path, sizeof(path), "%s/%s", dir, outs[i].file);
		err = kpp_view__take(&v, s->agg, outs[i].type, filter, ctx);
		if (!err)
			err = kpp_profile__write_file(path, &v, s->agg, s->sym, &o);
		if (err) {
			fprintf(stderr, "kpprof: cannot write %s: %s\n", path, strerror(-err));
			kpp_view__release(&v);
			return 1;
		}
		if (!quiet)
			fprintf(stderr, "kpprof: wrote %s (%zu buckets)\n", path, v.n);
		kpp_view__release(&v);
	}
	return 0;
}
