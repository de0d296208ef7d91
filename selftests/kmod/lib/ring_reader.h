/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ring_reader: an independent consumer of the kpprof ring, written from
 * the contract in ioctl/kpprof.h only (not from the module's code), so the
 * tests check the module against the header rather than against itself.
 *
 *   pgoff 1   consumer page, rw   cons_pos  (we store, release)
 *   pgoff 2   producer page, ro   prod_pos  (we load, acquire)
 *   pgoff 3.. data, ro, twice in a row: an entry that wraps the end of the
 *             ring is read straight through into the second copy.
 */
#ifndef RING_READER_H
#define RING_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <kpprof.h>

struct ring_reader {
	int fd;
	size_t page_size;
	__u64 ring_size;
	__u64 mask;
	__u32 max_record_size;
	__u64 *cons_pos;
	const __u64 *prod_pos;
	const __u8 *data;
	void *cons_map;
	void *prod_map;
	size_t prod_map_len;
	/* what the last ring_reader__peek() found */
	__u64 entry_len;	/* header + record + padding */
	bool entry_wrapped;	/* it crossed the end of the first data copy */
	/* count of entries skipped because KPPROF_RING_DISCARD was set */
	__u64 discarded;
};

/*
 * ring_reader__attach - KPPROF_IOC_CONSUMER_ATTACH on @fd, then map the
 * consumer page rw and the producer page plus 2 * ring_size ro.
 * Returns 0 or -errno (the attach or mmap errno).
 */
int ring_reader__attach(struct ring_reader *rr, int fd);

/* ring_reader__map - the mappings only, for files already attached */
int ring_reader__map(struct ring_reader *rr, int fd);

void ring_reader__unmap(struct ring_reader *rr);

/* ring_reader__prod - prod_pos, loaded with acquire semantics */
__u64 ring_reader__prod(const struct ring_reader *rr);
__u64 ring_reader__cons(const struct ring_reader *rr);

/*
 * ring_reader__peek - the record at cons_pos, without consuming it.
 * Entries marked DISCARD are consumed and skipped.  Returns 1 and sets
 * *rec and *len (record bytes, flags masked), 0 if the ring is empty or
 * the next entry is still BUSY, -EPROTO if the entry breaks the ring
 * format (bad length, non-zero header pad, entry beyond prod_pos).
 */
int ring_reader__peek(struct ring_reader *rr,
		      const struct kpprof_record **rec, __u32 *len);

/* ring_reader__consume - step past the entry the last peek returned */
void ring_reader__consume(struct ring_reader *rr);

/*
 * ring_reader__drain - consume everything readable now; returns the count
 * of records, or -EPROTO.  Tests call it first so that records left by an
 * earlier test do not count in theirs.
 */
long ring_reader__drain(struct ring_reader *rr);

#endif /* RING_READER_H */
