// SPDX-License-Identifier: GPL-2.0
/*
 * The record format text: the layout of every record kind written as
 * ftrace event formats, so the collector reads fields by name through
 * libtraceevent instead of hard-coding offsets.  Offsets and sizes come
 * from the UAPI structs themselves (offsetof/sizeof), so the text cannot
 * drift from the header.
 *
 * The record header's fields are each event's "common" fields (before the
 * blank line), named common_* as ftrace names its own; common_type is the
 * record kind, which is also the event ID.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include "kpp.h"

struct kpp_field {
	const char *type;
	const char *name;
	unsigned int offset;
	unsigned int size;
};

#define KPP_FIELD(st, type, field)					\
	{ type, #field, offsetof(struct st, field),			\
	  sizeof_field(struct st, field) }
/* A trailing flexible array: size 0, its length comes from another field. */
#define KPP_FLEX(st, type, field, decl)					\
	{ type, decl, offsetof(struct st, field), 0 }

static const struct kpp_field kpp_common_fields[] = {
	{ "unsigned char", "common_type", offsetof(struct kpprof_record, kind), 1 },
	{ "unsigned char", "common_version", offsetof(struct kpprof_record, version), 1 },
	{ "unsigned short", "common_nr_pcs", offsetof(struct kpprof_record, nr_pcs), 2 },
	{ "unsigned int", "common_size", offsetof(struct kpprof_record, size), 4 },
	{ "unsigned int", "common_tgid", offsetof(struct kpprof_record, tgid), 4 },
	{ "unsigned int", "common_tid", offsetof(struct kpprof_record, tid), 4 },
	{ "unsigned int", "common_uid", offsetof(struct kpprof_record, uid), 4 },
	{ "unsigned int", "common_cpu", offsetof(struct kpprof_record, cpu), 4 },
	{ "u64", "common_time_ns", offsetof(struct kpprof_record, time_ns), 8 },
	{ "u64", "common_cycle", offsetof(struct kpprof_record, cycle), 8 },
};

static const struct kpp_field kpp_alloc_fields[] = {
	KPP_FIELD(kpprof_rec_alloc, "u64", addr),
	KPP_FIELD(kpprof_rec_alloc, "u64", bytes),
	KPP_FIELD(kpprof_rec_alloc, "u64", rate),
	KPP_FLEX(kpprof_rec_alloc, "u64", pcs, "pcs[0]"),
};

static const struct kpp_field kpp_free_fields[] = {
	KPP_FIELD(kpprof_rec_free, "u64", addr),
	KPP_FIELD(kpprof_rec_free, "u64", bytes),
};

static const struct kpp_field kpp_contention_fields[] = {
	KPP_FIELD(kpprof_rec_contention, "u64", delay_ns),
	KPP_FIELD(kpprof_rec_contention, "u64", rate),
	KPP_FIELD(kpprof_rec_contention, "u64", lock),
	KPP_FLEX(kpprof_rec_contention, "u64", pcs, "pcs[0]"),
};

static const struct kpp_field kpp_mmap_fields[] = {
	KPP_FIELD(kpprof_rec_mmap, "u64", start),
	KPP_FIELD(kpprof_rec_mmap, "u64", end),
	KPP_FIELD(kpprof_rec_mmap, "u64", offset),
	{ "unsigned char", "build_id[20]", offsetof(struct kpprof_rec_mmap, build_id),
	  sizeof_field(struct kpprof_rec_mmap, build_id) },
	KPP_FIELD(kpprof_rec_mmap, "unsigned char", build_id_len),
	KPP_FIELD(kpprof_rec_mmap, "unsigned short", path_len),
	KPP_FLEX(kpprof_rec_mmap, "char", path, "path[0]"),
};

static const struct kpp_field kpp_munmap_fields[] = {
	KPP_FIELD(kpprof_rec_munmap, "u64", start),
	KPP_FIELD(kpprof_rec_munmap, "u64", end),
};

static const struct kpp_field kpp_comm_fields[] = {
	KPP_FIELD(kpprof_rec_comm, "unsigned int", reason),
	KPP_FIELD(kpprof_rec_comm, "unsigned int", ppid),
	{ "char", "comm[16]", offsetof(struct kpprof_rec_comm, comm),
	  sizeof_field(struct kpprof_rec_comm, comm) },
};

static const struct kpp_field kpp_cycle_fields[] = {
	KPP_FIELD(kpprof_rec_cycle, "unsigned int", reason),
};

static const struct kpp_field kpp_note_fields[] = {
	KPP_FIELD(kpprof_rec_note, "unsigned int", what),
	KPP_FIELD(kpprof_rec_note, "u64", value),
};

