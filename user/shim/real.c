// SPDX-License-Identifier: GPL-2.0
/*
 * Finding the real functions behind the wrappers, and the static arena that
 * feeds allocations made while we look for them.
 *
 * dlsym() itself may call calloc()/malloc() (glibc allocates dlerror state),
 * which lands back in our wrappers before kpp_real.calloc is known.  While
 * this thread is resolving, those allocations come from a small static
 * arena.  Arena blocks are never given back: kpp_set_mark() makes free()
 * of one take the slow path, which recognises and ignores it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "shim.h"

static void kpp_resolve_all(const struct kpp_next_table *const *optional, int nr);
static void *lookup_next(const char *name, const char *also_in);

/*
 * The stubs: kpp_real starts out pointing here, so the wrappers can call
 * through the pointers unconditionally.  Each resolves everything, then
 * forwards to the real function; while resolving they serve the arena.
 */
static void *stub_malloc(size_t n)
{
	kpp_resolve();
	if (kpp_resolving())
		return kpp_arena_alloc(n, 16);
	return kpp_real.malloc(n);
}

static void stub_free(void *p)
{
	if (!p || kpp_in_arena(p))
		return;
	kpp_resolve();
	kpp_real.free(p);
}

static void *stub_calloc(size_t n, size_t m)
{
	size_t total;

	kpp_resolve();
	if (kpp_resolving()) {
		if (__builtin_mul_overflow(n, m, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return kpp_arena_alloc(total, 16);	/* arena is zeroed */
	}
	return kpp_real.calloc(n, m);
}

static void *stub_realloc(void *p, size_t n)
{
	kpp_resolve();
	if (kpp_resolving()) {
		void *q = kpp_arena_alloc(n, 16);
		size_t old = p ? kpp_arena_size_of(p) : 0;

		if (q && old)
			memcpy(q, p, old < n ? old : n);
		return q;
	}
	return kpp_real.realloc(p, n);
}

static void *stub_memalign(size_t a, size_t n)
{
	kpp_resolve();
	if (kpp_resolving())
		return kpp_arena_alloc(n, a);
	return kpp_real.memalign(a, n);
}

static int stub_posix_memalign(void **pp, size_t a, size_t n)
{
	kpp_resolve();
	if (kpp_resolving()) {
		*pp = kpp_arena_alloc(n, a);
		return *pp ? 0 : ENOMEM;
	}
	return kpp_real.posix_memalign(pp, a, n);
}

static void *stub_aligned_alloc(size_t a, size_t n)
{
	kpp_resolve();
	if (kpp_resolving())
		return kpp_arena_alloc(n, a);
	return kpp_real.aligned_alloc(a, n);
}

static void *stub_valloc(size_t n)
{
	kpp_resolve();
	if (kpp_resolving())
		return kpp_arena_alloc(n, 4096);
	return kpp_real.valloc(n);
}

static void *stub_pvalloc(size_t n)
{
	kpp_resolve();
	if (kpp_resolving())
		return kpp_arena_alloc((n + 4095) & ~(size_t)4095, 4096);
	return kpp_real.pvalloc(n);
}

/*
 * Lock functions are never called by dlsym on this path in a way that
 * needs a lock to work (single thread at start-up), but be safe: while
 * resolving, pretend success.
 */
static int stub_mutex_lock(void *m)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.mutex_lock(m);
}

static int stub_mutex_trylock(void *m)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.mutex_trylock(m);
}

static int stub_mutex_timedlock(void *m, const void *ts)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.mutex_timedlock(m, ts);
}

static int stub_mutex_unlock(void *m)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.mutex_unlock(m);
}

static int stub_rwlock_rdlock(void *l)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.rwlock_rdlock(l);
}

static int stub_rwlock_wrlock(void *l)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.rwlock_wrlock(l);
}

static int stub_rwlock_tryrdlock(void *l)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.rwlock_tryrdlock(l);
}

static int stub_rwlock_trywrlock(void *l)
{
	kpp_resolve();
	return kpp_resolving() ? 0 : kpp_real.rwlock_trywrlock(l);
}

