/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpprof module internals: the one state object and the functions the
 * files of kmod/ offer each other.  User space sees only ioctl/kpprof.h.
 */
#ifndef _KPP_H
#define _KPP_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <kpprof.h>

/* Bounds of the ring_size module parameter. */
#define KPP_RING_SIZE_MIN	SZ_64K
#define KPP_RING_SIZE_MAX	SZ_1G
#define KPP_RING_SIZE_DEFAULT	SZ_4M

/* Largest record a producer may write: a mapping with the longest path. */
#define KPP_RECORD_SIZE_MAX	(sizeof(struct kpprof_rec_mmap) + KPPROF_PATH_MAX)
/* Largest record without a stack (a comm or a note record): 64 bytes. */
#define KPP_SMALL_RECORD_MAX	64
/* Largest record with a stack: the size of a kpp_dev.rec_cache buffer. */
#define KPP_STACK_RECORD_SIZE_MAX					\
	(sizeof(struct kpprof_rec_contention) + KPPROF_STACK_DEPTH_MAX * sizeof(__u64))

/* Uids whose ring occupancy is tracked at once; see ring.c. */
#define KPP_SHARE_SLOTS		64

/**
 * struct kpp_share - ring bytes one uid holds
 * @uid:   the writers' real uid (initial user namespace).
 * @bytes: ring bytes its entries take that the kernel has not reclaimed
 *         yet; 0 means the slot is free.
 */
struct kpp_share {
	u32 uid;
	u64 bytes;
};

/**
 * struct kpp_ring - the multi-producer, single-consumer record ring
 *
 * Four groups, each on cache lines of its own: what every producer reads
 * and nobody writes after init; the lock with what it guards; the drop
 * counters, which producers that never take the lock increment; the
 * consumer's waitqueue.
 *
 * @size:        bytes of data, a power of two; @mask is @size - 1.
 * @watermark:   unread bytes that wake a waiting consumer.
 * @share_max:   ring bytes one uid may hold (producer_share).
 * @pages:       the distinct pages: consumer, producer, then data.
 * @nr_pages:    how many @pages holds.
 * @area:        vmap of consumer page, producer page, data pages twice.
 * @cons_pos:    on the consumer page: written by the consumer only, so
 *               never trusted beyond the consumer's own data.
 * @prod_pos:    on the producer page: read-only to user space.
 * @data:        start of the first data mapping.
 * @lock:        serialises reservations; guards @prod, @reclaim, @cycle,
 *               @shares, @overflow and the accepted counters.  Taken by
 *               tasks only, never in interrupt context, so interrupts stay
 *               on; a raw spinlock because it is taken inside the
 *               preemption-off window (see ring.c).  One hold does a
 *               bounded, small amount of work.
 * @prod:        the producer position, the kernel's own copy; the page
 *               user space sees (@prod_pos) is only ever written from it.
 * @reclaim:     the kernel's consumer position: every entry before it has
 *               been read (cons_pos passed it) and released from its
 *               uid's share.  Space is free up to @reclaim + @size.
 * @cycle:       the current cycle; read under @lock when a record is
 *               reserved, so ring order is cycle order.
 * @accepted:    records reserved (under @lock).
 * @accepted_bytes: ring bytes they took (under @lock).
 * @nr_shares:   slots of @shares in use.
 * @overflow:    the bucket of the uids that found every slot taken
 *               (@overflow.uid is unused).
 * @shares:      per-uid occupancy, KPP_SHARE_SLOTS slots.
 * @dropped:     valid records not taken, by KPPROF_DROP_*.
 * @rejected:    malformed or unprivileged writes.
 * @wakeups:     consumer wake-ups issued.
 * @waitq:       the consumer sleeps here in poll().
 * @wake_on_commit: the consumer slept on a BUSY entry at cons_pos: the next
 *               commit wakes it, below the watermark too.
 */
struct kpp_ring {
	u64 size ____cacheline_aligned_in_smp;
	u64 mask;
	u64 watermark;
	u64 share_max;
	struct page **pages;
	int nr_pages;
	void *area;
	u64 *cons_pos;
	u64 *prod_pos;
	u8 *data;

	raw_spinlock_t lock ____cacheline_aligned_in_smp;
	u64 prod;
	u64 reclaim;
	u64 cycle;
	u64 accepted;
	u64 accepted_bytes;
	unsigned int nr_shares;
	struct kpp_share overflow;
	struct kpp_share shares[KPP_SHARE_SLOTS];

	atomic64_t dropped[KPPROF_DROP_REASONS] ____cacheline_aligned_in_smp;
	atomic64_t rejected;
	atomic64_t wakeups;

