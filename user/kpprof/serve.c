// SPDX-License-Identifier: GPL-2.0
/*
 * serve.c - `kpprof serve`: Go's /debug/pprof endpoints for every process,
 * so `go tool pprof http://127.0.0.1:PORT/debug/pprof/heap` works.
 *
 *   /debug/pprof/{heap,allocs,mutex,block}
 *       ?pid=N      one process (default: all; every sample has pid/comm labels)
 *       ?gc=1       end the cycle first, so the profile is up to date
 *       ?seconds=S  a delta profile over the next S seconds (1..3600)
 *       ?debug=1    Go's legacy text form instead of gzip'd protobuf
 *   /debug/pprof/symbol
 *       Go's symbol protocol: GET answers "num_symbols: 1"; POST (or GET
 *       with a query) of "0xADDR+0xADDR..." answers "0xADDR name" lines.
 *       ?pid=N resolves in that process; without it an address is named
 *       only when every process that maps it names it alike (pprof drops
 *       the query when it asks, so a one-process profile still resolves).
 *
 * As net/http/pprof: parameters are %-decoded; errors are text with
 * X-Go-Pprof: 1; seconds=0 and seconds with debug are 400; profiles come
 * with Content-Disposition: attachment; filename="heap" ("heap-delta" for
 * a delta); HEAD gets the headers only.
 *
 * Threads: the main thread accepts and drains the ring; each connection
 * gets its own thread, so a ?seconds=30 waits beside other scrapes, not in
 * front of them.  The session (ring, aggregation, symbolizer) is not
 * thread-safe: whoever touches it holds srv.lock, and nobody holds it
 * while waiting, for a delta window or for a cycle to end (settle).  At most SERVE_MAX_REQUESTS requests
 * are served at once; more get 503.  Listens on loopback by default:
 * profiles reveal code addresses of every process.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dev.h"
#include "http.h"
#include "output.h"
#include "profile_write.h"
#include "rates.h"
#include "session.h"
#include "verbs.h"

/* Requests served at once; more are answered 503 at once. */
#define SERVE_MAX_REQUESTS	16
/* Connection threads at once (those answered 503 included); more are closed. */
#define SERVE_MAX_THREADS	(2 * SERVE_MAX_REQUESTS)
#define STR_(x) #x
#define STR(x) STR_(x)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct server {
	struct kpp_session s;
	pthread_mutex_t lock;		/* the session */
	pthread_mutex_t count_lock;	/* threads, busy */
	pthread_cond_t idle;		/* threads dropped */
	unsigned int threads, busy;
};

static void serve_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof serve [--listen [HOST]:PORT] [--mem-rate BYTES]\n"
		"                    [--block-rate NS] [--mutex-fraction N]\n"
		"Serves /debug/pprof/{heap,allocs,mutex,block} (?pid= ?seconds= ?gc=1\n"
		"?debug=1) and /debug/pprof/symbol.  Default 127.0.0.1:6061; an empty\n"
		"HOST means 127.0.0.1.\n");
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

static bool pid_is(void *ctx, uint32_t pid)
{
	return pid == *(uint32_t *)ctx;
}

/* wait_window - sleep @seconds (the main thread drains the ring); false if stopped. */
static bool wait_window(uint64_t seconds)
{
	struct timespec t0, now, nap = { 0, 100 * 1000000L };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!stop && (uint64_t)(now.tv_sec - t0.tv_sec) < seconds);
	return !stop;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * settle - kpp_session__settle without holding the lock while waiting:
 * end the cycle, then read the ring in short turns until the kernel's
 * cycle record proves it complete (at most 5 s), so other requests go on.
 */
static void settle(struct server *srv)
{
	struct kpp_session *s = &srv->s;
	struct timespec nap = { 0, 20 * 1000000L };
	int64_t deadline = now_ms() + 5000;

	while (!stop && now_ms() < deadline) {
		uint64_t target;
		bool done = false;
		int err;

		pthread_mutex_lock(&srv->lock);
		err = kpprof_dev__advance_cycle(s->fd, &target);
		pthread_mutex_unlock(&srv->lock);
		if (err)
			return;
		/* Ask again after a second: the cycle record may have been dropped. */
		for (int i = 0; i < 50 && !done && now_ms() < deadline; i++) {
			nanosleep(&nap, NULL);
			pthread_mutex_lock(&srv->lock);
			kpp_ring__consume(s->ring);
			done = kpp_agg__first_incomplete(s->agg) >= target;
			pthread_mutex_unlock(&srv->lock);
		}
		if (done)
			return;
	}
}

struct profile_req {
	int type;
	bool allocs, debug;
	const char *name;
	uint64_t pid, seconds;
	bool gc;
};

