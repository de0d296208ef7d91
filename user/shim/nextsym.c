// SPDX-License-Identifier: GPL-2.0
/*
 * The next definitions of the wrapped functions, found at start-up without
 * a dlsym per name (issue 15).
 *
 * dlsym(RTLD_NEXT) cost about 940 instructions a name (valgrind's
 * callgrind, /bin/true): the loader's error catching, its lock, the
 * search through every object.  The constructor looked up 25 names that
 * way in every process, about 6 us of a process's start on these
 * machines.  Here one dl_iterate_phdr lists the loaded objects, and each
 * name is looked up in the DT_GNU_HASH tables of the objects after ours,
 * in the loader's order: what RTLD_NEXT finds for a preloaded library at
 * start-up, where that order is the global search order.
 *
 * Only the plain case is answered here; anything else returns NULL and
 * the caller asks dlsym, as before:
 *  - an object loaded by dlopen before our look-up (the loader's load
 *    count is larger than the list): RTLD_LOCAL objects are in the list
 *    but not in the search order;
 *  - an object after ours without DT_GNU_HASH;
 *  - a definition that is not a plain function (an IFUNC needs its
 *    resolver called, which is the loader's job) or only exists in a
 *    non-default (hidden) version: dlsym's choice of version is its own;
 *  - a name no object after ours defines (dlsym then reports it missing).
 * No allocation, no syscall; dl_iterate_phdr takes the loader's lock,
 * like dlsym, so this runs only where dlsym could.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include "shim.h"

extern const ElfW(Ehdr) __ehdr_start KPP_HIDDEN;

struct next_obj {
	uintptr_t base;
	const uint32_t *gh;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym;
};

#define NEXT_MAX	16

struct next_scan {
	struct next_obj obj[NEXT_MAX];
	int n;			/* objects after ours */
	int self_seen;
	int bad;		/* cannot answer: ask dlsym */
	unsigned long long listed, adds;
};

static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

static int scan_obj(struct dl_phdr_info *info, size_t size, void *data)
{
	struct next_scan *s = data;
	struct next_obj o = { info->dlpi_addr, NULL, NULL, NULL, NULL };

	(void)size;
	s->listed++;
	s->adds = info->dlpi_adds;
	if (!s->self_seen) {
		s->self_seen = info->dlpi_addr == (uintptr_t)&__ehdr_start;
		return 0;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		     d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_GNU_HASH)
				o.gh = (const uint32_t *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_SYMTAB)
				o.symtab = (const ElfW(Sym) *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_STRTAB)
				o.strtab = (const char *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_VERSYM)
				o.versym = (const ElfW(Half) *)dyn_ptr(info, d->d_un.d_ptr);
		}
	}
	if (!o.symtab) {
		/* Nothing to define (no dynamic section). */
		return 0;
	}
	if (!o.gh || !o.strtab || s->n == NEXT_MAX) {
		s->bad = 1;
		return 1;
	}
	s->obj[s->n++] = o;
	return 0;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/*
 * find_in - @name's definition in @o: 1 found (*@p), 0 not defined there,
 * -1 defined in a way only dlsym may answer.
 */
static int find_in(const struct next_obj *o, const char *name, uint32_t h, void **p)
{
	const uint32_t *gh = o->gh, *buckets, *chain;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
	ElfW(Addr) word;
	unsigned int bits = sizeof(ElfW(Addr)) * 8;
	uint32_t idx;
	int ret = 0;

	if (!gh[0] || !gh[2])
		return 0;
	word = bloom[(h / bits) & (gh[2] - 1)];
	if (!((word >> (h % bits)) & (word >> ((h >> gh[3]) % bits)) & 1))
		return 0;
	buckets = (const uint32_t *)(bloom + gh[2]);
	chain = buckets + gh[0];
	idx = buckets[h % gh[0]];
	if (idx < gh[1])
		return 0;
	for (;; idx++) {
		uint32_t c = chain[idx - gh[1]];
		const ElfW(Sym) *sym = &o->symtab[idx];

		if ((c | 1) == (h | 1) && sym->st_shndx != SHN_UNDEF &&
		    !strcmp(o->strtab + sym->st_name, name)) {
			if (o->versym && (o->versym[idx] & 0x8000)) {
				ret = -1;	/* an old version: keep looking */
			} else if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
				   !sym->st_value) {
				return -1;
			} else {
				*p = (void *)(o->base + sym->st_value);
				return 1;
			}
		}
		if (c & 1)
			return ret;
	}
}

void kpp_next_syms(const char *const *names, void **out, int n)
{
	struct next_scan s;

	s.n = 0;
	s.self_seen = 0;
	s.bad = 0;
	s.listed = 0;
	s.adds = 0;
	dl_iterate_phdr(scan_obj, &s);
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	/* Every object listed was loaded at start-up (none unloaded). */
	if (s.bad || !s.self_seen || s.listed != s.adds)
		return;
	for (int i = 0; i < n; i++) {
		uint32_t h = gnu_hash(names[i]);

		for (int k = 0; k < s.n; k++) {
			int r = find_in(&s.obj[k], names[i], h, &out[i]);

			if (r)
				break;	/* found, or ask dlsym (out[i] NULL) */
		}
	}
}
