// SPDX-License-Identifier: GPL-2.0
/*
 * Mapping records: one KPPROF_REC_MMAP per executable PT_LOAD segment of
 * an object (path, range, file offset, GNU build-id read from the
 * object's PT_NOTE in memory), so a process can be symbolized after it
 * has exited; KPPROF_REC_MUNMAP when the object is unloaded.
 *
 * Lazily, per object, from the stack being sent (kpp_maps_send; the main
 * program always first, which the collector takes for the executable): for each
 * pc, _dl_find_object() (glibc 2.35: lock-free, async-signal-safe) names
 * the object and its range; an object not yet in the "sent" set has its
 * records built from its own headers in memory (the ELF header is at the
 * start of its lowest PT_LOAD) and submitted before the stack record.  No
 * dl_iterate_phdr, no loader lock and no lock of ours on a sampling path:
 * a program whose dl_iterate_phdr callback allocates (libbacktrace,
 * Rust's backtrace) cannot deadlock against us, and a fork never finds a
 * sampling thread holding anything.
 *
 * The sent set: SENT_SLOTS slots, open addressing on the object's start
 * (unique among loaded objects), each claimed with a CAS and holding the
 * link_map it was sent for; a slot whose link_map differs (0: unloaded or
 * never sent) is sent again by whoever swaps it in.  Full: the object's
 * records are not sent, counted in kpp.maps_unsent.  Objects keep their
 * slot after unloading (a reload usually lands at the same start).
 *
 * Unloading: dlclose() is wrapped (kpp_dlclose below; not dlopen, whose
 * $ORIGIN/RUNPATH resolution depends on its caller's address).  After the
 * real call, each sent object that _dl_find_object no longer finds at its
 * start under the same link_map gets a MUNMAP of its first executable
 * segment, outside any sampling path.
 *
 * Paths are the loader's names, unresolved: a dlopen("./x.so") is sent as
 * "./x.so" (the collector opens the file through /proc/PID/map_files/
 * START-END, whatever its name); the main program's is the target of
 * /proc/self/exe, read once at its first record (AT_EXECFN without /proc).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "shim.h"

#define SENT_SLOTS	1024	/* power of 2 */
#define NR_BUFS		4	/* records built at once (threads) */

struct sent {
	_Atomic uintptr_t start;	/* 0: free */
	_Atomic uintptr_t map;		/* link_map sent for; 0: not (any more) */
	_Atomic uintptr_t xstart, xend;	/* its first executable segment */
	_Atomic uint32_t tag;		/* its identity (kpp_obj.tag); 0: unknown */
};

static struct sent sent[SENT_SLOTS];
static _Atomic int main_sent;		/* the main program went first */

/* Record buffers, taken with a CAS; none free: retry at the next stack. */
static struct {
	struct kpprof_rec_mmap r;
	char path[KPPROF_PATH_MAX + 8];
} bufs[NR_BUFS];
static _Atomic int buf_busy[NR_BUFS];

/* The main program's path: 0 unread, 1 being read, 2 in exe_path. */
static char exe_path[KPPROF_PATH_MAX];
static _Atomic int exe_state;

static const char *exe_name(void)
{
	int none = 0;
	const char *fallback = (const char *)getauxval(AT_EXECFN);

	if (atomic_load_explicit(&exe_state, memory_order_acquire) == 2)
		return exe_path;
	if (atomic_compare_exchange_strong(&exe_state, &none, 1)) {
		/* Once per process; a syscall, but no lock and no allocation. */
		ssize_t n = kpp_readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);

		if (n > 0) {
			exe_path[n] = 0;
			atomic_store_explicit(&exe_state, 2, memory_order_release);
			return exe_path;
		}
		atomic_store(&exe_state, 0);
	}
	return fallback ? fallback : "";
}

