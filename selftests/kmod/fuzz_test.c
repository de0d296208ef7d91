// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_test: tens of thousands of random writes.  Each byte string goes to
 * the module and to rec_model (the header's rules written out in C); the
 * verdicts must agree: EINVAL with prod_pos unchanged for malformed bytes,
 * acceptance (and the same bytes back out of the ring) for valid ones.
 * Where the header leaves a case open the model says REC_EITHER and only
 * "0 or EINVAL, and the ring consistent with it" is required.  At the end
 * stats.rejected and stats.accepted moved by exactly what we counted.
 *
 * Three generators: raw random bytes; random bytes under a plausible
 * header (size == count, 8-byte multiple, kernel-owned fields zero); and
 * mutations of valid records of every kind.  The seed is printed and can
 * be replayed with KPP_FUZZ_SEED; KPP_FUZZ_ITERS scales the run.
 */
#include <errno.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"
#include "rec_model.h"

CONSUMER_FIXTURE(ring)

static __u64 rng_state;

static __u64 rng(void)
{
	/* xorshift64*: fast, and the same sequence for the same seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static __u64 rng_below(__u64 n)
{
	return n ? rng() % n : 0;
}

static void rng_seed(struct __test_metadata *_metadata, __u64 salt)
{
	const char *s = getenv("KPP_FUZZ_SEED");
	__u64 seed = s ? strtoull(s, NULL, 0) : now_ns();

	rng_state = (seed ^ salt) | 1;
	TH_LOG("seed %llu (replay: KPP_FUZZ_SEED=%llu)",
	       (unsigned long long)seed, (unsigned long long)seed);
}

static unsigned int iters(unsigned int dflt)
{
	const char *s = getenv("KPP_FUZZ_ITERS");

	return s ? (unsigned int)strtoul(s, NULL, 0) : dflt;
}

struct fuzz_counts {
	unsigned long valid, invalid, either, accepted, rejected;
};

/* Is the entry in the ring the producer's bytes, kernel fields aside? */
static int ring_copy_matches(const unsigned char *want, const unsigned char *got,
			     size_t len)
{
	const struct kpprof_record *h = (const void *)want;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i >= offsetof(struct kpprof_record, tgid) &&
		    i < sizeof(struct kpprof_record))
			continue;
		if (h->kind == KPPROF_REC_COMM &&
		    i >= offsetof(struct kpprof_rec_comm, ppid))
			continue;
		if (want[i] != got[i])
			return 0;
	}
	return 1;
}

/*
 * try_one - write @len bytes of @buf, check the verdict against the model;
 * returns 0, or -1 after logging a disagreement (the caller stops).
 */
static int try_one(struct __test_metadata *_metadata, struct consumer_env *e,
		   const unsigned char *buf, size_t len, struct fuzz_counts *cnt)
{
	struct rec_limits lim = {
		.max_stack_depth = KPPROF_STACK_DEPTH_MAX,
		.max_record_size = e->info.max_record_size,
		.page_size = e->info.page_size,
	};
	const char *why = "valid";
	enum rec_verdict v = rec_model__check(buf, len, &lim, &why);
	__u64 prod = ring_reader__prod(&e->rr);
	const struct kpprof_record *got;
	__u32 glen;
	int err;

	err = dev__write(e->pfd, buf, len);
	cnt->valid += v == REC_VALID;
	cnt->invalid += v == REC_INVALID;
	cnt->either += v == REC_EITHER;
	if (err == -EINVAL) {
		cnt->rejected++;
		if (v == REC_VALID) {
			TH_LOG("valid record of %zu bytes (kind %u) rejected", len,
			       len >= 2 ? buf[0] | buf[1] << 8 : 0);
			return -1;
		}
		if (ring_reader__prod(&e->rr) != prod) {
			TH_LOG("rejected write moved prod_pos (%s)", why);
			return -1;
		}
		return 0;
	}
	if (err != 0) {
		TH_LOG("write of %zu bytes: unexpected errno %d (%s)", len, -err, why);
		return -1;
	}
	cnt->accepted++;
	if (v == REC_INVALID) {
		TH_LOG("malformed record accepted: %s (%zu bytes)", why, len);
		return -1;
	}
	if (ring_reader__peek(&e->rr, &got, &glen) != 1 || glen != len ||
	    !ring_copy_matches(buf, (const void *)got, len)) {
		TH_LOG("accepted record of %zu bytes not read back intact", len);
		return -1;
	}
	ring_reader__consume(&e->rr);
	return 0;
}

