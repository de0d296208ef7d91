// SPDX-License-Identifier: GPL-2.0
/*
 * stack_checks MODE: what a sample may do to its caller (issue 15), run
 * plainly and under the shim by stack_host_test.sh.
 *
 *   altstack SIZE  a handler on a SIZE-byte sigaltstack with a PROT_NONE
 *                  guard page below it allocates, 100 times (an overflow
 *                  is a SIGSEGV); prints "ok".
 *   costack        malloc+free on a 16 KiB makecontext() stack with a
 *                  guard page; prints "costack BYTES": the stack's
 *                  high-water mark (bytes ever written), the highest of 20
 *                  runs, after a first call on the main stack (so that no
 *                  run pays the lazy binding of malloc and free).
 *   costacks N     malloc+free on N (at most 4) coroutine stacks, each in
 *                  a 64 KiB region of its own, 20 times in turn; prints
 *                  "costacks N".
 *   fds            lists /proc/self/fd (without allocating), samples (64 MiB of allocations,
 *                  contended locks), lists it again; prints "fds same" or
 *                  "fds before: ... after: ...".
 *   deep LIB       calls LIB's deep_0 (a chain of 18 frame-pointer-less
 *                  functions ending in malloc(12345)) and then reads the
 *                  test sink (KPPROF_TEST_SINK): prints "deep N/19" where
 *                  N is how many of deep_0..deep_17 and deep_leaf the
 *                  best ALLOC record of 12345 bytes names.
 *   deephandler KIB [SECONDS [raw]]  a SIGALRM handler (no sigaltstack) that uses KIB KiB
 *                  of stack, from an interval timer every 100 us, while
 *                  the main thread allocates in a loop (at rate 1 most of
 *                  its time is in samples, so the signal often lands on a
 *                  sample's private stack): until 20 handlers have run on a
 *                  stack other than the thread's own, at most SECONDS
 *                  (default 20); prints
 *                  "deephandler H handlers, F on another stack, KIB KiB
 *                  each" (plainly F is 0: there is no other stack).  "raw":
 *                  installed with the rt_sigaction syscall, not sigaction(),
 *                  so the shim cannot wrap it (user/shim/sigwrap.c runs a
 *                  handler it wraps on the thread's stack): the kernel runs
 *                  it where it lands, on the private stack.
 *   badrbp         malloc+free with %rbp holding values a frame-pointer-less
 *                  caller may leave there: -16 and -8 (a frame record that
 *                  would end past 2^64), 1 << 62, the top of this stack;
 *                  prints "badrbp ok".
 *   getattr        8 threads whose first call is pthread_getattr_np() of
 *                  themselves, then of one another, with allocations
 *                  between (glibc's allocates its cpuset with the
 *                  descriptor's lock held; the JVM does this at each
 *                  thread start); prints "getattr ok".
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <alloca.h>
#include <ucontext.h>
#include <unistd.h>
#include "kpprof.h"

static volatile int handled;

static void on_usr1(int sig)
{
	void *volatile p = malloc(64);

	(void)sig;
	free(p);
	handled++;
}

/* A stack of @size bytes above a PROT_NONE page. */
static char *guarded(size_t size)
{
	char *m = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE)) {
		perror("mmap");
		exit(2);
	}
	return m + 4096;
}

static int altstack(size_t size)
{
	stack_t ss = { .ss_sp = guarded(size), .ss_size = size };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
	void *volatile q = malloc(64);

	free(q);	/* a first sample on the normal stack */
	if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL)) {
		perror("sigaltstack");
		return 2;
	}
	for (int i = 0; i < 100; i++)
		raise(SIGUSR1);
	printf("ok: %d handlers on a %zu-byte sigaltstack\n", handled, size);
	return 0;
}

#define CO_SIZE	(16 << 10)
static ucontext_t main_ctx, co_ctx;

static void co(void)
{
	void *volatile p = malloc(64);

	free(p);
}

/* One coroutine run; the bytes of its stack it wrote. */
__attribute__((noinline)) static size_t co_run(char *stk)
{
	size_t i = 0;

	memset(stk, 0x5a, CO_SIZE);
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stk;
	co_ctx.uc_stack.ss_size = CO_SIZE;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co, 0);
	swapcontext(&main_ctx, &co_ctx);
	while (i < CO_SIZE && (unsigned char)stk[i] == 0x5a)
		i++;
	return CO_SIZE - i;
}

static int costack(void)
{
	char *stk = guarded(CO_SIZE);
	size_t worst = 0;

	co();	/* bind malloc and free (lazy binding's xsave area is large) */

	for (int run = 0; run < 20; run++) {
		size_t used = co_run(stk);

		if (used > worst)
			worst = used;
	}
	printf("costack %zu\n", worst);
	return 0;
}

