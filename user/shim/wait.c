// SPDX-License-Identifier: GPL-2.0
/*
 * The shim's one way to wait for another thread (issue 15, "the shim
 * cannot hurt its process"): the sampled set's grow lock (sampled_set.c)
 * and, at exit, the threads still inside a sampling path (init.c).
 *
 * Both used to sched_yield() between looks, which a seccomp filter
 * installed with a raw `syscall` instruction may forbid: SIGSYS, usually
 * death (selftests/shim/raw_yield_host_test.sh).  A sampling path of a
 * process with a ring otherwise makes no syscall, so the wait makes none
 * either where a filter may be in force:
 *
 *  - each step is a `pause` (the spin-wait hint: the sibling hyperthread
 *    runs, the memory pipeline is not flooded with the caller's loads);
 *  - every WAIT_BATCH steps the clock is read, kpp_now_ns(), the vDSO's,
 *    and the wait ends once @max_ns have passed (plus the first batch,
 *    which reads no clock: a short wait, the usual one, reads none);
 *  - there too, and only if the module's seccomp probe answered that no
 *    thread of the process has a filter (kpp_unfiltered(): two page
 *    faults, never a syscall; from a module without
 *    KPPROF_FEAT_SECCOMP_PROBE_GROUP, that the faulting thread has none;
 *    asked at the first look and every WAIT_ASK-th after, not at each: a
 *    fault walks the process's threads under the probe mapping's mutex,
 *    and an older module's mutex was one of 64 that other processes'
 *    probes may hash to), the step is a
 *    yield instead, as before: then a waiter gives
 *    its CPU to the thread it waits for.  Without the probe (an older
 *    module, test mode) the shim cannot know, and never yields.
 *
 * What that costs where the waiter and the thread it waits for share one
 * CPU (a single-CPU machine, or the holder preempted) and nothing can be
 * yielded: the waiter spins until the scheduler preempts it or the bound
 * passes, so at most @max_ns of its CPU for each wait: 1 ms for a sample
 * that needs a new table while another thread adds one (then skipped,
 * counted), 50 ms once at exit.  The first is rare: the table lock is
 * held 5 to 30 us here, four times in a process's life (the filter's
 * grows, milliseconds, have a lock of their own that nobody waits for:
 * sampled_set.c).  The second is a scheduler's slice or two: 4 threads
 * sampling on these 2 CPUs when main calls exit() kept it waiting 3 to
 * 10 ms (raw_yield exit), 20 ms on one of them (taskset), where a yield
 * handed the CPU over at once.  The old bounds, 1000 and 10000 yields,
 * were 1.1 and 11 ms here where the yield found nothing else to run (1.1
 * us a yield), and far longer whenever another task was runnable, when a
 * yield gives the CPU away.
 *
 * The clock is the vDSO's where the kernel's clocksource allows it (TSC,
 * kvm-clock); elsewhere (some guests') it is a clock_gettime syscall, as
 * for the lock timing and the random seed (lock.c, rand.c): the first
 * batch is why a short wait does not read it.  If the clock does not
 * move, the wait still ends after @max_ns steps (a step, a pause and the
 * caller's look, takes 1 ns or more on any x86 CPU; 43 ns here).
 *
 * A stopped shim (seccomp, foreign descriptor) sends nothing more, so no
 * wait is worth it: false at once, and no clock.
 */
#include "shim.h"

#define WAIT_BATCH	64	/* pauses between two looks at the clock: 2.7 us here */
#define WAIT_STILL	16	/* looks without a tick: the clock stands still */
#define WAIT_ASK	16	/* looks between two questions to the probe: 45 us here */

bool kpp_wait_more(struct kpp_wait *w, uint64_t max_ns)
{
	uint64_t now;

	if (atomic_load_explicit(&kpp.stopped, memory_order_relaxed))
		return false;
	if (++w->steps % WAIT_BATCH) {
		__builtin_ia32_pause();
		return true;
	}
	if (w->steps > max_ns)
		return false;
	now = kpp_now_ns();
	if (w->steps == WAIT_BATCH)
		w->t0 = now;
	else if (now - w->t0 > max_ns)
		return false;
	/*
	 * A clock that stands still is no clock to wait by: kpp_now_ns()'s
	 * clock_gettime binds to the program's own (a test's mock; or
	 * libfaketime's, whose absolute FAKETIME stops CLOCK_MONOTONIC too),
	 * and the step bound alone is @max_ns steps, 43 ns each here: 43 ms
	 * for a sample, 2 s at exit (selftests/shim/stuck_grow.c -f).  A
	 * real one moves within WAIT_STILL looks (WAIT_STILL * WAIT_BATCH
	 * pauses); a tick-based one (no high-resolution timers) may not, and
	 * only ends the wait early.
	 */
	if (now != w->last) {
		w->last = now;
		w->still = 0;
	} else if (++w->still >= WAIT_STILL) {
		return false;
	}
	/* asked at the first look, then every WAIT_ASK-th: a question is two faults */
	if (!(w->steps % (WAIT_BATCH * WAIT_ASK)) || w->steps == WAIT_BATCH)
		w->may_yield = kpp_unfiltered();
	if (w->may_yield)
		kpp_sched_yield();
	else
		__builtin_ia32_pause();
	return true;
}
