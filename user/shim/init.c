// SPDX-License-Identifier: GPL-2.0
/*
 * libkpprof.so start-up, fork and exit.
 *
 * Start: the constructor resolves the real functions, reads the KPPROF_*
 * environment, opens /dev/kpprof (O_RDWR | O_CLOEXEC, moved to a high
 * descriptor number out of the way of programs that dup2 onto low ones),
 * maps its config page read-only, writes KPPROF_REC_COMM (START), and
 * only then lets sampling begin.  That is all a process that never samples
 * pays (issue 11): the mapping records wait for the first record with a
 * stack (emit.c), libunwind for the first stack (stack.c), the
 * sampled-address table for the first sample (sampled_set.c); at exit it
 * writes COMM (EXIT).  If any step fails
 * (no module, device not writable, other ABI) the shim stays in
 * pass-through: every call goes straight to the real function, nothing is
 * written, nothing is printed (one line under KPPROF_DEBUG=1).
 *
 * Environment:
 *   KPPROF_UNWIND=fp|libunwind   stack unwinder (default libunwind: exact
 *                                through Debian's libraries, which are
 *                                built without frame pointers)
 *   KPPROF_MEM_RATE, KPPROF_BLOCK_RATE, KPPROF_MUTEX_FRACTION: config.c
 *   KPPROF_DEBUG=1               say why the shim is passing through
 *   KPPROF_TEST_CONFIG=FILE      tests/benchmarks without the module: see
 *                                open_test_config()
 *   KPPROF_DISABLE=1, KPPROF_EXCLUDE_FILE: optout.c
 *
 * Fork: no waiting.  A sampling path holds no lock and calls nothing of
 * the loader, so a fork at any moment leaves the child nothing held; the
 * child (fork(): the atfork handler; _Fork() or clone(): the first sample,
 * exec or dlclose, through a MADV_WIPEONFORK page) clears the
 * sampled-address table (its frees of the parent's sampled blocks are not
 * its allocations), the sent-object set, held frees, the waiter table and
 * the counters, reseeds its random numbers, and writes COMM (FORK) at
 * once; its mappings go again, under its own pid, with its stacks.  A
 * vfork child shares our memory and writes none of it (exec.c, emit.c).
 *
 * Setuid and setgid programs (AT_SECURE) pass through entirely: the
 * constructor returns before reading any KPPROF_* variable, opening any
 * file or writing any record, as gperftools' profiler refuses them.
 * Outside secure mode the test knobs (KPPROF_TEST_CONFIG, _SINK,
 * KPPROF_EXCLUDE_FILE) never follow a symlink.
 *
 * Exec: the descriptor is close-on-exec; if LD_PRELOAD still names the
 * shim, the new image starts afresh with COMM (START).  The KPPROF_*
 * variables are inherited by the process tree like any environment.
 */
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shim.h"

struct kpp_shard kpp_shards[KPP_SHARDS];

/*
 * kpp_samplers_leave - leave the count of threads in sampling paths
 * (seccomp.c waits for it).  Never below 0: in a child forked by a signal
 * handler that interrupted this thread between its increment and its
 * decrement, new_process() has already reset the count.
 */
void kpp_samplers_leave(void)
{
	struct kpp_shard *s = kpp_shard();

	if (atomic_fetch_sub(&s->samplers, 1) <= 0)
		atomic_store(&s->samplers, 0);
}

int kpp_samplers(void)
{
	int n = 0;

	for (int i = 0; i < KPP_SHARDS; i++)
		n += atomic_load(&kpp_shards[i].samplers);
	return n;
}

int kpp_emitters(void)
{
	int n = 0;

	for (int i = 0; i < KPP_SHARDS; i++)
		n += atomic_load(&kpp_shards[i].emitters);
	return n;
}

uint64_t kpp_writes_ok(void)
{
	uint64_t n = atomic_load_explicit(&kpp.writes_ok, memory_order_relaxed);

	for (int i = 0; i < KPP_SHARDS; i++)
		n += atomic_load_explicit(&kpp_shards[i].writes_ok, memory_order_relaxed);
	return n;
}

extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
			     void (*child)(void), void *dso_handle);
/*
 * What crtbeginS.o defined (the link leaves out the C start files, see
 * the Makefile): the handle that names this object to __register_atfork.
 */
void *__dso_handle __attribute__((visibility("hidden"))) = &__dso_handle;

