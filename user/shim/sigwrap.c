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
 * sigaction(), signal() or bsd_signal() is given to the kernel as one of
 * sigstubs.S's entry points, one per distinct handler (the table below):
 * the stub calls kpp_sig_trampoline(), which calls the handler at once
 * where it is, or, when it finds itself on the private stack of this
 * thread's sample, on the program's stack, just below what switch.S
 * saved there (the program's callee-saved registers: what it holds live
 * across the call is all in its stack's memory, above the handler's stack
 * pointer).  The handler gets the kernel's siginfo and ucontext (which
 * describe the interrupted sample); signal mask, flags and SA_RESETHAND
 * are the kernel's, applied as the program asked.  No syscall per sample,
 * none per signal: the cost is a jump and a call per signal.
 *
 * A stub stands for its handler and nothing else, so the kernel's value
 * means the same however it is read or passed around: sigaction() and
 * signal() report the program's handler for it (always, from any
 * process), and a stub handed back to them (read by a raw rt_sigaction
 * or returned by sigset) goes in as it is.  The table is only ever
 * appended to, and a vfork child that adds to it changes nothing its
 * parent relies on.
 *
 * Not covered (the handler runs where the kernel delivers it, as
 * before): a handler installed before our constructor ran, or by a raw
 * rt_sigaction syscall, or by sysv_signal/sigset/__sigaction, and
 * handlers past KPP_SIG_STUBS distinct ones (installed directly, counted
 * in kpp.sig_unwrapped).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include "shim.h"

#define KPP_SIG_STUBS	256		/* as sigstubs.S */
#define KPP_SIG_STUB_SIZE 16

/* sigstubs.S */
extern const char kpp_sig_stubs[] KPP_HIDDEN, kpp_sig_stubs_end[] KPP_HIDDEN;
void kpp_sig_trampoline(int sig, siginfo_t *info, void *uc, unsigned int k) KPP_HIDDEN;
/* switch.S */
void kpp_call_on(uintptr_t top, void (*fn)(void *, int, void *, void *),
		 void *h, int sig, void *info, void *uc) KPP_HIDDEN;

/*
 * The program's handlers, stub k's in handlers[k]: immutable once
 * published (a signal handler reads them with no lock), shared by every
 * signal that uses the same one.  @fn NULL: being written.
 */
static struct {
	void *_Atomic fn;
	bool siginfo;		/* installed with SA_SIGINFO (what sigaction reports) */
} handlers[KPP_SIG_STUBS];
static _Atomic unsigned int nr_handlers;

static void *_Atomic sigwrap_next_fns[4] KPP_START_DATA;
static const char *const next_names[4] = { "sigaction", "signal", "bsd_signal", "sigaltstack" };
const struct kpp_next_table kpp_sigwrap_next = { sigwrap_next_fns, next_names, 4, NULL, NULL };

static void *stub(unsigned int k)
{
	return (void *)(kpp_sig_stubs + (size_t)k * KPP_SIG_STUB_SIZE);
}

/* Stub k + 1 if @h is one of ours, else 0. */
static unsigned int stub_of(const void *h)
{
	uintptr_t a = (uintptr_t)h, lo = (uintptr_t)kpp_sig_stubs;

	if (a < lo || a >= (uintptr_t)kpp_sig_stubs_end || (a - lo) % KPP_SIG_STUB_SIZE)
		return 0;
	return (unsigned int)((a - lo) / KPP_SIG_STUB_SIZE) + 1;
}

/*
 * Always with the three arguments: on x86-64 the kernel passes &siginfo
 * and &ucontext to every handler, SA_SIGINFO or not, and a handler
 * installed with signal() may read them (a SIGSEGV handler that skips
 * the faulting instruction, a SIGPROF sampler reading the pc); a
 * one-argument function ignores the other two (review rres R1: fn(sig)
 * left them what the shim's code had in rsi and rdx, SIGSEGV).
 */
static void call_handler(void *h, int sig, void *info, void *uc)
{
	unsigned int k = (unsigned int)(uintptr_t)h;
	void *fn = atomic_load_explicit(&handlers[k].fn, memory_order_acquire);

	((void (*)(int, siginfo_t *, void *))fn)(sig, info, uc);
}