static void check_counts(struct __test_metadata *_metadata, struct consumer_env *e,
			 const struct kpprof_stats *st0, const struct fuzz_counts *cnt)
{
	struct kpprof_stats st1;

	ASSERT_EQ(0, dev__stats(e->cfd, &st1));
	TH_LOG("model: %lu valid, %lu invalid, %lu open; module: %lu accepted, %lu rejected",
	       cnt->valid, cnt->invalid, cnt->either, cnt->accepted, cnt->rejected);
	EXPECT_EQ(cnt->rejected, st1.rejected - st0->rejected);
	EXPECT_EQ(cnt->accepted, st1.accepted - st0->accepted);
	EXPECT_EQ(0, st1.dropped[KPPROF_DROP_RING_FULL] - st0->dropped[KPPROF_DROP_RING_FULL]);
	EXPECT_EQ(0, ring_reader__drain(&e->rr));
}

TEST_F_TIMEOUT(ring, random_bytes, 120)
{
	unsigned char *buf = self->e.buf;
	struct fuzz_counts cnt = { 0 };
	struct kpprof_stats st0;
	unsigned int i, n = iters(15000);

	rng_seed(_metadata, 1);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < n; i++) {
		size_t len = 1 + rng_below(rng() & 1 ? 128 : KPP_REC_BUF_MAX - 1);
		size_t j;

		for (j = 0; j < len; j++)
			buf[j] = (unsigned char)rng();
		ASSERT_EQ(0, try_one(_metadata, &self->e, buf, len, &cnt));
	}
	check_counts(_metadata, &self->e, &st0, &cnt);
}

/* Random bodies under headers that pass the first checks. */
TEST_F_TIMEOUT(ring, random_plausible_headers, 120)
{
	unsigned char *buf = self->e.buf;
	struct kpprof_record *h = (void *)buf;
	struct fuzz_counts cnt = { 0 };
	struct kpprof_stats st0;
	unsigned int i, n = iters(15000);

	rng_seed(_metadata, 2);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < n; i++) {
		size_t len = 8 * (5 + rng_below(rng() & 1 ? 12 : 540));
		size_t j;

		for (j = 0; j < len; j++)
			buf[j] = rng() & 3 ? 0 : (unsigned char)rng();
		memset(buf, 0, sizeof(*h));
		h->kind = (__u16)rng_below(KPPROF_REC_KINDS + 1);
		h->size = (__u32)len;
		switch (h->kind) {
		case KPPROF_REC_ALLOC:
		case KPPROF_REC_BLOCK:
		case KPPROF_REC_MUTEX:
			/* mostly consistent with the size, sometimes not */
			h->nr_pcs = (__u16)(len >= 64 ? (len - 64) / 8 : 0);
			if (!rng_below(8))
				h->nr_pcs = (__u16)rng();
			break;
		default:
			h->nr_pcs = rng_below(8) ? 0 : (__u16)rng();
		}
		ASSERT_EQ(0, try_one(_metadata, &self->e, buf, len, &cnt));
	}
	check_counts(_metadata, &self->e, &st0, &cnt);
	/* the generator must reach the accepting paths, or it tests little */
	EXPECT_LT(0, cnt.accepted);
}

static const __u64 interesting[] = {
	0, 1, 7, 8, 0xff, 0x100, 0x1000, 0xfff, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x7fffffff, 0x80000000, 0xffffffff, 1ULL << 40, 1ULL << 47,
	(1ULL << 47) - 4096, 0x7fffffffffffffffULL, ~0ULL,
};

/* mutate - one random change to a record of *len bytes */
static void mutate(unsigned char *buf, size_t *len)
{
	struct kpprof_record *h = (void *)buf;
	size_t off = rng_below(*len);
	__u64 v = interesting[rng_below(sizeof(interesting) / sizeof(interesting[0]))];

	switch (rng_below(8)) {
	case 0:
		buf[off] ^= (unsigned char)(1u << rng_below(8));
		break;
	case 1:
		buf[off] = (unsigned char)rng();
		break;
	case 2:	/* an interesting value over an aligned word */
		off &= ~(size_t)7;
		memcpy(buf + off, &v, *len - off < 8 ? *len - off : 8);
		break;
	case 3:	/* an interesting value over a 16- or 32-bit field */
		off &= ~(size_t)1;
		memcpy(buf + off, &v, *len - off < 4 ? *len - off : (rng() & 1 ? 2 : 4));
		break;
	case 4:	/* shorter or longer write, size field following or not */
		*len = rng() & 1 ? *len - 8 * rng_below(*len / 8)
			       : *len + 8 * rng_below(4);
		if (rng() & 1)
			h->size = (__u32)*len;
		break;
	case 5:
		*len += rng_below(8);
		break;
	case 6:
		h->nr_pcs = (__u16)v;
		break;
	default:
		h->kind = (__u16)rng_below(KPPROF_REC_KINDS + 2);
	}
}

