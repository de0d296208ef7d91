// SPDX-License-Identifier: GPL-2.0
// new and delete of 200-byte objects, for semantics_host_test.sh:
//   sem_own_new      links libsem_ownnew.so, whose operator new is not malloc's
//   sem_own_malloc   (-DOWN_MALLOC) exports its own malloc family, as a program
//                    with an allocator linked in does; new is libstdc++'s
//   sem_own_malloc_fatal (-DOWN_MALLOC -DFATAL_OOM) the same, but an allocation
//                    it cannot serve kills the process, as Chromium's
//                    PartitionAlloc does (only its UncheckedMalloc may fail)
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#ifdef OWN_MALLOC
alignas(4096) static unsigned char heap[64 << 20];
static std::size_t top;

extern "C" {
void *memalign(std::size_t al, std::size_t n)
{
	if (al < 16)
		al = 16;
	std::size_t s = (top + 16 + al - 1) & ~(al - 1);
	if (s + n > sizeof(heap) || n > sizeof(heap)) {
#ifdef FATAL_OOM
		__builtin_trap();
#endif
		errno = ENOMEM;
		return nullptr;
	}
	std::memcpy(heap + s - 8, &n, sizeof(n));
	top = s + n;
	return heap + s;
}
void *malloc(std::size_t n) { return memalign(16, n); }
void free(void *) {}
void *calloc(std::size_t a, std::size_t b)
{
	void *p = malloc(a * b);

	if (p)
		std::memset(p, 0, a * b);
	return p;
}
std::size_t malloc_usable_size(void *p)
{
	std::size_t n = 0;

	if (p)
		std::memcpy(&n, static_cast<char *>(p) - 8, sizeof(n));
	return n;
}
void *realloc(void *p, std::size_t n)
{
	void *q = malloc(n);

	if (p && q) {
		std::size_t o = malloc_usable_size(p);
		std::memcpy(q, p, o < n ? o : n);
	}
	return q;
}
int posix_memalign(void **pp, std::size_t al, std::size_t n)
{
	*pp = memalign(al, n);
	return *pp ? 0 : ENOMEM;
}
void *aligned_alloc(std::size_t al, std::size_t n) { return memalign(al, n); }
void *valloc(std::size_t n) { return memalign(4096, n); }
void *pvalloc(std::size_t n) { return memalign(4096, (n + 4095) & ~4095UL); }
}
#endif

struct X {
	char b[200];
};

int main()
{
	X *volatile keep[100];

	for (int i = 0; i < 100; i++)
		keep[i] = new X;
	for (int i = 0; i < 100; i++)
		delete keep[i];
	for (int i = 0; i < 10; i++)
		keep[i] = new X;
	for (int i = 0; i < 10; i++)
		delete keep[i];
	std::printf("ok\n");
	return 0;
}
