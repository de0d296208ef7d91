/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe.h - what a symbolization fixture (prog.c, lib.c) says about
 * itself, for symfix_test.c to check the symbolizer against: the return
 * address of calls made from known functions at known lines (the
 * compiler's __func__, __FILE__ and __LINE__, not the symbolizer's ELF or
 * DWARF), and the address of each function.  One line each on stdout:
 *
 *   call RA FILE FUNC LINE [OUTER OUTER_LINE]   (OUTER: FUNC is inlined there)
 *   addr ADDR FUNC
 */
#ifndef SYMFIX_PROBE_H
#define SYMFIX_PROBE_H

#include <stdio.h>

/* Kept, called and never merged: each is a function of its own in the text. */
#define SYMFIX_FN __attribute__((noinline, used))

/*
 * symfix_probe - print the call's return address (inside the caller, or
 * inside the code inlined into it).  Callers use its result, so the call
 * is never a tail call (the Makefile adds -fno-optimize-sibling-calls too).
 */
static __attribute__((noinline)) int symfix_probe(const char *file, const char *fn, int line,
						  const char *outer, int outer_line)
{
	void *ra = __builtin_return_address(0);

	if (outer)
		printf("call %p %s %s %d %s %d\n", ra, file, fn, line, outer, outer_line);
	else
		printf("call %p %s %s %d\n", ra, file, fn, line);
	return line & 1;
}

#define SYMFIX_CALL() symfix_probe(__FILE__, __func__, __LINE__, NULL, 0)

/* 64 KiB of never-run text: the functions around it are far apart. */
#define SYMFIX_PAD(name) \
	SYMFIX_FN void name(void) { __asm__ volatile(".skip 0x10000, 0xcc"); }

/*
 * Pointers to relocate at load time (PIE and shared objects): their
 * relocations fill .rela.dyn, which GNU ld and gold place in the
 * read-only segment before the text, as in libc.  (Each file has its
 * own `static int anchor`.)
 */
#define SYMFIX_P4 &anchor, &anchor, &anchor, &anchor
#define SYMFIX_P16 SYMFIX_P4, SYMFIX_P4, SYMFIX_P4, SYMFIX_P4
#define SYMFIX_P64 SYMFIX_P16, SYMFIX_P16, SYMFIX_P16, SYMFIX_P16
#define SYMFIX_P256 SYMFIX_P64, SYMFIX_P64, SYMFIX_P64, SYMFIX_P64
#define SYMFIX_P1024 SYMFIX_P256, SYMFIX_P256, SYMFIX_P256, SYMFIX_P256
#define SYMFIX_P4096 SYMFIX_P1024, SYMFIX_P1024, SYMFIX_P1024, SYMFIX_P1024

#define SYMFIX_ADDR(fn) printf("addr %p %s\n", (void *)(fn), #fn)

#endif
