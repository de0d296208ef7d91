/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile_write.h - turn a view into pprof (protobuf, gzip'd) or into Go's
 * legacy text form (debug=1), symbolizing every frame.
 */
#ifndef KPPROF_PROFILE_WRITE_H
#define KPPROF_PROFILE_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agg.h"
#include "symbolize.h"
#include "view.h"

struct kpp_write_opts {
	bool allocs;		/* heap: default to alloc_space (the allocs profile) */
	int64_t duration_ns;	/* delta profiles: the window */
	const char *comment;	/* e.g. collector statistics; NULL: none */
};

/* kpp_profile__encode_gz - gzip'd pprof bytes of @v (malloc'd). */
int kpp_profile__encode_gz(const struct kpp_view *v, const struct kpp_agg *a,
			   struct kpp_symbolizer *sym, const struct kpp_write_opts *o,
			   uint8_t **out, size_t *len);
/*
 * kpp_profile__write_fileat - the same into @name under directory @dirfd,
 * atomically: a new temporary (O_CREAT|O_EXCL|O_NOFOLLOW, random name)
 * renamed over @name.
 */
int kpp_profile__write_fileat(int dirfd, const char *name, const struct kpp_view *v,
			      const struct kpp_agg *a, struct kpp_symbolizer *sym,
			      const struct kpp_write_opts *o);
/* kpp_profile__write_file - the same into @path (its directory as it resolves now). */
int kpp_profile__write_file(const char *path, const struct kpp_view *v,
			    const struct kpp_agg *a, struct kpp_symbolizer *sym,
			    const struct kpp_write_opts *o);
/* kpp_profile__write_legacy - Go's debug=1 text. */
int kpp_profile__write_legacy(FILE *f, const struct kpp_view *v, const struct kpp_agg *a,
			      struct kpp_symbolizer *sym);

/* The mapping of @pid that holds @pc, newest first; NULL if none. */
const struct kpp_map *kpp_proc__map_for(const struct kpp_proc *p, uint64_t pc);
/* kpp_proc__read_maps - learn @pid's objects from /proc when no records named them. */
int kpp_proc__read_maps(struct kpp_agg *a, uint32_t pid);
/*
 * A sample of live process @pid hit no known mapping (note); whether its
 * maps should be read again now (at most once per 10 s per process); how
 * many times they were (for the profile comment).  procmaps.c.
 */
void kpp_proc__note_unmapped(uint32_t pid);
bool kpp_proc__want_reread(uint32_t pid);
uint64_t kpp_proc__rereads(void);

#endif
