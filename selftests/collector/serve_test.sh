#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve in the VM: a workload runs with the shim while the server
# collects; `go tool pprof http://.../debug/pprof/heap` reads it, and the
# pid filter, delta, gc and legacy text parameters answer.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
out=$(mktemp -d /tmp/kpprof-serve.XXXXXX)
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
tap_plan
# The VM's init leaves loopback down; serving needs it.
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
# serve learns loopback clients' uids by sock_diag; the VM's init cannot autoload it.
modprobe -q tcp_diag 2>/dev/null || true

$K serve --listen 127.0.0.1:0 --mem-rate 65536 >"$out/serve.out" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$out"' EXIT
wait_for 60 grep -q serving "$out/serve.out"
url=$(sed -nE 's/.*serving (http:[^ ]*)/\1/p' "$out/serve.out")
[ -n "$url" ] || { tap_diag "$(cat "$out/serve.out")"; tap_fail "server did not start"; tap_done; }

LD_PRELOAD=$top/build/user/shim/libkpprof.so "$W/seeds_heap" 100 &
wl=$!
wait $wl

# The workload has exited: as in Go, a process that is gone has no heap in
# use (its allocations stay in alloc_*, while it is kept).
t=$(go tool pprof -symbolize=none -sample_index=alloc_space -top "${url}heap?gc=1&pid=$wl" 2>&1)
grep -q func1 <<<"$t" && grep -q func2 <<<"$t" && tap_ok "go tool pprof $url""heap?pid=$wl" ||
	{ tap_diag "$t"; tap_fail "heap over HTTP"; }
t=$(go tool pprof -symbolize=none -sample_index=inuse_space -top "${url}heap?pid=$wl" 2>&1)
grep -qE 'Showing nodes accounting for 0, 0% of 0 total' <<<"$t" &&
	tap_ok "an exited process has nothing in use" || { tap_diag "$t"; tap_fail "exited process in use"; }
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
# An unknown profile is 404 (net/http/pprof: "Unknown profile"); so are
# the CPU profile and goroutines, which kpprof does not have.
for p in nosuch profile goroutine; do
	code=$(curl -s -o "$out/u.txt" -w '%{http_code}' "${url}$p")
	[ "$code" = 404 ] && grep -q "unknown profile" "$out/u.txt" && tap_ok "/debug/pprof/$p: 404" ||
		tap_fail "/debug/pprof/$p: HTTP $code $(cat "$out/u.txt")"
done
# As net/http/pprof: seconds=0 is a 400, and errors carry X-Go-Pprof: 1.
h=$(curl -s -D - -o /dev/null "${url}heap?seconds=0")
grep -q '^HTTP/1.0 400' <<<"$h" && grep -qi '^X-Go-Pprof: 1' <<<"$h" &&
	tap_ok "seconds=0: 400 with X-Go-Pprof" || { tap_diag "$h"; tap_fail "seconds=0: 400 with X-Go-Pprof"; }
t=$(curl -s -o "$out/d.pb.gz" -w '%{http_code}' "${url}heap?seconds=1")
[ "$t" = 200 ] && go tool pprof -symbolize=none -raw "$out/d.pb.gz" >/dev/null 2>&1 &&
	tap_ok "seconds=1 delta profile" || tap_fail "seconds=1 delta: HTTP $t"
# As Go's serveDeltaProfile: the measured window (a heap delta settles at
# both ends, so more than the nominal second), not the nominal one.
# pprof -raw prints it as %.4v: "1s" exactly, or "1.01" (seconds, cut).
d=$(go tool pprof -symbolize=none -raw "$out/d.pb.gz" 2>&1 | sed -nE 's/^Duration: (.*)$/\1/p')
[ -n "$d" ] && [ "$d" != 1s ] && awk -v d="$d" 'BEGIN { exit !(d + 0 >= 1) }' &&
	tap_ok "delta duration is the measured window ($d s)" || tap_fail "delta duration '${d:-}' (the nominal 1s?)"
