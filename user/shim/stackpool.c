// SPDX-License-Identifier: GPL-2.0
/*
 * Private stacks for the body of a sample: the stack capture, the record
 * it is built in and its submission run here, not on the caller's stack,
 * which may be an 8 KiB sigaltstack or a coroutine's 16 KiB stack.  The
 * caller's stack pays the wrapper's frames and 16 bytes of switch.S.
 *
 * A pool of KPP_STACKS stacks of KPP_STACK_SIZE bytes, each with a guard
 * page below it, mmap'ed the first time its slot is used (so a process
 * that never samples maps none, and one sampling from a single thread at
 * a time maps one), or, for the first KPP_STACKS_EARLY slots, when the
 * process's producer ring is mapped (kpp_stackpool_premap()): a program
 * that sandboxes itself after its first sample (a filter the shim cannot
 * see) then meets no mmap of ours unless more than KPP_STACKS_EARLY of its
 * threads sample at the same instant.  RLIMIT_AS and the overcommit mode
 * are read once, at the process's first sample (not at start: syscalls
 * every process would pay).  A slot is claimed with a compare-and-swap on one
 * bitmap word, lowest free bit first; nobody ever waits for a slot: with
 * all of them taken (64 threads sampling at the same instant) the sample
 * is skipped and counted (kpp_stackpool_busy).  A thread holds at most one
 * slot: the per-thread guard keeps a signal handler from sampling while
 * its thread is inside a sample.
 *
 * Above each stack, the DWARF unwinder's rule cache (unwind_cache.c):
 * used only by the slot's holder, so it needs no synchronisation.
 *
 * A signal delivered while a thread runs on a private stack runs its
 * handler there too (unless the handler has its own sigaltstack), so a
 * stack is as large as glibc's default thread stack (8 MiB, from the
 * default RLIMIT_STACK): a handler that fits on a thread's stack fits
 * here.  A sample itself touches about 6 KiB of it; the rest is address
 * space only (MAP_NORESERVE, no transparent huge pages: untouched pages
 * are no memory and no commit charge) until a handler uses it.  Blocking
 * signals around the sample instead would cost two rt_sigprocmask per
 * sample.  Under a finite RLIMIT_AS the address space is the program's
 * budget, and under strict overcommit (vm.overcommit_memory 2, where
 * MAP_NORESERVE is ignored) every mapped byte is commit charge: there the
 * stacks are KPP_STACK_SMALL (a handler needing more crashes; README,
 * "Known limits and hazards").
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include "shim.h"

#define KPP_STACKS	64
#define KPP_STACK_SIZE	(8 << 20)
#define KPP_STACK_SMALL	(64 << 10)
#define KPP_GUARD_SIZE	4096
#define KPP_STACKS_EARLY	4

static _Atomic uint64_t slots_used;		/* bit i: slot i is claimed */
static void *_Atomic stacks[KPP_STACKS];	/* low end of the guard page */
static _Atomic size_t stack_sizes[KPP_STACKS];	/* its stack's size */
/* Each slot's mapping: guard page, stack, the unwind-rule cache above. */
static _Atomic uint64_t busy, map_failed, on_altstack;
static _Atomic size_t stack_size;	/* 0 until the first sample reads RLIMIT_AS */

/* kpp_switch_call - switch.S */
void kpp_switch_call(void *arg, void (*fn)(void *, uintptr_t), void *top,
		     uintptr_t *save_sp) KPP_HIDDEN;

static int claim(void)
{
	uint64_t used = atomic_load_explicit(&slots_used, memory_order_relaxed);

	/* A failed CAS means another thread claimed or released a slot in
	 * the meantime: bounded retries, then skip the sample. */
	for (int tries = 0; tries < 2 * KPP_STACKS; tries++) {
		int i;

		if (used == ~(uint64_t)0)
			return -1;
		i = __builtin_ctzll(~used);
		if (atomic_compare_exchange_weak_explicit(&slots_used, &used,
							  used | (1ULL << i),
							  memory_order_acquire,
							  memory_order_relaxed))
			return i;
	}
	return -1;
}

static void release(int i)
{
	atomic_fetch_and_explicit(&slots_used, ~(1ULL << i), memory_order_release);
}

