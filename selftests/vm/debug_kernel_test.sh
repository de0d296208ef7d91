#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The debug kernel (scripts/vm-run --kernel debug) really is one: its
# checkers are on, and lockdep is still on at the end of the run (it turns
# itself off after its first report, so a report earlier in the run shows
# here as well as in vm-run's dmesg scan).  Listed in selftests/vm/debug.list,
# which scripts/check runs on the debug kernel only, after the other tests.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"

tap_plan 5
log=$(dmesg 2>&1)
has() { grep -q "$1" <<<"$log"; }
tap_check "dmesg says KernelAddressSanitizer initialized" has 'KernelAddressSanitizer initialized'
tap_check "dmesg says kfence: initialized" has 'kfence: initialized'
tap_check "/proc/lockdep exists (PROVE_LOCKING)" test -r /proc/lockdep
if grep -qE '^ *debug_locks: *1$' /proc/lockdep_stats 2>/dev/null; then
	tap_ok "lockdep still active (debug_locks: 1)"
else
	tap_fail "lockdep still active (debug_locks: 1)" "$(grep debug_locks /proc/lockdep_stats 2>&1)"
fi
if [ -n "${KPPROF_KO:-}" ] && modinfo -F vermagic "$KPPROF_KO" 2>/dev/null | grep -q "^$(uname -r) "; then
	tap_ok "the module under test is built for this kernel ($(uname -r))"
else
	tap_fail "the module under test is built for this kernel ($(uname -r))" "KPPROF_KO=${KPPROF_KO:-unset}"
fi
tap_done
