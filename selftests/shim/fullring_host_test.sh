#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A sample that meets a full ring is counted as the refused record it
# is, and the records that do go in stay consistent (written to guard
# 6c29987, which gave up such samples before their walk, since reverted:
# it fails with the refusal's lost[] count removed).  fullring_burst:
# 4 threads, 240000 mallocs and frees at rate 1, test mode with the
# emulated ring (KPPROF_TEST_RING=1), which they fill (one drainer at a
# time).  Checked, per shim build:
#   - some samples met a full ring (else the run proves nothing);
#   - ALLOC records in the sink + the ring's lost[ALLOC] = the mallocs made
#     (plus the few of the program's own start and exit: at most SLACK);
#   - KPPROF_DEBUG's "dropped (ring full)" = lost[ALLOC] + lost[FREE] (a
#     FREE or two refused after the program read the counters: SLACK);
#   - no FREE record for an address without an ALLOC standing (a refused
#     sample must not enter the sampled set), and the process exits 0;
# and a next malloc that guards its heap with a pthread mutex, sampled
# while held, with FREEs held back from the full ring: no deadlock.
# usage: selftests/shim/fullring_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=120	# seconds: longer is a hang
SLACK=16

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
: >"$tmp/none"

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	shim_run $T "$lib" KPPROF_DEBUG=1 KPPROF_TEST_RING=1 KPPROF_EXCLUDE_FILE="$tmp/none" \
		"$d/fullring_burst" 4 20000 3
	rc=$(cat "$tmp/rc")
	read -r allocs lost_alloc lost_free < <(awk '$1 == "allocs" { print $2, $4, $6 }' "$tmp/out")
	dropped=$(sed -n 's/.*records written [0-9]*, dropped (ring full) \([0-9]*\),.*/\1/p' "$tmp/err")
	read -r nalloc badfree < <(awk '
		$1 == "ALLOC" { n++; live[$5] = 1 }
		$1 == "FREE" { if (!($5 in live)) bad++; delete live[$5] }
		END { print n + 0, bad + 0 }' "$tmp/dump")
	if [ "$rc" != 0 ] || [ -z "${allocs:-}" ] || [ -z "${dropped:-}" ]; then
		tap_fail "$b: fullring_burst ran" "rc $rc, out: $(tr '\n' ' ' <"$tmp/out"), err: $(tail -c 300 "$tmp/err" | tr '\n' ' ')"
		continue
	fi
	[ "$lost_alloc" -gt 0 ] &&
		tap_ok "$b: $lost_alloc of $allocs samples met a full ring" ||
		tap_fail "$b: no sample met a full ring" "lost_alloc $lost_alloc"
	sum=$((nalloc + lost_alloc))
	[ "$sum" -ge "$allocs" ] && [ "$sum" -le $((allocs + SLACK)) ] &&
		tap_ok "$b: ALLOC records $nalloc + lost[ALLOC] $lost_alloc = $sum for $allocs mallocs" ||
		tap_fail "$b: ALLOC records + lost[ALLOC] is not the mallocs made" \
			"ALLOC $nalloc + lost $lost_alloc = $sum, mallocs $allocs (+$SLACK)"
	lost=$((lost_alloc + lost_free))
	[ "$dropped" -ge "$lost" ] && [ "$dropped" -le $((lost + SLACK)) ] &&
		tap_ok "$b: dropped (ring full) $dropped = lost[ALLOC] + lost[FREE] $lost" ||
		tap_fail "$b: dropped (ring full) is not the ring's lost[]" "dropped $dropped, lost[] $lost"
	[ "$badfree" = 0 ] &&
		tap_ok "$b: every FREE follows its ALLOC" ||
		tap_fail "$b: $badfree FREE records without their ALLOC"

	# The next malloc guards its heap with a pthread mutex (as jemalloc
	# does), contended: the shim samples that contention with the mutex
	# held.  A FREE the full ring refused holds its block back; freeing
	# held blocks from that sample called this malloc's free under its
	# own mutex: a self-deadlock (review helper-23: 3 of 3, killed here
	# after $T s).  Both unwinders (fp learns the thread's bounds with
	# pthread_getattr_np, which allocates).
	shim_test_config 1 1 1 >"$tmp/cfg1" || { tap_fail "config file"; continue; }
	for unwind in dwarf fp; do
		rm -f "$tmp/sink"
		timeout -s KILL $T env KPPROF_TEST_CONFIG="$tmp/cfg1" KPPROF_TEST_SINK="$tmp/sink" \
			KPPROF_TEST_RING=1 KPPROF_DEBUG=1 KPPROF_EXCLUDE_FILE="$tmp/none" \
			KPPROF_UNWIND=$unwind LD_PRELOAD="$lib $d/liblock_alloc.so" \
			"$d/lock_alloc_main" 4 2000000 >"$tmp/out" 2>"$tmp/err"
		rc=$?
		held=$(sed -n 's/.*, frees held \([0-9]*\),.*/\1/p' "$tmp/err" | sort -n | tail -n 1)
		[ $rc = 0 ] && grep -q '^lock_alloc_main done$' "$tmp/out" && [ "${held:-0}" -gt 0 ] &&
			tap_ok "$b $unwind: a mutex-guarded malloc, contended, with $held frees held back: no deadlock" ||
			tap_fail "$b $unwind: mutex-guarded malloc with frees held" \
				"rc $rc (137: hung, killed after $T s), frees held ${held:-none} (0: proves nothing)"
	done
done
tap_done
