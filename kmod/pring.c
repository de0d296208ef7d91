// SPDX-License-Identifier: GPL-2.0
/*
 * Producer rings: a record costs its producer no syscall.  Each open file
 * may map a ring of its own (ioctl/kpprof.h, "The producer ring"); the
 * producer's threads reserve entries with a compare-and-swap on the head
 * and commit them with a store-release of the length, as the BPF ring
 * buffer does, and the kernel drains the rings into the consumer's ring in
 * the consumer's context.
 *
 * Memory: the header page and the data pages, the data mapped twice in a
 * row (as in ring.c), so a record that wraps the end reads contiguously in
 * the kernel's vmap and in the producer's mapping alike.  The pages are
 * charged to the mapper's memory cgroup (GFP_KERNEL_ACCOUNT), and all
 * rings together are bounded by the pring_total_max module parameter.
 *
 * Trust: the producer writes the whole mapping whenever it likes.  The
 * drain keeps its own tail, reads the head and each entry's length once,
 * copies each record into kpp_dev.drain_buf before looking at it, then
 * validates the copy as SUBMIT does (kpp_record_validate()) and stamps it
 * with the identity taken at mmap time.  A head or length it cannot
 * believe empties the ring (@resets); a malformed record is skipped
 * (@invalid).  Both are that producer's losses only, reported in band.
 *
 * Every drained byte is zeroed before the tail moves past it: an entry a
 * producer has reserved but not yet started to write reads as length 0,
 * which the drain treats as not committed.
 *
 * Locking: kpp_dev.prings_lock, a mutex, guards the list, the table of
 * rings by mm (kpp_dev.prings_by_mm), the bounce buffer and every ring's
 * drain state; the drain copies and validates
 * under it, and takes the consumer ring's lock only inside
 * kpp_ring_offer(), for the usual O(1) reservation.  A file's ring is
 * created under its kpp_file.lock (then prings_lock, to link it) and freed
 * at the file's release, after a last drain, under prings_lock: a drain
 * never sees a ring being freed.  A ring whose last records the consumer's
 * ring could not take at the release (full, or its uid over its share)
 * becomes an orphan: it stays on the list, with its pages counted against
 * pring_total_max, and the drain frees it once it is empty, so a process's
 * last records are not lost because it exited while the collector lagged.
 *
 * Fairness: rings are drained round-robin, KPP_PRING_BUDGET records each
 * per pass, and the list is rotated after every drain, so a producer with
 * a backlog delays nobody else's records; a record the consumer's ring
 * refuses stays in its producer's ring (for a full consumer ring the
 * drain stops; for a uid over its share, only that ring is skipped).
 *
 * Cadence: the periodic drain watches the rings: every drain_period_ms,
 * or after one jiffy while a ring was found at least a quarter full or
 * the passes ran out.  A producer asks for a drain of its own rings with
 * a page fault on its doorbell (doorbell.c, kpp_pring_doorbell()), which
 * a sandbox the shim cannot see cannot forbid, as it may forbid
 * KPPROF_IOC_KICK.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/coredump.h>
#include <linux/vmalloc.h>
#include <linux/pid.h>
#include <linux/cred.h>
#include <linux/jiffies.h>
#include <linux/overflow.h>
#include <linux/rhashtable.h>
#include "kpp.h"
#include "compat.h"

/* Records one ring may give per pass of a drain, and passes per drain. */
#define KPP_PRING_BUDGET	32
#define KPP_PRING_PASSES	64

/*
 * kpp_dev.prings_by_mm: a ring's key is its mm pointer, which stays unique
 * while the ring is in the table (the ring holds it with mmgrab(), so no
 * other mm can be allocated at that address).  The table grows and shrinks
 * with the number of mms, so a lookup costs O(1) however many rings other
 * processes hold; the rings of one mm hang off one entry (rhltable).
 */
static const struct rhashtable_params kpp_pring_mm_params = {
	.key_len = sizeof(struct mm_struct *),
	.key_offset = offsetof(struct kpp_pring, mm),
	.head_offset = offsetof(struct kpp_pring, mm_node),
	.automatic_shrinking = true,
};

static u64 kpp_pring_bytes(u64 size)
{
	return size + PAGE_SIZE;
}

static void kpp_pring_free(struct kpp_pring *p)
{
	int i;

	if (p->area)
		vunmap(p->area);
	for (i = 0; i < p->nr_pages; i++)
		__free_page(p->pages[i]);
	kvfree(p->pages);
	put_pid(p->pid);
	if (p->mm)
		mmdrop(p->mm);
	kfree(p);
}

