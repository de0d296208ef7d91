// SPDX-License-Identifier: GPL-2.0
/*
 * A fast path for the DWARF unwinder: per program counter, the unwind rule
 * in the one shape nearly all x86-64 code has at a call site
 *     CFA = rsp + k   or   CFA = rbp + k,
 *     return address at CFA - 8,
 *     caller's rbp at CFA + j, or rbp unchanged,
 * read once from the FDE (which libgcc's lock-free lookup finds) with a
 * small interpreter of the CFA program, and kept in a cache that belongs
 * to the private stack the sample runs on (stackpool.c: one thread at a
 * time, so no synchronisation).  A rule is found again only for the same
 * pc in the same load of the same object (its tag, see object_tag; the
 * object from glibc's lock-free _dl_find_object, once per object and
 * walk: find_obj).  Another object loaded where one was unloaded may have
 * its .eh_frame at the same address and other code at the same pc: every
 * dlclose (maps.c counts them in kpp.unloads) empties each cache before
 * its next walk, and an unload the shim does not see (glibc's own
 * __libc_dlclose of iconv modules, libc's dlclose reached by a dlsym in
 * libc's handle) is caught by the object's identity, build-id included,
 * which the tag stands for.  Anything
 * else -- a signal frame, a CFA or a saved register given by a DWARF
 * expression, a CFA on another register (stack realignment) -- and the
 * whole stack is taken by libgcc's _Unwind_Backtrace instead (stack.c).
 *
 * libgcc parses the CIE and FDE and runs the CFA program again for every
 * frame of every sample, about 1800 instructions a frame; a hit here is a
 * range check of the walk's last object, one cache line of rules and
 * three loads.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include "shim.h"

#define DW_RBP		6
#define DW_RSP		7
#define DW_RA		16

enum { RULE_NONE, RULE_STEP, RULE_END, RULE_SLOW };
#define RULE_KIND	3
#define RULE_ON_RBP	4	/* CFA = rbp + k, else rsp + k */

/*
 * One rule in 16 bytes, four to a 64-byte set: a look-up reads one cache
 * line.  Offsets are in 8-byte units (a call site's CFA and saved rbp are
 * 8-aligned; any other rule is RULE_SLOW, and libgcc takes that stack).
 */
struct rule {
	uint64_t pc;
	uint32_t tag;		/* its object's tag (object_tag): a new load misses */
	uint16_t cfa_off;	/* CFA = reg + 8 * cfa_off */
	int8_t rbp_off;		/* caller's rbp at CFA + 8 * rbp_off; 0: unchanged */
	uint8_t kind;		/* RULE_* | RULE_ON_RBP */
};

#define WAYS		4
#define CACHE_SETS	1024	/* power of 2: 64 KiB of rules */

struct rule_set {
	struct rule way[WAYS];	/* most recently used first */
};

/*
 * The cache: the sets, then a header (the dlclose count its rules were
 * found at, and the pages written since, the only ones a flush clears).
 * 64 KiB hold the call sites of large programs: glib's gmenumodel test
 * walks about 2000 distinct return addresses, which a 16 KiB direct-mapped
 * cache (680 rules) missed in 0.5 to 7% of its frames, each miss a libgcc
 * FDE search and a CFA program run.
 */
/*
 * An object's identity: where it starts, its .eh_frame, its link_map and
 * the first 8 bytes of its GNU build-id (read from its first page, which
 * whatever object starts there has mapped); its tag is a hash of them.
 * Rules carry the tag of the object they were read from: when another
 * object turns up at the same start -- unloaded behind the shim's back
 * and replaced by a library with the same layout, the same link_map
 * address (malloc reuses it) but other code -- its build-id differs, so
 * does its tag, and no rule of the old one matches any more (they age
 * out).  The entries below only save finding the build-id again at
 * every walk (4-way sets of starts): one evicted and made again has the
 * same tag, and its rules stay valid.
 */
#define IDENT_SETS	16
#define IDENT_WAYS	4

struct ident {
	uintptr_t start;
	const void *eh, *map;
	const void *bid;	/* 8 bytes of the build-id; NULL: none found */
	uint64_t bid_word;
	uint32_t tag;		/* 0: an empty way */
};

