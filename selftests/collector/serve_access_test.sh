#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve against other users' clients, in the VM (README "Threat
# model"): each client sees only the processes its uid may ptrace-read,
# over loopback TCP and over the Unix socket, in profiles, pid= and
# /symbol; Host is checked; a non-loopback --listen is refused without
# --insecure-remote; abandoned deltas and slow clients starve nobody.
# `go tool pprof` reads the endpoint as root and as an ordinary user.
# Repo root, as root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
SHIM=$top/build/user/shim/libkpprof.so
W=$top/build/selftests/collector/workloads
A=4101 B=4102
UA="setpriv --reuid=$A --regid=$A --clear-groups"
UB="setpriv --reuid=$B --regid=$B --clear-groups"
out=$(mktemp -d /tmp/kpprof-access.XXXXXX)
chmod 755 "$out"
mkdir -p "$out/a" "$out/b" "$out/root"
chown $A:$A "$out/a"
chown $B:$B "$out/b"
export GOTOOLCHAIN=local
tap_plan
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
# serve learns loopback clients' uids by sock_diag; the VM's init cannot autoload it.
modprobe -q tcp_diag 2>/dev/null || true

# wait_for SECONDS CMD...: poll until CMD succeeds; false after SECONDS.
wait_for() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# --- listening beyond loopback (before the server: one consumer at a time)
o=$(timeout 5 $K serve --listen 0.0.0.0:0 2>&1)
rc=$?
[ $rc != 0 ] && grep -q -- --insecure-remote <<<"$o" && tap_ok "--listen 0.0.0.0 refused without --insecure-remote" ||
	{ tap_diag "rc $rc: $o"; tap_fail "non-loopback --listen accepted"; }