static struct kpp_pring *kpp_pring_alloc(u64 size)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
			  __GFP_NOWARN | __GFP_ZERO;
	int nr_data = size >> PAGE_SHIFT;
	int nr_pages = 1 + nr_data, nr_mapped = 1 + 2 * nr_data;
	struct kpp_pring *p;
	int i;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->pages = kvcalloc(nr_mapped, sizeof(*p->pages), GFP_KERNEL_ACCOUNT);
	if (!p->pages)
		goto err;
	for (i = 0; i < nr_pages; i++) {
		p->pages[i] = alloc_page(gfp);
		if (!p->pages[i])
			goto err;
		p->nr_pages = i + 1;
		if (i >= 1)
			p->pages[nr_data + i] = p->pages[i];
	}
	p->area = vmap(p->pages, nr_mapped, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!p->area)
		goto err;
	p->hdr = p->area;
	p->data = p->area + PAGE_SIZE;
	p->size = size;
	p->mask = size - 1;
	p->hdr->size = size;
	p->hdr->data_off = PAGE_SIZE;
	return p;

err:
	kpp_pring_free(p);
	return NULL;
}

/*
 * kpp_pring_uid_charge - add @bytes (negative: give back) to @uid's rings;
 * under prings_lock.  Return: 0, or -ENOMEM past pring_uid_max.
 */
static int kpp_pring_uid_charge(u32 uid, s64 bytes)
{
	void *v = xa_load(&kpp_dev.pring_uids, uid);
	u64 cur = v ? xa_to_value(v) : 0;

	lockdep_assert_held(&kpp_dev.prings_lock);
	if (bytes > 0 && cur + bytes > kpp_dev.pring_uid_max)
		return -ENOMEM;
	cur += bytes;
	if (!cur) {
		xa_erase(&kpp_dev.pring_uids, uid);
		return 0;
	}
	/* replacing an entry allocates nothing: only a new uid may fail */
	return xa_err(xa_store(&kpp_dev.pring_uids, uid, xa_mk_value(cur),
			       GFP_KERNEL_ACCOUNT));
}

/*
 * kpp_pring_create - a ring for the calling process, within its uid's
 * share and the global cap, stamped with its identity now
 * (ioctl/kpprof.h, "Identity").
 */
static struct kpp_pring *kpp_pring_create(void)
{
	u64 bytes = kpp_pring_bytes(kpp_dev.pring_size);
	u32 charge = kpp_charge_uid(current_cred());
	struct kpp_pring *p;
	int err;

	mutex_lock(&kpp_dev.prings_lock);
	err = kpp_pring_uid_charge(charge, bytes);
	mutex_unlock(&kpp_dev.prings_lock);
	if (err) {
		atomic64_inc(&kpp_dev.pring_refused);
		return ERR_PTR(err);
	}
	if (atomic64_add_return(bytes, &kpp_dev.pring_total) >
	    kpp_dev.pring_total_max) {
		atomic64_inc(&kpp_dev.pring_refused);
		p = ERR_PTR(-ENOMEM);
		goto err;
	}
	p = kpp_pring_alloc(kpp_dev.pring_size);
	if (!p) {
		p = ERR_PTR(-ENOMEM);
		goto err;
	}
	p->tgid = task_tgid_nr(current);
	p->uid = from_kuid_munged(&init_user_ns, current_uid());
	p->charge = charge;
	p->task_size = TASK_SIZE;
	p->lost_time = ktime_get_ns();
	p->pid = get_task_pid(current, PIDTYPE_TGID);
	get_task_comm(p->comm, current);
	mmgrab(current->mm);
	p->mm = current->mm;

	mutex_lock(&kpp_dev.prings_lock);
	/* may allocate a bucket table (GFP_ATOMIC): fails only for memory */
	err = rhltable_insert(&kpp_dev.prings_by_mm, &p->mm_node,
			      kpp_pring_mm_params);
	if (!err)
		list_add_tail(&p->node, &kpp_dev.prings);
	mutex_unlock(&kpp_dev.prings_lock);
	if (err) {
		kpp_pring_free(p);
		p = ERR_PTR(-ENOMEM);
		goto err;
	}
	atomic_inc(&kpp_dev.pring_count);
	return p;

err:
	atomic64_sub(bytes, &kpp_dev.pring_total);
	mutex_lock(&kpp_dev.prings_lock);
	kpp_pring_uid_charge(charge, -(s64)bytes);
	mutex_unlock(&kpp_dev.prings_lock);
	return p;
}

