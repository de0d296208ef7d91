// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/kpprof: the file operations.  Privilege is checked per operation,
 * like perf: anyone may open the device, write records and map the config
 * page; consuming, configuring and reading statistics need CAP_PERFMON or
 * CAP_SYS_ADMIN, and only one file at a time may be the consumer.
 *
 * Whether a file may write records (producer_gid) is decided once, when it
 * is opened, from the opener's credentials (file->f_cred), and kept in the
 * file's struct kpp_file: a descriptor handed to a setuid program, or kept
 * across setuid() by its opener, writes as the open allowed, and a write
 * costs no capability check (nor the audit record a denied one logs).
 *
 * Extensible ioctl arguments follow seccomp's recipe: dispatch on the
 * command with its size bits masked off, take the size from the command,
 * and copy_struct_from_user() (input) or a zero-filled copy (output).
 */
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pid_namespace.h>
#include <linux/user_namespace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/mm.h>
#include "kpp.h"

/* The command with its size bits masked off (seccomp's EA_IOCTL). */
#define KPP_IOC_BASE(cmd)	((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

static bool kpp_is_consumer(struct file *file)
{
	return READ_ONCE(kpp_dev.consumer) == file;
}

/*
 * kpp_open - decide, once, whether this file may write records, with the
 * file's credentials (at open() they are the opener's).  The capability
 * check logs no audit record: a file that may not write is no denial yet
 * (it may consume, or only read the config).
 *
 * The file is a stream (stream_open()): write(2) neither reads nor updates
 * f_pos, a line all of a process's threads would otherwise dirty on every
 * record, and lseek(2), pread(2) and pwrite(2) are ESPIPE.
 */
static int kpp_open(struct inode *inode, struct file *file)
{
	int gid = READ_ONCE(kpp_dev.producer_gid);
	struct kpp_file *kf;
	const struct cred *old;
	bool allowed = true;

	if (gid >= 0) {
		old = override_creds(file->f_cred);
		allowed = in_group_p(make_kgid(&init_user_ns, gid)) ||
			  ns_capable_noaudit(&init_user_ns, CAP_PERFMON) ||
			  ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
		revert_creds(old);
	}
	kf = kzalloc(sizeof(*kf), GFP_KERNEL);
	if (!kf)
		return -ENOMEM;
	kf->producer = allowed;
	mutex_init(&kf->lock);
	file->private_data = kf;
	return stream_open(inode, file);
}

/*
 * kpp_charge_uid - the uid whose share of the ring @cred's records take
 *
 * A user namespace gives whoever creates it as many uids as its uid_map
 * (newuidmap maps a subuid range, commonly 65536): charged as themselves,
 * they would be as many buckets of the share rule as the user likes, and
 * beside them another user's service would find none.  So the uids of a
 * namespace are charged to the user who made it: the owner of the
 * outermost namespace not made by root (namespaces nest: a namespace made
 * inside one is its maker's, still).  A namespace root made (a container
 * with its own uid range) keeps its uids apart: root granted them, as it
 * grants uids on the host.
 */
u32 kpp_charge_uid(const struct cred *cred)
{
	const struct user_namespace *ns;
	kuid_t uid = cred->uid;

	for (ns = cred->user_ns; ns != &init_user_ns; ns = ns->parent)
		if (!uid_eq(ns->owner, GLOBAL_ROOT_UID))
			uid = ns->owner;
	return from_kuid_munged(&init_user_ns, uid);
}

/*
 * kpp_submit - validate one record of @len bytes at @ubuf, stamp it and
 * offer it to the ring: what write(2) and KPPROF_IOC_SUBMIT share.
 * Returns 0 or a negative errno (ENOBUFS, ECANCELED and ENOMEM count a
 * drop).
 */
