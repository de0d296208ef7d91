// SPDX-License-Identifier: GPL-2.0
/*
 * uapi_layout_test: host-only checks of ioctl/kpprof.h that need no module.
 * The ABI rules of botching-up-ioctls.rst: every struct a multiple of
 * 8 bytes, no implicit padding (members add up to sizeof, so i386 and
 * x86-64 agree), the published SIZE_VER0 equal to sizeof, the ioctl
 * numbers carry those sizes, and the record layouts the format text and
 * the collector rely on.
 */
#include <kpprof.h>	/* first: the header must stand alone */
#include <stddef.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"

#define MEMBER_SIZE(type, m) sizeof(((type *)0)->m)

TEST(published_sizes_match_structs)
{
	EXPECT_EQ(KPPROF_CONFIG_SIZE_VER0, sizeof(struct kpprof_config));
	EXPECT_EQ(KPPROF_INFO_SIZE_VER1, sizeof(struct kpprof_info));
	EXPECT_EQ(KPPROF_INFO_SIZE_VER0, offsetof(struct kpprof_info, pring_size));
	EXPECT_EQ(KPPROF_STATS_SIZE_VER1, sizeof(struct kpprof_stats));
	EXPECT_EQ(KPPROF_STATS_SIZE_VER0, offsetof(struct kpprof_stats, pring_doorbells));
	EXPECT_EQ(KPPROF_FORMAT_ARG_SIZE_VER0, sizeof(struct kpprof_format_arg));
	EXPECT_EQ(KPPROF_CONFIG_PAGE_SIZE_VER1, sizeof(struct kpprof_config_page));
	EXPECT_EQ(KPPROF_CONFIG_PAGE_SIZE_VER0, offsetof(struct kpprof_config_page, size));
}

/* the drop reasons fit kpprof_stats.dropped[]; their numbers are ABI */
TEST(drop_reasons_fit_the_stats)
{
	EXPECT_EQ(0, KPPROF_DROP_RING_FULL);
	EXPECT_EQ(1, KPPROF_DROP_DISABLED);
	EXPECT_EQ(2, KPPROF_DROP_SHARE);
	EXPECT_EQ(3, KPPROF_DROP_NOMEM);
	EXPECT_LT(KPPROF_DROP_NOMEM, KPPROF_DROP_REASONS);
	EXPECT_EQ(KPPROF_DROP_REASONS * sizeof(__u64),
		  sizeof(((struct kpprof_stats *)0)->dropped));
}

TEST(ioctl_numbers_encode_sizes)
{
	EXPECT_EQ(sizeof(struct kpprof_info), _IOC_SIZE(KPPROF_IOC_GET_INFO));
	EXPECT_EQ(sizeof(struct kpprof_config), _IOC_SIZE(KPPROF_IOC_GET_CONFIG));
	EXPECT_EQ(sizeof(struct kpprof_config), _IOC_SIZE(KPPROF_IOC_SET_CONFIG));
	EXPECT_EQ(8, _IOC_SIZE(KPPROF_IOC_ADVANCE_CYCLE));
	EXPECT_EQ(sizeof(struct kpprof_stats), _IOC_SIZE(KPPROF_IOC_GET_STATS));
	EXPECT_EQ(sizeof(struct kpprof_format_arg), _IOC_SIZE(KPPROF_IOC_GET_FORMAT));
	EXPECT_EQ(0, _IOC_SIZE(KPPROF_IOC_CONSUMER_ATTACH));
	/* ABI 3: SUBMIT says what it reads */
	EXPECT_EQ(sizeof(struct kpprof_record), _IOC_SIZE(KPPROF_IOC_SUBMIT));
	EXPECT_EQ(_IOC_WRITE, _IOC_DIR(KPPROF_IOC_SUBMIT));
	EXPECT_EQ(_IOC_WRITE, _IOC_DIR(KPPROF_IOC_SET_CONFIG));
	EXPECT_EQ(_IOC_READ, _IOC_DIR(KPPROF_IOC_GET_INFO));
	EXPECT_EQ(_IOC_READ | _IOC_WRITE, _IOC_DIR(KPPROF_IOC_GET_FORMAT));
	/* distinct numbers */
	EXPECT_NE(_IOC_NR(KPPROF_IOC_GET_CONFIG), _IOC_NR(KPPROF_IOC_SET_CONFIG));
}

