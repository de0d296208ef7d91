// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling configuration: validated as a whole before anything
 * changes, published on a page every process may map read-only (so a
 * shim sees a new rate without a syscall), and the timer that advances
 * the cycle.
 *
 * The page is a seqcount: @seq is odd while the kernel rewrites the
 * configuration and grows by 2 per change.  Only config changes, made
 * under @lock, touch @seq and @config; the cycle field is informational
 * and written on its own, as a running maximum, so that two cycle
 * advances that publish out of order never move it backwards.
 *
 * The cycle timer runs only while a consumer is attached (nothing reads
 * cycles otherwise), so an unwatched machine is never woken for it.  It is
 * not deferrable: a consumer that asked for a cycle every period gets it
 * on time.  (A deferrable timer was tried: on the idle test VM a 100 ms
 * period gave a median gap of 659 ms, and the collector's interval
 * profiles would come late the same way.)
 */
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/jiffies.h>
#include <linux/bits.h>
#include "kpp.h"
#include "compat.h"

#define KPP_RATE_MAX	BIT_ULL(40)

static const struct kpprof_config kpp_config_default = {
	.mem_rate = KPPROF_MEM_RATE_DEFAULT,
	.block_rate = 0,
	.mutex_fraction = 0,
	.max_stack_depth = KPPROF_STACK_DEPTH_DEFAULT,
	.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_DEFAULT,
	.flags = KPPROF_CFG_ALL,
};

static void kpp_config_cycle_fn(struct work_struct *work)
{
	struct kpp_config_state *cs = container_of(to_delayed_work(work),
						   struct kpp_config_state,
						   cycle_work);
	u64 cycle;
	u32 period;

	/* what producers committed before the cycle ends belongs to it */
	kpp_pring_drain_all();
	cycle = kpp_ring_advance_cycle(&kpp_dev.ring, 0,
				       !!READ_ONCE(kpp_dev.consumer));

	kpp_config_publish_cycle(cs, cycle);
	kpp_ring_reclaim_all(&kpp_dev.ring);
	kpp_ring_wake_if_pending(&kpp_dev.ring);

	/* what stops the timer cancels us synchronously, under cs->lock */
	period = READ_ONCE(cs->cur.cycle_period_ms);
	if (period && READ_ONCE(cs->timer_on))
		schedule_delayed_work(&cs->cycle_work, msecs_to_jiffies(period));
}

static void kpp_config_write_page(struct kpp_config_state *cs)
{
	struct kpprof_config_page *page = cs->page;

	lockdep_assert_held(&cs->lock);
	WRITE_ONCE(page->seq, page->seq + 1);
	/* pairs with the reader's load of @seq after it copies the config */
	smp_wmb();
	page->config = cs->cur;
	/* pairs with the reader's smp_load_acquire() of @seq */
	smp_wmb();
	WRITE_ONCE(page->seq, page->seq + 1);
}

/* kpp_config_init - the default configuration, its page, and the timer */
int kpp_config_init(struct kpp_config_state *cs)
{
	cs->page = (struct kpprof_config_page *)get_zeroed_page(GFP_KERNEL);
	if (!cs->page)
		return -ENOMEM;

	mutex_init(&cs->lock);
	WRITE_ONCE(cs->timer_on, false);
	INIT_DELAYED_WORK(&cs->cycle_work, kpp_config_cycle_fn);
	cs->page->abi_version = KPPROF_ABI_VERSION;
	cs->page->size = sizeof(*cs->page);

	mutex_lock(&cs->lock);
	cs->cur = kpp_config_default;
	kpp_config_write_page(cs);
	mutex_unlock(&cs->lock);
	return 0;
}

/* kpp_config_timer_start - a consumer attached: run the cycle timer */
void kpp_config_timer_start(struct kpp_config_state *cs)
{
	mutex_lock(&cs->lock);
	WRITE_ONCE(cs->timer_on, true);
	if (cs->cur.cycle_period_ms)
		mod_delayed_work(system_wq, &cs->cycle_work,
				 msecs_to_jiffies(cs->cur.cycle_period_ms));
	mutex_unlock(&cs->lock);
}

/*
 * kpp_config_timer_stop - the consumer left: stop the cycle timer.  Under
 * @lock, so that a consumer attaching meanwhile cannot have its timer
 * cancelled by us (the work never takes @lock).
 */
