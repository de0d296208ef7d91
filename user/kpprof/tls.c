// SPDX-License-Identifier: GPL-2.0
/* tls.c - mutual TLS for `kpprof serve` with OpenSSL's libssl (tls.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls.h"

struct kpp_tls {
	SSL_CTX *ctx;
	char *names[KPP_TLS_MAX_NAMES];
	size_t nr_names;
};

struct kpp_tls_conn {
	SSL *ssl;
	int fd;
	bool broken;		/* a fatal error: no close_notify (OpenSSL forbids it) */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * ssl_error - the reason of OpenSSL's first queued error, the one nearest
 * the cause ("no start line", "key values mismatch"), the queue cleared.
 */
static const char *ssl_error(char *buf, size_t len)
{
	unsigned long e = ERR_peek_error();
	const char *why = e ? ERR_reason_error_string(e) : NULL;

	if (why)
		snprintf(buf, len, "%s", why);
	else if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "unknown error");
	ERR_clear_error();
	return buf;
}

/* An encrypted key would make OpenSSL prompt on the terminal: refuse it. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf; (void)size; (void)rwflag; (void)u;
	return -1;
}

/*
 * open_file - @path for option @opt, a regular file, or say why not.
 * Opened without waiting (a FIFO would block until someone writes to it)
 * and checked on the descriptor that is then read, so nothing can be
 * swapped in between; *@st is what was opened.
 */
static FILE *open_file(const char *opt, const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "kpprof serve: %s %s: %s\n", opt, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		fprintf(stderr, "kpprof serve: %s %s: not a regular file\n", opt, path);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		fprintf(stderr, "kpprof serve: %s %s: %s\n", opt, path, strerror(errno));
		close(fd);
	}
	return f;
}

/*
 * load_key - the private key, from a regular file nobody but its owner and
 * group may touch (checked on the descriptor read, so no file swapped in
 * between): as ssh, a key others can read is refused, not used.  It must
 * match the certificate when that loaded (@have_cert).
 */
static int load_key(SSL_CTX *ctx, const char *path, bool have_cert)
{
	struct stat st;
	FILE *f = open_file("--tls-key", path, &st);
	EVP_PKEY *key;
	char err[256];
	int ret = -1;

	if (!f)
		return -1;
	if (st.st_mode & S_IRWXO) {
		fprintf(stderr,
			"kpprof serve: --tls-key %s: permissions %04o are too open: the private key is world-%s; "
			"it must not be accessible by other users (chmod o-rwx %s)\n",
			path, (unsigned int)(st.st_mode & 07777),
			st.st_mode & S_IROTH ? "readable" : "accessible", path);
	} else if (!(key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL))) {
		fprintf(stderr, "kpprof serve: --tls-key %s: not a PEM private key (or encrypted): %s\n",
			path, ssl_error(err, sizeof(err)));
	} else {
		/* The key is checked against the certificate already loaded, here or below. */
		if (SSL_CTX_use_PrivateKey(ctx, key) != 1)
			fprintf(stderr, "kpprof serve: --tls-key %s%s: %s\n", path,
				have_cert ? " does not match the certificate of --tls-cert" : "",
				ssl_error(err, sizeof(err)));
		else if (have_cert && SSL_CTX_check_private_key(ctx) != 1)
			fprintf(stderr, "kpprof serve: --tls-key %s does not match the certificate of --tls-cert: %s\n",
				path, ssl_error(err, sizeof(err)));
		else
			ret = 0;
		EVP_PKEY_free(key);
	}
	fclose(f);
	return ret;
}

/* load_cert - the server's certificate and its chain (PEM, leaf first). */
static int load_cert(SSL_CTX *ctx, const char *path)
{
	struct stat st;
	FILE *f = open_file("--tls-cert", path, &st);
	char err[256];
	X509 *leaf;

	if (!f)
		return -1;
	fclose(f);
	/* Public: read again by path (a chain), after the checks above. */
	if (SSL_CTX_use_certificate_chain_file(ctx, path) != 1) {
		fprintf(stderr, "kpprof serve: --tls-cert %s: not a PEM certificate: %s\n", path,
			ssl_error(err, sizeof(err)));
		return -1;
	}
	leaf = SSL_CTX_get0_certificate(ctx);
	if (leaf && X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0)
		fprintf(stderr, "kpprof serve: warning: --tls-cert %s has expired: clients will refuse it\n",
			path);
	return 0;
}

