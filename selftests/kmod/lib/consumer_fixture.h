/* SPDX-License-Identifier: GPL-2.0 */
/*
 * consumer_fixture: the setup most ring tests share.  CONSUMER_FIXTURE(fx)
 * declares harness fixture @fx with: the test configuration in force
 * (saved and restored), an attached consumer with the ring mapped and
 * drained of earlier tests' records, and a separate producer descriptor.
 * A macro rather than one fixture so a file can have several (variants
 * apply to every test of a fixture).  Include after kselftest_harness.h.
 */
#ifndef CONSUMER_FIXTURE_H
#define CONSUMER_FIXTURE_H

#include <stdlib.h>
#include <unistd.h>

#include "kpp_dev.h"
#include "ring_reader.h"

struct consumer_env {
	int cfd;		/* the consumer's file */
	int pfd;		/* a producer's file */
	struct kpprof_config saved;
	struct kpprof_info info;
	struct ring_reader rr;
	unsigned char *buf;	/* KPP_REC_BUF_MAX bytes for records */
};

static inline void consumer_env__setup(struct __test_metadata *_metadata,
				       struct consumer_env *e)
{
	struct kpprof_config cfg;
	long n;

	e->cfd = e->pfd = -1;
	e->buf = calloc(1, KPP_REC_BUF_MAX);
	ASSERT_NE(NULL, e->buf);
	e->cfd = dev__open();
	ASSERT_LE(0, e->cfd) TH_LOG("open %s: %s", KPPROF_DEVICE_PATH,
				    strerror(-e->cfd));
	e->pfd = dev__open();
	ASSERT_LE(0, e->pfd);
	ASSERT_EQ(0, dev__info(e->cfd, &e->info));
	ASSERT_EQ(0, dev__get_config(e->cfd, &e->saved));
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(e->cfd, &cfg));
	ASSERT_EQ(0, ring_reader__attach(&e->rr, e->cfd));
	n = ring_reader__drain(&e->rr);
	ASSERT_LE(0, n) TH_LOG("ring format broken before the test: %ld", n);
	/* a BUSY entry left behind would block every later read */
	ASSERT_EQ(ring_reader__prod(&e->rr), ring_reader__cons(&e->rr));
}

static inline void consumer_env__teardown(struct __test_metadata *_metadata,
					  struct consumer_env *e)
{
	if (e->cfd >= 0)
		EXPECT_EQ(0, dev__set_config(e->cfd, &e->saved));
	ring_reader__unmap(&e->rr);
	if (e->pfd >= 0)
		close(e->pfd);
	if (e->cfd >= 0)
		close(e->cfd);
	free(e->buf);
}

/* The fixture holds one struct consumer_env: tests use self->e.rr etc. */
#define CONSUMER_FIXTURE(fx)						\
	FIXTURE(fx) {							\
		struct consumer_env e;					\
	};								\
	FIXTURE_SETUP(fx)						\
	{								\
		consumer_env__setup(_metadata, &self->e);		\
	}								\
	FIXTURE_TEARDOWN(fx)						\
	{								\
		consumer_env__teardown(_metadata, &self->e);		\
	}

#endif /* CONSUMER_FIXTURE_H */
