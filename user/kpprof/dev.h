/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dev.h - every ioctl the collector issues on /dev/kpprof, behind one small
 * interface (as wireguard-tools keeps all kernel access in ipc.h).
 * Functions return 0 or a negative errno; none prints anything.
 */
#ifndef KPPROF_DEV_H
#define KPPROF_DEV_H

#include <stdint.h>
#include <kpprof.h>

/* kpprof_dev__open - open the device; returns an fd or -errno. */
int kpprof_dev__open(void);
int kpprof_dev__info(int fd, struct kpprof_info *info);
int kpprof_dev__get_config(int fd, struct kpprof_config *cfg);
int kpprof_dev__set_config(int fd, const struct kpprof_config *cfg);
int kpprof_dev__stats(int fd, struct kpprof_stats *st);
int kpprof_dev__advance_cycle(int fd, uint64_t *cycle);
int kpprof_dev__attach(int fd);
/* kpprof_dev__format - the record format text, malloc'd, NUL-terminated. */
int kpprof_dev__format(int fd, char **text);

/*
 * kpprof_dev__explain - one line saying what an errno from the device means
 * for the user and what to do about it.
 */
const char *kpprof_dev__explain(int err);

#endif
