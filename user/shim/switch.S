/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpp_switch_call(arg, fn, top) - call fn(arg, caller_fp) with the stack
 * pointer at @top (16-aligned, the high end of one of stackpool.c's
 * private stacks), and come back to the caller's stack.  @caller_fp is
 * this frame's rbp: a frame record on the caller's stack, where the
 * frame-pointer walker starts.
 *
 * The CFI says where the caller's frame is while rsp points to the
 * private stack: CFA = rbp + 16 (rbp is callee-saved, so fn gives it
 * back), the return address at CFA - 8 and the caller's rbp at CFA - 16.
 * So a DWARF unwinder started on the private stack walks through this
 * frame back onto the program's stack.  The caller's stack pays 16 bytes.
 */
	.text
	.globl	kpp_switch_call
	.hidden	kpp_switch_call
	.type	kpp_switch_call, @function
	.p2align 4
kpp_switch_call:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	movq	%rsi, %rax
	movq	%rbp, %rsi
	movq	%rdx, %rsp
	call	*%rax
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	kpp_switch_call, .-kpp_switch_call

	.section .note.GNU-stack,"",@progbits
