// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_lines.c - an address's inline chain from DWARF with libdw.
 *
 * dwarf_getscopes() gives the DIEs containing the address, innermost
 * first: lexical blocks, DW_TAG_inlined_subroutine instances, and the
 * DW_TAG_subprogram they sit in.  The innermost frame's line is the line
 * table's for the address; each outer frame's line is the DW_AT_call_line
 * of the inlined instance just inside it.  That is what `addr2line -i`
 * prints and what pprof wants in Location.line[] (innermost first).
 */
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>

#include "dwarf_lines.h"

static const char *die_string(Dwarf_Die *d, int at)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(d, at, &a));
}

static const char *die_name(Dwarf_Die *d)
{
	const char *s = die_string(d, DW_AT_linkage_name);

	if (!s)
		s = die_string(d, DW_AT_MIPS_linkage_name);
	return s ? s : die_string(d, DW_AT_name);
}

static int64_t die_udata(Dwarf_Die *d, int at)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(d, at, &a) || dwarf_formudata(&a, &w))
		return 0;
	return (int64_t)w;
}

/* The file of the CU's file table entry @idx (DW_AT_call_file). */
static const char *cu_file(Dwarf_Die *cu, int64_t idx)
{
	Dwarf_Files *files;
	size_t n;

	if (idx < 0 || dwarf_getsrcfiles(cu, &files, &n) || (size_t)idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static bool is_function(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);

	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

/*
 * The innermost function DIE among @d's enclosing scopes (@d excluded when
 * @skip_self): dwarf_getscopes_die() walks the concrete tree outward.
 */
static bool enclosing_function(Dwarf_Die *d, Dwarf_Die *out)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes_die(d, &scopes);
	bool found = false;

	for (int i = 1; i < n && !found; i++) {
		if (is_function(&scopes[i])) {
			*out = scopes[i];
			found = true;
		}
	}
	free(scopes);
	return found;
}

/* A DWARF path relative to the compilation directory made absolute. */
static const char *abs_file(Dwarf_Die *cu, const char *file, char *buf, size_t size)
{
	Dwarf_Attribute a;
	const char *dir;

	if (!file || file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	if (!dir)
		return file;
	snprintf(buf, size, "%s/%s", dir, file);
	return buf;
}

unsigned int kpp_dwarf__frames(Dwarf *dw, uint64_t v, struct kpp_frame *f, unsigned int max,
			       char (*paths)[KPP_PATH_BUF])
{
	Dwarf_Die cu, d, *scopes = NULL;
	Dwarf_Line *line;
	const char *file = NULL;
	int64_t at_line = 0;
	unsigned int nf = 0;
	bool found = false;
	int n, lineno;

	if (!dw || !dwarf_addrdie(dw, v, &cu))
		return 0;
	line = dwarf_getsrc_die(&cu, v);
	if (line && dwarf_lineno(line, &lineno) == 0) {
		at_line = lineno;
		file = dwarf_linesrc(line, NULL, NULL);
	}
	/*
	 * dwarf_getscopes() gives the innermost function instance; past an
	 * inlined one it continues with the scopes of its abstract definition,
	 * so the callers are found with dwarf_getscopes_die() instead.
	 */
	n = dwarf_getscopes(&cu, v, &scopes);
	for (int i = 0; i < n && !found; i++) {
		if (is_function(&scopes[i])) {
			d = scopes[i];
			found = true;
		}
	}
	free(scopes);
	while (found && nf < max) {
		const char *decl = dwarf_decl_file(&d);
		int start = 0;

		dwarf_decl_line(&d, &start);
		f[nf] = (struct kpp_frame){
			.name = die_name(&d),
			.file = abs_file(&cu, decl ? decl : file, paths[nf], KPP_PATH_BUF),
			.line = at_line,
			.start_line = start,
		};
		f[nf].system_name = f[nf].name;
		nf++;
		if (dwarf_tag(&d) == DW_TAG_subprogram)
			break;
		/* The next frame out is at the call of this inlined one. */
		at_line = die_udata(&d, DW_AT_call_line);
		file = cu_file(&cu, die_udata(&d, DW_AT_call_file));
		found = enclosing_function(&d, &d);
	}
	if (!nf && at_line) {
		/* A line but no function DIE (assembly): keep the line. */
		f[0] = (struct kpp_frame){
			.file = abs_file(&cu, file, paths[0], KPP_PATH_BUF),
			.line = at_line,
		};
		nf = 1;
	}
	return nf;
}
