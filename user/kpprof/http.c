// SPDX-License-Identifier: GPL-2.0
/* http.c - one HTTP request in, one reply out (see http.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http.h"

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

/* content_length - the Content-Length header's value in @head, or 0. */
static size_t content_length(const char *head)
{
	for (const char *l = strstr(head, "\n"); l && *l; l = strstr(l + 1, "\n"))
		if (!strncasecmp(l + 1, "content-length:", 15))
			return strtoull(l + 16, NULL, 10);
	return 0;
}

int kpp_http__read(int fd, struct kpp_http_req *r)
{
	struct timeval tv = { .tv_sec = 5 };
	char *end = NULL, target[2048];
	size_t len = 0, want, have;

	memset(r, 0, sizeof(*r));
	r->query = "";
	struct timeval wtv = { .tv_sec = 60 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* A client that stops reading must not hold a thread for ever. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wtv, sizeof(wtv));
	while (len < sizeof(r->buf) - 1) {
		ssize_t n = read(fd, r->buf + len, sizeof(r->buf) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
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
	if (!end || sscanf(r->buf, "%7s %2047s", r->method, target) != 2)
		return 400;
	r->head = !strcmp(r->method, "HEAD");
	if (!strcmp(r->method, "POST")) {
		want = content_length(r->buf);
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
			ssize_t n = read(fd, r->body + have, want - have);

			if (n < 0 && errno == EINTR)
				continue;
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

void kpp_http__release(struct kpp_http_req *r)
{
	free(r->body);
	r->body = NULL;
}

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
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
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Request Entity Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

void kpp_http__reply(int fd, const struct kpp_http_req *r, int code, const char *type,
		     const char *extra, const void *body, size_t len)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "X-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
			 code, status_text(code), type, len, extra ? extra : "");

	send_all(fd, hdr, n < (int)sizeof(hdr) ? (size_t)n : sizeof(hdr) - 1);
	if (!r || !r->head)
		send_all(fd, body, len);
}

void kpp_http__error(int fd, const struct kpp_http_req *r, int code, const char *text)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%s\n", text);

	kpp_http__reply(fd, r, code, "text/plain; charset=utf-8", "X-Go-Pprof: 1\r\n", msg,
			n < (int)sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}
