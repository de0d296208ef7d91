/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize.h - resolve a return address inside a mapped object to its
 * function (libelf: .symtab and .dynsym, the load bias from the executable
 * PT_LOAD segment), and with DWARF (libdw) to file:line and the chain of
 * inlined frames; the GNU build-id check, separate debug files
 * (/usr/lib/debug/.build-id/, .gnu_debuglink, debuginfod), C++ and Rust
 * demangling.  Objects are opened while their process lives, through
 * /proc/PID/map_files or /proc/PID/root (see symbolize.c for what is
 * trusted), and cached by build-id.
 */
#ifndef KPPROF_SYMBOLIZE_H
#define KPPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"

struct kpp_symbolizer;

/* One frame of an inline chain; strings owned by the symbolizer. */
struct kpp_frame {
	const char *name;	/* demangled, without C++ parameters */
	const char *system_name; /* as mangled in the object */
	const char *file;	/* source file of the function; NULL: unknown;
				 * valid until the next lookup */
	int64_t line;		/* line of the call (or of the address, innermost) */
	int64_t start_line;	/* the function's first line; 0: unknown */
};

#define KPP_INLINE_MAX 16

struct kpp_sym {
	const char *name;	/* the outermost function: demangled */
	const char *system_name; /* as in the symbol table */
	uint64_t start;		/* symbol address in the object (ELF vaddr) */
	/* innermost first; frames[nr_frames - 1] is the real function */
	struct kpp_frame frames[KPP_INLINE_MAX];
	unsigned int nr_frames;
	bool has_lines;		/* file:line (and inlines) from DWARF */
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
/*
 * kpp_symbolizer__lookup_pid - the same for a mapping of process @pid:
 * while it lives its files are opened through /proc/@pid (its own mount
 * namespace and root); @pid 0: the path as the collector sees it, trusted
 * only with a matching build-id.
 */
int kpp_symbolizer__lookup_pid(struct kpp_symbolizer *s, uint32_t pid,
			       const struct kpp_map *m, uint64_t addr, struct kpp_sym *out);
/*
 * kpp_symbolizer__prefetch - open and cache @m's object now, while @pid
 * lives, so that its frames still resolve after it exited.
 */
void kpp_symbolizer__prefetch(struct kpp_symbolizer *s, uint32_t pid, const struct kpp_map *m);
/*
 * kpp_open_mapped - a read-only fd on the file @pid maps at @m: through
 * /proc/@pid/map_files, then /proc/@pid/root, then (@pid 0 or gone, and
 * only when @m has a build-id for the caller to check) @m->path.  Regular
 * files only, never blocking.  -errno on failure.
 */
int kpp_open_mapped(uint32_t pid, const struct kpp_map *m);
/* Objects opened, symbols loaded, lookups: for the benchmark and stat. */
void kpp_symbolizer__counts(const struct kpp_symbolizer *s, size_t *objects,
			    size_t *symbols);

/* kpp_elf__build_id - read the GNU build-id of the file at @path (regular files only). */
int kpp_elf__build_id(const char *path, uint8_t *id, uint8_t *len);
/* kpp_elf__build_id_fd - the same from an open fd. */
int kpp_elf__build_id_fd(int fd, uint8_t *id, uint8_t *len);

/* kpp_demangle - the demangled C++ or Rust name, malloc'd, or NULL. */
char *kpp_demangle(const char *name);

#endif
