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
 * Fork: the prepare handler stops new samples and waits for threads that
 * are inside a sampling path (unwinding, writing) to leave it, so the child
 * cannot inherit a lock held half-way through by a thread that does not
 * exist there.  The child clears the sampled-address table (its frees of
 * the parent's sampled blocks are not its allocations), the mapping table
 * and the waiter table, reseeds its random numbers, and writes COMM (FORK)
 * at once; all its mappings go again, under its own pid, before its first
 * stack record.
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

/*
 * samplers_dec - leave the count of threads in sampling paths.  Never
 * below 0: in a child forked by a signal handler that interrupted this
 * thread between its increment and its decrement, fork_child() has
 * already reset the count (a -1 would stop the next fork_prepare() from
 * waiting for anyone; counting the interrupted path in the child instead
 * would leave a +1 behind when the fork fell before its increment).
 */
static void samplers_dec(void)
{
	if (atomic_fetch_sub(&kpp.samplers, 1) <= 0)
		atomic_store(&kpp.samplers, 0);
}

/*
 * The signals a sampling path runs with blocked: every one that can come
 * asynchronously.  A handler that forks (crash reporters, process
 * supervisors do) must never find this thread inside dl_iterate_phdr():
 * the child inherits the loader's lock owned by the parent's thread id, the
 * interrupted walk's unlock then fails there (the owner is not the child's
 * thread), and the child's next walk -- ours, libunwind's, a C++ throw --
 * blocks for ever.  The synchronous ones (a fault in the sampling path
 * itself) stay deliverable: blocked, they would kill the process.
 */
static sigset_t async_signals;

static void async_signals_init(void)
{
	static const int sync_signals[] = {
		SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT,
	};

	sigfillset(&async_signals);
	for (size_t i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
		sigdelset(&async_signals, sync_signals[i]);
}

bool kpp_sample_begin(struct kpp_thread *t)
{
	if (t->guard || atomic_load_explicit(&kpp.ready, memory_order_relaxed) != 1 ||
	    atomic_load_explicit(&kpp.fork_pending, memory_order_relaxed))
		return false;
	if (unlikely(atomic_load_explicit(&kpp.stopped, memory_order_relaxed))) {
		atomic_fetch_add_explicit(&kpp.unsent, 1, memory_order_relaxed);
		return false;
	}
	t->guard = 1;
	t->saved_errno = errno;
	/* Pairs with fork_prepare() and seccomp.c: announce, then re-check. */
	atomic_fetch_add(&kpp.samplers, 1);
	if (atomic_load(&kpp.fork_pending) || atomic_load(&kpp.stopped)) {
		samplers_dec();
		t->guard = 0;
		return false;
	}
	pthread_sigmask(SIG_BLOCK, &async_signals, &t->saved_mask);
	return true;
}

void kpp_sample_end(struct kpp_thread *t)
{
	samplers_dec();
	errno = t->saved_errno;
	t->guard = 0;
	/* Last: a signal held back meanwhile finds the thread out of the path. */
	pthread_sigmask(SIG_SETMASK, &t->saved_mask, NULL);
}

static void fork_prepare(void)
{
	/* A fork from a signal handler that interrupted our own sampling
	 * path must not wait for itself. */
	int self = kpp_thread.guard ? 1 : 0;

	if (atomic_load(&kpp.ready) != 1)
		return;
	atomic_store(&kpp.fork_pending, 1);
	while (atomic_load(&kpp.samplers) > self)
		sched_yield();
	kpp.loader_quiet = kpp_loader_quiesce();
	kpp.fork_threaded = !__libc_single_threaded;
}

static void fork_parent(void)
{
	if (atomic_load(&kpp.ready) != 1)
		return;
	kpp_loader_release(false);
	atomic_store(&kpp.fork_pending, 0);
}

static void fork_child(void)
{
	struct kpp_thread *t = &kpp_thread;
	/* A fork from a signal handler that interrupted this thread's own
	 * sampling path: that path resumes here, so it keeps its guard; its
	 * decrement of samplers finds 0 and stays there (samplers_dec). */
	uint32_t self = t->guard;

	if (atomic_load(&kpp.ready) != 1)
		return;
	kpp_loader_release(true);
	/* Threads that were inside kpp_emit() in the parent are not here. */
	atomic_store(&kpp.emitters, t->emitting ? 1 : 0);
	if (!kpp.loader_quiet) {
		/* The loader's lock may be held for ever here (loader.c). */
		atomic_store(&kpp.ready, -1);
		atomic_store(&kpp.fork_pending, 0);
		kpp_emit_comm(KPPROF_COMM_FORK);
		return;
	}
	atomic_store(&kpp.samplers, 0);
	kpp_set_reset();
	kpp_held_reset();
	kpp_maps_reset();
	kpp_locks_reset();
	kpp_unwind_fork_child(kpp.fork_threaded);
	t->rng_seeded = 0;
	t->guard = self;
	atomic_store(&kpp.fork_pending, 0);
	/*
	 * COMM (FORK) now, one ioctl (async-signal-safe, as an atfork child
	 * handler must be): the collector learns this pid and its parent
	 * before the child can have children of its own, so `kpprof record`
	 * follows the exec'ed or forked descendants of a child that never
	 * samples (issue 11; before, the FORK waited for the child's first
	 * record, and a child that only forked or spawned broke the chain).
	 * The mappings are not walked here (dl_iterate_phdr blocks for ever
	 * on the loader's lock if another thread held it at the fork):
	 * kpp_maps_reset() above makes the first stack record send them all.
	 */
	kpp_emit_comm(KPPROF_COMM_FORK);
}

/* Move our descriptor above the ones programs usually pick themselves. */
static int high_fd(int fd)
{
	struct rlimit rl;
	int want = 200, nfd;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 400)
		want = (int)rl.rlim_cur / 2;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, want);
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
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

	cfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (cfd < 0) {
		kpp_debug("pass-through: KPPROF_TEST_CONFIG %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct kpprof_config_page)) {
		kpp_debug("pass-through: KPPROF_TEST_CONFIG %s is not a config page file", path);
		close(cfd);
		return NULL;
	}
	page = mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, cfd, 0);
	close(cfd);
	if (page == MAP_FAILED)
		return NULL;
	sink = getenv("KPPROF_TEST_SINK");
	*fd = open(sink && *sink ? sink : "/dev/null",
		   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		   0600);
	if (*fd < 0) {
		munmap(page, (size_t)pagesz);
		return NULL;
	}
	return page;
}

