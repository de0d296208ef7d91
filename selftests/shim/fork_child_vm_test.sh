#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The fork child of a process with a producer ring, through the module
# (run in the VM, kpprof.ko loaded), at rate 1 (fork_child.c):
#  - errno-nofile: the child's ring cannot be had (its open of /dev/kpprof
#    fails with EMFILE); fork() returns 0 with the program's errno.
#  - sandboxed: a parent stopped by a prctl() seccomp filter trapping
#    openat and ioctl: its fork child makes none of the shim's syscalls
#    (before: SIGSYS at the ring's set-up in the atfork handler).
#  - seccomp-wait 50 stalled: the consumer reads nothing (shim_reader
#    --stall-until-signal) so the rings are full when the first filter goes
#    in; the NOTE goes into the room samples leave it (pring.c
#    room_for()): one NOTE SECCOMP arrives, and 50 filters take less than
#    1 s (were that room gone, the NOTE's wait, 100 ms at most, would come
#    once per process, not once per filter).  Before e94bce0 this case
#    required the wait (at least 90 ms); the reserve made it never come.
#  - fork+exit+wait per second with and without the shim (a diagnostic).
# usage: selftests/shim/fork_child_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-forkchild.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

shimmed() {
	KPPROF_MEM_RATE=1 LD_PRELOAD="$lib" timeout -s KILL 120 "$@"
}

out=$(ulimit -n 64 && shimmed "$d/fork_child" errno-nofile 2>&1); rc=$?
[ $rc = 0 ] && tap_ok "fork child without a descriptor for its ring keeps errno: $out" ||
	tap_fail "fork child without a descriptor for its ring keeps errno" \
		"rc $rc: $(tr '\n' ' ' <<<"$out")"

out=$(shimmed "$d/fork_child" sandboxed 2>&1); rc=$?
[ $rc = 0 ] && tap_ok "fork child of a parent stopped by seccomp makes no syscall of ours: $out" ||
	tap_fail "fork child of a parent stopped by seccomp" "rc $rc: $(tr '\n' ' ' <<<"$out")"

timeout -k 10 300 "$d/shim_reader" --preload "$lib" --mem-rate 1 --depth 1 \
	--stall-until-signal --dump "$tmp/dump" -- "$d/fork_child" seccomp-wait 50 stalled \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
ms=$(sed -n 's/^filters 50 ms \([0-9]*\)$/\1/p' "$tmp/out")
lost=$(sed -n 's/^shim_reader: at signal dropped \([0-9]*\)$/\1/p' "$tmp/err")
notes=$(awk '$1 == "NOTE" && $5 == 1 { n++ } END { print n + 0 }' "$tmp/dump")
# The room samples leave (pring.c room_for()) takes the NOTE without a
# wait; were it gone, one wait of 100 ms at most, not 50.
if [ $rc = 0 ] && [ -n "$ms" ] && [ "$ms" -lt 1000 ] && [ "$notes" = 1 ] && [ "${lost:-0}" -gt 0 ]; then
	tap_ok "50 seccomp filters with the rings full: $ms ms, one NOTE SECCOMP, ${lost:-no} records dropped"
else
	tap_fail "50 seccomp filters with the rings full" \
		"rc $rc, ${ms:-no} ms, $notes NOTE, ${lost:-no} dropped: $(tr '\n' ' ' <"$tmp/err")"
fi

for who in plain shim; do
	if [ $who = shim ]; then
		r=$("$d/shim_reader" --preload "$lib" --mem-rate 1 --dump /dev/null -- \
			"$d/fork_child" rate 3 2>/dev/null)
	else
		r=$("$d/fork_child" rate 3)
	fi
	tap_diag "fork+_exit+wait, $who: $r"
done
tap_done