/*
 * kpp_pring_mm_shared - @mm is, or was, the address space of more than one
 * thread group (clone(CLONE_VM) without CLONE_THREAD or CLONE_VFORK; the
 * flag is sticky).  A ring's records are stamped with its mapper's tgid
 * because only the mapper can write them; in a shared mm another process
 * can, and once the mapper execs (a setuid program, say) or exits, that
 * one would write records stamped with the mapper's tgid.
 */
static bool kpp_pring_mm_shared(struct mm_struct *mm)
{
	return test_bit(MMF_MULTIPROCESS, &mm->flags);
}

/**
 * kpp_pring_mmap - map @file's producer ring, creating it on first use
 * @kf:   the file's state.
 * @file: the file (a producer may only map a file it may submit with).
 * @vma:  exactly info.pring_map_len bytes, shared, not executable.
 *
 * Return: 0, -EACCES (not opened for writing), -EPERM (no producer
 * permission, or PROT_EXEC), -EINVAL (geometry), -EBUSY (another process
 * mapped this file's ring, or the caller's mm is shared with another
 * process: a CLONE_VM child, a vfork child before its exec), -ENOMEM
 * (pring_total_max reached, counted).
 */
int kpp_pring_mmap(struct kpp_file *kf, struct file *file,
		   struct vm_area_struct *vma)
{
	struct kpp_pring *p;
	int err;

	if (!(file->f_mode & FMODE_WRITE))
		return -EACCES;
	if (!kf->producer)
		return -EPERM;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_end - vma->vm_start != PAGE_SIZE + 2 * kpp_dev.pring_size)
		return -EINVAL;
	if (kpp_pring_mm_shared(current->mm) || current->vfork_done)
		return -EBUSY;

	mutex_lock(&kf->lock);
	p = kf->pring;
	if (p && p->mm != current->mm) {
		err = -EBUSY;
		goto out;
	}
	if (!p) {
		p = kpp_pring_create();
		if (IS_ERR(p)) {
			err = PTR_ERR(p);
			goto out;
		}
		kf->pring = p;
	}
	/*
	 * As the consumer's mappings (ring.c): never inherited (a child
	 * writing into its parent's ring would write as the parent), not
	 * growable, not in core dumps, never executable; VM_IO so that
	 * MADV_DOFORK cannot undo VM_DONTCOPY and no pin outlives the file.
	 */
	kpp_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO);
	kpp_vm_flags_clear(vma, VM_MAYEXEC);
	err = remap_vmalloc_range(vma, p->area, 0);
out:
	mutex_unlock(&kf->lock);
	return err;
}

/*
 * kpp_pring_reset - the head or an entry cannot be believed: empty the
 * ring (its records are lost, counted as one reset) and go on from @head.
 * A head that stays bad is counted once.
 */
static void kpp_pring_reset(struct kpp_pring *p, u64 head)
{
	if (p->tail == round_down(head, 8))
		return;
	p->resets++;
	atomic64_inc(&kpp_dev.pring_invalid);
	memset(p->data, 0, p->size);
	p->tail = round_down(head, 8);
}

/* kpp_pring_fill_comm - a COMM record's ppid and comm, from the mapper */
static void kpp_pring_fill_comm(struct kpp_pring *p, struct kpprof_rec_comm *r)
{
	struct task_struct *t;

	BUILD_BUG_ON(sizeof(r->comm) != TASK_COMM_LEN);
	rcu_read_lock();
	t = pid_task(p->pid, PIDTYPE_TGID);
	if (t) {
		r->ppid = task_tgid_nr(rcu_dereference(t->real_parent));
		get_task_comm(r->comm, t);
	} else {
		memcpy(r->comm, p->comm, sizeof(r->comm));
	}
	rcu_read_unlock();
}

static void kpp_pring_stamp(struct kpp_pring *p, struct kpp_stamp *st)
{
	st->tgid = p->tgid;
	st->tid = 0;
	st->uid = p->uid;
	st->charge = p->charge;
}

/*
 * kpp_pring_take - copy one committed record of @len bytes out of the
 * ring, validate it and offer it to the consumer's ring.
 *
 * Return: 0 when the record is done with (taken, invalid: counted, or
 * disabled: counted as SUBMIT counts it), -EAGAIN when the consumer's ring
 * refused it: it stays; *@full is set if that ring is full.
 */
