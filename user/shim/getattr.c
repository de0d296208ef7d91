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
 * The real function is found at start with the other next definitions
 * (real.c): never dlsym on a sampling path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include "shim.h"

static const char *const next_names[1] = { "pthread_getattr_np" };
static void *_Atomic getattr_next_fns[1] KPP_START_DATA;
const struct kpp_next_table kpp_getattr_next = { getattr_next_fns, next_names, 1, NULL, NULL };

int kpp_real_getattr(pthread_t th, pthread_attr_t *attr)
{
	int (*real)(pthread_t, pthread_attr_t *) =
		kpp_next_cached(&getattr_next_fns[0], next_names[0], NULL);

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
