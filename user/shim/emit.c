// SPDX-License-Identifier: GPL-2.0
/*
 * Building and submitting records: into the process's producer ring, no
 * syscall (pring.c), once it has one (from its first sample on); before
 * that (COMM records) and when no ring can be had, one syscall per record,
 * ioctl(fd, KPPROF_IOC_SUBMIT, rec), laid out as ioctl/kpprof.h says,
 * kernel-owned header fields zero, size a multiple of 8.  A full ring
 * (ENOBUFS) is counted and forgotten: never retried, never waited for.
 * errno is preserved, since the program may look at it after a malloc
 * that succeeded.
 *
 * Why an ioctl and not write(2): a program that closes descriptors it does
 * not know (daemons do) or dup2()s onto ours may put one of its own files
 * at our number.  An ioctl number means nothing to any other file (ENOTTY;
 * EBADF if the number is closed), so a record can never land in the
 * program's file, and no fstat is needed first.  On either error the shim
 * stops for good (KPP_STOP_FD): it cannot know what the number is now.
 *
 * KPPROF_TEST_CONFIG (tests and benchmarks without the module) writes the
 * record with write(2) to its sink instead: that mode is for test
 * machines, and has no such protection.
 *
 * Stopped (kpp.stopped: foreign fd, seccomp) nothing is submitted; the
 * record is counted in kpp.unsent.  kpp_emitters() lets seccomp.c wait for
 * threads that passed the check before it set the flag.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

int kpp_submit(const void *rec, size_t size)
{
	ssize_t n;
	int r;

	r = kpp_pring_submit(rec, size);
	if (likely(r >= 0)) {
		if (!r)
			return 0;
		errno = r;
		return -1;
	}
	if (unlikely(kpp.test_sink)) {
		/*
		 * syscall(2), not write(2): no cancellation point in malloc.
		 * libc's, not sys.h's: test mode only, and the tests emulate
		 * a full ring by interposing syscall (sem_fullring.c).
		 */
		do
			n = syscall(SYS_write, kpp.fd, rec, size);
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)size)
			return 0;
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	/* No ring: a syscall a filter installed behind our back may forbid. */
	if (kpp_filtered_record()) {
		errno = ECANCELED;
		return -1;
	}
	do
		r = kpp_ioctl(kpp.fd, KPPROF_IOC_SUBMIT, rec);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -1 : 0;
}

/*
 * Held frees.  A FREE refused because the ring is full (ENOBUFS) would
 * leave its block live in the profile for ever.  So the block is not given
 * back yet: its address goes on a small list, and before the next record
 * (any thread) the FREE is submitted again and, once accepted, the block
 * freed with the real free().  So only blocks of malloc's family are held
 * (heap.c); the other entry points (operator delete, sdallocx, free_sized)
 * have release functions of their own, and their refused FREE is dropped
 * and counted (kpp_free_record_now).  Holding the block keeps its address from being reused (and
 * sampled, and recorded) before its FREE.  Bounded: 64 blocks and 64 MiB;
 * beyond that the FREE is lost (counted).  A forked child forgets the
 * list (its copies of those blocks leak; fork_child() must stay simple).
 */
#define HELD_MAX	64
#define HELD_BYTES_MAX	(64ULL << 20)
#define HELD_BUSY	((uintptr_t)1)	/* slot taken, address not yet stored */

static struct {
	_Atomic uintptr_t addr;		/* 0 free, HELD_BUSY, or the block */
	uint64_t size;
} held[HELD_MAX];
static _Atomic int held_n;
static _Atomic uint64_t held_bytes;

static int submit_free(const void *addr, uint64_t bytes);
static void header(struct kpprof_record *h, __u16 kind, __u16 nr_pcs, size_t size);

