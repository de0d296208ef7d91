// SPDX-License-Identifier: GPL-2.0
/*
 * Two emits nested in one thread (a FREE's ring write, interrupted by a
 * handler whose free() emits another FREE) and a fork() from a second
 * handler inside the inner write (test mode, KPPROF_TEST_RING=1, rate 1).
 * The child's count of threads inside kpp_emit() (what seccomp.c and
 * kpp_fini() wait for) must come back to 0 once both emits are done, as
 * the parent's does.
 *
 * As abandon_ring.c, this program exports its own memcpy, which the shim's
 * ring write calls between reserving an entry and committing it.
 *
 * usage: abandon_forkcount SHARDS_OFFSET   (nm's value of kpp_shards in
 *                                           libkpprof.so, hex)
 * Prints "parent emitters N" and "child emitters N"; exit 0 if both are 0.
 */
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "abandon_lib.h"
#include "kpprof.h"

static volatile int depth;	/* FREE copies into the ring seen, while armed */
static volatile int armed;
static void *volatile inner;	/* the handler's sampled block */
static const unsigned char *shards;
static volatile pid_t child;

__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *memcpy(void *dst, const void *src, size_t n)
{
	if (armed && in_ring(dst) && n == sizeof(struct kpprof_rec_free)) {
		if (++depth == 1) {
			raise(SIGUSR1);		/* its free() emits inside ours */
		} else {
			armed = 0;
			child = fork();
		}
	}
	return copy_bytes(dst, src, n);
}

static void handler(int sig)
{
	(void)sig;
	free(inner);
}

int main(int argc, char **argv)
{
	uintptr_t base = 0, off = argc > 1 ? strtoul(argv[1], NULL, 16) : 0;
	void *volatile warm = malloc(100), *volatile p;
	int st, n;

	free(warm);
	base = shim_base();
	if (!base || !off || find_ring() || signal(SIGUSR1, handler) == SIG_ERR) {
		fprintf(stderr, "abandon_forkcount: setup (KPPROF_TEST_RING=1? offset?)\n");
		return 2;
	}
	shards = (const unsigned char *)(base + off);
	inner = malloc(48);
	p = malloc(64);
	armed = 1;
	free(p);
	n = shim_emitters(shards);
	if (child == 0) {
		printf("child emitters %d\n", n);
		fflush(stdout);
		_exit(n == 0 ? 0 : 1);
	}
	if (child < 0 || waitpid(child, &st, 0) != child) {
		fprintf(stderr, "abandon_forkcount: no child\n");
		return 2;
	}
	printf("parent emitters %d\n", n);
	return n == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
