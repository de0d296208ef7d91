// SPDX-License-Identifier: GPL-2.0
/*
 * In-module self-tests of the ring's arithmetic, #included at the end of
 * ring.c under DEBUG (as WireGuard does) so they reach its static
 * functions.  They run at load, before the device exists, on a ring of
 * their own; a failure fails the load with -ENOTRECOVERABLE.
 */

#ifdef DEBUG

/* Play the consumer: read the entry at cons_pos, or NULL if none is ready. */
static struct kpprof_record *kpp_st_peek(struct kpp_ring *rb, u32 *len)
{
	u64 cons = *rb->cons_pos;
	struct kpprof_ring_hdr *hdr;

	if (cons == *rb->prod_pos)
		return NULL;
	hdr = (struct kpprof_ring_hdr *)(rb->data + (cons & rb->mask));
	if (hdr->len & KPPROF_RING_BUSY)
		return NULL;
	*len = hdr->len & KPPROF_RING_LEN_MASK;
	return (struct kpprof_record *)(hdr + 1);
}

static void kpp_st_pop(struct kpp_ring *rb, u32 len)
{
	*rb->cons_pos += round_up(sizeof(struct kpprof_ring_hdr) + len, 8);
}

static void kpp_st_record(struct kpprof_rec_free *r, u64 seq)
{
	memset(r, 0, sizeof(*r));
	r->hdr.kind = KPPROF_REC_FREE;
	r->hdr.size = sizeof(*r);
	r->addr = seq;
	r->bytes = ~seq;
}

static bool kpp_st_check(bool ok, const char *what)
{
	if (!ok)
		pr_err("ring self-test failed: %s\n", what);
	return ok;
}

static bool kpp_st_fill_and_drain(struct kpp_ring *rb)
{
	const u64 entry = round_up(sizeof(struct kpprof_ring_hdr) +
				   sizeof(struct kpprof_rec_free), 8);
	struct kpp_stamp stamp = { .tgid = 7, .tid = 8, .uid = 9, .charge = 9 };
	struct kpprof_rec_free rec, *got;
	u64 n = 0, i, drops;
	bool ok = true;
	u32 len;

	while (true) {
		kpp_st_record(&rec, n);
		if (kpp_ring_output(rb, &rec, sizeof(rec), &stamp))
			break;
		n++;
	}
	drops = atomic64_read(&rb->dropped[KPPROF_DROP_RING_FULL]);
	ok &= kpp_st_check(n == rb->size / entry, "full after size / entry records");
	ok &= kpp_st_check(drops == 1, "the record that did not fit was counted");
	ok &= kpp_st_check(kpp_ring_readable(rb), "full ring is readable");

	for (i = 0; i < n; i++) {
		got = (struct kpprof_rec_free *)kpp_st_peek(rb, &len);
		if (!kpp_st_check(got && len == sizeof(rec), "record present"))
			return false;
		ok &= kpp_st_check(got->addr == i && got->bytes == ~i &&
				   got->hdr.tgid == 7 && got->hdr.uid == 9,
				   "record intact and stamped");
		kpp_st_pop(rb, len);
	}
	ok &= kpp_st_check(!kpp_ring_readable(rb), "drained ring is empty");
	ok &= kpp_st_check(rb->accepted == n, "accepted == read");
	return ok;
}

/* A record that straddles the end reads contiguously through the alias. */
static bool kpp_st_wrap(struct kpp_ring *rb)
{
	struct kpp_stamp stamp = {};
	struct kpprof_rec_free rec, *got;
	bool ok = true;
	u32 len;
	u64 pos;

	/* leave 16 bytes before the end: header fits, the body wraps */
	pos = round_up(*rb->prod_pos, rb->size) + rb->size - 16;
	rb->prod = pos;
	rb->reclaim = pos;
	*rb->prod_pos = pos;
	*rb->cons_pos = pos;

	kpp_st_record(&rec, 0x1122334455667788ULL);
	ok &= kpp_st_check(!kpp_ring_output(rb, &rec, sizeof(rec), &stamp),
			   "wrapping record accepted");
	got = (struct kpprof_rec_free *)kpp_st_peek(rb, &len);
	if (!kpp_st_check(got && len == sizeof(rec), "wrapped record present"))
		return false;
	ok &= kpp_st_check(got->addr == 0x1122334455667788ULL &&
			   got->bytes == ~0x1122334455667788ULL,
			   "wrapped record intact");
	/* the bytes past the end landed at the start of the same pages */
	ok &= kpp_st_check(*(u64 *)rb->data == *(u64 *)(rb->data + rb->size),
			   "data pages mapped twice");
	kpp_st_pop(rb, len);
	return ok;
}

static bool kpp_st_cycle(struct kpp_ring *rb)
{
	struct kpp_stamp stamp = {};
	struct kpprof_rec_free rec;
	struct kpprof_record *got;
	u64 before = rb->cycle, now;
	bool ok = true;
	u32 len;

	now = kpp_ring_advance_cycle(rb, 1, true);
	ok &= kpp_st_check(now == before + 1, "cycle advanced by one");
	got = kpp_st_peek(rb, &len);
	if (!kpp_st_check(got && got->kind == KPPROF_REC_CYCLE &&
			  got->cycle == now, "cycle record carries the new cycle"))
		return false;
	kpp_st_pop(rb, len);

	kpp_st_record(&rec, 1);
	kpp_ring_output(rb, &rec, sizeof(rec), &stamp);
	got = kpp_st_peek(rb, &len);
	ok &= kpp_st_check(got && got->cycle == now, "later records carry it");
	if (got)
		kpp_st_pop(rb, len);
	return ok;
}

/* kpp_ring_selftest - run every ring self-test; true if all passed */
bool __init kpp_ring_selftest(void)
{
	struct kpp_ring *rb;
	bool ok = false;

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	/* one writer fills the ring: its share is the whole ring */
	if (!rb || kpp_ring_init(rb, KPP_RING_SIZE_MIN, 8, KPP_RING_SIZE_MIN))
		goto out;
	ok = kpp_st_fill_and_drain(rb) && kpp_st_wrap(rb) && kpp_st_cycle(rb);
	kpp_ring_free(rb);
out:
	kfree(rb);
	if (ok)
		pr_info("ring self-tests: pass\n");
	return ok;
}

#endif /* DEBUG */