	wait_queue_head_t waitq ____cacheline_aligned_in_smp;
	bool wake_on_commit;
};

/*
 * The writer's identity, stamped into a record the ring accepts, and
 * @charge, the uid whose bucket its ring bytes go to (see ring.c; kept in
 * the entry's header, so that the release charges the same bucket).  The
 * time and the CPU are taken by the ring once the record has room, with
 * preemption off: a dropped record costs no clock read, and @cpu is the
 * CPU the record entered the ring on.
 */
struct kpp_stamp {
	u32 tgid;
	u32 tid;
	u32 uid;
	u32 charge;
};

/**
 * struct kpp_config_state - the sampling configuration
 * @lock:    serialises changes; guards @cur and the config page.
 * @cur:     the configuration in force.
 * @page:    the page producers map read-only.
 * @timer_on: a consumer is attached: @cycle_work runs (under @lock).
 * @cycle_work: advances the cycle every @cur.cycle_period_ms while
 *          @timer_on.
 */
struct kpp_config_state {
	struct mutex lock;	/* see @lock above */
	/* read by every write: not on the line of @lock's wait list */
	struct kpprof_config cur ____cacheline_aligned_in_smp;
	struct kpprof_config_page *page ____cacheline_aligned_in_smp;
	bool timer_on;
	struct delayed_work cycle_work;
};

/**
 * struct kpp_dev - the module's one instance
 * @ring:      the ring.
 * @config:    the configuration.
 * @consumer_lock: guards @consumer.
 * @consumer:  the file attached as consumer, or NULL.
 * @format:    the record format text, NUL-terminated; @format_len without
 *             the NUL.
 * @producer_gid: group allowed to write records, or -1 for anyone.
 * @rec_cache: buffers for records up to KPP_STACK_RECORD_SIZE_MAX, the
 *             common case: a write copies its record there, not onto
 *             its stack.
 */
struct kpp_dev {
	struct kpp_ring ring;
	struct kpp_config_state config;
	struct mutex consumer_lock;	/* guards @consumer */
	struct file *consumer;
	char *format;
	size_t format_len;
	int producer_gid;
	struct kmem_cache *rec_cache;
};

extern struct kpp_dev kpp_dev;

/* ring.c */
int kpp_ring_init(struct kpp_ring *rb, u64 size, u64 watermark, u64 share_max);
void kpp_ring_free(struct kpp_ring *rb);
int kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
		    const struct kpp_stamp *stamp);
u64 kpp_ring_advance_cycle(struct kpp_ring *rb, u32 reason, bool emit);
bool kpp_ring_readable(struct kpp_ring *rb);
bool kpp_ring_poll(struct kpp_ring *rb);
void kpp_ring_attach(struct kpp_ring *rb);
void kpp_ring_reclaim_all(struct kpp_ring *rb);
void kpp_ring_wake_if_pending(struct kpp_ring *rb);
int kpp_ring_mmap_consumer(struct kpp_ring *rb, struct vm_area_struct *vma);
int kpp_ring_mmap_producer(struct kpp_ring *rb, struct vm_area_struct *vma);
void kpp_ring_stats(struct kpp_ring *rb, struct kpprof_stats *st);
#ifdef DEBUG
bool kpp_ring_selftest(void);
#else
static inline bool kpp_ring_selftest(void)
{
	return true;
}
#endif

/* config.c */
int kpp_config_init(struct kpp_config_state *cs);
void kpp_config_free(struct kpp_config_state *cs);
void kpp_config_get(struct kpp_config_state *cs, struct kpprof_config *out);
int kpp_config_set(struct kpp_config_state *cs, const struct kpprof_config *in);
u32 kpp_config_max_depth(struct kpp_config_state *cs);
u32 kpp_config_flags(struct kpp_config_state *cs);
void kpp_config_publish_cycle(struct kpp_config_state *cs, u64 cycle);
void kpp_config_timer_start(struct kpp_config_state *cs);
void kpp_config_timer_stop(struct kpp_config_state *cs);
int kpp_config_mmap(struct kpp_config_state *cs, struct vm_area_struct *vma);

/* record.c */
int kpp_record_validate(const void *buf, size_t len, u32 max_depth);
u32 kpp_record_flag(u16 kind);
void kpp_record_fill_comm(void *rec);

/* format.c */
int kpp_format_build(char **text, size_t *len);

/* dev.c */
int kpp_dev_register(void);
void kpp_dev_unregister(void);

#endif /* _KPP_H */
