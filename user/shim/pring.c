// SPDX-License-Identifier: GPL-2.0
/*
 * The producer ring (ABI 3, ioctl/kpprof.h "The producer ring"): a record
 * costs no syscall.  At the first record that is not a COMM (so at the
 * first sample: most processes never sample and never pay for a ring),
 * the shim opens /dev/kpprof once more, maps that file's ring and closes
 * the descriptor: the mapping keeps the file alive, and the program never
 * sees a descriptor of ours (the one kept for COMM records since start-up
 * is closed too, once no thread can still be using it: close_fd_when_alone).
 *
 * Writing: reserve with a compare-and-swap on head, write the entry,
 * commit with a store-release of its length: no lock, nothing another
 * thread waits for.  A full ring drops the record and counts it in the
 * ring's own lost[kind], which the kernel reports to the collector in
 * band; the caller sees ENOBUFS, as from SUBMIT, so held frees (emit.c)
 * keep working with "ring full" as the refusal.
 *
 * The kernel drains the ring in the consumer's context (its poll, the
 * cycle work, every drain_period_ms) and at the file's last close
 * (process exit); a ring a quarter full kicks it (kick()): a read of
 * the file's doorbell, a page fault per quarter ring of records at most
 * and no syscall.  So once the ring is mapped a record costs no syscall
 * at all, and a seccomp filter the shim cannot see (a program's own
 * `syscall` instruction, as Chromium's and Firefox's sandboxes do) has
 * nothing to forbid (README, Known limits).  A burst the kick cannot
 * keep up with is lost, counted in lost[].
 *
 * The mappings (ring and doorbell) are VM_DONTCOPY: a fork child has
 * neither.  If its parent had a ring, the child maps its own in the
 * atfork handler
 * (kpp_pring_fork_child(), from new_process()), before the program can
 * sandbox it; a child of a parent without a ring maps one at its first
 * sample, as any process.  If the ring cannot be had (an ABI 2 module
 * cannot be here: the ABI check passed; the global cap on ring memory,
 * ENOMEM), records keep going through KPPROF_IOC_SUBMIT on the start-up
 * descriptor, counted in kpp.pring_fallback.
 *
 * Test mode (KPPROF_TEST_CONFIG) with KPPROF_TEST_RING=1: the same ring,
 * anonymous (a memfd mapped as the module maps it: header page, data twice,
 * not inherited by children), drained by whichever producer thread finds
 * it half full or 10 ms after the last drain (and at exec and exit) into
 * the sink with one writev(2) per batch: the benchmarks measure what a
 * record costs its producer with the ring, plus a drain the module would
 * do in the consumer.  As with the module, the start-up descriptor (the
 * sink's) is closed once the ring is mapped, so the program sees no
 * descriptor of ours (Python's test_subprocess lists a child's): each
 * drain opens the sink for its writes and closes it again, two syscalls
 * per drain.  Without KPPROF_TEST_RING, test mode
 * writes each record to the sink (the tests read the sink while the
 * process runs).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"

enum { PR_NONE, PR_SETUP, PR_MAPPED, PR_FAILED };

#define TEST_RING_SIZE		(64 * 1024)
#define TEST_DRAIN_NS		10000000ULL
#define TEST_DRAIN_BATCH	64
#define TEST_STUCK_NS		2000000000ULL	/* the module's KPP_PRING_STUCK_JIFFIES */
enum { TD_IF_FREE, TD_FLUSH, TD_LAST };	/* test_drain()'s @how */

