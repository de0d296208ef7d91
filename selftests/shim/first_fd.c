// SPDX-License-Identifier: GPL-2.0
/*
 * Issue 8, finding 8: the descriptor numbers a program gets must not move
 * because the shim sampled.  Allocates (sampled at rate 1, so the shim
 * unwinds for the first time), then prints what open() returns.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	void *volatile p = malloc(100);
	int fd;

	free(p);
	fd = open("/dev/null", O_RDONLY);
	printf("%d\n", fd);
	return fd < 0;
}
