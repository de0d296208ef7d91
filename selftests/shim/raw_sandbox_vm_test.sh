#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, finding 10, through the module (run in the VM, kpprof.ko
# loaded): a program that samples at rate 1 (its producer ring is mapped)
# forks a child, and each installs a seccomp filter with its own syscall
# instruction, which the shim cannot see (raw_sandbox.c); then each
# allocates and contends at rate 1 for SECS (the zygote pattern: fork,
# sandbox, then allocate).  Two filters, one run each:
# - "file": traps open and file mmap, allows openat, ioctl and close.  A
#   fork child of a parent with a ring maps its own in the atfork handler,
#   before it can sandbox itself (before: at its first sample, an mmap of
#   /dev/kpprof: SIGSYS).
# - "strict": also traps openat, ioctl and close.  At rate 1 the ring
#   fills a quarter many times over, and the shim kicks the module's drain
#   each time: before the doorbell the kick was open, KPPROF_IOC_KICK and
#   close, SIGSYS at the first quarter-full ring; now it reads a doorbell
#   page (user/shim/pring.c kick()), a page fault.
# Asserts, for each filter: parent and child exit 0 (no SIGSYS), and
# shim_reader got ALLOC records of the post-filter size (4093 bytes) from
# both pids (strict: 1000 or more each, where a quarter ring holds about
# 110; before the doorbell 110 got out); strict: kpprof stat's "ring
# doorbells" moved by at least 4 (two processes, a quarter ring each,
# twice).
# usage: selftests/shim/raw_sandbox_vm_test.sh [SHIM.so [SECS]]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
d=$top/build/selftests/shim
kp=$top/build/user/kpprof/kpprof
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
secs=${2:-4}
tmp=$(mktemp -d /tmp/shim-rawsb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

bells() {
	"$kp" stat 2>/dev/null | awk '$1 == "ring" && $2 == "doorbells" { print $3 }'
}

# sandbox FILTER MIN: one run of raw_sandbox with FILTER ("file" or
# "strict"), its tap lines; MIN: ALLOC records after the filter each pid
# must have.
sandbox() {
	local filter=$1 min=$2 rc parent child cst who pid pre post lock lost
	local arg=
	[ "$filter" = strict ] && arg=strict

	timeout -k 10 $((secs * 2 + 120)) "$d/shim_reader" --preload "$lib" --mem-rate 1 \
		--block-rate 1 --mutex-fraction 1 --dump >(awk '
		$1 == "ALLOC" && $6 == 4001 { pre[$2]++ }
		$1 == "ALLOC" && $6 == 4093 { post[$2]++ }
		$1 == "MUTEX" || $1 == "BLOCK" { lock[$2]++ }
		$1 == "LOST" { lost[$2] += $5 }
		END {
			print "done"
			for (p in post) printf "pid %s %d %d %d %d\n", p, pre[p],
				post[p], lock[p], lost[p]
		}' >"$tmp/$filter.counts") -- "$d/raw_sandbox" "$secs" $arg \
		>"$tmp/$filter.out" 2>"$tmp/$filter.err"
	rc=$?
	# the awk behind >() may still be writing
	wait_for 60 grep -qs '^done' "$tmp/$filter.counts"
	parent=$(sed -n 's/^parent //p' "$tmp/$filter.out")
	child=$(sed -n 's/^child //p' "$tmp/$filter.out")
	cst=$(sed -n 's/^child-status //p' "$tmp/$filter.out")
	if [ $rc = 0 ] && [ "$cst" = 0 ] && ! grep -q SIGSYS "$tmp/$filter.err"; then
		tap_ok "$filter filter after the first sample: parent and fork child exit 0, no SIGSYS"
	else
		tap_fail "$filter filter after the first sample" \
			"exit $rc, child status ${cst:-none}: $(grep -v '^shim_reader' "$tmp/$filter.err" | tr '\n' ' ')"
	fi
	tap_diag "$(grep '^shim_reader' "$tmp/$filter.err" | tr '\n' ' ')"
	tap_diag "$(tr '\n' ' ' <"$tmp/$filter.counts")"

	# records from both pids after the filter went in
	for who in parent child; do
		pid=${!who}
		read -r _ _ pre post lock lost < <(grep "^pid ${pid:-none} " "$tmp/$filter.counts")
		if [ -n "$pid" ] && [ "${post:-0}" -ge "$min" ]; then
			tap_ok "$filter: $who $pid: ${post} ALLOC records after the filter (before ${pre:-0}, lock ${lock:-0}, lost in band ${lost:-0})"
		else
			tap_fail "$filter: $who ${pid:-?}: $min ALLOC records after the filter" \
				"after ${post:-0}, before ${pre:-0}, lock ${lock:-0}, lost ${lost:-0}"
		fi
	done
}

sandbox file 100

b0=$(bells)
sandbox strict 1000
b1=$(bells)
if [ -n "$b0" ] && [ -n "$b1" ] && [ $((b1 - b0)) -ge 4 ]; then
	tap_ok "strict: kpprof stat: $((b1 - b0)) doorbell kicks ($b0 -> $b1)"
else
	tap_fail "strict: kpprof stat: doorbell kicks" "before '${b0}', after '${b1}'"
fi
tap_done