void kpp_sig_trampoline(int sig, siginfo_t *info, void *uc, unsigned int k)
{
	struct kpp_thread *t = &kpp_thread;

	if (unlikely(k >= KPP_SIG_STUBS ||
		     !atomic_load_explicit(&handlers[k].fn, memory_order_acquire)))
		return;		/* cannot happen: a stub is given out once published */
	uint32_t depth = t->sig_depth;

	/*
	 * In a handler: its samples ask the kernel whether they are on the
	 * altstack, whatever else is known (altstack.c).  Its frame is
	 * marked; returning drops its mark and any a nested handler that
	 * longjmp'd out of left above it.  A longjmp out of this one leaves
	 * its mark: more questions, never fewer (review helper-25 M1: with a
	 * single mark, a nested handler's stale one below a live outer
	 * handler hid it).
	 */
	if (depth < KPP_SIG_MARKS)
		t->sig_marks[depth] = (uintptr_t)__builtin_frame_address(0);
	atomic_signal_fence(memory_order_seq_cst);
	t->sig_depth = depth + 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(kpp_stackpool_in_body(t)))
		kpp_call_on(t->switch_sp, call_handler, (void *)(uintptr_t)k, sig, info, uc);
	else
		call_handler((void *)(uintptr_t)k, sig, info, uc);
	atomic_signal_fence(memory_order_seq_cst);
	t->sig_depth = depth;
}

/* The stub for @fn, published if new; NULL if the table is full. */
static void *stub_for(void *fn, bool siginfo)
{
	unsigned int n = atomic_load_explicit(&nr_handlers, memory_order_acquire);
	unsigned int i;

	for (i = 0; i < n && i < KPP_SIG_STUBS; i++)
		if (atomic_load_explicit(&handlers[i].fn, memory_order_acquire) == fn &&
		    handlers[i].siginfo == siginfo)
			return stub(i);
	i = atomic_fetch_add(&nr_handlers, 1);
	if (i >= KPP_SIG_STUBS) {
		atomic_fetch_sub(&nr_handlers, 1);
		atomic_fetch_add_explicit(&kpp.sig_unwrapped, 1, memory_order_relaxed);
		return NULL;
	}
	handlers[i].siginfo = siginfo;
	atomic_store_explicit(&handlers[i].fn, fn, memory_order_release);
	return stub(i);
}

/* A stub's program handler (NULL if @h is no stub of ours). */
static void *handler_of(const void *h, bool *siginfo)
{
	unsigned int k = stub_of(h);

	if (!k)
		return NULL;
	*siginfo = handlers[k - 1].siginfo;
	return atomic_load_explicit(&handlers[k - 1].fn, memory_order_acquire);
}

static bool wrapping(void)
{
	return atomic_load_explicit(&kpp.ready, memory_order_relaxed) == 1;
}

static bool is_function(sighandler_t h)
{
	return h != SIG_DFL && h != SIG_IGN && h != SIG_ERR;
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction(void)
{
	return (sigaction_fn)kpp_next_cached(&sigwrap_next_fns[0], next_names[0], NULL);
}

KPP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn next = real_sigaction();
	struct sigaction given;
	const struct sigaction *use = act;
	bool siginfo;
	void *h = NULL;
	int rc;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (act && is_function(act->sa_handler)) {
		h = (void *)act->sa_handler;
		/* one of ours handed back goes in as it is; a new one gets its stub */
		if (!stub_of(h))
			h = wrapping() ? stub_for(h, act->sa_flags & SA_SIGINFO) : NULL;
	}
	if (h) {		/* a stub reads the siginfo */
		given = *act;
		given.sa_sigaction = (void (*)(int, siginfo_t *, void *))h;
		given.sa_flags |= SA_SIGINFO;
		use = &given;
	}
	rc = next(sig, use, old);
	if (!rc && old && (h = handler_of((void *)old->sa_handler, &siginfo))) {
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))h;
		if (!siginfo)
			old->sa_flags &= ~SA_SIGINFO;
	}
	return rc;
}

/*
 * signal() and bsd_signal(): glibc's, which picks the flags (SA_RESTART
 * unless siginterrupt() said otherwise) and the mask; then the same
 * handler again through sigaction() above, with what the kernel was
 * given.
 */
static sighandler_t wrap_signal(int i, int sig, sighandler_t h)
{
	sighandler_t (*next)(int, sighandler_t) =
		kpp_next_cached(&sigwrap_next_fns[i], next_names[i], NULL);
	sigaction_fn real = real_sigaction();
	struct sigaction cur;
	sighandler_t old;
	bool siginfo;
	void *p;

	if (!next) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	old = next(sig, h);
	if (old == SIG_ERR)
		return old;
	if ((p = handler_of((void *)old, &siginfo)))
		old = (sighandler_t)p;
	/* the kernel's own answer: is h there as glibc put it? */
	if (is_function(h) && (wrapping() || stub_of((void *)h)) && real &&
	    !real(sig, NULL, &cur) && cur.sa_handler == h)
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
	if (!rc && ss)
		kpp_altstack_remember(t, ss);
	return rc;
}
