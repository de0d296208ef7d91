/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkpprof.so internals: what the shim's files share.
 *
 * Constraints every file here lives by:
 *  - The sampling path never calls the allocator it wraps for its own
 *    data: record buffers live on a private stack (stackpool.c) or in
 *    static storage, tables come from mmap(2).  Code it calls into
 *    (dl_iterate_phdr, pthread_getattr_np) may allocate: such calls run
 *    with the per-thread guard set, so the nested malloc/free/lock calls
 *    pass straight through.
 *  - It never blocks on a lock another thread may hold while that thread
 *    waits for us: the sampled-address table and lock.c's wait table are
 *    lock-free, and the few spinlocks (mapping table) are never held
 *    across a call out of the shim.
 *  - Before init (or with no usable /dev/kpprof) every call passes straight
 *    through to the next definition (dlsym RTLD_NEXT).
 */
#ifndef KPP_SHIM_H
#define KPP_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <link.h>
#include <pthread.h>
#include <linux/types.h>
#include "kpprof.h"
#include "sys.h"

#define KPP_EXPORT	__attribute__((visibility("default")))
#define KPP_HIDDEN	__attribute__((visibility("hidden")))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define KPP_TLS		__thread __attribute__((tls_model("initial-exec")))
/*
 * KPP_START_DATA - a variable that every process touches at start or exit,
 * even one that passes through: kept in .data, on the page the loader has
 * written already (it zeroes the rest of that page), instead of .bss, where
 * each page touched costs a page fault, two when it is read first (the
 * zero page, then a copy).
 */
#define KPP_START_DATA	__attribute__((section(".data.kpp_start")))
/*
 * KPP_PAGE_BSS - a page-aligned zeroed array, placed after .bss (x86-64's
 * .lbss output section) so that .bss itself needs no page alignment and
 * starts on .data's last page: the small variables at its start that
 * every process reads (crtstuff's, the destructors') then cost no fault.
 */
#define KPP_PAGE_BSS	__attribute__((section(".lbss.kpp"), aligned(4096)))

/* --------------------------------------------------------- real functions */

/*
 * The next definitions of what we wrap, found with dlsym(RTLD_NEXT).  Each
 * pointer starts at a stub that resolves them all, then forwards, so the
 * hot paths never test for NULL.
 */
struct kpp_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	int (*mutex_lock)(void *);
	int (*mutex_trylock)(void *);
	int (*mutex_timedlock)(void *, const void *);
	int (*mutex_unlock)(void *);
	int (*rwlock_rdlock)(void *);
	int (*rwlock_wrlock)(void *);
	int (*rwlock_tryrdlock)(void *);
	int (*rwlock_trywrlock)(void *);
};
extern struct kpp_real kpp_real KPP_HIDDEN;

/* kpp_resolve - fill kpp_real; safe to call many times and re-entrantly. */
void kpp_resolve(void) KPP_HIDDEN;
/*
 * kpp_resolve_start - the constructor's: kpp_real and the @nr tables of
 * optional next definitions (see kpp_next_resolve), in one walk.
 */
struct kpp_next_table;
void kpp_resolve_start(const struct kpp_next_table *const *optional, int nr) KPP_HIDDEN;
/* Early allocations made while dlsym runs come from a static arena. */
void *kpp_arena_alloc(size_t size, size_t align) KPP_HIDDEN;
bool kpp_in_arena(const void *p) KPP_HIDDEN;
size_t kpp_arena_size_of(const void *p) KPP_HIDDEN;
bool kpp_resolving(void) KPP_HIDDEN;

/*
 * Wrappers of functions that may not exist (jemalloc's, libstdc++'s, the
 * newer lock functions) call the next definition through *@slot, filled
 * at start by kpp_next_resolve() (real.c), from the constructor: a
 * definition, or KPP_NEXT_ABSENT.  Never looked up at a call (the loader's
 * lock), except before our constructor ran (kpp_next_lookup), and
 * dlclose's (maps.c: dlclose takes that lock itself).  @also_in,
 * if not NULL, is a library to look in when the global scope has none
 * (loaded RTLD_LOCAL by a dlopen).  NULL: absent.
 */
#define KPP_NEXT_ABSENT	((uintptr_t)1 << 63)
void *kpp_next_lookup(void *_Atomic *slot, const char *name,
		      const char *also_in) KPP_HIDDEN;
/* A table of optional next definitions, filled by kpp_next_resolve(). */
struct kpp_next_table {
	void *_Atomic *slots;
	const char *const *names;
	int n;			/* at most 64 */
	const char *also_in;	/* see above */
	const char *key;	/* NULL, or a name every object with any of them defines */
};
#define KPP_NEXT_TABLES	8
void kpp_next_resolve(const struct kpp_next_table *const *tables, int nr) KPP_HIDDEN;
extern const struct kpp_next_table kpp_lock_next, kpp_alloc_ext_next, kpp_cxx_next,
	kpp_sigwrap_next, kpp_seccomp_next, kpp_getattr_next, kpp_exec_next KPP_HIDDEN;
