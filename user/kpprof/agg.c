// SPDX-License-Identifier: GPL-2.0
/*
 * agg.c - aggregate decoded records into buckets.  Patterned after Go's
 * runtime/mprof.go (buckets, memRecord cycles, scaleHeapSample later in
 * export), for records that arrive through the kpprof ring.
 *
 * Data model
 * ----------
 *   stacks   interned: pcs arena + chained hash; id = index.  A stack is
 *            shared by every bucket (and every process) that has it.
 *   buckets  one array, chained hash on (type, pid, stack, size, rate).
 *            Heap buckets carry the mem_rate in their key because the rate
 *            can change while we run and each sample must be unbiased with
 *            the rate it was taken at.
 *   live     open-addressing map (pid, addr) -> heap bucket, one entry per
 *            sampled allocation not yet freed, so a FREE record (which has
 *            no stack) finds the bucket its allocation was charged to.
 *   procs    pid -> comm, ppid, state, mappings (for symbolization).
 *
 * Cycles (heap only)
 * ------------------
 * The kernel stamps every record with the cycle in which it entered the
 * ring; ring order is cycle order.  A record of cycle C goes into
 * future[C % 3] of its bucket.  Seeing any record of cycle C proves every
 * cycle < C complete (KPPROF_REC_CYCLE records exist to prove it when no
 * other record comes), and a complete cycle k is folded: active +=
 * future[k % 3], future[k % 3] = 0.  The published profile is active only:
 *
 *        cycle C            cycle C+1          cycle C+2
 *   ---|-------------------|------------------|---------->
 *       alloc p, free p      (C complete: fold)
 *       alloc q                                  publish: q live, p never
 *
 * so an allocation freed in the cycle that made it never shows as live,
 * and a profile never shows half a cycle.  (With a single ordered ring
 * only one future slot is ever filled at a time; three are kept as in Go,
 * so the model survives rings that are read out of order.)
 *
 * Contention buckets are not cycle-delayed (Go's are not either): a block
 * or mutex event is complete when it is recorded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "grow.h"

#define DEFAULT_MAX_BUCKETS	(1u << 20)
#define DEFAULT_MAX_STACKS	(1u << 20)
#define DEFAULT_MAX_LIVE	(1u << 22)
#define DEFAULT_MAX_EXITED	64
#define PROC_HASH		1024

struct stack_ent {
	uint32_t off;		/* into pcs arena */
	uint16_t n;
	uint32_t next;		/* index + 1 */
	uint64_t hash;
};

struct live_ent {
	uint64_t addr;		/* 0: empty slot */
	uint32_t pid;
	uint32_t bucket;
};

struct kpp_agg {
	struct kpp_agg_limits lim;
	struct kpp_agg_stats st;
	uint64_t generation;
	uint64_t exit_seq;
	uint64_t proc_serial;

	struct kpp_bucket *buckets;
	size_t nr_buckets, cap_buckets;
	uint32_t *bhash;	/* heads: index + 1 */
	size_t bhash_size;	/* power of two */
	/* Buckets whose future[s] is not empty, per slot. */
	uint32_t *dirty[3];
	size_t nr_dirty[3], cap_dirty[3];

	struct stack_ent *stacks;
	size_t nr_stacks, cap_stacks;
	uint64_t *pcs;
	size_t nr_pcs, cap_pcs;
	uint32_t *shash;
	size_t shash_size;

	struct live_ent *live;
	size_t live_size;	/* power of two, 0 before first use */
	size_t nr_live;

	struct kpp_proc *procs[PROC_HASH];
	size_t nr_procs;
};

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}


struct kpp_agg *kpp_agg__new(const struct kpp_agg_limits *lim)
{
	struct kpp_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->lim.max_buckets = lim && lim->max_buckets ? lim->max_buckets : DEFAULT_MAX_BUCKETS;
	a->lim.max_stacks = lim && lim->max_stacks ? lim->max_stacks : DEFAULT_MAX_STACKS;
	a->lim.max_live = lim && lim->max_live ? lim->max_live : DEFAULT_MAX_LIVE;
	a->lim.max_exited = lim && lim->max_exited ? lim->max_exited : DEFAULT_MAX_EXITED;
	return a;
}

