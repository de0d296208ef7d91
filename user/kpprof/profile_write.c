// SPDX-License-Identifier: GPL-2.0
/*
 * profile_write.c - a view becomes a pprof profile as Go writes them
 * (runtime/pprof protomem.go and the block/mutex writer):
 *
 *   heap     sample types alloc_objects/count, alloc_space/bytes,
 *            inuse_objects/count, inuse_space/bytes; period_type
 *            space/bytes, period = the sampling rate; each sample scaled
 *            by scaleHeapSample with the rate it was taken at; numeric
 *            label "bytes" (unit bytes) = the object size.
 *   block,   contentions/count, delay/nanoseconds; period_type
 *   mutex    contentions/count, period 1; values already unbiased.
 *
 * Locations are per (process, address): two processes may map different
 * code at one address.  Mappings are per process; the first is the main
 * executable of the first sample's process (pprof takes mapping[0] for
 * the main binary).  Every sample carries "pid" and "comm" labels, one
 * process or many, so they do not come and go between scrapes.
 *
 * As Go writes them: Location.address is the return address minus one for
 * every frame, the leaf included (the shim records the return address of
 * the call to malloc; Go's runtime.CallersFrames gives Frame.PC = pc - 1
 * for every return PC, and that is what runtime/pprof writes), so
 * re-symbolizers look up the call, not the instruction after it; Location.line[] is the inline chain, innermost
 * first, with Function.filename the source file and start_line set; a
 * mapping's has_functions/has_filenames/has_line_numbers/has_inline_frames
 * are set only when every location in it got them, so pprof symbolizes
 * the rest itself (stripped objects, debug info installed later).
 * drop_frames hides the allocator's entry points, so the top of a C++ or
 * Rust profile names the caller, as Go hides its runtime's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "pprof_builder.h"
#include "profile_write.h"

const struct kpp_map *kpp_proc__map_for(const struct kpp_proc *p, uint64_t pc)
{
	if (!p)
		return NULL;
	/* Newest first: a later mapping at the same place replaced an older one. */
	for (size_t i = p->nr_maps; i-- > 0;)
		if (p->maps[i].start <= pc && pc < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

/* Open-addressing cache (pid, pc) -> location id, and (pid, map) -> mapping id. */
struct id_ent {
	uint64_t key;
	uint32_t pid;
	uint64_t id;
};

struct id_map {
	struct id_ent *t;
	size_t size, n;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	return x ^ (x >> 33);
}

static struct id_ent *id_slot(struct id_map *m, uint32_t pid, uint64_t key)
{
	if (2 * (m->n + 1) > m->size) {
		size_t size = m->size ? 2 * m->size : 1024;
		struct id_ent *t = calloc(size, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < m->size; i++) {
			if (!m->t[i].id)
				continue;
			size_t s = mix(m->t[i].key ^ ((uint64_t)m->t[i].pid << 48)) & (size - 1);

			while (t[s].id)
				s = (s + 1) & (size - 1);
			t[s] = m->t[i];
		}
		free(m->t);
		m->t = t;
		m->size = size;
	}
	for (size_t s = mix(key ^ ((uint64_t)pid << 48)) & (m->size - 1);;
	     s = (s + 1) & (m->size - 1)) {
		if (!m->t[s].id || (m->t[s].key == key && m->t[s].pid == pid))
			return &m->t[s];
	}
}

/* What symbolization found for every location of a mapping, by mapping id. */
struct map_found {
	bool functions, filenames, lines;
};

struct writer {
	struct pprof_builder *b;
	const struct kpp_agg *a;
	struct kpp_symbolizer *sym;
	struct id_map locs, maps;
	struct map_found *found;
	size_t nr_found;
};

/*
 * Profile.drop_frames: a frame whose name fully matches (pprof anchors it)
 * is hidden with every frame it called.  The allocator's entry points: the
 * C ones (which the kpprof shim wraps), C++'s operator new family, Rust's
 * global allocator shims, the alloc::alloc functions that call them and
 * RawVec's growth (what Vec::push allocates through).
 */
#define KPP_DROP_FRAMES \
	"malloc|calloc|realloc|reallocarray|free|cfree|valloc|pvalloc|memalign|" \
	"aligned_alloc|posix_memalign|malloc_usable_size|strdup|strndup|" \
	"kpp_.*|__libc_.*alloc|__libc_free|" \
	"operator new.*|operator delete.*|" \
	"__rust_alloc.*|__rust_realloc|__rust_dealloc|__rustc::.*|__rdl_.*|__rg_.*|" \
	"alloc::alloc::.*|<alloc::alloc::Global as core::alloc::Allocator>::.*|" \
	"alloc::raw_vec::.*|<alloc::raw_vec::.*"

static uint64_t mapping_id(struct writer *w, const struct kpp_proc *p, const struct kpp_map *m)
{
	struct id_ent *e = id_slot(&w->maps, p->pid, (uint64_t)(m - p->maps));
	char hex[2 * KPPROF_BUILD_ID_MAX + 1];

	if (!e)
		return 0;
	if (e->id)
		return e->id;
	for (unsigned int i = 0; i < m->build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", m->build_id[i]);
	hex[2 * m->build_id_len] = '\0';
	e->id = pprof_builder__mapping(w->b, m->start, m->end, m->offset, m->path, hex, false);
	if (e->id && e->id > w->nr_found) {
		struct map_found *f = realloc(w->found, e->id * sizeof(*f));

		if (!f)
			return 0;
		w->found = f;
		for (size_t i = w->nr_found; i < e->id; i++)
			f[i] = (struct map_found){ true, true, true };
		w->nr_found = e->id;
	}
	e->key = m - p->maps;
	e->pid = p->pid;
	w->maps.n++;
	return e->id;
}

/* The location of frame @pc, a return address like every frame. */
static uint64_t location_id(struct writer *w, uint32_t pid, uint64_t pc)
{
	uint64_t addr = pc ? pc - 1 : 0;
	uint64_t key = addr;
	struct id_ent *e = id_slot(&w->locs, pid, key);
	struct pprof_line lines[KPP_INLINE_MAX];
	const struct kpp_proc *p;
	const struct kpp_map *m;
	uint64_t map_id = 0;
	unsigned int nl = 0;
	struct kpp_sym s;

	if (!e)
		return 0;
	if (e->id)
		return e->id;
	p = kpp_agg__proc(w->a, pid);
	m = kpp_proc__map_for(p, pc);
	if (!m && p && p->state == KPP_PROC_ALIVE && p->nr_maps)
		kpp_proc__note_unmapped(pid);	/* its maps are read again (review M7) */
	if (m) {
		struct map_found *f;
		bool ok;

		map_id = mapping_id(w, p, m);
		if (!map_id)
			return 0;
		f = &w->found[map_id - 1];
		ok = kpp_symbolizer__lookup_pid(w->sym, pid, m, pc, &s) == 0;
		f->functions &= ok;
		f->filenames &= ok && s.has_lines && s.frames[0].file;
		f->lines &= ok && s.has_lines && s.frames[0].line;
		for (unsigned int i = 0; ok && i < s.nr_frames; i++) {
			const struct kpp_frame *fr = &s.frames[i];

			lines[nl].function_id = pprof_builder__function_at(w->b, fr->name,
						fr->system_name, fr->file, fr->start_line);
			lines[nl].line = fr->line;
			if (!lines[nl].function_id)
				return 0;
			nl++;
		}
	}
	e->id = pprof_builder__location_lines(w->b, map_id, addr, lines, nl);
	e->key = key;
	e->pid = pid;
	w->locs.n++;
	return e->id;
}

/* Set each mapping's has_* now that all its locations were symbolized. */
static void mapping_flags(struct writer *w)
{
	for (size_t i = 0; i < w->nr_found; i++) {
		const struct map_found *f = &w->found[i];

		pprof_builder__mapping_flags(w->b, i + 1, f->functions,
					     f->functions && f->filenames,
					     f->functions && f->lines,
					     f->functions && f->lines);
	}
}

/*
 * main_map - the process's main executable: its first mapping still in
 * place, whatever its path says (the shim announces the program first,
 * dl_iterate_phdr's order; /proc/PID/maps lists it first too, below the
 * libraries).  Only pseudo-objects such as [vdso] are skipped.
 */
static const struct kpp_map *main_map(const struct kpp_proc *p)
{
	for (size_t i = 0; p && i < p->nr_maps; i++)
		if (!p->maps[i].unmapped && p->maps[i].path[0] != '[')
			return &p->maps[i];
	return NULL;
}

static int build(struct writer *w, const struct kpp_view *v, const struct kpp_write_opts *o)
{
	uint64_t period = 0;
	uint64_t locs[KPPROF_STACK_DEPTH_MAX];
	int err = 0;

	if (v->type == KPP_HEAP) {
		err |= pprof_builder__sample_type(w->b, "alloc_objects", "count");
		err |= pprof_builder__sample_type(w->b, "alloc_space", "bytes");
		err |= pprof_builder__sample_type(w->b, "inuse_objects", "count");
		err |= pprof_builder__sample_type(w->b, "inuse_space", "bytes");
		/* The rate in force most recently: the newest bucket's. */
		for (size_t i = 0; i < v->n; i++)
			period = v->s[i].rate;
		err |= pprof_builder__period(w->b, "space", "bytes", period);
		if (o && o->allocs)
			err |= pprof_builder__default_sample_type(w->b, "alloc_space");
	} else {
		err |= pprof_builder__sample_type(w->b, "contentions", "count");
		err |= pprof_builder__sample_type(w->b, "delay", "nanoseconds");
		err |= pprof_builder__period(w->b, "contentions", "count", 1);
	}
	pprof_builder__time(w->b, v->time_ns - (o ? o->duration_ns : 0), o ? o->duration_ns : 0);
	if (o && o->comment)
		err |= pprof_builder__comment(w->b, o->comment);
	err |= pprof_builder__drop_frames(w->b, KPP_DROP_FRAMES);
	if (err)
		return -ENOMEM;
	if (v->n) {
		const struct kpp_proc *p = kpp_agg__proc(w->a, v->s[0].pid);
		const struct kpp_map *m = main_map(p);

		if (m && !mapping_id(w, p, m))
			return -ENOMEM;
	}

	for (size_t i = 0; i < v->n; i++) {
		const struct kpp_view_sample *s = &v->s[i];
		struct pprof_label lab[3];
		size_t nl = 0;
		int64_t val[4];
		unsigned int n;
		const uint64_t *pcs = kpp_agg__stack(w->a, s->stack, &n);
		const struct kpp_proc *p;
		char comm[KPPROF_COMM_LEN + 1];

		if (v->type == KPP_HEAP) {
			kpp_scale_heap(s->v[0], s->v[1], s->rate, &val[0], &val[1]);
			kpp_scale_heap(s->v[2], s->v[3], s->rate, &val[2], &val[3]);
			if (!val[0] && !val[1] && !val[2] && !val[3])
				continue;
			if (s->size)
				lab[nl++] = (struct pprof_label){ .key = "bytes",
					.num = (int64_t)s->size, .num_unit = "bytes" };
		} else {
			val[0] = (int64_t)(s->v[0] + 0.5);
			val[1] = (int64_t)(s->v[1] + 0.5);
			if (!val[0] && !val[1])
				continue;
		}
		p = kpp_agg__proc(w->a, s->pid);
		snprintf(comm, sizeof(comm), "%s", p && p->comm[0] ? p->comm : "?");
		lab[nl++] = (struct pprof_label){ .key = "pid", .num = s->pid };
		lab[nl++] = (struct pprof_label){ .key = "comm", .str = comm };
		for (unsigned int k = 0; k < n; k++) {
			locs[k] = location_id(w, s->pid, pcs[k]);
			if (!locs[k])
				err = -ENOMEM;
		}
		if (!err)
			err = pprof_builder__sample(w->b, locs, n, val, lab, nl);
		if (err)
			return err;
	}
	mapping_flags(w);
	return 0;
}

int kpp_profile__encode_gz(const struct kpp_view *v, const struct kpp_agg *a,
			   struct kpp_symbolizer *sym, const struct kpp_write_opts *o,
			   uint8_t **out, size_t *len)
{
	struct writer w = { .a = a, .sym = sym };
	int err;

	w.b = pprof_builder__new();
	if (!w.b)
		return -ENOMEM;
	err = build(&w, v, o);
	if (!err)
		err = pprof_builder__encode_gz(w.b, out, len);
	pprof_builder__free(w.b);
	free(w.locs.t);
	free(w.maps.t);
	free(w.found);
	return err;
}

int kpp_profile__write_fileat(int dirfd, const char *name, const struct kpp_view *v,
			      const struct kpp_agg *a, struct kpp_symbolizer *sym,
			      const struct kpp_write_opts *o)
{
	char tmp[NAME_MAX + 1];
	uint8_t *buf;
	size_t len, off = 0;
	int fd = -1, err = kpp_profile__encode_gz(v, a, sym, o, &buf, &len);

	if (err)
		return err;
	/*
	 * A fresh name no one can have planted (O_EXCL: never an existing
	 * file, O_NOFOLLOW: never through a symlink), then rename over @name,
	 * which replaces a directory entry and writes through nothing.
	 */
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		uint64_t r = 0;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r ^= (uint64_t)getpid() << 32 ^ (uint64_t)tries ^ (uintptr_t)&r;
		snprintf(tmp, sizeof(tmp), ".%.200s.%016llx.tmp", name, (unsigned long long)r);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST) {
			err = -errno;
			break;
		}
	}
	if (fd < 0) {
		free(buf);
		return err ? err : -EEXIST;
	}
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += n;
	}
	if (close(fd) && !err)
		err = -errno;
	free(buf);
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

