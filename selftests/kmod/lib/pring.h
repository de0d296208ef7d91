/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pring: a producer of the kpprof producer ring (ABI 3), written from the
 * protocol in ioctl/kpprof.h ("The producer ring") only, not from the
 * module's or the shim's code: reserve by compare-and-swap on head, write
 * the entry, commit with a store-release of its length.
 */
#ifndef PRING_H
#define PRING_H

#include <stddef.h>
#include <kpprof.h>

struct pring {
	struct kpprof_pring_hdr *hdr;
	__u64 kicked_tail;	/* pring__write_kick(): tail at the last kick */
	unsigned char *data;
	__u64 size;
	__u64 mask;
	size_t map_len;
};

/* pring__map - map @fd's producer ring; 0 or -errno (the mmap's) */
int pring__map(struct pring *p, int fd);
void pring__unmap(struct pring *p);

/*
 * pring__write - one record of @len bytes (its kind read from it); 0, or
 * -ENOBUFS when the ring is full (then lost[kind] is incremented, as the
 * protocol asks).
 */
int pring__write(struct pring *p, const void *rec, size_t len);

/*
 * pring__write_kick - pring__write() as the shim does it: a ring a quarter
 * full kicks the module (KPPROF_IOC_KICK on @fd) once per tail position,
 * and a full one kicks once and retries once.
 */
int pring__write_kick(struct pring *p, int fd, const void *rec, size_t len);

/* pring__lost - the sum of the ring header's lost[] counters */
__u64 pring__lost(const struct pring *p);

#endif /* PRING_H */
