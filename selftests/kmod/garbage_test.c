// SPDX-License-Identifier: GPL-2.0
/*
 * garbage_test: one malformed record per subtest.  Each starts from a
 * valid record of some kind, breaks exactly one rule of ioctl/kpprof.h,
 * and requires EINVAL, prod_pos unchanged, stats.rejected + 1 and
 * stats.accepted unchanged.  The valid base of every case is also written
 * once (base_records_valid), so a case cannot pass only because its base
 * was already bad.
 */
#include <errno.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"
#include "rec_model.h"

/* garbage: one variant per malformed record; ring: the other tests */
CONSUMER_FIXTURE(garbage)
CONSUMER_FIXTURE(ring)

enum gcase {
	G_TRUNC_HALF, G_TRUNC_32, G_OVERSIZED, G_SIZE_BIGGER, G_SIZE_SMALLER,
	G_SIZE_NOT_8, G_KIND_0, G_KIND_CYCLE, G_KIND_KINDS, G_KIND_FFFF,
	G_ALLOC_NR_0, G_ALLOC_NR_OVER_MAX, G_ALLOC_NR_OVER_CONFIG,
	G_ALLOC_NR_SIZE_MISMATCH, G_ALLOC_ADDR_0, G_ALLOC_RATE_0,
	G_FREE_NR_1, G_FREE_ADDR_0, G_FREE_LONGER,
	G_BLOCK_DELAY_0, G_MUTEX_RATE_0, G_BLOCK_NR_0,
	G_MMAP_NOT_NUL, G_MMAP_NUL_INSIDE, G_MMAP_PAD_TAIL, G_MMAP_PAD_FIELD,
	G_MMAP_BID_LEN_21, G_MMAP_BID_TAIL, G_MMAP_START_EQ_END,
	G_MMAP_START_GT_END, G_MMAP_START_UNALIGNED, G_MMAP_OFFSET_UNALIGNED,
	G_MMAP_PATH_LEN_0, G_MMAP_PATH_LEN_OVER_MAX, G_MMAP_PATH_LEN_SIZE,
	G_MMAP_NR_1, G_MUNMAP_START_EQ_END, G_COMM_REASON_4, G_COMM_NR_1,
	G_VERSION_1_FREE, G_VERSION_1_ALLOC, G_VERSION_FF,
	G_COUNT
};

static const char *const base_paths[] = { "/usr/lib/libexample.so.1" };

/*
 * build_case - the malformed bytes of case @c in @buf; returns the write
 * count.  @max is info.max_record_size (the oversized case needs it).
 */
