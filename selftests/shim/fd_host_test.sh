#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 8, finding 8, on the host (KPPROF_TEST_CONFIG): after the shim's
# first stack capture (libunwind makes a pipe then), the program's next
# open() returns the number it returns without the shim.
# usage: selftests/shim/fd_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

want=$("$d/first_fd")
for lib in "$@"; do
	lib=$(realpath "$lib")
	for unwind in libunwind fp; do
		got=$(KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$tmp/sink" KPPROF_UNWIND=$unwind \
			LD_PRELOAD="$lib" "$d/first_fd")
		[ -s "$tmp/sink" ] && [ "$got" = "$want" ] &&
			tap_ok "$(basename "$lib") $unwind: open() after the first sample returns $got, as without the shim" ||
			tap_fail "$(basename "$lib") $unwind: open() after the first sample" "want $want, got $got"
		rm -f "$tmp/sink"
	done
done
tap_done