/* find_build_id - the NT_GNU_BUILD_ID of a loaded object, at most KPPROF_BUILD_ID_MAX bytes. */
static unsigned int find_build_id(const ElfW(Phdr) *phdr, unsigned int phnum,
				  uintptr_t bias, uintptr_t lo, uintptr_t hi, __u8 *out)
{
	size_t len;
	const void *desc = kpp_build_id_note(phdr, phnum, bias, lo, hi, &len);

	if (!desc)
		return 0;
	if (len > KPPROF_BUILD_ID_MAX)
		len = KPPROF_BUILD_ID_MAX;
	memcpy(out, desc, len);
	return (unsigned int)len;
}

static int take_buf(void)
{
	for (int i = 0; i < NR_BUFS; i++) {
		int free_ = 0;

		if (atomic_compare_exchange_strong(&buf_busy[i], &free_, 1)) {
			kpp_thread.map_buf = i + 1;
			return i;
		}
	}
	return -1;
}

/*
 * emit_object - the MMAP records of one object, from its headers in
 * memory.  Returns false if nothing could be sent (retry later).
 */
static bool emit_object(const struct kpp_obj *o, struct sent *s)
{
	uintptr_t lo = o->lo, hi = o->hi;
	const struct link_map *lm = o->map;
	const long page = 4096;
	const uintptr_t mask = ~((uintptr_t)page - 1);
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)lo;
	const ElfW(Phdr) *phdr;
	const char *name;
	bool sent_any = false;
	__u8 bid[KPPROF_BUILD_ID_MAX];
	unsigned int bid_len;
	size_t len, size;
	int b;

	/* The headers must be in the object's first page, which is mapped. */
	if (hi - lo < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh->e_phoff > (uintptr_t)page ||
	    eh->e_phnum * sizeof(ElfW(Phdr)) > (size_t)page - eh->e_phoff ||
	    hi - lo < eh->e_phoff + eh->e_phnum * sizeof(ElfW(Phdr)))
		return true;	/* nothing we can send, ever: do not retry */
	phdr = (const ElfW(Phdr) *)(lo + eh->e_phoff);
	b = take_buf();
	if (b < 0)
		return false;
	name = lm->l_name;
	if (!name || !*name)
		name = exe_name();
	else if (!strncmp(name, "linux-vdso", 10) || !strncmp(name, "linux-gate", 10))
		name = "[vdso]";	/* a pseudo-object for the collector */
	bid_len = find_build_id(phdr, eh->e_phnum, lm->l_addr, lo, hi, bid);
	len = strnlen(name, KPPROF_PATH_MAX - 1) + 1;
	size = (sizeof(bufs[b].r) + len + 7) & ~(size_t)7;
	for (unsigned int i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *ph = &phdr[i];
		uintptr_t start, end;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		start = (lm->l_addr + ph->p_vaddr) & mask;
		end = (lm->l_addr + ph->p_vaddr + ph->p_memsz + page - 1) & mask;
		memset(&bufs[b], 0, sizeof(bufs[b].r) + len + 8);
		bufs[b].r.hdr.kind = KPPROF_REC_MMAP;
		bufs[b].r.hdr.size = (__u32)size;
		bufs[b].r.start = start;
		bufs[b].r.end = end;
		bufs[b].r.offset = ph->p_offset & mask;
		memcpy(bufs[b].r.build_id, bid, bid_len);
		bufs[b].r.build_id_len = (__u8)bid_len;
		bufs[b].r.path_len = (__u16)len;
		memcpy(bufs[b].r.path, name, len - 1);
		if (kpp_emit(&bufs[b], size) == 0)
			sent_any = true;
		if (!atomic_load_explicit(&s->xend, memory_order_relaxed)) {
			atomic_store_explicit(&s->xstart, start, memory_order_relaxed);
			atomic_store_explicit(&s->xend, end, memory_order_relaxed);
		}
	}
	kpp_thread.map_buf = 0;
	atomic_store_explicit(&buf_busy[b], 0, memory_order_release);
	return sent_any;
}

