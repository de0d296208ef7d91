// SPDX-License-Identifier: GPL-2.0
/*
 * torture: many of the things a program does to the shim at once, for a
 * bounded time (issue 15, "Proof").  Run under the shim in test mode at
 * rate 1 (every allocation and contended lock sampled):
 *
 *   - worker threads start, allocate, contend on a mutex, and exit; they
 *     fill blocks up to their usable size, grow them with realloc and
 *     check that no byte was lost (small blocks, and one of 256 KiB, which
 *     glibc's realloc moves with mremap); each iteration allocates one
 *     marker of MARK_MAIN bytes, counted ("main marks N"), so the caller
 *     can check the main process's ALLOC and FREE records;
 *   - two spawners make children in turn with fork() (the child allocates
 *     and _exit()s), _Fork() and clone() (the child execs /bin/true: no
 *     malloc, which would be unsafe after those in a threaded parent),
 *     vfork() (the child closes every descriptor above 2 and execs
 *     /bin/true, as Python's subprocess does) and posix_spawn(/bin/true);
 *   - a thread that never allocates gets SIGUSR1 on a sigaltstack; its
 *     handler allocates, locks the mutex and, in turn, fork()s (the child
 *     _exit()s), _Fork()s (the child execs /bin/true) or posix_spawn()s;
 *   - a thread dlopen()s and dlclose()s a plugin in a loop and allocates;
 *     between, it loads libreload_fp.so and libreload_nofp.so (next to
 *     the plugin; reload_rbp.S: the same layout, another CFA rule at the
 *     same pc) one after the other, allocates through each and unloads
 *     it with libc's own dlclose, which the shim does not see (as glibc's unloads of
 *     iconv modules): a rule kept from one and used for the other crashes
 *     the sample;
 *   - a thread walks the objects with a dl_iterate_phdr callback that
 *     allocates;
 *   - the spawner's sandboxed children (a filter is for life, so only in a
 *     child): one sampled before (a ring in production), with a thread
 *     that allocates and contends, then installs a seccomp allowlist of
 *     what the program itself needs (memory, futex, exit...: no ioctl,
 *     fstat, readlink, writev...), alternately through glibc (prctl, or
 *     syscall(SYS_seccomp) with TSYNC: the shim sees it and stops) and
 *     through a raw syscall instruction (the shim cannot see it: it must
 *     make no syscall of its own while sampling; in test mode, its record
 *     path is write(2) to the sink, which the filter then allows: that is
 *     the producer ring with the module, no syscall, but for the two that
 *     install_filter() allows there).  Forbidden syscalls
 *     trap (SIGSYS): the child names the syscall and exits 100.  After
 *     the filter the child starts one more thread, which allocates and
 *     contends (its first countdown is drawn filtered).  Marker
 *     allocations (MARK_PRE bytes before the filter, MARK_POST after, K
 *     each) let the caller count records per child;
 *   - a thread runs coroutines (makecontext/swapcontext) on 16, 8, 4 and
 *     2 KiB stacks with a guard page below, which allocate and contend (a
 *     sample may take 1 KiB of its caller's stack: on the caller's stack
 *     it overflows 2 KiB);
 *   - a thread with an 8 KiB sigaltstack gets SIGUSR2, and its handler
 *     allocates and contends.
 *
 * usage: torture SECS PLUGIN [module]
 * "module": the record path is the module's producer ring, so a raw
 * filter allows no write(2) (test mode: it allows write, the sink's), and
 * each sandboxed child is listed ("seccomp-child libc|raw PID").
 * Prints the children made by each way and the number that did not end
 * within 10 s (killed) or ended abnormally, then "torture: ok" if none;
 * exit status 0 only then; each bad child is named on stderr
 * (TORTURE_HOLD=1: a hung one is left for a debugger, the spawner waits).
 * The caller checks the records against the counts (torture_host_test.sh).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "seccomp_allow.h"

extern char **environ;

enum { FORK, UFORK, CLONE, VFORK, SPAWN, SECCOMP_LIBC, SECCOMP_RAW,
       SIGFORK, SIGUFORK, SIGSPAWN, NWAYS };
#define SPAWNER_WAYS SIGFORK
static const char *const way_name[NWAYS] = {
	"fork", "_Fork", "clone", "vfork", "posix_spawn", "seccomp libc", "seccomp raw",
	"handler fork", "handler _Fork", "handler posix_spawn",
};
static atomic_int made[NWAYS], bad[NWAYS];
static atomic_int stop;
static int *trapped;		/* shared with the sandboxed children, */
static __thread int *my_trap;	/* a slot for each spawner */
static int module_mode, strict_raw;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *plugin;

