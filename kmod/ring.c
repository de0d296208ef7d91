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
 * (prod + total - reclaim <= size) and for its uid's share, writes the
 * header with KPPROF_RING_BUSY, stamps the cycle and publishes the new
 * prod_pos; then, still with preemption off but without the lock, it copies
 * the record (already validated, in kernel memory, so the copy cannot
 * fault or sleep) and clears BUSY with xchg().  The consumer reads up to
 * prod_pos and stops at the first BUSY entry, so it never sees a
 * half-written record and records are read in reservation order, which is
 * cycle order.  A full ring drops the record and counts it: a producer
 * never waits.
 *
 * Why the whole reserve -> commit window runs with preemption off: while an
 * entry is BUSY the consumer can read nothing after it.  A producer
 * preempted there (a SCHED_IDLE task beside a busy one, a throttled cgroup)
 * would stop the consumer, and once the ring filled, every other producer
 * would lose its records, for as long as the scheduler kept it off the CPU.
 * With preemption off the window is bounded by the copy of one record (at
 * most KPP_RECORD_SIZE_MAX bytes) and one clock read.
 *
 * @lock: every caller is a task (write(2) and ioctl(2) of producers, the
 * cycle work on a workqueue, attach and GET_STATS): nothing takes it in
 * interrupt context, so it is taken without disabling interrupts, and a
 * producer waiting for it spins with interrupts on.  It is a raw spinlock
 * because it sits inside the preemption-off window: on PREEMPT_RT a
 * spinlock_t is a sleeping lock, and a producer that slept or was
 * preempted while holding a reservation would stall the consumer as above.
 * So nothing under @lock or in the window may sleep (no spinlock_t, no
 * allocation, no user copy): the record is validated and copied from user
 * space before, and the wake-up, whose waitqueue lock is a spinlock_t,
 * comes after preempt_enable().  What one hold does is bounded and small:
 * at most KPP_RECLAIM_BATCH entries released (each a lookup in the
 * KPP_SHARE_SLOTS slots), one lookup for the writer, and the header; a
 * writer that needs more reclaimed drops the lock, with preemption back
 * on, between batches (kpp_ring_output()).
 *
 * Fairness: the ring's bytes are charged to buckets: one per uid for the
 * first KPP_SHARE_SLOTS uids with records in the ring, and one overflow
 * bucket that the uids beyond them share.  The uid charged is the one the
 * writer's stamp names (@charge: the writer's own, or the user who made its
 * user namespace, kpp_charge_uid()), kept in the entry's header for the
 * release.  A bucket that holds h bytes may
 * take t more only if
 *
 *	h + t <= min(share_max, free / (others + 1))
 *
 * where free is the ring's free space and others the number of other
 * buckets holding bytes (only share_max when there are none): one uid alone
 * may hold @share_max (module parameter producer_share, a percentage), and
 * however many uids flood beside it, each leaves a newcomer as much room as
 * it takes itself.  A uid, not a
 * process, because a process can fork as many others as it likes: per-
 * process shares would not stop one local user from filling the ring,
 * per-uid ones do, and a user's flood then costs only that user's records
 * (the overflow bucket's uids: each other's); and since user namespaces
 * make uids free, a namespace's uids are charged as the user who made it.
 * The kernel learns
 * that entries were read only when cons_pos moves, so it keeps its own
 * consumer position, @reclaim: a producer first walks the entries between
 * @reclaim and cons_pos (a few per write, more when its record would not
 * fit otherwise), releasing each from the share of the uid its header names,
 * and free space is counted from @reclaim, so an entry cannot be
 * overwritten before it is released.  The walk reads only what the kernel
 * wrote (the data pages are read-only to user space) and stops at a BUSY
 * entry or at a cons_pos that is not on an entry boundary.  The entry does
 * not say which bucket it was charged to, so a release goes to the uid's
 * slot if it has one and what the slot does not hold to the overflow
 * bucket (never below zero): every byte charged is released exactly once
 * in all, and a uid that moved from the overflow bucket to a slot while it
 * had records in the ring can at worst be undercharged by what it holds
 * in the overflow bucket, itself capped.  The kernel's cycle records
 * belong to no bucket.  A record that cannot fit is dropped before the
 * lock is taken when the ring is full as the consumer sees it, or when its
 * uid is over @share_max with nothing left to reclaim; only the checks
 * that can succeed pay for the lock.
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
#include <linux/hash.h>
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
 * @share_max: ring bytes one uid may hold; clamped to
 *             [KPP_RECORD_SIZE_MAX, size].
 *
 * Return: 0, -EINVAL for a bad size, or -ENOMEM.
 */