static int kpp_submit(struct file *file, const char __user *ubuf, size_t len)
{
	/*
	 * Records without a stack (frees, unmaps, names, notes: 56 to 64
	 * bytes) are copied on the stack: 64 bytes of frame save them an
	 * allocation.  Not zero-initialised (CONFIG_INIT_STACK_ALL_ZERO): only
	 * the @len bytes copy_from_user() fills are ever read.
	 */
	u64 small[KPP_SMALL_RECORD_MAX / sizeof(u64)] __uninitialized;
	struct kpp_ring *rb = &kpp_dev.ring;
	struct kpp_stamp stamp;
	bool cached;
	void *buf;
	u32 flag;
	int err;

	/* as write(2): a descriptor opened without write access submits nothing */
	if (!(file->f_mode & FMODE_WRITE)) {
		err = -EBADF;
		goto err_reject;
	}
	if (!((struct kpp_file *)file->private_data)->producer) {
		err = -EPERM;
		goto err_reject;
	}
	if (len < sizeof(struct kpprof_record) || len > KPP_RECORD_SIZE_MAX) {
		err = -EINVAL;
		goto err_reject;
	}
	/*
	 * Stack records, the common case, go to a buffer of the record cache
	 * (not onto the kernel stack: 1 KiB of it per write), bigger ones
	 * (mappings) to kmalloc.  Neither is zeroed: only the @len bytes
	 * copy_from_user() fills are ever read, validated and copied on.
	 */
	cached = len <= KPP_STACK_RECORD_SIZE_MAX;
	if (len <= sizeof(small))
		buf = small;
	else if (cached)
		buf = kmem_cache_alloc(kpp_dev.rec_cache, GFP_KERNEL);
	else
		buf = kmalloc(len, GFP_KERNEL);
	if (!buf) {
		/* rare (GFP_KERNEL, at most order 1), but a drop: counted */
		atomic64_inc(&rb->dropped[KPPROF_DROP_NOMEM]);
		return -ENOMEM;
	}
	if (copy_from_user(buf, ubuf, len)) {
		err = -EFAULT;
		goto err_reject_free;
	}
	err = kpp_record_validate(buf, len,
				  kpp_config_max_depth(&kpp_dev.config),
				  TASK_SIZE);
	if (err)
		goto err_reject_free;

	flag = kpp_record_flag(((struct kpprof_record *)buf)->kind);
	if (flag && !(kpp_config_flags(&kpp_dev.config) & flag)) {
		atomic64_inc(&rb->dropped[KPPROF_DROP_DISABLED]);
		err = -ECANCELED;
		goto out;
	}
	if (((struct kpprof_record *)buf)->kind == KPPROF_REC_COMM)
		kpp_record_fill_comm(buf);

	stamp.tgid = task_tgid_nr(current);
	stamp.tid = task_pid_nr(current);
	stamp.uid = from_kuid_munged(&init_user_ns, current_uid());
	stamp.charge = kpp_charge_uid(current_cred());
	err = kpp_ring_output(rb, buf, len, &stamp);
	goto out;

err_reject_free:
	atomic64_inc(&rb->rejected);
out:
	if (buf == small)
		return err;
	if (cached)
		kmem_cache_free(kpp_dev.rec_cache, buf);
	else
		kfree(buf);
	return err;

err_reject:
	atomic64_inc(&rb->rejected);
	return err;
}

static ssize_t kpp_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	int err = kpp_submit(file, ubuf, len);

	return err ? err : len;
}

/*
 * KPPROF_IOC_SUBMIT: the record's own size field says how many bytes to
 * take, so one ioctl carries one record.  Unlike write(2), an ioctl number
 * means nothing to any other file (ENOTTY), so a producer whose fd number
 * was reused by the program cannot write a record into the program's file.
 */
static long kpp_ioctl_submit(struct file *file, const void __user *uarg)
{
	const struct kpprof_record __user *urec = uarg;
	u32 size;

	if (get_user(size, &urec->size))
		return -EFAULT;
	return kpp_submit(file, uarg, size);
}

