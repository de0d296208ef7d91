// SPDX-License-Identifier: GPL-2.0
// An operator new/delete library whose blocks are not malloc's (as
// tcmalloc's and jemalloc's are not glibc's): a bump allocator in its own
// mapping.  delete of a block that glibc's free() sees aborts.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <sys/mman.h>

static unsigned char *heap, *top, *end;

static void *bump(std::size_t n)
{
	if (!heap) {
		std::size_t size = 64 << 20;
		void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			std::abort();
		heap = top = static_cast<unsigned char *>(m);
		end = heap + size;
	}
	n = (n + 15) & ~static_cast<std::size_t>(15);
	if (static_cast<std::size_t>(end - top) < n)
		throw std::bad_alloc();
	void *p = top;
	top += n;
	return p;
}

void *operator new(std::size_t n) { return bump(n); }
void *operator new[](std::size_t n) { return bump(n); }
void operator delete(void *) noexcept {}
void operator delete[](void *) noexcept {}
void operator delete(void *, std::size_t) noexcept {}
void operator delete[](void *, std::size_t) noexcept {}
