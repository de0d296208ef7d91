// SPDX-License-Identifier: GPL-2.0
/*
 * decode_test - the record decoder against the format-text fixture (which
 * format_live_test checks, in the VM, is byte-identical to what the module
 * publishes): every kind round-trips, malformed records are refused, and a
 * format text missing a field is refused naming the field.
 */
#include <errno.h>
#include <kselftest_harness.h>

#include "test_rec.h"

FIXTURE(dec) {
	char *text;
	struct kpp_decoder *d;
	struct test_buf b;
};

FIXTURE_SETUP(dec)
{
	char err[256] = "";

	self->text = test_format();
	ASSERT_NE(NULL, self->text) TH_LOG("cannot read %s", FIXTURE_FORMAT);
	self->d = kpp_decoder__new(self->text, err, sizeof(err));
	ASSERT_NE(NULL, self->d) TH_LOG("%s", err);
}

FIXTURE_TEARDOWN(dec)
{
	kpp_decoder__free(self->d);
	free(self->text);
}

TEST_F(dec, alloc_round_trip)
{
	uint64_t pcs[3] = { 0x401000, 0x402000, 0x403000 };
	size_t len = test_alloc(&self->b, 42, 7, 0xdead0, 1024, 512 * 1024, pcs, 3);
	struct kpp_rec r;

	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(KPPROF_REC_ALLOC, r.kind);
	EXPECT_EQ(42u, r.tgid);
	EXPECT_EQ(7u, r.cycle);
	EXPECT_EQ(0xdead0u, r.alloc.addr);
	EXPECT_EQ(1024u, r.alloc.bytes);
	EXPECT_EQ(512u * 1024, r.alloc.rate);
	ASSERT_EQ(3, r.nr_pcs);
	EXPECT_EQ(0x402000u, kpp_rec__pc(&r, 1));
	EXPECT_EQ(0x403000u, kpp_rec__pc(&r, 2));
}

TEST_F(dec, contention_free_comm_cycle)
{
	uint64_t pcs[1] = { 0x1234 };
	struct kpp_rec r;
	size_t len;

	len = test_cont(&self->b, KPPROF_REC_MUTEX, 5, 1, 777, 10, pcs, 1);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(KPPROF_REC_MUTEX, r.kind);
	EXPECT_EQ(777u, r.cont.delay_ns);
	EXPECT_EQ(10u, r.cont.rate);
	EXPECT_EQ(0x1000u, r.cont.lock);

	len = test_free(&self->b, 5, 2, 0xbeef0, 64);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(0xbeef0u, r.alloc.addr);
	EXPECT_EQ(64u, r.alloc.bytes);

	len = test_comm(&self->b, 9, 1, KPPROF_COMM_FORK, "0123456789abcdef", 3);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(1u, r.comm.ppid);
	EXPECT_EQ((unsigned)KPPROF_COMM_FORK, r.comm.reason);
	/* All 16 bytes, no NUL in the record: still a terminated string. */
	EXPECT_STREQ("0123456789abcdef", r.comm.comm);

	len = test_cycle(&self->b, 12);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(KPPROF_REC_CYCLE, r.kind);
	EXPECT_EQ(12u, r.cycle);
}

TEST_F(dec, mmap_round_trip)
{
	struct kpp_rec r;
	size_t len = test_mmap(&self->b, 3, 0x7f0000000000, 0x7f0000010000, 0x1000, "/lib/x.so");

	self->b.mmap.build_id_len = 20;
	memset(self->b.mmap.build_id, 0xab, 20);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	EXPECT_EQ(0x7f0000000000u, r.mmap.start);
	EXPECT_EQ(0x7f0000010000u, r.mmap.end);
	EXPECT_EQ(0x1000u, r.mmap.offset);
	EXPECT_EQ(20, r.mmap.build_id_len);
	EXPECT_EQ(0xab, r.mmap.build_id[19]);
	EXPECT_STREQ("/lib/x.so", r.mmap.path);
}

TEST_F(dec, malformed_refused)
{
	uint64_t pcs[2] = { 1, 2 };
	struct kpp_rec r;
	size_t len;

	len = test_alloc(&self->b, 1, 1, 0x10, 8, 1, pcs, 2);
	/* Shorter than the header. */
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, 4, &r));
	/* size says more than the ring entry holds. */
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len - 8, &r));
	/* nr_pcs beyond the record. */
	self->b.hdr.nr_pcs = 3;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* No stack at all. */
	self->b.hdr.nr_pcs = 0;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* Unknown kind. */
	self->b.hdr.nr_pcs = 2;
	self->b.hdr.kind = KPPROF_REC_KINDS;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* A path without its NUL. */
	len = test_mmap(&self->b, 3, 0x1000, 0x2000, 0, "/a");
	self->b.mmap.path_len = 2;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* A path longer than the record. */
	self->b.mmap.path_len = 200;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* build_id_len beyond the array. */
	self->b.mmap.path_len = 3;
	self->b.mmap.build_id_len = 21;
	EXPECT_EQ(-EINVAL, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
}