int kpp_ring_init(struct kpp_ring *rb, u64 size, u64 watermark, u64 share_max)
{
	int i;

	if (!is_power_of_2(size) || size < KPP_RING_SIZE_MIN ||
	    size > KPP_RING_SIZE_MAX || size < 4 * KPP_RECORD_SIZE_MAX)
		return -EINVAL;

	memset(rb, 0, sizeof(*rb));
	rb->area = kpp_ring_area_alloc(rb, size >> PAGE_SHIFT);
	if (!rb->area)
		return -ENOMEM;

	raw_spin_lock_init(&rb->lock);
	init_waitqueue_head(&rb->waitq);
	for (i = 0; i < KPPROF_DROP_REASONS; i++)
		atomic64_set(&rb->dropped[i], 0);
	atomic64_set(&rb->rejected, 0);
	atomic64_set(&rb->wakeups, 0);
	rb->size = size;
	rb->mask = size - 1;
	rb->watermark = clamp_t(u64, watermark, 8, size / 2);
	rb->share_max = clamp_t(u64, share_max, KPP_RECORD_SIZE_MAX, size);
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
	wake_up_poll(&rb->waitq, EPOLLIN | EPOLLRDNORM);
}

static u64 kpp_ring_entry_size(u32 len)
{
	return round_up(sizeof(struct kpprof_ring_hdr) + len, 8);
}

/* Would @total more bytes after @prod overrun the ring read up to @from? */
static bool kpp_ring_no_room(struct kpp_ring *rb, u64 prod, u64 from, u64 total)
{
	return prod + total - from > rb->size;
}

/*
 * Would @total more bytes take the uid of @sh (NULL: none yet) over
 * @share_max?  The lock-free part of the share check: the dynamic cap
 * (kpp_ring_over_cap()) needs @lock.
 */
static bool kpp_ring_share_full(struct kpp_ring *rb, struct kpp_share *sh,
				u64 total)
{
	return sh && READ_ONCE(sh->bytes) + total > rb->share_max;
}

/* Buckets holding bytes: the uid slots in use and the overflow bucket. */
static unsigned int kpp_ring_active(struct kpp_ring *rb)
{
	return rb->nr_shares + !!rb->overflow.bytes;
}

/*
 * kpp_ring_over_cap - would @total more bytes take @sh (NULL: a uid that
 * gets a fresh slot) over min(share_max, free / (others + 1))?  Under
 * @lock, with free counted from @reclaim.  Alone (no other bucket holds
 * bytes) only share_max applies: a lone busy uid keeps the room the admin
 * gave it.
 */
static bool kpp_ring_over_cap(struct kpp_ring *rb, struct kpp_share *sh,
			      u64 total)
{
	u64 held = sh ? sh->bytes : 0;
	u64 free = rb->size - (rb->prod - rb->reclaim);
	unsigned int others = kpp_ring_active(rb) - !!held;

	lockdep_assert_held(&rb->lock);
	if (held + total > rb->share_max)
		return true;
	return others && held + total > div_u64(free, others + 1);
}

/*
 * kpp_ring_share - the slot holding @uid's bytes, or NULL.  Also called
 * without @lock as a hint (the lock-free drop check): each field is read
 * once, and a stale answer only sends the caller to the locked check.
 */
static struct kpp_share *kpp_ring_share(struct kpp_ring *rb, u32 uid)
{
	unsigned int i, seen = 0, nr = READ_ONCE(rb->nr_shares);
	unsigned int start = hash_32(uid, ilog2(KPP_SHARE_SLOTS));
	struct kpp_share *sh;

	BUILD_BUG_ON(!is_power_of_2(KPP_SHARE_SLOTS));
	for (i = 0; i < KPP_SHARE_SLOTS && seen < nr; i++) {
		sh = &rb->shares[(start + i) % KPP_SHARE_SLOTS];
		if (!READ_ONCE(sh->bytes))
			continue;
		seen++;
		if (READ_ONCE(sh->uid) == uid)
			return sh;
	}
	return NULL;
}