/*
 * abandon - a signal handler that interrupted this thread's sampling path
 * left it for good: a siglongjmp/longjmp to a frame older than the path's
 * (glibc's longjmp runs the cleanup buffers of the frames it jumps over)
 * or pthread_exit/cancellation (the forced unwind runs them too).  Without
 * this the thread kept its guard (never sampled again), the count
 * seccomp.c waits for stayed up (a seccomp filter install spun for ever),
 * and the private stack was never freed (64 such jumps: no sample in the
 * process).  Runs while the thread may still be on the private stack: that
 * stack is freed at the thread's next sample (stackpool.c).
 */
static void abandon(void *arg)
{
	struct kpp_sample_frame *sf = arg;
	struct kpp_thread *t = sf->t;

	kpp_stackpool_abandon(t);
	kpp_set_abandon(t);
	kpp_maps_abandon(t);
	/* the records it was writing, and those of the handlers inside it:
	 * their emits are on the private stack, with no cleanup buffer */
	kpp_pring_abandon(t, sf->outer_depth);
	t->flushing = 0;
	t->in_lock_sample = 0;
	t->sampling = 0;
	kpp_samplers_leave();
	t->guard = 0;
	atomic_fetch_add_explicit(&kpp.abandoned, 1, memory_order_relaxed);
}

/*
 * A sampling path takes no lock and never calls into the loader, so
 * asynchronous signals stay deliverable in it (a handler that samples
 * finds the guard and passes through) and nothing needs blocking around
 * a fork.  It has no cancellation point (test mode writes with
 * syscall(2)) and leaves the cancel state alone: a handler that jumps out
 * of the path would leave it disabled (pthread_cancel then never acts).
 * A handler that leaves the path for good runs abandon() (@sf).
 */
bool kpp_sample_begin(struct kpp_thread *t, struct kpp_sample_frame *sf)
{
	if (t->guard || atomic_load_explicit(&kpp.ready, memory_order_relaxed) != 1)
		return false;
	if (unlikely(atomic_load_explicit(&kpp.stopped, memory_order_relaxed))) {
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		return false;
	}
	t->guard = 1;
	t->saved_errno = errno;
	kpp_process_check();
	/*
	 * No ring yet (the first sample, or none to be had): this sample may
	 * make syscalls (the ring's set-up, SUBMIT, the unwinder's first
	 * steps, the sampled-address table), which a filter installed behind
	 * our back may forbid: ask the seccomp probe first.  With a ring
	 * (every later sample) nothing is asked.
	 */
	if (unlikely(!kpp_pring_mapped()))
		kpp_filtered(false);
	/* Pairs with seccomp.c: announce, then re-check. */
	kpp_samplers_enter();
	if (atomic_load(&kpp.stopped) || atomic_load(&kpp.ready) != 1) {
		if (atomic_load(&kpp.stopped))
			atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		kpp_samplers_leave();
		errno = t->saved_errno;
		t->guard = 0;
		return false;
	}
	sf->t = t;
	sf->outer_depth = t->ring_depth;
	_pthread_cleanup_push(&sf->cb, abandon, sf);
	t->sampling = 1;
	return true;
}

void kpp_sample_end(struct kpp_thread *t, struct kpp_sample_frame *sf)
{
	_pthread_cleanup_pop(&sf->cb, 0);
	t->sampling = 0;
	kpp_samplers_leave();
	errno = t->saved_errno;
	t->guard = 0;
}

/*
 * New processes.  A fork() child is told by the atfork child handler; a
 * _Fork() or clone() child runs no handler, so every sample (and exec,
 * dlclose) first reads one word on a MADV_WIPEONFORK page (the kernel
 * zeroes it in any child that does not share our memory): 0 means a new
 * process.  The page is mapped at start, with the pid cached.  A vfork
 * or clone(CLONE_VM) child shares the page and the rest of our memory: it
 * is seen only where a syscall is affordable (kpp_foreign_process: exec,
 * a failed submission).
 */
static const int alive_fallback = 1;

bool kpp_foreign_process(void)
{
	return kpp.pid && kpp_getpid() != kpp.pid;
}

/*
 * new_process - the child's start: forget the parent's sampled addresses,
 * held frees, sent objects, waiters and counts, and say COMM (FORK).
 * Only async-signal-safe calls (an atfork child handler's rule).
 * @threaded: other threads may have run in the parent (stack.c).
 */
static int reopen_device(void);

