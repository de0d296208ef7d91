// SPDX-License-Identifier: GPL-2.0
/*
 * shim_reader: a test-only consumer of /dev/kpprof for the shim's VM tests.
 *
 *   shim_reader [--mem-rate N] [--block-rate NS] [--mutex-fraction N]
 *               [--depth N] [--preload LIB] [--dump FILE]
 *               [--switch-after MS --switch-mem-rate N]
 *               [--stall-until-signal] -- CMD [ARGS...]
 *
 * Attaches as the ring's consumer, sets the config (heap, block and mutex
 * profiles on with the given rates, defaults mem 1, block 0, mutex 0),
 * runs CMD (with LD_PRELOAD=LIB when given; after MS milliseconds sets
 * mem_rate to N and writes a "SWITCH" line), drains the ring while CMD
 * runs (with --stall-until-signal, not before CMD says so: it fills up)
 * and after it exits until nothing is left in any producer ring, restores the old config, and writes one
 * line per record to --dump (or stdout):
 *
 *   ALLOC   tgid tid nr_pcs addr bytes rate pc0 pc1 ...
 *   FREE    tgid tid 0 addr bytes
 *   BLOCK   tgid tid nr_pcs lock delay rate pc0 ...
 *   MUTEX   tgid tid nr_pcs lock delay rate pc0 ...
 *   MMAP    tgid tid 0 start end offset build_id_len path
 *   MUNMAP  tgid tid 0 start end
 *   COMM    tgid tid 0 reason
 *   NOTE    tgid tid 0 what value
 *   LOST    tgid tid 0 full invalid resets
 *   CYCLE   ...
 *
 * Then on stderr: "shim_reader: status S records N accepted A rejected R
 * dropped D", the module's statistics counted from attach to the end.  Exit status: CMD's.
 *
 * --stall-until-signal: a handshake instead of a time, so a busy machine
 * cannot change what the test sees.  The reader reads nothing until it
 * gets SIGUSR1 (from CMD); then it writes "shim_reader: at signal dropped
 * D" on stderr (D counted as above, from attach to the signal), drains
 * until the consumer's ring is empty and a KPPROF_IOC_DRAIN moves nothing
 * more from the producer rings, writes "shim_reader: drained", and sends
 * SIGUSR2 to CMD (which must have it blocked, or handled, by then).  Then
 * it reads as usual.
 *
 *   shim_reader --decode FILE
 *
 * prints the records a shim appended to FILE (KPPROF_TEST_SINK, host tests
 * without the module) in the same format; tgid and tid are 0 there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "kpprof.h"

static const char *const kinds[KPPROF_REC_KINDS] = {
	[KPPROF_REC_ALLOC] = "ALLOC", [KPPROF_REC_FREE] = "FREE",
	[KPPROF_REC_BLOCK] = "BLOCK", [KPPROF_REC_MUTEX] = "MUTEX",
	[KPPROF_REC_MMAP] = "MMAP", [KPPROF_REC_MUNMAP] = "MUNMAP",
	[KPPROF_REC_COMM] = "COMM", [KPPROF_REC_CYCLE] = "CYCLE",
	[KPPROF_REC_NOTE] = "NOTE", [KPPROF_REC_LOST] = "LOST",
};

struct ring {
	int fd;
	__u64 size;
	volatile __u64 *cons;
	const volatile __u64 *prod;
	const unsigned char *data;
	unsigned long records;
};

static void die(const char *what)
{
	fprintf(stderr, "shim_reader: %s: %s\n", what, strerror(errno));
	exit(125);
}

/* --stall-until-signal: CMD's SIGUSR1 */
static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* The losses the final line reports, between two GET_STATS. */
static unsigned long long dropped_since(const struct kpprof_stats *st,
					const struct kpprof_stats *st0)
{
	/* a producer ring's own full ring's drops are drops (ABI 3) */
	return st->dropped[KPPROF_DROP_RING_FULL] - st0->dropped[KPPROF_DROP_RING_FULL] +
	       st->dropped[KPPROF_DROP_SHARE] - st0->dropped[KPPROF_DROP_SHARE] +
	       st->pring_lost - st0->pring_lost;
}

