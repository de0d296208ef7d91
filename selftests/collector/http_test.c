// SPDX-License-Identifier: GPL-2.0
/*
 * http_test - serve's query values as Go's url.ParseQuery reads them:
 * %-decoded, '+' a space, '&' the only separator, a malformed escape
 * never a value; and one request read from a socket, POST body included.
 */
#include <kselftest_harness.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "peer.h"

TEST(query_values_decoded)
{
	const char *q = "pid=%31%32&debug=1&x=a+b%2Bc&bad=%zz&cut=%4&a%3Db=1&s=1;t=2";
	char v[64];

	EXPECT_STREQ("12", kpp_http__query(q, "pid", v, sizeof(v)));
	EXPECT_STREQ("1", kpp_http__query(q, "debug", v, sizeof(v)));
	EXPECT_STREQ("a b+c", kpp_http__query(q, "x", v, sizeof(v)));
	EXPECT_EQ(NULL, kpp_http__query(q, "bad", v, sizeof(v)));
	EXPECT_EQ(NULL, kpp_http__query(q, "cut", v, sizeof(v)));
	EXPECT_STREQ("1", kpp_http__query(q, "a=b", v, sizeof(v)));
	EXPECT_STREQ("1;t=2", kpp_http__query(q, "s", v, sizeof(v)));
	EXPECT_EQ(NULL, kpp_http__query(q, "t", v, sizeof(v)));
	EXPECT_EQ(NULL, kpp_http__query(q, "missing", v, sizeof(v)));
	/* Too long for the buffer: absent, never truncated. */
	EXPECT_EQ(NULL, kpp_http__query("pid=123456", "pid", v, 4));
}

TEST(request_read)
{
	static const char req[] = "POST /debug/pprof/symbol?pid=7 HTTP/1.1\r\n"
				  "Host: x\r\nContent-Length: 13\r\n\r\n0x1234+0x5678";
	struct kpp_http_req r;
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ((ssize_t)sizeof(req) - 1, write(sv[1], req, sizeof(req) - 1));
	ASSERT_EQ(0, kpp_http__read(&(struct kpp_http_conn){ .fd = sv[0] }, &r));
	EXPECT_STREQ("POST", r.method);
	EXPECT_STREQ("/debug/pprof/symbol", r.path);
	EXPECT_STREQ("pid=7", r.query);
	ASSERT_NE(NULL, r.body);
	EXPECT_STREQ("0x1234+0x5678", r.body);
	EXPECT_FALSE(r.head);
	kpp_http__release(&r);
	close(sv[0]);
	close(sv[1]);
}

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A slow-loris client: one byte every 100 ms, for 5 s, never the end of the head. */
static void *trickle(void *arg)
{
	int fd = *(int *)arg;

	for (int i = 0; i < 50; i++) {
		if (send(fd, "G", 1, MSG_NOSIGNAL) != 1)
			break;
		usleep(100 * 1000);
	}
	return NULL;
}

/* One deadline for the whole request: trickling bytes does not extend it. */
TEST(request_deadline_whole)
{
	struct kpp_http_req r;
	pthread_t t;
	int64_t t0, took;
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(0, pthread_create(&t, NULL, trickle, &sv[1]));
	t0 = ms_now();
	EXPECT_EQ(408, kpp_http__read_within(&(struct kpp_http_conn){ .fd = sv[0] }, &r, 1000));
	took = ms_now() - t0;
	EXPECT_LE(900, took);
	EXPECT_GE(2500, took) TH_LOG("the read took %lld ms for a 1000 ms deadline", (long long)took);
	kpp_http__release(&r);
	shutdown(sv[0], SHUT_RDWR);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
}

static int host_ok(const char *host, bool any_ip)
{
	static const char *const names[] = { "prof.example.net" };
	struct kpp_http_req r = { .has_host = host != NULL };

	if (host)
		snprintf(r.host, sizeof(r.host), "%s", host);
	return kpp_http__host_ok(&r, names, 1, any_ip);
}

/* DNS rebinding: only loopback names and addresses, and the configured names. */
TEST(host_header)
{
	EXPECT_TRUE(host_ok(NULL, false));
	EXPECT_TRUE(host_ok("localhost", false));
	EXPECT_TRUE(host_ok("LocalHost:6061", false));
	EXPECT_TRUE(host_ok("localhost.:6061", false));
	EXPECT_TRUE(host_ok("x.localhost:6061", false));
	EXPECT_TRUE(host_ok("127.0.0.1:6061", false));
	EXPECT_TRUE(host_ok("127.1.2.3", false));
	EXPECT_TRUE(host_ok("[::1]:6061", false));
	EXPECT_TRUE(host_ok("prof.example.net:6061", false));
	EXPECT_FALSE(host_ok("evil.example:6061", false));
	EXPECT_FALSE(host_ok("localhost.evil.example", false));
	EXPECT_FALSE(host_ok("127.0.0.1.evil.example", false));
	EXPECT_FALSE(host_ok("10.0.0.1:6061", false));
	EXPECT_FALSE(host_ok("[::2]:6061", false));
	EXPECT_FALSE(host_ok("localhost:61x", false));
	EXPECT_FALSE(host_ok("", false));
	/* Listening on a wildcard address: any address of ours, never a name. */
	EXPECT_TRUE(host_ok("10.0.0.1:6061", true));
	EXPECT_FALSE(host_ok("evil.example:6061", true));
}

