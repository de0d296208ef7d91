#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve in the VM: a workload runs with the shim while the server
# collects; `go tool pprof http://.../debug/pprof/heap` reads it, and the
# pid filter, delta, gc and legacy text parameters answer.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/user/kpprof/kpprof}
W=$top/selftests/collector/workloads
out=$(mktemp -d /tmp/kpprof-serve.XXXXXX)
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
tap_plan
# The VM's init leaves loopback down; serving needs it.
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true

$K serve --listen 127.0.0.1:0 --mem-rate 65536 >"$out/serve.out" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 50); do grep -q serving "$out/serve.out" && break; sleep 0.1; done
url=$(sed -nE 's/.*serving (http:[^ ]*)/\1/p' "$out/serve.out")
[ -n "$url" ] || { tap_diag "$(cat "$out/serve.out")"; tap_fail "server did not start"; tap_done; }

LD_PRELOAD=$top/user/shim/libkpprof.so "$W/seeds_heap" 100 &
wl=$!
wait $wl

t=$(go tool pprof -symbolize=none -top "${url}heap?gc=1&pid=$wl" 2>&1)
grep -q func1 <<<"$t" && grep -q func2 <<<"$t" && tap_ok "go tool pprof $url""heap?pid=$wl" ||
	{ tap_diag "$t"; tap_fail "heap over HTTP"; }
t=$(go tool pprof -symbolize=none -raw "${url}allocs" 2>&1)
grep -q "alloc_space" <<<"$t" && tap_ok "allocs over HTTP, read by -raw" || { tap_diag "$t"; tap_fail "allocs"; }
for p in mutex block; do
	t=$(go tool pprof -symbolize=none -raw "${url}$p" 2>&1)
	grep -q "contentions/count delay/nanoseconds" <<<"$t" && tap_ok "$p over HTTP" ||
		{ tap_diag "$t"; tap_fail "$p over HTTP"; }
done
t=$(curl -s "${url}heap?debug=1&pid=$wl")
grep -qE '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/131072' <<<"$t" && grep -q func1 <<<"$t" &&
	tap_ok "debug=1 legacy text" || { tap_diag "$t"; tap_fail "debug=1 legacy text"; }
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}heap?pid=999999")
[ "$code" = 404 ] && tap_ok "unknown pid: 404" || tap_fail "unknown pid: HTTP $code"
# As net/http/pprof: seconds=0 is a 400, and errors carry X-Go-Pprof: 1.
h=$(curl -s -D - -o /dev/null "${url}heap?seconds=0")
grep -q '^HTTP/1.0 400' <<<"$h" && grep -qi '^X-Go-Pprof: 1' <<<"$h" &&
	tap_ok "seconds=0: 400 with X-Go-Pprof" || { tap_diag "$h"; tap_fail "seconds=0: 400 with X-Go-Pprof"; }
t=$(curl -s -o "$out/d.pb.gz" -w '%{http_code}' "${url}heap?seconds=1")
[ "$t" = 200 ] && go tool pprof -symbolize=none -raw "$out/d.pb.gz" >/dev/null 2>&1 &&
	tap_ok "seconds=1 delta profile" || tap_fail "seconds=1 delta: HTTP $t"
kill -TERM $srv
wait $srv
rc=$?
if [ $rc = 0 ] && ! grep -q Sanitizer "$out/serve.out"; then
	tap_ok "serve exits 0 on SIGTERM, no sanitizer report"
else
	tap_diag "$(cat "$out/serve.out")"
	tap_fail "serve exit status $rc"
fi
tap_done
