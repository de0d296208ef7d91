// SPDX-License-Identifier: GPL-2.0
/*
 * decode.c - the record decoder.  The module publishes its record layouts
 * as ftrace-style format text; libtraceevent parses it and we look every
 * field up by name once, at start, so a module that moves a field is read
 * correctly (and one that drops a field we need is refused with its name).
 *
 * Every record starts with the common header (common_type = the kind,
 * common_nr_pcs, common_size, ...); the kind field is located from the
 * first event, as ftrace locates common_type, and checked to sit at the
 * same place in every event.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>

#include "decode.h"

/* Where one field of one event is: offset and size from the format text. */
struct fld {
	unsigned int off, size;
	bool present;
};

enum {
	F_KIND, F_VERSION, F_NR_PCS, F_SIZE, F_TGID, F_TID, F_UID, F_CPU, F_TIME, F_CYCLE,
	F_A, F_B, F_C,		/* the kind's three scalar fields, see names[] */
	F_BUILD_ID, F_BUILD_ID_LEN, F_PATH_LEN, F_TAIL,	/* pcs[], path[] or comm[] */
	F_COUNT
};

struct kind_layout {
	bool known;
	struct fld f[F_COUNT];
	unsigned int min_len;	/* bytes the fixed fields need */
};

struct kpp_decoder {
	struct tep_handle *tep;
	struct kind_layout k[KPPROF_REC_KINDS];
};

/* Field names per kind for the generic slots F_A..F_TAIL; NULL: unused. */
static const char *const slot_names[KPPROF_REC_KINDS][F_COUNT] = {
/* The record header is every event's common part, named as ftrace names its own. */
#define HDR [F_KIND] = "common_type", [F_VERSION] = "common_version", [F_NR_PCS] = "common_nr_pcs", \
	[F_SIZE] = "common_size", [F_TGID] = "common_tgid", [F_TID] = "common_tid", \
	[F_UID] = "common_uid", [F_CPU] = "common_cpu", [F_TIME] = "common_time_ns", \
	[F_CYCLE] = "common_cycle"
	[KPPROF_REC_ALLOC] = { HDR, [F_A] = "addr", [F_B] = "bytes", [F_C] = "rate",
			       [F_TAIL] = "pcs" },
	[KPPROF_REC_FREE] = { HDR, [F_A] = "addr", [F_B] = "bytes" },
	[KPPROF_REC_BLOCK] = { HDR, [F_A] = "delay_ns", [F_B] = "rate", [F_C] = "lock",
			       [F_TAIL] = "pcs" },
	[KPPROF_REC_MUTEX] = { HDR, [F_A] = "delay_ns", [F_B] = "rate", [F_C] = "lock",
			       [F_TAIL] = "pcs" },
	[KPPROF_REC_MMAP] = { HDR, [F_A] = "start", [F_B] = "end", [F_C] = "offset",
			      [F_BUILD_ID] = "build_id", [F_BUILD_ID_LEN] = "build_id_len",
			      [F_PATH_LEN] = "path_len", [F_TAIL] = "path" },
	[KPPROF_REC_MUNMAP] = { HDR, [F_A] = "start", [F_B] = "end" },
	[KPPROF_REC_COMM] = { HDR, [F_A] = "reason", [F_B] = "ppid", [F_TAIL] = "comm" },
	[KPPROF_REC_CYCLE] = { HDR, [F_A] = "reason" },
	[KPPROF_REC_NOTE] = { HDR, [F_A] = "what", [F_B] = "value" },
	[KPPROF_REC_LOST] = { HDR, [F_A] = "full", [F_B] = "invalid", [F_C] = "resets" },
#undef HDR
};

static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

void kpp_decoder__free(struct kpp_decoder *d)
{
	if (!d)
		return;
	if (d->tep)
		tep_free(d->tep);
	free(d);
}

