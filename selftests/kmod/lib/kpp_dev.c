// SPDX-License-Identifier: GPL-2.0
/* kpp_dev: /dev/kpprof wrappers for the selftests (see kpp_dev.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kpp_dev.h"

int dev__open(void)
{
	int fd = open(KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int dev__ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int dev__info(int fd, struct kpprof_info *info)
{
	memset(info, 0, sizeof(*info));
	return dev__ioctl(fd, KPPROF_IOC_GET_INFO, info);
}

int dev__get_config(int fd, struct kpprof_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return dev__ioctl(fd, KPPROF_IOC_GET_CONFIG, cfg);
}

int dev__set_config(int fd, const struct kpprof_config *cfg)
{
	return dev__ioctl(fd, KPPROF_IOC_SET_CONFIG, (void *)cfg);
}

int dev__stats(int fd, struct kpprof_stats *st)
{
	memset(st, 0, sizeof(*st));
	return dev__ioctl(fd, KPPROF_IOC_GET_STATS, st);
}

int dev__advance(int fd, __u64 *new_cycle)
{
	return dev__ioctl(fd, KPPROF_IOC_ADVANCE_CYCLE, new_cycle);
}

int dev__write(int fd, const void *rec, size_t len)
{
	ssize_t n = write(fd, rec, len);

	if (n < 0)
		return -errno;
	/* A short write would break "one record per call": report it as EIO. */
	return (size_t)n == len ? 0 : -EIO;
}

void dev__test_config(struct kpprof_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mem_rate = KPPROF_MEM_RATE_DEFAULT;
	cfg->block_rate = 1;
	cfg->mutex_fraction = 1;
	cfg->max_stack_depth = KPPROF_STACK_DEPTH_MAX;
	cfg->cycle_period_ms = 0;
	cfg->flags = KPPROF_CFG_ALL;
}

const char *dev__module_path(void)
{
	static char path[4096];
	const char *p = getenv("KPPROF_KO");
	struct utsname u;
	size_t len;
	ssize_t n;
	int up;

	if (p && *p)
		return p;
	/*
	 * <repo>/build/selftests/kmod/<program> ->
	 * <repo>/build/module/<running release>/kpprof.ko
	 */
	if (uname(&u))
		return "kpprof.ko";
	n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n <= 0)
		return "kpprof.ko";
	path[n] = '\0';
	for (up = 0; up < 3; up++) {
		char *slash = strrchr(path, '/');

		if (!slash)
			return "kpprof.ko";
		*slash = '\0';
	}
	len = strlen(path);
	if ((size_t)snprintf(path + len, sizeof(path) - len, "/module/%s/kpprof.ko",
			     u.release) >= sizeof(path) - len)
		return "kpprof.ko";
	return path;
}

__u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

int dev__module_load(const char *params)
{
	int fd = open(dev__module_path(), O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

int dev__module_unload(void)
{
	return syscall(SYS_delete_module, "kpprof", O_NONBLOCK) ? -errno : 0;
}