struct cache {
	struct rule_set set[CACHE_SETS];
	uint32_t unloads;
	uint32_t touched;	/* bit i: page i of set[] written */
	uint32_t victim;	/* the ident way replaced next */
	struct ident ident[IDENT_SETS][IDENT_WAYS];
};

_Static_assert(sizeof(struct rule) == 16, "a rule is 16 bytes");
_Static_assert(sizeof(struct cache) <= KPP_UNWIND_CACHE_BYTES, "the cache fits its mapping");
_Static_assert(sizeof(((struct cache *)0)->set) / 4096 <= 32, "touched has a bit per page");

/* libgcc's, under private names (Makefile). */
struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
const void *kpp_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases) KPP_HIDDEN;

static uint64_t uleb(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	*bad = true;
	return 0;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end, bool *bad)
{
	int64_t v = 0;
	unsigned int shift = 0;
	uint8_t b = 0;

	while (*p < end && shift < 64) {
		b = *(*p)++;
		v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v = (int64_t)((uint64_t)v | (~(uint64_t)0 << shift));
			return v;
		}
	}
	*bad = true;
	return 0;
}

/* An offset or factor: corrupt tables must not overflow what it scales. */
static int64_t uoff(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = uleb(p, end, bad);

	if (v > (1U << 24))
		*bad = true;
	return *bad ? 0 : (int64_t)v;
}

static int64_t soff(const uint8_t **p, const uint8_t *end, bool *bad)
{
	int64_t v = sleb(p, end, bad);

	if (v > (1 << 24) || v < -(1 << 24))
		*bad = true;
	return *bad ? 0 : v;
}

/* Size of a pointer in encoding @enc; 0 if not a fixed size we read. */
static unsigned int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8;	/* absptr */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

struct regs_state {
	int64_t cfa_off;
	int64_t rbp_off;	/* 0: unchanged */
	uint64_t cfa_reg;
	int ra;			/* 1: at CFA - 8, 0: undefined, -1: other */
};

struct cfa_vm {
	struct regs_state s, init;
	struct regs_state saved[8];
	unsigned int depth;
	uint64_t code_align;
	int64_t data_align;
	bool slow;
};

static void set_offset(struct cfa_vm *vm, uint64_t reg, int64_t off)
{
	if (reg == DW_RBP)
		vm->s.rbp_off = off ? off : (vm->slow = true, 0);
	else if (reg == DW_RA)
		vm->s.ra = off == -8 ? 1 : -1;
}

/* A register given another way (register, expression, val_*). */
static void set_other(struct cfa_vm *vm, uint64_t reg)
{
	if (reg == DW_RBP || reg == DW_RA || reg == DW_RSP)
		vm->slow = true;
}

/*
 * run - execute CFA instructions [p, end) while the location (from @loc)
 * is below @pc; @in_cie: the CIE's initial instructions.
 */
