// SPDX-License-Identifier: GPL-2.0
/*
 * shim_workload: programs for the shim's tests, one scenario per argument.
 * Run under LD_PRELOAD=libkpprof.so (and without it, to compare).  stdout
 * carries only deterministic results ("ok SCENARIO ..."), so runs with and
 * without the shim can be compared byte for byte; addresses the VM tests
 * need (allocation sites, the contended lock) go to stderr as
 * "SITE name start end" / "LOCK name addr".
 *
 *   alloc N       N mallocs from alloc_site() plus one call of every other
 *                 allocation function, all freed from free_site()
 *   threads N     N short-lived threads (64 at a time) that allocate
 *   fork N        N forks from a process with 4 allocating threads; each
 *                 child allocates from alloc_site() and exits 0
 *   exec          exec itself as "alloc 10" (the new image is profiled)
 *   dlopen N      dlopen/dlclose libshim_plugin.so N times, allocating in it
 *   signals       allocate under a 100 us SIGALRM whose handler locks
 *   mutex MS      4 threads contend one mutex for MS milliseconds
 *   rwlock MS     4 threads contend one rwlock (writers) for MS ms
 *   early         free and realloc blocks allocated before the shim's init
 *   volume MB SZ  allocate and free MB MiB in SZ-byte blocks from alloc_site
 *   watch MS      allocate 1 KiB blocks from alloc_site for MS milliseconds
 *   closefd       put a file on the shim's descriptor number, allocate,
 *                 check the file got none of our bytes
 *   bench-*       see bench.c
 */
#include <dlfcn.h>
#include <link.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile sink;

/* SITE lines: a function's address range, from its symbol's size (the
 * program is linked with -rdynamic so dladdr1 finds it). */
#define SITE(fn, unused) site(#fn, (void *)(fn))

static void site(const char *name, void *fn)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
		fprintf(stderr, "SITE %s %p %p\n", name, fn, (char *)fn + 1);
		return;
	}
	fprintf(stderr, "SITE %s %p %p\n", name, fn, (char *)fn + sym->st_size);
}

NOINLINE void *alloc_site(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

NOINLINE void alloc_site_end(void)
{
	__asm__ volatile("");
}

NOINLINE void *other_site(int which, size_t n)
{
	void *p = NULL;

	switch (which) {
	case 0: p = calloc(1, n); break;
	case 1: p = realloc(NULL, n); break;
	case 2: p = memalign(64, n); break;
	case 3: if (posix_memalign(&p, 64, n)) p = NULL; break;
	case 4: p = aligned_alloc(64, n); break;
	case 5: p = valloc(n); break;
	case 6: p = pvalloc(n); break;
	case 7: p = reallocarray(NULL, 1, n); break;
	}
	__asm__ volatile("" ::: "memory");
	return p;
}

NOINLINE void other_site_end(void)
{
	__asm__ volatile("");
}

static int do_alloc(int n)
{
	void **v = calloc((size_t)n + 8, sizeof(*v));
	int i;

	SITE(alloc_site, alloc_site_end);
	SITE(other_site, other_site_end);
	for (i = 0; i < n; i++)
		v[i] = alloc_site(1000 + (size_t)i);
	for (i = 0; i < 8; i++)
		v[n + i] = other_site(i, 3000 + (size_t)i);
	/* realloc moves or grows a sampled block: free + alloc */
	v[0] = realloc(v[0], 100000);
	for (i = 0; i < n + 8; i++) {
		if (!v[i])
			return printf("fail alloc %d\n", i), 1;
		memset(v[i], 1, 16);
		free(v[i]);
	}
	free(v);
	printf("ok alloc %d\n", n);
	return 0;
}

static void *thread_alloc(void *arg)
{
	(void)arg;
	sink = alloc_site(128);
	free(sink);
	return NULL;
}

static int do_threads(int n)
{
	pthread_t t[64];

	SITE(alloc_site, alloc_site_end);
	for (int done = 0; done < n;) {
		int k = n - done < 64 ? n - done : 64;

		for (int i = 0; i < k; i++)
			if (pthread_create(&t[i], NULL, thread_alloc, NULL))
				return printf("fail pthread_create\n"), 1;
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
		done += k;
	}
	printf("ok threads %d\n", n);
	return 0;
}

static atomic_int stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p = malloc(256);

		free(p);
	}
	return NULL;
}

static int do_fork(int n)
{
	pthread_t t[4];
	int bad = 0;

	SITE(alloc_site, alloc_site_end);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			for (int j = 0; j < 10; j++)
				free(alloc_site(5000));
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%s fork %d\n", bad ? "fail" : "ok", n);
	return bad != 0;
}

static int do_dlopen(const char *self, int n)
{
	char path[4096];
	const char *slash = strrchr(self, '/');

	snprintf(path, sizeof(path), "%.*slibshim_plugin.so",
		 slash ? (int)(slash - self + 1) : 0, self);
	for (int i = 0; i < n; i++) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		void *(*fn)(size_t);

		if (!h)
			return printf("fail dlopen %s\n", dlerror()), 1;
		*(void **)&fn = dlsym(h, "plugin_alloc");
		if (!fn)
			return printf("fail dlsym\n"), 1;
		free(fn(777));
		dlclose(h);
	}
	printf("ok dlopen %d\n", n);
	return 0;
}

static volatile sig_atomic_t handled;
static pthread_mutex_t sig_mutex = PTHREAD_MUTEX_INITIALIZER;

