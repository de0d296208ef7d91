#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Allocator coverage on the host (no module: config from a file, records to
# /dev/null, heap rate 1): cxx_alloc on glibc, tcmalloc and jemalloc calls
# every operator new/delete form, free_sized and the *allocx functions
# (jemalloc's, or the shim's fallbacks found by name) and must behave
# exactly as without the shim, with the plain and the UBSan build.  A
# program whose malloc comes ahead of the shim's (tcmalloc linked in
# statically, or preloaded first) must say "no heap profile" under
# KPPROF_DEBUG.  The records themselves are checked in the VM
# (alloc_vm_test.sh).
# usage: selftests/shim/alloc_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
tc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4

for lib in "$@"; do
	lib=$(realpath "$lib")
	n=$(basename "$lib")
	for prog in cxx_alloc cxx_alloc_tcmalloc cxx_alloc_jemalloc cxx_alloc_static; do
		want=$("$d/$prog" 2>/dev/null; echo "exit $?")
		got=$(KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_DEBUG=1 LD_PRELOAD=$lib "$d/$prog" 2>"$tmp/err"; echo "exit $?")
		written=$(sed -n 's/.*records written \([0-9]*\), .*/\1/p' "$tmp/err")
		nonote=$(grep -c "no heap profile" "$tmp/err")
		if [ $prog = cxx_alloc_static ]; then
			expect_note=1
		else
			expect_note=0
		fi
		if [ "$want" = "$got" ] && [ "${written:-0}" -gt 0 ] && [ "$nonote" = $expect_note ]; then
			tap_ok "$n: $prog runs as without the shim, 'no heap profile' said $expect_note times"
		else
			tap_fail "$n: $prog runs as without the shim, 'no heap profile' said $expect_note times" \
				"without: $want, with: $got, records ${written:-none}, said $nonote"
			tap_diag "$(grep -v -E '^(SITE|VARIANT) ' "$tmp/err" | tail -n 5)"
		fi
	done
	# tcmalloc preloaded ahead of the shim: its malloc wins
	got=$(KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_DEBUG=1 LD_PRELOAD="$tc $lib" "$d/cxx_alloc" 2>"$tmp/err"; echo "exit $?")
	if [ "$got" = "$want" ] && grep -q "no heap profile: malloc is not interposed: .*libtcmalloc_minimal" "$tmp/err"; then
		tap_ok "$n: tcmalloc preloaded first: 'no heap profile' names it"
	else
		tap_fail "$n: tcmalloc preloaded first: 'no heap profile' names it" "$got"
		tap_diag "$(grep -v -E '^(SITE|VARIANT) ' "$tmp/err" | tail -n 3)"
	fi
done
tap_done
