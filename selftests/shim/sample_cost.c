// SPDX-License-Identifier: GPL-2.0
/*
 * sample_cost: where the time of one sampled event goes, each part timed
 * alone with the shim's own code (linked in, like unit_test) at a stack
 * 16 frames deep:
 *
 *   unwind_fp         kpp_stack_fp, 16+ frames
 *   unwind_libgcc     kpp_stack_dwarf (libgcc's _Unwind_Backtrace, no cache;
 *                     the fallback of the DWARF unwinder), 16+ frames
 *   sample_fp         what a sampled event costs besides its submission:
 *                     claim a private stack, switch to it, capture the
 *                     stack (fp), fill the ALLOC record, switch back
 *   sample_dwarf      the same with the DWARF unwinder (the default: rules
 *                     cached per private stack, unwind_cache.c)
 *   set_insert_remove kpp_set_insert + kpp_set_remove of one address
 *   write_record      write(2) of an ALLOC record with 16 pcs to /dev/null
 *                     (the test sink; the module's write/ioctl costs more)
 *   ioctl_enotty      ioctl(2) on /dev/null (ENOTTY): a syscall's floor,
 *                     what KPPROF_IOC_SUBMIT pays before the module's work
 *   fstat             fstat(2) of the record descriptor (the old per-record
 *                     check)
 *   clock             clock_gettime (vDSO)
 * Each line: "name value us"; best of 5 rounds of ITERS (default 200000).
 * usage: sample_cost [ITERS]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"

KPP_TLS struct kpp_thread kpp_thread;

/* loader.c is not linked in: no dl_iterate_phdr wrapper, never inside one. */
bool kpp_loader_walking(void)
{
	return false;
}

/* seccomp.c is not linked in: no module, no seccomp probe to ask. */
bool kpp_filtered(bool note)
{
	(void)note;
	return false;
}

bool kpp_unfiltered(void)
{
	return false;
}

static long iters;
static int fd;
static struct {
	struct kpprof_rec_alloc r;
	__u64 pcs[16];
} rec;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef void part_fn(void);

static void do_fp(void)
{
	__u64 pcs[64];

	if (!kpp_stack_fp(&kpp_thread, pcs, 64))
		abort();
}

static void do_unwind(void)
{
	__u64 pcs[64];

	if (!kpp_stack_dwarf(pcs, 64))
		abort();
}

/* emit.c's alloc_body without kpp_maps_sync and the submission. */
static void body(void *arg, uintptr_t caller_fp)
{
	struct {
		struct kpprof_rec_alloc r;
		__u64 pcs[KPPROF_STACK_DEPTH_MAX];
	} b;
	unsigned int n = kpp_stack(&kpp_thread, caller_fp, b.r.pcs, 64, NULL);

	if (!n)
		abort();
	memset(&b.r.hdr, 0, sizeof(b.r.hdr));
	b.r.hdr.kind = KPPROF_REC_ALLOC;
	b.r.hdr.nr_pcs = (__u16)n;
	b.r.hdr.size = (__u32)(sizeof(b.r) + n * sizeof(__u64));
	b.r.addr = (uintptr_t)arg;
	b.r.bytes = 64;
	b.r.rate = 1;
	__asm__ volatile("" : : "r"(&b) : "memory");
}

static void do_sample_fp(void)
{
	kpp.unwind_libunwind = 0;
	if (!kpp_on_private_stack(&kpp_thread, body, &rec))
		abort();
}

static void do_sample_dwarf(void)
{
	kpp.unwind_libunwind = 1;
	if (!kpp_on_private_stack(&kpp_thread, body, &rec))
		abort();
}

static void do_set(void)
{
	uint64_t size;

	kpp_set_insert(&rec, 64);
	kpp_set_remove(&rec, &size);
}

static void do_write(void)
{
	if (write(fd, &rec, sizeof(rec)) != sizeof(rec))
		abort();
}

static void do_ioctl(void)
{
	(void)!ioctl(fd, _IO(0xb7, 0x07), &rec);
}

static void do_fstat(void)
{
	struct stat st;

	fstat(fd, &st);
}

static void do_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
}

/* Time @fn at depth @depth (frames of this recursion, plus main's). */
__attribute__((noinline)) static double at_depth(int depth, part_fn *fn)
{
	double best = 1e9, r;

	if (depth > 1) {
		r = at_depth(depth - 1, fn);
		__asm__ volatile("" ::: "memory");
		return r;
	}
	for (int round = 0; round < 5; round++) {
		double t0 = now_s();

		for (long i = 0; i < iters; i++)
			fn();
		r = (now_s() - t0) * 1e6 / (double)iters;
		if (r < best)
			best = r;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; part_fn *fn; } parts[] = {
		{ "unwind_fp", do_fp }, { "unwind_libgcc", do_unwind },
		{ "sample_fp", do_sample_fp }, { "sample_dwarf", do_sample_dwarf },
		{ "set_insert_remove", do_set }, { "write_record", do_write },
		{ "ioctl_enotty", do_ioctl }, { "fstat", do_fstat }, { "clock", do_clock },
	};

	iters = argc > 1 ? atol(argv[1]) : 200000;
	fd = open("/dev/null", O_WRONLY);
	if (fd < 0 || kpp_set_init())
		return 1;
	rec.r.hdr.kind = KPPROF_REC_ALLOC;
	rec.r.hdr.nr_pcs = 16;
	rec.r.hdr.size = sizeof(rec);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		printf("%s %.3f us\n", parts[i].name, at_depth(16, parts[i].fn));
	return 0;
}
