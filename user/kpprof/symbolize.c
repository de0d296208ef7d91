// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - function names for addresses, with libelf.
 *
 * For a mapping (start, end, offset) of an ELF file, the address a in the
 * process corresponds to the ELF virtual address
 *
 *     v = a - start + offset + (p_vaddr - p_offset)
 *
 * of the executable PT_LOAD segment whose file range holds @offset.  This
 * one rule covers non-PIE executables (bias 0), PIE executables and shared
 * objects (any bias), and segments whose file offset is not page aligned:
 * lld and mold start the text segment mid-page, so the page the mapping
 * starts at also belongs to the read-only segment before it, whose bias
 * differs by a page.  A debug file (objcopy --only-keep-debug) keeps the
 * program headers with p_filesz 0, so its ranges are measured by p_memsz.
 *
 * Every address we get is a return address, so we look up a - 1: the call
 * instruction, which is inside the caller even when the call is the last
 * instruction of a function.
 *
 * Objects are cached by GNU build-id (or, when they have none, per process
 * and mapping): a library shared by a thousand processes is read once, and
 * a process's objects stay known after it exits.  Files are opened as
 * objopen.c says (never by a path a producer can point elsewhere).  If
 * the file no longer has the build-id the process mapped, it is not
 * trusted; a debug file with the right build-id (/usr/lib/debug/.build-id/,
 * then debuginfod when $DEBUGINFOD_URLS is set) is used instead, or the
 * frame keeps its bare address.  With DWARF (in the object or its debug
 * file) lookups also give file:line and inlined frames (dwarf_lines.c).
 */
#include <elfutils/debuginfod.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dwarf_lines.h"
#include "symbolize.h"

struct sym {
	uint64_t addr, size;
	uint32_t name;		/* offset into names */
	char *demangled;	/* lazily, NULL if not C++ */
	bool tried_demangle;
};

struct seg {
	uint64_t vaddr, offset, size;	/* size: p_filesz, or p_memsz in a debug file */
	bool exec;
};

struct object {
	char *key;
	bool ok;		/* false: cached failure */
	bool tried_pid;		/* opened while its process lived */
	bool loaded;		/* parsed (else only pending_fd, maybe) */
	int pending_fd;		/* opened by prefetch, parsed at first lookup */
	struct seg *segs;
	size_t nr_segs;
	struct sym *syms;
	size_t nr_syms;
	char *names;
	size_t names_len, names_cap;
	/* DWARF, kept open with the ELF and fd it reads from */
	Dwarf *dw;
	Elf *dw_elf;
	int dw_fd;
	struct object *next;
};

/* Demangled DWARF names: mangled -> demangled (or NULL), by pointer. */
struct dm_ent {
	const char *mangled;
	char *demangled;
};

#define OBJ_HASH 256

/* libdebuginfod, loaded when first needed (see debuginfod_fd) */
static struct {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int len,
			      char **path);
	void (*end)(debuginfod_client *c);
} dbgd_fn;

struct kpp_symbolizer {
	struct object *objs[OBJ_HASH];
	size_t nr_objects, nr_symbols;
	struct dm_ent *dm;
	size_t dm_size, dm_n;
	debuginfod_client *dbgd;
	bool dbgd_tried;
	char paths[KPP_INLINE_MAX][KPP_PATH_BUF];	/* frame files, until the next lookup */
};

struct kpp_symbolizer *kpp_symbolizer__new(void)
{
	struct rlimit rl;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	/* One descriptor per object held open (its DWARF, or a prefetched file). */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return calloc(1, sizeof(struct kpp_symbolizer));
}

static void object_free_contents(struct object *o)
{
	if (o->pending_fd >= 0)
		close(o->pending_fd);
	if (o->dw)
		dwarf_end(o->dw);
	if (o->dw_elf)
		elf_end(o->dw_elf);
	if (o->dw_fd >= 0)
		close(o->dw_fd);
	for (size_t i = 0; i < o->nr_syms; i++)
		free(o->syms[i].demangled);
	free(o->syms);
	free(o->segs);
	free(o->names);
	free(o->key);
}

static void object_free(struct object *o)
{
	object_free_contents(o);
	free(o);
}

