/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tls.h - mutual TLS for `kpprof serve --listen tls:HOST:PORT`, with
 * OpenSSL's libssl (no crypto of our own).
 *
 * The server presents --tls-cert/--tls-key and requires a client
 * certificate that chains to --tls-client-ca (TLS 1.2 or 1.3; 1.3 when
 * the client has it).  No certificate, another CA, an expired or not yet
 * valid certificate, plain HTTP: the handshake fails.  A verified client
 * sees every process (the operator issued its certificate, as root would
 * be trusted locally); --tls-client-name narrows that to certificates
 * naming one of the given names.  Every TLS connection is a full
 * handshake (no session resumption), so each is verified afresh.  The
 * files are read once at start-up; a new certificate needs a restart.
 *
 * The socket of a TLS connection is non-blocking: the handshake, reads and
 * writes wait in poll(2) on OpenSSL's WANT_READ/WANT_WRITE, each bounded by
 * the caller's deadline (the handshake counts against the request's), in
 * the connection's own thread, never the accepting one.
 */
#ifndef KPPROF_TLS_H
#define KPPROF_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kpp_tls;		/* the server's context: certificate, key, client CA, names */
struct kpp_tls_conn;	/* one client's session */

#define KPP_TLS_MAX_NAMES	8

struct kpp_tls_opts {
	const char *cert;		/* PEM: the server's certificate (chain) */
	const char *key;		/* PEM: its private key, not accessible by others */
	const char *client_ca;		/* PEM: the CA(s) client certificates must chain to */
	const char *names[KPP_TLS_MAX_NAMES];	/* if any: a client certificate must name one */
	size_t nr_names;
};

/*
 * kpp_tls__new - read the files of @o once and check them: each exists
 * and parses, the key matches the certificate, the key file is a regular
 * file with no permission for others (as ssh), the CA file holds at least
 * one certificate and is owned by root (or us) and writable by nobody
 * else, each a regular file (a FIFO is refused, not waited on).  NULL
 * after one clear line on stderr per problem.
 */
struct kpp_tls *kpp_tls__new(const struct kpp_tls_opts *o);
void kpp_tls__free(struct kpp_tls *t);

/* Why a handshake failed, for the server's counters. */
enum kpp_tls_fail {
	KPP_TLS_OK,
	KPP_TLS_CERT,	/* client certificate missing, untrusted, expired, wrong purpose */
	KPP_TLS_PROTO,	/* not TLS (plain HTTP), an old version, the client left, ... */
	KPP_TLS_SLOW,	/* not done by the deadline */
	KPP_TLS_NAME,	/* verified, but names none of --tls-client-name */
	KPP_TLS_NOMEM,
};

/*
 * kpp_tls__accept - the server's side of the handshake on the connected
 * socket @fd (made non-blocking), by @deadline (CLOCK_MONOTONIC ms).
 * KPP_TLS_OK and *@out, or why not with a text for the log in @why.
 */
enum kpp_tls_fail kpp_tls__accept(struct kpp_tls *t, int fd, int64_t deadline,
				  struct kpp_tls_conn **out, char *why, size_t len);

/*
 * kpp_tls__read / kpp_tls__write - as read(2)/write(2) (a write may be
 * partial), waiting until @deadline at most: bytes, 0 at the end of the
 * stream (read), -1 on error, -2 when the deadline passed.
 */
ssize_t kpp_tls__read(struct kpp_tls_conn *c, void *buf, size_t len, int64_t deadline);
ssize_t kpp_tls__write(struct kpp_tls_conn *c, const void *buf, size_t len, int64_t deadline);

/* kpp_tls__close - send close_notify if the session is sound (no waiting), free it; not the fd. */
void kpp_tls__close(struct kpp_tls_conn *c);

/*
 * kpp_tls__log_refusal - "kpprof serve: TLS client @peer refused: @why" on
 * stderr, at most once a minute per @peer and ten lines a minute in all
 * (a scanner must not flood the log; the counters count every refusal).
 */
void kpp_tls__log_refusal(const char *peer, const char *why);

#endif
