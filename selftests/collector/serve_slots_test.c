// SPDX-License-Identifier: GPL-2.0
/*
 * serve_slots_test - kpprof serve's connection and request limits
 * (user/kpprof/serve_slots.c), in all and per client: no client, with all
 * the connections it may open, takes every request slot; two clients
 * holding all theirs (a slow reader holds a slot until its reply is taken:
 * review of 37ba186, two uids with 12 connections each got a third 503)
 * still leave a third one served; root (or CAP_PERFMON, or a verified
 * certificate), which every scraper of a host shares, has no share of its
 * own and a reserve that no other client takes (review helper-22: root's
 * parallel scrapes got 503 with the share, four uids took every slot);
 * and a local user with no request in progress always gets one, however
 * many other uids hold theirs, which a client known only by its address
 * (--insecure-remote) does not.
 */
#include <kselftest_harness.h>
#include <stdio.h>
#include <stdlib.h>

#include "serve_slots.h"

FIXTURE(sl) {
	struct serve_slots *s;
};

FIXTURE_SETUP(sl)
{
	self->s = calloc(1, sizeof(*self->s));
	ASSERT_NE(NULL, self->s);
}

FIXTURE_TEARDOWN(sl)
{
	free(self->s);
}

/* @n connections of @key, all accepted; their slot. */
static struct serve_peer *connect_n(struct __test_metadata *_metadata, struct serve_slots *s,
				    const char *key, int n)
{
	struct serve_peer *p = NULL, *q;

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(SERVE_OK, serve_slots__connect(s, key, false, &q)) TH_LOG("%s conn %d", key, i);
		if (p)
			ASSERT_EQ(p, q);
		p = q;
	}
	return p;
}

/* Requests of @p (a client of @kind) admitted out of @n asked. */
static int admit_as(struct serve_slots *s, struct serve_peer *p, int n, bool delta,
		    enum serve_client kind)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += serve_slots__admit(s, p, delta, kind) == SERVE_OK;
	return ok;
}

#define PRIV	SERVE_CLIENT_PRIVILEGED
#define USER	SERVE_CLIENT_USER
#define ADDR	SERVE_CLIENT_ADDRESS

static int admit_n(struct serve_slots *s, struct serve_peer *p, int n, bool delta)
{
	return admit_as(s, p, n, delta, USER);
}

TEST_F(sl, two_clients_at_their_limits_leave_a_third_served)
{
	struct serve_peer *a = connect_n(_metadata, self->s, "uid 1001", SERVE_PEER_CONNS);
	struct serve_peer *b = connect_n(_metadata, self->s, "uid 1002", SERVE_PEER_CONNS);
	struct serve_peer *c = connect_n(_metadata, self->s, "uid 1003", 1);

	EXPECT_EQ(SERVE_PEER_REQUESTS, admit_n(self->s, a, SERVE_PEER_CONNS, false));
	EXPECT_EQ(SERVE_PEER_REQUESTS, admit_n(self->s, b, SERVE_PEER_CONNS, false));
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, c, false, USER));
	/* the same for deltas */
	EXPECT_EQ(SERVE_PEER_DELTAS, admit_n(self->s, a, SERVE_PEER_CONNS, true));
	EXPECT_EQ(SERVE_MAX_DELTAS - SERVE_RESERVED_DELTAS - SERVE_PEER_DELTAS,
		  admit_n(self->s, b, SERVE_PEER_CONNS, true));
}

/* Every client but root at its share (addresses: no request of their own): root is still
 * served, up to the whole reserve. */
TEST_F(sl, clients_at_their_shares_leave_root_served)
{
	struct serve_peer *root = connect_n(_metadata, self->s, "uid 0", SERVE_PEER_CONNS), *p;
	char key[32];
	int ok = 0;

	for (int i = 0; i < SERVE_MAX_REQUESTS; i++) {
		snprintf(key, sizeof(key), "10.0.0.%d", 1 + i);
		p = connect_n(_metadata, self->s, key, SERVE_PEER_CONNS / 2);
		ok += admit_as(self->s, p, SERVE_PEER_CONNS / 2, false, ADDR);
		ok += admit_as(self->s, p, SERVE_PEER_CONNS / 2, true, ADDR);
	}
	EXPECT_EQ(SERVE_MAX_REQUESTS - SERVE_RESERVED_REQUESTS + SERVE_MAX_DELTAS - SERVE_RESERVED_DELTAS, ok);
	EXPECT_EQ(SERVE_RESERVED_REQUESTS, admit_as(self->s, root, SERVE_PEER_CONNS, false, PRIV));
	EXPECT_EQ(SERVE_RESERVED_DELTAS, admit_as(self->s, root, SERVE_PEER_CONNS, true, PRIV));
}

