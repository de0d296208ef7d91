#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The whole sampling path on the host, without the module: the shim reads
# its config from a file (KPPROF_TEST_CONFIG; every profile on, heap rate
# 1, block rate 1 ns, every hand-off) and writes its records to /dev/null.
# Each workload scenario must behave exactly as without the shim, and the
# shim must have written records (KPPROF_DEBUG=1's closing counters).  Run
# with the plain and the UBSan build, with both unwinders.
# usage: selftests/shim/sampling_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

# No "closefd": the test sink is an ordinary write(2), unprotected; that
# protection (KPPROF_IOC_SUBMIT) is tested in the VM.
scenarios=("alloc 200" "threads 300" "fork 10" "exec" "dlopen 20" "signals" "mutex 100"
	   "rwlock 100" "early" "volume 4 64")
for lib in "$@"; do
	lib=$(realpath "$lib")
	for unwind in libunwind fp; do
		for s in "${scenarios[@]}"; do
			name="$(basename "$lib") $unwind: $s"
			# shellcheck disable=SC2086
			want=$("$d/shim_workload" $s 2>/dev/null; echo "exit $?")
			# shellcheck disable=SC2086
			got=$(KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_DEBUG=1 KPPROF_UNWIND=$unwind \
				LD_PRELOAD=$lib "$d/shim_workload" $s 2>"$tmp/err"; echo "exit $?")
			# the last image's closing line (exec: the new one)
			written=$(sed -n 's/.*records written \([0-9]*\), .*refused \([0-9]*\),.*/\1 \2/p' "$tmp/err" | tail -n 1)
			if [ "$want" = "$got" ] && [ "${written% *}" -gt 0 ] 2>/dev/null && [ "${written#* }" = 0 ]; then
				tap_ok "$name"
			else
				tap_fail "$name" "records written/refused: ${written:-none}"
				tap_diag "without: $want"
				tap_diag "with:    $got"
				tap_diag "$(grep -v -E '^(SITE|LOCK) ' "$tmp/err" | tail -n 5)"
			fi
		done
	done
done
tap_done
