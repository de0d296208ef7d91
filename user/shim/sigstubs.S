/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The signal handler entry points sigwrap.c gives the kernel: stub k
 * calls kpp_sig_trampoline(sig, info, uc, k), for handler k of
 * sigwrap.c's table.  Each stub names one program handler by itself, so
 * the value the kernel holds means the same whoever reads it (a raw
 * rt_sigaction, sigset(), a vfork child's change, a handler chain that
 * calls the previous one): there is no per-signal state to go stale.
 * KPP_SIG_STUBS of them, 16 bytes apart (sigwrap.c computes k from the
 * address).  A tail jump: the trampoline returns straight to the
 * kernel's restorer, and the stack is as at any function's entry.
 */
#define KPP_SIG_STUBS	256

	.text
	.globl	kpp_sig_stubs
	.hidden	kpp_sig_stubs
	.globl	kpp_sig_stubs_end
	.hidden	kpp_sig_stubs_end
	.p2align 4
	.type	kpp_sig_stubs, @function
kpp_sig_stubs:
	.cfi_startproc
	.set	k, 0
	.rept	KPP_SIG_STUBS
	.p2align 4
	endbr64
	movl	$k, %ecx
	jmp	kpp_sig_trampoline
	.set	k, k + 1
	.endr
	.p2align 4
kpp_sig_stubs_end:
	.cfi_endproc
	.size	kpp_sig_stubs, .-kpp_sig_stubs

	.section .note.GNU-stack,"",@progbits
