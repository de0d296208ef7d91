// SPDX-License-Identifier: GPL-2.0
/*
 * The C++ operator new/delete family (Itanium mangled names, size_t being
 * unsigned long): plain, array, nothrow, aligned (std::align_val_t), sized
 * and sized+aligned delete.
 *
 * Why: an allocator such as tcmalloc or jemalloc replaces operator new and
 * delete with its own, which never call malloc/free, so a C++ program on
 * it would never reach the malloc wrappers.  glibc's libstdc++ does the
 * opposite: its operator new calls malloc through the PLT, which is our
 * wrapper, so sampling in both places would count every new twice.
 *
 * So each new entry point learns, on its first call in the process, which
 * kind of definition follows it (looked up at start, kpp_next_resolve):
 *  - FORWARDS: the next definition allocates through our malloc (libstdc++,
 *    or a program's own operator new written on malloc).  From then on the
 *    wrapper is a tail call (no frame of ours on the stack) and the malloc
 *    wrapper underneath does the sampling, exactly as without this file.
 *  - OWN: it does not (tcmalloc, jemalloc): the wrapper counts the bytes
 *    against the thread's countdown and samples, as malloc does.
 * The test is a call: the thread's countdown is set to UINT64_MAX around
 * a call of the next definition; any of our allocation wrappers running
 * underneath decrements it (n >= 1: operator new never asks for 0 bytes),
 * so an untouched countdown proves nothing of ours ran.  A probing call is
 * accounted here, once, whatever the answer.  One untouched countdown
 * decides OWN; FORWARDS takes PROBES (8) calls that all touched it, since
 * an allocator may call malloc once while it initialises itself on its
 * first operator new, and a signal handler may allocate during a call.
 *
 * Each entry point's fast path is one load of fast[] and a tail call
 * (no register saved, no frame): fast[] holds the next definition once
 * the wrapper has nothing else to do, everything else is in a noinline
 * slow function.  A new sets it when it is FORWARDS.  A delete sets it
 * when the new it pairs with is FORWARDS: that allocator's delete reaches
 * our free, which looks the pointer up in the sampled set (libstdc++'s
 * sized delete calls its plain delete, which calls free).  Otherwise (OWN,
 * still probing) the delete looks the pointer up itself before forwarding:
 * an OWN allocator's delete does not reach our free.
 *
 * When no next definition exists at start (a C program, which may dlopen
 * C++ code later: its libstdc++ is not looked in, as nothing is at a
 * wrapper's call, real.c), the wrappers call malloc and free; a new that
 * malloc cannot serve calls a libstdc++'s loaded since (late_new: its
 * new_handler, std::bad_alloc), and only with none at all do the throwing
 * forms abort, as there is no runtime to throw with.  A libstdc++.so.6
 * loaded RTLD_LOCAL before our constructor ran is looked in.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

/*
 * The probe's cleanup (-fexceptions, below) refers to libgcc_s's
 * _Unwind_Resume and __gcc_personality_v0.  Weak, so that libgcc_s is not
 * loaded into every process at start for them (issue 11): a C++ program,
 * the only kind whose operator new can throw, has libgcc_s loaded before
 * us (libstdc++ needs it), and they bind to it.  In a C program that
 * dlopens C++ code later they stay unbound: the unwinder then finds no
 * personality for the wrapper's frame and unwinds through it without the
 * cleanup, so a bad_alloc thrown by that process's very first probing
 * call leaves the thread's countdown at its probe value (no heap sample
 * from that thread until it is used up); nothing else changes.
 */
__asm__(".weak _Unwind_Resume\n\t.weak __gcc_personality_v0");

enum {
	NEW, NEW_NT, NEW_AL, NEW_AL_NT,
	NEWA, NEWA_NT, NEWA_AL, NEWA_AL_NT,
	DEL, DEL_NT, DEL_AL, DEL_AL_NT, DEL_SZ, DEL_SZ_AL,
	DELA, DELA_NT, DELA_AL, DELA_AL_NT, DELA_SZ, DELA_SZ_AL,
	NR_FNS
};

