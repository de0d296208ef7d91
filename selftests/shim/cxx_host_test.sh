#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# C++ new/delete through the shim on the host (test mode, heap rate 1, so
# every allocation is sampled): on glibc's libstdc++ (new forwards to our
# malloc, delete is then a bare tail call that reaches our free), tcmalloc
# and jemalloc (their new and delete never reach malloc/free: the wrappers
# sample and forget themselves).  For each operator new variant of
# cxx_alloc, every size it allocated must be recorded by exactly one ALLOC
# (not twice: once by new and once by malloc underneath), and that address
# by exactly one FREE after it (the delete's fast path must not lose it).
# usage: selftests/shim/cxx_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg"
for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	for prog in cxx_alloc cxx_alloc_tcmalloc cxx_alloc_jemalloc; do
		rm -f "$tmp/sink"
		timeout -k 5 60 env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$tmp/sink" \
			LD_PRELOAD="$lib" "$d/$prog" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		"$d/shim_reader" --decode "$tmp/sink" >"$tmp/dump" 2>/dev/null
		# VARIANT v name sizes...: the 8 operator new variants are 0..7.
		bad=$(awk '
			NR == FNR { if ($1 == "VARIANT" && $2 < 8) for (i = 4; i <= NF; i++) { want[$i] = 1; nw++ } next }
			$1 == "ALLOC" { if ($6 in want) na[$6]++; if ($5 in live) dalloc++; live[$5] = $6 }
			$1 == "FREE" { if ($5 in live) delete live[$5]; else dfree++ }
			END {
				for (s in want) if (na[s] != 1) { bad++; msg = msg " size " s " x" na[s] + 0 }
				for (a in live) if (live[a] in want) { bad++; msg = msg " " a " never freed" }
				if (dfree) { bad++; msg = msg " " dfree " FREEs without a live ALLOC" }
				if (dalloc) { bad++; msg = msg " " dalloc " ALLOCs of a live address" }
				printf "%d%s (%d sizes)\n", bad, substr(msg, 1, 200), nw
			}' "$tmp/err" "$tmp/dump")
		if [ $rc = 0 ] && [ "${bad%% *}" = 0 ]; then
			tap_ok "$b: $prog: each new recorded once, freed once ${bad#* }"
		else
			tap_fail "$b: $prog: each new recorded once, freed once" "exit $rc, $bad"
		fi
	done
done
tap_done
