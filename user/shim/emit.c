// SPDX-License-Identifier: GPL-2.0
/*
 * Building and writing records: exactly one write(2) per record, laid out
 * as ioctl/kpprof.h says, kernel-owned header fields zero, size a multiple
 * of 8.  A full ring (ENOBUFS) is counted and forgotten: never retried,
 * never waited for.  errno is preserved, since the program may look at it
 * after a malloc that succeeded.
 *
 * Before each write the fd is checked (fstat) to still be /dev/kpprof: a
 * program that closes descriptors it does not know (daemons do) and opens
 * a file that reuses the number must never receive our bytes.  The check
 * costs one syscall per record, which are rare (sampled) events.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shim.h"

static bool fd_is_ours(void)
{
	struct stat st;

	if (kpp.fd < 0 || fstat(kpp.fd, &st))
		return false;
	return S_ISCHR(st.st_mode) && st.st_rdev == kpp.rdev && st.st_ino == kpp.ino;
}

void kpp_emit(const void *rec, size_t size)
{
	int saved = errno;
	ssize_t n;

	if (!fd_is_ours()) {
		if (kpp.fd >= 0) {
			kpp_debug("/dev/kpprof fd %d was closed by the program; stopping", kpp.fd);
			kpp.fd = -1;
		}
		errno = saved;
		return;
	}
	do
		n = write(kpp.fd, rec, size);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)size) {
		atomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);
	} else if (n < 0 && errno == ENOBUFS) {
		atomic_fetch_add_explicit(&kpp.writes_dropped, 1, memory_order_relaxed);
	} else {
		if (atomic_fetch_add_explicit(&kpp.writes_failed, 1,
					      memory_order_relaxed) == 0)
			kpp_debug("record kind %u size %zu refused: %s",
				  ((const struct kpprof_record *)rec)->kind, size,
				  n < 0 ? strerror(errno) : "short write");
	}
	errno = saved;
}

static void header(struct kpprof_record *h, __u16 kind, __u16 nr_pcs, size_t size)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->nr_pcs = nr_pcs;
	h->size = (__u32)size;
}

void kpp_emit_comm(__u32 reason)
{
	struct kpprof_rec_comm r;

	memset(&r, 0, sizeof(r));
	header(&r.hdr, KPPROF_REC_COMM, 0, sizeof(r));
	r.reason = reason;
	kpp_emit(&r, sizeof(r));
}

bool kpp_emit_alloc(struct kpp_thread *t, const void *addr, uint64_t bytes,
		    uint64_t rate)
{
	struct {
		struct kpprof_rec_alloc r;
		__u64 pcs[KPPROF_STACK_DEPTH_MAX];
	} b;
	unsigned int n = kpp_stack(t, b.r.pcs, t->max_depth);
	size_t size;

	if (!n)
		return false;	/* a record needs at least one frame */
	kpp_maps_sync();
	size = sizeof(b.r) + n * sizeof(__u64);
	header(&b.r.hdr, KPPROF_REC_ALLOC, (__u16)n, size);
	b.r.addr = (uintptr_t)addr;
	b.r.bytes = bytes;
	b.r.rate = rate;
	kpp_emit(&b, size);
	return true;
}

void kpp_emit_free(const void *addr, uint64_t bytes)
{
	struct kpprof_rec_free r;

	header(&r.hdr, KPPROF_REC_FREE, 0, sizeof(r));
	r.addr = (uintptr_t)addr;
	r.bytes = bytes;
	kpp_emit(&r, sizeof(r));
}

void kpp_emit_contention(struct kpp_thread *t, __u16 kind, const void *lock,
			 uint64_t delay_ns, uint64_t rate)
{
	struct {
		struct kpprof_rec_contention r;
		__u64 pcs[KPPROF_STACK_DEPTH_MAX];
	} b;
	unsigned int n = kpp_stack(t, b.r.pcs, t->max_depth);
	size_t size;

	if (!n)
		return;
	kpp_maps_sync();
	size = sizeof(b.r) + n * sizeof(__u64);
	header(&b.r.hdr, kind, (__u16)n, size);
	b.r.delay_ns = delay_ns ? delay_ns : 1;
	b.r.rate = rate;
	b.r.lock = (uintptr_t)lock;
	kpp_emit(&b, size);
}