static int kpp_pring_take(struct kpp_pring *p, const void *src, u32 len,
			  bool *full)
{
	struct kpp_ring *rb = &kpp_dev.ring;
	struct kpprof_record *rec = kpp_dev.drain_buf;
	struct kpp_stamp st;
	int drop;
	u32 flag;

	/* one copy: whatever the producer writes after it changes nothing */
	memcpy(rec, src, len);
	if (kpp_record_validate(rec, len, kpp_config_max_depth(&kpp_dev.config),
				p->task_size)) {
		p->invalid++;
		atomic64_inc(&kpp_dev.pring_invalid);
		return 0;
	}
	flag = kpp_record_flag(rec->kind);
	if (flag && !(kpp_config_flags(&kpp_dev.config) & flag)) {
		atomic64_inc(&rb->dropped[KPPROF_DROP_DISABLED]);
		return 0;
	}
	if (rec->kind == KPPROF_REC_COMM)
		kpp_pring_fill_comm(p, (struct kpprof_rec_comm *)rec);
	kpp_pring_stamp(p, &st);
	if (kpp_ring_offer(rb, rec, len, &st, &drop)) {
		if (drop == KPPROF_DROP_RING_FULL)
			*full = true;
		return -EAGAIN;
	}
	atomic64_inc(&kpp_dev.pring_drained);
	return 0;
}

/* a + b, or U64_MAX: producer-written counts must not wrap a sum */
static u64 kpp_sat_add(u64 a, u64 b)
{
	u64 r;

	return check_add_overflow(a, b, &r) ? U64_MAX : r;
}

/*
 * kpp_pring_lost_moved - what @p's producer-written lost[] counters moved
 * since the last report, by kind into @by_kind (may be NULL) with the
 * counters read into @cur; under prings_lock.  A counter below what was
 * reported moved by nothing: a producer can claim losses of its own, never
 * take back what was counted, nor hide another's.
 *
 * Nor can it claim without bound: a ring's claim is believed up to one
 * record per nanosecond since its creation or last report (@now - the
 * ring's lost_time).  That is more than any producer can count (each loss
 * is a sampled event, then an atomic add on one shared cache line), so an
 * honest claim is never cut; and it bounds what one ring adds to the
 * host-wide pring_lost: a claim of 2^64 - 1 no longer saturates it for
 * every other producer.  A claim beyond the bound is not believed: the
 * excess is dropped (lost_seen moves past it) and counted once, as a reset
 * of the ring (LOST.resets, pring_invalid).
 */
static u64 kpp_pring_lost_moved(struct kpp_pring *p, u64 now, u64 *cur,
				u64 *by_kind)
{
	u64 room, sum = 0, d;
	bool over = false;
	int i;

	lockdep_assert_held(&kpp_dev.prings_lock);
	/* @now may predate a report made since it was read */
	room = now > p->lost_time ? now - p->lost_time : 0;
	for (i = 0; i < KPPROF_LOST_KINDS; i++) {
		cur[i] = READ_ONCE(p->hdr->lost[i]);
		d = cur[i] > p->lost_seen[i] ? cur[i] - p->lost_seen[i] : 0;
		if (d > room - sum) {
			/* believe room - sum of it, drop the rest */
			over = true;
			d = room - sum;
			p->lost_seen[i] = cur[i] - d;
		}
		if (by_kind)
			by_kind[i] = d;
		sum += d;
	}
	if (over) {
		p->resets++;
		atomic64_inc(&kpp_dev.pring_invalid);
	}
	return sum;
}

/*
 * kpp_pring_report_lost - a KPPROF_REC_LOST record if this ring's loss
 * counts moved since the last one; if the consumer's ring refuses it, the
 * counts stay unreported and go in the next one.
 */
