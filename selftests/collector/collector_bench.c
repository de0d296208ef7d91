// SPDX-License-Identifier: GPL-2.0
/*
 * collector_bench - figures for the collector, on one core:
 *   1. records/s decoded + aggregated (a realistic mix: 1000 stacks,
 *      alloc/free pairs, cycle records), target >= 1M/s;
 *   2. memory per unique stack and per live sampled allocation;
 *   3. symbolization time for a profile with 10k distinct frames (in libc
 *      and this program) and pprof encode time and size;
 *   4. the cost of one process exit beyond the kept ones (its buckets and
 *      live allocations dropped) next to a big process, against the same
 *      exit next to nothing: the ratio must stay near 1 (forgetting a
 *      process costs what it owns, not what the others hold).
 * Baseline in the same run: a plain memcpy of the same records, for the
 * "aggregation costs X times a copy" ratio.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile_write.h"
#include "test_rec.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * exit_cost - ms per exit of a short process (START, one ALLOC, EXIT)
 * beyond the kept ones, next to one process holding @nbuckets buckets and
 * @nlive live sampled allocations.  Records are built directly (no
 * decode): only the aggregation is timed.
 */
static double exit_cost(size_t nbuckets, size_t nlive, int nexit)
{
	/* One uid, one big process: the quotas are not what is measured. */
	struct kpp_agg_limits lim = {
		.max_uid_buckets = SIZE_MAX, .max_uid_stack_pcs = SIZE_MAX,
		.max_uid_live = SIZE_MAX, .max_uid_procs = SIZE_MAX,
		.max_proc_buckets = SIZE_MAX, .max_proc_live = SIZE_MAX,
	};
	struct kpp_agg *a = kpp_agg__new(&lim);
	uint64_t pcs[4] = { 0x401000, 0x402000, 0x403000, 0x404000 };
	struct kpp_rec r;
	double t0, dt;

	memset(&r, 0, sizeof(r));
	r.pcs = pcs;
	r.nr_pcs = 4;
	r.cycle = 1;
	r.kind = KPPROF_REC_ALLOC;
	r.tgid = 100;
	r.alloc.bytes = 64;
	r.alloc.rate = 524288;
	for (size_t i = 0; i < (nlive > nbuckets ? nlive : nbuckets); i++) {
		pcs[1] = 0x10000000 + i % (nbuckets ? nbuckets : 1);
		r.alloc.addr = 0x10000000 + 16 * i;
		kpp_agg__add(a, &r);
		if (i >= nlive)		/* buckets beyond the live ones: freed */
			r.kind = KPPROF_REC_FREE, kpp_agg__add(a, &r), r.kind = KPPROF_REC_ALLOC;
	}
	t0 = now();
	for (int p = 0; p < 64 + nexit; p++) {
		if (p == 64)
			t0 = now();	/* the first 64 exits are kept: no drop */
		memset(&r.comm, 0, sizeof(r.comm));
		r.tgid = 5000 + p;
		r.kind = KPPROF_REC_COMM;
		r.comm.reason = KPPROF_COMM_START;
		kpp_agg__add(a, &r);
		r.kind = KPPROF_REC_ALLOC;
		r.alloc.addr = 0x5000;
		r.alloc.bytes = 32;
		r.alloc.rate = 524288;
		kpp_agg__add(a, &r);
		r.kind = KPPROF_REC_COMM;
		memset(&r.comm, 0, sizeof(r.comm));
		r.comm.reason = KPPROF_COMM_EXIT;
		kpp_agg__add(a, &r);
	}
	dt = now() - t0;
	kpp_agg__free(a);
	return 1e3 * dt / nexit;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

int main(void)
{
	enum { NREC = 2000000, NSTACK = 1000, DEPTH = 16 };
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct kpp_agg *a;
	struct kpp_rec r;
	double t0, t_agg, t_copy;
	volatile size_t sink = 0;
	uint64_t pcs[DEPTH];

	if (!d) {
		fprintf(stderr, "collector_bench: %s\n", err);
		return 1;
	}
	/*
	 * 1. throughput.  Records are prepared from templates (one per stack,
	 * plus a FREE and a CYCLE template), only addr and cycle patched per
	 * record, as they would sit in the ring; the baseline copies each
	 * record out as a consumer that does nothing would.  The mix: alloc,
	 * its free, 16-frame stacks over 1000 distinct stacks, a cycle record
	 * every 100000.
	 */
	{
		static struct test_buf tmpl[NSTACK], fr, cy;
		static size_t tlen[NSTACK];
		static uint8_t dst[4096];
		size_t flen, clen;

		for (int s = 0; s < NSTACK; s++) {
			for (int k = 0; k < DEPTH; k++)
				pcs[k] = 0x400000 + 0x100 * k + (uint64_t)s * 0x10000;
			tlen[s] = test_alloc(&tmpl[s], 1000, 1, 1, 64, 512 * 1024, pcs, DEPTH);
		}
		flen = test_free(&fr, 1000, 1, 1, 64);
		clen = test_cycle(&cy, 1);
		for (int pass = 0; pass < 2; pass++) {
			a = kpp_agg__new(NULL);
			t0 = now();
			for (long i = 0; i < NREC; i++) {
				long obj = i / 2;
				uint64_t cycle = 1 + i / 100000;
				struct test_buf *b;
				size_t len;

				if (i % 100000 == 99999) {
					b = &cy;
					len = clen;
				} else if (i & 1) {
					b = &fr;
					len = flen;
					b->free.addr = 0x10000 + 16 * obj;
				} else {
					b = &tmpl[obj % NSTACK];
					len = tlen[obj % NSTACK];
					b->alloc.addr = 0x10000 + 16 * obj;
				}
				b->hdr.cycle = cycle;
				if (pass == 0) {
					memcpy(dst, b->bytes, len);
					sink += dst[len - 1];
				} else if (kpp_decoder__decode(d, b->bytes, len, &r) ||
					   kpp_agg__add(a, &r)) {
					return 1;
				}
			}
			if (pass == 0)
				t_copy = now() - t0;
			else
				t_agg = now() - t0;
			kpp_agg__free(a);
		}
	}
	printf("records decoded+aggregated: %d in %.3f s = %.2f M records/s on one core (target >= 1M/s)\n",
	       NREC, t_agg, NREC / t_agg / 1e6);
	printf("baseline (copy each record out, nothing else): %.1f M records/s; aggregation costs %.1fx the copy\n",
	       NREC / t_copy / 1e6, t_agg / t_copy);

	/* 2. memory per unique stack, per live sampled allocation */
	{
		enum { N = 100000 };
		size_t m0 = heap_in_use(), m1, m2;
		struct test_buf b;

		a = kpp_agg__new(NULL);
		for (int i = 0; i < N; i++) {
			for (int k = 0; k < DEPTH; k++)
				pcs[k] = 0x500000 + 0x100 * k + (uint64_t)i * 0x10000;
			test_feed(d, a, &b, test_alloc(&b, 7, 1, 0x100000 + 16 * i, 64, 1, pcs, DEPTH));
		}
		m1 = heap_in_use();
		for (int i = 0; i < N; i++)
			test_feed(d, a, &b, test_alloc(&b, 7, 1, 0x9000000 + 16 * i, 64, 1, pcs, DEPTH));
		m2 = heap_in_use();
		printf("memory per unique %d-frame stack (with its bucket and one live entry): %.0f bytes\n",
		       DEPTH, (double)(m1 - m0) / N);
		printf("memory per further live sampled allocation (same bucket): %.1f bytes\n",
		       (double)(m2 - m1) / N);
		kpp_agg__free(a);
	}

	/* 3. symbolization of 10k distinct frames, and pprof encode */
	{
		struct kpp_symbolizer *sym = kpp_symbolizer__new();
		struct kpp_write_opts o = { 0 };
		struct kpp_view v;
		const struct kpp_proc *p;
		uint64_t lo = 0, hi = 0;
		uint8_t *gz;
		size_t gzlen, objs, syms;
		struct test_buf b;
		double t_sym;

		a = kpp_agg__new(NULL);
		kpp_proc__read_maps(a, getpid());
		p = kpp_agg__proc(a, getpid());
		for (size_t i = 0; p && i < p->nr_maps; i++)
			if (strstr(p->maps[i].path, "libc.so")) {
				lo = p->maps[i].start;
				hi = p->maps[i].end;
				break;
			}
		if (!lo) {
			fprintf(stderr, "collector_bench: libc not found in /proc/self/maps\n");
			return 1;
		}
		/* 1000 stacks x 10 frames = 10k distinct pcs across libc's text. */
		for (int s = 0; s < 1000; s++) {
			uint64_t st[10];

			for (int k = 0; k < 10; k++)
				st[k] = lo + ((uint64_t)(s * 10 + k) * 7919 * 16) % (hi - lo);
			test_feed(d, a, &b, test_alloc(&b, getpid(), 1, 0x100 + 16 * s, 64, 1, st, 10));
		}
		test_feed(d, a, &b, test_cycle(&b, 2));
		kpp_view__take(&v, a, KPP_HEAP, NULL, NULL);
		t0 = now();
		kpp_profile__encode_gz(&v, a, sym, &o, &gz, &gzlen);
		t_sym = now() - t0;
		kpp_symbolizer__counts(sym, &objs, &syms);
		printf("symbolize + encode, 10000 distinct frames (libc, %zu symbols loaded): %.1f ms (cold cache)\n",
		       syms, t_sym * 1e3);
		free(gz);
		t0 = now();
		kpp_profile__encode_gz(&v, a, sym, &o, &gz, &gzlen);
		printf("symbolize + encode again (warm cache): %.1f ms; pprof size %zu bytes gzip'd, 1000 samples\n",
		       (now() - t0) * 1e3, gzlen);
		free(gz);
		kpp_view__release(&v);
		kpp_symbolizer__free(sym);
		kpp_agg__free(a);
	}

	/* 4. one exit beyond the kept ones, next to a big process */
	{
		enum { NEXIT = 2000 };
		double base = exit_cost(0, 0, NEXIT);
		double b100k = exit_cost(100000, 100000, NEXIT);
		double l1m = exit_cost(1000, 1000000, NEXIT);

		printf("one process exit (dropped beyond the 64 kept), next to nothing: %.4f ms\n", base);
		printf("  next to 100k buckets / 100k live: %.4f ms (%.1fx); next to 1M live sampled allocations: %.4f ms (%.1fx)\n",
		       b100k, b100k / base, l1m, l1m / base);
	}
	kpp_decoder__free(d);
	free(text);
	(void)sink;
	return 0;
}
