#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/vm-run's verdict from what a guest left behind, without a VM: a
# scratch tree runs the real vm-run with a stub qemu that writes the console
# log and the status file the way scripts/vm/init does, then exits as a
# guest that panicked, stopped or hung would.  Checked: a guest whose init
# wrote "begins" to the status file (kpprof.ko about to be loaded) is never
# a "boot" failure, even when its console lost the marker (a console below
# the marker's log level, a console printed by a kthread, a reset that
# flushed nothing); the exit status stays 125/124 when the console after
# the first sign of trouble is long; console lines with CRs and bytes that
# are not UTF-8 give one clean FAILED line.  The boot deadline
# (KPPROF_VM_BOOT_TIMEOUT): a guest that has not begun by then is stopped,
# a "boot" timeout of that many seconds; one that began (either witness,
# the status file's "begins" or the console marker) is left to the run's
# own timeout; a run timeout below the boot deadline caps it; bad values
# are refused.
#
# usage: selftests/vm/vm_run_verdict_test.sh [REV]   REV: take scripts/vm-run
#        from that git revision, default the working tree.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
rev=${1:-}
work=$(mktemp -d /tmp/vm-run-verdict.XXXXXX)
trap 'rm -rf "$work"' EXIT

t=$work/t
mkdir -p "$t/scripts/vm" "$t/build/vm/6.1.0-stub" "$t/bin" "$t/cwd"
if [ -n "$rev" ]; then
	git -C "$top" show "$rev:scripts/vm-run" >"$t/scripts/vm-run"
else
	cp "$top/scripts/vm-run" "$t/scripts/vm-run"
fi
printf '#!/bin/sh\necho 6.1.0-stub\n' >"$t/scripts/kernels"
printf '#!/bin/sh\n: >"$2"\n' >"$t/scripts/vm/mkinitramfs"
: >"$t/kernel"
# The stub guest: STUB_CONSOLE (a file) becomes the console log,
# STUB_STATUS (a file) the status file; exits with STUB_RC (qemu's status:
# 1 after isa-debug-exit, 0 after a panic with -no-reboot) or, with
# STUB_HANG=1, sleeps until vm-run's timeout ends it.  STUB_SCRIPT (bash,
# with $run and $con) runs before that: a guest that begins later.
# STUB_APPEND (a file) receives the kernel command line.
cat >"$t/bin/qemu-system-x86_64" <<-'EOF'
	#!/bin/bash
	while [ $# -gt 0 ]; do
		case $1 in
		file,id=con,path=*) con=${1#file,id=con,path=} ;;
		-append) [ -z "${STUB_APPEND:-}" ] || echo "$2" >"$STUB_APPEND" ;;
		esac
		shift
	done
	run=$(dirname "$con")
	cp "$STUB_CONSOLE" "$con"
	[ -z "${STUB_STATUS:-}" ] || cp "$STUB_STATUS" "$run/status"
	[ -z "${STUB_SCRIPT:-}" ] || eval "$STUB_SCRIPT"
	[ "${STUB_HANG:-0}" = 0 ] || exec sleep 60
	exit "${STUB_RC:-0}"
EOF
chmod +x "$t/scripts/vm-run" "$t/scripts/kernels" "$t/scripts/vm/mkinitramfs" "$t/bin/qemu-system-x86_64"

# vm [ENV...]: runs the scratch vm-run (--timeout $vt, default 3); sets
# rc, err (its stderr) and secs (its wall time).
vm() {
	local t0=$SECONDS
	(cd "$t/cwd" && env PATH="$t/bin:$PATH" KPPROF_VM_KERNEL="$t/kernel" "$@" \
		"$t/scripts/vm-run" --no-module --timeout "${vt:-3}" -- true >/dev/null 2>"$work/err")
	rc=$?
	secs=$((SECONDS - t0))
	err=$(cat "$work/err")
}
# expect NAME COND...: ok if COND holds, else not ok with what vm-run said.
expect() {
	local name=$1
	shift
	if "$@"; then
		tap_ok "$name"
	else
		tap_diag "exit status $rc; stderr:" "$(head -n 20 <<<"$err")"
		tap_fail "$name"
	fi
}
failed() { grep -a '^vm-run: FAILED' <<<"$err"; }

tap_plan 18

