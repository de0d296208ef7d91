/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize.h - resolve a return address inside a mapped object to a
 * function name with libelf: .symtab and .dynsym, the load bias of PIE
 * executables and shared objects, the GNU build-id check, separate debug
 * files (/usr/lib/debug/.build-id/ and .gnu_debuglink), C++ demangling.
 * Object files are read once and cached by build-id.
 */
#ifndef KPPROF_SYMBOLIZE_H
#define KPPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"

struct kpp_symbolizer;

struct kpp_sym {
	const char *name;	/* demangled; owned by the symbolizer */
	const char *system_name; /* as in the symbol table */
	uint64_t start;		/* symbol address in the object (ELF vaddr) */
};

struct kpp_symbolizer *kpp_symbolizer__new(void);
void kpp_symbolizer__free(struct kpp_symbolizer *s);
/*
 * kpp_symbolizer__lookup - the function containing @addr (an address in
 * the process whose mapping @m contains it).  0 on success; -ENOENT when
 * the object or symbol is unknown (the caller keeps the address).
 */
int kpp_symbolizer__lookup(struct kpp_symbolizer *s, const struct kpp_map *m,
			   uint64_t addr, struct kpp_sym *out);
/* Objects opened, symbols loaded, lookups: for the benchmark and stat. */
void kpp_symbolizer__counts(const struct kpp_symbolizer *s, size_t *objects,
			    size_t *symbols);

/* kpp_elf__build_id - read the GNU build-id of the file at @path. */
int kpp_elf__build_id(const char *path, uint8_t *id, uint8_t *len);

/* kpp_demangle - the demangled C++ name, malloc'd, or NULL. */
char *kpp_demangle(const char *name);

#endif