static void new_process(bool threaded)
{
	struct kpp_thread *t = &kpp_thread;
	const volatile int *a = atomic_load(&kpp.alive);
	int saved = errno;	/* fork() returned 0: the program's errno stays */

	/*
	 * A filter the shim never saw (a raw `syscall` instruction in the
	 * parent, or in this child before its first sample: _Fork, clone)
	 * may forbid every syscall below: the seccomp probe first, a fault.
	 * A stopped child makes none of them, not even getpid (kpp.pid 0:
	 * kpp_foreign_process() asks nothing).
	 */
	if (atomic_load(&kpp.stopped) || kpp_filtered(false))
		kpp.pid = 0;
	else
		kpp.pid = kpp_getpid();
	/*
	 * No producer ring here (VM_DONTCOPY).  A parent that had one maps
	 * the child's own now (pring.c): the child's records, COMM (FORK)
	 * first, go into it (no set-up at its first sample, which may come
	 * after it has sandboxed itself).  Otherwise (no ring in the
	 * parent, or none to be had) the child submits with a descriptor: the
	 * parent's, or, if the parent closed it (its ring), one opened here.
	 * A stopped parent's child is stopped too, and makes none of these
	 * syscalls: its parent's seccomp filter, which the shim saw, is in
	 * force here as well (it may kill for open, ioctl or mmap).
	 */
	if (atomic_load(&kpp.stopped))
		kpp_pring_fork_child_stopped();
	else if (!kpp_pring_fork_child() && kpp.fd < 0)
		kpp.fd = reopen_device();
	/* This thread's own interrupted path (a fork from a handler) resumes
	 * here and keeps its guard; the other threads are not here. */
	for (int i = 0; i < KPP_SHARDS; i++) {
		atomic_store(&kpp_shards[i].samplers, 0);
		atomic_store(&kpp_shards[i].emitters, 0);
		atomic_store(&kpp_shards[i].writes_ok, 0);
	}
	/* each of its nested emits (a handler's inside another) leaves once */
	atomic_store(&kpp_shard()->emitters, (int)t->emitting);
	atomic_store(&kpp_shard()->samplers, t->sampling ? 1 : 0);
	atomic_store(&kpp.writes_ok, 0);
	atomic_store(&kpp.writes_dropped, 0);
	atomic_store(&kpp.writes_failed, 0);
	atomic_store(&kpp.unsent, 0);
	atomic_store(&kpp.maps_unsent, 0);
	kpp_set_reset();
	kpp_held_reset();
	kpp_maps_reset();
	kpp_locks_reset();
	kpp_unwind_fork_child(threaded);
	t->rng_seeded = 0;
	if (a && a != &alive_fallback)
		*(volatile int *)a = 1;
	/*
	 * COMM (FORK) now (into the ring, or one syscall): the collector
	 * learns this pid and its parent before the child can have children
	 * of its own, so `kpprof record` follows the descendants of a child
	 * that never samples.
	 */
	kpp_emit_comm(KPPROF_COMM_FORK);
	errno = saved;
}

void kpp_process_slow(void)
{
	const volatile int *a = atomic_load(&kpp.alive);

	/* Wiped: a child that no atfork handler saw. */
	if (a && a != &alive_fallback)
		new_process(true);
}

/* process_init - at start, before any child can exist: 3 syscalls. */
static void process_init(void)
{
	int *page = kpp_mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	kpp.pid = kpp_getpid();
	if (page != MAP_FAILED && kpp_madvise(page, 4096, MADV_WIPEONFORK)) {
		kpp_munmap(page, 4096);
		page = MAP_FAILED;
	}
	if (page == MAP_FAILED) {
		kpp_debug("no MADV_WIPEONFORK: _Fork and clone children look like their parent");
		atomic_store(&kpp.alive, &alive_fallback);
		return;
	}
	*page = 1;
	atomic_store(&kpp.alive, page);
}

static void fork_prepare(void)
{
	/* No waiting: no sampling path holds anything a child could miss. */
	kpp.fork_threaded = !__libc_single_threaded;
}

static void fork_child(void)
{
	if (atomic_load(&kpp.ready) != 1)
		return;
	new_process(kpp.fork_threaded);
}

/* Move our descriptor above the ones programs usually pick themselves. */
static int high_fd(int fd)
{
	struct rlimit rl;
	int want = 200, nfd;

	if (!kpp_getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 400)
		want = (int)rl.rlim_cur / 2;
	nfd = kpp_fcntl(fd, F_DUPFD_CLOEXEC, want);
	if (nfd < 0)
		return fd;
	kpp_close(fd);
	return nfd;
}

