// SPDX-License-Identifier: GPL-2.0
/* preempt_mode: the kernel's preemption model, through debugfs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "preempt_mode.h"

#define PREEMPT_CTL	"/sys/kernel/debug/sched/preempt"

int preempt_mode__set(const char *mode, char *old, size_t len)
{
	char line[128], *lp, *rp;
	ssize_t n;
	int fd;

	if (access("/sys/kernel/debug/sched", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	fd = open(PREEMPT_CTL, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	line[n] = '\0';
	/* "none (voluntary) full": the model in force is in parentheses */
	lp = strchr(line, '(');
	rp = lp ? strchr(lp, ')') : NULL;
	if (old && lp && rp) {
		*rp = '\0';
		snprintf(old, len, "%s", lp + 1);
	}
	fd = open(PREEMPT_CTL, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, mode, strlen(mode));
	close(fd);
	return n < 0 ? -errno : 0;
}
