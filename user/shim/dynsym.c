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
 * value, and binds nothing), with a value unless absolute (the loader
 * passes over a zero one), global, weak or unique, not hidden.
 */
static bool is_definition(const ElfW(Sym) *s, const char *strtab, const char *name)
{
	unsigned char bind = ELF64_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) == STT_TLS)
		return false;
	if (s->st_value == 0 && s->st_shndx != SHN_ABS)
		return false;
	if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
		return false;
	if (ELF64_ST_VISIBILITY(s->st_other) == STV_HIDDEN ||
	    ELF64_ST_VISIBILITY(s->st_other) == STV_INTERNAL)
		return false;
	return !strcmp(strtab + s->st_name, name);
}

/*
 * What a dlsym() without a version accepts among definitions of one name
 * in one object: an unversioned one (index 0 or 1) at once; else the one
 * version not hidden (the default, name@@VERSION: pthread_cond_wait has
 * GLIBC_2.3.2 besides a hidden GLIBC_2.2.5).  *@best collects it; two
 * visible versions are ambiguous (the caller asks dlsym).
 */
struct pick {
	const ElfW(Sym) *best;
	int visible;		/* versioned, not hidden, seen */
	bool done;		/* an unversioned one: take it */
	bool any;		/* a definition, hidden or not */
};

static void consider(const struct kpp_dynsym *d, uint32_t idx, struct pick *k)
{
	ElfW(Half) v = d->versym ? d->versym[idx] : 0;

	k->any = true;
	if ((v & 0x7fff) < 2) {
		k->best = &d->symtab[idx];
		k->done = true;
	} else if (!(v & 0x8000) && k->visible++ == 0) {
		k->best = &d->symtab[idx];
	}
}

static void gnu_lookup(const struct kpp_dynsym *d, const char *name, uint32_t h,
		       struct pick *k)
{
	const uint32_t *gh = d->gnu, *buckets, *chain;
	uint32_t idx;

	if (!gh[0])
		return;
	/* nbuckets, symoffset, bloom words, bloom shift; bloom; buckets; chains */
	buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + gh[2]);
	chain = buckets + gh[0];
	idx = buckets[h % gh[0]];
	if (idx < gh[1])
		return;
	for (; !k->done; idx++) {
		uint32_t c = chain[idx - gh[1]];

		if ((c | 1) == (h | 1) && is_definition(&d->symtab[idx], d->strtab, name))
			consider(d, idx, k);
		if (c & 1)
			return;
	}
}

static void sysv_lookup(const struct kpp_dynsym *d, const char *name, struct pick *k)
{
	const uint32_t *hash = d->sysv;
	uint32_t nbucket = hash[0], nchain = hash[1];
	const uint32_t *bucket = hash + 2, *chain = bucket + nbucket;
	uint32_t idx, steps;

	if (!nbucket)
		return;
	/* bounded by the chain's length: a loop in a broken table ends */
	idx = bucket[sysv_hash(name) % nbucket];
	for (steps = 0; idx != STN_UNDEF && idx < nchain && steps < nchain && !k->done; steps++) {
		if (is_definition(&d->symtab[idx], d->strtab, name))
			consider(d, idx, k);
		idx = chain[idx];
	}
}

int kpp_dynsym_open(const struct dl_phdr_info *info, struct kpp_dynsym *d)
{
	ElfW(Xword) soname = 0;
	bool has_soname = false;

	memset(d, 0, sizeof(*d));
	d->base = info->dlpi_addr;
	/*
	 * A load bias that wraps (linked above where it was loaded, as a
	 * prelinked library can be): dyn_ptr() cannot tell relocated
	 * addresses from unrelocated ones there (realfn_host_test.sh).
	 */
	if (info->dlpi_addr > (uintptr_t)INTPTR_MAX)
		return -1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		d->dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		for (const ElfW(Dyn) *e = d->dyn; e->d_tag != DT_NULL; e++) {
			if (e->d_tag == DT_GNU_HASH)
				d->gnu = (const uint32_t *)dyn_ptr(info, e->d_un.d_ptr);
			else if (e->d_tag == DT_HASH)
				d->sysv = (const uint32_t *)dyn_ptr(info, e->d_un.d_ptr);
			else if (e->d_tag == DT_SYMTAB)
				d->symtab = (const ElfW(Sym) *)dyn_ptr(info, e->d_un.d_ptr);
			else if (e->d_tag == DT_STRTAB)
				d->strtab = (const char *)dyn_ptr(info, e->d_un.d_ptr);
			else if (e->d_tag == DT_VERSYM)
				d->versym = (const ElfW(Half) *)dyn_ptr(info, e->d_un.d_ptr);
			else if (e->d_tag == DT_AUDIT || e->d_tag == DT_DEPAUDIT)
				d->audit = true;
			else if (e->d_tag == DT_SONAME) {
				soname = e->d_un.d_val;
				has_soname = true;
			}
		}
	}
	if (has_soname && d->strtab)
		d->soname = d->strtab + soname;
	return d->symtab && d->strtab && (d->gnu || d->sysv) ? 0 : -1;
}

uint32_t kpp_dynsym_hash(const char *name)
{
	return gnu_hash(name);
}

int kpp_dynsym_find(const struct kpp_dynsym *d, const char *name, uint32_t hash, void **addr)
{
	struct pick k = { NULL, 0, false, false };

	if (d->gnu)
		gnu_lookup(d, name, hash, &k);
	else
		sysv_lookup(d, name, &k);
	if (!k.best)
		return 0;
	if (!k.done && k.visible > 1)
		return -1;
	if (ELF64_ST_TYPE(k.best->st_info) == STT_GNU_IFUNC)
		return -1;	/* its resolver picks the function: dlsym runs it */
	if (ELF64_ST_BIND(k.best->st_info) == STB_WEAK && !d->weak_binds)
		return -1;	/* LD_DYNAMIC_WEAK would bind a global one after it */
	/* an absolute symbol's value is its address, as the loader takes it */
	*addr = (void *)((k.best->st_shndx == SHN_ABS ? 0 : d->base) + k.best->st_value);
	return 1;
}

int kpp_dynsym_defines(const struct dl_phdr_info *info, const char *name)
{
	struct kpp_dynsym d;
	struct pick k = { NULL, 0, false, false };

	if (kpp_dynsym_open(info, &d))
		return -1;
	if (d.gnu)
		gnu_lookup(&d, name, gnu_hash(name), &k);
	else
		sysv_lookup(&d, name, &k);
	return k.any;
}
