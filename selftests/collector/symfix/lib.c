// SPDX-License-Identifier: GPL-2.0
/*
 * symfix lib - the fixture program's shared library (see prog.c): its own
 * 128 KiB of read-only tables, relocated pointers, far-apart functions and
 * an inlined call site.
 */
#include "probe.h"

const unsigned int lib_table[32768] = { 4, 5, 6 };
static int anchor;
const void *const lib_ptrs[4096] = { SYMFIX_P4096 };

SYMFIX_FN int lib_first(void)
{
	return SYMFIX_CALL() + (int)lib_table[2];
}

SYMFIX_PAD(lib_pad_a)

static inline __attribute__((always_inline)) int lib_inner(const char *outer, int outer_line)
{
	return symfix_probe(__FILE__, __func__, __LINE__, outer, outer_line) + 2;
}

SYMFIX_FN int lib_outer(void)
{
	return lib_inner(__func__, __LINE__) + 1;
}

SYMFIX_PAD(lib_pad_b)

/* Not exported: only the symbol table (or its debug file) names it. */
__attribute__((visibility("hidden"))) SYMFIX_FN int lib_hidden_last(void)
{
	return SYMFIX_CALL() + (lib_ptrs[9] == &anchor);
}

int symfix_lib_run(void)
{
	int sum = lib_first() + lib_outer() + lib_hidden_last();

	SYMFIX_ADDR(lib_first);
	SYMFIX_ADDR(lib_outer);
	SYMFIX_ADDR(lib_hidden_last);
	SYMFIX_ADDR(symfix_lib_run);
	return sum + SYMFIX_CALL();
}
