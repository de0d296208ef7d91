// SPDX-License-Identifier: GPL-2.0
/*
 * pring_uid_cap_test: /dev/kpprof is 0666, and every producer ring counts
 * against one global cap, pring_total_max.  One uid must not be able to
 * take every ring and push every other user's processes back to a
 * syscall per record: a uid's rings stop at its share (pring_uid_max,
 * default pring_total_max / 8), counted in pring_refused, and a process of
 * another uid still maps its ring.  VM only: it reloads kpprof.ko
 * ($KPPROF_KO) with a 2 MiB pring_total_max (some 30 rings) so the cap is
 * reached in a second, and leaves it loaded with default parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"
#include "pring.h"

#define HOG_UID		60001
#define OTHER_UID	60002
#define MAX_RINGS	4096

static int become(uid_t uid)
{
	return setresgid(uid, uid, uid) || setresuid(uid, uid, uid);
}

/* map_rings - map rings until refused; the count, or -(80 + step) */
static int map_rings(int max, int *err)
{
	struct pring p;
	int n = 0, fd;

	*err = 0;
	while (n < max) {
		fd = dev__open();
		if (fd < 0)
			return -80;
		*err = pring__map(&p, fd);
		close(fd);	/* a mapping keeps its file */
		if (*err)
			break;
		n++;
	}
	return n;
}

FIXTURE(cap) {
	int loaded;
};

FIXTURE_SETUP(cap)
{
	struct rlimit rl = { MAX_RINGS + 64, MAX_RINGS + 64 };

	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	dev__module_unload();
	ASSERT_EQ(0, dev__module_load("pring_total_max=2097152"))
		TH_LOG("load %s: is the module still in use?", dev__module_path());
	self->loaded = 1;
}

FIXTURE_TEARDOWN(cap)
{
	/* every child is gone: the module unloads, and comes back as it was */
	EXPECT_EQ(0, dev__module_unload());
	EXPECT_EQ(0, dev__module_load(""));
}

TEST_F_TIMEOUT(cap, one_uid_cannot_take_every_ring, 120)
{
	struct kpprof_stats st;
	int up[2], down[2], status, cfd;
	char line[64] = "";
	pid_t hog, other;
	ssize_t r;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	hog = fork();
	ASSERT_LE(0, hog);
	if (!hog) {
		int n, err;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (become(HOG_UID))
			_exit(90);
		n = map_rings(MAX_RINGS, &err);
		dprintf(up[1], "%d %d", n, err);
		/* hold every ring until the other uid has tried */
		if (read(down[0], line, 1) != 1)
			_exit(91);
		_exit(0);
	}
	close(up[1]);
	r = read(up[0], line, sizeof(line) - 1);
	ASSERT_LT(0, r);
	TH_LOG("uid %d mapped %s (rings, then -errno)", HOG_UID, line);
	other = fork();
	ASSERT_LE(0, other);
	if (!other) {
		int n, err;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (become(OTHER_UID))
			_exit(90);
		n = map_rings(1, &err);
		_exit(n == 1 ? 0 : 100 - err);
	}
	ASSERT_EQ(other, waitpid(other, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("uid %d could not map a ring: exit %d (100 + errno)",
		       OTHER_UID, WEXITSTATUS(status));
	/* the hog's refusal is counted */
	cfd = dev__open();
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, dev__ioctl(cfd, KPPROF_IOC_GET_STATS, &st));
	EXPECT_LE(1, st.pring_refused);
	TH_LOG("pring_count %u, pring_refused %llu", st.pring_count,
	       (unsigned long long)st.pring_refused);
	close(cfd);
	ASSERT_EQ(1, write(down[1], "q", 1));
	ASSERT_EQ(hog, waitpid(hog, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
