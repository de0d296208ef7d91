// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling configuration a thread works with: the module's read-only
 * config page (so a rate set by ioctl reaches running processes without a
 * syscall), overridden per process tree by the environment:
 *
 *   KPPROF_MEM_RATE        bytes between heap samples (1 = every
 *                          allocation, 0 = off)
 *   KPPROF_BLOCK_RATE      block profile rate in ns (0 = off)
 *   KPPROF_MUTEX_FRACTION  sample 1 / N contended hand-offs (0 = off)
 *
 * An override replaces the page's rate; the page's KPPROF_CFG_* flag still
 * has to be set, because the module drops records of a disabled profile
 * anyway (writing them would only waste a syscall).  Each thread caches the
 * rates with the page's seq and re-reads only when seq moves, which it
 * checks when a countdown expires (heap) or on each lock call (one relaxed
 * load of a line nobody writes).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"

struct kpp_global kpp = {
	.fd = -1,
	.env_mem_rate = -1,
	.env_block_rate = -1,
	.env_mutex_fraction = -1,
};

/*
 * kpp_getenv - getenv(), without calling it: a small program that never
 * calls getenv() itself (/bin/true) would fault libc's page of it in for
 * us, at start-up in every process (and libc's strcmp family, resolved
 * per CPU, its own pages): a plain loop.
 */
const char *kpp_getenv(const char *name)
{
	for (char **e = environ; e && *e; e++) {
		const char *a = *e, *b = name;

		while (*b && *a == *b)
			a++, b++;
		if (!*b && *a == '=')
			return a + 1;
	}
	return NULL;
}

int64_t kpp_env_u64(const char *name, uint64_t max)
{
	const char *s = kpp_getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);	/* 010 is ten, not eight */
	if (errno || *end || *s == '-' || v > max) {
		kpp_debug("ignoring %s=%s: not a number in [0, %llu]", name, s,
			  (unsigned long long)max);
		return -1;
	}
	return (int64_t)v;
}

/*
 * read_page - one consistent copy of the config (seqcount reader): retry
 * while the kernel is mid-update (odd seq) or seq moved during the copy.
 */
static uint32_t read_page(struct kpprof_config *cfg)
{
	const volatile struct kpprof_config_page *pg = kpp.page;
	uint32_t s1, s2;

	for (;;) {
		s1 = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		cfg->mem_rate = pg->config.mem_rate;
		cfg->block_rate = pg->config.block_rate;
		cfg->mutex_fraction = pg->config.mutex_fraction;
		cfg->max_stack_depth = pg->config.max_stack_depth;
		cfg->flags = pg->config.flags;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&pg->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return s1;
	}
}

void kpp_config_refresh(struct kpp_thread *t)
{
	struct kpprof_config cfg;
	uint64_t old_rate;
	uint32_t seq;

	if (!kpp.page) {
		t->mem_rate = t->block_rate = t->mutex_fraction = 0;
		t->cfg_seq = 1;
		return;
	}
	if (t->cfg_seq && __atomic_load_n(&kpp.page->seq, __ATOMIC_RELAXED) + 1 == t->cfg_seq)
		return;
	seq = read_page(&cfg);
	old_rate = t->mem_rate;
	t->mem_rate = !(cfg.flags & KPPROF_CFG_HEAP) ? 0 :
		kpp.env_mem_rate >= 0 ? (uint64_t)kpp.env_mem_rate : cfg.mem_rate;
	/* A new heap rate ends the countdown drawn with the old one: the next
	 * allocation redraws (heap.c), even when a lock call noticed first. */
	if (t->mem_rate != old_rate)
		t->countdown = 0;
	t->block_rate = !(cfg.flags & KPPROF_CFG_BLOCK) ? 0 :
		kpp.env_block_rate >= 0 ? (uint64_t)kpp.env_block_rate : cfg.block_rate;
	t->mutex_fraction = !(cfg.flags & KPPROF_CFG_MUTEX) ? 0 :
		kpp.env_mutex_fraction >= 0 ? (uint32_t)kpp.env_mutex_fraction :
		cfg.mutex_fraction;
	t->max_depth = cfg.max_stack_depth;
	if (t->max_depth == 0 || t->max_depth > KPPROF_STACK_DEPTH_MAX)
		t->max_depth = KPPROF_STACK_DEPTH_DEFAULT;
	t->cfg_seq = seq + 1;
}

uint64_t kpp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * kpp_debug_print - one line on stderr under KPPROF_DEBUG=1, formatted into
 * a stack buffer and written with write(2): no stdio, no allocation.  Called
 * through the kpp_debug() macro, which evaluates its arguments (strerror...)
 * only when debugging is on.
 */
void kpp_debug_print(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n, saved = errno;

	/* Under a seccomp filter even write(2) may be fatal. */
	if (!kpp.debug || atomic_load(&kpp.stopped) == KPP_STOP_SECCOMP)
		return;
	n = snprintf(buf, sizeof(buf), "kpprof[%d]: ", (int)kpp_getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!kpp_write(2, buf, (size_t)n);	/* no cancellation point */
	errno = saved;
}
