// SPDX-License-Identifier: GPL-2.0
/*
 * pthread_getattr_np, wrapped only to know when a thread is inside it.
 *
 * glibc's pthread_getattr_np(th) holds th's descriptor lock while it
 * allocates (the cpuset buffer; for the main thread, the stdio buffer of
 * /proc/self/maps), and a signal may arrive there.  The fp walker learns
 * a thread's stack bounds with pthread_getattr_np(pthread_self()) at the
 * thread's first fp stack: from a sample of one of those allocations it
 * waited for the lock its own thread held (the JVM calls it at every
 * thread start: java hung at its first thread under KPPROF_UNWIND=fp,
 * rate 1).  Two threads each inside pthread_getattr_np of the other
 * would wait for each other the same way.  So a thread inside it
 * (kpp_thread.in_getattr) does not learn its bounds there; its stack
 * waits for a sample outside (stack.c).
 *
 * The real function is looked up by the constructor, as prctl's is
 * (seccomp.c): never dlsym on a sampling path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include "shim.h"

static int (*real_getattr)(pthread_t, pthread_attr_t *) KPP_START_DATA;

void kpp_getattr_resolve(void)
{
	*(void **)&real_getattr = dlsym(RTLD_NEXT, "pthread_getattr_np");
}

int kpp_real_getattr(pthread_t th, pthread_attr_t *attr)
{
	int (*real)(pthread_t, pthread_attr_t *) = real_getattr;

	if (!real)
		*(void **)&real_getattr = *(void **)&real =
			dlsym(RTLD_NEXT, "pthread_getattr_np");
	return real ? real(th, attr) : ENOSYS;
}

KPP_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	struct kpp_thread *t = &kpp_thread;
	int r;

	t->in_getattr++;
	r = kpp_real_getattr(th, attr);
	t->in_getattr--;
	return r;
}