/* Copy an output struct of @ksize bytes to a caller's struct of @usize. */
static int kpp_copy_struct_out(void __user *uarg, size_t usize,
			       const void *karg, size_t ksize)
{
	if (copy_to_user(uarg, karg, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uarg + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

static long kpp_ioctl_get_info(void __user *uarg, size_t usize)
{
	struct kpprof_info info = {
		.abi_version = KPPROF_ABI_VERSION,
		.page_size = PAGE_SIZE,
		.features = KPPROF_FEAT_CONFIG_PAGE | KPPROF_FEAT_RING_MMAP |
			    KPPROF_FEAT_FORMAT_TEXT | KPPROF_FEAT_SUBMIT_IOCTL |
			    KPPROF_FEAT_PRING | KPPROF_FEAT_DOORBELL |
			    KPPROF_FEAT_SECCOMP_PROBE |
			    KPPROF_FEAT_SECCOMP_PROBE_GROUP,
		.ring_size = kpp_dev.ring.size,
		.max_record_size = KPP_RECORD_SIZE_MAX,
		.producer_gid = READ_ONCE(kpp_dev.producer_gid),
		.producer_share = kpp_dev.ring.share_max,
		.cons_pgoff = KPPROF_PGOFF_CONSUMER,
		.prod_pgoff = KPPROF_PGOFF_PRODUCER,
		.pring_pgoff = KPPROF_PGOFF_PRING,
		.pring_size = kpp_dev.pring_size,
		.pring_data_off = PAGE_SIZE,
		.pring_map_len = PAGE_SIZE + 2 * kpp_dev.pring_size,
		.pring_total_max = kpp_dev.pring_total_max,
		.doorbell_pgoff = KPPROF_PGOFF_DOORBELL,
		.doorbell_map_len = kpp_doorbell_map_len(),
		.probe_pgoff = KPPROF_PGOFF_SECCOMP_PROBE,
		.probe_map_len = kpp_probe_map_len(),
	};

	return kpp_copy_struct_out(uarg, usize, &info, sizeof(info));
}

static long kpp_ioctl_get_config(void __user *uarg, size_t usize)
{
	struct kpprof_config cfg;

	kpp_config_get(&kpp_dev.config, &cfg);
	return kpp_copy_struct_out(uarg, usize, &cfg, sizeof(cfg));
}

static long kpp_ioctl_set_config(void __user *uarg, size_t usize)
{
	struct kpprof_config cfg;
	int err;

	err = copy_struct_from_user(&cfg, sizeof(cfg), uarg, usize);
	if (err)
		return err;
	return kpp_config_set(&kpp_dev.config, &cfg);
}

static long kpp_ioctl_get_stats(void __user *uarg, size_t usize)
{
	struct kpprof_stats st;

	memset(&st, 0, sizeof(st));
	kpp_ring_stats(&kpp_dev.ring, &st);
	st.consumer_attached = !!READ_ONCE(kpp_dev.consumer);
	st.pring_count = atomic_read(&kpp_dev.pring_count);
	st.pring_drained = atomic64_read(&kpp_dev.pring_drained);
	st.pring_lost = kpp_pring_lost_total();
	st.pring_invalid = atomic64_read(&kpp_dev.pring_invalid);
	st.pring_refused = atomic64_read(&kpp_dev.pring_refused);
	st.pring_doorbells = atomic64_read(&kpp_dev.pring_doorbells);
	return kpp_copy_struct_out(uarg, usize, &st, sizeof(st));
}

static long kpp_ioctl_get_format(void __user *uarg, size_t usize)
{
	struct kpprof_format_arg arg;
	int err;

	err = copy_struct_from_user(&arg, sizeof(arg), uarg, usize);
	if (err)
		return err;

	/* @len is output only: a probe's answer may come back in it */
	arg.len = kpp_dev.format_len;
	if (arg.size <= kpp_dev.format_len) {
		if (kpp_copy_struct_out(uarg, usize, &arg, sizeof(arg)))
			return -EFAULT;
		return -ENOSPC;
	}
	if (copy_to_user(u64_to_user_ptr(arg.buf), kpp_dev.format,
			 kpp_dev.format_len + 1))
		return -EFAULT;
	return kpp_copy_struct_out(uarg, usize, &arg, sizeof(arg));
}

static long kpp_ioctl_advance_cycle(void __user *uarg)
{
	u64 cycle;

	/* a bad pointer fails before the cycle moves, so a retry is safe */
	if (put_user(0ULL, (u64 __user *)uarg))
		return -EFAULT;
	/* what producers committed before the cycle ends belongs to it */
	kpp_pring_drain_all();
	cycle = kpp_ring_advance_cycle(&kpp_dev.ring, 1, true);

	kpp_config_publish_cycle(&kpp_dev.config, cycle);
	return put_user(cycle, (u64 __user *)uarg);
}

/*
 * The consumer's ring starts at the first entry no earlier consumer read
 * (kpp_ring_attach()), and the cycle timer runs while it is attached.
 */
static long kpp_ioctl_attach(struct file *file)
{
	long ret = 0;

	mutex_lock(&kpp_dev.consumer_lock);
	if (kpp_dev.consumer == file) {
		ret = 0;
	} else if (kpp_dev.consumer) {
		ret = -EBUSY;
	} else {
		kpp_ring_attach(&kpp_dev.ring);
		WRITE_ONCE(kpp_dev.consumer, file);
		kpp_config_timer_start(&kpp_dev.config);
		kpp_pring_drain_start();
	}
	mutex_unlock(&kpp_dev.consumer_lock);
	return ret;
}

/*
 * kpp_consumer_detach - stop being the consumer; false if @file is not.
 *
 * The ring's pages (pgoff 1 up to KPPROF_PGOFF_PRING) can only be mapped
 * through the consumer file, so every mapping of them is the departing
 * consumer's: they are zapped, and a later access is SIGBUS (no ->fault),
 * so it can neither read the next consumer's records nor write its
 * cons_pos.  They are VM_IO (kpp_ring_vm_flags()): no get_user_pages()
 * pin outlives the zap, and MADV_DOFORK cannot hand them to a child.
 * kpp_mmap() fills them under @consumer_lock, so no ->mmap of ours runs
 * while we zap; but
 * mmap_region() links the new VMA into the file's i_mmap only after
 * ->mmap returns, so a mmap() by the departing consumer itself, racing
 * with its own detach, can keep that one mapping (closing this needs the
 * pages mapped at fault time, under @consumer_lock).
 */
static bool kpp_consumer_detach(struct file *file)
{
	bool was = false;

	/* the consumer's largest mappings end below the producer rings */
	BUILD_BUG_ON(KPPROF_PGOFF_PRODUCER + 1 +
		     2 * (KPP_RING_SIZE_MAX >> PAGE_SHIFT) > KPPROF_PGOFF_PRING);
	mutex_lock(&kpp_dev.consumer_lock);
	if (kpp_dev.consumer == file) {
		WRITE_ONCE(kpp_dev.consumer, NULL);
		kpp_config_timer_stop(&kpp_dev.config);
		kpp_pring_drain_stop();
		/*
		 * Only the consumer's offsets: every file of the device
		 * shares f_mapping, so a hole to the end of the file would
		 * also zap every producer's ring (no ->fault: SIGBUS at its
		 * next record) and doorbell, in every process.
		 */
		unmap_mapping_range(file->f_mapping,
				    (loff_t)KPPROF_PGOFF_CONSUMER << PAGE_SHIFT,
				    (loff_t)(KPPROF_PGOFF_PRING -
					     KPPROF_PGOFF_CONSUMER) << PAGE_SHIFT,
				    1);
		was = true;
	}
	mutex_unlock(&kpp_dev.consumer_lock);
	return was;
}

static long kpp_ioctl_detach(struct file *file)
{
	return kpp_consumer_detach(file) ? 0 : -EINVAL;
}

/*
 * Sizes an extensible argument may have: VER0 up to a page.  As clone3()
 * and openat2(): a size above the page is E2BIG, one below VER0 EINVAL.
 */
static int kpp_usize_check(size_t usize, size_t ver0)
{
	if (usize > PAGE_SIZE)
		return -E2BIG;
	if (usize < ver0)
		return -EINVAL;
	return 0;
}

static long kpp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	int err;

	BUILD_BUG_ON(sizeof(struct kpprof_config) != KPPROF_CONFIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct kpprof_info) != KPPROF_INFO_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct kpprof_stats) != KPPROF_STATS_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct kpprof_format_arg) != KPPROF_FORMAT_ARG_SIZE_VER0);

	/* commands without a size first: they must match exactly */
	switch (cmd) {
	case KPPROF_IOC_ADVANCE_CYCLE:
		if (!perfmon_capable())
			return -EPERM;
		return kpp_ioctl_advance_cycle(uarg);
	case KPPROF_IOC_CONSUMER_ATTACH:
		if (!perfmon_capable())
			return -EPERM;
		/*
		 * Records name processes by their pids in the initial pid
		 * namespace (task_tgid_nr()); a consumer in another would take
		 * them for its own namespace's: show a client, and open files
		 * through, processes that did not write them.
		 */
		if (task_active_pid_ns(current) != &init_pid_ns)
			return -EXDEV;
		return kpp_ioctl_attach(file);
	case KPPROF_IOC_SUBMIT:
	case KPPROF_IOC_SUBMIT_V2:
		return kpp_ioctl_submit(file, uarg);
	case KPPROF_IOC_DRAIN:
		if (!perfmon_capable())
			return -EPERM;
		kpp_pring_drain_all();
		return 0;
	case KPPROF_IOC_KICK:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		if (!((struct kpp_file *)file->private_data)->producer)
			return -EPERM;
		kpp_pring_kick();
		return 0;
	case KPPROF_IOC_CONSUMER_DETACH:
		return kpp_ioctl_detach(file);
	}

	switch (KPP_IOC_BASE(cmd)) {
	case KPP_IOC_BASE(KPPROF_IOC_GET_INFO):
		err = kpp_usize_check(usize, KPPROF_INFO_SIZE_VER0);
		if (err)
			return err;
		return kpp_ioctl_get_info(uarg, usize);
	case KPP_IOC_BASE(KPPROF_IOC_GET_CONFIG):
		err = kpp_usize_check(usize, KPPROF_CONFIG_SIZE_VER0);
		if (err)
			return err;
		return kpp_ioctl_get_config(uarg, usize);
	case KPP_IOC_BASE(KPPROF_IOC_SET_CONFIG):
		err = kpp_usize_check(usize, KPPROF_CONFIG_SIZE_VER0);
		if (err)
			return err;
		if (!perfmon_capable())
			return -EPERM;
		return kpp_ioctl_set_config(uarg, usize);
	case KPP_IOC_BASE(KPPROF_IOC_GET_STATS):
		err = kpp_usize_check(usize, KPPROF_STATS_SIZE_VER0);
		if (err)
			return err;
		if (!perfmon_capable())
			return -EPERM;
		return kpp_ioctl_get_stats(uarg, usize);
	case KPP_IOC_BASE(KPPROF_IOC_GET_FORMAT):
		err = kpp_usize_check(usize, KPPROF_FORMAT_ARG_SIZE_VER0);
		if (err)
			return err;
		return kpp_ioctl_get_format(uarg, usize);
	default:
		return -ENOTTY;
	}
}