static int take_event(struct kpp_decoder *d, struct tep_event *ev,
		      char *err, size_t errlen)
{
	struct kind_layout *kl;
	int kind = ev->id;

	if (kind <= 0 || kind >= KPPROF_REC_KINDS) {
		/* A newer module's kind: skip it, records of it are counted as unknown. */
		return 0;
	}
	kl = &d->k[kind];
	kl->known = true;
	for (int i = 0; i < F_COUNT; i++) {
		const char *name = slot_names[kind][i];
		struct tep_format_field *f;
		unsigned int end;

		if (!name)
			continue;
		f = tep_find_any_field(ev, name);
		if (!f && i == F_VERSION)
			continue;	/* ABI 2: kind was a __u16, no version */
		if (!f) {
			set_err(err, errlen, "format text: event %s (ID %d) has no field '%s'",
				ev->name, kind, name);
			return -EINVAL;
		}
		kl->f[i].off = f->offset;
		kl->f[i].size = f->size;
		kl->f[i].present = true;
		/* Scalars must be 1..8 bytes; arrays (the tail) may be empty. */
		if (i != F_TAIL && i != F_BUILD_ID && (f->size == 0 || f->size > 8)) {
			set_err(err, errlen, "format text: field %s.%s has size %d, expected 1..8",
				ev->name, name, f->size);
			return -EINVAL;
		}
		end = f->offset + (i == F_TAIL ? 0 : f->size);
		if (end > kl->min_len)
			kl->min_len = end;
	}
	if (kind == KPPROF_REC_COMM && kl->f[F_TAIL].size < KPPROF_COMM_LEN) {
		/* comm is char[16]: a shorter field would truncate names. */
		kl->min_len = kl->f[F_TAIL].off + kl->f[F_TAIL].size;
	} else if (kind == KPPROF_REC_COMM) {
		kl->min_len = kl->f[F_TAIL].off + KPPROF_COMM_LEN;
	}
	if (kind == KPPROF_REC_MMAP && kl->f[F_BUILD_ID].size < KPPROF_BUILD_ID_MAX) {
		set_err(err, errlen, "format text: mmap build_id has %d bytes, expected %d",
			kl->f[F_BUILD_ID].size, KPPROF_BUILD_ID_MAX);
		return -EINVAL;
	}
	return 0;
}

struct kpp_decoder *kpp_decoder__new(const char *format, char *err, size_t errlen)
{
	struct kpp_decoder *d = calloc(1, sizeof(*d));
	const char *p = format;
	int nevents = 0;