static void churn(size_t n)
{
	void *p = malloc(n);

	/* The pointer escapes, so the pair is not optimized away. */
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

/* reap - wait up to 10 s for @pid; count it bad if it hung or died. */
static void reap(int way, pid_t pid)
{
	int st;

	if (pid < 0) {
		atomic_fetch_add(&bad[way], 1);
		return;
	}
	atomic_fetch_add(&made[way], 1);
	for (int i = 0; i < 10000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				atomic_fetch_add(&bad[way], 1);
				fprintf(stderr, "%s child %d: status %#x\n", way_name[way], pid, st);
				if (WIFEXITED(st) && WEXITSTATUS(st) == 100 && my_trap)
					fprintf(stderr, "%s child %d: forbidden syscall %d\n",
						way_name[way], pid, *my_trap);
			}
			return;
		}
		usleep(1000);
	}
	fprintf(stderr, "%s child %d: hung\n", way_name[way], pid);
	if (getenv("TORTURE_HOLD"))
		pause();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	atomic_fetch_add(&bad[way], 1);
}

static atomic_int corrupt, grown, grown_big, main_marks;

/* A marker of the main process: one ALLOC and one FREE each at rate 1. */
#define MARK_MAIN	4243

/*
 * No lost byte: fill a block of @n bytes up to its usable size u (the
 * slack too, as systemd's greedy_realloc does), grow it to
 * @per_usable * u + @plus bytes, check every byte came along; count it in
 * @done.
 */
static void grow_to(size_t n, size_t per_usable, size_t plus, unsigned char tag,
		    atomic_int *done)
{
	unsigned char *p = malloc(n), *q;
	size_t u;

	if (!p)
		return;
	u = malloc_usable_size(p);
	memset(p, tag, u);
	q = realloc(p, per_usable * u + plus);
	if (!q) {
		free(p);
		return;
	}
	for (size_t i = 0; i < u; i++)
		if (q[i] != tag) {
			atomic_fetch_add(&corrupt, 1);
			break;
		}
	atomic_fetch_add(done, 1);
	free(q);
}

/* A small block, grown to twice its usable size and @n more. */
static void grow_check(size_t n, unsigned char tag)
{
	grow_to(n, 2, n, tag, &grown);
}

/*
 * A block above glibc's mmap threshold (128 KiB), grown to 1 MiB: the real
 * realloc moves it with mremap(2), a path the small blocks never take.
 */
static void grow_check_big(unsigned char tag)
{
	grow_to(256 << 10, 0, 1 << 20, tag, &grown_big);
}

