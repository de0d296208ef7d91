// SPDX-License-Identifier: GPL-2.0
/*
 * note_test: KPPROF_REC_NOTE, a producer's notice about itself, is checked
 * like every other kind.  Each known @what with @pad zero is accepted and
 * comes back out of the ring with the producer's bytes intact; a non-zero
 * @pad (any of its bytes), an unknown @what, a stack (nr_pcs) or a wrong
 * size is EINVAL, counted as rejected, and leaves prod_pos alone.
 * garbage_test and fuzz_test build no NOTE record, so without this test a
 * module that stopped checking them would pass every other case.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"

CONSUMER_FIXTURE(ring)

static size_t note(unsigned char *buf, __u32 what, __u32 pad, __u64 value)
{
	struct kpprof_rec_note *r = (void *)buf;

	memset(r, 0, sizeof(*r));
	r->hdr.kind = KPPROF_REC_NOTE;
	r->hdr.size = sizeof(*r);
	r->what = what;
	r->pad = pad;
	r->value = value;
	return sizeof(*r);
}

TEST_F(ring, known_notes_accepted)
{
	static const __u32 whats[] = { KPPROF_NOTE_SECCOMP, KPPROF_NOTE_NO_HEAP };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		const struct kpprof_record *got;
		const struct kpprof_rec_note *n;
		size_t len = note(self->e.buf, whats[i], 0, 1000 + i);
		__u32 glen;

		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len))
			TH_LOG("what %u", whats[i]);
		ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
		ASSERT_EQ(len, glen);
		n = (const void *)got;
		EXPECT_EQ(KPPROF_REC_NOTE, got->kind);
		EXPECT_EQ(whats[i], n->what);
		EXPECT_EQ(0, n->pad);
		EXPECT_EQ(1000 + i, n->value);
		ring_reader__consume(&self->e.rr);
	}
}

TEST_F(ring, bad_notes_einval)
{
	static const struct {
		const char *name;
		__u32 what, pad;
		__u16 nr_pcs;
		int size_delta;
	} bad[] = {
		{ "pad 1", KPPROF_NOTE_SECCOMP, 1, 0, 0 },
		{ "pad high byte", KPPROF_NOTE_NO_HEAP, 0x01000000, 0, 0 },
		{ "pad all ones", KPPROF_NOTE_SECCOMP, 0xffffffff, 0, 0 },
		{ "what 0", 0, 0, 0, 0 },
		{ "what unknown", KPPROF_NOTE_NO_HEAP + 1, 0, 0, 0 },
		{ "nr_pcs 1", KPPROF_NOTE_SECCOMP, 0, 1, 0 },
		{ "8 bytes short", KPPROF_NOTE_SECCOMP, 0, 0, -8 },
		{ "8 bytes long", KPPROF_NOTE_SECCOMP, 0, 0, 8 },
	};
	struct kpprof_stats st0, st1;
	unsigned int i;

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		__u64 prod = ring_reader__prod(&self->e.rr);
		size_t len = note(self->e.buf, bad[i].what, bad[i].pad, 7) + bad[i].size_delta;
		struct kpprof_record *hdr = (void *)self->e.buf;

		hdr->nr_pcs = bad[i].nr_pcs;
		hdr->size = len;
		EXPECT_EQ(-EINVAL, dev__write(self->e.pfd, self->e.buf, len))
			TH_LOG("NOTE with %s accepted", bad[i].name);
		EXPECT_EQ(prod, ring_reader__prod(&self->e.rr))
			TH_LOG("NOTE with %s: prod_pos moved", bad[i].name);
	}
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.rejected + i, st1.rejected);
	EXPECT_EQ(st0.accepted, st1.accepted);
	EXPECT_EQ(0, ring_reader__drain(&self->e.rr));
}

TEST_HARNESS_MAIN
