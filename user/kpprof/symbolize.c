// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - function names for addresses, with libelf.
 *
 * For a mapping (start, end, offset) of an ELF file, the address a in the
 * process corresponds to the ELF virtual address
 *
 *     v = a - start + offset + (p_vaddr - p_offset)
 *
 * of the executable PT_LOAD segment whose file range holds @offset, in the
 * program headers of the file that was mapped.  This one rule covers
 * non-PIE executables (bias 0), PIE executables and shared objects (any
 * bias), and segments whose file offset is not page aligned: lld and mold
 * start the text segment mid-page, so the page the mapping starts at also
 * belongs to the read-only segment before it, whose bias differs by a
 * page.  A separated debug file's program headers never take part in it
 * (their p_offset are rewritten); when only a debug file is left, the
 * mapping's own start gives the bias, where that is provable (map_delta()).
 *
 * Every address we get is a return address, so we look up a - 1: the call
 * instruction, which is inside the caller even when the call is the last
 * instruction of a function.
 *
 * Objects are cached by the file actually opened (device, inode, size,
 * mtime and its build-id), never by a build-id a record claims: a library
 * shared by a thousand processes is read once, and a file forging libc's
 * build-id is an object of its own.  Each (process, mapping) remembers its
 * object, so a process's frames resolve after it exits.  Files are opened
 * as objopen.c says (what the producer could open itself).  If the file
 * no longer has the build-id the process mapped, it is not trusted; a
 * debug file with the right build-id (/usr/lib/debug/.build-id/, then
 * debuginfod when $DEBUGINFOD_URLS is set) is used instead, or the frame
 * keeps its bare address.
 *
 * Bounded: objects (KPP_SYM_MAX_OBJECTS, per uid _UID), mapping entries
 * (KPP_SYM_MAX_MAPPINGS, per uid _UID), descriptors (KPP_SYM_MAX_PENDING_FDS
 * prefetched files; DWARF is read from a mapping whose fd is closed), and
 * debuglink CRC reads (KPP_DEBUGLINK_MAX_SIZE per file, a budget per uid);
 * every refusal is counted (kpp_symbolizer__stats).  With DWARF (in the object or its debug
 * file) lookups also give file:line and inlined frames (dwarf_lines.c).
 */
#include <elfutils/debuginfod.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "dwarf_lines.h"
#include "objopen.h"
#include "symbolize.h"

struct sym {
	uint64_t addr, size;
	uint32_t name;		/* offset into names */
	char *demangled;	/* lazily, NULL if not C++ */
	bool tried_demangle;
};

struct seg {
	uint64_t vaddr, size;	/* size: p_filesz, or p_memsz in a debug file */
	uint64_t offset;	/* p_offset; 0 in a debug file (objcopy rewrote it) */
	bool exec;
};

struct object {
	char *key;
	bool ok;		/* false: cached failure */
	bool loaded;		/* parsed (else only pending_fd, maybe) */
	bool from_file;		/* keyed by a file the process mapped (else: debug only) */
	int pending_fd;		/* opened by prefetch, parsed at first lookup */
	dev_t dev;		/* the file actually opened: what the key names */
	ino_t ino;
	uint32_t uid;		/* charged to: the producer that made us open it */
	uint32_t pid;		/* ... and its process, for its root (debuglink) */
	uint32_t puid;		/* ... whose records' uid it must still be (objopen.c) */
	char *real;		/* the object's path as that process sees it */
	struct seg *segs;
	size_t nr_segs;
	bool debug_segs;	/* segs from a debug file: vaddr and p_memsz only */
	bool et_exec;		/* ET_EXEC: its vaddrs are the process's addresses */
	struct sym *syms;
	size_t nr_syms;
	char *names;
	size_t names_len, names_cap;
	/* DWARF, kept with the ELF it reads from (mapped: the fd is closed) */
	Dwarf *dw;
	Elf *dw_elf;
	int dw_fd;
	struct object *next;
};

/*
 * One mapping of one process -> its object.  Cheap, no fd; what lets a
 * process's frames resolve after it exited without trusting its claims.
 */
struct mapent {
	uint32_t pid, uid;
	uint64_t start, end, offset;
	uint8_t build_id[KPPROF_BUILD_ID_MAX];
	uint8_t build_id_len;
	char *path;
	size_t hash;		/* its chain in maps[] */
	struct object *obj;	/* NULL: nothing to read */
	/* ELF vaddr = address + delta, once its object is loaded (map_delta) */
	bool delta_done, delta_ok;
	uint64_t delta;
	struct mapent *next, *older, *newer;	/* hash chain; age list */
};

