// SPDX-License-Identifier: GPL-2.0
/* peer.c - a connection's client: its uid and whether it sees every process (peer.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "peer.h"

#define CAP_SYS_ADMIN_BIT	21
#define CAP_PERFMON_BIT		38

bool kpp_peer__is_loopback(const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = addr;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = addr;
		const uint8_t *b = in6->sin6_addr.s6_addr;

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127;
	}
	return false;
}

/*
 * same_user_ns - @pid lives in the collector's user namespace.  Anyone may
 * make a namespace of their own (unshare -Ur) and hold every capability in
 * it; status's CapEff shows those, which rule nothing outside it.
 */
static bool same_user_ns(pid_t pid)
{
	struct stat mine, theirs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return !stat("/proc/self/ns/user", &mine) && !stat(path, &theirs) &&
	       mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

bool kpp_peer__caps_allow_all(pid_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned long long cap = 0;
	unsigned int r, e;
	bool uid_ok = false, cap_ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		/*
		 * The effective uid must still be the one SO_PEERCRED gave:
		 * a pid reused since connect() by another user's privileged
		 * process does not lend its capabilities.
		 */
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2)
			uid_ok = e == uid;
		else if (sscanf(line, "CapEff: %llx", &cap) == 1)
			cap_ok = (cap >> CAP_PERFMON_BIT & 1) || (cap >> CAP_SYS_ADMIN_BIT & 1);
	}
	fclose(f);
	return uid_ok && cap_ok && same_user_ns(pid);
}

int kpp_peer__tcp_owner(const void *src, const void *dst, uid_t *uid)
{
	const struct sockaddr *s = src;
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
		.nlh = {
			.nlmsg_len = sizeof(q),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST,
			.nlmsg_seq = 1,
		},
		.req = {
			.sdiag_family = s->sa_family,
			.sdiag_protocol = IPPROTO_TCP,
			.idiag_states = ~0u,
			.id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
		},
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	union {
		struct nlmsghdr h;
		char b[8192];
	} ans;
	int fd, err = -ENOENT;
	ssize_t n;

	if (s->sa_family == AF_INET) {
		const struct sockaddr_in *a = src, *b = dst;

		q.req.id.idiag_sport = a->sin_port;
		q.req.id.idiag_dport = b->sin_port;
		memcpy(q.req.id.idiag_src, &a->sin_addr, 4);
		memcpy(q.req.id.idiag_dst, &b->sin_addr, 4);
	} else if (s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = src, *b = dst;

		q.req.id.idiag_sport = a->sin6_port;
		q.req.id.idiag_dport = b->sin6_port;
		memcpy(q.req.id.idiag_src, &a->sin6_addr, 16);
		memcpy(q.req.id.idiag_dst, &b->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&nl, sizeof(nl)) != sizeof(q)) {
		err = -errno;
		goto out;
	}
	n = recv(fd, &ans, sizeof(ans), 0);
	if (n < 0) {
		err = -errno;
		goto out;
	}
	/* An exact lookup answers one message: the socket, or an error. */
	for (struct nlmsghdr *h = &ans.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			err = e->error ? e->error : -ENOENT;
			break;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			/*
			 * The very socket asked for, not a listener or a
			 * neighbour, and still open: a client gone since
			 * (closed: orphaned, or a TIME_WAIT sock, which
			 * sock_diag reports as uid 0) is no one's.
			 */
			if (m->idiag_inode == 0)
				err = -ENOTCONN;
			else if (m->id.idiag_sport == q.req.id.idiag_sport &&
			    m->id.idiag_dport == q.req.id.idiag_dport &&
			    !memcmp(m->id.idiag_src, q.req.id.idiag_src, sizeof(m->id.idiag_src)) &&
			    !memcmp(m->id.idiag_dst, q.req.id.idiag_dst, sizeof(m->id.idiag_dst))) {
				*uid = m->idiag_uid;
				err = 0;
			}
			break;
		}
	}
out:
	close(fd);
	return err;
}

void kpp_peer__identify(int fd, bool remote_all, struct kpp_peer *p)
{
	struct sockaddr_storage me, them;
	socklen_t ml = sizeof(me), tl = sizeof(them);

	memset(p, 0, sizeof(*p));
	if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&them, &tl)) {
		snprintf(p->key, sizeof(p->key), "?");
		return;
	}
	if (them.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&them)->sin_addr, p->addr, sizeof(p->addr));
	else if (them.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&them)->sin6_addr, p->addr, sizeof(p->addr));
	if (me.ss_family == AF_UNIX) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);

		p->kind = KPP_PEER_UNIX;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
			p->known = true;
			p->uid = cr.uid;
			p->all = cr.uid == 0 || kpp_peer__caps_allow_all(cr.pid, cr.uid);
		}
	} else if (kpp_peer__is_loopback(&them)) {
		uid_t uid;

		p->kind = KPP_PEER_LOOPBACK;
		/* Not found: not a socket of this network namespace; serve nothing. */
		if (kpp_peer__tcp_owner(&them, &me, &uid) == 0) {
			p->known = true;
			p->uid = uid;
			p->all = uid == 0;
		}
	} else {
		p->kind = KPP_PEER_REMOTE;
		p->all = remote_all;
		snprintf(p->key, sizeof(p->key), "ip:%s", p->addr[0] ? p->addr : "?");
		return;
	}
	if (p->known)
		snprintf(p->key, sizeof(p->key), "uid:%u", (unsigned int)p->uid);
	else
		snprintf(p->key, sizeof(p->key), "unknown");
}

void kpp_peer__tls_verified(struct kpp_peer *p)
{
	p->kind = KPP_PEER_TLS;
	p->known = true;
	p->all = true;
}