/* @n coroutines, each on a stack in a 64 KiB region of its own, in turn. */
static int costacks(volatile int n)
{
	char *stk[4];

	if (n < 1 || n > 4)
		return 2;
	for (int i = 0; i < n; i++)
		if (!(stk[i] = aligned_alloc(64 << 10, 64 << 10)))
			return 2;
	for (volatile int run = 0; run < 20; run++)
		for (volatile int i = 0; i < n; i++) {
			getcontext(&co_ctx);
			co_ctx.uc_stack.ss_sp = stk[i];
			co_ctx.uc_stack.ss_size = 64 << 10;
			co_ctx.uc_link = &main_ctx;
			makecontext(&co_ctx, co, 0);
			swapcontext(&main_ctx, &co_ctx);
		}
	printf("costacks %d\n", n);
	return 0;
}

/* The open descriptors, listed without allocating (so without sampling). */
static void list_fds(char *buf, size_t size)
{
	static char ents[8192];
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len = 0;
	long n;

	buf[0] = 0;
	while (fd >= 0 && (n = syscall(SYS_getdents64, fd, ents, sizeof(ents))) > 0)
		for (long off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(ents + off);

			if (e->d_name[0] != '.' && atoi(e->d_name) != fd)
				len += (size_t)snprintf(buf + len, size - len, " %s", e->d_name);
			off += e->d_reclen;
		}
	if (fd >= 0)
		close(fd);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *contend(void *a)
{
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(&m);
		for (volatile int j = 0; j < 100; j++)
			;
		pthread_mutex_unlock(&m);
	}
	return a;
}

static int fds(void)
{
	char before[512], after[512];
	pthread_t t[2];

	list_fds(before, sizeof(before));
	for (int i = 0; i < 1024; i++) {
		void *volatile p = malloc(64 << 10);

		free(p);
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, contend, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	list_fds(after, sizeof(after));
	if (!strcmp(before, after))
		printf("fds same:%s\n", before);
	else
		printf("fds before:%s after:%s\n", before, after);
	return 0;
}

#define DEEP_N		19	/* deep_0..deep_17, deep_leaf */
#define DEEP_MAGIC	12345

static int deep(const char *lib)
{
	uintptr_t lo[DEEP_N], hi[DEEP_N];
	const char *sink = getenv("KPPROF_TEST_SINK");
	void *h = dlopen(lib, RTLD_NOW);
	int (*entry)(int);
	int best = 0, fd;
	static char buf[1 << 20];
	ssize_t len;

	if (!h || !sink) {
		printf("deep: %s\n", h ? "no KPPROF_TEST_SINK" : dlerror());
		return 2;
	}
	for (int i = 0; i < DEEP_N; i++) {
		char name[32];
		const ElfW(Sym) *sym;
		Dl_info info;
		void *f;

		if (i < DEEP_N - 1)
			snprintf(name, sizeof(name), "deep_%d", i);
		else
			strcpy(name, "deep_leaf");
		f = dlsym(h, name);
		if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
			printf("deep: no %s\n", name);
			return 2;
		}
		lo[i] = (uintptr_t)f;
		hi[i] = lo[i] + sym->st_size;
	}
	*(void **)&entry = dlsym(h, "deep_0");
	for (int i = 0; i < 20; i++)
		entry(i);
	fd = open(sink, O_RDONLY);
	len = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	for (ssize_t off = 0; len > 0 && off + (ssize_t)sizeof(struct kpprof_record) <= len;) {
		const struct kpprof_record *r = (const void *)(buf + off);
		const struct kpprof_rec_alloc *a = (const void *)r;
		int named = 0;

		if (r->size < sizeof(*r) || off + r->size > len)
			break;
		if (r->kind == KPPROF_REC_ALLOC && a->bytes == DEEP_MAGIC) {
			for (int i = 0; i < DEEP_N; i++)
				for (unsigned int k = 0; k < r->nr_pcs; k++)
					if (a->pcs[k] > lo[i] && a->pcs[k] <= hi[i]) {
						named++;
						break;
					}
			if (named > best)
				best = named;
		}
		off += r->size;
	}
	printf("deep %d/%d\n", best, DEEP_N);
	return 0;
}

static char *main_lo, *main_hi;
static volatile unsigned long deep_kib, deep_handled, deep_foreign;

static void on_alrm(int sig)
{
	char here;
	volatile char *buf = alloca(deep_kib << 10);

	(void)sig;
	/* Touch every page, from the top down as a deep call chain would. */
	for (long i = (long)(deep_kib << 10) - 1; i >= 0; i -= 1024)
		buf[i] = (char)i;
	if (&here < main_lo || &here >= main_hi)
		deep_foreign++;
	deep_handled++;
}