/* parse_profile - Go's parameter rules; 0, or an error already answered. */
static int parse_profile(int fd, const struct kpp_http_req *r, struct profile_req *q)
{
	char val[64], *end;

	if (kpp_http__query(r->query, "pid", val, sizeof(val))) {
		q->pid = strtoull(val, &end, 10);
		if (*end || !*val || !q->pid || q->pid > UINT32_MAX) {
			kpp_http__error(fd, r, 400, "pid must be a process id");
			return -1;
		}
	}
	if (kpp_http__query(r->query, "debug", val, sizeof(val)))
		q->debug = strtol(val, &end, 10) != 0 && !*end;
	if (kpp_http__query(r->query, "seconds", val, sizeof(val))) {
		q->seconds = strtoull(val, &end, 10);
		/* Go answers 400 to seconds=0 (not a positive integer). */
		if (*end || !*val || *val == '-' || q->seconds == 0 || q->seconds > 3600) {
			kpp_http__error(fd, r, 400,
					"invalid value for \"seconds\" - must be a positive integer (at most 3600)");
			return -1;
		}
		/* Go: a delta has no legacy text form. */
		if (q->debug) {
			kpp_http__error(fd, r, 400, "seconds and debug params are incompatible");
			return -1;
		}
	}
	if (kpp_http__query(r->query, "gc", val, sizeof(val)))
		q->gc = strcmp(val, "0") != 0;
	return 0;
}

/* The profile, encoded under the lock; the caller sends it. */
struct encoded {
	char *buf;
	size_t len;
	int code;
	char msg[256];
};

static void build_profile(struct server *srv, const struct profile_req *q, struct kpp_view *old,
			  struct encoded *out)
{
	struct kpp_session *s = &srv->s;
	struct kpp_write_opts o = { .allocs = q->allocs };
	uint32_t pid32 = q->pid;
	struct kpp_view v;
	int err;

	kpp_session__learn_maps(s);
	err = kpp_view__take(&v, s->agg, q->type, q->pid ? pid_is : NULL, &pid32);
	if (!err && old) {
		err = kpp_view__subtract(&v, old);
		o.duration_ns = q->seconds * 1000000000LL;
		if (err)
			kpp_view__release(&v);
	}
	if (err) {
		out->code = 500;
		snprintf(out->msg, sizeof(out->msg), "out of memory");
		return;
	}
	if (q->debug) {
		FILE *f = open_memstream(&out->buf, &out->len);

		if (f) {
			kpp_profile__write_legacy(f, &v, s->agg, s->sym);
			fclose(f);
			out->code = 200;
		}
	} else {
		char comment[2048];

		kpp_output__comment(s, comment, sizeof(comment));
		o.comment = comment;
		if (kpp_profile__encode_gz(&v, s->agg, s->sym, &o, (uint8_t **)&out->buf,
					   &out->len) == 0)
			out->code = 200;
	}
	if (out->code != 200) {
		out->code = 500;
		snprintf(out->msg, sizeof(out->msg), "cannot encode the profile");
	}
	kpp_view__release(&v);
}

static void serve_profile(struct server *srv, int fd, const struct kpp_http_req *r,
			  struct profile_req *q)
{
	struct kpp_session *s = &srv->s;
	struct encoded out = { 0 };
	struct kpp_view old;
	uint32_t pid32 = q->pid;
	char hdr[128];
	bool known = true;
	int err = 0;

	if (parse_profile(fd, r, q))
		return;
	pthread_mutex_lock(&srv->lock);
	if (q->pid)
		known = kpp_agg__proc(s->agg, q->pid) != NULL;
	pthread_mutex_unlock(&srv->lock);
	if (known && (q->gc || (q->seconds && q->type == KPP_HEAP)))
		settle(srv);
	if (known && q->seconds) {
		pthread_mutex_lock(&srv->lock);
		err = kpp_view__take(&old, s->agg, q->type, q->pid ? pid_is : NULL, &pid32);
		pthread_mutex_unlock(&srv->lock);
	}
	if (!known) {
		snprintf(out.msg, sizeof(out.msg),
			 "no profile for pid %llu: it has not run with libkpprof.so since this server started",
			 (unsigned long long)q->pid);
		kpp_http__error(fd, r, 404, out.msg);
		return;
	}
	if (err) {
		kpp_http__error(fd, r, 500, "out of memory");
		return;
	}
	/* The window: no lock held, other requests go on. */
	if (q->seconds && !wait_window(q->seconds)) {
		kpp_view__release(&old);
		kpp_http__error(fd, r, 503, "the server is shutting down");
		return;
	}
	if (q->seconds && q->type == KPP_HEAP)
		settle(srv);
	pthread_mutex_lock(&srv->lock);
	build_profile(srv, q, q->seconds ? &old : NULL, &out);
	pthread_mutex_unlock(&srv->lock);
	if (q->seconds)
		kpp_view__release(&old);
	if (out.code != 200) {
		kpp_http__error(fd, r, out.code, out.msg);
	} else if (q->debug) {
		kpp_http__reply(fd, r, 200, "text/plain; charset=utf-8", NULL, out.buf, out.len);
	} else {
		snprintf(hdr, sizeof(hdr), "Content-Disposition: attachment; filename=\"%s%s\"\r\n",
			 q->name, q->seconds ? "-delta" : "");
		kpp_http__reply(fd, r, 200, "application/octet-stream", hdr, out.buf, out.len);
	}
	free(out.buf);
}

