/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpprof module internals: the one state object and the functions the
 * files of kmod/ offer each other.  User space sees only ioctl/kpprof.h.
 */
#ifndef _KPP_H
#define _KPP_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/list.h>
#include <linux/rhashtable-types.h>
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

/* Bounds of the pring_size module parameter (a producer ring's data). */
#define KPP_PRING_SIZE_MIN	SZ_16K
#define KPP_PRING_SIZE_MAX	SZ_16M
#define KPP_PRING_SIZE_DEFAULT	SZ_64K

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
 * struct kpp_pring - one file's producer ring (pring.c)
 * @node:     on kpp_dev.prings, under kpp_dev.prings_lock.
 * @busy:     on a drain's local list, under kpp_dev.prings_lock:
 *            kpp_pring_drain_all()'s rings with a backlog, or
 *            kpp_pring_kick()'s rings of the kicker.
 * @mm_node:  on kpp_dev.prings_by_mm under its @mm, while it has one
 *            (not an orphan); changed under kpp_dev.prings_lock.
 * @pages:    the distinct pages: header page, then data.
 * @nr_pages: how many @pages holds.
 * @area:     vmap of the header page and the data pages twice.
 * @hdr:      the header page, shared with the producer: hostile.
 * @data:     the first data mapping.
 * @size:     data bytes (a power of two); @mask is @size - 1.
 * @tail:     the kernel's own drain position; the header's copy is only
 *            ever written from it.
 * @lost_seen: @hdr->lost as last reported in a KPPROF_REC_LOST record
 *            (or as believed: see kpp_pring_lost_moved()).
 * @lost_time: ktime_get_ns() of the ring's creation or last report.
 * @invalid, @resets: what the drain counted against this ring, and
 *            @invalid_seen, @resets_seen what was last reported.
 * @mm:       the mm that mapped it (mmgrab()ed): no other may map it.
 * @pid:      the mapper's thread group, for a COMM record's ppid and comm.
 * @comm:     the mapper's comm at mmap time, for when it is gone.
 * @tgid, @uid, @charge: identity stamped on its records (see kpp_stamp).
 * @task_size: the mapper's end of user space (validation of pcs).
 * @refused:  the last drain stopped at a record the consumer's ring
 *            refused (full, or the uid over its share).
 * @more:     the last drain stopped for its budget, committed records
 *            may remain.
 * @orphan:   its file is closed: no producer is left, the ring stays
 *            (on the list, counted in pring_total) only until drained.
 * @shared:   @mm came to be shared with another process: its records can
 *            no longer be told to be the mapper's, none is delivered.
 */
struct kpp_pring {
	struct list_head node;
	struct list_head busy;
	struct rhlist_head mm_node;
	struct page **pages;
	int nr_pages;
	void *area;
	struct kpprof_pring_hdr *hdr;
	u8 *data;
	u64 size;
	u64 mask;
	u64 tail;
	u64 lost_seen[KPPROF_LOST_KINDS];
	u64 lost_time;
	u64 invalid, invalid_seen;
	u64 resets, resets_seen;
	u64 stuck_pos;
	unsigned long stuck_since;
	struct mm_struct *mm;
	struct pid *pid;
	char comm[TASK_COMM_LEN];
	u32 tgid;
	u32 uid;
	u32 charge;
	unsigned long task_size;
	bool refused;
	bool more;
	bool orphan;
	bool shared;
};

/**
 * struct kpp_file - what the module keeps per open file (private_data)
 * @producer: the opener may write records (decided at open()).
 * @lock:     serialises the allocation of @pring.
 * @pring:    the file's producer ring, once mapped; freed at release.
 */
struct kpp_file {
	bool producer;
	struct mutex lock;	/* see @lock above */
	struct kpp_pring *pring;
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
 * @prings_lock: a mutex, never a spinlock: the drain copies and validates
 *             records while it holds it.  Guards @prings, @drain_buf and
 *             every ring's drain state.
 * @prings:    the producer rings (struct kpp_pring.node).
 * @prings_by_mm: the rings that have an mm, by mm (struct
 *             kpp_pring.mm_node): a kick finds its own rings without a
 *             walk over everyone's.  Changed under @prings_lock.
 * @pring_size, @pring_total_max, @pring_uid_max: module parameters.
 * @pring_total: bytes all producer rings take now (pages included).
 * @pring_uids: bytes of producer rings by charge uid (kpp_charge_uid()),
 *             as xarray value entries, under @prings_lock.
 * @pring_count ... @pring_doorbells: kpprof_stats' pring_* counters.
 * @doorbell_next: jiffies before which a doorbell does not run the drain
 *             (kpp_pring_doorbell()); set by @drain_work.
 * @drain_buf: the bounce buffer the drain copies each record into
 *             (KPP_RECORD_SIZE_MAX bytes), under @prings_lock.
 * @drain_period_ms: module parameter; @drain_work runs that often while
 *             @drain_on (a consumer is attached; under @consumer_lock).
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
	struct mutex prings_lock;	/* guards @prings and the drain */
	struct list_head prings;
	struct rhltable prings_by_mm;
	u64 pring_size;
	u64 pring_total_max;
	u64 pring_uid_max;
	atomic64_t pring_total;
	struct xarray pring_uids;
	atomic_t pring_count;
	atomic64_t pring_drained;
	atomic64_t pring_lost;
	atomic64_t pring_invalid;
	atomic64_t pring_refused;
	atomic64_t pring_doorbells;
	unsigned long doorbell_next;
	void *drain_buf;
	unsigned int drain_period_ms;
	bool drain_on;
	struct delayed_work drain_work;
};

extern struct kpp_dev kpp_dev;

/* ring.c */
int kpp_ring_init(struct kpp_ring *rb, u64 size, u64 watermark, u64 share_max);
void kpp_ring_free(struct kpp_ring *rb);
int kpp_ring_output(struct kpp_ring *rb, const void *rec, u32 len,
		    const struct kpp_stamp *stamp);
int kpp_ring_offer(struct kpp_ring *rb, const void *rec, u32 len,
		   const struct kpp_stamp *stamp, int *drop);
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
int kpp_record_validate(const void *buf, size_t len, u32 max_depth,
			unsigned long task_size);
u32 kpp_record_flag(u16 kind);
void kpp_record_fill_comm(void *rec);

/* pring.c */
int kpp_pring_mmap(struct kpp_file *kf, struct file *file,
		   struct vm_area_struct *vma);
void kpp_pring_release(struct kpp_file *kf);
void kpp_pring_drain_all(void);
void kpp_pring_kick(void);
void kpp_pring_doorbell(struct mm_struct *mm);

/* doorbell.c */
int kpp_doorbell_mmap(struct kpp_file *kf, struct file *file,
		      struct vm_area_struct *vma);
u64 kpp_doorbell_map_len(void);

/* probe.c */
int kpp_probe_mmap(struct vm_area_struct *vma);
u64 kpp_probe_map_len(void);
int kpp_probe_init(void);
void kpp_probe_exit(void);
u64 kpp_pring_lost_total(void);
int kpp_pring_init(u64 size, u64 total_max, u64 uid_max,
		   unsigned int period_ms);
void kpp_pring_exit(void);
void kpp_pring_drain_start(void);
void kpp_pring_drain_stop(void);

/* format.c */
int kpp_format_build(char **text, size_t *len);

/* dev.c */
u32 kpp_charge_uid(const struct cred *cred);
int kpp_dev_register(void);
void kpp_dev_unregister(void);

#endif /* _KPP_H */
