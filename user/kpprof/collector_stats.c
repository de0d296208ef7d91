// SPDX-License-Identifier: GPL-2.0
/*
 * collector_stats.c - the running collector's own counters (what it holds,
 * what it refused, by reason) for `kpprof stat`, which runs in another
 * process: the collector rewrites RUN_DIR/collector at most once a second
 * (kpp_session__poll), `kpprof stat` prints it.
 *
 * RUN_DIR is /run/kpprof (KPPROF_RUN_DIR overrides it, for tests).  The
 * collector runs as root: the directory must be a real directory (not a
 * symlink) owned by the collector's euid and writable by nobody else, and
 * the file is written as an O_EXCL|O_NOFOLLOW temporary below the
 * directory's fd, then renamed, so no other user can steer the write.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector_stats.h"
#include "session.h"

#define STATS_FILE "collector"

static const char *run_dir(void)
{
	const char *d = getenv("KPPROF_RUN_DIR");

	return d && *d ? d : "/run/kpprof";
}

/* The directory's fd, checked; -1 after saying why once. */
static int open_run_dir(void)
{
	const char *dir = run_dir();
	struct stat st;
	int dfd;

	if (mkdir(dir, 0755) && errno != EEXIST)
		goto bad;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		goto bad;
	if (fstat(dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(dfd);
		fprintf(stderr, "kpprof: %s is not a directory of uid %u writable only by it: "
			"`kpprof stat` will not show the collector's counters\n", dir, geteuid());
		return -1;
	}
	return dfd;
bad:
	fprintf(stderr, "kpprof: %s: %s: `kpprof stat` will not show the collector's counters\n",
		dir, strerror(errno));
	return -1;
}

void kpp_collector_stats__publish(struct kpp_collector_stats *cs, const struct kpp_session *s)
{
	struct timespec now;
	char tmp[64];
	FILE *f;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (cs->disabled || (cs->last && now.tv_sec == cs->last))
		return;
	cs->last = now.tv_sec;
	if (!cs->opened) {
		cs->dfd = open_run_dir();
		if (cs->dfd < 0) {
			cs->disabled = true;
			return;
		}
		cs->opened = true;
	}
	snprintf(tmp, sizeof(tmp), STATS_FILE ".tmp.%d", (int)getpid());
	unlinkat(cs->dfd, tmp, 0);	/* ours, left by a failed write */
	fd = openat(cs->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlinkat(cs->dfd, tmp, 0);
		return;
	}
	fprintf(f, "%-22s %d\n", "pid", (int)getpid());
	kpp_agg__print_stats(kpp_agg__stats(s->agg), f);
	fprintf(f, "%-22s %llu\n", "prefetch_deferred", (unsigned long long)s->prefetch_deferred);
	fprintf(f, "%-22s %llu\n", "prefetch_lost", (unsigned long long)s->prefetch_lost);
	fprintf(f, "%-22s %llu\n", "skipped", (unsigned long long)s->skipped);
	if (fclose(f) || renameat(cs->dfd, tmp, cs->dfd, STATS_FILE))
		unlinkat(cs->dfd, tmp, 0);
}

void kpp_collector_stats__close(struct kpp_collector_stats *cs)
{
	if (cs->opened) {
		unlinkat(cs->dfd, STATS_FILE, 0);
		close(cs->dfd);
	}
	cs->opened = false;
}

int kpp_collector_stats__print(FILE *out)
{
	char path[4096], line[256];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/" STATS_FILE, run_dir());
	f = fopen(path, "re");
	if (!f) {
		fprintf(out, "collector         none running (%s: %s)\n", path, strerror(errno));
		return 0;
	}
	if (fgets(line, sizeof(line), f))
		sscanf(line, "pid %d", &pid);
	fprintf(out, "collector         pid %d%s; its counters (records refused: over_*):\n", pid,
		pid > 0 && (kill(pid, 0) == 0 || errno == EPERM) ? "" : " (not running: last figures)");
	while (fgets(line, sizeof(line), f))
		fprintf(out, "  %s", line);
	fclose(f);
	return 0;
}
