// SPDX-License-Identifier: GPL-2.0
/* realfn_host_test.sh: an allocation through the shim's malloc, whose
 * next definition the shim found (dlsym RTLD_NEXT) in the libraries this links. */
#include <stdio.h>
#include <stdlib.h>

#ifdef REALFN_WRAP
int realfn_lib1(void);
int realfn_lib2(void);
#endif

int main(void)
{
	void *volatile p = malloc(100);

	free(p);
#ifdef REALFN_WRAP
	printf("ok %d %d\n", realfn_lib1(), realfn_lib2());
#else
	puts("ok");
#endif
	return 0;
}