/*
 * kpp_ring_bucket - the bucket @uid's next bytes are charged to: its slot,
 * NULL if it has none but a slot is free (kpp_ring_share_add() takes it),
 * or the overflow bucket.  Under @lock.
 */
static struct kpp_share *kpp_ring_bucket(struct kpp_ring *rb, u32 uid)
{
	struct kpp_share *sh = kpp_ring_share(rb, uid);

	lockdep_assert_held(&rb->lock);
	if (sh || rb->nr_shares < KPP_SHARE_SLOTS)
		return sh;
	return &rb->overflow;
}

/*
 * kpp_ring_share_add - charge @total bytes to @uid, whose bucket @sh is
 * (kpp_ring_bucket()), after kpp_ring_fits() said it may
 */
static void kpp_ring_share_add(struct kpp_ring *rb, struct kpp_share *sh,
			       u32 uid, u64 total)
{
	unsigned int i, start = hash_32(uid, ilog2(KPP_SHARE_SLOTS));

	lockdep_assert_held(&rb->lock);
	if (sh) {
		WRITE_ONCE(sh->bytes, sh->bytes + total);
		return;
	}
	/* a new uid, and kpp_ring_bucket() saw a free slot */
	for (i = 0; i < KPP_SHARE_SLOTS; i++) {
		sh = &rb->shares[(start + i) % KPP_SHARE_SLOTS];
		if (!sh->bytes) {
			WRITE_ONCE(sh->uid, uid);
			WRITE_ONCE(sh->bytes, total);
			WRITE_ONCE(rb->nr_shares, rb->nr_shares + 1);
			return;
		}
	}
	WARN_ON_ONCE(1);
}

/*
 * kpp_ring_share_release - @total bytes of @uid's were read: release them
 * from its slot, and what the slot does not hold from the overflow bucket
 * (see the top of this file)
 */
static void kpp_ring_share_release(struct kpp_ring *rb, u32 uid, u64 total)
{
	struct kpp_share *sh = kpp_ring_share(rb, uid);
	u64 part;

	lockdep_assert_held(&rb->lock);
	if (sh) {
		part = min(total, sh->bytes);
		WRITE_ONCE(sh->bytes, sh->bytes - part);
		if (!sh->bytes)
			WRITE_ONCE(rb->nr_shares, rb->nr_shares - 1);
		total -= part;
	}
	part = min(total, rb->overflow.bytes);
	WRITE_ONCE(rb->overflow.bytes, rb->overflow.bytes - part);
}

/*
 * kpp_ring_reclaim - release up to @budget entries the consumer has read
 *
 * Return: true if read entries remain unreleased.
 */
static bool kpp_ring_reclaim(struct kpp_ring *rb, unsigned int budget)
{
	/* pairs with the consumer's release store of cons_pos */
	u64 cons = smp_load_acquire(rb->cons_pos);
	u64 pos = rb->reclaim, total;
	struct kpprof_ring_hdr *hdr;
	struct kpprof_record *rec;
	bool more = false;
	u32 len;

	lockdep_assert_held(&rb->lock);
	/* a cons_pos beyond prod_pos (scribbled on): all of it was read */
	if (cons - pos > rb->prod - pos)
		cons = rb->prod;
	while (pos != cons) {
		if (!budget--) {
			more = true;
			break;
		}
		hdr = (struct kpprof_ring_hdr *)(rb->data + (pos & rb->mask));
		/*
		 * Acquire, as kpp_ring_readable(): the record's uid and kind
		 * are read after it, and this entry may be one nobody read
		 * (a cons_pos beyond prod_pos), so the consumer's acquire
		 * orders nothing for us.  Pairs with xchg() in
		 * kpp_ring_commit().
		 */
		len = smp_load_acquire(&hdr->len);
		if (len & KPPROF_RING_BUSY)
			break;
		total = kpp_ring_entry_size(len & KPPROF_RING_LEN_MASK);
		/* a cons_pos inside an entry: that entry is not read yet */
		if (total > cons - pos)
			break;
		rec = (struct kpprof_record *)(hdr + 1);
		if (rec->kind != KPPROF_REC_CYCLE)
			kpp_ring_share_release(rb, hdr->charge_uid, total);
		pos += total;
	}
	WRITE_ONCE(rb->reclaim, pos);
	return more;
}

/*
 * Entries released per hold of @lock: a writer that needs more retakes the
 * lock for each batch (kpp_ring_reserve_retry()).
 */
