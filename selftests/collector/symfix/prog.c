// SPDX-License-Identifier: GPL-2.0
/*
 * symfix prog - a program laid out as real ones are, for symfix_test.c:
 * 128 KiB of read-only tables (lld and mold place .rodata before the text,
 * so the text segment starts past 64 KiB of file), 4096 relocated pointers
 * (GNU ld and gold place their .rela.dyn before the text), text spread
 * over 128 KiB (functions far apart), a call site inlined into another
 * function, and a shared library (lib.c) built the same way.  It prints
 * what it knows of itself (probe.h), then "end", and waits for its stdin
 * to close.
 */
#include <unistd.h>

#include "probe.h"

int symfix_lib_run(void);

const unsigned int prog_table[32768] = { 1, 2, 3 };
static int anchor;
const void *const prog_ptrs[4096] = { SYMFIX_P4096 };

SYMFIX_FN int prog_first(void)
{
	return SYMFIX_CALL() + 1;
}

SYMFIX_PAD(prog_pad_a)

SYMFIX_FN int prog_middle(void)
{
	return SYMFIX_CALL() + (int)prog_table[1];
}

SYMFIX_PAD(prog_pad_b)

/* Always inlined: its call of the probe is a call site of prog_outer. */
static inline __attribute__((always_inline)) int prog_inner(const char *outer, int outer_line)
{
	return symfix_probe(__FILE__, __func__, __LINE__, outer, outer_line) + 2;
}

SYMFIX_FN int prog_outer(void)
{
	return prog_inner(__func__, __LINE__) + 3;
}

SYMFIX_FN int prog_last(void)
{
	return SYMFIX_CALL() + (prog_ptrs[7] == &anchor);
}

int main(void)
{
	int sum = 0;
	char c;

	sum += prog_first() + prog_middle() + prog_outer() + prog_last();
	sum += symfix_lib_run();
	sum += SYMFIX_CALL();
	SYMFIX_ADDR(prog_first);
	SYMFIX_ADDR(prog_middle);
	SYMFIX_ADDR(prog_outer);
	SYMFIX_ADDR(prog_last);
	SYMFIX_ADDR(main);
	printf("end %d\n", sum);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