static void on_alarm(int sig)
{
	(void)sig;
	/* Not async-signal-safe by POSIX, but this mutex is only ever taken
	 * here: it exercises the lock wrapper from inside a signal handler. */
	pthread_mutex_lock(&sig_mutex);
	handled++;
	pthread_mutex_unlock(&sig_mutex);
}

static int do_signals(void)
{
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	struct sigaction sa;
	long i;

	SITE(alloc_site, alloc_site_end);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < 200000 || !handled; i++)
		free(alloc_site((size_t)(i % 512) + 1));
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("ok signals\n");
	return 0;
}

static pthread_mutex_t the_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t the_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t deadline_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void spin_us(unsigned int us)
{
	uint64_t end = now_ns() + us * 1000ULL;

	while (now_ns() < end)
		;
}

NOINLINE void lock_site(void)
{
	pthread_mutex_lock(&the_mutex);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void unlock_site(void)
{
	pthread_mutex_unlock(&the_mutex);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void unlock_site_end(void)
{
	__asm__ volatile("");
}

static void *contend_mutex(void *arg)
{
	(void)arg;
	while (now_ns() < deadline_ns) {
		lock_site();
		spin_us(200);
		unlock_site();
		spin_us(20);
	}
	return NULL;
}

static void *contend_rwlock(void *arg)
{
	(void)arg;
	while (now_ns() < deadline_ns) {
		pthread_rwlock_wrlock(&the_rwlock);
		spin_us(200);
		pthread_rwlock_unlock(&the_rwlock);
		spin_us(20);
	}
	return NULL;
}

static int do_contend(int ms, bool rw)
{
	pthread_t t[4];

	SITE(lock_site, unlock_site);
	SITE(unlock_site, unlock_site_end);
	fprintf(stderr, "LOCK %s %p\n", rw ? "rwlock" : "mutex",
		rw ? (void *)&the_rwlock : (void *)&the_mutex);
	deadline_ns = now_ns() + (uint64_t)ms * 1000000ULL;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, rw ? contend_rwlock : contend_mutex, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("ok %s\n", rw ? "rwlock" : "mutex");
	return 0;
}

/* From libshim_early.so, whose constructor runs before the shim's. */
extern void *early_blocks[4];

static int do_early(void)
{
	for (int i = 0; i < 4; i++)
		if (!early_blocks[i] || ((char *)early_blocks[i])[0] != 'e')
			return printf("fail early %d\n", i), 1;
	early_blocks[0] = realloc(early_blocks[0], 1 << 20);
	if (!early_blocks[0] || ((char *)early_blocks[0])[0] != 'e')
		return printf("fail early realloc\n"), 1;
	for (int i = 0; i < 4; i++)
		free(early_blocks[i]);
	printf("ok early\n");
	return 0;
}

static int find_kpprof_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[256], path[300];
	int fd = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (!strcmp(link, "/dev/kpprof"))
				fd = atoi(e->d_name);
		}
	}
	closedir(d);
	return fd;
}

static int do_closefd(void)
{
	char tmpl[] = "/tmp/shim-closefd.XXXXXX";
	int kfd = find_kpprof_fd(), fd;
	struct stat st;

	fd = mkstemp(tmpl);
	if (fd < 0)
		return printf("fail mkstemp\n"), 1;
	unlink(tmpl);
	/* Without the module there is no descriptor: use a likely number. */
	if (dup2(fd, kfd >= 0 ? kfd : 200) < 0)
		return printf("fail dup2\n"), 1;
	for (int i = 0; i < 1000; i++)
		free(alloc_site(4096));
	if (fstat(fd, &st))
		return printf("fail fstat\n"), 1;
	printf("%s closefd (%lld bytes in the file)\n", st.st_size ? "fail" : "ok",
	       (long long)st.st_size);
	return st.st_size != 0;
}

static int do_volume(int mb, int size)
{
	long n = ((long)mb << 20) / size;

	SITE(alloc_site, alloc_site_end);
	for (long i = 0; i < n; i++)
		free(alloc_site((size_t)size));
	printf("ok volume %d %d\n", mb, size);
	return 0;
}

static int do_watch(int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;

	SITE(alloc_site, alloc_site_end);
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			free(alloc_site(1024));
	printf("ok watch\n");
	return 0;
}

int bench_main(const char *what, int argc, char **argv);

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(s, "alloc"))
		return do_alloc(n ? n : 100);
	if (!strcmp(s, "threads"))
		return do_threads(n ? n : 1000);
	if (!strcmp(s, "fork"))
		return do_fork(n ? n : 20);
	if (!strcmp(s, "exec")) {
		execl("/proc/self/exe", argv[0], "alloc", "10", (char *)NULL);
		return printf("fail exec\n"), 1;
	}
	if (!strcmp(s, "dlopen"))
		return do_dlopen(argv[0], n ? n : 50);
	if (!strcmp(s, "signals"))
		return do_signals();
	if (!strcmp(s, "mutex"))
		return do_contend(n ? n : 300, false);
	if (!strcmp(s, "rwlock"))
		return do_contend(n ? n : 300, true);
	if (!strcmp(s, "early"))
		return do_early();
	if (!strcmp(s, "volume"))
		return do_volume(n ? n : 64, argc > 3 ? atoi(argv[3]) : 64);
	if (!strcmp(s, "watch"))
		return do_watch(n ? n : 1000);
	if (!strcmp(s, "closefd"))
		return do_closefd();
	if (!strncmp(s, "bench-", 6))
		return bench_main(s + 6, argc - 2, argv + 2);
	fprintf(stderr, "usage: shim_workload alloc|threads|fork|exec|dlopen|signals|mutex|rwlock|early|closefd|bench-* [N]\n");
	return 2;
}
