// SPDX-License-Identifier: GPL-2.0
/*
 * format_test: the record format text of KPPROF_IOC_GET_FORMAT.  The
 * size-0 probe fails with ENOSPC and reports the length; a buffer of
 * exactly that length is still too small (the NUL), one more byte gets the
 * text.  Every event parses with libtraceevent, its ID is its record
 * kind, and each field's offset and size equal offsetof/sizeof in
 * ioctl/kpprof.h; finally tep_read_number_field() reads a real record out
 * of the ring the way the collector will.
 */
#include <errno.h>
#include <stdlib.h>
#include <event-parse.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

struct want_field {
	const char *name;
	int offset;
	int size;	/* 0 for a trailing flexible array */
};

struct want_event {
	const char *name;
	int id;
	struct want_field fields[8];
};

#define F(st, f) { #f, offsetof(struct st, f), sizeof(((struct st *)0)->f) }
#define FLEX(st, f) { #f, offsetof(struct st, f), 0 }

static const struct want_event want_events[] = {
	{ "kpprof_alloc", KPPROF_REC_ALLOC, {
		F(kpprof_rec_alloc, addr), F(kpprof_rec_alloc, bytes),
		F(kpprof_rec_alloc, rate), FLEX(kpprof_rec_alloc, pcs) } },
	{ "kpprof_free", KPPROF_REC_FREE, {
		F(kpprof_rec_free, addr), F(kpprof_rec_free, bytes) } },
	{ "kpprof_block", KPPROF_REC_BLOCK, {
		F(kpprof_rec_contention, delay_ns), F(kpprof_rec_contention, rate),
		F(kpprof_rec_contention, lock), FLEX(kpprof_rec_contention, pcs) } },
	{ "kpprof_mutex", KPPROF_REC_MUTEX, {
		F(kpprof_rec_contention, delay_ns), F(kpprof_rec_contention, rate),
		F(kpprof_rec_contention, lock), FLEX(kpprof_rec_contention, pcs) } },
	{ "kpprof_mmap", KPPROF_REC_MMAP, {
		F(kpprof_rec_mmap, start), F(kpprof_rec_mmap, end),
		F(kpprof_rec_mmap, offset), F(kpprof_rec_mmap, build_id),
		F(kpprof_rec_mmap, build_id_len), F(kpprof_rec_mmap, path_len),
		FLEX(kpprof_rec_mmap, path) } },
	{ "kpprof_munmap", KPPROF_REC_MUNMAP, {
		F(kpprof_rec_munmap, start), F(kpprof_rec_munmap, end) } },
	{ "kpprof_comm", KPPROF_REC_COMM, {
		F(kpprof_rec_comm, reason), F(kpprof_rec_comm, ppid),
		F(kpprof_rec_comm, comm) } },
	{ "kpprof_cycle", KPPROF_REC_CYCLE, {
		F(kpprof_rec_cycle, reason) } },
	{ "kpprof_note", KPPROF_REC_NOTE, {
		F(kpprof_rec_note, what), F(kpprof_rec_note, value) } },
	{ "kpprof_lost", KPPROF_REC_LOST, {
		F(kpprof_rec_lost, full), F(kpprof_rec_lost, invalid),
		F(kpprof_rec_lost, resets), F(kpprof_rec_lost, by_kind) } },
};

/* The record header, in every event. */
static const struct want_field header_fields[] = {
	F(kpprof_record, kind), F(kpprof_record, version), F(kpprof_record, nr_pcs), F(kpprof_record, size),
	F(kpprof_record, tgid), F(kpprof_record, tid), F(kpprof_record, uid),
	F(kpprof_record, cpu), F(kpprof_record, time_ns), F(kpprof_record, cycle),
};

/*
 * header_field - the header field @name: the header's own example names
 * it plainly ("kind"), the module ftrace-style as a common field
 * ("common_kind", and "common_type" for the kind as ftrace does).  Either
 * is accepted; the report says which.
 */
