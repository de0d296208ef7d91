/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_lines.h - file:line and the inline chain of an address from DWARF
 * (elfutils libdw), as addr2line -i prints them.
 */
#ifndef KPPROF_DWARF_LINES_H
#define KPPROF_DWARF_LINES_H

#include <elfutils/libdw.h>

#include "symbolize.h"

/*
 * kpp_dwarf__frames - the frames at ELF address @v of @dw, innermost first,
 * up to and including the enclosing subprogram: names as in the DWARF
 * (mangled linkage name when there is one, else the plain name), the
 * function's declaration file and line, the line of the address (innermost)
 * or of the call into the next inner frame.  Strings live as long as @dw.
 * Relative paths are made absolute with the CU's directory, in @paths
 * (one buffer per frame, which must outlive @f).
 * Returns the number of frames (0: no DWARF for @v).
 */
#define KPP_PATH_BUF 1024
unsigned int kpp_dwarf__frames(Dwarf *dw, uint64_t v, struct kpp_frame *f, unsigned int max,
			       char (*paths)[KPP_PATH_BUF]);

#endif