TEST_F_TIMEOUT(ring, mutated_valid_records, 120)
{
	unsigned char *buf = self->e.buf;
	struct fuzz_counts cnt = { 0 };
	struct kpprof_stats st0;
	unsigned int i, n = iters(25000);

	rng_seed(_metadata, 3);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < n; i++) {
		size_t len = rec_build__any(buf, (unsigned int)rng_below(7), rng_below(1 << 20));
		unsigned int k, nmut = (unsigned int)rng_below(4);

		/* nmut == 0 writes the valid record itself, a control */
		for (k = 0; k < nmut; k++)
			mutate(buf, &len);
		if (len > KPP_REC_BUF_MAX - 8)
			len = KPP_REC_BUF_MAX - 8;
		ASSERT_EQ(0, try_one(_metadata, &self->e, buf, len, &cnt));
	}
	check_counts(_metadata, &self->e, &st0, &cnt);
	EXPECT_LT(n / 8, cnt.accepted);
	EXPECT_LT(n / 8, cnt.rejected);
}

/* config_valid - the SET_CONFIG rules of ioctl/kpprof.h */
static int config_valid(const struct kpprof_config *c)
{
	return c->mem_rate <= 1ULL << 40 && c->block_rate <= 1ULL << 40 &&
	       c->max_stack_depth >= 1 &&
	       c->max_stack_depth <= KPPROF_STACK_DEPTH_MAX &&
	       (c->cycle_period_ms == 0 ||
		(c->cycle_period_ms >= KPPROF_CYCLE_PERIOD_MS_MIN &&
		 c->cycle_period_ms <= KPPROF_CYCLE_PERIOD_MS_MAX)) &&
	       !(c->flags & ~KPPROF_CFG_ALL) && !c->reserved[0] && !c->reserved[1];
}

/*
 * Random configs built from boundary values: SET_CONFIG accepts exactly
 * the valid ones, applies them whole, and leaves the config alone (EINVAL)
 * otherwise.  The cycle timer is switched off again before returning.
 */
TEST_F_TIMEOUT(ring, random_configs, 120)
{
	static const __u64 edges[] = {
		0, 1, 2, 9, 10, 11, 127, 128, 129, 3600000, 3600001,
		(1ULL << 40) - 1, 1ULL << 40, (1ULL << 40) + 1, 0xffffffff,
		1ULL << 32, ~0ULL, 1ULL << 63,
	};
	const unsigned int ne = sizeof(edges) / sizeof(edges[0]);
	unsigned int i, n = iters(3000), ok = 0, bad = 0;
	struct kpprof_config cur, cfg, got;

	rng_seed(_metadata, 4);
	ASSERT_EQ(0, dev__get_config(self->e.cfd, &cur));
	for (i = 0; i < n; i++) {
		int err, valid;

		dev__test_config(&cfg);
		/* one to three fields from the edges, the rest valid */
		for (unsigned int k = 1 + (unsigned int)rng_below(3); k; k--) {
			__u64 v = edges[rng_below(ne)];

			switch (rng_below(8)) {
			case 0: cfg.mem_rate = v; break;
			case 1: cfg.block_rate = v; break;
			case 2: cfg.mutex_fraction = (__u32)v; break;
			case 3: cfg.max_stack_depth = (__u32)v; break;
			case 4: cfg.cycle_period_ms = (__u32)v; break;
			case 5: cfg.flags = (__u32)rng_below(16) | (rng_below(8) ? 0 : 1U << rng_below(32)); break;
			case 6: cfg.reserved[0] = rng_below(4) ? 0 : v; break;
			default: cfg.reserved[1] = rng_below(4) ? 0 : v; break;
			}
		}
		/* keep the timer slow: cycle records must not crowd the ring */
		if (cfg.cycle_period_ms && cfg.cycle_period_ms < 1000 && config_valid(&cfg))
			cfg.cycle_period_ms = 1000;
		valid = config_valid(&cfg);
		err = dev__set_config(self->e.cfd, &cfg);
		ASSERT_EQ(valid ? 0 : -EINVAL, err)
			TH_LOG("mem %llu block %llu frac %u depth %u period %u flags %#x res %llx/%llx",
			       (unsigned long long)cfg.mem_rate, (unsigned long long)cfg.block_rate,
			       cfg.mutex_fraction, cfg.max_stack_depth, cfg.cycle_period_ms,
			       cfg.flags, (unsigned long long)cfg.reserved[0],
			       (unsigned long long)cfg.reserved[1]);
		ASSERT_EQ(0, dev__get_config(self->e.cfd, &got));
		ASSERT_EQ(0, memcmp(valid ? &cfg : &cur, &got, sizeof(got)));
		if (valid) {
			cur = cfg;
			ok++;
		} else {
			bad++;
		}
	}
	TH_LOG("%u configs accepted, %u rejected", ok, bad);
	EXPECT_LT(n / 10, ok);
	EXPECT_LT(n / 10, bad);
	dev__test_config(&cfg);
	EXPECT_EQ(0, dev__set_config(self->e.cfd, &cfg));
}

TEST_HARNESS_MAIN
