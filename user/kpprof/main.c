// SPDX-License-Identifier: GPL-2.0
/*
 * kpprof - the collector: reads the kpprof ring and writes pprof profiles.
 * One verb per file, dispatched from the table below, which also prints
 * the usage (as wireguard-tools' wg.c does).
 */
#include <stdio.h>
#include <string.h>

#include "verbs.h"
#include "version.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char *argv[]);
	const char *description;
} verbs[] = {
	{ "record", record_main, "Profile one command and its children, write heap/mutex/block.pb.gz" },
	{ "collect", collect_main, "Profile the whole system for a while, per process or merged" },
	{ "serve", serve_main, "Serve /debug/pprof/{heap,allocs,mutex,block} over HTTP" },
	{ "ctl", ctl_main, "Show or set the sampling rates" },
	{ "stat", stat_main, "Show ring and drop statistics" },
	{ "top", top_main, "Print a flat/cum top of a pprof file (no Go needed)" },
	{ "enable", enable_main, "System-wide capture: add the shim to /etc/ld.so.preload" },
	{ "disable", disable_main, "Remove the shim from /etc/ld.so.preload" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: kpprof <verb> [<args>]\n\nVerbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].description);
	fprintf(f, "\n'kpprof <verb> --help' describes each verb; 'kpprof --version'.\n");
}

/*
 * Exported to the dynamic symbol table (see the Makefile): libkpprof.so,
 * loaded into every process under system-wide capture, looks it up and
 * passes through in the collector, which must not profile itself.
 */
extern const int kpprof_collector_process;
__attribute__((used, visibility("default"))) const int kpprof_collector_process = 1;

int main(int argc, char *argv[])
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("kpprof %s\n", KPPROF_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i].name))
			return verbs[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "kpprof: '%s' is not a verb; 'kpprof --help' lists them\n", argv[1]);
	return 1;
}
