/* SPDX-License-Identifier: GPL-2.0 */
/*
 * plug(n) - malloc(n), built twice with the same code and .eh_frame
 * layout (reload_host_test.sh): with FP, a frame-pointer frame (CFA =
 * rbp + 16 at the return from malloc); without, CFA = rsp + 16 and rbp
 * holds a non-canonical value during the call.  A rule kept from the
 * first library and applied to the second reads at rbp + 8: SIGSEGV.
 */
	.text
	.globl	plug
	.type	plug, @function
plug:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
#ifdef FP
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	.byte	0x0f, 0x1f, 0x80, 0, 0, 0, 0	/* 7-byte nop: movabs's length */
#else
	movabsq	$0x4000000000000000, %rbp
	.cfi_def_cfa_offset 16			/* FP's def_cfa_register's length */
#endif
	call	malloc@PLT
	popq	%rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size	plug, .-plug
	.section .note.GNU-stack,"",@progbits