static void proc_free(struct kpp_proc *p)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		free(p->maps[i].path);
	free(p->maps);
	free(p);
}

void kpp_agg__free(struct kpp_agg *a)
{
	if (!a)
		return;
	for (size_t h = 0; h < PROC_HASH; h++) {
		struct kpp_proc *p = a->procs[h], *n;

		for (; p; p = n) {
			n = p->hnext;
			proc_free(p);
		}
	}
	for (int s = 0; s < 3; s++)
		free(a->dirty[s]);
	free(a->buckets);
	free(a->bhash);
	free(a->stacks);
	free(a->pcs);
	free(a->shash);
	free(a->live);
	free(a);
}

/* ------------------------------------------------------------ stacks */

static int rehash_stacks(struct kpp_agg *a, size_t size)
{
	uint32_t *h = calloc(size, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < a->nr_stacks; i++) {
		size_t slot = a->stacks[i].hash & (size - 1);

		a->stacks[i].next = h[slot];
		h[slot] = i + 1;
	}
	free(a->shash);
	a->shash = h;
	a->shash_size = size;
	return 0;
}

/* intern_stack - id of the stack @r carries, or -ENOSPC / -ENOMEM. */
static int64_t intern_stack(struct kpp_agg *a, const struct kpp_rec *r)
{
	uint64_t hash = r->nr_pcs;
	size_t slot;

	for (unsigned int i = 0; i < r->nr_pcs; i++)
		hash = mix64(hash ^ kpp_rec__pc(r, i));
	if (a->shash_size) {
		slot = hash & (a->shash_size - 1);
		for (uint32_t i = a->shash[slot]; i; i = a->stacks[i - 1].next) {
			const struct stack_ent *e = &a->stacks[i - 1];

			if (e->hash == hash && e->n == r->nr_pcs &&
			    !memcmp(a->pcs + e->off, r->pcs, 8 * (size_t)e->n))
				return i - 1;
		}
	}
	if (a->nr_stacks >= a->lim.max_stacks)
		return -ENOSPC;
	if (grow((void **)&a->stacks, &a->cap_stacks, a->nr_stacks + 1, sizeof(*a->stacks)) ||
	    grow((void **)&a->pcs, &a->cap_pcs, a->nr_pcs + r->nr_pcs, sizeof(*a->pcs)))
		return -ENOMEM;
	if (a->nr_stacks + 1 > a->shash_size &&
	    rehash_stacks(a, a->shash_size ? 2 * a->shash_size : 1024))
		return -ENOMEM;

	struct stack_ent *e = &a->stacks[a->nr_stacks];

	e->off = a->nr_pcs;
	e->n = r->nr_pcs;
	e->hash = hash;
	memcpy(a->pcs + a->nr_pcs, r->pcs, 8 * (size_t)r->nr_pcs);
	a->nr_pcs += r->nr_pcs;
	slot = hash & (a->shash_size - 1);
	e->next = a->shash[slot];
	a->shash[slot] = ++a->nr_stacks;
	a->st.nr_stacks = a->nr_stacks;
	a->st.stack_bytes = a->nr_pcs * 8 + a->nr_stacks * sizeof(*e);
	return a->nr_stacks - 1;
}

const uint64_t *kpp_agg__stack(const struct kpp_agg *a, uint32_t id, unsigned int *n)
{
	if (id >= a->nr_stacks) {
		*n = 0;
		return NULL;
	}
	*n = a->stacks[id].n;
	return a->pcs + a->stacks[id].off;
}

/* ------------------------------------------------------------ buckets */

static uint64_t bucket_hash(int type, uint32_t pid, uint32_t stack,
			    uint64_t size, uint64_t rate)
{
	return mix64(((uint64_t)pid << 32 | stack) ^ mix64(size ^ (rate << 3) ^ type));
}

static int rehash_buckets(struct kpp_agg *a, size_t size)
{
	uint32_t *h = calloc(size, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < a->nr_buckets; i++) {
		struct kpp_bucket *b = &a->buckets[i];
		size_t slot = bucket_hash(b->type, b->pid, b->stack, b->size, b->rate) & (size - 1);

		b->next = h[slot];
		h[slot] = i + 1;
	}
	free(a->bhash);
	a->bhash = h;
	a->bhash_size = size;
	return 0;
}