static const char *const names[NR_FNS] = {
	[NEW] = "_Znwm",
	[NEW_NT] = "_ZnwmRKSt9nothrow_t",
	[NEW_AL] = "_ZnwmSt11align_val_t",
	[NEW_AL_NT] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
	[NEWA] = "_Znam",
	[NEWA_NT] = "_ZnamRKSt9nothrow_t",
	[NEWA_AL] = "_ZnamSt11align_val_t",
	[NEWA_AL_NT] = "_ZnamSt11align_val_tRKSt9nothrow_t",
	[DEL] = "_ZdlPv",
	[DEL_NT] = "_ZdlPvRKSt9nothrow_t",
	[DEL_AL] = "_ZdlPvSt11align_val_t",
	[DEL_AL_NT] = "_ZdlPvSt11align_val_tRKSt9nothrow_t",
	[DEL_SZ] = "_ZdlPvm",
	[DEL_SZ_AL] = "_ZdlPvmSt11align_val_t",
	[DELA] = "_ZdaPv",
	[DELA_NT] = "_ZdaPvRKSt9nothrow_t",
	[DELA_AL] = "_ZdaPvSt11align_val_t",
	[DELA_AL_NT] = "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	[DELA_SZ] = "_ZdaPvm",
	[DELA_SZ_AL] = "_ZdaPvmSt11align_val_t",
};

/* mode[]: 0 .. PROBES - 1 while probing (calls seen reaching our malloc) */
#define PROBES	8
enum { FORWARDS = 100, OWN };

static void *_Atomic cxx_next_fns[NR_FNS] KPP_START_DATA;

const struct kpp_next_table kpp_cxx_next = {
	cxx_next_fns, names, NR_FNS, "libstdc++.so.6", "_Znwm"
};

static _Atomic unsigned char mode[NR_FNS];
static void *_Atomic fast[NR_FNS];	/* the fast path's tail call, or NULL */

/* The new whose mode decides a delete's fast path. */
static const unsigned char paired_new[NR_FNS] = {
	[DEL] = NEW, [DEL_NT] = NEW, [DEL_SZ] = NEW,
	[DEL_AL] = NEW_AL, [DEL_AL_NT] = NEW_AL, [DEL_SZ_AL] = NEW_AL,
	[DELA] = NEWA, [DELA_NT] = NEWA, [DELA_SZ] = NEWA,
	[DELA_AL] = NEWA_AL, [DELA_AL_NT] = NEWA_AL, [DELA_SZ_AL] = NEWA_AL,
};

/*
 * next_fn - the next definition of names[i], or NULL; also looked up in a
 * libstdc++ loaded RTLD_LOCAL by a dlopen (not in the global scope).
 */
static inline void *next_fn(int i)
{
	return kpp_next_cached(&cxx_next_fns[i], names[i], "libstdc++.so.6");
}

/* The countdown saved around a probing call; restored even if it throws
 * (this file is built with -fexceptions so the cleanup runs then). */
struct probe {
	struct kpp_thread *t;
	uint64_t saved;
};

static void probe_unwind(struct probe *pr)
{
	if (pr->t) {
		pr->t->countdown = pr->saved;
		pr->t = NULL;
	}
}

/*
 * probed - one probing call of entry point @idx did (@ours) or did not
 * reach one of our allocation wrappers.  Once not: OWN for good.
 * FORWARDS only after PROBES calls that all did, so that an allocator
 * whose first operator new happens to call malloc while it initialises
 * itself (or a signal handler that allocates during the call) is not
 * taken for one that allocates through malloc.
 */
static void probed(int idx, bool ours)
{
	unsigned char m = atomic_load_explicit(&mode[idx], memory_order_relaxed);

	if (!ours) {
		atomic_store_explicit(&mode[idx], OWN, memory_order_relaxed);
		return;
	}
	while (m < PROBES &&
	       !atomic_compare_exchange_weak_explicit(&mode[idx], &m,
						      m + 1 == PROBES ? FORWARDS : m + 1,
						      memory_order_release,
						      memory_order_relaxed))
		;
}

