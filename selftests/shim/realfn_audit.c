// SPDX-License-Identifier: GPL-2.0
/*
 * realfn_host_test.sh: an auditor (LD_AUDIT) that replaces what dlsym finds
 * for libc's "malloc" (la_symbind64 with LA_SYMB_DLSYM) by a function that says so
 * once and calls the definition found.  The shim's next malloc, asked of
 * dlsym, is then this one: as the loader's interface promises an auditor.
 */
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static void *(*found)(size_t);

static void *audited_malloc(size_t n)
{
	static int said;
	static const char msg[] = "realfn: the audited malloc\n";

	if (!said) {
		said = 1;
		(void)!write(2, msg, sizeof(msg) - 1);
	}
	return found(n);
}

unsigned int la_version(unsigned int v)
{
	(void)v;
	return LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	*cookie = (uintptr_t)map;
	return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

/* from_libc - the definition is libc's: the shim's look-up of its next
 * malloc, not the program's dlsym(RTLD_DEFAULT) (alloc_check.c). */
static int from_libc(uintptr_t cookie)
{
	const char *name = ((struct link_map *)cookie)->l_name;
	size_t n = strlen(name);

	return n >= 9 && !strcmp(name + n - 9, "libc.so.6");
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook,
		       uintptr_t *defcook, unsigned int *flags, const char *name)
{
	(void)ndx;
	(void)refcook;
	if ((*flags & LA_SYMB_DLSYM) && !strcmp(name, "malloc") && !found &&
	    from_libc(*defcook)) {
		found = (void *(*)(size_t))sym->st_value;
		return (uintptr_t)audited_malloc;
	}
	return sym->st_value;
}
