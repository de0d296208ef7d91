/* SPDX-License-Identifier: GPL-2.0 */
/*
 * notes.h - KPPROF_REC_NOTE: what a producer says about itself (malloc
 * not interposed, a seccomp filter stopped it), told to the user.
 */
#ifndef KPPROF_NOTES_H
#define KPPROF_NOTES_H

#include <stdio.h>
#include "decode.h"

/*
 * kpp_note__say - one line on @f for a NOTE record from process @r->tgid
 * named @comm (NULL or "" if not known yet), e.g.
 * "kpprof: no heap profile for pid 42 (redis): malloc is not interposed (...)".
 * The comm is escaped; repeats and floods are held back and counted.
 */
void kpp_note__say(FILE *f, const struct kpp_rec *r, const char *comm);

#endif