/*
 * Listening on one non-loopback address (tls:10.0.0.5:6443, or with
 * --insecure-remote): a scraper given that address sends it as Host; it
 * is the listen host, so it is ours.  Other addresses are not.
 */
TEST(host_header_listen_address)
{
	static const char *const names[] = { "10.0.0.5" };
	struct kpp_http_req r = { .has_host = true };

	snprintf(r.host, sizeof(r.host), "10.0.0.5:6443");
	EXPECT_TRUE(kpp_http__host_ok(&r, names, 1, false));
	snprintf(r.host, sizeof(r.host), "10.0.0.6:6443");
	EXPECT_FALSE(kpp_http__host_ok(&r, names, 1, false));
}

/* A Host header is read from the head only, whatever its case and spaces. */
TEST(host_header_read)
{
	static const char req[] = "GET /debug/pprof/heap HTTP/1.1\r\nhOsT:   evil.example:80  \r\n\r\n";
	struct kpp_http_req r;
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ((ssize_t)sizeof(req) - 1, write(sv[1], req, sizeof(req) - 1));
	ASSERT_EQ(0, kpp_http__read(&(struct kpp_http_conn){ .fd = sv[0] }, &r));
	EXPECT_TRUE(r.has_host);
	EXPECT_STREQ("evil.example:80", r.host);
	EXPECT_FALSE(kpp_http__host_ok(&r, NULL, 0, false));
	kpp_http__release(&r);
	close(sv[0]);
	close(sv[1]);
}

/* sock_diag: the owner of the client end of a loopback connection is us. */
TEST(tcp_owner_of_loopback_client)
{
	struct sockaddr_in srv = { .sin_family = AF_INET }, cli, acc;
	socklen_t len = sizeof(srv);
	int l, c, a;
	uid_t uid = 12345;

	srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, bind(l, (struct sockaddr *)&srv, sizeof(srv)));
	ASSERT_EQ(0, listen(l, 1));
	ASSERT_EQ(0, getsockname(l, (struct sockaddr *)&srv, &len));
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&srv, sizeof(srv)));
	a = accept(l, NULL, NULL);
	ASSERT_LE(0, a);
	len = sizeof(cli);
	ASSERT_EQ(0, getpeername(a, (struct sockaddr *)&cli, &len));
	len = sizeof(acc);
	ASSERT_EQ(0, getsockname(a, (struct sockaddr *)&acc, &len));
	EXPECT_TRUE(kpp_peer__is_loopback(&cli));
	ASSERT_EQ(0, kpp_peer__tcp_owner(&cli, &acc, &uid));
	EXPECT_EQ(getuid(), uid);
	/* A tuple no socket has: not found, never someone else's uid. */
	cli.sin_port = htons(ntohs(cli.sin_port) ^ 1);
	EXPECT_EQ(-ENOENT, kpp_peer__tcp_owner(&cli, &acc, &uid));
	close(a);
	close(c);
	close(l);
}

/*
 * A process that is "root" only in a user namespace of its own (anyone may
 * make one: unshare -Ur) has every capability there, and /proc/PID/status
 * shows them; they are not CAP_PERFMON over the collector's processes.
 */
TEST(caps_in_own_user_namespace_not_all)
{
	int go[2], done[2];
	pid_t kid;
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		close(go[0]);
		close(done[1]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    unshare(CLONE_NEWUSER))
			_exit(1);
		if (write(go[1], "g", 1) != 1)
			_exit(1);
		(void)!read(done[0], &c, 1);
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	if (read(go[0], &c, 1) != 1) {
		waitpid(kid, NULL, 0);
		SKIP(return, "no unprivileged user namespaces here");
	}
	EXPECT_FALSE(kpp_peer__caps_allow_all(kid, 65534));
	close(done[1]);
	waitpid(kid, NULL, 0);
	close(go[0]);
	/* The control: our own capabilities, in the collector's namespace, do count. */
	if (getuid() == 0)
		EXPECT_TRUE(kpp_peer__caps_allow_all(getpid(), 0));
}

/*
 * A client that closed before its connection was identified: its end turns
 * into a TIME_WAIT sock, whose owner sock_diag reports as uid 0.  That is no
 * client of uid 0 (nor of anyone): never "root".
 */