static void kpp_pring_report_lost(struct kpp_pring *p, bool *full)
{
	struct kpprof_rec_lost *r = kpp_dev.drain_buf;
	u64 cur[KPPROF_LOST_KINDS], sum, now = ktime_get_ns();
	struct kpp_stamp st;
	int i, drop;

	memset(r, 0, sizeof(*r));
	sum = kpp_pring_lost_moved(p, now, cur, r->by_kind);
	if (!sum && p->invalid == p->invalid_seen && p->resets == p->resets_seen)
		return;

	r->hdr.kind = KPPROF_REC_LOST;
	r->hdr.size = sizeof(*r);
	r->full = sum;
	r->invalid = p->invalid - p->invalid_seen;
	r->resets = p->resets - p->resets_seen;
	kpp_pring_stamp(p, &st);
	if (kpp_ring_offer(&kpp_dev.ring, r, sizeof(*r), &st, &drop)) {
		if (drop == KPPROF_DROP_RING_FULL)
			*full = true;
		return;
	}
	for (i = 0; i < KPPROF_LOST_KINDS; i++)
		p->lost_seen[i] = max(p->lost_seen[i], cur[i]);
	p->lost_time = now;
	p->invalid_seen = p->invalid;
	p->resets_seen = p->resets;
	/* only drains add to it, under prings_lock */
	atomic64_set(&kpp_dev.pring_lost,
		     kpp_sat_add(atomic64_read(&kpp_dev.pring_lost), sum));
}

/**
 * kpp_pring_lost_total - the losses producers reported (pring_lost) plus
 * those they have counted in their rings and no KPPROF_REC_LOST has
 * delivered yet (the consumer's ring was full, or there is no consumer):
 * GET_STATS shows it, so a loss is visible in `kpprof stat` before it can
 * reach a profile.  Producer-written counts, bounded per ring (see
 * kpp_pring_lost_moved()) and saturating: a producer can claim losses of
 * its own, never hide another's.
 */
u64 kpp_pring_lost_total(void)
{
	u64 cur[KPPROF_LOST_KINDS], now = ktime_get_ns();
	struct kpp_pring *p;
	u64 sum;

	mutex_lock(&kpp_dev.prings_lock);
	sum = atomic64_read(&kpp_dev.pring_lost);
	list_for_each_entry(p, &kpp_dev.prings, node)
		sum = kpp_sat_add(sum, kpp_pring_lost_moved(p, now, cur, NULL));
	mutex_unlock(&kpp_dev.prings_lock);
	return sum;
}

/*
 * An entry reserved and not committed for this long was abandoned: its
 * thread left the write for good (a signal handler that jumped out of it)
 * or is held (stopped, starved).  It is skipped, counted as invalid, so the
 * ring does not stay blocked behind it for the life of the process; a
 * writer that was only slow then writes over space already given back and
 * corrupts nothing but its own later records, which the drain refuses.
 */
#define KPP_PRING_STUCK_JIFFIES	(2 * HZ)

/*
 * kpp_pring_stuck - the entry at @p's tail, @word, is not committed: wait,
 * or, once it has stayed so KPP_PRING_STUCK_JIFFIES, give it up.
 *
 * Return: true if the tail moved past it (or the ring was emptied).
 */
static bool kpp_pring_stuck(struct kpp_pring *p, struct kpprof_ring_hdr *e,
			    u32 word, u64 head)
{
	u32 len = word & KPPROF_RING_LEN_MASK;
	u64 total = round_up(sizeof(*e) + len, 8);

	if (p->stuck_pos != p->tail || !p->stuck_since) {
		p->stuck_pos = p->tail;
		p->stuck_since = jiffies ? jiffies : 1;
		return false;
	}
	if (time_before(jiffies, p->stuck_since + KPP_PRING_STUCK_JIFFIES))
		return false;
	p->stuck_since = 0;
	if (!word || len < sizeof(struct kpprof_record) ||
	    len > KPP_RECORD_SIZE_MAX || total > head - p->tail) {
		/* its length never written, or not believable */
		kpp_pring_reset(p, head);
		return true;
	}
	p->invalid++;
	atomic64_inc(&kpp_dev.pring_invalid);
	memset(e, 0, total);
	p->tail += total;
	return true;
}

/*
 * kpp_pring_drain_one - move up to @budget committed records of @p into
 * the consumer's ring, in ring order.  Under prings_lock.
 *
 * Return: entries consumed; *@full is set if the consumer's ring is full.
 */