/* Root's scrapers in parallel (Parca: heap, allocs, mutex, block at once, and more) are not one client's share. */
TEST_F(sl, root_has_no_share_of_its_own)
{
	struct serve_peer *root = connect_n(_metadata, self->s, "uid 0", SERVE_PEER_CONNS);

	EXPECT_EQ(SERVE_PEER_CONNS, admit_as(self->s, root, SERVE_PEER_CONNS, false, PRIV));
	for (int i = 0; i < SERVE_PEER_CONNS; i++)
		serve_slots__finish(self->s, root, false);
	EXPECT_EQ(SERVE_MAX_DELTAS, admit_as(self->s, root, SERVE_PEER_CONNS, true, PRIV));
}

TEST_F(sl, per_client_refusal_then_room_again)
{
	struct serve_peer *a = connect_n(_metadata, self->s, "uid 1001", SERVE_PEER_CONNS);
	struct serve_peer *b = connect_n(_metadata, self->s, "uid 1002", 1);

	ASSERT_EQ(SERVE_PEER_REQUESTS, admit_n(self->s, a, SERVE_PEER_REQUESTS, false));
	EXPECT_EQ(SERVE_PEER_BUSY, serve_slots__admit(self->s, a, false, USER));
	EXPECT_NE(NULL, strstr(serve_slots__why(SERVE_PEER_BUSY), "of yours"));
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, b, false, USER));
	serve_slots__finish(self->s, a, false);
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, a, false, USER));
	/* a plain request and a delta do not share slots */
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, a, true, USER));
}

TEST_F(sl, total_requests_bounded)
{
	struct serve_peer *p;
	char key[32];
	int ok = 0;

	for (int i = 0; i < SERVE_MAX_REQUESTS; i++) {
		snprintf(key, sizeof(key), "10.0.1.%d", 1 + i);
		p = connect_n(_metadata, self->s, key, 1);
		ok += serve_slots__admit(self->s, p, false, ADDR) == SERVE_OK;
	}
	EXPECT_EQ(SERVE_MAX_REQUESTS - SERVE_RESERVED_REQUESTS, ok);
	p = connect_n(_metadata, self->s, "uid 0", 1);
	EXPECT_EQ(SERVE_RESERVED_REQUESTS, admit_as(self->s, p, SERVE_PEER_CONNS, false, PRIV));
	EXPECT_EQ(SERVE_BUSY, serve_slots__admit(self->s, p, false, PRIV));
	EXPECT_NE(NULL, serve_slots__why(SERVE_BUSY));
}

TEST_F(sl, connections_bounded_per_client_and_in_all)
{
	struct serve_peer *p;
	char key[32];
	int i;

	connect_n(_metadata, self->s, "uid 1001", SERVE_PEER_CONNS);
	EXPECT_EQ(SERVE_PEER_NO_CONN, serve_slots__connect(self->s, "uid 1001", false, &p));
	EXPECT_EQ(NULL, p);
	/* handshakes: half the threads at most */
	for (i = 0; i < SERVE_MAX_HANDSHAKES; i++) {
		snprintf(key, sizeof(key), "10.0.0.%d", i);
		ASSERT_EQ(SERVE_OK, serve_slots__connect(self->s, key, true, &p));
	}
	EXPECT_EQ(SERVE_NO_HANDSHAKE, serve_slots__connect(self->s, "10.0.1.1", true, &p));
	serve_slots__handshake_done(self->s);
	EXPECT_EQ(SERVE_OK, serve_slots__connect(self->s, "10.0.1.1", true, &p));
	/* threads: fill the rest with plain connections */
	for (i = 0; self->s->threads < SERVE_MAX_THREADS; i++) {
		snprintf(key, sizeof(key), "uid %d", 5000 + i);
		ASSERT_EQ(SERVE_OK, serve_slots__connect(self->s, key, false, &p));
	}
	EXPECT_EQ(SERVE_NO_THREAD, serve_slots__connect(self->s, "uid 9", false, &p));
}

/*
 * Three users at their shares hold every unprivileged slot (slow readers):
 * each other user still gets one request at a time, plain and delta, and
 * root its whole reserve; the totals count none of the users' own ones.
 */