/* flush_held - resubmit held FREEs; free the blocks whose FREE went in. */
static void flush_held(struct kpp_thread *t)
{
	t->flushing = 1;
	for (int i = 0; i < HELD_MAX && atomic_load(&held_n); i++) {
		uintptr_t p = atomic_load_explicit(&held[i].addr, memory_order_acquire);
		uint64_t size;

		if (p <= HELD_BUSY ||
		    !atomic_compare_exchange_strong(&held[i].addr, &p, HELD_BUSY))
			continue;
		size = held[i].size;
		if (submit_free((void *)p, size) == ENOBUFS) {
			/* Still full: keep it, try at the next record. */
			atomic_store_explicit(&held[i].addr, p, memory_order_release);
			break;
		}
		atomic_store_explicit(&held[i].addr, 0, memory_order_release);
		atomic_fetch_sub(&held_bytes, size);
		atomic_fetch_sub(&held_n, 1);
		kpp_real.free((void *)p);
	}
	t->flushing = 0;
}

void kpp_held_reset(void)
{
	memset(held, 0, sizeof(held));
	atomic_store(&held_n, 0);
	atomic_store(&held_bytes, 0);
}

int kpp_free_submit(const void *addr, uint64_t bytes)
{
	return submit_free(addr, bytes);
}

bool kpp_free_record(const void *addr, uint64_t bytes)
{
	if (submit_free(addr, bytes) != ENOBUFS)
		return true;
	return !kpp_free_hold(addr, bytes);
}

bool kpp_free_hold(const void *addr, uint64_t bytes)
{
	if (atomic_fetch_add(&held_bytes, bytes) + bytes <= HELD_BYTES_MAX) {
		for (int i = 0; i < HELD_MAX; i++) {
			uintptr_t zero = 0;

			if (!atomic_compare_exchange_strong(&held[i].addr, &zero, HELD_BUSY))
				continue;
			held[i].size = bytes;
			atomic_store_explicit(&held[i].addr, (uintptr_t)addr,
					      memory_order_release);
			atomic_fetch_add(&held_n, 1);
			atomic_fetch_add_explicit(&kpp.frees_held, 1, memory_order_relaxed);
			return true;
		}
	}
	atomic_fetch_sub(&held_bytes, bytes);
	atomic_fetch_add_explicit(&kpp.frees_lost, 1, memory_order_relaxed);
	return false;
}

bool kpp_free_record_now(const void *addr, uint64_t bytes)
{
	if (submit_free(addr, bytes) != ENOBUFS)
		return true;
	atomic_fetch_add_explicit(&kpp.frees_lost, 1, memory_order_relaxed);
	return false;
}

/* What an emit left for good must undo, its own level only (emit_abandon). */
struct emit_frame {
	struct kpp_thread *t;
	uint32_t outer_depth;	/* ring entries the emits it interrupted were writing */
	bool announced;
	bool flushes;		/* inside its flush_held(), which set t->flushing */
	bool left;		/* emit_abandon() ran: its counts are given back */
};

/*
 * emit_abandon - a signal handler left this emit for good (a longjmp over
 * it, pthread_exit): give up the ring entry it was writing, which the
 * drain would otherwise stop at (the module's for 2 s; test mode's too),
 * and take it out of the count seccomp.c and kpp_fini() wait for.  Only
 * for an emit outside a sampling path (a FREE, a COMM): one inside runs
 * on the private stack, where no cleanup buffer may go (shim.h, struct
 * kpp_sample_frame), and the path's buffer does this (init.c's abandon()).
 */
static void emit_abandon(void *arg)
{
	struct emit_frame *f = arg;

	kpp_pring_abandon(f->t, f->outer_depth);
	if (f->flushes)
		f->t->flushing = 0;
	f->t->emitting--;
	atomic_fetch_sub(&kpp_shard()->emitters, 1);
	/*
	 * Left for good, glibc thinks; a user-level thread whose handler
	 * jumped to its scheduler may yet be resumed here (abandon_resume.c):
	 * then it must not give the counts back twice, nor pop a buffer
	 * glibc has taken off already.
	 */
	__atomic_store_n(&f->left, true, __ATOMIC_RELAXED);
}

