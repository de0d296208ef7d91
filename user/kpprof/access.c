// SPDX-License-Identifier: GPL-2.0
/* access.c - which processes a client may see (access.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "access.h"

#define ACCESS_HASH	4096

struct entry {
	uint32_t pid;
	uint64_t serial;
	uint32_t uid;
	bool mixed;		/* records with different uids */
	bool hidden;		/* seen alive and failing the /proc check */
	struct entry *next;
};

struct kpp_access {
	struct entry *h[ACCESS_HASH];
};

struct kpp_access *kpp_access__new(void)
{
	return calloc(1, sizeof(struct kpp_access));
}

void kpp_access__free(struct kpp_access *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < ACCESS_HASH; i++)
		for (struct entry *e = a->h[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	free(a);
}

static struct entry *find(struct kpp_access *a, uint32_t pid)
{
	for (struct entry *e = a->h[pid % ACCESS_HASH]; e; e = e->next)
		if (e->pid == pid)
			return e;
	return NULL;
}

void kpp_access__note(struct kpp_access *a, uint32_t pid, uint64_t serial, uint32_t uid)
{
	struct entry *e = find(a, pid);

	if (e && e->serial != serial) {
		/* A new process under a reused pid: judged afresh. */
		e->serial = serial;
		e->uid = uid;
		e->mixed = e->hidden = false;
		return;
	}
	if (e) {
		e->mixed |= e->uid != uid;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;		/* no entry: the process is shown to root only */
	e->pid = pid;
	e->serial = serial;
	e->uid = uid;
	e->next = a->h[pid % ACCESS_HASH];
	a->h[pid % ACCESS_HASH] = e;
}

void kpp_access__prune(struct kpp_access *a, const struct kpp_agg *agg)
{
	for (size_t i = 0; i < ACCESS_HASH; i++)
		for (struct entry **pp = &a->h[i]; *pp;) {
			struct entry *e = *pp;
			const struct kpp_proc *p = kpp_agg__proc(agg, e->pid);

			if (p && p->serial == e->serial) {
				pp = &e->next;
			} else {
				*pp = e->next;
				free(e);
			}
		}
}

/* live_owned_by - process @pid is dumpable and all its uids are @uid. */
static bool live_owned_by(uint32_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned int r, e, s, f;
	bool ok = false;
	struct stat st;
	FILE *fp;

	/*
	 * The kernel gives a non-dumpable process's /proc/PID files to root
	 * (task_dump_owner; not /proc/PID itself, a world-readable directory).
	 */
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (stat(path, &st) || st.st_uid != uid)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	fp = fopen(path, "re");
	if (!fp)
		return false;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &f) == 4) {
			ok = r == uid && e == uid && s == uid && f == uid;
			break;
		}
	fclose(fp);
	return ok;
}

bool kpp_access__may_see(struct kpp_access *a, const struct kpp_peer *peer,
			 const struct kpp_proc *p)
{
	struct entry *e;

	if (peer->all)
		return true;
	if (!peer->known || !p)
		return false;
	e = find(a, p->pid);
	if (!e || e->serial != p->serial || e->mixed || e->hidden || e->uid != peer->uid)
		return false;
	if (p->state == KPP_PROC_ALIVE && !live_owned_by(p->pid, peer->uid)) {
		/* Gone since (ESRCH), or another owner or non-dumpable: hidden for good. */
		e->hidden = true;
		return false;
	}
	return true;
}

struct take_ctx {
	struct kpp_pidset *set;
	struct kpp_access *a;
	const struct kpp_peer *peer;
	int err;
};

static int take_one(void *c, struct kpp_proc *p)
{
	struct take_ctx *t = c;
	struct kpp_pidset *set = t->set;

	if (!kpp_access__may_see(t->a, t->peer, p))
		return 0;
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 64;
		struct kpp_pidset_ent *n = realloc(set->pids, cap * sizeof(*n));

		if (!n) {
			t->err = -ENOMEM;
			return 1;
		}
		set->pids = n;
		set->cap = cap;
	}
	set->pids[set->n].pid = p->pid;
	set->pids[set->n++].serial = p->serial;
	return 0;
}

/* By pid (one process per pid in an agg); an entry's serial is checked after. */
static int cmp_pid(const void *x, const void *y)
{
	uint32_t a = ((const struct kpp_pidset_ent *)x)->pid;
	uint32_t b = ((const struct kpp_pidset_ent *)y)->pid;

	return a < b ? -1 : a > b;
}

int kpp_pidset__take(struct kpp_pidset *set, struct kpp_access *a, const struct kpp_peer *peer,
		     const struct kpp_agg *agg)
{
	struct take_ctx t = { set, a, peer, 0 };

	memset(set, 0, sizeof(*set));
	set->all = peer->all;
	set->agg = agg;
	if (set->all)
		return 0;
	kpp_agg__for_each_proc(agg, take_one, &t);
	if (t.err) {
		kpp_pidset__release(set);
		return t.err;
	}
	if (set->n)	/* qsort's base must not be NULL either */
		qsort(set->pids, set->n, sizeof(*set->pids), cmp_pid);
	return 0;
}

bool kpp_pidset__has_proc(const struct kpp_pidset *set, uint32_t pid, uint64_t serial)
{
	struct kpp_pidset_ent key = { .pid = pid };
	const struct kpp_pidset_ent *e;

	if (set->all)
		return true;
	/* bsearch's base must not be NULL, even for no elements. */
	e = set->n ? bsearch(&key, set->pids, set->n, sizeof(key), cmp_pid) : NULL;
	return e && e->serial == serial;
}

bool kpp_pidset__has(void *s, uint32_t pid)
{
	const struct kpp_pidset *set = s;
	const struct kpp_proc *p;

	if (set->all)
		return true;
	p = kpp_agg__proc(set->agg, pid);
	return p && kpp_pidset__has_proc(set, pid, p->serial);
}

void kpp_pidset__release(struct kpp_pidset *set)
{
	free(set->pids);
	memset(set, 0, sizeof(*set));
}
