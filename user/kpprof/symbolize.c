// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - function names for addresses, with libelf.
 *
 * For a mapping (start, end, offset) of an ELF file, the address a in the
 * process corresponds to the ELF virtual address
 *
 *     v = a - start + offset + (p_vaddr - p_offset)
 *
 * of the PT_LOAD segment that holds file offset @offset.  This one rule
 * covers non-PIE executables (bias 0), PIE executables and shared objects
 * (any bias), and segments whose file offset is not page aligned.
 *
 * Every address we get is a return address, so we look up a - 1: the call
 * instruction, which is inside the caller even when the call is the last
 * instruction of a function.
 *
 * Objects are cached by GNU build-id (or by path, device, inode and mtime
 * when they have none): a library shared by a thousand processes is read
 * once.  If the file on disk no longer has the build-id the process
 * mapped, it is not trusted; a debug file with the right build-id under
 * /usr/lib/debug/.build-id/ is used instead, or the frame keeps its bare
 * address.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize.h"

struct sym {
	uint64_t addr, size;
	uint32_t name;		/* offset into names */
	char *demangled;	/* lazily, NULL if not C++ */
	bool tried_demangle;
};

struct seg {
	uint64_t vaddr, offset, filesz;
};

struct object {
	char *key;
	bool ok;		/* false: cached failure */
	struct seg *segs;
	size_t nr_segs;
	struct sym *syms;
	size_t nr_syms;
	char *names;
	size_t names_len, names_cap;
	struct object *next;
};

#define OBJ_HASH 256

struct kpp_symbolizer {
	struct object *objs[OBJ_HASH];
	size_t nr_objects, nr_symbols;
};

struct kpp_symbolizer *kpp_symbolizer__new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return calloc(1, sizeof(struct kpp_symbolizer));
}

static void object_free(struct object *o)
{
	for (size_t i = 0; i < o->nr_syms; i++)
		free(o->syms[i].demangled);
	free(o->syms);
	free(o->segs);
	free(o->names);
	free(o->key);
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
	free(s);
}

void kpp_symbolizer__counts(const struct kpp_symbolizer *s, size_t *objects,
			    size_t *symbols)
{
	*objects = s->nr_objects;
	*symbols = s->nr_symbols;
}

/* ------------------------------------------------------------ ELF reading */

static int elf_build_id(Elf *elf, uint8_t *id, uint8_t *len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
				size_t n = nh.n_descsz;

				if (n > KPPROF_BUILD_ID_MAX)
					n = KPPROF_BUILD_ID_MAX;
				memcpy(id, (char *)data->d_buf + desc_off, n);
				*len = n;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int kpp_elf__build_id(const char *path, uint8_t *id, uint8_t *len)
{
	int fd, err = -ENOENT;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		err = elf_build_id(elf, id, len);
		elf_end(elf);
	}
	close(fd);
	return err;
}

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

