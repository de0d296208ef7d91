#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The private sample stacks' memory cost (stackpool.c), through the module
# (run in the VM, kpprof.ko loaded, as root: it sets vm.overcommit_memory
# in the guest and puts it back).  At the first sample, with the producer
# ring, the shim maps its first 4 private stacks.  Under the default
# heuristic overcommit they are 8 MiB each of MAP_NORESERVE address space,
# no commit charge; under strict overcommit (mode 2) the kernel ignores
# MAP_NORESERVE and would charge 32 MiB per sampling process to the commit
# limit, which the program's own allocations then cannot have: there the
# stacks must be small (fork_child.c "stacks").
# usage: selftests/shim/stack_commit_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
oc=/proc/sys/vm/overcommit_memory

tap_plan
tap_need_device
old=$(cat $oc)
[ -w $oc ] || { tap_skip "cannot set vm.overcommit_memory (not root)"; tap_done; }
trap 'echo "$old" >$oc' EXIT

echo 0 >$oc
out=$(KPPROF_MEM_RATE=1 LD_PRELOAD="$lib" timeout 60 "$d/fork_child" stacks 2>&1)
c=$(sed -n 's/^stacks .* charged \([0-9]*\) kB$/\1/p' <<<"$out")
[ "${c:-x}" = 0 ] && tap_ok "heuristic overcommit: $out" ||
	tap_fail "heuristic overcommit: the stacks are no commit charge" "$out"

echo 2 >$oc
out=$(KPPROF_MEM_RATE=1 LD_PRELOAD="$lib" timeout 60 "$d/fork_child" stacks 2>&1)
echo "$old" >$oc
n=$(sed -n 's/^stacks \([0-9]*\) kB.*/\1/p' <<<"$out")
[ "${n:-x}" = 0 ] && tap_ok "strict overcommit: no 8 MiB stack ($out)" ||
	tap_fail "strict overcommit: no 8 MiB stack" "$out"
tap_done
