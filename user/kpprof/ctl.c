// SPDX-License-Identifier: GPL-2.0
/* ctl.c - `kpprof ctl`: show or set the sampling configuration. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev.h"
#include "rates.h"
#include "session.h"
#include "verbs.h"

static void ctl_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof ctl [--mem-rate BYTES] [--block-rate NS] [--mutex-fraction N]\n"
		"                  [--cycle-ms MS] [--depth N]\n"
		"With no option, shows the configuration.  A rate of 0 turns its profile off;\n"
		"a non-zero rate turns it on.  --mem-rate 1 samples every allocation.\n"
		"Valid ranges: --mem-rate and --block-rate 0..2^40, --mutex-fraction 0..2^32-1,\n"
		"--depth 1..%d, --cycle-ms 0 (timer off) or %d..%d.\n",
		KPPROF_STACK_DEPTH_MAX, KPPROF_CYCLE_PERIOD_MS_MIN, KPPROF_CYCLE_PERIOD_MS_MAX);
}

void kpp_config__print(FILE *f, const struct kpprof_config *c)
{
	fprintf(f, "mem_rate        %llu bytes%s\n", (unsigned long long)c->mem_rate,
		(c->flags & KPPROF_CFG_HEAP) && c->mem_rate ? "" : " (heap off)");
	fprintf(f, "block_rate      %llu ns%s\n", (unsigned long long)c->block_rate,
		(c->flags & KPPROF_CFG_BLOCK) && c->block_rate ? "" : " (block off)");
	fprintf(f, "mutex_fraction  %u%s\n", c->mutex_fraction,
		(c->flags & KPPROF_CFG_MUTEX) && c->mutex_fraction ? "" : " (mutex off)");
	fprintf(f, "max_stack_depth %u\n", c->max_stack_depth);
	fprintf(f, "cycle_period_ms %u\n", c->cycle_period_ms);
}

int kpp_rates__parse(const char *verb, struct kpp_rates *r, int opt, const char *arg)
{
	uint64_t v;

	if (kpp_parse_u64(verb, opt == KPP_OPT_MEM ? "--mem-rate" : opt == KPP_OPT_BLOCK ?
			  "--block-rate" : opt == KPP_OPT_MUTEX ? "--mutex-fraction" :
			  opt == KPP_OPT_CYCLE ? "--cycle-ms" : "--depth", arg, &v))
		return 1;
	switch (opt) {
	case KPP_OPT_MEM: r->mem_rate = v; r->set |= 1u << 0; break;
	case KPP_OPT_BLOCK: r->block_rate = v; r->set |= 1u << 1; break;
	case KPP_OPT_MUTEX:
		if (v > UINT32_MAX) {
			fprintf(stderr, "kpprof %s: --mutex-fraction %s is too large\n", verb, arg);
			return 1;
		}
		r->mutex_fraction = v; r->set |= 1u << 2; break;
	case KPP_OPT_CYCLE: r->cycle_ms = v; r->set |= 1u << 3; break;
	case KPP_OPT_DEPTH: r->depth = v; r->set |= 1u << 4; break;
	}
	return 0;
}

void kpp_rates__apply(const struct kpp_rates *r, struct kpprof_config *c)
{
	if (r->set & (1u << 0)) {
		c->mem_rate = r->mem_rate;
		c->flags = r->mem_rate ? c->flags | KPPROF_CFG_HEAP : c->flags & ~KPPROF_CFG_HEAP;
	}
	if (r->set & (1u << 1)) {
		c->block_rate = r->block_rate;
		c->flags = r->block_rate ? c->flags | KPPROF_CFG_BLOCK : c->flags & ~KPPROF_CFG_BLOCK;
	}
	if (r->set & (1u << 2)) {
		c->mutex_fraction = r->mutex_fraction;
		c->flags = r->mutex_fraction ? c->flags | KPPROF_CFG_MUTEX :
			   c->flags & ~KPPROF_CFG_MUTEX;
	}
	if (r->set & (1u << 3))
		c->cycle_period_ms = r->cycle_ms;
	if (r->set & (1u << 4))
		c->max_stack_depth = r->depth;
}

/* kpp_rates__set - apply @r on the device; 0, or 1 after printing why not. */
int kpp_rates__set(int fd, const char *verb, const struct kpp_rates *r,
		   struct kpprof_config *old)
{
	struct kpprof_config c;
	int err = kpprof_dev__get_config(fd, &c);

	if (err) {
		fprintf(stderr, "kpprof %s: GET_CONFIG: %s\n", verb, kpprof_dev__explain(err));
		return 1;
	}
	if (old)
		*old = c;
	if (!r->set)
		return 0;
	kpp_rates__apply(r, &c);
	err = kpprof_dev__set_config(fd, &c);
	if (err) {
		fprintf(stderr, "kpprof %s: SET_CONFIG: %s\n", verb, kpprof_dev__explain(err));
		return 1;
	}
	return 0;
}

int ctl_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct kpp_rates r = { 0 };
	struct kpprof_config c;
	int opt, fd, err;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'h') {
			ctl_usage(stdout);
			return 0;
		}
		if (opt >= KPP_OPT_MEM && opt <= KPP_OPT_DEPTH) {
			if (kpp_rates__parse("ctl", &r, opt, optarg))
				return 1;
			continue;
		}
		ctl_usage(stderr);
		return 1;
	}
	if (optind < argc) {
		fprintf(stderr, "kpprof ctl: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	fd = kpprof_dev__open();
	if (fd < 0) {
		fprintf(stderr, "kpprof ctl: %s: %s\n", KPPROF_DEVICE_PATH, kpprof_dev__explain(fd));
		return 1;
	}
	if (kpp_rates__set(fd, "ctl", &r, NULL)) {
		close(fd);
		return 1;
	}
	err = kpprof_dev__get_config(fd, &c);
	close(fd);
	if (err) {
		fprintf(stderr, "kpprof ctl: GET_CONFIG: %s\n", kpprof_dev__explain(err));
		return 1;
	}
	kpp_config__print(stdout, &c);
	return 0;
}
