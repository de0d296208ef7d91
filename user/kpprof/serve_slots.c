// SPDX-License-Identifier: GPL-2.0
/*
 * serve_slots.c - the connection and request limits of kpprof serve, in
 * all and per client (serve_slots.h).  Counting only: no lock, no I/O.
 */
#include <stdio.h>
#include <string.h>

#include "serve_slots.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* @key's slot, or a free one; NULL if none (cannot happen: one per thread). */
static struct serve_peer *peer_of(struct serve_slots *s, const char *key)
{
	struct serve_peer *free_slot = NULL;

	for (size_t i = 0; i < SERVE_MAX_THREADS; i++) {
		struct serve_peer *p = &s->peers[i];

		if (p->conns && !strcmp(p->key, key))
			return p;
		if (!p->conns && !free_slot)
			free_slot = p;
	}
	if (free_slot) {
		snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
		free_slot->requests = free_slot->deltas = 0;
		free_slot->own_requests = free_slot->own_deltas = 0;
	}
	return free_slot;
}

enum serve_refusal serve_slots__connect(struct serve_slots *s, const char *key, bool tls,
					struct serve_peer **peer)
{
	struct serve_peer *p;

	*peer = NULL;
	if (s->threads >= SERVE_MAX_THREADS)
		return SERVE_NO_THREAD;
	if (tls && s->handshakes >= SERVE_MAX_HANDSHAKES)
		return SERVE_NO_HANDSHAKE;
	p = peer_of(s, key);
	if (!p || p->conns >= SERVE_PEER_CONNS)
		return SERVE_PEER_NO_CONN;
	p->conns++;
	s->threads++;
	s->handshakes += tls;
	*peer = p;
	return SERVE_OK;
}

void serve_slots__handshake_done(struct serve_slots *s)
{
	s->handshakes--;
}

void serve_slots__disconnect(struct serve_slots *s, struct serve_peer *peer, bool handshaking)
{
	peer->conns--;
	s->threads--;
	s->handshakes -= handshaking;
}

enum serve_refusal serve_slots__admit(struct serve_slots *s, struct serve_peer *peer, bool delta,
				      enum serve_client kind)
{
	bool privileged = kind == SERVE_CLIENT_PRIVILEGED;
	unsigned int *all = delta ? &s->deltas : &s->requests;
	unsigned int *mine = delta ? &peer->deltas : &peer->requests;
	unsigned int max = delta ? SERVE_MAX_DELTAS : SERVE_MAX_REQUESTS;

	if (!privileged)
		max -= delta ? SERVE_RESERVED_DELTAS : SERVE_RESERVED_REQUESTS;
	/* its own share first: a client over it is told so, and counted so */
	if (!privileged && *mine >= (delta ? SERVE_PEER_DELTAS : SERVE_PEER_REQUESTS))
		return delta ? SERVE_PEER_NO_DELTA : SERVE_PEER_BUSY;
	if (*all >= max) {
		unsigned int *own = delta ? &s->own_deltas : &s->own_requests;

		/* a user's one, whoever holds the rest, while there are few */
		if (kind != SERVE_CLIENT_USER || *mine ||
		    *own >= (delta ? SERVE_OWN_DELTAS : SERVE_OWN_REQUESTS))
			return delta ? SERVE_NO_DELTA : SERVE_BUSY;
		(*own)++;
		(*(delta ? &peer->own_deltas : &peer->own_requests))++;
		(*mine)++;
		return SERVE_OK;
	}
	(*all)++;
	(*mine)++;
	return SERVE_OK;
}

void serve_slots__finish(struct serve_slots *s, struct serve_peer *peer, bool delta)
{
	unsigned int *own = delta ? &peer->own_deltas : &peer->own_requests;

	(*(delta ? &peer->deltas : &peer->requests))--;
	/* which of its requests ended does not matter: they are counted alike */
	if (*own) {
		(*own)--;
		(*(delta ? &s->own_deltas : &s->own_requests))--;
	} else {
		(*(delta ? &s->deltas : &s->requests))--;
	}
}

const char *serve_slots__why(enum serve_refusal r)
{
	switch (r) {
	case SERVE_BUSY:
		return "too many requests at once (" STR(SERVE_MAX_REQUESTS) "); retry later";
	case SERVE_PEER_BUSY:
		return "too many requests of yours at once (" STR(SERVE_PEER_REQUESTS) "); retry later";
	case SERVE_NO_DELTA:
		return "too many delta profiles at once (" STR(SERVE_MAX_DELTAS) "); retry later";
	case SERVE_PEER_NO_DELTA:
		return "too many delta profiles of yours at once (" STR(SERVE_PEER_DELTAS) "); retry later";
	default:
		return NULL;
	}
}
