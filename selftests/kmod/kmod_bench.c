// SPDX-License-Identifier: GPL-2.0
/*
 * kmod_bench: what the module costs, measured against baselines in the
 * same run (the VM is emulated, so only ratios travel to other machines).
 *
 *   1. ns per write(2) of one typical record (a 64-frame alloc record,
 *      576 bytes) to /dev/kpprof, against write(2) of the same bytes to
 *      /dev/null; the ratio is the module's validation + ring cost over a
 *      bare syscall.  Also against pwrite(2) of the same bytes to a tmpfs
 *      file (a syscall that copies them in, as the module must), and the
 *      cost of a write dropped on a full ring.
 *   2. records/s with 1, 2, 4 and 8 producer threads (pinned, one per
 *      CPU while there are enough), each through its producer ring and
 *      through KPPROF_IOC_SUBMIT (a syscall per record), while a consumer
 *      thread reads with poll(), and the drops.
 *   2b. the drain's cost per record in the consumer: rings filled with no
 *      consumer attached (no periodic drain), then KPPROF_IOC_DRAIN timed
 *      until they are empty, over the records it moved (pring_drained).
 *   2c. the cost of a producer's KPPROF_IOC_KICK with its one (empty)
 *      ring, alone on the host and then beside KICK_OTHERS idle rings of
 *      other processes (KICK_UIDS uids, within pring_uid_max each): the
 *      ratio says whether a kick's cost depends on anyone's rings but the
 *      kicker's.  Also alone: `kmod_bench kick`.
 *   3. kernel memory of the module at the default ring size: free pages
 *      (MemFree + per-CPU lists), Slab and VmallocUsed around unload/load,
 *      and /sys/module/kpprof/coresize.
 *
 * usage: kmod_bench [seconds per throughput run, default 2]
 *        kmod_bench kick       (2c only)
 * Prints figures only; exits non-zero if a measurement could not be made.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kpp_dev.h"
#include "rec_build.h"
#include "pring.h"
#include "ring_reader.h"

#define TYPICAL_DEPTH	64
#define WRITES		20000
#define BATCH		1000
#define DROP_BATCHES	5

static void die(const char *what, int err)
{
	fprintf(stderr, "kmod_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* ------------------------------------------------------ 1. write cost */

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* median_per_op - ns per operation of the median of @n batches of @per */
static double median_per_op(__u64 *batch_ns, unsigned int n, unsigned int per)
{
	qsort(batch_ns, n, sizeof(*batch_ns), cmp_u64);
	return (double)batch_ns[n / 2] / per;
}

