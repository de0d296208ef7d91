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

struct per_proc_ctx {
	struct kpp_session *s;
	const char *dir;
	uint32_t only;
	int err;
};

static int write_proc(void *c, struct kpp_proc *p)
{
	struct per_proc_ctx *ctx = c;
	struct one_pid one = { p->pid };
	char sub[4096];

	if (ctx->only && p->pid != ctx->only)
		return 0;
	snprintf(sub, sizeof(sub), "%s/%u-%s", ctx->dir, p->pid, p->comm[0] ? p->comm : "unknown");
	for (char *q = sub + strlen(ctx->dir) + 1; *q; q++)
		if (*q == '/')
			*q = '_';
	if (kpp_output__mkdir("collect", sub) ||
	    kpp_output__dir(ctx->s, sub, is_pid, &one, true))
		ctx->err = 1;
	return ctx->err;
}

static int write_all(struct kpp_session *s, const char *dir, bool per_process, uint32_t pid)
{
	struct one_pid one = { pid };

	kpp_session__settle(s, 5000);
	if (per_process) {
		struct per_proc_ctx ctx = { .s = s, .dir = dir, .only = pid };

		kpp_agg__for_each_proc(s->agg, write_proc, &ctx);
		if (!ctx.err)
			fprintf(stderr, "kpprof: wrote per-process profiles under %s\n", dir);
		return ctx.err;
	}
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
	if (pid && kill(pid, 0) && errno == ESRCH) {
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
