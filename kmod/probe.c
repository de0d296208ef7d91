// SPDX-License-Identifier: GPL-2.0
/*
 * The seccomp probe (ioctl/kpprof.h, KPPROF_PGOFF_SECCOMP_PROBE): a
 * question a preloaded shim can ask without a syscall.  A program may
 * install a seccomp filter with a raw `syscall` instruction, which the
 * shim's wrappers never see (browser sandboxes, Go's RawSyscall), and
 * such a filter usually kills (SIGSYS) for the syscalls the shim still
 * makes now and then (its ring's set-up, a fork child's, a COMM record
 * without a ring, the getpid at exit).  Before each of them the shim
 * reads a probe page: a fault, which no filter can forbid, answered here
 * for the faulting thread's thread group (KPPROF_FEAT_SECCOMP_PROBE_GROUP:
 * a module with KPPROF_FEAT_SECCOMP_PROBE alone answered for the thread).
 *
 * Two pages, read-only, with no PTE at mmap time.  A read of a page that
 * is not mapped in faults here: the fault takes the other page out of
 * this vma and maps the faulting one in, as the zero page when no thread
 * of the faulting thread's group has a seccomp filter (all
 * SECCOMP_MODE_DISABLED), else as probe_page, whose first __u32 is
 * KPP_PROBE_FILTERED.  A reader that reads the pages alternately thus
 * gets a fresh answer at every read.  The answer is the thread group's,
 * not the faulting thread's, because the PTE is the mm's: a thread that
 * reads the page another thread's fault mapped gets that fault's answer
 * without faulting, and an answer for the faulting thread alone would
 * then tell a thread whose filter went in without
 * SECCOMP_FILTER_FLAG_TSYNC "no filter" (and the shim make a syscall
 * that filter forbids).  Only this vma's own PTEs are ever touched.
 * Nothing counted: a fault, a zap, a walk of the thread group and a PTE,
 * under the vma's own mutex so that concurrent faults leave one page
 * mapped, not two.
 *
 * Inherited across fork, at the same address, so a fork, _Fork or clone
 * child can ask before its own first syscall; VM_WIPEONFORK so that the
 * child starts with no PTE: its first read faults whatever page its
 * parent last mapped (a file mapping may carry the flag: dup_mmap()
 * only skips the copy of the page tables).
 *
 * Mappable from any file: it tells the faulting thread what
 * /proc/self/task/{tid}/status tells it already.
 */
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include "kpp.h"
#include "compat.h"

#define KPP_PROBE_PAGES		2
#define KPP_PROBE_FILTERED	1

/* the "filtered" answer, read-only to user space (VM_MAYWRITE cleared) */
static struct page *probe_page;

/*
 * A fault's zap and insert, one at a time per vma: two threads faulting
 * the two pages at once would otherwise interleave (A zaps 1, B zaps 0,
 * A maps 0, B maps 1) into both pages mapped, after which no read ever
 * faults again and every answer is frozen.  zap_vma_ptes() touches this
 * vma only, so a lock per vma is enough, and it is the vma's own: a
 * lock shared with other mms (it was one of 64, hashed by mm) let a
 * process of one user with many threads, faulting in a loop, hold up
 * another user's probe fault for its whole queue of walks (seconds,
 * unkillable: selftests/kmod/repro/probe_dos.c).  Each copy of the vma
 * (fork, split, mremap) gets a lock of its own in ->open().
 */
struct kpp_probe_vma {
	struct mutex lock;	/* a fault's zap, answer and insert */
};

static struct kpp_probe_vma *kpp_probe_vma_new(gfp_t gfp)
{
	struct kpp_probe_vma *pv = kmalloc(sizeof(*pv), gfp);

	if (pv)
		mutex_init(&pv->lock);
	return pv;
}