static void bench_write_cost(void)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	size_t len = rec_build__alloc(buf, TYPICAL_DEPTH, 1);
	/* per-batch times: the median batch resists a busy host's hiccups */
	__u64 b_kpp[WRITES / BATCH], b_null[WRITES / BATCH], b_file[WRITES / BATCH];
	double t_kpp, t_null, t_file;
	__u64 b_drop[DROP_BATCHES], t0;
	double t_drop;
	char tmpl[] = "/tmp/kmod_bench.XXXXXX";
	int tfd = mkstemp(tmpl);
	struct ring_reader rr;
	int cfd = dev__open(), pfd = dev__open();
	int nfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	unsigned int i, b, n_drop = 0;
	struct kpprof_config cfg;

	if (cfd < 0 || pfd < 0)
		die("open " KPPROF_DEVICE_PATH, cfd < 0 ? -cfd : -pfd);
	if (nfd < 0)
		die("open /dev/null", errno);
	if (tfd < 0)
		die("mkstemp", errno);
	unlink(tmpl);
	dev__test_config(&cfg);
	if (dev__set_config(cfd, &cfg))
		die("SET_CONFIG", errno);
	if (ring_reader__attach(&rr, cfd))
		die("attach consumer", errno);
	ring_reader__drain(&rr);
	pin(0);

	/* batches alternate, so drift in the emulator hits both alike */
	for (b = 0; b < WRITES / BATCH; b++) {
		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			if (dev__write(pfd, buf, len))
				die("write record", errno);
		b_kpp[b] = now_ns() - t0;
		ring_reader__drain(&rr);	/* not timed: the consumer's work */

		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			if (write(nfd, buf, len) != (ssize_t)len)
				die("write /dev/null", errno);
		b_null[b] = now_ns() - t0;

		/* a baseline that copies the bytes in: tmpfs page cache */
		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			if (pwrite(tfd, buf, len, 0) != (ssize_t)len)
				die("pwrite tmpfs", errno);
		b_file[b] = now_ns() - t0;
	}

	/* a small record (56-byte free): the fixed cost per call */
	{
		unsigned char small[KPP_REC_BUF_MAX];
		size_t slen = rec_build__free(small, 0x1000, 64);
		__u64 b_ks[WRITES / BATCH], b_ns[WRITES / BATCH];
		double t_ks, t_ns;

		for (b = 0; b < WRITES / BATCH; b++) {
			t0 = now_ns();
			for (i = 0; i < BATCH; i++)
				if (dev__write(pfd, small, slen))
					die("write record", errno);
			b_ks[b] = now_ns() - t0;
			ring_reader__drain(&rr);
			t0 = now_ns();
			for (i = 0; i < BATCH; i++)
				if (write(nfd, small, slen) != (ssize_t)slen)
					die("write /dev/null", errno);
			b_ns[b] = now_ns() - t0;
		}
		t_ks = median_per_op(b_ks, WRITES / BATCH, BATCH);
		t_ns = median_per_op(b_ns, WRITES / BATCH, BATCH);
		printf("small record, %zu-byte free record, %d writes, median batch:\n",
		       slen, WRITES);
		printf("  /dev/kpprof             %8.0f ns/write\n", t_ks);
		printf("  /dev/null (baseline)    %8.0f ns/write\n", t_ns);
		printf("  ratio kpprof/null       %8.2fx\n", t_ks / t_ns);
	}

	/* fill the ring, then time writes that are dropped */
	while (dev__write(pfd, buf, len) == 0)
		;
	for (b = 0; b < DROP_BATCHES; b++) {
		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			n_drop += dev__write(pfd, buf, len) == -ENOBUFS;
		b_drop[b] = now_ns() - t0;
	}
	ring_reader__drain(&rr);
	t_drop = median_per_op(b_drop, DROP_BATCHES, BATCH);

	t_kpp = median_per_op(b_kpp, WRITES / BATCH, BATCH);
	t_null = median_per_op(b_null, WRITES / BATCH, BATCH);
	t_file = median_per_op(b_file, WRITES / BATCH, BATCH);
	printf("write cost, %zu-byte alloc record (%d frames), %d writes in batches of %d,\n"
	       "pinned to CPU 0, median batch:\n", len, TYPICAL_DEPTH, WRITES, BATCH);
	printf("  /dev/kpprof             %8.0f ns/write\n", t_kpp);
	printf("  /dev/null (baseline)    %8.0f ns/write\n", t_null);
	printf("  ratio kpprof/null       %8.2fx   (target <= 1.5x: %s)\n",
	       t_kpp / t_null, t_kpp / t_null <= 1.5 ? "met" : "NOT met");
	printf("  pwrite to tmpfs (copies) %7.0f ns/write, ratio kpprof/tmpfs %.2fx\n",
	       t_file, t_kpp / t_file);
	printf("  dropped (ring full)     %8.0f ns/write (%u of %d ENOBUFS)\n",
	       t_drop, n_drop, DROP_BATCHES * BATCH);
	ring_reader__unmap(&rr);
	close(tfd);
	close(nfd);
	close(pfd);
	close(cfd);
}

/* ------------------------------------------------------ 2. throughput */

struct producer {
	pthread_t th;
	int cpu;
	int ring;		/* 1: the producer ring (ABI 3), 0: SUBMIT */
	volatile int *stop;
	__u64 ok, dropped;
};

static void *producer_run(void *p)
{
	struct producer *pr = p;
	unsigned char buf[KPP_REC_BUF_MAX];
	size_t len = rec_build__alloc(buf, TYPICAL_DEPTH, (__u64)pr->cpu);
	int fd = dev__open();
	struct pring ring;

	pin(pr->cpu);
	if (pr->ring && (fd < 0 || pring__map(&ring, fd)))
		die("map the producer ring", errno);
	while (fd >= 0 && !*pr->stop) {
		int err = pr->ring ? pring__write_kick(&ring, fd, buf, len) :
			  dev__ioctl(fd, KPPROF_IOC_SUBMIT, buf);

		if (err == 0)
			pr->ok++;
		else if (err == -ENOBUFS)
			pr->dropped++;
		else
			break;
	}
	if (pr->ring)
		pring__unmap(&ring);
	if (fd >= 0)
		close(fd);
	return NULL;
}