/*
 * load_ca - the CAs client certificates must chain to: at least one
 * certificate, each a CA (basicConstraints CA:TRUE, or an old v1 root), so
 * that a leaf given by mistake is not silently made a trust anchor.  The
 * file decides who sees every process, so (as ssh's StrictModes for
 * authorized_keys) it must be owned by root or the server's user and be
 * writable by nobody else: else a local user could add a CA of their own.
 * Each certificate is checked and trusted from the one descriptor read,
 * never the path again (no file swapped in between).
 */
static int load_ca(SSL_CTX *ctx, const char *path)
{
	struct stat st;
	FILE *f = open_file("--tls-client-ca", path, &st);
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	size_t n = 0;
	char err[256];
	int ret = -1;
	X509 *x;

	if (!f)
		return -1;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		fprintf(stderr,
			"kpprof serve: --tls-client-ca %s: owned by uid %u: it decides who sees every process, "
			"so it must be owned by root (or the server's user)\n", path, (unsigned int)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr,
			"kpprof serve: --tls-client-ca %s: permissions %04o let others write it: anyone who can "
			"add a CA to it sees every process (chmod go-w %s)\n",
			path, (unsigned int)(st.st_mode & 07777), path);
		goto out;
	}
	while ((x = PEM_read_X509(f, NULL, NULL, NULL))) {
		int ca = X509_check_ca(x);

		if (ca != 1 && ca != 3 && ca != 5) {
			char subject[256];

			X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof(subject));
			fprintf(stderr, "kpprof serve: --tls-client-ca %s: %s is not a CA certificate\n",
				path, subject);
			X509_free(x);
			goto out;
		}
		/* Trusted, and told to clients, which pick the certificate these CAs issued. */
		if (!X509_STORE_add_cert(store, x) || !SSL_CTX_add_client_CA(ctx, x)) {
			fprintf(stderr, "kpprof serve: --tls-client-ca %s: %s\n", path,
				ssl_error(err, sizeof(err)));
			X509_free(x);
			goto out;
		}
		X509_free(x);
		n++;
	}
	ERR_clear_error();	/* the end of the file reads as an error */
	if (!n)
		fprintf(stderr, "kpprof serve: --tls-client-ca %s: no PEM certificate in it\n", path);
	else
		ret = 0;
out:
	fclose(f);
	return ret;
}

struct kpp_tls *kpp_tls__new(const struct kpp_tls_opts *o)
{
	static const unsigned char sid[] = "kpprof";
	struct kpp_tls *t = calloc(1, sizeof(*t));
	int bad = 0;

	if (!t || !(t->ctx = SSL_CTX_new(TLS_server_method()))) {
		fprintf(stderr, "kpprof serve: cannot set up TLS: out of memory\n");
		free(t);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	/*
	 * TLS 1.2 only with forward-secret AEAD suites (1.3 has nothing else).
	 * No renegotiation (a client could make us redo handshakes), no
	 * resumption (each connection's certificate is verified afresh, and
	 * one request per connection gains nothing from it).
	 */
	SSL_CTX_set_cipher_list(t->ctx, "ECDHE+AESGCM:ECDHE+CHACHA20");
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
			    SSL_OP_NO_TICKET);
	SSL_CTX_set_num_tickets(t->ctx, 0);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_session_id_context(t->ctx, sid, sizeof(sid) - 1);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* A client certificate is required, and checked as one (purpose sslclient). */
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_verify_depth(t->ctx, 8);
	SSL_CTX_set_purpose(t->ctx, X509_PURPOSE_SSL_CLIENT);