static const struct kpp_field kpp_lost_fields[] = {
	KPP_FIELD(kpprof_rec_lost, "u64", full),
	KPP_FIELD(kpprof_rec_lost, "u64", invalid),
	KPP_FIELD(kpprof_rec_lost, "u64", resets),
	{ "u64", "by_kind[16]", offsetof(struct kpprof_rec_lost, by_kind),
	  sizeof_field(struct kpprof_rec_lost, by_kind) },
};

struct kpp_event {
	const char *name;
	unsigned int id;
	const struct kpp_field *fields;
	unsigned int nr_fields;
	const char *print_fmt;
};

#define KPP_EVENT(n, i, f, p) { n, i, f, ARRAY_SIZE(f), p }

static const struct kpp_event kpp_events[] = {
	KPP_EVENT("kpprof_alloc", KPPROF_REC_ALLOC, kpp_alloc_fields,
		  "\"addr=0x%llx bytes=%llu rate=%llu\", REC->addr, REC->bytes, REC->rate"),
	KPP_EVENT("kpprof_free", KPPROF_REC_FREE, kpp_free_fields,
		  "\"addr=0x%llx bytes=%llu\", REC->addr, REC->bytes"),
	KPP_EVENT("kpprof_block", KPPROF_REC_BLOCK, kpp_contention_fields,
		  "\"delay_ns=%llu rate=%llu lock=0x%llx\", REC->delay_ns, REC->rate, REC->lock"),
	KPP_EVENT("kpprof_mutex", KPPROF_REC_MUTEX, kpp_contention_fields,
		  "\"delay_ns=%llu rate=%llu lock=0x%llx\", REC->delay_ns, REC->rate, REC->lock"),
	KPP_EVENT("kpprof_mmap", KPPROF_REC_MMAP, kpp_mmap_fields,
		  "\"start=0x%llx end=0x%llx offset=0x%llx\", REC->start, REC->end, REC->offset"),
	KPP_EVENT("kpprof_munmap", KPPROF_REC_MUNMAP, kpp_munmap_fields,
		  "\"start=0x%llx end=0x%llx\", REC->start, REC->end"),
	KPP_EVENT("kpprof_comm", KPPROF_REC_COMM, kpp_comm_fields,
		  "\"reason=%u ppid=%u\", REC->reason, REC->ppid"),
	KPP_EVENT("kpprof_cycle", KPPROF_REC_CYCLE, kpp_cycle_fields,
		  "\"reason=%u\", REC->reason"),
	KPP_EVENT("kpprof_note", KPPROF_REC_NOTE, kpp_note_fields,
		  "\"what=%u value=%llu\", REC->what, REC->value"),
	KPP_EVENT("kpprof_lost", KPPROF_REC_LOST, kpp_lost_fields,
		  "\"full=%llu invalid=%llu resets=%llu\", REC->full, REC->invalid, REC->resets"),
};

static size_t kpp_format_fields(char *buf, size_t size,
				const struct kpp_field *f, unsigned int n)
{
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		len += scnprintf(buf + len, size - len,
				 "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:0;\n",
				 f[i].type, f[i].name, f[i].offset, f[i].size);
	return len;
}

static size_t kpp_format_event(char *buf, size_t size,
			       const struct kpp_event *ev)
{
	size_t len;

	len = scnprintf(buf, size, "name: %s\nID: %u\nformat:\n", ev->name,
			ev->id);
	len += kpp_format_fields(buf + len, size - len, kpp_common_fields,
				 ARRAY_SIZE(kpp_common_fields));
	len += scnprintf(buf + len, size - len, "\n");
	len += kpp_format_fields(buf + len, size - len, ev->fields,
				 ev->nr_fields);
	len += scnprintf(buf + len, size - len, "\nprint fmt: %s\n",
			 ev->print_fmt);
	return len;
}

/**
 * kpp_format_build - build the format text of every record kind
 * @text: out: the NUL-terminated text, kfree() it.
 * @len:  out: its length without the NUL.
 *
 * Events are separated by a blank line.
 *
 * Return: 0 or -ENOMEM.
 */
int kpp_format_build(char **text, size_t *len)
{
	const size_t size = 16384;
	size_t n = 0;
	unsigned int i;
	char *buf;

	BUILD_BUG_ON(ARRAY_SIZE(kpp_events) != KPPROF_REC_KINDS - 1);

	buf = kzalloc(size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(kpp_events); i++) {
		if (i)
			n += scnprintf(buf + n, size - n, "\n");
		n += kpp_format_event(buf + n, size - n, &kpp_events[i]);
	}
	/* scnprintf() stops short of the end: one byte left means truncated */
	if (WARN_ON(n >= size - 1)) {
		kfree(buf);
		return -ENOMEM;
	}
	*text = buf;
	*len = n;
	return 0;
}