void kpp_symbolizer__free(struct kpp_symbolizer *s)
{
	if (!s)
		return;
	for (int h = 0; h < OBJ_HASH; h++) {
		struct object *o = s->objs[h], *n;

		for (; o; o = n) {
			n = o->next;
			object_free(o);
		}
	}
	for (size_t i = 0; i < s->dm_size; i++)
		free(s->dm[i].demangled);
	free(s->dm);
	if (s->dbgd)
		dbgd_fn.end(s->dbgd);
	free(s);
}

/* The demangled form of a DWARF name (which lives as long as its Dwarf). */
static const char *demangled(struct kpp_symbolizer *s, const char *mangled)
{
	size_t h;

	if (2 * (s->dm_n + 1) > s->dm_size) {
		size_t size = s->dm_size ? 2 * s->dm_size : 256;
		struct dm_ent *t = calloc(size, sizeof(*t));

		if (!t)
			return mangled;
		for (size_t i = 0; i < s->dm_size; i++) {
			if (!s->dm[i].mangled)
				continue;
			h = ((uintptr_t)s->dm[i].mangled >> 3) & (size - 1);
			while (t[h].mangled)
				h = (h + 1) & (size - 1);
			t[h] = s->dm[i];
		}
		free(s->dm);
		s->dm = t;
		s->dm_size = size;
	}
	for (h = ((uintptr_t)mangled >> 3) & (s->dm_size - 1); s->dm[h].mangled;
	     h = (h + 1) & (s->dm_size - 1))
		if (s->dm[h].mangled == mangled)
			return s->dm[h].demangled ? s->dm[h].demangled : mangled;
	s->dm[h].mangled = mangled;
	s->dm[h].demangled = kpp_demangle(mangled);
	s->dm_n++;
	return s->dm[h].demangled ? s->dm[h].demangled : mangled;
}

void kpp_symbolizer__counts(const struct kpp_symbolizer *s, size_t *objects,
			    size_t *symbols)
{
	*objects = s->nr_objects;
	*symbols = s->nr_symbols;
}

/* ------------------------------------------------------------ ELF reading */

static int add_name(struct object *o, const char *name, uint32_t *off)
{
	size_t n = strlen(name) + 1;

	if (o->names_len + n > o->names_cap) {
		size_t cap = o->names_cap ? o->names_cap : 4096;
		char *p;

		while (cap < o->names_len + n)
			cap *= 2;
		p = realloc(o->names, cap);
		if (!p)
			return -ENOMEM;
		o->names = p;
		o->names_cap = cap;
	}
	memcpy(o->names + o->names_len, name, n);
	*off = o->names_len;
	o->names_len += n;
	return 0;
}

/* Function symbols of every SHT_SYMTAB and SHT_DYNSYM section. */
static int load_symbols(struct object *o, Elf *elf, bool *has_symtab)
{
	Elf_Scn *scn = NULL;
	size_t cap = o->nr_syms;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			*has_symtab = true;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0, n = sh.sh_size / sh.sh_entsize; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (o->nr_syms == cap) {
				struct sym *p;

				cap = cap ? 2 * cap : 256;
				p = realloc(o->syms, cap * sizeof(*p));
				if (!p)
					return -ENOMEM;
				o->syms = p;
			}
			struct sym *s = &o->syms[o->nr_syms];

			memset(s, 0, sizeof(*s));
			s->addr = sym.st_value;
			s->size = sym.st_size;
			if (add_name(o, name, &s->name))
				return -ENOMEM;
			o->nr_syms++;
		}
	}
	return 0;
}

static int load_segments(struct object *o, Elf *elf, bool debug_file)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	o->segs = calloc(n ? n : 1, sizeof(*o->segs));
	if (!o->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->segs[o->nr_segs++] = (struct seg){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset,
			.size = debug_file || !ph.p_filesz ? ph.p_memsz : ph.p_filesz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return o->nr_segs ? 0 : -EINVAL;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Prefer the sized symbol, then the longer one: stable choice. */
	return x->size > y->size ? -1 : x->size < y->size;
}

static Elf *elf_of_fd(int *fd)
{
	Elf *elf;

	if (*fd < 0)
		return NULL;
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	return elf;
}

static void build_id_hex(const uint8_t *id, unsigned int len, char *out)
{
	for (unsigned int i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * len] = '\0';
}

/* /usr/lib/debug/.build-id/ab/cdef....debug, overridable for tests. */
static void debug_by_build_id(const uint8_t *id, unsigned int len, char *path, size_t size)
{
	const char *root = getenv("KPPROF_DEBUG_ROOT");
	char hex[2 * KPPROF_BUILD_ID_MAX + 1];

	build_id_hex(id, len, hex);
	snprintf(path, size, "%s/.build-id/%.2s/%s.debug",
		 root && *root ? root : "/usr/lib/debug", hex, hex + 2);
}

/* A debug file: a regular file, opened without blocking. */
static int open_debug(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static uint32_t file_crc32(const char *path)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	int fd = open_debug(path);
	ssize_t n;

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, n);
	close(fd);
	return crc;
}

