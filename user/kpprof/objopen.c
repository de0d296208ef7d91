// SPDX-License-Identifier: GPL-2.0
/*
 * objopen.c - open files for a producer, never with more rights than the
 * producer has.  The collector runs as root; a MMAP record's path, and the
 * .gnu_debuglink name inside the producer's own ELF, are whatever an
 * unprivileged producer wrote.  The rules:
 *
 *  0. Only while the process under PID is still the producer's: all its
 *     uids the uid of its records, its gids one, dumpable (read_creds,
 *     kpp_pid_is_producers).  A reused pid, or the producer turned setuid or
 *     setgid by an exec, lends nothing.  A root producer's claims need no
 *     such check (a worker that dropped root has fewer rights, not more).
 *  1. /proc/PID/map_files/START-END: the very file mapped there (the
 *     kernel resolves it; the process could read it when it mapped it),
 *     whatever name the record gives it, relative or not.
 *  2. Else, while the process lives, an absolute PATH inside its root
 *     (/proc/PID/root, openat2 RESOLVE_IN_ROOT) opened in a helper thread
 *     whose file-system credentials are the process's own (fsuid, fsgid
 *     and supplementary groups from /proc/PID/status; setfsuid drops
 *     CAP_DAC_OVERRIDE/READ_SEARCH): only what the producer itself could
 *     open.  A relative path, or a process that is gone, opens nothing.
 *  3. When the process is gone or a zombie (its records are read late, as
 *     `kpprof record` does before it reaps its command), PATH as the
 *     collector sees it, only for a record with a build-id (the caller
 *     checks the file has it), opened with the kernel-stamped uid of the
 *     process's records as fsuid (fsgid nogroup, no supplementary
 *     groups): what that user could read.  pid 0 (tests, tools): the same
 *     path, with our own rights.
 *
 * Every open is O_NONBLOCK (a FIFO cannot hang us), only a regular file is
 * kept (S_ISREG checked before opening, against device side effects, and
 * on the fd, against a swap in between), and never one on a pseudo file
 * system (/proc, /sys, debugfs...: /proc/kcore is a "regular" 128 TiB file).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "objopen.h"
#include "proc.h"
#include "symbolize.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef EFIVARFS_MAGIC
#define EFIVARFS_MAGIC 0xde5e81e4
#endif

bool kpp_fd_on_pseudo_fs(int fd)
{
	struct statfs fs;

	if (fstatfs(fd, &fs))
		return true;
	switch ((unsigned long)fs.f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case BPF_FS_MAGIC:
	case EFIVARFS_MAGIC:
		return true;
	default:
		return false;
	}
}

int kpp_keep_regular(int fd)
{
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || kpp_fd_on_pseudo_fs(fd)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int open_regular(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return kpp_keep_regular(open(path, OPEN_FLAGS));
}

int kpp_openat2_regular(int dfd, const char *path, uint64_t resolve, bool nofollow)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
				.resolve = resolve };
	struct stat st;
	int fd;

	/* Look before opening: a device or FIFO is never opened at all. */
	fd = syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	close(fd);
	how.flags = OPEN_FLAGS | (nofollow ? O_NOFOLLOW : 0);
	return kpp_keep_regular(syscall(SYS_openat2, dfd, path, &how, sizeof(how)));
}

/* ------------------------------------------- the producer's credentials */

#define MAX_GROUPS 256

struct as_req {
	int rootfd;
	const char *path;
	bool nofollow;
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;
	int fd;
};

/*
 * The fs ids (4th field) and supplementary groups from /proc/PID/status,
 * only while the process is wholly @uid's, its records' uid: all four uids
 * @uid and all four gids one.  Else the pid is no longer the producer's
 * process (reused, by root maybe) or the producer exec'd a setuid or
 * setgid program (its real uid stays the producer's): neither lends its
 * rights to what the producer's records claim.  A root producer (@uid 0)
 * has nothing to gain: whatever the process is now (a worker that dropped
 * root, a reused pid), its rights are no more than root's.
 */
