#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Review shim.md section 9 (and issue 16): once a process has sampled, the
# program sees no descriptor of the shim's: its records go into its
# producer ring, whose mapping keeps /dev/kpprof open, and the shim closed
# its descriptor.  A fork child, which maps a ring of its own at its first
# sample, too.  Run in the VM (kpprof.ko loaded), with a consumer attached
# (shim_reader) and without one.
# usage: selftests/shim/nofd_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-nofd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

# without a consumer: the shim alone
out=$(KPPROF_MEM_RATE=1 LD_PRELOAD="$lib" "$d/kpprof_fds" --fork 2>"$tmp/err")
rc=$?
if [ $rc = 0 ] && [ "$out" = "0
child 0" ]; then
	tap_ok "no /dev/kpprof descriptor after sampling, parent and fork child"
else
	tap_fail "no /dev/kpprof descriptor after sampling, parent and fork child" \
		"rc $rc, counts: $(echo $out)"
	tap_diag "$(cat "$tmp/err")"
fi

# with a consumer: the records arrive, from the ring
"$d/shim_reader" --preload "$lib" --mem-rate 1 --dump "$tmp/dump" -- \
	"$d/kpprof_fds" >"$tmp/out" 2>"$tmp/err2"
rc=$?
allocs=$(grep -c "ALLOC" "$tmp/dump" 2>/dev/null)
if [ $rc = 0 ] && [ "$(head -n 1 "$tmp/out")" = 0 ] && [ "${allocs:-0}" -ge 100 ]; then
	tap_ok "with a consumer: no descriptor, $allocs ALLOC records delivered"
else
	tap_fail "with a consumer: no descriptor, ALLOC records delivered" \
		"rc $rc, out $(head -n 1 "$tmp/out"), ALLOC records ${allocs:-0}"
	tap_diag "$(tail -n 5 "$tmp/err2")"
fi
tap_done
