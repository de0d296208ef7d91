// SPDX-License-Identifier: GPL-2.0
/*
 * doorbell_test: a file's doorbell (ioctl/kpprof.h, KPPROF_PGOFF_DOORBELL;
 * kmod/doorbell.c), the producer's kick that is a page fault:
 *   - what GET_INFO advertises;
 *   - the mappings it refuses: MAP_PRIVATE, PROT_WRITE, PROT_EXEC, a
 *     length or offset other than the advertised ones, a file opened
 *     read-only; and what it refuses later: mprotect() to write or
 *     execute, mremap() to grow;
 *   - the kicks, counted in kpprof_stats.pring_doorbells: a read of page 0
 *     kicks, a second read of page 0 does not, page 1 does, page 0 again
 *     does; a mapping moved by mremap() or cut by munmap() keeps working;
 *   - a fork child has no mapping there (MADV_DOFORK cannot change that),
 *     and a read of the address in it kicks nothing;
 *   - unmapping and closing in either order, with kicks between, is safe
 *     (for KASAN and lockdep on the debug kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"

FIXTURE(bell) {
	int fd;
	long page;
	off_t off;
	size_t len;
};

FIXTURE_SETUP(bell)
{
	struct kpprof_info info;

	self->fd = dev__open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, dev__info(self->fd, &info));
	ASSERT_TRUE(info.features & KPPROF_FEAT_DOORBELL);
	self->page = sysconf(_SC_PAGESIZE);
	self->off = (off_t)(info.doorbell_pgoff * info.page_size);
	self->len = info.doorbell_map_len;
}

FIXTURE_TEARDOWN(bell)
{
	close(self->fd);
}

static __u64 bells(struct __test_metadata *_metadata, int fd)
{
	struct kpprof_stats st;

	EXPECT_EQ(0, dev__stats(fd, &st));
	return st.pring_doorbells;
}

/* read one byte of page @i of @m; the kicks it made (a fresh count each) */
static __u64 ring(struct __test_metadata *_metadata, int fd, const void *m,
		  long page, int i)
{
	__u64 b0 = bells(_metadata, fd);

	EXPECT_EQ(0, ((const volatile unsigned char *)m)[i * page]);
	return bells(_metadata, fd) - b0;
}

static int map_errno(int fd, size_t len, int prot, int flags, off_t off)
{
	void *m = mmap(NULL, len, prot, flags, fd, off);

	if (m != MAP_FAILED) {
		munmap(m, len);
		return 0;
	}
	return -errno;
}

TEST_F(bell, advertised)
{
	EXPECT_EQ(KPPROF_PGOFF_DOORBELL * self->page, self->off);
	EXPECT_EQ(2 * (size_t)self->page, self->len);
}

TEST_F(bell, refused_mappings)
{
	int rofd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);

	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_PRIVATE, self->off));
	EXPECT_EQ(-EPERM, map_errno(self->fd, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
				    self->off));
	EXPECT_EQ(-EPERM, map_errno(self->fd, self->len, PROT_READ | PROT_EXEC, MAP_SHARED,
				    self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->page, PROT_READ, MAP_SHARED, self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 3 * self->page, PROT_READ, MAP_SHARED, self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED,
				     self->off + self->page));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED,
				     self->off - self->page));
	ASSERT_LE(0, rofd);
	EXPECT_EQ(-EACCES, map_errno(rofd, self->len, PROT_READ, MAP_SHARED, self->off));
	close(rofd);
	/* the right one, to show the refusals were for their reasons */
	EXPECT_EQ(0, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED, self->off));
}

