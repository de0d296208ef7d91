#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15 on the host (KPPROF_TEST_CONFIG at rate 1, records to a sink):
# the shim's sampling paths never call into the loader, never wait, never
# block signals, and follow processes it has no atfork handler for.
#   - abba: a dl_iterate_phdr callback that allocates beside a dlopen/
#     dlclose loop (review §1.2): no hang in 6 runs, and SIGTERM ends it;
#   - ctorfork: a plugin constructor forks while another thread takes its
#     first samples (§1.5);
#   - stale: _Fork() and clone() children of a sampling parent fork again
#     (§1.8): none hangs;
#   - child: a clone() child sends COMM (FORK) and its own MMAP records
#     before its samples, like a fork() child (§1.8);
#   - vfork_close: a vfork child that closes every descriptor and execs
#     does not stop the parent (§11): the parent's later samples are sent;
#   - vfork_exit: nor does a vfork child that calls exit(), which runs
#     the shim's destructor in the parent's memory (with a ring and
#     without);
#   - cancel: a thread cancelled inside a sampling path leaves nothing
#     behind that makes a later fork hang (§1.13);
#   - exit: no record after COMM (EXIT) while threads sample during exit();
#   - exit_free: nor while a thread frees sampled blocks during exit();
#   - strace: no rt_sigprocmask per sample (§3.4).
# Every process runs under timeout(1); a hang is a failure, not a stall.
# usage: selftests/shim/fork_safety_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

