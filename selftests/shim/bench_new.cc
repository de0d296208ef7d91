// SPDX-License-Identifier: GPL-2.0
// bench_new ITERS: ns per `new X` + `delete p` pair (64-byte X), the way a
// C++ program calls them (through the PLT: GCC emits operator new and the
// sized operator delete); run by bench.sh with and without the shim.
// Timed in the thread's CPU time (the machine may be shared).
// Prints "new_delete_pair NS ns".
#include <cstdio>
#include <cstdlib>
#include <ctime>

struct X {
	char b[64];
};
X *volatile sink;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++) {
		X *p = new X;

		sink = p;
		delete p;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	printf("new_delete_pair %.2f ns\n",
	       ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
