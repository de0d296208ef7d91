/* SPDX-License-Identifier: GPL-2.0 */
/*
 * collector_stats.h - the running collector's counters, published for
 * `kpprof stat` (see collector_stats.c).
 */
#ifndef KPPROF_COLLECTOR_STATS_H
#define KPPROF_COLLECTOR_STATS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

struct kpp_session;

struct kpp_collector_stats {
	bool opened;		/* dfd is the run directory */
	int dfd;
	bool disabled;		/* it could not be used: said once */
	time_t last;		/* CLOCK_MONOTONIC second of the last write */
};

/* Rewrite the file, at most once a second. */
void kpp_collector_stats__publish(struct kpp_collector_stats *cs, const struct kpp_session *s);
/* Remove it (the collector stops). */
void kpp_collector_stats__close(struct kpp_collector_stats *cs);
/* `kpprof stat`: print the running collector's counters, if any. */
int kpp_collector_stats__print(FILE *out);

#endif
