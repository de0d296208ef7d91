#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The seccomp probe through the module (run in the VM, kpprof.ko loaded):
# raw_early.c installs, with its own `syscall` instruction, a filter the
# shim cannot see that traps ioctl, openat, open, close, getpid and a file
# mmap, then samples at rate 1, forks a child with fork() and one with a
# raw clone(), each sampling, and every process exit()s.  The shim still
# makes syscalls of its own at those moments (the ring's set-up at the
# first sample, a fork child's set-up, COMM records without a ring, the
# getpid at exit); before each it asks the module's seccomp probe
# (KPPROF_PGOFF_SECCOMP_PROBE, a page fault) and, filtered, stops without
# a syscall.  Three runs:
# - early: the filter before the first sample (no ring yet).  Before the
#   probe: SIGSYS at the first sample (the ring's open).  Asserts: every
#   process exits 0, no SIGSYS, no ring before the filter, and no ALLOC
#   record of the post-filter size from any of the three pids (not sent:
#   counted in the shim's kpp.unsent; no NOTE, which would need a
#   syscall), but COMM (START) of the parent, sent before the filter.
# - late: the filter after the ring is mapped.  Samples after it still
#   flow into the ring (no syscall); the children stop at their set-up;
#   the parent's exit asks the probe instead of calling getpid and puts a
#   KPPROF_NOTE_SECCOMP into its ring.  Before: SIGSYS in the fork child's
#   atfork handler (getpid) and at the parent's exit (getpid).
# - quiet: the filter, then exit(0) without a sample: the exit path alone
#   (getpid, then COMM (EXIT) by SUBMIT without a ring).  Before: SIGSYS.
# usage: selftests/shim/raw_early_vm_test.sh [SHIM.so [N]]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
n=${2:-200}
tmp=$(mktemp -d /tmp/shim-rawearly.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

# run MODE: raw_early MODE under shim_reader; $tmp/MODE.{out,err,counts}
run() {
	local mode=$1
	timeout -k 10 300 "$d/shim_reader" --preload "$lib" --mem-rate 1 --dump >(awk '
		$1 == "ALLOC" && $6 == 4093 { post[$2]++ }
		$1 == "ALLOC" && $6 == 4001 { pre[$2]++ }
		$1 == "COMM" { comm[$2] = comm[$2] "," $5 }
		$1 == "NOTE" && $5 == 1 { note[$2] = $6 + 0; noted[$2] = 1 }
		{ seen[$2] = 1 }
		END {
			print "done"
			for (p in seen) printf "pid %s %d %d %s %s\n", p, pre[p], post[p],
				(p in noted) ? note[p] : "-", comm[p] ? comm[p] : "-"
		}' >"$tmp/$mode.counts") -- "$d/raw_early" "$mode" "$n" \
		>"$tmp/$mode.out" 2>"$tmp/$mode.err"
	echo $? >"$tmp/$mode.rc"
	wait_for 60 grep -qs '^done' "$tmp/$mode.counts"
	tap_diag "$mode: $(tr '\n' ' ' <"$tmp/$mode.out")"
	tap_diag "$mode: $(tr '\n' ' ' <"$tmp/$mode.counts")"
}

val() { sed -n "s/^$2 //p" "$tmp/$1.out"; }
# field F (3 pre, 4 post, 5 note, 6 comm reasons) of PID in MODE's counts
field() { awk -v p="$2" -v f="$3" '$1 == "pid" && $2 == p { print $f }' "$tmp/$1.counts"; }

exits_ok() {
	local mode=$1 rc fs cs
	rc=$(cat "$tmp/$mode.rc")
	fs=$(val "$mode" fork-status)
	cs=$(val "$mode" clone-status)
	if [ "$mode" = quiet ]; then fs=0 cs=0; fi
	if [ "$rc" = 0 ] && [ "$fs" = 0 ] && [ "$cs" = 0 ] && ! grep -q SIGSYS "$tmp/$mode.err"; then
		tap_ok "$mode: the parent${2:+ and its fork and clone children} exit 0, no SIGSYS"
	else
		tap_fail "$mode: every process exits 0" \
			"exit $rc, fork child ${fs:-none}, clone child ${cs:-none}: $(tr '\n' ' ' <"$tmp/$mode.err")"
	fi
}

run early
exits_ok early children
p=$(val early parent) f=$(val early fork-child) c=$(val early clone-child)
sent=0
for pid in $p $f $c; do
	sent=$((sent + $(field early "$pid" 4 || echo 0) + 0))
done
if [ "$(val early ring-before-filter)" = 0 ] && [ -n "$p" ] && [ "$sent" = 0 ] &&
	[ "$(field early "$p" 6)" = ",0" ]; then
	tap_ok "early: no ring before the filter; nothing sent after it (parent $p: COMM START only; children $f $c: nothing)"
else
	tap_fail "early: nothing sent after the filter" \
		"ring before $(val early ring-before-filter), ALLOC after the filter $sent, parent's COMM reasons '$(field early "$p" 6)'"
fi

run late
exits_ok late children
p=$(val late parent) f=$(val late fork-child) c=$(val late clone-child)
post=$(field late "$p" 4)
note=$(field late "$p" 5)
kids=0
for pid in $f $c; do
	kids=$((kids + $(field late "$pid" 4 || echo 0) + 0))
done
if [ "$(val late ring-before-filter)" = 1 ] && [ "${post:-0}" -ge "$n" ] && [ "$kids" = 0 ] &&
	[ -n "$note" ] && [ "$note" != - ]; then
	tap_ok "late: $post ALLOC records after the filter through the ring; children sent none; the parent's exit put NOTE SECCOMP (value $note) into its ring"
else
	tap_fail "late: samples flow after the filter, the exit's NOTE" \
		"ring before $(val late ring-before-filter), parent after ${post:-0}, children $kids, note '${note}'"
fi

run quiet
exits_ok quiet
p=$(val quiet parent)
if [ "$(field quiet "$p" 6)" = ",0" ]; then
	tap_ok "quiet: COMM START only (EXIT not sent: the exit stopped before its SUBMIT)"
else
	tap_fail "quiet: COMM START only" "COMM reasons '$(field quiet "$p" 6)'"
fi
tap_done
