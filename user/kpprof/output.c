// SPDX-License-Identifier: GPL-2.0
/* output.c - the three profiles of a session, written as DIR/{heap,mutex,block}.pb.gz. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev.h"
#include "output.h"
#include "profile_write.h"

/*
 * A directory we may write into on behalf of nobody else: owned by us or
 * root, and writable by no one else unless sticky (then no one can
 * replace what we create; /tmp is fine, a user's own directory is not for
 * root).  The rule holds for every directory on its resolved path, so no
 * other user can swap a component under us; and the fd we check is the
 * one all files are then created through.
 */
static bool dir_safe(const struct stat *st, const char **why)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		*why = "is owned by another user";
		return false;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		*why = "is writable by other users (and not sticky)";
		return false;
	}
	return true;
}

int kpp_output__open_dir(const char *verb, const char *dir)
{
	char real[PATH_MAX], at[PATH_MAX] = "/", *comp, *save = NULL;
	const char *why = "cannot be opened";
	struct stat st;
	int fd;

	if (!realpath(dir, real)) {
		fprintf(stderr, "kpprof %s: %s: %s\n", verb, dir, strerror(errno));
		return -1;
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (comp = strtok_r(real, "/", &save); fd >= 0; comp = strtok_r(NULL, "/", &save)) {
		int next;

		if (fstat(fd, &st) || !dir_safe(&st, &why)) {
			close(fd);
			fd = -1;
			break;
		}
		if (!comp)
			return fd;
		/* By name, symlinks refused: the path we checked is the one we hold. */
		next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		if (fd < 0)
			why = strerror(errno);
		snprintf(at + strlen(at), sizeof(at) - strlen(at), "%s%s", at[1] ? "/" : "", comp);
	}
	fprintf(stderr, "kpprof %s: refusing output directory %s: %s %s\n", verb, dir, at, why);
	return -1;
}

int kpp_output__mkdir(const char *verb, const char *dir)
{
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "kpprof %s: cannot create directory %s: %s\n", verb, dir, strerror(errno));
		return 1;
	}
	fd = kpp_output__open_dir(verb, dir);
	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}

static int sum_maps_refused(void *ctx, struct kpp_proc *p)
{
	*(uint64_t *)ctx += p->maps_refused;
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
	struct kpp_sym_stats y = { 0 };
	uint64_t d[KPPROF_DROP_REASONS], maps_refused = 0;
	size_t used;

	kpprof_dev__stats(s->fd, &st);
	/* Only what was dropped while this session listened. */
	for (int i = 0; i < KPPROF_DROP_REASONS; i++)
		d[i] = st.dropped[i] >= s->base.dropped[i] ? st.dropped[i] - s->base.dropped[i] : 0;
	snprintf(buf, len,
		 "kpprof: ring drops %llu (full) %llu (disabled) %llu (share) %llu (nomem), "
		 "bad records %llu, "
		 "over caps: buckets %llu stacks %llu live %llu, unknown frees %llu, "
		 "processes dropped %llu, producer rings lost %llu (emptied %llu)",
		 (unsigned long long)d[KPPROF_DROP_RING_FULL],
		 (unsigned long long)d[KPPROF_DROP_DISABLED],
		 (unsigned long long)d[KPPROF_DROP_SHARE],
		 (unsigned long long)d[KPPROF_DROP_NOMEM],
		 (unsigned long long)a->bad_records, (unsigned long long)a->over_buckets,
		 (unsigned long long)a->over_stacks, (unsigned long long)a->over_live,
		 (unsigned long long)a->unknown_frees, (unsigned long long)a->procs_dropped,
		 (unsigned long long)a->lost_records, (unsigned long long)a->lost_resets);
	/* What the symbolizer refused a producer (symbolize.h has the caps). */
	if (s->sym)
		kpp_symbolizer__stats(s->sym, &y);
	kpp_agg__for_each_proc(s->agg, sum_maps_refused, &maps_refused);
	used = strlen(buf);
	snprintf(buf + used, len - used,
		 ", mappings over the per-process cap %llu, maps re-read %llu"
		 ", symbolizer refused: objects %llu mappings %llu (forgotten %llu) "
		 "path claims %llu build-id mismatches %llu debuglinks %llu (too big %llu) "
		 "symbol tables %llu debug-file-only biases %llu, prefetched fds closed %llu",
		 (unsigned long long)maps_refused, (unsigned long long)kpp_proc__rereads(),
		 (unsigned long long)y.objects_refused, (unsigned long long)y.mappings_refused,
		 (unsigned long long)y.mappings_forgotten, (unsigned long long)y.claims_refused,
		 (unsigned long long)y.build_id_mismatch, (unsigned long long)y.debuglink_refused,
		 (unsigned long long)y.debuglink_too_big, (unsigned long long)y.symtabs_refused,
		 (unsigned long long)y.debug_bias_refused, (unsigned long long)y.fds_closed);
	/* Records refused against a producer's quota, by reason. */
	used = strlen(buf);
	bool refused = kpp_agg__refusals(a, buf + used, len - used);

	/* Unknown frees are normal (allocations sampled before we attached). */
	return d[KPPROF_DROP_RING_FULL] || d[KPPROF_DROP_SHARE] || d[KPPROF_DROP_NOMEM] ||
	       a->bad_records || a->over_buckets || a->lost_records || a->lost_resets ||
	       a->over_stacks || a->over_live || y.objects_refused || y.mappings_refused ||
	       maps_refused || refused;
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
	int dfd;

	if (kpp_output__losses(s, comment, sizeof(comment)) && !quiet)
		fprintf(stderr, "kpprof: warning: records were lost, the profiles undercount: %s\n",
			comment + strlen("kpprof: "));
	/* said once on stderr, and in every profile's comment */
	if (kpp_output__quiet_procs(s, stopped, sizeof(stopped)) && !quiet)
		fprintf(stderr, "kpprof: warning: %s\n", stopped + 2);
	kpp_output__comment(s, comment, sizeof(comment));
	kpp_session__learn_maps(s);
	dfd = kpp_output__open_dir("write", dir);
	if (dfd < 0)
		return 1;
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		struct kpp_view v;
		char path[4096];
		int err;

		snprintf(path, sizeof(path), "%s/%s", dir, outs[i].file);
		err = kpp_view__take(&v, s->agg, outs[i].type, filter, ctx);
		if (!err)
			err = kpp_profile__write_fileat(dfd, outs[i].file, &v, s->agg, s->sym, &o);
		if (err) {
			fprintf(stderr, "kpprof: cannot write %s: %s\n", path, strerror(-err));
			kpp_view__release(&v);
			close(dfd);
			return 1;
		}
		if (!quiet)
			fprintf(stderr, "kpprof: wrote %s (%zu buckets)\n", path, v.n);
		kpp_view__release(&v);
	}
	close(dfd);
	return 0;
}
