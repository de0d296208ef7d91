#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The fork child of a process with a producer ring, on the host in test
# mode with the emulated ring (KPPROF_TEST_RING=1) at rate 1: the atfork
# child handler maps the child's own ring (pring.c,
# kpp_pring_fork_child()), with syscalls (memfd_create, ftruncate, mmap
# here; open, ioctl, mmap, close with the module).  fork_child.c:
#  - errno-nofile: the descriptor table is full, so the child's ring
#    cannot be had (EMFILE); the child still sees the errno its parent had
#    before fork() (the design rule: errno is kept).
#  - sandboxed: the parent installed a seccomp filter with prctl() (the
#    shim saw it and stopped) trapping openat, ioctl, memfd_create and
#    ftruncate; its fork child inherits the filter, and the shim must make
#    none of those calls there (SIGSYS, status 159).
# (The module's side, and the seccomp NOTE's wait in a full ring:
# fork_child_vm_test.sh.)
# usage: selftests/shim/fork_child_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
T=60	# seconds per run: longer is a hang

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

shimmed() {
	local lib=$1
	shift
	KPPROF_TEST_RING=1 KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
		KPPROF_TEST_SINK=/dev/null LD_PRELOAD=$lib timeout -s KILL $T "$@"
}

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	out=$(ulimit -n 64 && shimmed "$lib" "$d/fork_child" errno-nofile 2>&1); rc=$?
	[ $rc = 0 ] && tap_ok "$b: fork child without a descriptor for its ring keeps errno: $out" ||
		tap_fail "$b: fork child without a descriptor for its ring keeps errno" \
			"rc $rc: $(tr '\n' ' ' <<<"$out")"

	out=$(shimmed "$lib" "$d/fork_child" sandboxed 2>&1); rc=$?
	[ $rc = 0 ] && tap_ok "$b: fork child of a parent stopped by seccomp makes no syscall of ours: $out" ||
		tap_fail "$b: fork child of a parent stopped by seccomp" \
			"rc $rc: $(tr '\n' ' ' <<<"$out")"
done
tap_done
