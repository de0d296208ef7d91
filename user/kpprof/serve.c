// SPDX-License-Identifier: GPL-2.0
/*
 * serve.c - `kpprof serve`: Go's /debug/pprof endpoints for every process,
 * so `go tool pprof http://127.0.0.1:PORT/debug/pprof/heap` works.
 *
 *   /debug/pprof/{heap,allocs,mutex,block}
 *       ?pid=N      one process (default: all, with pid/comm labels)
 *       ?gc=1       end the cycle first, so the profile is up to date
 *       ?seconds=S  a delta profile over the next S seconds (1..3600)
 *       ?debug=1    Go's legacy text form instead of gzip'd protobuf
 *
 * One thread: between requests, and while a delta request waits, the
 * ring is drained, so records keep flowing.  Requests are served one at
 * a time; a ?seconds request delays the ones behind it (a shortcut: Go
 * serves each on its own goroutine).  Listens on loopback by default:
 * profiles reveal code addresses of every process.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "output.h"
#include "profile_write.h"
#include "rates.h"
#include "session.h"
#include "verbs.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void serve_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof serve [--listen [HOST]:PORT] [--mem-rate BYTES]\n"
		"                    [--block-rate NS] [--mutex-fraction N]\n"
		"Serves /debug/pprof/{heap,allocs,mutex,block} (?pid= ?seconds= ?gc=1\n"
		"?debug=1).  Default 127.0.0.1:6061; an empty HOST means 127.0.0.1.\n");
}

static int parse_listen(const char *arg, struct sockaddr_in *sa)
{
	const char *colon = strrchr(arg, ':');
	char host[64];
	uint64_t port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - arg) >= sizeof(host))
		return -1;
	memcpy(host, arg, colon - arg);
	host[colon - arg] = '\0';
	if (!*host || !strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -1;
	if (kpp_parse_u64("serve", "--listen port", colon + 1, &port) || port > 65535)
		return -1;
	sa->sin_port = htons(port);
	return 0;
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

static void reply(int fd, int code, const char *status, const char *type,
		  const void *body, size_t len)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "%sConnection: close\r\n\r\n", code, status, type, len,
			 /* As net/http/pprof: pprof then shows the error's text. */
			 code >= 400 ? "X-Go-Pprof: 1\r\n" : "");

	send_all(fd, hdr, n);
	send_all(fd, body, len);
}