#define KPP_RECLAIM_BATCH	8

/*
 * kpp_ring_fits - is there room for @total bytes, within the cap of @uid's
 * bucket unless @uid is NULL (the kernel's own records)?  Releases up to
 * KPP_RECLAIM_BATCH read entries first.
 * @shp:  gets @uid's bucket (kpp_ring_bucket()).
 * @drop: gets the KPPROF_DROP_* reason when the answer is no.
 *
 * Return: true if it fits; if not, *@more says whether read entries remain
 * to release, which may change the answer.
 */
static bool kpp_ring_fits(struct kpp_ring *rb, u64 total, const u32 *uid,
			  struct kpp_share **shp, int *drop, bool *more)
{
	*more = kpp_ring_reclaim(rb, KPP_RECLAIM_BATCH);
	if (kpp_ring_no_room(rb, rb->prod, rb->reclaim, total)) {
		*drop = KPPROF_DROP_RING_FULL;
		return false;
	}
	if (!uid)
		return true;
	*shp = kpp_ring_bucket(rb, *uid);
	if (kpp_ring_over_cap(rb, *shp, total)) {
		*drop = KPPROF_DROP_SHARE;
		return false;
	}
	return true;
}

/*
 * kpp_ring_drop_early - the lock-free check: will a record of @total bytes
 * from @uid be dropped whatever happens under the lock?  Yes when the ring
 * is full as the consumer's own position says (reclaiming frees nothing
 * beyond cons_pos), or when @uid is over its share and every entry the
 * consumer has read is already released.
 *
 * Return: the KPPROF_DROP_* reason, or -1 to go on to the lock.
 */
static int kpp_ring_drop_early(struct kpp_ring *rb, u64 total, u32 uid)
{
	/* pairs with the consumer's release store of cons_pos */
	u64 cons = smp_load_acquire(rb->cons_pos);
	u64 prod = READ_ONCE(rb->prod);
	struct kpp_share *sh;

	if (kpp_ring_no_room(rb, prod, cons, total))
		return KPPROF_DROP_RING_FULL;
	if (READ_ONCE(rb->reclaim) != cons)
		return -1;
	sh = kpp_ring_share(rb, uid);
	if (kpp_ring_share_full(rb, sh, total))
		return KPPROF_DROP_SHARE;
	return -1;
}

/*
 * kpp_ring_reserve - claim room for a record of @len bytes
 * @uid: the writer's uid, charged for the room; NULL for the kernel's own.
 * @drop: gets the KPPROF_DROP_* reason if the record does not fit (not
 *        counted yet: the caller may try again, see @more).
 * @more: gets whether read entries remain to release, so that a retry
 *        (after preempt_enable(), the lock dropped) may find room.
 *
 * Called with preemption off, which the caller keeps off until it has
 * committed the entry (see the top of this file).
 *
 * Return: the entry's header, with BUSY set and the record area after it
 * not yet written, or NULL if the record does not fit.  *@cycle gets the
 * cycle the record belongs to.  When @advance is set, the cycle is first
 * advanced under the same lock, so that no record of the old cycle can be
 * reserved after this one.
 */
static struct kpprof_ring_hdr *kpp_ring_reserve(struct kpp_ring *rb, u32 len,
						const u32 *uid, u64 *cycle,
						bool advance, int *drop,
						bool *more)
{
	u64 total = kpp_ring_entry_size(len);
	struct kpp_share *sh = NULL;
	struct kpprof_ring_hdr *hdr;
	u64 prod;

	raw_spin_lock(&rb->lock);
	if (advance)
		WRITE_ONCE(rb->cycle, rb->cycle + 1);
	*cycle = rb->cycle;

	if (!kpp_ring_fits(rb, total, uid, &sh, drop, more)) {
		raw_spin_unlock(&rb->lock);
		return NULL;
	}
	if (uid)
		kpp_ring_share_add(rb, sh, *uid, total);

	prod = rb->prod;
	hdr = (struct kpprof_ring_hdr *)(rb->data + (prod & rb->mask));
	/* kpp_ring_readable() may load it, with a scribbled cons_pos */
	WRITE_ONCE(hdr->len, len | KPPROF_RING_BUSY);
	/* the bucket kpp_ring_reclaim() releases the entry from */
	hdr->charge_uid = uid ? *uid : 0;
	/* the zero padding the consumer skips: never leak old bytes */
	if (total > sizeof(*hdr) + len)
		memset((u8 *)(hdr + 1) + len, 0, total - sizeof(*hdr) - len);

	rb->accepted++;
	rb->accepted_bytes += total;
	WRITE_ONCE(rb->prod, prod + total);
	/* pairs with the consumer's smp_load_acquire() of prod_pos */
	smp_store_release(rb->prod_pos, prod + total);
	raw_spin_unlock(&rb->lock);
	return hdr;
}

