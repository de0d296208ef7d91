// SPDX-License-Identifier: GPL-2.0
/*
 * libshim_deep.so: a call chain of DEEP_N distinct functions, built
 * without frame pointers (-O2 -fomit-frame-pointer), whose innermost one
 * allocates DEEP_MAGIC bytes.  stack_checks' "deep" mode checks that the
 * sampled stack names every one of them.  Each call is followed by work
 * on its result, so none is a tail call.
 */
#include <stdlib.h>

#define DEEP_MAGIC	12345

int deep_0(int n);
static volatile int sink;

__attribute__((noinline)) int deep_leaf(int n)
{
	void *volatile p = malloc(DEEP_MAGIC + (size_t)(n & 0));

	free(p);
	return sink + n;
}

#define STEP(i, next) \
	__attribute__((noinline)) int deep_##i(int n) { return next(n + 1) * 3 + sink; }
STEP(17, deep_leaf) STEP(16, deep_17) STEP(15, deep_16) STEP(14, deep_15)
STEP(13, deep_14) STEP(12, deep_13) STEP(11, deep_12) STEP(10, deep_11)
STEP(9, deep_10) STEP(8, deep_9) STEP(7, deep_8) STEP(6, deep_7)
STEP(5, deep_6) STEP(4, deep_5) STEP(3, deep_4) STEP(2, deep_3)
STEP(1, deep_2) STEP(0, deep_1)