static void reply_text(int fd, int code, const char *status, const char *text)
{
	reply(fd, code, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* query_get - value of @key in "a=1&b=2" (copied into @out), or NULL. */
static const char *query_get(const char *q, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	while (q && *q) {
		if (!strncmp(q, key, klen) && q[klen] == '=') {
			size_t n = strcspn(q + klen + 1, "&");

			if (n >= len)
				n = len - 1;
			memcpy(out, q + klen + 1, n);
			out[n] = '\0';
			return out;
		}
		q = strchr(q, '&');
		if (q)
			q++;
	}
	return NULL;
}

static bool pid_is(void *ctx, uint32_t pid)
{
	return pid == *(uint32_t *)ctx;
}

static void wait_draining(struct kpp_session *s, uint64_t seconds)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		kpp_session__poll(s, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!stop && (uint64_t)(now.tv_sec - t0.tv_sec) < seconds);
}

static void handle(struct kpp_session *s, int fd, char *path)
{
	static const struct { const char *name; int type; bool allocs; } profiles[] = {
		{ "heap", KPP_HEAP, false }, { "allocs", KPP_HEAP, true },
		{ "mutex", KPP_MUTEX, false }, { "block", KPP_BLOCK, false },
	};
	char val[32], msg[256], *query = strchr(path, '?');
	struct kpp_write_opts o = { 0 };
	struct kpp_view v, old;
	uint64_t pid = 0, seconds = 0;
	uint32_t pid32;
	int type = -1, err;

	if (query)
		*query++ = '\0';
	if (!strcmp(path, "/debug/pprof/") || !strcmp(path, "/debug/pprof")) {
		reply_text(fd, 200, "OK",
			   "kpprof profiles:\n/debug/pprof/heap\n/debug/pprof/allocs\n"
			   "/debug/pprof/mutex\n/debug/pprof/block\n"
			   "parameters: pid=N seconds=S gc=1 debug=1\n");
		return;
	}
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strncmp(path, "/debug/pprof/", 13) && !strcmp(path + 13, profiles[i].name)) {
			type = profiles[i].type;
			o.allocs = profiles[i].allocs;
		}
	if (type < 0) {
		reply_text(fd, 404, "Not Found", "unknown profile: try /debug/pprof/\n");
		return;
	}
	if (query_get(query, "pid", val, sizeof(val))) {
		char *end;

		pid = strtoull(val, &end, 10);
		if (*end || !pid || pid > UINT32_MAX) {
			reply_text(fd, 400, "Bad Request", "pid must be a process id\n");
			return;
		}
		if (!kpp_agg__proc(s->agg, pid)) {
			snprintf(msg, sizeof(msg), "no profile for pid %llu: it has not run with libkpprof.so since this server started\n",
				 (unsigned long long)pid);
			reply_text(fd, 404, "Not Found", msg);
			return;
		}
	}
	pid32 = pid;
	if (query_get(query, "seconds", val, sizeof(val))) {
		char *end;

		seconds = strtoull(val, &end, 10);
		/* Go answers 400 to seconds=0 (not a positive integer). */
		if (*end || !*val || seconds == 0 || seconds > 3600) {
			reply_text(fd, 400, "Bad Request",
				   "invalid value for \"seconds\" - must be a positive integer (at most 3600)\n");
			return;
		}
	}
	if (query_get(query, "gc", val, sizeof(val)) && strcmp(val, "0"))
		kpp_session__settle(s, 5000);
	kpp_session__learn_maps(s);
	if (seconds) {
		if (type == KPP_HEAP)
			kpp_session__settle(s, 5000);
		if (kpp_view__take(&old, s->agg, type, pid ? pid_is : NULL, &pid32)) {
			reply_text(fd, 500, "Internal Server Error", "out of memory\n");
			return;
		}
		wait_draining(s, seconds);
		if (type == KPP_HEAP)
			kpp_session__settle(s, 5000);
	}
	err = kpp_view__take(&v, s->agg, type, pid ? pid_is : NULL, &pid32);
	if (!err && seconds) {
		err = kpp_view__subtract(&v, &old);
		o.duration_ns = seconds * 1000000000LL;
		kpp_view__release(&old);
		if (err)
			kpp_view__release(&v);
	}
	if (err) {
		reply_text(fd, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	if (query_get(query, "debug", val, sizeof(val)) && strcmp(val, "0")) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (f) {
			kpp_profile__write_legacy(f, &v, s->agg, s->sym);
			fclose(f);
			reply(fd, 200, "OK", "text/plain; charset=utf-8", buf, len);
		}
		free(buf);
	} else {
		uint8_t *buf;
		size_t len;
		char comment[512];

		kpp_output__comment(s, comment, sizeof(comment));
		o.comment = comment;
		if (kpp_profile__encode_gz(&v, s->agg, s->sym, &o, &buf, &len) == 0) {
			reply(fd, 200, "OK", "application/octet-stream", buf, len);
			free(buf);
		} else {
			reply_text(fd, 500, "Internal Server Error", "cannot encode the profile\n");
		}
	}
	kpp_view__release(&v);
}

static void serve_conn(struct kpp_session *s, int fd)
{
	char req[4096], method[8], path[2048];
	size_t len = 0;
	struct timeval tv = { .tv_sec = 5 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* Read the request head; we ignore headers and body. */
	while (len < sizeof(req) - 1) {
		ssize_t n = read(fd, req + len, sizeof(req) - 1 - len);

		if (n <= 0)
			break;
		len += n;
		req[len] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[len] = '\0';
	if (sscanf(req, "%7s %2047s", method, path) != 2) {
		reply_text(fd, 400, "Bad Request", "malformed request\n");
		return;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		reply_text(fd, 405, "Method Not Allowed", "GET only\n");
		return;
	}
	handle(s, fd, path);
}


int serve_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	const char *listen_addr = "127.0.0.1:6061";
	struct kpprof_config old_cfg;
	struct kpp_rates r = { 0 };
	struct kpp_session s;
	int opt, lfd, one = 1, ret = 1;
	char addr[INET_ADDRSTRLEN];

	while ((opt = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l': listen_addr = optarg; break;
		case 'h':
			serve_usage(stdout);
			return 0;
		default:
			if (opt >= KPP_OPT_MEM && opt <= KPP_OPT_DEPTH) {
				if (kpp_rates__parse("serve", &r, opt, optarg))
					return 1;
				break;
			}
			serve_usage(stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kpprof serve: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (parse_listen(listen_addr, &sa)) {
		fprintf(stderr, "kpprof serve: --listen %s: expected [IPV4]:PORT, e.g. 127.0.0.1:6061\n",
			listen_addr);
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen)) {
		fprintf(stderr, "kpprof serve: cannot listen on %s: %s\n", listen_addr, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	if (kpp_session__open(&s, NULL)) {
		close(lfd);
		return 1;
	}
	if (kpp_rates__set(s.fd, "serve", &r, &old_cfg))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof(addr));
	printf("kpprof: serving http://%s:%u/debug/pprof/\n", addr, ntohs(sa.sin_port));
	fflush(stdout);

	while (!stop) {
		struct pollfd pfd[2] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = kpp_ring__epoll_fd(s.ring), .events = POLLIN },
		};

		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			break;
		kpp_ring__consume(s.ring);
		if (pfd[0].revents & POLLIN) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0) {
				serve_conn(&s, cfd);
				close(cfd);
			}
		}
		kpp_session__reap(&s);
		kpp_agg__expire(s.agg);
	}
	ret = 0;
	if (r.set)
		kpprof_dev__set_config(s.fd, &old_cfg);
out:
	kpp_session__close(&s);
	close(lfd);
	return ret;
}
