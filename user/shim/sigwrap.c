// SPDX-License-Identifier: GPL-2.0
/*
 * A signal handler that interrupts a sample runs on the program's stack.
 *
 * A sample's body runs on a private stack (stackpool.c).  A signal that
 * lands there runs its handler there too (the kernel puts the frame at the
 * interrupted stack pointer), and a handler may care which stack it is
 * on: a conservative garbage collector (Boehm's libgc: guile, w3m,
 * inkscape...) stops each thread with a signal and scans the thread's
 * stack from the handler's stack pointer up; from the private stack it
 * scans none of the thread's frames and frees its live objects.
 *
 * So in a process that samples, a handler the program installs with
 * sigaction() or signal() is installed as trampoline() below, which calls
 * it at once where it is, or, when it finds itself on the private stack
 * of this thread's sample, calls it on the program's stack, just below
 * what switch.S saved there (the program's callee-saved registers: what
 * it holds live across the call is all in its stack's memory, above the
 * handler's stack pointer).  The handler gets the kernel's siginfo and
 * ucontext (which describe the interrupted sample); signal mask, flags and
 * SA_RESETHAND are the kernel's, applied to the trampoline as the program
 * asked.  No syscall per sample, none per signal: the cost is one
 * indirect call per signal.
 *
 * sigaction() and signal() report the program's handler, never the
 * trampoline.  Not covered: a handler installed before our constructor
 * ran, or by a raw rt_sigaction syscall, or by sysv_signal/sigset (each
 * runs where the kernel delivers it, as before), and more than
 * KPP_SIG_HANDLERS distinct handlers (the rest installed directly, counted
 * in kpp.sig_unwrapped).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include "shim.h"

#ifndef SS_AUTODISARM
#define SS_AUTODISARM	(1U << 31)	/* linux/signal.h, since 4.7 */
#endif

#define KPP_SIG_HANDLERS	256

/*
 * The program's handlers: immutable once published (a signal handler
 * reads them with no lock), shared by every signal that uses the same
 * one.  @fn NULL: being written.
 */
static struct {
	void *_Atomic fn;
	bool siginfo;		/* SA_SIGINFO: fn(sig, info, uc) */
} handlers[KPP_SIG_HANDLERS];
static _Atomic int nr_handlers;
/* the handler behind the trampoline for each signal: index + 1, 0: none */
static _Atomic int installed[_NSIG];

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

static void *_Atomic sigwrap_next_fns[4] KPP_START_DATA;
static const char *const next_names[4] = { "sigaction", "signal", "bsd_signal", "sigaltstack" };
const struct kpp_next_table kpp_sigwrap_next = { sigwrap_next_fns, next_names, 4, NULL, NULL };

static void trampoline(int sig, siginfo_t *info, void *uc);

/* kpp_call_on - switch.S */
void kpp_call_on(uintptr_t top, void (*fn)(void *, int, void *, void *),
		 void *h, int sig, void *info, void *uc) KPP_HIDDEN;

static void call_handler(void *h, int sig, void *info, void *uc)
{
	int i = (int)(uintptr_t)h;
	void *fn = atomic_load_explicit(&handlers[i].fn, memory_order_acquire);

	if (handlers[i].siginfo)
		((void (*)(int, siginfo_t *, void *))fn)(sig, info, uc);
	else
		((void (*)(int))fn)(sig);
}

static void trampoline(int sig, siginfo_t *info, void *uc)
{
	struct kpp_thread *t = &kpp_thread;
	int i = sig > 0 && sig < _NSIG ?
		atomic_load_explicit(&installed[sig], memory_order_acquire) : 0;

	if (unlikely(!i))
		return;		/* not ours to run: cannot happen */
	if (unlikely(kpp_stackpool_in_body(t)))
		kpp_call_on(t->switch_sp, call_handler, (void *)(uintptr_t)(i - 1),
			    sig, info, uc);
	else
		call_handler((void *)(uintptr_t)(i - 1), sig, info, uc);
}

/* The slot of @fn (index + 1), published if new; 0 if the table is full. */
static int handler_slot(void *fn, bool siginfo)
{
	int n = atomic_load_explicit(&nr_handlers, memory_order_acquire);
	int i;

	for (i = 0; i < n && i < KPP_SIG_HANDLERS; i++)
		if (atomic_load_explicit(&handlers[i].fn, memory_order_acquire) == fn &&
		    handlers[i].siginfo == siginfo)
			return i + 1;
	i = atomic_fetch_add(&nr_handlers, 1);
	if (i >= KPP_SIG_HANDLERS) {
		atomic_fetch_sub(&nr_handlers, 1);
		atomic_fetch_add_explicit(&kpp.sig_unwrapped, 1, memory_order_relaxed);
		return 0;
	}
	handlers[i].siginfo = siginfo;
	atomic_store_explicit(&handlers[i].fn, fn, memory_order_release);
	return i + 1;
}

