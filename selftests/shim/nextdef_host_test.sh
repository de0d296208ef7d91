#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15: the next definitions the shim finds at start (real.c,
# kpp_next_resolve) are what dlsym(RTLD_NEXT) would give, and a wrapper
# without one behaves as the program would without the shim:
#   - local: a constructor run before the shim's dlopen()s RTLD_LOCAL a
#     library defining free_sized; main dlclose()s it and calls the shim's
#     free_sized: it must not forward there (that object is outside the
#     global scope, and unmapped: SIGSEGV);
#   - bad_alloc: a C program dlopen()s C++ code whose new[] cannot be
#     served: std::bad_alloc thrown and the new_handler called, not abort.
# Each case plainly first (its expected output), then under each shim in
# pass-through and in test mode at rate 1.
# usage: selftests/shim/nextdef_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 0 0 >"$tmp/rate1" || { tap_fail "config file"; tap_done; }

# run NAME EXPECTED [VAR=VALUE...] -- CMD...: CMD's stdout must be EXPECTED
run() {
	local name=$1 want=$2 env=()
	shift 2
	while [ "$1" != -- ]; do
		env+=("$1")
		shift
	done
	shift
	timeout -k 2 30 env "${env[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$want" ]; then
		tap_ok "$name"
	else
		tap_fail "$name" "rc $rc: $(cat "$tmp/out" "$tmp/err" | head -c 300 | tr '\n' ' ')"
	fi
}

local_want=done
bad_want=$'caught bad_alloc\nhandler calls 1\ndone'
for lib in "" "$@"; do
	b=${lib:+$(basename "$lib")}
	for mode in pass-through rate1; do
		[ -z "$lib" ] && [ $mode = rate1 ] && continue
		env=(NEXTDEF_FAKE="$d/libnextdef_fake.so")
		[ -n "$lib" ] && env+=(LD_PRELOAD="$lib")
		[ $mode = rate1 ] && env+=(KPPROF_TEST_CONFIG="$tmp/rate1" KPPROF_TEST_SINK=/dev/null
					 KPPROF_TEST_RING=1)
		what="${b:-no shim}${lib:+ ($mode)}"
		run "$what: free_sized not taken from an RTLD_LOCAL object, then dlclosed" \
			"$local_want" "${env[@]}" -- "$d/nextdef_local" close
		run "$what: C program, C++ plugin: bad_alloc thrown, new_handler called" \
			"$bad_want" "${env[@]}" -- "$d/nextdef_cmain" "$d/libnextdef_cxxplug.so"
	done
done
tap_done