boot='[    0.000000] Linux version 6.1.0-stub
[    1.000000] Run /init as init process
[    1.100000] kpprof-vm: set-up: modules
[    2.000000] kpprof-vm: set-up: modprobe tcp_diag'
panic='[    3.000000] kpprof: loading out-of-tree module taints kernel.
[    3.100000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[    3.200000] Modules linked in: kpprof(OE) tcp_diag
[    3.300000] Kernel panic - not syncing: Fatal exception'

# 1. init wrote "begins" before insmod; the console lost the marker.
printf '%s\n' "$boot" "$panic" >"$work/con"
printf 'begins\n' >"$work/st"
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_RC=0
expect "a panic after init's 'begins' status line is a panic, not a boot failure" \
	eval '[ $rc = 125 ] && [[ $(failed) == "vm-run: FAILED (panic): the guest kernel panicked ("* ]]'

# 2. the same guest, hung instead: a timeout, not a boot failure.
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_HANG=1
expect "a hang after init's 'begins' status line is a timeout, not a boot failure" \
	eval '[ $rc = 124 ] && [[ $(failed) == "vm-run: FAILED (timeout): "* ]] && [[ $(failed) != *"while booting"* ]]'

# 3. no marker anywhere: the boot's.
printf '%s\n' "$boot" '[    2.500000] Kernel panic - not syncing: VFS: Unable to mount root fs' >"$work/con"
vm STUB_CONSOLE="$work/con" STUB_RC=0
expect "a panic with no marker and no 'begins' line is a boot failure" \
	eval '[ $rc = 125 ] && [[ $(failed) == "vm-run: FAILED (boot): the guest kernel panicked while booting"*"VFS: Unable to mount root fs"* ]]'

# 4. CRs (the serial console's line ends) and bytes that are not UTF-8.
printf '%s\r\n' "$boot" '[    2.900000] kpprof-vm: run begins' \
	$'[    3.100000] BUG: KASAN: slab-out-of-bounds in kpp_\xff\xfe_read' \
	'[    3.300000] Kernel panic - not syncing: KASAN: panic_on_warn set ...' >"$work/con"
vm STUB_CONSOLE="$work/con" STUB_RC=0
expect "console lines with CRs and bad bytes: one printable FAILED line, both lines named" \
	eval '[ $rc = 125 ] && [ "$(failed | wc -l)" = 1 ] && ! failed | LC_ALL=C grep -q "[^[:print:]]" &&
		[[ $(failed) == *"first sign: [    3.100000] BUG: KASAN: slab-out-of-bounds in kpp__read; Kernel panic - not syncing: KASAN"* ]]'
expect "... the console excerpt starts at that first sign" \
	eval '[[ $err == *"guest console from line 6:"$'"'\n'"'"  | [    3.100000] BUG: KASAN"* ]]'

# 5. a long console after the first sign (a debug kernel's reports): the
# excerpt is cut, the exit status is still the panic's.
{
	printf '%s\n' "$boot" '[    2.900000] kpprof-vm: run begins' '[    3.100000] WARNING: CPU: 0 PID: 1 at kmod/x.c:1'
	for i in $(seq 20000); do echo "[    3.2] lockdep line $i of a long report, padded to a realistic width"; done
	echo '[    9.000000] Kernel panic - not syncing: kernel: panic_on_warn set ...'
} >"$work/con"
printf 'begins\n' >"$work/st"
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_RC=0
expect "a long console after the first sign: exit status 125, the excerpt cut" \
	eval '[ $rc = 125 ] && [[ $(failed) == "vm-run: FAILED (panic): "*"WARNING: CPU: 0"* ]] && [[ $err != *"line 20000 "* ]]'

# 6. a set-up dump longer than the excerpt, the guest killed by the timeout.
{
	printf '%s\n' "$boot" '[  290.000000] kpprof-vm: set-up not done at the deadline, in step: 9p mount of the host root; blocked tasks and CPUs follow'
	for i in $(seq 20000); do echo "[  290.1] task dump line $i, padded to a realistic width for a kernel stack line"; done
} >"$work/con"
vm STUB_CONSOLE="$work/con" STUB_HANG=1
expect "a long set-up dump at a timeout: exit status 124, the step named, the dump cut" \
	eval '[ $rc = 124 ] && [[ $(failed) == "vm-run: FAILED (boot): no result within 3 s while booting"*"in step: 9p mount of the host root)" ]] &&
		[[ $err != *"line 20000,"* ]]'

# 7. a guest that stopped with no panic line (a triple fault: qemu exits 0
# with -no-reboot) after "begins": not the boot's.
printf '%s\n' "$boot" >"$work/con"
printf 'begins\n' >"$work/st"
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_RC=0
expect "a guest that stopped silently after 'begins' is a panic, not a boot failure" \
	eval '[ $rc = 125 ] && [[ $(failed) == "vm-run: FAILED (panic): the guest stopped before finishing (qemu status 0)" ]]'

# 8. a soft lockup (a report that does not panic), then the guest hangs.
printf '%s\n' "$boot" '[    2.900000] kpprof-vm: run begins' \
	'[   60.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [kpprof:123]' >"$work/con"
printf 'begins\n' >"$work/st"
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_HANG=1
expect "a hang after a soft lockup: the timeout's FAILED line names it" \
	eval '[ $rc = 124 ] && [[ $(failed) == "vm-run: FAILED (timeout): no result within 3 s (first sign: "*"BUG: soft lockup - CPU#0 stuck for 26s! [kpprof:123])" ]]'

# 9. a clean run still passes through the stub (the harness itself works).
printf '%s\n' "$boot" '[    2.900000] kpprof-vm: run begins' '[    4.000000] kpprof-vm: run ends' >"$work/con"
printf 'begins\nrc 0\ndone\n' >"$work/st"
vm STUB_CONSOLE="$work/con" STUB_STATUS="$work/st" STUB_RC=1
expect "a clean run: exit status 0, no FAILED line" eval '[ $rc = 0 ] && [ -z "$(failed)" ]'

# 10. the boot deadline: a guest that hangs before it begins is stopped
# then, a boot timeout of that many seconds, long before the run's own.
printf '%s\n' "$boot" >"$work/con"
vt=40 vm STUB_CONSOLE="$work/con" STUB_HANG=1 KPPROF_VM_BOOT_TIMEOUT=2
expect "a boot hang is stopped at the boot deadline (2 s of 40; took $secs s)" \
	eval '[ $rc = 124 ] && [ $secs -lt 30 ] &&
		[[ $(failed) == "vm-run: FAILED (boot): no result within 2 s while booting"* ]]'

# 11-12. a guest that began before the deadline runs on past it, whichever
# witness shows it: the status file's line (the console lost the marker),
# or the console marker (the status line comes later).
printf 'rc 0\ndone\n' >"$work/st"
vt=40 vm STUB_CONSOLE="$work/con" KPPROF_VM_BOOT_TIMEOUT=2 STUB_RC=1 \
	STUB_SCRIPT='sleep 1; echo begins >"$run/status"; sleep 4; cat "$STUB_ST" >>"$run/status"' STUB_ST="$work/st"
expect "a guest whose status says 'begins' at 1 s is not stopped at the 2 s boot deadline" \
	eval '[ $rc = 0 ] && [ -z "$(failed)" ]'
vt=40 vm STUB_CONSOLE="$work/con" KPPROF_VM_BOOT_TIMEOUT=2 STUB_RC=1 \
	STUB_SCRIPT='sleep 1; echo "[    2.9] kpprof-vm: run begins" >>"$con"; sleep 4
		{ echo begins; cat "$STUB_ST"; } >"$run/status"' STUB_ST="$work/st"
expect "a guest whose console says 'run begins' at 1 s is not stopped at the 2 s boot deadline" \
	eval '[ $rc = 0 ] && [ -z "$(failed)" ]'

# 13. a guest that began, then hung (the module's or a test's failure): the
# run's own timeout ends it, a timeout, never a boot failure.
vt=7 vm STUB_CONSOLE="$work/con" KPPROF_VM_BOOT_TIMEOUT=2 STUB_HANG=1 \
	STUB_SCRIPT='sleep 1; echo begins >"$run/status"'
expect "a hang after 'begins' runs to the run's timeout (7 s; took $secs s), not the boot deadline" \
	eval '[ $rc = 124 ] && [ $secs -ge 6 ] &&
		[[ $(failed) == "vm-run: FAILED (timeout): no result within 7 s"* ]] && [[ $(failed) != *"while booting"* ]]'

# 14. a run timeout below the boot deadline caps it: the guest's set-up
# watchdog (kppvm_deadline, 10 s before the boot deadline) fires within it.
now=$(date +%s)
vt=30 vm STUB_CONSOLE="$work/con" STUB_HANG=1 KPPROF_VM_BOOT_TIMEOUT=600 STUB_APPEND="$work/append" \
	STUB_SCRIPT='exit 0'
dl=$(sed -n 's/.*kppvm_deadline=\([0-9]*\).*/\1/p' "$work/append" 2>/dev/null)
expect "a 30 s run caps the 600 s boot deadline (guest deadline $((${dl:-0} - now)) s after the start)" \
	eval '[ -n "$dl" ] && [ $((dl - now)) -le 23 ] && [ $((dl - now)) -ge 19 ]'

# 17. the guest begins between the watcher's last look and its signal (a
# stub that writes "begins" when TERMed): the boot's, which check retries,
# not a timeout of the run.
vt=40 vm STUB_CONSOLE="$work/con" KPPROF_VM_BOOT_TIMEOUT=2 \
	STUB_SCRIPT='trap "echo begins >\"\$run/status\"; exit 0" TERM; sleep 60 & wait'
expect "a guest that begins as the boot deadline stops it is a boot failure" \
	eval '[ $rc = 124 ] && [[ $(failed) == "vm-run: FAILED (boot): no result within 2 s while booting"* ]]'

# 18-19. bad values: a clear refusal, no guest started.
for v in 0 1x; do
	vm STUB_CONSOLE="$work/con" KPPROF_VM_BOOT_TIMEOUT=$v STUB_APPEND="$work/append.$v"
	expect "KPPROF_VM_BOOT_TIMEOUT=$v is refused (exit status 2, no guest)" \
		eval '[ $rc = 2 ] && [[ $err == *"KPPROF_VM_BOOT_TIMEOUT wants"* ]] && [ ! -e "$work/append.$v" ]'
done
tap_done