struct consumer {
	pthread_t th;
	struct ring_reader *rr;
	volatile int *stop;
	__u64 read, polls;
};

static void *consumer_run(void *p)
{
	struct consumer *c = p;
	struct pollfd pfd = { .fd = c->rr->fd, .events = POLLIN };

	while (!*c->stop) {
		long n;

		poll(&pfd, 1, 10);
		c->polls++;
		n = ring_reader__drain(c->rr);
		if (n > 0)
			c->read += (__u64)n;
	}
	c->read += (__u64)ring_reader__drain(c->rr);
	return NULL;
}

static double bench_throughput(int nprod, double seconds, int ring)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct producer pr[8];
	struct consumer con = { 0 };
	struct ring_reader rr;
	/* producers stop first; the consumer only once their writes are in */
	volatile int stop = 0, producers_done = 0;
	int cfd = dev__open(), i;
	__u64 ok = 0, dropped = 0, t0, dt;

	if (cfd < 0)
		die("open", -cfd);
	if (ring_reader__attach(&rr, cfd))
		die("attach consumer", errno);
	ring_reader__drain(&rr);
	con.rr = &rr;
	con.stop = &producers_done;
	if (pthread_create(&con.th, NULL, consumer_run, &con))
		die("pthread_create", errno);
	t0 = now_ns();
	for (i = 0; i < nprod; i++) {
		pr[i] = (struct producer){ .cpu = (int)(i % ncpu), .ring = ring, .stop = &stop };
		if (pthread_create(&pr[i].th, NULL, producer_run, &pr[i]))
			die("pthread_create", errno);
	}
	usleep((useconds_t)(seconds * 1e6));
	stop = 1;
	for (i = 0; i < nprod; i++) {
		pthread_join(pr[i].th, NULL);
		ok += pr[i].ok;
		dropped += pr[i].dropped;
	}
	dt = now_ns() - t0;
	producers_done = 1;
	pthread_join(con.th, NULL);
	printf("  %s %d producer%s: %10.0f records/s accepted, %10.0f dropped/s "
	       "(%.1f%% dropped), consumer read %llu of %llu\n",
	       ring ? "ring  " : "SUBMIT", nprod, nprod > 1 ? "s" : " ", ok * 1e9 / (double)dt,
	       dropped * 1e9 / (double)dt,
	       ok + dropped ? 100.0 * (double)dropped / (double)(ok + dropped) : 0.0,
	       (unsigned long long)con.read, (unsigned long long)ok);
	ring_reader__unmap(&rr);
	close(cfd);
	/* delivered: what the consumer read (a ring record may still drop) */
	return (double)con.read * 1e9 / (double)dt;
}

/* ------------------------------------------------------ 2b. drain cost */

#define DRAIN_RINGS	8
#define DRAIN_DEPTH	8	/* a small record: the drain's fixed cost shows */
#define DRAIN_ROUNDS	5

/*
 * drain_round - fill DRAIN_RINGS rings of this process with @per records
 * each, drain them with KPPROF_IOC_DRAIN on @cfd (a CAP_PERFMON file, no
 * consumer attached), return the ns spent in DRAIN and set *@moved to the
 * records it moved.  The consumer's ring must have room for them all.
 */
static __u64 drain_round(int cfd, unsigned int per, __u64 *moved, unsigned int *calls)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	size_t len = rec_build__alloc(buf, DRAIN_DEPTH, 3);
	struct pring rings[DRAIN_RINGS];
	int fds[DRAIN_RINGS];
	struct kpprof_stats s0, s1;
	__u64 ns = 0, t0;
	unsigned int i, j;

	for (i = 0; i < DRAIN_RINGS; i++) {
		fds[i] = dev__open();
		if (fds[i] < 0 || pring__map(&rings[i], fds[i]))
			die("map a producer ring", fds[i] < 0 ? -fds[i] : errno);
		for (j = 0; j < per; j++)
			if (pring__write(&rings[i], buf, len))
				die("fill a producer ring", ENOBUFS);
	}
	if (dev__stats(cfd, &s0))
		die("GET_STATS", errno);
	*calls = 0;
	do {
		t0 = now_ns();
		if (ioctl(cfd, KPPROF_IOC_DRAIN))
			die("KPPROF_IOC_DRAIN", errno);
		ns += now_ns() - t0;
		++*calls;
		if (dev__stats(cfd, &s1))
			die("GET_STATS", errno);
	} while (s1.pring_drained - s0.pring_drained < (__u64)per * DRAIN_RINGS &&
		 *calls < 10000);
	*moved = s1.pring_drained - s0.pring_drained;
	for (i = 0; i < DRAIN_RINGS; i++) {
		pring__unmap(&rings[i]);
		close(fds[i]);
	}
	return ns;
}