/* ------------------------------------------------------------ symbol */

struct name_ctx {
	struct kpp_symbolizer *sym;
	uint64_t pc;
	char name[512];
	bool found, conflict;
};

static int name_in(void *c, struct kpp_proc *p)
{
	struct name_ctx *ctx = c;
	const struct kpp_map *m = kpp_proc__map_for(p, ctx->pc);
	struct kpp_sym s;
	const char *name;

	if (!m || kpp_symbolizer__lookup_pid(ctx->sym, p->pid, m, ctx->pc, &s))
		return 0;
	/* Innermost, as Go's FuncForPC names an inlined call. */
	name = s.nr_frames ? s.frames[0].name : s.name;
	if (!name)
		return 0;
	if (!ctx->found) {
		snprintf(ctx->name, sizeof(ctx->name), "%s", name);
		ctx->found = true;
	} else if (strcmp(ctx->name, name)) {
		ctx->conflict = true;
		return 1;
	}
	return 0;
}

/* symbol_words - resolve each "0xADDR" of @text (separated by '+' or '&'). */
static void symbol_words(struct server *srv, const char *text, uint32_t pid, FILE *f)
{
	while (*text) {
		size_t n = strcspn(text, "+&");
		char word[64], *end;

		if (n < sizeof(word) && !memchr(text, '=', n)) {
			memcpy(word, text, n);
			word[n] = '\0';
			uint64_t pc = strtoull(word, &end, 0);
			struct name_ctx ctx = { .sym = srv->s.sym, .pc = pc };

			if (pc && !*end) {
				if (pid) {
					struct kpp_proc *p = kpp_agg__proc(srv->s.agg, pid);

					if (p)
						name_in(&ctx, p);
				} else {
					kpp_agg__for_each_proc(srv->s.agg, name_in, &ctx);
				}
				if (ctx.found && !ctx.conflict)
					fprintf(f, "%#llx %s\n", (unsigned long long)pc, ctx.name);
			}
		}
		text += n;
		if (*text)
			text++;
	}
}

static void serve_symbol(struct server *srv, int fd, const struct kpp_http_req *r)
{
	char val[32], *buf = NULL, *end;
	uint64_t pid = 0;
	size_t len = 0;
	FILE *f;

	if (kpp_http__query(r->query, "pid", val, sizeof(val))) {
		pid = strtoull(val, &end, 10);
		if (*end || !pid || pid > UINT32_MAX) {
			kpp_http__error(fd, r, 400, "pid must be a process id");
			return;
		}
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		kpp_http__error(fd, r, 500, "out of memory");
		return;
	}
	/* pprof only asks whether this is 0 (no symbols) or not. */
	fputs("num_symbols: 1\n", f);
	pthread_mutex_lock(&srv->lock);
	kpp_session__learn_maps(&srv->s);
	symbol_words(srv, r->body ? r->body : r->query, pid, f);
	pthread_mutex_unlock(&srv->lock);
	fclose(f);
	kpp_http__reply(fd, r, 200, "text/plain; charset=utf-8", NULL, buf, len);
	free(buf);
}

/* ------------------------------------------------------------ requests */