/* Account @n bytes for an allocation that returned @p: sample or not. */
static inline void account(struct kpp_thread *t, void *p, size_t n)
{
	if (likely(n < t->countdown)) {
		t->countdown -= n;
		return;
	}
	if (kpp_heap_tick(t, n))
		kpp_heap_sampled(t, p, n);
}

/*
 * The fallback when there is no operator new to forward to at all: the
 * global malloc (normally our wrapper, which samples it); NULL when it
 * fails (the caller then tries late_new()).
 */
static void no_runtime(void) __attribute__((noreturn));

static void *fallback_new(size_t n, size_t align)
{
	void *p = NULL;

	if (!n)
		n = 1;
	if (align > 16) {
		if (posix_memalign(&p, align, n))
			p = NULL;
	} else {
		p = malloc(n);
	}
	return p;
}

/*
 * NEW_FN - one operator new: the fast path (FORWARDS: a tail call of the
 * next definition), and sym_slow: OWN is malloc's accounting, the first
 * calls probe, no next definition falls back.
 */
struct late_search {
	const char *name;
	void *addr;
};

static int late_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct late_search *ls = data;
	const char *b = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	struct kpp_dynsym d;
	void *p;

	(void)size;
	b = b ? b + 1 : info->dlpi_name;
	if (!b || strncmp(b, "libstdc++.so", 12) || kpp_dynsym_open(info, &d))
		return 0;
	if (kpp_dynsym_find(&d, ls->name, kpp_dynsym_hash(ls->name), &p) > 0) {
		ls->addr = p;
		return 1;
	}
	return 0;
}

/*
 * late_new - an operator new that failed with no next definition at start
 * (a C program that dlopen()ed C++ code): a libstdc++ loaded since, whose
 * operator new retries our malloc, calls the new_handler and throws
 * std::bad_alloc, as without the shim.  Looked for in the objects' tables
 * (dl_iterate_phdr() takes the loader's write lock only, which no
 * constructor runs under), never with dlsym; only on this failure path.
 * The caller is C++ code that needs that libstdc++, so it stays loaded.
 */
__attribute__((noinline))
static void *late_new(int idx)
{
	struct late_search ls = { names[idx], NULL };

	dl_iterate_phdr(late_one, &ls);
	return ls.addr;
}

static void no_runtime(void)
{
	static const char msg[] = "kpprof: operator new: out of memory and no C++ runtime to throw with\n";

	(void)!kpp_write(2, msg, sizeof(msg) - 1);
	abort();
}

#define NEW_FN(sym, idx, align_, nothrow_, PARAMS, ARGS)			\
static void *sym##_slow PARAMS;							\
KPP_EXPORT void *sym PARAMS;							\
void *sym PARAMS								\
{										\
	void *(*fn) PARAMS = (void *(*) PARAMS)					\
		atomic_load_explicit(&fast[idx], memory_order_relaxed);		\
										\
	if (likely(fn))								\
		return fn ARGS;							\
	return sym##_slow ARGS;							\
}										\
__attribute__((noinline))							\
static void *sym##_slow PARAMS							\
{										\
	struct kpp_thread *t = &kpp_thread;					\
	void *(*fn) PARAMS;							\
	void *f = next_fn(idx), *p;						\
										\
	if (unlikely(!f)) {							\
		p = fallback_new(n, align_);					\
		if (p || !(f = late_new(idx))) {				\
			if (!p && !nothrow_)					\
				no_runtime();					\
			return p;						\
		}								\
		return ((void *(*) PARAMS)f) ARGS;				\
	}									\
	fn = (void *(*) PARAMS)f;						\
	switch (atomic_load_explicit(&mode[idx], memory_order_acquire)) {	\
	case FORWARDS:								\
		atomic_store_explicit(&fast[idx], f, memory_order_relaxed);	\
		return fn ARGS;							\
	case OWN:								\
		p = fn ARGS;							\
		account(t, p, n);						\
		return p;							\
	}									\
	{									\
		struct probe pr __attribute__((cleanup(probe_unwind))) =	\
			{ t, t->countdown };					\
		bool ours;							\
										\
		t->countdown = UINT64_MAX;					\
		p = fn ARGS;							\
		ours = t->countdown != UINT64_MAX;				\
		probe_unwind(&pr);						\
		probed(idx, ours);						\
	}									\
	account(t, p, n);							\
	return p;								\
}