static int kpp_pring_drain_one(struct kpp_pring *p, int budget, bool *full)
{
	struct kpprof_ring_hdr *e;
	u64 head, total;
	u32 word, len;
	int n = 0;

	lockdep_assert_held(&kpp_dev.prings_lock);
	p->refused = false;
	p->more = false;
	/* pairs with the producers' compare-and-swap of head */
	head = smp_load_acquire(&p->hdr->head);
	if (p->shared || (p->mm && kpp_pring_mm_shared(p->mm))) {
		/* whoever wrote them, they cannot be stamped: counted resets */
		p->shared = true;
		kpp_pring_reset(p, head);
		/* the zeroes before the room, as below */
		smp_store_release(&p->hdr->tail, p->tail);
		return 0;
	}
	if (head - p->tail > p->size || (head & 7)) {
		kpp_pring_reset(p, head);
		goto out;
	}
	while (p->tail != head && n < budget) {
		e = (struct kpprof_ring_hdr *)(p->data + (p->tail & p->mask));
		/* pairs with the producer's store-release of the length */
		word = smp_load_acquire(&e->len);
		if (!word || (word & KPPROF_RING_BUSY)) {
			/* reserved, not committed yet */
			if (kpp_pring_stuck(p, e, word, head))
				continue;
			break;
		}
		len = word & KPPROF_RING_LEN_MASK;
		total = round_up(sizeof(*e) + len, 8);
		if (len < sizeof(struct kpprof_record) ||
		    len > KPP_RECORD_SIZE_MAX || total > head - p->tail) {
			kpp_pring_reset(p, head);
			break;
		}
		if (!(word & KPPROF_RING_DISCARD) &&
		    kpp_pring_take(p, e + 1, len, full)) {
			p->refused = true;
			break;
		}
		memset(e, 0, total);
		p->tail += total;
		if (!(++n % 64))
			cond_resched();
	}
	p->more = n == budget && p->tail != head;
	/* the zeroes before the room: pairs with the producers' load-acquire */
	smp_store_release(&p->hdr->tail, p->tail);
out:
	kpp_pring_report_lost(p, full);
	return n;
}

/*
 * kpp_pring_kick_locked - a kick (KPPROF_IOC_KICK, or a doorbell): drain
 * the rings @mm mapped, a ring's worth of records at most each; under
 * prings_lock.  They are found
 * in kpp_dev.prings_by_mm, never by a walk over every ring: any local user
 * may hold thousands of rings, and a kick holds the mutex every drain
 * needs, so its cost must depend on the kicker's rings only.  A kick is
 * rate-limited by its producer (once per drain it saw).
 *
 * A vfork child, which runs on its parent's mm until it execs, drains its
 * parent's rings, as the parent could; a fork child has an mm (and rings)
 * of its own.
 */
static void kpp_pring_kick_locked(struct mm_struct *mm)
{
	struct rhlist_head *list, *pos;
	struct kpp_pring *p, *n;
	bool full = false;
	LIST_HEAD(own);

	lockdep_assert_held(&kpp_dev.prings_lock);
	/*
	 * RCU for the table's own walk only: the rings cannot go while
	 * prings_lock is held, so they are collected and drained (which
	 * sleeps) after it.
	 */
	rcu_read_lock();
	list = rhltable_lookup(&kpp_dev.prings_by_mm, &mm, kpp_pring_mm_params);
	rhl_for_each_entry_rcu(p, pos, list, mm_node)
		list_add_tail(&p->busy, &own);
	rcu_read_unlock();
	list_for_each_entry_safe(p, n, &own, busy) {
		list_del(&p->busy);
		if (!full)
			kpp_pring_drain_one(p, p->size / KPP_SMALL_RECORD_MAX,
					    &full);
	}
}

/* kpp_pring_kick - KPPROF_IOC_KICK: the caller's own rings */
void kpp_pring_kick(void)
{
	mutex_lock(&kpp_dev.prings_lock);
	kpp_pring_kick_locked(current->mm);
	mutex_unlock(&kpp_dev.prings_lock);
}

/**
 * kpp_pring_doorbell - a producer rang its doorbell (doorbell.c), from a
 * page fault on a vma of @mm, under its mmap lock (a vma without
 * ->map_pages is never faulted under the per-VMA lock alone: 6.12 retries
 * such a fault under the mmap lock).  As KPPROF_IOC_KICK,
 * drain the rings of @mm now, in the caller's context, if prings_lock is
 * free: the producer's one retry then finds room (a burst loses no more
 * than with the syscall).  Never waits for it: a drain may hold it for
 * long, and a trylock adds no lock order under the mmap lock.  If a
 * drain holds it, bring the next drain forward instead (queue the drain
 * work), not before @doorbell_next, the jiffy after the last one began:
 * a producer that faults in a loop while others drain gets the drain
 * work once a jiffy at most.  So a fault loop costs what a KICK loop
 * costs: a drain of the caller's own rings each, in its own context.
 *
 * @mm: the faulting vma's mm (the caller's own: doorbell.c).
 */
