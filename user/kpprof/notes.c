// SPDX-License-Identifier: GPL-2.0
/*
 * notes.c - KPPROF_REC_NOTE records become a line for the user, the one
 * place that knows what each KPPROF_NOTE_* means.  A note is said when it
 * is read (record, collect, serve), on stderr, whatever the pid filter.
 *
 * Producers write notes and name themselves (PR_SET_NAME takes any byte
 * but NUL): the comm is printed with control and non-ASCII bytes as \xNN,
 * so no terminal escape or forged line reaches the admin's terminal or
 * journal; and a producer looping on NOTE writes is said once: each
 * (pid, note) at most once per KPP_NOTE_REPEAT_S seconds, and all notes
 * at most KPP_NOTE_BURST lines per second; what is held back is counted
 * and said with the next line.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <time.h>

#include "notes.h"

#define KPP_NOTE_SLOTS		1024
#define KPP_NOTE_REPEAT_S	60
#define KPP_NOTE_BURST		10

static struct {
	struct { uint32_t pid, what; time_t at; } said[KPP_NOTE_SLOTS];
	time_t second;
	unsigned int in_second;
	uint64_t held;
} lim;

static void escaped(char *out, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f || c == '\\')
			n += snprintf(out + n, len - n, "\\x%02x", c);
		else
			out[n++] = c;
	}
	out[n] = '\0';
}

/* true if this note may be said now (else counted in lim.held). */
static bool may_say(const struct kpp_rec *r)
{
	struct timespec ts;
	size_t h = (r->tgid * 2654435761u + r->note.what) % KPP_NOTE_SLOTS;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (lim.said[h].pid == r->tgid && lim.said[h].what == r->note.what &&
	    lim.said[h].at && ts.tv_sec - lim.said[h].at < KPP_NOTE_REPEAT_S) {
		lim.held++;
		return false;
	}
	if (ts.tv_sec != lim.second) {
		lim.second = ts.tv_sec;
		lim.in_second = 0;
	}
	if (lim.in_second >= KPP_NOTE_BURST) {
		lim.held++;
		return false;
	}
	lim.in_second++;
	lim.said[h].pid = r->tgid;
	lim.said[h].what = r->note.what;
	lim.said[h].at = ts.tv_sec ? ts.tv_sec : 1;
	return true;
}

void kpp_note__say(FILE *f, const struct kpp_rec *r, const char *comm)
{
	char who[64 + 4 * KPPROF_COMM_LEN], name[4 * KPPROF_COMM_LEN + 8];

	if (!may_say(r))
		return;
	if (lim.held) {
		fprintf(f, "kpprof: %" PRIu64 " repeated notes not shown\n", lim.held);
		lim.held = 0;
	}
	if (comm && *comm) {
		escaped(name, sizeof(name), comm);
		snprintf(who, sizeof(who), "pid %" PRIu32 " (%s)", r->tgid, name);
	} else {
		snprintf(who, sizeof(who), "pid %" PRIu32, r->tgid);
	}
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