/*
 * replaced - slot @s holds another object than @o at the same start, or
 * may: a link_map @m other than @o's (nonzero: the dlclose wrapper, which
 * clears it, did not see the unload), or the same link_map (malloc
 * reuses it) but another identity (unwind_cache.c's tag: build-id
 * included).  Such an object was unloaded behind the wrapper (glibc's own
 * unloads of iconv modules, libc's dlclose reached by a dlsym in libc's
 * handle) and @o loaded there.  Then the old one's MUNMAP goes now, the
 * slot is given back (true) and the caller sends @o.  With the same
 * link_map, a slot sent without a tag (a stack that libgcc or fp took:
 * kpp_maps_send), or being claimed, adopts @o's.  False: the same
 * object, or another thread is at it.
 */
static bool replaced(struct sent *s, const struct kpp_obj *o, uintptr_t m)
{
	uint32_t tag = atomic_load(&s->tag);
	uintptr_t xstart, xend;
	struct kpprof_rec_munmap r;

	if (m == (uintptr_t)o->map) {
		if (!o->tag || tag == o->tag)
			return false;
		if (!tag) {
			atomic_compare_exchange_strong(&s->tag, &tag, o->tag);
			return false;
		}
	}
	/* the old object's segment, before the slot can be claimed again */
	xstart = atomic_load_explicit(&s->xstart, memory_order_relaxed);
	xend = atomic_load_explicit(&s->xend, memory_order_relaxed);
	if (!atomic_compare_exchange_strong(&s->map, &m, 0))
		return false;
	if (xend) {
		memset(&r, 0, sizeof(r));
		r.hdr.kind = KPPROF_REC_MUNMAP;
		r.hdr.size = sizeof(r);
		r.start = xstart;
		r.end = xend;
		kpp_emit(&r, sizeof(r));
	}
	return true;
}

static void send_object(const struct kpp_obj *o)
{
	uintptr_t start = o->lo, lm = (uintptr_t)o->map;
	unsigned int h = (unsigned int)((start >> 12) * 0x9E3779B1u);

	for (unsigned int i = 0; i < SENT_SLOTS; i++) {
		struct sent *s = &sent[(h + i) & (SENT_SLOTS - 1)];
		uintptr_t k = atomic_load_explicit(&s->start, memory_order_acquire), m;

		if (!k) {
			if (!atomic_compare_exchange_strong(&s->start, &k, start) && k != start)
				continue;
		} else if (k != start) {
			continue;
		}
		m = atomic_load_explicit(&s->map, memory_order_acquire);
		if (m && !replaced(s, o, m))
			return;		/* sent, or being sent by another thread */
		m = 0;			/* free, or replaced() gave the slot back */
		/* 0 while it is claimed: a reader then adopts, never replaces */
		atomic_store(&s->tag, 0);
		if (!atomic_compare_exchange_strong(&s->map, &m, lm))
			return;		/* being sent by another thread */
		atomic_store(&s->tag, o->tag);
		atomic_store_explicit(&s->xend, 0, memory_order_relaxed);
		if (!emit_object(o, s))
			atomic_compare_exchange_strong(&s->map, &lm, 0);
		return;
	}
	atomic_fetch_add_explicit(&kpp.maps_unsent, 1, memory_order_relaxed);
}

/*
 * The main program first, whatever the stack: the collector takes a
 * process's first mapping for its executable (profile_write.c).
 */
static void send_main(void)
{
	if (unlikely(!atomic_load_explicit(&main_sent, memory_order_acquire))) {
		struct kpp_obj o;
		void *entry = (void *)getauxval(AT_ENTRY);

		if (entry && kpp_obj_at((uintptr_t)entry, &o, NULL))
			send_object(&o);
		atomic_store_explicit(&main_sent, 1, memory_order_release);
	}
}

/*
 * kpp_maps_send - before a stack record: the MMAP records of every object
 * a pc of @pcs lies in that were not sent yet.  Async-signal-safe, no
 * lock: _dl_find_object (about 7 ns) once per object change along the
 * stack, one slot look-up per object.
 */
