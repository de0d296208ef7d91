#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve --listen tls:HOST:PORT in the VM (README "Scraping it from
# another machine"): mutual TLS beyond loopback.  The server listens on a
# non-loopback address (10.99.0.1, put on lo, so the client is "remote":
# not 127/8) with a throwaway CA (tls_certs.sh), beside a plain loopback
# listener whose per-uid rule must not change.  Asserts: a client
# certificate the CA issued gets /debug/pprof/heap (200, gzip'd, every
# process, another uid's too) with curl and with `pprof -tls_cert
# -tls_key -tls_ca` (the standalone driver: `go tool pprof` ignores these
# flags); no certificate, a self-signed one, an expired one,
# plain HTTP, a name outside --tls-client-name: refused, counted, logged
# once for the address; clients that connect and send nothing are dropped
# at the request deadline and free their slots (per-client limit), while
# the plain listener serves meanwhile.  Repo root, as root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
. "$top/selftests/collector/tls_certs.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
SHIM=$top/build/user/shim/libkpprof.so
A=4101 B=4102
UA="setpriv --reuid=$A --regid=$A --clear-groups"
UB="setpriv --reuid=$B --regid=$B --clear-groups"
REMOTE=10.99.0.1
out=$(mktemp -d /tmp/kpprof-tls.XXXXXX)
chmod 755 "$out"
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
tap_plan
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
modprobe -q tcp_diag 2>/dev/null || true
# A non-loopback address of this machine, reached through lo.
ip addr add $REMOTE/32 dev lo 2>/dev/null || busybox ip addr add $REMOTE/32 dev lo 2>/dev/null || true
srv= pids=() idle=()
trap 'kill ${pids[*]} 2>/dev/null; [ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null
	ip addr del $REMOTE/32 dev lo 2>/dev/null || busybox ip addr del $REMOTE/32 dev lo 2>/dev/null
	rm -rf "$out"' EXIT
tls_certs "$out/c" || { tap_fail "openssl made the test certificates"; tap_done; }
c=$out/c

tls_serve "$out" --listen 127.0.0.1:0 --listen tls:$REMOTE:0 --tls-cert "$c/server.pem" --tls-key "$c/server.key" \
	--tls-client-ca "$c/ca.pem" --tls-client-name scraper --mem-rate 65536
tap_diag "plain $url, mutual TLS $turl"

# Another uid's process, holding memory: a verified remote client sees it.
hold='import time
keep = [bytearray(300000) for _ in range(200)]
print("ready", flush=True); time.sleep(600)'
$UA env LD_PRELOAD=$SHIM python3 -c "$hold" >"$out/a.ready" &
va=$!; pids+=($va)
wait_for 60 grep -q ready "$out/a.ready"

