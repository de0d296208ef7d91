/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpprof: the differences between the kernels the module supports (6.1 to
 * 6.12 and their PREEMPT_RT builds), in one place, so the logic files carry
 * no version #if of their own.
 */
#ifndef _KPP_COMPAT_H
#define _KPP_COMPAT_H

#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seccomp.h>

/*
 * Each KPP_HAVE_* comes from Kbuild, which looks for the feature in the
 * kernel headers the module is built against.
 *
 * vm_flags became read-only in 6.3: writers go through vm_flags_set() and
 * vm_flags_clear(), which also assert the mmap lock is held.
 */
#ifndef KPP_HAVE_VM_FLAGS_SET
static inline void kpp_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void kpp_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#else
static inline void kpp_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}

static inline void kpp_vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_clear(vma, flags);
}
#endif

/*
 * The seccomp mode of @t (SECCOMP_MODE_DISABLED, 0: no filter).  Not a
 * version difference but a configuration one: a kernel built without
 * CONFIG_SECCOMP has an empty struct seccomp, and no filter.  Set under
 * @t's sighand lock, which the reader does not take (@t itself, another
 * thread's TSYNC, at any time): one load.
 *
 * The probe reads it for each thread of a group with for_each_thread()
 * under RCU, the same on 6.1 and 6.12 (the group's thread_head list);
 * next_thread() and while_each_thread() are not (6.1 follows the
 * thread_group list, 6.12 thread_head), so the module does not use them.
 */
static inline int kpp_seccomp_mode(struct task_struct *t)
{
#ifdef CONFIG_SECCOMP
	return READ_ONCE(t->seccomp.mode);
#else
	return 0;
#endif
}

#endif /* _KPP_COMPAT_H */
