// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_decode - libFuzzer: arbitrary ring entries through the decoder
 * (built from the fixture format text) and, when accepted, the
 * aggregation, with small caps so the bounded-memory paths run too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "agg.h"
#include "decode.h"

static struct kpp_decoder *dec;
static struct kpp_agg *agg;
static unsigned long n;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 1 << 16);

	if (!f || !buf)
		abort();
	if (!fread(buf, 1, (1 << 16) - 1, f))
		abort();
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kpp_agg_limits lim = { .max_buckets = 64, .max_stacks = 64, .max_live = 64,
				      .max_exited = 2 };
	struct kpp_rec r;

	if (!dec) {
		char err[256], *text = slurp(getenv("KPPROF_FORMAT") ? getenv("KPPROF_FORMAT") :
					     "selftests/collector/fixtures/format.txt");

		dec = kpp_decoder__new(text, err, sizeof(err));
		free(text);
		if (!dec)
			abort();
	}
	if (!agg || ++n % 1000 == 0) {
		kpp_agg__free(agg);
		agg = kpp_agg__new(&lim);
	}
	if (kpp_decoder__decode(dec, data, size, &r) == 0)
		kpp_agg__add(agg, &r);
	return 0;
}