static void print_record(FILE *out, const unsigned char *p, __u32 len)
{
	const struct kpprof_record *h = (const void *)p;
	const char *k = h->kind < KPPROF_REC_KINDS && kinds[h->kind] ? kinds[h->kind] : "?";

	if (len < sizeof(*h))
		return;
	fprintf(out, "%s %u %u %u", k, h->tgid, h->tid, h->nr_pcs);
	switch (h->kind) {
	case KPPROF_REC_ALLOC: {
		const struct kpprof_rec_alloc *r = (const void *)p;

		fprintf(out, " %#llx %llu %llu", (unsigned long long)r->addr,
			(unsigned long long)r->bytes, (unsigned long long)r->rate);
		for (unsigned int i = 0; i < h->nr_pcs; i++)
			fprintf(out, " %#llx", (unsigned long long)r->pcs[i]);
		break;
	}
	case KPPROF_REC_FREE: {
		const struct kpprof_rec_free *r = (const void *)p;

		fprintf(out, " %#llx %llu", (unsigned long long)r->addr,
			(unsigned long long)r->bytes);
		break;
	}
	case KPPROF_REC_BLOCK:
	case KPPROF_REC_MUTEX: {
		const struct kpprof_rec_contention *r = (const void *)p;

		fprintf(out, " %#llx %llu %llu", (unsigned long long)r->lock,
			(unsigned long long)r->delay_ns, (unsigned long long)r->rate);
		for (unsigned int i = 0; i < h->nr_pcs; i++)
			fprintf(out, " %#llx", (unsigned long long)r->pcs[i]);
		break;
	}
	case KPPROF_REC_MMAP: {
		const struct kpprof_rec_mmap *r = (const void *)p;

		fprintf(out, " %#llx %#llx %#llx %u %s", (unsigned long long)r->start,
			(unsigned long long)r->end, (unsigned long long)r->offset,
			r->build_id_len, r->path);
		break;
	}
	case KPPROF_REC_MUNMAP: {
		const struct kpprof_rec_munmap *r = (const void *)p;

		fprintf(out, " %#llx %#llx", (unsigned long long)r->start,
			(unsigned long long)r->end);
		break;
	}
	case KPPROF_REC_COMM: {
		const struct kpprof_rec_comm *r = (const void *)p;

		fprintf(out, " %u %u %.16s", r->reason, r->ppid, r->comm);
		break;
	}
	case KPPROF_REC_LOST: {
		const struct kpprof_rec_lost *r = (const void *)p;

		fprintf(out, " %llu %llu %llu", (unsigned long long)r->full,
			(unsigned long long)r->invalid, (unsigned long long)r->resets);
		break;
	}
	case KPPROF_REC_NOTE: {
		const struct kpprof_rec_note *r = (const void *)p;

		fprintf(out, " %u %llu", r->what, (unsigned long long)r->value);
		break;
	}
	default:
		break;
	}
	fputc('\n', out);
}

static void drain(struct ring *rb, FILE *out)
{
	__u64 cons = *rb->cons;
	__u64 prod = __atomic_load_n(rb->prod, __ATOMIC_ACQUIRE);

	while (cons < prod) {
		const struct kpprof_ring_hdr *h = (const void *)(rb->data + (cons & (rb->size - 1)));
		__u32 len = __atomic_load_n(&h->len, __ATOMIC_ACQUIRE);

		if (len & KPPROF_RING_BUSY)
			break;
		if (!(len & KPPROF_RING_DISCARD)) {
			print_record(out, (const unsigned char *)(h + 1), len & KPPROF_RING_LEN_MASK);
			rb->records++;
		}
		cons += sizeof(*h) + (((len & KPPROF_RING_LEN_MASK) + 7) & ~7U);
	}
	__atomic_store_n(rb->cons, cons, __ATOMIC_RELEASE);
}

/*
 * drain_all - read until nothing is left anywhere: the consumer's ring is
 * empty and a KPPROF_IOC_DRAIN issued with it empty moved nothing (no
 * record drained, found invalid or written, LOST records included).  A
 * record the consumer's ring has no room for stays in its producer ring
 * (kpprof.h, The producer ring), and one drain moves a bounded number, so
 * a single DRAIN is not enough after the rings filled.
 *
 * Return: the passes it took, or -1 if things still moved after the bound
 * (some 5 minutes even on a slow guest).
 */
