#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15 (the foreign suites: Python's test_subprocess
# test_pass_fds_redirected lists a child's descriptors): in test mode with
# the emulated ring (KPPROF_TEST_RING=1), as with the module, the program
# sees no descriptor of ours once it has sampled: the sink's descriptor is
# closed when the ring is mapped (pring.c), each drain opens the sink for
# its writev.  kpprof_fds samples at rate 1, forks a child that does the
# same, and counts each process's descriptors on the sink; the records of
# both must still reach the sink.
# usage: selftests/shim/fd_ring_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=60	# seconds: longer is a hang

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
: >"$tmp/none"

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	rm -f "$tmp/sink"
	out=$(KPPROF_TEST_RING=1 KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
		KPPROF_TEST_SINK=$tmp/sink LD_PRELOAD=$lib \
		timeout -s KILL $T "$d/kpprof_fds" --fork "$tmp/sink" 2>&1); rc=$?
	[ $rc = 0 ] && tap_ok "$b: no descriptor on the sink after sampling, parent and fork child" ||
		tap_fail "$b: descriptors on the sink after sampling" "rc $rc: $(tr '\n' ' ' <<<"$out")"

	# Each process mallocs 100 blocks at rate 1 (the child's after
	# fork), beside what libc allocates itself: 200 ALLOC records at least.
	allocs=$("$d/shim_reader" --decode "$tmp/sink" 2>/dev/null | grep -c '^ALLOC ')
	[ "$allocs" -ge 200 ] && tap_ok "$b: the drains reach the sink ($allocs ALLOC records)" ||
		tap_fail "$b: the drains reach the sink" "$allocs ALLOC records, 200 expected"
done
tap_done
