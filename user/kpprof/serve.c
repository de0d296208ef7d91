// SPDX-License-Identifier: GPL-2.0
/*
 * serve.c - `kpprof serve`: Go's /debug/pprof endpoints for every process,
 * so `go tool pprof http://127.0.0.1:PORT/debug/pprof/heap` works.
 *
 *   /debug/pprof/{heap,allocs,mutex,block}
 *       ?pid=N      one process (default: all; every sample has pid/comm labels)
 *       ?gc=1       end the cycle first, so the profile is up to date
 *       ?seconds=S  a delta profile over the next S seconds (1..604800, 7 days)
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
 * Who sees what (README "Threat model"): each connection's client is
 * identified (peer.c: SO_PEERCRED on a Unix socket, the client socket's
 * owner by sock_diag on loopback TCP) and sees only the processes access.c
 * allows it, in profiles, pid lists, mappings and /symbol alike; a pid it
 * may not see is answered exactly as a pid never seen.  A non-loopback
 * --listen needs mutual TLS (tls:HOST:PORT, tls.c: a client whose
 * certificate --tls-client-ca issued sees every process) or
 * --insecure-remote, which serves every process to anyone who reaches the
 * port.  The Host header is checked (DNS rebinding).
 *
 * Threads: the main thread accepts and drains the ring; each connection
 * gets its own thread, so a ?seconds=30 waits beside other scrapes, not in
 * front of them.  The session (ring, aggregation, symbolizer) is not
 * thread-safe: whoever touches it holds srv.lock, and nobody holds it
 * while waiting, for a delta window or for a cycle to end (settle).
 *
 * Limits (slow or abandoning clients): the whole request (after the TLS
 * handshake, in the same time) must arrive within KPP_HTTP_READ_MS and the whole reply be taken within KPP_HTTP_WRITE_MS; a client has at most SERVE_PEER_CONNS connections at
 * once (per uid locally, per address remotely), more are closed at once;
 * connections on a tls: listener still in their handshake take at most
 * SERVE_MAX_HANDSHAKES of the SERVE_MAX_THREADS threads, more are closed;
 * deltas and plain requests have separate slots (SERVE_MAX_DELTAS and
 * SERVE_MAX_REQUESTS), so waiting deltas never starve scrapes; a client
 * that does not see every process by right takes a share of each, and
 * all such clients together leave a reserve for those that do
 * (serve_slots.h), since a request holds its slot while it waits (a slow
 * reader until its reply is taken); a delta whose client hung up ends at
 * once.  Every refusal is counted (the index page, every profile's
 * comment).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "dev.h"
#include "http.h"
#include "output.h"
#include "peer.h"
#include "profile_write.h"
#include "rates.h"
#include "serve_slots.h"
#include "session.h"
#include "symbolz.h"
#include "tls.h"
#include "verbs.h"

/* The longest ?seconds= (Go has no cap but the server's write timeout). */
#define SERVE_MAX_SECONDS	(7 * 86400)
#define SERVE_MAX_LISTEN	4
#define SERVE_MAX_NAMES		8
#define STR_(x) #x
#define STR(x) STR_(x)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* What was refused, for the index page and every profile's comment. */
struct serve_counts {
	atomic_ullong peer_conns;	/* closed: SERVE_PEER_CONNS */
	atomic_ullong threads;		/* closed: SERVE_MAX_THREADS */
	atomic_ullong busy;		/* 503: SERVE_MAX_REQUESTS */
	atomic_ullong peer_busy;	/* 503: SERVE_PEER_REQUESTS */
	atomic_ullong deltas;		/* 503: SERVE_MAX_DELTAS / SERVE_PEER_DELTAS */
	atomic_ullong slow;		/* 408: request not in within KPP_HTTP_READ_MS */
	atomic_ullong host;		/* 403: Host header (DNS rebinding) */
	atomic_ullong unknown_peer;	/* 403: the client's uid could not be learnt */
	atomic_ullong abandoned;	/* deltas whose client hung up */
	atomic_ullong symbol_cut;	/* /symbol addresses past KPP_SYMBOLZ_BUDGET_MS */
	/* tls: listeners, connections closed without a request (tls.h) */
	atomic_ullong tls_cert;		/* no client certificate, or not verified */
	atomic_ullong tls_proto;	/* not TLS, a failed handshake, the client left */
	atomic_ullong tls_slow;		/* handshake not done by the request deadline */
	atomic_ullong tls_name;		/* verified, but names no --tls-client-name */
	atomic_ullong tls_busy;		/* closed: SERVE_MAX_HANDSHAKES */
};

struct listener {
	int fd;
	bool unix_socket;
	bool tls;			/* tls:HOST:PORT: mutual TLS (srv.tls) */
	char path[108];			/* unix: the socket file, removed at exit */
};

struct server {
	struct kpp_session s;
	struct kpp_access *access;	/* under lock */
	pthread_mutex_t lock;		/* the session, access */
	pthread_mutex_t count_lock;	/* slots */
	pthread_cond_t idle;		/* slots.threads dropped */
	struct serve_slots slots;
	struct serve_counts n;
	bool insecure_remote;
	struct kpp_tls *tls;		/* the tls: listeners' certificates (read at start) */
	bool any_ip;			/* a wildcard listen address: any IP literal is us */
	const char *names[SERVE_MAX_NAMES];	/* Host values allowed beyond loopback's */
	size_t nr_names;
};