static sigaction_fn real_sigaction(void)
{
	return (sigaction_fn)kpp_next_cached(&sigwrap_next_fns[0], next_names[0], NULL);
}

/* What the program asked for, as the kernel now has it. */
static void report(struct sigaction *old, int prev)
{
	if (!old || old->sa_sigaction != trampoline)
		return;
	if (!prev) {		/* cannot happen: the trampoline with no handler */
		old->sa_handler = SIG_DFL;
		return;
	}
	old->sa_sigaction = atomic_load_explicit(&handlers[prev - 1].fn, memory_order_acquire);
	if (!handlers[prev - 1].siginfo)
		old->sa_flags &= ~SA_SIGINFO;
}

static bool wrapping(void)
{
	return atomic_load_explicit(&kpp.ready, memory_order_relaxed) == 1;
}

KPP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn next = real_sigaction();
	struct sigaction tramp;
	int slot, prev, rc;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= _NSIG || !wrapping())
		return next(sig, act, old);
	if (!act || act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN ||
	    !(slot = handler_slot((void *)act->sa_handler, act->sa_flags & SA_SIGINFO))) {
		/* the kernel's own answer; the table is only read behind the trampoline */
		prev = atomic_load_explicit(&installed[sig], memory_order_acquire);
		rc = next(sig, act, old);
		if (!rc)
			report(old, prev);
		return rc;
	}
	tramp = *act;
	tramp.sa_sigaction = trampoline;
	tramp.sa_flags |= SA_SIGINFO;
	/*
	 * Published first: a signal that finds the trampoline from now on
	 * runs the new handler (at most a little before sigaction returns).
	 */
	prev = atomic_exchange(&installed[sig], slot);
	rc = next(sig, &tramp, old);
	if (rc) {
		int expect = slot;

		atomic_compare_exchange_strong(&installed[sig], &expect, prev);
		return rc;
	}
	report(old, prev);
	return 0;
}

/*
 * signal() and bsd_signal(): glibc's, which pick the flags (SA_RESTART
 * unless siginterrupt() said otherwise) and the mask, then the same
 * handler again through sigaction() above, with the flags and mask the
 * kernel was given.
 */
static sighandler_t wrap_signal(int i, int sig, sighandler_t h)
{
	signal_fn next = (signal_fn)kpp_next_cached(&sigwrap_next_fns[i], next_names[i], NULL);
	struct sigaction cur;
	sighandler_t old;
	int prev;

	if (!next) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (sig <= 0 || sig >= _NSIG || !wrapping())
		return next(sig, h);
	prev = atomic_load_explicit(&installed[sig], memory_order_acquire);
	old = next(sig, h);
	if (old == SIG_ERR)
		return old;
	if (old == (sighandler_t)(void *)trampoline)
		old = prev ? (sighandler_t)atomic_load(&handlers[prev - 1].fn) : SIG_DFL;
	if (h != SIG_DFL && h != SIG_IGN && h != SIG_ERR && !real_sigaction()(sig, NULL, &cur) &&
	    cur.sa_handler == h)
		sigaction(sig, &cur, NULL);
	return old;
}

KPP_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return wrap_signal(1, sig, h);
}

KPP_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return wrap_signal(2, sig, h);
}

/*
 * sigaltstack(): where this thread's signal stack is, so that a sample in
 * a handler running on it is skipped (stackpool.c: leaving it for the
 * private stack would let the kernel put the next SA_ONSTACK signal's
 * frame over the handler's).  With SS_AUTODISARM the kernel disarms it
 * while a handler runs there, and the question does not arise.
 */
KPP_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	int (*next)(const stack_t *, stack_t *) =
		kpp_next_cached(&sigwrap_next_fns[3], next_names[3], NULL);
	struct kpp_thread *t = &kpp_thread;
	int rc;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	rc = next(ss, old);
	if (!rc && ss) {
		if (ss->ss_flags & (SS_DISABLE | SS_AUTODISARM)) {
			t->alt_hi = 0;
			t->alt_lo = 0;
		} else {
			/* a handler of this thread never sees half old, half new */
			t->alt_hi = 0;
			atomic_signal_fence(memory_order_seq_cst);
			t->alt_lo = (uintptr_t)ss->ss_sp;
			atomic_signal_fence(memory_order_seq_cst);
			t->alt_hi = (uintptr_t)ss->ss_sp + ss->ss_size;
		}
	}
	return rc;
}