/* empty the consumer's ring through a consumer attached for the purpose */
static void empty_consumer_ring(int cfd)
{
	struct ring_reader rr;

	if (ring_reader__attach(&rr, cfd))
		die("attach consumer", errno);
	ring_reader__drain(&rr);
	ring_reader__unmap(&rr);
	if (ioctl(cfd, KPPROF_IOC_CONSUMER_DETACH))
		die("CONSUMER_DETACH", errno);
}

/* submit_round - ns to SUBMIT @n records of DRAIN_DEPTH frames on @pfd */
static __u64 submit_round(int pfd, unsigned int n)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	__u64 t0;

	rec_build__alloc(buf, DRAIN_DEPTH, 3);
	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		if (dev__ioctl(pfd, KPPROF_IOC_SUBMIT, buf))
			die("SUBMIT", ENOBUFS);
	return now_ns() - t0;
}

/*
 * The drain's cost per record, and a SUBMIT's of the same record in the
 * same rounds (interleaved, so the emulator's drift hits both alike):
 * their ratio is the figure that travels.
 */
static void bench_drain_cost(void)
{
	double drain_ns[DRAIN_ROUNDS], submit_ns[DRAIN_ROUNDS], d, s;
	struct kpprof_info info;
	int cfd = dev__open(), pfd = dev__open(), round;
	unsigned int per, calls = 0, all_calls = 0;
	__u64 moved = 0, m, ns;
	size_t entry;

	if (cfd < 0 || pfd < 0 || dev__info(cfd, &info))
		die("GET_INFO", cfd < 0 ? -cfd : errno);
	{
		unsigned char buf[KPP_REC_BUF_MAX];

		entry = (sizeof(struct kpprof_ring_hdr) +
			 rec_build__alloc(buf, DRAIN_DEPTH, 3) + 7) & ~(size_t)7;
	}
	/* a ring's worth each, within one uid's share of the consumer's ring */
	per = (unsigned int)(info.pring_size / entry) - 1;
	if ((__u64)per * DRAIN_RINGS * entry > info.producer_share / 2)
		per = (unsigned int)(info.producer_share / 2 / entry / DRAIN_RINGS);
	for (round = 0; round < DRAIN_ROUNDS; round++) {
		ns = drain_round(cfd, per, &m, &calls);
		if (!m)
			break;
		drain_ns[round] = (double)ns / (double)m;
		moved += m;
		all_calls += calls;
		empty_consumer_ring(cfd);
		submit_ns[round] = (double)submit_round(pfd, per * DRAIN_RINGS) /
				   (per * DRAIN_RINGS);
		empty_consumer_ring(cfd);
	}
	close(pfd);
	close(cfd);
	if (moved < (__u64)per * DRAIN_RINGS * DRAIN_ROUNDS) {
		fprintf(stderr, "kmod_bench: the drain moved %llu of %llu records\n",
			(unsigned long long)moved,
			(unsigned long long)per * DRAIN_RINGS * DRAIN_ROUNDS);
		exit(1);
	}
	qsort(drain_ns, DRAIN_ROUNDS, sizeof(double), cmp_double);
	qsort(submit_ns, DRAIN_ROUNDS, sizeof(double), cmp_double);
	d = drain_ns[DRAIN_ROUNDS / 2];
	s = submit_ns[DRAIN_ROUNDS / 2];
	printf("drain cost in the consumer, %d rings of %u records (%zu bytes each), median of %d rounds:\n",
	       DRAIN_RINGS, per, entry, DRAIN_ROUNDS);
	printf("  KPPROF_IOC_DRAIN        %8.0f ns/record (%llu records in %u calls)\n",
	       d, (unsigned long long)moved, all_calls);
	printf("  SUBMIT, same record     %8.0f ns/record\n", s);
	printf("  ratio drain/SUBMIT      %8.2fx\n", d / s);
}

