// SPDX-License-Identifier: GPL-2.0
/* tally: see tally.h */
#include "tally.h"
#include "rec_build.h"

size_t tally__rec(unsigned char *buf, __u64 seq)
{
	size_t len = rec_build__alloc(buf, 8, seq);

	((struct kpprof_rec_alloc *)buf)->bytes = seq + 1;
	return len;
}

static int idx_of(const pid_t *pids, int n, __u32 tgid)
{
	for (int i = 0; i < n; i++)
		if ((__u32)pids[i] == tgid)
			return i;
	return -1;
}

/* seq of an ALLOC made by tally__rec() */
static __u64 seq_of(const struct kpprof_record *rec)
{
	return ((const struct kpprof_rec_alloc *)rec)->bytes - 1;
}

int tally__read(struct ring_reader *rr, struct tally *t, const pid_t *pids, int n)
{
	const struct kpprof_record *rec;
	__u32 len;
	int r, i;

	while ((r = ring_reader__peek(rr, &rec, &len)) == 1) {
		if (rec->kind == KPPROF_REC_CYCLE) {
			t->cycles++;
			/* cycle hdr.cycle - 1 is complete: nothing older may follow */
			if (rec->cycle > t->cycle_floor)
				t->cycle_floor = rec->cycle;
		} else if (rec->cycle < t->cycle_floor) {
			t->cycle_violations++;
		}
		i = idx_of(pids, n, rec->tgid);
		if (i < 0) {
			t->other++;
		} else if (rec->kind == KPPROF_REC_ALLOC) {
			__u64 s = seq_of(rec);

			t->alloc[i]++;
			if (s < t->next_seq[i])
				t->out_of_order++;
			t->next_seq[i] = s + 1;
		} else if (rec->kind == KPPROF_REC_LOST) {
			const struct kpprof_rec_lost *l = (const void *)rec;

			t->full[i] += l->full;
			t->invalid[i] += l->invalid;
			t->resets[i] += l->resets;
		}
		ring_reader__consume(rr);
	}
	return r;
}