static void run(struct cfa_vm *vm, const uint8_t *p, const uint8_t *end,
		uint64_t loc, uint64_t pc, bool in_cie)
{
	bool bad = false;

	while (p < end && loc < pc && !vm->slow && !bad) {
		uint8_t op = *p++;
		uint64_t reg, delta = 0;
		int64_t off;

		switch (op & 0xc0) {
		case 0x40:
			delta = op & 0x3f;
			goto advance;
		case 0x80:
			set_offset(vm, op & 0x3f,
				   uoff(&p, end, &bad) * vm->data_align);
			continue;
		case 0xc0:
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case 0x00:	/* nop */
			break;
		case 0x02:
			if (p + 1 > end)
				goto out_bad;
			delta = p[0];
			p += 1;
			goto advance;
		case 0x03:
			if (p + 2 > end)
				goto out_bad;
			delta = (uint64_t)p[0] | (uint64_t)p[1] << 8;
			p += 2;
			goto advance;
		case 0x04:
			if (p + 4 > end)
				goto out_bad;
			delta = (uint64_t)p[0] | (uint64_t)p[1] << 8 |
				(uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
			p += 4;
			goto advance;
		case 0x05:	/* offset_extended */
			reg = uleb(&p, end, &bad);
			set_offset(vm, reg, uoff(&p, end, &bad) * vm->data_align);
			break;
		case 0x06:	/* restore_extended */
			reg = uleb(&p, end, &bad);
			goto restore;
		case 0x07:	/* undefined */
			reg = uleb(&p, end, &bad);
			if (reg == DW_RA)
				vm->s.ra = 0;
			else
				set_other(vm, reg);
			break;
		case 0x08:	/* same_value */
			reg = uleb(&p, end, &bad);
			if (reg == DW_RBP)
				vm->s.rbp_off = 0;
			else
				set_other(vm, reg);
			break;
		case 0x09:	/* register */
			set_other(vm, uleb(&p, end, &bad));
			uleb(&p, end, &bad);
			break;
		case 0x0a:	/* remember_state */
			if (vm->depth == sizeof(vm->saved) / sizeof(vm->saved[0]))
				vm->slow = true;
			else
				vm->saved[vm->depth++] = vm->s;
			break;
		case 0x0b:	/* restore_state */
			if (!vm->depth)
				vm->slow = true;
			else
				vm->s = vm->saved[--vm->depth];
			break;
		case 0x0c:	/* def_cfa */
			vm->s.cfa_reg = uleb(&p, end, &bad);
			vm->s.cfa_off = uoff(&p, end, &bad);
			break;
		case 0x0d:	/* def_cfa_register */
			vm->s.cfa_reg = uleb(&p, end, &bad);
			break;
		case 0x0e:	/* def_cfa_offset */
			vm->s.cfa_off = uoff(&p, end, &bad);
			break;
		case 0x10:	/* expression */
		case 0x16:	/* val_expression */
			set_other(vm, uleb(&p, end, &bad));
			off = (int64_t)uleb(&p, end, &bad);
			if (off < 0 || off > end - p)
				goto out_bad;
			p += off;
			break;
		case 0x11:	/* offset_extended_sf */
			reg = uleb(&p, end, &bad);
			set_offset(vm, reg, soff(&p, end, &bad) * vm->data_align);
			break;
		case 0x12:	/* def_cfa_sf */
			vm->s.cfa_reg = uleb(&p, end, &bad);
			vm->s.cfa_off = soff(&p, end, &bad) * vm->data_align;
			break;
		case 0x13:	/* def_cfa_offset_sf */
			vm->s.cfa_off = soff(&p, end, &bad) * vm->data_align;
			break;
		case 0x14:	/* val_offset */
			set_other(vm, uleb(&p, end, &bad));
			uleb(&p, end, &bad);
			break;
		case 0x15:	/* val_offset_sf */
			set_other(vm, uleb(&p, end, &bad));
			sleb(&p, end, &bad);
			break;
		case 0x2e:	/* GNU_args_size */
			uleb(&p, end, &bad);
			break;
		default:	/* set_loc, def_cfa_expression, the rest */
			vm->slow = true;
			break;
		}
		continue;
advance:
		if (in_cie)
			vm->slow = true;
		loc += delta * vm->code_align;
		continue;
restore:
		if (in_cie)
			vm->slow = true;
		else if (reg == DW_RBP)
			vm->s.rbp_off = vm->init.rbp_off;
		else if (reg == DW_RA)
			vm->s.ra = vm->init.ra;
		else
			set_other(vm, reg);
	}
	if (!bad)
		return;
out_bad:
	vm->slow = true;
}

/* find_rule - the rule at return address @pc, into @r (its kind and offsets). */
__attribute__((noinline))
static void find_rule(struct rule *r, uint64_t pc)
{
	struct dwarf_eh_bases bases;
	const uint8_t *fde = kpp_Unwind_Find_FDE((void *)(uintptr_t)(pc - 1), &bases);
	const uint8_t *cie, *p, *end, *cie_end;
	struct cfa_vm vm;
	uint8_t fde_enc = 0, version;
	const char *aug;
	uint32_t len;
	int32_t delta;
	bool bad = false, has_z;
	unsigned int size;

	r->kind = RULE_SLOW;
	if (!fde) {
		r->kind = RULE_END;	/* libgcc ends the stack there too */
		return;
	}
	memcpy(&len, fde, 4);
	memcpy(&delta, fde + 4, 4);
	if (len == 0xffffffff || !delta)
		return;
	cie = fde + 4 - delta;
	memcpy(&len, cie, 4);
	if (len == 0xffffffff)
		return;
	cie_end = cie + 4 + len;
	version = cie[8];
	aug = (const char *)cie + 9;
	p = (const uint8_t *)aug + strlen(aug) + 1;
	memset(&vm, 0, sizeof(vm));
	vm.s.ra = -1;
	vm.code_align = (uint64_t)uoff(&p, cie_end, &bad);
	vm.data_align = soff(&p, cie_end, &bad);
	if ((version == 1 ? *p++ : uleb(&p, cie_end, &bad)) != DW_RA)
		return;
	has_z = aug[0] == 'z';
	if (aug[0] && !has_z)
		return;
	if (has_z) {
		uint64_t alen = uleb(&p, cie_end, &bad);
		const uint8_t *a = p;

		if (bad || alen > (uint64_t)(cie_end - p))
			return;
		for (const char *c = aug + 1; *c && !bad; c++) {
			if (a >= p + alen)
				return;
			if (*c == 'R') {
				fde_enc = *a++;
			} else if (*c == 'L') {
				a++;
			} else if (*c == 'P') {
				uint8_t penc = *a++;

				size = enc_size(penc);
				if (!size || (penc & 0x70) == 0x50)
					return;
				a += size;
			} else {
				return;	/* 'S' (signal frame) and the unknown */
			}
		}
		p += alen;
	}
	if (bad || p > cie_end || (fde_enc & 0x70) == 0x50)
		return;
	run(&vm, p, cie_end, 0, 1, true);
	vm.init = vm.s;
	/* The FDE: skip pc_begin and pc_range, its augmentation data. */
	memcpy(&len, fde, 4);
	end = fde + 4 + len;
	size = enc_size(fde_enc);
	if (!size)
		return;
	p = fde + 8 + 2 * size;
	if (p > end)
		return;
	if (has_z) {
		uint64_t alen = uleb(&p, end, &bad);

		if (bad || alen > (uint64_t)(end - p))
			return;
		p += alen;
	}
	run(&vm, p, end, (uintptr_t)bases.func, pc, false);
	if (vm.slow || (vm.s.cfa_reg != DW_RSP && vm.s.cfa_reg != DW_RBP))
		return;
	if (vm.s.ra == 0) {
		r->kind = RULE_END;
		return;
	}
	if (vm.s.ra != 1 || vm.s.cfa_off < 8 || vm.s.cfa_off > 8 * (int64_t)UINT16_MAX ||
	    (vm.s.cfa_off & 7) || (vm.s.rbp_off & 7) ||
	    vm.s.rbp_off < 8 * INT8_MIN || vm.s.rbp_off > 8 * INT8_MAX)
		return;
	r->cfa_off = (uint16_t)(vm.s.cfa_off / 8);
	r->rbp_off = (int8_t)(vm.s.rbp_off / 8);
	r->kind = RULE_STEP | (vm.s.cfa_reg == DW_RBP ? RULE_ON_RBP : 0);
}

/*
 * rule_move - rule_of's other cases, out of line (the walk's loop keeps
 * its registers): a hit in a later way moves to the front of its set; a
 * miss reads the FDE and takes the place of the set's least recently used
 * rule.
 */
__attribute__((noinline))
static const struct rule *rule_move(struct cache *c, struct rule_set *set, uint64_t pc,
				    uint32_t tag)
{
	struct rule r;
	unsigned int i;

	for (i = 1; i < WAYS; i++)
		if (set->way[i].pc == pc && set->way[i].tag == tag)
			break;
	if (i < WAYS) {
		r = set->way[i];
	} else {
		i = WAYS - 1;
		memset(&r, 0, sizeof(r));
		find_rule(&r, pc);
		r.pc = pc;
		r.tag = tag;
		c->touched |= 1U << (((uintptr_t)set - (uintptr_t)c->set) / 4096);
	}
	memmove(&set->way[1], &set->way[0], i * sizeof(r));
	set->way[0] = r;
	return &set->way[0];
}

/*
 * rule_of - the rule for return address @pc in the object load tagged
 * @tag (object_tag): most frames hit the front of their set.
 */
static inline const struct rule *rule_of(struct cache *c, uint64_t pc, uint32_t tag)
{
	struct rule_set *set = &c->set[(pc * 0x9E3779B97F4A7C15ULL) >> (64 - 10)];

	_Static_assert(CACHE_SETS == 1 << 10, "the set index takes 10 bits");
	if (likely(set->way[0].pc == pc && set->way[0].tag == tag))
		return &set->way[0];
	return rule_move(c, set, pc, tag);
}

/* load8 - 8 bytes from @p, 4-aligned (a note's descriptor). */
static inline uint64_t load8(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * build_id_word - where the first 8 bytes of the GNU build-id of the
 * object whose ELF header is at @start lie, if within its first page
 * (every object that starts there has that page mapped, so the word can
 * be read again whatever was loaded there since); NULL otherwise.
 */
static const void *build_id_word(uintptr_t start)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)start;
	const ElfW(Phdr) *ph;
	const void *desc;
	size_t len;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(*ph) ||
	    eh->e_phoff > 4096 || eh->e_phnum > (4096 - eh->e_phoff) / sizeof(*ph))
		return NULL;
	ph = (const ElfW(Phdr) *)(start + eh->e_phoff);
	for (unsigned int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			/* the lowest PT_LOAD starts the object (dlfo_map_start) */
			desc = kpp_build_id_note(ph, eh->e_phnum,
						 start - (ph[i].p_vaddr & ~(uintptr_t)4095),
						 start, start + 4096, &len);
			return desc && len >= 8 ? desc : NULL;
		}
	return NULL;
}

