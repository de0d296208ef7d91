/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kpp_dev: thin wrappers over /dev/kpprof for the module's selftests.
 * Every function returns 0 or a negative errno (never exits), so tests
 * decide what a failure means with the harness ASSERT and EXPECT macros.
 */
#ifndef KPP_DEV_H
#define KPP_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <kpprof.h>

/* Biggest buffer any record builder or fuzzer in these tests needs. */
#define KPP_REC_BUF_MAX	8192

/* dev__open - open /dev/kpprof read-write (close-on-exec); fd or -errno */
int dev__open(void);

/* dev__ioctl - ioctl(2) returning 0 or -errno instead of -1/errno */
int dev__ioctl(int fd, unsigned long cmd, void *arg);

int dev__info(int fd, struct kpprof_info *info);
int dev__get_config(int fd, struct kpprof_config *cfg);
int dev__set_config(int fd, const struct kpprof_config *cfg);
int dev__stats(int fd, struct kpprof_stats *st);
int dev__advance(int fd, __u64 *new_cycle);

/* dev__write - write(2) one record; 0 if all @len bytes went in, else -errno */
int dev__write(int fd, const void *rec, size_t len);

/*
 * dev__test_config - the configuration most tests run with: every profile
 * on (so no record is dropped as disabled), the cycle timer off (so the
 * kernel adds no cycle records of its own while a test counts entries),
 * the deepest stacks allowed.
 */
void dev__test_config(struct kpprof_config *cfg);

/*
 * dev__module_path - the kpprof.ko to insmod: $KPPROF_KO, else the one
 * 'make module' built for the running kernel in the build/ tree this
 * program was built in (build/module/<release>/kpprof.ko).
 */
const char *dev__module_path(void);
/* dev__module_load - finit_module(2) of dev__module_path() with @params; 0 or -errno */
int dev__module_load(const char *params);
/* dev__module_unload - delete_module(2) of kpprof, O_NONBLOCK; 0 or -errno */
int dev__module_unload(void);

/* now_ns - CLOCK_MONOTONIC in ns, the clock the kernel stamps records with */
__u64 now_ns(void);

#endif /* KPP_DEV_H */
