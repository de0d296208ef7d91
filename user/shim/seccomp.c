// SPDX-License-Identifier: GPL-2.0
/*
 * Never kill a sandboxed process.
 *
 * A seccomp filter may forbid any syscall the shim makes on its own
 * (ioctl to submit a record, the unwinder's, clock_gettime's fallback):
 * once one is in force, the shim cannot know what is allowed, and a
 * forbidden syscall is usually SIGSYS.  So it stops emitting for good:
 *
 *  - A filter installed while we run: prctl(PR_SET_SECCOMP) and
 *    syscall(SYS_seccomp, SECCOMP_SET_MODE_{STRICT,FILTER}) (glibc has no
 *    seccomp() function; libseccomp uses one of these two) are wrapped.
 *    Before the real call, still unfiltered, the shim stops new samples,
 *    waits for threads that are inside a sampling path or a submit to
 *    leave it (like the fork prepare handler), and submits one
 *    KPPROF_REC_NOTE (KPPROF_NOTE_SECCOMP, value: events not sent so far;
 *    into a full ring, after waiting up to 100 ms for room) so the
 *    collector can say why the process went quiet.  A filter that
 *    then fails to go in (EINVAL, EACCES...) leaves the shim stopped.
 *  - A process that starts filtered (exec under a sandbox): the first
 *    thing the shim does, before any syscall of its own, is read
 *    "Seccomp:" in /proc/self/status with open/read/close, which the
 *    dynamic loader needed anyway to start the program.  If it is not 0
 *    the shim stays in pass-through; nothing can be sent, not even a note.
 *
 *  - A filter installed behind our back, with the program's own `syscall`
 *    instruction (browser sandboxes, Go's RawSyscall): no wrapper sees it.
 *    Once a process's ring is mapped a sample makes no syscall, but the
 *    shim still makes a few on its own: the ring's set-up at the first
 *    sample, a fork child's set-up, a COMM record without a ring (SUBMIT),
 *    the getpid at exit and at exec, the close of the start-up
 *    descriptor, a private stack or a bigger sampled-address table.
 *    Before each, kpp_filtered() asks the module's seccomp probe
 *    (KPPROF_PGOFF_SECCOMP_PROBE), mapped at start-up right after the
 *    config page: a read of one of two pages, a page fault answered for
 *    the process's threads (non-zero if any has a filter, TSYNC or not;
 *    a module without KPPROF_FEAT_SECCOMP_PROBE_GROUP answers for the
 *    faulting thread alone), so no filter can forbid the question.  The
 *    pages are read alternately (probe_reads, inherited by children, as
 *    the mapping is), the second too when the first says no filter, so
 *    the answer is never older than the question.  Filtered:
 *    the shim stops as for a filter it saw, makes no syscall, and says
 *    so with a NOTE only if the ring is mapped (no syscall either).
 *
 * Stopped, the heap countdowns keep running (no syscall) and each event
 * that would have been sampled is counted in kpp.unsent; contention
 * timing stops (it reads the clock).  KPPROF_DEBUG stays silent too: its
 * lines are write(2)s the program did not ask for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include "shim.h"

/*
 * Streaming match of "\nSeccomp:\t<mode>".  The file is about 1.5 KiB,
 * the Seccomp line in its first kilobyte or so (before the long CPU and
 * node masks): read into a static 2 KiB buffer, one read(2) (four with the
 * small buffer it had before issue 11).  The buffer lives in .data
 * (KPP_START_DATA): in .bss it cost two page faults (it straddled two
 * pages) in every process that checks.  A second caller at the same
 * moment (cannot happen: only the constructor calls this in practice)
 * streams through a small one on its stack.
 */
static int seccomp_mode(int fd)
{
	static const char key[] = "\nSeccomp:";
	static char big[2048] KPP_START_DATA;
	static atomic_flag big_busy KPP_START_DATA = ATOMIC_FLAG_INIT;
	size_t k = 1;		/* the file starts as if after a newline */
	bool value = false, mine = !atomic_flag_test_and_set(&big_busy);
	char small[256], *buf = mine ? big : small;
	size_t size = mine ? sizeof(big) : sizeof(small);
	int ret;
	ssize_t n;

	ret = -1;
	while ((n = kpp_read(fd, buf, size)) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];

			if (value) {
				if (c == ' ' || c == '\t')
					continue;
				ret = c >= '0' && c <= '9' ? c - '0' : -1;
				goto out;
			}
			if (c == key[k]) {
				if (++k == sizeof(key) - 1)
					value = true;
			} else {
				k = c == '\n' ? 1 : 0;
			}
		}
	}
	ret = n < 0 ? -1 : 0;	/* no such line: a kernel without seccomp */
