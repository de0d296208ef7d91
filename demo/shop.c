// SPDX-License-Identifier: GPL-2.0
/*
 * shop - the demo workload: a toy order service with the three problems
 * kpprof is for.  Worker threads handle "orders":
 *   - parse_order() allocates a request buffer and frees it (churn);
 *   - remember_customer() adds to a cache that is never evicted (a leak);
 *   - update_stock() takes one global lock and works while holding it
 *     (contention: the mutex profile blames update_stock, the block
 *     profile shows the workers waiting in it).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORKERS 4

static pthread_mutex_t stock_lock = PTHREAD_MUTEX_INITIALIZER;
static long stock[64];

struct customer {
	struct customer *next;
	char profile[4000];
};

/* Globals, so the compiler keeps every allocation. */
struct customer *customers;
pthread_mutex_t customers_lock = PTHREAD_MUTEX_INITIALIZER;
char *volatile last_request;

__attribute__((noinline)) void parse_order(int n)
{
	char *req = malloc(16384 + n % 4096);

	memset(req, 'x', 128);
	last_request = req;
	free(last_request);
}

__attribute__((noinline)) void remember_customer(int id)
{
	struct customer *c = malloc(sizeof(*c));

	snprintf(c->profile, sizeof(c->profile), "customer %d", id);
	pthread_mutex_lock(&customers_lock);
	c->next = customers;
	customers = c;
	pthread_mutex_unlock(&customers_lock);
}

__attribute__((noinline)) void update_stock(int item)
{
	struct timespec work = { 0, 200000 };	/* 0.2 ms inside the lock */

	pthread_mutex_lock(&stock_lock);
	stock[item % 64]--;
	nanosleep(&work, NULL);
	pthread_mutex_unlock(&stock_lock);
}

static void *worker(void *arg)
{
	int base = (int)(long)arg * 100000;

	for (int i = 0; i < 1500; i++) {
		parse_order(i);
		if (i % 4 == 0)
			remember_customer(base + i);
		update_stock(i);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[WORKERS];

	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	printf("shop: %d workers served %d orders\n", WORKERS, WORKERS * 1500);
	return 0;
}