/*
 * ABI 3: a record of a version the decoder does not know (a later module's
 * ALLOC with fields appended) is refused with its own error, which the
 * session counts in bad_records, never read as version 0.
 */
TEST_F(dec, unknown_version_refused)
{
	uint64_t pcs[2] = { 0x401000, 0x402000 };
	struct kpp_rec r;
	size_t len;

	len = test_alloc(&self->b, 1, 1, 0x10, 8, 1, pcs, 2);
	ASSERT_EQ(0, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	self->b.hdr.version = 1;
	EXPECT_EQ(-EPROTONOSUPPORT, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	self->b.hdr.version = 255;
	EXPECT_EQ(-EPROTONOSUPPORT, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* every kind, not only ALLOC: the kernel's CYCLE too */
	len = test_cycle(&self->b, 3);
	self->b.hdr.version = 1;
	EXPECT_EQ(-EPROTONOSUPPORT, kpp_decoder__decode(self->d, self->b.bytes, len, &r));
	/* a record too short to hold its version is refused, not read past */
	EXPECT_NE(0, kpp_decoder__decode(self->d, self->b.bytes, 1, &r));
}

/*
 * ABI 2's format text has a __u16 common_type and no common_version: its
 * records still decode (the version check needs the field).
 */
TEST_F(dec, abi2_text_without_version)
{
	const char *two = "\tfield:unsigned char common_type;\toffset:0;\tsize:1;\tsigned:0;\n"
			  "\tfield:unsigned char common_version;\toffset:1;\tsize:1;\tsigned:0;\n";
	const char *one = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
	size_t tl = strlen(two), ol = strlen(one), n = 0;
	char *old = calloc(1, strlen(self->text) + 1), err[256] = "";
	uint64_t pcs[1] = { 0x99 };
	struct kpp_decoder *d2;
	const char *p, *q;
	struct kpp_rec r;
	size_t len;

	ASSERT_NE(NULL, old);
	for (p = self->text; (q = strstr(p, two)); p = q + tl, n++) {
		strncat(old, p, q - p);
		strcat(old, one);
	}
	strcat(old, p);
	ASSERT_EQ(KPPROF_REC_KINDS - 1, n);
	ASSERT_LT(ol, tl);
	d2 = kpp_decoder__new(old, err, sizeof(err));
	ASSERT_NE(NULL, d2) TH_LOG("%s", err);
	len = test_alloc(&self->b, 9, 2, 0x20, 16, 1, pcs, 1);
	EXPECT_EQ(0, kpp_decoder__decode(d2, self->b.bytes, len, &r));
	EXPECT_EQ(KPPROF_REC_ALLOC, r.kind);
	EXPECT_EQ(9u, r.tgid);
	kpp_decoder__free(d2);
	free(old);
}

/* The decoder reads at the offsets the text gives, not the header's. */
TEST_F(dec, follows_the_text)
{
	char *moved = strdup(self->text), *p, err[256];
	struct kpp_decoder *d2;
	uint64_t pcs[1] = { 0x99 };
	struct kpp_rec r;
	size_t len;

	/* Swap addr and bytes of kpprof_alloc in the text. */
	p = strstr(moved, "field:u64 addr;\toffset:40;");
	ASSERT_NE(NULL, p);
	memcpy(p + strlen("field:u64 addr;\toffset:"), "48", 2);
	p = strstr(moved, "field:u64 bytes;\toffset:48;");
	ASSERT_NE(NULL, p);
	memcpy(p + strlen("field:u64 bytes;\toffset:"), "40", 2);
	d2 = kpp_decoder__new(moved, err, sizeof(err));
	ASSERT_NE(NULL, d2) TH_LOG("%s", err);
	len = test_alloc(&self->b, 1, 1, 0x5000, 77, 1, pcs, 1);
	ASSERT_EQ(0, kpp_decoder__decode(d2, self->b.bytes, len, &r));
	EXPECT_EQ(77u, r.alloc.addr);
	EXPECT_EQ(0x5000u, r.alloc.bytes);
	kpp_decoder__free(d2);
	free(moved);
}

TEST_F(dec, missing_field_named)
{
	char *broken = strdup(self->text), *p, err[256] = "";

	p = strstr(broken, "field:u64 rate;");
	ASSERT_NE(NULL, p);
	memcpy(p + strlen("field:u64 "), "rat_", 4);
	EXPECT_EQ(NULL, kpp_decoder__new(broken, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "'rate'")) TH_LOG("message: %s", err);
	free(broken);
	EXPECT_EQ(NULL, kpp_decoder__new("name: nonsense\n", err, sizeof(err)));
	EXPECT_NE(0, err[0]);
}

TEST_HARNESS_MAIN
