#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "Records were lost" counts only this session's losses (finding 11): the
# module's drop counters live as long as the module, so a collector that
# fills the ring (here: stopped with SIGSTOP while a workload samples every
# allocation) must not make every later collector warn.  VM, repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
out=$(mktemp -d /tmp/kpprof-losses.XXXXXX)
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
tap_plan
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
# serve learns loopback clients' uids by sock_diag; the VM's init cannot autoload it.
modprobe -q tcp_diag 2>/dev/null || true
# ring_full + share drops (one uid filling the ring meets its share first),
# and the records lost in the producers' own rings (full: the collector did
# not drain them)
full() {
	$K stat | awk '/^dropped (ring_full|share)/ { n += $3 }
		/^ring lost full/ { n += $4 } END { print n + 0 }'
}

before=$(full)
# 1. a collector that does not read: the ring fills, records are dropped.
$K serve --listen 127.0.0.1:0 --mem-rate 1 >"$out/serve.out" 2>&1 &
srv=$!
trap 'kill -CONT $srv 2>/dev/null; kill $srv 2>/dev/null; rm -rf "$out"' EXIT
wait_for 60 grep -q serving "$out/serve.out"
kill -STOP $srv
LD_PRELOAD=$top/build/user/shim/libkpprof.so "$W/leak_churn" 200000 >/dev/null 2>&1
kill -CONT $srv
kill -TERM $srv
wait $srv
after=$(full)
if [ "${after:-0}" -gt "${before:-0}" ]; then
	tap_ok "a stopped collector lost records ($before -> $after drops)"
else
	tap_fail "the ring did not fill ($before -> $after): the test proves nothing"
fi

# 2. the next collector lost nothing: no warning, and its comment says 0.
$K record -o "$out/rec" --mem-rate 65536 -- "$W/seeds_heap" 5 2>"$out/rec.err"
rc=$?
c=$(go tool pprof -comments "$out/rec/heap.pb.gz" 2>&1)
if [ $rc = 0 ] && ! grep -q "records were lost" "$out/rec.err" &&
   grep -q "ring drops 0 (full) [0-9]* (disabled) 0 (share)" <<<"$c"; then
	tap_ok "the next collector does not warn about drops before it started"
else
	tap_diag "$(cat "$out/rec.err")" "$c"
	tap_fail "an old drop still warns"
fi
go tool pprof -symbolize=none -raw "$out/rec/heap.pb.gz" >/dev/null 2>&1 &&
	tap_ok "its profile is read by go tool pprof -raw" || tap_fail "profile unreadable"
tap_done