static int kpp_mmap(struct file *file, struct vm_area_struct *vma)
{
	int err;

	if (vma->vm_pgoff == KPPROF_PGOFF_CONFIG)
		return kpp_config_mmap(&kpp_dev.config, vma);
	if (vma->vm_pgoff == KPPROF_PGOFF_PRING)
		return kpp_pring_mmap(file->private_data, file, vma);
	if (vma->vm_pgoff == KPPROF_PGOFF_DOORBELL)
		return kpp_doorbell_mmap(file->private_data, file, vma);
	if (vma->vm_pgoff == KPPROF_PGOFF_SECCOMP_PROBE)
		return kpp_probe_mmap(vma);
	if (vma->vm_pgoff != KPPROF_PGOFF_CONSUMER &&
	    vma->vm_pgoff != KPPROF_PGOFF_PRODUCER)
		return -EINVAL;

	/* not while a detach zaps the ring's mappings */
	mutex_lock(&kpp_dev.consumer_lock);
	if (kpp_dev.consumer != file)
		err = -EPERM;
	else if (vma->vm_pgoff == KPPROF_PGOFF_CONSUMER)
		err = kpp_ring_mmap_consumer(&kpp_dev.ring, vma);
	else
		err = kpp_ring_mmap_producer(&kpp_dev.ring, vma);
	mutex_unlock(&kpp_dev.consumer_lock);
	return err;
}