/*
 * strict_overcommit - vm.overcommit_memory is 2: the kernel ignores
 * MAP_NORESERVE there and charges every private writable byte to the
 * commit limit, so 8 MiB stacks (KPP_STACKS_EARLY of them at the first
 * sample) would be 32 MiB of commit per sampling process, which the
 * program's own allocations then cannot have.  Read once, at the first
 * stack's mapping (open, read, close; async-signal-safe).
 */
static bool strict_overcommit(void)
{
	char c = 0;
	int fd = kpp_open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (kpp_read(fd, &c, 1) != 1)
		c = 0;
	kpp_close(fd);
	return c == '2';
}

/*
 * The slot's stack, mapped on its first use; NULL if mmap failed, or if
 * (@ask) the seccomp probe says a filter the shim never saw is in force
 * (its mmap, mprotect, madvise and the overcommit file's open are what
 * such a filter may forbid; the premap, at the ring's set-up, has just
 * asked).
 */
static void *slot_stack(int i, bool ask)
{
	void *s = atomic_load_explicit(&stacks[i], memory_order_relaxed);

	if (likely(s))
		return s;
	if (ask && kpp_filtered(true))
		return NULL;
	/* Only the claimant of slot i gets here: no race on stacks[i].
	 * Once per slot and process: the mapping, no huge pages (with THP
	 * "always" a handler's first touch would fault in 2 MiB). */
	size_t size = atomic_load_explicit(&stack_size, memory_order_relaxed), map;

	if (!size) {
		struct rlimit as;

		size = KPP_STACK_SIZE;
		if ((!kpp_getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY) ||
		    strict_overcommit())
			size = KPP_STACK_SMALL;
		atomic_store_explicit(&stack_size, size, memory_order_relaxed);
	}
	map = KPP_GUARD_SIZE + size + KPP_UNWIND_CACHE_BYTES;
	s = kpp_mmap(NULL, map, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	if (kpp_mprotect(s, KPP_GUARD_SIZE, PROT_NONE)) {
		kpp_munmap(s, map);
		return NULL;
	}
	kpp_madvise(s, map, MADV_NOHUGEPAGE);	/* fails only without THP */
	atomic_store_explicit(&stack_sizes[i], size, memory_order_relaxed);
	atomic_store_explicit(&stacks[i], s, memory_order_release);
	return s;
}

/* Is the thread running on slot @i's stack (a handler's frames)? */
static bool on_slot(int i)
{
	char *s = atomic_load_explicit(&stacks[i], memory_order_acquire);
	char here;

	return s && &here >= s &&
	       &here < s + KPP_GUARD_SIZE +
			atomic_load_explicit(&stack_sizes[i], memory_order_relaxed);
}

/*
 * A thread that left a sample for good (init.c's abandon) with its slot:
 * glibc runs abandon() before it leaves the handler's frames, which may be
 * on this very stack, so the slot is freed once the thread is off it: at
 * its next sample, or at its exit (pthread_exit from the handler) by the
 * key's destructor, which runs on the thread's own stack.
 */
static pthread_key_t orphan_key KPP_START_DATA;	/* set at start */
static bool orphan_key_ok KPP_START_DATA;

static void orphan_exit(void *slot)
{
	release((int)(uintptr_t)slot - 1);
}

void kpp_stackpool_init(void)
{
	orphan_key_ok = !pthread_key_create(&orphan_key, orphan_exit);
}

/*
 * kpp_stackpool_premap - map the first KPP_STACKS_EARLY slots' stacks now
 * (pring.c, when the ring is mapped).  A slot another thread holds is
 * left to it (it has its stack).  Async-signal-safe: mmap, mprotect,
 * madvise.
 */
void kpp_stackpool_premap(void)
{
	for (int i = 0; i < KPP_STACKS_EARLY; i++) {
		uint64_t used = atomic_load(&slots_used);

		if (atomic_load_explicit(&stacks[i], memory_order_acquire) ||
		    (used & (1ULL << i)) ||
		    !atomic_compare_exchange_strong(&slots_used, &used, used | (1ULL << i)))
			continue;
		slot_stack(i, false);
		release(i);
	}
}

void kpp_stackpool_abandon(struct kpp_thread *t)
{
	int i = (int)t->stack_slot - 1;

	t->stack_slot = 0;
	if (i < 0)
		return;
	if (!on_slot(i)) {
		release(i);
		return;
	}
	t->orphan_slot = (uint32_t)i + 1;
	/* A key made at start is a store into the thread's own array. */
	if (orphan_key_ok)
		pthread_setspecific(orphan_key, (void *)(uintptr_t)t->orphan_slot);
}

void kpp_stackpool_orphan(struct kpp_thread *t)
{
	int i = (int)t->orphan_slot - 1;

	if (i >= 0 && !on_slot(i)) {
		t->orphan_slot = 0;
		if (orphan_key_ok)
			pthread_setspecific(orphan_key, NULL);
		release(i);
	}
}

bool kpp_on_private_stack(struct kpp_thread *t, void (*fn)(void *, uintptr_t),
			  void *arg)
{
	int i;
	char *s;

	if (unlikely(t->orphan_slot))
		kpp_stackpool_orphan(t);
	/*
	 * In a handler on the thread's sigaltstack: off it, the kernel would
	 * deliver the next SA_ONSTACK signal at the altstack's top, over this
	 * handler's frames (it tells "on the altstack" by the stack pointer).
	 * The sample is skipped, counted.  One set with a raw system call is
	 * asked of the kernel, off the thread's own stack (altstack.c).
	 */
	if ((unlikely(t->alt_hi) && kpp_on_altstack(t)) ||
	    kpp_altstack_must_stay(t, (uintptr_t)__builtin_frame_address(0))) {
		atomic_fetch_add_explicit(&on_altstack, 1, memory_order_relaxed);
		return false;
	}
	i = claim();

	if (i < 0) {
		atomic_fetch_add_explicit(&busy, 1, memory_order_relaxed);
		return false;
	}
	s = slot_stack(i, true);
	if (!s) {
		release(i);
		atomic_fetch_add_explicit(&map_failed, 1, memory_order_relaxed);
		return false;
	}
	t->stack_slot = (uint32_t)i + 1;
	kpp_switch_call(arg, fn, s + KPP_GUARD_SIZE +
			atomic_load_explicit(&stack_sizes[i], memory_order_relaxed),
			&t->switch_sp);
	t->stack_slot = 0;
	release(i);
	return true;
}

/*
 * Is this thread running on the private stack of its sample (a signal
 * handler that interrupted the sample's body: sigwrap.c)?  Then
 * t->switch_sp is where the program's stack was left.
 * Async-signal-safe.
 */
bool kpp_stackpool_in_body(const struct kpp_thread *t)
{
	uint32_t slot = t->stack_slot;

	return slot && on_slot((int)slot - 1);
}

void *kpp_stackpool_cache(struct kpp_thread *t)
{
	char *s;

	if (!t->stack_slot)
		return NULL;
	s = atomic_load_explicit(&stacks[t->stack_slot - 1], memory_order_relaxed);
	return s + KPP_GUARD_SIZE +
	       atomic_load_explicit(&stack_sizes[t->stack_slot - 1], memory_order_relaxed);
}

void kpp_stackpool_fork_child(struct kpp_thread *t)
{
	/* Only the forking thread exists in the child: a fork from a signal
	 * handler that interrupted this thread's own sample keeps its slot. */
	uint64_t keep = t->stack_slot ? 1ULL << (t->stack_slot - 1) : 0;

	/* Its abandoned slot too, while it still runs on it. */
	if (t->orphan_slot && on_slot((int)t->orphan_slot - 1))
		keep |= 1ULL << (t->orphan_slot - 1);
	else if (t->orphan_slot) {
		t->orphan_slot = 0;
		if (orphan_key_ok)
			pthread_setspecific(orphan_key, NULL);
	}
	atomic_store(&slots_used, keep);
}

uint64_t kpp_stackpool_skipped(uint64_t *altstack)
{
	*altstack = atomic_load_explicit(&on_altstack, memory_order_relaxed);
	return atomic_load_explicit(&busy, memory_order_relaxed) +
	       atomic_load_explicit(&map_failed, memory_order_relaxed);
}
