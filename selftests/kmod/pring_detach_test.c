// SPDX-License-Identifier: GPL-2.0
/*
 * pring_detach_test: the consumer's detach (KPPROF_IOC_CONSUMER_DETACH,
 * or its last close: a collector that stops) takes its own mappings away
 * and leaves every producer's ring mapped.
 */
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "pring.h"
#include "tally.h"

CONSUMER_FIXTURE(detach);

/*
 * The consumer's detach revokes the consumer's own mappings, and nothing
 * else of the device: a producer's ring (KPPROF_PGOFF_PRING, far above
 * them) stays mapped.  Until it was limited to the consumer's offsets,
 * the detach zapped every mapping of the device from page 1 up, and a
 * ring has no ->fault: the producer's next record was SIGBUS, in every
 * profiled process, whenever the collector stopped.  The consumer goes
 * by the ioctl, or by its file's last close (a collector that exits: the
 * release detaches it).  The write runs in a child so that its signal is
 * reported, not the harness's.
 */
static void producer_survives(struct __test_metadata *_metadata,
			      struct consumer_env *e, bool by_close)
{
	unsigned char *buf = e->buf;
	struct kpprof_stats st;
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct pring p;
		int fd;

		/* our copy of the consumer's file would keep it open */
		close(e->cfd);
		fd = dev__open();
		if (fd < 0 || pring__map(&p, fd) ||
		    pring__write(&p, buf, tally__rec(buf, 0)))
			_exit(80);
		/* the parent detaches between these two writes */
		if (raise(SIGSTOP))
			_exit(81);
		_exit(pring__write(&p, buf, tally__rec(buf, 1)) ? 82 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status)) TH_LOG("child status %#x", status);
	if (by_close) {
		/* the ring's mappings hold the file: they go first */
		ring_reader__unmap(&e->rr);
		EXPECT_EQ(0, close(e->cfd));
		/* a plain file for the teardown's config restore */
		e->cfd = dev__open();
		EXPECT_LE(0, e->cfd);
	} else {
		EXPECT_EQ(0, ioctl(e->cfd, KPPROF_IOC_CONSUMER_DETACH));
	}
	/*
	 * The consumer is gone before the producer writes again: were the
	 * file still held (a mapping, a copy), its release would not have
	 * run, and the case would pass on a module that zaps every ring.
	 */
	EXPECT_EQ(0, dev__stats(e->cfd, &st));
	EXPECT_EQ(0, st.consumer_attached)
		TH_LOG("still a consumer after its %s",
		       by_close ? "last close" : "detach");
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_FALSE(WIFSIGNALED(status))
		TH_LOG("the producer died of signal %d after the consumer's %s",
		       WTERMSIG(status), by_close ? "last close" : "detach");
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child status %#x", status);
}

TEST_F(detach, leaves_producer_rings)
{
	producer_survives(_metadata, &self->e, false);
}

TEST_F(detach, last_close_leaves_producer_rings)
{
	producer_survives(_metadata, &self->e, true);
}

TEST_HARNESS_MAIN
