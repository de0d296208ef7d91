/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve_slots.h - how many connections, handshakes and requests kpprof
 * serve takes at once, in all and per client, so that no client, however
 * many connections it opens or however slowly it reads, takes every slot
 * another client needs.  The caller holds one lock around every call.
 */
#ifndef KPPROF_SERVE_SLOTS_H
#define KPPROF_SERVE_SLOTS_H

#include <stdbool.h>

/* Connection threads at once; more are closed. */
#define SERVE_MAX_THREADS	128
/*
 * Of those, connections on a tls: listener still in their handshake (not
 * yet authenticated): more are closed, so that clients without a
 * certificate, from however many addresses, never take the threads that
 * local scrapes and verified clients need.
 */
#define SERVE_MAX_HANDSHAKES	(SERVE_MAX_THREADS / 2)
/* Connections of one client at once (reading included); more are closed. */
#define SERVE_PEER_CONNS	12
/*
 * Plain requests (no ?seconds=) in progress at once; more are answered
 * 503.  A request holds its slot until its reply is taken (a slow reader:
 * up to KPP_HTTP_WRITE_MS) or a settle ends (5 s).  A client that sees
 * every process by right (root or CAP_PERFMON locally, a verified
 * certificate: the scrapers, one uid for all of them) may take them all;
 * any other client at most SERVE_PEER_REQUESTS, and all such clients
 * together all but SERVE_RESERVED_REQUESTS, which stay for the first kind
 * (two uids with slow readers took all 16 from everyone).  And a local
 * user with none in progress gets one beyond those totals while fewer
 * than SERVE_OWN_REQUESTS such requests are in progress (3 uids with slow
 * readers took every unprivileged slot, review helper-22): a few more
 * users are served one at a time.  Bounded, as a uid is not one per
 * account (subordinate uid ranges give one account thousands: review
 * helper-26 F1, 128 uids took every connection thread for 7 days with
 * no bound); a client known by its address alone (--insecure-remote: any
 * local user may bind another) gets no such request.
 */
#define SERVE_MAX_REQUESTS	16
#define SERVE_PEER_REQUESTS	4
#define SERVE_RESERVED_REQUESTS	4
#define SERVE_OWN_REQUESTS	8
/* The same for delta requests waiting out their window. */
#define SERVE_MAX_DELTAS	8
#define SERVE_PEER_DELTAS	4
#define SERVE_RESERVED_DELTAS	2
#define SERVE_OWN_DELTAS	4

/* One client's connections and requests in progress. */
struct serve_peer {
	char key[64];		/* kpp_peer.key: the uid locally, the address remotely (verified or not) */
	unsigned int conns, requests, deltas;
	/* of those, admitted beyond the total (a user's one): not in serve_slots' */
	unsigned int own_requests, own_deltas;
};

/* What a client is to the limits (kpp_peer__privileged, kpp_peer__user). */
enum serve_client {
	SERVE_CLIENT_ADDRESS,		/* known by its address only: --insecure-remote */
	SERVE_CLIENT_USER,		/* a local uid without the privilege */
	SERVE_CLIENT_PRIVILEGED,	/* sees every process by right */
};

struct serve_slots {
	unsigned int threads, handshakes, requests, deltas;
	unsigned int own_requests, own_deltas;	/* beyond those, of all users */
	struct serve_peer peers[SERVE_MAX_THREADS];
};

/* Why a connection or a request was refused; each one counted by serve.c. */
enum serve_refusal {
	SERVE_OK,
	SERVE_NO_THREAD,	/* SERVE_MAX_THREADS: closed */
	SERVE_NO_HANDSHAKE,	/* SERVE_MAX_HANDSHAKES: closed */
	SERVE_PEER_NO_CONN,	/* SERVE_PEER_CONNS: closed */
	SERVE_BUSY,		/* SERVE_MAX_REQUESTS: 503 */
	SERVE_PEER_BUSY,	/* SERVE_PEER_REQUESTS: 503 */
	SERVE_NO_DELTA,		/* SERVE_MAX_DELTAS: 503 */
	SERVE_PEER_NO_DELTA,	/* SERVE_PEER_DELTAS: 503 */
};

/*
 * serve_slots__connect - a thread for a connection of client @key (on a
 * tls: listener if @tls: one of the handshakes too); *@peer its client's
 * slot.  serve_slots__disconnect gives back what connect took
 * (@handshaking: its handshake still counted); serve_slots__finish, before
 * it, what serve_slots__admit took.
 */
enum serve_refusal serve_slots__connect(struct serve_slots *s, const char *key, bool tls,
					struct serve_peer **peer);
void serve_slots__handshake_done(struct serve_slots *s);
void serve_slots__disconnect(struct serve_slots *s, struct serve_peer *peer, bool handshaking);
/* serve_slots__admit - a request of @peer's (@delta: one with ?seconds=). */
enum serve_refusal serve_slots__admit(struct serve_slots *s, struct serve_peer *peer, bool delta,
				      enum serve_client kind);
void serve_slots__finish(struct serve_slots *s, struct serve_peer *peer, bool delta);
/* The 503 message of a refused request, NULL for the others. */
const char *serve_slots__why(enum serve_refusal r);

#endif