/* The state each connection thread works on. */
struct conn {
	struct server *srv;
	struct kpp_http_conn io;	/* the socket, and its TLS session once handshaken */
	bool unix_socket;
	bool tls;			/* from a tls: listener: no request before the handshake */
	bool handshaking;		/* holds one of SERVE_MAX_HANDSHAKES (count_lock) */
	struct kpp_peer peer;
	struct serve_peer *slot;
};

static void serve_usage(FILE *f)
{
	fprintf(f,
		"Usage: kpprof serve [--listen [HOST]:PORT|unix:PATH|tls:[HOST]:PORT]...\n"
		"                    [--tls-cert FILE --tls-key FILE --tls-client-ca FILE]\n"
		"                    [--tls-client-name NAME]... [--insecure-remote]\n"
		"                    [--allow-host NAME]... [--mem-rate BYTES]\n"
		"                    [--block-rate NS] [--mutex-fraction N]\n"
		"Serves /debug/pprof/{heap,allocs,mutex,block} (?pid= ?seconds= ?gc=1\n"
		"?debug=1) and /debug/pprof/symbol.  Default 127.0.0.1:6061; an empty\n"
		"HOST means 127.0.0.1.  Each client sees only the processes its uid may\n"
		"ptrace-read (root and CAP_PERFMON: all).  A non-loopback HOST needs\n"
		"--insecure-remote: everyone who reaches the port sees every process.\n"
		"tls:[HOST]:PORT: HTTPS with mutual TLS (1.2 or 1.3): --tls-cert and\n"
		"--tls-key (not accessible by other users) are the server's, and every\n"
		"client must present a certificate issued by --tls-client-ca; such a\n"
		"client sees every process.  --tls-client-name NAME: the client's\n"
		"certificate must also name one of these (subjectAltName DNS, or CN).\n"
		"The files are read once, at start (a new certificate needs a restart).\n"
		"--allow-host NAME: a Host header value to accept besides loopback's.\n");
}

/* parse_listen - "[IPV4]:PORT" into @sa; @host gets the host part as given. */
static int parse_listen(const char *arg, struct sockaddr_in *sa, char *host, size_t hlen)
{
	const char *colon = strrchr(arg, ':');
	uint64_t port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - arg) >= hlen)
		return -1;
	memcpy(host, arg, colon - arg);
	host[colon - arg] = '\0';
	if (!*host || !strcmp(host, "localhost"))
		snprintf(host, hlen, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -1;
	if (kpp_parse_u64("serve", "--listen port", colon + 1, &port) || port > 65535)
		return -1;
	sa->sin_port = htons(port);
	return 0;
}

/* pid= : that pid, and still the process the client was found to see. */
struct one_pid {
	uint32_t pid;
	const struct kpp_pidset *set;
};

