/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rbp_malloc(n, rbp) - malloc(n) called with %rbp holding @rbp, as code
 * built without frame pointers leaves it (binutils' as had -16 there):
 * the fp walker reads the frame record at rbp, which must not take it
 * outside the stack.  The CFI says where the caller's rbp is, so the
 * DWARF walk goes on through this frame.
 */
	.text
	.globl	rbp_malloc
	.type	rbp_malloc, @function
rbp_malloc:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsi, %rbp
	call	malloc@PLT
	popq	%rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	rbp_malloc, .-rbp_malloc
	.section .note.GNU-stack,"",@progbits