static struct tep_format_field *header_field(struct tep_event *ev, const char *name,
					     const char **how)
{
	struct tep_format_field *f;
	char common[64];

	snprintf(common, sizeof(common), "common_%s",
		 strcmp(name, "kind") ? name : "type");
	f = tep_find_common_field(ev, common);
	*how = "common_*";
	if (!f) {
		f = tep_find_any_field(ev, name);
		*how = "plain";
	}
	return f;
}

static char *get_format(struct __test_metadata *_metadata, int fd, __u32 *len)
{
	struct kpprof_format_arg arg = { 0 };
	char *text;

	EXPECT_EQ(-ENOSPC, dev__ioctl(fd, KPPROF_IOC_GET_FORMAT, &arg));
	*len = arg.len;
	text = malloc(arg.len + 1);
	if (!text)
		return NULL;
	arg.buf = (uintptr_t)text;
	arg.size = arg.len + 1;
	arg.len = 0;
	if (dev__ioctl(fd, KPPROF_IOC_GET_FORMAT, &arg)) {
		free(text);
		return NULL;
	}
	return text;
}

TEST_F(ring, probe_then_fetch)
{
	struct kpprof_format_arg arg = { 0 };
	char *text;
	__u32 len;

	ASSERT_EQ(-ENOSPC, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	len = arg.len;
	ASSERT_LT(200, len);
	text = malloc(len + 16);
	ASSERT_NE(NULL, text);

	/* exactly len bytes leave no room for the NUL: ENOSPC, nothing copied */
	memset(text, 'Q', len + 16);
	arg.buf = (uintptr_t)text;
	arg.size = len;
	arg.len = 0;
	EXPECT_EQ(-ENOSPC, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	EXPECT_EQ(len, arg.len);
	EXPECT_EQ('Q', text[0]);

	arg.size = len + 16;
	arg.len = 0;
	ASSERT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	EXPECT_EQ(len, arg.len);
	EXPECT_EQ('\0', text[len]);
	EXPECT_EQ(len, strlen(text));
	EXPECT_EQ(0, strncmp(text, "name: ", 6));
	free(text);
}

/*
 * len is "out": the natural probe-then-fetch, reusing the struct the probe
 * filled in, must work (an input len is not checked).
 */
TEST_F(ring, probe_struct_reused)
{
	struct kpprof_format_arg arg = { 0 };
	char *text;

	ASSERT_EQ(-ENOSPC, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	text = malloc(arg.len + 1);
	ASSERT_NE(NULL, text);
	arg.buf = (uintptr_t)text;
	arg.size = arg.len + 1;		/* arg.len still holds the probe's answer */
	EXPECT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	EXPECT_EQ(strlen(text), arg.len);
	/* and a garbage len going in changes nothing either */
	arg.len = 0xdeadbeef;
	EXPECT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_GET_FORMAT, &arg));
	EXPECT_EQ(strlen(text), arg.len);
	free(text);
}

TEST_F(ring, every_event_parses_and_matches_header)
{
	struct tep_handle *tep = tep_alloc();
	unsigned int nev = sizeof(want_events) / sizeof(want_events[0]);
	unsigned int i, j, parsed = 0;
	char *text, *p;
	const char *how = "";
	__u32 len;

	ASSERT_NE(NULL, tep);
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	text = get_format(_metadata, self->e.pfd, &len);
	ASSERT_NE(NULL, text);

	/* events start at "name: " at the start of a line */
	for (p = text; p && *p; ) {
		char *next = strstr(p + 1, "\nname: ");
		size_t n = next ? (size_t)(next + 1 - p) : strlen(p);
		struct tep_event *ev = NULL;
		enum tep_errno err;

		err = tep_parse_format(tep, &ev, p, n, "kpprof");
		ASSERT_EQ(0, err) TH_LOG("event %u does not parse: %.*s", parsed, (int)n, p);
		ASSERT_NE(NULL, ev);
		parsed++;
		p = next ? next + 1 : NULL;
	}
	EXPECT_EQ(nev, parsed);
	EXPECT_EQ((int)nev, tep_get_events_count(tep));

	for (i = 0; i < nev; i++) {
		const struct want_event *we = &want_events[i];
		struct tep_event *ev = tep_find_event_by_name(tep, "kpprof", we->name);

		ASSERT_NE(NULL, ev) TH_LOG("no event %s", we->name);
		EXPECT_EQ(we->id, ev->id) TH_LOG("event %s", we->name);
		for (j = 0; j < sizeof(header_fields) / sizeof(header_fields[0]); j++) {
			const struct want_field *wf = &header_fields[j];
			struct tep_format_field *f = header_field(ev, wf->name, &how);

			ASSERT_NE(NULL, f) TH_LOG("%s: no header field %s", we->name, wf->name);
			EXPECT_EQ(wf->offset, f->offset) TH_LOG("%s.%s", we->name, wf->name);
			EXPECT_EQ(wf->size, f->size) TH_LOG("%s.%s", we->name, wf->name);
			EXPECT_EQ(0, f->flags & TEP_FIELD_IS_SIGNED);
		}
		for (j = 0; j < 8 && we->fields[j].name; j++) {
			const struct want_field *wf = &we->fields[j];
			struct tep_format_field *f = tep_find_field(ev, wf->name);

			ASSERT_NE(NULL, f) TH_LOG("%s: no field %s", we->name, wf->name);
			EXPECT_EQ(wf->offset, f->offset) TH_LOG("%s.%s", we->name, wf->name);
			EXPECT_EQ(wf->size, f->size) TH_LOG("%s.%s", we->name, wf->name);
			EXPECT_EQ(0, f->flags & TEP_FIELD_IS_SIGNED)
				TH_LOG("%s.%s", we->name, wf->name);
			if (wf->size == 0) {
				EXPECT_TRUE(f->flags & TEP_FIELD_IS_ARRAY)
					TH_LOG("%s.%s: flexible array", we->name, wf->name);
			}
		}
	}
	TH_LOG("record header fields named %s", how);
	tep_free(tep);
	free(text);
}

/* Decode a ring record by field name, as the collector does. */
TEST_F(ring, read_record_through_tep)
{
	struct tep_handle *tep = tep_alloc();
	const struct kpprof_record *r;
	struct tep_event *ev = NULL;
	struct tep_format_field *f;
	unsigned long long v;
	const char *how;
	char *text, *start, *end;
	__u32 len, rlen;

	ASSERT_NE(NULL, tep);
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	text = get_format(_metadata, self->e.pfd, &len);
	ASSERT_NE(NULL, text);
	start = strstr(text, "name: kpprof_alloc\n");
	ASSERT_NE(NULL, start);
	end = strstr(start + 1, "\nname: ");
	ASSERT_EQ(0, tep_parse_format(tep, &ev, start,
				      end ? (size_t)(end + 1 - start) : strlen(start), "kpprof"));

	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__alloc(self->e.buf, 5, 42)));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &r, &rlen));
	f = tep_find_field(ev, "addr");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tep_read_number_field(f, r, &v));
	EXPECT_EQ(((struct kpprof_rec_alloc *)self->e.buf)->addr, v);
	f = tep_find_field(ev, "bytes");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tep_read_number_field(f, r, &v));
	EXPECT_EQ(((struct kpprof_rec_alloc *)self->e.buf)->bytes, v);
	f = header_field(ev, "tgid", &how);
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tep_read_number_field(f, r, &v));
	EXPECT_EQ((unsigned long long)getpid(), v);
	f = header_field(ev, "nr_pcs", &how);
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, tep_read_number_field(f, r, &v));
	EXPECT_EQ(5, v);
	ring_reader__consume(&self->e.rr);
	tep_free(tep);
	free(text);
}

TEST_HARNESS_MAIN
