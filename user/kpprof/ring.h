/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ring.h - the consumer side of the kpprof ring, with libbpf's ringbuf
 * semantics: __new attaches and maps, __poll waits then consumes,
 * __consume never blocks, __epoll_fd plugs into a caller's event loop.
 */
#ifndef KPPROF_RING_H
#define KPPROF_RING_H

#include <stddef.h>
#include <stdint.h>

struct kpp_ring;

/*
 * kpp_ring_sample_fn - called once per record, in ring order, with the
 * record's bytes (hdr.len of them).  A negative return stops consumption
 * after the position past this record is saved, and is returned.
 */
typedef int (*kpp_ring_sample_fn)(void *ctx, const void *data, size_t len);

/*
 * kpp_ring__new - attach to the ring of the open device @dev_fd (the caller
 * keeps ownership of the fd) and map it.  Returns NULL with errno set.
 */
struct kpp_ring *kpp_ring__new(int dev_fd, kpp_ring_sample_fn fn, void *ctx);
/* Records consumed (capped at INT_MAX) or a negative errno. */
int kpp_ring__poll(struct kpp_ring *rb, int timeout_ms);
int kpp_ring__consume(struct kpp_ring *rb);
int kpp_ring__epoll_fd(const struct kpp_ring *rb);
/* Bytes the ring holds, for the "records not yet read" check. */
uint64_t kpp_ring__pending(const struct kpp_ring *rb);
void kpp_ring__free(struct kpp_ring *rb);

#endif