static struct {
	struct kpprof_pring_hdr *hdr;
	unsigned char *data;
	uint64_t size, mask;
	size_t map_len;
	const unsigned char *bell;	/* the doorbell's two pages, or NULL */
	size_t bell_page;
} pr;
static _Atomic int pr_state KPP_START_DATA;	/* every record reads it */
static _Atomic int fd_close_pending KPP_START_DATA;	/* every record reads it */
static _Atomic int test_draining;
static int test_sink_closed;	/* kpp_pring_flush(true) ran: no open again */
static _Atomic uint64_t test_last_drain;
static uint64_t test_stuck_pos, test_stuck_since;	/* the drainer's */
static bool test_stuck;
static _Atomic uint64_t kicked_tail = UINT64_MAX;
static _Atomic unsigned int bell_rings;	/* kicks so far: which page is next */

/*
 * kick - the ring is a quarter full: ask the module to drain it now
 * rather than lose a burst waiting for the periodic drain: a burst at a
 * fine sampling rate fills 64 KiB in well under a jiffy, and without the
 * kick most of it was lost (xkernel_test at 16 KiB: 380 of 1024 big
 * blocks seen).  The kick is a read of the doorbell page the last kick
 * took out (ioctl/kpprof.h, KPPROF_PGOFF_DOORBELL): a page fault, no
 * syscall, so a seccomp filter the shim cannot see cannot kill the
 * program for it (README, Known limits).  A module without the doorbell
 * gets no kick: KPPROF_IOC_KICK would be the one syscall a sample makes,
 * and such a filter may forbid it; the periodic drain still comes.  Once
 * per tail position: while the drain cannot move the tail (the consumer's
 * ring is full) nobody kicks again, so a stuck consumer never turns the
 * ring back into a fault per record.  Racing kickers may read the same
 * page: one of them faults, the next kick reads the other page and does.
 */
static bool kick(uint64_t tail)
{
	uint64_t k = atomic_load_explicit(&kicked_tail, memory_order_relaxed);
	const volatile unsigned char *bell = pr.bell;
	unsigned int n;

	if (!bell || k == tail || !atomic_compare_exchange_strong(&kicked_tail, &k, tail))
		return false;
	n = atomic_fetch_add_explicit(&bell_rings, 1, memory_order_relaxed);
	(void)bell[(n & 1) * pr.bell_page];
	return true;
}

/*
 * map_at - mmap() at @hint if that range is free (a fork child's ring where
 * its parent's was, see kpp_pring_fork_child()), else anywhere.
 */
static void *map_at(void *hint, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m = MAP_FAILED;

	if (hint)
		m = kpp_mmap(hint, len, prot, flags | MAP_FIXED_NOREPLACE, fd, off);
	if (m != MAP_FAILED && m != hint) {	/* a kernel that took it as a hint */
		kpp_munmap(m, len);
		m = MAP_FAILED;
	}
	if (m == MAP_FAILED)
		m = kpp_mmap(NULL, len, prot, flags, fd, off);
	return m;
}

/*
 * map_bell - the file's doorbell (two read-only pages), if the module has
 * one, at @hint if free (a fork child's where its parent's was: a kick a
 * handler's fork interrupted reads there when the handler returns);
 * NULL without.
 */
static const unsigned char *map_bell(int fd, const struct kpprof_info *info, void *hint)
{
	void *m;

	if (!(info->features & KPPROF_FEAT_DOORBELL) ||
	    info->doorbell_map_len != 2 * (uint64_t)info->page_size)
		return NULL;
	m = map_at(hint, info->doorbell_map_len, PROT_READ, MAP_SHARED, fd,
		   (off_t)(info->doorbell_pgoff * info->page_size));
	return m == MAP_FAILED ? NULL : m;
}

