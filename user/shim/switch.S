/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpp_switch_call(arg, fn, top, save_sp) - call fn(arg, caller_fp) with
 * the stack pointer at @top (16-aligned, the high end of one of
 * stackpool.c's private stacks), and come back to the caller's stack.
 * @caller_fp is this frame's rbp: a frame record on the caller's stack,
 * where the frame-pointer walker starts.
 *
 * Before it leaves, it stores the caller's callee-saved registers (rbx,
 * r12-r15) on the caller's stack and the stack pointer below them in
 * *@save_sp: everything the program holds live across the call is then
 * in the memory of its own stack, above *@save_sp.  A signal handler
 * that interrupts fn runs there (sigwrap.c, kpp_call_on below), so a
 * conservative collector that scans the thread's stack from the
 * handler's stack pointer up finds every pointer the program holds
 * (fn's own copies of these registers are on the private stack).
 * fn gives the registers back as the ABI says: they are not reloaded.
 *
 * The CFI says where the caller's frame is while rsp points to the
 * private stack: CFA = rbp + 16 (rbp is callee-saved, so fn gives it
 * back), the return address at CFA - 8 and the caller's rbp at CFA - 16.
 * So a DWARF unwinder started on the private stack walks through this
 * frame back onto the program's stack.  The caller's stack pays 64 bytes.
 */
/*
 * A frame record at rbp, and the CFI that keeps it findable (CFA = rbp +
 * 16) while rsp is elsewhere: on a private stack, or on the program's.
 */
.macro FRAME_ENTER
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
.endm

.macro FRAME_LEAVE
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
.endm

	.text
	.globl	kpp_switch_call
	.hidden	kpp_switch_call
	.type	kpp_switch_call, @function
	.p2align 4
kpp_switch_call:
	FRAME_ENTER
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$8, %rsp
	movq	%rsp, (%rcx)
	movq	%rsi, %rax
	movq	%rbp, %rsi
	movq	%rdx, %rsp
	call	*%rax
	FRAME_LEAVE
	.size	kpp_switch_call, .-kpp_switch_call

/*
 * kpp_call_on(top, fn, a, b, c, d) - call fn(a, b, c, d) with the stack
 * pointer at @top (16-aligned) and come back.  sigwrap.c runs a signal
 * handler that interrupted a sample's body on the program's stack with
 * it, at the *save_sp kpp_switch_call left.  Same CFI as above: an
 * unwinder in the handler walks through this frame back to the private
 * stack (the trampoline, the signal frame, the sample) and on to the
 * program's frames.
 */
	.globl	kpp_call_on
	.hidden	kpp_call_on
	.type	kpp_call_on, @function
	.p2align 4
kpp_call_on:
	FRAME_ENTER
	movq	%rsi, %rax
	movq	%rdi, %r10
	movq	%rdx, %rdi
	movq	%rcx, %rsi
	movq	%r8, %rdx
	movq	%r9, %rcx
	movq	%r10, %rsp
	call	*%rax
	FRAME_LEAVE
	.size	kpp_call_on, .-kpp_call_on

	.section .note.GNU-stack,"",@progbits