void kpp_maps_send(const __u64 *pcs, unsigned int n)
{
	uintptr_t lo = 0, hi = 0;

	send_main();
	for (unsigned int i = 0; i < n; i++) {
		uintptr_t pc = (uintptr_t)pcs[i];
		struct kpp_obj o;

		if (pc >= lo && pc < hi)
			continue;
		if (!kpp_obj_at(pc, &o, NULL)) {
			lo = hi = 0;
			continue;
		}
		lo = o.lo;
		hi = o.hi;
		send_object(&o);
	}
}

/*
 * kpp_maps_send_objs - the objects the DWARF walk already looked up for
 * the pcs it recorded (struct kpp_objs): no look-up at all here.
 */
void kpp_maps_send_objs(const struct kpp_objs *objs)
{
	send_main();
	for (unsigned int i = 0; i < objs->n; i++)
		if (objs->o[i].used)
			send_object(&objs->o[i]);
}

/* kpp_maps_reset - forget what was sent (a new process: fork, _Fork,
 * clone; a fresh image after a failed exec), so the next stacks send
 * their objects again under this pid.  Other threads may be sending:
 * at worst an object goes twice. */
void kpp_maps_reset(void)
{
	for (unsigned int i = 0; i < SENT_SLOTS; i++) {
		atomic_store_explicit(&sent[i].map, 0, memory_order_relaxed);
		atomic_store_explicit(&sent[i].start, 0, memory_order_relaxed);
	}
	for (int i = 0; i < NR_BUFS; i++)
		atomic_store(&buf_busy[i], 0);
	kpp_thread.map_buf = 0;
	atomic_store(&main_sent, 0);
}

void kpp_maps_abandon(struct kpp_thread *t)
{
	if (t->map_buf) {
		atomic_store(&buf_busy[t->map_buf - 1], 0);
		t->map_buf = 0;
	}
}

/* After a dlclose: MUNMAP for every sent object that is gone. */
static void maps_unloaded(void)
{
	for (unsigned int i = 0; i < SENT_SLOTS; i++) {
		struct sent *s = &sent[i];
		uintptr_t k = atomic_load_explicit(&s->start, memory_order_acquire);
		uintptr_t m = atomic_load_explicit(&s->map, memory_order_acquire);
		struct kpp_obj o;
		struct kpprof_rec_munmap r;

		if (!k || !m || (kpp_obj_at(k, &o, NULL) && o.lo == k &&
				 (uintptr_t)o.map == m))
			continue;
		if (!atomic_compare_exchange_strong(&s->map, &m, 0) ||
		    !atomic_load_explicit(&s->xend, memory_order_relaxed))
			continue;
		memset(&r, 0, sizeof(r));
		r.hdr.kind = KPPROF_REC_MUNMAP;
		r.hdr.size = sizeof(r);
		r.start = atomic_load_explicit(&s->xstart, memory_order_relaxed);
		r.end = atomic_load_explicit(&s->xend, memory_order_relaxed);
		kpp_emit(&r, sizeof(r));
	}
}

KPP_EXPORT int dlclose(void *handle)
{
	static void *_Atomic real_slot;
	int (*real)(void *) = (int (*)(void *))kpp_next_cached(&real_slot, "dlclose", NULL);
	struct kpp_thread *t = &kpp_thread;
	int r, saved;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	r = real(handle);
	if (!r)		/* unwind_cache.c: rules of what was there go stale */
		atomic_fetch_add_explicit(&kpp.unloads, 1, memory_order_release);
	if (r || atomic_load(&kpp.ready) != 1 || t->guard)
		return r;
	saved = errno;
	t->guard = 1;
	kpp_process_check();
	maps_unloaded();
	t->guard = 0;
	errno = saved;
	return r;
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
 * kpp_maps_find_self - the shim's own text, whose frames stacks skip.
 * No syscall.
 */
void kpp_maps_find_self(void)
{
	struct self_search s = { (uintptr_t)&kpp_maps_find_self, 0, 0 };

	dl_iterate_phdr(find_self, &s);
	kpp.self_lo = s.lo;
	kpp.self_hi = s.hi;
}