void kpp_pring_doorbell(struct mm_struct *mm)
{
	unsigned long now = jiffies, next = READ_ONCE(kpp_dev.doorbell_next);

	atomic64_inc(&kpp_dev.pring_doorbells);
	if (mutex_trylock(&kpp_dev.prings_lock)) {
		kpp_pring_kick_locked(mm);
		mutex_unlock(&kpp_dev.prings_lock);
		return;
	}
	mod_delayed_work(system_wq, &kpp_dev.drain_work,
			 time_after(next, now) ? next - now : 0);
}

/* kpp_pring_mm_unhash - @p gives up its mm (under prings_lock) */
static void kpp_pring_mm_unhash(struct kpp_pring *p)
{
	lockdep_assert_held(&kpp_dev.prings_lock);
	if (!p->mm)
		return;
	/* an entry that is in the table is always found: cannot fail */
	WARN_ON_ONCE(rhltable_remove(&kpp_dev.prings_by_mm, &p->mm_node,
				     kpp_pring_mm_params));
	mmdrop(p->mm);
	p->mm = NULL;
}

/*
 * kpp_pring_settled - nothing more will come out of this orphan: empty,
 * or what is left was reserved and never committed by a producer that is
 * gone, and its losses are reported.
 */
static bool kpp_pring_settled(struct kpp_pring *p)
{
	u64 cur[KPPROF_LOST_KINDS];

	/* nothing of it is delivered any more (kpp_pring_drain_one()) */
	if (p->shared)
		return true;
	return !p->refused && !p->more &&
	       !kpp_pring_lost_moved(p, ktime_get_ns(), cur, NULL) &&
	       p->invalid == p->invalid_seen && p->resets == p->resets_seen;
}

/* kpp_pring_unlink_free - off the list and freed; under prings_lock */
static void kpp_pring_unlink_free(struct kpp_pring *p)
{
	lockdep_assert_held(&kpp_dev.prings_lock);
	kpp_pring_mm_unhash(p);
	list_del(&p->node);
	atomic_dec(&kpp_dev.pring_count);
	atomic64_sub(kpp_pring_bytes(p->size), &kpp_dev.pring_total);
	kpp_pring_uid_charge(p->charge, -(s64)kpp_pring_bytes(p->size));
	kpp_pring_free(p);
}

/**
 * kpp_pring_drain_all - drain every producer ring, round-robin, as far as
 * the consumer's ring has room.  In the consumer's context (poll, the
 * drain ioctl, the cycle and drain work items); sleeps.
 *
 * The first pass visits every ring; the later ones only the rings that
 * gave their whole budget (@more), kept on a local list: one ring with a
 * backlog must not make every pass walk every idle ring (64 passes times
 * some 3,800 rings, under prings_lock).
 */
void kpp_pring_drain_all(void)
{
	struct kpp_pring *p, *n;
	LIST_HEAD(busy);
	bool full = false;
	int pass;

	mutex_lock(&kpp_dev.prings_lock);
	list_for_each_entry_safe(p, n, &kpp_dev.prings, node) {
		kpp_pring_drain_one(p, KPP_PRING_BUDGET, &full);
		if (p->more)
			list_add_tail(&p->busy, &busy);
		else if (p->orphan && kpp_pring_settled(p))
			kpp_pring_unlink_free(p);
		if (full)
			break;
	}
	for (pass = 1; pass < KPP_PRING_PASSES && !full && !list_empty(&busy);
	     pass++) {
		cond_resched();
		list_for_each_entry_safe(p, n, &busy, busy) {
			kpp_pring_drain_one(p, KPP_PRING_BUDGET, &full);
			if (!p->more) {
				list_del(&p->busy);
				if (p->orphan && kpp_pring_settled(p))
					kpp_pring_unlink_free(p);
			}
			if (full)
				break;
		}
	}
	/* what is left waits for the next drain */
	list_for_each_entry_safe(p, n, &busy, busy)
		list_del(&p->busy);
	/* the next drain starts one ring further */
	if (!list_empty(&kpp_dev.prings))
		list_rotate_left(&kpp_dev.prings);
	mutex_unlock(&kpp_dev.prings_lock);
}