static inline void *kpp_next_cached(void *_Atomic *slot, const char *name,
				    const char *also_in)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);

	/* > 0: a definition (user addresses never have bit 63 set) */
	if (likely((intptr_t)p > 0))
		return p;
	if (likely(p))
		return NULL;	/* absent */
	return kpp_next_lookup(slot, name, also_in);
}

/* --------------------------------------------------------- per thread */

/*
 * struct kpp_thread - everything a thread keeps, in initial-exec TLS (all
 * zero at thread start, no constructor needed).
 * @countdown: bytes to allocate before the next heap sample; 0 sends the
 *             next allocation to the slow path (first call, rate 1).
 * @poll_only: the countdown ends at a config poll point, not a sample.
 * @guard:     non-zero while the thread is inside the shim's slow paths.
 * @cfg_seq:   config page seq the cached rates below were read at, + 1
 *             (0 = never read).  lock.c refreshes it too, so it says
 *             nothing about the heap countdown: see @heap_rate.
 * @heap_rate: the mean the countdown in force was drawn with; 0 = none
 *             drawn yet (a new thread).  A countdown drawn with another
 *             rate than the one in force is only a poll point (heap.c).
 * @emitting:  this thread is inside kpp_emit() and announced there in
 *             its shard's emitters (seccomp.c waits for the others, not
 *             for itself).  Not inside a sampling path (@sampling):
 *             that one is announced already.
 * @sampling:  inside kpp_sample_begin() .. kpp_sample_end(), counted in
 *             its shard's samplers.
 * @last_record: this thread is emitting the process's COMM (EXIT), the one
 *             record kpp.exiting lets through.
 * @probed:    the seccomp probe answered "no filter" for this thread just
 *             before the record it is emitting (exit, exec): that
 *             record's SUBMIT does not ask again (kpp_filtered()).
 */
/* a record's write, a handler's inside it, and two more levels of those */
#define KPP_RING_NEST	4

#define KPP_NOT_ALT	4
#define KPP_SIG_MARKS	4

struct kpp_thread {
	uint64_t countdown;
	uint32_t poll_only;
	uint32_t guard;
	uint32_t cfg_seq;
	uint32_t max_depth;
	uint64_t mem_rate;		/* 0: heap sampling off */
	uint64_t block_rate;		/* 0: off */
	uint32_t mutex_fraction;	/* 0: off */
	uint32_t rng_seeded;
	uint64_t rng;
	uintptr_t stack_lo, stack_hi;	/* this thread's stack, for the FP walker */
	uint32_t stack_known;
	uint32_t in_getattr;		/* inside pthread_getattr_np (getattr.c) */
	int saved_errno;		/* errno on entry to a sampling path */
	uint64_t heap_rate;
	uint32_t emitting;
	uint32_t flushing;		/* inside emit.c's flush_held() */
	/*
	 * Inside a lock wrapper's sample: the program may be inside its
	 * allocator (jemalloc's arenas are pthread mutexes, held here), so
	 * the shim calls no allocator function (no held block freed, no
	 * pthread_getattr_np, which allocates).
	 */
	uint32_t in_lock_sample;
	uint32_t stack_slot;		/* private stack in use + 1, 0: none */
	uintptr_t switch_sp;		/* the program's stack below what switch.S saved */
	uintptr_t alt_lo, alt_hi;	/* sigaltstack() armed without SS_AUTODISARM */
	/* 64 KiB regions off the thread's stack the kernel said are not the
	 * altstack (altstack.c), region number + 1 */
	uintptr_t not_alt[KPP_NOT_ALT];
	uint32_t not_alt_next;
	uint32_t alt_gen;		/* sigaltstack() calls (altstack.c) */
	/* the frames of the wrapped handlers running, outermost first (sigwrap.c) */
	uintptr_t sig_marks[KPP_SIG_MARKS];
	uint32_t sig_depth;
	uint32_t orphan_slot;		/* private stack of an abandoned sample + 1 */
	uint32_t growing;		/* sampled_set.c's grow locks held (HOLDS_*) */
	int map_buf;			/* maps.c record buffer held + 1, 0: none */
	uint32_t last_record;
	uint32_t sampling;
	uint32_t probed;
	/*
	 * The producer ring entries this thread reserved and has not
	 * committed, in nesting order (a handler's record inside another's):
	 * ring_depth of them, the first KPP_RING_NEST of which are in
	 * ring_open[] (pring.c ring_write; given up by kpp_pring_abandon).
	 */
	uint32_t ring_depth;
	struct {
		void *entry;
		uint32_t len;
	} ring_open[KPP_RING_NEST];
};
extern KPP_TLS struct kpp_thread kpp_thread KPP_HIDDEN;

/* --------------------------------------------------------- config */

/*
 * Process-wide state set up by kpp_init().  Read on every sample and
 * record by every thread, so the fields that are read-mostly come first,
 * and the counters, written by whoever counts, start a cache line of
 * their own: a count must not take the line the other threads' next
 * check reads.  The counts every sample or record updates are not here
 * at all but in kpp_shards[].
 */