TC=(--cacert "$c/ca.pem")
GOOD=("${TC[@]}" --cert "$c/good.pem" --key "$c/good.key")
pids_in() { go tool pprof -symbolize=none -raw "$1" 2>/dev/null | grep -oE 'pid:\[[0-9]+\]' | sort -u | tr -d 'pid:[]' | tr '\n' ' '; }
has() { grep -qw "$2" <<<"$1"; }
good_sees_a() {
	code=$(curl -s "${GOOD[@]}" -o "$out/heap.pb.gz" -w '%{http_code}' "${turl}heap?gc=1") &&
		[ "$code" = 200 ] && has "$(pids_in "$out/heap.pb.gz")" $va
}
if wait_for 90 good_sees_a && [ "$(head -c2 "$out/heap.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
	tap_ok "curl with the CA's client certificate: ${turl}heap 200, gzip'd, uid $A's pid $va in it"
else
	tap_diag "HTTP ${code:-?}; pids: $(pids_in "$out/heap.pb.gz")"
	tap_diag "$(curl -sv "${GOOD[@]}" -o /dev/null "${turl}heap" 2>&1 | tail -5)"
	tap_fail "curl with a good client certificate"
fi
v=$(curl -sv "${GOOD[@]}" -o /dev/null "${turl}" 2>&1 | grep -oE 'SSL connection using TLSv1\.[0-9]' | head -1)
[ "$v" = "SSL connection using TLSv1.3" ] && tap_ok "TLS 1.3 when the client has it" || tap_fail "negotiated: '$v'"
code=$(curl -s "${GOOD[@]}" --tls-max 1.2 -o /dev/null -w '%{http_code}' "${turl}heap")
[ "$code" = 200 ] && tap_ok "TLS 1.2 client served" || tap_fail "TLS 1.2 client: HTTP $code"

# The loopback rule is unchanged on the plain listener: uid B sees nothing of A's.
code=$($UB curl -s -o "$out/b.pb.gz" -w '%{http_code}' "${url}heap")
got=$(pids_in "$out/b.pb.gz")
[ "$code" = 200 ] && ! has "$got" $va && tap_ok "plain loopback listener: uid $B still sees none of uid $A's processes" ||
	tap_fail "plain loopback, uid $B: HTTP $code, sees $got"

# pprof's own TLS flags, straight at the URL.  `go tool pprof` accepts
# them but fetches with its own client (Go's cmd/pprof/pprof.go), which
# presents no client certificate; the standalone pprof driver (built by the
# Makefile from the copy Go vendors) honours them.  `go tool pprof` reads
# what curl fetched (above).
P=$top/build/selftests/collector/upstream-pprof/pprof
if [ -x "$P" ]; then
	t=$("$P" -symbolize=none -raw -tls_cert "$c/good.pem" -tls_key "$c/good.key" -tls_ca "$c/ca.pem" \
		"${turl}heap" 2>&1)
	grep -q "pid:\[$va\]" <<<"$t" && tap_ok "pprof -tls_cert -tls_key -tls_ca ${turl}heap: uid $A's pid in it" ||
		{ tap_diag "$(head -5 <<<"$t")"; tap_fail "pprof over mutual TLS"; }
	t=$("$P" -symbolize=none -raw -tls_ca "$c/ca.pem" "${turl}heap" 2>&1)
	! grep -q "pid:\[" <<<"$t" && tap_ok "pprof -tls_ca without a client certificate gets nothing" ||
		tap_fail "pprof without a client certificate read a profile"
else
	tap_fail "pprof -tls_cert" "$P not built (make -C selftests/collector)"
	tap_fail "pprof -tls_ca without a client certificate" "$P not built"
fi

# Refused: each with no HTTP status at all (the handshake failed).
refused() { # NAME CURL-ARGS...
	local name=$1 code rc
	shift
	code=$(curl -s -m 20 -o "$out/r.body" -w '%{http_code}' "$@")
	rc=$?
	[ $rc != 0 ] && [ "$code" = 000 ] && [ ! -s "$out/r.body" ] && tap_ok "$name: refused (curl exit $rc)" ||
		tap_fail "$name: curl exit $rc, HTTP $code, $(wc -c <"$out/r.body" 2>/dev/null) bytes: $(head -c 80 "$out/r.body" 2>/dev/null | tr -c '[:print:]' .)"
}
refused "no client certificate" "${TC[@]}" "${turl}heap"
refused "a self-signed client certificate" "${TC[@]}" --cert "$c/self.pem" --key "$c/self.key" "${turl}heap"
refused "an expired client certificate (issued by the CA)" "${TC[@]}" --cert "$c/expired.pem" --key "$c/expired.key" "${turl}heap"
refused "the CA's certificate for CN=intruder, not in --tls-client-name" "${TC[@]}" --cert "$c/other.pem" --key "$c/other.key" "${turl}heap"
refused "plain HTTP to the TLS port" "http://$REMOTE:$tport/debug/pprof/heap"

cnt=$(curl -s "${GOOD[@]}" "${turl}")
n() { sed -nE "s/.*tls refused:.* ([0-9]+) \($1\).*/\1/p" <<<"$cnt"; }
if [ "$(n 'client certificate missing or not trusted')" -ge 3 ] 2>/dev/null &&
   [ "$(n 'not TLS or handshake failed')" -ge 1 ] 2>/dev/null &&
   [ "$(n 'client name not allowed')" -ge 1 ] 2>/dev/null; then
	tap_ok "refusals counted: $(grep -oE 'tls refused:.*' <<<"$cnt")"
else
	tap_diag "$cnt"
	tap_fail "TLS refusals not counted"
fi
lines=$(grep -c "TLS client $REMOTE refused" "$out/serve.out")
[ "$lines" = 1 ] && tap_ok "logged once for $REMOTE: $(grep "TLS client $REMOTE refused" "$out/serve.out")" ||
	{ tap_diag "$(grep 'TLS client' "$out/serve.out")"; tap_fail "$lines log lines for $REMOTE's refusals"; }

# Clients that connect and never start the handshake: 12, the limit per
# client.  The 13th connection (a good client's) is closed at once; the
# plain listener answers meanwhile (no handshake waits in the accepting
# thread); at the request deadline the 12 are dropped, and the good client
# is served again.
t0=$(date +%s%N)
for i in $(seq 12); do
	exec {f}<>"/dev/tcp/$REMOTE/$tport" || break
	idle+=("$f")
done
code=$(curl -s -m 20 "${GOOD[@]}" -o /dev/null -w '%{http_code}' "${turl}heap")
[ ${#idle[@]} = 12 ] && [ "$code" = 000 ] && tap_ok "12 idle connections from $REMOTE: its 13th is closed at once" ||
	tap_fail "with ${#idle[@]} idle connections: the 13th got HTTP $code"
c1=$(curl -s -m 20 -o /dev/null -w '%{http_code}' "${url}heap")
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$c1" = 200 ] && tap_ok "meanwhile the plain listener serves (${ms} ms after)" || tap_fail "plain listener: HTTP $c1"
gone=0 first= end=$(($(date +%s) + 60))
for f in "${idle[@]}"; do
	# EOF: the server closed it.  60 s for all (the deadline is 10 s).
	left=$((end - $(date +%s)))
	[ $left -gt 0 ] && timeout $left cat <&"$f" >/dev/null && gone=$((gone + 1))
	[ -n "$first" ] || first=$((($(date +%s%N) - t0) / 1000000))
	exec {f}<&-
done
ms=$((($(date +%s%N) - t0) / 1000000))
# Dropped at the deadline (10 s after accept, which came after t0), not at once.
[ $gone = 12 ] && [ "$first" -ge 9500 ] &&
	tap_ok "the 12 were dropped at the deadline (the first ${first} ms after connecting, the last ${ms} ms)" ||
	tap_fail "idle connections: $gone of 12 closed by the server, the first after ${first} ms"
code=$(curl -s -m 20 "${GOOD[@]}" -o /dev/null -w '%{http_code}' "${turl}heap")
[ "$code" = 200 ] && tap_ok "their slots are free: the good client is served" || tap_fail "after the drop: HTTP $code"
cnt=$(curl -s "${GOOD[@]}" "${turl}")
slow=$(sed -nE 's/.* ([0-9]+) \(handshake too slow\).*/\1/p' <<<"$cnt")
per=$(sed -nE 's/.*http refused: ([0-9]+) \(connections per client\).*/\1/p' <<<"$cnt")
[ "${slow:-0}" -ge 12 ] && [ "${per:-0}" -ge 1 ] &&
	tap_ok "counted: $slow handshakes too slow, $per connections over the per-client limit" ||
	{ tap_diag "$cnt"; tap_fail "idle connections not counted: slow '${slow:-}', per client '${per:-}'"; }

kill -TERM $srv
wait $srv
rc=$?
srv=
[ $rc = 0 ] && tap_ok "server exits 0" || { tap_diag "$(tail -5 "$out/serve.out")"; tap_fail "server exit $rc"; }

# Without --tls-client-name: the certificate alone decides.  No
# certificate is still refused (by the handshake, not by a name); the
# CA's CN=intruder is served (the name list was what refused it above).
$K serve --listen tls:$REMOTE:0 --tls-cert "$c/server.pem" --tls-key "$c/server.key" \
	--tls-client-ca "$c/ca.pem" >"$out/serve2.out" 2>&1 &
srv=$!
wait_for 30 grep -q "serving https" "$out/serve2.out"
turl=$(sed -nE 's/.*serving (https:[^ ]*).*/\1/p' "$out/serve2.out" | head -1)
refused "no --tls-client-name: no client certificate" "${TC[@]}" "${turl}heap"
code=$(curl -s "${TC[@]}" --cert "$c/other.pem" --key "$c/other.key" -o /dev/null -w '%{http_code}' "${turl}heap")
[ "$code" = 200 ] && tap_ok "no --tls-client-name: the CA's CN=intruder is served" || tap_fail "CN=intruder: HTTP $code"
cnt=$(curl -s "${GOOD[@]}" "${turl}")
[ "$(n 'client certificate missing or not trusted')" = 1 ] && [ "$(n 'client name not allowed')" = 0 ] &&
	tap_ok "counted as a missing certificate: $(grep -oE 'tls refused:.*' <<<"$cnt")" ||
	{ tap_diag "$cnt"; tap_fail "no-certificate refusal counted as"; }
kill -TERM $srv
wait $srv
srv=
tap_done
