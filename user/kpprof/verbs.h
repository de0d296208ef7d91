/* SPDX-License-Identifier: GPL-2.0 */
/* verbs.h - one *_main per verb, each in its own file, each with its usage. */
#ifndef KPPROF_VERBS_H
#define KPPROF_VERBS_H

int record_main(int argc, char *argv[]);
int collect_main(int argc, char *argv[]);
int ctl_main(int argc, char *argv[]);
int stat_main(int argc, char *argv[]);
int top_main(int argc, char *argv[]);
int serve_main(int argc, char *argv[]);
int enable_main(int argc, char *argv[]);
int disable_main(int argc, char *argv[]);

#endif
