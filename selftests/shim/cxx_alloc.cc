// SPDX-License-Identifier: GPL-2.0
// cxx_alloc: every operator new/delete entry point, K times each, from one
// allocation site, for the allocator coverage tests (alloc_vm_test.sh,
// alloc_host_test.sh).  Built three times: on glibc (cxx_alloc), linked
// with tcmalloc (cxx_alloc_tcmalloc), with jemalloc (cxx_alloc_jemalloc,
// which also calls mallocx/rallocx/xallocx/sdallocx/dallocx), and with
// tcmalloc linked in statically (cxx_alloc_static, built with NO_ALLOCX).
// Without jemalloc the *allocx calls go to whatever dlsym finds by name:
// under the shim, its fallbacks.
//
// Variant v, round j allocates size(v, j) = 64 * (1000 + 16 v + j) bytes
// from new_site() (a multiple of 64, so aligned new's rounding in
// libstdc++ does not change it) and frees it from del_site(), rounds
// alternating between two delete forms so all twelve are called.
// stderr: "SITE new_site START END" and "VARIANT v name size0 ... size(K-1)".
// stdout: "ok cxx_alloc" (deterministic, compared with and without the shim).
#include <dlfcn.h>
#include <link.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#ifdef WITH_JEMALLOC
#include <jemalloc/jemalloc.h>
#elif !defined(NO_ALLOCX)
/*
 * No jemalloc: the *allocx functions are looked up by name, as a program
 * probing for jemalloc would; under the shim its own (which then fall back
 * to malloc's family) are found, without it plain malloc/free are used.
 */
#define MALLOCX_ALIGN(a)	((int)__builtin_ctzl(a))
#define MALLOCX_ZERO		0x40
static void *(*p_mallocx)(size_t, int);
static void *(*p_rallocx)(void *, size_t, int);
static size_t (*p_xallocx)(void *, size_t, size_t, int);
static void (*p_sdallocx)(void *, size_t, int);
static void (*p_dallocx)(void *, int);
#define WITH_ALLOCX_BY_NAME
#define mallocx(n, f)	(p_mallocx ? p_mallocx(n, f) : calloc(1, n))
#define rallocx(p, n, f) (p_rallocx ? p_rallocx(p, n, f) : realloc(p, n))
#define xallocx(p, n, e, f) (p_xallocx ? p_xallocx(p, n, e, f) : (size_t)(n))
#define sdallocx(p, n, f) (p_sdallocx ? p_sdallocx(p, n, f) : free(p))
#define dallocx(p, f)	(p_dallocx ? p_dallocx(p, f) : free(p))
#endif

#define NOINLINE __attribute__((noinline, noclone))
static const int K = 5;
static const std::align_val_t AL = std::align_val_t(64);

static size_t size_of(int v, int j)
{
	return 64 * (1000 + 16 * (size_t)v + (size_t)j);
}

enum { NEWA, NEW, NEW_NT, NEWA_NT, NEW_AL, NEWA_AL, NEW_AL_NT, NEWA_AL_NT,
	MALLOCX, MALLOCX_AL, RALLOCX, FREE_SIZED, NR_VARIANTS };

static const char *const names[NR_VARIANTS] = {
	"new[]", "new", "new(nothrow)", "new[](nothrow)", "new(align)",
	"new[](align)", "new(align,nothrow)", "new[](align,nothrow)",
	"mallocx", "mallocx(align,zero)", "rallocx", "free_sized",
};

