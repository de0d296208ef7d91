// SPDX-License-Identifier: GPL-2.0
/* ring_reader: the selftests' own consumer of the kpprof ring. */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kpp_dev.h"
#include "ring_reader.h"

int ring_reader__map(struct ring_reader *rr, int fd)
{
	struct kpprof_info info;
	int err;

	memset(rr, 0, sizeof(*rr));
	rr->fd = fd;
	err = dev__info(fd, &info);
	if (err)
		return err;
	rr->page_size = info.page_size;
	rr->ring_size = info.ring_size;
	rr->mask = info.ring_size - 1;
	rr->max_record_size = info.max_record_size;

	rr->cons_map = mmap(NULL, rr->page_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, KPPROF_PGOFF_CONSUMER * rr->page_size);
	if (rr->cons_map == MAP_FAILED) {
		err = -errno;
		rr->cons_map = NULL;
		return err;
	}
	rr->prod_map_len = rr->page_size + 2 * rr->ring_size;
	rr->prod_map = mmap(NULL, rr->prod_map_len, PROT_READ, MAP_SHARED, fd,
			    KPPROF_PGOFF_PRODUCER * rr->page_size);
	if (rr->prod_map == MAP_FAILED) {
		err = -errno;
		rr->prod_map = NULL;
		ring_reader__unmap(rr);
		return err;
	}
	rr->cons_pos = rr->cons_map;
	rr->prod_pos = rr->prod_map;
	rr->data = (const __u8 *)rr->prod_map + rr->page_size;
	return 0;
}

int ring_reader__attach(struct ring_reader *rr, int fd)
{
	if (ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH) < 0)
		return -errno;
	return ring_reader__map(rr, fd);
}

void ring_reader__unmap(struct ring_reader *rr)
{
	if (rr->prod_map)
		munmap(rr->prod_map, rr->prod_map_len);
	if (rr->cons_map)
		munmap(rr->cons_map, rr->page_size);
	rr->prod_map = NULL;
	rr->cons_map = NULL;
}

__u64 ring_reader__prod(const struct ring_reader *rr)
{
	/* pairs with the kernel's release store of prod_pos */
	return __atomic_load_n(rr->prod_pos, __ATOMIC_ACQUIRE);
}

__u64 ring_reader__cons(const struct ring_reader *rr)
{
	return __atomic_load_n(rr->cons_pos, __ATOMIC_RELAXED);
}

int ring_reader__peek(struct ring_reader *rr,
		      const struct kpprof_record **rec, __u32 *len)
{
	for (;;) {
		__u64 cons = ring_reader__cons(rr);
		__u64 prod = ring_reader__prod(rr);
		const struct kpprof_ring_hdr *hdr;
		__u32 hlen, rlen;
		__u64 off;

		if (cons >= prod)
			return 0;
		if (prod - cons < sizeof(*hdr) || (cons & 7))
			return -EPROTO;
		off = cons & rr->mask;
		hdr = (const void *)(rr->data + off);
		/* pairs with the kernel's release of BUSY at commit */
		hlen = __atomic_load_n(&hdr->len, __ATOMIC_ACQUIRE);
		if (hlen & KPPROF_RING_BUSY)
			return 0;
		rlen = hlen & KPPROF_RING_LEN_MASK;
		if (rlen > rr->max_record_size)
			return -EPROTO;
		rr->entry_len = sizeof(*hdr) + ((rlen + 7) & ~7ULL);
		if (cons + rr->entry_len > prod)
			return -EPROTO;
		rr->entry_wrapped = off + rr->entry_len > rr->ring_size;
		if (hlen & KPPROF_RING_DISCARD) {
			rr->discarded++;
			ring_reader__consume(rr);
			continue;
		}
		if (rlen < sizeof(struct kpprof_record))
			return -EPROTO;
		*rec = (const void *)(hdr + 1);
		*len = rlen;
		return 1;
	}
}

void ring_reader__consume(struct ring_reader *rr)
{
	/* pairs with the kernel's acquire load of cons_pos when reserving */
	__atomic_store_n(rr->cons_pos, ring_reader__cons(rr) + rr->entry_len,
			 __ATOMIC_RELEASE);
}

long ring_reader__drain(struct ring_reader *rr)
{
	const struct kpprof_record *rec;
	long n = 0;
	__u32 len;
	int ret;

	while ((ret = ring_reader__peek(rr, &rec, &len)) == 1) {
		ring_reader__consume(rr);
		n++;
	}
	return ret < 0 ? ret : n;
}