/* Demangled DWARF names: mangled -> demangled (or NULL), by pointer. */
struct dm_ent {
	const char *mangled;
	char *demangled;
};

#define OBJ_HASH 4096
#define MAP_HASH 65536
#define UID_SLOTS 1024
#define MEMO_SLOTS 4096

/* A path claim refused for a process (claim_memo): direct-mapped, lossy. */
struct refused_claim {
	uint64_t path_hash;
	uint32_t pid, uid;
	double at;		/* 0: empty slot */
};

/* What one uid may cost; beyond it its requests are refused and counted. */
struct uid_use {
	uint32_t uid;
	bool used;
	uint32_t objects, mapents;
	uint64_t crc_left;	/* debuglink CRC bytes it may still make us read */
	double claims;		/* path claims it may make us try now (token bucket) */
	double claims_at;	/* when the bucket was last filled, s */
};

/* libdebuginfod, loaded when first needed (see debuginfod_fd) */
static struct {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int len,
			      char **path);
	void (*end)(debuginfod_client *c);
} dbgd_fn;

struct kpp_symbolizer {
	struct object *objs[OBJ_HASH];
	struct mapent **maps;	/* MAP_HASH chains */
	struct mapent *oldest, *newest;
	size_t nr_objects, nr_symbols, nr_mapents;
	struct object *pending[KPP_SYM_MAX_PENDING_FDS];	/* oldest first */
	size_t nr_pending;
	struct uid_use uids[UID_SLOTS];
	struct refused_claim refused[MEMO_SLOTS];
	struct kpp_sym_stats st;
	struct dm_ent *dm;
	size_t dm_size, dm_n;
	debuginfod_client *dbgd;
	bool dbgd_tried;
	char paths[KPP_INLINE_MAX][KPP_PATH_BUF];	/* frame files, until the next lookup */
};

struct kpp_symbolizer *kpp_symbolizer__new(void)
{
	struct kpp_symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	/*
	 * Descriptors are bounded (KPP_SYM_MAX_PENDING_FDS prefetched files;
	 * DWARF is read from a mapping, its fd closed), so RLIMIT_NOFILE is
	 * left as it is.
	 */
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->maps = calloc(MAP_HASH, sizeof(*s->maps));
	if (!s->maps) {
		free(s);
		return NULL;
	}
	return s;
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
	free(o->real);
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
	for (struct mapent *e = s->oldest, *n; e; e = n) {
		n = e->newer;
		free(e->path);
		free(e);
	}
	free(s->maps);
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

void kpp_symbolizer__stats(const struct kpp_symbolizer *s, struct kpp_sym_stats *out)
{
	*out = s->st;
	out->objects = s->nr_objects;
	out->mappings = s->nr_mapents;
	out->pending_fds = s->nr_pending;
}

/* The uid's account; NULL when the table is full (counted as refused). */
static struct uid_use *uid_use(struct kpp_symbolizer *s, uint32_t uid)
{
	size_t h = (uid * 2654435761u) % UID_SLOTS;

