// SPDX-License-Identifier: GPL-2.0
/* pprof_gzip.c - gzip framing for pprof files, through zlib. */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "pprof_builder.h"

/* windowBits 15 + 16 selects the gzip wrapper instead of zlib's. */
#define GZIP_WBITS (15 + 16)

int pprof_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = { 0 };
	uLong bound;
	uint8_t *buf;
	int ret;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, len);
	buf = malloc(bound);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = bound;
	ret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = zs.total_out;
	return 0;
}

int pprof_gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = { 0 };
	size_t cap = len * 4 + 4096;
	uint8_t *buf = malloc(cap);
	int ret;

	if (!buf)
		return -ENOMEM;
	/* 32 + 15: accept gzip or zlib framing. */
	if (inflateInit2(&zs, 32 + 15) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	do {
		if (zs.total_out == cap) {
			uint8_t *p = realloc(buf, cap * 2);

			if (!p) {
				ret = Z_MEM_ERROR;
				break;
			}
			buf = p;
			cap *= 2;
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		ret = inflate(&zs, Z_NO_FLUSH);
	} while (ret == Z_OK || (ret == Z_BUF_ERROR && zs.avail_out == 0));
	*out_len = zs.total_out;
	inflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return ret == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
	}
	*out = buf;
	return 0;
}