sock=$out/kpprof.sock
# (A collector without Unix sockets still runs the TCP checks: the tests
# were shown to fail on the collector before this one.)
unix=(--listen "unix:$sock")
$K serve --help | grep -q unix: || unix=()
$K serve --listen 127.0.0.1:0 "${unix[@]}" --mem-rate 65536 >"$out/serve.out" 2>&1 &
srv=$!
pids=()
trap 'kill ${pids[*]} 2>/dev/null; kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
wait_for 20 grep -q "serving http" "$out/serve.out"
url=$(sed -nE 's/.*serving (http:[^ ]*)/\1/p' "$out/serve.out" | head -1)
[ -n "$url" ] || { tap_diag "$(cat "$out/serve.out")"; tap_fail "server did not start"; tap_done; }
hostport=${url#http://}; hostport=${hostport%%/*}
uurl=http://localhost/debug/pprof/

# Long-lived processes: root's, A's, A's made non-dumpable (as ssh-agent
# does); and a short one of A's that has exited by the time it is asked.
# Each also mallocs through ctypes: those samples' stacks run through
# libffi and _ctypes, mapped at addresses of their own in each process
# (ASLR), so root's profile always holds a mapping that only root's process
# has (python3.11 itself is not PIE: every python has it at one address).
hold='import sys, time, ctypes
libc = ctypes.CDLL(None)
if sys.argv[1] == "nodump": libc.prctl(4, 0, 0, 0, 0)
libc.malloc.restype = ctypes.c_void_p
big = [libc.malloc(1 << 20) for _ in range(8)]
keep = [bytearray(300000) for _ in range(200)]
print("ready", flush=True); time.sleep(600)'
LD_PRELOAD=$SHIM python3 -c "$hold" root >"$out/r.ready" &
vroot=$!; pids+=($vroot)
$UA env LD_PRELOAD=$SHIM python3 -c "$hold" dump >"$out/a.ready" &
va=$!; pids+=($va)
$UA env LD_PRELOAD=$SHIM python3 -c "$hold" nodump >"$out/n.ready" &
vnd=$!; pids+=($vnd)
$UA env LD_PRELOAD=$SHIM "$W/seeds_heap" 20
$UA env LD_PRELOAD=$SHIM "$W/seeds_heap" 20 &
vshort=$!
wait $vshort
wait_for 60 grep -q ready "$out/r.ready" "$out/a.ready" "$out/n.ready"

# Labels of the processes a heap profile holds, as go tool pprof reads it.
pids_in() { go tool pprof -symbolize=none -raw "$1" 2>/dev/null | grep -oE 'pid:\[[0-9]+\]' | sort -u | tr -d 'pid:[]' | tr '\n' ' '; }
has() { grep -qw "$2" <<<"$1"; }
all_there() {
	curl -s -o "$out/root/heap.pb.gz" "${url}heap?gc=1" &&
		r=$(pids_in "$out/root/heap.pb.gz") && has "$r" $vroot && has "$r" $va && has "$r" $vnd && has "$r" $vshort
}
if wait_for 90 all_there; then
	tap_ok "root sees every process (root $vroot, A $va, A non-dumpable $vnd, A exited $vshort)"
else
	tap_diag "root's heap has pids: $(pids_in "$out/root/heap.pb.gz")"
	tap_fail "root does not see every process"
fi
# go tool pprof as root, straight at the URL.
t=$(HOME=$out/root GOCACHE=$out/root/gocache PPROF_TMPDIR=$out/root go tool pprof -symbolize=none -raw "${url}heap" 2>&1)
grep -q "pid:\[$vroot\]" <<<"$t" && grep -q "pid:\[$va\]" <<<"$t" && tap_ok "go tool pprof as root reads ${url}heap, every process" ||
	{ tap_diag "$(head -5 <<<"$t")"; tap_fail "go tool pprof as root"; }

# --- H1: A over loopback TCP, through go tool pprof run as A
t=$($UA env HOME=$out/a GOCACHE=$out/a/gocache PPROF_TMPDIR=$out/a go tool pprof -symbolize=none -raw "${url}heap" 2>&1)
got=$(grep -oE 'pid:\[[0-9]+\]' <<<"$t" | sort -u | tr -d 'pid:[]' | tr '\n' ' ')
if has "$got" $va && has "$got" $vshort && ! has "$got" $vroot && ! has "$got" $vnd; then
	tap_ok "go tool pprof as uid $A over TCP: its processes only ($got)"
else
	tap_diag "$(head -5 <<<"$t")"
	tap_fail "uid $A over TCP sees: $got (root $vroot, non-dumpable $vnd)"
fi
# ... and no mapping of root's process (its ASLR layout): a mapping start in
# root's view that root's process has and A's does not.  The mappings are
# read from the protobuf itself, not through go tool pprof: pprof merges
# every profile it reads (profile.Merge), keying a mapping by build-id,
# size and offset but not start, so each library shows once, at the start
# of whichever process was sampled first; one make check in ten had A's
# python first in root's view and no start of root's process to look for.
# (Root's view is still fetched again for up to 60 s, in case a sample of
# root's process comes late.)
# pb_maps FILE: "START LIMIT OFFSET FILE" per mapping, as kpprof wrote them.
pb_maps() {
	python3 - "$1" <<'PY'
import gzip, sys
def varint(b, i):
    x = s = 0
    while True:
        c = b[i]; i += 1; x |= (c & 0x7f) << s; s += 7
        if c < 0x80: return x, i
def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        t = k & 7
        if t == 0: v, i = varint(b, i)
        elif t == 1: v, i = b[i:i + 8], i + 8
        elif t == 5: v, i = b[i:i + 4], i + 4
        elif t == 2:
            n, i = varint(b, i); v, i = b[i:i + n], i + n
        else: raise ValueError("wire type %d" % t)
        yield k >> 3, v
maps, strs = [], []
for f, v in fields(gzip.open(sys.argv[1]).read()):
    if f == 3: maps.append(dict(fields(v)))
    elif f == 6: strs.append(v.decode(errors="replace"))
for m in maps:
    print("0x%x 0x%x 0x%x %s" % (m.get(2, 0), m.get(3, 0), m.get(4, 0), strs[m.get(5, 0)]))
PY
}
only=
root_only_mapping() {
	local m h
	curl -s -o "$out/root/heap2.pb.gz" "${url}heap" || return 1
	rt=$(pb_maps "$out/root/heap2.pb.gz" 2>&1) || return 1
	for m in $(cut -d' ' -f1 <<<"$rt" | sort -u); do
		h=${m#0x}
		if grep -qE "^0*$h-" /proc/$vroot/maps && ! grep -qE "^0*$h-" /proc/$va/maps; then
			only=$m
			return 0
		fi
	done
	return 1
}
if ! wait_for 60 root_only_mapping; then
	tap_diag "root's view, no mapping of root's process $vroot alone in 60 s:" "$rt" \
		"/proc/$vroot/maps:" "$(cat /proc/$vroot/maps 2>&1)" "/proc/$va/maps:" "$(cat /proc/$va/maps 2>&1)"
	tap_fail "root's view holds no mapping of root's process alone: nothing to look for in uid $A's view"
elif ! $UA curl -s -o "$out/a/heap3.pb.gz" "${url}heap" || ! t=$(pb_maps "$out/a/heap3.pb.gz" 2>&1) ||
	# (A's view fetched after root's shows the mapping; empty: no view.)
	[ -z "$t" ] || grep -q "^$only " <<<"$t"; then
	tap_diag "uid $A's view:" "$t"
	tap_fail "root's mapping $only in uid $A's view (or no view: no mappings)"
else
	tap_ok "uid $A sees no mapping of root's process ($only, in root's view; $(wc -l <<<"$t") mappings of its own)"
fi
# A over the Unix socket (curl), then go tool pprof on the file, as A.
$UA curl -s --unix-socket "$sock" -o "$out/a/unix.pb.gz" "${uurl}heap"
got=$($UA env HOME=$out/a GOCACHE=$out/a/gocache go tool pprof -symbolize=none -raw "$out/a/unix.pb.gz" 2>/dev/null |
      grep -oE 'pid:\[[0-9]+\]' | sort -u | tr -d 'pid:[]' | tr '\n' ' ')
has "$got" $va && ! has "$got" $vroot && ! has "$got" $vnd && tap_ok "uid $A over the Unix socket: its processes only ($got)" ||
	tap_fail "uid $A over the Unix socket sees: $got"
# Root over the Unix socket sees all.
curl -s --unix-socket "$sock" -o "$out/root/unix.pb.gz" "${uurl}heap"
got=$(pids_in "$out/root/unix.pb.gz")
has "$got" $vroot && has "$got" $va && tap_ok "root over the Unix socket: every process" || tap_fail "root over the Unix socket: $got"
# A with CAP_PERFMON (not root) over the Unix socket: every process.
$UA --inh-caps +perfmon --ambient-caps +perfmon curl -s --unix-socket "$sock" -o "$out/a/perfmon.pb.gz" "${uurl}heap"
got=$(pids_in "$out/a/perfmon.pb.gz")
has "$got" $vroot && has "$got" $vnd && tap_ok "uid $A with CAP_PERFMON over the Unix socket: every process" ||
	tap_fail "uid $A with CAP_PERFMON sees: $got"
# B sees none of A's or root's.
code=$($UB curl -s -o "$out/b/heap.pb.gz" -w '%{http_code}' "${url}allocs")
got=$(pids_in "$out/b/heap.pb.gz")
[ "$code" = 200 ] && go tool pprof -symbolize=none -raw "$out/b/heap.pb.gz" >/dev/null 2>&1 && [ -z "$got" ] &&
	tap_ok "uid $B (no process of its own): a valid profile of no process" || tap_fail "uid $B: HTTP $code, sees: $got"
# Another user's pid is answered as a pid never seen: same status, same text.
same_404() {
	local c1 c2 b1 b2
	c1=$($UA curl -s -o "$out/a/x1" -w '%{http_code}' "${url}heap?pid=$1")
	c2=$($UA curl -s -o "$out/a/x2" -w '%{http_code}' "${url}heap?pid=4194000")
	b1=$(sed "s/$1/N/" "$out/a/x1"); b2=$(sed "s/4194000/N/" "$out/a/x2")
	[ "$c1" = 404 ] && [ "$c2" = 404 ] && [ "$b1" = "$b2" ]
}
same_404 $vroot && tap_ok "uid $A asking root's pid: 404 as a pid never seen" ||
	tap_fail "uid $A asking root's pid: $(cat "$out/a/x1")"
same_404 $vnd && tap_ok "uid $A asking its non-dumpable process: 404 as a pid never seen" ||
	tap_fail "uid $A asking its non-dumpable pid: $(cat "$out/a/x1")"
code=$($UA curl -s -o /dev/null -w '%{http_code}' "${url}heap?pid=$va")
[ "$code" = 200 ] && tap_ok "uid $A asking its own pid: 200" || tap_fail "uid $A own pid: HTTP $code"
# /symbol: root names an address of root's process; A never does, by POST
# or GET, with pid= or without.
# An address in a library (ASLR: A's processes map other code there).
addr=$(curl -s "${url}heap?debug=1&pid=$vroot" | awk '$1 == "#" && $3 != "?" && $2 ~ /^0x7/ { print $2; exit }')
r1=$(curl -s --data-binary "$addr" "${url}symbol?pid=$vroot")
a1=$($UA curl -s --data-binary "$addr" "${url}symbol?pid=$vroot")
a2=$($UA curl -s --data-binary "$addr" "${url}symbol")
a3=$($UA curl -s "${url}symbol?$addr")
a4=$($UA curl -s --unix-socket "$sock" --data-binary "$addr" "${uurl}symbol?pid=$vroot")
if [ -n "$addr" ] && grep -q "^$addr " <<<"$r1" &&
   [ "$a1" = "num_symbols: 1" ] && [ "$a2" = "num_symbols: 1" ] && [ "$a3" = "num_symbols: 1" ] &&
   [ "$a4" = "num_symbols: 1" ]; then
	tap_ok "symbol: root names $addr ($(cut -d' ' -f2 <<<"$r1" | tail -1)); uid $A gets no name (POST, GET, pid= or not, TCP and Unix)"
else
	tap_diag "addr '$addr' root '$r1'" "A: '$a1' '$a2' '$a3' '$a4'"
	tap_fail "symbol oracle"
fi

# --- Host header (DNS rebinding)
c1=$(curl -s -o "$out/h.txt" -w '%{http_code}' -H "Host: rebind.example:${hostport##*:}" "${url}heap")
c2=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: localhost:${hostport##*:}" "${url}heap")
[ "$c1" = 403 ] && [ "$c2" = 200 ] && tap_ok "Host: rebind.example 403, Host: localhost 200" ||
	tap_fail "Host check: rebind.example $c1 ($(cat "$out/h.txt")), localhost $c2"
# The Unix socket too: the README's socat bridge (TCP port -> socket) would
# carry a rebinding page's requests there with the bridge's credentials.
if [ ${#unix[@]} -gt 0 ]; then
	c1=$($UA curl -s -o "$out/h2.txt" -w '%{http_code}' --unix-socket "$sock" \
		-H "Host: rebind.example:6062" "${uurl}heap")
	c2=$($UA curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" "${uurl}heap")
	[ "$c1" = 403 ] && [ "$c2" = 200 ] &&
		tap_ok "Unix socket: Host: rebind.example 403, Host: localhost 200" ||
		tap_fail "Unix socket Host check: rebind.example $c1 ($(cat "$out/h2.txt")), localhost $c2"
else
	tap_skip "no Unix socket listener"
fi

# --- H5: 16 ?seconds=3600 whose clients leave at once, then a delta and a scrape
cp=()
for i in $(seq 16); do curl -s -m 1 -o /dev/null "${url}block?seconds=3600" & cp+=($!); done
wait "${cp[@]}"
t0=$(date +%s%N)
c1=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "${url}heap")
c2=$(curl -s -m 20 -o "$out/d.txt" -w '%{http_code}' "${url}mutex?seconds=1")
ms=$((($(date +%s%N) - t0) / 1000000))
ab=$(curl -s "${url}" | sed -nE 's/.*abandoned by their client: ([0-9]+).*/\1/p')
[ "$c1" = 200 ] && [ "$c2" = 200 ] && [ "${ab:-0}" -ge 1 ] &&
	tap_ok "16 abandoned ?seconds=3600: a scrape and a delta served after ($ms ms; $ab abandoned counted)" ||
	tap_fail "after 16 abandoned deltas: scrape $c1, delta $c2 $(cat "$out/d.txt"), abandoned '${ab:-}'"

# --- H5: 32 slow-loris connections of B's, then scrapes of root and A
$UB python3 - "${hostport%%:*}" "${hostport##*:}" >"$out/slow.txt" 2>&1 <<'PY' &
import socket, sys, time
ss = []
for i in range(32):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); s.send(b"G"); ss.append(s)
    except OSError as e:
        print("connect", e)
print("open", len(ss), flush=True)
for _ in range(8):
    time.sleep(2)
    for s in ss:
        try: s.send(b"E")
        except OSError: pass
PY
slow=$!
wait_for 20 grep -q open "$out/slow.txt"
t0=$(date +%s%N)
c1=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "${url}heap")
c2=$($UA curl -s -m 5 -o /dev/null -w '%{http_code}' "${url}heap")
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$c1" = 200 ] && [ "$c2" = 200 ] && tap_ok "32 slow connections of uid $B: root and uid $A still served ($ms ms)" ||
	tap_fail "during slow-loris: root $c1, uid $A $c2"
kill $slow 2>/dev/null; wait $slow 2>/dev/null
cnt=$(curl -s "${url}")
grep -qE '[1-9][0-9]* \(connections per client\)' <<<"$cnt" && tap_ok "refusals counted: $(grep refused <<<"$cnt")" ||
	tap_fail "no refusal counted: $cnt"

# --- L6: seconds beyond an hour is a delta, not a 400 (scrapers send their interval)
code=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "${url}mutex?seconds=7200")
[ "$code" = 000 ] && tap_ok "seconds=7200 accepted (HTTP '$code' when the client left)" || tap_fail "seconds=7200: 400"

kill -TERM $srv
wait $srv
rc=$?
[ $rc = 0 ] && ! grep -q Sanitizer "$out/serve.out" && [ ! -e "$sock" ] &&
	tap_ok "serve exits 0 on SIGTERM and removes its socket" ||
	{ tap_diag "$(head -c 3000 "$out/serve.out")"; tap_fail "serve exit status $rc"; }
tap_done