	if (!d) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	d->tep = tep_alloc();
	if (!d->tep) {
		set_err(err, errlen, "tep_alloc failed");
		goto err_out;
	}
	/* The module and the collector run on the same machine. */
	tep_set_long_size(d->tep, 8);
	tep_set_page_size(d->tep, 4096);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	tep_set_file_bigendian(d->tep, TEP_BIG_ENDIAN);
	tep_set_local_bigendian(d->tep, TEP_BIG_ENDIAN);
#else
	tep_set_file_bigendian(d->tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(d->tep, TEP_LITTLE_ENDIAN);
#endif

	/*
	 * Events follow one another, separated by a blank line; a blank line
	 * also precedes "print fmt:" inside an event, so split where a line
	 * starts with "name:".
	 */
	p = strstr(p, "name:");
	while (p) {
		const char *next = strstr(p + 1, "\nname:");
		size_t len = next ? (size_t)(next - p) + 1 : strlen(p);
		struct tep_event *ev = NULL;

		if (tep_parse_format(d->tep, &ev, p, len, "kpprof") != 0 || !ev) {
			set_err(err, errlen, "format text: libtraceevent cannot parse the event at byte %zu",
				(size_t)(p - format));
			goto err_out;
		}
		if (take_event(d, ev, err, errlen))
			goto err_out;
		nevents++;
		p = next ? next + 1 : NULL;
	}

	for (int kind = 1; kind < KPPROF_REC_KINDS; kind++) {
		if (!d->k[kind].known) {
			set_err(err, errlen, "format text: no event for record kind %d", kind);
			goto err_out;
		}
		/* The header must be where every event says it is. */
		for (int i = F_KIND; i <= F_CYCLE; i++) {
			if (d->k[kind].f[i].off != d->k[1].f[i].off ||
			    d->k[kind].f[i].size != d->k[1].f[i].size) {
				set_err(err, errlen, "format text: header field '%s' differs between kinds 1 and %d",
					slot_names[1][i], kind);
				goto err_out;
			}
		}
	}
	(void)nevents;
	return d;

err_out:
	kpp_decoder__free(d);
	return NULL;
}

static inline uint64_t rd(const uint8_t *p, const struct fld *f)
{
	switch (f->size) {
	case 1: return p[f->off];
	case 2: { uint16_t v; memcpy(&v, p + f->off, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p + f->off, 4); return v; }
	case 8: { uint64_t v; memcpy(&v, p + f->off, 8); return v; }
	default: {
		uint64_t v = 0;

		memcpy(&v, p + f->off, f->size);
		return v;
	}
	}
}

int kpp_decoder__decode(const struct kpp_decoder *d, const void *data,
			size_t len, struct kpp_rec *r)
{
	const struct fld *kf = &d->k[1].f[F_KIND];
	const uint8_t *p = data;
	const struct kind_layout *kl;
	uint64_t kind;

	if (len < kf->off + kf->size)
		return -EINVAL;
	kind = rd(p, kf);
	if (kind == 0 || kind >= KPPROF_REC_KINDS)
		return -EINVAL;
	kl = &d->k[kind];
	/*
	 * The format text describes version 0 of each kind; a later version
	 * may have appended fields, so its size and pcs offset are unknown.
	 */
	if (kl->f[F_VERSION].present &&
	    (len < kl->f[F_VERSION].off + kl->f[F_VERSION].size ||
	     rd(p, &kl->f[F_VERSION]) != KPPROF_REC_VERSION))
		return -EPROTONOSUPPORT;
	if (len < kl->min_len)
		return -EINVAL;

	memset(r, 0, offsetof(struct kpp_rec, pcs));
	r->pcs = NULL;
	r->kind = kind;
	r->nr_pcs = rd(p, &kl->f[F_NR_PCS]);
	r->size = rd(p, &kl->f[F_SIZE]);
	r->tgid = rd(p, &kl->f[F_TGID]);
	r->tid = rd(p, &kl->f[F_TID]);
	r->uid = rd(p, &kl->f[F_UID]);
	r->cpu = rd(p, &kl->f[F_CPU]);
	r->time_ns = rd(p, &kl->f[F_TIME]);
	r->cycle = rd(p, &kl->f[F_CYCLE]);
	if (r->size > len)
		return -EINVAL;

	switch (kind) {
	case KPPROF_REC_ALLOC:
	case KPPROF_REC_BLOCK:
	case KPPROF_REC_MUTEX:
		/* Same three slots; the union members alias by design. */
		r->alloc.addr = rd(p, &kl->f[F_A]);
		r->alloc.bytes = rd(p, &kl->f[F_B]);
		r->alloc.rate = rd(p, &kl->f[F_C]);
		if (r->nr_pcs == 0 || r->nr_pcs > KPPROF_STACK_DEPTH_MAX ||
		    kl->f[F_TAIL].off + 8ULL * r->nr_pcs > r->size)
			return -EINVAL;
		r->pcs = p + kl->f[F_TAIL].off;
		break;
	case KPPROF_REC_FREE:
		r->alloc.addr = rd(p, &kl->f[F_A]);
		r->alloc.bytes = rd(p, &kl->f[F_B]);
		break;
	case KPPROF_REC_MMAP: {
		unsigned int path_len;

		r->mmap.start = rd(p, &kl->f[F_A]);
		r->mmap.end = rd(p, &kl->f[F_B]);
		r->mmap.offset = rd(p, &kl->f[F_C]);
		r->mmap.build_id_len = rd(p, &kl->f[F_BUILD_ID_LEN]);
		if (r->mmap.build_id_len > KPPROF_BUILD_ID_MAX)
			return -EINVAL;
		memcpy(r->mmap.build_id, p + kl->f[F_BUILD_ID].off, KPPROF_BUILD_ID_MAX);
		path_len = rd(p, &kl->f[F_PATH_LEN]);
		if (path_len == 0 || path_len > KPPROF_PATH_MAX ||
		    kl->f[F_TAIL].off + path_len > r->size ||
		    p[kl->f[F_TAIL].off + path_len - 1] != '\0')
			return -EINVAL;
		r->mmap.path = (const char *)p + kl->f[F_TAIL].off;
		break;
	}
	case KPPROF_REC_MUNMAP:
		r->mmap.start = rd(p, &kl->f[F_A]);
		r->mmap.end = rd(p, &kl->f[F_B]);
		break;
	case KPPROF_REC_COMM:
		r->comm.reason = rd(p, &kl->f[F_A]);
		r->comm.ppid = rd(p, &kl->f[F_B]);
		memcpy(r->comm.comm, p + kl->f[F_TAIL].off, KPPROF_COMM_LEN);
		r->comm.comm[KPPROF_COMM_LEN] = '\0';
		break;
	case KPPROF_REC_CYCLE:
		r->cyc.reason = rd(p, &kl->f[F_A]);
		break;
	case KPPROF_REC_NOTE:
		r->note.what = rd(p, &kl->f[F_A]);
		r->note.value = rd(p, &kl->f[F_B]);
		break;
	case KPPROF_REC_LOST:
		r->lost.full = rd(p, &kl->f[F_A]);
		r->lost.invalid = rd(p, &kl->f[F_B]);
		r->lost.resets = rd(p, &kl->f[F_C]);
		break;
	}
	return 0;
}
