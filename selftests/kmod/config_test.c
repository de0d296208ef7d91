// SPDX-License-Identifier: GPL-2.0
/*
 * config_test: KPPROF_IOC_SET_CONFIG / GET_CONFIG and the read-only config
 * page.  A set is read back by both routes and the page's seqcount moves by
 * exactly 2; each invalid field, one per subtest, fails with EINVAL and
 * changes nothing (neither the config nor the page's seq); the boundary
 * values that are valid are accepted.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"

/*
 * config_page__read - a consistent copy of the page, by the seqcount rule.
 * Gives up (-EAGAIN) after 2 s, not after a count of tries: an emulated
 * vCPU can be descheduled by the host for milliseconds in the middle of
 * an update, leaving seq odd for that long.
 */
static int config_page__read(const struct kpprof_config_page *pg,
			     struct kpprof_config_page *out)
{
	__u64 give_up = now_ns() + 2000000000ULL;

	while (now_ns() < give_up) {
		__u32 s1 = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);

		if (s1 & 1)
			continue;
		memcpy(out, (const void *)pg, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->seq, __ATOMIC_RELAXED) == s1) {
			out->seq = s1;
			return 0;
		}
	}
	return -EAGAIN;
}

FIXTURE(cfg) {
	int fd;
	long page_size;
	struct kpprof_config saved;
	struct kpprof_config good;	/* a valid config every case starts from */
	const struct kpprof_config_page *page;
};

FIXTURE_SETUP(cfg)
{
	self->fd = dev__open();
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(-self->fd));
	self->page_size = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, dev__get_config(self->fd, &self->saved));
	self->page = mmap(NULL, self->page_size, PROT_READ, MAP_SHARED, self->fd,
			  KPPROF_PGOFF_CONFIG * self->page_size);
	ASSERT_NE(MAP_FAILED, self->page) TH_LOG("mmap config page: %s",
						 strerror(errno));
	dev__test_config(&self->good);
	self->good.mem_rate = 4096;
	self->good.block_rate = 10000;
	self->good.mutex_fraction = 7;
	self->good.max_stack_depth = 32;
	ASSERT_EQ(0, dev__set_config(self->fd, &self->good));
}

FIXTURE_TEARDOWN(cfg)
{
	EXPECT_EQ(0, dev__set_config(self->fd, &self->saved));
	if (self->page != MAP_FAILED)
		munmap((void *)self->page, self->page_size);
	close(self->fd);
}

TEST_F(cfg, round_trip_and_page_mirror)
{
	struct kpprof_config want = self->good, got;
	struct kpprof_config_page before, after;

	ASSERT_EQ(0, config_page__read(self->page, &before));
	EXPECT_EQ(0, before.seq & 1);
	EXPECT_EQ(KPPROF_ABI_VERSION, before.abi_version);
	EXPECT_EQ(0, memcmp(&self->good, &before.config, sizeof(want)));

	want.mem_rate = 1;
	want.block_rate = 1ULL << 40;
	want.mutex_fraction = 0xffffffffU;
	want.max_stack_depth = KPPROF_STACK_DEPTH_MAX;
	want.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MAX;
	want.flags = KPPROF_CFG_HEAP | KPPROF_CFG_MUTEX;
	ASSERT_EQ(0, dev__set_config(self->fd, &want));
	ASSERT_EQ(0, dev__get_config(self->fd, &got));
	EXPECT_EQ(0, memcmp(&want, &got, sizeof(want)));

	ASSERT_EQ(0, config_page__read(self->page, &after));
	EXPECT_EQ(before.seq + 2, after.seq);
	EXPECT_EQ(0, after.seq & 1);
	EXPECT_EQ(0, memcmp(&want, &after.config, sizeof(want)));
}

TEST_F(cfg, page_cycle_matches_stats)
{
	struct kpprof_config_page pg;
	struct kpprof_stats st;
	__u64 cycle;

	ASSERT_EQ(0, dev__advance(self->fd, &cycle));
	ASSERT_EQ(0, config_page__read(self->page, &pg));
	ASSERT_EQ(0, dev__stats(self->fd, &st));
	/* the timer is off in the test config: nothing else moves it */
	EXPECT_EQ(cycle, pg.cycle);
	EXPECT_EQ(cycle, st.cycle);
}

/*
 * ABI 3: the page says how many bytes of its struct the kernel fills in
 * (room to grow), and what follows them in the page is zero.
 */
