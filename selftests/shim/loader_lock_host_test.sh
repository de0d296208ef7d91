#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, "the shim cannot hurt its process": no wrapper waits for the
# loader's lock.  loader_lock.c: a thread dlopen()s a plugin whose
# constructor (run with the loader's lock held) waits for the program's
# lock, which main holds while it makes the process's first call of one
# wrapped function, then releases.  Plainly that always ends; a wrapper
# that looked up its next definition (dlsym, dlopen, dl_iterate_phdr) at
# its first call hung both threads for good.  Each case in the three
# states a process of a host can be in: pass-through (no module, no
# KPPROF_*), test mode at the default rate, and at rate 1 with the lock
# profiles on; each run must print "done CASE" and exit 0 within T
# seconds, and must do so plainly first (else the case proves nothing).
# usage: selftests/shim/loader_lock_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=5		# seconds per run; the plain run takes milliseconds
cases="cond_timedwait mutex_timedlock mutex_clocklock rwlock_rdlock
       rwlock_timedwrlock memalign operator_new free_sized"

tap_plan
shim_test_config 524288 0 0 >"$tmp/default" || { tap_fail "config file"; tap_done; }
shim_test_config 1 1 1 >"$tmp/rate1" || { tap_fail "config file"; tap_done; }
prog=$d/loader_lock
plugin=$d/libloader_lock.so

# run LIMIT [VAR=VALUE...]: loader_lock for $c; its output in $tmp/out
run() {
	local limit=$1
	shift
	timeout -k 2 "$limit" env "$@" "$prog" "$plugin" "$c" >"$tmp/out" 2>"$tmp/err"
	echo $? >"$tmp/rc"
	[ "$(cat "$tmp/rc")" = 0 ] && grep -qx "done $c" "$tmp/out"
}

for c in $cases; do
	if ! run 10; then
		tap_fail "$c: plain run" "rc $(cat "$tmp/rc"): $(cat "$tmp/out" "$tmp/err" | head -c 300 | tr '\n' ' ')"
		continue
	fi
	for lib in "$@"; do
		b=$(basename "$lib")
		for mode in pass-through default rate1; do
			env=(LD_PRELOAD="$lib")
			[ $mode = pass-through ] ||
				env+=(KPPROF_TEST_CONFIG="$tmp/$mode" KPPROF_TEST_SINK=/dev/null
				      KPPROF_TEST_RING=1)
			if run $T "${env[@]}"; then
				tap_ok "$b: $c, first call while a constructor waits for the caller's lock ($mode)"
			else
				tap_fail "$b: $c, first call while a constructor waits for the caller's lock ($mode)" \
					"rc $(cat "$tmp/rc") (124: hung $T s): $(cat "$tmp/out" "$tmp/err" | head -c 300 | tr '\n' ' ')"
			fi
		done
	done
done
tap_done
