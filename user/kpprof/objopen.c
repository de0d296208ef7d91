// SPDX-License-Identifier: GPL-2.0
/*
 * objopen.c - open the file a process maps, in ways its producer cannot
 * steer.  The collector runs as root; a MMAP record's path is whatever an
 * unprivileged producer wrote.  So:
 *
 *  1. /proc/PID/map_files/START-END: the very file mapped there, whatever
 *     its name or mount namespace.  A record with a build-id must match it
 *     (the caller checks); one without must name it (readlink).
 *  2. /proc/PID/root/PATH, resolved with openat2(RESOLVE_IN_ROOT): the
 *     path inside the process's own root (chroot, container), symlinks
 *     included, never escaping it.
 *  3. PATH as the collector sees it, only for a record with a build-id,
 *     which the caller checks before using a byte of it.
 *
 * Every open is O_NONBLOCK (a FIFO cannot hang us) and only a regular file
 * is kept (S_ISREG checked before opening, against device side effects,
 * and on the fd, against a swap in between).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "symbolize.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

static int keep_regular(int fd)
{
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
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
	return keep_regular(open(path, OPEN_FLAGS));
}

static int open_in_root(uint32_t pid, const char *path)
{
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[48];
	struct stat st;
	int dfd, fd;

	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	while (*path == '/')
		path++;
	/* Look before opening: a device or FIFO is never opened at all. */
	how.flags = O_PATH | O_CLOEXEC;
	fd = syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int err = fd < 0 ? -errno : -EINVAL;

		if (fd >= 0)
			close(fd);
		close(dfd);
		return err;
	}
	close(fd);
	how.flags = OPEN_FLAGS;
	fd = keep_regular(syscall(SYS_openat2, dfd, path, &how, sizeof(how)));
	close(dfd);
	return fd;
}

int kpp_open_mapped(uint32_t pid, const struct kpp_map *m)
{
	char link[80], target[KPPROF_PATH_MAX + 1];
	int fd;

	if (pid) {
		snprintf(link, sizeof(link), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		fd = open_regular(link);
		if (fd >= 0) {
			ssize_t n = readlink(link, target, sizeof(target) - 1);

			if (m->build_id_len)
				return fd;
			target[n > 0 ? n : 0] = '\0';
			if (n > 0 && !strcmp(target, m->path))
				return fd;
			close(fd);
		}
		if (m->path[0] == '/') {
			fd = open_in_root(pid, m->path);
			if (fd >= 0)
				return fd;
		}
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