static int read_creds(uint32_t pid, uint32_t uid, struct as_req *r)
{
	char path[48], line[4096];
	int have = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned int a, b, c, d;

		if (sscanf(line, "Uid: %u %u %u %u", &a, &b, &c, &d) == 4) {
			if (uid && (a != uid || b != uid || c != uid || d != uid))
				break;
			r->uid = d;
			have |= 1;
		} else if (sscanf(line, "Gid: %u %u %u %u", &a, &b, &c, &d) == 4) {
			if (uid && (a != b || a != c || a != d))
				break;
			r->gid = d;
			have |= 2;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;

			r->ngroups = 0;
			for (;;) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				if (r->ngroups == MAX_GROUPS) {
					fclose(f);
					return -E2BIG;	/* refuse rather than guess */
				}
				r->groups[r->ngroups++] = g;
				p = end;
			}
			have |= 4;
		}
	}
	fclose(f);
	return have == 7 ? 0 : -EPERM;
}

/*
 * kpp_pid_is_producers - process @pid is wholly @uid's (read_creds) and dumpable
 * (its /proc files are @uid's: a process that dropped root keeps what it
 * opened as root, and map_files would hand that over).
 */
bool kpp_pid_is_producers(uint32_t pid, uint32_t uid)
{
	struct as_req *r = calloc(1, sizeof(*r));
	char path[48];
	struct stat st;
	bool ok;

	if (!r)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	ok = !read_creds(pid, uid, r) && (!uid || (!stat(path, &st) && st.st_uid == uid));
	free(r);
	return ok;
}

/*
 * In its own thread: file-system credentials are per thread in Linux (the
 * raw syscalls, not glibc's process-wide setgroups), so nothing else the
 * collector does ever runs with them, and they end with the thread.
 */
static void *as_thread(void *arg)
{
	struct as_req *r = arg;

	r->fd = -EPERM;
	if (syscall(SYS_setgroups, r->ngroups, r->groups))
		return NULL;
	syscall(SYS_setfsgid, r->gid);
	if ((gid_t)syscall(SYS_setfsgid, -1) != r->gid)
		return NULL;
	syscall(SYS_setfsuid, r->uid);
	if ((uid_t)syscall(SYS_setfsuid, -1) != r->uid)
		return NULL;
	r->fd = kpp_openat2_regular(r->rootfd, r->path,
				    RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, r->nofollow);
	return NULL;
}

/*
 * Gone: reaped, a zombie its parent has not reaped yet (`kpprof record`
 * symbolizes before it reaps its command), or exiting.  The last is the
 * common case, not a corner: a short process's final records reach us
 * while it is in do_exit(), where PF_EXITING is set before its mm and fs
 * are released and long before it turns Z; map_files and its root are
 * already unusable then, and waiting for Z would lose its objects
 * (startup_vm_test's "chain" and "late" lost the main program's names in
 * 6 of 10 runs).  Reaped while we look is gone too: a /proc/PID file
 * opened before the reap reads ESRCH after it (the parent of a short
 * process reaps it just as its last records reach us: "chain" lost a
 * grandchild's names 1 run in 20).
 *
 * Known limit: gone is judged by the thread-group leader, as the gone
 * rule's fallback (symbolize.c resolve(): the claimed path opened in our
 * root with the records' uid and build-id) must also be taken for a
 * process that exits.  So a process in a chroot or another mount
 * namespace, once gone or with a zombie leader (its main thread called
 * pthread_exit), has its claimed paths opened in our root: it can learn
 * whether a file it cannot see exists with a build-id it already knows,
 * and get names of a file its uid may read as "others".  Requiring every
 * thread to be gone closes only the zombie-leader route (a relay of
 * threads still passes) and costs such programs their names; the fix is
 * to tie the fallback to the producer's root (README, "What the
 * collector trusts", rule 3).
 */
#define KPP_PF_EXITING 0x00000004	/* include/linux/sched.h */