/* ------------------------------------------------------ 2c. kick cost */

#define KICK_OTHERS	2400
#define KICK_UIDS	8
#define KICK_UID0	60100
#define KICK_CALLS	200
#define KICK_ROUNDS	15

/*
 * kick_round_ns - median over KICK_ROUNDS of the ns per KPPROF_IOC_KICK of
 * KICK_CALLS kicks on @fd, whose ring is mapped and empty.
 */
static double kick_round_ns(int fd)
{
	double per[KICK_ROUNDS];
	__u64 t0;

	for (int r = 0; r < KICK_ROUNDS; r++) {
		t0 = now_ns();
		for (int i = 0; i < KICK_CALLS; i++)
			if (ioctl(fd, KPPROF_IOC_KICK))
				die("KPPROF_IOC_KICK", errno);
		per[r] = (double)(now_ns() - t0) / KICK_CALLS;
	}
	qsort(per, KICK_ROUNDS, sizeof(double), cmp_double);
	return per[KICK_ROUNDS / 2];
}

/*
 * kick_others - a child of uid @uid that maps @n producer rings (closing
 * each descriptor: the mapping keeps the file, and its ring, alive),
 * writes how many it got to @up, and waits for the parent to close @down.
 */
static pid_t kick_others(uid_t uid, int n, const int up[2], const int down[2])
{
	pid_t pid = fork();
	int got = 0;
	char c;

	if (pid)
		return pid;
	/* the parent's ends: @down reads EOF once the parent closes its own */
	close(up[0]);
	close(down[1]);
	/* always report, 0 if it cannot be @uid: the parent waits for all */
	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		n = 0;
	for (; got < n; got++) {
		struct pring p;
		int fd = dev__open();

		if (fd < 0 || pring__map(&p, fd))
			break;
		close(fd);
	}
	if (write(up[1], &got, sizeof(got)) != sizeof(got))
		_exit(81);
	while (read(down[0], &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static void bench_kick_cost(void)
{
	int fd = dev__open(), up[2], down[2], others = 0, got;
	pid_t pids[KICK_UIDS];
	struct kpprof_stats st;
	double alone, beside;
	struct pring p;

	if (fd < 0 || pring__map(&p, fd))
		die("map a producer ring", fd < 0 ? -fd : errno);
	if (dev__stats(fd, &st))
		die("GET_STATS", errno);
	if (st.pring_count != 1) {
		fprintf(stderr, "kmod_bench: %u producer rings before the kick bench, not 1\n",
			st.pring_count);
		exit(1);
	}
	alone = kick_round_ns(fd);
	if (pipe(up) || pipe(down))
		die("pipe", errno);
	for (int i = 0; i < KICK_UIDS; i++)
		pids[i] = kick_others(KICK_UID0 + i, KICK_OTHERS / KICK_UIDS, up, down);
	close(up[1]);
	close(down[0]);
	for (int i = 0; i < KICK_UIDS; i++) {
		if (pids[i] < 0 || read(up[0], &got, sizeof(got)) != sizeof(got))
			die("a process of idle rings", pids[i] < 0 ? errno : EPIPE);
		others += got;
	}
	beside = kick_round_ns(fd);
	close(down[1]);
	for (int i = 0; i < KICK_UIDS; i++)
		waitpid(pids[i], NULL, 0);
	/* alone again, once their rings are gone: the mean of both */
	if (dev__stats(fd, &st) || st.pring_count != 1)
		die("the idle rings outlived their processes", EBUSY);
	alone = (alone + kick_round_ns(fd)) / 2;
	close(up[0]);
	pring__unmap(&p);
	close(fd);
	if (others < KICK_OTHERS / 2) {
		fprintf(stderr, "kmod_bench: only %d idle rings of other processes\n", others);
		exit(1);
	}
	printf("KPPROF_IOC_KICK, the kicker's one empty ring, median of %d rounds of %d:\n",
	       KICK_ROUNDS, KICK_CALLS);
	printf("  alone on the host       %8.0f ns/kick\n", alone);
	printf("  beside %4d idle rings  %8.0f ns/kick (%d processes of other uids)\n",
	       others, beside, KICK_UIDS);
	printf("  ratio beside/alone      %8.2fx\n", beside / alone);
}

/* ------------------------------------------------------ 3. memory */

static long meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/*
 * free_kb - MemFree plus the pages parked on per-CPU free lists: freed
 * pages go there first and MemFree alone misses megabytes of them.
 */
static long free_kb(void)
{
	char line[256];
	long pcp = 0, v;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " count: %ld", &v) == 1)
			pcp += v;
	fclose(f);
	return meminfo_kb("MemFree") + pcp * (sysconf(_SC_PAGESIZE) / 1024);
}

static long coresize(void)
{
	long v = -1;
	FILE *f = fopen("/sys/module/kpprof/coresize", "r");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int mod_load(void)
{
	int fd = open(dev__module_path(), O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int mod_unload(void)
{
	return syscall(SYS_delete_module, "kpprof", O_NONBLOCK) ? -errno : 0;
}

static void bench_memory(void)
{
	struct kpprof_info info;
	long free_delta = 0, slab_delta = 0, vm_delta = 0, core;
	int fd = dev__open(), round, err;
	const int rounds = 5;

	if (fd < 0 || dev__info(fd, &info))
		die("GET_INFO", fd < 0 ? -fd : errno);
	close(fd);
	core = coresize();
	for (round = 0; round < rounds; round++) {
		long f0, f1, s0, s1, v0, v1;

		err = mod_unload();
		if (err)
			die("delete_module kpprof", -err);
		sync();
		f0 = free_kb();
		s0 = meminfo_kb("Slab");
		v0 = meminfo_kb("VmallocUsed");
		err = mod_load();
		if (err)
			die("finit_module kpprof.ko", -err);
		f1 = free_kb();
		s1 = meminfo_kb("Slab");
		v1 = meminfo_kb("VmallocUsed");
		free_delta += f0 - f1;
		slab_delta += s1 - s0;
		vm_delta += v1 - v0;
	}
	printf("kernel memory at the default ring size (%llu KiB data), mean of %d loads:\n",
	       (unsigned long long)info.ring_size / 1024, rounds);
	printf("  free memory drop        %8ld KiB (ring data + 2 position pages = %llu KiB)\n",
	       free_delta / rounds,
	       (unsigned long long)(info.ring_size + 2 * info.page_size) / 1024);
	printf("  Slab growth             %8ld KiB\n", slab_delta / rounds);
	printf("  VmallocUsed growth      %8ld KiB (module text + vmalloc'd tables)\n",
	       vm_delta / rounds);
	printf("  /sys/module/kpprof/coresize %ld bytes\n", core);
}

int main(int argc, char **argv)
{
	bool kick_only = argc > 1 && !strcmp(argv[1], "kick");
	double seconds = argc > 1 && !kick_only ? atof(argv[1]) : 2.0;
	struct kpprof_config saved, cfg;
	int fd = dev__open();

	if (seconds <= 0 || seconds > 60) {
		fprintf(stderr, "usage: kmod_bench [seconds per throughput run, 0 < s <= 60 | kick]\n");
		return 2;
	}
	if (fd < 0)
		die("open " KPPROF_DEVICE_PATH, -fd);
	if (dev__get_config(fd, &saved))
		die("GET_CONFIG", errno);
	dev__test_config(&cfg);
	if (dev__set_config(fd, &cfg))
		die("SET_CONFIG", errno);

	printf("# kmod_bench: %ld CPUs\n", sysconf(_SC_NPROCESSORS_ONLN));
	if (kick_only) {
		bench_kick_cost();
		goto out;
	}
	bench_write_cost();
	printf("throughput, %d-frame alloc records, %.1f s each, consumer thread polling:\n",
	       TYPICAL_DEPTH, seconds);
	for (int n = 1; n <= 8; n *= 2) {
		double ring = bench_throughput(n, seconds, 1);
		double sub = bench_throughput(n, seconds, 0);

		if (!(ring > 0) || !(sub > 0)) {
			fprintf(stderr, "kmod_bench: no throughput figure for %d producers\n", n);
			return 1;
		}
		printf("  %d producer%s: delivered ring %.0f/s, SUBMIT %.0f/s: ring / SUBMIT = %.2fx\n",
		       n, n > 1 ? "s" : "", ring, sub, ring / sub);
	}
	bench_drain_cost();
	bench_kick_cost();
out:
	if (dev__set_config(fd, &saved))
		die("SET_CONFIG (restore)", errno);
	close(fd);
	/* last: it reloads the module (with default parameters) */
	if (!kick_only)
		bench_memory();
	return 0;
}
