// SPDX-License-Identifier: GPL-2.0
/*
 * http_test - serve's query values as Go's url.ParseQuery reads them:
 * %-decoded, '+' a space, '&' the only separator, a malformed escape
 * never a value; and one request read from a socket, POST body included.
 */
#include <kselftest_harness.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

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
	ASSERT_EQ(0, kpp_http__read(sv[0], &r));
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

TEST_HARNESS_MAIN
