// SPDX-License-Identifier: GPL-2.0
/*
 * kpprof: module init and exit, and the module parameters.  The device
 * is registered last, once everything it serves exists, and unregistered
 * first.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include "kpp.h"

struct kpp_dev kpp_dev;

static unsigned long ring_size = KPP_RING_SIZE_DEFAULT;
module_param(ring_size, ulong, 0444);
MODULE_PARM_DESC(ring_size,
		 "bytes of ring data: a power of two, 64 KiB .. 1 GiB (default 4 MiB)");

static unsigned long wakeup_watermark = 64 * 1024;
module_param(wakeup_watermark, ulong, 0444);
MODULE_PARM_DESC(wakeup_watermark,
		 "unread bytes that wake the consumer (clamped to ring_size / 2)");

/*
 * Half the ring: one user flooding it leaves the other half to everybody
 * else, and one busy user (most profiled services run as one) still has
 * half the ring for a burst the collector has not read yet.
 */
static unsigned int producer_share = 50;
module_param(producer_share, uint, 0444);
MODULE_PARM_DESC(producer_share,
		 "percent of the ring one uid's unread records may take, 1 .. 100 (default 50)");

/*
 * 64 KiB per sampling process: about 300 stack records of 16 frames, which
 * the drain every drain_period_ms (10) empties: 30,000 records/s per
 * process before a loss, a hundred times what 512 KiB sampling makes of a
 * process allocating 1 GB/s, in 68 KiB of its own memory cgroup.
 */
static unsigned long pring_size = KPP_PRING_SIZE_DEFAULT;
module_param(pring_size, ulong, 0444);
MODULE_PARM_DESC(pring_size,
		 "bytes of a producer ring: a power of two, 16 KiB .. 16 MiB (default 64 KiB)");

/* 256 MiB: some 3,800 sampling processes; beyond, producers use SUBMIT */
static unsigned long pring_total_max = SZ_256M;
module_param(pring_total_max, ulong, 0444);
MODULE_PARM_DESC(pring_total_max,
		 "bytes all producer rings may take together (default 256 MiB)");

/*
 * One uid's share of pring_total_max, so that no user (nor all the uids of
 * its user namespaces: the charge uid, as for the ring's shares) can take
 * every ring and push every other process back to SUBMIT.
 */
static unsigned long pring_uid_max;
module_param(pring_uid_max, ulong, 0444);
MODULE_PARM_DESC(pring_uid_max,
		 "bytes of producer rings one uid may take (default 0: pring_total_max / 8)");

/*
 * 10 ms: a ring holds 300 records, so a producer writing under 30,000/s is
 * never full; 100 short work items a second while a consumer is attached.
 */
static unsigned int drain_period_ms = 10;
module_param(drain_period_ms, uint, 0444);
MODULE_PARM_DESC(drain_period_ms,
		 "drain producer rings this often while a consumer is attached; 0: only at poll and cycle (default 10)");

static int producer_gid = -1;
module_param(producer_gid, int, 0444);
MODULE_PARM_DESC(producer_gid,
		 "only this group (and CAP_PERFMON) may write records; -1: anyone");

static int __init kpp_mod_init(void)
{
	int err;

	if (producer_gid < -1) {
		pr_err("producer_gid %d: must be -1 or a group id\n", producer_gid);
		return -EINVAL;
	}
	if (producer_share < 1 || producer_share > 100) {
		pr_err("producer_share %u: must be a percentage in [1, 100]\n",
		       producer_share);
		return -EINVAL;
	}
	/* under DEBUG: self-tests first, before anything is registered */
	if (!kpp_ring_selftest())
		return -ENOTRECOVERABLE;

	kpp_dev.producer_gid = producer_gid;
	mutex_init(&kpp_dev.consumer_lock);

	/*
	 * copy_from_user() fills these: whitelisted for hardened usercopy.
	 * No constructor: one would switch off init_on_alloc and
	 * init_on_free for the cache, overriding the admin's choice.
	 */
	kpp_dev.rec_cache = kmem_cache_create_usercopy("kpprof_record",
						       KPP_STACK_RECORD_SIZE_MAX,
						       8, 0, 0,
						       KPP_STACK_RECORD_SIZE_MAX,
						       NULL);
	if (!kpp_dev.rec_cache)
		return -ENOMEM;

	err = kpp_ring_init(&kpp_dev.ring, ring_size, wakeup_watermark,
			    (u64)ring_size * producer_share / 100);
	if (err) {
		if (err == -EINVAL)
			pr_err("ring_size %lu: must be a power of two in [%lu, %lu]\n",
			       ring_size, (unsigned long)KPP_RING_SIZE_MIN,
			       (unsigned long)KPP_RING_SIZE_MAX);
		goto err_ring;
	}

	err = kpp_pring_init(pring_size, pring_total_max,
			     pring_uid_max ?: pring_total_max / 8, drain_period_ms);
	if (err) {
		if (err == -EINVAL)
			pr_err("pring_size %lu: must be a power of two in [%lu, %lu]\n",
			       pring_size, (unsigned long)KPP_PRING_SIZE_MIN,
			       (unsigned long)KPP_PRING_SIZE_MAX);
		goto err_pring;
	}

	err = kpp_format_build(&kpp_dev.format, &kpp_dev.format_len);
	if (err)
		goto err_format;

	err = kpp_config_init(&kpp_dev.config);
	if (err)
		goto err_config;

	err = kpp_probe_init();
	if (err)
		goto err_probe;

	err = kpp_dev_register();
	if (err)
		goto err_device;

	pr_info("%s loaded: ABI %d, ring %lu KiB\n", KPPROF_VERSION,
		KPPROF_ABI_VERSION, ring_size / 1024);
	return 0;

err_device:
	kpp_probe_exit();
err_probe:
	kpp_config_free(&kpp_dev.config);
err_config:
	kfree(kpp_dev.format);
err_format:
	kpp_pring_exit();
err_pring:
	kpp_ring_free(&kpp_dev.ring);
err_ring:
	kmem_cache_destroy(kpp_dev.rec_cache);
	return err;
}

static void __exit kpp_mod_exit(void)
{
	kpp_dev_unregister();
	kpp_probe_exit();
	kpp_config_free(&kpp_dev.config);
	kfree(kpp_dev.format);
	kpp_pring_exit();
	kpp_ring_free(&kpp_dev.ring);
	kmem_cache_destroy(kpp_dev.rec_cache);
	pr_info("unloaded\n");
}

module_init(kpp_mod_init);
module_exit(kpp_mod_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kpprof: heap and lock contention profiler ring and configuration");
MODULE_AUTHOR("kpprof developers");
MODULE_VERSION(KPPROF_VERSION);
