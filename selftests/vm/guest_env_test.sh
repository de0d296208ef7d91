#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the VM (selftests/vm/vm.list): checks the environment that
# scripts/vm-run promises every VM test (root, kpprof.ko loaded, writable
# /tmp and repo, read-only host root, warnings that panic).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"

tap_plan 10
tap_check "runs as root" test "$(id -u)" = 0
tap_check "HOME is /tmp" test "$HOME" = /tmp
tap_check "kpprof is loaded" grep -q '^kpprof ' /proc/modules
tap_check "/dev/kpprof is a character device" test -c /dev/kpprof
tap_check "/tmp is a writable tmpfs" \
	sh -c 'stat -f -c %T /tmp | grep -qx tmpfs && echo x >/tmp/guest-env-test && rm /tmp/guest-env-test'
f=$top/build/guest-env-test.$$
tap_check "the repo is writable and shared" sh -c "echo x >'$f' && rm '$f'"
tap_check "the host root is read-only" sh -c '! touch /usr/guest-env-test 2>/dev/null'
tap_check "warnings panic the guest" test "$(cat /proc/sys/kernel/panic_on_warn)" = 1
tap_check "slab red zones and poisoning are on (slub_debug)" \
	sh -c 'test "$(cat /sys/kernel/slab/kmalloc-64/red_zone /sys/kernel/slab/kmalloc-64/poison)" = "1
1"'
tap_check "debugfs is mounted" test -d /sys/kernel/debug/tracing -o -n "$(ls /sys/kernel/debug)"
tap_done