TEST_F(sl, a_user_with_none_in_progress_is_served_whoever_holds_the_rest)
{
	struct serve_peer *holders[3], *u, *v, *root;
	unsigned int plain, deltas;
	char key[32];

	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "uid %d", 3001 + i);
		holders[i] = connect_n(_metadata, self->s, key, SERVE_PEER_CONNS);
		admit_n(self->s, holders[i], SERVE_PEER_CONNS, false);
		admit_n(self->s, holders[i], SERVE_PEER_CONNS, true);
	}
	plain = self->s->requests;
	deltas = self->s->deltas;
	ASSERT_EQ(SERVE_MAX_REQUESTS - SERVE_RESERVED_REQUESTS, plain);
	ASSERT_EQ(SERVE_MAX_DELTAS - SERVE_RESERVED_DELTAS, deltas);
	u = connect_n(_metadata, self->s, "uid 1001", 2);
	v = connect_n(_metadata, self->s, "uid 1002", 2);
	EXPECT_EQ(1, admit_n(self->s, u, 2, false));
	EXPECT_EQ(1, admit_n(self->s, u, 2, true));
	EXPECT_EQ(SERVE_BUSY, serve_slots__admit(self->s, u, false, USER));
	EXPECT_EQ(1, admit_n(self->s, v, 2, false));
	EXPECT_EQ(1, admit_n(self->s, v, 2, true));
	EXPECT_EQ(plain, self->s->requests);
	EXPECT_EQ(deltas, self->s->deltas);
	root = connect_n(_metadata, self->s, "uid 0", SERVE_PEER_CONNS);
	EXPECT_EQ(SERVE_RESERVED_REQUESTS, admit_as(self->s, root, SERVE_PEER_CONNS, false, PRIV));
	EXPECT_EQ(SERVE_RESERVED_DELTAS, admit_as(self->s, root, SERVE_PEER_CONNS, true, PRIV));
	/* u's own request ends: the totals do not move, and u may have another */
	serve_slots__finish(self->s, u, false);
	EXPECT_EQ(SERVE_MAX_REQUESTS, self->s->requests);
	EXPECT_EQ(0u, u->requests);
	EXPECT_EQ(0u, u->own_requests);
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, u, false, USER));
	/* a holder's request ends: the total has room for one of theirs again */
	serve_slots__finish(self->s, holders[0], false);
	EXPECT_EQ(SERVE_MAX_REQUESTS - 1, self->s->requests);
}

/*
 * Requests beyond the totals are bounded in all: a uid is not one per
 * account (subordinate uid ranges), and 128 uids with one delta each took
 * every connection thread for 7 days (review helper-26 F1).
 */
TEST_F(sl, requests_beyond_the_totals_bounded)
{
	struct serve_peer *p;
	char key[32];
	int plain = 0, deltas = 0;

	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "uid %d", 3001 + i);
		p = connect_n(_metadata, self->s, key, SERVE_PEER_CONNS);
		admit_n(self->s, p, SERVE_PEER_CONNS, false);
		admit_n(self->s, p, SERVE_PEER_CONNS, true);
	}
	for (int i = 0; i < 80; i++) {
		snprintf(key, sizeof(key), "uid %d", 200001 + i);
		p = connect_n(_metadata, self->s, key, 1);
		plain += admit_n(self->s, p, 1, false);
		deltas += admit_n(self->s, p, 1, true);
	}
	EXPECT_EQ(SERVE_OWN_REQUESTS, plain);
	EXPECT_EQ(SERVE_OWN_REQUESTS, self->s->own_requests);
	/* the third holder's first delta was one of them (its share had no room) */
	EXPECT_EQ(SERVE_OWN_DELTAS - 1, deltas);
	EXPECT_EQ(SERVE_OWN_DELTAS, self->s->own_deltas);
	EXPECT_EQ(SERVE_MAX_REQUESTS - SERVE_RESERVED_REQUESTS, self->s->requests);
	EXPECT_EQ(SERVE_MAX_DELTAS - SERVE_RESERVED_DELTAS, self->s->deltas);
	/* one ends: another user's may go in */
	serve_slots__finish(self->s, &self->s->peers[3], false);
	EXPECT_EQ(SERVE_OWN_REQUESTS - 1, self->s->own_requests);
	p = connect_n(_metadata, self->s, "uid 300000", 1);
	EXPECT_EQ(SERVE_OK, serve_slots__admit(self->s, p, false, USER));
	EXPECT_EQ(SERVE_BUSY, serve_slots__admit(self->s, connect_n(_metadata, self->s, "uid 300001", 1),
						   false, USER));
}

/* An address anyone may bind (--insecure-remote) gets no request of its own. */
TEST_F(sl, an_address_gets_no_request_of_its_own)
{
	struct serve_peer *p;
	char key[32];

	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "uid %d", 3001 + i);
		p = connect_n(_metadata, self->s, key, SERVE_PEER_CONNS);
		admit_n(self->s, p, SERVE_PEER_CONNS, false);
	}
	p = connect_n(_metadata, self->s, "10.0.0.9", 1);
	EXPECT_EQ(SERVE_BUSY, serve_slots__admit(self->s, p, false, ADDR));
	EXPECT_EQ(0u, p->requests);
}

/* A client's slot, once all its connections closed, is another's, from zero. */
TEST_F(sl, slot_reused_clean)
{
	struct serve_peer *a = connect_n(_metadata, self->s, "uid 1001", 1), *b;

	ASSERT_EQ(SERVE_OK, serve_slots__admit(self->s, a, false, USER));
	serve_slots__finish(self->s, a, false);
	serve_slots__disconnect(self->s, a, false);
	EXPECT_EQ(0u, self->s->threads);
	EXPECT_EQ(0u, self->s->requests);
	b = connect_n(_metadata, self->s, "uid 1002", 1);
	EXPECT_EQ(a, b);
	EXPECT_STREQ("uid 1002", b->key);
	EXPECT_EQ(SERVE_PEER_REQUESTS, admit_n(self->s, b, SERVE_PEER_REQUESTS + 1, false));
}

TEST_HARNESS_MAIN
