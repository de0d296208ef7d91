// SPDX-License-Identifier: GPL-2.0
/*
 * record.c - `kpprof record -- CMD ARGS...`: run CMD with the preload shim,
 * aggregate the records of CMD and its descendants, and when CMD exits
 * write heap.pb.gz, mutex.pb.gz and block.pb.gz.  Exits with CMD's status.
 *
 * The ring is attached before CMD starts, so nothing CMD does is missed.
 * At exit the cycle is advanced and the ring read until the kernel's cycle
 * record arrives: the heap profile then holds every allocation CMD made,
 * and shows what was still allocated when it exited.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dev.h"
#include "output.h"
#include "rates.h"
#include "session.h"
#include "verbs.h"

static void record_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof record [-o DIR] [--mem-rate BYTES] [--block-rate NS]\n"
		"                     [--mutex-fraction N] -- CMD [ARGS...]\n"
		"Runs CMD with libkpprof.so preloaded, profiles it and its children, and\n"
		"when it exits writes DIR/heap.pb.gz, mutex.pb.gz and block.pb.gz (DIR\n"
		"defaults to the current directory).  Exits with CMD's status.\n"
		"The shim is found through $KPPROF_SHIM, else next to this program.\n");
}

/* find_shim - the preload library: $KPPROF_SHIM, or ../shim/libkpprof.so, ../lib/... */
static int find_shim(char *out, size_t len)
{
	static const char *const rel[] = {
		"../shim/libkpprof.so", "libkpprof.so", "../lib/" KPPROF_MULTIARCH "/kpprof/libkpprof.so",
		"../lib/kpprof/libkpprof.so",
		"../lib/libkpprof.so",
	};
	const char *env = getenv("KPPROF_SHIM");
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (access(env, R_OK)) {
			fprintf(stderr, "kpprof record: KPPROF_SHIM=%s: %s\n", env, strerror(errno));
			return 1;
		}
		snprintf(out, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			slash[1] = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			char path[PATH_MAX + 64];

			snprintf(path, sizeof(path), "%s%s", self, rel[i]);
			if (!access(path, R_OK) && realpath(path, out))
				return 0;
		}
	}
	fprintf(stderr, "kpprof record: cannot find libkpprof.so: build it (make user) or set KPPROF_SHIM\n");
	return 1;
}

static bool from_root(void *ctx, uint32_t pid)
{
	struct kpp_session *s = ctx;

	return kpp_agg__descends_from(s->agg, pid, s->root);
}

int record_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	/*
	 * One command's tree: every exited process is kept with its unfreed
	 * memory in use (the "leaked at exit" view), and the global caps
	 * alone bound it (no per-uid or per-process share within one tree).
	 */
	struct kpp_agg_limits lim = {
		.max_exited = SIZE_MAX, .keep_exited_inuse = true,
		.max_uid_buckets = SIZE_MAX, .max_uid_stack_pcs = SIZE_MAX,
		.max_uid_live = SIZE_MAX, .max_uid_procs = SIZE_MAX,
		.max_proc_buckets = SIZE_MAX, .max_proc_live = SIZE_MAX,
	};
	struct kpprof_config old_cfg;
	const char *dir = ".";
	struct kpp_rates r = { 0 };
	struct kpp_session s;
	char shim[PATH_MAX], *preload;
	int opt, status = 0, ret = 1;
	pid_t child;

	/* "+": stop at the first non-option, CMD's own options are its own. */
	while ((opt = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			dir = optarg;
			break;
		case 'h':
			record_usage(stdout);
			return 0;
		default:
			if (opt >= KPP_OPT_MEM && opt <= KPP_OPT_DEPTH) {
				if (kpp_rates__parse("record", &r, opt, optarg))
					return 1;
				break;
			}
			record_usage(stderr);
			return 1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "kpprof record: no command given: kpprof record [options] -- CMD [ARGS...]\n");
		return 1;
	}
	if (kpp_output__mkdir("record", dir) || find_shim(shim, sizeof(shim)))
		return 1;
	if (kpp_session__open(&s, &lim))
		return 1;
	if (kpp_rates__set(s.fd, "record", &r, &old_cfg))
		goto out;

	{
		const char *prev = getenv("LD_PRELOAD");

		if (asprintf(&preload, "%s%s%s", shim, prev && *prev ? ":" : "",
			     prev ? prev : "") < 0)
			goto out_cfg;
	}
	/* Ctrl-C goes to CMD (same process group); we wait for it to finish. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	child = fork();
	if (child < 0) {
		fprintf(stderr, "kpprof record: fork: %s\n", strerror(errno));
		free(preload);
		goto out_cfg;
	}
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		setenv("LD_PRELOAD", preload, 1);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "kpprof record: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	free(preload);
	s.only_root = true;
	s.root = child;

	for (;;) {
		pid_t w = waitpid(child, &status, WNOHANG);
		int n;

		if (w == child)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "kpprof record: waitpid: %s\n", strerror(errno));
			break;
		}
		/*
		 * Read at least every 20 ms, not only at the ring's wake-up
		 * watermark: a process's objects must be opened while it lives
		 * (its paths may exist only in its own root), and a short-lived
		 * one writes too little to wake us before it exits.
		 */
		n = kpp_session__poll(&s, 20);
		if (n == -ENOMEM) {
			fprintf(stderr, "kpprof record: out of memory while aggregating\n");
			break;
		}
	}
	if (kpp_session__settle(&s, 10000))
		fprintf(stderr, "kpprof record: warning: the last cycle did not complete; "
			"the heap profile may miss its last second\n");
	if (kpp_output__dir(&s, dir, from_root, &s, false))
		goto out_cfg;
	if (WIFEXITED(status))
		ret = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		ret = 128 + WTERMSIG(status);
out_cfg:
	if (r.set) {
		int err = kpprof_dev__set_config(s.fd, &old_cfg);

		if (err)
			fprintf(stderr, "kpprof record: could not restore the rates: %s\n",
				kpprof_dev__explain(err));
	}
out:
	kpp_session__close(&s);
	return ret;
}