int kpp_profile__write_file(const char *path, const struct kpp_view *v,
			    const struct kpp_agg *a, struct kpp_symbolizer *sym,
			    const struct kpp_write_opts *o)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int dfd, err;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
	else
		strcpy(dir, ".");
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	err = kpp_profile__write_fileat(dfd, slash ? slash + 1 : path, v, a, sym, o);
	close(dfd);
	return err;
}

/* ------------------------------------------------------------ legacy text */

/*
 * Paths and symbol names come from producers (their MMAP records, their
 * ELF files): a newline in one would start a forged sample line.  Control
 * bytes are written as \xNN, which Go's names never contain.
 */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static void legacy_frames(FILE *f, struct writer *w, uint32_t pid, const uint64_t *pcs,
			  unsigned int n)
{
	const struct kpp_proc *p = kpp_agg__proc(w->a, pid);

	for (unsigned int k = 0; k < n; k++) {
		const struct kpp_map *m = kpp_proc__map_for(p, pcs[k]);
		struct kpp_sym s;

		fprintf(f, "#\t%#llx\t", (unsigned long long)pcs[k]);
		if (m && kpp_symbolizer__lookup_pid(w->sym, pid, m, pcs[k], &s) == 0)
			put_escaped(f, s.name);
		else
			fputc('?', f);
		fputc('\t', f);
		put_escaped(f, m ? m->path : "?");
		fputc('\n', f);
	}
}