/* the kernel's struct sigaction, and a restorer as glibc's (libgcc knows it) */
struct raw_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};
void raw_restorer(void);
__asm__(".text\n.type raw_restorer, @function\nraw_restorer:\n"
	"\tmovq $15, %rax\n\tsyscall\n\thlt\n.size raw_restorer, .-raw_restorer\n");
#define RAW_SA_RESTORER	0x04000000

static int deephandler(unsigned long kib, long secs, bool raw)
{
	struct sigaction sa = { .sa_handler = on_alrm, .sa_flags = SA_RESTART };
	struct raw_sigaction ra = { on_alrm, SA_RESTART | RAW_SA_RESTORER, raw_restorer, 0 };
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	struct timespec t0, t;
	pthread_attr_t attr;
	size_t size;
	void *lo;

	if (pthread_getattr_np(pthread_self(), &attr) ||
	    pthread_attr_getstack(&attr, &lo, &size)) {
		perror("pthread_getattr_np");
		return 2;
	}
	main_lo = lo;
	main_hi = main_lo + size;
	deep_kib = kib;
	if ((raw ? syscall(SYS_rt_sigaction, SIGALRM, &ra, NULL, sizeof(ra.mask))
		 : sigaction(SIGALRM, &sa, NULL)) ||
	    setitimer(ITIMER_REAL, &it, NULL)) {
		perror("setitimer");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; deep_foreign < 20; i++) {
		void *volatile p = malloc(64 + (i & 1023));

		free(p);
		if (i % 1024)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= secs)
			break;
	}
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	printf("deephandler %lu handlers, %lu on another stack, %lu KiB each\n",
	       deep_handled, deep_foreign, kib);
	return 0;
}

void *rbp_malloc(size_t n, uintptr_t rbp);	/* rbp_malloc.S */

static int badrbp(void)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	const uintptr_t bad[] = {
		(uintptr_t)-16, (uintptr_t)-8, (uintptr_t)-24, (uintptr_t)1 << 62,
		(here | 0xfff) - 15, (here | 0xfff) + 1,
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int k = 0; k < 100; k++)
			free(rbp_malloc(100 + k, bad[i]));
	puts("badrbp ok");
	return 0;
}

#define GETATTR_THREADS 8
static pthread_t getattr_th[GETATTR_THREADS];
static pthread_barrier_t getattr_go, getattr_done;

static void *getattr_thread(void *arg)
{
	unsigned long me = (unsigned long)arg;
	pthread_attr_t a;

	if (pthread_getattr_np(pthread_self(), &a))
		return (void *)1;
	pthread_attr_destroy(&a);
	pthread_barrier_wait(&getattr_go);
	for (int i = 0; i < 200; i++) {
		free(malloc(64 + i));
		if (pthread_getattr_np(getattr_th[(me + i) % GETATTR_THREADS], &a))
			return (void *)1;
		pthread_attr_destroy(&a);
	}
	/* alive until all are done: the cpuset of an exited thread is ESRCH */
	pthread_barrier_wait(&getattr_done);
	return NULL;
}

static int getattr_checks(void)
{
	void *r;
	int bad = 0;

	/* the main thread too: every getattr_th[] is stored before use */
	pthread_barrier_init(&getattr_go, NULL, GETATTR_THREADS + 1);
	pthread_barrier_init(&getattr_done, NULL, GETATTR_THREADS);
	for (unsigned long i = 0; i < GETATTR_THREADS; i++)
		if (pthread_create(&getattr_th[i], NULL, getattr_thread, (void *)i))
			return 2;
	pthread_barrier_wait(&getattr_go);
	for (int i = 0; i < GETATTR_THREADS; i++) {
		pthread_join(getattr_th[i], &r);
		bad += r != NULL;
	}
	puts(bad ? "getattr failed" : "getattr ok");
	return bad != 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "altstack"))
		return altstack(strtoul(argv[2], NULL, 0));
	if (argc > 2 && !strcmp(argv[1], "costacks"))
		return costacks(atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "costack"))
		return costack();
	if (argc > 1 && !strcmp(argv[1], "fds"))
		return fds();
	if (argc > 1 && !strcmp(argv[1], "badrbp"))
		return badrbp();
	if (argc > 1 && !strcmp(argv[1], "getattr"))
		return getattr_checks();
	if (argc > 2 && !strcmp(argv[1], "deep"))
		return deep(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "deephandler"))
		return deephandler(strtoul(argv[2], NULL, 0),
				   argc > 3 ? atol(argv[3]) : 20,
				   argc > 4 && !strcmp(argv[4], "raw"));
	fprintf(stderr, "usage: stack_checks altstack SIZE | costack | fds | badrbp | getattr | deep LIB | deephandler KIB [SECONDS [raw]]\n");
	return 2;
}
