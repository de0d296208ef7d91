/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize.h - resolve a return address inside a mapped object to its
 * function (libelf: .symtab and .dynsym, the load bias from the executable
 * PT_LOAD segment), and with DWARF (libdw) to file:line and the chain of
 * inlined frames; the GNU build-id check, separate debug files
 * (/usr/lib/debug/.build-id/, .gnu_debuglink, debuginfod), C++ and Rust
 * demangling.  Objects are opened while their process lives, through
 * /proc/PID/map_files or with the process's own credentials in its root
 * (objopen.c), and cached by the file opened (symbolize.c).
 */
#ifndef KPPROF_SYMBOLIZE_H
#define KPPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"

struct kpp_symbolizer;

/*
 * The bounds (per symbolizer; "per uid": the uid the kernel stamped on the
 * records that made us open a file).  Chosen for a whole machine: a desktop runs a few
 * hundred distinct objects, a process a few hundred executable mappings.
 */
#define KPP_SYM_MAX_OBJECTS		8192
#define KPP_SYM_MAX_OBJECTS_UID		2048
#define KPP_SYM_MAX_MAPPINGS		262144	/* (process, mapping) entries */
#define KPP_SYM_MAX_MAPPINGS_UID	65536
#define KPP_SYM_MAX_PENDING_FDS		256	/* prefetched, not yet parsed */
#define KPP_SYM_MAX_SYMBOLS		(16u << 20)	/* entries of one symbol table */
/* Path claims (no map_files entry) tried per uid: a rate, in bursts. */
#define KPP_SYM_CLAIMS_PER_S		20
#define KPP_SYM_CLAIMS_BURST		200
/*
 * A claim refused for a process (its path not openable with its rights) is
 * not tried again for that process and path for this long: a flood of
 * records naming one path costs one attempt, not one per record.
 */
#define KPP_SYM_CLAIM_MEMO_S		30
/* A .gnu_debuglink file larger than this is refused unread (libxul's is ~1 GiB). */
#define KPP_DEBUGLINK_MAX_SIZE		(2ULL << 30)
/* CRC bytes read in one uid's own directories, over the collector's life. */
#define KPP_DEBUGLINK_UID_BUDGET	(4ULL << 30)

/* What the symbolizer refused or gave up, for the profile comment. */
struct kpp_sym_stats {
	uint64_t objects, mappings, pending_fds;	/* in use now */
	uint64_t objects_refused;	/* over KPP_SYM_MAX_OBJECTS(_UID) */
	uint64_t mappings_refused;	/* over KPP_SYM_MAX_MAPPINGS_UID */
	uint64_t mappings_forgotten;	/* oldest dropped at KPP_SYM_MAX_MAPPINGS */
	uint64_t fds_closed;		/* prefetched fds closed over the budget */
	uint64_t claims_refused;	/* a path the process could not open itself
					 * (or could not within KPP_SYM_CLAIM_MEMO_S),
					 * or over KPP_SYM_CLAIMS_PER_S */
	uint64_t build_id_mismatch;	/* the file has another build-id */
	uint64_t debuglink_refused;	/* not a basename, or no usable object path */
	uint64_t debuglink_too_big;	/* over the size cap or the uid's budget */
	uint64_t symtabs_refused;	/* over KPP_SYM_MAX_SYMBOLS */
	uint64_t debug_bias_refused;	/* mappings whose object is only a debug
					 * file and whose bias it cannot prove */
};

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
 * /proc/@pid/map_files, else @m->path in @pid's root with @pid's own
 * credentials; for @pid 0 only, and only when @m has a build-id for the
 * caller to check, @m->path as we see it.  Regular files on real file
 * systems only, never blocking.  -errno on failure.
 */
int kpp_open_mapped(uint32_t pid, const struct kpp_map *m);
void kpp_symbolizer__stats(const struct kpp_symbolizer *s, struct kpp_sym_stats *out);
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