/* The .gnu_debuglink file of @elf (loaded from @path), if one exists and its CRC matches. */
static int find_debuglink(Elf *elf, const char *path, char *out, size_t size)
{
	const char *root = getenv("KPPROF_DEBUG_ROOT");
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name, *link;
		char dir[KPPROF_PATH_MAX], *slash;
		uint32_t crc;
		size_t nlen;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size < 8)
			return -ENOENT;
		link = data->d_buf;
		nlen = strnlen(link, data->d_size);
		if (nlen + 1 + 4 > data->d_size)
			return -ENOENT;
		/* The CRC follows the name, 4-aligned. */
		memcpy(&crc, (char *)data->d_buf + ((nlen + 4) & ~3UL), 4);
		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			strcpy(dir, ".");
		const char *fmts[] = { "%s/%s", "%s/.debug/%s", NULL };

		for (int i = 0; fmts[i]; i++) {
			snprintf(out, size, fmts[i], dir, link);
			if (strcmp(out, path) && access(out, R_OK) == 0 && file_crc32(out) == crc)
				return 0;
		}
		snprintf(out, size, "%s%s/%s", root && *root ? root : "/usr/lib/debug", dir, link);
		if (access(out, R_OK) == 0 && file_crc32(out) == crc)
			return 0;
		return -ENOENT;
	}
	return -ENOENT;
}

static bool fd_has_build_id(int fd, const struct kpp_map *m)
{
	uint8_t id[KPPROF_BUILD_ID_MAX], len = 0;

	return !kpp_elf__build_id_fd(fd, id, &len) && len == m->build_id_len &&
	       !memcmp(id, m->build_id, len);
}

static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/*
 * debuginfod, only when the user configured servers; the client caches.
 * libdebuginfod (and the libcurl stack under it) is loaded with dlopen
 * then, as libdw itself does: the collector starts fast and needs none of
 * it otherwise.
 */
static int debuginfod_fd(struct kpp_symbolizer *s, const struct kpp_map *m)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *path = NULL;
	int fd;

	if (!urls || !*urls || !m->build_id_len)
		return -ENOENT;
	if (!s->dbgd_tried) {
		void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

		s->dbgd_tried = true;
		if (h) {
			*(void **)&dbgd_fn.begin = dlsym(h, "debuginfod_begin");
			*(void **)&dbgd_fn.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
			*(void **)&dbgd_fn.end = dlsym(h, "debuginfod_end");
		}
		if (dbgd_fn.begin && dbgd_fn.find_debuginfo && dbgd_fn.end)
			s->dbgd = dbgd_fn.begin();
		else
			fprintf(stderr, "kpprof: DEBUGINFOD_URLS is set but libdebuginfod.so.1 cannot be loaded\n");
	}
	if (!s->dbgd)
		return -ENOENT;
	fd = dbgd_fn.find_debuginfo(s->dbgd, m->build_id, m->build_id_len, &path);
	free(path);
	return fd;
}

/*
 * The separate debug file of @m: /usr/lib/debug/.build-id/, the
 * .gnu_debuglink of @main_elf, then debuginfod.  Build-id checked.
 */
static Elf *find_debug(struct kpp_symbolizer *s, const struct kpp_map *m, Elf *main_elf,
		       int *fd)
{
	char dbg[KPPROF_PATH_MAX];

	*fd = -1;
	if (m->build_id_len) {
		debug_by_build_id(m->build_id, m->build_id_len, dbg, sizeof(dbg));
		*fd = open_debug(dbg);
		if (*fd >= 0 && !fd_has_build_id(*fd, m)) {
			close(*fd);
			*fd = -1;
		}
	}
	if (*fd < 0 && main_elf && find_debuglink(main_elf, m->path, dbg, sizeof(dbg)) == 0)
		*fd = open_debug(dbg);
	if (*fd < 0) {
		*fd = debuginfod_fd(s, m);
		if (*fd >= 0 && !fd_has_build_id(*fd, m)) {
			close(*fd);
			*fd = -1;
		}
	}
	return elf_of_fd(fd);
}

