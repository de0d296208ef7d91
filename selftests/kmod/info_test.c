// SPDX-License-Identifier: GPL-2.0
/*
 * info_test: KPPROF_IOC_GET_INFO (ABI version, features, ring geometry),
 * unknown ioctls (ENOTTY) and bad user pointers (EFAULT) for every ioctl
 * that takes an argument.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"

FIXTURE(dev) {
	int fd;
	struct kpprof_config saved;
};

FIXTURE_SETUP(dev)
{
	self->fd = dev__open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", KPPROF_DEVICE_PATH,
				      strerror(-self->fd));
	ASSERT_EQ(0, dev__get_config(self->fd, &self->saved));
}

FIXTURE_TEARDOWN(dev)
{
	/* a failed EFAULT test may have half-applied nothing, but be sure */
	EXPECT_EQ(0, dev__set_config(self->fd, &self->saved));
	close(self->fd);
}

TEST_F(dev, info_fields)
{
	struct kpprof_info info;
	long page = sysconf(_SC_PAGESIZE);

	ASSERT_EQ(0, dev__info(self->fd, &info));
	EXPECT_EQ(KPPROF_ABI_VERSION, info.abi_version);
	EXPECT_EQ(page, info.page_size);
	EXPECT_EQ(KPPROF_FEAT_CONFIG_PAGE | KPPROF_FEAT_RING_MMAP |
		  KPPROF_FEAT_FORMAT_TEXT | KPPROF_FEAT_SUBMIT_IOCTL | KPPROF_FEAT_PRING,
		  info.features & (KPPROF_FEAT_CONFIG_PAGE | KPPROF_FEAT_RING_MMAP |
				   KPPROF_FEAT_FORMAT_TEXT | KPPROF_FEAT_SUBMIT_IOCTL |
				   KPPROF_FEAT_PRING));
	/* ABI 3: the mmap layout */
	EXPECT_EQ(KPPROF_PGOFF_CONSUMER, info.cons_pgoff);
	EXPECT_EQ(KPPROF_PGOFF_PRODUCER, info.prod_pgoff);
	EXPECT_EQ(KPPROF_PGOFF_PRING, info.pring_pgoff);
	EXPECT_EQ(0, info.pring_size & (info.pring_size - 1));
	EXPECT_EQ((__u64)page, info.pring_data_off);
	EXPECT_EQ(info.pring_data_off + 2 * info.pring_size, info.pring_map_len);
	/* a power of two, at least a page */
	EXPECT_EQ(0, info.ring_size & (info.ring_size - 1));
	EXPECT_GE(info.ring_size, (__u64)page);
	/* room for the largest valid records: a full mmap path, a deep stack */
	EXPECT_GE(info.max_record_size,
		  (sizeof(struct kpprof_rec_mmap) + KPPROF_PATH_MAX + 7) & ~7UL);
	EXPECT_GE(info.max_record_size, sizeof(struct kpprof_rec_alloc) +
		  8 * KPPROF_STACK_DEPTH_MAX);
	EXPECT_EQ(0, info.max_record_size % 8);
	/* a record must fit the ring with its header */
	EXPECT_LT(info.max_record_size + 8, info.ring_size);
	/* the test VM loads the module without producer_gid */
	EXPECT_EQ(-1, info.producer_gid);
	/* the default producer_share, half the ring */
	EXPECT_EQ(info.ring_size * 50 / 100, info.producer_share);
	/* the doorbell, in what were ABI 3's first reserved words */
	EXPECT_TRUE(info.features & KPPROF_FEAT_DOORBELL);
	EXPECT_EQ(KPPROF_PGOFF_DOORBELL, info.doorbell_pgoff);
	EXPECT_EQ(2 * (__u64)page, info.doorbell_map_len);
	/* the seccomp probe, in ABI 3's last reserved words */
	EXPECT_TRUE(info.features & KPPROF_FEAT_SECCOMP_PROBE);
	/* answered for the thread group (a bit of its own: the meaning changed) */
	EXPECT_TRUE(info.features & KPPROF_FEAT_SECCOMP_PROBE_GROUP);
	EXPECT_EQ(KPPROF_PGOFF_SECCOMP_PROBE, info.probe_pgoff);
	EXPECT_EQ(2 * (__u64)page, info.probe_map_len);
	/* the struct kept its size */
	EXPECT_EQ(KPPROF_INFO_SIZE_VER1, sizeof(info));
}

