#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Review of the two grow locks and wait.c (branch ryield): a thread held
# for good inside the sampled set's table add (stuck_grow.c: a signal
# handler that blocks, the add's mmap trapped by a raw filter), test mode,
# rate 1, emulated ring.
#   1. K = 200 samples of another thread meanwhile: each used to wait
#      GROW_WAIT_NS (1 ms) and be lost (skipped); the newest table is only
#      half full, so they go there: ok when they take < 100 ms in all and
#      none is skipped.
#   2. K = 40000 (the table fills up): ok under 5 s (1 ms each before: 40 s
#      and more).
#   3. the program's clock_gettime stands still (-f: a mock, libfaketime),
#      and main calls exit() with the held thread inside its sampling
#      path: kpp_fini()'s wait ran 50e6 steps, about 2 s here; ok under 1 s.
#   4. grow_stall.c: 6 threads keep 60000 blocks live each while random
#      ones are stalled by a signal whose handler sleeps (a filter grow
#      stalled in its scan while others add a table), then free them: the
#      set's live count at exit must be that of a run without signals
#      (else a FREE was not found).
# usage: selftests/shim/stuck_grow_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=120

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
: >"$tmp/none"

run() {
	shim_run $T "$lib" KPPROF_TEST_SINK=/dev/null KPPROF_TEST_RING=1 KPPROF_DEBUG=1 \
		KPPROF_EXCLUDE_FILE="$tmp/none" "$d/stuck_grow" "$@"
}

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	run 200 join
	ms=$(sed -n 's/^k_wall_ms \([0-9.]*\).*/\1/p' "$tmp/out")
	sk=$(sed -n 's/.*skipped (another thread growing) \([0-9]*\).*/\1/p' "$tmp/err")
	if [ "$(cat "$tmp/rc")" = 0 ] && [ -n "$ms" ] && awk "BEGIN { exit !($ms < 100) }" && [ "$sk" = 0 ]; then
		tap_ok "$b: 200 samples beside a stuck table add: $ms ms, none skipped"
	else
		tap_fail "$b: 200 samples beside a stuck table add" "rc $(cat "$tmp/rc"), $ms ms, $sk skipped"
	fi
	run 40000 join
	ms=$(sed -n 's/^k_wall_ms \([0-9.]*\).*/\1/p' "$tmp/out")
	if [ "$(cat "$tmp/rc")" = 0 ] && [ -n "$ms" ] && awk "BEGIN { exit !($ms < 5000) }"; then
		tap_ok "$b: 40000 samples beside a stuck table add: $ms ms"
	else
		tap_fail "$b: 40000 samples beside a stuck table add" "rc $(cat "$tmp/rc"), ${ms:-?} ms"
	fi
	t0=$(date +%s%N)
	run -f 5 exit
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	if [ "$(cat "$tmp/rc")" = 0 ] && [ $ms -lt 1000 ]; then
		tap_ok "$b: exit under a clock that stands still: $ms ms"
	else
		tap_fail "$b: exit under a clock that stands still" "rc $(cat "$tmp/rc"), $ms ms"
	fi
	lives=()
	for us in 0 2000 500; do
		shim_run $T "$lib" KPPROF_TEST_SINK=/dev/null KPPROF_TEST_RING=1 KPPROF_DEBUG=1 \
			KPPROF_EXCLUDE_FILE="$tmp/none" "$d/grow_stall" 6 60000 $us
		lives+=("$(cat "$tmp/rc"):$(sed -n 's/.*sampled set: live \([0-9]*\).*/\1/p' "$tmp/err")")
	done
	if [ "${lives[0]%%:*}" = 0 ] && [ -n "${lives[0]#*:}" ] &&
	   [ "${lives[0]}" = "${lives[1]}" ] && [ "${lives[0]}" = "${lives[2]}" ]; then
		tap_ok "$b: frees all found with grows stalled by signals (rc:live ${lives[*]})"
	else
		tap_fail "$b: frees all found with grows stalled by signals" "rc:live ${lives[*]}"
	fi
done
tap_done