TEST(tcp_owner_of_closed_client_never_root)
{
	struct sockaddr_in srv = { .sin_family = AF_INET }, cli, acc;
	socklen_t len = sizeof(srv);
	int l, c, a, err = 0;
	uid_t uid = 12345;

	if (getuid() != 0)
		SKIP(return, "needs root to own the client socket as another user");
	srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, bind(l, (struct sockaddr *)&srv, sizeof(srv)));
	ASSERT_EQ(0, listen(l, 1));
	ASSERT_EQ(0, getsockname(l, (struct sockaddr *)&srv, &len));
	/* A socket's owner is the fsuid that created it. */
	setfsuid(65534);
	c = socket(AF_INET, SOCK_STREAM, 0);
	setfsuid(0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&srv, sizeof(srv)));
	a = accept(l, NULL, NULL);
	ASSERT_LE(0, a);
	len = sizeof(cli);
	ASSERT_EQ(0, getpeername(a, (struct sockaddr *)&cli, &len));
	len = sizeof(acc);
	ASSERT_EQ(0, getsockname(a, (struct sockaddr *)&acc, &len));
	ASSERT_EQ(0, kpp_peer__tcp_owner(&cli, &acc, &uid));
	EXPECT_EQ(65534, uid);
	close(c);
	/* Until the client's end is no longer the open socket (bounded: 10 s). */
	for (int i = 0; i < 1000; i++) {
		uid = 12345;
		err = kpp_peer__tcp_owner(&cli, &acc, &uid);
		if (err || uid != 65534)
			break;
		usleep(10000);
	}
	EXPECT_FALSE(err == 0 && uid == 0) TH_LOG("a closed client's end identified as root");
	EXPECT_NE(0, err) TH_LOG("err %d uid %u", err, (unsigned int)uid);
	close(a);
	close(l);
}

struct slow_reply {
	int fd;
	size_t len;
	volatile bool done;
};

static void *reply_thread(void *arg)
{
	struct slow_reply *r = arg;
	char *body = calloc(1, r->len);

	kpp_http__reply(&(struct kpp_http_conn){ .fd = r->fd }, NULL, 200, "text/plain", NULL, body, r->len);
	free(body);
	r->done = true;
	return NULL;
}

/*
 * A client that reads a little now and then, never letting one write wait
 * its whole timeout, held its thread (and a request slot) for as long as it
 * liked.  The reply as a whole has a deadline, as Go's WriteTimeout.
 */
TEST(reply_deadline_whole)
{
	struct sockaddr_in srv = { .sin_family = AF_INET };
	socklen_t len = sizeof(srv);
	struct slow_reply r = { .len = 64 << 20 };
	int l, c, small = 4096;
	pthread_t t;
	char buf[4096];

	kpp_http_write_ms = 1000;
	srv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, bind(l, (struct sockaddr *)&srv, sizeof(srv)));
	ASSERT_EQ(0, listen(l, 1));
	ASSERT_EQ(0, getsockname(l, (struct sockaddr *)&srv, &len));
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, c);
	setsockopt(c, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&srv, sizeof(srv)));
	r.fd = accept(l, NULL, NULL);
	ASSERT_LE(0, r.fd);
	setsockopt(r.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	ASSERT_EQ(0, pthread_create(&t, NULL, reply_thread, &r));
	/* Trickle: 4 KiB every 50 ms, for at most 15 s (15x the deadline). */
	for (int i = 0; i < 300 && !r.done; i++) {
		(void)!read(c, buf, sizeof(buf));
		usleep(50000);
	}
	EXPECT_TRUE(r.done) TH_LOG("a trickling reader still held the reply after 15 s");
	close(c);		/* ends the writer either way */
	pthread_join(t, NULL);
	close(r.fd);
	close(l);
	kpp_http_write_ms = KPP_HTTP_WRITE_MS;
}

/* A refusal for want of a slot says when to come back, and pprof prints its text. */
TEST(busy_says_retry_after)
{
	struct kpp_http_req r = { .method = "GET" };
	char buf[1024];
	ssize_t n;
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	kpp_http__busy(&(struct kpp_http_conn){ .fd = sv[0] }, &r, "too many requests at once (16); retry later");
	close(sv[0]);
	n = read(sv[1], buf, sizeof(buf) - 1);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	EXPECT_EQ(0, strncmp(buf, "HTTP/1.0 503 Service Unavailable\r\n", 34)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "\r\nRetry-After: 1\r\n")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "\r\nX-Go-Pprof: 1\r\n")) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "\r\n\r\ntoo many requests at once (16); retry later\n")) TH_LOG("%s", buf);
	close(sv[1]);
}

TEST_HARNESS_MAIN
