// SPDX-License-Identifier: GPL-2.0
/*
 * format_live_test (VM) - the host tests decode with a fixture copy of the
 * module's format text; this checks the copy is byte-identical to what the
 * loaded module publishes, and that the decoder accepts the live text.
 */
#include <kselftest_harness.h>
#include <unistd.h>

#include "dev.h"
#include "test_rec.h"

TEST(fixture_matches_live_text)
{
	char *live = NULL, *fixture = test_format(), err[256];
	struct kpp_decoder *d;
	int fd = kpprof_dev__open();

	ASSERT_LE(0, fd) TH_LOG("open /dev/kpprof: %s", kpprof_dev__explain(fd));
	ASSERT_EQ(0, kpprof_dev__format(fd, &live));
	ASSERT_NE(NULL, fixture);
	EXPECT_STREQ(fixture, live) TH_LOG("regenerate selftests/collector/fixtures/format.txt");
	d = kpp_decoder__new(live, err, sizeof(err));
	EXPECT_NE(NULL, d) TH_LOG("%s", err);
	kpp_decoder__free(d);
	free(live);
	free(fixture);
	close(fd);
}

TEST(second_consumer_refused)
{
	int fd1 = kpprof_dev__open(), fd2 = kpprof_dev__open();

	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, kpprof_dev__attach(fd1));
	EXPECT_EQ(-EBUSY, kpprof_dev__attach(fd2));
	close(fd1);
	close(fd2);
}

TEST_HARNESS_MAIN