static void legacy_stack(FILE *f, const uint64_t *pcs, unsigned int n)
{
	fputs(" @", f);
	for (unsigned int k = 0; k < n; k++)
		fprintf(f, " %#llx", (unsigned long long)pcs[k]);
	fputc('\n', f);
}

/*
 * at_rate - @s's sampled heap counts re-expressed as if sampled at @rate:
 * legacy text has one rate (the header's) and readers unbias every record
 * with it, so a bucket sampled at another rate is written with the counts
 * that unbias, at @rate, to its own unbiased figures (scaleHeapSample
 * depends on the average size only, which this keeps).
 */
static void at_rate(const struct kpp_view_sample *s, uint64_t rate, int64_t out[4])
{
	for (int k = 0; k < 4; k += 2) {
		int64_t c, b, c1, b1;

		if (s->rate == rate) {
			out[k] = (int64_t)s->v[k];
			out[k + 1] = (int64_t)s->v[k + 1];
			continue;
		}
		kpp_scale_heap(s->v[k], s->v[k + 1], s->rate, &c, &b);
		/* The factor at @rate, from the same average size. */
		kpp_scale_heap(1e6, 1e6 * (s->v[k] ? s->v[k + 1] / s->v[k] : 0), rate, &c1, &b1);
		out[k] = c1 ? (int64_t)((double)c * 1e6 / (double)c1 + 0.5) : c;
		out[k + 1] = c1 ? (int64_t)((double)b * 1e6 / (double)c1 + 0.5) : b;
	}
}