TEST_F(dev, unknown_nr_enotty)
{
	char buf[64] = { 0 };

	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd, _IO(KPPROF_IOC_MAGIC, 0x7f), NULL));
	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd, _IOR(KPPROF_IOC_MAGIC, 0x07, __u64), buf));
}

TEST_F(dev, foreign_magic_enotty)
{
	struct kpprof_info info;

	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd, _IOR('T', 0x00, struct kpprof_info), &info));
	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd, TCGETS, &info));
}

TEST_F(dev, wrong_direction_enotty)
{
	struct kpprof_info info = { 0 };
	struct kpprof_config cfg = { 0 };

	/* GET_INFO's number as a write, SET_CONFIG's as a read */
	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd,
				      _IOW(KPPROF_IOC_MAGIC, 0x00, struct kpprof_info), &info));
	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd,
				      _IOR(KPPROF_IOC_MAGIC, 0x02, struct kpprof_config), &cfg));
	/* ATTACH takes no argument: with a size it is another command */
	EXPECT_EQ(-ENOTTY, dev__ioctl(self->fd, _IOR(KPPROF_IOC_MAGIC, 0x06, __u64), &cfg));
}

/* Every ioctl that takes an argument, with NULL and with (void *)1. */
static const struct {
	const char *name;
	unsigned long cmd;
} arg_ioctls[] = {
	{ "GET_INFO", KPPROF_IOC_GET_INFO },
	{ "GET_CONFIG", KPPROF_IOC_GET_CONFIG },
	{ "SET_CONFIG", KPPROF_IOC_SET_CONFIG },
	{ "ADVANCE_CYCLE", KPPROF_IOC_ADVANCE_CYCLE },
	{ "GET_STATS", KPPROF_IOC_GET_STATS },
	{ "GET_FORMAT", KPPROF_IOC_GET_FORMAT },
};

TEST_F(dev, null_pointer_efault)
{
	unsigned int i;

	for (i = 0; i < sizeof(arg_ioctls) / sizeof(arg_ioctls[0]); i++) {
		EXPECT_EQ(-EFAULT, dev__ioctl(self->fd, arg_ioctls[i].cmd, NULL))
			TH_LOG("%s with NULL", arg_ioctls[i].name);
	}
}

TEST_F(dev, wild_pointer_efault)
{
	unsigned int i;

	for (i = 0; i < sizeof(arg_ioctls) / sizeof(arg_ioctls[0]); i++) {
		EXPECT_EQ(-EFAULT, dev__ioctl(self->fd, arg_ioctls[i].cmd, (void *)1))
			TH_LOG("%s with (void *)1", arg_ioctls[i].name);
	}
}

TEST_F(dev, kernel_pointer_efault)
{
	/* an address in the kernel half: access_ok() must refuse it */
	void *kaddr = (void *)0xffffffff81000000UL;
	unsigned int i;

	for (i = 0; i < sizeof(arg_ioctls) / sizeof(arg_ioctls[0]); i++) {
		EXPECT_EQ(-EFAULT, dev__ioctl(self->fd, arg_ioctls[i].cmd, kaddr))
			TH_LOG("%s with a kernel address", arg_ioctls[i].name);
	}
}

TEST_F(dev, format_bad_buffer_efault)
{
	struct kpprof_format_arg arg = { .buf = 1, .size = 1 << 20 };

	EXPECT_EQ(-EFAULT, dev__ioctl(self->fd, KPPROF_IOC_GET_FORMAT, &arg));
	arg.buf = 0;
	EXPECT_EQ(-EFAULT, dev__ioctl(self->fd, KPPROF_IOC_GET_FORMAT, &arg));
}

TEST_F(dev, write_bad_pointer_efault)
{
	/* volatile: the compiler must not see (and refuse) the bad pointers */
	void *volatile bad[] = { NULL, (void *)1, (void *)0xffffffff81000000UL };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-EFAULT, dev__write(self->fd, bad[i], 64))
			TH_LOG("write from %p", bad[i]);
	}
}

TEST_HARNESS_MAIN