static int map_device(void *hint, void *bell_hint)
{
	struct kpprof_info info;
	void *m;
	int fd;

	memset(&info, 0, sizeof(info));
	fd = kpp_open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (kpp_ioctl(fd, KPPROF_IOC_GET_INFO, &info) || !(info.features & KPPROF_FEAT_PRING) ||
	    info.pring_size < 4096 || (info.pring_size & (info.pring_size - 1)) ||
	    info.pring_map_len < info.pring_data_off + 2 * info.pring_size) {
		kpp_close(fd);
		errno = ENOTSUP;
		return -1;
	}
	m = map_at(hint, info.pring_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)(info.pring_pgoff * info.page_size));
	if (m != MAP_FAILED) {
		pr.bell = map_bell(fd, &info, bell_hint);
		pr.bell_page = info.page_size;
	}
	kpp_close(fd);
	if (m == MAP_FAILED)
		return -1;
	pr.hdr = m;
	pr.data = (unsigned char *)m + info.pring_data_off;
	pr.size = info.pring_size;
	pr.map_len = info.pring_map_len;
	return 0;
}

/* map_test - the module's layout on a memfd: header page, data twice. */
static int map_test(void *hint)
{
	const size_t page = 4096, size = TEST_RING_SIZE, len = page + 2 * size;
	unsigned char *base;
	int fd = kpp_memfd_create("kpprof-test-ring", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	base = kpp_ftruncate(fd, (off_t)(page + size)) ? MAP_FAILED :
	       map_at(hint, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base != MAP_FAILED &&
	    (kpp_mmap(base, page + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		  fd, 0) == MAP_FAILED ||
	     kpp_mmap(base + page + size, size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_FIXED, fd, (off_t)page) == MAP_FAILED ||
	     kpp_madvise(base, len, MADV_DONTFORK))) {
		kpp_munmap(base, len);
		base = MAP_FAILED;
	}
	kpp_close(fd);
	if (base == MAP_FAILED)
		return -1;
	pr.hdr = (struct kpprof_pring_hdr *)base;
	pr.data = base + page;
	pr.size = size;
	pr.map_len = len;
	return 0;
}

/*
 * setup - the first thread to get here maps the ring (at @hint if free);
 * 0 when mapped.  Async-signal-safe (kpp_pring_fork_child() runs in an
 * atfork handler).
 */
static int setup(void *hint, void *bell_hint)
{
	int st = PR_NONE, err;

	if (!atomic_compare_exchange_strong(&pr_state, &st, PR_SETUP))
		return st == PR_MAPPED ? 0 : -1;
	if (kpp.test_sink) {
		err = kpp.test_ring ? map_test(hint) : (errno = ENOTSUP, -1);
	} else {
		err = map_device(hint, bell_hint);
	}
	if (err) {
		if (!kpp.test_sink) {
			atomic_fetch_add_explicit(&kpp.pring_fallback, 1, memory_order_relaxed);
			kpp_debug("no producer ring (%s): one syscall per record", strerror(errno));
		}
		atomic_store(&pr_state, PR_FAILED);
		return -1;
	}
	pr.mask = pr.size - 1;
	/* the private stacks a sample will want, while syscalls are known safe */
	kpp_stackpool_premap();
	atomic_store(&pr_state, PR_MAPPED);
	/* test mode too: the program sees the descriptors it sees with the module */
	atomic_store(&fd_close_pending, 1);
	return 0;
}

static void test_drain(int how);

/* entry_size - an entry's bytes in the ring: header, record, padding to 8 */
static inline uint64_t entry_size(uint64_t len)
{
	return (sizeof(struct kpprof_ring_hdr) + len + 7) & ~7ULL;
}

/*
 * room_for - the bytes record @rec may fill the ring up to.  Samples
 * stop short of the last MARK_RESERVE bytes; the records that mark a turn
 * in the process's life (COMM: start, fork, exec, exit; NOTE: sampling
 * stopped, no heap profile) may use them.  They are a few per process and
 * the collector's only word of that turn, and they come when a ring is
 * most likely full (a flood before a sandbox goes in, an exit): without
 * the reserve a full ring lost them and the process looked alive, or
 * sampled, for ever (safety_vm_test.sh seccomp-full).  The last entry is
 * the last record's alone (NOTE SECCOMP, COMM EXIT: one of them, once,
 * nothing after it): the others can repeat while the ring stays full (a
 * failed exec writes EXEC and START, and a program may try several), and
 * without it two failed execs took the NOTE's room
 * (safety_vm_test.sh seccomp-full-exec).  An EXEC goes in only with room
 * left for the START that follows it if the exec fails: an EXEC without
 * it ends the image for the collector while the process goes on (a
 * refused EXEC costs less: the new image's START says it too, agg.c
 * ends_image()).
 */
#define MARK_ENTRY entry_size(sizeof(struct kpprof_rec_comm) > \
			      sizeof(struct kpprof_rec_note) ? \
			      sizeof(struct kpprof_rec_comm) : \
			      sizeof(struct kpprof_rec_note))
