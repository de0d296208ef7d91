#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A signal handler that runs while its thread is inside a sample runs on
# the thread's own stack, below the interrupted frames, as it would
# without the shim.  A conservative garbage collector (Boehm's libgc)
# stops each thread with a signal and scans its stack from the sp the
# handler saw: before, a handler landing in a sample ran on the sample's
# private stack, the collector scanned from there, and the thread's live
# objects were freed (libgc's lists corrupted, segfaults, hangs;
# foreign_suites.sh -s gc).  sigscan.c does what the collector does and
# counts handlers whose sp a scan would not start from: none plainly,
# none under the shim (before the fix, at rate 1, about half of them).
# "regs": the interrupted code holds five values in callee-saved registers
# only, and the scan must find them all (the shim's switch to its private
# stack stores them on the program's stack first).
# Host, test mode, rate 1 (and the default rate), both unwinders.
# usage: selftests/shim/sigscan_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
: >"$tmp/none"
clean="^sigscan [1-9][0-9]* handlers, 0 off the thread's stack, 0 missed the canary(, 0 missed a register)?$"
for regs in "" regs; do
	out=$("$d/sigscan" 2 1 $regs 2>&1); rc=$?
	if [ $rc = 0 ] && grep -Eq "$clean" <<<"$out"; then
		tap_ok "plainly $regs: $out"
	else
		tap_fail "plainly $regs" "rc $rc: $out"
	fi
done
for lib in "$@"; do
	b=$(basename "$lib")
	for mode in "1 fp" "1 dwarf" "524288 dwarf" "1 fp regs" "1 dwarf regs"; do
		read -r rate unwind regs <<<"$mode"
		shim_test_config "$rate" 0 0 >"$tmp/cfg" || { tap_fail "config file"; continue; }
		shim_run 60 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" KPPROF_UNWIND="$unwind" \
			"$d/sigscan" 2 3 $regs
		rc=$(cat "$tmp/rc")
		out=$(cat "$tmp/out")
		allocs=$(grep -c '^ALLOC' "$tmp/dump")
		# samples were taken: the handlers had samples to land in
		if [ "$rc" = 0 ] && [ "$allocs" -ge 100 ] && grep -Eq "$clean" <<<"$out"; then
			tap_ok "$b, rate $rate, $unwind $regs: $out ($allocs ALLOCs)"
		else
			tap_fail "$b, rate $rate, $unwind $regs: a handler during a sample runs on the thread's stack, below all it holds" \
				"rc $rc, $allocs ALLOCs: $out $(head -c 300 "$tmp/err")"
		fi
	done
done
tap_done
