/* SPDX-License-Identifier: GPL-2.0 */
/*
 * preempt_mode: switch a PREEMPT_DYNAMIC kernel's preemption model through
 * debugfs (sched/preempt), for tests whose races need kernel code to be
 * preemptible.  PREEMPT_RT kernels are always fully preemptible.
 */
#ifndef PREEMPT_MODE_H
#define PREEMPT_MODE_H

#include <stddef.h>

/*
 * preempt_mode__set - write @mode ("full", "voluntary", "none") to
 * sched/preempt, mounting debugfs if needed; the model in force before
 * goes to @old (@len bytes, may be NULL).  Returns 0 or -errno.
 */
int preempt_mode__set(const char *mode, char *old, size_t len);

#endif /* PREEMPT_MODE_H */