struct kpp_global {
	int fd;				/* /dev/kpprof, -1: pass-through */
	int test_sink;			/* KPPROF_TEST_CONFIG: write(2) to fd */
	int test_ring;			/* ... KPPROF_TEST_RING=1: emulated ring (pring.c) */
	const volatile struct kpprof_config_page *page;
	int unwind_libunwind;		/* KPPROF_UNWIND: 1 DWARF (libgcc), 0 fp */
	int debug;			/* KPPROF_DEBUG=1 */
	int64_t env_mem_rate;		/* -1: not set in the environment */
	int64_t env_block_rate;
	int64_t env_mutex_fraction;
	uintptr_t self_lo, self_hi;	/* the shim's own text, skipped in stacks */
	uintptr_t main_tp;		/* the main thread's thread pointer (altstack.c) */
	_Atomic int ready;		/* 1 once init finished: sampling allowed */
	_Atomic uint32_t unloads;	/* dlclose calls: unwind rules go stale */
	_Atomic int stopped;		/* KPP_STOP_*: nothing more is emitted */
	_Atomic int exiting;		/* COMM (EXIT) is next: nothing else goes out */
	_Atomic int seccomp_checked;	/* the inherited-filter check ran */
	_Atomic int no_heap;		/* our malloc is not the program's (alloc_check.c) */
	int pid;			/* this process (init.c: new-process checks) */
	const volatile int *_Atomic alive; /* 1 on a MADV_WIPEONFORK page */
	int fork_threaded;		/* fork_prepare: other threads had run */
	/* records written outside kpp_emit (seccomp.c's NOTE); kpp_writes_ok() */
	_Atomic uint64_t writes_ok __attribute__((aligned(64)));
	_Atomic uint64_t writes_dropped, writes_failed;
	_Atomic uint64_t table_full;
	_Atomic uint64_t unsent;	/* events not sent since stopped */
	_Atomic uint64_t frees_held;	/* FREEs retried after a full ring */
	_Atomic uint64_t frees_lost;	/* ... that could not be held */
	_Atomic uint64_t seccomp_unwaited; /* filters installed beside a sample */
	_Atomic uint64_t test_given_up;	/* test mode: ring entries skipped after 2 s */
	_Atomic uint64_t abandoned;	/* samples a signal handler jumped out of */
	_Atomic uint64_t sig_unwrapped;	/* handlers installed as given (sigwrap.c) */
	_Atomic uint64_t maps_unsent;	/* objects whose MMAP could not be sent */
	_Atomic uint64_t pring_fallback; /* no producer ring: SUBMIT per record */
};

/*
 * kpp_shards - the counts every sample and record updates, one set per
 * cache line; a thread always uses the same set (kpp_shard(), from the
 * address of its TLS), so threads sampling on other CPUs do not take the
 * line from each other at every record.  Readers (seccomp.c, exit, exec)
 * sum them: a waiter sets its flag, then reads every shard (all seq_cst),
 * so a thread that announced itself in its shard after the waiter read
 * that shard also sees the flag, as with one counter.
 */
#define KPP_SHARDS	16
struct kpp_shard {
	_Atomic int samplers;		/* threads inside a sampling path */
	_Atomic int emitters;		/* threads inside kpp_emit() */
	_Atomic uint64_t writes_ok;	/* records kpp_emit() got in */
} __attribute__((aligned(64)));
extern struct kpp_shard kpp_shards[KPP_SHARDS] KPP_HIDDEN;

/* Why the shim stopped emitting (kpp.stopped). */
#define KPP_STOP_FD		1	/* our fd number is no longer /dev/kpprof */
#define KPP_STOP_SECCOMP	2	/* a seccomp filter is (about to be) in force */
extern struct kpp_global kpp KPP_HIDDEN;

static inline struct kpp_shard *kpp_shard(void)
{
	uintptr_t a = (uintptr_t)&kpp_thread >> 12;

	return &kpp_shards[(a * 0x9E3779B97F4A7C15ULL) >> (64 - 4)];
}
_Static_assert(KPP_SHARDS == 1 << 4, "kpp_shard takes 4 bits");
/* Sums over kpp_shards (plus kpp.writes_ok for the records counted there). */
int kpp_samplers(void) KPP_HIDDEN;
int kpp_emitters(void) KPP_HIDDEN;
uint64_t kpp_writes_ok(void) KPP_HIDDEN;
/* kpp_samplers_enter - announce a sampling path (seq_cst; pair: kpp_samplers_leave). */
static inline void kpp_samplers_enter(void)
{
	atomic_fetch_add(&kpp_shard()->samplers, 1);
}

/*
 * kpp_config_refresh - re-read the config page into this thread's cache if
 * its seq changed (or never read).  Cheap when nothing changed: one load.
 */
void kpp_config_refresh(struct kpp_thread *t) KPP_HIDDEN;
/* Parse the KPPROF_* environment; -1 when a variable is absent or bad. */
int64_t kpp_env_u64(const char *name, uint64_t max) KPP_HIDDEN;
const char *kpp_getenv(const char *name) KPP_HIDDEN;

