/* SPDX-License-Identifier: GPL-2.0 */
/* rates.h - the rate options record, collect, serve and ctl share. */
#ifndef KPPROF_RATES_H
#define KPPROF_RATES_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <kpprof.h>

enum { KPP_OPT_MEM = 1000, KPP_OPT_BLOCK, KPP_OPT_MUTEX, KPP_OPT_CYCLE, KPP_OPT_DEPTH };

#define KPP_RATE_OPTIONS \
	{ "mem-rate", required_argument, NULL, KPP_OPT_MEM }, \
	{ "block-rate", required_argument, NULL, KPP_OPT_BLOCK }, \
	{ "mutex-fraction", required_argument, NULL, KPP_OPT_MUTEX }, \
	{ "cycle-ms", required_argument, NULL, KPP_OPT_CYCLE }, \
	{ "depth", required_argument, NULL, KPP_OPT_DEPTH }

struct kpp_rates {
	unsigned int set;	/* which fields were given */
	uint64_t mem_rate, block_rate, mutex_fraction, cycle_ms, depth;
};

int kpp_rates__parse(const char *verb, struct kpp_rates *r, int opt, const char *arg);
void kpp_rates__apply(const struct kpp_rates *r, struct kpprof_config *c);
int kpp_rates__set(int fd, const char *verb, const struct kpp_rates *r,
		   struct kpprof_config *old);
void kpp_config__print(FILE *f, const struct kpprof_config *c);

#endif