static size_t build_case(enum gcase c, unsigned char *buf, __u32 max)
{
	struct kpprof_record *h = (void *)buf;
	struct kpprof_rec_alloc *a = (void *)buf;
	struct kpprof_rec_mmap *m = (void *)buf;
	size_t len;

	switch (c) {
	case G_TRUNC_HALF:	/* the size field promises all, the write is half */
		len = rec_build__alloc(buf, 8, 1);
		return len / 2;
	case G_TRUNC_32:	/* shorter than struct kpprof_record */
		rec_build__free(buf, 0x1000, 8);
		h->size = 32;
		return 32;
	case G_OVERSIZED:	/* consistent in itself, but > max_record_size */
		len = max + 8;
		rec_build__alloc(buf, 1, 1);
		h->nr_pcs = (__u16)((len - sizeof(*a)) / 8);
		h->size = (__u32)len;
		for (size_t i = 0; i < h->nr_pcs; i++)
			a->pcs[i] = rec_build__pc(1, (unsigned int)i);
		return len;
	case G_SIZE_BIGGER:
		len = rec_build__free(buf, 0x1000, 8);
		h->size += 8;
		return len;
	case G_SIZE_SMALLER:
		len = rec_build__alloc(buf, 4, 2);
		h->size -= 8;
		return len;
	case G_SIZE_NOT_8:	/* size == count, but 52 */
		rec_build__free(buf, 0x1000, 8);
		h->size = 52;
		return 52;
	case G_KIND_0:
		len = rec_build__free(buf, 0x1000, 8);
		h->kind = 0;
		return len;
	case G_KIND_CYCLE:	/* shaped like a real cycle record */
		len = rec_build__free(buf, 0x1000, 8);
		memset(buf + sizeof(*h), 0, 16);
		h->kind = KPPROF_REC_CYCLE;
		h->size = sizeof(struct kpprof_rec_cycle);
		return sizeof(struct kpprof_rec_cycle);
	case G_KIND_KINDS:
		len = rec_build__free(buf, 0x1000, 8);
		h->kind = KPPROF_REC_KINDS;
		return len;
	case G_KIND_FFFF:	/* ABI 2's __u16 kind 0xffff: kind and version */
		len = rec_build__free(buf, 0x1000, 8);
		h->kind = 0xff;
		h->version = 0xff;
		return len;
	/*
	 * ABI 3: a record valid in every byte as version 0, claiming a later
	 * version, whose appended fields the kernel cannot know
	 */
	case G_VERSION_1_FREE:
		len = rec_build__free(buf, 0x1000, 8);
		h->version = 1;
		return len;
	case G_VERSION_1_ALLOC:
		len = rec_build__alloc(buf, 3, 2);
		h->version = 1;
		return len;
	case G_VERSION_FF:
		len = rec_build__free(buf, 0x1000, 8);
		h->version = 0xff;
		return len;
	case G_ALLOC_NR_0:	/* no stack, and the size says so */
		return rec_build__alloc(buf, 0, 3);
	case G_ALLOC_NR_OVER_MAX:
		return rec_build__alloc(buf, KPPROF_STACK_DEPTH_MAX + 1, 4);
	case G_ALLOC_NR_OVER_CONFIG:	/* the test lowers max_stack_depth to 16 */
		return rec_build__alloc(buf, 17, 5);
	case G_ALLOC_NR_SIZE_MISMATCH:
		len = rec_build__alloc(buf, 4, 6);
		h->nr_pcs = 3;
		return len;
	case G_ALLOC_ADDR_0:
		len = rec_build__alloc(buf, 2, 7);
		a->addr = 0;
		return len;
	case G_ALLOC_RATE_0:
		len = rec_build__alloc(buf, 2, 8);
		a->rate = 0;
		return len;
	case G_FREE_NR_1:
		len = rec_build__free(buf, 0x1000, 8);
		h->nr_pcs = 1;
		return len;
	case G_FREE_ADDR_0:
		return rec_build__free(buf, 0, 8);
	case G_FREE_LONGER:	/* a pc tacked on to a kind without a stack */
		len = rec_build__free(buf, 0x1000, 8) + 8;
		*(__u64 *)(buf + len - 8) = 0x401000;
		h->size = (__u32)len;
		return len;
	case G_BLOCK_DELAY_0:
		len = rec_build__contention(buf, KPPROF_REC_BLOCK, 3, 9);
		((struct kpprof_rec_contention *)buf)->delay_ns = 0;
		return len;
	case G_MUTEX_RATE_0:
		len = rec_build__contention(buf, KPPROF_REC_MUTEX, 3, 9);
		((struct kpprof_rec_contention *)buf)->rate = 0;
		return len;
	case G_BLOCK_NR_0:
		return rec_build__contention(buf, KPPROF_REC_BLOCK, 0, 9);
	case G_MMAP_NOT_NUL:	/* "...so.1" padded to 32: the NUL becomes 'x' */
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->path[m->path_len - 1] = 'x';
		return len;
	case G_MMAP_NUL_INSIDE:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->path[4] = '\0';
		return len;
	case G_MMAP_PAD_TAIL:	/* a byte in the padding after the NUL */
		len = rec_build__mmap(buf, base_paths[0], 20);
		buf[len - 1] = 'z';
		return len;
	case G_MMAP_PAD_FIELD:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->pad[0] = 1;
		return len;
	case G_MMAP_BID_LEN_21:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->build_id_len = KPPROF_BUILD_ID_MAX + 1;
		return len;
	case G_MMAP_BID_TAIL:	/* build_id bytes past build_id_len */
		len = rec_build__mmap(buf, base_paths[0], 8);
		m->build_id[KPPROF_BUILD_ID_MAX - 1] = 0xee;
		return len;
	case G_MMAP_START_EQ_END:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->end = m->start;
		return len;
	case G_MMAP_START_GT_END:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->end = m->start - 0x1000;
		return len;
	case G_MMAP_START_UNALIGNED:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->start += 8;
		return len;
	case G_MMAP_OFFSET_UNALIGNED:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->offset += 1;
		return len;
	case G_MMAP_PATH_LEN_0:
		len = rec_build__mmap(buf, base_paths[0], 20);
		m->path_len = 0;
		return len;
	case G_MMAP_PATH_LEN_OVER_MAX:	/* size consistent with path_len */
		len = rec_build__mmap(buf, "/x", 0);
		memset(m->path, 'a', KPPROF_PATH_MAX + 7);
		m->path[KPPROF_PATH_MAX] = '\0';
		m->path_len = KPPROF_PATH_MAX + 1;
		len = (sizeof(*m) + m->path_len + 7) & ~(size_t)7;
		memset(m->path + m->path_len, 0, len - sizeof(*m) - m->path_len);
		h->size = (__u32)len;
		return len;
	case G_MMAP_PATH_LEN_SIZE:	/* one more 8-byte word than path_len needs */
		len = rec_build__mmap(buf, base_paths[0], 20) + 8;
		h->size = (__u32)len;
		return len;
	case G_MMAP_NR_1:
		len = rec_build__mmap(buf, base_paths[0], 20);
		h->nr_pcs = 1;
		return len;
	case G_MUNMAP_START_EQ_END:
		len = rec_build__munmap(buf);
		((struct kpprof_rec_munmap *)buf)->end =
			((struct kpprof_rec_munmap *)buf)->start;
		return len;
	case G_COMM_REASON_4:
		len = rec_build__comm(buf, KPPROF_COMM_EXIT + 1);
		return len;
	case G_COMM_NR_1:
		len = rec_build__comm(buf, KPPROF_COMM_START);
		h->nr_pcs = 1;
		return len;
	default:
		return 0;
	}
}