int kpp_emit(const void *rec, size_t size)
{
	struct kpp_thread *t = &kpp_thread;
	struct kpp_shard *shard = kpp_shard();
	/* Inside a sampling path this thread is counted in samplers already. */
	struct emit_frame f = { t, t->ring_depth, !t->sampling, false, false };
	struct _pthread_cleanup_buffer cb;
	int saved = errno, ret = 0;

	if (unlikely(atomic_load_explicit(&kpp.stopped, memory_order_relaxed))) {
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		return ECANCELED;
	}
	/* Pairs with seccomp.c: announce, then check the flag (seq_cst). */
	if (f.announced) {
		atomic_fetch_add(&shard->emitters, 1);
		t->emitting++;
		_pthread_cleanup_push(&cb, emit_abandon, &f);
	}
	/*
	 * After the destructor's EXIT nothing more may follow it: the FREEs of
	 * threads still running beside exit() are not gated by a sampling
	 * path, so they are dropped here, counted (seq_cst, pairs with
	 * kpp_fini(): it sets the flag, then waits for kpp_emitters()).
	 */
	if (unlikely(atomic_load(&kpp.exiting)) && !t->last_record) {
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		ret = ECANCELED;
		goto out;
	}
	if (unlikely(atomic_load(&kpp.stopped)) ||
	    (unlikely(!atomic_load_explicit(&kpp.seccomp_checked, memory_order_relaxed)) &&
	     kpp_seccomp_inherited())) {
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		ret = ECANCELED;
		goto out;
	}
	/* Never from a lock's sample: the allocator's own lock may be held. */
	if (unlikely(atomic_load_explicit(&held_n, memory_order_relaxed)) && !t->flushing &&
	    !t->in_lock_sample) {
		f.flushes = true;
		flush_held(t);
		f.flushes = false;
	}
	if (!kpp_submit(rec, size)) {
		atomic_fetch_add_explicit(&shard->writes_ok, 1, memory_order_relaxed);
	} else if (errno == ENOBUFS) {
		atomic_fetch_add_explicit(&kpp.writes_dropped, 1, memory_order_relaxed);
		ret = ENOBUFS;
	} else if (errno == ECANCELED) {
		/* the seccomp probe stopped us (kpp_filtered()) */
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		ret = ECANCELED;
	} else if ((errno == ENOTTY || errno == EBADF) && (ret = errno, kpp_foreign_process())) {
		/* A vfork child that closed descriptors: its failure only;
		 * the memory, and kpp.stopped, are its parent's. */
	} else if (errno == ENOTTY || errno == EBADF) {
		if (!atomic_exchange(&kpp.stopped, KPP_STOP_FD))
			kpp_debug("fd %d is no longer /dev/kpprof (the program closed or reused it): stopping",
				  kpp.fd);
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
	} else {
		ret = errno;
		if (atomic_fetch_add_explicit(&kpp.writes_failed, 1,
					      memory_order_relaxed) == 0)
			kpp_debug("record kind %u size %zu refused: %s",
				  ((const struct kpprof_record *)rec)->kind, size,
				  strerror(errno));
	}
out:
	kpp_pring_close_fd_when_alone();
	if (f.announced && !__atomic_load_n(&f.left, __ATOMIC_RELAXED)) {
		_pthread_cleanup_pop(&cb, 0);
		t->emitting--;
		atomic_fetch_sub(&shard->emitters, 1);
	}
	errno = saved;
	return ret;
}

static void header(struct kpprof_record *h, __u16 kind, __u16 nr_pcs, size_t size)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->nr_pcs = nr_pcs;
	h->size = (__u32)size;
}

void kpp_emit_comm(__u32 reason)
{
	struct kpprof_rec_comm r;

	memset(&r, 0, sizeof(r));
	header(&r.hdr, KPPROF_REC_COMM, 0, sizeof(r));
	r.reason = reason;
	kpp_emit(&r, sizeof(r));
}

/*
 * The records with a stack are built, and submitted, on a private stack
 * (stackpool.c), not on the caller's: a sample may run on a small
 * sigaltstack or a coroutine's stack, where 1 KiB more can be an overflow,
 * and per-thread storage for them would be static TLS carved from every
 * thread's stack.  A sample is skipped (counted) when no private stack is
 * free.
 */
