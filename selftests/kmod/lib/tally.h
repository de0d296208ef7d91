/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tally: what a consumer read, per producer, for the accounting tests
 * (pring_test, pring_many_test): ALLOC records that carry their writer's
 * sequence number, the in-band KPPROF_REC_LOST counts, per-producer order
 * and the cycle rule (no record of cycle c after an entry with a cycle
 * > c was read).
 */
#ifndef TALLY_H
#define TALLY_H

#include <sys/types.h>
#include <kpprof.h>

#include "ring_reader.h"

#define TALLY_MAX	80	/* producers one tally follows */

struct tally {
	__u64 alloc[TALLY_MAX];		/* ALLOC records per producer index */
	__u64 full[TALLY_MAX];		/* LOST.full per producer index */
	__u64 invalid[TALLY_MAX];
	__u64 resets[TALLY_MAX];
	__u64 next_seq[TALLY_MAX];	/* per-producer order */
	__u64 out_of_order;
	__u64 cycle_violations;
	__u64 cycle_floor;		/* every record must have cycle >= this */
	__u64 cycles;
	__u64 other;
};

/* tally__rec - an ALLOC record whose bytes field carries @seq + 1 */
size_t tally__rec(unsigned char *buf, __u64 seq);

/*
 * tally__read - consume what the ring holds now, producer i being the
 * process @pids[i]; 0, or -EPROTO on a bad ring
 */
int tally__read(struct ring_reader *rr, struct tally *t, const pid_t *pids, int n);

#endif /* TALLY_H */
