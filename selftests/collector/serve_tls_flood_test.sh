#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve with a tls: listener under a handshake flood, in the VM.
# Clients that connect to the TLS port and never send a ClientHello hold a
# connection thread each until the request deadline (10 s).  From 11
# addresses (12 each, the per-client limit) they would hold every one of
# the 128 connection threads, so nobody else, a root scrape on the plain
# loopback listener included, would be served for as long as they keep it
# up.  Asserts: while 132 such connections are kept up, a plain loopback
# scrape is served (200), and the connections over the cap on handshakes
# in progress are closed at once and counted on the index page.  Repo root,
# as root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
. "$top/selftests/collector/tls_certs.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
NADDR=11 PER=12
out=$(mktemp -d /tmp/kpprof-tls-flood.XXXXXX)
tap_plan
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
modprobe -q tcp_diag 2>/dev/null || true
# Non-loopback addresses of this machine, reached through lo: "remote" clients.
for i in $(seq 1 $NADDR); do
	ip addr add 10.99.1.$i/32 dev lo 2>/dev/null || busybox ip addr add 10.99.1.$i/32 dev lo
done
srv= holder=
trap '[ -n "$holder" ] && kill $holder 2>/dev/null; [ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null
	for i in $(seq 1 $NADDR); do ip addr del 10.99.1.$i/32 dev lo 2>/dev/null; done
	rm -rf "$out"' EXIT
tls_certs "$out/c" || { tap_fail "openssl made the test certificates"; tap_done; }
c=$out/c

tls_serve "$out" --listen 127.0.0.1:0 --listen tls:10.99.1.1:0 --tls-cert "$c/server.pem" \
	--tls-key "$c/server.key" --tls-client-ca "$c/ca.pem"

# The flood: PER connections from each address, holding still (no
# ClientHello), each one the server closes opened again (as an attacker
# keeps it up); "held N" once all were connected the first time.
python3 -c '
import select, socket, sys, time
port, naddr, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def conn(i):
    s = socket.socket()
    s.bind(("10.99.1.%d" % i, 0))
    s.connect(("10.99.1.1", port))
    return s
keep = {}
for i in range(1, naddr + 1):
    for _ in range(per):
        s = conn(i)
        keep[s] = i
print("held", len(keep), flush=True)
while True:
    gone, _, _ = select.select(list(keep), [], [], 0.2)
    for s in gone:
        i = keep.pop(s)
        s.close()
        keep[conn(i)] = i
    time.sleep(0.1)
' "$tport" $NADDR $PER >"$out/holder.out" 2>&1 &
holder=$!
wait_for 60 grep -q "^held" "$out/holder.out"
# Every connection accepted (none left in the listener's queue).
accepted() { [ "$(ss -Hltn "sport = :$tport" | awk '{print $2}')" = 0 ]; }
wait_for 30 accepted
# Five scrapes a second apart: each must be served (the flood is kept up
# all along, so one lucky moment between its reconnections proves nothing).
codes= t0=$(date +%s%N)
for i in 1 2 3 4 5; do
	codes+="$(curl -s -m 20 -o /dev/null -w '%{http_code}' "${url}heap") "
	sleep 1
done
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$codes" = "200 200 200 200 200 " ]; then
	tap_ok "$(cat "$out/holder.out") idle TLS connections from $NADDR addresses, kept up: 5 plain loopback scrapes served (${ms} ms)"
else
	tap_diag "listener: $(ss -Hltn "sport = :$tport")"
	tap_fail "with $(cat "$out/holder.out") idle TLS connections kept up, plain loopback scrapes got HTTP $codes(${ms} ms)"
fi
kill $holder; wait $holder 2>/dev/null; holder=
cnt=$(curl -s -m 20 "${url}")
busy=$(sed -nE 's/.* ([0-9]+) \(handshakes at once\).*/\1/p' <<<"$cnt")
[ "${busy:-0}" -ge 1 ] && tap_ok "the connections over the handshake cap were closed and counted: $busy" ||
	{ tap_diag "$cnt"; tap_fail "handshakes over the cap not counted: '${busy:-}'"; }
kill -TERM $srv
wait $srv
rc=$?
srv=
[ $rc = 0 ] && tap_ok "server exits 0" || { tap_diag "$(tail -5 "$out/serve.out")"; tap_fail "server exit $rc"; }
tap_done
