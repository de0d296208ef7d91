// SPDX-License-Identifier: GPL-2.0
/* dev.c - the ioctls on /dev/kpprof, the collector's only kernel access. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dev.h"

/*
 * The device path may be overridden for tests (KPPROF_DEVICE), so a test
 * can check the "module missing" error without unloading anything.
 */
int kpprof_dev__open(void)
{
	const char *path = getenv("KPPROF_DEVICE");
	int fd = open(path && *path ? path : KPPROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int dev_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int kpprof_dev__info(int fd, struct kpprof_info *info)
{
	memset(info, 0, sizeof(*info));
	return dev_ioctl(fd, KPPROF_IOC_GET_INFO, info);
}

int kpprof_dev__get_config(int fd, struct kpprof_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return dev_ioctl(fd, KPPROF_IOC_GET_CONFIG, cfg);
}

int kpprof_dev__set_config(int fd, const struct kpprof_config *cfg)
{
	struct kpprof_config c = *cfg;

	return dev_ioctl(fd, KPPROF_IOC_SET_CONFIG, &c);
}

int kpprof_dev__stats(int fd, struct kpprof_stats *st)
{
	memset(st, 0, sizeof(*st));
	return dev_ioctl(fd, KPPROF_IOC_GET_STATS, st);
}

int kpprof_dev__advance_cycle(int fd, uint64_t *cycle)
{
	uint64_t c = 0;
	int err = dev_ioctl(fd, KPPROF_IOC_ADVANCE_CYCLE, &c);

	if (!err && cycle)
		*cycle = c;
	return err;
}

int kpprof_dev__attach(int fd)
{
	return ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH) < 0 ? -errno : 0;
}

/* Ask for the length first (size 0 fails with ENOSPC and reports len). */
int kpprof_dev__format(int fd, char **text)
{
	struct kpprof_format_arg arg = { 0 };
	char *buf;
	int err;

	*text = NULL;
	err = dev_ioctl(fd, KPPROF_IOC_GET_FORMAT, &arg);
	if (err && err != -ENOSPC)
		return err;
	buf = calloc(1, (size_t)arg.len + 1);
	if (!buf)
		return -ENOMEM;
	arg.buf = (uintptr_t)buf;
	arg.size = arg.len + 1;
	/* len is output only; the module refuses a non-zero one (EINVAL). */
	arg.len = 0;
	err = dev_ioctl(fd, KPPROF_IOC_GET_FORMAT, &arg);
	if (err) {
		free(buf);
		return err;
	}
	buf[arg.len] = '\0';
	*text = buf;
	return 0;
}

const char *kpprof_dev__explain(int err)
{
	switch (-err) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		return "the kpprof module is not loaded: insmod kpprof.ko (or make module) first";
	case EPERM:
	case EACCES:
		return "permission denied: run as root or with CAP_PERFMON";
	case EBUSY:
		return "another collector is already attached to the ring: stop it first (see kpprof stat)";
	case EXDEV:
		return "the collector runs in a pid namespace of its own, and the module's records name processes by their pids in the host's: run it in the host's (outside the container, or with the host's pid namespace)";
	case ENOTTY:
		return "the device does not speak this kpprof ABI: rebuild the module and the collector together";
	case EINVAL:
		return "the module refused the value: see kpprof ctl --help for the valid ranges";
	default:
		return strerror(-err);
	}
}