static bool pid_is(void *ctx, uint32_t pid)
{
	const struct one_pid *o = ctx;

	return pid == o->pid && kpp_pidset__has((void *)o->set, pid);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * wait_window - sleep @seconds (the main thread drains the ring); false if
 * stopped or if the client hung up (its slot is freed at once, counted).
 */
static bool wait_window(struct server *srv, int fd, uint64_t seconds)
{
	/* From now to the millisecond: whole-second fields would cut it short. */
	int64_t end = now_ms() + (int64_t)seconds * 1000;

	do {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };

		if (poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			atomic_fetch_add(&srv->n.abandoned, 1);
			return false;
		}
	} while (!stop && now_ms() < end);
	return !stop;
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
		/*
		 * The ioctl wrote the cycle record before it returned: read at
		 * once, nap only while it is not there yet.  Ask again after a
		 * second: the cycle record may have been dropped.
		 */
		for (int i = 0; i < 50 && !done && now_ms() < deadline; i++) {
			if (i)
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
static int parse_profile(struct kpp_http_conn *io, const struct kpp_http_req *r, struct profile_req *q)
{
	char val[64], *end;

	if (kpp_http__query(r->query, "pid", val, sizeof(val))) {
		q->pid = strtoull(val, &end, 10);
		if (*end || !*val || !q->pid || q->pid > UINT32_MAX) {
			kpp_http__error(io, r, 400, "pid must be a process id");
			return -1;
		}
	}
	if (kpp_http__query(r->query, "debug", val, sizeof(val)))
		q->debug = strtol(val, &end, 10) != 0 && !*end;
	if (kpp_http__query(r->query, "seconds", val, sizeof(val))) {
		q->seconds = strtoull(val, &end, 10);
		/* Go answers 400 to seconds=0 (not a positive integer). */
		if (*end || !*val || *val == '-' || q->seconds == 0 ||
		    q->seconds > SERVE_MAX_SECONDS) {
			kpp_http__error(io, r, 400,
					"invalid value for \"seconds\" - must be a positive integer (at most "
					STR(SERVE_MAX_SECONDS) ")");
			return -1;
		}
		/* Go: a delta has no legacy text form. */
		if (q->debug) {
			kpp_http__error(io, r, 400, "seconds and debug params are incompatible");
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

/* One process's seccomp note, for a client that may see it. */
struct quiet_ctx {
	const struct kpp_pidset *set;
	char *buf;
	size_t len, used;
};

static int note_quiet(void *c, struct kpp_proc *p)
{
	struct quiet_ctx *q = c;
	int n;

	if (!p->seccomp_stopped || q->used >= q->len || !kpp_pidset__has((void *)q->set, p->pid))
		return 0;
	n = snprintf(q->buf + q->used, q->len - q->used,
		     "; pid %u: seccomp filter installed, heap/lock sampling stopped (%llu events not recorded)",
		     p->pid, (unsigned long long)p->seccomp_unsent);
	if (n > 0)
		q->used += (size_t)n;
	return 0;
}

/* serve_counts_text - the refusal counters, as one line. */
static void serve_counts_text(struct server *srv, char *buf, size_t len)
{
	struct serve_counts *n = &srv->n;

	snprintf(buf, len,
		 "http refused: %llu (connections per client), %llu (connections in all), "
		 "%llu (busy), %llu (busy per client), %llu (deltas), %llu (request too slow), %llu (Host), "
		 "%llu (client unknown); deltas abandoned by their client: %llu; "
		 "symbol addresses not named (time budget): %llu",
		 (unsigned long long)n->peer_conns, (unsigned long long)n->threads,
		 (unsigned long long)n->busy, (unsigned long long)n->peer_busy,
		 (unsigned long long)n->deltas,
		 (unsigned long long)n->slow, (unsigned long long)n->host,
		 (unsigned long long)n->unknown_peer, (unsigned long long)n->abandoned,
		 (unsigned long long)n->symbol_cut);
	if (srv->tls) {
		size_t used = strlen(buf);

		snprintf(buf + used, len - used,
			 "; tls refused: %llu (client certificate missing or not trusted), "
			 "%llu (not TLS or handshake failed), %llu (handshake too slow), "
			 "%llu (client name not allowed), %llu (handshakes at once)",
			 (unsigned long long)n->tls_cert, (unsigned long long)n->tls_proto,
			 (unsigned long long)n->tls_slow, (unsigned long long)n->tls_name,
			 (unsigned long long)n->tls_busy);
	}
}

/*
 * comment - the profile's comment for this client: the losses, the seccomp
 * notes of the processes it may see (kpp_output__comment names them all),
 * the HTTP refusals.
 */
static void comment(struct server *srv, const struct kpp_pidset *set, char *buf, size_t len)
{
	struct quiet_ctx q = { .set = set, .buf = buf, .len = len };

	kpp_output__losses(&srv->s, buf, len);
	q.used = strlen(buf);
	kpp_agg__for_each_proc(srv->s.agg, note_quiet, &q);
	q.used = strlen(buf);
	if (q.used + 2 < len) {
		strcpy(buf + q.used, "; ");
		serve_counts_text(srv, buf + q.used + 2, len - q.used - 2);
	}
}

static void build_profile(struct server *srv, const struct profile_req *q, struct kpp_view *old,
			  const struct kpp_pidset *set, struct encoded *out)
{
	struct kpp_session *s = &srv->s;
	struct kpp_write_opts o = { .allocs = q->allocs };
	struct one_pid one = { q->pid, set };
	struct kpp_view v;
	int err;

	kpp_session__learn_maps(s);
	/* A pid= was checked against @set already; its process, not a reused pid. */
	err = q->pid ? kpp_view__take(&v, s->agg, q->type, pid_is, &one)
		     : kpp_view__take(&v, s->agg, q->type, kpp_pidset__has, (void *)set);
	if (!err && old) {
		err = kpp_view__subtract(&v, old);
		/*
		 * As Go's serveDeltaProfile: the measured window (settles
		 * included), starting when the first snapshot was taken.
		 */
		o.duration_ns = v.time_ns - old->time_ns;
		if (err)
			kpp_view__release(&v);
	}
	if (err) {
		out->code = 500;
		snprintf(out->msg, sizeof(out->msg), "out of memory");
		return;
	}
	/*
	 * coll-state (M8): symbolize and encode a copy without srv.lock, so
	 * the ring is drained meanwhile; the symbolizer has its own lock.
	 */
	char text[3072];
	struct kpp_agg *copy;

	comment(srv, set, text, sizeof(text));
	o.comment = text;
	copy = kpp_view__detach(&v, s->agg);
	pthread_mutex_unlock(&srv->lock);
	kpp_session__sym_lock(s);
	if (!copy) {
		/* out of memory: reported below */
	} else if (q->debug) {
		FILE *f = open_memstream(&out->buf, &out->len);

		if (f) {
			kpp_profile__write_legacy(f, &v, copy, s->sym);
			fclose(f);
			out->code = 200;
		}
	} else {
		if (kpp_profile__encode_gz(&v, copy, s->sym, &o, (uint8_t **)&out->buf,
					   &out->len) == 0)
			out->code = 200;
	}
	kpp_session__sym_unlock(s);
	kpp_agg__free(copy);
	pthread_mutex_lock(&srv->lock);
	if (out->code != 200) {
		out->code = 500;
		snprintf(out->msg, sizeof(out->msg), "cannot encode the profile");
	}
	kpp_view__release(&v);
}

/*
 * visible - under the lock: the pids @c may see into @set, and whether pid
 * @pid (0: none asked) is one of them.  -ENOMEM on failure.
 */
static int visible(struct conn *c, uint64_t pid, struct kpp_pidset *set, bool *known)
{
	struct server *srv = c->srv;
	int err = kpp_pidset__take(set, srv->access, &c->peer, srv->s.agg);

	*known = true;
	if (!err && pid) {
		const struct kpp_proc *p = kpp_agg__proc(srv->s.agg, pid);

		*known = p && kpp_pidset__has(set, pid);
	}
	return err;
}

static void serve_profile(struct conn *c, const struct kpp_http_req *r, struct profile_req *q)
{
	struct server *srv = c->srv;
	struct kpp_session *s = &srv->s;
	struct encoded out = { 0 };
	struct kpp_pidset set;
	struct kpp_view old;
	struct one_pid one = { q->pid, &set };
	char hdr[128];
	bool known = true, settled = false;
	struct kpp_http_conn *io = &c->io;
	int err;

	pthread_mutex_lock(&srv->lock);
	err = visible(c, q->pid, &set, &known);
	pthread_mutex_unlock(&srv->lock);
	/*
	 * A pid not seen yet may have records on their way: in its producer
	 * ring (drained every few ms), or in ours below the wake-up
	 * watermark (read at the next wake-up, up to a cycle later).  A
	 * process asked about just after it ran must not be answered
	 * "never ran": read them (settle) and look again.  Every pid the
	 * client cannot see takes this path, so another user's process
	 * still answers as a pid never seen, in the same time.
	 */
	if (!err && !known) {
		kpp_pidset__release(&set);
		settle(srv);
		settled = true;
		pthread_mutex_lock(&srv->lock);
		err = visible(c, q->pid, &set, &known);
		pthread_mutex_unlock(&srv->lock);
	}
	if (err) {
		kpp_http__error(io, r, 500, "out of memory");
		return;
	}
	/* Another user's process is answered as a pid never seen. */
	if (!known) {
		kpp_pidset__release(&set);
		snprintf(out.msg, sizeof(out.msg),
			 "no profile for pid %llu: it has not run with libkpprof.so since this server started",
			 (unsigned long long)q->pid);
		kpp_http__error(io, r, 404, out.msg);
		return;
	}
	if (!settled && (q->gc || (q->seconds && q->type == KPP_HEAP)))
		settle(srv);
	if (q->seconds) {
		pthread_mutex_lock(&srv->lock);
		err = q->pid ? kpp_view__take(&old, s->agg, q->type, pid_is, &one)
			     : kpp_view__take(&old, s->agg, q->type, kpp_pidset__has, &set);
		pthread_mutex_unlock(&srv->lock);
	}
	if (err) {
		kpp_pidset__release(&set);
		kpp_http__error(io, r, 500, "out of memory");
		return;
	}
	/* The window: no lock held, other requests go on. */
	if (q->seconds && !wait_window(srv, io->fd, q->seconds)) {
		kpp_view__release(&old);
		kpp_pidset__release(&set);
		if (stop)
			kpp_http__error(io, r, 503, "the server is shutting down");
		return;
	}
	if (q->seconds && q->type == KPP_HEAP)
		settle(srv);
	pthread_mutex_lock(&srv->lock);
	/* The processes of the window's end: those that came since, the client's too. */
	if (q->seconds && !q->pid) {
		kpp_pidset__release(&set);
		err = visible(c, 0, &set, &known);
	}
	if (err)
		snprintf(out.msg, sizeof(out.msg), "out of memory"), out.code = 500;
	else
		build_profile(srv, q, q->seconds ? &old : NULL, &set, &out);
	pthread_mutex_unlock(&srv->lock);
	kpp_pidset__release(&set);
	if (q->seconds)
		kpp_view__release(&old);
	if (out.code != 200) {
		kpp_http__error(io, r, out.code, out.msg);
	} else if (q->debug) {
		kpp_http__reply(io, r, 200, "text/plain; charset=utf-8", NULL, out.buf, out.len);
	} else {
		snprintf(hdr, sizeof(hdr), "Content-Disposition: attachment; filename=\"%s%s\"\r\n",
			 q->name, q->seconds ? "-delta" : "");
		kpp_http__reply(io, r, 200, "application/octet-stream", hdr, out.buf, out.len);
	}
	free(out.buf);
}

/* ------------------------------------------------------------ symbol */

static void serve_symbol(struct conn *c, const struct kpp_http_req *r)
{
	struct server *srv = c->srv;
	char val[32], *buf = NULL, *end;
	struct kpp_agg *copy = NULL;
	struct kpp_pidset set;
	uint64_t pid = 0;
	size_t len = 0;
	bool known;
	struct kpp_http_conn *io = &c->io;
	int err;
	FILE *f;

	if (kpp_http__query(r->query, "pid", val, sizeof(val))) {
		pid = strtoull(val, &end, 10);
		if (*end || !pid || pid > UINT32_MAX) {
			kpp_http__error(io, r, 400, "pid must be a process id");
			return;
		}
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		kpp_http__error(io, r, 500, "out of memory");
		return;
	}
	/* pprof only asks whether this is 0 (no symbols) or not. */
	fputs("num_symbols: 1\n", f);
	/* coll-state (M8): scan a copy of the mappings without srv.lock. */
	pthread_mutex_lock(&srv->lock);
	kpp_session__learn_maps(&srv->s);
	/* A process the client may not see names nothing, as an unknown pid. */
	err = visible(c, pid, &set, &known);
	copy = err ? NULL : kpp_agg__copy_procs(srv->s.agg, pid);
	pthread_mutex_unlock(&srv->lock);
	if (copy) {
		uint64_t cut = kpp_symbolz__answer(&srv->s, copy, &set, r->body ? r->body : r->query,
						   pid, f, KPP_SYMBOLZ_BUDGET_MS);

		if (cut)
			atomic_fetch_add(&srv->n.symbol_cut, cut);
		kpp_agg__free(copy);
	}
	kpp_pidset__release(&set);
	fclose(f);
	if (!copy)
		kpp_http__error(io, r, 500, "out of memory");
	else
		kpp_http__reply(io, r, 200, "text/plain; charset=utf-8", NULL, buf, len);
	free(buf);
}

/* ------------------------------------------------------------ requests */

static const struct { const char *name; int type; bool allocs; } profiles[] = {
	{ "heap", KPP_HEAP, false }, { "allocs", KPP_HEAP, true },
	{ "mutex", KPP_MUTEX, false }, { "block", KPP_BLOCK, false },
};

static int profile_index(const char *path)
{
	if (strncmp(path, "/debug/pprof/", 13))
		return -1;
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(path + 13, profiles[i].name))
			return i;
	return -1;
}

static void serve_index(struct conn *c, const struct kpp_http_req *r)
{
	static const char index[] =
		"kpprof profiles:\n/debug/pprof/heap\n/debug/pprof/allocs\n"
		"/debug/pprof/mutex\n/debug/pprof/block\n/debug/pprof/symbol\n"
		"parameters: pid=N seconds=S gc=1 debug=1\n";
	char text[2048], counts[1024];
	int n;

	serve_counts_text(c->srv, counts, sizeof(counts));
	n = snprintf(text, sizeof(text), "%s%s\n", index, counts);
	kpp_http__reply(&c->io, r, 200, "text/plain; charset=utf-8", NULL, text,
			n < (int)sizeof(text) ? (size_t)n : sizeof(text) - 1);
}

static void handle(struct conn *c, const struct kpp_http_req *r)
{
	const char *path = r->path;
	struct kpp_http_conn *io = &c->io;
	int i;

	if (!strcmp(path, "/debug/pprof/") || !strcmp(path, "/debug/pprof")) {
		serve_index(c, r);
		return;
	}
	if (!strcmp(path, "/debug/pprof/symbol")) {
		if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && strcmp(r->method, "POST"))
			kpp_http__error(io, r, 405, "GET, HEAD or POST only");
		else
			serve_symbol(c, r);
		return;
	}
	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
		kpp_http__error(io, r, 405, "GET or HEAD only");
		return;
	}
	i = profile_index(path);
	if (i >= 0) {
		struct profile_req q = {
			.type = profiles[i].type, .allocs = profiles[i].allocs,
			.name = profiles[i].name,
		};

		if (!parse_profile(io, r, &q))
			serve_profile(c, r, &q);
		return;
	}
	kpp_http__error(io, r, 404, "unknown profile: try /debug/pprof/");
}

/*
 * admit - a slot for @r: a delta (a profile with seconds=) one of
 * SERVE_MAX_DELTAS, any other request one of SERVE_MAX_REQUESTS, each
 * with a per-client share, a reserve for the clients that see every
 * process by right, and one request of its own for a local user with
 * none in progress (serve_slots.h).  Apart, so deltas waiting out their
 * windows never take a scrape's slot.  0, or the 503 message (counted).
 */
static const char *admit(struct conn *c, const struct kpp_http_req *r, bool *delta)
{
	struct server *srv = c->srv;
	enum serve_refusal why;
	char val[32];

	*delta = profile_index(r->path) >= 0 && kpp_http__query(r->query, "seconds", val, sizeof(val));
	pthread_mutex_lock(&srv->count_lock);
	why = serve_slots__admit(&srv->slots, c->slot, *delta,
				 kpp_peer__privileged(&c->peer) ? SERVE_CLIENT_PRIVILEGED :
				 kpp_peer__user(&c->peer) ? SERVE_CLIENT_USER : SERVE_CLIENT_ADDRESS);
	pthread_mutex_unlock(&srv->count_lock);
	switch (why) {
	case SERVE_OK:
		return NULL;
	case SERVE_BUSY: atomic_fetch_add(&srv->n.busy, 1); break;
	case SERVE_PEER_BUSY: atomic_fetch_add(&srv->n.peer_busy, 1); break;
	default: atomic_fetch_add(&srv->n.deltas, 1); break;
	}
	return serve_slots__why(why);
}

/*
 * tls_handshake - on a tls: listener, the handshake, by @deadline (the
 * request's: a client that never finishes it is dropped then and frees its
 * slot).  0: verified, the client sees every process; else counted, logged
 * (rate-limited) and closed without a word.
 */
static int tls_handshake(struct conn *c, int64_t deadline)
{
	struct server *srv = c->srv;
	char why[512];
	enum kpp_tls_fail f = kpp_tls__accept(srv->tls, c->io.fd, deadline, &c->io.tls, why,
					      sizeof(why));

	/* Verified or not, no longer a handshake in progress. */
	pthread_mutex_lock(&srv->count_lock);
	serve_slots__handshake_done(&srv->slots);
	c->handshaking = false;
	pthread_mutex_unlock(&srv->count_lock);
	switch (f) {
	case KPP_TLS_OK:
		kpp_peer__tls_verified(&c->peer);
		return 0;
	case KPP_TLS_CERT: atomic_fetch_add(&srv->n.tls_cert, 1); break;
	case KPP_TLS_SLOW: atomic_fetch_add(&srv->n.tls_slow, 1); break;
	case KPP_TLS_NAME: atomic_fetch_add(&srv->n.tls_name, 1); break;
	case KPP_TLS_PROTO:
	case KPP_TLS_NOMEM: atomic_fetch_add(&srv->n.tls_proto, 1); break;
	}
	kpp_tls__log_refusal(c->peer.addr[0] ? c->peer.addr : c->peer.key, why);
	return -1;
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct kpp_http_req r = { .query = "" };
	bool admitted = false, delta = false;
	const char *why;
	int64_t deadline = now_ms() + KPP_HTTP_READ_MS;
	int code = -1;

	if (!c->tls || !tls_handshake(c, deadline))
		code = kpp_http__read_within(&c->io, &r, (int)(deadline - now_ms()));
	if (code < 0) {
		/* The handshake failed: nothing to answer. */
	} else if (code) {
		if (code == 408)
			atomic_fetch_add(&srv->n.slow, 1);
		kpp_http__error(&c->io, NULL, code, code == 413 ? "request body too large" :
					     code == 408 ? "request not received in time" :
					     "malformed request");
	} else if (!kpp_http__host_ok(&r, srv->names, srv->nr_names, srv->any_ip)) {
		/*
		 * A browser sent here by a name pointing at us (DNS rebinding);
		 * on the Unix socket too, which a TCP bridge (socat) may feed.
		 */
		atomic_fetch_add(&srv->n.host, 1);
		kpp_http__error(&c->io, &r, 403, "Host header names another server; use localhost or 127.0.0.1");
	} else if (!c->peer.all && !c->peer.known) {
		atomic_fetch_add(&srv->n.unknown_peer, 1);
		kpp_http__error(&c->io, &r, 403, c->peer.kind == KPP_PEER_REMOTE ?
				"remote clients are not served without TLS (see --listen tls: and --insecure-remote)" :
				"cannot tell which user this connection is from");
	} else if ((why = admit(c, &r, &delta))) {
		kpp_http__busy(&c->io, &r, why);
	} else {
		admitted = true;
		handle(c, &r);
	}
	kpp_http__release(&r);
	kpp_tls__close(c->io.tls);
	close(c->io.fd);
	pthread_mutex_lock(&srv->count_lock);
	if (admitted)
		serve_slots__finish(&srv->slots, c->slot, delta);
	serve_slots__disconnect(&srv->slots, c->slot, c->handshaking);
	pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->count_lock);
	free(c);
	return NULL;
}

/*
 * start_conn - a thread for @fd (signals blocked: they go to the main
 * thread), unless its client has SERVE_PEER_CONNS already or the server
 * SERVE_MAX_THREADS: then closed at once, counted.
 */
static void start_conn(struct server *srv, int fd, const struct listener *l)
{
	struct conn *c = calloc(1, sizeof(*c));
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	enum serve_refusal why;
	bool ok = false;

	if (!c) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->io.fd = fd;
	c->unix_socket = l->unix_socket;
	c->tls = l->tls;
	/* On a tls: listener only the certificate opens anything (tls_handshake). */
	kpp_peer__identify(fd, srv->insecure_remote && !l->tls, &c->peer);
	pthread_mutex_lock(&srv->count_lock);
	why = serve_slots__connect(&srv->slots, c->peer.key, l->tls, &c->slot);
	pthread_mutex_unlock(&srv->count_lock);
	switch (why) {
	case SERVE_OK:
		c->handshaking = l->tls;
		ok = true;
		break;
	case SERVE_NO_THREAD: atomic_fetch_add(&srv->n.threads, 1); break;
	case SERVE_NO_HANDSHAKE: atomic_fetch_add(&srv->n.tls_busy, 1); break;
	default: atomic_fetch_add(&srv->n.peer_conns, 1); break;
	}
	if (!ok) {
		free(c);
		close(fd);
		return;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, conn_thread, c)) {
		pthread_mutex_lock(&srv->count_lock);
		serve_slots__disconnect(&srv->slots, c->slot, c->handshaking);
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
	while (srv->slots.threads &&
	       pthread_cond_timedwait(&srv->idle, &srv->count_lock, &until) != ETIMEDOUT)
		;
	idle = srv->slots.threads == 0;
	pthread_mutex_unlock(&srv->count_lock);
	return idle;
}

/* on_record - the session tells us which uid wrote each process's records. */
static void on_record(struct kpp_session *s, const struct kpp_rec *r)
{
	struct server *srv = (struct server *)((char *)s - offsetof(struct server, s));
	const struct kpp_proc *p;

	if (!r->tgid)
		return;
	p = kpp_agg__proc(s->agg, r->tgid);
	if (p)
		kpp_access__note(srv->access, r->tgid, p->serial, r->uid);
}

/* listen_unix - a Unix socket at @path, mode 0666: who connects is told apart by SO_PEERCRED. */
static int listen_unix(const char *path, struct listener *l)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	/* A socket left by an earlier server; never anything else. */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0666) || listen(fd, 64)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	l->fd = fd;
	l->unix_socket = true;
	snprintf(l->path, sizeof(l->path), "%s", path);
	return 0;
}

