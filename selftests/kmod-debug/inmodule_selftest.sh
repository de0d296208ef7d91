#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The debug module's in-module self-tests (kmod/selftest/): load
# build/module-debug/kpprof.ko in place of the normal module, require its
# "ring self-tests: pass" line, then put the normal module back (vm-run
# unloads it at the end and checks dmesg).  Runs in the VM.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/selftests/lib/tap.sh"
debug_ko=$top/build/module-debug/kpprof.ko
normal_ko=${KPPROF_KO:-$top/build/module/$(uname -r)/kpprof.ko}

tap_plan 4
if [ ! -e "$debug_ko" ]; then
	tap_fail "debug module built" "$debug_ko missing: run 'make module-debug'"
else
	tap_ok "debug module built"
fi
tap_check "normal module unloaded" rmmod kpprof
# never dmesg -c: vm-run scans the whole log for oopses and warnings
seen=$(dmesg | wc -l)
new_dmesg() { dmesg | tail -n +$((seen + 1)); }
if insmod "$debug_ko"; then
	if new_dmesg | grep -q 'kpprof: ring self-tests: pass'; then
		tap_ok "in-module ring self-tests pass"
	else
		tap_fail "in-module ring self-tests pass" "no pass line: $(new_dmesg | grep kpprof | tr '\n' ' ')"
	fi
	rmmod kpprof
else
	tap_fail "in-module ring self-tests pass" "insmod refused: $(new_dmesg | grep kpprof | tail -n 3 | tr '\n' ' ')"
fi
tap_check "normal module reloaded" insmod "$normal_ko"
tap_done