#define MARK_RESERVE (4 * MARK_ENTRY)

static inline uint64_t room_for(const void *rec)
{
	const struct kpprof_record *r = rec;

	if (r->kind == KPPROF_REC_COMM) {
		__u32 reason = ((const struct kpprof_rec_comm *)rec)->reason;

		if (reason == KPPROF_COMM_EXIT)
			return pr.size;
		return pr.size - (reason == KPPROF_COMM_EXEC ? 2 : 1) * MARK_ENTRY;
	}
	if (r->kind == KPPROF_REC_NOTE)
		return ((const struct kpprof_rec_note *)rec)->what == KPPROF_NOTE_SECCOMP ?
		       pr.size : pr.size - MARK_ENTRY;
	return pr.size - MARK_RESERVE;
}

/* ring_write - the producer protocol; 0 or ENOBUFS (counted in lost[]) */
static int ring_write(const void *rec, size_t len)
{
	uint64_t total = entry_size(len), h, t;
	unsigned int kind = ((const struct kpprof_record *)rec)->kind;
	uint64_t room = room_for(rec);
	struct kpprof_pring_hdr *hdr = pr.hdr;
	struct kpp_thread *th = &kpp_thread;
	uint32_t depth = th->ring_depth;	/* writes ours interrupted */
	struct kpprof_ring_hdr *e;
	bool kicked = false;

	h = __atomic_load_n(&hdr->head, __ATOMIC_ACQUIRE);
	for (;;) {
		t = __atomic_load_n(&hdr->tail, __ATOMIC_ACQUIRE);
		if (h + total - t > room) {
			/* full: one kick (if the last one moved the tail), one retry */
			if (!kpp.test_sink && !kicked && kick(t)) {
				kicked = true;
				h = __atomic_load_n(&hdr->head, __ATOMIC_ACQUIRE);
				continue;
			}
			__atomic_fetch_add(&hdr->lost[kind < KPPROF_LOST_KINDS ? kind : 0], 1,
					   __ATOMIC_RELAXED);
			if (kpp.test_sink)
				test_drain(TD_IF_FREE);
			return ENOBUFS;
		}
		/* a failure (or a spurious one) reloads h: check the room again */
		if (__atomic_compare_exchange_n(&hdr->head, &h, h + total, 1,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	e = (struct kpprof_ring_hdr *)(pr.data + (h & pr.mask));
	__atomic_store_n(&e->len, (__u32)len | KPPROF_RING_BUSY, __ATOMIC_RELAXED);
	/*
	 * Ours until the commit: a handler that leaves this write for good
	 * gives it up (kpp_pring_abandon), or the drain would stop at it, the
	 * module's for 2 s, test mode's for as long.  A level of ring_open[]
	 * each, for a handler's write inside ours, and one inside that
	 * (abandon_nested.c: a sampling path's cleanup gives up every level
	 * above its own).  Announced after the BUSY word, which
	 * kpp_pring_abandon() expects to find there; the depth before the
	 * slot, so a handler's write in between takes the next one.
	 * Withdrawn before the commit: after it the space is the drain's,
	 * then another writer's.
	 */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	th->ring_depth = depth + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (likely(depth < KPP_RING_NEST)) {
		th->ring_open[depth].len = (uint32_t)len;
		th->ring_open[depth].entry = e;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(e + 1, rec, len);
	memset((unsigned char *)(e + 1) + len, 0, total - sizeof(*e) - len);
	th->ring_depth = depth;
	/* commit: the record's bytes before the length (the drain's acquire) */
	__atomic_store_n(&e->len, (__u32)len, __ATOMIC_RELEASE);
	if (!kpp.test_sink && 4 * (h + total - t) >= pr.size)
		kick(t);
	if (kpp.test_sink) {
		struct timespec ts;
		uint64_t now;

		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		if (2 * (h + total - t) >= pr.size ||
		    now - atomic_load_explicit(&test_last_drain, memory_order_relaxed) >=
		    TEST_DRAIN_NS)
			test_drain(TD_IF_FREE);
	}
	return 0;
}

int kpp_pring_submit(const void *rec, size_t len)
{
	int st;

	/*
	 * A _Fork() or clone() child that no sample has told yet that it is
	 * one still has our ring's address and no mapping there: one load
	 * (the MADV_WIPEONFORK word) before the ring is touched.
	 */
	kpp_process_check();
	st = atomic_load_explicit(&pr_state, memory_order_acquire);

	if (likely(st == PR_MAPPED))
		return ring_write(rec, len);
	/* COMM records alone never make a ring: most processes never sample */
	if (st != PR_NONE || ((const struct kpprof_record *)rec)->kind == KPPROF_REC_COMM)
		return -1;
	/* the set-up's syscalls, which a filter we never saw may forbid */
	if (kpp_filtered_record())
		return ECANCELED;
	if (setup(NULL, NULL))
		return -1;
	return ring_write(rec, len);
}

void kpp_pring_close_fd_when_alone(void)
{
	int fd;

	/*
	 * only we are inside kpp_emit() or a sampling path (whose kpp_emit()
	 * calls are not announced in emitters, emit.c), each counted once:
	 * any later one sees the ring mapped
	 */
	if (likely(!atomic_load_explicit(&fd_close_pending, memory_order_relaxed)) ||
	    kpp_emitters() + kpp_samplers() > 1)
		return;
	/*
	 * A close the program may forbid with a filter we never saw: the
	 * seccomp probe first (once: the fault costs about what the close
	 * does).  Filtered, the descriptor stays open (CLOEXEC).
	 */
	if (atomic_load(&kpp.stopped) == KPP_STOP_SECCOMP || kpp_filtered(true) ||
	    !atomic_exchange(&fd_close_pending, 0))
		return;
	fd = kpp.fd;
	kpp.fd = -1;
	if (fd >= 0)
		kpp_close(fd);
}

/*
 * kpp_pring_wait_room - wait up to @max_ns for room for record @rec of
 * @len bytes, the room ring_write() will give it (room_for()), sleeping
 * 1 ms at a time (the module drains a ring by itself: every
 * drain_period_ms, or every jiffy while it is filling).  Only where
 * syscalls are known safe and the record matters (seccomp.c's NOTE, the
 * last record before a filter): the reserve leaves it room unless the
 * ring holds a NOTE or EXIT already.  True if there is room or no ring.
 */
bool kpp_pring_wait_room(const void *rec, size_t len, uint64_t max_ns)
{
	uint64_t total = entry_size(len), t0 = 0;
	struct timespec ms = { .tv_nsec = 1000000 };

	if (!kpp_pring_mapped())
		return true;
	for (;;) {
		uint64_t h = __atomic_load_n(&pr.hdr->head, __ATOMIC_ACQUIRE);
		uint64_t t = __atomic_load_n(&pr.hdr->tail, __ATOMIC_ACQUIRE);

		if (h + total - t <= room_for(rec))
			return true;
		if (!t0)
			t0 = kpp_now_ns();
		else if (kpp_now_ns() - t0 > max_ns)
			return false;
		if (kpp.test_sink)
			test_drain(TD_IF_FREE);
		else
			kpp_nanosleep(&ms, NULL);
	}
}

bool kpp_pring_mapped(void)
{
	return atomic_load_explicit(&pr_state, memory_order_acquire) == PR_MAPPED;
}

/*
 * kpp_pring_fork_child - in a new child: the parent's ring is not mapped
 * here (VM_DONTCOPY, MADV_DONTFORK).  If the parent had one, the child
 * maps its own now (open, ioctl, mmap, close: async-signal-safe), so its
 * sampling paths make no syscall even if it sandboxes itself before its
 * first sample (the zygote pattern: fork, sandbox, then allocate).
 * Otherwise, as in any process, its first sample maps one.
 * Return: true if the child has a ring.
 */
static void forget(void)
{
	memset(&pr, 0, sizeof(pr));
	atomic_store(&pr_state, PR_NONE);
	atomic_store(&fd_close_pending, 0);
	atomic_store(&test_draining, 0);
	atomic_store(&kicked_tail, UINT64_MAX);
	atomic_store(&bell_rings, 0);
	test_stuck = false;
	test_sink_closed = 0;
	/* a write a handler's fork interrupted resumes, as in the parent;
	 * abandoned here, it is the drain's 2 s to skip, not ours to give up */
	kpp_thread.ring_depth = 0;
	memset(kpp_thread.ring_open, 0, sizeof(kpp_thread.ring_open));
}

/*
 * kpp_pring_fork_child_stopped - a new child of a stopped process: it has
 * no ring and must not make one (no syscall; kpp.stopped says why).
 */
void kpp_pring_fork_child_stopped(void)
{
	forget();
	atomic_store(&pr_state, PR_FAILED);
}

bool kpp_pring_fork_child(void)
{
	bool had = atomic_load(&pr_state) == PR_MAPPED;
	void *old = pr.hdr, *old_bell = (void *)pr.bell;

	forget();
	/*
	 * Where the parent's ring was: a fork() from a signal handler that
	 * interrupted this thread inside ring_write() resumes that write
	 * when the handler returns, into the old addresses.  There it lands
	 * in the child's own ring (at worst some of the child's records are
	 * refused and counted by the drain), not on unmapped memory.
	 */
	return had && !setup(old, old_bell);
}

/*
 * test_drain - test mode: what the module's drain does, into the sink:
 * entries in ring order up to the first not committed, given up after 2 s
 * (counted in kpp.test_given_up), discarded ones skipped.  One thread at a
 * time: with @how TD_IF_FREE (a writer's drain) a busy drain is left to
 * its thread; TD_FLUSH and TD_LAST (exec, exit, seccomp.c) wait for it,
 * bounded, then drain what is left.  After TD_LAST the sink is never
 * opened again (the seccomp filter about to go in may forbid the open):
 * what a later drain takes is counted as a failed write.  Signals are
 * blocked meanwhile (two syscalls a drain, test mode only): a handler that
 * left the drain for good (pthread_exit, siglongjmp) would keep
 * test_draining set and the sink open, and no record after it would reach
 * the sink (abandon_host_test.sh, emulated ring).
 */
static void test_drain(int how)
{
	struct iovec iov[TEST_DRAIN_BATCH];
	struct kpprof_pring_hdr *hdr = pr.hdr;
	struct timespec ts;
	uint64_t t, head, start, now;
	unsigned long mask;
	int n, fd = -1;

	if (how == TD_IF_FREE && atomic_load_explicit(&test_draining, memory_order_relaxed))
		return;
	kpp_sigblock(&mask);
	/*
	 * kpp_wait_more() (wait.c), no yield: a raw filter that traps
	 * sched_yield alone lets the drain's own syscalls through, and test
	 * mode is how the host tests put such a filter beside exit's flush
	 * (raw_yield_host_test.sh: SIGSYS here in 1 of 5 runs under load).
	 */
	for (struct kpp_wait w = { 0 }; atomic_exchange(&test_draining, 1);) {
		if (how == TD_IF_FREE || !kpp_wait_more(&w, 100000000ULL)) {
			kpp_sigrestore(&mask);
			return;
		}
	}
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	atomic_store_explicit(&test_last_drain, now, memory_order_relaxed);
	t = __atomic_load_n(&hdr->tail, __ATOMIC_RELAXED);
	do {
		head = __atomic_load_n(&hdr->head, __ATOMIC_ACQUIRE);
		start = t;
		for (n = 0; t != head && n < TEST_DRAIN_BATCH;) {
			struct kpprof_ring_hdr *e = (void *)(pr.data + (t & pr.mask));
			__u32 w = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE);
			uint64_t total = entry_size(w & KPPROF_RING_LEN_MASK);

			if (!w || (w & KPPROF_RING_BUSY)) {
				/* not committed: the module's rule, 2 s */
				if (!test_stuck || test_stuck_pos != t) {
					test_stuck = true;
					test_stuck_pos = t;
					test_stuck_since = now;
					break;
				}
				/* a coarse clock read by another thread: not before */
				if (now < test_stuck_since + TEST_STUCK_NS)
					break;
				test_stuck = false;
				atomic_fetch_add_explicit(&kpp.test_given_up, 1,
							  memory_order_relaxed);
				if (!w || total > head - t) {
					t = head;	/* its length never written */
					break;
				}
				t += total;	/* zeroed with the rest below */
				continue;
			}
			if (!(w & KPPROF_RING_DISCARD)) {
				iov[n].iov_base = e + 1;
				iov[n++].iov_len = w & KPPROF_RING_LEN_MASK;
			}
			t += total;
		}
		/* libc's syscall(2), like emit.c's test-mode writes: the
		 * tests interpose it. */
		if (n && fd < 0 && !test_sink_closed)
			fd = kpp_test_sink_open();
		if (n && (fd < 0 || syscall(SYS_writev, fd, iov, n) < 0))
			atomic_fetch_add_explicit(&kpp.writes_failed, 1, memory_order_relaxed);
		/* zero what was drained, then give the room back */
		if (t - start)
			memset(pr.data + (start & pr.mask), 0, t - start);
		__atomic_store_n(&hdr->tail, t, __ATOMIC_RELEASE);
	} while (n == TEST_DRAIN_BATCH);
	if (fd >= 0)
		kpp_close(fd);
	if (how == TD_LAST)
		test_sink_closed = 1;
	atomic_store(&test_draining, 0);
	kpp_sigrestore(&mask);
}

void kpp_pring_abandon(struct kpp_thread *t, uint32_t outer_depth)
{
	for (uint32_t i = t->ring_depth; i-- > outer_depth;) {
		struct kpprof_ring_hdr *e;
		uint32_t len;

		if (i >= KPP_RING_NEST)
			continue;	/* not recorded: the drain's 2 s */
		e = t->ring_open[i].entry;
		len = t->ring_open[i].len;
		/* none yet (left between the depth and the slot), or a
		 * parent's, gone in this fork child (forget()) */
		if (!e)
			continue;
		/*
		 * Skipped by the drain, uncounted (ioctl/kpprof.h, step 3);
		 * only if the entry is still ours, our BUSY word there: a
		 * handler that ran longer than the drain's 2 s before leaving
		 * finds its entry given up and the space zeroed or another
		 * writer's (abandon_stale.c).  That writer's own BUSY word of
		 * the same length it overwrites at commit.
		 */
		__atomic_compare_exchange_n(&e->len, &(uint32_t){ len | KPPROF_RING_BUSY },
					    len | KPPROF_RING_DISCARD, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	t->ring_depth = outer_depth;
}

void kpp_pring_flush(bool last)
{
	if (kpp.test_sink && kpp_pring_mapped())
		test_drain(last ? TD_LAST : TD_FLUSH);
}