/*
 * listen_tcp - @arg is [IPV4]:PORT, after "tls:" when @l->tls; a
 * non-loopback address needs TLS or --insecure-remote.
 */
static int listen_tcp(struct server *srv, const char *arg, struct listener *l, char *host,
		      size_t hlen)
{
	const char *spec = l->tls ? arg + 4 : arg;
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	char addr[INET_ADDRSTRLEN];
	int fd, one = 1;

	if (parse_listen(spec, &sa, host, hlen)) {
		fprintf(stderr, "kpprof serve: --listen %s: expected [IPV4]:PORT, tls:[IPV4]:PORT or unix:PATH, e.g. 127.0.0.1:6061\n",
			arg);
		return -1;
	}
	if (!l->tls && !kpp_peer__is_loopback(&sa) && !srv->insecure_remote) {
		fprintf(stderr,
			"kpprof serve: --listen %s is not a loopback address: everyone who reaches it would see\n"
			"every process's profiles.  Listen with mutual TLS (--listen tls:%s with --tls-cert,\n"
			"--tls-key and --tls-client-ca), add --insecure-remote to mean that exposure, or listen\n"
			"on loopback or a Unix socket.\n", arg, arg);
		return -1;
	}
	if (sa.sin_addr.s_addr == htonl(INADDR_ANY))
		srv->any_ip = true;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen)) {
		fprintf(stderr, "kpprof serve: cannot listen on %s: %s\n", arg, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	l->fd = fd;
	inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof(addr));
	printf("kpprof: serving %s://%s:%u/debug/pprof/%s\n", l->tls ? "https" : "http", addr,
	       ntohs(sa.sin_port), l->tls ? " (client certificates required)" : "");
	return 0;
}