/* --------------------------------------------------------- sampling gate */

/*
 * kpp_sample_begin - enter a sampling path: returns false (do not sample)
 * when the shim is not ready, a fork is being prepared, or the thread is
 * already inside the shim.  On true, pair with kpp_sample_end() in the
 * same frame: @cb, in the caller's frame, is a cleanup buffer glibc runs
 * if a signal handler leaves the path for good (siglongjmp or longjmp to
 * an older frame, pthread_exit, cancellation): init.c's abandon() gives
 * back the guard, the counts, the private stack and the locks it held.
 */
/*
 * glibc's cleanup buffers of the old style, still exported (GLIBC_2.34):
 * a longjmp over the frame that pushed one, or a thread's exit or
 * cancellation, runs its routine.
 */
extern void _pthread_cleanup_push(struct _pthread_cleanup_buffer *buffer,
				  void (*routine)(void *), void *arg);
extern void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *buffer, int execute);
/*
 * struct kpp_sample_frame - a sampling path's cleanup buffer, on its
 * caller's stack (never a private one: glibc runs the buffers a longjmp
 * passes by comparing addresses on the thread's stack), and what the
 * cleanup needs: how many ring entries the thread was writing before it
 * (an emit the path interrupted), which the path's own writes are above.
 */
struct kpp_sample_frame {
	struct _pthread_cleanup_buffer cb;
	struct kpp_thread *t;
	uint32_t outer_depth;	/* kpp_thread.ring_depth at its start */
};
bool kpp_sample_begin(struct kpp_thread *t, struct kpp_sample_frame *sf) KPP_HIDDEN;
void kpp_sample_end(struct kpp_thread *t, struct kpp_sample_frame *sf) KPP_HIDDEN;

/* --------------------------------------------------------- random */

/* kpp_rand64 - per-thread xorshift64* generator, seeded on first use. */
uint64_t kpp_rand64(struct kpp_thread *t) KPP_HIDDEN;
/* kpp_rand_exp - exponentially distributed value with the given mean. */
uint64_t kpp_rand_exp(struct kpp_thread *t, uint64_t mean) KPP_HIDDEN;
/* kpp_rand_chance - true with probability num / den (den > 0). */
bool kpp_rand_chance(struct kpp_thread *t, uint64_t num, uint64_t den) KPP_HIDDEN;

/* --------------------------------------------------------- sampled set */

/*
 * The addresses of sampled, not yet freed allocations.  A filter of
 * counters, grown with the number of live samples, answers "certainly not
 * sampled" with two loads and no lock; the tables behind it are lock-free
 * (see sampled_set.c for why that is safe).
 */
int kpp_set_init(void) KPP_HIDDEN;
/*
 * The filter level in force: its address (64-byte aligned) + the index
 * shift in the low 6 bits.  Until the first sample it is a level of 2
 * counters in .data, on a page every process has written already: an
 * unsampled free then reads no page of its own (sampled_set.c).
 */
extern _Atomic(uint8_t *) kpp_set_cur KPP_HIDDEN;
#define KPP_LEVEL_TAG	((uintptr_t)63)
/*
 * kpp_set_index - @p's counter in the level encoded as @v (its address,
 * low 6 bits: s = 64 - log2(counters)).  Consecutive 16-byte granules get
 * consecutive counters, so the frees of a neighbourhood of the heap read
 * a few cache lines, and two live blocks never share a counter unless
 * they lie a whole level's span (2^bits granules) apart; each span gets a
 * pseudo-random offset, so spans that repeat one layout (per-thread
 * arenas, 64 MiB aligned) do not line their blocks up either.
 */
static inline size_t kpp_set_index(const void *p, uintptr_t v)
{
	unsigned int s = (unsigned int)(v & KPP_LEVEL_TAG);
	uintptr_t a = (uintptr_t)p;

	return (size_t)(((a >> 4) + (a >> (68 - s)) * 0x9E3779B97F4A7C15ULL) &
			(~(uint64_t)0 >> s));
}
static inline bool kpp_set_maybe(const void *p)
{
	uintptr_t v = (uintptr_t)atomic_load_explicit(&kpp_set_cur, memory_order_acquire);
	const _Atomic uint8_t *c = (const _Atomic uint8_t *)(v & ~KPP_LEVEL_TAG);

	return atomic_load_explicit(&c[kpp_set_index(p, v)], memory_order_relaxed) != 0;
}
bool kpp_set_insert(const void *p, uint64_t size) KPP_HIDDEN;
bool kpp_set_remove(const void *p, uint64_t *size) KPP_HIDDEN;
/* kpp_set_mark - make the filter send frees of @p to the slow path forever. */
void kpp_set_mark(const void *p) KPP_HIDDEN;
/* kpp_set_reset - forget every entry (the child after fork). */
void kpp_set_reset(void) KPP_HIDDEN;
/* kpp_set_abandon - release the grow lock an abandoned sample held. */
void kpp_set_abandon(struct kpp_thread *t) KPP_HIDDEN;
struct kpp_set_stats {
	uint64_t live, peak;		/* sampled blocks not yet freed */
	unsigned int filter_bits;	/* log2 of the filter's counters */
	unsigned int tables;		/* tables in use */
	uint64_t filter_grows;
	uint64_t lost;			/* samples not taken: every table full */
};
void kpp_set_stats(struct kpp_set_stats *st) KPP_HIDDEN;

