#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A signal handler that leaves a sampling path for good, on the host in
# test mode at rate 1 (abandon.c): a siglongjmp out of the handler, or
# pthread_exit in it.  glibc runs the path's cleanup buffer (init.c's
# abandon()): the cancel state stays the program's, the count seccomp.c
# waits for comes back down (a seccomp filter installs), every private
# stack comes back (the main thread's 1000 allocations of 12345 bytes are
# all recorded after 200 threads ended mid-sample; and after 20 that ended
# inside a write into the emulated ring, abandon_ring.c: the entry is given
# up, not left to stop the drain, but not once the drain gave it up and
# another writer has its space, abandon_stale.c), and a jump that stays
# inside the handler abandons nothing.
# usage: selftests/shim/abandon_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=60	# seconds: longer is a hang (the unfixed shim spins in seccomp.c)

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

shimmed() {
	local lib=$1
	shift
	rm -f "$tmp/sink"
	KPPROF_DEBUG=1 KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
		KPPROF_TEST_SINK=$tmp/sink LD_PRELOAD=$lib timeout -s KILL $T "$@"
}

# ring_case LIB SYMBOL PATTERN WHAT PROG [ARG...]: PROG under LIB in test
# mode with the emulated ring, each ARG "OFF" replaced by the offset of the
# shim's SYMBOL (nm: the program reads the shim's state there); passes if
# it exits 0 and prints a line matching PATTERN; skipped without SYMBOL.
ring_case() {
	local lib=$1 sym=$2 pat=$3 what="$(basename "$1"): $4" off out rc a
	local args=()
	shift 4
	off=$(nm "$lib" 2>/dev/null | awk -v s="$sym" '$3 == s { print $1 }')
	if [ -z "$off" ]; then
		tap_skip "$what" "no $sym symbol (nm)"
		return
	fi
	for a in "$@"; do
		[ "$a" = OFF ] && args+=("$off") || args+=("$a")
	done
	out=$(KPPROF_TEST_RING=1 shimmed "$lib" "${args[@]}" 2>&1); rc=$?
	[ $rc = 0 ] && grep -q "$pat" <<<"$out" && tap_ok "$what" ||
		tap_fail "$what" "rc $rc: $(grep -v '^kpprof' <<<"$out")"
}

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	out=$(shimmed "$lib" "$d/abandon" jump 200 2>&1); rc=$?
	[ $rc = 0 ] && grep -q '^ok: cancel state' <<<"$out" &&
		grep -q '^ok: seccomp filter installed' <<<"$out" &&
		tap_ok "$b: 200 siglongjmps out of a handler: cancel state kept, seccomp installs" ||
		tap_fail "$b: siglongjmp out of a handler" "rc $rc: $(grep -v '^kpprof' <<<"$out")"

	out=$(shimmed "$lib" "$d/abandon" exit 200 2>&1); rc=$?
	n=$("$d/shim_reader" --decode "$tmp/sink" 2>/dev/null |
		awk '$1 == "ALLOC" && $6 == 12345' | wc -l)
	[ $rc = 0 ] && [ "$n" = 1000 ] && grep -q '^ok: seccomp filter installed' <<<"$out" &&
		tap_ok "$b: 200 threads ended by pthread_exit in a handler: 1000 of 1000 samples after, seccomp installs" ||
		tap_fail "$b: pthread_exit in a handler" "rc $rc, $n of 1000 samples after: $(grep -v '^kpprof' <<<"$out")"

	# the emulated ring: 20 threads end inside its write, half in a
	# sampling path's ALLOC, half in a FREE (the unfixed shim left each
	# entry reserved: 0 of 1000 after)
	out=$(KPPROF_TEST_RING=1 shimmed "$lib" "$d/abandon_ring" 20 2>&1); rc=$?
	n=$("$d/shim_reader" --decode "$tmp/sink" 2>/dev/null |
		awk '$1 == "ALLOC" && $6 == 12345' | wc -l)
	[ $rc = 0 ] && [ "$n" = 1000 ] &&
		grep -q '^ok: 10 threads ended in a FREE.s ring write, 10 in an ALLOC.s' <<<"$out" &&
		grep -q '^ok: seccomp filter installed' <<<"$out" &&
		tap_ok "$b: 20 threads ended inside a ring write (10 ALLOC, 10 FREE): 1000 of 1000 samples after, seccomp installs" ||
		tap_fail "$b: threads ended inside a ring write" "rc $rc, $n of 1000 samples after: $(grep -v '^kpprof' <<<"$out")"

	# a thread that leaves its ring write only after the drain gave the
	# entry up (2 s) and another thread's record took its place: the
	# cleanup leaves that record alone (abandon_stale.c; 5b2e0c5 wrote
	# its DISCARD word into it)
	out=$(KPPROF_TEST_RING=1 shimmed "$lib" "$d/abandon_stale" 2>&1); rc=$?
	[ $rc = 0 ] && grep -q '^victim intact' <<<"$out" &&
		tap_ok "$b: an entry given up by the drain before its thread left: the record over it intact" ||
		tap_fail "$b: an entry given up by the drain before its thread left" "rc $rc: $(grep -v '^kpprof' <<<"$out")"

	# a thread that ends inside a FREE's write nested in a sampling
	# path's ALLOC write: both entries given up (abandon_nested.c; 5b2e0c5
	# gave up the FREE's only and the drain stopped at the ALLOC's: 0 of
	# 1000 after)
	out=$(KPPROF_TEST_RING=1 shimmed "$lib" "$d/abandon_nested" 10 2>&1); rc=$?
	n=$("$d/shim_reader" --decode "$tmp/sink" 2>/dev/null |
		awk '$1 == "ALLOC" && $6 == 12345' | wc -l)
	[ $rc = 0 ] && [ "$n" = 1000 ] && grep -q '^ok: 10 threads ended' <<<"$out" &&
		tap_ok "$b: 10 threads ended in a FREE's write inside an ALLOC's: 1000 of 1000 samples after" ||
		tap_fail "$b: threads ended in a FREE's write inside an ALLOC's" "rc $rc, $n of 1000 samples after: $(grep -v '^kpprof' <<<"$out")"

	# asynchronous cancellation (SIGCANCEL) of allocating threads: none
	# ends inside test mode's drain and leaves it marked busy for good
	# (abandon_cancel.c; the records after are not the test: a cancel in
	# the few instructions around a reservation leaves an entry to the
	# drain's 2 s)
	ring_case "$lib" test_draining '^test_draining 0,' \
		"200 threads cancelled asynchronously: the drain not left busy" \
		"$d/abandon_cancel" 200 OFF

	# a fork from a handler inside two nested emits: the child's count of
	# emitters (seccomp.c and kpp_fini() wait for it) ends at 0, not -1
	ring_case "$lib" kpp_shards '^child emitters 0$' \
		"fork inside nested emits: the child's emitters back to 0" \
		"$d/abandon_forkcount" OFF

	# a user-level thread preempted inside a FREE's write (its handler
	# jumps to the scheduler) and resumed: glibc ran the emit's cleanup,
	# the resumed emit gives nothing back twice (5b2e0c5: emitters -1)
	ring_case "$lib" kpp_shards '^resumed: free done 1, .*emitters 0$' \
		"preempted and resumed inside a FREE's write: emitters back to 0" \
		"$d/abandon_resume" OFF

	# a handler on a sigaltstack above and below the thread's stack: a
	# jump inside it runs no cleanup, a siglongjmp out of it the emit's
	# (glibc orders them by address; abandon_altstack.c exits 0 if both)
	for where in above below; do
		ring_case "$lib" kpp_shards '^ok ' \
			"sigaltstack $where the thread's stack: a jump inside commits, one out gives up" \
			"$d/abandon_altstack" OFF $where
	done

	out=$(shimmed "$lib" "$d/abandon" inner 2000 2>&1); rc=$?
	[ $rc = 0 ] && grep -q '^ok: 2000 jumps' <<<"$out" &&
		grep -q 'samples abandoned 0,' <<<"$out" &&
		tap_ok "$b: 2000 jumps inside a handler abandon nothing" ||
		tap_fail "$b: jumps inside a handler" "rc $rc: $out"
done
tap_done