/*
 * object_tag - the tag of the object @d in cache @c: its entry's, if the
 * object at that start is still the one the entry describes, else that
 * of a new entry (in an empty way of its set, or one in turn).  An entry
 * is written with its tag cleared first and set last, so a sample
 * abandoned half way (a handler's longjmp) or a fork child's copy of
 * another thread's cache never holds a new object's identity under an
 * old tag.  Once per object and walk.
 */
__attribute__((noinline))
static uint32_t object_tag(struct cache *c, const struct dl_find_object *d)
{
	uintptr_t start = (uintptr_t)d->dlfo_map_start;
	struct ident *set = c->ident[((start >> 12) ^ (start >> 16)) & (IDENT_SETS - 1)];
	struct ident *e = NULL;
	unsigned int i;
	uint64_t h;

	for (i = 0; i < IDENT_WAYS; i++)
		if (set[i].start == start && set[i].tag) {
			e = &set[i];
			if (e->map == d->dlfo_link_map && e->eh == d->dlfo_eh_frame &&
			    (!e->bid || load8(e->bid) == e->bid_word))
				return e->tag;
			break;
		}
	if (!e) {
		/* an empty way, else one in turn */
		for (i = 0; i < IDENT_WAYS && set[i].tag; i++)
			;
		e = &set[i < IDENT_WAYS ? i : c->victim++ % IDENT_WAYS];
	}
	e->tag = 0;
	atomic_signal_fence(memory_order_seq_cst);
	e->start = start;
	e->eh = d->dlfo_eh_frame;
	e->map = d->dlfo_link_map;
	e->bid = build_id_word(start);
	e->bid_word = e->bid ? load8(e->bid) : 0;
	h = (start ^ (uintptr_t)e->eh * 0x9E3779B97F4A7C15ULL ^
	     (uintptr_t)e->map * 0xBF58476D1CE4E5B9ULL ^ e->bid_word) * 0x94D049BB133111EBULL;
	atomic_signal_fence(memory_order_seq_cst);
	e->tag = (uint32_t)(h >> 32) | 1;
	return e->tag;
}

