#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, finding 10, through the module (run in the VM, kpprof.ko
# loaded): a program that samples at rate 1 (its producer ring is mapped)
# forks a child, and each installs a seccomp filter with its own syscall
# instruction, which the shim cannot see, trapping open and file mmap and
# allowing openat, ioctl and close (raw_sandbox.c); then each allocates
# and contends at rate 1 (the zygote pattern: fork, sandbox, then
# allocate).  A fork child of a parent with a ring maps its own in the
# atfork handler, before it can sandbox itself (before: at its first
# sample, an mmap of /dev/kpprof: SIGSYS).  The filter allows openat,
# ioctl and close (doorbell_vm_test.sh traps them too).  Asserts: parent and child exit 0 (no SIGSYS), and
# shim_reader got ALLOC records of the post-filter size (4093 bytes) from
# both pids.
# usage: selftests/shim/raw_sandbox_vm_test.sh [SHIM.so [SECS]]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
secs=${2:-4}
tmp=$(mktemp -d /tmp/shim-rawsb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

timeout -k 10 $((secs * 2 + 120)) "$d/shim_reader" --preload "$lib" --mem-rate 1 \
	--block-rate 1 --mutex-fraction 1 --dump >(awk '
	$1 == "ALLOC" && $6 == 4001 { pre[$2]++ }
	$1 == "ALLOC" && $6 == 4093 { post[$2]++ }
	$1 == "MUTEX" || $1 == "BLOCK" { lock[$2]++ }
	$1 == "LOST" { lost[$2] += $5 }
	END {
		print "done"
		for (p in post) printf "pid %s %d %d %d %d\n", p, pre[p], post[p],
			lock[p], lost[p]
	}' >"$tmp/counts") -- "$d/raw_sandbox" "$secs" >"$tmp/out" 2>"$tmp/err"
rc=$?
# the awk behind >() may still be writing
for _ in $(seq 600); do
	grep -q '^done' "$tmp/counts" 2>/dev/null && break
	sleep 0.1
done
parent=$(sed -n 's/^parent //p' "$tmp/out")
child=$(sed -n 's/^child //p' "$tmp/out")
cst=$(sed -n 's/^child-status //p' "$tmp/out")
if [ $rc = 0 ] && [ "$cst" = 0 ] && ! grep -q SIGSYS "$tmp/err"; then
	tap_ok "raw filter after the first sample: parent and fork child exit 0, no SIGSYS"
else
	tap_fail "raw filter after the first sample" \
		"exit $rc, child status ${cst:-none}: $(grep -v '^shim_reader' "$tmp/err" | tr '\n' ' ')"
fi
tap_diag "$(grep '^shim_reader' "$tmp/err" | tr '\n' ' ')"
tap_diag "$(tr '\n' ' ' <"$tmp/counts")"

# records from both pids after the filter went in
for who in parent child; do
	pid=${!who}
	read -r _ _ pre post lock lost < <(grep "^pid ${pid:-none} " "$tmp/counts")
	if [ -n "$pid" ] && [ "${post:-0}" -ge 100 ]; then
		tap_ok "$who $pid: ${post} ALLOC records after the filter (before ${pre:-0}, lock ${lock:-0}, lost in band ${lost:-0})"
	else
		tap_fail "$who ${pid:-?}: ALLOC records after the filter" \
			"after ${post:-0}, before ${pre:-0}, lock ${lock:-0}, lost ${lost:-0}"
	fi
done
tap_done
