/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rec_model: a reference validator for producer records, written from the
 * field comments of ioctl/kpprof.h.  The fuzz tests feed the same bytes to
 * the module and to this model and require the same verdict.
 *
 * Where the header leaves a case open (e.g. it never says whether a
 * KPPROF_REC_MUNMAP start must be page aligned), the model answers
 * REC_EITHER and the test accepts either verdict; each such case is listed
 * in rec_model.c.
 */
#ifndef REC_MODEL_H
#define REC_MODEL_H

#include <stddef.h>
#include <kpprof.h>

enum rec_verdict {
	REC_VALID,
	REC_INVALID,
	REC_EITHER,	/* the contract does not decide */
};

struct rec_limits {
	unsigned int max_stack_depth;
	unsigned int max_record_size;
	unsigned int page_size;
};

/*
 * rec_model__check - would the module accept write(fd, buf, count)?
 * @why, if not NULL, gets a short reason for REC_INVALID and REC_EITHER.
 */
enum rec_verdict rec_model__check(const void *buf, size_t count,
				  const struct rec_limits *lim,
				  const char **why);

#endif /* REC_MODEL_H */