/* Could the caller attach as the consumer (KPPROF_IOC_CONSUMER_ATTACH)? */
static bool kpp_may_consume(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_PERFMON) ||
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

static __poll_t kpp_poll(struct file *file, struct poll_table_struct *pts)
{
	struct kpp_ring *rb = &kpp_dev.ring;

	/*
	 * The consumer, and a poller that may become it: an epoll set that
	 * adds the file before CONSUMER_ATTACH hooks onto the ring's waitqueue
	 * only here (ep_insert()), never again.  Nobody else: each entry on
	 * that waitqueue makes every write over the watermark wake and walk
	 * it, and any user can list one fd in poll() RLIMIT_NOFILE times (or
	 * in as many epoll sets as max_user_watches allows).
	 */
	if (!poll_does_not_wait(pts) &&
	    (kpp_is_consumer(file) || kpp_may_consume()))
		poll_wait(file, &rb->waitq, pts);
	if (!kpp_is_consumer(file))
		return EPOLLOUT | EPOLLWRNORM;
	/* the consumer's context: release what it has read, drain producers */
	kpp_ring_reclaim_all(rb);
	kpp_pring_drain_all();
	/* with the barrier that orders poll_wait() before the ring's loads */
	if (kpp_ring_poll(rb))
		return EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM;
	return EPOLLOUT | EPOLLWRNORM;
}

static int kpp_release(struct inode *inode, struct file *file)
{
	kpp_consumer_detach(file);
	/* the last close: no mapping is left, the ring's last records go now */
	kpp_pring_release(file->private_data);
	kfree(file->private_data);
	return 0;
}

static const struct file_operations kpp_fops = {
	.owner = THIS_MODULE,
	.open = kpp_open,
	.write = kpp_write,
	.unlocked_ioctl = kpp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kpp_mmap,
	.poll = kpp_poll,
	.release = kpp_release,
};

static struct miscdevice kpp_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kpprof",
	.fops = &kpp_fops,
	.mode = 0666,
};

int kpp_dev_register(void)
{
	return misc_register(&kpp_miscdev);
}

void kpp_dev_unregister(void)
{
	misc_deregister(&kpp_miscdev);
}
