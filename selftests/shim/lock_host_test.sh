#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Lock contention sampling on the host, in the shim's test mode (issue 15;
# review of the shim §1.4, §2.2): lock_workload runs each case, the records
# are read back from KPPROF_TEST_SINK.
#  - a signal handler that takes the contended mutex its own thread was
#    waiting on or handing off never hangs (the wait bookkeeping holds no
#    lock: 3 of 3 runs hung when it was a spinlock);
#  - an error-checking relock (EDEADLK at once) is no contention;
#  - pthread_mutex_clocklock (std::timed_mutex) and the timed/clock rwlocks
#    are timed;
#  - waiters the wait table has no room for are counted, not lost silently.
# usage: selftests/shim/lock_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

# run LIB TIMEOUT ARGS...: lock_workload under the shim; records in
# $tmp/dump, stdout $tmp/out, stderr $tmp/err, status $tmp/rc.
run() {
	local lib=$1 limit=$2
	shift 2
	shim_run "$limit" "$lib" KPPROF_DEBUG=1 "$d/lock_workload" "$@"
}

check() {	# check NAME EXPR: pass if the shell arithmetic EXPR holds
	if (( $2 )); then
		tap_ok "$1"
	else
		tap_fail "$1" "($2) is false"
		tap_diag "$(head -c 400 "$tmp/out") $(head -c 600 "$tmp/err")"
	fi
}

count() {	# count KIND ADDR: records of KIND for the lock at ADDR
	awk -v k="$1" -v a="$2" '$1 == k && $5 == a { n++ } END { print n + 0 }' "$tmp/dump"
}

addr() { sed -n "s/^ADDR $1 //p" "$tmp/err"; }

tap_plan
for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	# §1.4: block 1 ms, mutex 1/1 (the review's cfglock).  9 s: three
	# progress checks; a hang is reported after 3 s without progress.
	shim_test_config 0 1000000 1 >"$tmp/cfg"
	run "$lib" 60 sigslot 9
	check "$b: signal handler locking the contended mutex: no hang ($(head -n 1 "$tmp/out"))" \
		"$(cat "$tmp/rc") == 0"

	shim_test_config 0 1 1 >"$tmp/cfg"
	run "$lib" 60 errcheck 1000
	a=$(addr ec)
	check "$b: error-checking relock (EDEADLK): $(count BLOCK "$a") BLOCK records, 0 expected" \
		"$(cat "$tmp/rc") == 0 && $(count BLOCK "$a") == 0 && $(count MUTEX "$a") == 0"

	run "$lib" 60 clocklock 200
	a=$(addr m)
	check "$b: pthread_mutex_clocklock timed: $(count BLOCK "$a") BLOCK, $(count MUTEX "$a") MUTEX records" \
		"$(cat "$tmp/rc") == 0 && $(count BLOCK "$a") > 0 && $(count MUTEX "$a") > 0"

	# The fp unwinder in threads that only contend (heap sampling off):
	# a lock's sample may not learn the thread's bounds (it would allocate
	# under what may be the allocator's lock), and then recorded no stack
	# at all (review helper-27: 0 BLOCK, 0 MUTEX).
	KPPROF_UNWIND=fp run "$lib" 60 clocklock 200
	a=$(addr m)
	check "$b fp: threads that only contend: $(count BLOCK "$a") BLOCK, $(count MUTEX "$a") MUTEX records" \
		"$(cat "$tmp/rc") == 0 && $(count BLOCK "$a") > 0 && $(count MUTEX "$a") > 0"

	run "$lib" 60 rwtimed 200
	a=$(addr rw)
	check "$b: timed and clock rwlocks timed: $(count BLOCK "$a") BLOCK records" \
		"$(cat "$tmp/rc") == 0 && $(count BLOCK "$a") > 0"

	# 80 waiters on one mutex at once; the table has room for 56 (8 slots
	# of 7 in its probe window): at least 24 are counted.
	run "$lib" 60 manywaiters 80
	n=$(sed -n 's/.*mutex waits not registered (wait table full) \([0-9]*\).*/\1/p' "$tmp/err")
	check "$b: waiters without room in the wait table counted: ${n:-no counter} (>= 24)" \
		"$(cat "$tmp/rc") == 0 && ${n:-0} >= 24"
done
tap_done