/* Sum of member sizes == sizeof: no hole the compiler could fill. */
TEST(no_implicit_padding)
{
	EXPECT_EQ(sizeof(struct kpprof_config),
		  2 * 8 + 4 * 4 + MEMBER_SIZE(struct kpprof_config, reserved));
	EXPECT_EQ(sizeof(struct kpprof_config_page),
		  4 + 4 + 8 + sizeof(struct kpprof_config) + 4 + 4);
	EXPECT_EQ(sizeof(struct kpprof_info),
		  4 + 4 + 8 + 8 + 4 + 4 + 8 + 11 * 8);
	EXPECT_EQ(sizeof(struct kpprof_stats),
		  2 * 8 + MEMBER_SIZE(struct kpprof_stats, dropped) + 5 * 8 +
		  4 + 4 + 5 * 8);
	EXPECT_EQ(sizeof(struct kpprof_pring_hdr),
		  8 * 8 + 8 * 8 + MEMBER_SIZE(struct kpprof_pring_hdr, lost));
	EXPECT_EQ(64, offsetof(struct kpprof_pring_hdr, tail));
	EXPECT_EQ(sizeof(struct kpprof_rec_lost),
		  sizeof(struct kpprof_record) + 3 * 8 + KPPROF_LOST_KINDS * 8);
	EXPECT_EQ(sizeof(struct kpprof_format_arg), 8 + 4 + 4);
	EXPECT_EQ(sizeof(struct kpprof_ring_hdr), 8);
	EXPECT_EQ(sizeof(struct kpprof_record), 1 + 1 + 2 + 4 * 5 + 8 + 8);
}

TEST(record_layouts)
{
	EXPECT_EQ(40, sizeof(struct kpprof_record));
	EXPECT_EQ(64, sizeof(struct kpprof_rec_alloc));
	EXPECT_EQ(64, offsetof(struct kpprof_rec_alloc, pcs));
	EXPECT_EQ(56, sizeof(struct kpprof_rec_free));
	EXPECT_EQ(64, sizeof(struct kpprof_rec_contention));
	EXPECT_EQ(64, offsetof(struct kpprof_rec_contention, pcs));
	EXPECT_EQ(88, sizeof(struct kpprof_rec_mmap));
	EXPECT_EQ(88, offsetof(struct kpprof_rec_mmap, path));
	EXPECT_EQ(86, offsetof(struct kpprof_rec_mmap, path_len));
	EXPECT_EQ(56, sizeof(struct kpprof_rec_munmap));
	EXPECT_EQ(64, sizeof(struct kpprof_rec_comm));
	EXPECT_EQ(48, sizeof(struct kpprof_rec_cycle));
	/*
	 * ABI 3: kind and version are ABI 2's __u16 kind, split so that an
	 * ABI 2 record reads as version 0 (little-endian)
	 */
	EXPECT_EQ(0, offsetof(struct kpprof_record, kind));
	EXPECT_EQ(1, offsetof(struct kpprof_record, version));
	EXPECT_EQ(1, MEMBER_SIZE(struct kpprof_record, kind));
	EXPECT_EQ(1, MEMBER_SIZE(struct kpprof_record, version));
	EXPECT_EQ(0, KPPROF_REC_VERSION);
	EXPECT_LE(KPPROF_REC_KINDS, 256);
	/* kernel-owned header fields where the format text will say */
	EXPECT_EQ(8, offsetof(struct kpprof_record, tgid));
	EXPECT_EQ(24, offsetof(struct kpprof_record, time_ns));
	EXPECT_EQ(32, offsetof(struct kpprof_record, cycle));
}

TEST(every_struct_is_8_byte_sized)
{
	EXPECT_EQ(0, sizeof(struct kpprof_config) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_config_page) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_info) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_stats) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_rec_alloc) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_rec_comm) % 8);
	EXPECT_EQ(0, sizeof(struct kpprof_rec_cycle) % 8);
}

TEST(limits_are_consistent)
{
	EXPECT_LE(KPPROF_STACK_DEPTH_DEFAULT, KPPROF_STACK_DEPTH_MAX);
	EXPECT_LT(KPPROF_CYCLE_PERIOD_MS_MIN, KPPROF_CYCLE_PERIOD_MS_DEFAULT);
	EXPECT_LE(KPPROF_CYCLE_PERIOD_MS_DEFAULT, KPPROF_CYCLE_PERIOD_MS_MAX);
	/* build_id_len is a __u8, path_len a __u16: the maxima must fit */
	EXPECT_LE(KPPROF_BUILD_ID_MAX, 255);
	EXPECT_LE(KPPROF_PATH_MAX, 65535);
	EXPECT_EQ(0, KPPROF_RING_LEN_MASK & (KPPROF_RING_BUSY | KPPROF_RING_DISCARD));
	EXPECT_EQ(KPPROF_REC_LOST + 1, KPPROF_REC_KINDS);
	EXPECT_LE(KPPROF_REC_KINDS, KPPROF_LOST_KINDS);
}

TEST_HARNESS_MAIN