struct kpp_real kpp_real = {
	.malloc = stub_malloc,
	.free = stub_free,
	.calloc = stub_calloc,
	.realloc = stub_realloc,
	.memalign = stub_memalign,
	.posix_memalign = stub_posix_memalign,
	.aligned_alloc = stub_aligned_alloc,
	.valloc = stub_valloc,
	.pvalloc = stub_pvalloc,
	.mutex_lock = stub_mutex_lock,
	.mutex_trylock = stub_mutex_trylock,
	.mutex_timedlock = stub_mutex_timedlock,
	.mutex_unlock = stub_mutex_unlock,
	.rwlock_rdlock = stub_rwlock_rdlock,
	.rwlock_wrlock = stub_rwlock_wrlock,
	.rwlock_tryrdlock = stub_rwlock_tryrdlock,
	.rwlock_trywrlock = stub_rwlock_trywrlock,
};

/* 0: not yet, 1: in progress (some thread), 2: done. */
static _Atomic int resolve_state KPP_START_DATA;
static KPP_TLS int resolving_here;

bool kpp_resolving(void)
{
	return resolving_here;
}

static void resolve(const struct kpp_next_table *const *optional, int nr)
{
	if (atomic_load_explicit(&resolve_state, memory_order_acquire) == 2 ||
	    resolving_here)
		return;
	resolving_here = 1;
	atomic_store(&resolve_state, 1);
	kpp_resolve_all(optional, nr);
	atomic_store_explicit(&resolve_state, 2, memory_order_release);
	resolving_here = 0;
}

/* From a stub: a wrapper called before our constructor ran. */
void kpp_resolve(void)
{
	resolve(NULL, -1);
}

void kpp_resolve_start(const struct kpp_next_table *const *optional, int nr)
{
	if (atomic_load(&resolve_state) == 0) {
		resolve(optional, nr);
		return;
	}
	kpp_resolve();
	kpp_next_resolve(optional, nr);
}

/*
 * What a wrapper does when its next definition is missing (glibc has all
 * of them; an allocator preloaded ahead of us, or a future libc without
 * the deprecated pvalloc, may not): it fails the call as the function
 * itself may fail, never kills the process.
 */
static void *missing_alloc1(size_t n)
{
	(void)n;
	errno = ENOMEM;
	return NULL;
}

static void *missing_alloc2(size_t a, size_t n)
{
	(void)a;
	(void)n;
	errno = ENOMEM;
	return NULL;
}

static void *missing_realloc(void *p, size_t n)
{
	(void)p;
	(void)n;
	errno = ENOMEM;
	return NULL;
}

static void missing_free(void *p)
{
	(void)p;	/* leaked: better than freeing with the wrong allocator */
}

static int missing_posix_memalign(void **pp, size_t a, size_t n)
{
	(void)pp;
	(void)a;
	(void)n;
	return ENOMEM;
}

static int missing_lock1(void *l)
{
	(void)l;
	return ENOSYS;
}

static int missing_lock2(void *l, const void *ts)
{
	(void)l;
	(void)ts;
	return ENOSYS;
}

/*
 * The required next definitions, in struct kpp_real's order, found by the
 * same walk of the objects' own tables as the optional ones
 * (kpp_next_resolve below: a dlsym() costs about 1700 instructions, and
 * these 17 were an eighth of a pass-through process's start-up).
 */
static const char *const required_names[] = {
	"malloc", "free", "calloc", "realloc", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc",
	"pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
	"pthread_mutex_unlock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
	"pthread_rwlock_tryrdlock", "pthread_rwlock_trywrlock",
};
#define NR_REQUIRED	(sizeof(required_names) / sizeof(required_names[0]))
_Static_assert(NR_REQUIRED == sizeof(struct kpp_real) / sizeof(void *), "struct kpp_real");
static void *_Atomic required_slots[NR_REQUIRED] KPP_START_DATA;
static const struct kpp_next_table required = {
	required_slots, required_names, NR_REQUIRED, NULL, NULL
};
/* what each fails with when it has no next definition (glibc has all) */
static void *const required_missing[NR_REQUIRED] = {
	(void *)missing_alloc1, (void *)missing_free, (void *)missing_alloc2,
	(void *)missing_realloc, (void *)missing_alloc2, (void *)missing_posix_memalign,
	(void *)missing_alloc2, (void *)missing_alloc1, (void *)missing_alloc1,
	(void *)missing_lock1, (void *)missing_lock1, (void *)missing_lock2,
	(void *)missing_lock1, (void *)missing_lock1, (void *)missing_lock1,
	(void *)missing_lock1, (void *)missing_lock1,
};