/* --------------------------------------------------------- stacks */

/*
 * kpp_stack - capture the calling thread's user stack, leaf first, the
 * shim's own frames left out; at most @max frames; returns the count.
 * Runs on a private stack (kpp_on_private_stack); @caller_fp is the frame
 * record switch.S left on the caller's stack, where fp walks start.
 */
/*
 * struct kpp_objs - the objects a DWARF walk met (unwind_cache.c), each
 * from one _dl_find_object, so that neither the walk nor kpp_maps_send
 * looks the same object up again frame after frame.  @complete: every
 * recorded pc's object is here with @used set (kpp_maps_send_objs may
 * send these instead of looking each pc up).
 */
/*
 * kpp_build_id_note - the descriptor (@len bytes) of the first GNU build-id
 * note of a loaded object, its program headers @phdr, @phnum, at @bias,
 * in a PT_NOTE wholly within [@lo, @hi]; NULL if none (build_id.c).
 */
const void *kpp_build_id_note(const ElfW(Phdr) *phdr, unsigned int phnum, uintptr_t bias,
			      uintptr_t lo, uintptr_t hi, size_t *len) KPP_HIDDEN;

#define KPP_WALK_OBJS	8
struct kpp_obj {
	uintptr_t lo, hi;		/* dlfo_map_start, dlfo_map_end */
	const void *eh;			/* dlfo_eh_frame */
	struct link_map *map;		/* dlfo_link_map */
	uint32_t tag;			/* unwind_cache.c: this load of it, in this cache */
	bool used;			/* a recorded pc lies in it */
};
struct kpp_objs {
	unsigned int n;			/* entries */
	bool complete;
	struct kpp_obj o[KPP_WALK_OBJS];
};
/* The object that holds @pc (obj.c); @d (NULL: not wanted): _dl_find_object's answer. */
struct dl_find_object;
bool kpp_obj_at(uintptr_t pc, struct kpp_obj *o, struct dl_find_object *d) KPP_HIDDEN;
/* @objs (NULL: not wanted) is filled by the DWARF walk, else incomplete. */
unsigned int kpp_stack(struct kpp_thread *t, uintptr_t caller_fp, __u64 *pcs,
		       unsigned int max, struct kpp_objs *objs) KPP_HIDDEN;
unsigned int kpp_stack_fp(struct kpp_thread *t, __u64 *pcs, unsigned int max) KPP_HIDDEN;
unsigned int kpp_stack_dwarf(__u64 *pcs, unsigned int max) KPP_HIDDEN;
/* The child after fork: only this thread's private stack is in use. */
void kpp_unwind_fork_child(bool parent_threaded) KPP_HIDDEN;

/*
 * kpp_on_private_stack - run @fn(@arg, caller_fp) on one of the pool's
 * private stacks (stackpool.c); false, without calling it, if no stack
 * was free (counted: kpp_stackpool_skipped).
 */
bool kpp_on_private_stack(struct kpp_thread *t, void (*fn)(void *, uintptr_t),
			  void *arg) KPP_HIDDEN;
void kpp_stackpool_fork_child(struct kpp_thread *t) KPP_HIDDEN;
/* An abandoned sample's stack: freed now, or once the thread is off it. */
void kpp_stackpool_abandon(struct kpp_thread *t) KPP_HIDDEN;
void kpp_stackpool_orphan(struct kpp_thread *t) KPP_HIDDEN;
void kpp_stackpool_init(void) KPP_HIDDEN;
/* map the first few private stacks now (when the ring is mapped) */
void kpp_stackpool_premap(void) KPP_HIDDEN;
/* The unwind-rule cache of the thread's private stack, NULL outside one. */
#define KPP_UNWIND_CACHE_BYTES	((64 << 10) + 4096)
void *kpp_stackpool_cache(struct kpp_thread *t) KPP_HIDDEN;
bool kpp_stackpool_in_body(const struct kpp_thread *t) KPP_HIDDEN;
/* Is this thread on the sigaltstack it set with sigaltstack() (sigwrap.c)? */
static inline bool kpp_on_altstack(const struct kpp_thread *t)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);

	return sp - t->alt_lo < t->alt_hi - t->alt_lo;
}
/*
 * kpp_stack_cached - the DWARF stack from the frame record at @caller_fp
 * with the rules cached in @cache (unwind_cache.c); -1: a frame it cannot
 * take, use kpp_stack_dwarf.
 */
int kpp_stack_cached(void *cache, uintptr_t caller_fp, __u64 *pcs, unsigned int max,
		     struct kpp_objs *objs) KPP_HIDDEN;
/*
 * kpp_altstack_ask - true if the stack pointer @sp, off the altstack
 * sigaltstack() set, is on one the kernel knows (a raw call set it), or
 * that cannot be told: skip the sample.  A system call, but for a region
 * the kernel already said is not the altstack (altstack.c).
 */
