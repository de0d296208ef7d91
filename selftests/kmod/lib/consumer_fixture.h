/* SPDX-License-Identifier: GPL-2.0 */
/*
 * consumer_fixture: the setup most ring tests share, as a harness FIXTURE:
 * the test configuration in force (saved and restored), an attached
 * consumer with the ring mapped and drained of earlier tests' records, and
 * a separate producer descriptor.  Include after kselftest_harness.h.
 */
#ifndef CONSUMER_FIXTURE_H
#define CONSUMER_FIXTURE_H

#include <unistd.h>

#include "kpp_dev.h"
#include "ring_reader.h"

FIXTURE(ring) {
	int cfd;		/* the consumer's file */
	int pfd;		/* a producer's file */
	struct kpprof_config saved;
	struct kpprof_info info;
	struct ring_reader rr;
	unsigned char *buf;	/* KPP_REC_BUF_MAX bytes for records */
};

FIXTURE_SETUP(ring)
{
	struct kpprof_config cfg;
	long n;

	self->cfd = self->pfd = -1;
	self->buf = calloc(1, KPP_REC_BUF_MAX);
	ASSERT_NE(NULL, self->buf);
	self->cfd = dev__open();
	ASSERT_LE(0, self->cfd) TH_LOG("open %s: %s", KPPROF_DEVICE_PATH,
				       strerror(-self->cfd));
	self->pfd = dev__open();
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, dev__info(self->cfd, &self->info));
	ASSERT_EQ(0, dev__get_config(self->cfd, &self->saved));
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(self->cfd, &cfg));
	ASSERT_EQ(0, ring_reader__attach(&self->rr, self->cfd));
	n = ring_reader__drain(&self->rr);
	ASSERT_LE(0, n) TH_LOG("ring format broken before the test: %ld", n);
	/* a BUSY entry left behind would block every later read */
	ASSERT_EQ(ring_reader__prod(&self->rr), ring_reader__cons(&self->rr));
}

FIXTURE_TEARDOWN(ring)
{
	if (self->cfd >= 0)
		EXPECT_EQ(0, dev__set_config(self->cfd, &self->saved));
	ring_reader__unmap(&self->rr);
	if (self->pfd >= 0)
		close(self->pfd);
	if (self->cfd >= 0)
		close(self->cfd);
	free(self->buf);
}

#endif /* CONSUMER_FIXTURE_H */
