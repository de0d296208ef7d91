// SPDX-License-Identifier: GPL-2.0
/* libkpprof.so start-up (placeholder while the shim is written). */
#include <linux/types.h>
#include "kpprof.h"
