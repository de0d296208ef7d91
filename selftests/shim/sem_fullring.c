// SPDX-License-Identifier: GPL-2.0
/*
 * A full ring, emulated for the shim's test sink: preloaded ahead of the
 * shim, it makes the first SEM_REFUSE (default 1) FREE records written to a
 * descriptor >= 100 (the shim's) fail with ENOBUFS, what KPPROF_IOC_SUBMIT
 * returns when the ring is full.  Later ones go through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "kpprof.h"

static _Atomic int refused;

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	static int limit = -1;
	const struct kpprof_record *h = buf;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "write");
	if (limit < 0) {
		const char *s = getenv("SEM_REFUSE");

		limit = s ? atoi(s) : 1;
	}
	if (fd >= 100 && n >= sizeof(*h) && h->kind == KPPROF_REC_FREE &&
	    refused < limit) {
		refused++;
		errno = ENOBUFS;
		return -1;
	}
	return real(fd, buf, n);
}
