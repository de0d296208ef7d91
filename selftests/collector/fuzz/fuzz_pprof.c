// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_pprof - libFuzzer: the bytes drive the pprof builder (strings,
 * functions, mappings, locations, samples with labels); the encoding must
 * always decode again with protobuf-c, string_table[0] "" and the same
 * number of samples.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "pprof_builder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_builder *b = pprof_builder__new();
	uint64_t locs[16];
	size_t nlocs = 0, samples = 0;
	uint8_t *gz, *raw;
	size_t gzlen, rawlen;
	char s[8];

	if (!b)
		abort();
	pprof_builder__sample_type(b, "a", "count");
	pprof_builder__sample_type(b, "b", "bytes");
	for (size_t i = 0; i + 8 <= size; i += 8) {
		const uint8_t *p = data + i;

		memcpy(s, p + 1, 7);
		s[7] = '\0';
		switch (p[0] % 4) {
		case 0: {
			uint64_t m = pprof_builder__mapping(b, p[1], p[1] + p[2], 0, s, "", true);
			uint64_t f = pprof_builder__function(b, s, NULL, "");

			if (nlocs < 16)
				locs[nlocs++] = pprof_builder__location(b, m, p[3], f);
			break;
		}
		case 1: {
			int64_t v[2] = { p[1], (int64_t)p[2] << 20 };
			struct pprof_label l[2] = { { .key = "k", .str = s }, { .key = "n", .num = p[3],
										 .num_unit = "bytes" } };

			if (pprof_builder__sample(b, locs, nlocs, v, l, p[4] % 3) == 0)
				samples++;
			break;
		}
		case 2:
			pprof_builder__comment(b, s);
			break;
		case 3:
			pprof_builder__period(b, s, "bytes", p[1]);
			break;
		}
	}
	if (pprof_builder__encode_gz(b, &gz, &gzlen) || pprof_gunzip(gz, gzlen, &raw, &rawlen))
		abort();
	Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, rawlen, raw);

	if (!p || p->n_string_table < 1 || p->string_table[0][0] || p->n_sample != samples)
		abort();
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	pprof_builder__free(b);
	return 0;
}