/*
 * The sink's path, copied at start: the emulated ring's drains open it
 * again (pring.c), the program may rewrite its environment (setenv, or a
 * process title written over it, as postgres does).
 */
static char test_sink_path[4096];

static int open_sink(const char *path)
{
	return kpp_open_mode(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		    0600);
}

int kpp_test_sink_open(void)
{
	return test_sink_path[0] ? open_sink(test_sink_path) : -1;
}

/*
 * reopen_device - a fork child whose parent had closed its descriptor (it
 * had a producer ring) and that could not map a ring of its own: one for
 * the child's records.  Async-signal-safe calls only (new_process() runs
 * in the atfork child handler).
 */
static int reopen_device(void)
{
	int fd;

	if (kpp.test_sink)
		fd = kpp_test_sink_open();
	else
		fd = kpp_open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	return fd < 0 ? fd : high_fd(fd);
}

/*
 * open_test_config - KPPROF_TEST_CONFIG=FILE, a test and benchmark knob
 * for machines without the module: the config page is read from FILE (a
 * regular file holding a struct kpprof_config_page) and records are
 * written with write(2) to KPPROF_TEST_SINK (appended; default /dev/null),
 * so everything the shim does is measured except the module's own work on
 * a record, and tests can read what it sent.  Returns the page or NULL.
 * Neither file is opened through a symlink (O_NOFOLLOW): a knob in the
 * environment must not make the process create or write a file where a
 * link points; O_NONBLOCK: a FIFO never blocks the program (a sink FIFO
 * without a reader fails to open; a full one refuses records).
 */
static const void *open_test_config(const char *path, long pagesz, int *fd)
{
	const char *sink;
	struct stat st;
	void *page;
	int cfd;

	cfd = kpp_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (cfd < 0) {
		kpp_debug("pass-through: KPPROF_TEST_CONFIG %s: %s", path, strerror(errno));
		return NULL;
	}
	if (kpp_fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct kpprof_config_page)) {
		kpp_debug("pass-through: KPPROF_TEST_CONFIG %s is not a config page file", path);
		kpp_close(cfd);
		return NULL;
	}
	page = kpp_mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, cfd, 0);
	kpp_close(cfd);
	if (page == MAP_FAILED)
		return NULL;
	sink = kpp_getenv("KPPROF_TEST_SINK");
	if (!sink || !*sink)
		sink = "/dev/null";
	*fd = strlen(sink) < sizeof(test_sink_path) ? open_sink(sink) : -1;
	if (*fd < 0) {
		kpp_munmap(page, (size_t)pagesz);
		return NULL;
	}
	strcpy(test_sink_path, sink);
	return page;
}

static int open_device(void)
{
	long pagesz = (long)getauxval(AT_PAGESZ);	/* not sysconf(): a libc page less */
	const char *test = kpp_getenv("KPPROF_TEST_CONFIG"), *s;
	struct stat st;
	const void *page;
	int fd;

	if (pagesz <= 0)
		pagesz = sysconf(_SC_PAGESIZE);

	if (test && *test) {
		/* Test mode checks seccomp first: it opens and maps files. */
		if (kpp_seccomp_inherited())
			return -1;
		page = open_test_config(test, pagesz, &fd);
		if (!page)
			return -1;
		fd = high_fd(fd);
		kpp.test_sink = 1;
		s = kpp_getenv("KPPROF_TEST_RING");
		kpp.test_ring = s && *s == '1';
		goto check_abi;
	}
	/*
	 * The device first: on a host without the module that failed open is
	 * all a process pays.  An open is as safe under an inherited seccomp
	 * filter as the /proc read of the check is (the loader needed both),
	 * and the check comes before any other syscall of ours.
	 */
	fd = kpp_open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		kpp_debug("pass-through: cannot open %s: %s", KPPROF_DEVICE_PATH,
			  strerror(errno));
		return -1;
	}
	if (kpp_seccomp_inherited()) {
		kpp_close(fd);
		return -1;
	}
	fd = high_fd(fd);
	if (kpp_fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		kpp_debug("pass-through: %s is not a character device", KPPROF_DEVICE_PATH);
		goto err_close;
	}
	page = kpp_mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, fd,
		    KPPROF_PGOFF_CONFIG * pagesz);
	if (page == MAP_FAILED) {
		kpp_debug("pass-through: cannot map the config page: %s", strerror(errno));
		goto err_close;
	}