extern "C" NOINLINE void *new_site(int v, size_t n)
{
	void *p = nullptr;

	switch (v) {
	case NEWA: p = new char[n]; break;
	case NEW: p = ::operator new(n); break;
	case NEW_NT: p = ::operator new(n, std::nothrow); break;
	case NEWA_NT: p = ::operator new[](n, std::nothrow); break;
	case NEW_AL: p = ::operator new(n, AL); break;
	case NEWA_AL: p = ::operator new[](n, AL); break;
	case NEW_AL_NT: p = ::operator new(n, AL, std::nothrow); break;
	case NEWA_AL_NT: p = ::operator new[](n, AL, std::nothrow); break;
#if defined(WITH_JEMALLOC) || defined(WITH_ALLOCX_BY_NAME)
	case MALLOCX: p = mallocx(n, 0); break;
	case MALLOCX_AL: p = mallocx(n, MALLOCX_ALIGN(64) | MALLOCX_ZERO); break;
	case RALLOCX: {
		// a small block grown: the sample is rallocx's, of n bytes
		void *q = mallocx(16, 0);

		p = rallocx(q, n, 0);
		break;
	}
#endif
	case FREE_SIZED: p = malloc(n); break;
	}
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

extern "C" NOINLINE void new_site_end(void)
{
	__asm__ volatile("");
}

typedef void free_sized_fn(void *, size_t);

static void del_site(int v, int j, void *p, size_t n)
{
	bool alt = j & 1;

	switch (v) {
	case NEWA: if (alt) ::operator delete[](p, std::nothrow); else delete[] (char *)p; break;
	case NEW: if (alt) ::operator delete(p); else ::operator delete(p, n); break;
	case NEW_NT: if (alt) ::operator delete(p); else ::operator delete(p, std::nothrow); break;
	case NEWA_NT: if (alt) ::operator delete[](p); else ::operator delete[](p, n); break;
	case NEW_AL: if (alt) ::operator delete(p, AL); else ::operator delete(p, n, AL); break;
	case NEWA_AL: if (alt) ::operator delete[](p, AL, std::nothrow); else ::operator delete[](p, AL); break;
	case NEW_AL_NT: if (alt) ::operator delete(p, AL); else ::operator delete(p, AL, std::nothrow); break;
	case NEWA_AL_NT: if (alt) ::operator delete[](p, AL, std::nothrow); else ::operator delete[](p, n, AL); break;
#if defined(WITH_JEMALLOC) || defined(WITH_ALLOCX_BY_NAME)
	case MALLOCX: {
		// xallocx first: grown in place or not, the block stays valid
		size_t r = xallocx(p, n, 0, 0);

		if (r < n)
			abort();
		dallocx(p, 0);
		break;
	}
	case MALLOCX_AL: sdallocx(p, n, MALLOCX_ALIGN(64)); break;
	case RALLOCX: if (alt) free(p); else dallocx(p, 0); break;
#endif
	case FREE_SIZED: {
		// C23; glibc 2.36 has none: the shim's own is found then
		free_sized_fn *fs = (free_sized_fn *)dlsym(RTLD_DEFAULT, "free_sized");

		if (fs)
			fs(p, n);
		else
			free(p);
		break;
	}
	}
}

static void site(const char *name, void *fn)
{
	const ElfW(Sym) *sym = nullptr;
	Dl_info info;

	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		fprintf(stderr, "SITE %s %p %p\n", name, fn, (char *)fn + 1);
	else
		fprintf(stderr, "SITE %s %p %p\n", name, fn, (char *)fn + sym->st_size);
}

int main()
{
	int last = NEWA_AL_NT;

#if defined(WITH_JEMALLOC) || defined(WITH_ALLOCX_BY_NAME)
	last = RALLOCX;
#endif
#ifdef WITH_ALLOCX_BY_NAME
	p_mallocx = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
	p_rallocx = (void *(*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "rallocx");
	p_xallocx = (size_t (*)(void *, size_t, size_t, int))dlsym(RTLD_DEFAULT, "xallocx");
	p_sdallocx = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
	p_dallocx = (void (*)(void *, int))dlsym(RTLD_DEFAULT, "dallocx");
#endif
	site("new_site", (void *)new_site);
	for (int v = 0; v <= last + 1; v++) {
		int vv = v > last ? FREE_SIZED : v;

		fprintf(stderr, "VARIANT %d %s", vv, names[vv]);
		for (int j = 0; j < K; j++)
			fprintf(stderr, " %zu", size_of(vv, j));
		fprintf(stderr, "\n");
		for (int j = 0; j < K; j++) {
			size_t n = size_of(vv, j);
			void *p = new_site(vv, n);

			if (!p)
				return printf("fail %s %zu\n", names[vv], n), 1;
			memset(p, 1, 64);
			del_site(vv, j, p, n);
		}
	}
	printf("ok cxx_alloc\n");
	return 0;
}