	for (size_t i = 0; i < UID_SLOTS; i++, h = (h + 1) % UID_SLOTS) {
		if (!s->uids[h].used) {
			s->uids[h].used = true;
			s->uids[h].uid = uid;
			s->uids[h].crc_left = KPP_DEBUGLINK_UID_BUDGET;
			return &s->uids[h];
		}
		if (s->uids[h].uid == uid)
			return &s->uids[h];
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

/*
 * claim_memo - the slot remembering whether @pid (records of @uid) was
 * refused @path.  A producer's records may name one path thousands of
 * times (each a range never mapped: a new mapping entry each); without
 * the memo each was one attempt (a helper thread, four opens) as long as
 * the uid's token bucket refilled, and the bucket refills with wall time:
 * the slower the collector went (a loaded machine), the more attempts it
 * allowed.  Lossy by design: a slot taken by another claim just means one
 * more attempt.  A hit needs the same pid, uid and path hash, so one
 * producer's paths cannot mask another's.
 */
static struct refused_claim *claim_memo(struct kpp_symbolizer *s, uint32_t pid, uint32_t uid,
					const char *path, uint64_t *hash)
{
	uint64_t h = hash_str(path);

	*hash = h;
	h = (h ^ pid ^ ((uint64_t)uid << 32)) * 0x9e3779b97f4a7c15ULL;
	return &s->refused[(h >> 32) % MEMO_SLOTS];
}

static bool claim_refused_lately(struct kpp_symbolizer *s, uint32_t pid, uint32_t uid,
				 const char *path)
{
	uint64_t hash;
	struct refused_claim *r = claim_memo(s, pid, uid, path, &hash);

	return r->at && r->path_hash == hash && r->pid == pid && r->uid == uid &&
	       now_s() - r->at < KPP_SYM_CLAIM_MEMO_S;
}

static void claim_refused_remember(struct kpp_symbolizer *s, uint32_t pid, uint32_t uid,
				   const char *path)
{
	uint64_t hash;
	struct refused_claim *r = claim_memo(s, pid, uid, path, &hash);

	r->path_hash = hash;
	r->pid = pid;
	r->uid = uid;
	r->at = now_s();
}

/*
 * A claim that failed for a reason of the moment (no thread, memory or
 * descriptor for it) says nothing about the path and is not remembered: a
 * library the process may read would stay nameless for the memo's life.
 * These are not the producer's to cause at will; its bucket bounds them.
 */
static bool claim_failure_transient(int err)
{
	return err == -EAGAIN || err == -ENOMEM || err == -EMFILE || err == -ENFILE ||
	       err == -EINTR || err == -ENOBUFS;
}

/*
 * May @uid make us try one more path claim?  Each costs a helper thread;
 * a live process's mapping that map_files does not know is nearly always
 * a lie (or already unmapped), so KPP_SYM_CLAIMS_PER_S per uid, in bursts
 * of KPP_SYM_CLAIMS_BURST.
 */
static bool claim_allowed(struct kpp_symbolizer *s, uint32_t uid)
{
	struct uid_use *u = uid_use(s, uid);
	double now;

	if (!u)
		return false;
	now = now_s();
	if (!u->claims_at)
		u->claims = KPP_SYM_CLAIMS_BURST;
	else
		u->claims += (now - u->claims_at) * KPP_SYM_CLAIMS_PER_S;
	if (u->claims > KPP_SYM_CLAIMS_BURST)
		u->claims = KPP_SYM_CLAIMS_BURST;
	u->claims_at = now;
	if (u->claims < 1)
		return false;
	u->claims--;
	return true;
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
static int load_symbols(struct kpp_symbolizer *s, struct object *o, Elf *elf,
			bool *has_symtab)
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
		/* A producer's file may claim any size (a sparse one, a lie). */
		if (sh.sh_size / sh.sh_entsize > KPP_SYM_MAX_SYMBOLS) {
			s->st.symtabs_refused++;
			continue;
		}
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
			struct sym *y = &o->syms[o->nr_syms];

			memset(y, 0, sizeof(*y));
			y->addr = sym.st_value;
			y->size = sym.st_size;
			if (add_name(o, name, &y->name))
				return -ENOMEM;
			o->nr_syms++;
		}
	}
	return 0;
}

/*
 * The PT_LOAD segments of @elf: of the mapped file itself, or (@debug_file)
 * of a separated debug file, whose p_offset and p_filesz objcopy rewrote:
 * only their p_vaddr, p_memsz and flags are kept (see map_delta()).
 */
static int load_segments(struct object *o, Elf *elf, bool debug_file)
{
	GElf_Ehdr eh;
	size_t n;

	if (elf_getphdrnum(elf, &n) || !gelf_getehdr(elf, &eh))
		return -EINVAL;
	o->debug_segs = debug_file;
	o->et_exec = eh.e_type == ET_EXEC;
	o->segs = calloc(n ? n : 1, sizeof(*o->segs));
	if (!o->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->segs[o->nr_segs++] = (struct seg){
			.vaddr = ph.p_vaddr, .offset = debug_file ? 0 : ph.p_offset,
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

/*
 * A debug file from a root-owned place (the .build-id tree, debuginfod's
 * cache): a regular file on a real file system, opened without blocking.
 */
static int open_debug(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -ENOENT;
	return kpp_keep_regular(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
}

/*
 * The CRC of a debuglink candidate, read to its end but never beyond
 * KPP_DEBUGLINK_MAX_SIZE (a larger "debug file" is refused unread) nor
 * beyond what the uid may still make us read (@budget, NULL: unlimited).
 */
static int fd_crc32(struct kpp_symbolizer *s, int fd, uint64_t *budget, uint32_t *out)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	size_t bufsize = 1 << 16;
	unsigned char *buf;
	uint64_t left;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || kpp_fd_on_pseudo_fs(fd))
		return -EINVAL;
	if ((uint64_t)st.st_size > KPP_DEBUGLINK_MAX_SIZE ||
	    (budget && (uint64_t)st.st_size > *budget)) {
		s->st.debuglink_too_big++;
		return -EFBIG;
	}
	buf = malloc(bufsize);
	if (!buf)
		return -ENOMEM;
	left = st.st_size;
	if (budget)
		*budget -= left;
	while (left && (n = pread(fd, buf, left < bufsize ? left : bufsize,
				  st.st_size - left)) > 0) {
		crc = crc32(crc, buf, n);
		left -= n;
	}
	free(buf);
	*out = crc;
	return left ? -EIO : 0;
}

/* A name the ELF gives its debug file: one file name, nothing more. */
static bool debuglink_name_ok(const char *link, size_t n)
{
	return n && n < 256 && !memchr(link, '/', n) && strcmp(link, ".") && strcmp(link, "..");
}

/* An absolute path without "." or ".." components. */
static bool path_normal(const char *p)
{
	if (p[0] != '/')
		return false;
	while (*p) {
		const char *e;

		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		if ((e - p == 1 && p[0] == '.') || (e - p == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p = e;
	}
	return true;
}

/* @fd if its CRC is @crc and it is not @o itself, else closed, -1. */
static int crc_matches(struct kpp_symbolizer *s, struct object *o, int fd, uint32_t crc,
		       uint64_t *budget)
{
	struct stat st;
	uint32_t got;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || (o->from_file && st.st_dev == o->dev && st.st_ino == o->ino) ||
	    fd_crc32(s, fd, budget, &got) || got != crc) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The .gnu_debuglink file of @elf (object @o), if one exists and its CRC
 * matches: the name must be a basename; it is looked for only in the
 * object's own directory and its .debug/ (inside the process's root, with
 * the process's credentials: what it could read itself; for pid 0 with
 * ours), then under the debug root (/usr/lib/debug/DIR/NAME, resolved
 * beneath it).  The object's directory is the one of the file actually
 * opened (map_files) when known.  Returns an fd or -1.
 */
static int find_debuglink(struct kpp_symbolizer *s, struct object *o, Elf *elf)
{
	const char *root = getenv("KPPROF_DEBUG_ROOT");
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		char dir[KPPROF_PATH_MAX], cand[KPPROF_PATH_MAX + 300], *slash;
		struct uid_use *u = NULL;
		const char *name, *link;
		uint64_t *budget = NULL;
		Elf_Data *data;
		GElf_Shdr sh;
		uint32_t crc;
		size_t nlen;
		int fd, dfd;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size < 8)
			return -1;
		link = data->d_buf;
		nlen = strnlen(link, data->d_size);
		if (nlen + 1 + 4 > data->d_size || !debuglink_name_ok(link, nlen)) {
			s->st.debuglink_refused++;
			return -1;
		}
		/* The CRC follows the name, 4-aligned. */
		memcpy(&crc, (char *)data->d_buf + ((nlen + 4) & ~3UL), 4);
		if (!o->real || !path_normal(o->real)) {
			s->st.debuglink_refused++;
			return -1;
		}
		snprintf(dir, sizeof(dir), "%s", o->real);
		slash = strrchr(dir, '/');
		*slash = '\0';
		if (o->pid) {
			u = uid_use(s, o->uid);
			budget = u ? &u->crc_left : NULL;
		}
		for (int i = 0; i < 2 && (!o->pid || budget); i++) {
			snprintf(cand, sizeof(cand), i ? "%s/.debug/%s" : "%s/%s", dir, link);
			if (o->pid)
				fd = kpp_open_as_producer(o->pid, o->puid, cand, true);
			else
				fd = kpp_openat2_regular(AT_FDCWD, cand, RESOLVE_NO_MAGICLINKS, true);
			fd = crc_matches(s, o, fd, crc, budget);
			if (fd >= 0)
				return fd;
		}
		dfd = open(root && *root ? root : "/usr/lib/debug", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -1;
		snprintf(cand, sizeof(cand), "%s/%s", dir + 1, link);
		fd = kpp_openat2_regular(dfd, *dir ? cand : link,
					 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, true);
		close(dfd);
		return crc_matches(s, o, fd, crc, NULL);
	}
	return -1;
}

static bool fd_has_id(int fd, const uint8_t *want, uint8_t want_len)
{
	uint8_t id[KPPROF_BUILD_ID_MAX], len = 0;

	return !kpp_elf__build_id_fd(fd, id, &len) && len == want_len && !memcmp(id, want, len);
}

static bool fd_has_build_id(int fd, const struct kpp_map *m)
{
	return fd_has_id(fd, m->build_id, m->build_id_len);
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
static int debuginfod_fd(struct kpp_symbolizer *s, const uint8_t *id, uint8_t id_len)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *path = NULL;
	int fd;

	if (!urls || !*urls || !id_len)
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
	fd = dbgd_fn.find_debuginfo(s->dbgd, id, id_len, &path);
	free(path);
	return fd;
}

/* @fd, or closed and -1 unless it has build-id @id (any file when @id_len is 0). */
static int keep_if_id(struct kpp_symbolizer *s, int fd, const uint8_t *id, uint8_t id_len)
{
	if (fd < 0 || !id_len || fd_has_id(fd, id, id_len))
		return fd;
	s->st.build_id_mismatch++;
	close(fd);
	return -1;
}

/*
 * The separate debug file of the object with build-id @id (the mapped
 * file's, else the mapping's): /usr/lib/debug/.build-id/, the
 * .gnu_debuglink of @main_elf, then debuginfod.  Each must carry that
 * build-id (a debuglink file of an object without one: its CRC), so its
 * symbols and DWARF are in the object's virtual address space.
 */
static Elf *find_debug(struct kpp_symbolizer *s, struct object *o, const uint8_t *id,
		       uint8_t id_len, Elf *main_elf, int *fd)
{
	char dbg[KPPROF_PATH_MAX];

	*fd = -1;
	if (id_len) {
		debug_by_build_id(id, id_len, dbg, sizeof(dbg));
		*fd = keep_if_id(s, open_debug(dbg), id, id_len);
	}
	if (*fd < 0 && main_elf)
		*fd = keep_if_id(s, find_debuglink(s, o, main_elf), id, id_len);
	if (*fd < 0)
		*fd = keep_if_id(s, debuginfod_fd(s, id, id_len), id, id_len);
	return elf_of_fd(fd);
}

/* DWARF stays; the ELF was mapped whole, so its descriptor need not. */
static void keep_dwarf(struct object *o, Elf **elf, int *fd)
{
	o->dw = dwarf_begin_elf(*elf, DWARF_C_READ, NULL);
	if (!o->dw)
		return;
	o->dw_elf = *elf;
	*elf = NULL;
	if (!elf_cntl(o->dw_elf, ELF_C_FDDONE)) {
		close(*fd);
		o->dw_fd = -1;
	} else {
		o->dw_fd = *fd;
	}
	*fd = -1;
}

static void pending_remove(struct kpp_symbolizer *s, struct object *o)
{
	for (size_t i = 0; i < s->nr_pending; i++) {
		if (s->pending[i] != o)
			continue;
		memmove(&s->pending[i], &s->pending[i + 1],
			(s->nr_pending - i - 1) * sizeof(s->pending[0]));
		s->nr_pending--;
		return;
	}
}

/*
 * Keep @fd for @o until its first lookup, within the descriptor budget:
 * over it, the oldest kept one is closed (that object is reopened through
 * its process if it still lives, else stays unsymbolized; counted).
 */
static void pending_add(struct kpp_symbolizer *s, struct object *o, int fd)
{
	if (s->nr_pending == KPP_SYM_MAX_PENDING_FDS) {
		struct object *old = s->pending[0];

		close(old->pending_fd);
		old->pending_fd = -1;
		pending_remove(s, old);
		s->st.fds_closed++;
	}
	o->pending_fd = fd;
	s->pending[s->nr_pending++] = o;
}

/* @o's file again, through @pid's mapping @m: only if it is the same file. */
static int reopen(struct object *o, uint32_t pid, const struct kpp_map *m)
{
	struct stat st;
	int fd;

	if (!o->from_file)
		return -1;
	fd = kpp_open_mapped(pid, m);
	if (fd >= 0 && (fstat(fd, &st) || st.st_dev != o->dev || st.st_ino != o->ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void object_load(struct kpp_symbolizer *s, struct object *o, uint32_t pid,
			const struct kpp_map *m)
{
	bool has_symtab = false;
	int fd = o->pending_fd >= 0 ? o->pending_fd : reopen(o, pid, m), dfd = -1;
	uint8_t id[KPPROF_BUILD_ID_MAX], id_len = 0;
	Elf *elf, *delf = NULL;

	if (o->pending_fd >= 0)
		pending_remove(s, o);
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
		/* The segments of the file mapped: the bias comes from them alone. */
		if (load_segments(o, elf, false) || load_symbols(s, o, elf, &has_symtab))
			goto out;
		o->ok = true;
		/* Its debug file must be its own: the file's build-id (the record may have none). */
		if (kpp_elf__build_id_fd(fd, id, &id_len))
			id_len = 0;
		if (has_debug_info(elf))
			keep_dwarf(o, &elf, &fd);
		if (!has_symtab || !o->dw)
			delf = find_debug(s, o, id, id_len, elf ? elf : o->dw_elf, &dfd);
	} else {
		/*
		 * Only a debug file, by the mapping's build-id: its segments
		 * give vaddrs and sizes, never the bias (map_delta()).
		 */
		delf = find_debug(s, o, m->build_id, m->build_id_len, NULL, &dfd);
		if (!delf || load_segments(o, delf, true))
			goto out;
		o->ok = true;
	}
	if (delf) {
		if (!has_symtab)
			load_symbols(s, o, delf, &has_symtab);
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

static uint64_t map_hash(uint32_t pid, const struct kpp_map *m)
{
	uint64_t h = hash_str(m->path) ^ ((uint64_t)pid << 32);

	h = (h ^ m->start) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ m->end) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ m->offset) * 0x9e3779b97f4a7c15ULL;
	for (unsigned int i = 0; i < m->build_id_len; i++)
		h = (h ^ m->build_id[i]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

static bool map_same(const struct mapent *e, uint32_t pid, const struct kpp_map *m)
{
	return e->pid == pid && e->start == m->start && e->end == m->end &&
	       e->offset == m->offset && e->build_id_len == m->build_id_len &&
	       !memcmp(e->build_id, m->build_id, m->build_id_len) && !strcmp(e->path, m->path);
}

static void mapent_unlink(struct kpp_symbolizer *s, struct mapent *e)
{
	struct mapent **pp = &s->maps[e->hash];
	struct uid_use *u = uid_use(s, e->uid);

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	if (e->older)
		e->older->newer = e->newer;
	else
		s->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		s->newest = e->older;
	if (u && u->mapents)
		u->mapents--;
	s->nr_mapents--;
	free(e->path);
	free(e);
}

/*
 * A new entry for @pid's @m: within KPP_SYM_MAX_MAPPINGS_UID per uid
 * (beyond: refused, counted) and KPP_SYM_MAX_MAPPINGS in all (beyond: the
 * oldest entry is forgotten, counted: only a process gone by then loses
 * names).
 */
static struct mapent *mapent_add(struct kpp_symbolizer *s, uint32_t pid, uint32_t uid,
				 const struct kpp_map *m, size_t h)
{
	struct uid_use *u = uid_use(s, uid);
	struct mapent *e;

	if (!u || u->mapents >= KPP_SYM_MAX_MAPPINGS_UID) {
		s->st.mappings_refused++;
		return NULL;
	}
	if (s->nr_mapents >= KPP_SYM_MAX_MAPPINGS) {
		mapent_unlink(s, s->oldest);
		s->st.mappings_forgotten++;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(m->path))) {
		free(e);
		return NULL;
	}
	e->pid = pid;
	e->uid = uid;
	e->hash = h;
	e->start = m->start;
	e->end = m->end;
	e->offset = m->offset;
	e->build_id_len = m->build_id_len;
	memcpy(e->build_id, m->build_id, m->build_id_len);
	e->next = s->maps[h];
	s->maps[h] = e;
	e->older = s->newest;
	if (s->newest)
		s->newest->newer = e;
	else
		s->oldest = e;
	s->newest = e;
	s->nr_mapents++;
	u->mapents++;
	return e;
}

static struct object *object_find(struct kpp_symbolizer *s, const char *key)
{
	for (struct object *o = s->objs[hash_str(key) % OBJ_HASH]; o; o = o->next)
		if (!strcmp(o->key, key))
			return o;
	return NULL;
}

/* A new object, within the caps (KPP_SYM_MAX_OBJECTS, _UID); NULL: refused. */
static struct object *object_new(struct kpp_symbolizer *s, const char *key, uint32_t uid)
{
	struct uid_use *u = uid_use(s, uid);
	size_t h = hash_str(key) % OBJ_HASH;
	struct object *o;

	if (!u || u->objects >= KPP_SYM_MAX_OBJECTS_UID || s->nr_objects >= KPP_SYM_MAX_OBJECTS) {
		s->st.objects_refused++;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->dw_fd = -1;
	o->pending_fd = -1;
	o->uid = uid;
	o->key = strdup(key);
	if (!o->key) {
		free(o);
		return NULL;
	}
	o->next = s->objs[h];
	s->objs[h] = o;
	s->nr_objects++;
	u->objects++;
	return o;
}

/*
 * resolve - the object of a new mapping entry.  Keyed by the file actually
 * opened (device, inode, size, mtime, and the build-id it has), so a file
 * claiming another's build-id is its own object and names nothing else;
 * when no file can be opened, by build-id alone, but then it is only ever
 * read from root-owned debug places (never a producer's file).
 */
static void resolve(struct kpp_symbolizer *s, struct mapent *e, uint32_t pid,
		    const struct kpp_map *m)
{
	char key[2 * KPPROF_BUILD_ID_MAX + 128], hex[2 * KPPROF_BUILD_ID_MAX + 1];
	char real[KPPROF_PATH_MAX];
	struct object *o;
	struct stat st;
	int fd;

	if (pid) {
		/* The file mapped there; else the path, as the process could open it. */
		fd = kpp_open_map_files(pid, m, real, sizeof(real));
		if (fd < 0 && m->path[0] == '/') {
			if (!claim_refused_lately(s, pid, m->uid, m->path) &&
			    claim_allowed(s, e->uid)) {
				fd = kpp_open_as_producer(pid, m->uid, m->path, false);
				if (fd < 0 && !claim_failure_transient(fd))
					claim_refused_remember(s, pid, m->uid, m->path);
			}
			if (fd < 0)
				s->st.claims_refused++;
			else
				snprintf(real, sizeof(real), "%s", m->path);
		}
		/* Gone already: a public file with the record's build-id (checked below). */
		if (fd < 0 && m->build_id_len && m->path[0] == '/' && kpp_proc_gone(pid)) {
			fd = kpp_open_as_uid(m->uid, m->path);
			if (fd >= 0)
				snprintf(real, sizeof(real), "%s", m->path);
		}
	} else {
		fd = kpp_open_mapped(0, m);
		snprintf(real, sizeof(real), "%s", fd >= 0 ? m->path : "");
	}
	if (fd >= 0 && m->build_id_len && !fd_has_build_id(fd, m)) {
		/* Not the file the process mapped (replaced, or a lie): never guess. */
		s->st.build_id_mismatch++;
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && fstat(fd, &st)) {
		close(fd);
		fd = -1;
	}
	build_id_hex(m->build_id, m->build_id_len, hex);
	if (fd >= 0)
		snprintf(key, sizeof(key), "f:%llx:%llx:%llx:%lld.%09ld:%s",
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			 (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, hex);
	else if (m->build_id_len)
		snprintf(key, sizeof(key), "d:%s", hex);
	else
		return;
	o = object_find(s, key);
	if (!o) {
		o = object_new(s, key, e->uid);
		if (o && fd >= 0) {
			o->from_file = true;
			o->dev = st.st_dev;
			o->ino = st.st_ino;
			o->pid = pid;
			o->puid = m->uid;
			o->real = real[0] ? strdup(real) : NULL;
			pending_add(s, o, fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	e->obj = o;
}

/*
 * get_mapent - @pid's entry for @m, with its object; @load: parsed, else
 * (prefetch) only opened, which is quick (the collector must keep up with
 * the ring) and enough: the fd stays valid after the process exits, and is
 * parsed at the first lookup.
 */
static struct mapent *get_mapent(struct kpp_symbolizer *s, uint32_t pid,
				 const struct kpp_map *m, bool load)
{
	size_t h = map_hash(pid, m) % MAP_HASH;
	struct mapent *e;
	struct object *o;

	for (e = s->maps[h]; e; e = e->next)
		if (map_same(e, pid, m))
			break;
	if (!e) {
		/*
		 * Charged to the records' uid, which the kernel stamped: /proc/PID's
		 * owner is nobody's once the process is gone, and all gone
		 * processes would share one budget that any user could spend.
		 */
		e = mapent_add(s, pid, pid ? m->uid : 0, m, h);
		if (!e)
			return NULL;
		resolve(s, e, pid, m);
	}
	o = e->obj;
	if (o && load && !o->loaded) {
		o->loaded = true;
		object_load(s, o, pid, m);
		if (o->nr_syms)
			qsort(o->syms, o->nr_syms, sizeof(*o->syms), cmp_sym);
		s->nr_symbols += o->nr_syms;
	}
	return e;
}

void kpp_symbolizer__prefetch(struct kpp_symbolizer *s, uint32_t pid, const struct kpp_map *m)
{
	get_mapent(s, pid, m, false);
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

/*
 * map_delta - the ELF virtual address of address a of mapping @m of
 * object @o is a + delta; false: not provable, the frames keep their
 * addresses (counted in debug_bias_refused).
 *
 * THE RULE: address -> file offset -> virtual address comes only from the
 * object that was mapped: its own program headers, the PT_LOAD whose file
 * range holds the mapping's offset (pick_seg()).  A separated debug file's
 * program headers never take part: objcopy --only-keep-debug turns its
 * sections NOBITS and rewrites every p_offset (lld's text 0x38960 becomes
 * 0x960), and a bias read from them names the wrong function (libc's
 * frames came out as __mpn_mul).  A debug file is consulted by virtual
 * address only: its symbols and DWARF are in the binary's address space
 * because their build-ids match (find_debug()).
 *
 * When the mapped file cannot be opened (deleted, the process gone) and
 * only its debug file is found by build-id, the bias comes from the
 * mapping itself, where that is provable.  Every executable mapping the
 * kernel or ld.so makes, and every MMAP record the shim sends, is one
 * whole PT_LOAD segment: from the page of p_vaddr to the page end of
 * p_vaddr + p_memsz (p_filesz = p_memsz for code).  The mapping holds a
 * return address, so it is executable.  If the debug file has exactly one
 * executable PT_LOAD spanning as many pages as the mapping, and none
 * larger (of which the mapping could be a piece, had the process
 * mprotect'ed part of it), the mapping starts at that segment's first
 * page: delta = page(p_vaddr) - start, which must be 0 for an ET_EXEC.
 * Anything else is refused and counted, never guessed.  p_align is not
 * used: the loader aligns a bias as it likes (any page) and the mapping
 * says where it went.
 */
static bool map_delta(struct kpp_symbolizer *s, const struct object *o, const struct kpp_map *m,
		      uint64_t *delta)
{
	const uint64_t page = 4096, mask = page - 1;	/* the shim's and pick_seg's page */
	const struct seg *seg = NULL;
	uint64_t len = m->end - m->start;
	bool larger = false;
	int found = 0;

	if (!o->debug_segs) {
		seg = pick_seg(o, m->offset);
		*delta = m->offset - m->start + seg->vaddr - seg->offset;
		return true;
	}
	for (size_t i = 0; m->end > m->start && !((m->start | m->end) & mask) && i < o->nr_segs;
	     i++) {
		const struct seg *g = &o->segs[i];
		uint64_t first = g->vaddr & ~mask, end = (g->vaddr + g->size + mask) & ~mask;

		if (!g->exec || end <= first)
			continue;
		if (end - first == len) {
			seg = g;
			found++;
		} else if (end - first > len) {
			larger = true;
		}
	}
	if (found != 1 || larger || (o->et_exec && (seg->vaddr & ~mask) != m->start)) {
		s->st.debug_bias_refused++;
		return false;
	}
	*delta = (seg->vaddr & ~mask) - m->start;
	return true;
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
	struct mapent *e = get_mapent(s, pid, m, true);
	struct object *o = e ? e->obj : NULL;
	const struct sym *sym;
	unsigned int n = 0, k = 0;
	uint64_t v;

	if (!o || !o->ok)
		return -ENOENT;
	if (!e->delta_done) {
		e->delta_done = true;
		e->delta_ok = map_delta(s, o, m, &e->delta);
	}
	if (!e->delta_ok)
		return -ENOENT;
	/* a return address: look up the call, a - 1 */
	v = addr - 1 + e->delta;
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