/* find_bucket - index of the bucket, created if new; -ENOSPC, -ENOMEM. */
static int64_t find_bucket(struct kpp_agg *a, int type, uint32_t pid,
			   uint32_t stack, uint64_t size, uint64_t rate)
{
	uint64_t hash = bucket_hash(type, pid, stack, size, rate);
	struct kpp_bucket *b;
	size_t slot;

	if (a->bhash_size) {
		slot = hash & (a->bhash_size - 1);
		for (uint32_t i = a->bhash[slot]; i; i = a->buckets[i - 1].next) {
			b = &a->buckets[i - 1];
			if (b->pid == pid && b->stack == stack && b->type == type &&
			    b->size == size && b->rate == rate)
				return i - 1;
		}
	}
	if (a->nr_buckets >= a->lim.max_buckets)
		return -ENOSPC;
	if (grow((void **)&a->buckets, &a->cap_buckets, a->nr_buckets + 1, sizeof(*a->buckets)))
		return -ENOMEM;
	if (a->nr_buckets + 1 > a->bhash_size &&
	    rehash_buckets(a, a->bhash_size ? 2 * a->bhash_size : 1024))
		return -ENOMEM;
	b = &a->buckets[a->nr_buckets];
	memset(b, 0, sizeof(*b));
	b->type = type;
	b->pid = pid;
	b->stack = stack;
	b->size = size;
	b->rate = rate;
	slot = hash & (a->bhash_size - 1);
	b->next = a->bhash[slot];
	a->bhash[slot] = ++a->nr_buckets;
	a->st.nr_buckets = a->nr_buckets;
	return a->nr_buckets - 1;
}

size_t kpp_agg__nr_buckets(const struct kpp_agg *a)
{
	return a->nr_buckets;
}

const struct kpp_bucket *kpp_agg__bucket(const struct kpp_agg *a, size_t i)
{
	return i < a->nr_buckets ? &a->buckets[i] : NULL;
}

uint64_t kpp_agg__generation(const struct kpp_agg *a)
{
	return a->generation;
}

/* ------------------------------------------------------------ live map */

static size_t live_slot(const struct kpp_agg *a, uint32_t pid, uint64_t addr)
{
	return mix64(addr ^ ((uint64_t)pid << 40)) & (a->live_size - 1);
}

static int live_resize(struct kpp_agg *a, size_t size)
{
	struct live_ent *old = a->live, *n = calloc(size, sizeof(*n));
	size_t old_size = a->live_size;

	if (!n)
		return -ENOMEM;
	a->live = n;
	a->live_size = size;
	for (size_t i = 0; i < old_size; i++) {
		if (!old[i].addr)
			continue;
		size_t s = live_slot(a, old[i].pid, old[i].addr);

		while (n[s].addr)
			s = (s + 1) & (size - 1);
		n[s] = old[i];
	}
	free(old);
	return 0;
}

static struct live_ent *live_find(struct kpp_agg *a, uint32_t pid, uint64_t addr)
{
	if (!a->live_size)
		return NULL;
	for (size_t s = live_slot(a, pid, addr);; s = (s + 1) & (a->live_size - 1)) {
		struct live_ent *e = &a->live[s];

		if (!e->addr)
			return NULL;
		if (e->addr == addr && e->pid == pid)
			return e;
	}
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void live_delete(struct kpp_agg *a, struct live_ent *e)
{
	size_t mask = a->live_size - 1, i = e - a->live, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!a->live[j].addr)
			break;
		size_t k = live_slot(a, a->live[j].pid, a->live[j].addr);

