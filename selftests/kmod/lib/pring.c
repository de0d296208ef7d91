// SPDX-License-Identifier: GPL-2.0
/* pring: a producer ring writer for the selftests (see pring.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "kpp_dev.h"
#include "pring.h"

int pring__map(struct pring *p, int fd)
{
	struct kpprof_info info;
	void *m;
	int err;

	memset(p, 0, sizeof(*p));
	err = dev__info(fd, &info);
	if (err)
		return err;
	if (!(info.features & KPPROF_FEAT_PRING))
		return -EOPNOTSUPP;
	m = mmap(NULL, info.pring_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)(info.pring_pgoff * info.page_size));
	if (m == MAP_FAILED)
		return -errno;
	p->hdr = m;
	p->data = (unsigned char *)m + info.pring_data_off;
	p->size = info.pring_size;
	p->mask = info.pring_size - 1;
	p->map_len = info.pring_map_len;
	p->kicked_tail = ~0ULL;
	return 0;
}

void pring__unmap(struct pring *p)
{
	if (p->hdr)
		munmap(p->hdr, p->map_len);
	p->hdr = NULL;
}

int pring__write(struct pring *p, const void *rec, size_t len)
{
	__u64 total = (sizeof(struct kpprof_ring_hdr) + len + 7) & ~7ULL;
	unsigned int kind = ((const struct kpprof_record *)rec)->kind;
	struct kpprof_ring_hdr *e;
	__u64 h, t;

	h = __atomic_load_n(&p->hdr->head, __ATOMIC_ACQUIRE);
	do {
		t = __atomic_load_n(&p->hdr->tail, __ATOMIC_ACQUIRE);
		if (h + total - t > p->size) {
			__atomic_fetch_add(&p->hdr->lost[kind < KPPROF_LOST_KINDS ? kind : 0],
					   1, __ATOMIC_RELAXED);
			return -ENOBUFS;
		}
	} while (!__atomic_compare_exchange_n(&p->hdr->head, &h, h + total, 0,
					      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	e = (struct kpprof_ring_hdr *)(p->data + (h & p->mask));
	__atomic_store_n(&e->len, (__u32)len | KPPROF_RING_BUSY, __ATOMIC_RELAXED);
	memcpy(e + 1, rec, len);
	memset((unsigned char *)(e + 1) + len, 0, total - sizeof(*e) - len);
	__atomic_store_n(&e->len, (__u32)len, __ATOMIC_RELEASE);
	return 0;
}

static int kick(struct pring *p, int fd)
{
	__u64 t = __atomic_load_n(&p->hdr->tail, __ATOMIC_ACQUIRE);

	if (t == p->kicked_tail)
		return 0;
	p->kicked_tail = t;
	return dev__ioctl(fd, KPPROF_IOC_KICK, NULL) == 0;
}

int pring__write_kick(struct pring *p, int fd, const void *rec, size_t len)
{
	__u64 used;
	int err = pring__write(p, rec, len);

	if (err == -ENOBUFS && kick(p, fd)) {
		/* pring__write() counted the loss: take it back if the retry fits */
		err = pring__write(p, rec, len);
		if (!err) {
			unsigned int kind = ((const struct kpprof_record *)rec)->kind;

			__atomic_fetch_sub(&p->hdr->lost[kind < KPPROF_LOST_KINDS ? kind : 0],
					   1, __ATOMIC_RELAXED);
		}
		return err;
	}
	used = __atomic_load_n(&p->hdr->head, __ATOMIC_RELAXED) -
	       __atomic_load_n(&p->hdr->tail, __ATOMIC_RELAXED);
	if (!err && 4 * used >= p->size)
		kick(p, fd);
	return err;
}

__u64 pring__lost(const struct pring *p)
{
	__u64 sum = 0;

	for (int i = 0; i < KPPROF_LOST_KINDS; i++)
		sum += __atomic_load_n(&p->hdr->lost[i], __ATOMIC_RELAXED);
	return sum;
}