	/* Every file is checked, so one run names every problem. */
	bad |= load_cert(t->ctx, o->cert) != 0;
	bad |= load_key(t->ctx, o->key, !bad) != 0;
	bad |= load_ca(t->ctx, o->client_ca) != 0;
	for (size_t i = 0; i < o->nr_names; i++)
		if (!*o->names[i]) {
			/* It would match no certificate: every client refused, silently. */
			fprintf(stderr, "kpprof serve: --tls-client-name '': an empty name matches no certificate\n");
			bad = 1;
		}
	for (size_t i = 0; i < o->nr_names && !bad; i++)
		if (!(t->names[t->nr_names++] = strdup(o->names[i])))
			bad = 1;
	if (bad) {
		kpp_tls__free(t);
		return NULL;
	}
	return t;
}

void kpp_tls__free(struct kpp_tls *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_names; i++)
		free(t->names[i]);
	SSL_CTX_free(t->ctx);
	free(t);
}

/* wait_io - @fd ready for what OpenSSL asked (@err): 0, -1 error, -2 deadline passed. */
static int wait_io(int fd, int err, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN };

	for (;;) {
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -2;
		n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		/* POLLHUP/POLLERR too: the next call into OpenSSL finds out. */
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/* handshake_failed - why SSL_accept failed with @err, into @why. */
static enum kpp_tls_fail handshake_failed(SSL *ssl, int err, char *why, size_t len)
{
	long v = SSL_get_verify_result(ssl);
	unsigned long e = ERR_peek_last_error();
	char text[256];

	if (v != X509_V_OK) {
		snprintf(why, len, "client certificate not accepted: %s", X509_verify_cert_error_string(v));
		ERR_clear_error();
		return KPP_TLS_CERT;
	}
	if (ERR_GET_LIB(e) == ERR_LIB_SSL) {
		switch (ERR_GET_REASON(e)) {
		case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
			snprintf(why, len, "no client certificate");
			ERR_clear_error();
			return KPP_TLS_CERT;
		case SSL_R_HTTP_REQUEST:
		case SSL_R_HTTPS_PROXY_REQUEST:
			snprintf(why, len, "plain HTTP sent to the TLS port");
			ERR_clear_error();
			return KPP_TLS_PROTO;
		}
	}
	if (e)
		snprintf(why, len, "handshake failed: %s", ssl_error(text, sizeof(text)));
	else if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN)
		snprintf(why, len, "the client closed the connection during the handshake");
	else
		snprintf(why, len, "handshake failed (SSL error %d)", err);
	return KPP_TLS_PROTO;
}

/* name_ok - the verified certificate names one of --tls-client-name (or none was given). */
static bool name_ok(const struct kpp_tls *t, SSL *ssl, char *why, size_t len)
{
	X509 *peer = SSL_get0_peer_certificate(ssl);
	char subject[256] = "?";

	if (!t->nr_names)
		return true;
	for (size_t i = 0; peer && i < t->nr_names; i++)
		if (X509_check_host(peer, t->names[i], 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) == 1)
			return true;
	if (peer)
		X509_NAME_oneline(X509_get_subject_name(peer), subject, sizeof(subject));
	snprintf(why, len, "client certificate %s names none of --tls-client-name", subject);
	return false;
}

enum kpp_tls_fail kpp_tls__accept(struct kpp_tls *t, int fd, int64_t deadline,
				  struct kpp_tls_conn **out, char *why, size_t len)
{
	struct kpp_tls_conn *c = calloc(1, sizeof(*c));
	enum kpp_tls_fail fail = KPP_TLS_OK;
	int flags = fcntl(fd, F_GETFL);

