// SPDX-License-Identifier: GPL-2.0
/*
 * exec_after_alloc - allocates 64 MiB in old_image_keeps() and keeps it,
 * then execs argv[1] with the remaining arguments.  The exec ends this
 * image: none of its memory is in use afterwards, so a heap profile of
 * the process must not show old_image_keeps as in use under the new comm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void **keep;

__attribute__((noinline)) void old_image_keeps(int i)
{
	keep[i] = malloc(1 << 20);
	memset(keep[i], 1, 64);
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		fprintf(stderr, "usage: exec_after_alloc PROGRAM [ARG...]\n");
		return 2;
	}
	keep = calloc(64, sizeof(*keep));
	for (int i = 0; i < 64; i++)
		old_image_keeps(i);
	execv(argv[1], argv + 1);
	perror("exec_after_alloc: execv");
	return 1;
}
