// SPDX-License-Identifier: GPL-2.0
/*
 * Mapping records: one KPPROF_REC_MMAP per executable PT_LOAD segment of
 * every loaded object (path, range, file offset, GNU build-id read from
 * the object's PT_NOTE in memory), so a process can be symbolized after it
 * has exited; KPPROF_REC_MUNMAP when an object goes away.
 *
 * When: at start, in the child after fork, and whenever the loader's
 * dlpi_adds/dlpi_subs counters have moved before a stack record is
 * written.  That last one is how dlopen/dlclose are followed: every sample
 * is preceded by the mappings it needs.  We do not wrap dlopen() itself,
 * because glibc resolves $ORIGIN, RPATH and RUNPATH from the address of
 * dlopen's caller, which a wrapper would replace with its own.
 *
 * What was emitted is kept in a fixed table (MAX_SEGS segments) guarded by
 * a spinlock held only while this file runs; past MAX_SEGS, mappings are
 * still emitted but their unmapping is not.
 */
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "shim.h"

#define MAX_SEGS	2048

/* An emitted segment; @name is a hash of the loader's name for the
 * object, so an object replaced by another at the same range is seen. */
struct seg {
	uintptr_t start, end;
	uint64_t name;
	uint32_t seen;
};

static struct seg segs[MAX_SEGS];
static unsigned int nr_segs;
static atomic_flag maps_lock = ATOMIC_FLAG_INIT;
static _Atomic unsigned long long last_adds = ~0ULL, last_subs = ~0ULL;
static uint32_t generation;

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&maps_lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&maps_lock, memory_order_release);
}

struct counters {
	unsigned long long adds, subs;
};

static int read_counters(struct dl_phdr_info *info, size_t size, void *data)
{
	struct counters *c = data;

	(void)size;
	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	return 1;	/* the counters are the same in every entry: stop */
}

bool kpp_maps_changed(void)
{
	struct counters c = { 0, 0 };

	dl_iterate_phdr(read_counters, &c);
	return c.adds != atomic_load_explicit(&last_adds, memory_order_relaxed) ||
	       c.subs != atomic_load_explicit(&last_subs, memory_order_relaxed);
}

/* find_build_id - the NT_GNU_BUILD_ID note of a loaded object, if any. */
static unsigned int find_build_id(const struct dl_phdr_info *info, __u8 *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;
		size_t align = ph->p_align == 8 ? 8 : 4;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + align - 1) & ~(align - 1));

			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && n->n_descsz > 0) {
				unsigned int len = n->n_descsz;

				if (len > KPPROF_BUILD_ID_MAX)
					len = KPPROF_BUILD_ID_MAX;
				memcpy(out, desc, len);
				return len;
			}
			p = desc + ((n->n_descsz + align - 1) & ~(align - 1));
		}
	}
	return 0;
}

/* The record being built; guarded by maps_lock. */
static struct {
	struct kpprof_rec_mmap r;
	char path[KPPROF_PATH_MAX + 8];
} mrec;

static void object_path(const struct dl_phdr_info *info, char *out, size_t size)
{
	const char *name = info->dlpi_name;
	ssize_t n;

	if (!name || !*name) {
		n = readlink("/proc/self/exe", out, size - 1);
		out[n > 0 ? n : 0] = 0;
		if (n > 0)
			return;
		/*
		 * No /proc (a chroot without it): the name exec was given, made
		 * absolute, so the main program's mapping still has its path.
		 */
		name = (const char *)getauxval(AT_EXECFN);
		if (!name || !*name)
			return;
	}
	if (!strncmp(name, "linux-vdso", 10) || !strncmp(name, "linux-gate", 10)) {
		snprintf(out, size, "[vdso]");
		return;
	}
	if (name[0] != '/') {
		char abs[PATH_MAX];

		if (realpath(name, abs) && strlen(abs) < size) {
			strcpy(out, abs);
			return;
		}
	}
	snprintf(out, size, "%s", name);
}

static void emit_mmap(const struct dl_phdr_info *info, uintptr_t start,
		      uintptr_t end, uintptr_t offset)
{
	size_t len, size;

	memset(&mrec, 0, sizeof(mrec));
	object_path(info, mrec.r.path, KPPROF_PATH_MAX);
	len = strlen(mrec.r.path) + 1;
	size = (sizeof(mrec.r) + len + 7) & ~(size_t)7;
	mrec.r.hdr.kind = KPPROF_REC_MMAP;
	mrec.r.hdr.size = (__u32)size;
	mrec.r.start = start;
	mrec.r.end = end;
	mrec.r.offset = offset;
	mrec.r.build_id_len = (__u8)find_build_id(info, mrec.r.build_id);
	mrec.r.path_len = (__u16)len;
	kpp_emit(&mrec, size);
}