/*
 * kpp_ring_reserve_retry - kpp_ring_reserve() until the record fits or no
 * read entry is left to release, with the lock dropped and preemption on
 * between tries: a record is never dropped for want of a release, and no
 * one hold of the lock releases more than KPP_RECLAIM_BATCH entries.  The
 * consumer's poll() and the cycle work release what was read
 * (kpp_ring_reclaim_all()), so a writer seldom has more than a batch to
 * do.  Returns with preemption off if it returns an entry; otherwise
 * counts the drop.
 */
static struct kpprof_ring_hdr *kpp_ring_reserve_retry(struct kpp_ring *rb,
						      u32 len, const u32 *uid,
						      u64 *cycle, bool advance,
						      int *not_counted)
{
	struct kpprof_ring_hdr *hdr;
	bool more;
	int drop;

	while (true) {
		preempt_disable();
		hdr = kpp_ring_reserve(rb, len, uid, cycle, advance, &drop,
				       &more);
		if (hdr)
			return hdr;
		preempt_enable();
		if (!more)
			break;
		/* the cycle moved once; later tries only reserve */
		advance = false;
		cond_resched();
	}
	if (not_counted)
		*not_counted = drop;
	else
		atomic64_inc(&rb->dropped[drop]);
	return NULL;
}

/*
 * kpp_ring_commit - make a reserved record visible to the consumer; still
 * inside the preemption-off window.
 */
static void kpp_ring_commit(struct kpprof_ring_hdr *hdr)
{
	/*
	 * xchg() is a full barrier: the record's bytes are visible before BUSY
	 * clears (pairs with the consumer's smp_load_acquire() of hdr->len),
	 * and the waitqueue check in kpp_ring_notify() is ordered after it.
	 */
	xchg(&hdr->len, hdr->len & ~KPPROF_RING_BUSY);
}

/*
 * kpp_ring_notify - wake a consumer sleeping in poll(), after a commit and
 * with preemption on again (the waitqueue lock sleeps on PREEMPT_RT)
 * @urgent: wake it whatever the watermark says.
 *
 * No wake-up is lost: the commit's xchg() and wq_has_sleeper()'s smp_mb()
 * order the BUSY bit's clearing before the look at the waitqueue; kpp_poll()
 * orders its waitqueue insertion before its look at the ring with smp_mb().
 * Either the consumer sees the record, or we see the consumer.  And a
 * consumer that went to sleep because the entry at cons_pos was still BUSY
 * (woken, say, by a cycle record behind it) is woken by that entry's
 * commit, whatever the watermark (@wake_on_commit, kpp_ring_poll()).
 */
static void kpp_ring_notify(struct kpp_ring *rb, bool urgent)
{
	if (!wq_has_sleeper(&rb->waitq))
		return;
	if (urgent || READ_ONCE(rb->wake_on_commit) ||
	    kpp_ring_unread(rb) >= rb->watermark) {
		WRITE_ONCE(rb->wake_on_commit, false);
		kpp_ring_wake(rb);
	}
}

/*
 * __kpp_ring_output - kpp_ring_output(); @not_counted NULL counts a drop,
 * else gets its KPPROF_DROP_* reason (kpp_ring_offer()).
 */
static int __kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
			     const struct kpp_stamp *stamp, int *not_counted);

/**
 * kpp_ring_output - copy a validated record into the ring and stamp it
 * @rb:    the ring.
 * @rec:   the record, @len bytes, a multiple of 8, already validated, in
 *         kernel memory.
 * @len:   its size.
 * @stamp: identity to write over the kernel-owned fields; the time, the CPU
 *         and the cycle are the ring's own, taken when the record has its
 *         room.
 *
 * Return: 0, or -ENOBUFS if the record did not fit: the ring was full, or
 * the writer's uid held its share of it (the drop is counted by reason).
 */
int kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
		    const struct kpp_stamp *stamp)
{
	return __kpp_ring_output(rb, rec, len, stamp, NULL);
}

