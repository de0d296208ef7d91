// SPDX-License-Identifier: GPL-2.0
/*
 * collect.c - `kpprof collect`: profile every process on the machine for
 * a duration (or until SIGINT/SIGTERM), writing merged profiles (with pid
 * and comm labels) or one directory per process; with --interval, the
 * profiles are rewritten (atomically) every interval.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "output.h"
#include "proc.h"
#include "rates.h"
#include "session.h"
#include "verbs.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void collect_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof collect [-o DIR] [-d SECONDS] [--interval SECONDS]\n"
		"                      [--per-process] [-p PID] [--mem-rate BYTES]\n"
		"                      [--block-rate NS] [--mutex-fraction N]\n"
		"Profiles every process (or only PID) until SECONDS pass or SIGINT, then\n"
		"writes DIR/{heap,mutex,block}.pb.gz (merged, with pid and comm labels)\n"
		"or, with --per-process, DIR/PID-COMM/{heap,mutex,block}.pb.gz.\n"
		"--interval rewrites them every SECONDS while running.\n");
}

struct one_pid {
	uint32_t pid;
};

static bool is_pid(void *ctx, uint32_t pid)
{
	return pid == ((struct one_pid *)ctx)->pid;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* write_proc - DIR/PID-COMM/{heap,mutex,block}.pb.gz for one process. */
static int write_proc(struct kpp_session *s, const char *dir, uint32_t pid)
{
	const struct kpp_proc *p = kpp_agg__proc(s->agg, pid);
	struct one_pid one = { pid };
	char sub[4096];

	snprintf(sub, sizeof(sub), "%s/%u-%s", dir, pid, p && p->comm[0] ? p->comm : "unknown");
	for (char *q = sub + strlen(dir) + 1; *q; q++)
		if (*q == '/')
			*q = '_';
	return kpp_output__mkdir("collect", sub) || kpp_output__dir(s, sub, is_pid, &one, true);
}

/* Only processes with samples get a directory: one pass over the buckets. */
static int write_per_process(struct kpp_session *s, const char *dir, uint32_t only)
{
	size_t nb = kpp_agg__nr_buckets(s->agg), n = 0;
	uint32_t *pids = malloc((nb + 1) * sizeof(*pids));
	int err = 0;

	if (!pids) {
		fprintf(stderr, "kpprof collect: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < nb; i++) {
		const struct kpp_bucket *b = kpp_agg__bucket(s->agg, i);

		if (b && (!only || b->pid == only))
			pids[n++] = b->pid;
	}
	qsort(pids, n, sizeof(*pids), cmp_u32);
	for (size_t i = 0; i < n && !err; i++)
		if (i == 0 || pids[i] != pids[i - 1])
			err = write_proc(s, dir, pids[i]);
	free(pids);
	if (!err)
		fprintf(stderr, "kpprof: wrote per-process profiles under %s\n", dir);
	return err;
}

static int write_all(struct kpp_session *s, const char *dir, bool per_process, uint32_t pid)
{
	struct one_pid one = { pid };

	kpp_session__settle(s, 5000);
	if (per_process)
		return write_per_process(s, dir, pid);
	return kpp_output__dir(s, dir, pid ? is_pid : NULL, &one, false);
}

int collect_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'I' },
		{ "per-process", no_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t duration = 0, interval = 0, pid = 0;
	struct kpprof_config old_cfg;
	struct kpp_rates r = { 0 };
	const char *dir = ".";
	bool per_process = false;
	struct kpp_session s;
	struct timespec t0, now;
	double last_write = 0;
	int opt, ret = 1;

	while ((opt = getopt_long(argc, argv, "o:d:p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': dir = optarg; break;
		case 'd':
			if (kpp_parse_u64("collect", "-d", optarg, &duration))
				return 1;
			break;
		case 'I':
			if (kpp_parse_u64("collect", "--interval", optarg, &interval))
				return 1;
			break;
		case 'p':
			if (kpp_parse_u64("collect", "--pid", optarg, &pid))
				return 1;
			break;
		case 'P': per_process = true; break;
		case 'h':
			collect_usage(stdout);
			return 0;
		default:
			if (opt >= KPP_OPT_MEM && opt <= KPP_OPT_DEPTH) {
				if (kpp_rates__parse("collect", &r, opt, optarg))
					return 1;
				break;
			}
			collect_usage(stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kpprof collect: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (pid && (pid > INT_MAX || kpp_proc_reaped(pid))) {
		fprintf(stderr, "kpprof collect: no process %llu: check the pid with ps\n",
			(unsigned long long)pid);
		return 1;
	}
	if (kpp_output__mkdir("collect", dir))
		return 1;
	if (kpp_session__open(&s, NULL))
		return 1;
	if (kpp_rates__set(s.fd, "collect", &r, &old_cfg))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		double t;

		if (kpp_session__poll(&s, 200) == -ENOMEM) {
			fprintf(stderr, "kpprof collect: out of memory while aggregating\n");
			goto out_cfg;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
		if (duration && t >= duration)
			break;
		if (interval && t - last_write >= interval) {
			kpp_session__reap(&s);
			if (write_all(&s, dir, per_process, pid))
				goto out_cfg;
			last_write = t;
		}
	}
	ret = write_all(&s, dir, per_process, pid);
out_cfg:
	if (r.set)
		kpprof_dev__set_config(s.fd, &old_cfg);
out:
	kpp_session__close(&s);
	return ret;
}