/*
 * probe_sock_diag - can we learn who owns a loopback client's socket?  The
 * kernel answers "no such socket" also when it has no TCP diag support
 * (tcp_diag not loaded and not loadable), which would refuse every client:
 * ask about our own listener first.  0, or 1 after saying why not.
 */
static int probe_sock_diag(int lfd)
{
	struct sockaddr_in me, none = { .sin_family = AF_INET };
	socklen_t len = sizeof(me);
	uid_t uid;
	int err;

	if (getsockname(lfd, (struct sockaddr *)&me, &len))
		return 0;
	err = kpp_peer__tcp_owner(&me, &none, &uid);
	if (!err)
		return 0;
	fprintf(stderr,
		"kpprof serve: cannot tell loopback clients' users apart: NETLINK_SOCK_DIAG: %s\n"
		"  (load the tcp_diag module: modprobe tcp_diag; or listen on unix:PATH only)\n",
		strerror(-err));
	return 1;
}

int serve_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "insecure-remote", no_argument, NULL, 'I' },
		{ "allow-host", required_argument, NULL, 'A' },
		{ "tls-cert", required_argument, NULL, 'C' },
		{ "tls-key", required_argument, NULL, 'K' },
		{ "tls-client-ca", required_argument, NULL, 'Q' },
		{ "tls-client-name", required_argument, NULL, 'N' },
		KPP_RATE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct server srv = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.count_lock = PTHREAD_MUTEX_INITIALIZER,
		.idle = PTHREAD_COND_INITIALIZER,
	};
	static char hosts[SERVE_MAX_LISTEN][64];
	struct kpp_session *s = &srv.s;
	const char *listen_args[SERVE_MAX_LISTEN];
	struct listener ls[SERVE_MAX_LISTEN];
	size_t nl = 0, nargs = 0;
	struct kpprof_config old_cfg;
	struct kpp_rates r = { 0 };
	struct kpp_tls_opts tls = { 0 };
	bool want_tls = false;
	int opt, ret = 1;
	time_t last_prune = 0;

	while ((opt = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (nargs == SERVE_MAX_LISTEN) {
				fprintf(stderr, "kpprof serve: at most %d --listen\n", SERVE_MAX_LISTEN);
				return 1;
			}
			listen_args[nargs++] = optarg;
			break;
		case 'I': srv.insecure_remote = true; break;
		case 'A':
			if (srv.nr_names == SERVE_MAX_NAMES - SERVE_MAX_LISTEN) {
				fprintf(stderr, "kpprof serve: at most %d --allow-host\n",
					SERVE_MAX_NAMES - SERVE_MAX_LISTEN);
				return 1;
			}
			srv.names[srv.nr_names++] = optarg;
			break;
		case 'C': tls.cert = optarg; break;
		case 'K': tls.key = optarg; break;
		case 'Q': tls.client_ca = optarg; break;
		case 'N':
			if (tls.nr_names == KPP_TLS_MAX_NAMES) {
				fprintf(stderr, "kpprof serve: at most %d --tls-client-name\n",
					KPP_TLS_MAX_NAMES);
				return 1;
			}
			tls.names[tls.nr_names++] = optarg;
			break;
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
	if (!nargs)
		listen_args[nargs++] = "127.0.0.1:6061";
	for (size_t i = 0; i < nargs; i++)
		want_tls |= !strncmp(listen_args[i], "tls:", 4);
	if (want_tls && (!tls.cert || !tls.key || !tls.client_ca)) {
		fprintf(stderr, "kpprof serve: --listen tls: needs --tls-cert, --tls-key and --tls-client-ca\n");
		return 1;
	}
	if (!want_tls && (tls.cert || tls.key || tls.client_ca || tls.nr_names)) {
		fprintf(stderr, "kpprof serve: --tls-* options without a --listen tls:[HOST]:PORT\n");
		return 1;
	}
	/* Before anything listens: a bad file stops the server here. */
	if (want_tls && !(srv.tls = kpp_tls__new(&tls)))
		return 1;
	for (; nl < nargs; nl++) {
		struct listener *l = &ls[nl];

		memset(l, 0, sizeof(*l));
		if (!strncmp(listen_args[nl], "unix:", 5)) {
			if (listen_unix(listen_args[nl] + 5, l)) {
				fprintf(stderr, "kpprof serve: cannot listen on %s: %s\n", listen_args[nl],
					strerror(errno));
				goto out_listen;
			}
			printf("kpprof: serving %s (http://localhost/debug/pprof/)\n", listen_args[nl]);
		} else {
			l->tls = !strncmp(listen_args[nl], "tls:", 4);
			if (listen_tcp(&srv, listen_args[nl], l, hosts[nl], sizeof(hosts[nl])))
				goto out_listen;
			/* The listen host as given is a Host value clients use. */
			srv.names[srv.nr_names++] = hosts[nl];
		}
	}
	srv.access = kpp_access__new();
	if (!srv.access || kpp_session__open(s, NULL))
		goto out_listen;
	s->on_record = on_record;
	for (size_t i = 0; i < nl; i++)
		if (!ls[i].unix_socket && !ls[i].tls && probe_sock_diag(ls[i].fd))
			goto out;
	/* Requests symbolize without srv.lock, under the symbolizer's (session.h). */
	if (kpp_session__share_symbolizer(s)) {
		fprintf(stderr, "kpprof serve: out of memory\n");
		goto out;
	}
	if (kpp_rates__set(s->fd, "serve", &r, &old_cfg))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);

	while (!stop) {
		struct pollfd pfd[SERVE_MAX_LISTEN + 1];

		for (size_t i = 0; i < nl; i++)
			pfd[i] = (struct pollfd){ .fd = ls[i].fd, .events = POLLIN };
		pfd[nl] = (struct pollfd){ .fd = kpp_ring__epoll_fd(s->ring), .events = POLLIN };
		if (poll(pfd, nl + 1, 1000) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < nl; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			int cfd = accept4(ls[i].fd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0) {
				start_conn(&srv, cfd, &ls[i]);
			} else if (errno == EMFILE || errno == ENFILE) {
				/* Out of fds: the socket stays readable; do not spin on it. */
				struct timespec nap = { 0, 50 * 1000000L };

				atomic_fetch_add(&srv.n.threads, 1);
				nanosleep(&nap, NULL);
			}
		}
		pthread_mutex_lock(&srv.lock);
		kpp_ring__consume(s->ring);
		kpp_session__reap(s);
		kpp_agg__expire(s->agg);
		if (time(NULL) - last_prune >= 10) {
			kpp_access__prune(srv.access, s->agg);
			last_prune = time(NULL);
		}
		pthread_mutex_unlock(&srv.lock);
	}
	ret = 0;
	for (size_t i = 0; i < nl; i++) {
		close(ls[i].fd);
		if (ls[i].unix_socket)
			unlink(ls[i].path);
	}
	nl = 0;
	/* Requests in a window see `stop` and answer within a settle's time. */
	if (!wait_idle(&srv, 15)) {
		fprintf(stderr, "kpprof serve: requests still running at exit\n");
		return 1;
	}
	if (r.set)
		kpprof_dev__set_config(s->fd, &old_cfg);
out:
	kpp_session__close(s);
out_listen:
	for (size_t i = 0; i < nl; i++) {
		close(ls[i].fd);
		if (ls[i].unix_socket)
			unlink(ls[i].path);
	}
	kpp_access__free(srv.access);
	srv.access = NULL;
	kpp_tls__free(srv.tls);
	srv.tls = NULL;
	return ret;
}
