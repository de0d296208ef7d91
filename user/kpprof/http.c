// SPDX-License-Identifier: GPL-2.0
/* http.c - one HTTP request in, one reply out (see http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "tls.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* decode - %-decode [@s, @s + @n) into @out; false if malformed or too long. */
static bool decode(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return false;
			c = hi << 4 | lo;
			i += 2;
		}
		if (o + 1 >= len)
			return false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return true;
}

const char *kpp_http__query(const char *q, const char *key, char *out, size_t len)
{
	char k[64];

	while (q && *q) {
		size_t n = strcspn(q, "&"), kn = strcspn(q, "=&");

		if (kn < n && decode(q, kn, k, sizeof(k)) && !strcmp(k, key))
			return decode(q + kn + 1, n - kn - 1, out, len) ? out : NULL;
		q += n;
		if (*q)
			q++;
	}
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * read_by - read what has come by @deadline (CLOCK_MONOTONIC ms): bytes,
 * 0 at end of stream, -1 on error, -2 when the deadline passed.  One
 * deadline for the whole request, so a client sending a byte now and then
 * cannot hold its thread for longer.
 */
static ssize_t read_by(struct kpp_http_conn *c, void *buf, size_t len, int64_t deadline)
{
	if (c->tls)
		return kpp_tls__read(c->tls, buf, len, deadline);
	for (;;) {
		int64_t left = deadline - now_ms();
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int n;

		if (left <= 0)
			return -2;
		n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0) {
			ssize_t got = read(c->fd, buf, len);

			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			return got;
		}
	}
}