/*
 * @nr < 0: from a stub, before the constructor ran: dlsym(RTLD_NEXT), as
 * early as that may be (another library's constructor, or the loader's
 * own start-up with an auditor, when the environment and the loader's
 * state are not yet what the walk reads).  Else from the constructor:
 * one walk of the objects' tables for the required names and the
 * @optional tables together.
 */
static void kpp_resolve_all(const struct kpp_next_table *const *optional, int nr)
{
	const struct kpp_next_table *tables[KPP_NEXT_TABLES];
	void *r[NR_REQUIRED];

	if (nr < 0) {
		for (size_t i = 0; i < NR_REQUIRED; i++) {
			void *p = lookup_next(required_names[i], NULL);

			atomic_store_explicit(&required_slots[i], p ? p : (void *)KPP_NEXT_ABSENT,
					      memory_order_release);
		}
	} else {	/* nr < KPP_NEXT_TABLES: init.c's assertion */
		tables[0] = &required;
		for (int j = 0; j < nr; j++)
			tables[j + 1] = optional[j];
		kpp_next_resolve(tables, nr + 1);
	}
	for (size_t i = 0; i < NR_REQUIRED; i++) {
		void *p = atomic_load_explicit(&required_slots[i], memory_order_acquire);

		if ((intptr_t)p <= 0) {
			static const char msg[] = "kpprof: a wrapped function has no next definition: it fails\n";

			(void)!kpp_write(2, msg, sizeof(msg) - 1);
			p = required_missing[i];
		}
		r[i] = p;
	}
	/*
	 * Publish function by function: another thread calling through a
	 * stub meanwhile either still sees the stub (which forwards once we
	 * are done) or the real function.
	 */
	for (size_t i = 0; i < NR_REQUIRED; i++)
		__atomic_store_n((void **)&kpp_real + i, r[i], __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ arena */

/*
 * 64 KiB is far more than glibc's dlsym needs (it asks for a few dozen
 * bytes); a block records its size in the 16 bytes before it so realloc
 * can copy it out.
 */
#define ARENA_SIZE	(64 * 1024)
static char arena[ARENA_SIZE] KPP_PAGE_BSS;
static _Atomic size_t arena_used;

void *kpp_arena_alloc(size_t size, size_t align)
{
	size_t start, end, old;

	if (align < 16)
		align = 16;
	if (align > 4096 || (align & (align - 1)) || size > ARENA_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	old = atomic_load(&arena_used);
	do {
		start = (old + 16 + align - 1) & ~(align - 1);
		end = start + ((size + 15) & ~(size_t)15);
		if (end > ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!atomic_compare_exchange_weak(&arena_used, &old, end));
	memcpy(arena + start - sizeof(size_t), &size, sizeof(size));
	kpp_set_mark(arena + start);
	return arena + start;
}

bool kpp_in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + ARENA_SIZE;
}

size_t kpp_arena_size_of(const void *p)
{
	size_t size;

	memcpy(&size, (const char *)p - sizeof(size), sizeof(size));
	return size;
}

/* The next definition of @name, looked up in the global scope, else in @also_in. */
static void *lookup_next(const char *name, const char *also_in)
{
	void *p = dlsym(RTLD_NEXT, name);
	bool failed = !p;

	if (!p && also_in) {
		/* RTLD_NOLOAD: only if loaded already.  The handle is kept,
		 * so the library cannot go away under us. */
		void *h = dlopen(also_in, RTLD_LAZY | RTLD_NOLOAD);

		if (h)
			p = dlsym(h, name);
	}
	/* Our failed look-ups must not show in the program's dlerror(). */
	if (failed)
		dlerror();
	return p;
}

/*
 * Only before the constructor's kpp_next_resolve() of the slot's table:
 * another library's constructor calling a wrapper, in the thread that
 * runs the constructors and so holds the loader's lock already.
 */
__attribute__((noinline))
void *kpp_next_lookup(void *_Atomic *slot, const char *name, const char *also_in)
{
	void *p = lookup_next(name, also_in);

	atomic_store_explicit(slot, p ? p : (void *)KPP_NEXT_ABSENT, memory_order_release);
	return p;
}

/* kpp_next_resolve()'s walk: each object after ours, in the loader's order. */
struct next_walk {
	const struct kpp_next_table *const *tables;
	int nr;
	bool seen_first;	/* the program's object */
	bool after_us;		/* our own object passed */
	uint32_t key_hash[KPP_NEXT_TABLES];
	uint32_t hash[KPP_NEXT_TABLES][64];
	uint64_t found[KPP_NEXT_TABLES], ask[KPP_NEXT_TABLES];	/* bit i: names[i] */
	bool hashed[KPP_NEXT_TABLES];	/* hash[j] computed: the key was seen */
	bool weak_binds;		/* see struct kpp_dynsym */
	/* the file names (gnu_hash) the initial objects walked so far need */
	uint32_t needed[128];
	int nr_needed;
	bool needed_full;
};

static uint32_t base_hash(const char *path)
{
	const char *b = strrchr(path, '/');

	return kpp_dynsym_hash(b ? b + 1 : path);
}

/* Notes the DT_NEEDED names of an object of the initial set. */
static void note_needed(struct next_walk *w, const struct kpp_dynsym *d)
{
	if (!d->dyn || !d->strtab)
		return;
	for (const ElfW(Dyn) *e = d->dyn; e->d_tag != DT_NULL; e++) {
		if (e->d_tag != DT_NEEDED)
			continue;
		if (w->nr_needed == (int)(sizeof(w->needed) / sizeof(w->needed[0]))) {
			w->needed_full = true;
			return;
		}
		w->needed[w->nr_needed++] = base_hash(d->strtab + e->d_un.d_val);
	}
}

/*
 * Is this object (after ours) one of the initial set, the global scope
 * dlsym(RTLD_NEXT) searches?  dl_iterate_phdr() also shows objects a
 * constructor run before ours dlopen()ed RTLD_LOCAL, and other
 * namespaces' (dlmopen, auditors): there a definition may be one dlsym
 * does not see, in an object a dlclose() may unmap.  The initial objects
 * come in breadth-first order, each named by the DT_NEEDED of one before
 * it (the program, the preloads ahead of us, or an initial one after us).
 */
static bool is_initial(const struct next_walk *w, const struct dl_phdr_info *info,
		       const struct kpp_dynsym *d)
{
	uint32_t h[2];
	int nh = 0;

	if (info->dlpi_name && *info->dlpi_name)
		h[nh++] = base_hash(info->dlpi_name);
	if (d->soname)
		h[nh++] = kpp_dynsym_hash(d->soname);
	for (int i = 0; i < w->nr_needed; i++)
		for (int k = 0; k < nh; k++)
			if (w->needed[i] == h[k])
				return true;
	return false;
}

extern const ElfW(Ehdr) __ehdr_start KPP_HIDDEN;	/* our own ELF header, from the linker */

static bool is_us(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			return (uintptr_t)&__ehdr_start ==
			       info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	return false;
}

static uint64_t all_of(const struct kpp_next_table *t)
{
	return t->n == 64 ? ~0ULL : (1ULL << t->n) - 1;
}

/* Asks dlsym for every name not found yet: only the loader can tell. */
static void ask_all(struct next_walk *w)
{
	for (int j = 0; j < w->nr; j++)
		w->ask[j] |= all_of(w->tables[j]) & ~w->found[j];
}

static int next_walk_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct next_walk *w = data;
	struct kpp_dynsym d;
	bool open_failed, initial;
	int done = 0;

	(void)size;
	if (!w->after_us) {
		/* the program (the first object: the loader reads DT_AUDIT
		 * there only) may name an auditor, whose la_symbind may
		 * replace what dlsym finds: then only dlsym can tell */
		if (!kpp_dynsym_open(info, &d)) {
			if (!w->seen_first && d.audit)
				ask_all(w);
			note_needed(w, &d);
		} else {
			w->needed_full = true;	/* cannot tell what it needs */
		}
		w->seen_first = true;
		w->after_us = is_us(info);
		return 0;
	}
	open_failed = kpp_dynsym_open(info, &d) != 0;
	if (open_failed || d.audit || w->needed_full) {
		ask_all(w);
		return 0;
	}
	d.weak_binds = w->weak_binds;
	initial = is_initial(w, info, &d);
	if (initial)
		note_needed(w, &d);
	for (int j = 0; j < w->nr; j++) {
		const struct kpp_next_table *t = w->tables[j];
		void *p;

		if (((w->found[j] | w->ask[j]) & all_of(t)) == all_of(t)) {
			done++;
			continue;
		}
		/* no key here: none of the table's names either */
		if (t->key && !kpp_dynsym_find(&d, t->key, w->key_hash[j], &p))
			continue;
		if (!w->hashed[j]) {
			for (int i = 0; i < t->n; i++)
				w->hash[j][i] = kpp_dynsym_hash(t->names[i]);
			w->hashed[j] = true;
		}
		for (int i = 0; i < t->n; i++) {
			int r;

			if ((w->found[j] | w->ask[j]) & (1ULL << i))
				continue;
			r = kpp_dynsym_find(&d, t->names[i], w->hash[j][i], &p);
			if (r > 0 && !initial)
				r = -1;	/* maybe not in the global scope: dlsym tells */
			if (r > 0) {
				w->found[j] |= 1ULL << i;
				atomic_store_explicit(&t->slots[i], p, memory_order_release);
			} else if (r < 0) {
				w->ask[j] |= 1ULL << i;
			}
		}
	}
	return done == w->nr;
}

/*
 * kpp_next_resolve - fill the slots of @nr tables of optional next
 * definitions (the timed and clock locks and condition variables,
 * jemalloc's and C23's frees, operator new and delete) at start, from the
 * constructor, whatever the process does next (pass-through and setuid
 * programs included: their wrappers forward too).
 *
 * Never at a wrapper's first call: dlsym() and dlopen() take the loader's
 * lock, and a thread that called a wrapper for the first time while it
 * held a lock that another thread's dlopen() waited for in a constructor
 * hung both for good (loader_lock_host_test.sh: the first
 * pthread_cond_timedwait, operator new or free_sized beside a plugin's
 * constructor; without the shim they do not wait for that lock).
 *
 * Read from the objects' own symbol tables (dynsym.c), as dlsym(RTLD_NEXT)
 * would find them: the objects after ours in the loader's order, the
 * default version of each name, in one walk for all tables.  dlsym()
 * itself only where the tables cannot tell (an IFUNC, a weak definition,
 * an object without a hash table or with a load bias that wraps, an
 * auditor named by LD_AUDIT or by an object: realfn_host_test.sh's
 * cases), then in the table's also_in too if the global scope has none.
 * A dlsym() costs about 3000 instructions, a miss more (an error message
 * it mallocs): 8 of them, for the lock functions, were a fifth of the
 * shim's start-up.  A table's key is the one name that tells whether an
 * object can define any of it (operator new for C++'s).  An object
 * loaded later (a dlopen'ed jemalloc, or libstdc++ under a C program) is
 * not looked in: its wrappers keep their fallbacks (README, Known limits).
 */
void kpp_next_resolve(const struct kpp_next_table *const *tables, int nr)
{
	const char *audit = kpp_getenv("LD_AUDIT");
	struct next_walk w;	/* its hashes are written before they are read */

	w.tables = tables;
	w.nr = nr;
	/*
	 * The loader passes over a weak definition for a later global one
	 * under LD_DYNAMIC_WEAK, which it obeys even in secure mode, where
	 * the variable is then removed from the environment: a setuid
	 * program asks dlsym about weak ones (libc's calloc, sigaction...).
	 */
	w.weak_binds = !kpp_getenv("LD_DYNAMIC_WEAK") && !getauxval(AT_SECURE);
	w.after_us = w.seen_first = w.needed_full = false;
	w.nr_needed = 0;
	for (int j = 0; j < nr; j++) {
		w.found[j] = w.ask[j] = 0;
		w.hashed[j] = false;
		if (tables[j]->key)
			w.key_hash[j] = kpp_dynsym_hash(tables[j]->key);
	}
	/*
	 * Secure mode removes LD_AUDIT from the environment, but the loader
	 * still loads an auditor from the system directories with the setuid
	 * bit, whose la_symbind may change what dlsym answers: a setuid
	 * program asks dlsym for everything.
	 */
	if ((audit && *audit) || getauxval(AT_SECURE))	/* see next_walk_one() */
		ask_all(&w);
	else
		dl_iterate_phdr(next_walk_one, &w);
	for (int j = 0; j < nr; j++) {
		const struct kpp_next_table *t = tables[j];

		for (int i = 0; i < t->n; i++) {
			void *p = NULL;

			if (w.found[j] & (1ULL << i))
				continue;
			if (w.ask[j] & (1ULL << i))
				p = lookup_next(t->names[i], t->also_in);
			/* a slot kpp_next_lookup() filled before us keeps its definition */
			if (p || !atomic_load_explicit(&t->slots[i], memory_order_acquire))
				atomic_store_explicit(&t->slots[i], p ? p : (void *)KPP_NEXT_ABSENT,
						      memory_order_release);
		}
	}
}