static int load_segments(struct object *o, Elf *elf)
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
		o->segs[o->nr_segs++] = (struct seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
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

static Elf *open_elf(const char *path, int *fd)
{
	Elf *elf;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
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

static uint32_t file_crc32(const char *path)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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

/* Symbols from a separate debug file, if it has a symbol table. */
static void load_debug_file(struct object *o, const char *path)
{
	bool has_symtab = false;
	int fd;
	Elf *elf = open_elf(path, &fd);

	if (!elf)
		return;
	load_symbols(o, elf, &has_symtab);
	elf_end(elf);
	close(fd);
}

static void object_load(struct object *o, const struct kpp_map *m)
{
	uint8_t id[KPPROF_BUILD_ID_MAX];
	uint8_t id_len = 0;
	char dbg[KPPROF_PATH_MAX];
	bool has_symtab = false, trusted;
	int fd;
	Elf *elf = open_elf(m->path, &fd);

	if (!elf)
		goto try_debug_only;
	trusted = !m->build_id_len ||
		  (!elf_build_id(elf, id, &id_len) && id_len == m->build_id_len &&
		   !memcmp(id, m->build_id, id_len));
	if (!trusted) {
		/* Replaced on disk since it was mapped: never guess. */
		elf_end(elf);
		close(fd);
		goto try_debug_only;
	}
	if (load_segments(o, elf) == 0 && load_symbols(o, elf, &has_symtab) == 0) {
		o->ok = true;
		if (!has_symtab) {
			/* Stripped: the full symbol table lives in a debug file. */
			if (m->build_id_len) {
				debug_by_build_id(m->build_id, m->build_id_len, dbg, sizeof(dbg));
				if (access(dbg, R_OK) == 0) {
					load_debug_file(o, dbg);
					goto out;
				}
			}
			if (find_debuglink(elf, m->path, dbg, sizeof(dbg)) == 0)
				load_debug_file(o, dbg);
		}
	}
out:
	elf_end(elf);
	close(fd);
	return;

try_debug_only:
	if (!m->build_id_len)
		return;
	debug_by_build_id(m->build_id, m->build_id_len, dbg, sizeof(dbg));
	elf = open_elf(dbg, &fd);
	if (!elf)
		return;
	/* Debug files keep the program headers, so the bias still works. */
	if (load_segments(o, elf) == 0 && load_symbols(o, elf, &has_symtab) == 0)
		o->ok = true;
	elf_end(elf);
	close(fd);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static struct object *get_object(struct kpp_symbolizer *s, const struct kpp_map *m)
{
	char key[KPPROF_PATH_MAX + 128];
	struct object *o;
	struct stat st;
	size_t h;

	if (m->build_id_len) {
		char hex[2 * KPPROF_BUILD_ID_MAX + 1];

		build_id_hex(m->build_id, m->build_id_len, hex);
		snprintf(key, sizeof(key), "id:%s", hex);
	} else if (stat(m->path, &st) == 0) {
		snprintf(key, sizeof(key), "file:%s:%lu:%lu:%ld.%09ld", m->path,
			 (unsigned long)st.st_dev, (unsigned long)st.st_ino,
			 (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	} else {
		snprintf(key, sizeof(key), "gone:%s", m->path);
	}
	h = hash_str(key) % OBJ_HASH;
	for (o = s->objs[h]; o; o = o->next)
		if (!strcmp(o->key, key))
			return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->key = strdup(key);
	if (!o->key) {
		free(o);
		return NULL;
	}
	object_load(o, m);
	if (o->nr_syms)
		qsort(o->syms, o->nr_syms, sizeof(*o->syms), cmp_sym);
	o->next = s->objs[h];
	s->objs[h] = o;
	s->nr_objects++;
	s->nr_symbols += o->nr_syms;
	return o;
}

int kpp_symbolizer__lookup(struct kpp_symbolizer *s, const struct kpp_map *m,
			   uint64_t addr, struct kpp_sym *out)
{
	struct object *o = get_object(s, m);
	const struct seg *seg = NULL;
	uint64_t v;
	size_t lo, hi;

	if (!o || !o->ok || !o->nr_syms)
		return -ENOENT;
	for (size_t i = 0; i < o->nr_segs; i++) {
		const struct seg *g = &o->segs[i];

		if ((g->offset & ~0xfffULL) <= m->offset && m->offset < g->offset + g->filesz) {
			seg = g;
			break;
		}
	}
	if (!seg)
		seg = &o->segs[0];
	v = addr - 1 - m->start + m->offset + (seg->vaddr - seg->offset);

	/* The last symbol starting at or below v. */
	lo = 0;
	hi = o->nr_syms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->syms[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	/* Among symbols at the same address, the first (sized) one. */
	size_t i = lo - 1;

	while (i > 0 && o->syms[i - 1].addr == o->syms[i].addr)
		i--;
	struct sym *sym = &o->syms[i];

	if (sym->size && v >= sym->addr + sym->size)
		return -ENOENT;
	if (!sym->tried_demangle) {
		sym->demangled = kpp_demangle(o->names + sym->name);
		sym->tried_demangle = true;
	}
	out->system_name = o->names + sym->name;
	out->name = sym->demangled ? sym->demangled : out->system_name;
	out->start = sym->addr;
	return 0;
}
