// SPDX-License-Identifier: GPL-2.0
/*
 * Validation of the records producers write.  Every byte of a record is
 * checked here before it may enter the ring: the header, each kind's
 * fixed fields, reserved and padding bytes, the stack and the path.
 * Fields the kernel owns (identity, time, cycle, and a comm record's
 * ppid and comm) must arrive zero: a record cannot claim an identity.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/rcupdate.h>
#include "kpp.h"

static bool kpp_all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/*
 * PCs are user return addresses: never 0, never a kernel address.  The end
 * of user space is the writer's own (TASK_SIZE): a 32-bit (compat) task's
 * is 4 GiB, not the 64-bit TASK_SIZE_MAX.
 */
static int kpp_validate_pcs(const __u64 *pcs, u16 nr_pcs,
			    unsigned long task_size)
{
	u16 i;

	for (i = 0; i < nr_pcs; i++)
		if (!pcs[i] || pcs[i] >= task_size)
			return -EINVAL;
	return 0;
}

/* A stack record: 1 .. max_depth frames, exactly filling the record. */
static int kpp_validate_stack(const struct kpprof_record *hdr, size_t fixed,
			      size_t len, u32 max_depth, unsigned long task_size)
{
	if (hdr->nr_pcs < 1 || hdr->nr_pcs > max_depth)
		return -EINVAL;
	if (len != fixed + hdr->nr_pcs * sizeof(__u64))
		return -EINVAL;
	return kpp_validate_pcs((const __u64 *)((const u8 *)hdr + fixed),
				hdr->nr_pcs, task_size);
}

static int kpp_validate_alloc(const void *buf, size_t len, u32 max_depth,
			      unsigned long task_size)
{
	const struct kpprof_rec_alloc *r = buf;

	if (!r->addr || !r->rate)
		return -EINVAL;
	return kpp_validate_stack(&r->hdr, sizeof(*r), len, max_depth,
				  task_size);
}

static int kpp_validate_free(const void *buf, size_t len)
{
	const struct kpprof_rec_free *r = buf;

	if (len != sizeof(*r) || r->hdr.nr_pcs || !r->addr)
		return -EINVAL;
	return 0;
}

static int kpp_validate_contention(const void *buf, size_t len, u32 max_depth,
				   unsigned long task_size)
{
	const struct kpprof_rec_contention *r = buf;

	if (!r->delay_ns || !r->rate)
		return -EINVAL;
	return kpp_validate_stack(&r->hdr, sizeof(*r), len, max_depth,
				  task_size);
}

static bool kpp_valid_user_range(u64 start, u64 end, unsigned long task_size)
{
	return start < end && end <= task_size &&
	       PAGE_ALIGNED(start) && PAGE_ALIGNED(end);
}

static int kpp_validate_mmap(const void *buf, size_t len,
			     unsigned long task_size)
{
	const struct kpprof_rec_mmap *r = buf;
	size_t path_end;

	if (len < sizeof(*r) || r->hdr.nr_pcs)
		return -EINVAL;
	if (!kpp_valid_user_range(r->start, r->end, task_size) ||
	    !PAGE_ALIGNED(r->offset))
		return -EINVAL;
	if (r->build_id_len > KPPROF_BUILD_ID_MAX ||
	    !kpp_all_zero(r->build_id + r->build_id_len,
			  KPPROF_BUILD_ID_MAX - r->build_id_len) ||
	    !kpp_all_zero(r->pad, sizeof(r->pad)))
		return -EINVAL;
	if (r->path_len < 1 || r->path_len > KPPROF_PATH_MAX)
		return -EINVAL;
	path_end = sizeof(*r) + r->path_len;
	if (len != round_up(path_end, 8))
		return -EINVAL;
	/* NUL-terminated, with no NUL before the end, then zero padding */
	if (r->path[r->path_len - 1] != '\0' ||
	    memchr(r->path, '\0', r->path_len - 1))
		return -EINVAL;
	if (!kpp_all_zero((const u8 *)buf + path_end, len - path_end))
		return -EINVAL;
	return 0;
}

static int kpp_validate_munmap(const void *buf, size_t len,
			       unsigned long task_size)
{
	const struct kpprof_rec_munmap *r = buf;

	if (len != sizeof(*r) || r->hdr.nr_pcs)
		return -EINVAL;
	if (!kpp_valid_user_range(r->start, r->end, task_size))
		return -EINVAL;
	return 0;
}

