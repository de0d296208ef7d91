// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_size_test: the size-versioned argument structs, in the style of
 * openat2_test.c.  The size is the one in the ioctl number
 * (_IOC(dir, KPPROF_IOC_MAGIC, nr, size)); the kernel accepts VER0 ..
 * PAGE_SIZE, zero-extends shorter input, requires a zero tail on longer
 * input (else E2BIG), zero-fills the tail of longer output, and refuses a
 * size above PAGE_SIZE with E2BIG and one below VER0 with EINVAL.
 * Each input case runs at every misalignment 0..7 of the user buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"

#define NR_SET_CONFIG	0x02
#define NR_GET_INFO	0x00
#define NR_GET_CONFIG	0x01
#define NR_GET_STATS	0x04
#define NR_GET_FORMAT	0x05

struct size_case {
	const char *name;
	unsigned int size;
	int poke;	/* offset of a non-zero byte, or -1 */
	int err;	/* 0 or -errno */
};

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

FIXTURE(sz) {
	int fd;
	struct kpprof_config saved;
	unsigned char *buf;	/* 2 pages + 8, for misaligned structs */
};

FIXTURE_SETUP(sz)
{
	struct kpprof_config cfg;

	self->fd = dev__open();
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(-self->fd));
	ASSERT_EQ(0, dev__get_config(self->fd, &self->saved));
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(self->fd, &cfg));
	self->buf = aligned_alloc(64, 2 * page_size() + (_IOC_SIZEMASK + 1) + 64);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(sz)
{
	EXPECT_EQ(0, dev__set_config(self->fd, &self->saved));
	free(self->buf);
	close(self->fd);
}

/* The SET_CONFIG table: a valid kpprof_config in the first 48 bytes. */
TEST_F(sz, set_config_sizes)
{
	const unsigned int V0 = KPPROF_CONFIG_SIZE_VER0;
	const unsigned int P = (unsigned int)page_size();
	const struct size_case cases[] = {
		{ "exact VER0", V0, -1, 0 },
		{ "bigger, zero tail", V0 + 16, -1, 0 },
		{ "PAGE_SIZE - 1, zero tail", P - 1, -1, 0 },
		{ "tail start non-zero", V0 + 16, V0, -E2BIG },
		{ "tail middle non-zero", V0 + 16, V0 + 8, -E2BIG },
		{ "tail end non-zero", V0 + 16, V0 + 15, -E2BIG },
		{ "PAGE_SIZE - 1, last byte non-zero", P - 1, P - 2, -E2BIG },
		{ "PAGE_SIZE, zero tail", P, -1, 0 },
		{ "PAGE_SIZE, last byte non-zero", P, P - 1, -E2BIG },
		{ "size 0", 0, -1, -EINVAL },
		{ "size 8", 8, -1, -EINVAL },
		{ "VER0 - 1", V0 - 1, -1, -EINVAL },
		{ "PAGE_SIZE + 1", P + 1, -1, -E2BIG },
		{ "PAGE_SIZE + 8", P + 8, -1, -E2BIG },
		{ "biggest _IOC size", _IOC_SIZEMASK, -1, -E2BIG },
	};
	unsigned int i, misalign;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct size_case *c = &cases[i];

		for (misalign = 0; misalign < 8; misalign++) {
			unsigned char *arg = self->buf + misalign;
			struct kpprof_config cfg, base, got;
			unsigned long cmd;
			int err;

			/* start from a known config, then try one distinct */
			dev__test_config(&base);
			ASSERT_EQ(0, dev__set_config(self->fd, &base));
			cfg = base;
			cfg.mem_rate = 1000 + i * 8 + misalign;
			memset(arg, 0, c->size + 1);
			memcpy(arg, &cfg, c->size < V0 ? c->size : V0);
			if (c->poke >= 0)
				arg[c->poke] = 0x5a;
			cmd = _IOC(_IOC_WRITE, KPPROF_IOC_MAGIC, NR_SET_CONFIG, c->size);
			err = dev__ioctl(self->fd, cmd, arg);
			EXPECT_EQ(c->err, err)
				TH_LOG("case '%s' misalign %u", c->name, misalign);
			ASSERT_EQ(0, dev__get_config(self->fd, &got));
			if (c->err == 0) {
				EXPECT_EQ(0, memcmp(&cfg, &got, sizeof(got)))
					TH_LOG("case '%s' not applied", c->name);
			} else {
				EXPECT_EQ(0, memcmp(&base, &got, sizeof(got)))
					TH_LOG("case '%s' changed the config", c->name);
			}
		}
	}
}

/*
 * Output structs: a longer buffer gets the struct then zeros; a size below
 * VER0 is EINVAL, one above PAGE_SIZE E2BIG, and the buffer is left alone.
 */
