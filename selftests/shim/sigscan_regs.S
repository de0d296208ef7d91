/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sigscan_regs_loop(done, seed) - malloc(64) and free() until *@done,
 * holding seed ^ SIGSCAN_Kn in rbx, r12, r13, r14 and r15 (callee-saved)
 * and nowhere else: no memory of this thread holds those five values
 * unless something stores the registers (malloc's own frames, the
 * kernel's signal frame, the shim's switch to its private stack).  A
 * collector that scans the thread's stack from its stop handler's stack
 * pointer up must find all five (sigscan.c checks).
 */
#define K1 0x6b70707266310001
#define K2 0x6b70707266310002
#define K3 0x6b70707266310003
#define K4 0x6b70707266310004
#define K5 0x6b70707266310005
	.text
	.globl	sigscan_regs_loop
	.type	sigscan_regs_loop, @function
sigscan_regs_loop:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	pushq	%rdi
	.cfi_offset rbx, -24
	.cfi_offset r12, -32
	.cfi_offset r13, -40
	.cfi_offset r14, -48
	.cfi_offset r15, -56
	movabsq	$K1, %rbx
	xorq	%rsi, %rbx
	movabsq	$K2, %r12
	xorq	%rsi, %r12
	movabsq	$K3, %r13
	xorq	%rsi, %r13
	movabsq	$K4, %r14
	xorq	%rsi, %r14
	movabsq	$K5, %r15
	xorq	%rsi, %r15
	xorl	%esi, %esi
1:	movl	$64, %edi
	call	malloc@PLT
	movq	%rax, %rdi
	call	free@PLT
	movq	(%rsp), %rax
	movl	(%rax), %eax
	testl	%eax, %eax
	jz	1b
	popq	%rdi
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size	sigscan_regs_loop, .-sigscan_regs_loop
	.section .note.GNU-stack,"",@progbits
