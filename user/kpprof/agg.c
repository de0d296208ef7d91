// SPDX-License-Identifier: GPL-2.0
/*
 * agg.c - aggregate decoded records into buckets.  Patterned after Go's
 * runtime/mprof.go (buckets, memRecord cycles, scaleHeapSample later in
 * export), for records that arrive through the kpprof ring.
 *
 * Data model
 * ----------
 *   stacks   interned: chained hash, id = index, frames malloc'd per stack.
 *            A stack is shared by every bucket (and every process) that has
 *            it, reference-counted by buckets: freed (id reused) when the
 *            last bucket using it is dropped, so a long-running collector
 *            sees ASLR give every run new stacks and never fills up.
 *   buckets  one array, chained hash on (type, pid, stack, size, rate).
 *            Heap buckets carry the mem_rate in their key because the rate
 *            can change while we run and each sample must be unbiased with
 *            the rate it was taken at.  Each process lists its own buckets
 *            (kpp_bucket.pnext); a dropped process's slots go on a free
 *            list and are reused.
 *   live     per process, an open-addressing map addr -> heap bucket, one
 *            entry per sampled allocation not yet freed, so a FREE record
 *            (which has no stack) finds the bucket its allocation was
 *            charged to.
 *   procs    pid -> comm, ppid, state, mappings (for symbolization), and
 *            what it owns.  Exited processes wait in a FIFO.
 *   uids     what each uid's processes hold, against its quota.
 *
 * Forgetting a process (exit beyond max_exited, exec, pid reuse) costs
 * what it owns: its bucket list, its live table, its FIFO link; never a
 * pass over the other processes' state (drop_work counts it).
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

/*
 * The bound (README "Memory"): each unit below costs at most about
 *   bucket 176 B (struct + hash head), stack 48 B + 8 B per frame,
 *   live allocation 64 B (16 B entries, table at most 1/4 full after
 *   doubling), process ~ 200 B + its mappings.
 * Per uid a quarter of each global cap, per process half of that, so
 * four flooding uids are needed to fill a cap, and a uid's other
 * processes keep room when one of its processes floods.
 */
#define DEFAULT_MAX_BUCKETS	(1u << 20)
#define DEFAULT_MAX_STACKS	(1u << 20)
#define DEFAULT_MAX_STACK_PCS	(1u << 25)	/* 256 MiB of frames */
#define DEFAULT_MAX_LIVE	(1u << 22)
#define DEFAULT_MAX_EXITED	256
#define DEFAULT_MAX_UID_PROCS	8192
#define PROC_HASH		1024
#define UID_HASH		256

struct stack_ent {
	uint64_t *pcs;		/* NULL: a free slot */
	uint64_t hash;
	uint32_t next;		/* hash chain, or free list: index + 1 */
	uint32_t refs;		/* buckets using it */
	uint16_t n;
	struct kpp_uid_acct *acct;	/* charged for its frames */
};

struct kpp_live_ent {
	uint64_t addr;		/* 0: empty slot */
	uint32_t bucket;
};

struct kpp_uid_acct {
	uint32_t uid;
	size_t procs, buckets, live, stack_pcs;
	/* Its exited processes, oldest first (max_uid_exited). */
	struct kpp_proc *ex_head, *ex_tail;
	size_t exited;
	/* Over max_uid_exited, waiting for kpp_agg__expire (never freed meanwhile). */
	bool listed;
	struct kpp_uid_acct *over_next;
	struct kpp_uid_acct *next;
};

struct kpp_agg {
	struct kpp_agg_limits lim;
	struct kpp_agg_stats st;
	uint64_t generation;
	uint64_t exit_seq;
	uint64_t proc_serial;
	struct kpp_uid_acct *over_exited;	/* uids over max_uid_exited */

	struct kpp_bucket *buckets;
	size_t nr_buckets, cap_buckets;	/* extent of the array */
	size_t used_buckets;
	uint32_t bfree;		/* free slots: index + 1 through kpp_bucket.next */
	uint32_t *bhash;	/* heads: index + 1 */
	size_t bhash_size;	/* power of two */
	/*
	 * Buckets whose future[s] is not empty, per slot.  An entry may name
	 * a slot freed (or reused) since: fold_slot checks the dirty bit.
	 */
	uint32_t *dirty[3];
	size_t nr_dirty[3], cap_dirty[3];

	struct stack_ent *stacks;
	size_t nr_stacks, cap_stacks;	/* extent */
	size_t used_stacks, used_pcs;
	uint32_t sfree;		/* free ids: index + 1 through stack_ent.next */
	uint32_t *shash;
	size_t shash_size;

	size_t nr_live;

	struct kpp_proc *procs[PROC_HASH];
	size_t nr_procs;
	struct kpp_proc *exited_head, *exited_tail;
	size_t nr_exited;

