/* SPDX-License-Identifier: GPL-2.0 */
/*
 * http.h - the little HTTP/1.0 `kpprof serve` needs: read one request
 * (head, and a POST body), %-decoded query values, and replies with
 * net/http/pprof's headers.  Every connection answers one request and is
 * closed.
 */
#ifndef KPPROF_HTTP_H
#define KPPROF_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define KPP_HTTP_BODY_MAX	(1u << 20)

struct kpp_tls_conn;

/* One client's connection: its socket, and its TLS session on a tls: listener. */
struct kpp_http_conn {
	int fd;
	struct kpp_tls_conn *tls;	/* NULL: plain HTTP on @fd (tls.h) */
};
/* The whole request, head and body, must arrive within this (slow clients). */
#define KPP_HTTP_READ_MS	10000

struct kpp_http_req {
	char method[8];
	char path[2048];	/* without the query */
	const char *query;	/* raw, after '?'; "" if none (into path's buffer) */
	char *body;		/* POST body (malloc'd, NUL-terminated) or NULL */
	size_t body_len;
	bool head;		/* HEAD: headers only */
	bool has_host;		/* a Host header came (HTTP/1.0 may omit it) */
	char host[256];		/* its value, trimmed */
	char buf[4096];		/* the raw query lives here */
};

/*
 * kpp_http__read - read one request from @c: head and body within
 * KPP_HTTP_READ_MS in all, however the client trickles them (a reply:
 * KPP_HTTP_WRITE_MS in all).  0, or the status to answer (400 malformed,
 * 408 too slow, 413 body too large).
 */
int kpp_http__read(struct kpp_http_conn *c, struct kpp_http_req *r);
/*
 * The same with a deadline of @ms for the whole request (tests; serve: what
 * the TLS handshake left of KPP_HTTP_READ_MS).
 */
int kpp_http__read_within(struct kpp_http_conn *c, struct kpp_http_req *r, int ms);

/* The whole reply must be taken within this (slow readers); tests lower it. */
#define KPP_HTTP_WRITE_MS	60000
extern int kpp_http_write_ms;

/*
 * kpp_http__host_ok - may a request with this Host header be served?  DNS
 * rebinding: a web page the user visits may point its own name at
 * 127.0.0.1, and the browser then sends that name.  Accepted: no Host
 * (HTTP/1.0), "localhost" and "*.localhost", loopback addresses
 * (127.0.0.0/8, [::1]), any IP literal when @any_ip (listening on a
 * wildcard address), and the names in @names (the listen host,
 * --allow-host); each with or without ":port".
 */
bool kpp_http__host_ok(const struct kpp_http_req *r, const char *const *names, size_t n,
		       bool any_ip);
void kpp_http__release(struct kpp_http_req *r);

/*
 * kpp_http__query - the %-decoded value of @key in query @q ("a=1&b=%32";
 * '+' is a space, as Go's url.ParseQuery), copied into @out; NULL if
 * absent or longer than @len - 1.
 */
const char *kpp_http__query(const char *q, const char *key, char *out, size_t len);

/*
 * kpp_http__reply - status line, Content-Type, Content-Length, @extra
 * header lines (each ending "\r\n", or NULL), then @body unless @r is a
 * HEAD request.
 */
void kpp_http__reply(struct kpp_http_conn *c, const struct kpp_http_req *r, int code, const char *type,
		     const char *extra, const void *body, size_t len);
/*
 * kpp_http__error - as net/http/pprof's serveError: text/plain, the
 * X-Go-Pprof: 1 header (pprof then prints the text), @text plus "\n".
 */
void kpp_http__error(struct kpp_http_conn *c, const struct kpp_http_req *r, int code, const char *text);
/*
 * kpp_http__busy - 503 as kpp_http__error, with Retry-After: 1 (RFC 9110
 * 10.2.3): a slot frees as soon as a request in progress ends, and a
 * client told when to come back does not hammer the server meanwhile.
 */
void kpp_http__busy(struct kpp_http_conn *c, const struct kpp_http_req *r, const char *text);

#endif
