// SPDX-License-Identifier: GPL-2.0
/* kpprof: the collector's entry point; dispatches to one verb per file. */
#include <stdio.h>

int main(int argc, char *argv[])
{
	(void)argc;
	fprintf(stderr, "%s: not yet implemented\n", argv[0]);
	return 1;
}
