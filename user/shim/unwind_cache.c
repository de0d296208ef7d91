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
 * pc in the same object (its .eh_frame, from glibc's lock-free
 * _dl_find_object, a few ns).  Another object loaded where one was
 * unloaded may have its .eh_frame at the same address and other code at
 * the same pc: every dlclose (maps.c counts them in kpp.unloads) empties
 * each cache before its next walk.  Anything else -- a signal frame, a CFA or a saved
 * register given by a DWARF expression, a CFA on another register
 * (stack realignment) -- and the whole stack is taken by libgcc's
 * _Unwind_Backtrace instead (stack.c).
 *
 * libgcc parses the CIE and FDE and runs the CFA program again for every
 * frame of every sample, about 1800 instructions a frame; a hit here is a
 * _dl_find_object, a compare and three loads.
 */
#include <dlfcn.h>
#include <string.h>
#include "shim.h"

#define DW_RBP		6
#define DW_RSP		7
#define DW_RA		16

enum { RULE_NONE, RULE_STEP, RULE_END, RULE_SLOW };

struct rule {
	uint64_t pc;
	const void *eh;		/* the object's .eh_frame: a new object misses */
	int32_t cfa_off;
	int16_t rbp_off;	/* 0: rbp unchanged */
	uint8_t cfa_reg;
	uint8_t kind;
};

/* The cache: a header (the dlclose count its rules were found at), rules. */
struct cache_hdr {
	uint32_t unloads;
	uint32_t pad[15];
};

#define CACHE_ENTRIES	((KPP_UNWIND_CACHE_BYTES - sizeof(struct cache_hdr)) / sizeof(struct rule))

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

/* find_rule - the rule at return address @pc (in the object @eh). */
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
	if (vm.slow || (vm.s.cfa_reg != DW_RSP && vm.s.cfa_reg != DW_RBP) ||
	    vm.s.cfa_off < 8 || vm.s.cfa_off > INT32_MAX ||
	    vm.s.rbp_off < INT16_MIN || vm.s.rbp_off > INT16_MAX)
		return;
	if (vm.s.ra == 0) {
		r->kind = RULE_END;
		return;
	}
	if (vm.s.ra != 1)
		return;
	r->cfa_reg = (uint8_t)vm.s.cfa_reg;
	r->cfa_off = (int32_t)vm.s.cfa_off;
	r->rbp_off = (int16_t)vm.s.rbp_off;
	r->kind = RULE_STEP;
}

int kpp_stack_cached(void *cache, uintptr_t caller_fp, __u64 *pcs, unsigned int max,
		     bool (*in_self)(uintptr_t))
{
	struct cache_hdr *hdr = cache;
	struct rule *rules = (struct rule *)(hdr + 1);
	uint32_t unloads = atomic_load_explicit(&kpp.unloads, memory_order_acquire);
	/* The frame that called switch.S, from the frame record it left. */
	uintptr_t pc = ((const uintptr_t *)caller_fp)[1];
	uintptr_t rsp = caller_fp + 16;
	uintptr_t rbp = ((const uintptr_t *)caller_fp)[0];
	unsigned int n = 0, frames = 0;
	bool user = !kpp.self_hi;

	if (max > KPPROF_STACK_DEPTH_MAX)
		max = KPPROF_STACK_DEPTH_MAX;
	if (unlikely(hdr->unloads != unloads)) {
		memset(rules, 0, CACHE_ENTRIES * sizeof(*rules));
		hdr->unloads = unloads;
	}
	while (n < max && pc && frames++ < max + 64) {
		struct dl_find_object dlfo;
		struct rule *r;
		uintptr_t cfa;

		if (!user && !in_self(pc))
			user = true;
		if (user)
			pcs[n++] = pc;
		if (_dl_find_object((void *)(pc - 1), &dlfo) || !dlfo.dlfo_eh_frame)
			break;		/* no unwind tables: the stack ends */
		r = &rules[(pc ^ (pc >> 12)) % CACHE_ENTRIES];
		if (r->pc != pc || r->eh != dlfo.dlfo_eh_frame || r->kind == RULE_NONE) {
			find_rule(r, pc);
			r->pc = pc;
			r->eh = dlfo.dlfo_eh_frame;
		}
		if (r->kind == RULE_END)
			break;
		if (r->kind != RULE_STEP)
			return -1;
		cfa = (r->cfa_reg == DW_RSP ? rsp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
		/* A call site's CFA lies above its stack pointer. */
		if (cfa <= rsp || (cfa & 7))
			return -1;
		if (r->rbp_off)
			rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
		pc = *(const uintptr_t *)(cfa - 8);
		rsp = cfa;
	}
	return (int)n;
}