static void check_output_sizes_full(struct __test_metadata *_metadata, int fd,
				    unsigned int nr, unsigned int ver0,
				    unsigned int full, unsigned char *buf,
				    const char *what)
{
	const unsigned int P = (unsigned int)page_size();
	const unsigned int ok_sizes[] = { ver0, ver0 + 8, ver0 + 64, P - 1, P };
	const unsigned int bad_sizes[] = { 0, 8, ver0 - 1, P + 1, P + 8, _IOC_SIZEMASK };
	unsigned int i, j;

	for (i = 0; i < sizeof(ok_sizes) / sizeof(ok_sizes[0]); i++) {
		unsigned int size = ok_sizes[i];

		memset(buf, 0xa5, size + 8);
		EXPECT_EQ(0, dev__ioctl(fd, _IOC(_IOC_READ, KPPROF_IOC_MAGIC, nr, size), buf))
			TH_LOG("%s size %u", what, size);
		for (j = full < size ? full : size; j < size; j++)
			if (buf[j] != 0)
				break;
		EXPECT_EQ(size, j) TH_LOG("%s size %u: tail byte %u not zeroed", what, size, j);
		/* not one byte past the caller's size */
		for (j = size; j < size + 8; j++)
			if (buf[j] != 0xa5)
				break;
		EXPECT_EQ(size + 8, j) TH_LOG("%s size %u: wrote past the end", what, size);
	}
	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		unsigned int size = bad_sizes[i];

		int want = size > P ? -E2BIG : -EINVAL;

		memset(buf, 0xa5, size + 8);
		EXPECT_EQ(want, dev__ioctl(fd, _IOC(_IOC_READ, KPPROF_IOC_MAGIC, nr, size), buf))
			TH_LOG("%s size %u", what, size);
		for (j = 0; j < size + 8; j++)
			if (buf[j] != 0xa5)
				break;
		EXPECT_EQ(size + 8, j) TH_LOG("%s size %u: buffer written on error", what, size);
	}
}

/* a struct still of its first size: zeros from VER0 on */
static void check_output_sizes(struct __test_metadata *_metadata, int fd,
			       unsigned int nr, unsigned int ver0,
			       unsigned char *buf, const char *what)
{
	check_output_sizes_full(_metadata, fd, nr, ver0, ver0, buf, what);
}

TEST_F(sz, get_info_sizes)
{
	struct kpprof_info want, *got = (void *)self->buf;

	/* ABI 3 grew it to VER1: zeros only from there on */
	check_output_sizes_full(_metadata, self->fd, NR_GET_INFO, KPPROF_INFO_SIZE_VER0,
				KPPROF_INFO_SIZE_VER1, self->buf, "GET_INFO");
	ASSERT_EQ(0, dev__info(self->fd, &want));
	/* ABI 3's struct is VER1: a caller's bigger one gets it, zero-filled */
	ASSERT_EQ(0, dev__ioctl(self->fd, _IOC(_IOC_READ, KPPROF_IOC_MAGIC, NR_GET_INFO,
					       KPPROF_INFO_SIZE_VER1 + 32), self->buf));
	EXPECT_EQ(0, memcmp(&want, got, sizeof(want)));
	/* an ABI 2 caller's 64 bytes get the first 64 */
	ASSERT_EQ(0, dev__ioctl(self->fd, _IOC(_IOC_READ, KPPROF_IOC_MAGIC, NR_GET_INFO,
					       KPPROF_INFO_SIZE_VER0), self->buf));
	EXPECT_EQ(0, memcmp(&want, got, KPPROF_INFO_SIZE_VER0));
}

TEST_F(sz, get_config_sizes)
{
	struct kpprof_config want;

	check_output_sizes(_metadata, self->fd, NR_GET_CONFIG, KPPROF_CONFIG_SIZE_VER0,
			   self->buf, "GET_CONFIG");
	ASSERT_EQ(0, dev__get_config(self->fd, &want));
	ASSERT_EQ(0, dev__ioctl(self->fd, _IOC(_IOC_READ, KPPROF_IOC_MAGIC, NR_GET_CONFIG,
					       KPPROF_CONFIG_SIZE_VER0 + 8), self->buf));
	EXPECT_EQ(0, memcmp(&want, self->buf, sizeof(want)));
}

TEST_F(sz, get_stats_sizes)
{
	/* grew to VER1 (pring_doorbells): zeros only from there on */
	check_output_sizes_full(_metadata, self->fd, NR_GET_STATS, KPPROF_STATS_SIZE_VER0,
				KPPROF_STATS_SIZE_VER1, self->buf, "GET_STATS");
}

/* GET_FORMAT is read-write: its input tail follows the SET_CONFIG rules. */
TEST_F(sz, get_format_sizes)
{
	const unsigned int V0 = KPPROF_FORMAT_ARG_SIZE_VER0;
	const struct size_case cases[] = {
		{ "exact VER0", V0, -1, -ENOSPC },
		{ "bigger, zero tail", V0 + 16, -1, -ENOSPC },
		{ "tail start non-zero", V0 + 16, V0, -E2BIG },
		{ "tail end non-zero", V0 + 16, V0 + 15, -E2BIG },
		{ "VER0 - 1", V0 - 1, -1, -EINVAL },
		{ "size 0", 0, -1, -EINVAL },
		{ "PAGE_SIZE + 8", (unsigned int)page_size() + 8, -1, -E2BIG },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct size_case *c = &cases[i];
		struct kpprof_format_arg arg = { .buf = 0, .size = 0 };
		unsigned char *p = self->buf + 3;	/* misaligned on purpose */
		struct kpprof_format_arg out;
		int err;

		memset(p, 0, c->size + 8);
		memcpy(p, &arg, c->size < V0 ? c->size : V0);
		if (c->poke >= 0)
			p[c->poke] = 1;
		err = dev__ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, KPPROF_IOC_MAGIC,
						NR_GET_FORMAT, c->size), p);
		EXPECT_EQ(c->err, err) TH_LOG("GET_FORMAT case '%s'", c->name);
		if (c->err == -ENOSPC) {
			/* the size-0 probe still reports the text's length */
			memcpy(&out, p, sizeof(out));
			EXPECT_LT(100, out.len) TH_LOG("GET_FORMAT case '%s': len %u",
						       c->name, out.len);
		}
	}
}

TEST_HARNESS_MAIN