bool kpp_altstack_ask(struct kpp_thread *t, uintptr_t sp) KPP_HIDDEN;
/* kpp_altstack_own - is @sp on the stack its thread was started with (altstack.c)? */
extern void *__libc_stack_end;
#define KPP_MAIN_STACK	((uintptr_t)128 << 20)	/* mmap leaves it free */
#define KPP_THREAD_STACK	((uintptr_t)8 << 20)	/* glibc's default */
/* kpp_thread_pointer - %fs:0, glibc's thread descriptor (the top of a thread's stack) */
static inline uintptr_t kpp_thread_pointer(void)
{
	uintptr_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}
static inline bool kpp_altstack_own(uintptr_t sp)
{
	uintptr_t tp = kpp_thread_pointer();

	if (tp == kpp.main_tp)
		return (uintptr_t)__libc_stack_end - sp < KPP_MAIN_STACK;
	return tp - sp < KPP_THREAD_STACK;
}
/*
 * kpp_altstack_must_stay - true: the sample at @sp must not leave its
 * stack (skip it).  Nearly every sample is on its thread's own stack,
 * outside a handler: a few compares.
 */
static inline bool kpp_altstack_must_stay(struct kpp_thread *t, uintptr_t sp)
{
	if (likely(!t->sig_depth) && kpp_altstack_own(sp))
		return false;
	return kpp_altstack_ask(t, sp);
}
void kpp_altstack_init(void) KPP_HIDDEN;
#ifndef SS_AUTODISARM
#define SS_AUTODISARM	(1U << 31)	/* linux/signal.h, since 4.7 */
#endif
/*
 * kpp_altstack_remember - @ss is this thread's altstack now (sigaltstack()
 * set it, or the kernel said so); disarmed, or SS_AUTODISARM (the kernel
 * disarms it while a handler runs there): none to stay on.
 */
void kpp_altstack_remember(struct kpp_thread *t, const stack_t *ss) KPP_HIDDEN;
uint64_t kpp_altstack_questions(void) KPP_HIDDEN;
/* samples skipped: no private stack (returned), on a sigaltstack (*@altstack) */
uint64_t kpp_stackpool_skipped(uint64_t *altstack) KPP_HIDDEN;

/* --------------------------------------------------------- records */

/*
 * kpp_emit - submit one record (KPPROF_IOC_SUBMIT; write(2) to the sink
 * under KPPROF_TEST_CONFIG); never retries ENOBUFS; keeps errno.  Once
 * stopped (kpp.stopped) it only counts the record in kpp.unsent.
 */
int kpp_emit(const void *rec, size_t size) KPP_HIDDEN;	/* 0 or an errno */
/* kpp_submit - the ring write, or the syscall, behind kpp_emit: 0 or -1 with errno. */
int kpp_submit(const void *rec, size_t size) KPP_HIDDEN;
/*
 * pring.c, the producer ring.  kpp_pring_submit: 0, ENOBUFS (ring full,
 * counted in the ring), or -1: no ring (yet, or ever): use SUBMIT.
 */
int kpp_pring_submit(const void *rec, size_t size) KPP_HIDDEN;
/* close the start-up descriptor once the ring is mapped and no other
 * thread is inside kpp_emit() (called by kpp_emit()) */
void kpp_pring_close_fd_when_alone(void) KPP_HIDDEN;
bool kpp_pring_mapped(void) KPP_HIDDEN;
/* wait (bounded, sleeping) for room in the ring; only where syscalls are safe */
bool kpp_pring_wait_room(const void *rec, size_t len, uint64_t max_ns) KPP_HIDDEN;
/* a new child: the parent's ring is not here; maps the child's own if the
 * parent had one (async-signal-safe); true if the child has a ring */
bool kpp_pring_fork_child(void) KPP_HIDDEN;
/* a new child of a stopped process: no ring, and none made (no syscall) */
void kpp_pring_fork_child_stopped(void) KPP_HIDDEN;
/* test mode: drain the emulated ring into the sink now (exec, exit); the
 * @last time (seccomp.c, before a filter): no sink opened after it */
void kpp_pring_flush(bool last) KPP_HIDDEN;
/*
 * kpp_pring_abandon - a kpp_emit() or sampling path left for good: give up
 * the entries the thread reserved since, those above @outer_depth in
 * @t->ring_open[] (the ones below are the writes it interrupted), and make
 * @outer_depth the current depth.
 */
void kpp_pring_abandon(struct kpp_thread *t, uint32_t outer_depth) KPP_HIDDEN;
/* test mode: open the sink again (init.c; async-signal-safe): -1 or a descriptor */
int kpp_test_sink_open(void) KPP_HIDDEN;
void kpp_emit_comm(__u32 reason) KPP_HIDDEN;
/* kpp_emit_alloc - false if no ALLOC went in (no stack, ring full, stopped). */
bool kpp_emit_alloc(struct kpp_thread *t, const void *addr, uint64_t bytes,
		    uint64_t rate) KPP_HIDDEN;