static int open_device(void)
{
	long pagesz = sysconf(_SC_PAGESIZE);
	const char *test = getenv("KPPROF_TEST_CONFIG");
	struct stat st;
	const void *page;
	int fd;

	if (test && *test) {
		/* Test mode checks seccomp first: it opens and maps files. */
		if (kpp_seccomp_inherited())
			return -1;
		page = open_test_config(test, pagesz, &fd);
		if (!page)
			return -1;
		fd = high_fd(fd);
		kpp.test_sink = 1;
		goto check_abi;
	}
	/*
	 * The device first: on a host without the module that failed open is
	 * all a process pays.  An open is as safe under an inherited seccomp
	 * filter as the /proc read of the check is (the loader needed both),
	 * and the check comes before any other syscall of ours.
	 */
	fd = open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		kpp_debug("pass-through: cannot open %s: %s", KPPROF_DEVICE_PATH,
			  strerror(errno));
		return -1;
	}
	if (kpp_seccomp_inherited()) {
		close(fd);
		return -1;
	}
	fd = high_fd(fd);
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		kpp_debug("pass-through: %s is not a character device", KPPROF_DEVICE_PATH);
		goto err_close;
	}
	page = mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, fd,
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
	/* The sampled-address table is set up at the first sample. */
	kpp.fd = fd;
	kpp.page = page;
	return 0;

err_unmap:
	munmap((void *)page, (size_t)pagesz);
err_close:
	close(fd);
	return -1;
}

__attribute__((constructor))
static void kpp_init(void)
{
	struct kpp_thread *t = &kpp_thread;
	const char *s;
	int saved = errno;

	kpp_resolve();
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
	async_signals_init();
	s = getenv("KPPROF_DEBUG");
	kpp.debug = s && *s == '1';
	s = getenv("KPPROF_UNWIND");
	kpp.unwind_libunwind = !(s && !strcmp(s, "fp"));
	if (s && strcmp(s, "fp") && strcmp(s, "dwarf") && strcmp(s, "libunwind"))
		kpp_debug("KPPROF_UNWIND=%s unknown, using dwarf", s);
	kpp.env_mem_rate = kpp_env_u64("KPPROF_MEM_RATE", 1ULL << 40);
	kpp.env_block_rate = kpp_env_u64("KPPROF_BLOCK_RATE", 1ULL << 40);
	kpp.env_mutex_fraction = kpp_env_u64("KPPROF_MUTEX_FRACTION", UINT32_MAX);
	kpp_maps_find_self();

	t->guard = 1;
	if (kpp_opted_out() || open_device()) {
		atomic_store(&kpp.ready, -1);
		t->guard = 0;
		errno = saved;
		return;
	}
	if (pthread_atfork(fork_prepare, fork_parent, fork_child))
		kpp_debug("pthread_atfork failed: children will not be profiled apart");
	/*
	 * COMM (START) only: it names the process and its parent, which
	 * `kpprof record` needs to follow descendants through processes that
	 * never sample.  The mappings wait for the first record with a stack
	 * (emit.c), libunwind for the first stack (stack.c).
	 */
	kpp_emit_comm(KPPROF_COMM_START);
	kpp_check_interposed();
	t->guard = 0;
	atomic_store_explicit(&kpp.ready, 1, memory_order_release);
	kpp_debug("sampling (unwinder %s)", kpp.unwind_libunwind ? "dwarf" : "fp");
	errno = saved;
}

__attribute__((destructor))
static void kpp_fini(void)
{
	if (atomic_load(&kpp.ready) != 1)
		return;
	kpp_emit_comm(KPPROF_COMM_EXIT);
	kpp_debug("records written %llu, dropped (ring full) %llu, refused %llu, table full %llu, not sent (stopped) %llu, in sampling paths %d, frees held %llu, lost %llu",
		  (unsigned long long)kpp.writes_ok, (unsigned long long)kpp.writes_dropped,
		  (unsigned long long)kpp.writes_failed, (unsigned long long)kpp.table_full,
		  (unsigned long long)kpp.unsent, atomic_load(&kpp.samplers),
		  (unsigned long long)kpp.frees_held, (unsigned long long)kpp.frees_lost);
}
