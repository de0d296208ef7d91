// SPDX-License-Identifier: GPL-2.0
/*
 * The record ring: many producers (write(2) from any process, and the
 * kernel's own cycle records), one consumer that maps it and reads records
 * in place.  The design follows the BPF ring buffer's.
 *
 * Memory: one vmap() of these pages, the data pages mapped twice in a row
 * so that a record which wraps the end of the ring is contiguous, in the
 * kernel and in the consumer's mapping alike:
 *
 *   +----------+----------+---------------------+---------------------+
 *   | consumer | producer | data pages 1 .. n   | data pages 1 .. n   |
 *   |  page    |  page    |                     |   (same pages)      |
 *   +----------+----------+---------------------+---------------------+
 *    cons_pos   prod_pos   ^ data
 *    rw to the  ro to user  ro to user
 *    consumer
 *
 * The two positions sit on pages of their own because they are mapped
 * with different permissions: only the consumer writes cons_pos, only the
 * kernel writes prod_pos.
 *
 * Entries: a struct kpprof_ring_hdr, then the record, then zero padding to
 * 8 bytes.  Positions only grow; an entry starts at data[pos & mask].
 * Since the size is a power of two of at least 64 KiB and entries are
 * 8-byte aligned, a header never straddles the end of the ring, and the
 * longest record (KPP_RECORD_SIZE_MAX) is far shorter than the ring, so
 * the second mapping always covers its tail.
 *
 * Reserve / commit: under @lock a producer checks for room
 * (prod + total - cons <= size), writes the header with KPPROF_RING_BUSY,
 * stamps the cycle and publishes the new prod_pos; then, without the lock,
 * it copies the record and clears BUSY with xchg().  The consumer reads
 * up to prod_pos and stops at the first BUSY entry, so it never sees a
 * half-written record and records are read in reservation order, which is
 * cycle order.  A full ring drops the record and counts it: a producer
 * never waits.
 *
 * Wake-ups are batched: a producer wakes a sleeping consumer only when the
 * unread bytes reach the watermark, or for a cycle record; the cycle timer
 * wakes it for whatever is pending.
 *
 * cons_pos is user-writable.  It is only ever used to compute free space:
 * a garbage value makes the ring look full (or, at worst, lets producers
 * overwrite records the consumer has not read), which harms the consumer
 * alone.  Every kernel write stays inside data[0 .. 2 * size).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include "kpp.h"
#include "compat.h"

#define KPP_RING_META_PAGES	2	/* consumer page, producer page */

