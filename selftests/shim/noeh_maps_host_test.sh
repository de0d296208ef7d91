#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stack whose DWARF walk ends in an object without unwind tables
# (libnoeh.so: no PT_GNU_EH_FRAME) still gets that object's MMAP record:
# the walk records the pc there, then stops.  The walk hands the objects
# it looked up to kpp_maps_send (unwind_cache.c); one without tables is
# not among them, so such a walk must leave the mappings to the per-pc
# look-up.  Without it: 100 ALLOCs with their leaf in libnoeh.so and no
# mapping for it (the collector cannot name the frame).  Host, test mode,
# rate 1, the DWARF unwinder (default).
# usage: selftests/shim/noeh_maps_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan $#
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
: >"$tmp/none"
for lib in "$@"; do
	b=$(basename "$lib")
	shim_run 60 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" "$d/noeh"
	rc=$(cat "$tmp/rc")
	# ALLOCs (their one pc, the leaf, last) inside a libnoeh.so MMAP sent
	# before them (an object's records precede the first stack using it)
	read -r allocs inlib maps < <(/usr/bin/python3 -c '
import sys
n = k = 0
ranges = []
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "MMAP" and f[-1].endswith("/libnoeh.so"):
        ranges.append((int(f[4], 16), int(f[5], 16)))
    elif f and f[0] == "ALLOC":
        n += 1
        pc = int(f[-1], 16)
        k += any(lo <= pc < hi for lo, hi in ranges)
print(n, k, len(ranges))' "$tmp/dump")
	if [ "$rc" = 0 ] && [ "${allocs:-0}" -ge 100 ] && [ "${maps:-0}" -ge 1 ] &&
	   [ "${inlib:-0}" -ge 100 ]; then
		tap_ok "$b: $allocs ALLOCs, $inlib with their leaf in libnoeh.so, which has $maps MMAP record(s)"
	else
		tap_fail "$b: a walk ending in an object without unwind tables" \
			"rc $rc, ${allocs:-?} ALLOCs, ${inlib:-?} in libnoeh.so, ${maps:-?} MMAP records of it: $(grep -m4 -E 'MMAP|ALLOC' "$tmp/dump" | tr '\n' ';')"
	fi
done
tap_done