/*
 * find_obj - the object @pc lies in, when it is not the one of the frame
 * before (the walk checks that itself): from the walk's own list of the
 * objects it met (most stacks stay in a handful: the program, glib, libc),
 * else from _dl_find_object (then added to the list while there is room).
 * The list lives only as long as one walk: the thread's stack cannot
 * change under it, so an object it names is still the one there (no
 * dlclose counting needed, unlike the rules).  NULL: no object, or one
 * without unwind tables.
 */
__attribute__((noinline))
static struct kpp_obj *find_obj(struct cache *c, struct kpp_objs *objs, uintptr_t pc,
				struct kpp_obj *spare)
{
	struct dl_find_object dlfo;
	struct kpp_obj *o, found;

	for (unsigned int i = 0; i < objs->n; i++) {
		o = &objs->o[i];
		if (pc - o->lo < o->hi - o->lo)
			return o;
	}
	if (!kpp_obj_at(pc, &found, &dlfo) || !dlfo.dlfo_eh_frame) {
		/* The walk ends here; the pc it recorded last may still lie
		 * in an object (one without unwind tables) that needs its
		 * mapping: kpp_maps_send looks the pcs up. */
		objs->complete = false;
		return NULL;
	}
	if (objs->n < KPP_WALK_OBJS) {
		o = &objs->o[objs->n++];
	} else {
		objs->complete = false;	/* kpp_maps_send looks the pcs up */
		o = spare;
	}
	*o = found;
	o->tag = object_tag(c, &dlfo);
	return o;
}