/**
 * kpp_pring_release - the file is closed for the last time (every mapping
 * is gone: its process exited, or unmapped it): drain what it committed;
 * what the consumer's ring cannot take now stays, in an orphan ring that
 * later drains deliver and free.
 * @kf: the file's state.
 */
void kpp_pring_release(struct kpp_file *kf)
{
	struct kpp_pring *p = kf->pring;
	bool full = false;

	if (!p)
		return;
	kf->pring = NULL;
	mutex_lock(&kpp_dev.prings_lock);
	kpp_pring_drain_one(p, INT_MAX, &full);
	if (kpp_pring_settled(p)) {
		kpp_pring_unlink_free(p);
	} else {
		/* nobody maps it any more: the mm need not be kept */
		kpp_pring_mm_unhash(p);
		p->orphan = true;
	}
	mutex_unlock(&kpp_dev.prings_lock);
}

static void kpp_pring_drain_fn(struct work_struct *work)
{
	/* a doorbell rung from now on waits for the next jiffy */
	WRITE_ONCE(kpp_dev.doorbell_next, jiffies + 1);
	kpp_pring_drain_all();
	/* kpp_pring_drain_stop() cancels us synchronously */
	if (READ_ONCE(kpp_dev.drain_on))
		schedule_delayed_work(&kpp_dev.drain_work,
				      msecs_to_jiffies(kpp_dev.drain_period_ms));
}

/* kpp_pring_drain_start - a consumer attached (under consumer_lock) */
void kpp_pring_drain_start(void)
{
	if (!kpp_dev.drain_period_ms)
		return;
	WRITE_ONCE(kpp_dev.drain_on, true);
	mod_delayed_work(system_wq, &kpp_dev.drain_work,
			 msecs_to_jiffies(kpp_dev.drain_period_ms));
}

/* kpp_pring_drain_stop - the consumer left (under consumer_lock) */
void kpp_pring_drain_stop(void)
{
	WRITE_ONCE(kpp_dev.drain_on, false);
	cancel_delayed_work_sync(&kpp_dev.drain_work);
}

/**
 * kpp_pring_init - the module's producer ring state
 * @size:      pring_size: a power of two in [KPP_PRING_SIZE_MIN,
 *             KPP_PRING_SIZE_MAX].
 * @total_max: pring_total_max, bytes.
 * @uid_max:   pring_uid_max, bytes (one charge uid's rings).
 * @period_ms: drain_period_ms; 0: no periodic drain.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int kpp_pring_init(u64 size, u64 total_max, u64 uid_max,
		   unsigned int period_ms)
{
	int err;

	if (!is_power_of_2(size) || size < KPP_PRING_SIZE_MIN ||
	    size > KPP_PRING_SIZE_MAX || size < 2 * KPP_RECORD_SIZE_MAX)
		return -EINVAL;
	kpp_dev.drain_buf = kmalloc(KPP_RECORD_SIZE_MAX, GFP_KERNEL);
	if (!kpp_dev.drain_buf)
		return -ENOMEM;
	err = rhltable_init(&kpp_dev.prings_by_mm, &kpp_pring_mm_params);
	if (err) {
		kfree(kpp_dev.drain_buf);
		return err;
	}
	mutex_init(&kpp_dev.prings_lock);
	INIT_LIST_HEAD(&kpp_dev.prings);
	kpp_dev.pring_size = size;
	kpp_dev.pring_total_max = total_max;
	kpp_dev.pring_uid_max = uid_max;
	xa_init(&kpp_dev.pring_uids);
	kpp_dev.drain_period_ms = period_ms;
	INIT_DELAYED_WORK(&kpp_dev.drain_work, kpp_pring_drain_fn);
	return 0;
}

/*
 * kpp_pring_exit - no file is open any more: only orphans are left (no
 * consumer came for their records since their processes exited).
 */
void kpp_pring_exit(void)
{
	struct kpp_pring *p, *n;

	cancel_delayed_work_sync(&kpp_dev.drain_work);
	mutex_lock(&kpp_dev.prings_lock);
	list_for_each_entry_safe(p, n, &kpp_dev.prings, node) {
		WARN_ON_ONCE(!p->orphan);
		kpp_pring_unlink_free(p);
	}
	mutex_unlock(&kpp_dev.prings_lock);
	/* empty: every ring left it above */
	rhltable_destroy(&kpp_dev.prings_by_mm);
	xa_destroy(&kpp_dev.pring_uids);
	kfree(kpp_dev.drain_buf);
}
