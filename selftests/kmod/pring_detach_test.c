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
 * profiled process, whenever the collector stopped.  The write runs in a
 * child so that its signal is reported, not the harness's.
 */
TEST_F(detach, leaves_producer_rings)
{
	unsigned char *buf = self->e.buf;
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct pring p;
		int fd = dev__open();

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
	EXPECT_EQ(0, ioctl(self->e.cfd, KPPROF_IOC_CONSUMER_DETACH));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_FALSE(WIFSIGNALED(status))
		TH_LOG("the producer died of signal %d after the consumer's detach",
		       WTERMSIG(status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child status %#x", status);
}

TEST_HARNESS_MAIN