int kpp_stack_cached(void *cache, uintptr_t caller_fp, __u64 *pcs, unsigned int max,
		     struct kpp_objs *objs)
{
	struct cache *c = cache;
	uint32_t unloads = atomic_load_explicit(&kpp.unloads, memory_order_acquire);
	/* The frame that called switch.S, from the frame record it left. */
	uintptr_t pc = ((const uintptr_t *)caller_fp)[1];
	uintptr_t rsp = caller_fp + 16;
	uintptr_t rbp = ((const uintptr_t *)caller_fp)[0];
	unsigned int n = 0, frames = 0, limit;
	/* The shim's own frames are left out: its text, compared inline. */
	uintptr_t self_lo = kpp.self_lo, self_len = kpp.self_hi - kpp.self_lo;
	bool user = !kpp.self_hi;
	struct kpp_obj spare, *o = NULL;
	uintptr_t o_lo = 1, o_len = 0;
	uint32_t tag = 0;

	objs->n = 0;
	objs->complete = true;
	if (max > KPPROF_STACK_DEPTH_MAX)
		max = KPPROF_STACK_DEPTH_MAX;
	limit = max + 64;
	if (unlikely(c->unloads != unloads)) {
		for (unsigned int pg = 0; c->touched; pg++)
			if (c->touched & (1U << pg)) {
				memset((char *)c->set + pg * 4096, 0, 4096);
				c->touched &= ~(1U << pg);
			}
		c->unloads = unloads;
	}
	/*
	 * The object of the frame before, in registers: most frames lie in
	 * the same one as their callee, and a range check is all they pay.
	 * An empty range (lo 1, length 0) sends the first frame to find_obj.
	 */
	while (n < max && pc && frames++ < limit) {
		const struct rule *r;
		uintptr_t cfa;
		unsigned int kind;

		if (unlikely(!user) && pc - self_lo >= self_len)
			user = true;
		if (user)
			pcs[n++] = pc;
		if (unlikely(pc - 1 - o_lo >= o_len)) {
			o = find_obj(c, objs, pc - 1, &spare);
			if (!o)
				break;		/* no unwind tables: the stack ends */
			o_lo = o->lo;
			o_len = o->hi - o->lo;
			tag = o->tag;
		}
		if (user)
			o->used = true;
		r = rule_of(c, pc, tag);
		kind = r->kind;
		if (unlikely((kind & RULE_KIND) != RULE_STEP)) {
			if ((kind & RULE_KIND) == RULE_END)
				break;
			return -1;
		}
		cfa = (kind & RULE_ON_RBP ? rbp : rsp) + 8 * (uintptr_t)r->cfa_off;
		/* A call site's CFA lies above its stack pointer. */
		if (cfa <= rsp || (cfa & 7))
			return -1;
		if (r->rbp_off)
			rbp = *(const uintptr_t *)(cfa + 8 * (intptr_t)r->rbp_off);
		pc = *(const uintptr_t *)(cfa - 8);
		rsp = cfa;
	}
	return (int)n;
}
