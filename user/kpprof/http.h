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

struct kpp_http_req {
	char method[8];
	char path[2048];	/* without the query */
	const char *query;	/* raw, after '?'; "" if none (into path's buffer) */
	char *body;		/* POST body (malloc'd, NUL-terminated) or NULL */
	size_t body_len;
	bool head;		/* HEAD: headers only */
	char buf[4096];		/* the raw query lives here */
};

/*
 * kpp_http__read - read one request from @fd (5 s per read; a reply may
 * then take 60 s per write).  0, or the status to answer (400 malformed,
 * 413 body too large).
 */
int kpp_http__read(int fd, struct kpp_http_req *r);
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
void kpp_http__reply(int fd, const struct kpp_http_req *r, int code, const char *type,
		     const char *extra, const void *body, size_t len);
/*
 * kpp_http__error - as net/http/pprof's serveError: text/plain, the
 * X-Go-Pprof: 1 header (pprof then prints the text), @text plus "\n".
 */
void kpp_http__error(int fd, const struct kpp_http_req *r, int code, const char *text);

#endif
