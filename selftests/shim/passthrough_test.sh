#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pass-through: with no module (the host) or no usable /dev/kpprof, every
# workload scenario behaves exactly as without the shim (same stdout, same
# exit status), and the shim prints nothing (stderr is compared too, minus
# the SITE/LOCK lines that carry addresses).  Also run under the UBSan
# build of the shim, where any undefined behaviour aborts the program.
# usage: selftests/shim/passthrough_test.sh [SHIM.so...]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
[ $# -gt 0 ] || set -- "$top/build/user/shim/libkpprof.so" "$top/build/user/shim/libkpprof-ubsan.so"

tap_plan
if [ -e /dev/kpprof ]; then
	tap_diag "/dev/kpprof exists: this test is for a machine without the module"
fi
scenarios=("alloc 200" "threads 300" "fork 10" "exec" "dlopen 20" "signals" "mutex 100"
	   "rwlock 100" "early" "closefd" "volume 16 64")
for lib in "$@"; do
	lib=$(realpath "$lib")
	if ! LD_PRELOAD=$lib cat /proc/self/maps 2>&1 | grep -q "$(basename "$lib")"; then
		tap_fail "$(basename "$lib") loads into programs"
		continue
	fi
	for s in "${scenarios[@]}"; do
		# shellcheck disable=SC2086
		want=$("$d/shim_workload" $s 2>&1 | grep -v -E '^(SITE|LOCK) '; echo "exit ${PIPESTATUS[0]}")
		# shellcheck disable=SC2086
		got=$(LD_PRELOAD=$lib "$d/shim_workload" $s 2>&1 | grep -v -E '^(SITE|LOCK) '; echo "exit ${PIPESTATUS[0]}")
		if [ "$want" = "$got" ]; then
			tap_ok "$(basename "$lib"): $s"
		else
			tap_fail "$(basename "$lib"): $s"
			tap_diag "without: $want"
			tap_diag "with:    $got"
		fi
	done
done
tap_done