static int drain_all(struct ring *rb, FILE *out)
{
	struct kpprof_stats st;
	__u64 last = ~0ULL;

	for (int pass = 1; pass <= 60000; pass++) {
		__u64 moved;

		if (ioctl(rb->fd, KPPROF_IOC_DRAIN))
			die("DRAIN");
		drain(rb, out);
		memset(&st, 0, sizeof(st));
		if (ioctl(rb->fd, KPPROF_IOC_GET_STATS, &st))
			die("GET_STATS");
		moved = st.accepted + st.pring_drained + st.pring_invalid;
		if (moved == last &&
		    *rb->cons == __atomic_load_n(rb->prod, __ATOMIC_ACQUIRE))
			return pass;
		last = moved;
		poll(NULL, 0, 5);
	}
	return -1;
}

/* --decode: a file of back-to-back records, as the test sink holds them. */
static int decode(const char *path)
{
	static unsigned char buf[1 << 16];
	FILE *f = fopen(path, "r");
	struct kpprof_record h;

	if (!f)
		die(path);
	while (fread(&h, sizeof(h), 1, f) == 1) {
		if (h.size < sizeof(h) || h.size > sizeof(buf)) {
			fprintf(stderr, "shim_reader: %s: bad record size %u\n", path, h.size);
			return 1;
		}
		memcpy(buf, &h, sizeof(h));
		if (fread(buf + sizeof(h), h.size - sizeof(h), 1, f) != 1 && h.size > sizeof(h)) {
			fprintf(stderr, "shim_reader: %s: truncated record\n", path);
			return 1;
		}
		print_record(stdout, buf, h.size);
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem-rate", required_argument, NULL, 'm' },
		{ "block-rate", required_argument, NULL, 'b' },
		{ "mutex-fraction", required_argument, NULL, 'x' },
		{ "depth", required_argument, NULL, 'd' },
		{ "preload", required_argument, NULL, 'p' },
		{ "dump", required_argument, NULL, 'o' },
		{ "switch-after", required_argument, NULL, 's' },
		{ "switch-mem-rate", required_argument, NULL, 'S' },
		{ "stall-until-signal", no_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	struct kpprof_config old, cfg;
	struct kpprof_info info;
	struct kpprof_stats st, st0;
	const char *preload = NULL, *dump = NULL;
	unsigned long long switch_ms = 0, switch_mem = 0;
	struct timespec t0, tn;
	unsigned long long mem = 1, blk = 0, mtx = 0, depth = KPPROF_STACK_DEPTH_DEFAULT;
	struct ring rb = { 0 };
	FILE *out = stdout;
	long page;
	pid_t pid;
	int c, status = 0;
	bool stall_sig = false;

	if (argc == 3 && !strcmp(argv[1], "--decode"))
		return decode(argv[2]);
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mem = strtoull(optarg, NULL, 0); break;
		case 'b': blk = strtoull(optarg, NULL, 0); break;
		case 'x': mtx = strtoull(optarg, NULL, 0); break;
		case 'd': depth = strtoull(optarg, NULL, 0); break;
		case 'p': preload = optarg; break;
		case 'o': dump = optarg; break;
		case 's': switch_ms = strtoull(optarg, NULL, 0); break;
		case 'S': switch_mem = strtoull(optarg, NULL, 0); break;
		case 'U': stall_sig = true; break;
		default:
			fprintf(stderr, "usage: shim_reader [options] -- CMD [ARGS...]\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "shim_reader: no command\n");
		return 2;
	}
	if (dump && !(out = fopen(dump, "w")))
		die(dump);
	rb.fd = open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (rb.fd < 0)
		die(KPPROF_DEVICE_PATH);
	if (ioctl(rb.fd, KPPROF_IOC_GET_INFO, &info))
		die("GET_INFO");
	if (ioctl(rb.fd, KPPROF_IOC_CONSUMER_ATTACH))
		die("CONSUMER_ATTACH");
	page = info.page_size;
	rb.size = info.ring_size;
	rb.cons = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, rb.fd,
		       KPPROF_PGOFF_CONSUMER * page);
	if (rb.cons == MAP_FAILED)
		die("mmap consumer page");
	rb.prod = mmap(NULL, page + 2 * rb.size, PROT_READ, MAP_SHARED, rb.fd,
		       KPPROF_PGOFF_PRODUCER * page);
	if (rb.prod == MAP_FAILED)
		die("mmap ring");
	rb.data = (const unsigned char *)rb.prod + page;
	/* whatever came before us, producer rings (ours: a preloaded shim) too */
	if (ioctl(rb.fd, KPPROF_IOC_DRAIN))
		die("DRAIN");
	drain(&rb, fopen("/dev/null", "w"));
	memset(&st0, 0, sizeof(st0));
	if (ioctl(rb.fd, KPPROF_IOC_GET_STATS, &st0))
		die("GET_STATS");
	if (ioctl(rb.fd, KPPROF_IOC_GET_CONFIG, &old))
		die("GET_CONFIG");
	cfg = old;
	cfg.mem_rate = mem;
	cfg.block_rate = blk;
	cfg.mutex_fraction = (__u32)mtx;
	cfg.max_stack_depth = (__u32)depth;
	cfg.flags = KPPROF_CFG_ALL;
	if (ioctl(rb.fd, KPPROF_IOC_SET_CONFIG, &cfg))
		die("SET_CONFIG");

	if (stall_sig) {
		/* before the fork: CMD may signal as soon as it runs */
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL))
			die("sigaction");
	}
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "shim_reader: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		clock_gettime(CLOCK_MONOTONIC, &tn);
		if (switch_ms && (unsigned long long)((tn.tv_sec - t0.tv_sec) * 1000 +
			(tn.tv_nsec - t0.tv_nsec) / 1000000) >= switch_ms) {
			/* A rate change while CMD runs: it must see it. */
			cfg.mem_rate = switch_mem;
			if (ioctl(rb.fd, KPPROF_IOC_SET_CONFIG, &cfg))
				die("SET_CONFIG (switch)");
			fprintf(out, "SWITCH mem_rate %llu\n", switch_mem);
			switch_ms = 0;
		}

		if (stall_sig && got_usr1) {
			/* CMD has made its records and waits for SIGUSR2. */
			int passes;

			memset(&st, 0, sizeof(st));
			if (ioctl(rb.fd, KPPROF_IOC_GET_STATS, &st))
				die("GET_STATS");
			fprintf(stderr, "shim_reader: at signal dropped %llu\n",
				dropped_since(&st, &st0));
			passes = drain_all(&rb, out);
			if (passes < 0) {
				fprintf(stderr, "shim_reader: the rings never settled\n");
				kill(pid, SIGKILL);
				exit(125);
			}
			fprintf(stderr, "shim_reader: drained (%d passes)\n", passes);
			/* (a CMD already reaped gets nothing: it did not wait) */
			if (w != pid && kill(pid, SIGUSR2))
				die("kill SIGUSR2");
			stall_sig = false;
		}
		/* --stall-until-signal: read nothing at first, so the ring
		 * fills up. */
		if (!stall_sig)
			drain(&rb, out);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			die("waitpid");
		poll(NULL, 0, 5);
	}
	if (stall_sig)
		fprintf(stderr, "shim_reader: %s exited without sending SIGUSR1\n", argv[optind]);
	/*
	 * Everything CMD's processes wrote, LOST records included: the rings
	 * of processes that exited while the consumer's ring was full are
	 * orphans the drains deliver later, one bounded drain at a time.
	 */
	if (drain_all(&rb, out) < 0)
		fprintf(stderr, "shim_reader: the rings never settled\n");
	if (ioctl(rb.fd, KPPROF_IOC_SET_CONFIG, &old))
		die("SET_CONFIG (restore)");
	memset(&st, 0, sizeof(st));
	if (ioctl(rb.fd, KPPROF_IOC_GET_STATS, &st))
		die("GET_STATS");
	fflush(out);
	fprintf(stderr, "shim_reader: status %d records %lu accepted %llu rejected %llu dropped %llu\n",
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), rb.records,
		(unsigned long long)(st.accepted - st0.accepted),
		/* a producer ring's malformed records are rejections too */
		(unsigned long long)(st.rejected - st0.rejected +
				     st.pring_invalid - st0.pring_invalid),
		dropped_since(&st, &st0));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
