#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, "the shim cannot hurt its process": the shim's waits for
# another thread make no syscall that a seccomp filter installed with a
# raw `syscall` instruction (which the shim cannot see) may forbid.
# raw_yield.c installs one that traps sched_yield alone (SIGSYS, the
# program exits 99 naming syscall 24), then, in test mode at rate 1:
#   - grow: 8 threads keep 25000 blocks live each, released together, so
#     they insert into the sampled-address set at once as it adds tables
#     (32 Ki, then 128 Ki live): the losers wait for the table lock
#     (sampled_set.c, lock_table()); the filter also holds the second
#     table's mmap for 0.3 ms (raw_yield.c), so that every run waits;
#   - exit: 4 threads malloc and free in a loop while main calls exit():
#     the shim's destructor waits for the threads inside a sampling path
#     (init.c, kpp_fini()); records written one by one, and into the
#     emulated ring (KPPROF_TEST_RING=1).
# Neither wait may yield here: without the module there is no seccomp
# probe to say that no filter is in force.  Each case runs RUNS times; ok
# when every run exits 0 and printed what it must (grow: "slowed 1", the
# table add was held), and KPPROF_DEBUG's counts say whether any run
# waited at all (if none did, the case is skipped: it proved nothing).
# usage: selftests/shim/raw_yield_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=60		# seconds per run: longer is a hang
RUNS=${RAW_YIELD_RUNS:-5}

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
: >"$tmp/none"

# one_case NAME LIB WAITS_AWK MUST [VAR=VALUE...] -- ARGS...: RUNS runs
# of raw_yield ARGS, each of which must print a line matching MUST;
# WAITS_AWK prints, from KPPROF_DEBUG's lines, how many waits it made.
one_case() {
	local name=$1 lib=$2 waits_awk=$3 must=$4 fails=0 waited=0 rc w why=
	shift 4
	local env=()
	while [ "$1" != -- ]; do
		env+=("$1")
		shift
	done
	shift
	for _ in $(seq "$RUNS"); do
		# records to /dev/null: only the exit status and the counts matter
		shim_run $T "$lib" KPPROF_TEST_SINK=/dev/null KPPROF_DEBUG=1 \
			KPPROF_EXCLUDE_FILE="$tmp/none" "${env[@]}" "$d/raw_yield" "$@"
		rc=$(cat "$tmp/rc")
		if [ "$rc" != 0 ] || ! grep -q '^done ' "$tmp/out" || ! grep -q "$must" "$tmp/out"; then
			fails=$((fails + 1))
			[ -n "$why" ] || why="rc $rc: $(grep -v '^kpprof' "$tmp/err" | head -3 | tr '\n' ' ')$(
				tr '\n' ' ' <"$tmp/out")"
			continue
		fi
		w=$(awk "$waits_awk" "$tmp/err")
		waited=$((waited + ${w:-0}))
	done
	if [ $fails != 0 ]; then
		tap_fail "$name" "$fails of $RUNS runs failed; first: $why"
	elif [ $waited = 0 ]; then
		tap_skip "$name" "no run waited ($RUNS runs): proves nothing"
	else
		tap_ok "$name: $RUNS runs exit 0 ($waited waits)"
	fi
}

grow_waits='/sampled set:/ {
	for (i = 1; i < NF; i++)
		if ($i == "growing)" || $i == "it") { sub(",", "", $(i + 1)); n += $(i + 1) }
} END { print n + 0 }'
exit_waits='/exit: waited/ { n++ } END { print n + 0 }'

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	one_case "$b: table lock contended under a filter trapping sched_yield" \
		"$lib" "$grow_waits" '^slowed 1$' KPPROF_TEST_RING=1 -- grow 8 25000
	one_case "$b: exit beside sampling threads under a filter trapping sched_yield" \
		"$lib" "$exit_waits" '^done ' -- exit 4
	one_case "$b: exit beside sampling threads, emulated ring, same filter" \
		"$lib" "$exit_waits" '^done ' KPPROF_TEST_RING=1 -- exit 4
done
tap_done
