// SPDX-License-Identifier: GPL-2.0
/*
 * notes.c - KPPROF_REC_NOTE records become a line for the user, the one
 * place that knows what each KPPROF_NOTE_* means.  A note is said when it
 * is read (record, collect, serve), on stderr, whatever the pid filter.
 */
#include <inttypes.h>

#include "notes.h"

void kpp_note__say(FILE *f, const struct kpp_rec *r, const char *comm)
{
	char who[64];

	if (comm && *comm)
		snprintf(who, sizeof(who), "pid %" PRIu32 " (%s)", r->tgid, comm);
	else
		snprintf(who, sizeof(who), "pid %" PRIu32, r->tgid);
	switch (r->note.what) {
	case KPPROF_NOTE_NO_HEAP:
		fprintf(f, "kpprof: no heap profile for %s: malloc is not interposed "
			"(an allocator linked into the program, or preloaded ahead of "
			"libkpprof.so, comes first)\n", who);
		break;
	case KPPROF_NOTE_SECCOMP:
		fprintf(f, "kpprof: %s stopped profiling itself: a seccomp filter is in force "
			"(%" PRIu64 " events not sent)\n", who, r->note.value);
		break;
	default:
		fprintf(f, "kpprof: %s: note %" PRIu32 " (value %" PRIu64 ") unknown to this collector\n",
			who, r->note.what, r->note.value);
		break;
	}
}