void kpp_config_timer_stop(struct kpp_config_state *cs)
{
	mutex_lock(&cs->lock);
	/* read by the work without the lock */
	WRITE_ONCE(cs->timer_on, false);
	cancel_delayed_work_sync(&cs->cycle_work);
	mutex_unlock(&cs->lock);
}

/* kpp_config_free - stop the timer and free the page; nothing maps it any more */
void kpp_config_free(struct kpp_config_state *cs)
{
	if (!cs->page)
		return;
	cancel_delayed_work_sync(&cs->cycle_work);
	free_page((unsigned long)cs->page);
	cs->page = NULL;
}

void kpp_config_get(struct kpp_config_state *cs, struct kpprof_config *out)
{
	mutex_lock(&cs->lock);
	*out = cs->cur;
	mutex_unlock(&cs->lock);
}

static int kpp_config_validate(const struct kpprof_config *c)
{
	if (c->mem_rate > KPP_RATE_MAX || c->block_rate > KPP_RATE_MAX)
		return -EINVAL;
	if (c->max_stack_depth < 1 ||
	    c->max_stack_depth > KPPROF_STACK_DEPTH_MAX)
		return -EINVAL;
	if (c->cycle_period_ms &&
	    (c->cycle_period_ms < KPPROF_CYCLE_PERIOD_MS_MIN ||
	     c->cycle_period_ms > KPPROF_CYCLE_PERIOD_MS_MAX))
		return -EINVAL;
	if (c->flags & ~KPPROF_CFG_ALL)
		return -EINVAL;
	if (c->reserved[0] || c->reserved[1])
		return -EINVAL;
	return 0;
}

/**
 * kpp_config_set - replace the configuration
 * @cs: the configuration state.
 * @in: the new configuration, every field checked first.
 *
 * Return: 0, or -EINVAL with nothing changed.
 */
int kpp_config_set(struct kpp_config_state *cs, const struct kpprof_config *in)
{
	u32 old_period;
	int err;

	err = kpp_config_validate(in);
	if (err)
		return err;

	mutex_lock(&cs->lock);
	old_period = cs->cur.cycle_period_ms;
	WRITE_ONCE(cs->cur.mem_rate, in->mem_rate);
	WRITE_ONCE(cs->cur.block_rate, in->block_rate);
	WRITE_ONCE(cs->cur.mutex_fraction, in->mutex_fraction);
	WRITE_ONCE(cs->cur.max_stack_depth, in->max_stack_depth);
	WRITE_ONCE(cs->cur.cycle_period_ms, in->cycle_period_ms);
	WRITE_ONCE(cs->cur.flags, in->flags);
	kpp_config_write_page(cs);

	if (in->cycle_period_ms != old_period && cs->timer_on) {
		if (in->cycle_period_ms)
			mod_delayed_work(system_wq, &cs->cycle_work,
					 msecs_to_jiffies(in->cycle_period_ms));
		else
			cancel_delayed_work_sync(&cs->cycle_work);
	}
	mutex_unlock(&cs->lock);
	return 0;
}

/* The write path reads these without the lock: one field, one load. */
u32 kpp_config_max_depth(struct kpp_config_state *cs)
{
	return READ_ONCE(cs->cur.max_stack_depth);
}

u32 kpp_config_flags(struct kpp_config_state *cs)
{
	return READ_ONCE(cs->cur.flags);
}

/*
 * kpp_config_publish_cycle - show @cycle on the config page, unless a
 * later cycle is already there: the ioctl and the timer may advance the
 * cycle at once and publish in either order.
 */
void kpp_config_publish_cycle(struct kpp_config_state *cs, u64 cycle)
{
	u64 old = READ_ONCE(cs->page->cycle);

	while (old < cycle && !try_cmpxchg(&cs->page->cycle, &old, cycle))
		;
}

/**
 * kpp_config_mmap - map the config page read-only, for anyone
 * @cs:  the configuration state.
 * @vma: exactly one page, never writable nor executable.
 *
 * The page is ordinary RAM with a struct page, so it is inserted as one
 * (vm_insert_page(), refcounted), not as a raw pfn.  Unlike the ring, a
 * fork()ed child keeps it: a producer's child reads its config too.
 */
int kpp_config_mmap(struct kpp_config_state *cs, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	kpp_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	/* no mprotect() to writable or executable later */
	kpp_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	return vm_insert_page(vma, vma->vm_start, virt_to_page(cs->page));
}