# fs LIB ARGS...: fork_safety under the shim, sink reset, 60 s bound.
fs() {
	local lib=$1
	shift
	rm -f "$tmp/sink"
	timeout -s KILL 60 env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$tmp/sink" \
		LD_PRELOAD="$lib" "$d/fork_safety" "$@" 2>&1
	echo "exit $?"
}
decode() { "$d/shim_reader" --decode "$tmp/sink"; }

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	bad=
	for i in 1 2 3 4 5 6; do
		got=$(fs "$lib" abba 4 "$d/libshim_plugin.so")
		[ "$got" = $'abba: ok\nexit 0' ] || { bad="run $i: $got"; break; }
	done
	[ -z "$bad" ] && tap_ok "$b: abba: allocating dl_iterate_phdr callback beside dlopen/dlclose, 6 runs, no hang" ||
		tap_fail "$b: abba" "$bad"

	# SIGTERM in the middle of it: the process must end by that signal.
	env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK=/dev/null LD_PRELOAD="$lib" \
		"$d/fork_safety" abba 30 "$d/libshim_plugin.so" >/dev/null 2>&1 &
	pid=$!
	sleep 2
	kill -TERM "$pid"
	gone=0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || { gone=1; break; }
		sleep 0.1
	done
	[ "$gone" = 1 ] || kill -KILL "$pid"
	wait "$pid"
	rc=$?
	[ "$gone" = 1 ] && [ "$rc" = 143 ] && tap_ok "$b: abba: SIGTERM ends it within 10 s" ||
		tap_fail "$b: abba: SIGTERM" "gone $gone, exit status $rc"

	got=$(fs "$lib" ctorfork "$d/libfork_safety_ctor.so")
	[ "$got" = $'ctorfork: ok\nexit 0' ] &&
		tap_ok "$b: ctorfork: a constructor forks beside a first sample" ||
		tap_fail "$b: ctorfork" "$got"

	for how in _Fork clone; do
		got=$(fs "$lib" stale $how 6)
		[ "$got" = "stale $how: 0 of 6 children hung"$'\nexit 0' ] &&
			tap_ok "$b: stale: 6 $how children of a sampling parent fork again, none hangs" ||
			tap_fail "$b: stale $how" "$got"
	done

	# The child's records follow the parent's first FREE: COMM (FORK),
	# then MMAP before its first ALLOC.
	for how in fork clone; do
		got=$(fs "$lib" child $how)
		kinds=$(decode | awk '$1 == "FREE" && !f { f = 1; next }
			f && $1 == "COMM" { printf "COMM%s ", $5; next }
			f && $1 == "MMAP" && !m { m = 1; printf "MMAP " }
			f && $1 == "ALLOC" { print "ALLOC"; exit }')
		[ "$got" = "child $how: ok"$'\nexit 0' ] && [ "$kinds" = "COMM1 MMAP ALLOC" ] &&
			tap_ok "$b: child: a $how child sends COMM (FORK) and its mappings before its samples" ||
			tap_fail "$b: child $how" "$got; after the parent's sample: $kinds"
	done

	got=$(fs "$lib" vfork_close 50)
	n=$(decode | awk '$1 == "ALLOC" && $6 == 100000' | wc -l)
	[ "$got" = $'vfork_close: ok\nexit 0' ] && [ "$n" -eq 50 ] &&
		tap_ok "$b: vfork_close: the parent samples on after a vfork child closed every fd (50 of 50)" ||
		tap_fail "$b: vfork_close" "$got; parent's samples after the child: $n of 50"

	# exit() in the vfork child runs the shim's destructor in the
	# parent's memory: before the fix, COMM (EXIT) right there and not
	# one sample more (0 of 50), in a parent with a ring (the emulated
	# one) and, until the getpid was made at every exit, in one without
	# (records by write(2), as a process that never sampled submits by
	# ioctl).  The parent execs at the end, which drains the ring (its
	# exit would not: the child's _dl_fini marked the destructors run).
	for ring in 1 0; do
		got=$(KPPROF_TEST_RING=$ring fs "$lib" vfork_exit 50)
		n=$(decode | awk '$1 == "ALLOC" && $6 == 100000' | wc -l)
		early=$(decode | awk '$1 == "COMM" && $5 == 3 { e++ } $1 == "ALLOC" && $6 == 100000 && e { n++ }
			END { print n + 0 }')
		[ "$got" = $'vfork_exit: ok\nexit 0' ] && [ "$n" -eq 50 ] && [ "$early" -eq 0 ] &&
			tap_ok "$b: vfork_exit (ring $ring): the parent samples on after a vfork child's exit() (50 of 50), no EXIT before" ||
			tap_fail "$b: vfork_exit (ring $ring)" "$got; parent's samples after the child: $n of 50, $early after an EXIT"
	done

	got=$(fs "$lib" cancel 8)
	[ "$got" = $'cancel: 0 of 8 forks hung\nexit 0' ] &&
		tap_ok "$b: cancel: a thread cancelled while sampling, then fork: none hangs" ||
		tap_fail "$b: cancel" "$got"

	# exit_last MODE: of 10 runs of fork_safety MODE, how many did not end
	# "MODE: ok" with COMM (EXIT) as the last record
	exit_last() {
		local bad=0 got last
		for _ in $(seq 10); do
			got=$(fs "$lib" "$1")
			last=$(decode | tail -n 1 | awk '{ print $1 $5 }')
			[ "$got" = "$1: ok"$'\nexit 0' ] && [ "$last" = COMM3 ] || bad=$((bad + 1))
		done
		echo $bad
	}
	bad=$(exit_last exit)
	[ "$bad" = 0 ] && tap_ok "$b: exit: COMM (EXIT) is the last record, 10 runs" ||
		tap_fail "$b: exit" "$bad of 10 runs with records after EXIT (or failed)"
	# A thread freeing sampled blocks while main returns: its FREEs must
	# stop at EXIT too (they pass no sampling path).
	bad=$(exit_last exit_free)
	[ "$bad" = 0 ] && tap_ok "$b: exit_free: no FREE after COMM (EXIT) from a thread freeing during exit(), 10 runs" ||
		tap_fail "$b: exit_free" "$bad of 10 runs with records after EXIT (or failed)"

	# No signal-mask syscall per sample: 2000 samples (each two records).
	if command -v strace >/dev/null; then
		n=$(timeout 120 strace -f -qq -c -e trace=rt_sigprocmask -o "$tmp/strace" \
			env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK=/dev/null \
			LD_PRELOAD="$lib" "$d/fork_safety" loop 2000 >/dev/null 2>&1;
			awk '$NF == "rt_sigprocmask" { print $4 }' "$tmp/strace")
		[ "${n:-0}" -lt 500 ] &&
			tap_ok "$b: strace: ${n:-0} rt_sigprocmask for 2000 samples" ||
			tap_fail "$b: strace" "$n rt_sigprocmask for 2000 samples"
	else
		tap_skip "$b: strace" "no strace"
	fi
done
tap_done