FIXTURE_VARIANT(garbage) {
	enum gcase c;
	__u32 max_stack_depth;	/* 0: keep the test config's */
};

#define GARBAGE(name, cs) \
	FIXTURE_VARIANT_ADD(garbage, name) { .c = cs }

GARBAGE(truncated_half, G_TRUNC_HALF);
GARBAGE(truncated_below_header, G_TRUNC_32);
GARBAGE(oversized, G_OVERSIZED);
GARBAGE(size_field_bigger_than_count, G_SIZE_BIGGER);
GARBAGE(size_field_smaller_than_count, G_SIZE_SMALLER);
GARBAGE(size_not_multiple_of_8, G_SIZE_NOT_8);
GARBAGE(kind_0, G_KIND_0);
GARBAGE(kind_cycle_from_user, G_KIND_CYCLE);
GARBAGE(kind_kinds, G_KIND_KINDS);
GARBAGE(kind_ffff, G_KIND_FFFF);
GARBAGE(alloc_nr_pcs_0, G_ALLOC_NR_0);
GARBAGE(alloc_nr_pcs_over_max, G_ALLOC_NR_OVER_MAX);
FIXTURE_VARIANT_ADD(garbage, alloc_nr_pcs_over_config) {
	.c = G_ALLOC_NR_OVER_CONFIG, .max_stack_depth = 16
};
GARBAGE(alloc_nr_pcs_size_mismatch, G_ALLOC_NR_SIZE_MISMATCH);
GARBAGE(alloc_addr_0, G_ALLOC_ADDR_0);
GARBAGE(alloc_rate_0, G_ALLOC_RATE_0);
GARBAGE(free_nr_pcs_1, G_FREE_NR_1);
GARBAGE(free_addr_0, G_FREE_ADDR_0);
GARBAGE(free_longer_than_struct, G_FREE_LONGER);
GARBAGE(block_delay_0, G_BLOCK_DELAY_0);
GARBAGE(mutex_rate_0, G_MUTEX_RATE_0);
GARBAGE(block_nr_pcs_0, G_BLOCK_NR_0);
GARBAGE(mmap_path_not_nul_terminated, G_MMAP_NOT_NUL);
GARBAGE(mmap_nul_inside_path, G_MMAP_NUL_INSIDE);
GARBAGE(mmap_nonzero_padding, G_MMAP_PAD_TAIL);
GARBAGE(mmap_nonzero_pad_field, G_MMAP_PAD_FIELD);
GARBAGE(mmap_build_id_len_21, G_MMAP_BID_LEN_21);
GARBAGE(mmap_build_id_past_len, G_MMAP_BID_TAIL);
GARBAGE(mmap_start_eq_end, G_MMAP_START_EQ_END);
GARBAGE(mmap_start_gt_end, G_MMAP_START_GT_END);
GARBAGE(mmap_start_unaligned, G_MMAP_START_UNALIGNED);
GARBAGE(mmap_offset_unaligned, G_MMAP_OFFSET_UNALIGNED);
GARBAGE(mmap_path_len_0, G_MMAP_PATH_LEN_0);
GARBAGE(mmap_path_len_over_max, G_MMAP_PATH_LEN_OVER_MAX);
GARBAGE(mmap_size_not_from_path_len, G_MMAP_PATH_LEN_SIZE);
GARBAGE(mmap_nr_pcs_1, G_MMAP_NR_1);
GARBAGE(munmap_start_eq_end, G_MUNMAP_START_EQ_END);
GARBAGE(comm_unknown_reason, G_COMM_REASON_4);
GARBAGE(comm_nr_pcs_1, G_COMM_NR_1);
GARBAGE(version_1_free, G_VERSION_1_FREE);
GARBAGE(version_1_alloc, G_VERSION_1_ALLOC);
GARBAGE(version_ff, G_VERSION_FF);