TEST_F(cfg, page_size_field)
{
	const unsigned char *p = (const void *)self->page;
	long pagesz = sysconf(_SC_PAGESIZE), i;

	EXPECT_EQ(KPPROF_ABI_VERSION, self->page->abi_version);
	EXPECT_EQ(sizeof(struct kpprof_config_page), self->page->size);
	EXPECT_LE(KPPROF_CONFIG_PAGE_SIZE_VER1, self->page->size);
	EXPECT_EQ(0, self->page->reserved);
	ASSERT_LT(self->page->size, pagesz);
	for (i = self->page->size; i < pagesz; i++)
		ASSERT_EQ(0, p[i]) TH_LOG("byte %ld past the struct is not zero", i);
}

TEST_F(cfg, zero_rates_and_timer_off_valid)
{
	struct kpprof_config want = self->good, got;

	want.mem_rate = 0;
	want.block_rate = 0;
	want.mutex_fraction = 0;
	want.cycle_period_ms = 0;
	want.flags = 0;
	want.max_stack_depth = 1;
	ASSERT_EQ(0, dev__set_config(self->fd, &want));
	ASSERT_EQ(0, dev__get_config(self->fd, &got));
	EXPECT_EQ(0, memcmp(&want, &got, sizeof(want)));
}

TEST_F(cfg, period_min_valid)
{
	struct kpprof_config want = self->good, got;

	want.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MIN;
	ASSERT_EQ(0, dev__set_config(self->fd, &want));
	ASSERT_EQ(0, dev__get_config(self->fd, &got));
	EXPECT_EQ(KPPROF_CYCLE_PERIOD_MS_MIN, got.cycle_period_ms);
}

TEST_F(cfg, mem_rate_limit_valid)
{
	struct kpprof_config want = self->good, got;

	want.mem_rate = 1ULL << 40;
	ASSERT_EQ(0, dev__set_config(self->fd, &want));
	ASSERT_EQ(0, dev__get_config(self->fd, &got));
	EXPECT_EQ(1ULL << 40, got.mem_rate);
}

struct flipper {
	int fd;
	struct kpprof_config a, b;
	volatile int stop;
	unsigned long sets, errors;
};

static void *flip_configs(void *p)
{
	struct flipper *f = p;

	while (!f->stop) {
		if (dev__set_config(f->fd, f->sets & 1 ? &f->b : &f->a))
			f->errors++;
		else
			f->sets++;
		/*
		 * A writer that never pauses can starve seqcount readers: on
		 * a loaded host (two emulated vCPUs) one pause per 64 sets
		 * starved the reader for 2 s once.  Pause every 4 sets: the
		 * writes still overlap the reads thousands of times.
		 */
		if (f->sets % 4 == 0)
			usleep(50);
	}
	return NULL;
}

/*
 * Readers of the page never see a torn config: one thread flips between
 * two configs that differ in every field while this one reads by the
 * seqcount rule; every copy must be exactly one of the two, seq never
 * goes back, and it moved by exactly 2 per set.
 */
TEST_F(cfg, page_reads_never_torn)
{
	struct flipper f = { .fd = self->fd };
	struct kpprof_config_page first, snap;
	unsigned long reads = 0, torn = 0, backwards = 0, starved = 0;
	__u32 last;
	pthread_t th;
	__u64 end;

	dev__test_config(&f.a);
	f.b = f.a;
	f.a.mem_rate = 1111;
	f.b.mem_rate = 2222;
	f.a.block_rate = 3333;
	f.b.block_rate = 4444;
	f.a.mutex_fraction = 5;
	f.b.mutex_fraction = 6;
	f.a.max_stack_depth = 7;
	f.b.max_stack_depth = 8;
	f.a.cycle_period_ms = 0;	/* no timer: nothing else moves seq */
	f.b.cycle_period_ms = 0;
	f.a.flags = KPPROF_CFG_HEAP;
	f.b.flags = KPPROF_CFG_MUTEX;
	ASSERT_EQ(0, dev__set_config(self->fd, &f.a));
	ASSERT_EQ(0, config_page__read(self->page, &first));
	last = first.seq;
	ASSERT_EQ(0, pthread_create(&th, NULL, flip_configs, &f));
	end = now_ns() + 500000000ULL;
	/* no ASSERT while the flipper runs: teardown would race with it */
	while (now_ns() < end) {
		if (config_page__read(self->page, &snap)) {
			starved++;
			break;
		}
		reads++;
		if (memcmp(&snap.config, &f.a, sizeof(f.a)) &&
		    memcmp(&snap.config, &f.b, sizeof(f.b)))
			torn++;
		if (snap.seq < last)
			backwards++;
		last = snap.seq;
	}
	f.stop = 1;
	pthread_join(th, NULL);
	ASSERT_EQ(0, config_page__read(self->page, &snap));
	TH_LOG("%lu sets, %lu reads", f.sets, reads);
	EXPECT_EQ(0, f.errors);
	EXPECT_EQ(0, starved);
	EXPECT_EQ(0, torn);
	EXPECT_EQ(0, backwards);
	EXPECT_LT(10, f.sets);
	EXPECT_EQ(first.seq + 2 * f.sets, snap.seq);
}