/*
 * stack_record - capture the stack into @pcs (the tail of a record whose
 * fixed part, header first, is @fixed bytes), send the mappings its pcs
 * need and fill the header: the record's size, 0 for no stack (a record
 * needs at least one frame).
 */
static size_t stack_record(struct kpp_thread *t, uintptr_t caller_fp,
			   struct kpprof_record *h, __u64 *pcs, size_t fixed, __u16 kind)
{
	struct kpp_objs objs;
	unsigned int n = kpp_stack(t, caller_fp, pcs, t->max_depth, &objs);
	size_t size = fixed + n * sizeof(__u64);

	if (!n)
		return 0;
	if (objs.complete)
		kpp_maps_send_objs(&objs);
	else
		kpp_maps_send(pcs, n);
	header(h, kind, (__u16)n, size);
	return size;
}

struct alloc_job {
	struct kpp_thread *t;
	const void *addr;
	uint64_t bytes, rate;
	bool sent;
};

static void alloc_body(void *arg, uintptr_t caller_fp)
{
	struct alloc_job *j = arg;
	struct {
		struct kpprof_rec_alloc r;
		__u64 pcs[KPPROF_STACK_DEPTH_MAX];
	} b;
	size_t size = stack_record(j->t, caller_fp, &b.r.hdr, b.r.pcs, sizeof(b.r),
				   KPPROF_REC_ALLOC);

	if (!size)
		return;
	b.r.addr = (uintptr_t)j->addr;
	b.r.bytes = j->bytes;
	b.r.rate = j->rate;
	/* Not accepted (ring full, stopped): no FREE will be needed. */
	j->sent = kpp_emit(&b, size) == 0;
}

bool kpp_emit_alloc(struct kpp_thread *t, const void *addr, uint64_t bytes,
		    uint64_t rate)
{
	struct alloc_job j = { .t = t, .addr = addr, .bytes = bytes, .rate = rate };

	return kpp_on_private_stack(t, alloc_body, &j) && j.sent;
}

static int submit_free(const void *addr, uint64_t bytes)
{
	struct kpprof_rec_free r;

	header(&r.hdr, KPPROF_REC_FREE, 0, sizeof(r));
	r.addr = (uintptr_t)addr;
	r.bytes = bytes;
	return kpp_emit(&r, sizeof(r));
}

struct contention_job {
	struct kpp_thread *t;
	const void *lock;
	uint64_t delay_ns, rate;
	__u16 kind;
};

static void contention_body(void *arg, uintptr_t caller_fp)
{
	struct contention_job *j = arg;
	struct {
		struct kpprof_rec_contention r;
		__u64 pcs[KPPROF_STACK_DEPTH_MAX];
	} b;
	size_t size = stack_record(j->t, caller_fp, &b.r.hdr, b.r.pcs, sizeof(b.r), j->kind);

	if (!size)
		return;
	b.r.delay_ns = j->delay_ns ? j->delay_ns : 1;
	b.r.rate = j->rate;
	b.r.lock = (uintptr_t)j->lock;
	kpp_emit(&b, size);
}

void kpp_emit_contention(struct kpp_thread *t, __u16 kind, const void *lock,
			 uint64_t delay_ns, uint64_t rate)
{
	struct contention_job j = {
		.t = t, .lock = lock, .delay_ns = delay_ns, .rate = rate, .kind = kind,
	};

	/*
	 * The lock may be the allocator's (jemalloc's arenas and bins are
	 * pthread mutexes): freeing a held block here called jemalloc's free
	 * under the very mutex this thread holds, a self-deadlock (review
	 * helper-23: bind9's named, varnish... link libjemalloc2).
	 */
	t->in_lock_sample = 1;	/* samples do not nest (the guard) */
	kpp_on_private_stack(t, contention_body, &j);
	t->in_lock_sample = 0;
}
