// SPDX-License-Identifier: GPL-2.0
/*
 * A full ring, emulated for the shim's test sink: preloaded ahead of the
 * shim, it makes the first SEM_REFUSE (default 1) FREE records written to a
 * descriptor >= 100 (the shim's) fail with ENOBUFS, what KPPROF_IOC_SUBMIT
 * returns when the ring is full.  Later ones go through.  The shim writes
 * its test sink with syscall(SYS_write, ...) (no cancellation point), so
 * syscall() is wrapped as well as write().
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kpprof.h"

static _Atomic int refused;

/* refuse - should this write fail as a full ring would? */
static int refuse(int fd, const void *buf, size_t n)
{
	static int limit = -1;
	const struct kpprof_record *h = buf;

	if (limit < 0) {
		const char *s = getenv("SEM_REFUSE");

		limit = s ? atoi(s) : 1;
	}
	if (fd >= 100 && n >= sizeof(*h) && h->kind == KPPROF_REC_FREE &&
	    refused < limit) {
		refused++;
		errno = ENOBUFS;
		return 1;
	}
	return 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "write");
	if (refuse(fd, buf, n))
		return -1;
	return real(fd, buf, n);
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "syscall");
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)	/* the x86-64 convention: all in registers */
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_write && refuse((int)a[0], (const void *)a[1], (size_t)a[2]))
		return -1;
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