	struct kpp_uid_acct *uids[UID_HASH];
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

static size_t or_default(const struct kpp_agg_limits *lim, size_t v, size_t def)
{
	return lim && v ? v : def;
}

/* A share of a cap: 1/@div of it, at least 1; no limit stays none. */
static size_t share(size_t cap, size_t div)
{
	return cap == SIZE_MAX ? SIZE_MAX : cap / div ? cap / div : 1;
}

struct kpp_agg *kpp_agg__new(const struct kpp_agg_limits *lim)
{
	struct kpp_agg *a = calloc(1, sizeof(*a));
	struct kpp_agg_limits *l;

	if (!a)
		return NULL;
	l = &a->lim;
	l->max_buckets = or_default(lim, lim ? lim->max_buckets : 0, DEFAULT_MAX_BUCKETS);
	l->max_stacks = or_default(lim, lim ? lim->max_stacks : 0, DEFAULT_MAX_STACKS);
	l->max_stack_pcs = or_default(lim, lim ? lim->max_stack_pcs : 0, DEFAULT_MAX_STACK_PCS);
	l->max_live = or_default(lim, lim ? lim->max_live : 0, DEFAULT_MAX_LIVE);
	l->max_exited = or_default(lim, lim ? lim->max_exited : 0, DEFAULT_MAX_EXITED);
	l->max_uid_exited = or_default(lim, lim ? lim->max_uid_exited : 0,
				       share(l->max_exited, 4));
	l->max_uid_buckets = or_default(lim, lim ? lim->max_uid_buckets : 0,
					share(l->max_buckets, 4));
	l->max_uid_stack_pcs = or_default(lim, lim ? lim->max_uid_stack_pcs : 0,
					  share(l->max_stack_pcs, 4));
	l->max_uid_live = or_default(lim, lim ? lim->max_uid_live : 0, share(l->max_live, 4));
	l->max_uid_procs = or_default(lim, lim ? lim->max_uid_procs : 0, DEFAULT_MAX_UID_PROCS);
	l->max_proc_buckets = or_default(lim, lim ? lim->max_proc_buckets : 0,
					 share(l->max_uid_buckets, 2));
	l->max_proc_live = or_default(lim, lim ? lim->max_proc_live : 0,
				      share(l->max_uid_live, 2));
	l->keep_exited_inuse = lim && lim->keep_exited_inuse;
	return a;
}

static void proc_free(struct kpp_proc *p)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		free(p->maps[i].path);
	free(p->maps);
	free(p->live);
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
	for (size_t h = 0; h < UID_HASH; h++) {
		struct kpp_uid_acct *u = a->uids[h], *n;

		for (; u; u = n) {
			n = u->next;
			free(u);
		}
	}
	for (size_t i = 0; i < a->nr_stacks; i++)
		free(a->stacks[i].pcs);
	for (int s = 0; s < 3; s++)
		free(a->dirty[s]);
	free(a->buckets);
	free(a->bhash);
	free(a->stacks);
	free(a->shash);
	free(a);
}

/* ------------------------------------------------------------ uids */

static struct kpp_uid_acct *uid_get(struct kpp_agg *a, uint32_t uid)
{
	struct kpp_uid_acct **h = &a->uids[mix64(uid) % UID_HASH], *u;