static void emit_munmap(uintptr_t start, uintptr_t end)
{
	struct kpprof_rec_munmap r;

	memset(&r, 0, sizeof(r));
	r.hdr.kind = KPPROF_REC_MUNMAP;
	r.hdr.size = sizeof(r);
	r.start = start;
	r.end = end;
	kpp_emit(&r, sizeof(r));
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	while (s && *s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static struct seg *find_seg(uintptr_t start, uintptr_t end, uint64_t name)
{
	for (unsigned int i = 0; i < nr_segs; i++)
		if (segs[i].start == start && segs[i].end == end && segs[i].name == name)
			return &segs[i];
	return NULL;
}

static int sync_object(struct dl_phdr_info *info, size_t size, void *data)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t mask = ~((uintptr_t)page - 1);
	uint64_t name = name_hash(info->dlpi_name);

	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start, end, offset;
		struct seg *s;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		start = (info->dlpi_addr + ph->p_vaddr) & mask;
		end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & mask;
		offset = ph->p_offset & mask;
		s = find_seg(start, end, name);
		if (s) {
			s->seen = generation;
			continue;
		}
		emit_mmap(info, start, end, offset);
		if (nr_segs < MAX_SEGS)
			segs[nr_segs++] = (struct seg){ start, end, name, generation };
	}
	return 0;
}

static int read_all_counters(struct dl_phdr_info *info, size_t size, void *data)
{
	return read_counters(info, size, data);
}

void kpp_maps_sync(void)
{
	struct counters c = { 0, 0 };

	if (kpp.fd < 0 || !kpp_maps_changed())
		return;
	lock();
	generation++;
	/*
	 * Read the counters before walking: a dlopen racing with the walk
	 * leaves them stale, so the next sync walks again (nothing is
	 * emitted twice: segments already in the table are skipped).
	 */
	dl_iterate_phdr(read_all_counters, &c);
	dl_iterate_phdr(sync_object, NULL);
	for (unsigned int i = 0; i < nr_segs;) {
		if (segs[i].seen != generation) {
			emit_munmap(segs[i].start, segs[i].end);
			segs[i] = segs[--nr_segs];
			continue;
		}
		i++;
	}
	atomic_store_explicit(&last_adds, c.adds, memory_order_relaxed);
	atomic_store_explicit(&last_subs, c.subs, memory_order_relaxed);
	unlock();
}

/* kpp_maps_reset - forget what was emitted (the child after fork), so the
 * next sync emits every object again under the child's pid. */
void kpp_maps_reset(void)
{
	nr_segs = 0;
	atomic_store(&last_adds, ~0ULL);
	atomic_store(&last_subs, ~0ULL);
	atomic_flag_clear(&maps_lock);
}

/* kpp_maps_forget - like kpp_maps_reset, with other threads running (a
 * failed exec: the fresh image sends every object again). */
void kpp_maps_forget(void)
{
	lock();
	nr_segs = 0;
	atomic_store(&last_adds, ~0ULL);
	atomic_store(&last_subs, ~0ULL);
	unlock();
}

struct self_search {
	uintptr_t pc, lo, hi;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_search *s = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    s->pc >= lo && s->pc < lo + ph->p_memsz) {
			s->lo = lo;
			s->hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/*
 * The dynamic loader (its load address is AT_BASE): the range of its
 * text, and its struct r_debug as the main program's DT_DEBUG entry
 * points to it (what debuggers read; the _r_debug symbol would do too,
 * unless the program has a copy relocation of it, which goes stale).
 */
static int find_loader(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_search *s = data;
	bool first = !kpp.r_debug;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (first && ph->p_type == PT_DYNAMIC) {
			for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
			     d->d_tag != DT_NULL; d++)
				if (d->d_tag == DT_DEBUG && d->d_un.d_ptr)
					kpp.r_debug = (const struct r_debug *)d->d_un.d_ptr;
		}
		if (info->dlpi_addr == s->pc && ph->p_type == PT_LOAD &&
		    (ph->p_flags & PF_X)) {
			s->lo = info->dlpi_addr + ph->p_vaddr;
			s->hi = s->lo + ph->p_memsz;
		}
	}
	if (!kpp.r_debug)
		kpp.r_debug = &_r_debug;
	return s->hi != 0;
}

/*
 * kpp_maps_find_self - the shim's own text, whose frames stacks skip, and
 * the dynamic loader's text and r_debug (stack.c: when libunwind may be
 * dlopen'ed).  No syscall.
 */
void kpp_maps_find_self(void)
{
	struct self_search s = { (uintptr_t)&kpp_maps_find_self, 0, 0 };
	struct self_search ld = { (uintptr_t)getauxval(AT_BASE), 0, 0 };

	dl_iterate_phdr(find_self, &s);
	kpp.self_lo = s.lo;
	kpp.self_hi = s.hi;
	dl_iterate_phdr(find_loader, &ld);
	kpp.ldso_lo = ld.lo;
	kpp.ldso_hi = ld.hi;
}