TEST_F(bell, no_write_exec_or_growth_later)
{
	void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(-1, mprotect(m, self->len, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(m, self->len, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mremap(m, self->len, 2 * self->len, MREMAP_MAYMOVE));
	EXPECT_EQ(MAP_FAILED, mremap(m, self->len, 2 * self->len, 0));
	EXPECT_EQ(0, munmap(m, self->len));
}

TEST_F(bell, kicks_alternate)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(0, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(0, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

/* moved: the other page is found where it went */
TEST_F(bell, moved_by_mremap)
{
	void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);
	void *hole = mmap(NULL, self->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *n;

	ASSERT_NE(MAP_FAILED, m);
	ASSERT_NE(MAP_FAILED, hole);
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	n = mremap(m, self->len, self->len, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_EQ(hole, n);
	EXPECT_EQ(1, ring(_metadata, self->fd, n, self->page, 1));
	EXPECT_EQ(1, ring(_metadata, self->fd, n, self->page, 0));
	EXPECT_EQ(0, ring(_metadata, self->fd, n, self->page, 0));
	EXPECT_EQ(0, munmap(n, self->len));
}

/* one page left of two: it still kicks once per re-arm, nothing else */
TEST_F(bell, half_unmapped)
{
	unsigned char *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, (void *)m);
	EXPECT_EQ(0, munmap(m + self->page, self->page));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(0, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(0, munmap(m, self->page));
	m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, (void *)m);
	EXPECT_EQ(0, munmap(m, self->page));
	EXPECT_EQ(1, ring(_metadata, self->fd, m + self->page, 0, 0));
	EXPECT_EQ(0, ring(_metadata, self->fd, m + self->page, 0, 0));
	EXPECT_EQ(0, munmap(m + self->page, self->page));
}

/*
 * A consumer's detach revokes its own mappings only: the page the last
 * kick mapped stays mapped, and a read of it is no kick.  (It zapped every
 * mapping of the device from page 1 up, doorbells included: harmless
 * here, one extra kick, but the same zap made producers' rings SIGBUS,
 * pring_test's consumer_detach_leaves_producer_rings.)
 */
TEST_F(bell, consumer_detach_leaves_it_mapped)
{
	const unsigned char *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED,
				      self->fd, self->off);
	int cfd = dev__open();

	ASSERT_NE(MAP_FAILED, m);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	ASSERT_EQ(0, ioctl(cfd, KPPROF_IOC_CONSUMER_ATTACH))
		TH_LOG("attach: %s (is a consumer running?)", strerror(errno));
	EXPECT_EQ(0, ioctl(cfd, KPPROF_IOC_CONSUMER_DETACH));
	EXPECT_EQ(0, ring(_metadata, self->fd, m, self->page, 0))
		TH_LOG("the consumer's detach took the doorbell's page out");
	close(cfd);
	munmap((void *)m, self->len);
}

TEST_F(bell, fork_child_has_none)
{
	void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);
	__u64 b0;
	pid_t pid;
	int st;

	ASSERT_NE(MAP_FAILED, m);
	/* VM_IO: MADV_DOFORK cannot make it inherited */
	EXPECT_EQ(-1, madvise(m, self->len, MADV_DOFORK));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	b0 = bells(_metadata, self->fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* nothing mapped there: madvise() says ENOMEM, a read SIGSEGV */
		if (madvise(m, self->len, MADV_NORMAL) != -1 || errno != ENOMEM)
			_exit(1);
		signal(SIGSEGV, SIG_DFL);
		(void)((volatile unsigned char *)m)[self->page];
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) TH_LOG("child status %#x", st);
	EXPECT_EQ(b0, bells(_metadata, self->fd));
	/* the parent's goes on */
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(0, munmap(m, self->len));
}

/* close before munmap: the vma holds the file; kicks go on until unmapped */
TEST_F(bell, close_then_unmap)
{
	int fd = dev__open();
	const void *m;

	ASSERT_LE(0, fd);
	m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, fd, self->off);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 0));
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

TEST_F(bell, unmap_then_close)
{
	int fd = dev__open();
	const void *m;

	ASSERT_LE(0, fd);
	m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, fd, self->off);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(1, ring(_metadata, self->fd, m, self->page, 1));
	EXPECT_EQ(0, munmap((void *)m, self->len));
	EXPECT_EQ(0, close(fd));
}

/* many mappings of one file, closed and unmapped in a mixed order */
TEST_F(bell, many_mappings_any_order)
{
	const void *m[8];
	int fd = dev__open(), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 8; i++) {
		m[i] = mmap(NULL, self->len, PROT_READ, MAP_SHARED, fd, self->off);
		ASSERT_NE(MAP_FAILED, m[i]);
		EXPECT_EQ(1, ring(_metadata, self->fd, m[i], self->page, i & 1));
	}
	for (i = 0; i < 8; i += 2)
		EXPECT_EQ(0, munmap((void *)m[i], self->len));
	EXPECT_EQ(0, close(fd));
	for (i = 1; i < 8; i += 2) {
		EXPECT_EQ(1, ring(_metadata, self->fd, m[i], self->page, 0));
		EXPECT_EQ(0, munmap((void *)m[i], self->len));
	}
}

TEST_HARNESS_MAIN