static void *worker(void *a)
{
	(void)a;
	grow_check_big(0xa5);
	for (int i = 0; i < 200; i++) {
		churn(MARK_MAIN);
		atomic_fetch_add(&main_marks, 1);
		churn(16 + (size_t)i * 40);
		grow_check(24 + (size_t)i * 100, (unsigned char)i);
		pthread_mutex_lock(&mu);
		churn(64);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *workers(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		pthread_t t[4];

		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

static int exec_true(void *a)
{
	(void)a;
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

static char clone_stack[2][256 * 1024] __attribute__((aligned(16)));	/* a spawner's */

/* The vfork child never returns from here: it execs or _exit()s. */
__attribute__((noinline)) static pid_t spawn_vfork(void)
{
	pid_t pid = vfork();

	if (pid == 0) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid;
}


/* ---------------------------------------------------------- seccomp */

#define K		200
#define MARK_PRE	4241
#define MARK_POST	4242

static pthread_mutex_t smu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int sandbox_stop;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	*my_trap = si->si_syscall;
	_exit(100);
}

/*
 * What the child itself does after the filter: allocate (brk, mmap,
 * munmap, mremap, madvise, mprotect; malloc may read
 * /proc/sys/vm/overcommit_memory: openat, read, close), contend (futex,
 * sched_yield), a thread's start, exit (rseq) and join, exit.  @allow_write:
 * test mode's record path, for a filter the shim cannot see.
 * @allow_kick: with the module, the two syscalls the shim still makes on a
 * sampling path, which it cannot avoid under a filter it does not see
 * (user/shim/README.md, "Known limits"): the ring's kick when a quarter
 * full (open, ioctl, close) and clock_gettime where the vDSO cannot serve
 * it (a guest's clocksource; the lock profiles' timing).  Anything else
 * traps.  TORTURE_STRICT_RAW=1 leaves them out: the raw-filtered children
 * trap on ioctl (16) or clock_gettime (228).
 */
static int install_filter(int raw, int use_prctl, int allow_write, int allow_kick)
{
	struct sock_filter f[] = {
		SECCOMP_ALLOW_ALLOCATING,
		ALLOW(__NR_clone), ALLOW(__NR_clone3),
		ALLOW(allow_write ? __NR_write : __NR_brk),
		ALLOW(allow_kick ? __NR_ioctl : __NR_brk),
		ALLOW(allow_kick ? __NR_clock_gettime : __NR_brk),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (raw) {
		if (raw_syscall(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return -1;
		return (int)raw_syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
					SECCOMP_FILTER_FLAG_TSYNC, (long)&prog, 0, 0);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (use_prctl)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

static void mark(size_t n)
{
	for (int i = 0; i < K; i++) {
		churn(n);
		pthread_mutex_lock(&smu);
		churn(24);
		pthread_mutex_unlock(&smu);
	}
}

static void *sandbox_thread(void *a)
{
	(void)a;
	while (!atomic_load(&sandbox_stop)) {
		pthread_mutex_lock(&smu);
		churn(56);
		pthread_mutex_unlock(&smu);
	}
	return NULL;
}

/* The child: never returns. */
static void sandboxed(int raw, int use_prctl)
{
	struct sigaction sa;
	pthread_t t, t2;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	*my_trap = -1;
	if (pthread_create(&t, NULL, sandbox_thread, NULL))
		_exit(102);
	mark(MARK_PRE);
	if (install_filter(raw, use_prctl, raw && !module_mode,
			   raw && module_mode && !strict_raw))
		_exit(101);
	/* a thread born filtered: its first allocation draws a countdown */
	if (pthread_create(&t2, NULL, sandbox_thread, NULL))
		_exit(103);
	mark(MARK_POST);
	atomic_store(&sandbox_stop, 1);
	pthread_join(t, NULL);
	pthread_join(t2, NULL);
	_exit(0);
}

/* Two of these, @a 0 and 1, a way apart. */
static void *spawner(void *a)
{
	my_trap = trapped + (intptr_t)a;
	for (int n = (int)(intptr_t)a; !atomic_load(&stop); n++) {
		int way = n % SPAWNER_WAYS;
		pid_t pid = -1;

		switch (way) {
		case FORK:
			pid = fork();
			if (pid == 0) {
				churn(1000);
				_exit(0);
			}
			break;
		case UFORK:
			pid = _Fork();
			if (pid == 0)
				exec_true(NULL);
			break;
		case CLONE:
			pid = clone(exec_true, clone_stack[(intptr_t)a] + sizeof(clone_stack[0]),
				    SIGCHLD, NULL);
			break;
		case VFORK:
			pid = spawn_vfork();
			break;
		case SPAWN: {
			char *argv[] = { "true", NULL };

			if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ))
				pid = -1;
			break;
		}
		case SECCOMP_LIBC:
		case SECCOMP_RAW:
			pid = fork();
			if (pid == 0)
				sandboxed(way == SECCOMP_RAW, n / SPAWNER_WAYS % 2);
			/* records carry the pid only with the module */
			if (module_mode && pid > 0)
				printf("seccomp-child %s %d\n", way == SECCOMP_RAW ? "raw" : "libc",
				       pid);
			break;
		}
		reap(way, pid);
	}
	return NULL;
}

/* fork(), _Fork() (the child execs), posix_spawn() in turn */
static void on_usr1(int sig)
{
	static atomic_int turn;
	char *argv[] = { "true", NULL };
	int way = SIGFORK + atomic_fetch_add(&turn, 1) % 3;
	pid_t pid = -1;

	(void)sig;
	churn(200);
	pthread_mutex_lock(&mu);
	churn(300);
	pthread_mutex_unlock(&mu);
	if (way == SIGFORK) {
		pid = fork();
		if (pid == 0)
			_exit(0);
	} else if (way == SIGUFORK) {
		pid = _Fork();
		if (pid == 0)
			exec_true(NULL);
	} else if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ)) {
		pid = -1;
	}
	reap(way, pid);
}

static atomic_ulong spins;

/* The signal target: never allocates, so its handler may. */
static void *victim(void *a)
{
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };

	(void)a;
	sigaltstack(&ss, NULL);
	while (!atomic_load(&stop))
		atomic_fetch_add(&spins, 1);
	return NULL;
}


/* ---------------------------------------------------------- small stacks */

static atomic_int coro_runs, alt8_runs;
static ucontext_t coro_main, coro_ctx;

/* A coroutine: allocates and contends, yields, again, returns. */
static void coro_body(void)
{
	for (int i = 0; i < 4; i++) {
		churn(16 + (size_t)i * 300);
		pthread_mutex_lock(&mu);
		churn(40);
		pthread_mutex_unlock(&mu);
		swapcontext(&coro_ctx, &coro_main);
	}
	atomic_fetch_add(&coro_runs, 1);
}

/* One coroutine from start to end; getcontext() returns here once more. */
__attribute__((noinline)) static void coro_run(char *sp, size_t size)
{
	getcontext(&coro_ctx);
	coro_ctx.uc_stack.ss_sp = sp;
	coro_ctx.uc_stack.ss_size = size;
	coro_ctx.uc_link = &coro_main;
	makecontext(&coro_ctx, coro_body, 0);
	for (int k = 0; k < 5; k++)
		swapcontext(&coro_main, &coro_ctx);
}

static void *coroutines(void *a)
{
	static const size_t sizes[] = { 16384, 8192, 4096, 2048 };
	const size_t guard = 4096;
	char *mem[4];

	(void)a;
	/* a guard page below each: an overflow is a SIGSEGV, not corruption */
	for (int i = 0; i < 4; i++) {
		mem[i] = mmap(NULL, guard + sizes[i], PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem[i] == MAP_FAILED || mprotect(mem[i], guard, PROT_NONE))
			abort();
	}
	for (int n = 0; !atomic_load(&stop); n++)
		coro_run(mem[n % 4] + guard, sizes[n % 4]);
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
	churn(100);
	pthread_mutex_lock(&mu);
	churn(150);
	pthread_mutex_unlock(&mu);
	atomic_fetch_add(&alt8_runs, 1);
}

/* Another signal target, on an 8 KiB sigaltstack with a guard page. */
static void *victim8(void *a)
{
	char *m = mmap(NULL, 4096 + 8192, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t ss;

	(void)a;
	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE))
		abort();
	ss.ss_sp = m + 4096;
	ss.ss_size = 8192;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL))
		abort();
	while (!atomic_load(&stop))
		atomic_fetch_add(&spins, 1);
	return NULL;
}