	for (u = *h; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = *h;
	*h = u;
	a->st.nr_uids++;
	return u;
}

/* uid_put - forget @u once nothing is charged to it (bounds the uid table). */
static void uid_put(struct kpp_agg *a, struct kpp_uid_acct *u)
{
	struct kpp_uid_acct **pp;

	if (u->procs || u->buckets || u->live || u->stack_pcs || u->listed)
		return;
	for (pp = &a->uids[mix64(u->uid) % UID_HASH]; *pp && *pp != u; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = u->next;
	free(u);
	a->st.nr_uids--;
}

/* ------------------------------------------------------------ stacks */

static void stack_stats(struct kpp_agg *a)
{
	a->st.nr_stacks = a->used_stacks;
	a->st.stack_bytes = a->used_pcs * 8 + a->nr_stacks * sizeof(struct stack_ent) +
			    a->shash_size * sizeof(uint32_t);
}

static int rehash_stacks(struct kpp_agg *a, size_t size)
{
	uint32_t *h = calloc(size, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < a->nr_stacks; i++) {
		if (!a->stacks[i].pcs)
			continue;
		size_t slot = a->stacks[i].hash & (size - 1);

		a->stacks[i].next = h[slot];
		h[slot] = i + 1;
	}
	/* Free ids lost their list links to the rehash: rebuild it. */
	a->sfree = 0;
	for (size_t i = a->nr_stacks; i-- > 0;)
		if (!a->stacks[i].pcs) {
			a->stacks[i].next = a->sfree;
			a->sfree = i + 1;
		}
	free(a->shash);
	a->shash = h;
	a->shash_size = size;
	return 0;
}

/*
 * intern_stack - id of the stack @r carries, charged to @u if new;
 * -ENOSPC (counted here, by reason) or -ENOMEM.  A new stack has no
 * reference yet: the caller takes one (stack_ref) or lets it go
 * (stack_unref_if_unused).
 */
static int64_t intern_stack(struct kpp_agg *a, struct kpp_uid_acct *u, const struct kpp_rec *r)
{
	uint64_t hash = r->nr_pcs;
	struct stack_ent *e;
	size_t slot;
	uint32_t id;

	for (unsigned int i = 0; i < r->nr_pcs; i++)
		hash = mix64(hash ^ kpp_rec__pc(r, i));
	if (a->shash_size) {
		slot = hash & (a->shash_size - 1);
		for (uint32_t i = a->shash[slot]; i; i = a->stacks[i - 1].next) {
			e = &a->stacks[i - 1];
			if (e->hash == hash && e->n == r->nr_pcs &&
			    !memcmp(e->pcs, r->pcs, 8 * (size_t)e->n))
				return i - 1;
		}
	}
	if (a->used_stacks >= a->lim.max_stacks) {
		a->st.over_stacks++;
		return -ENOSPC;
	}
	if (a->used_pcs + r->nr_pcs > a->lim.max_stack_pcs) {
		a->st.over_stack_pcs++;
		return -ENOSPC;
	}
	if (u->stack_pcs + r->nr_pcs > a->lim.max_uid_stack_pcs) {
		a->st.over_uid_stacks++;
		return -ENOSPC;
	}
	if (!a->sfree &&
	    grow((void **)&a->stacks, &a->cap_stacks, a->nr_stacks + 1, sizeof(*a->stacks)))
		return -ENOMEM;
	if (a->used_stacks + 1 > a->shash_size &&
	    rehash_stacks(a, a->shash_size ? 2 * a->shash_size : 1024))
		return -ENOMEM;
	/* At least one word, so that an empty stack is not a free slot. */
	uint64_t *pcs = malloc(8 * (size_t)(r->nr_pcs ? r->nr_pcs : 1));

	if (!pcs)
		return -ENOMEM;
	if (a->sfree) {
		id = a->sfree - 1;
		a->sfree = a->stacks[id].next;
	} else {
		id = a->nr_stacks++;
	}
	e = &a->stacks[id];
	e->pcs = pcs;
	memcpy(pcs, r->pcs, 8 * (size_t)r->nr_pcs);
	e->n = r->nr_pcs;
	e->hash = hash;
	e->refs = 0;
	e->acct = u;
	u->stack_pcs += r->nr_pcs;
	a->used_pcs += r->nr_pcs;
	a->used_stacks++;
	slot = hash & (a->shash_size - 1);
	e->next = a->shash[slot];
	a->shash[slot] = id + 1;
	stack_stats(a);
	return id;
}

static void stack_free(struct kpp_agg *a, uint32_t id)
{
	struct stack_ent *e = &a->stacks[id];
	uint32_t *pp = &a->shash[e->hash & (a->shash_size - 1)];

	while (*pp && *pp != id + 1)
		pp = &a->stacks[*pp - 1].next;
	if (*pp)
		*pp = e->next;
	e->acct->stack_pcs -= e->n;
	uid_put(a, e->acct);
	a->used_pcs -= e->n;
	a->used_stacks--;
	free(e->pcs);
	memset(e, 0, sizeof(*e));
	e->next = a->sfree;
	a->sfree = id + 1;
	a->st.stacks_freed++;
	a->generation++;
	stack_stats(a);
}

/* A stack interned for a record that then made no bucket. */
static void stack_unref_if_unused(struct kpp_agg *a, uint32_t id)
{
	if (!a->stacks[id].refs)
		stack_free(a, id);
}

const uint64_t *kpp_agg__stack(const struct kpp_agg *a, uint32_t id, unsigned int *n)
{
	if (id >= a->nr_stacks || !a->stacks[id].pcs) {
		*n = 0;
		return NULL;
	}
	*n = a->stacks[id].n;
	return a->stacks[id].pcs;
}

/* ------------------------------------------------------------ buckets */

static uint64_t bucket_hash(int type, uint32_t pid, uint32_t stack,
			    uint64_t size, uint64_t rate)
{
	return mix64(((uint64_t)pid << 32 | stack) ^ mix64(size ^ (rate << 3) ^ type));
}

static size_t bucket_slot(const struct kpp_agg *a, const struct kpp_bucket *b)
{
	return bucket_hash(b->type, b->pid, b->stack, b->size, b->rate) & (a->bhash_size - 1);
}

static int rehash_buckets(struct kpp_agg *a, size_t size)
{
	uint32_t *h = calloc(size, sizeof(*h));

	if (!h)
		return -ENOMEM;
	free(a->bhash);
	a->bhash = h;
	a->bhash_size = size;
	for (size_t i = 0; i < a->nr_buckets; i++) {
		struct kpp_bucket *b = &a->buckets[i];

		if (b->type == KPP_FREE_BUCKET)
			continue;	/* its .next is the free list */
		size_t slot = bucket_slot(a, b);

		b->next = h[slot];
		h[slot] = i + 1;
	}
	return 0;
}

/* find_bucket - index of @p's bucket, created if new; -ENOSPC (counted), -ENOMEM. */
static int64_t find_bucket(struct kpp_agg *a, struct kpp_proc *p, int type,
			   uint32_t stack, uint64_t size, uint64_t rate)
{
	uint64_t hash = bucket_hash(type, p->pid, stack, size, rate);
	struct kpp_bucket *b;
	size_t slot;
	uint32_t bi;

	if (a->bhash_size) {
		slot = hash & (a->bhash_size - 1);
		for (uint32_t i = a->bhash[slot]; i; i = a->buckets[i - 1].next) {
			b = &a->buckets[i - 1];
			if (b->pid == p->pid && b->stack == stack && b->type == type &&
			    b->size == size && b->rate == rate)
				return i - 1;
		}
	}
	if (a->used_buckets >= a->lim.max_buckets) {
		a->st.over_buckets++;
		return -ENOSPC;
	}
	if (p->acct->buckets >= a->lim.max_uid_buckets) {
		a->st.over_uid_buckets++;
		return -ENOSPC;
	}
	if (p->nr_buckets >= a->lim.max_proc_buckets) {
		a->st.over_proc_buckets++;
		return -ENOSPC;
	}
	if (!a->bfree &&
	    grow((void **)&a->buckets, &a->cap_buckets, a->nr_buckets + 1, sizeof(*a->buckets)))
		return -ENOMEM;
	if (a->used_buckets + 1 > a->bhash_size &&
	    rehash_buckets(a, a->bhash_size ? 2 * a->bhash_size : 1024))
		return -ENOMEM;
	if (a->bfree) {
		bi = a->bfree - 1;
		a->bfree = a->buckets[bi].next;
	} else {
		bi = a->nr_buckets++;
	}
	b = &a->buckets[bi];
	memset(b, 0, sizeof(*b));
	b->type = type;
	b->pid = p->pid;
	b->stack = stack;
	b->size = size;
	b->rate = rate;
	slot = hash & (a->bhash_size - 1);
	b->next = a->bhash[slot];
	a->bhash[slot] = bi + 1;
	b->pnext = p->buckets;
	p->buckets = bi + 1;
	p->nr_buckets++;
	p->acct->buckets++;
	a->stacks[stack].refs++;
	a->used_buckets++;
	a->st.nr_buckets = a->used_buckets;
	return bi;
}

/* bucket_free - unlink bucket @bi (of a process being dropped) and free its slot. */
static void bucket_free(struct kpp_agg *a, uint32_t bi)
{
	struct kpp_bucket *b = &a->buckets[bi];
	uint32_t *pp = &a->bhash[bucket_slot(a, b)];
	uint32_t stack = b->stack;

	while (*pp && *pp != bi + 1) {
		pp = &a->buckets[*pp - 1].next;
		a->st.drop_work++;
	}
	if (*pp)
		*pp = b->next;
	memset(b, 0, sizeof(*b));
	b->type = KPP_FREE_BUCKET;
	b->next = a->bfree;
	a->bfree = bi + 1;
	a->used_buckets--;
	a->st.nr_buckets = a->used_buckets;
	if (!--a->stacks[stack].refs)
		stack_free(a, stack);
}

size_t kpp_agg__nr_buckets(const struct kpp_agg *a)
{
	return a->nr_buckets;
}

const struct kpp_bucket *kpp_agg__bucket(const struct kpp_agg *a, size_t i)
{
	if (i >= a->nr_buckets || a->buckets[i].type == KPP_FREE_BUCKET)
		return NULL;
	return &a->buckets[i];
}

uint64_t kpp_agg__generation(const struct kpp_agg *a)
{
	return a->generation;
}

/* ------------------------------------------------------------ live map */

/* Per process: addr -> bucket, open addressing, at most half full. */
static size_t live_slot(const struct kpp_proc *p, uint64_t addr)
{
	return mix64(addr) & (p->live_size - 1);
}

static int live_resize(struct kpp_proc *p, size_t size)
{
	struct kpp_live_ent *old = p->live, *n = calloc(size, sizeof(*n));
	size_t old_size = p->live_size;

	if (!n)
		return -ENOMEM;
	p->live = n;
	p->live_size = size;
	for (size_t i = 0; i < old_size; i++) {
		if (!old[i].addr)
			continue;
		size_t s = live_slot(p, old[i].addr);

		while (n[s].addr)
			s = (s + 1) & (size - 1);
		n[s] = old[i];
	}
	free(old);
	return 0;
}

static struct kpp_live_ent *live_find(struct kpp_proc *p, uint64_t addr)
{
	if (!p || !p->live_size)
		return NULL;
	for (size_t s = live_slot(p, addr);; s = (s + 1) & (p->live_size - 1)) {
		struct kpp_live_ent *e = &p->live[s];

		if (!e->addr)
			return NULL;
		if (e->addr == addr)
			return e;
	}
}

static void live_uncharge(struct kpp_agg *a, struct kpp_proc *p, size_t n)
{
	p->nr_live -= n;
	p->acct->live -= n;
	a->nr_live -= n;
	a->st.nr_live = a->nr_live;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void live_delete(struct kpp_agg *a, struct kpp_proc *p, struct kpp_live_ent *e)
{
	size_t mask = p->live_size - 1, i = e - p->live, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!p->live[j].addr)
			break;
		size_t k = live_slot(p, p->live[j].addr);

		/* Move j back to i unless its home k lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		p->live[i] = p->live[j];
		i = j;
	}
	p->live[i].addr = 0;
	live_uncharge(a, p, 1);
}

/* live_insert - 0, or -ENOSPC (counted, by reason) or -ENOMEM. */
static int live_insert(struct kpp_agg *a, struct kpp_proc *p, uint64_t addr, uint32_t bucket)
{
	struct kpp_live_ent *e;

	if (a->nr_live >= a->lim.max_live) {
		a->st.over_live++;
		return -ENOSPC;
	}
	if (p->acct->live >= a->lim.max_uid_live) {
		a->st.over_uid_live++;
		return -ENOSPC;
	}
	if (p->nr_live >= a->lim.max_proc_live) {
		a->st.over_proc_live++;
		return -ENOSPC;
	}
	if (2 * (p->nr_live + 1) > p->live_size &&
	    live_resize(p, p->live_size ? 2 * p->live_size : 16))
		return -ENOMEM;
	size_t s = live_slot(p, addr);

	while (p->live[s].addr)
		s = (s + 1) & (p->live_size - 1);
	e = &p->live[s];
	e->addr = addr;
	e->bucket = bucket;
	p->nr_live++;
	p->acct->live++;
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

/*
 * get_proc - @pid's process, created (charged to @uid) if new; NULL with
 * *err = -ENOSPC (counted: the uid's process quota) or -ENOMEM.
 */
static struct kpp_proc *get_proc(struct kpp_agg *a, uint32_t pid, uint32_t uid, int *err)
{
	struct kpp_proc *p = kpp_agg__proc(a, pid);
	struct kpp_uid_acct *u;

	*err = 0;
	if (p)
		return p;
	*err = -ENOMEM;
	u = uid_get(a, uid);
	if (!u)
		return NULL;
	if (u->procs >= a->lim.max_uid_procs) {
		a->st.over_uid_procs++;
		*err = -ENOSPC;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		uid_put(a, u);
		return NULL;
	}
	p->pid = pid;
	p->uid = uid;
	p->acct = u;
	u->procs++;
	p->serial = ++a->proc_serial;
	p->hnext = a->procs[pid % PROC_HASH];
	a->procs[pid % PROC_HASH] = p;
	a->st.nr_procs = ++a->nr_procs;
	*err = 0;
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

/* Mappings kept per process; more are refused and counted (maps_refused). */
#define KPP_MAX_MAPS_PER_PROC 4096

static int add_map(struct kpp_proc *p, uint64_t start, uint64_t end, uint64_t offset,
		   const uint8_t *build_id, uint8_t build_id_len, const char *path)
{
	struct kpp_map *m;

	/*
	 * The shim re-announces every object after fork/dlopen: dedupe.  The
	 * scan is bounded by the cap (a producer may send any number of
	 * records; a real process has a few hundred executable mappings).
	 */
	for (size_t i = 0; i < p->nr_maps; i++) {
		m = &p->maps[i];
		if (m->start == start && m->end == end && m->offset == offset &&
		    !strcmp(m->path, path)) {
			m->unmapped = false;
			return 0;
		}
	}
	if (p->nr_maps >= KPP_MAX_MAPS_PER_PROC) {
		p->maps_refused++;
		return 0;
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
	m->uid = p->uid;
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
	int err = 0;
	/* Learnt by the collector itself (/proc): charged to root if new. */
	struct kpp_proc *p = get_proc(a, pid, 0, &err);

	if (!p)
		return err;
	p->maps_from_proc |= from_proc;
	return add_map(p, start, end, offset, build_id, build_id_len, path);
}

static void exited_unlink(struct kpp_agg *a, struct kpp_proc *p)
{
	struct kpp_uid_acct *u = p->acct;

	if (p->eprev)
		p->eprev->enext = p->enext;
	else if (a->exited_head == p)
		a->exited_head = p->enext;
	else
		return;		/* not in the FIFO (nor in its uid's) */
	if (p->enext)
		p->enext->eprev = p->eprev;
	else
		a->exited_tail = p->eprev;
	p->enext = p->eprev = NULL;
	a->nr_exited--;
	if (p->ueprev)
		p->ueprev->uenext = p->uenext;
	else
		u->ex_head = p->uenext;
	if (p->uenext)
		p->uenext->ueprev = p->ueprev;
	else
		u->ex_tail = p->ueprev;
	p->uenext = p->ueprev = NULL;
	u->exited--;
}

/*
 * drop_proc - forget @victim and everything charged to it: its own
 * buckets (and the stacks only they used), its live table, its mappings.
 * O(what it owns); the other processes' state is not visited.
 */
static void drop_proc(struct kpp_agg *a, struct kpp_proc *victim)
{
	struct kpp_uid_acct *u = victim->acct;
	struct kpp_proc **pp;

	for (uint32_t i = victim->buckets, next; i; i = next) {
		next = a->buckets[i - 1].pnext;
		bucket_free(a, i - 1);
		u->buckets--;
		a->st.drop_work++;
	}
	live_uncharge(a, victim, victim->nr_live);
	a->st.drop_work++;	/* its live table: one free() */
	exited_unlink(a, victim);
	for (pp = &a->procs[victim->pid % PROC_HASH]; *pp && *pp != victim; pp = &(*pp)->hnext)
		;
	if (*pp)
		*pp = victim->hnext;
	proc_free(victim);
	u->procs--;
	uid_put(a, u);
	a->st.nr_procs = --a->nr_procs;
	a->st.procs_dropped++;
	a->generation++;
}

/*
 * Policy: an exited process's profile stays available until more than
 * max_exited processes have exited; then the one that exited first is
 * dropped (its buckets and live allocations are freed).  The FIFO makes
 * each step O(1) however many are kept (`record` keeps them all).
 */
void kpp_agg__expire(struct kpp_agg *a)
{
	/*
	 * First each uid over max_uid_exited drops its own oldest (counted):
	 * one uid's churn of short processes never pushes the other uids'
	 * exited profiles out.  Here, not at the exit, which may come while
	 * the caller walks the processes (reap).
	 */
	while (a->over_exited) {
		struct kpp_uid_acct *u = a->over_exited;

		a->over_exited = u->over_next;
		u->over_next = NULL;
		u->listed = false;
		while (u->exited > a->lim.max_uid_exited && u->ex_head) {
			a->st.drop_work++;
			a->st.over_uid_exited++;
			drop_proc(a, u->ex_head);
		}
		uid_put(a, u);
	}
	while (a->nr_exited > a->lim.max_exited && a->exited_head) {
		a->st.drop_work++;
		drop_proc(a, a->exited_head);
	}
}


/* ------------------------------------------------------------ cycles */

static void fold_slot(struct kpp_agg *a, int s)
{
	for (size_t i = 0; i < a->nr_dirty[s]; i++) {
		struct kpp_bucket *b = &a->buckets[a->dirty[s][i]];
		struct kpp_heap_counts *f = &b->heap.future[s];

		/* A slot freed since (or reused, and listed again): skip. */
		if (b->type != KPP_HEAP || !(b->dirty & (1u << s)))
			continue;

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

/*
 * record_proc - the process a record is charged to, created if new; NULL
 * when refused (*err = 0, counted) or out of memory (*err = -ENOMEM).
 */
static struct kpp_proc *record_proc(struct kpp_agg *a, const struct kpp_rec *r, int *err)
{
	struct kpp_proc *p = get_proc(a, r->tgid, r->uid, err);

	if (!p && *err == -ENOSPC)
		*err = 0;
	return p;
}

/* stack_and_bucket - the bucket of @r's stack in @p; <0 as find_bucket. */
static int64_t stack_and_bucket(struct kpp_agg *a, struct kpp_proc *p, int type,
				const struct kpp_rec *r, uint64_t size, uint64_t rate)
{
	int64_t st, bi;

	st = intern_stack(a, p->acct, r);
	if (st < 0)
		return st;
	bi = find_bucket(a, p, type, st, size, rate);
	if (bi < 0)
		stack_unref_if_unused(a, st);
	return bi;
}

static int add_alloc(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_heap_counts *hc;
	struct kpp_live_ent *e;
	struct kpp_proc *p;
	int64_t bi;
	int err;

	p = record_proc(a, r, &err);
	if (!p)
		return err;
	bi = stack_and_bucket(a, p, KPP_HEAP, r, r->alloc.bytes, r->alloc.rate);
	if (bi < 0)
		return bi == -ENOSPC ? 0 : (int)bi;
	/*
	 * A FREE we never got (dropped in a full ring): the address is in use
	 * again, so the old allocation was freed. Count that free for its
	 * bucket, in this record's cycle, or the bucket over-counts in use
	 * forever.
	 */
	e = live_find(p, r->alloc.addr);
	if (e) {
		uint32_t old = e->bucket;

		a->st.replaced_allocs++;
		live_delete(a, p, e);
		hc = counts_for(a, old, r->cycle);
		if (!hc)
			return -ENOMEM;
		hc->frees++;
		hc->free_bytes += a->buckets[old].size;
	}
	/*
	 * Count the allocation even when we cannot remember its address:
	 * alloc_* stay right, inuse over-counts, and over_*live says so.
	 */
	err = live_insert(a, p, r->alloc.addr, bi);
	if (err && err != -ENOSPC)
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
	struct kpp_proc *p = kpp_agg__proc(a, r->tgid);
	struct kpp_live_ent *e = live_find(p, r->alloc.addr);
	struct kpp_heap_counts *hc;
	uint32_t bi;

	if (!e) {
		a->st.unknown_frees++;
		return 0;
	}
	bi = e->bucket;
	live_delete(a, p, e);
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
	struct kpp_proc *p;
	int64_t bi;
	int err;

	p = record_proc(a, r, &err);
	if (!p)
		return err;
	bi = stack_and_bucket(a, p, type, r, 0, 0);
	if (bi < 0)
		return bi == -ENOSPC ? 0 : (int)bi;
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
 * if that record was lost, the new image's START for a pid already known
 * says it too.  START and FORK are the first records a new process
 * writes (the shim's constructor and atfork child handler), so one for a
 * pid that already has state means that pid was reused: the old process
 * died without an EXIT record (SIGKILL) and the kernel gave its free pid
 * to a new one (a forked child in particular).  (Go: a process that is
 * gone has no profile.)
 */
static bool ends_image(const struct kpp_proc *p, uint32_t reason)
{
	if (p->state == KPP_PROC_EXITED)	/* pid reused: a new process */
		return reason != KPPROF_COMM_EXIT;
	if (reason == KPPROF_COMM_EXEC)
		return true;
	if (reason != KPPROF_COMM_START && reason != KPPROF_COMM_FORK)
		return false;
	/*
	 * State from records of the old process; mappings the collector read
	 * from /proc for this pid (no record named it) are the new one's.
	 */
	return p->named || p->nr_buckets || p->nr_live || (p->nr_maps && !p->maps_from_proc);
}

/*
 * proc_exit - @p is gone.  Unless the limits keep exited processes' memory
 * in use (record), its unfreed sampled allocations are freed now, in cycle
 * @c: a heap profile of the live system shows no memory of a process that
 * no longer exists, while alloc_* keep its allocations as long as it is
 * kept.  O(its live allocations).
 */
static int proc_exit(struct kpp_agg *a, struct kpp_proc *p, uint64_t c)
{
	if (p->state == KPP_PROC_EXITED)
		return 0;
	p->state = KPP_PROC_EXITED;
	p->exit_seq = ++a->exit_seq;
	p->eprev = a->exited_tail;
	p->enext = NULL;
	if (a->exited_tail)
		a->exited_tail->enext = p;
	else
		a->exited_head = p;
	a->exited_tail = p;
	a->nr_exited++;
	p->ueprev = p->acct->ex_tail;
	p->uenext = NULL;
	if (p->acct->ex_tail)
		p->acct->ex_tail->uenext = p;
	else
		p->acct->ex_head = p;
	p->acct->ex_tail = p;
	if (++p->acct->exited > a->lim.max_uid_exited && !p->acct->listed) {
		p->acct->listed = true;
		p->acct->over_next = a->over_exited;
		a->over_exited = p->acct;
	}
	if (a->lim.keep_exited_inuse || !p->nr_live)
		return 0;
	for (size_t i = 0; i < p->live_size; i++) {
		struct kpp_live_ent *e = &p->live[i];
		struct kpp_heap_counts *hc;

		if (!e->addr)
			continue;
		hc = counts_for(a, e->bucket, c);
		if (!hc)
			return -ENOMEM;
		hc->frees++;
		hc->free_bytes += a->buckets[e->bucket].size;
		a->st.exit_freed++;
	}
	live_uncharge(a, p, p->nr_live);
	free(p->live);
	p->live = NULL;
	p->live_size = 0;
	return 0;
}

void kpp_agg__proc_exited(struct kpp_agg *a, struct kpp_proc *p)
{
	/* Cycles before first_incomplete are published: charge the next one. */
	proc_exit(a, p, a->st.first_incomplete);
}

static int add_comm(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_proc *p = kpp_agg__proc(a, r->tgid);
	int err = 0;

	if (p && ends_image(p, r->comm.reason)) {
		drop_proc(a, p);
		a->st.procs_dropped--;	/* counted as an image ended, not lost */
		a->st.images_ended++;
		p = NULL;
	}
	if (!p)
		p = record_proc(a, r, &err);
	if (!p)
		return err;
	if (r->comm.comm[0])
		memcpy(p->comm, r->comm.comm, sizeof(p->comm));
	if (r->comm.reason != KPPROF_COMM_EXIT) {
		p->named = true;
		if (r->comm.ppid)
			p->ppid = r->comm.ppid;
	}
	if (r->comm.reason == KPPROF_COMM_EXIT && p->state != KPP_PROC_EXITED) {
		err = proc_exit(a, p, r->cycle);
		kpp_agg__expire(a);
	}
	return err;
}

int kpp_agg__add(struct kpp_agg *a, const struct kpp_rec *r)
{
	struct kpp_proc *p;
	int err;

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
		p = record_proc(a, r, &err);
		return p ? add_map(p, r->mmap.start, r->mmap.end, r->mmap.offset,
				   r->mmap.build_id, r->mmap.build_id_len, r->mmap.path) : err;
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
		p = record_proc(a, r, &err);
		if (!p)
			return err;
		p->seccomp_stopped = true;
		p->seccomp_unsent = r->note.value;
		return 0;
	case KPPROF_REC_LOST:
		a->st.lost_records += r->lost.full + r->lost.invalid;
		a->st.lost_resets += r->lost.resets;
		p = record_proc(a, r, &err);
		if (!p)
			return err;
		p->lost += r->lost.full + r->lost.invalid;
		return 0;
	case KPPROF_REC_CYCLE:
	default:
		return 0;
	}
}

/* ------------------------------------------------------------ copies */

struct kpp_agg *kpp_agg__new_copy(void)
{
	struct kpp_agg_limits lim = {
		.max_buckets = SIZE_MAX, .max_stacks = SIZE_MAX, .max_stack_pcs = SIZE_MAX,
		.max_live = SIZE_MAX, .max_exited = SIZE_MAX,
		.max_uid_buckets = SIZE_MAX, .max_uid_stack_pcs = SIZE_MAX,
		.max_uid_live = SIZE_MAX, .max_uid_procs = SIZE_MAX,
		.max_proc_buckets = SIZE_MAX, .max_proc_live = SIZE_MAX,
	};

	return kpp_agg__new(&lim);
}

struct kpp_proc *kpp_agg__copy_proc(struct kpp_agg *dst, const struct kpp_proc *src)
{
	struct kpp_proc *p;
	int err;

	p = get_proc(dst, src->pid, src->uid, &err);
	if (!p)
		return NULL;
	p->ppid = src->ppid;
	p->serial = src->serial;
	memcpy(p->comm, src->comm, sizeof(p->comm));
	p->state = src->state;
	p->exit_seq = src->exit_seq;
	p->maps_from_proc = src->maps_from_proc;
	p->named = src->named;
	p->seccomp_stopped = src->seccomp_stopped;
	p->seccomp_unsent = src->seccomp_unsent;
	for (size_t i = 0; i < src->nr_maps; i++) {
		const struct kpp_map *m = &src->maps[i];

		if (grow((void **)&p->maps, &p->cap_maps, p->nr_maps + 1, sizeof(*p->maps)))
			return NULL;
		p->maps[p->nr_maps] = *m;
		p->maps[p->nr_maps].path = strdup(m->path);
		if (!p->maps[p->nr_maps].path)
			return NULL;
		p->nr_maps++;
	}
	return p;
}

int64_t kpp_agg__pin_stack(struct kpp_agg *dst, const uint64_t *pcs, unsigned int n)
{
	static const uint64_t none;
	struct kpp_uid_acct *u = uid_get(dst, 0);
	struct kpp_rec r = { .nr_pcs = n, .pcs = pcs ? pcs : &none };
	int64_t id;

	if (!u)
		return -ENOMEM;
	id = intern_stack(dst, u, &r);
	if (id >= 0)
		dst->stacks[id].refs++;	/* no bucket holds it: never freed */
	return id;
}

struct kpp_agg *kpp_agg__copy_procs(const struct kpp_agg *a, uint32_t pid)
{
	struct kpp_agg *c = kpp_agg__new_copy();

	if (!c)
		return NULL;
	for (size_t h = 0; h < PROC_HASH; h++)
		for (struct kpp_proc *p = a->procs[h]; p; p = p->hnext)
			if ((!pid || p->pid == pid) && !kpp_agg__copy_proc(c, p)) {
				kpp_agg__free(c);
				return NULL;
			}
	return c;
}

const struct kpp_agg_stats *kpp_agg__stats(const struct kpp_agg *a)
{
	return &a->st;
}

bool kpp_agg__refusals(const struct kpp_agg_stats *st, char *buf, size_t len)
{
	const struct { const char *what; uint64_t n; } r[] = {
		{ "uid buckets", st->over_uid_buckets },
		{ "uid stack frames", st->over_uid_stacks },
		{ "uid live", st->over_uid_live },
		{ "uid processes", st->over_uid_procs },
		{ "uid exited processes kept", st->over_uid_exited },
		{ "process buckets", st->over_proc_buckets },
		{ "process live", st->over_proc_live },
		{ "stack frames", st->over_stack_pcs },
	};
	size_t used = 0;
	bool any = false;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		int n;

		if (!r[i].n)
			continue;
		n = snprintf(buf + used, len - used, "%s%s %llu", any ? ", " : "; refused over quota: ",
			     r[i].what, (unsigned long long)r[i].n);
		any = true;
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += n;
	}
	return any;
}

void kpp_agg__print_stats(const struct kpp_agg_stats *st, FILE *f)
{
#define P(x) fprintf(f, "%-22s %llu\n", #x, (unsigned long long)st->x)
	P(nr_procs); P(nr_uids); P(nr_buckets); P(nr_stacks); P(stack_bytes); P(nr_live);
	P(over_buckets); P(over_stacks); P(over_stack_pcs); P(over_live);
	P(over_uid_buckets); P(over_uid_stacks); P(over_uid_live); P(over_uid_procs); P(over_uid_exited);
	P(over_proc_buckets); P(over_proc_live);
	P(bad_records); P(unknown_frees); P(replaced_allocs); P(late_records);
	P(procs_dropped); P(images_ended); P(exit_freed); P(stacks_freed);
	P(cycles_folded); P(drop_work);
#undef P
}
