#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kick is a page fault (run in the VM, kpprof.ko loaded): a program
# that samples at rate 1 installs, with its own syscall instruction (which
# the shim cannot see), a filter that traps openat, ioctl, close and file
# mmap (raw_sandbox.c strict), in itself and in its fork child, then two
# threads each allocate and contend for SECS at rate 1: the ring fills a
# quarter many times over.  Before the doorbell the shim's kick (open,
# KPPROF_IOC_KICK, close) was SIGSYS at the first quarter-full ring; now
# it reads a doorbell page (user/shim/pring.c kick()).
# Asserts: parent and child exit 0 (no SIGSYS); both pids' ALLOC records
# after the filter reached shim_reader (1000 or more each: a quarter
# ring holds about 110 of them); kpprof stat's "ring doorbells"
# moved by at least 4 (two processes, a quarter ring each, twice).
# usage: selftests/shim/doorbell_vm_test.sh [SHIM.so [SECS]]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
kp=$top/build/user/kpprof/kpprof
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
secs=${2:-4}
tmp=$(mktemp -d /tmp/shim-doorbell.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

bells() {
	"$kp" stat 2>/dev/null | awk '$1 == "ring" && $2 == "doorbells" { print $3 }'
}

b0=$(bells)
timeout -k 10 $((secs * 2 + 120)) "$d/shim_reader" --preload "$lib" --mem-rate 1 \
	--block-rate 1 --mutex-fraction 1 --dump >(awk '
	$1 == "ALLOC" && $6 == 4093 { post[$2]++ }
	$1 == "LOST" { lost[$2] += $5 }
	END {
		print "done"
		for (p in post) printf "pid %s %d %d\n", p, post[p], lost[p]
	}' >"$tmp/counts") -- "$d/raw_sandbox" "$secs" strict >"$tmp/out" 2>"$tmp/err"
rc=$?
# the awk behind >() may still be writing
for _ in $(seq 600); do
	grep -q '^done' "$tmp/counts" 2>/dev/null && break
	sleep 0.1
done
b1=$(bells)
parent=$(sed -n 's/^parent //p' "$tmp/out")
child=$(sed -n 's/^child //p' "$tmp/out")
cst=$(sed -n 's/^child-status //p' "$tmp/out")
if [ $rc = 0 ] && [ "$cst" = 0 ] && ! grep -q SIGSYS "$tmp/err"; then
	tap_ok "no file syscall allowed, rate 1: parent and fork child exit 0, no SIGSYS"
else
	tap_fail "no file syscall allowed, rate 1" \
		"exit $rc, child status ${cst:-none}: $(grep -v '^shim_reader' "$tmp/err" | tr '\n' ' ')"
fi
tap_diag "$(grep '^shim_reader' "$tmp/err" | tr '\n' ' ')"
tap_diag "$(tr '\n' ' ' <"$tmp/counts")"

for who in parent child; do
	pid=${!who}
	read -r _ _ post lost < <(grep "^pid ${pid:-none} " "$tmp/counts")
	if [ -n "$pid" ] && [ "${post:-0}" -ge 1000 ]; then
		tap_ok "$who $pid: ${post} ALLOC records after the filter (lost in band ${lost:-0})"
	else
		tap_fail "$who ${pid:-?}: ALLOC records after the filter" \
			"after ${post:-0}, lost ${lost:-0}"
	fi
done

if [ -n "$b0" ] && [ -n "$b1" ] && [ $((b1 - b0)) -ge 4 ]; then
	tap_ok "kpprof stat: $((b1 - b0)) doorbell kicks ($b0 -> $b1)"
else
	tap_fail "kpprof stat: doorbell kicks" "before '${b0}', after '${b1}'"
fi
tap_done