	*out = NULL;
	snprintf(why, len, "out of memory");
	if (!c || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) ||
	    !(c->ssl = SSL_new(t->ctx)) || SSL_set_fd(c->ssl, fd) != 1) {
		if (c)
			SSL_free(c->ssl);
		free(c);
		ERR_clear_error();
		return KPP_TLS_NOMEM;
	}
	c->fd = fd;
	for (;;) {
		int ret, err, w;

		ERR_clear_error();
		ret = SSL_accept(c->ssl);
		if (ret == 1)
			break;
		err = SSL_get_error(c->ssl, ret);
		if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
			fail = handshake_failed(c->ssl, err, why, len);
			c->broken = true;
			break;
		}
		w = wait_io(fd, err, deadline);
		if (w) {
			snprintf(why, len, w == -2 ? "no TLS handshake within the request deadline"
						   : "poll: %s", strerror(errno));
			fail = w == -2 ? KPP_TLS_SLOW : KPP_TLS_PROTO;
			c->broken = true;	/* a half-done handshake: nothing to close */
			break;
		}
	}
	/* Belt and braces: whatever the verify mode, no verified certificate, no entry. */
	if (!fail && (!SSL_get0_peer_certificate(c->ssl) ||
		      SSL_get_verify_result(c->ssl) != X509_V_OK)) {
		snprintf(why, len, "no verified client certificate");
		fail = KPP_TLS_CERT;
	}
	if (!fail && !name_ok(t, c->ssl, why, len))
		fail = KPP_TLS_NAME;
	if (fail) {
		kpp_tls__close(c);
		return fail;
	}
	*out = c;
	return KPP_TLS_OK;
}

ssize_t kpp_tls__read(struct kpp_tls_conn *c, void *buf, size_t len, int64_t deadline)
{
	while (!c->broken) {
		size_t got = 0;
		int err, w;

		ERR_clear_error();
		if (SSL_read_ex(c->ssl, buf, len, &got) == 1)
			return (ssize_t)got;
		err = SSL_get_error(c->ssl, 0);
		if (err == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
			break;
		w = wait_io(c->fd, err, deadline);
		if (w)
			return w;
	}
	c->broken = true;
	ERR_clear_error();
	return -1;
}

ssize_t kpp_tls__write(struct kpp_tls_conn *c, const void *buf, size_t len, int64_t deadline)
{
	while (!c->broken) {
		size_t put = 0;
		int err, w;

		ERR_clear_error();
		if (SSL_write_ex(c->ssl, buf, len, &put) == 1)
			return (ssize_t)put;
		err = SSL_get_error(c->ssl, 0);
		if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
			break;
		w = wait_io(c->fd, err, deadline);
		if (w)
			return w;
	}
	c->broken = true;
	ERR_clear_error();
	return -1;
}

void kpp_tls__close(struct kpp_tls_conn *c)
{
	if (!c)
		return;
	/* One try: a client that does not take it loses nothing it asked for. */
	if (!c->broken)
		SSL_shutdown(c->ssl);
	ERR_clear_error();
	SSL_free(c->ssl);
	free(c);
}

#define LOG_PEERS	64
#define LOG_EVERY_MS	60000
#define LOG_LINES	10

void kpp_tls__log_refusal(const char *peer, const char *why)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct { bool used; char peer[64]; int64_t at; } seen[LOG_PEERS];
	static int64_t window;
	static unsigned int lines, unlogged;
	int64_t now = now_ms();
	size_t slot = 0;
	bool found = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < LOG_PEERS; i++) {
		if (seen[i].used && !strcmp(seen[i].peer, peer)) {
			slot = i;
			found = true;
			break;
		}
		/* Else the free slot, or the one logged longest ago. */
		if (!seen[slot].used)
			continue;
		if (!seen[i].used || seen[i].at < seen[slot].at)
			slot = i;
	}
	if (found && now - seen[slot].at < LOG_EVERY_MS)
		goto out;
	if (now - window >= LOG_EVERY_MS || !lines) {
		window = now;
		lines = 0;
	}
	if (lines >= LOG_LINES) {
		unlogged++;
		goto out;
	}
	lines++;
	seen[slot].used = true;
	seen[slot].at = now;
	snprintf(seen[slot].peer, sizeof(seen[slot].peer), "%s", peer);
	fprintf(stderr,
		"kpprof serve: TLS client %s refused: %s (its next refusals are counted on /debug/pprof/, "
		"logged again after a minute)\n", peer, why);
	if (unlogged) {
		fprintf(stderr, "kpprof serve: %u more TLS refusals not logged (at most %d lines a minute)\n",
			unlogged, LOG_LINES);
		unlogged = 0;
	}
out:
	pthread_mutex_unlock(&lock);
}