/*
 * kpp_free_record - the FREE of a sampled block about to be freed.  true:
 * free it now; false: the ring was full and the shim keeps the block until
 * its FREE goes in (emit.c, "held frees").
 */
bool kpp_free_record(const void *addr, uint64_t bytes) KPP_HIDDEN;
/*
 * kpp_free_record_now - the same for a block that stays the caller's (a
 * resize in place): never held; a FREE the full ring refused is counted lost.
 */
bool kpp_free_record_now(const void *addr, uint64_t bytes) KPP_HIDDEN;
/*
 * kpp_free_submit - the FREE alone: 0 or an errno (ENOBUFS: ring full).
 * kpp_free_hold - after an ENOBUFS, keep the block (malloc's family only:
 * the held block is given back with the real free()) until its FREE goes
 * in; false (counted lost) when the held list is full.
 */
int kpp_free_submit(const void *addr, uint64_t bytes) KPP_HIDDEN;
bool kpp_free_hold(const void *addr, uint64_t bytes) KPP_HIDDEN;
void kpp_held_reset(void) KPP_HIDDEN;
void kpp_emit_contention(struct kpp_thread *t, __u16 kind, const void *lock,
			 uint64_t delay_ns, uint64_t rate) KPP_HIDDEN;

/* --------------------------------------------------------- mappings */

/* kpp_maps_send - MMAP records for the objects of @pcs not sent yet
 * (maps.c: _dl_find_object, no lock); kpp_maps_reset - send them again. */
void kpp_maps_send(const __u64 *pcs, unsigned int n) KPP_HIDDEN;
/* kpp_maps_send_objs - the same from a walk's complete object list. */
void kpp_maps_send_objs(const struct kpp_objs *objs) KPP_HIDDEN;
void kpp_maps_reset(void) KPP_HIDDEN;
/* kpp_maps_abandon - give back the record buffer an abandoned sample held. */
void kpp_maps_abandon(struct kpp_thread *t) KPP_HIDDEN;
/* kpp_maps_find_self - the shim's own text, whose frames stacks skip. */
void kpp_maps_find_self(void) KPP_HIDDEN;

/* --------------------------------------------------------- heap & locks */

void kpp_heap_sampled(struct kpp_thread *t, void *p, size_t size) KPP_HIDDEN;
/*
 * For entry points outside heap.c (cxx_new.c, alloc_ext.c):
 * kpp_heap_tick - the countdown expired for @n bytes (n >= countdown):
 * re-arm, return the rate to sample with or 0 (heap.c's heap_tick).
 * kpp_heap_forget - a block is being freed: write its FREE record if it
 * was sampled; true if the caller must not free it (a start-up arena
 * block).  Never held: only the caller knows the block's release function.
 */
uint64_t kpp_heap_tick(struct kpp_thread *t, size_t n) KPP_HIDDEN;
bool kpp_heap_forget(void *p) KPP_HIDDEN;
/* kpp_check_interposed - say so if our malloc is not the one the program
 * calls (alloc_check.c); after init, once. */
void kpp_check_interposed(void) KPP_HIDDEN;
void kpp_locks_reset(void) KPP_HIDDEN;

/* --------------------------------------------------------- seccomp */

/*
 * kpp_seccomp_inherited - true if this process already runs under a
 * seccomp filter (read once from /proc/self/status, with the open/read/
 * close the dynamic loader itself needed); stops the shim if so.
 */
bool kpp_seccomp_inherited(void) KPP_HIDDEN;

/* --------------------------------------------------------- processes */

/* kpp_samplers_leave - the end of what kpp_samplers_enter() counted (init.c). */
void kpp_samplers_leave(void) KPP_HIDDEN;
/* the real pthread_getattr_np, without marking the thread as inside it (getattr.c) */
int kpp_real_getattr(pthread_t th, pthread_attr_t *attr) KPP_HIDDEN;
/*
 * kpp_probe_map - map the module's seccomp probe from the start-up
 * descriptor @fd (one mmap; a module without it: EINVAL, no probe);
 * kpp_probe_arm - start-up is over: from now on kpp_filtered() asks.
 */
void kpp_probe_map(int fd, long pagesz) KPP_HIDDEN;
void kpp_probe_arm(void) KPP_HIDDEN;
/*
 * kpp_filtered - before a syscall the shim makes on its own after
 * start-up: has this thread a seccomp filter the shim has not seen (a
 * raw `syscall` instruction)?  One read of a probe page, a page fault,
 * no syscall (seccomp.c).  True: the shim is stopped (KPP_STOP_SECCOMP,
 * as for a filter it saw) and the caller makes no syscall; with @note
 * and a mapped ring, a KPPROF_NOTE_SECCOMP goes into it (the caller must
 * be a process that knows it is one: kpp_process_check() done).  False
 * without a probe (an older module, test mode) or before start-up ends.
 * Never on the per-sample path of a process with a ring.
 */
