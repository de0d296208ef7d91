#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Tests of scripts/vm-run itself, run on the host (each case boots the VM,
# about 5 s under TCG, so they are few): exit status, output, KPPROF_*
# passing, the read-write working directory, and each way a run must fail
# (dmesg warning, panic, timeout, missing module, rmmod failure).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
vmrun=$top/scripts/vm-run

work=$(mktemp -d /tmp/vm-run-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# vm_in DIR ARGS...: runs vm-run from DIR; sets rc, out (stdout), err
# (stderr).  One guest CPU: nothing here needs two, and the machine is
# shared.  vm ARGS...: from $work.
vm_in() {
	local dir=$1
	shift
	(cd "$dir" && "$vmrun" --cpus 1 "$@" >"$work/.out" 2>"$work/.err")
	rc=$?
	out=$(cat "$work/.out") err=$(cat "$work/.err")
}
vm() { vm_in "$work" "$@"; }
# expect NAME COND...: ok if COND holds, else not ok with what vm-run said.
expect() {
	local name=$1
	shift
	if "$@"; then
		tap_ok "$name"
	else
		tap_diag "exit status $rc; stdout:" "$out" "stderr:" "$err"
		tap_fail "$name"
	fi
}

tap_plan 21

# The working directory is under /tmp on purpose: the guest mounts a fresh
# tmpfs on /tmp, and the share must still land on top of it.
KPPROF_VMTEST_VALUE="a b'c" vm --no-module -- \
	bash -c 'echo out-line; echo err-line >&2; echo "$KPPROF_VMTEST_VALUE"; echo written >file'
expect "exit status 0 comes back" test $rc -eq 0
expect "stdout and stderr of CMD, nothing else, on stdout" \
	test "$out" = "out-line"$'\n'"err-line"$'\n'"a b'c"
expect "a file written in the guest's cwd is on the host" \
	test "$(cat "$work/file" 2>/dev/null)" = written

# One boot for two rules: a failing CMD's own status wins over the dmesg verdict.
vm --no-module -- sh -c 'echo "WARNING: vm-run self-test line" >/dev/kmsg; exit 3'
expect "exit status 3 comes back" test $rc -eq 3
expect "a WARNING in dmesg fails the run" \
	eval '[[ $err == *"FAILED (dmesg)"*"WARNING: vm-run self-test line"* ]]'

vm --no-module -- sh -c 'echo c >/proc/sysrq-trigger'
expect "a guest panic fails the run, its panic line in the FAILED line" \
	eval '[ $rc -ne 0 ] && [[ $err == *"FAILED (panic): the guest kernel panicked (first sign: "*"Kernel panic - not syncing: sysrq triggered crash"* ]]'

# A panic before init's "run begins" marker is the boot's: no module, no test
# (scripts/check boots such a list once more).  No init: the kernel panics.
KPPROF_VM_APPEND=rdinit=/nonexistent vm --no-module -- true
expect "a panic while booting is a boot failure, its panic line named" \
	eval '[ $rc -eq 125 ] && [[ $err == *"FAILED (boot): the guest kernel panicked while booting, before the run began"*"Kernel panic - not syncing: VFS"* ]]'

# 20 s: on an idle machine the guest's own deadline (10 s before the host's)
# kills CMD and reports; on a busy one the boot eats it and the host does.
vm --no-module --timeout 20 -- sleep 600
# (On a machine so busy that the boot itself takes 20 s, the boot deadline
# stops it first: a boot timeout.)
expect "--timeout stops a hung command" \
	eval '[ $rc -ne 0 ] && [[ $err == *"FAILED (timeout)"* || $err == *"FAILED (boot): no result within 20 s while booting"* ]]'

# The boot deadline: a guest that has not reached init's "run begins" by
# then is stopped, a boot failure, with the set-up step it was in.
KPPROF_VM_BOOT_TIMEOUT=2 vm --no-module -- true
expect "KPPROF_VM_BOOT_TIMEOUT stops a boot that has not reached the run" \
	eval '[ $rc -eq 124 ] && [[ $err == *"FAILED (boot): no result within 2 s while booting, before the run began"* ]]'
KPPROF_VM_BOOT_TIMEOUT=soon vm --no-module -- true
expect "a bad KPPROF_VM_BOOT_TIMEOUT is refused before any boot" \
	eval '[ $rc -eq 2 ] && [[ $err == *"KPPROF_VM_BOOT_TIMEOUT wants seconds, got '"'"'soon'"'"'"* ]]'

# A set-up step (module, 9p mount) still running at the guest deadline is
# named and dumped on the console: here a deadline already past (the last
# kppvm_deadline on the command line wins) fires during the first step.
KPPROF_VM_KEEP=1 KPPROF_VM_APPEND=kppvm_deadline=1 vm --no-module -- true
kept=$(sed -n 's/^vm-run: kept //p' <<<"$err")
expect "a set-up past the guest deadline is named and its blocked tasks dumped" \
	eval '[ $rc -eq 0 ] && grep -q "kpprof-vm: set-up not done at the deadline, in step: modules" "$kept/console.log" &&
		grep -q "sysrq: Show Blocked State" "$kept/console.log"'
[ -z "$kept" ] || rm -rf "$kept"

# Stopping vm-run (Ctrl-C, a test runner's timeout) must not leave qemu behind.
(cd "$work" && exec "$vmrun" --cpus 1 --no-module -- sleep 600 >/dev/null 2>"$work/.err") &
vpid=$!
guest="path=$work,mount_tag=hostcwd"
for _ in $(seq 60); do
	pgrep -f -- "$guest" >/dev/null && break
	sleep 0.5
done
kill -TERM $vpid
wait $vpid
rc=$? out='' err=$(cat "$work/.err")
for _ in $(seq 20); do
	pgrep -f -- "$guest" >/dev/null || break
	sleep 0.5
done
expect "a stopped vm-run stops its guest" \
	eval '[ $rc -ne 0 ] && ! pgrep -f -- "$guest" >/dev/null && [[ $err == *"stopped the guest"* ]]'

KPPROF_KO=/nonexistent/kpprof.ko vm -- true
expect "a missing module is named" \
	eval '[ $rc -ne 0 ] && [[ $err == *"/nonexistent/kpprof.ko not found"* ]]'

# With the real module: it is loaded (its device exists) and vm-run notices
# when it cannot be removed at the end (here because CMD removed it).
ko=$top/build/module/$("$top/scripts/kernels" --default)/kpprof.ko
if [ -f "$ko" ]; then
	KPPROF_KO=$ko vm -- sh -c 'test -c /dev/kpprof && echo device-present; rmmod kpprof'
	expect "kpprof.ko is loaded; a failed rmmod fails the run" \
		eval '[ $rc -ne 0 ] && [ "$out" = device-present ] && [[ $err == *"FAILED (rmmod)"* ]]'
else
	tap_skip "kpprof.ko is loaded; a failed rmmod fails the run" "no $ko (make module)"
fi

# Every guest runs on one host thread (TCG thread=single: multi-threaded TCG
# crashes guest kernels that patch their own text, see vm-run), with two
# vCPUs as make check boots them and with more vCPUs than host cores, and
# the guest has them all.
cores=$(nproc)
KPPROF_VM_SHOW_QEMU=1 vm --no-module --cpus 2 -- nproc
expect "--cpus 2: TCG thread=single, the guest sees 2" \
	eval '[ $rc -eq 0 ] && [ "$out" = 2 ] && [[ $err == *"tcg,thread=single"* ]] && [[ $err != *"thread=multi"* ]]'
KPPROF_VM_SHOW_QEMU=1 vm --no-module --cpus $((cores + 2)) -- nproc
expect "--cpus beyond the host's cores: TCG thread=single, the guest sees them all" \
	eval '[ $rc -eq 0 ] && [ "$out" = $((cores + 2)) ] && [[ $err == *"tcg,thread=single"* ]]'
KPPROF_VM_TCG_THREAD=many vm --no-module -- true
expect "a bad KPPROF_VM_TCG_THREAD is refused before any boot" \
	eval '[ $rc -eq 2 ] && [[ $err == *"KPPROF_VM_TCG_THREAD wants single or multi, got '"'"'many'"'"'"* ]]'

# --kernel: another kernel of the matrix boots, with the module built for it
# (build/module/RELEASE, 'make module-matrix'), named to the guest's tests.
vm --kernel no-such-kernel -- true
expect "--kernel with an unknown release fails and names the matrix" \
	eval '[ $rc -eq 125 ] && [[ $err == *"no installed kernel no-such-kernel"* ]] && [[ $err == *"the matrix is: "* ]]'
other=$("$top/scripts/kernels" 2>/dev/null | tail -n 1)
default=$("$top/scripts/kernels" --default 2>/dev/null)
if [ -z "$other" ] || [ "$other" = "$default" ]; then
	tap_skip "--kernel boots that kernel with its own module" "the matrix has one kernel (scripts/kernels)"
	tap_skip "--kernel refuses a module built for another kernel" "the matrix has one kernel"
elif [ ! -f "$top/build/module/$other/kpprof.ko" ] || [ ! -f "$top/build/module/$default/kpprof.ko" ]; then
	tap_skip "--kernel boots that kernel with its own module" "no build/module/$other/kpprof.ko or build/module/$default/kpprof.ko (make module-matrix)"
	tap_skip "--kernel refuses a module built for another kernel" "same"
else
	vm --kernel "$other" -- sh -c 'uname -r; test -c /dev/kpprof && echo device-present; echo "$KPPROF_KO"'
	expect "--kernel boots that kernel with its own module" \
		test "$rc:$out" = "0:$other"$'\n'"device-present"$'\n'"/run/kpprof-vm/kpprof.ko"
	KPPROF_KO=$top/build/module/$default/kpprof.ko vm --kernel "$other" -- true
	expect "--kernel refuses a module built for another kernel" \
		eval '[ $rc -eq 125 ] && [[ $err == *"is built for $default, the VM boots $other"* ]]'
fi

# The guest kernel patches its own text while another vCPU runs it and lives
# (text_patch_test.sh).  On the last kernel of the matrix (6.12-rt), a
# multi-threaded TCG guest died within 300 static-key flips in 5 boots of 5;
# 6.1 outlived 300 once, so the test boots the other kernel.  A skip (one
# vCPU, no sched_schedstats) flips nothing: it fails the case.
if [ -z "$other" ] || [ "$other" = "$default" ]; then
	tap_skip "a 2-vCPU guest survives 300 static-key flips while it schedules" "the matrix has one kernel"
else
	# From $top: the guest hides the host's /tmp but for the working
	# directory, and the tree may lie there (a clone under /tmp).
	KPPROF_TEXT_PATCH_FLIPS=300 vm_in "$top" --no-module --kernel "$other" --cpus 2 -- selftests/vm/text_patch_test.sh
	expect "a 2-vCPU guest ($other) survives 300 static-key flips while it schedules" \
		eval '[ $rc -eq 0 ] && [[ $out == *"ok 2 300 static-key flips while another vCPU forks and schedules"* ]] && [[ $out != *"# SKIP"* ]]'
fi
tap_done