# --- net/http/pprof's behaviour (finding 10) ---
hostport=${url#http://}; hostport=${hostport%%/*}
port=${hostport##*:}
# Profiles come as attachments named as Go names them.
h=$(curl -s -D - -o /dev/null "${url}heap")
grep -qi '^Content-Disposition: attachment; filename="heap"' <<<"$h" &&
	tap_ok "Content-Disposition: attachment; filename=\"heap\"" || { tap_diag "$h"; tap_fail "no Content-Disposition"; }
# debug=1 with seconds: 400 as Go ("seconds and debug params are incompatible").
code=$(curl -s -o "$out/e.txt" -w '%{http_code}' "${url}heap?seconds=1&debug=1")
[ "$code" = 400 ] && grep -q incompatible "$out/e.txt" && tap_ok "seconds with debug=1: 400" ||
	tap_fail "seconds with debug=1: HTTP $code $(cat "$out/e.txt")"
# HEAD: the headers, no body.
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'HEAD /debug/pprof/heap?pid=%s HTTP/1.0\r\n\r\n' "$wl" >&3
cat <&3 >"$out/head.txt"
exec 3<&-
hl=$(grep -c '' "$out/head.txt")
if grep -q '^HTTP/1.0 200' "$out/head.txt" && grep -qE '^Content-Length: [1-9]' "$out/head.txt" &&
   [ "$(tail -c 4 "$out/head.txt" | od -An -c | tr -d ' ')" = '\r\n\r\n' ]; then
	tap_ok "HEAD: headers only ($hl lines)"
else
	tap_diag "$(head -c 400 "$out/head.txt" | od -c | head -20)"
	tap_fail "HEAD answered with a body or without headers"
fi
# A pid asked about just after it ran is not "never seen": its records may
# still be unread in the module's ring (below the wake-up watermark, read at
# the next wake-up: the cycle timer's, turned off here so none comes).  The
# connection is accepted (its thread started, the ring read once) before
# the process runs, and its request sent after the process has exited.
old_cycle=$("$K" ctl | sed -nE 's/^cycle_period_ms +([0-9]+).*/\1/p')
[ -n "$old_cycle" ] || tap_diag "kpprof ctl shows no cycle_period_ms"
"$K" ctl --cycle-ms 0 >/dev/null
ntask=$(ls "/proc/$srv/task" | wc -l)
exec 3<>"/dev/tcp/127.0.0.1/$port"
wait_for 30 sh -c "[ \$(ls /proc/$srv/task | wc -l) -gt $ntask ]" || tap_diag "no connection thread after 30 s"
LD_PRELOAD=$top/build/user/shim/libkpprof.so "$W/seeds_heap" 2 &
late=$!
wait $late
printf 'GET /debug/pprof/heap?debug=1&pid=%s HTTP/1.0\r\n\r\n' "$late" >&3
cat <&3 >"$out/late.txt"
exec 3<&-
"$K" ctl --cycle-ms "${old_cycle:-1000}" >/dev/null
grep -q '^HTTP/1.0 200' "$out/late.txt" && grep -q func1 "$out/late.txt" &&
	tap_ok "a pid asked about just after it ran is answered (its unread records read first)" ||
	{ tap_diag "$(head -c 600 "$out/late.txt")"; tap_fail "a pid asked about just after it ran"; }
# Query values are %-decoded: pid=%31%32... is pid=12..., debug=%31 is 1.
enc=$(sed 's/\(.\)/%3\1/g' <<<"$wl")
t=$(curl -s -w '\n%{http_code}' "${url}heap?pid=$enc&debug=%31")
[ "$(tail -n1 <<<"$t")" = 200 ] && grep -q '^heap profile:' <<<"$t" && tap_ok "query values %-decoded" ||
	{ tap_diag "$t"; tap_fail "query values not %-decoded"; }
# /debug/pprof/symbol, Go's protocol.
t=$(curl -s "${url}symbol")
[ "$t" = "num_symbols: 1" ] && tap_ok "symbol: GET answers num_symbols: 1" || tap_fail "symbol GET: '$t'"
a=$(curl -s "${url}heap?debug=1&pid=$wl" | awk '$3 == "func1" { print $2; exit }')
t=$(curl -s --data-binary "$a+0x1" "${url}symbol?pid=$wl")
t2=$(curl -s --data-binary "$a" "${url}symbol")
if [ -n "$a" ] && grep -qx "$a func1" <<<"$t" && grep -qx "$a func1" <<<"$t2" && [ "$(grep -c '' <<<"$t")" = 2 ]; then
	tap_ok "symbol: POST $a -> func1 (with pid= and without)"
else
	tap_diag "addr '$a'" "$t" "$t2"
	tap_fail "symbol POST"
fi
# Concurrent: a 15 s delta does not hold up another scrape.
curl -s -o /dev/null "${url}block?seconds=15" &
slow=$!
port=${url#http://*:}
port=${port%%/*}
wait_for 30 sh -c "ss -Htn state established '( dport = :$port )' | grep -q ." ||
	tap_diag "no connection to the server after 30 s"
t0=$(date +%s%N)
code=$(curl -s -o "$out/c.pb.gz" -w '%{http_code}' "${url}heap")
if [ "$code" = 200 ] && kill -0 $slow 2>/dev/null; then
	tap_ok "a scrape is answered while a ?seconds=15 delta waits ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
else
	tap_fail "scrape behind a delta: HTTP $code, delta still running: $(kill -0 $slow 2>/dev/null && echo yes || echo no)"
fi
wait $slow
# Bounded: deltas have their own slots, at most 4 of them one client's
# (one that is not root: root's scrapers have no share of their own); the
# rest are answered 503 with a message and Retry-After, or closed at once beyond the 12
# connections a client may have open (20 s windows, so all 24 are in
# flight together even on a slow machine).
cpids=()
for i in $(seq 24); do
	# nobody cannot write in $out: headers, body, then the code on our stdout
	runuser -u nobody -- curl -s -D - -o - -w '\n%{http_code}\n' "${url}mutex?seconds=20" \
		>"$out/b$i.txt" &
	cpids+=($!)
done
wait "${cpids[@]}"
for i in $(seq 24); do
	tail -n 1 "$out/b$i.txt" >"$out/code$i"
done
n503=$(cat "$out"/code* | grep -c 503) n200=$(cat "$out"/code* | grep -c 200)
n000=$(cat "$out"/code* | grep -c 000)
if [ "$n503" -ge 1 ] && [ "$n200" -ge 1 ] && [ "$n200" -le 4 ] && [ $((n503 + n200 + n000)) = 24 ] &&
   grep -qs 'too many' "$out"/b*.txt && grep -qs $'^Retry-After: 1\r$' "$out"/b*.txt; then
	tap_ok "24 deltas at once: $n200 served, $n503 answered 503 (Retry-After: 1), $n000 closed"
else
	tap_diag "$(cat "$out"/code* | sort | uniq -c)"
	tap_fail "bound: $n200 x 200, $n503 x 503, $n000 closed"
fi
# A delta window in which more than 64 processes of one uid exit (a uid
# keeps 64 exited processes: its oldest are dropped, renumbering buckets):
# still 200, with the allocations of those kept.
# The window opens when the server has the request (wait for its
# connection) and is long enough for 80 processes under ASan in TCG on a
# loaded host; if they outlast it, the test says so.
curl -s -o "$out/drop.pb.gz" -w '%{http_code}' "${url}allocs?seconds=45" >"$out/drop.code" &
dl=$!
wait_for 30 sh -c "ss -Htn state established '( dport = :$port )' | grep -q ." ||
	tap_diag "no connection to the server after 30 s"
for b in $(seq 8); do
	wpids=()
	for i in $(seq 10); do
		LD_PRELOAD=$top/build/user/shim/libkpprof.so "$W/seeds_heap" 1 &
		wpids+=($!)
	done
	wait "${wpids[@]}"
done
outlasted=0
kill -0 $dl 2>/dev/null || outlasted=1
wait $dl
code=$(cat "$out/drop.code")
r=$(go tool pprof -symbolize=none -raw "$out/drop.pb.gz" 2>&1)
np=$(grep -oE 'pid:\[[0-9]+\]' <<<"$r" | sort -u | wc -l)
# each seeds_heap 1 allocates 2 MiB: the delta holds 2 MiB per process in it
mb=$(go tool pprof -symbolize=none -sample_index=alloc_space -top "$out/drop.pb.gz" 2>&1 |
     sed -nE 's/.* of ([0-9.]+)MB total.*/\1/p')
if [ $outlasted = 1 ] && [ "$code" = 200 ]; then
	# Not a verdict on the rule: the machine was too slow for the window.
	tap_skip "delta while 80 processes exit: they outlasted the 45 s window ($np in it)"
elif [ "$code" = 200 ] && [ "$np" -ge 50 ] && awk -v m="${mb:-0}" -v n="$np" 'BEGIN { exit !(m >= 1.9 * n && m <= 2.2 * n) }'; then
	tap_ok "delta while 80 processes exit: 200, $np processes in it, ${mb}MB (truth $((2 * np))MB)"
else
	tap_diag "$(head -c 300 "$out/drop.pb.gz")"
	tap_fail "delta while processes are dropped: HTTP $code, $np processes, '${mb:-}'MB"
fi
# Every profile this test wrote, read by the independent reader.
bad=0
for p in "$out"/*.pb.gz; do
	go tool pprof -symbolize=none -raw "$p" >/dev/null 2>&1 || { bad=1; tap_diag "unreadable: $p"; }
done
[ $bad = 0 ] && tap_ok "every profile written is read by go tool pprof -raw" || tap_fail "unreadable profiles"
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