/* header - the value of header @name in @head (trimmed) into @out; false if absent. */
static bool header(const char *head, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);

	for (const char *l = strchr(head, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		const char *v = l + 1;
		size_t n;

		if (strncasecmp(v, name, nl) || v[nl] != ':')
			continue;
		v += nl + 1;
		v += strspn(v, " \t");
		n = strcspn(v, "\r\n");
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (n >= len)
			n = len - 1;
		memcpy(out, v, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

int kpp_http__read(struct kpp_http_conn *c, struct kpp_http_req *r)
{
	return kpp_http__read_within(c, r, KPP_HTTP_READ_MS);
}

int kpp_http__read_within(struct kpp_http_conn *c, struct kpp_http_req *r, int ms)
{
	int64_t deadline = now_ms() + ms;
	struct timeval wtv = { .tv_sec = 60 };
	char *end = NULL, target[2048], cl[32];
	size_t len = 0, want = 0, have;
	ssize_t n = 0;

	memset(r, 0, sizeof(*r));
	r->query = "";
	/* A client that stops reading must not hold a thread for ever (send_all too). */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &wtv, sizeof(wtv));
	while (len < sizeof(r->buf) - 1) {
		n = read_by(c, r->buf + len, sizeof(r->buf) - 1 - len, deadline);
		if (n <= 0)
			break;
		len += n;
		r->buf[len] = '\0';
		end = strstr(r->buf, "\r\n\r\n");
		if (end) {
			end += 4;
			break;
		}
		end = strstr(r->buf, "\n\n");
		if (end) {
			end += 2;
			break;
		}
	}
	r->buf[len] = '\0';
	if (!end && n == -2)
		return 408;
	if (!end || sscanf(r->buf, "%7s %2047s", r->method, target) != 2)
		return 400;
	/* Only the head's lines: the body may hold anything. */
	end[-1] = '\0';
	r->has_host = header(r->buf, "host", r->host, sizeof(r->host));
	r->head = !strcmp(r->method, "HEAD");
	if (!strcmp(r->method, "POST")) {
		if (header(r->buf, "content-length", cl, sizeof(cl)))
			want = strtoull(cl, NULL, 10);
		if (want > KPP_HTTP_BODY_MAX)
			return 413;
		r->body = malloc(want + 1);
		if (!r->body)
			return 500;
		have = len - (end - r->buf);
		if (have > want)
			have = want;
		memcpy(r->body, end, have);
		while (have < want) {
			n = read_by(c, r->body + have, want - have, deadline);
			if (n == -2)
				return 408;
			if (n <= 0)
				return 400;
			have += n;
		}
		r->body[want] = '\0';
		r->body_len = want;
	}
	/* The query is kept raw (symbol requests read it as addresses). */
	snprintf(r->path, sizeof(r->path), "%s", target);
	char *q = strchr(r->path, '?');

	if (q) {
		*q = '\0';
		/* reuse buf: the head is parsed */
		snprintf(r->buf, sizeof(r->buf), "%s", q + 1);
		r->query = r->buf;
	}
	return 0;
}

bool kpp_http__host_ok(const struct kpp_http_req *r, const char *const *names, size_t n,
		       bool any_ip)
{
	char h[256];
	struct in6_addr a6;
	struct in_addr a4;
	size_t len;

	if (!r->has_host)
		return true;
	snprintf(h, sizeof(h), "%s", r->host);
	if (h[0] == '[') {
		char *close = strchr(h, ']');

		if (!close || (close[1] && close[1] != ':'))
			return false;
		*close = '\0';
		if (inet_pton(AF_INET6, h + 1, &a6) != 1)
			return false;
		return any_ip || IN6_IS_ADDR_LOOPBACK(&a6);
	}
	char *colon = strrchr(h, ':');

	if (colon) {
		if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return false;
		*colon = '\0';
	}
	len = strlen(h);
	if (len && h[len - 1] == '.')
		h[--len] = '\0';
	if (!len)
		return false;
	/* An IP literal: a loopback one, or the address listened on (in @names). */
	if (inet_pton(AF_INET, h, &a4) == 1 && (any_ip || (ntohl(a4.s_addr) >> 24) == 127))
		return true;
	if (!strcasecmp(h, "localhost") ||
	    (len > 10 && !strcasecmp(h + len - 10, ".localhost")))
		return true;
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(h, names[i]))
			return true;
	return false;
}

void kpp_http__release(struct kpp_http_req *r)
{
	free(r->body);
	r->body = NULL;
}

int kpp_http_write_ms = KPP_HTTP_WRITE_MS;

/*
 * send_all - @buf by @deadline (CLOCK_MONOTONIC ms): each write may block
 * only for what is left, so a reader taking a little now and then (never
 * letting one write time out) cannot hold the thread past the deadline.
 */
static void send_all(struct kpp_http_conn *c, const void *buf, size_t len, int64_t deadline)
{
	const char *p = buf;

	while (len) {
		int64_t left = deadline - now_ms();
		struct timeval tv = { .tv_sec = left / 1000, .tv_usec = left % 1000 * 1000 };
		ssize_t n;

		if (left <= 0)
			return;
		if (c->tls) {
			n = kpp_tls__write(c->tls, p, len, deadline);
		} else {
			setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			n = write(c->fd, p, len);
			if (n < 0 && errno == EINTR)
				continue;
		}
		if (n <= 0)
			return;
		p += n;
		len -= n;
	}
}

static const char *status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Request Entity Too Large";
	case 421: return "Misdirected Request";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

void kpp_http__reply(struct kpp_http_conn *c, const struct kpp_http_req *r, int code, const char *type,
		     const char *extra, const void *body, size_t len)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "X-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
			 code, status_text(code), type, len, extra ? extra : "");

	int64_t deadline = now_ms() + kpp_http_write_ms;

	send_all(c, hdr, n < (int)sizeof(hdr) ? (size_t)n : sizeof(hdr) - 1, deadline);
	if (!r || !r->head)
		send_all(c, body, len, deadline);
}

static void error_with(struct kpp_http_conn *c, const struct kpp_http_req *r, int code,
		       const char *extra, const char *text)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%s\n", text);

	kpp_http__reply(c, r, code, "text/plain; charset=utf-8", extra, msg,
			n < (int)sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

void kpp_http__error(struct kpp_http_conn *c, const struct kpp_http_req *r, int code, const char *text)
{
	error_with(c, r, code, "X-Go-Pprof: 1\r\n", text);
}

void kpp_http__busy(struct kpp_http_conn *c, const struct kpp_http_req *r, const char *text)
{
	error_with(c, r, 503, "X-Go-Pprof: 1\r\nRetry-After: 1\r\n", text);
}