TEST_F(garbage, rejected_einval_ring_untouched)
{
	struct rec_limits lim = {
		.max_stack_depth = KPPROF_STACK_DEPTH_MAX,
		.max_record_size = self->e.info.max_record_size,
		.page_size = self->e.info.page_size,
	};
	struct kpprof_stats st0, st1;
	unsigned char *big;
	const char *why = "";
	__u64 prod;
	size_t len;

	if (variant->max_stack_depth) {
		struct kpprof_config cfg;

		dev__test_config(&cfg);
		cfg.max_stack_depth = variant->max_stack_depth;
		ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
		lim.max_stack_depth = variant->max_stack_depth;
	}
	big = calloc(1, self->e.info.max_record_size + KPP_REC_BUF_MAX);
	ASSERT_NE(NULL, big);
	len = build_case(variant->c, big, self->e.info.max_record_size);
	ASSERT_NE(0, len);
	/* the model agrees the bytes are malformed: the case is what it says */
	ASSERT_EQ(REC_INVALID, rec_model__check(big, len, &lim, &why));
	TH_LOG("case: %s", why);

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	prod = ring_reader__prod(&self->e.rr);
	EXPECT_EQ(-EINVAL, dev__write(self->e.pfd, big, len));
	EXPECT_EQ(prod, ring_reader__prod(&self->e.rr));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.rejected + 1, st1.rejected);
	EXPECT_EQ(st0.accepted, st1.accepted);
	EXPECT_EQ(0, ring_reader__drain(&self->e.rr));
	free(big);
}

/* A zero-length write carries no record: 0 or EINVAL, and nothing enters. */
TEST_F(ring, zero_length_write)
{
	__u64 prod = ring_reader__prod(&self->e.rr);
	ssize_t n = write(self->e.pfd, self->e.buf, 0);

	if (n < 0) {
		EXPECT_EQ(EINVAL, errno);
	} else {
		EXPECT_EQ(0, n);
	}
	EXPECT_EQ(prod, ring_reader__prod(&self->e.rr));
}

/* Honesty check for the table: each case's valid base is accepted. */
TEST_F(ring, base_records_valid)
{
	static const unsigned int kinds[] = { 0, 1, 2, 3, 4, 5, 6 };
	unsigned int i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t len = rec_build__any(self->e.buf, kinds[i], 11 + i);

		EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf, len))
			TH_LOG("valid kind %u", ((struct kpprof_record *)self->e.buf)->kind);
	}
	/* the path every mmap case starts from */
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__mmap(self->e.buf, base_paths[0], 20)));
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__mmap(self->e.buf, base_paths[0], 8)));
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__alloc(self->e.buf, 16, 1)));
	EXPECT_EQ(10, ring_reader__drain(&self->e.rr));
}

TEST_HARNESS_MAIN
