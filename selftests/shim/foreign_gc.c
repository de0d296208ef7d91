// SPDX-License-Identifier: GPL-2.0
/*
 * foreign_suites.sh -s gc.  Boehm GC, threads: each worker keeps a list
 * of GC objects reachable only from its own stack and registers, and
 * calls libc's malloc/free in the
 * same loop; the main thread collects over and over (stop-the-world by
 * signal, then a conservative scan of each thread's stack from the sp its
 * suspend handler saw).  A collection that misses a thread's stack frees
 * that thread's live list: the check below sees it overwritten (or the
 * traversal meets a list made cyclic by the objects' reuse).
 *
 *   foreign_gc [SECONDS]
 */
#define GC_THREADS
#include <gc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; unsigned long magic; unsigned long pad[6]; };
#define MAGIC 0x5eedf00dcafe1234UL
static volatile int stop;
static unsigned long bad, iters_done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sinkp;

static void *worker(void *arg)
{
	unsigned long k = (unsigned long)arg, it = 0, mybad = 0;
	struct node *head = NULL;
	while (!stop) {
		for (int i = 0; i < 64; i++) {
			struct node *n = GC_MALLOC(sizeof *n);
			n->next = head;
			n->magic = MAGIC ^ k;
			head = n;
			/* libc's heap in the same loop: samples at rate 1 */
			char *p = malloc(32 + (i * 7) % 200);
			sinkp = p;
			p[0] = (char)i;
			free(p);
		}
		unsigned long len = 0;
		for (struct node *n = head; n; n = n->next, len++)
			if (n->magic != (MAGIC ^ k) || len > 100000) { mybad++; break; }
		if (len > 20000) head = NULL;
		it++;
	}
	pthread_mutex_lock(&mu);
	bad += mybad; iters_done += it;
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 5, nt = 3;
	pthread_t t[8];
	GC_INIT();
	for (long i = 0; i < nt; i++)
		GC_pthread_create(&t[i], NULL, worker, (void *)i);
	unsigned long gcs = 0;
	struct timespec ts, now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	do {
		GC_gcollect();
		gcs++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - ts.tv_sec < secs);
	stop = 1;
	for (int i = 0; i < nt; i++)
		GC_pthread_join(t[i], NULL);
	printf("collections %lu iterations %lu corrupted lists %lu\n", gcs, iters_done, bad);
	return bad != 0;
}