#define NOTHROW	const void *nt
#define AL	size_t al

NEW_FN(_Znwm, NEW, 0, false, (size_t n), (n))
NEW_FN(_ZnwmRKSt9nothrow_t, NEW_NT, 0, true, (size_t n, NOTHROW), (n, nt))
NEW_FN(_ZnwmSt11align_val_t, NEW_AL, al, false, (size_t n, AL), (n, al))
NEW_FN(_ZnwmSt11align_val_tRKSt9nothrow_t, NEW_AL_NT, al, true,
       (size_t n, AL, NOTHROW), (n, al, nt))
NEW_FN(_Znam, NEWA, 0, false, (size_t n), (n))
NEW_FN(_ZnamRKSt9nothrow_t, NEWA_NT, 0, true, (size_t n, NOTHROW), (n, nt))
NEW_FN(_ZnamSt11align_val_t, NEWA_AL, al, false, (size_t n, AL), (n, al))
NEW_FN(_ZnamSt11align_val_tRKSt9nothrow_t, NEWA_AL_NT, al, true,
       (size_t n, AL, NOTHROW), (n, al, nt))

/*
 * DEL_FN - one operator delete.  Fast path: the paired new is FORWARDS, so
 * the next definition reaches our free, which does the rest (see the file
 * comment).  Slow: forget a sampled block (its FREE record is written
 * before the block goes back to the allocator, so no other thread can be
 * handed and sample the same address first), then forward.
 */
#define DEL_FN(sym, idx, PARAMS, ARGS)						\
static void sym##_slow PARAMS;							\
KPP_EXPORT void sym PARAMS;							\
void sym PARAMS									\
{										\
	void (*fn) PARAMS = (void (*) PARAMS)					\
		atomic_load_explicit(&fast[idx], memory_order_relaxed);		\
										\
	if (likely(fn))								\
		return fn ARGS;							\
	sym##_slow ARGS;							\
}										\
__attribute__((noinline))							\
static void sym##_slow PARAMS							\
{										\
	void (*fn) PARAMS;							\
	void *f = next_fn(idx);							\
										\
	if (f && atomic_load_explicit(&mode[paired_new[idx]],			\
				      memory_order_acquire) == FORWARDS) {	\
		atomic_store_explicit(&fast[idx], f, memory_order_relaxed);	\
	} else if (unlikely(kpp_set_maybe(p)) && kpp_heap_forget(p)) {		\
		return;								\
	}									\
	if (unlikely(!f)) {							\
		free(p);							\
		return;								\
	}									\
	fn = (void (*) PARAMS)f;						\
	fn ARGS;								\
}

DEL_FN(_ZdlPv, DEL, (void *p), (p))
DEL_FN(_ZdlPvRKSt9nothrow_t, DEL_NT, (void *p, NOTHROW), (p, nt))
DEL_FN(_ZdlPvSt11align_val_t, DEL_AL, (void *p, AL), (p, al))
DEL_FN(_ZdlPvSt11align_val_tRKSt9nothrow_t, DEL_AL_NT, (void *p, AL, NOTHROW), (p, al, nt))
DEL_FN(_ZdlPvm, DEL_SZ, (void *p, size_t n), (p, n))
DEL_FN(_ZdlPvmSt11align_val_t, DEL_SZ_AL, (void *p, size_t n, AL), (p, n, al))
DEL_FN(_ZdaPv, DELA, (void *p), (p))
DEL_FN(_ZdaPvRKSt9nothrow_t, DELA_NT, (void *p, NOTHROW), (p, nt))
DEL_FN(_ZdaPvSt11align_val_t, DELA_AL, (void *p, AL), (p, al))
DEL_FN(_ZdaPvSt11align_val_tRKSt9nothrow_t, DELA_AL_NT, (void *p, AL, NOTHROW), (p, al, nt))
DEL_FN(_ZdaPvm, DELA_SZ, (void *p, size_t n), (p, n))
DEL_FN(_ZdaPvmSt11align_val_t, DELA_SZ_AL, (void *p, size_t n, AL), (p, n, al))
