// SPDX-License-Identifier: GPL-2.0
/*
 * ring.c - consume the kpprof ring through mmap, as libbpf's ringbuf.c does
 * for BPF ring buffers.
 *
 *   pgoff 1  consumer page   rw   cons_pos   (only we write it)
 *   pgoff 2  producer page   ro   prod_pos   (the kernel writes it)
 *   pgoff 3  data            ro   ring_size bytes, mapped twice in a row,
 *                                 so an entry that wraps reads contiguously
 *
 * Positions only grow; the entry at position p starts at data[p & mask]:
 * a struct kpprof_ring_hdr, then len bytes of record, padded to 8.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev.h"
#include "ring.h"

struct kpp_ring {
	kpp_ring_sample_fn fn;
	void *ctx;
	int epoll_fd;
	size_t page_size;
	uint64_t mask;
	uint64_t *cons_pos;		/* consumer page */
	void *prod_map;			/* producer page + data x 2 */
	size_t prod_map_len;
	const uint64_t *prod_pos;
	const uint8_t *data;
};

void kpp_ring__free(struct kpp_ring *rb)
{
	if (!rb)
		return;
	if (rb->cons_pos)
		munmap(rb->cons_pos, rb->page_size);
	if (rb->prod_map)
		munmap(rb->prod_map, rb->prod_map_len);
	if (rb->epoll_fd >= 0)
		close(rb->epoll_fd);
	free(rb);
}

struct kpp_ring *kpp_ring__new(int dev_fd, kpp_ring_sample_fn fn, void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct kpprof_info info;
	struct kpp_ring *rb;
	void *p;
	int err;

	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->fn = fn;
	rb->ctx = ctx;
	rb->epoll_fd = -1;

	err = kpprof_dev__info(dev_fd, &info);
	if (err)
		goto err_out;
	if (!info.ring_size || (info.ring_size & (info.ring_size - 1)) ||
	    !info.page_size) {
		err = -EPROTO;
		goto err_out;
	}
	rb->page_size = info.page_size;
	rb->mask = info.ring_size - 1;

	err = kpprof_dev__attach(dev_fd);
	if (err)
		goto err_out;

	p = mmap(NULL, rb->page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 dev_fd, (off_t)KPPROF_PGOFF_CONSUMER * rb->page_size);
	if (p == MAP_FAILED) {
		err = -errno;
		goto err_out;
	}
	rb->cons_pos = p;

	rb->prod_map_len = rb->page_size + 2 * info.ring_size;
	p = mmap(NULL, rb->prod_map_len, PROT_READ, MAP_SHARED, dev_fd,
		 (off_t)KPPROF_PGOFF_PRODUCER * rb->page_size);
	if (p == MAP_FAILED) {
		err = -errno;
		goto err_out;
	}
	rb->prod_map = p;
	rb->prod_pos = p;
	rb->data = (const uint8_t *)p + rb->page_size;

	rb->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (rb->epoll_fd < 0 ||
	    epoll_ctl(rb->epoll_fd, EPOLL_CTL_ADD, dev_fd, &ev) < 0) {
		err = -errno;
		goto err_out;
	}
	return rb;

err_out:
	kpp_ring__free(rb);
	errno = -err;
	return NULL;
}

uint64_t kpp_ring__pending(const struct kpp_ring *rb)
{
	return __atomic_load_n(rb->prod_pos, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(rb->cons_pos, __ATOMIC_RELAXED);
}

int kpp_ring__consume(struct kpp_ring *rb)
{
	uint64_t cons = __atomic_load_n(rb->cons_pos, __ATOMIC_RELAXED);
	int64_t cnt = 0;
	int err = 0;

	for (;;) {
		/* Pairs with the kernel's release store of prod_pos. */
		uint64_t prod = __atomic_load_n(rb->prod_pos, __ATOMIC_ACQUIRE);
		bool progress = false;

		while (cons < prod) {
			const struct kpprof_ring_hdr *hdr =
				(const void *)(rb->data + (cons & rb->mask));
			/* Pairs with the kernel's commit that clears BUSY. */
			uint32_t len = __atomic_load_n(&hdr->len, __ATOMIC_ACQUIRE);
			uint32_t rec_len = len & KPPROF_RING_LEN_MASK;

			if (len & KPPROF_RING_BUSY)
				goto out;
			/*
			 * A length beyond the ring would make us read past the
			 * double mapping: the ring is corrupt, stop here.
			 */
			if (rec_len > rb->mask + 1 - sizeof(*hdr)) {
				err = -EPROTO;
				goto out;
			}
			cons += (sizeof(*hdr) + rec_len + 7) & ~7ULL;
			progress = true;
			if (!(len & KPPROF_RING_DISCARD)) {
				cnt++;
				err = rb->fn(rb->ctx, hdr + 1, rec_len);
				if (err < 0) {
					/* Pairs with the kernel's acquire of cons_pos. */
					__atomic_store_n(rb->cons_pos, cons, __ATOMIC_RELEASE);
					goto out_nostore;
				}
			}
			/* Release space as we go so producers are not starved. */
			if ((cnt & 63) == 0)
				__atomic_store_n(rb->cons_pos, cons, __ATOMIC_RELEASE);
		}
		__atomic_store_n(rb->cons_pos, cons, __ATOMIC_RELEASE);
		if (!progress)
			break;
	}
out:
	__atomic_store_n(rb->cons_pos, cons, __ATOMIC_RELEASE);
out_nostore:
	if (err < 0)
		return err;
	return cnt > INT_MAX ? INT_MAX : (int)cnt;
}

int kpp_ring__poll(struct kpp_ring *rb, int timeout_ms)
{
	struct epoll_event ev;
	int n = epoll_wait(rb->epoll_fd, &ev, 1, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	return kpp_ring__consume(rb);
}

int kpp_ring__epoll_fd(const struct kpp_ring *rb)
{
	return rb->epoll_fd;
}
