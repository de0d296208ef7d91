// SPDX-License-Identifier: GPL-2.0
/* symbolz.c - serve's /debug/pprof/symbol answer (symbolz.h). */
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "profile_write.h"
#include "symbolz.h"

struct name_ctx {
	struct kpp_symbolizer *sym;
	const struct kpp_pidset *set;
	uint64_t pc;
	char name[512];
	bool found, conflict;
};

static int name_in(void *c, struct kpp_proc *p)
{
	struct name_ctx *ctx = c;
	const struct kpp_map *m;
	struct kpp_sym s;
	const char *name;

	/* A copy: the process itself, not whatever has its pid in the live agg now. */
	if (!kpp_pidset__has_proc(ctx->set, p->pid, p->serial))
		return 0;
	m = kpp_proc__map_for(p, ctx->pc);
	/*
	 * Go's FuncForPC(pc) names the function containing pc itself; the
	 * lookup takes a return address and looks at the byte before it.
	 */
	if (!m || ctx->pc + 1 >= m->end ||
	    kpp_symbolizer__lookup_pid(ctx->sym, p->pid, m, ctx->pc + 1, &s))
		return 0;
	/* Innermost, as Go's FuncForPC names an inlined call. */
	name = s.nr_frames ? s.frames[0].name : s.name;
	if (!name)
		return 0;
	if (!ctx->found) {
		snprintf(ctx->name, sizeof(ctx->name), "%s", name);
		ctx->found = true;
	} else if (strcmp(ctx->name, name)) {
		ctx->conflict = true;
		return 1;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

uint64_t kpp_symbolz__answer(struct kpp_session *s, struct kpp_agg *copy,
			     const struct kpp_pidset *set, const char *text, uint32_t pid,
			     FILE *f, int64_t budget_ms)
{
	int64_t deadline = now_ms() + budget_ms;
	uint64_t cut = 0;
	unsigned int since = 0;

	kpp_session__sym_lock(s);
	while (*text) {
		size_t n = strcspn(text, "+&");
		char word[64], *end;

		if (n < sizeof(word) && !memchr(text, '=', n)) {
			memcpy(word, text, n);
			word[n] = '\0';
			uint64_t pc = strtoull(word, &end, 0);
			struct name_ctx ctx = { .sym = s->sym, .set = set, .pc = pc };

			if (pc && !*end && now_ms() >= deadline) {
				cut++;
			} else if (pc && !*end) {
				if (pid) {
					struct kpp_proc *p = kpp_agg__proc(copy, pid);

					if (p)
						name_in(&ctx, p);
				} else {
					kpp_agg__for_each_proc(copy, name_in, &ctx);
				}
				if (ctx.found && !ctx.conflict)
					fprintf(f, "%#llx %s\n", (unsigned long long)pc, ctx.name);
				/* Let a waiting profile (or the drainer's prefetch) in. */
				if (++since == KPP_SYMBOLZ_YIELD) {
					since = 0;
					kpp_session__sym_unlock(s);
					kpp_session__sym_lock(s);
				}
			}
		}
		text += n;
		if (*text)
			text++;
	}
	kpp_session__sym_unlock(s);
	return cut;
}