static int (*libc_dlclose)(void *);
static int behind;	/* loads unloaded by libc_dlclose */

/*
 * The reload_rbp.S pair one after the other, 3 allocations through each,
 * each unloaded by libc's dlclose (no wrapped dlclose between them: that
 * one empties the rule caches).
 */
static void reload_behind(void)
{
	static const char *const names[] = { "libreload_fp.so", "libreload_nofp.so" };
	const char *slash = strrchr(plugin, '/');
	int dir = slash ? (int)(slash - plugin) : 0;

	for (int r = 0; r < 2; r++) {
		void *(*plug)(size_t);
		char path[4096];
		void *h;

		snprintf(path, sizeof(path), "%.*s%s%s", dir, plugin, slash ? "/" : "",
			 names[r]);
		h = dlopen(path, RTLD_NOW);
		if (!h)
			return;
		*(void **)&plug = dlsym(h, "plug");
		for (int i = 0; plug && i < 3; i++)
			free(plug(1000));
		libc_dlclose(h);
		behind++;
	}
}

static void *loader(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		void *h = dlopen(plugin, RTLD_NOW);

		churn(32);
		if (h)
			dlclose(h);
		if (libc_dlclose)
			reload_behind();
	}
	return NULL;
}

static int walk_cb(struct dl_phdr_info *i, size_t s, void *d)
{
	(void)i; (void)s; (void)d;
	churn(48);
	return 0;
}

static void *walker(void *a)
{
	(void)a;
	while (!atomic_load(&stop))
		dl_iterate_phdr(walk_cb, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t t[8];
	int secs, fails = 0;
	struct timespec end, now;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "module"))) {
		fprintf(stderr, "usage: torture SECS PLUGIN [module]\n");
		return 2;
	}
	module_mode = argc == 4;
	strict_raw = getenv("TORTURE_STRICT_RAW") != NULL;
	trapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (trapped == MAP_FAILED)
		return 2;
	secs = atoi(argv[1]);
	plugin = argv[2];
	{
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		/* libc's own, not the shim's wrapper (a dlsym in libc's handle) */
		*(void **)&libc_dlclose = libc ? dlsym(libc, "dlclose") : NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	pthread_create(&t[0], NULL, workers, NULL);
	pthread_create(&t[1], NULL, spawner, (void *)0);
	pthread_create(&t[7], NULL, spawner, (void *)1);
	pthread_create(&t[2], NULL, victim, NULL);
	pthread_create(&t[3], NULL, loader, NULL);
	pthread_create(&t[4], NULL, walker, NULL);
	pthread_create(&t[5], NULL, coroutines, NULL);
	pthread_create(&t[6], NULL, victim8, NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs;
	do {
		usleep(50000);
		pthread_kill(t[2], SIGUSR1);
		pthread_kill(t[6], SIGUSR2);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec ||
		 (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	atomic_store(&stop, 1);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (int w = 0; w < NWAYS; w++) {
		printf("%s %d bad %d\n", way_name[w], made[w], bad[w]);
		fails += bad[w] + !made[w];
	}
	printf("coroutines %d\naltstack8 %d\nrealloc %d big %d corrupt %d\nmain marks %d\n"
	       "unloaded behind the shim %d\n",
	       coro_runs, alt8_runs, grown, grown_big, corrupt, main_marks, behind);
	fails += !coro_runs + !alt8_runs + !grown + !grown_big + corrupt;
	printf(fails ? "torture: FAILED\n" : "torture: ok\n");
	return fails != 0;
}
