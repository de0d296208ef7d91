#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Opt-out on the host, without the module (KPPROF_TEST_CONFIG, records to a
# KPPROF_TEST_SINK file per run): KPPROF_DISABLE=1 opens nothing (no sink
# file at all), a process listed in the exclude file (KPPROF_EXCLUDE_FILE,
# by comm or by path) writes no record, the kpprof collector writes none,
# and every other process does write records.
# usage: selftests/shim/optout_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

# One program (it allocates: /bin/ls) under several names; comm keeps 15 bytes.
mkdir -p "$tmp/bin" "$tmp/other"
for n in kpp_profiled kpp_excluded_by_comm_name kpp_by_path kpp_same_name; do
	cp /bin/ls "$tmp/bin/$n"
done
cp /bin/ls "$tmp/other/kpp_same_name"
cat >"$tmp/exclude" <<EOT
# a comment line, then a blank one

  kpp_excluded_by_comm_name   # the comm is its first 15 bytes: kpp_excluded_by
$tmp/bin/kpp_by_path
$tmp/other/kpp_same_name
EOT

run() { # LIB PROG ARG [ENV...]: run PROG ARG under LIB, print the sink's state
	local lib=$1 prog=$2 arg=$3 sink
	shift 3
	sink=$tmp/sink
	rm -f "$sink"
	env KPPROF_EXCLUDE_FILE="$tmp/exclude" "$@" KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$sink" \
		KPPROF_DEBUG=1 LD_PRELOAD="$lib" "$prog" "$arg" >/dev/null 2>"$tmp/err"
	if [ ! -e "$sink" ]; then echo "no sink"; elif [ -s "$sink" ]; then echo "records"; else echo "empty"; fi
}
check() { # NAME WANT GOT
	[ "$2" = "$3" ] && tap_ok "$1: $3" || tap_fail "$1" "want $2, got $3"
}

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	check "$b: a program not listed writes records" records "$(run "$lib" "$tmp/bin/kpp_profiled" /)"
	check "$b: no exclude file: records" records \
		"$(run "$lib" "$tmp/bin/kpp_by_path" / KPPROF_EXCLUDE_FILE="$tmp/none")"
	check "$b: KPPROF_DISABLE=1 opens nothing" "no sink" \
		"$(run "$lib" "$tmp/bin/kpp_profiled" / KPPROF_DISABLE=1)"
	check "$b: KPPROF_DISABLE=0 is not an opt-out" records \
		"$(run "$lib" "$tmp/bin/kpp_profiled" / KPPROF_DISABLE=0)"
	check "$b: excluded by comm (15 bytes of a longer name)" empty \
		"$(run "$lib" "$tmp/bin/kpp_excluded_by_comm_name" /)"
	check "$b: excluded by path" empty "$(run "$lib" "$tmp/bin/kpp_by_path" /)"
	check "$b: a path entry excludes that path only, not the same comm elsewhere" records \
		"$(run "$lib" "$tmp/bin/kpp_same_name" /)"
	check "$b: ...and the listed path itself is excluded" empty \
		"$(run "$lib" "$tmp/other/kpp_same_name" /)"
	# The collector exports kpprof_collector_process; the shim opens nothing in it.
	check "$b: the kpprof collector is never profiled" "no sink" \
		"$(run "$lib" "$top/build/user/kpprof/kpprof" --version KPPROF_EXCLUDE_FILE="$tmp/none")"
	grep -q "pass-through: this is the kpprof collector" "$tmp/err" ||
		check "$b: ...KPPROF_DEBUG says why" "the line" "$(cat "$tmp/err")"
done
tap_done