		/* Move j back to i unless its home k lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->live[i] = a->live[j];
		i = j;
	}
	a->live[i].addr = 0;
	a->nr_live--;
	a->st.nr_live = a->nr_live;
}

/* live_insert - 0, or -ENOSPC when max_live is reached. */
static int live_insert(struct kpp_agg *a, uint32_t pid, uint64_t addr, uint32_t bucket)
{
	struct live_ent *e;

	if (a->nr_live >= a->lim.max_live)
		return -ENOSPC;
	if (2 * (a->nr_live + 1) > a->live_size &&
	    live_resize(a, a->live_size ? 2 * a->live_size : 4096))
		return -ENOMEM;
	size_t s = live_slot(a, pid, addr);

	while (a->live[s].addr)
		s = (s + 1) & (a->live_size - 1);
	e = &a->live[s];
	e->addr = addr;
	e->pid = pid;
	e->bucket = bucket;
	a->nr_live++;
	a->st.nr_live = a->nr_live;
	return 0;
}

/* ------------------------------------------------------------ processes */

struct kpp_proc *kpp_agg__proc(const struct kpp_agg *a, uint32_t pid)
{
	for (struct kpp_proc *p = a->procs[pid % PROC_HASH]; p; p = p->hnext)
		if (p->pid == pid)
			return p;
	return NULL;
}

static struct kpp_proc *get_proc(struct kpp_agg *a, uint32_t pid)
{
	struct kpp_proc *p = kpp_agg__proc(a, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->serial = ++a->proc_serial;
	p->hnext = a->procs[pid % PROC_HASH];
	a->procs[pid % PROC_HASH] = p;
	a->st.nr_procs = ++a->nr_procs;
	return p;
}

int kpp_agg__for_each_proc(const struct kpp_agg *a,
			   int (*fn)(void *ctx, struct kpp_proc *p), void *ctx)
{
	for (size_t h = 0; h < PROC_HASH; h++)
		for (struct kpp_proc *p = a->procs[h]; p; p = p->hnext) {
			int err = fn(ctx, p);

			if (err)
				return err;
		}
	return 0;
}

bool kpp_agg__descends_from(const struct kpp_agg *a, uint32_t pid, uint32_t root)
{
	/* Bounded walk: a ppid loop (pid reuse) must not hang us. */
	for (int depth = 0; depth < 1024 && pid; depth++) {
		const struct kpp_proc *p;

		if (pid == root)
			return true;
		p = kpp_agg__proc(a, pid);
		if (!p || p->ppid == pid)
			return false;
		pid = p->ppid;
	}
	return false;
}

static int add_map(struct kpp_proc *p, uint64_t start, uint64_t end, uint64_t offset,
		   const uint8_t *build_id, uint8_t build_id_len, const char *path)
{
	struct kpp_map *m;

	/* The shim re-announces every object after fork/dlopen: dedupe. */
	for (size_t i = 0; i < p->nr_maps; i++) {
		m = &p->maps[i];
		if (m->start == start && m->end == end && m->offset == offset &&
		    !strcmp(m->path, path)) {
			m->unmapped = false;
			return 0;
		}
	}
	if (grow((void **)&p->maps, &p->cap_maps, p->nr_maps + 1, sizeof(*p->maps)))
		return -ENOMEM;
	m = &p->maps[p->nr_maps];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	m->start = start;
	m->end = end;
	m->offset = offset;
	if (build_id_len > KPPROF_BUILD_ID_MAX)
		build_id_len = KPPROF_BUILD_ID_MAX;
	m->build_id_len = build_id_len;
	memcpy(m->build_id, build_id, build_id_len);
	p->nr_maps++;
	return 0;
}

int kpp_agg__add_map(struct kpp_agg *a, uint32_t pid, uint64_t start, uint64_t end,
		     uint64_t offset, const uint8_t *build_id, uint8_t build_id_len,
		     const char *path, bool from_proc)
{
	struct kpp_proc *p = get_proc(a, pid);

	if (!p)
		return -ENOMEM;
	p->maps_from_proc |= from_proc;
	return add_map(p, start, end, offset, build_id, build_id_len, path);
}

/* drop_proc - forget @p and everything charged to it; rebuilds indices. */
static void drop_proc(struct kpp_agg *a, struct kpp_proc *victim)
{
	uint32_t pid = victim->pid;
	uint32_t *remap;
	size_t j = 0;

	remap = malloc((a->nr_buckets + 1) * sizeof(*remap));
	if (!remap)
		return;	/* try again at the next expiry */
	for (size_t i = 0; i < a->nr_buckets; i++) {
		if (a->buckets[i].pid == pid) {
			remap[i] = UINT32_MAX;
			continue;
		}
		remap[i] = j;
		if (i != j)
			a->buckets[j] = a->buckets[i];
		j++;
	}
	a->nr_buckets = j;
	a->st.nr_buckets = j;
	rehash_buckets(a, a->bhash_size ? a->bhash_size : 1024);
	for (int s = 0; s < 3; s++) {
		size_t k = 0;

		for (size_t i = 0; i < a->nr_dirty[s]; i++)
			if (remap[a->dirty[s][i]] != UINT32_MAX)
				a->dirty[s][k++] = remap[a->dirty[s][i]];
		a->nr_dirty[s] = k;
	}
	/* Rebuild the live map without the victim's entries. */
	if (a->live_size) {
		struct live_ent *old = a->live;
		size_t old_size = a->live_size;

		a->live = calloc(old_size, sizeof(*a->live));
		if (!a->live) {
			a->live = old;	/* keep stale entries; frees find nothing worse */
		} else {
			a->nr_live = 0;
			for (size_t i = 0; i < old_size; i++) {
				if (!old[i].addr || old[i].pid == pid)
					continue;
				size_t s = live_slot(a, old[i].pid, old[i].addr);

				while (a->live[s].addr)
					s = (s + 1) & (a->live_size - 1);
				a->live[s] = old[i];
				a->live[s].bucket = remap[old[i].bucket];
				a->nr_live++;
			}
			a->st.nr_live = a->nr_live;
			free(old);
		}
	}
	free(remap);

	struct kpp_proc **pp = &a->procs[pid % PROC_HASH];

	while (*pp && *pp != victim)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = victim->hnext;
	proc_free(victim);
	a->st.nr_procs = --a->nr_procs;
	a->st.procs_dropped++;
	a->generation++;
}

struct expire_ctx {
	size_t exited;
	struct kpp_proc *oldest;
};

static int count_exited(void *c, struct kpp_proc *p)
{
	struct expire_ctx *ctx = c;

	if (p->state != KPP_PROC_EXITED)
		return 0;
	ctx->exited++;
	if (!ctx->oldest || p->exit_seq < ctx->oldest->exit_seq)
		ctx->oldest = p;
	return 0;
}

/*
 * Policy: an exited process's profile stays available until more than
 * max_exited processes have exited; then the one that exited first is
 * dropped (its buckets and live allocations are freed).
 */
void kpp_agg__expire(struct kpp_agg *a)
{
	for (;;) {
		struct expire_ctx ctx = { 0 };

		kpp_agg__for_each_proc(a, count_exited, &ctx);
		if (ctx.exited <= a->lim.max_exited || !ctx.oldest)
			return;
		drop_proc(a, ctx.oldest);
	}
}

/* ------------------------------------------------------------ cycles */

static void fold_slot(struct kpp_agg *a, int s)
{
	for (size_t i = 0; i < a->nr_dirty[s]; i++) {
		struct kpp_bucket *b = &a->buckets[a->dirty[s][i]];
		struct kpp_heap_counts *f = &b->heap.future[s];

		b->heap.active.allocs += f->allocs;
		b->heap.active.frees += f->frees;
		b->heap.active.alloc_bytes += f->alloc_bytes;
		b->heap.active.free_bytes += f->free_bytes;
		memset(f, 0, sizeof(*f));
		b->dirty &= ~(1u << s);
	}
	a->nr_dirty[s] = 0;
}

/*
 * note_cycle - a record of cycle @c was read: every cycle before it is
 * complete.  Folding at most the three slots suffices: whatever they hold
 * belongs to cycles in [first_incomplete, c).
 */
static void note_cycle(struct kpp_agg *a, uint64_t c)
{
	if (!a->st.any_cycle) {
		a->st.any_cycle = true;
		a->st.first_incomplete = c;
		return;
	}
	if (c <= a->st.first_incomplete)
		return;
	for (uint64_t k = a->st.first_incomplete, n = 0; k < c && n < 3; k++, n++) {
		fold_slot(a, k % 3);
		a->st.cycles_folded++;
	}
	a->st.first_incomplete = c;
}

uint64_t kpp_agg__first_incomplete(const struct kpp_agg *a)
{
	return a->st.first_incomplete;
}

/* counts_for - where a heap event of cycle @c goes. */
static struct kpp_heap_counts *counts_for(struct kpp_agg *a, uint32_t bi, uint64_t c)
{
	struct kpp_bucket *b = &a->buckets[bi];
	int s = c % 3;