/*
 * One invalid field per variant; everything else is self->good.  The set
 * must fail with EINVAL and leave config and page untouched.
 */
FIXTURE(bad_cfg) {
	int fd;
	long page_size;
	struct kpprof_config saved;
	struct kpprof_config good;
	const struct kpprof_config_page *page;
};

FIXTURE_VARIANT(bad_cfg) {
	int field;	/* which field to break */
	__u64 value;
};

enum { F_MEM_RATE, F_BLOCK_RATE, F_DEPTH, F_PERIOD, F_FLAGS, F_RESERVED0,
       F_RESERVED1 };

#define BAD(vname, f, v) \
	FIXTURE_VARIANT_ADD(bad_cfg, vname) { .field = f, .value = v }

BAD(mem_rate_over_2p40, F_MEM_RATE, (1ULL << 40) + 1);
BAD(mem_rate_all_ones, F_MEM_RATE, ~0ULL);
BAD(block_rate_over_2p40, F_BLOCK_RATE, (1ULL << 40) + 1);
BAD(block_rate_all_ones, F_BLOCK_RATE, ~0ULL);
BAD(depth_zero, F_DEPTH, 0);
BAD(depth_over_max, F_DEPTH, KPPROF_STACK_DEPTH_MAX + 1);
BAD(depth_all_ones, F_DEPTH, 0xffffffffU);
BAD(period_one, F_PERIOD, 1);
BAD(period_min_minus_one, F_PERIOD, KPPROF_CYCLE_PERIOD_MS_MIN - 1);
BAD(period_over_max, F_PERIOD, KPPROF_CYCLE_PERIOD_MS_MAX + 1);
BAD(period_all_ones, F_PERIOD, 0xffffffffU);
BAD(flag_bit3, F_FLAGS, KPPROF_CFG_ALL | (1U << 3));
BAD(flag_bit31, F_FLAGS, 1U << 31);
BAD(reserved0_one, F_RESERVED0, 1);
BAD(reserved0_high_bit, F_RESERVED0, 1ULL << 63);
BAD(reserved1_one, F_RESERVED1, 1);

FIXTURE_SETUP(bad_cfg)
{
	self->fd = dev__open();
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(-self->fd));
	self->page_size = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, dev__get_config(self->fd, &self->saved));
	self->page = mmap(NULL, self->page_size, PROT_READ, MAP_SHARED, self->fd,
			  KPPROF_PGOFF_CONFIG * self->page_size);
	ASSERT_NE(MAP_FAILED, self->page);
	dev__test_config(&self->good);
	self->good.mem_rate = 8192;
	self->good.block_rate = 5000;
	self->good.mutex_fraction = 3;
	self->good.max_stack_depth = 48;
	self->good.cycle_period_ms = 500;
	ASSERT_EQ(0, dev__set_config(self->fd, &self->good));
}

FIXTURE_TEARDOWN(bad_cfg)
{
	EXPECT_EQ(0, dev__set_config(self->fd, &self->saved));
	if (self->page != MAP_FAILED)
		munmap((void *)self->page, self->page_size);
	close(self->fd);
}

TEST_F(bad_cfg, rejected_einval_nothing_changed)
{
	struct kpprof_config bad = self->good, got;
	struct kpprof_config_page before, after;

	switch (variant->field) {
	case F_MEM_RATE: bad.mem_rate = variant->value; break;
	case F_BLOCK_RATE: bad.block_rate = variant->value; break;
	case F_DEPTH: bad.max_stack_depth = (__u32)variant->value; break;
	case F_PERIOD: bad.cycle_period_ms = (__u32)variant->value; break;
	case F_FLAGS: bad.flags = (__u32)variant->value; break;
	case F_RESERVED0: bad.reserved[0] = variant->value; break;
	case F_RESERVED1: bad.reserved[1] = variant->value; break;
	}
	/* also change a valid field: it must not be applied either */
	bad.mutex_fraction = 99;

	ASSERT_EQ(0, config_page__read(self->page, &before));
	EXPECT_EQ(-EINVAL, dev__set_config(self->fd, &bad));
	ASSERT_EQ(0, dev__get_config(self->fd, &got));
	EXPECT_EQ(0, memcmp(&self->good, &got, sizeof(got)));
	ASSERT_EQ(0, config_page__read(self->page, &after));
	EXPECT_EQ(before.seq, after.seq);
	EXPECT_EQ(0, memcmp(&self->good, &after.config, sizeof(got)));
}

TEST_HARNESS_MAIN
