// SPDX-License-Identifier: GPL-2.0
/*
 * The doorbell (ioctl/kpprof.h, KPPROF_PGOFF_DOORBELL): a producer's kick
 * that is a page fault, not a syscall.  A program may install a seccomp
 * filter its preloaded shim cannot see (a raw `syscall` instruction, as
 * browser sandboxes do) and kill on open(2) or ioctl(2); a fault is no
 * syscall, and no filter can forbid it.
 *
 * Two pages, read-only, with no PTE at mmap time.  A read of a page that
 * is not mapped in faults here: the fault drains the caller's own rings,
 * as KPPROF_IOC_KICK does, if no drain holds prings_lock, and otherwise
 * brings the next drain forward (kpp_pring_doorbell(): it never waits for
 * the lock); then it takes the other page out of this mapping and maps
 * the faulting one in.  A producer
 * that reads the pages alternately thus kicks once per read, and each kick
 * re-arms the page the next one reads: only this vma's own PTEs are ever
 * touched, nothing in another mm.  The page mapped in is the zero page
 * (VM_PFNMAP: no reference is taken, nothing to free).
 *
 * Cost: a producer that faults in a loop pays a fault, a zap, a PTE and
 * a drain of its own rings per kick, as a KPPROF_IOC_KICK loop pays a
 * syscall and that drain; while other drains hold the lock, it gets the
 * drain work once a jiffy at most (kpp_pring_doorbell()).
 */
#include <linux/mm.h>
#include "kpp.h"
#include "compat.h"

#define KPP_DOORBELL_PAGES	2

static vm_fault_t kpp_doorbell_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t other = (vmf->pgoff - KPPROF_PGOFF_DOORBELL) ^ 1;
	unsigned long addr;

	/* VM_DONTEXPAND: the vma never covers more than the two pages */
	if (vmf->pgoff - KPPROF_PGOFF_DOORBELL >= KPP_DOORBELL_PAGES)
		return VM_FAULT_SIGBUS;
	/*
	 * The vma's mm, not current's: the same for every fault a user can
	 * cause (get_user_pages() refuses VM_IO | VM_PFNMAP, so no
	 * process_vm_readv(), /proc/pid/mem or ptrace read reaches us), and
	 * never another mm's rings should a remote fault path ever do
	 */
	kpp_pring_doorbell(vma->vm_mm);
	/* the other page, if a partial munmap() has not taken it away */
	other += KPPROF_PGOFF_DOORBELL;
	if (other >= vma->vm_pgoff) {
		addr = vma->vm_start + ((other - vma->vm_pgoff) << PAGE_SHIFT);
		if (addr < vma->vm_end)
			zap_vma_ptes(vma, addr, PAGE_SIZE);
	}
	return vmf_insert_pfn(vma, vmf->address & PAGE_MASK,
			      page_to_pfn(ZERO_PAGE(0)));
}

static const struct vm_operations_struct kpp_doorbell_ops = {
	.fault = kpp_doorbell_fault,
};

/**
 * kpp_doorbell_mmap - map @file's doorbell
 * @kf:   the file's state.
 * @file: the file (only one that may submit may kick).
 * @vma:  exactly KPP_DOORBELL_PAGES pages, shared, read-only.
 *
 * Return: 0, -EACCES (not opened for writing), -EPERM (no producer
 * permission, PROT_WRITE or PROT_EXEC), -EINVAL (private, or geometry).
 */
int kpp_doorbell_mmap(struct kpp_file *kf, struct file *file,
		      struct vm_area_struct *vma)
{
	if (!(file->f_mode & FMODE_WRITE))
		return -EACCES;
	if (!kf->producer)
		return -EPERM;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma_pages(vma) != KPP_DOORBELL_PAGES)
		return -EINVAL;
	/*
	 * Never inherited (a fork child maps its own, as its ring), never
	 * grown, never dumped, never made writable or executable later;
	 * VM_IO so that MADV_DOFORK cannot undo VM_DONTCOPY.
	 */
	kpp_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP |
			 VM_DONTCOPY);
	kpp_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_ops = &kpp_doorbell_ops;
	return 0;
}

/* The doorbell's length, for kpprof_info.doorbell_map_len. */
u64 kpp_doorbell_map_len(void)
{
	return KPP_DOORBELL_PAGES * PAGE_SIZE;
}