static void handle(struct server *srv, int fd, const struct kpp_http_req *r)
{
	static const struct { const char *name; int type; bool allocs; } profiles[] = {
		{ "heap", KPP_HEAP, false }, { "allocs", KPP_HEAP, true },
		{ "mutex", KPP_MUTEX, false }, { "block", KPP_BLOCK, false },
	};
	const char *path = r->path;

	if (!strcmp(path, "/debug/pprof/") || !strcmp(path, "/debug/pprof")) {
		static const char index[] =
			"kpprof profiles:\n/debug/pprof/heap\n/debug/pprof/allocs\n"
			"/debug/pprof/mutex\n/debug/pprof/block\n/debug/pprof/symbol\n"
			"parameters: pid=N seconds=S gc=1 debug=1\n";

		kpp_http__reply(fd, r, 200, "text/plain; charset=utf-8", NULL, index,
				sizeof(index) - 1);
		return;
	}
	if (!strcmp(path, "/debug/pprof/symbol")) {
		if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && strcmp(r->method, "POST"))
			kpp_http__error(fd, r, 405, "GET, HEAD or POST only");
		else
			serve_symbol(srv, fd, r);
		return;
	}
	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
		kpp_http__error(fd, r, 405, "GET or HEAD only");
		return;
	}
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strncmp(path, "/debug/pprof/", 13) && !strcmp(path + 13, profiles[i].name)) {
			struct profile_req q = {
				.type = profiles[i].type, .allocs = profiles[i].allocs,
				.name = profiles[i].name,
			};

			serve_profile(srv, fd, r, &q);
			return;
		}
	kpp_http__error(fd, r, 404, "unknown profile: try /debug/pprof/");
}

struct conn {
	struct server *srv;
	int fd;
};

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct kpp_http_req r;
	bool admitted = false;
	int code = kpp_http__read(c->fd, &r);

	if (code) {
		kpp_http__error(c->fd, NULL, code, code == 413 ? "request body too large"
							      : "malformed request");
	} else {
		pthread_mutex_lock(&srv->count_lock);
		if (srv->busy < SERVE_MAX_REQUESTS) {
			srv->busy++;
			admitted = true;
		}
		pthread_mutex_unlock(&srv->count_lock);
		if (admitted)
			handle(srv, c->fd, &r);
		else
			kpp_http__error(c->fd, &r, 503,
					"too many requests at once (" STR(SERVE_MAX_REQUESTS) "); retry later");
	}
	kpp_http__release(&r);
	close(c->fd);
	pthread_mutex_lock(&srv->count_lock);
	srv->busy -= admitted;
	srv->threads--;
	pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->count_lock);
	free(c);
	return NULL;
}

/* start_conn - a thread for @fd (signals blocked: they go to the main thread). */
static void start_conn(struct server *srv, int fd)
{
	struct conn *c = malloc(sizeof(*c));
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	bool ok = false;

	pthread_mutex_lock(&srv->count_lock);
	if (c && srv->threads < SERVE_MAX_THREADS) {
		srv->threads++;
		ok = true;
	}
	pthread_mutex_unlock(&srv->count_lock);
	if (!ok) {
		free(c);
		close(fd);
		return;
	}
	c->srv = srv;
	c->fd = fd;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, conn_thread, c)) {
		pthread_mutex_lock(&srv->count_lock);
		srv->threads--;
		pthread_mutex_unlock(&srv->count_lock);
		close(fd);
		free(c);
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* wait_idle - every connection thread done; false after @seconds. */
static bool wait_idle(struct server *srv, int seconds)
{
	struct timespec until;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&srv->count_lock);
	while (srv->threads &&
	       pthread_cond_timedwait(&srv->idle, &srv->count_lock, &until) != ETIMEDOUT)
		;
	idle = srv->threads == 0;
	pthread_mutex_unlock(&srv->count_lock);
	return idle;
}

int serve_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct server srv = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.count_lock = PTHREAD_MUTEX_INITIALIZER,
		.idle = PTHREAD_COND_INITIALIZER,
	};
	struct kpp_session *s = &srv.s;
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	const char *listen_addr = "127.0.0.1:6061";
	struct kpprof_config old_cfg;
	struct kpp_rates r = { 0 };
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
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen)) {
		fprintf(stderr, "kpprof serve: cannot listen on %s: %s\n", listen_addr, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	if (kpp_session__open(s, NULL)) {
		close(lfd);
		return 1;
	}
	if (kpp_rates__set(s->fd, "serve", &r, &old_cfg))
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
			{ .fd = kpp_ring__epoll_fd(s->ring), .events = POLLIN },
		};

		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0)
				start_conn(&srv, cfd);
		}
		pthread_mutex_lock(&srv.lock);
		kpp_ring__consume(s->ring);
		kpp_session__reap(s);
		kpp_agg__expire(s->agg);
		pthread_mutex_unlock(&srv.lock);
	}
	ret = 0;
	close(lfd);
	lfd = -1;
	/* Requests in a window see `stop` and answer within a settle's time. */
	if (!wait_idle(&srv, 15)) {
		fprintf(stderr, "kpprof serve: requests still running at exit\n");
		return 1;
	}
	if (r.set)
		kpprof_dev__set_config(s->fd, &old_cfg);
out:
	kpp_session__close(s);
	if (lfd >= 0)
		close(lfd);
	return ret;
}
