// SPDX-License-Identifier: GPL-2.0
/*
 * Does a loaded object define a dynamic symbol?  Read from its own hash
 * table and dynamic symbol table, as the loader reads them, instead of
 * asking the loader (dlsym) or calling what the name binds to:
 *
 *  - dlsym() of a name no object defines mallocs its error message: the
 *    first malloc of many small processes (optout.c asks for a symbol only
 *    the collector has);
 *  - calling the function a name binds to runs someone else's code: an
 *    allocator may kill the process when asked for what it cannot serve
 *    (Chromium's PartitionAlloc does; alloc_check.c must not call it).
 *
 * No syscall, no allocation, no lock: the caller holds whatever
 * dl_iterate_phdr() holds while it calls back.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include "shim.h"

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0, g;

	while (*s) {
		h = (h << 4) + (unsigned char)*s++;
		g = h & 0xf0000000;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* dyn_ptr - a DT_* address; glibc relocates them in place, but not everywhere. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

/*
 * A definition a reference from another object can bind to: in a section
 * (not SHN_UNDEF: a canonical PLT entry is undefined with a non-zero
 * value, and binds nothing), global, weak or unique, not hidden.
 */
static bool is_definition(const ElfW(Sym) *s, const char *strtab, const char *name)
{
	unsigned char bind = ELF64_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) == STT_TLS)
		return false;
	if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
		return false;
	if (ELF64_ST_VISIBILITY(s->st_other) == STV_HIDDEN ||
	    ELF64_ST_VISIBILITY(s->st_other) == STV_INTERNAL)
		return false;
	return !strcmp(strtab + s->st_name, name);
}

static int gnu_lookup(const uint32_t *gh, const ElfW(Sym) *symtab,
		      const char *strtab, const char *name)
{
	const uint32_t *buckets, *chain;
	uint32_t h, idx;

	if (!gh[0])
		return 0;
	/* nbuckets, symoffset, bloom words, bloom shift; bloom; buckets; chains */
	buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + gh[2]);
	chain = buckets + gh[0];
	h = gnu_hash(name);
	idx = buckets[h % gh[0]];
	if (idx < gh[1])
		return 0;
	for (;; idx++) {
		uint32_t c = chain[idx - gh[1]];

		if ((c | 1) == (h | 1) && is_definition(&symtab[idx], strtab, name))
			return 1;
		if (c & 1)
			return 0;
	}
}

static int sysv_lookup(const uint32_t *hash, const ElfW(Sym) *symtab,
		       const char *strtab, const char *name)
{
	uint32_t nbucket = hash[0], nchain = hash[1];
	const uint32_t *bucket = hash + 2, *chain = bucket + nbucket;
	uint32_t idx, steps;

	if (!nbucket)
		return 0;
	/* bounded by the chain's length: a loop in a broken table ends */
	idx = bucket[sysv_hash(name) % nbucket];
	for (steps = 0; idx != STN_UNDEF && idx < nchain && steps < nchain; steps++) {
		if (is_definition(&symtab[idx], strtab, name))
			return 1;
		idx = chain[idx];
	}
	return 0;
}

int kpp_dynsym_defines(const struct dl_phdr_info *info, const char *name)
{
	const uint32_t *gh = NULL, *sysv = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		     d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_GNU_HASH)
				gh = (const uint32_t *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_HASH)
				sysv = (const uint32_t *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_SYMTAB)
				symtab = (const ElfW(Sym) *)dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_STRTAB)
				strtab = (const char *)dyn_ptr(info, d->d_un.d_ptr);
		}
	}
	if (!symtab || !strtab || (!gh && !sysv))
		return -1;
	return gh ? gnu_lookup(gh, symtab, strtab, name) :
		sysv_lookup(sysv, symtab, strtab, name);
}
