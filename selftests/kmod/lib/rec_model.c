// SPDX-License-Identifier: GPL-2.0
/*
 * rec_model: reference validator of producer records (see rec_model.h).
 *
 * Rules, each from ioctl/kpprof.h:
 *   - count >= sizeof(struct kpprof_record), count <= max_record_size,
 *     hdr.size == count, count % 8 == 0;
 *   - kind in KPPROF_REC_ALLOC .. KPPROF_REC_COMM or KPPROF_REC_NOTE
 *     (CYCLE is kernel-only); version KPPROF_REC_VERSION (0);
 *   - tgid, tid, uid, cpu, time_ns, cycle zero ("a record cannot claim an
 *     identity");
 *   - ALLOC, BLOCK, MUTEX: nr_pcs 1 .. max_stack_depth and
 *     size == sizeof(struct) + 8 * nr_pcs; ALLOC addr != 0, rate >= 1;
 *     BLOCK/MUTEX delay_ns != 0, rate != 0;
 *   - FREE, MUNMAP, COMM: nr_pcs 0, size == sizeof(struct);
 *     FREE addr != 0; MUNMAP end > start; COMM ppid 0, comm all zero,
 *     reason a KPPROF_COMM_* value;
 *   - NOTE: nr_pcs 0, size == sizeof(struct), pad 0, what a KPPROF_NOTE_*;
 *   - MMAP: nr_pcs 0, start and offset page aligned, end > start,
 *     build_id_len <= KPPROF_BUILD_ID_MAX and build_id zero past it, pad 0,
 *     path_len 1 .. KPPROF_PATH_MAX, size == round_up(sizeof + path_len, 8),
 *     path NUL-terminated at path_len - 1, no NUL before, zero padding.
 *
 * Left open by the header, so REC_EITHER:
 *   - MUNMAP start or end not page aligned ("as in the KPPROF_REC_MMAP it
 *     ends" suggests aligned, but says no more);
 *   - MMAP end not page aligned (only start and offset are said aligned);
 *   - COMM reason KPPROF_COMM_EXEC ("reserved");
 *   - a stack pc of 0 or outside user space (>= TASK_SIZE_MAX of x86-64),
 *     and an MMAP or MUNMAP end beyond user space: "absolute return
 *     addresses" and "first byte of the mapping" imply user addresses, but
 *     the header does not require the kernel to check.
 */
#include <string.h>

#include "kpp_dev.h"
#include "rec_model.h"

/* x86-64 TASK_SIZE_MAX with 4-level page tables: (1 << 47) - PAGE_SIZE */
#define USER_ADDR_END	((1ULL << 47) - 4096)

/* pcs_either - some pc is not a user address (the header is silent) */
static int pcs_either(const __u64 *pcs, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!pcs[i] || pcs[i] >= USER_ADDR_END)
			return 1;
	return 0;
}

static int stack_kind(unsigned int kind)
{
	return kind == KPPROF_REC_ALLOC || kind == KPPROF_REC_BLOCK ||
	       kind == KPPROF_REC_MUTEX;
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return 0;
	return 1;
}

#define INVALID(reason) do { if (why) *why = (reason); return REC_INVALID; } while (0)

static enum rec_verdict check_mmap(const struct kpprof_rec_mmap *r, size_t count,
				   const struct rec_limits *lim, const char **why)
{
	size_t fixed = sizeof(*r);
	enum rec_verdict v = REC_VALID;

	if (r->hdr.nr_pcs != 0)
		INVALID("mmap: nr_pcs != 0");
	if (count < fixed)
		INVALID("mmap: shorter than its struct");
	if (r->start % lim->page_size || r->offset % lim->page_size)
		INVALID("mmap: start or offset not page aligned");
	if (r->end <= r->start)
		INVALID("mmap: end <= start");
	if (r->build_id_len > KPPROF_BUILD_ID_MAX)
		INVALID("mmap: build_id_len > KPPROF_BUILD_ID_MAX");
	if (!all_zero(r->build_id + r->build_id_len,
		      KPPROF_BUILD_ID_MAX - r->build_id_len))
		INVALID("mmap: build_id not zero past build_id_len");
	if (r->pad[0])
		INVALID("mmap: pad != 0");
	if (r->path_len < 1 || r->path_len > KPPROF_PATH_MAX)
		INVALID("mmap: path_len out of range");
	if (((fixed + r->path_len + 7) & ~(size_t)7) != count)
		INVALID("mmap: size != round_up(sizeof + path_len, 8)");
	if (r->path[r->path_len - 1] != '\0')
		INVALID("mmap: path not NUL-terminated");
	if (memchr(r->path, '\0', r->path_len - 1))
		INVALID("mmap: NUL inside path");
	if (!all_zero(r->path + r->path_len, count - fixed - r->path_len))
		INVALID("mmap: padding after path not zero");
	if (r->end % lim->page_size || r->end > USER_ADDR_END) {
		if (why)
			*why = "mmap: end not page aligned or not user (header silent)";
		v = REC_EITHER;
	}
	return v;
}

