#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Threads that end inside the shim's write into the module's producer ring
# (run in the VM, kpprof.ko loaded; abandon_ring.c, at rate 1): 20 threads
# call pthread_exit between the reservation of their entry and its commit,
# 10 in a sampling path's ALLOC, 10 in a FREE.  The shim gives each entry
# up (discarded), so the drain goes on at once: all 1000 ALLOC records of
# 12345 bytes the main thread makes next reach the consumer.  Left
# reserved, each entry stopped the drain for the module's 2 s, and the
# main thread's records were lost to the full ring (counted in band).
# usage: selftests/shim/abandon_ring_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-abring.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

timeout -k 10 300 "$d/shim_reader" --preload "$lib" --mem-rate 1 \
	--dump >(awk '
	$1 == "ALLOC" && $6 == 12345 { n++ }
	$1 == "LOST" { lost += $5 + $6 + $7 }
	END { printf "done %d %d\n", n, lost }' >"$tmp/counts") \
	-- "$d/abandon_ring" 20 >"$tmp/out" 2>"$tmp/err"
rc=$?
# the awk behind >() may still be writing
wait_for 60 grep -qs '^done' "$tmp/counts"
read -r _ n lost <"$tmp/counts"
if [ $rc = 0 ] && [ "${n:-0}" = 1000 ] &&
   grep -q '^ok: 10 threads ended in a FREE.s ring write, 10 in an ALLOC.s' "$tmp/out"; then
	tap_ok "20 threads ended inside a ring write (10 ALLOC, 10 FREE): 1000 of 1000 samples after (lost in band ${lost:-0})"
else
	tap_fail "threads ended inside a ring write" \
		"exit $rc, ${n:-0} of 1000 samples after, lost in band ${lost:-0}: $(tr '\n' ' ' <"$tmp/out") $(grep -v '^shim_reader' "$tmp/err" | tr '\n' ' ')"
fi
tap_diag "$(grep '^shim_reader' "$tmp/err" | tr '\n' ' ')"
tap_done