bool kpp_proc_stat_gone(int fd)
{
	char buf[512], *p, *end;
	unsigned long flags;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return n < 0 && errno == ESRCH;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold ')' itself; the state follows the last. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return false;
	if (p[2] == 'Z' || p[2] == 'X')
		return true;
	/* ") S ppid pgrp session tty_nr tpgid flags" (proc_pid_stat(5)) */
	p += 3;
	for (int skip = 0; skip < 6; skip++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	errno = 0;
	flags = strtoul(p, &end, 10);
	return !errno && end != p && (flags & KPP_PF_EXITING);
}

bool kpp_proc_gone(uint32_t pid)
{
	char path[32];
	bool gone;
	int fd;

	/* 0 and above INT_MAX are no process (kill() would take them for groups) */
	if (!pid || pid > INT_MAX)
		return false;
	if (kpp_proc_reaped(pid))
		return true;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* not there: reaped since, or hidden from us (hidepid), which is not gone */
	if (fd < 0)
		return (errno == ENOENT || errno == ESRCH) && kpp_proc_reaped(pid);
	gone = kpp_proc_stat_gone(fd);
	close(fd);
	return gone;
}

/* @r's path in @root with @r's credentials, in a thread of its own. */
static int open_as(struct as_req *r, const char *root, const char *path, bool nofollow)
{
	pthread_t t;
	int fd;

	r->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->rootfd < 0)
		return -errno;
	while (*path == '/')
		path++;
	r->path = path;
	r->nofollow = nofollow;
	if (pthread_create(&t, NULL, as_thread, r)) {
		fd = -EAGAIN;
	} else {
		pthread_join(t, NULL);
		fd = r->fd;
	}
	close(r->rootfd);
	return fd;
}

int kpp_open_as_producer(uint32_t pid, uint32_t uid, const char *path, bool nofollow)
{
	struct as_req *r;
	char root[48];
	int fd;

	if (!pid || path[0] != '/')
		return -ENOENT;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	fd = read_creds(pid, uid, r);
	if (!fd) {
		snprintf(root, sizeof(root), "/proc/%u/root", pid);
		fd = open_as(r, root, path, nofollow);
	}
	free(r);
	return fd;
}

int kpp_open_as_uid(uint32_t uid, const char *path)
{
	struct as_req *r;
	int fd;

	if (path[0] != '/')
		return -ENOENT;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->uid = uid;	/* no group, no supplementary groups: owner or "others" */
	r->gid = 65534;
	fd = open_as(r, "/", path, false);
	free(r);
	return fd;
}

int kpp_open_map_files(uint32_t pid, const struct kpp_map *m, char *real, size_t len)
{
	char link[80];
	int fd;

	if (real && len)
		real[0] = '\0';
	snprintf(link, sizeof(link), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	/* Before and after: an exec or a new process between is seen. */
	if (!kpp_pid_is_producers(pid, m->uid))
		return -EPERM;
	fd = open_regular(link);
	if (fd >= 0 && !kpp_pid_is_producers(pid, m->uid)) {
		close(fd);
		return -EPERM;
	}
	if (fd >= 0 && real && len) {
		ssize_t n = readlink(link, real, len - 1);

		real[n > 0 ? n : 0] = '\0';
	}
	return fd;
}

int kpp_open_mapped(uint32_t pid, const struct kpp_map *m)
{
	int fd;

	if (pid) {
		fd = kpp_open_map_files(pid, m, NULL, 0);
		return fd >= 0 ? fd : kpp_open_as_producer(pid, m->uid, m->path, false);
	}
	if (!m->build_id_len || m->path[0] != '/')
		return -ENOENT;
	return open_regular(m->path);
}

int kpp_elf__build_id_fd(int fd, uint8_t *id, uint8_t *len)
{
	int err = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	while (err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
				size_t n = nh.n_descsz;

				if (n > KPPROF_BUILD_ID_MAX)
					n = KPPROF_BUILD_ID_MAX;
				memcpy(id, (char *)data->d_buf + desc_off, n);
				*len = n;
				err = 0;
				break;
			}
		}
	}
	elf_end(elf);
	return err;
}

int kpp_elf__build_id(const char *path, uint8_t *id, uint8_t *len)
{
	int fd = open_regular(path), err;

	if (fd < 0)
		return fd;
	err = kpp_elf__build_id_fd(fd, id, len);
	close(fd);
	return err;
}
