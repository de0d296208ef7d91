#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside a VM (selftests/vm/vm_run_test.sh boots it on 6.12-rt with two
# vCPUs; any guest will do by hand): the guest kernel survives live
# patching of its own text while another vCPU runs that text.  The kernel
# flips a static key by writing an int3 over the first byte of each site,
# then the rest, then the first byte, waiting for every CPU between steps;
# a CPU that hits the int3 in between is sent on by the int3 handler.
# Multi-threaded TCG (QEMU 7.2) let a vCPU execute the int3 from code it
# had translated before the patch ended, after the handler had been told
# the patch was over: "Oops: int3" in sched_clock_cpu or set_next_entity,
# a panic.  A test of the module that ran when a key flipped died with it
# (preempt_test on 6.12-rt, when the clocksource watchdog marked the TSC
# unstable and sched_clock's key flipped).  scripts/vm-run
# runs every guest on one TCG thread for that reason; this test fails (the
# guest panics: vm-run counts the panic) when a guest runs multi-threaded.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"

# 300 flips crashed every multi-threaded 2-vCPU boot tried of 6.12 (3) and
# 6.12-rt (5); 6.1 outlived 300 once and locked up within 900.
flips=${KPPROF_TEXT_PATCH_FLIPS:-300}
key=/proc/sys/kernel/sched_schedstats

tap_plan 2
if [ "$(nproc)" -lt 2 ]; then
	tap_skip "the guest has two vCPUs or more" "$(nproc) vCPU: nothing runs beside the patch"
	tap_skip "$flips static-key flips while another vCPU forks and schedules" "one vCPU"
	tap_done
fi
tap_ok "the guest has two vCPUs or more ($(nproc))"
if [ ! -w $key ]; then
	tap_skip "$flips static-key flips while another vCPU forks and schedules" "no $key (CONFIG_SCHEDSTATS)"
	tap_done
fi

# The key guards statistics in the scheduler's enqueue and pick paths, which
# a forking loop keeps running on the other vCPU while the key flips: the
# loop on CPU 1, the flips on CPU 0 (pinned: else the scheduler may put
# both on one vCPU, and nothing would run the sites while they change).
# The loop counts its rounds, so a loop that did not run fails the test.
was=$(cat $key)
rounds=/tmp/text_patch_rounds.$$
rm -f "$rounds"
taskset -pc 0 $$ >/dev/null || { tap_fail "pin the flips to CPU 0" "taskset failed"; tap_done; }
# shellcheck disable=SC2016  # the loop's own variables
taskset -c 1 bash -c 'n=0
trap "echo \$n >$1; exit 0" TERM
while :; do /bin/true; n=$((n + 1)); done' loop "$rounds" &
busy=$!
i=0 bad=
while [ $i -lt "$flips" ]; do
	want=$(((i + was + 1) % 2))	# the other value than the last one
	echo $want >$key
	[ "$(cat $key)" = $want ] || { bad="$key did not take $want"; break; }
	i=$((i + 1))
	[ $((i % 100)) != 0 ] || tap_diag "$i flips"
done
kill -TERM $busy 2>/dev/null
wait $busy 2>/dev/null
echo "$was" >$key
n=$(cat "$rounds" 2>/dev/null)
rm -f "$rounds"
# The loop forks about as often as the flips fork their cat: one round per
# ten flips is far below what it does when it runs at all.
tap_diag "$i flips on CPU 0; the forking loop on CPU 1 ran ${n:-no} rounds meanwhile"
tap_check "$flips static-key flips while another vCPU forks and schedules" \
	test -z "$bad" -a $i -eq "$flips" -a "${n:-0}" -ge $((flips / 10))
[ -z "$bad" ] || tap_diag "$bad"
tap_done