/* a copy of the vma (fork, split, mremap): ->open cannot fail */
static void kpp_probe_open(struct vm_area_struct *vma)
{
	vma->vm_private_data = kpp_probe_vma_new(GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
}

static void kpp_probe_close(struct vm_area_struct *vma)
{
	struct kpp_probe_vma *pv = vma->vm_private_data;

	mutex_destroy(&pv->lock);
	kfree(pv);
}

/*
 * Has any thread of current's thread group a seccomp filter?  Walked
 * under RCU (for_each_thread(), the same on every kernel of compat.h:
 * the group's thread_head list), without the sighand lock:
 *  - a mode only ever goes from SECCOMP_MODE_DISABLED to a filter, never
 *    back, and is one READ_ONCE (kpp_seccomp_mode()), so a filter going
 *    in during the walk is either seen or not, as one going in just
 *    after it;
 *  - a thread exiting during the walk is unlinked with list_del_rcu()
 *    and freed after a grace period: seen or not, never a freed one; one
 *    seen with a filter answers "filtered" for a filter that is going;
 *  - a thread created during the walk may be missed, but it copied its
 *    filter from its creator (copy_seccomp()), a thread of the group
 *    that the walk sees, unless it exits in between.
 * So the answer is the group's at some instant of the walk, as a thread's
 * own answer always was at some instant of the fault.  A "filtered" that
 * the asking thread's own syscalls would not meet (another thread's
 * filter without TSYNC; an exiting thread's; a group leader's that
 * called pthread_exit(), listed until the whole group exits) only stops
 * the shim's profiling of this process: the safe side.
 * Cost: the group's threads, one load each, stopping at the first filter,
 * under the vma's mutex (only this process's own probe faults wait); the
 * shim asks a few times in a process's life.  The group, not the mm:
 * a task sharing the mm outside the group (a vfork child, clone(CLONE_VM)
 * without CLONE_THREAD) is not walked (that would walk every process).
 */
static bool kpp_probe_group_filtered(void)
{
	struct task_struct *t;
	bool filtered = false;

	if (kpp_seccomp_mode(current))
		return true;
	rcu_read_lock();
	for_each_thread(current, t) {
		if (kpp_seccomp_mode(t)) {
			filtered = true;
			break;
		}
	}
	rcu_read_unlock();
	return filtered;
}

static vm_fault_t kpp_probe_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct kpp_probe_vma *pv = vma->vm_private_data;
	struct page *answer;
	vm_fault_t ret;

	/* VM_DONTEXPAND: the vma never covers more than the two pages */
	if (vmf->pgoff - KPPROF_PGOFF_SECCOMP_PROBE >= KPP_PROBE_PAGES)
		return VM_FAULT_SIGBUS;
	/*
	 * Every page of this vma out (the other one, and this one if another
	 * thread's fault has just mapped it), then this one in, as one step:
	 * exactly one page of the vma is mapped after any fault.  The answer
	 * is taken between the two, so a page never goes in with an answer
	 * older than the zap that took the other one out.  current is a
	 * thread of the group that asks: get_user_pages() refuses
	 * VM_IO | VM_PFNMAP, so no remote access (ptrace, /proc/pid/mem,
	 * process_vm_readv()) faults here in another task's name.
	 */
	/*
	 * Killable: a thread killed while its own process's other threads
	 * queue here goes.  SIGBUS, not NOPAGE: a kernel access (a syscall's
	 * copy from these pages) would retry the fault for ever, each retry
	 * failing again on the pending SIGKILL; SIGBUS makes it -EFAULT, and
	 * a user access dies of the SIGKILL first.
	 */
	if (mutex_lock_killable(&pv->lock))
		return VM_FAULT_SIGBUS;
	zap_vma_ptes(vma, vma->vm_start, vma->vm_end - vma->vm_start);
	answer = kpp_probe_group_filtered() ? probe_page : ZERO_PAGE(0);
	ret = vmf_insert_pfn(vma, vmf->address & PAGE_MASK, page_to_pfn(answer));
	mutex_unlock(&pv->lock);
	return ret;
}

static const struct vm_operations_struct kpp_probe_ops = {
	.open = kpp_probe_open,
	.close = kpp_probe_close,
	.fault = kpp_probe_fault,
};

/**
 * kpp_probe_mmap - map the seccomp probe
 * @vma: exactly KPP_PROBE_PAGES pages, shared, read-only.
 *
 * Return: 0, -EPERM (PROT_WRITE or PROT_EXEC), -EINVAL (private, or
 * geometry).
 */
int kpp_probe_mmap(struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	/* MAP_SHARED: VM_SHARED goes with FMODE_WRITE, VM_MAYSHARE stays */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma_pages(vma) != KPP_PROBE_PAGES)
		return -EINVAL;
	vma->vm_private_data = kpp_probe_vma_new(GFP_KERNEL_ACCOUNT);
	if (!vma->vm_private_data)
		return -ENOMEM;
	/*
	 * Inherited (no VM_DONTCOPY), without its PTEs (VM_WIPEONFORK);
	 * never grown, never dumped, never made writable or executable
	 */
	kpp_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP |
			 VM_WIPEONFORK);
	kpp_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_ops = &kpp_probe_ops;
	return 0;
}

/* The probe's length, for kpprof_info.probe_map_len. */
u64 kpp_probe_map_len(void)
{
	return KPP_PROBE_PAGES * PAGE_SIZE;
}

int kpp_probe_init(void)
{
	probe_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!probe_page)
		return -ENOMEM;
	*(u32 *)page_address(probe_page) = KPP_PROBE_FILTERED;
	return 0;
}

/* Only once no mapping can remain: each holds the file, which holds us. */
void kpp_probe_exit(void)
{
	__free_page(probe_page);
}