static int __kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
			     const struct kpp_stamp *stamp, int *not_counted)
{
	struct kpprof_ring_hdr *hdr;
	struct kpprof_record *out;
	u64 cycle;
	int drop;

	drop = kpp_ring_drop_early(rb, kpp_ring_entry_size(len), stamp->charge);
	if (drop >= 0) {
		if (not_counted)
			*not_counted = drop;
		else
			atomic64_inc(&rb->dropped[drop]);
		return -ENOBUFS;
	}

	/* returns with preemption off, the entry reserved */
	hdr = kpp_ring_reserve_retry(rb, len, &stamp->charge, &cycle, false,
				     not_counted);
	if (!hdr)
		return -ENOBUFS;
	out = (struct kpprof_record *)(hdr + 1);
	memcpy(out, rec, len);
	out->tgid = stamp->tgid;
	out->tid = stamp->tid;
	out->uid = stamp->uid;
	out->cpu = smp_processor_id();
	out->time_ns = ktime_get_ns();
	out->cycle = cycle;
	kpp_ring_commit(hdr);
	preempt_enable();

	kpp_ring_notify(rb, false);
	return 0;
}

/**
 * kpp_ring_offer - kpp_ring_output() for a record that has somewhere else
 * to wait (a producer ring): a record that does not fit is not counted as
 * dropped.
 * @rb:    the ring.
 * @rec:   the record, validated, in kernel memory.
 * @len:   its size.
 * @stamp: identity, as for kpp_ring_output().
 * @drop:  gets the KPPROF_DROP_* reason when the record does not fit.
 *
 * Return: 0, or -ENOBUFS.
 */