	if (c < a->st.first_incomplete) {
		a->st.late_records++;
		return &b->heap.active;
	}
	if (!(b->dirty & (1u << s))) {
		if (grow((void **)&a->dirty[s], &a->cap_dirty[s], a->nr_dirty[s] + 1,
			 sizeof(uint32_t)))
			return NULL;
		a->dirty[s][a->nr_dirty[s]++] = bi;
		b->dirty |= 1u << s;
	}
	return &b->heap.future[s];
}

/* ------------------------------------------------------------ records */

static int add_alloc(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_heap_counts *hc;
	struct live_ent *e;
	int64_t st, bi;

	st = intern_stack(a, r);
	if (st < 0) {
		a->st.over_stacks += st == -ENOSPC;
		return st == -ENOSPC ? 0 : (int)st;
	}
	bi = find_bucket(a, KPP_HEAP, r->tgid, st, r->alloc.bytes, r->alloc.rate);
	if (bi < 0) {
		a->st.over_buckets += bi == -ENOSPC;
		return bi == -ENOSPC ? 0 : (int)bi;
	}
	/*
	 * A FREE we never got (dropped in a full ring): the address is in use
	 * again, so the old allocation was freed. Count that free for its
	 * bucket, in this record's cycle, or the bucket over-counts in use
	 * forever.
	 */
	e = live_find(a, r->tgid, r->alloc.addr);
	if (e) {
		uint32_t old = e->bucket;

		a->st.replaced_allocs++;
		live_delete(a, e);
		hc = counts_for(a, old, r->cycle);
		if (!hc)
			return -ENOMEM;
		hc->frees++;
		hc->free_bytes += a->buckets[old].size;
	}
	/*
	 * Count the allocation even when we cannot remember its address:
	 * alloc_* stay right, inuse over-counts, and over_live says so.
	 */
	int err = live_insert(a, r->tgid, r->alloc.addr, bi);

	if (err == -ENOSPC)
		a->st.over_live++;
	else if (err)
		return err;
	hc = counts_for(a, bi, r->cycle);
	if (!hc)
		return -ENOMEM;
	hc->allocs++;
	hc->alloc_bytes += r->alloc.bytes;
	return 0;
}

static int add_free(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct live_ent *e = live_find(a, r->tgid, r->alloc.addr);
	struct kpp_heap_counts *hc;
	uint32_t bi;

	if (!e) {
		a->st.unknown_frees++;
		return 0;
	}
	bi = e->bucket;
	live_delete(a, e);
	hc = counts_for(a, bi, r->cycle);
	if (!hc)
		return -ENOMEM;
	hc->frees++;
	/* The size the allocation was charged with, whatever FREE says. */
	hc->free_bytes += a->buckets[bi].size;
	return 0;
}

/*
 * add_contention - unbias as Go does.  BLOCK (rate in ns): a wait d >= rate
 * was always recorded and counts once; a shorter one was kept with
 * probability d / rate and stands for rate / d waits of rate ns in all
 * (CL 299991).  MUTEX (rate = fraction N): one in N hand-offs was kept.
 */
static int add_contention(struct kpp_agg *a, const struct kpp_rec *r)
{
	int type = r->kind == KPPROF_REC_BLOCK ? KPP_BLOCK : KPP_MUTEX;
	double d = (double)r->cont.delay_ns, rate = (double)r->cont.rate;
	struct kpp_bucket *b;
	int64_t st, bi;

	st = intern_stack(a, r);
	if (st < 0) {
		a->st.over_stacks += st == -ENOSPC;
		return st == -ENOSPC ? 0 : (int)st;
	}
	bi = find_bucket(a, type, r->tgid, st, 0, 0);
	if (bi < 0) {
		a->st.over_buckets += bi == -ENOSPC;
		return bi == -ENOSPC ? 0 : (int)bi;
	}
	b = &a->buckets[bi];
	if (type == KPP_BLOCK) {
		if (d >= rate || d <= 0) {
			b->cont.count += 1;
			b->cont.delay += d;
		} else {
			b->cont.count += rate / d;
			b->cont.delay += rate;
		}
	} else {
		b->cont.count += rate;
		b->cont.delay += d * rate;
	}
	return 0;
}

/*
 * An image ends at exec: the process goes on under its pid with other code
 * and other memory.  The old image is dropped as a process is (its buckets,
 * live allocations and mappings; drop_proc), so its allocations never stay
 * in use under the new comm and its addresses never resolve in the new
 * image's mappings.  The shim says so with COMM EXEC just before the exec;
 * if that record was lost, the new image's START for a pid already named
 * says it too.  (Go: a process that is gone has no profile.)
 */
static bool ends_image(const struct kpp_proc *p, uint32_t reason)
{
	if (p->state == KPP_PROC_EXITED)	/* pid reused: a new process */
		return reason != KPPROF_COMM_EXIT;
	return reason == KPPROF_COMM_EXEC || (reason == KPPROF_COMM_START && p->named);
}

static int add_comm(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_proc *p = kpp_agg__proc(a, r->tgid);

	if (p && ends_image(p, r->comm.reason)) {
		drop_proc(a, p);
		a->st.procs_dropped--;	/* counted as an image ended, not lost */
		a->st.images_ended++;
		p = NULL;
	}
	if (!p)
		p = get_proc(a, r->tgid);
	if (!p)
		return -ENOMEM;
	if (r->comm.comm[0])
		memcpy(p->comm, r->comm.comm, sizeof(p->comm));
	if (r->comm.reason != KPPROF_COMM_EXIT) {
		p->named = true;
		if (r->comm.ppid)
			p->ppid = r->comm.ppid;
	}
	if (r->comm.reason == KPPROF_COMM_EXIT && p->state != KPP_PROC_EXITED) {
		p->state = KPP_PROC_EXITED;
		p->exit_seq = ++a->exit_seq;
		kpp_agg__expire(a);
	}
	return 0;
}

int kpp_agg__add(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_proc *p;

	if (r->kind < KPPROF_REC_KINDS)
		a->st.records[r->kind]++;
	note_cycle(a, r->cycle);

	switch (r->kind) {
	case KPPROF_REC_ALLOC:
		return add_alloc(a, r);
	case KPPROF_REC_FREE:
		return add_free(a, r);
	case KPPROF_REC_BLOCK:
	case KPPROF_REC_MUTEX:
		return add_contention(a, r);
	case KPPROF_REC_MMAP:
		p = get_proc(a, r->tgid);
		return p ? add_map(p, r->mmap.start, r->mmap.end, r->mmap.offset,
				   r->mmap.build_id, r->mmap.build_id_len, r->mmap.path) : -ENOMEM;
	case KPPROF_REC_MUNMAP:
		p = kpp_agg__proc(a, r->tgid);
		for (size_t i = 0; p && i < p->nr_maps; i++)
			if (p->maps[i].start == r->mmap.start && p->maps[i].end == r->mmap.end)
				p->maps[i].unmapped = true;
		return 0;
	case KPPROF_REC_COMM:
		return add_comm(a, r);
	case KPPROF_REC_NOTE:
		if (r->note.what != KPPROF_NOTE_SECCOMP)
			return 0;
		p = get_proc(a, r->tgid);
		if (!p)
			return -ENOMEM;
		p->seccomp_stopped = true;
		p->seccomp_unsent = r->note.value;
		return 0;
	case KPPROF_REC_LOST:
		a->st.lost_records += r->lost.full + r->lost.invalid;
		a->st.lost_resets += r->lost.resets;
		p = get_proc(a, r->tgid);
		if (!p)
			return -ENOMEM;
		p->lost += r->lost.full + r->lost.invalid;
		return 0;
	case KPPROF_REC_CYCLE:
	default:
		return 0;
	}
}

const struct kpp_agg_stats *kpp_agg__stats(const struct kpp_agg *a)
{
	return &a->st;
}
