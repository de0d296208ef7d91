/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolz.h - the answer to serve's /debug/pprof/symbol: each address of a
 * request named by the processes the client may see, within a time budget.
 */
#ifndef KPPROF_SYMBOLZ_H
#define KPPROF_SYMBOLZ_H

#include <stdint.h>
#include <stdio.h>

#include "access.h"
#include "session.h"

/*
 * Lookups of one request, in all (ms).  A 1 MiB body holds ~250k addresses
 * and a lookup can take tens of microseconds: unbounded, one request held
 * the symbolizer (every other profile, the drainer's prefetches) for tens
 * of seconds, and a client has 12 connections.
 */
#define KPP_SYMBOLZ_BUDGET_MS	2000
/* The symbolizer is let go after this many addresses, for whoever waits. */
#define KPP_SYMBOLZ_YIELD	64

/*
 * kpp_symbolz__answer - "0xADDR NAME" lines into @f for the addresses of
 * @text (separated by '+' or '&'), named in @copy's processes that @set
 * holds (only @pid's if not 0), with @s's symbolizer, taken and let go by
 * turns.  Addresses left when @budget_ms ran out are not named; their
 * number is returned.
 */
uint64_t kpp_symbolz__answer(struct kpp_session *s, struct kpp_agg *copy,
			     const struct kpp_pidset *set, const char *text, uint32_t pid,
			     FILE *f, int64_t budget_ms);

#endif