static void *kpp_ring_area_alloc(struct kpp_ring *rb, int nr_data_pages)
{
	const gfp_t flags = GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN |
			    __GFP_ZERO;
	int nr_pages = KPP_RING_META_PAGES + nr_data_pages;
	int nr_mapped = KPP_RING_META_PAGES + 2 * nr_data_pages;
	struct page **pages;
	void *area;
	int i;

	pages = kvcalloc(nr_mapped, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return NULL;

	for (i = 0; i < nr_pages; i++) {
		pages[i] = alloc_page(flags);
		if (!pages[i]) {
			nr_pages = i;
			goto err_free_pages;
		}
		if (i >= KPP_RING_META_PAGES)
			pages[nr_data_pages + i] = pages[i];
	}

	area = vmap(pages, nr_mapped, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!area)
		goto err_free_pages;

	rb->pages = pages;
	rb->nr_pages = nr_pages;
	return area;

err_free_pages:
	for (i = 0; i < nr_pages; i++)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

/**
 * kpp_ring_init - allocate a ring of @size data bytes
 * @rb:        the ring to set up.
 * @size:      a power of two in [KPP_RING_SIZE_MIN, KPP_RING_SIZE_MAX].
 * @watermark: unread bytes that wake a waiting consumer; clamped to
 *             [8, size / 2].
 *
 * Return: 0, -EINVAL for a bad size, or -ENOMEM.
 */
int kpp_ring_init(struct kpp_ring *rb, u64 size, u64 watermark)
{
	int i;

	if (!is_power_of_2(size) || size < KPP_RING_SIZE_MIN ||
	    size > KPP_RING_SIZE_MAX || size < 4 * KPP_RECORD_SIZE_MAX)
		return -EINVAL;

	memset(rb, 0, sizeof(*rb));
	rb->area = kpp_ring_area_alloc(rb, size >> PAGE_SHIFT);
	if (!rb->area)
		return -ENOMEM;

	spin_lock_init(&rb->lock);
	init_waitqueue_head(&rb->waitq);
	for (i = 0; i < KPPROF_DROP_REASONS; i++)
		atomic64_set(&rb->dropped[i], 0);
	atomic64_set(&rb->rejected, 0);
	atomic64_set(&rb->wakeups, 0);
	rb->size = size;
	rb->mask = size - 1;
	rb->watermark = clamp_t(u64, watermark, 8, size / 2);
	rb->cons_pos = rb->area;
	rb->prod_pos = rb->area + PAGE_SIZE;
	rb->data = rb->area + KPP_RING_META_PAGES * PAGE_SIZE;
	return 0;
}

/* kpp_ring_free - release what kpp_ring_init() allocated; no mapping may remain. */
void kpp_ring_free(struct kpp_ring *rb)
{
	int i;

	if (!rb->area)
		return;
	vunmap(rb->area);
	for (i = 0; i < rb->nr_pages; i++)
		__free_page(rb->pages[i]);
	kvfree(rb->pages);
	rb->area = NULL;
}

static u64 kpp_ring_unread(struct kpp_ring *rb)
{
	/* pairs with the consumer's release store of cons_pos */
	u64 cons = smp_load_acquire(rb->cons_pos);

	return READ_ONCE(rb->prod) - cons;
}

static void kpp_ring_wake(struct kpp_ring *rb)
{
	atomic64_inc(&rb->wakeups);
	wake_up_all(&rb->waitq);
}

/*
 * kpp_ring_reserve - claim room for a record of @len bytes
 *
 * Return: the entry's header, with BUSY set and the record area after it
 * not yet written, or NULL if the ring is full (counted).  *@cycle gets the
 * cycle the record belongs to.  When @advance is set, the cycle is first
 * advanced under the same lock, so that no record of the old cycle can be
 * reserved after this one.
 */
static struct kpprof_ring_hdr *kpp_ring_reserve(struct kpp_ring *rb, u32 len,
						u64 *cycle, bool advance)
{
	u64 total = round_up(sizeof(struct kpprof_ring_hdr) + len, 8);
	struct kpprof_ring_hdr *hdr;
	unsigned long flags;
	u64 cons, prod;

	spin_lock_irqsave(&rb->lock, flags);
	if (advance)
		WRITE_ONCE(rb->cycle, rb->cycle + 1);
	*cycle = rb->cycle;

	/* pairs with the consumer's release store of cons_pos */
	cons = smp_load_acquire(rb->cons_pos);
	prod = rb->prod;
	if (prod + total - cons > rb->size) {
		spin_unlock_irqrestore(&rb->lock, flags);
		atomic64_inc(&rb->dropped[KPPROF_DROP_RING_FULL]);
		return NULL;
	}

	hdr = (struct kpprof_ring_hdr *)(rb->data + (prod & rb->mask));
	hdr->len = len | KPPROF_RING_BUSY;
	hdr->pad = 0;
	/* the zero padding the consumer skips: never leak old bytes */
	if (total > sizeof(*hdr) + len)
		memset((u8 *)(hdr + 1) + len, 0, total - sizeof(*hdr) - len);

	rb->accepted++;
	rb->accepted_bytes += total;
	WRITE_ONCE(rb->prod, prod + total);
	/* pairs with the consumer's smp_load_acquire() of prod_pos */
	smp_store_release(rb->prod_pos, prod + total);
	spin_unlock_irqrestore(&rb->lock, flags);
	return hdr;
}

/*
 * kpp_ring_commit - make a reserved record visible to the consumer
 * @urgent: wake a waiting consumer whatever the watermark says.
 */
static void kpp_ring_commit(struct kpp_ring *rb, struct kpprof_ring_hdr *hdr,
			    bool urgent)
{
	u32 len = hdr->len & ~KPPROF_RING_BUSY;

	/*
	 * xchg() is a full barrier: the record's bytes are visible before BUSY
	 * clears (pairs with the consumer's smp_load_acquire() of hdr->len),
	 * and the waitqueue check below is ordered after it (pairs with the
	 * consumer's poll_wait() before it looks at the ring).
	 */
	xchg(&hdr->len, len);

	if (!wq_has_sleeper(&rb->waitq))
		return;
	if (urgent || kpp_ring_unread(rb) >= rb->watermark)
		kpp_ring_wake(rb);
}

/**
 * kpp_ring_output - copy a validated record into the ring and stamp it
 * @rb:    the ring.
 * @rec:   the record, @len bytes, a multiple of 8, already validated.
 * @len:   its size.
 * @stamp: identity to write over the kernel-owned fields; the time and the
 *         cycle are the ring's own, taken when the record has its room.
 *
 * Return: 0, or -ENOBUFS if the ring was full (the drop is counted).
 */
int kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
		    const struct kpp_stamp *stamp)
{
	struct kpprof_ring_hdr *hdr;
	struct kpprof_record *out;
	u64 cycle;

	hdr = kpp_ring_reserve(rb, len, &cycle, false);
	if (!hdr)
		return -ENOBUFS;

	out = (struct kpprof_record *)(hdr + 1);
	memcpy(out, rec, len);
	out->tgid = stamp->tgid;
	out->tid = stamp->tid;
	out->uid = stamp->uid;
	out->cpu = stamp->cpu;
	out->time_ns = ktime_get_ns();
	out->cycle = cycle;

	kpp_ring_commit(rb, hdr, false);
	return 0;
}

/**
 * kpp_ring_advance_cycle - end the current cycle
 * @rb:     the ring.
 * @reason: 0 timer, 1 ioctl; written into the cycle record.
 * @emit:   write the cycle record (see below).
 *
 * Advances the cycle and, under the same lock, reserves a KPPROF_REC_CYCLE
 * record stamped with the new cycle, so every record after it in the ring
 * belongs to the new cycle.  If the ring is full the record is dropped
 * (counted) but the cycle still advances.
 *
 * With @emit false the cycle advances without a record: the timer does
 * that while no consumer is attached, so an idle ring does not fill up
 * with cycle records (a later consumer learns of the cycles it missed from
 * the next record's cycle).
 *
 * Return: the new cycle.
 */
u64 kpp_ring_advance_cycle(struct kpp_ring *rb, u32 reason, bool emit)
{
	struct kpprof_ring_hdr *hdr;
	struct kpprof_rec_cycle *rec;
	unsigned long flags;
	u64 cycle;

	if (!emit) {
		spin_lock_irqsave(&rb->lock, flags);
		cycle = rb->cycle + 1;
		WRITE_ONCE(rb->cycle, cycle);
		spin_unlock_irqrestore(&rb->lock, flags);
		return cycle;
	}

	/* the cycle advances even when the ring has no room for the record */
	hdr = kpp_ring_reserve(rb, sizeof(*rec), &cycle, true);
	if (!hdr)
		return cycle;

	rec = (struct kpprof_rec_cycle *)(hdr + 1);
	memset(rec, 0, sizeof(*rec));
	rec->hdr.kind = KPPROF_REC_CYCLE;
	rec->hdr.size = sizeof(*rec);
	rec->hdr.cpu = raw_smp_processor_id();
	rec->hdr.time_ns = ktime_get_ns();
	rec->hdr.cycle = cycle;
	rec->reason = reason;

	kpp_ring_commit(rb, hdr, true);
	return cycle;
}

/*
 * kpp_ring_readable - is there a complete record for the consumer?
 *
 * Only a record whose BUSY bit has cleared counts: otherwise a consumer
 * would spin between poll() and an empty read while a producer copies.
 */
bool kpp_ring_readable(struct kpp_ring *rb)
{
	/* pairs with the consumer's release store of cons_pos */
	u64 cons = smp_load_acquire(rb->cons_pos);
	/* pairs with smp_store_release() in kpp_ring_reserve() */
	u64 prod = smp_load_acquire(rb->prod_pos);
	struct kpprof_ring_hdr *hdr;

	if (cons == prod)
		return false;
	/* a cons_pos the consumer scribbled on: let it find out by reading */
	if (prod - cons > rb->size || (cons & 7))
		return true;
	hdr = (struct kpprof_ring_hdr *)(rb->data + (cons & rb->mask));
	/* pairs with xchg() in kpp_ring_commit() */
	return !(smp_load_acquire(&hdr->len) & KPPROF_RING_BUSY);
}

/* kpp_ring_wake_if_pending - the timer's wake-up for records below the watermark */
void kpp_ring_wake_if_pending(struct kpp_ring *rb)
{
	if (wq_has_sleeper(&rb->waitq) && kpp_ring_unread(rb))
		kpp_ring_wake(rb);
}

/**
 * kpp_ring_mmap_consumer - map the consumer page, read-write
 * @rb:  the ring.
 * @vma: exactly one page, shared (a private copy would never reach us).
 */
int kpp_ring_mmap_consumer(struct kpp_ring *rb, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	return remap_vmalloc_range(vma, rb->area, 0);
}

/**
 * kpp_ring_mmap_producer - map the producer page and data pages, read-only
 * @rb:  the ring.
 * @vma: at most one page plus twice the data size.
 */
int kpp_ring_mmap_producer(struct kpp_ring *rb, struct vm_area_struct *vma)
{
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_end - vma->vm_start > PAGE_SIZE + 2 * rb->size)
		return -EINVAL;
	/* no mprotect() to writable later */
	kpp_vm_flags_clear(vma, VM_MAYWRITE);
	return remap_vmalloc_range(vma, rb->area, 1);
}

/* kpp_ring_stats - the ring's part of KPPROF_IOC_GET_STATS */
void kpp_ring_stats(struct kpp_ring *rb, struct kpprof_stats *st)
{
	unsigned long flags;
	int i;

	spin_lock_irqsave(&rb->lock, flags);
	st->accepted = rb->accepted;
	st->accepted_bytes = rb->accepted_bytes;
	st->cycle = rb->cycle;
	st->prod_pos = rb->prod;
	spin_unlock_irqrestore(&rb->lock, flags);

	st->cons_pos = READ_ONCE(*rb->cons_pos);
	for (i = 0; i < KPPROF_DROP_REASONS; i++)
		st->dropped[i] = atomic64_read(&rb->dropped[i]);
	st->rejected = atomic64_read(&rb->rejected);
	st->wakeups = atomic64_read(&rb->wakeups);
}

#include "selftest/ring.c"
