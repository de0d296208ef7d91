/* SPDX-License-Identifier: GPL-2.0 */
/*
 * decode.h - turn ring records into struct kpp_rec, reading every field at
 * the offset the module's format text gives (KPPROF_IOC_GET_FORMAT, parsed
 * with libtraceevent), never at a hard-coded one.
 */
#ifndef KPPROF_DECODE_H
#define KPPROF_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <kpprof.h>

/* One decoded record; pointers point into the record's bytes. */
struct kpp_rec {
	uint16_t kind;
	uint16_t nr_pcs;
	uint32_t size;
	uint32_t tgid, tid, uid, cpu;
	uint64_t time_ns, cycle;
	union {
		struct {		/* ALLOC; FREE uses addr and bytes */
			uint64_t addr, bytes, rate;
		} alloc;
		struct {		/* BLOCK, MUTEX */
			uint64_t delay_ns, rate, lock;
		} cont;
		struct {		/* MMAP; MUNMAP uses start and end */
			uint64_t start, end, offset;
			uint8_t build_id[KPPROF_BUILD_ID_MAX];
			uint8_t build_id_len;
			const char *path;
		} mmap;
		struct {		/* COMM */
			uint32_t reason, ppid;
			char comm[KPPROF_COMM_LEN + 1];
		} comm;
		struct {		/* CYCLE */
			uint32_t reason;
		} cyc;
		struct {		/* NOTE: KPPROF_NOTE_* */
			uint32_t what;
			uint64_t value;
		} note;
		struct {		/* LOST: a producer ring's losses */
			uint64_t full, invalid, resets;
		} lost;
	};
	const void *pcs;		/* nr_pcs __u64, maybe unaligned */
};

struct kpp_decoder;

/*
 * kpp_decoder__new - parse @format (the module's format text).  On failure
 * returns NULL and writes a one-line reason into @err.
 */
struct kpp_decoder *kpp_decoder__new(const char *format, char *err, size_t errlen);
/*
 * kpp_decoder__decode - 0, -EINVAL for a malformed record, or
 * -EPROTONOSUPPORT for a record version (struct kpprof_record.version)
 * this decoder does not know; the caller counts either (bad_records).
 */
int kpp_decoder__decode(const struct kpp_decoder *d, const void *data,
			size_t len, struct kpp_rec *out);
void kpp_decoder__free(struct kpp_decoder *d);

static inline uint64_t kpp_rec__pc(const struct kpp_rec *r, unsigned int i)
{
	uint64_t pc;

	__builtin_memcpy(&pc, (const uint8_t *)r->pcs + 8 * (size_t)i, 8);
	return pc;
}

#endif