bool kpp_filtered(bool note) KPP_HIDDEN;
/*
 * kpp_unfiltered - the other way round, for a syscall the caller can do
 * without (a yield: wait.c): true only if the probe answers that this
 * thread has no filter now.  False when it cannot know (no probe: an
 * older module, test mode; before start-up ends) and when the shim is
 * stopped; a filter it finds stops the shim as kpp_filtered(true) does.
 */
bool kpp_unfiltered(void) KPP_HIDDEN;
/*
 * kpp_filtered_record - before a record's own syscall (a SUBMIT without a
 * ring, or the ring's set-up): the seccomp probe, unless this thread has
 * just asked (a sampling path at its start; exit and exec: @probed).
 */
static inline bool kpp_filtered_record(void)
{
	return !kpp_thread.sampling && !kpp_thread.probed && kpp_filtered(false);
}

/*
 * kpp_process_check - a child that no atfork handler saw (_Fork, clone)
 * is noticed here and starts as a forked child would (init.c).  One load.
 */
void kpp_process_slow(void) KPP_HIDDEN;
static inline void kpp_process_check(void)
{
	const volatile int *a = atomic_load_explicit(&kpp.alive, memory_order_relaxed);

	if (unlikely(!a || !*a))
		kpp_process_slow();
}
/* kpp_foreign_process - this memory is another process's (a vfork child,
 * a clone(CLONE_VM) child): write nothing the owner keeps.  A syscall. */
bool kpp_foreign_process(void) KPP_HIDDEN;

/* --------------------------------------------------------- opt-out */

/* kpp_opted_out - KPPROF_DISABLE=1 or the collector itself (optout.c). */
bool kpp_opted_out(void) KPP_HIDDEN;
/* kpp_excluded - this process is listed in /etc/kpprof/exclude. */
bool kpp_excluded(void) KPP_HIDDEN;
/* kpp_dynsym_defines - the object exports a definition of @name that other
 * objects' references bind to: 1 yes, 0 no, -1 cannot tell (no hash
 * table).  Read from its tables, nothing called (dynsym.c). */
int kpp_dynsym_defines(const struct dl_phdr_info *info, const char *name) KPP_HIDDEN;
/* One object's dynamic symbol tables, read in place (kpp_dynsym_open). */
struct kpp_dynsym {
	uintptr_t base;
	const uint32_t *gnu, *sysv;	/* DT_GNU_HASH, DT_HASH */
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym;	/* NULL: no versions */
	bool audit;			/* names an auditor (DT_AUDIT, DT_DEPAUDIT) */
	const char *soname;		/* DT_SONAME, or NULL */
	const ElfW(Dyn) *dyn;		/* its dynamic section (DT_NEEDED, DT_SONAME) */
	/*
	 * Set by the caller (kpp_dynsym_open leaves it false): the loader
	 * binds a weak definition as a global one, i.e. LD_DYNAMIC_WEAK is
	 * not set (nor stripped by secure mode, which the loader still obeys).
	 */
	bool weak_binds;
};
/* 0, or -1: no tables to read (then ask the loader). */
int kpp_dynsym_open(const struct dl_phdr_info *info, struct kpp_dynsym *d) KPP_HIDDEN;
uint32_t kpp_dynsym_hash(const char *name) KPP_HIDDEN;
/*
 * kpp_dynsym_find - what dlsym() without a version finds for @name (its
 * kpp_dynsym_hash @hash) in this object: 1 and *@addr, 0 none, -1 ask
 * dlsym (an IFUNC, whose resolver picks the function; a weak definition,
 * which LD_DYNAMIC_WEAK passes over, unless @d->weak_binds; two visible
 * versions).
 */
int kpp_dynsym_find(const struct kpp_dynsym *d, const char *name, uint32_t hash,
		    void **addr) KPP_HIDDEN;

/* --------------------------------------------------------- misc */

uint64_t kpp_now_ns(void) KPP_HIDDEN;
/*
 * kpp_wait_more - one step of a bounded wait for another thread (wait.c),
 * which makes no syscall a seccomp filter the shim never saw may forbid:
 *
 *	struct kpp_wait w = { 0 };
 *
 *	while (!done())
 *		if (!kpp_wait_more(&w, max_ns))
 *			give up, counted;
 *
 * False once about @max_ns have passed, or at once in a stopped shim.
 */
struct kpp_wait {
	uint64_t steps;		/* kpp_wait_more() calls so far */
	uint64_t t0;		/* the clock at the first look */
	bool may_yield;		/* the probe's last answer: no filter */
	uint32_t still;		/* looks in a row that found the clock where it was */
	uint64_t last;		/* the clock at the last look */
};
bool kpp_wait_more(struct kpp_wait *w, uint64_t max_ns) KPP_HIDDEN;
void kpp_debug_print(const char *fmt, ...) KPP_HIDDEN __attribute__((format(printf, 1, 2)));
/* kpp_debug - kpp_debug_print, its arguments evaluated only under KPPROF_DEBUG=1. */
#define kpp_debug(...)						\
	do {							\
		if (unlikely(kpp.debug))			\
			kpp_debug_print(__VA_ARGS__);		\
	} while (0)

#endif /* KPP_SHIM_H */