/*
 * Go's debug=1 forms: for the heap, sampled counts with the rate in the
 * header (readers unbias them; see at_rate for buckets of another rate),
 * and as Go, alloc bytes in the header bumped by one when they equal the
 * in-use bytes (pprof would read the file as two columns otherwise); for
 * block and mutex, "cycles" are nanoseconds (cycles/second = 1e9) and
 * counts are already unbiased.
 */
int kpp_profile__write_legacy(FILE *f, const struct kpp_view *v, const struct kpp_agg *a,
			      struct kpp_symbolizer *sym)
{
	struct writer w = { .a = a, .sym = sym };
	uint64_t rate = 0;

	if (v->type == KPP_HEAP) {
		int64_t t[4] = { 0 }, c[4];

		/* The rate in force most recently: the newest bucket's. */
		for (size_t i = 0; i < v->n; i++)
			rate = v->s[i].rate;
		for (size_t i = 0; i < v->n; i++) {
			at_rate(&v->s[i], rate, c);
			for (int k = 0; k < 4; k++)
				t[k] += c[k];
		}
		if (t[3] == t[1])
			t[1]++;
		fprintf(f, "heap profile: %lld: %lld [%lld: %lld] @ heap/%llu\n",
			(long long)t[2], (long long)t[3], (long long)t[0], (long long)t[1],
			(unsigned long long)(2 * rate));
	} else {
		fprintf(f, "--- %s:\ncycles/second=1000000000\nsampling period=1\n",
			v->type == KPP_MUTEX ? "mutex" : "contention");
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct kpp_view_sample *s = &v->s[i];
		unsigned int n;
		const uint64_t *pcs = kpp_agg__stack(a, s->stack, &n);

		if (v->type == KPP_HEAP) {
			int64_t c[4];

			if (!s->v[0] && !s->v[2])
				continue;
			at_rate(s, rate, c);
			fprintf(f, "%lld: %lld [%lld: %lld]", (long long)c[2], (long long)c[3],
				(long long)c[0], (long long)c[1]);
		} else {
			if (s->v[0] < 0.5 && s->v[1] < 0.5)
				continue;
			fprintf(f, "%lld %lld", (long long)(s->v[1] + 0.5), (long long)(s->v[0] + 0.5));
		}
		legacy_stack(f, pcs, n);
		legacy_frames(f, &w, s->pid, pcs, n);
	}
	return ferror(f) ? -EIO : 0;
}