check_abi:
	if (((const struct kpprof_config_page *)page)->abi_version != KPPROF_ABI_VERSION) {
		kpp_debug("pass-through: module ABI %u, shim ABI %u",
			  ((const struct kpprof_config_page *)page)->abi_version,
			  KPPROF_ABI_VERSION);
		goto err_unmap;
	}
	/* Only now, when we would profile: see optout.c. */
	if (kpp_excluded())
		goto err_unmap;
	/*
	 * The seccomp probe, right after the config page, while syscalls are
	 * known safe; a module without it refuses the mmap (EINVAL).  Not
	 * in test mode: no module to ask.
	 */
	if (!kpp.test_sink)
		kpp_probe_map(fd, pagesz);
	/* The sampled-address table is set up at the first sample. */
	kpp.fd = fd;
	kpp.page = page;
	return 0;

err_unmap:
	kpp_munmap((void *)page, (size_t)pagesz);
err_close:
	kpp_close(fd);
	return -1;
}

/* the optional next definitions, each file's (real.c has the required ones) */
static const struct kpp_next_table *const next_tables[] = {
	&kpp_lock_next, &kpp_alloc_ext_next, &kpp_cxx_next, &kpp_sigwrap_next,
	&kpp_seccomp_next, &kpp_getattr_next, &kpp_exec_next,
};
_Static_assert(sizeof(next_tables) / sizeof(next_tables[0]) < KPP_NEXT_TABLES, "KPP_NEXT_TABLES");

__attribute__((constructor))
static void kpp_init(void)
{
	struct kpp_thread *t = &kpp_thread;
	const char *s;
	int saved = errno;

	/* the optional next definitions too, never at a wrapper's first call (real.c) */
	kpp_resolve_start(next_tables, sizeof(next_tables) / sizeof(next_tables[0]));
	/*
	 * Setuid or setgid (glibc's secure mode, which strips LD_* but not
	 * KPPROF_*): nothing at all, not even the environment is read.  An
	 * unprivileged user could otherwise make a privileged program write
	 * files of their choosing or reveal its layout (review 1.1).
	 */
	if (getauxval(AT_SECURE)) {
		atomic_store(&kpp.ready, -1);
		errno = saved;
		return;
	}
	kpp_altstack_init();
	s = kpp_getenv("KPPROF_DEBUG");
	kpp.debug = s && *s == '1';
	s = kpp_getenv("KPPROF_UNWIND");
	kpp.unwind_libunwind = !(s && !strcmp(s, "fp"));
	if (s && strcmp(s, "fp") && strcmp(s, "dwarf") && strcmp(s, "libunwind"))
		kpp_debug("KPPROF_UNWIND=%s unknown, using dwarf", s);
	kpp.env_mem_rate = kpp_env_u64("KPPROF_MEM_RATE", 1ULL << 40);
	kpp.env_block_rate = kpp_env_u64("KPPROF_BLOCK_RATE", 1ULL << 40);
	kpp.env_mutex_fraction = kpp_env_u64("KPPROF_MUTEX_FRACTION", UINT32_MAX);

	t->guard = 1;
	if (kpp_opted_out() || open_device()) {
		atomic_store(&kpp.ready, -1);
		t->guard = 0;
		errno = saved;
		return;
	}
	kpp_maps_find_self();	/* the shim's text, which only stacks skip */
	process_init();
	kpp_stackpool_init();
	/*
	 * What pthread_atfork() does (libc_nonshared.a's stub, which the link
	 * puts at the end of our text: a page fault of its own at start).
	 */
	if (__register_atfork(fork_prepare, NULL, fork_child, __dso_handle))
		kpp_debug("pthread_atfork failed: children will not be profiled apart");
	/*
	 * COMM (START) only: it names the process and its parent, which
	 * `kpprof record` needs to follow descendants through processes that
	 * never sample.  The mappings wait for the first record with a stack
	 * (emit.c), libunwind for the first stack (stack.c).
	 */
	kpp_emit_comm(KPPROF_COMM_START);
	kpp_check_interposed();
	kpp_probe_arm();
	t->guard = 0;
	atomic_store_explicit(&kpp.ready, 1, memory_order_release);
	kpp_debug("sampling (unwinder %s)", kpp.unwind_libunwind ? "dwarf" : "fp");
	errno = saved;
}

