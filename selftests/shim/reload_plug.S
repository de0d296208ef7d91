/* SPDX-License-Identifier: GPL-2.0 */
/*
 * plug(n) - malloc(n) from a frame of FRAME bytes (reload.c).  Built twice
 * with two FRAME values whose code and .eh_frame have the same layout: the
 * two libraries load at the same address with the same pc for the return
 * from malloc, and a different CFA rule there.
 */
	.text
	.globl	plug
	.type	plug, @function
plug:
	.cfi_startproc
	subq	$FRAME, %rsp
	.cfi_def_cfa_offset FRAME + 8
	call	malloc@PLT
	addq	$FRAME, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	plug, .-plug
	.section .note.GNU-stack,"",@progbits