enum rec_verdict rec_model__check(const void *buf, size_t count,
				  const struct rec_limits *lim,
				  const char **why)
{
	/* aligned private copy: fuzzers hand in arbitrary byte strings */
	static __thread __u64 copy[KPP_REC_BUF_MAX / 8];
	const struct kpprof_record *h = (const void *)copy;
	size_t want;

	if (count < sizeof(*h))
		INVALID("shorter than the record header");
	if (count > lim->max_record_size)
		INVALID("longer than max_record_size");
	if (count > sizeof(copy))
		INVALID("longer than these tests ever write");
	memcpy(copy, buf, count);
	if (h->size != count)
		INVALID("size field != write count");
	if (count % 8)
		INVALID("size not a multiple of 8");
	if ((h->kind < KPPROF_REC_ALLOC || h->kind > KPPROF_REC_COMM) &&
	    h->kind != KPPROF_REC_NOTE)
		INVALID("kind not a producer kind");
	if (h->version != KPPROF_REC_VERSION)
		INVALID("record version not 0");
	if (h->tgid || h->tid || h->uid || h->cpu || h->time_ns || h->cycle)
		INVALID("kernel-owned field non-zero");

	if (stack_kind(h->kind)) {
		if (h->nr_pcs < 1 || h->nr_pcs > lim->max_stack_depth)
			INVALID("nr_pcs out of 1 .. max_stack_depth");
	} else if (h->nr_pcs != 0) {
		INVALID("nr_pcs != 0 for a kind without a stack");
	}

	switch (h->kind) {
	case KPPROF_REC_ALLOC: {
		const struct kpprof_rec_alloc *r = (const void *)copy;

		want = sizeof(*r) + 8 * (size_t)h->nr_pcs;
		if (count != want)
			INVALID("alloc: size inconsistent with nr_pcs");
		if (!r->addr)
			INVALID("alloc: addr 0");
		if (!r->rate)
			INVALID("alloc: rate 0");
		if (pcs_either(r->pcs, h->nr_pcs)) {
			if (why)
				*why = "alloc: pc not a user address (header silent)";
			return REC_EITHER;
		}
		return REC_VALID;
	}
	case KPPROF_REC_BLOCK:
	case KPPROF_REC_MUTEX: {
		const struct kpprof_rec_contention *r = (const void *)copy;

		want = sizeof(*r) + 8 * (size_t)h->nr_pcs;
		if (count != want)
			INVALID("contention: size inconsistent with nr_pcs");
		if (!r->delay_ns)
			INVALID("contention: delay_ns 0");
		if (!r->rate)
			INVALID("contention: rate 0");
		if (pcs_either(r->pcs, h->nr_pcs)) {
			if (why)
				*why = "contention: pc not a user address (header silent)";
			return REC_EITHER;
		}
		return REC_VALID;
	}
	case KPPROF_REC_FREE: {
		const struct kpprof_rec_free *r = (const void *)copy;

		if (count != sizeof(*r))
			INVALID("free: wrong size");
		if (!r->addr)
			INVALID("free: addr 0");
		return REC_VALID;
	}
	case KPPROF_REC_MUNMAP: {
		const struct kpprof_rec_munmap *r = (const void *)copy;

		if (count != sizeof(*r))
			INVALID("munmap: wrong size");
		if (r->end <= r->start)
			INVALID("munmap: end <= start");
		if (r->start % lim->page_size || r->end % lim->page_size ||
		    r->end > USER_ADDR_END) {
			if (why)
				*why = "munmap: not page aligned or not user (header silent)";
			return REC_EITHER;
		}
		return REC_VALID;
	}
	case KPPROF_REC_COMM: {
		const struct kpprof_rec_comm *r = (const void *)copy;

		if (count != sizeof(*r))
			INVALID("comm: wrong size");
		if (r->ppid)
			INVALID("comm: kernel-owned ppid non-zero");
		if (!all_zero(r->comm, sizeof(r->comm)))
			INVALID("comm: kernel-owned comm non-zero");
		if (r->reason > KPPROF_COMM_EXIT)
			INVALID("comm: unknown reason");
		return REC_VALID;
	}
	case KPPROF_REC_NOTE: {
		const struct kpprof_rec_note *r = (const void *)copy;

		if (count != sizeof(*r))
			INVALID("note: wrong size");
		if (r->pad)
			INVALID("note: pad non-zero");
		if (r->what != KPPROF_NOTE_SECCOMP && r->what != KPPROF_NOTE_NO_HEAP)
			INVALID("note: unknown what");
		return REC_VALID;
	}
	default: /* KPPROF_REC_MMAP */
		return check_mmap((const void *)copy, count, lim, why);
	}
}