static int kpp_validate_comm(const void *buf, size_t len)
{
	const struct kpprof_rec_comm *r = buf;

	if (len != sizeof(*r) || r->hdr.nr_pcs)
		return -EINVAL;
	if (r->reason > KPPROF_COMM_EXIT || r->ppid ||
	    !kpp_all_zero(r->comm, sizeof(r->comm)))
		return -EINVAL;
	return 0;
}

static int kpp_validate_note(const void *buf, size_t len)
{
	const struct kpprof_rec_note *r = buf;

	if (len != sizeof(*r) || r->hdr.nr_pcs || r->pad)
		return -EINVAL;
	if (r->what != KPPROF_NOTE_SECCOMP && r->what != KPPROF_NOTE_NO_HEAP)
		return -EINVAL;
	return 0;
}

/**
 * kpp_record_validate - check a record a producer wrote
 * @buf:       the record, copied into kernel memory, 8-byte aligned.
 * @len:       the write(2) count.
 * @max_depth: the configured max_stack_depth.
 * @task_size: the writer's end of user space (TASK_SIZE for the caller;
 *             a producer ring's drain passes its mapper's).
 *
 * Return: 0 if every byte is as the UAPI says, else -EINVAL.
 */
int kpp_record_validate(const void *buf, size_t len, u32 max_depth,
			unsigned long task_size)
{
	const struct kpprof_record *hdr = buf;

	if (len < sizeof(*hdr) || len > KPP_RECORD_SIZE_MAX || len % 8)
		return -EINVAL;
	if (hdr->size != len)
		return -EINVAL;
	if (hdr->tgid || hdr->tid || hdr->uid || hdr->cpu || hdr->time_ns ||
	    hdr->cycle)
		return -EINVAL;
	/* only version 0 is known: a later one may have appended fields */
	if (hdr->version != KPPROF_REC_VERSION)
		return -EINVAL;

	switch (hdr->kind) {
	case KPPROF_REC_ALLOC:
		if (len < sizeof(struct kpprof_rec_alloc))
			return -EINVAL;
		return kpp_validate_alloc(buf, len, max_depth, task_size);
	case KPPROF_REC_FREE:
		return kpp_validate_free(buf, len);
	case KPPROF_REC_BLOCK:
	case KPPROF_REC_MUTEX:
		if (len < sizeof(struct kpprof_rec_contention))
			return -EINVAL;
		return kpp_validate_contention(buf, len, max_depth, task_size);
	case KPPROF_REC_MMAP:
		return kpp_validate_mmap(buf, len, task_size);
	case KPPROF_REC_MUNMAP:
		return kpp_validate_munmap(buf, len, task_size);
	case KPPROF_REC_COMM:
		return kpp_validate_comm(buf, len);
	case KPPROF_REC_NOTE:
		return kpp_validate_note(buf, len);
	default:
		/* KPPROF_REC_CYCLE and _LOST included: only the kernel writes those */
		return -EINVAL;
	}
}

/**
 * kpp_record_flag - the KPPROF_CFG_* flag that gates a record kind
 * @kind: a validated record kind.
 *
 * Return: the flag, or 0 for kinds that are never gated (mappings and
 * process names are needed by every profile).
 */
u32 kpp_record_flag(u16 kind)
{
	switch (kind) {
	case KPPROF_REC_ALLOC:
	case KPPROF_REC_FREE:
		return KPPROF_CFG_HEAP;
	case KPPROF_REC_BLOCK:
		return KPPROF_CFG_BLOCK;
	case KPPROF_REC_MUTEX:
		return KPPROF_CFG_MUTEX;
	default:
		return 0;
	}
}

/**
 * kpp_record_fill_comm - fill a comm record's kernel-owned fields
 * @rec: a validated KPPROF_REC_COMM record, in kernel memory.
 */
void kpp_record_fill_comm(void *rec)
{
	struct kpprof_rec_comm *r = rec;

	BUILD_BUG_ON(sizeof(r->comm) != TASK_COMM_LEN);
	rcu_read_lock();
	r->ppid = task_tgid_nr(rcu_dereference(current->real_parent));
	rcu_read_unlock();
	get_task_comm(r->comm, current);
}
