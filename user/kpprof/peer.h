/* SPDX-License-Identifier: GPL-2.0 */
/*
 * peer.h - who is at the other end of one of `kpprof serve`'s connections,
 * and what that client may see (see README "Threat model").
 *
 * A local client is known by its uid: over a Unix socket from SO_PEERCRED,
 * over loopback TCP from the kernel's record of the client socket's owner
 * (NETLINK_SOCK_DIAG, the exact 4-tuple).  Root and holders of CAP_PERFMON
 * (or CAP_SYS_ADMIN, as perf) see every process; anyone else only the
 * processes it may ptrace-read (see access.h).  A remote client is known
 * by its address only, and is served only with --insecure-remote.  On a
 * tls: listener, a client whose certificate was verified (tls.h) sees every
 * process, whatever its address: the operator issued the certificate.
 */
#ifndef KPPROF_PEER_H
#define KPPROF_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum kpp_peer_kind {
	KPP_PEER_UNIX,		/* Unix socket: SO_PEERCRED */
	KPP_PEER_LOOPBACK,	/* TCP from a loopback address: sock_diag */
	KPP_PEER_REMOTE,	/* TCP from elsewhere */
	KPP_PEER_TLS,		/* a verified client certificate (tls: listener) */
};

struct kpp_peer {
	enum kpp_peer_kind kind;
	bool known;		/* uid is the client's */
	bool all;		/* root, CAP_PERFMON/CAP_SYS_ADMIN, --insecure-remote, TLS */
	uid_t uid;
	/* The per-peer limits' key: the uid for a local client, else the address. */
	char key[64];
	/* TCP: the client's address, for the log; else "". */
	char addr[48];		/* INET6_ADDRSTRLEN */
};

/*
 * kpp_peer__identify - fill @p for the connected socket @fd.  A local peer
 * whose uid cannot be learnt stays !known and sees nothing.  @remote_all:
 * --insecure-remote was given (a remote peer sees everything).
 */
void kpp_peer__identify(int fd, bool remote_all, struct kpp_peer *p);

/*
 * kpp_peer__privileged - @p sees every process by right: root or
 * CAP_PERFMON locally, a verified certificate; not a client of
 * --insecure-remote, which sees them only because the operator said so.
 */
static inline bool kpp_peer__privileged(const struct kpp_peer *p)
{
	return p->all && p->kind != KPP_PEER_REMOTE;
}

/* kpp_peer__user - @p is a local user the kernel names, without the privilege. */
static inline bool kpp_peer__user(const struct kpp_peer *p)
{
	return (p->kind == KPP_PEER_UNIX || p->kind == KPP_PEER_LOOPBACK) && p->known && !p->all;
}

/*
 * kpp_peer__tls_verified - @p presented a client certificate that
 * verified: it sees every process.  Its key (per-client limits) stays.
 */
void kpp_peer__tls_verified(struct kpp_peer *p);

/*
 * kpp_peer__tcp_owner - the uid owning the local TCP socket whose address
 * is @src (the client) and whose peer is @dst (us), both struct sockaddr_in
 * or sockaddr_in6; 0 and *uid, or a negative errno (-ENOENT: no such
 * socket here, i.e. not a local client).
 */
int kpp_peer__tcp_owner(const void *src, const void *dst, uid_t *uid);

/* kpp_peer__caps_allow_all - /proc/@pid/status says euid @uid holds CAP_PERFMON or CAP_SYS_ADMIN. */
bool kpp_peer__caps_allow_all(pid_t pid, uid_t uid);

/* kpp_peer__is_loopback - @sa (sockaddr_in/in6) is 127.0.0.0/8, ::1 or ::ffff:127.x. */
bool kpp_peer__is_loopback(const void *sa);

#endif