int kpp_ring_offer(struct kpp_ring *rb, const void *rec, u32 len,
		   const struct kpp_stamp *stamp, int *drop)
{
	return __kpp_ring_output(rb, rec, len, stamp, drop);
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
 * (counted) but the cycle still advances.  Cycle records are charged to no
 * uid's share.
 *
 * With @emit false the cycle advances without a record: the timer does
 * that if it fires after the consumer left, so an idle ring does not fill
 * up with cycle records (a later consumer learns of the cycles it missed
 * from the next record's cycle).
 *
 * Return: the new cycle.
 */
u64 kpp_ring_advance_cycle(struct kpp_ring *rb, u32 reason, bool emit)
{
	struct kpprof_ring_hdr *hdr;
	struct kpprof_rec_cycle *rec;
	u64 cycle;

	if (!emit) {
		raw_spin_lock(&rb->lock);
		cycle = rb->cycle + 1;
		WRITE_ONCE(rb->cycle, cycle);
		raw_spin_unlock(&rb->lock);
		return cycle;
	}

	/*
	 * The cycle advances (under the lock, in the first try) even when the
	 * ring has no room for the record; a retry stamps the record with the
	 * cycle then current, still >= the one it ends.
	 */
	hdr = kpp_ring_reserve_retry(rb, sizeof(*rec), NULL, &cycle, true, NULL);
	if (!hdr)
		return READ_ONCE(rb->cycle);
	rec = (struct kpprof_rec_cycle *)(hdr + 1);
	memset(rec, 0, sizeof(*rec));
	rec->hdr.kind = KPPROF_REC_CYCLE;
	rec->hdr.size = sizeof(*rec);
	rec->hdr.cpu = smp_processor_id();
	rec->hdr.time_ns = ktime_get_ns();
	rec->hdr.cycle = cycle;
	rec->reason = reason;
	kpp_ring_commit(hdr);
	preempt_enable();

	kpp_ring_notify(rb, true);
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

/**
 * kpp_ring_poll - the readable check of poll(), after poll_wait()
 * @rb: the ring.
 *
 * Return: true if the entry at cons_pos is complete.  If it is there but
 * still BUSY, asks that entry's commit to wake the consumer (see
 * kpp_ring_notify()): its producer is within its short non-preemptible
 * window, and what is behind it may be urgent.
 */
bool kpp_ring_poll(struct kpp_ring *rb)
{
	/*
	 * Order our insertion into the waitqueue (poll_wait()) before the
	 * loads of the ring, as sock_poll_wait() does: pairs with the full
	 * barriers of a commit, xchg() then wq_has_sleeper()'s smp_mb().
	 */
	smp_mb();
	if (kpp_ring_readable(rb))
		return true;
	/* empty, as opposed to a BUSY entry at cons_pos */
	if (READ_ONCE(*rb->cons_pos) == READ_ONCE(rb->prod))
		return false;
	WRITE_ONCE(rb->wake_on_commit, true);
	/* the flag before the second look; pairs with kpp_ring_notify() */
	smp_mb();
	return kpp_ring_readable(rb);
}

/**
 * kpp_ring_attach - a new consumer starts where the last one stopped
 * @rb: the ring.
 *
 * Releases what the last consumer read, then sets cons_pos to the first
 * entry it did not read (@reclaim): whatever a departed consumer left in
 * cons_pos, the new one starts on an entry boundary, with nothing read
 * twice and nothing unread skipped.  The walk goes in batches, with the
 * lock dropped in between: the backlog can be a whole ring.
 */
void kpp_ring_attach(struct kpp_ring *rb)
{
	bool more;

	do {
		raw_spin_lock(&rb->lock);
		more = kpp_ring_reclaim(rb, KPP_RECLAIM_BATCH);
		if (!more)
			/* pairs with the consumer's smp_load_acquire() */
			smp_store_release(rb->cons_pos, rb->reclaim);
		raw_spin_unlock(&rb->lock);
		cond_resched();
	} while (more);
}

/**
 * kpp_ring_reclaim_all - release every entry the consumer has read
 * @rb: the ring.
 *
 * In the consumer's context (its poll(), the cycle work), in batches with
 * the lock dropped: so the free space and the buckets the share rule sees
 * are those of the unread records, and writers do not pay for the
 * releases.
 */
void kpp_ring_reclaim_all(struct kpp_ring *rb)
{
	bool more;

	do {
		raw_spin_lock(&rb->lock);
		more = kpp_ring_reclaim(rb, KPP_RECLAIM_BATCH);
		raw_spin_unlock(&rb->lock);
		cond_resched();
	} while (more);
}

/* kpp_ring_wake_if_pending - the timer's wake-up for records below the watermark */
void kpp_ring_wake_if_pending(struct kpp_ring *rb)
{
	if (wq_has_sleeper(&rb->waitq) && kpp_ring_unread(rb))
		kpp_ring_wake(rb);
}

/*
 * The flags of both consumer mappings, as perf's: a fork()ed child gets
 * neither (it would keep the consumer's view and pin the consumer), mremap()
 * cannot grow them, a core dump leaves them out, and they can never be made
 * executable.  VM_IO: madvise(MADV_DOFORK) cannot undo VM_DONTCOPY, and
 * get_user_pages() cannot pin the pages past the detach that revokes them
 * (kpp_consumer_detach()).
 */
static void kpp_ring_vm_flags(struct vm_area_struct *vma)
{
	kpp_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO);
	kpp_vm_flags_clear(vma, VM_MAYEXEC);
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
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	kpp_ring_vm_flags(vma);
	return remap_vmalloc_range(vma, rb->area, 0);
}

/**
 * kpp_ring_mmap_producer - map the producer page and data pages, read-only
 * @rb:  the ring.
 * @vma: at most one page plus twice the data size.
 */
int kpp_ring_mmap_producer(struct kpp_ring *rb, struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	if (vma->vm_end - vma->vm_start > PAGE_SIZE + 2 * rb->size)
		return -EINVAL;
	kpp_ring_vm_flags(vma);
	/* no mprotect() to writable later */
	kpp_vm_flags_clear(vma, VM_MAYWRITE);
	return remap_vmalloc_range(vma, rb->area, 1);
}

/* kpp_ring_stats - the ring's part of KPPROF_IOC_GET_STATS */
void kpp_ring_stats(struct kpp_ring *rb, struct kpprof_stats *st)
{
	int i;

	raw_spin_lock(&rb->lock);
	st->accepted = rb->accepted;
	st->accepted_bytes = rb->accepted_bytes;
	st->cycle = rb->cycle;
	st->prod_pos = rb->prod;
	raw_spin_unlock(&rb->lock);

	st->cons_pos = READ_ONCE(*rb->cons_pos);
	for (i = 0; i < KPPROF_DROP_REASONS; i++)
		st->dropped[i] = atomic64_read(&rb->dropped[i]);
	st->rejected = atomic64_read(&rb->rejected);
	st->wakeups = atomic64_read(&rb->wakeups);
}

#include "selftest/ring.c"
