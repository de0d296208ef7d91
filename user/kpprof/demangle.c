// SPDX-License-Identifier: GPL-2.0
/*
 * demangle.c - C++ and Rust names through libiberty's cplus_demangle, the
 * demangler of binutils and GDB (Debian's libiberty-dev):
 *
 *  - C++ (Itanium ABI, _Z...): without the parameter list, as pprof shows
 *    names by default, so `ns::Class::method` rather than
 *    `ns::Class::method(int, char const*)`; pprof's graph and -top group by
 *    it.  The full mangled name stays in Function.system_name.
 *  - Rust legacy (_ZN...17h<hash>E): without the hash.
 *  - Rust v0 (_R...): the path, without the crate disambiguators.
 *
 * DMGL_AUTO tries Rust first (a legacy Rust name is also a valid Itanium
 * name; only the Rust demangler knows to drop the hash), then C++.
 */
#include <stdlib.h>
#include <libiberty/demangle.h>

#include "symbolize.h"

char *kpp_demangle(const char *name)
{
	bool mangled = (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) ||
		       (name[0] == '_' && name[1] == '_' && name[2] == 'Z');

	if (!mangled)
		return NULL;
	return cplus_demangle(name, DMGL_AUTO | DMGL_ANSI);
}