/* 50 ms: a sampling path takes microseconds; exit waits no longer (wait.c) */
#define FINI_WAIT_NS	50000000ULL

__attribute__((destructor))
static void kpp_fini(void)
{
	struct kpp_thread *t = &kpp_thread;
	struct kpp_wait w = { 0 };
	int one = 1;
	uint64_t alt, skipped;

	if (atomic_load(&kpp.ready) != 1)
		return;
	kpp_process_check();
	/*
	 * A vfork child that calls exit() (not _exit(): undefined, and
	 * common) runs this in its parent's memory: its EXIT would go into
	 * the parent's ring, and kpp.ready and kpp.exiting, the parent's,
	 * would stop its sampling for good and keep its own EXIT from being
	 * sent (fork_safety vfork_exit, with and without a ring).  Nothing
	 * in shared memory tells the child from its parent, so one getpid
	 * at every exit of a process that opened the device (about 0.1 us,
	 * the only syscall this adds to a process that never samples).  Not
	 * in a stopped process: a filter may forbid it, and nothing is sent
	 * there anyway; nor after the seccomp probe says a filter the shim
	 * never saw is in force (then it stops, with a NOTE into the ring if
	 * there is one: a vfork child's goes into its parent's, whose
	 * vforking thread has the same filter).
	 */
	if (!atomic_load(&kpp.stopped) && !kpp_filtered(true) && kpp_foreign_process())
		return;
	/*
	 * No record after EXIT: new samples stop here, and so do the FREEs of
	 * the threads still running beside exit() (kpp.exiting, emit.c); the
	 * threads already inside a sampling path or kpp_emit() get a bounded
	 * wait, FINI_WAIT_NS, with no syscall a filter the shim never saw may
	 * forbid (wait.c; it yielded before, even after the probe above said
	 * "filtered").  A thread held there past it (descheduled, or in a
	 * signal handler) may still put one record after EXIT.  A stopped
	 * shim sends no EXIT, and does not wait.
	 */
	if (!atomic_compare_exchange_strong(&kpp.ready, &one, -1))	/* pass-through */
		return;
	atomic_store(&kpp.exiting, 1);
	while ((kpp_samplers() > (t->guard ? 1 : 0) || kpp_emitters() > (int)t->emitting) &&
	       kpp_wait_more(&w, FINI_WAIT_NS))
		;
	if (w.steps)
		kpp_debug("exit: waited %llu us for threads in a sampling path, %d still there",
			  w.t0 ? (unsigned long long)(kpp_now_ns() - w.t0) / 1000 : 0ULL,
			  kpp_samplers() - (t->guard ? 1 : 0));
	t->last_record = 1;
	t->probed = 1;		/* asked above, unless stopped */
	kpp_emit_comm(KPPROF_COMM_EXIT);
	t->probed = 0;
	t->last_record = 0;
	kpp_pring_flush(false);
	kpp_debug("producer ring %s, SUBMIT fallbacks %llu",
		  kpp_pring_mapped() ? "mapped" : "not mapped",
		  (unsigned long long)kpp.pring_fallback);
	kpp_debug("records written %llu, dropped (ring full) %llu, refused %llu, table full %llu, not sent (stopped) %llu, in sampling paths %d, frees held %llu, lost %llu, objects unsent %llu, samples abandoned %llu, seccomp waits cut %llu, ring entries given up %llu",
		  (unsigned long long)kpp_writes_ok(), (unsigned long long)kpp.writes_dropped,
		  (unsigned long long)kpp.writes_failed, (unsigned long long)kpp.table_full,
		  (unsigned long long)kpp.unsent, kpp_samplers(),
		  (unsigned long long)kpp.frees_held, (unsigned long long)kpp.frees_lost,
		  (unsigned long long)kpp.maps_unsent,
		  (unsigned long long)kpp.abandoned,
		  (unsigned long long)kpp.seccomp_unwaited,
		  (unsigned long long)kpp.test_given_up);
	skipped = kpp_stackpool_skipped(&alt);
	kpp_debug("samples skipped (no private stack) %llu, (on a sigaltstack) %llu, signal handlers not wrapped %llu, sigaltstack questions %llu",
		  (unsigned long long)skipped, (unsigned long long)alt,
		  (unsigned long long)kpp.sig_unwrapped,
		  (unsigned long long)kpp_altstack_questions());
}
