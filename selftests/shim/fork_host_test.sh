#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 8, finding 1, on the host (KPPROF_TEST_CONFIG, records to a sink):
# a thread loops in dl_iterate_phdr while main forks 20 children.  None may
# hang, whether they _exit(0) at once or allocate first (then each sends
# its COMM (FORK) and its samples); fork_loader kills what is left after
# 20 s, timeout(1) backs it up.
# usage: selftests/shim/fork_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	for mode in exit malloc; do
		rm -f "$tmp/sink"
		got=$(timeout 120 env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$tmp/sink" \
			LD_PRELOAD="$lib" "$d/fork_loader" 20 "$mode" 2>&1; echo "exit $?")
		if [ "$got" = "children 20, hung 0
exit 0" ]; then
			tap_ok "$b: 20 children ($mode) forked beside a dl_iterate_phdr loop: none hung"
		else
			tap_fail "$b: children ($mode) hung" "$got"
		fi
		[ "$mode" = malloc ] || continue
		forks=$("$d/shim_reader" --decode "$tmp/sink" | awk '$1 == "COMM" && $5 == 1' | wc -l)
		[ "$forks" -eq 20 ] && tap_ok "$b: ...each child sent its COMM (FORK) and samples" ||
			tap_fail "$b: COMM (FORK) records" "$forks of 20"
	done
done
tap_done