out:
	if (mine)
		atomic_flag_clear(&big_busy);
	return ret;
}

bool kpp_seccomp_inherited(void)
{
	int saved = errno, fd, mode;

	if (atomic_load(&kpp.stopped) == KPP_STOP_SECCOMP)
		return true;
	fd = kpp_open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* No /proc: cannot know, carry on.  Refused: assume a filter. */
		mode = errno == ENOENT ? 0 : -1;
	} else {
		mode = seccomp_mode(fd);
		kpp_close(fd);
	}
	if (mode != 0)
		atomic_store(&kpp.stopped, KPP_STOP_SECCOMP);
	atomic_store(&kpp.seccomp_checked, 1);
	errno = saved;
	return mode != 0;
}

/*
 * The probe: two read-only pages of the device (ioctl/kpprof.h,
 * KPPROF_PGOFF_SECCOMP_PROBE), inherited by fork children at the same
 * address, neither page mapped in the child.  Armed once start-up is over
 * (start-up is unfiltered, or the /proc check stopped us).
 */
static const volatile unsigned char *probe;
static size_t probe_page;
static _Atomic unsigned int probe_reads;
static _Atomic int probe_armed;

void kpp_probe_map(int fd, long pagesz)
{
	void *m = kpp_mmap(NULL, 2 * (size_t)pagesz, PROT_READ, MAP_SHARED, fd,
			   (off_t)KPPROF_PGOFF_SECCOMP_PROBE * pagesz);

	if (m == MAP_FAILED)
		return;		/* an older module: as before the probe */
	probe = m;
	probe_page = (size_t)pagesz;
}

void kpp_probe_arm(void)
{
	atomic_store(&probe_armed, 1);
}

/* the NOTE of a stop the probe saw: into a mapped ring only (no syscall) */
static void note_unseen(void)
{
	struct kpprof_rec_note note;

	if (!kpp_pring_mapped())
		return;
	memset(&note, 0, sizeof(note));
	note.hdr.kind = KPPROF_REC_NOTE;
	note.hdr.size = sizeof(note);
	note.what = KPPROF_NOTE_SECCOMP;
	note.value = atomic_load(&kpp.unsent);
	if (!kpp_submit(&note, sizeof(note)))
		atomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);
}

/* One question to the probe at @p: non-zero if a thread of the process has a filter. */
static bool probe_read(const volatile unsigned char *p)
{
	unsigned int n;

	/*
	 * The module keeps at most one of the two pages mapped.  The first
	 * read may hit the page an earlier fault mapped, whose answer can
	 * predate a filter this thread installed since; the other page was
	 * unmapped at that moment, so the second read either faults now or
	 * gets what a fault after the first read answered: never older than
	 * the question (though, in a vfork child or a clone(CLONE_VM) task,
	 * perhaps another thread group's: the module answers for the
	 * faulting thread's group; and from a module without
	 * KPPROF_FEAT_SECCOMP_PROBE_GROUP, perhaps another thread's: it
	 * answers for the faulting thread alone).  Read alike from both
	 * modules, both reads with both: a group answer is no fresher than
	 * the fault that took it.  One fault per unfiltered question as a
	 * rule: its first read hits the page the last question's second
	 * read mapped (a few questions in a process's life).
	 */
	n = atomic_fetch_add_explicit(&probe_reads, 1, memory_order_relaxed);
	return *(const volatile uint32_t *)(p + (n & 1) * probe_page) ||
	       *(const volatile uint32_t *)(p + (~n & 1) * probe_page);
}

/*
 * probe_ask - 1: a thread of this process has a filter (the shim stops, with a NOTE
 * if @note); 0: it has none now; -1: no probe to ask (no module, an older
 * one, test mode) or start-up is not over.
 */
static int probe_ask(bool note)
{
	const volatile unsigned char *p = probe;
	int saved;

	if (!p || !atomic_load_explicit(&probe_armed, memory_order_relaxed))
		return -1;
	if (!probe_read(p))
		return 0;
	/* no waiting for other threads (seccomp.c's stop needs a clock) */
	saved = errno;
	if (!atomic_exchange(&kpp.stopped, KPP_STOP_SECCOMP) && note)
		note_unseen();
	errno = saved;
	return 1;
}