static void keep_dwarf(struct object *o, Elf **elf, int *fd)
{
	o->dw = dwarf_begin_elf(*elf, DWARF_C_READ, NULL);
	if (!o->dw)
		return;
	o->dw_elf = *elf;
	o->dw_fd = *fd;
	*elf = NULL;
	*fd = -1;
}

static void object_load(struct kpp_symbolizer *s, struct object *o, uint32_t pid,
			const struct kpp_map *m)
{
	bool has_symtab = false;
	int fd = o->pending_fd >= 0 ? o->pending_fd : kpp_open_mapped(pid, m), dfd = -1;
	Elf *elf, *delf = NULL;

	o->pending_fd = -1;
	elf = elf_of_fd(&fd);

	if (elf && m->build_id_len && !fd_has_build_id(fd, m)) {
		/* Not the file the process mapped (replaced, or a lie): never guess. */
		elf_end(elf);
		close(fd);
		elf = NULL;
		fd = -1;
	}
	if (elf) {
		if (load_segments(o, elf, false) || load_symbols(o, elf, &has_symtab))
			goto out;
		o->ok = true;
		if (has_debug_info(elf))
			keep_dwarf(o, &elf, &fd);
		if (!has_symtab || !o->dw)
			delf = find_debug(s, m, elf ? elf : o->dw_elf, &dfd);
	} else {
		/* Debug files keep the program headers, so the bias still works. */
		delf = find_debug(s, m, NULL, &dfd);
		if (!delf || load_segments(o, delf, true))
			goto out;
		o->ok = true;
	}
	if (delf) {
		if (!has_symtab)
			load_symbols(o, delf, &has_symtab);
		if (!o->dw && has_debug_info(delf))
			keep_dwarf(o, &delf, &dfd);
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (delf)
		elf_end(delf);
	if (dfd >= 0)
		close(dfd);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static void object_reset(struct kpp_symbolizer *s, struct object *o)
{
	struct object keep = { .key = o->key, .next = o->next };

	s->nr_symbols -= o->nr_syms;
	o->key = NULL;
	object_free_contents(o);
	*o = keep;
	o->dw_fd = -1;
	o->pending_fd = -1;
}

/*
 * get_object - @m's object; @load: parsed, else (prefetch) only opened, which
 * is quick (the collector must keep up with the ring) and enough: the fd
 * stays valid after the process exits, and is parsed at the first lookup.
 */
static struct object *get_object(struct kpp_symbolizer *s, uint32_t pid,
				 const struct kpp_map *m, bool load)
{
	char key[KPPROF_PATH_MAX + 128];
	struct object *o;
	size_t h;

	if (m->build_id_len) {
		char hex[2 * KPPROF_BUILD_ID_MAX + 1];

		build_id_hex(m->build_id, m->build_id_len, hex);
		snprintf(key, sizeof(key), "id:%s", hex);
	} else {
		/* No build-id: nothing says two mappings hold the same file. */
		snprintf(key, sizeof(key), "map:%u:%llx:%llx:%llx:%s", pid,
			 (unsigned long long)m->start, (unsigned long long)m->end,
			 (unsigned long long)m->offset, m->path);
	}
	h = hash_str(key) % OBJ_HASH;
	for (o = s->objs[h]; o; o = o->next)
		if (!strcmp(o->key, key))
			break;
	if (o && o->loaded && (o->ok || !pid || o->tried_pid))
		return o;
	if (o && !o->loaded) {
		if (!load)
			return o;
		goto parse;
	}
	if (o) {
		/* Failed without the process; it lives now: try through /proc. */
		object_reset(s, o);
	} else {
		o = calloc(1, sizeof(*o));
		if (!o)
			return NULL;
		o->dw_fd = -1;
		o->pending_fd = -1;
		o->key = strdup(key);
		if (!o->key) {
			free(o);
			return NULL;
		}
		o->next = s->objs[h];
		s->objs[h] = o;
		s->nr_objects++;
	}
	o->tried_pid = pid != 0;
	if (!load) {
		o->pending_fd = kpp_open_mapped(pid, m);
		return o;
	}
parse:
	o->loaded = true;
	object_load(s, o, pid, m);
	if (o->nr_syms)
		qsort(o->syms, o->nr_syms, sizeof(*o->syms), cmp_sym);
	s->nr_symbols += o->nr_syms;
	return o;
}

void kpp_symbolizer__prefetch(struct kpp_symbolizer *s, uint32_t pid, const struct kpp_map *m)
{
	get_object(s, pid, m, false);
}

/*
 * The segment the mapping at file offset @off shows: the executable one
 * whose file range holds it (a text mapping's first page can also belong
 * to the read-only segment before it), else any that holds it.
 */
static const struct seg *pick_seg(const struct object *o, uint64_t off)
{
	const struct seg *any = NULL, *first_x = NULL;

	for (size_t i = 0; i < o->nr_segs; i++) {
		const struct seg *g = &o->segs[i];
		bool in = (g->offset & ~0xfffULL) <= off && off < g->offset + g->size;

		if (in && g->exec)
			return g;
		if (in && !any)
			any = g;
		if (g->exec && !first_x)
			first_x = g;
	}
	return any ? any : first_x ? first_x : &o->segs[0];
}

static const struct sym *find_sym(struct object *o, uint64_t v)
{
	size_t lo = 0, hi = o->nr_syms, i;
	struct sym *sym;

	/* The last symbol starting at or below v. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Among symbols at the same address, the first (sized) one. */
	i = lo - 1;
	while (i > 0 && o->syms[i - 1].addr == o->syms[i].addr)
		i--;
	sym = &o->syms[i];
	if (sym->size && v >= sym->addr + sym->size)
		return NULL;
	if (!sym->tried_demangle) {
		sym->demangled = kpp_demangle(o->names + sym->name);
		sym->tried_demangle = true;
	}
	return sym;
}

int kpp_symbolizer__lookup_pid(struct kpp_symbolizer *s, uint32_t pid,
			       const struct kpp_map *m, uint64_t addr, struct kpp_sym *out)
{
	struct object *o = get_object(s, pid, m, true);
	const struct sym *sym;
	const struct seg *seg;
	unsigned int n = 0, k = 0;
	uint64_t v;

	if (!o || !o->ok)
		return -ENOENT;
	seg = pick_seg(o, m->offset);
	/* a return address: look up the call, a - 1 */
	v = addr - 1 - m->start + m->offset + (seg->vaddr - seg->offset);
	sym = find_sym(o, v);
	out->nr_frames = 0;
	out->has_lines = false;
	if (sym) {
		out->system_name = o->names + sym->name;
		out->name = sym->demangled ? sym->demangled : out->system_name;
		out->start = sym->addr;
	}
	if (o->dw)
		n = kpp_dwarf__frames(o->dw, v, out->frames, KPP_INLINE_MAX, s->paths);
	/* Inlined frames without a name say nothing: leave them out. */
	for (unsigned int i = 0; i < n; i++) {
		struct kpp_frame *f = &out->frames[i];

		if (!f->name && i + 1 < n)
			continue;
		if (f->name) {
			f->system_name = f->name;
			f->name = demangled(s, f->name);
		}
		out->frames[k++] = *f;
	}
	n = k;
	if (n) {
		struct kpp_frame *outer = &out->frames[n - 1];

		out->has_lines = true;
		if (sym) {
			/* The symbol table names the real function exactly. */
			outer->name = out->name;
			outer->system_name = out->system_name;
		} else if (outer->name) {
			out->name = outer->name;
			out->system_name = outer->system_name;
			out->start = v;
		} else {
			return -ENOENT;
		}
	} else if (sym) {
		out->frames[0] = (struct kpp_frame){ .name = out->name,
						     .system_name = out->system_name };
		n = 1;
	} else {
		return -ENOENT;
	}
	out->nr_frames = n;
	return 0;
}

int kpp_symbolizer__lookup(struct kpp_symbolizer *s, const struct kpp_map *m,
			   uint64_t addr, struct kpp_sym *out)
{
	return kpp_symbolizer__lookup_pid(s, 0, m, addr, out);
}
