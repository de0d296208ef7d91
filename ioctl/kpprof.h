/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kpprof UAPI: the one header shared by the kernel module (kmod/), the
 * preload shim and the collector (user/).  Everything that crosses the
 * user/kernel boundary is defined here and only here.
 *
 * The device
 * ==========
 * /dev/kpprof is a misc device.  Privilege is per operation, like perf:
 *
 *   operation                          who may do it
 *   ---------------------------------  ------------------------------------
 *   open(2)                            anyone
 *   KPPROF_IOC_SUBMIT or write(2) one  a file opened by anyone, or, with the
 *   record (producer)                  module parameter producer_gid, by a
 *                                      member of that group or a holder of
 *                                      CAP_PERFMON or CAP_SYS_ADMIN
 *   mmap config page (pgoff 0), r/o    anyone
 *   mmap the file's producer ring      a file that may submit (as SUBMIT),
 *   (kpprof_info.pring_pgoff), r/w     from one process only (EBUSY)
 *   KPPROF_IOC_GET_INFO                anyone
 *   KPPROF_IOC_GET_CONFIG              anyone
 *   KPPROF_IOC_GET_FORMAT              anyone
 *   KPPROF_IOC_SET_CONFIG              CAP_PERFMON or CAP_SYS_ADMIN
 *   KPPROF_IOC_ADVANCE_CYCLE           CAP_PERFMON or CAP_SYS_ADMIN
 *   KPPROF_IOC_GET_STATS               CAP_PERFMON or CAP_SYS_ADMIN
 *   KPPROF_IOC_CONSUMER_ATTACH         CAP_PERFMON or CAP_SYS_ADMIN, and
 *                                      only one file at a time (EBUSY),
 *                                      from the initial pid namespace
 *                                      (EXDEV): records carry its pids,
 *                                      checked at attach only (a file
 *                                      handed on reads the same pids)
 *   KPPROF_IOC_CONSUMER_DETACH         the attached consumer file only
 *   KPPROF_IOC_DRAIN                   CAP_PERFMON or CAP_SYS_ADMIN
 *   KPPROF_IOC_KICK (own rings only)   a file that may submit
 *   mmap the file's doorbell, r/o      a file that may submit
 *   mmap consumer page / ring, poll    the attached consumer file only
 *
 * Producer permission is decided once, when the file is opened, from the
 * opener's credentials (its groups and capabilities then): a file keeps
 * that decision whoever writes through it later.  A file opened by root
 * and kept across setuid(), or handed to an unprivileged helper, still
 * writes; a file opened by an outsider and handed to a setuid program does
 * not.  CAP_PERFMON (or CAP_SYS_ADMIN) at open() bypasses producer_gid.
 * The record's uid is the writer's at the time of the write.
 *
 * Fairness: the kernel charges the ring bytes of each unread record (its
 * entry: header, record, padding) to a bucket: one per uid for the first 64
 * uids with unread records, and one overflow bucket that every further uid
 * shares.  A bucket that holds h bytes may take a record of t more only if
 *
 *	h + t <= min(P, F / (A + 1))
 *
 * where P is kpprof_info.producer_share (module parameter producer_share, a
 * percentage of the ring, default 50), F the ring's free space and A the
 * number of other buckets holding unread records (with A = 0, only
 * h + t <= P); otherwise the record is dropped (ENOBUFS,
 * KPPROF_DROP_SHARE).  So:
 *   - one uid alone may hold P bytes of unread records;
 *   - whatever other uids do, a uid holding nothing is refused for its share
 *     only when F < (A + 1) * t; a flooder beside others stops at
 *     1 / (A + 1) of the free space, so it leaves a newcomer as much as it
 *     holds itself.  With the consumer reading nothing, n >= 1 uids that
 *     flood one after another leave F = 2 * (ring_size - P) / (n + 1) free,
 *     of which the next uid may take F / (n + 1): with the default 4 MiB ring
 *     and P = 50%, 466 KiB beside two flooders, 1 KiB beside 64.  Bytes come
 *     back as the consumer reads;
 *   - the uids beyond the first 64 are accounted together, as one bucket
 *     with one share: they can crowd each other out, but not the tracked
 *     uids, and no writer is ever unaccounted.
 * A bucket is kept while its uid has unread records: a service that always
 * has some keeps its own.  The uid charged is the writer's real uid, except
 * in a user namespace not made by root, whose uids (free to the user who
 * made it: a subuid range) are all charged to that user, the owner of the
 * outermost such namespace; the ring header's @charge_uid says which.
 *
 * Namespaces: every pid and uid the kernel writes (a record's tgid, tid,
 * uid, a COMM record's ppid, a ring entry's charge_uid) is in the initial
 * pid and user namespaces, whoever produces or consumes.  A consumer
 * needs CAP_PERFMON or CAP_SYS_ADMIN in the initial user namespace, so it
 * sees the whole machine and may translate ids into a container's view
 * itself (/proc/<pid>/status NSpid, uid_map); the kernel does not
 * translate into the consumer's namespaces, nor carry both views.
 *
 * Extensible structs follow the copy_struct_from_user() rule: each is
 * versioned by its size, which is encoded in the ioctl number; new members
 * are only ever appended, 64-bit aligned.  The kernel accepts any size
 * from KPPROF_<X>_SIZE_VER0 up to PAGE_SIZE: a shorter struct is
 * zero-extended, a longer one is accepted only if its tail is zero.  A
 * size below VER0 is EINVAL, one above PAGE_SIZE E2BIG (as clone3(2) and
 * openat2(2)).
 * Output structs are copied up to the caller's size, zero-filled.
 *
 * Memory map (offsets in pages of the device file; kpprof_info gives each
 * one, the constants below are today's values, not a promise).  No mapping
 * may be executable (mmap with PROT_EXEC: EPERM; mprotect: EACCES), nor
 * grown by mremap(); the consumer's two mappings and the producer ring are
 * not inherited across fork() (they are VM_IO, so madvise(MADV_DOFORK) on
 * them is EINVAL, and no get_user_pages() pin can hold them), left out of
 * core dumps (as perf's); the consumer's are revoked when the consumer
 * detaches; the config page and the seccomp probe
 * (KPPROF_PGOFF_SECCOMP_PROBE) are inherited.
 * The file is a stream: lseek(2), pread(2) and pwrite(2) are ESPIPE.
 *
 *   info.cons_pgoff    consumer page, read-write: __u64 cons_pos at offset 0
 *   info.prod_pgoff    producer page, read-only: __u64 prod_pos at offset 0,
 *                      then the data pages (ring_size bytes), read-only,
 *                      mapped twice in a row so a record that wraps the end
 *                      of the ring reads contiguously
 *   pgoff 0            config page, PROT_READ only: struct kpprof_config_page
 *   info.pring_pgoff   this file's producer ring (see The producer ring),
 *                      read-write, info.pring_map_len bytes
 *
 * A consumer maps cons_pgoff (one page) read-write and prod_pgoff (one page
 * plus 2 * ring_size bytes) read-only.
 *
 * The producer ring (ABI 3)
 * =========================
 * A record costs its producer no syscall: each open file of /dev/kpprof
 * may map a ring of its own, and the kernel drains it into the consumer's
 * ring.  The ring is allocated at the file's first mmap of pring_pgoff
 * (info.pring_size data bytes, module parameter pring_size, a power of
 * two), charged to the mapping process's memory cgroup, and bounded in
 * all by info.pring_total_max (module parameter pring_total_max) and for
 * one uid (the charge uid of Fairness: a user namespace's uids count as
 * its creator's) by module parameter pring_uid_max (default one eighth of
 * pring_total_max), so no user can take every ring: past either the mmap
 * fails with ENOMEM (counted in kpprof_stats.pring_refused) and the
 * producer falls back to KPPROF_IOC_SUBMIT.  The mapping must be
 * MAP_SHARED, exactly info.pring_map_len bytes, PROT_READ | PROT_WRITE;
 * it is never inherited by a child (VM_DONTCOPY): a child opens its own
 * file.  Only the process that first mapped a file's ring may map it
 * again (another one: EBUSY), and the file must be one that may submit
 * (opened for writing: EACCES; producer_gid: EPERM).
 *
 *   offset 0                  struct kpprof_pring_hdr (one page)
 *   info.pring_data_off       data, pring_size bytes, mapped twice in a
 *                             row, as the consumer's ring
 *
 * Identity: every record drained from a ring is stamped with the tgid of
 * the process that mapped the ring (initial pid namespace) and its real
 * uid (initial user namespace) at the time of that mmap: a later setuid()
 * does not change it, as a file's producer permission is decided at open.
 * tid is 0 (the kernel does not know which thread wrote a record) and cpu
 * is the CPU that drained it.  Nothing in the ring is identity.  So that
 * only the mapper can write what bears its tgid, a process whose address
 * space is shared with another process (a clone(CLONE_VM) child or parent,
 * a vfork child before its exec) cannot map a ring (EBUSY: SUBMIT stamps
 * the caller), and a ring whose mm comes to be shared later delivers
 * nothing more: what is in it is emptied and counted as a reset.
 *
 * Producer protocol (the shim's threads, any number, no lock): an entry is
 * a struct kpprof_ring_hdr, the record, zero padding to 8 bytes, as in the
 * consumer's ring.  To write a record of len bytes (total = 8 + len
 * rounded up to 8):
 *   1. h = load-acquire(head); t = load-acquire(tail); if h + total - t >
 *      pring_size, the ring is full: add 1 to lost[kind] (atomically) and
 *      drop the record; else compare-and-swap head from h to h + total
 *      (retry from 1 on failure).
 *   2. at data[h & (pring_size - 1)]: store len | KPPROF_RING_BUSY into the
 *      entry's len, write the record and the padding;
 *   3. commit: store-release len into the entry's len (BUSY clear), or
 *      len | KPPROF_RING_DISCARD to give the entry up (skipped, uncounted).
 * The kernel zeroes every byte it has drained before it moves tail past
 * it, so a reserved entry whose len still reads 0 is not written yet.
 *
 * The drain (in the consumer's context: its poll(2), KPPROF_IOC_DRAIN, the
 * cycle work, a work item every drain_period_ms while a consumer is
 * attached, every jiffy while it finds a ring at least a quarter full;
 * and at the last close of the file, with or without consumer, so a
 * process's last records survive its exit; a producer has no way to ask
 * for one, and needs no syscall once its ring is mapped) reads each ring in ring
 * order up to the first entry not committed, copies each record into
 * kernel memory and validates it exactly as SUBMIT does: a malformed
 * record is skipped and counted (kpprof_rec_lost.invalid).  The header and
 * the data are the producer's to scribble on: a head the kernel cannot
 * believe (more than pring_size ahead of tail, or not a multiple of 8) or
 * an entry length it cannot believe empties the ring, counted in @resets;
 * either way only that producer's records are lost.  An entry that stays
 * reserved and uncommitted for 2 s (its writer jumped out of the write, or
 * is stopped) is skipped and counted as invalid, so it cannot block its
 * ring for the life of the process; a writer that was only slow then
 * writes over space given back, and can corrupt only its own later
 * records, which the drain refuses.  Rings are drained
 * round-robin, a few records each per pass, so one producer's backlog
 * never delays another's.  A record the consumer's ring has no room for
 * stays in the producer's ring (its producer alone sees a full ring); the
 * consumer ring's per-uid buckets (see Fairness) apply to drained records
 * too, by the mapper's uid.
 *
 * Losses reach the collector in band: when a ring's lost[] counters or the
 * kernel's invalid/reset counts for it have moved, the drain writes a
 * KPPROF_REC_LOST record stamped with that producer's tgid and uid.
 *
 * The ring
 * ========
 * Positions only grow; the byte at position p is at data[p & (ring_size - 1)].
 * Each entry is a struct kpprof_ring_hdr followed by len bytes of record and
 * padding up to a multiple of 8.  The consumer reads entries from cons_pos
 * while cons_pos < prod_pos (prod_pos loaded with acquire semantics); an
 * entry whose len has KPPROF_RING_BUSY set is still being written: stop
 * there and retry later.  An entry with KPPROF_RING_DISCARD set is skipped.
 * After reading, the consumer stores the new cons_pos with release
 * semantics.  Space is reclaimed once cons_pos has moved past an entry (the
 * kernel notices on a later write).  Each attach starts the new consumer's
 * cons_pos at the first entry no earlier consumer read, on an entry
 * boundary, whatever the last one left there.
 *
 * Records are in ring order by reservation, which is cycle order; time_ns
 * is taken after the reservation, so two records from different CPUs can
 * have time_ns in the opposite order of their ring order.  Sort by time_ns
 * if you need time order; never assume it from ring order.
 *
 * Wake-ups: poll(2) on the consumer file reports POLLIN when the entry at
 * cons_pos is complete; an epoll set may add the file before or after
 * KPPROF_IOC_CONSUMER_ATTACH.  A producer wakes a sleeping consumer once
 * wakeup_watermark bytes (module parameter) are unread; a cycle record
 * always wakes it, and the cycle timer wakes it for anything pending.  With
 * cycle_period_ms 0, fewer unread bytes than the watermark do not end a
 * poll() without a timeout.
 */
#ifndef _UAPI_KPPROF_H
#define _UAPI_KPPROF_H

#include <linux/types.h>
#include <linux/ioctl.h>
#include <linux/const.h>

/*
 * 2: KPPROF_IOC_SUBMIT (KPPROF_FEAT_SUBMIT_IOCTL).  Version 1 shims, which
 * write(2) their records, are still served.
 * 3: producer rings (KPPROF_FEAT_PRING), KPPROF_REC_LOST, the mmap layout
 * in kpprof_info, KPPROF_IOC_SUBMIT as _IOW (the _IO number of ABI 2 is
 * still accepted), KPPROF_IOC_DRAIN, kpprof_record.version (ABI 2's
 * __u16 kind split in two), kpprof_config_page.size.
 */
#define KPPROF_ABI_VERSION	3
#define KPPROF_DEVICE_PATH	"/dev/kpprof"

/* ---------------------------------------------------------------- limits */

/* Deepest stack a record may carry, and the default configured depth. */
#define KPPROF_STACK_DEPTH_MAX		128
#define KPPROF_STACK_DEPTH_DEFAULT	64
/* Longest path a mapping record may carry, NUL included. */
#define KPPROF_PATH_MAX			4096
#define KPPROF_BUILD_ID_MAX		20
#define KPPROF_COMM_LEN			16

/* Defaults, as in Go: 512 KiB between heap samples; contention off. */
#define KPPROF_MEM_RATE_DEFAULT		(512 * 1024)
#define KPPROF_CYCLE_PERIOD_MS_DEFAULT	1000
/* cycle_period_ms is 0 (timer off) or in [MIN, MAX]. */
#define KPPROF_CYCLE_PERIOD_MS_MIN	10
#define KPPROF_CYCLE_PERIOD_MS_MAX	3600000

/* ------------------------------------------------------------ config */

/* Bits of kpprof_config.flags: which profiles producers should feed. */
#define KPPROF_CFG_HEAP		_BITUL(0)
#define KPPROF_CFG_BLOCK	_BITUL(1)
#define KPPROF_CFG_MUTEX	_BITUL(2)
#define KPPROF_CFG_ALL		(KPPROF_CFG_HEAP | KPPROF_CFG_BLOCK | \
				 KPPROF_CFG_MUTEX)

/**
 * struct kpprof_config - the sampling configuration
 * @mem_rate:        mean bytes between heap samples (Poisson); 1 samples
 *                   every allocation; 0 turns heap sampling off.
 *                   At most 1 << 40.
 * @block_rate:      block profile rate in ns: a wait of d >= rate is always
 *                   recorded, a shorter one with probability d / rate;
 *                   0 is off.  At most 1 << 40.
 * @mutex_fraction:  each contended hand-off is recorded with probability
 *                   1 / mutex_fraction; 0 is off.
 * @max_stack_depth: frames producers capture, 1 .. KPPROF_STACK_DEPTH_MAX;
 *                   records deeper than this are rejected.
 * @cycle_period_ms: period of the timer that advances the cycle; 0 stops
 *                   the timer, otherwise in [KPPROF_CYCLE_PERIOD_MS_MIN,
 *                   KPPROF_CYCLE_PERIOD_MS_MAX].  The timer runs only
 *                   while a consumer is attached.
 * @flags:           KPPROF_CFG_* bits; a profile is sampled only when its
 *                   bit is set and its rate is non-zero.  Unknown bits:
 *                   EINVAL.
 * @reserved:        must be zero.
 *
 * SET_CONFIG validates every field first and changes nothing on EINVAL.
 */
struct kpprof_config {
	__u64 mem_rate;
	__u64 block_rate;
	__u32 mutex_fraction;
	__u32 max_stack_depth;
	__u32 cycle_period_ms;
	__u32 flags;
	__u64 reserved[2];
};

#define KPPROF_CONFIG_SIZE_VER0	48	/* sizeof first published struct */

/**
 * struct kpprof_config_page - what pgoff 0 of the device maps, read-only
 * @seq:         generation counter, a seqcount: odd while the kernel is
 *               updating @config, incremented by 2 per update.  Readers
 *               load @seq with acquire semantics, copy @config, then issue
 *               an acquire fence (__atomic_thread_fence(__ATOMIC_ACQUIRE);
 *               it orders the copy's loads before the next load), load
 *               @seq again and retry if it was odd or changed.  A shim
 *               caches the last even value it saw and re-reads only when
 *               it changes.
 * @abi_version: KPPROF_ABI_VERSION.
 * @cycle:       the current cycle, for information only; it never goes
 *               backwards.
 * @config:      the configuration in force.
 * @size:        bytes of this struct the kernel fills in
 *               (sizeof(struct kpprof_config_page) of the module; at
 *               least KPPROF_CONFIG_PAGE_SIZE_VER1).  It never changes
 *               while the module is loaded.  Members are only appended;
 *               a reader uses those that end within @size and takes
 *               the rest as zero.  An ABI 2 module leaves it 0 (the
 *               page's remaining bytes were zero): then the struct is
 *               the first 64 bytes.
 * @reserved:    zero.
 */
struct kpprof_config_page {
	__u32 seq;
	__u32 abi_version;
	__u64 cycle;
	struct kpprof_config config;
	/* end of VER0 (ABI 2) */
	__u32 size;
	__u32 reserved;
};

#define KPPROF_CONFIG_PAGE_SIZE_VER0	64
#define KPPROF_CONFIG_PAGE_SIZE_VER1	72	/* ABI 3: @size */

/* ------------------------------------------------------------ info */

/* Feature bits of kpprof_info.features. */
#define KPPROF_FEAT_CONFIG_PAGE	_BITULL(0)
#define KPPROF_FEAT_RING_MMAP	_BITULL(1)
#define KPPROF_FEAT_FORMAT_TEXT	_BITULL(2)
#define KPPROF_FEAT_SUBMIT_IOCTL	_BITULL(3)
#define KPPROF_FEAT_PRING	_BITULL(4)
#define KPPROF_FEAT_DOORBELL	_BITULL(5)
#define KPPROF_FEAT_SECCOMP_PROBE	_BITULL(6)
/* the seccomp probe answers for the faulting thread's group, not the thread */
#define KPPROF_FEAT_SECCOMP_PROBE_GROUP	_BITULL(7)

/**
 * struct kpprof_info - what the module is (output only)
 * @abi_version:     KPPROF_ABI_VERSION of the module.
 * @page_size:       the kernel's PAGE_SIZE, the unit of mmap offsets.
 * @features:        KPPROF_FEAT_* bits.
 * @ring_size:       bytes of ring data (a power of two).
 * @max_record_size: largest record write(2) accepts, in bytes.
 * @producer_gid:    group allowed to write records, or -1 for anyone.
 * @producer_share:  ring bytes the unread records of one uid may take at
 *                   most (less while other uids hold records: see
 *                   Fairness); a record beyond it is dropped
 *                   (KPPROF_DROP_SHARE).
 * @cons_pgoff:      page offset of the consumer page.
 * @prod_pgoff:      page offset of the producer page (data pages follow).
 * @pring_pgoff:     page offset of a file's producer ring.
 * @pring_size:      data bytes of a producer ring (a power of two).
 * @pring_data_off:  bytes from the start of a producer ring mapping to its
 *                   data (its struct kpprof_pring_hdr comes first).
 * @pring_map_len:   bytes a producer ring mapping must have:
 *                   pring_data_off + 2 * pring_size.
 * @pring_total_max: bytes all producer rings together may take; past it a
 *                   ring mmap fails with ENOMEM.
 * @doorbell_pgoff:  page offset of a file's doorbell (KPPROF_FEAT_DOORBELL;
 *                   0 from a module without it).
 * @doorbell_map_len: bytes a doorbell mapping must have (two pages).
 * @probe_pgoff:     page offset of the seccomp probe
 *                   (KPPROF_FEAT_SECCOMP_PROBE; 0 from a module without it).
 * @probe_map_len:   bytes a probe mapping must have (two pages); 0 from a
 *                   module without it.
 *
 * A later member is appended (the struct is versioned by its size).
 */
struct kpprof_info {
	__u32 abi_version;
	__u32 page_size;
	__u64 features;
	__u64 ring_size;
	__u32 max_record_size;
	__s32 producer_gid;
	__u64 producer_share;
	__u64 cons_pgoff;
	__u64 prod_pgoff;
	__u64 pring_pgoff;
	/* end of VER0 */
	__u64 pring_size;
	__u64 pring_data_off;
	__u64 pring_map_len;
	__u64 pring_total_max;
	/* in ABI 3's reserved bytes: zero from a module without the feature */
	__u64 doorbell_pgoff;
	__u64 doorbell_map_len;
	/* in ABI 3's last reserved bytes: zero from a module without it */
	__u64 probe_pgoff;
	__u64 probe_map_len;
};

#define KPPROF_INFO_SIZE_VER0	64
#define KPPROF_INFO_SIZE_VER1	128	/* ABI 3: the producer ring */

/* ------------------------------------------------------------ stats */

/* Why a record written with a valid size did not enter the ring. */
enum {
	KPPROF_DROP_RING_FULL = 0,	/* no room between prod and cons */
	KPPROF_DROP_DISABLED = 1,	/* the profile's flag is off */
	/* the writer's uid holds its share (kpprof_info.producer_share) */
	KPPROF_DROP_SHARE = 2,
	/*
	 * write(2) or SUBMIT found no kernel memory to copy the record into
	 * (ENOMEM), before reading or validating it
	 */
	KPPROF_DROP_NOMEM = 3,
	KPPROF_DROP_REASONS = 4		/* size of the array */
};

/**
 * struct kpprof_stats - ring and record statistics (output only)
 * @accepted:        records that entered the ring (producers' and the
 *                   kernel's own cycle records).
 * @accepted_bytes:  ring bytes those took, headers and padding included.
 * @dropped:         records not taken, by KPPROF_DROP_* reason: valid
 *                   ones, and (KPPROF_DROP_NOMEM) ones never read.
 * @rejected:        writes refused as malformed (EINVAL) or unprivileged.
 * @cycle:           the current cycle.
 * @prod_pos:        producer position.
 * @cons_pos:        consumer position.
 * @wakeups:         times the consumer was woken.
 * @consumer_attached: 1 if a consumer is attached.
 * @pring_count:     producer rings allocated now.
 * @pring_drained:   records drained from producer rings into the ring
 *                   (also counted in @accepted).
 * @pring_lost:      records producers reported dropped for a full ring of
 *                   their own: those the KPPROF_REC_LOST records delivered,
 *                   plus those still counted in rings and not yet
 *                   delivered (the consumer's ring full, or no consumer).
 *                   Producer-written counts: a counter a producer sets
 *                   back counts nothing; a ring's claim is believed up
 *                   to one record per nanosecond since its last report
 *                   (the excess is dropped and counted in
 *                   @pring_invalid and the ring's LOST.resets), so no
 *                   producer saturates the sum for the others; the sum
 *                   saturates at 2^64 - 1 rather than wrap.
 * @pring_invalid:   records the drain found malformed, plus ring resets
 *                   (a header or entry length it could not believe).
 * @pring_refused:   ring mmaps refused because pring_total_max, or the
 *                   uid's pring_uid_max, was reached.
 * @pring_doorbells: producers' kicks through a doorbell page (faults on
 *                   it, see KPPROF_PGOFF_DOORBELL); not in VER0.
 *
 * Once every entry is read: accepted == records read, and every record
 * offered was either accepted, dropped (by reason) or rejected.
 */
struct kpprof_stats {
	__u64 accepted;
	__u64 accepted_bytes;
	__u64 dropped[KPPROF_DROP_REASONS];
	__u64 rejected;
	__u64 cycle;
	__u64 prod_pos;
	__u64 cons_pos;
	__u64 wakeups;
	__u32 consumer_attached;
	__u32 pring_count;
	__u64 pring_drained;
	__u64 pring_lost;
	__u64 pring_invalid;
	__u64 pring_refused;
	/* end of VER0 */
	__u64 pring_doorbells;
};

#define KPPROF_STATS_SIZE_VER0	128
#define KPPROF_STATS_SIZE_VER1	136	/* @pring_doorbells */

/* ------------------------------------------------------------ format */

/**
 * struct kpprof_format_arg - fetch the record format text
 * @buf:  user pointer (cast through uintptr_t) to a buffer for the text.
 * @size: bytes available at @buf.
 * @len:  out: bytes of text, excluding the NUL the kernel appends; its
 *        input value is ignored, so the struct a size-0 probe filled in
 *        can be passed again with a bigger @size.  If @size <= the length
 *        nothing is copied, @len is still set and the ioctl fails with
 *        ENOSPC, so a caller can ask with size 0 first.
 *
 * The text is a sequence of ftrace-style event formats, one per record
 * kind, separated by a blank line, each parseable by libtraceevent's
 * tep_parse_format():
 *
 *   name: kpprof_alloc
 *   ID: 1
 *   format:
 *   (tab)field:unsigned short common_type;(tab)offset:0;(tab)size:2;...
 *
 *   print fmt: "..."
 */
struct kpprof_format_arg {
	__u64 buf;
	__u32 size;
	__u32 len;
};

#define KPPROF_FORMAT_ARG_SIZE_VER0	16

/* ------------------------------------------------------------ ioctls */

/*
 * 0xBA: free in Documentation/userspace-api/ioctl/ioctl-number.rst (6.1) and
 * in the UAPI headers of 6.12 (0xB7 is nsfs's and remoteproc's, 0xB8
 * Marvell's cn10k DPI's since 6.12).
 */
#define KPPROF_IOC_MAGIC	0xBA

#define KPPROF_IOC_GET_INFO	_IOR(KPPROF_IOC_MAGIC, 0x00, struct kpprof_info)
#define KPPROF_IOC_GET_CONFIG	_IOR(KPPROF_IOC_MAGIC, 0x01, struct kpprof_config)
#define KPPROF_IOC_SET_CONFIG	_IOW(KPPROF_IOC_MAGIC, 0x02, struct kpprof_config)
/*
 * Ends the current cycle now; the new cycle number is written to a __u64.
 * A pointer that cannot be written fails with EFAULT before the cycle moves.
 */
#define KPPROF_IOC_ADVANCE_CYCLE _IOR(KPPROF_IOC_MAGIC, 0x03, __u64)
#define KPPROF_IOC_GET_STATS	_IOR(KPPROF_IOC_MAGIC, 0x04, struct kpprof_stats)
#define KPPROF_IOC_GET_FORMAT	_IOWR(KPPROF_IOC_MAGIC, 0x05, struct kpprof_format_arg)
/* Makes this file the consumer; no argument. */
#define KPPROF_IOC_CONSUMER_ATTACH _IO(KPPROF_IOC_MAGIC, 0x06)
/*
 * Submits one record; the argument points at its struct kpprof_record,
 * whose @size says how many bytes follow.  Same rules and errors as
 * write(2) of the record (a descriptor opened without write access is
 * EBADF), but returns 0 on success.  A producer should use
 * it rather than write(2): on a file that is not /dev/kpprof (a reused fd
 * number) it fails with ENOTTY instead of writing into that file.
 */
#define KPPROF_IOC_SUBMIT	_IOW(KPPROF_IOC_MAGIC, 0x07, struct kpprof_record)
/* ABI 2's number for the same, still accepted */
#define KPPROF_IOC_SUBMIT_V2	_IO(KPPROF_IOC_MAGIC, 0x07)
/*
 * The consumer stops being the consumer (close(2) does the same); no
 * argument.  EINVAL on a file that is not the consumer.  Its mappings of
 * the ring (pgoff 1 onwards) are revoked: they stay in its address space,
 * but any access to them is SIGBUS, so it can neither read the next
 * consumer's records nor write its cons_pos.
 */
#define KPPROF_IOC_CONSUMER_DETACH _IO(KPPROF_IOC_MAGIC, 0x08)
/*
 * Drains every producer ring into the consumer's ring now (as far as it
 * has room); no argument.  The consumer's poll(2) and the cycle work do
 * the same; tests and a collector that wants everything now use this.
 */
#define KPPROF_IOC_DRAIN	_IO(KPPROF_IOC_MAGIC, 0x09)
/*
 * A producer's kick: drains the calling process's own producer rings now
 * (those its mm mapped; at most pring_size bytes of records each) into the
 * consumer's ring, on a file that may submit (as SUBMIT: EBADF, EPERM);
 * no argument.  A producer whose ring passes half full may kick once per
 * drain it saw (its tail moved), so a burst never waits for the periodic
 * drain: one syscall per hundreds of records.  A producer should kick
 * through its doorbell instead (KPPROF_PGOFF_DOORBELL), which costs no
 * syscall a seccomp filter could forbid.
 */
#define KPPROF_IOC_KICK		_IO(KPPROF_IOC_MAGIC, 0x0a)

/* ------------------------------------------------------------ ring */

#define KPPROF_PGOFF_CONFIG	0
#define KPPROF_PGOFF_CONSUMER	1
#define KPPROF_PGOFF_PRODUCER	2	/* producer page, then data x 2 */
/* a file's producer ring: far above the consumer's ring, whatever its size */
#define KPPROF_PGOFF_PRING	0x100000
/*
 * A file's doorbell (KPPROF_FEAT_DOORBELL): kpprof_info.doorbell_map_len
 * bytes (two pages) at kpprof_info.doorbell_pgoff, MAP_SHARED and
 * PROT_READ only (PROT_WRITE, PROT_EXEC, MAP_PRIVATE: EPERM or EINVAL; a
 * later mprotect() to write: EACCES), by a file that may submit (as
 * SUBMIT: EACCES, EPERM), never inherited by a fork child.  Reading a
 * page that is not mapped in is a kick (counted in
 * kpprof_stats.pring_doorbells): the kernel drains the caller's own rings
 * as KPPROF_IOC_KICK does (if another drain is running, it brings the
 * next one forward instead, to the next jiffy at the latest), maps that
 * page in (it reads as zero) and takes the other one out.  So a producer
 * that reads page 0, then page 1, then page 0 ... kicks once per read,
 * with no syscall: a page fault, which no seccomp filter can forbid.  A
 * read of the page the last kick mapped is no kick.
 */
#define KPPROF_PGOFF_DOORBELL	0x200000
/*
 * The seccomp probe (KPPROF_FEAT_SECCOMP_PROBE): has any thread of the
 * calling process (its thread group) a seccomp filter?  That is the
 * question with KPPROF_FEAT_SECCOMP_PROBE_GROUP; a module with
 * KPPROF_FEAT_SECCOMP_PROBE alone answers "has the faulting thread a
 * filter?" instead (see the end of this comment).  Asked without a
 * syscall, so a filter installed behind the shim's back (a raw `syscall`
 * instruction) cannot forbid the question.  kpprof_info.probe_map_len
 * bytes (two pages) at kpprof_info.probe_pgoff, MAP_SHARED and PROT_READ
 * only (PROT_WRITE, PROT_EXEC: EPERM; MAP_PRIVATE or another length:
 * EINVAL; a later mprotect() to write or execute: EACCES; mremap() cannot
 * grow it), by any file of the device (it tells a thread what
 * /proc/self/task/{tid}/status tells it).  Inherited across fork() at
 * the same address, with neither page mapped in the child (VM_WIPEONFORK:
 * MADV_KEEPONFORK on it, or MADV_DONTFORK, only spoils the caller's own
 * children's answers).
 * Reading a page that is not mapped in faults; the kernel maps that page
 * in and takes the other one out, and the page reads, at offset 0, a
 * __u32 that is 0 if no thread of the faulting thread's group has a
 * seccomp filter (every one SECCOMP_MODE_DISABLED) and non-zero if one
 * has (strict or filter mode), at an instant of the fault.  So a thread
 * that reads page 0, then page 1, then page 0 ... gets a fresh answer at
 * each read; a read of the page the last fault mapped repeats that
 * fault's answer, whichever thread faulted.  The answer is the group's
 * because the pages are the process's: a filter one thread installs
 * without SECCOMP_FILTER_FLAG_TSYNC binds that thread (and the threads
 * it creates afterwards) only, and makes every thread's later answers
 * non-zero.  A filter is never removed: while a filtered thread lives,
 * every answer is non-zero (a group leader that exited is there until
 * the whole group has); after its exit the answer may be 0 again.  A task
 * that shares the memory but not the thread group (a vfork() child,
 * clone(CLONE_VM) without CLONE_THREAD) faults the same pages with
 * answers for its own group, which a read of the other's repeats.
 * Without KPPROF_FEAT_SECCOMP_PROBE_GROUP, the same pages and the same
 * alternation, but a fault answers for the faulting thread alone: a read
 * of the page another thread's fault mapped gets that thread's answer,
 * so a thread whose filter went in without SECCOMP_FILTER_FLAG_TSYNC may
 * read 0.
 */
#define KPPROF_PGOFF_SECCOMP_PROBE	0x300000

#define KPPROF_RING_BUSY	0x80000000U
/*
 * Used by producer rings: a producer that reserved an entry and then
 * gives it up commits it with this bit (step 3 of the producer protocol);
 * the drain skips it, uncounted.  The kernel never sets it in the
 * consumer's ring today; a reader skips such an entry all the same.
 */
#define KPPROF_RING_DISCARD	0x40000000U
#define KPPROF_RING_LEN_MASK	0x3fffffffU

/* Slots of kpprof_pring_hdr.lost and kpprof_rec_lost.by_kind. */
#define KPPROF_LOST_KINDS	16

/**
 * struct kpprof_pring_hdr - the first page of a producer ring mapping
 * @head:      producers: the next free position (step 1 of the protocol).
 * @tail:      kernel: every entry before it is drained; positions only
 *             grow, the entry at p is at data[p & (pring_size - 1)].
 *             The kernel keeps its own copy and never reads this one.
 * @size:      kernel: pring_size, for information (never read back).
 * @data_off:  kernel: pring_data_off, for information.
 * @lost:      producers: records dropped because the ring was full, by
 *             record kind (lost[kind]; kinds >= KPPROF_LOST_KINDS in
 *             lost[0]).  Read by the drain, which reports what moved.
 *
 * @head and @tail are on cache lines of their own.  Everything in this
 * page may be written by the producer; the kernel reads only @head and
 * @lost, and believes neither beyond that producer's own records.
 */
struct kpprof_pring_hdr {
	__u64 head;
	__u64 pad0[7];
	__u64 tail;
	__u64 size;
	__u64 data_off;
	__u64 pad1[5];
	__u64 lost[KPPROF_LOST_KINDS];
};

/**
 * struct kpprof_ring_hdr - precedes every record in the ring
 * @len:   bytes of record that follow (before padding to 8), with the
 *         KPPROF_RING_BUSY and KPPROF_RING_DISCARD bits.
 * @charge_uid: the uid whose share of the ring the entry takes (see
 *         Fairness): the writer's, or the user who made its user namespace;
 *         zero in the kernel's KPPROF_REC_CYCLE records.
 */
struct kpprof_ring_hdr {
	__u32 len;
	__u32 charge_uid;
};

/* ------------------------------------------------------------ records */

/*
 * Record kinds.  A producer write(2)s exactly one whole record per call;
 * the ring carries the same bytes with the kernel-owned header fields
 * filled in.  KPPROF_REC_CYCLE is written by the kernel only.
 */
enum {
	KPPROF_REC_ALLOC = 1,	/* a sampled allocation, with its stack */
	KPPROF_REC_FREE = 2,	/* free of a sampled allocation */
	KPPROF_REC_BLOCK = 3,	/* block profile event: the waiter's stack */
	KPPROF_REC_MUTEX = 4,	/* mutex profile event: the unlocker's stack */
	KPPROF_REC_MMAP = 5,	/* a loaded object */
	KPPROF_REC_MUNMAP = 6,	/* an object unloaded */
	KPPROF_REC_COMM = 7,	/* process start/fork/exec: name the process */
	KPPROF_REC_CYCLE = 8,	/* kernel: cycle @cycle - 1 has ended */
	KPPROF_REC_NOTE = 9,	/* a producer's notice about itself */
	KPPROF_REC_LOST = 10,	/* kernel: a producer ring's losses */
	KPPROF_REC_KINDS
};

/*
 * Record versions.  ABI 2's kind was a __u16; ABI 3 splits it into @kind
 * and @version, so on a little-endian machine an ABI 2 record reads as
 * version 0 of the same kind.  Version 0 of each kind is the layout this
 * header describes.  A later version of a kind may only append fields to
 * its fixed part (before pcs[], path[] or comm[]), so the fixed part's
 * size, and with it the offset of the trailing array and the least
 * @size, follow from kind and version; nothing already here moves.  The
 * kernel refuses a version it does not know (a write or SUBMIT fails with
 * EINVAL, counted in kpprof_stats.rejected; in a producer ring the record
 * is skipped and counted as invalid); a reader must refuse one it does
 * not know, and count it, rather than read it as an older layout.  The
 * format text (KPPROF_IOC_GET_FORMAT) names the field common_version and
 * describes version 0 of each kind.
 */
#define KPPROF_REC_VERSION	0

/**
 * struct kpprof_record - the header every record starts with
 * @kind:    KPPROF_REC_*.
 * @version: the layout of the kind's fixed part (see Record versions);
 *           KPPROF_REC_VERSION (0), the layout described here, is the
 *           only one today.  Any other value is EINVAL.
 * @nr_pcs:  frames in the trailing pcs[] array (stack kinds), else 0;
 *           1 .. max_stack_depth for stack kinds.
 * @size:    total bytes of the record, this header included; a multiple
 *           of 8 and equal to the write(2) count.
 * @tgid:    kernel-owned: process id (initial pid namespace).
 * @tid:     kernel-owned: thread id (initial pid namespace).
 * @uid:     kernel-owned: real uid (initial user namespace).
 * @cpu:     kernel-owned: CPU the record entered the ring on.
 * @time_ns: kernel-owned: CLOCK_MONOTONIC when the kernel accepted it;
 *           not monotonic in ring order across CPUs (see The ring).
 * @cycle:   kernel-owned: the cycle in which the kernel accepted it.
 *
 * Kernel-owned fields must be zero in a write; any other value is EINVAL
 * (a record cannot claim an identity).  The kernel fills them in.
 */
struct kpprof_record {
	__u8 kind;
	__u8 version;
	__u16 nr_pcs;
	__u32 size;
	__u32 tgid;
	__u32 tid;
	__u32 uid;
	__u32 cpu;
	__u64 time_ns;
	__u64 cycle;
};

/**
 * struct kpprof_rec_alloc - KPPROF_REC_ALLOC: one sampled allocation
 * @hdr:   header, kind KPPROF_REC_ALLOC, nr_pcs >= 1.
 * @addr:  address returned to the program; non-zero.
 * @bytes: bytes the program asked for.
 * @rate:  mem_rate the producer sampled with (>= 1), for unbiasing.
 * @pcs:   absolute return addresses, leaf (caller of malloc) first; each
 *         non-zero and below the end of user space.
 */
struct kpprof_rec_alloc {
	struct kpprof_record hdr;
	__u64 addr;
	__u64 bytes;
	__u64 rate;
	__u64 pcs[];
};

/**
 * struct kpprof_rec_free - KPPROF_REC_FREE: a sampled allocation freed
 * @hdr:   header, kind KPPROF_REC_FREE, nr_pcs 0.
 * @addr:  the address of an allocation the same process sampled; non-zero.
 * @bytes: the size it was sampled with.
 */
struct kpprof_rec_free {
	struct kpprof_record hdr;
	__u64 addr;
	__u64 bytes;
};

/**
 * struct kpprof_rec_contention - KPPROF_REC_BLOCK and KPPROF_REC_MUTEX
 * @hdr:    header, nr_pcs >= 1.
 * @delay_ns: how long the waiter waited (BLOCK), or how long the waiters
 *          of this hand-off waited in all (MUTEX); non-zero.
 * @rate:   BLOCK: the block_rate in ns it was sampled with; MUTEX: the
 *          mutex_fraction.  Non-zero.  The collector unbiases:
 *          BLOCK with delay < rate counts rate / delay events of rate ns;
 *          MUTEX counts rate events of rate * delay ns.
 * @lock:   address of the lock, for information.
 * @pcs:    BLOCK: the waiter's stack; MUTEX: the unlocker's.  Leaf first;
 *          each non-zero and below the end of user space.
 */
struct kpprof_rec_contention {
	struct kpprof_record hdr;
	__u64 delay_ns;
	__u64 rate;
	__u64 lock;
	__u64 pcs[];
};

/**
 * struct kpprof_rec_mmap - KPPROF_REC_MMAP: an object mapped executable
 * @hdr:          header, nr_pcs 0.
 * @start:        first byte of the mapping; page aligned.
 * @end:          byte after its last byte; page aligned, > @start, and at
 *                most the end of user space.
 * @offset:       file offset of @start; page aligned.
 * @build_id:     GNU build-id, @build_id_len bytes, the rest zero.
 * @build_id_len: 0 .. KPPROF_BUILD_ID_MAX.
 * @pad:          zero.
 * @path_len:     bytes of @path including its NUL, 1 .. KPPROF_PATH_MAX.
 * @path:         NUL-terminated, no NUL before the end, then zero padding
 *                to the record's 8-byte-aligned size.
 */
struct kpprof_rec_mmap {
	struct kpprof_record hdr;
	__u64 start;
	__u64 end;
	__u64 offset;
	__u8 build_id[KPPROF_BUILD_ID_MAX];
	__u8 build_id_len;
	__u8 pad[1];
	__u16 path_len;
	char path[];
};

/**
 * struct kpprof_rec_munmap - KPPROF_REC_MUNMAP: an object unmapped
 * @hdr:   header, nr_pcs 0.
 * @start: as in the KPPROF_REC_MMAP it ends: page aligned.
 * @end:   page aligned, > @start, at most the end of user space.
 */
struct kpprof_rec_munmap {
	struct kpprof_record hdr;
	__u64 start;
	__u64 end;
};

/* Bits of kpprof_rec_comm.reason. */
#define KPPROF_COMM_START	0	/* the shim initialised in a process */
#define KPPROF_COMM_FORK	1	/* a forked child */
/* the process is about to exec: the image that sampled ends here */
#define KPPROF_COMM_EXEC	2
#define KPPROF_COMM_EXIT	3	/* the process is exiting */

/**
 * struct kpprof_rec_comm - KPPROF_REC_COMM: names a process
 * @hdr:    header, nr_pcs 0.
 * @reason: KPPROF_COMM_*.
 * @ppid:   kernel-owned: parent's tgid; write 0.
 * @comm:   kernel-owned: the task's comm; write zeros.
 */
struct kpprof_rec_comm {
	struct kpprof_record hdr;
	__u32 reason;
	__u32 ppid;
	char comm[KPPROF_COMM_LEN];
};

/* Values of kpprof_rec_note.what. */
/*
 * A seccomp filter is in force: the shim stopped emitting; @value: events
 * it has not sent since.
 */
#define KPPROF_NOTE_SECCOMP	1
/* malloc is not interposed (an allocator linked statically): no heap profile */
#define KPPROF_NOTE_NO_HEAP	2

/**
 * struct kpprof_rec_note - KPPROF_REC_NOTE: a producer reports on itself
 * @hdr:   header, nr_pcs 0.
 * @what:  KPPROF_NOTE_*; unknown values are EINVAL.
 * @pad:   zero.
 * @value: what-specific, see KPPROF_NOTE_*.
 */
struct kpprof_rec_note {
	struct kpprof_record hdr;
	__u32 what;
	__u32 pad;
	__u64 value;
};

/**
 * struct kpprof_rec_cycle - KPPROF_REC_CYCLE, written by the kernel only
 * @hdr:     header; hdr.cycle is the new cycle, every later entry in the
 *           ring has a cycle >= hdr.cycle, so cycle hdr.cycle - 1 is
 *           complete once this entry is read.  tgid/tid/uid are 0.
 *           The timer runs only while a consumer is attached (the ioctl
 *           always writes one); a cycle record can also be dropped when
 *           the ring is full;
 *           any entry with hdr.cycle > k proves cycle k complete too.
 *           Records from producer rings are stamped when the drain moves
 *           them into the ring, under the same lock, so the rule holds for
 *           them as for SUBMIT's: the collector knows cycle k is complete
 *           when it has read an entry with cycle > k, and no record of k
 *           can arrive after it.  The timer and ADVANCE_CYCLE drain every
 *           producer ring first, so what producers committed before the
 *           cycle ended belongs to it (unless the ring had no room: then
 *           it waits in its producer ring and belongs to a later cycle).
 * @reason:  0 timer, 1 ioctl.
 * @pad:     zero.
 */
struct kpprof_rec_cycle {
	struct kpprof_record hdr;
	__u32 reason;
	__u32 pad;
};

/**
 * struct kpprof_rec_lost - KPPROF_REC_LOST, written by the kernel only
 * @hdr:     header; tgid and uid are the producer's (its ring's identity),
 *           tid 0, cycle the cycle the drain accepted it in.
 * @full:    records the producer dropped because its ring was full, since
 *           its last KPPROF_REC_LOST (the sum of @by_kind).
 * @invalid: records the drain found malformed and skipped, since then.
 * @resets:  times the drain emptied the ring because its head or an entry
 *           length could not be believed (the records then in it are lost,
 *           uncounted), or cut a lost[] claim of more than one record per
 *           nanosecond since its last report (kpprof_stats.pring_lost),
 *           since then.
 * @by_kind: @full by record kind, as kpprof_pring_hdr.lost.
 *
 * Like perf's PERF_RECORD_LOST: a producer's profile says what it lost.
 * The counts come from the producer's own ring header, so a producer can
 * only lie about its own losses.
 */
struct kpprof_rec_lost {
	struct kpprof_record hdr;
	__u64 full;
	__u64 invalid;
	__u64 resets;
	__u64 by_kind[KPPROF_LOST_KINDS];
};

#endif /* _UAPI_KPPROF_H */