bool kpp_filtered(bool note)
{
	if (atomic_load_explicit(&kpp.stopped, memory_order_relaxed) == KPP_STOP_SECCOMP)
		return true;
	return probe_ask(note) > 0;
}

bool kpp_unfiltered(void)
{
	if (atomic_load_explicit(&kpp.stopped, memory_order_relaxed))
		return false;
	return probe_ask(true) == 0;
}

/* Stop for good, then report it while the ioctl is still allowed. */
static void stop_for_filter(void)
{
	struct kpp_thread *t = &kpp_thread;
	struct kpprof_rec_note note;
	int saved = errno, prev;
	int self_sampling = t->guard ? 1 : 0, self_emitting = (int)t->emitting;

	prev = atomic_exchange(&kpp.stopped, KPP_STOP_SECCOMP);
	if (prev || atomic_load(&kpp.ready) != 1)
		return;		/* already quiet, or never started */
	/*
	 * Pairs with kpp_sample_begin() and kpp_emit(): they announce
	 * themselves, then check the flag.  Bounded (a sampling thread may
	 * sit in a signal handler for any time): after a second the filter
	 * goes in anyway, and a sample still under way may meet it (counted).
	 * Yields, not kpp_wait_more() (wait.c): this runs before the filter
	 * it was called for goes in, and a process that started filtered was
	 * stopped from the start (kpp_seccomp_inherited()), so nothing
	 * forbids them here.  The one exception: a filter installed earlier
	 * with a raw syscall that no probe read has found yet; the yields
	 * and the NOTE below then meet it, as they did before wait.c.
	 */
	for (uint64_t t0 = kpp_now_ns();
	     kpp_samplers() > self_sampling ||
	     kpp_emitters() > self_emitting;) {
		if (kpp_now_ns() - t0 > 1000000000ULL) {
			atomic_fetch_add(&kpp.seccomp_unwaited, 1);
			kpp_debug("seccomp: a thread still in a sampling path after 1 s; not waiting");
			break;
		}
		kpp_sched_yield();
	}
	memset(&note, 0, sizeof(note));
	note.hdr.kind = KPPROF_REC_NOTE;
	note.hdr.size = sizeof(note);
	note.what = KPPROF_NOTE_SECCOMP;
	note.value = atomic_load(&kpp.unsent);
	/* the last record: worth waiting (bounded) for room in a full ring */
	kpp_pring_wait_room(&note, sizeof(note), 100000000ULL);
	if (!kpp_submit(&note, sizeof(note)))
		atomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);
	/* test mode: the emulated ring's drain opens the sink, which the
	 * filter may forbid; drain it now, the last time the sink is opened
	 * (the module drains in the kernel) */
	kpp_pring_flush(true);
	errno = saved;
}

/*
 * The real prctl and syscall, found at start with the other next
 * definitions (real.c, kpp_next_resolve), not at the first call: the
 * shim's own records go through syscall(2) in test mode, and a sampling
 * path must not call dlsym; nor may a _Fork() child, which may inherit the
 * loader's lock held.  Only a call made before our constructor ran looks
 * them up there.
 */
enum { N_PRCTL, N_SYSCALL, N_NR };
static const char *const next_names[N_NR] = { "prctl", "syscall" };
static void *_Atomic seccomp_next_fns[N_NR] KPP_START_DATA;
const struct kpp_next_table kpp_seccomp_next = { seccomp_next_fns, next_names, N_NR, NULL, NULL };

static void *next(int i)
{
	return kpp_next_cached(&seccomp_next_fns[i], next_names[i], NULL);
}

KPP_EXPORT int prctl(int option, ...)
{
	int (*real)(int, unsigned long, unsigned long, unsigned long,
		    unsigned long) = next(N_PRCTL);
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (option == PR_SET_SECCOMP)
		stop_for_filter();
	return real(option, a[0], a[1], a[2], a[3]);
}

KPP_EXPORT long syscall(long nr, ...)
{
	long (*real)(long, ...) = next(N_SYSCALL);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if ((nr == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_STRICT ||
				   a[0] == SECCOMP_SET_MODE_FILTER)) ||
	    (nr == SYS_prctl && a[0] == PR_SET_SECCOMP))
		stop_for_filter();
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
