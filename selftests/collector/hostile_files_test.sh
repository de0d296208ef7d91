#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Hostile producers against `kpprof serve` (in the VM): an unprivileged user
# (nobody) writes crafted records through the real device while the
# collector runs under strace -f, and a normal program of another uid
# (root) is profiled meanwhile:
#   - stripped libraries it maps whose .gnu_debuglink names
#     "../../../../../../etc/shadow", "shadow" (a symlink to /etc/shadow in
#     its directory), and a 200 GB sparse file beside them;
#   - 2 x 5000 MMAP records of ranges never mapped, naming a root-only
#     library (/tmp/.../secret/lib.so, 0600 in a 0700 directory) and
#     /etc/shadow, each with samples inside, so the collector tries them.
# Asserted: the collector opens neither /etc/shadow nor the secret library
# (only O_PATH lookups and refusals in strace), a scrape answers within
# 60 s without reading the sparse file (rchar), its descriptors and RSS stay
# within the stated bounds, the refusals are counted in the profile
# comment, and the normal program's profile is right.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
tap_plan
if ! command -v strace >/dev/null || [ "$(id -u)" != 0 ]; then
	tap_skip "hostile producers" "needs root and strace"
	tap_done
fi
out=$(mktemp -d /tmp/kpprof-hostile.XXXXXX)
chmod 755 "$out"
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
pids=()
srv=
cleanup() {
	exec 7>&- 8>&- 9>&- 2>/dev/null
	# The collector first: strace, killed, would only detach from it.
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT

# --- the producer's files, all its own ---
ev=$out/evil
mkdir "$ev"
lib=$top/build/selftests/collector/libcxx_demo.so
# A .gnu_debuglink section naming $2, CRC $3 (4 little-endian bytes, octal).
debuglink() {
	local n=$((${#2} + 1))
	{ printf '%s\0' "$2"; head -c $(((4 - n % 4) % 4)) /dev/zero; printf "$3"; } >"$ev/dl.blob"
	objcopy --strip-all "$lib" "$ev/$1" && objcopy --add-section .gnu_debuglink="$ev/dl.blob" "$ev/$1"
}
debuglink dotdot.so ../../../../../../etc/shadow '\001\002\003\004' &&
	debuglink link.so shadow '\001\002\003\004' &&
	debuglink big.so big.debug '\001\002\003\004' &&
	ln -s /etc/shadow "$ev/shadow" && truncate -s 200G "$ev/big.debug" &&
	cp "$W/hostile_producer" "$ev/" || { tap_fail "setup"; tap_done; }
chown -R -h nobody:nogroup "$ev"
mkdir -m 700 "$out/secret"
install -m 600 "$lib" "$out/secret/lib.so"
step() { tap_diag "$(date +%T) $*"; }

step "setup done"
# --- the collector, every open traced ---
strace -f -qq --seccomp-bpf -e trace=openat,openat2 -o "$out/strace.log" \
	"$K" serve --listen 127.0.0.1:0 --mem-rate 65536 >"$out/serve.out" 2>&1 &
st=$!
pids+=("$st")
for _ in $(seq 100); do grep -q serving "$out/serve.out" && break; sleep 0.2; done
url=$(sed -nE 's/.*serving (http:[^ ]*)/\1/p' "$out/serve.out")
srv=$(ps -o pid= --ppid "$st" | tr -d ' ')
[ -n "$url" ] && [ -n "$srv" ] || { tap_diag "$(cat "$out/serve.out")"; tap_fail "server did not start"; tap_done; }
cpu() { awk '{ print $14 + $15 }' "/proc/$srv/stat"; }
cpu0=$(cpu)
step "serving at $url, collector pid $srv"

# --- the hostile producers, as nobody, alive until their stdin closes ---
known() {	# the collector has drained process $1's records
	# One budget for every call, 400 s, well inside the list's 900 s for
	# this program: a collector that stops answering must leave time to
	# say where its threads are.  Under strace -f in TCG on a loaded
	# machine, each traced open takes milliseconds, so draining the floods
	# can take minutes; the bound is for a collector that never catches up.
	while [ $SECONDS -lt $known_deadline ]; do
		[ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "${url}heap?pid=$1")" = 200 ] && return 0
		sleep 0.2
	done
	for t in /proc/$srv/task/*; do tap_diag "thread ${t##*/}: $(cat "$t/wchan" 2>/dev/null) $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"; done
	tap_diag "strace tail: $(tail -5 "$out/strace.log")"
	return 1
}
known_deadline=$((SECONDS + 400))
mkfifo "$out/in1" "$out/in2" "$out/in3"
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$ev/hostile_producer" map "$ev/dotdot.so" "$ev/link.so" "$ev/big.so" <"$out/in1" >"$out/p1.out" 2>&1 &
p1=$!
pids+=("$p1")
exec 7>"$out/in1"
for _ in $(seq 300); do grep -q ready "$out/p1.out" && break; sleep 0.2; done
step "crafted libraries: $(cat "$out/p1.out")"
known $p1 || tap_diag "pid $p1 not known to the collector"
step "producer 1 known"
# The floods (the device refuses what is beyond the uid's ring share).
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$ev/hostile_producer" claim 5000 "$out/secret/lib.so" <"$out/in2" >"$out/p2.out" 2>&1 &
p2=$!
pids+=("$p2")
exec 8>"$out/in2"
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$ev/hostile_producer" claim 5000 /etc/shadow <"$out/in3" >"$out/p3.out" 2>&1 &
p3=$!
pids+=("$p3")
exec 9>"$out/in3"
for f in p2 p3; do
	for _ in $(seq 300); do grep -q ready "$out/$f.out" && break; sleep 0.2; done
	step "claims $f: $(cat "$out/$f.out")"
done
# A normal program of another uid, profiled meanwhile.
LD_PRELOAD=$top/build/user/shim/libkpprof.so "$W/seeds_heap" 100 >/dev/null &
wl=$!
wait $wl
step "workload done"
for p in $p2 $p3 $wl; do known "$p" || tap_diag "pid $p not known to the collector"; done
step "all known; scraping"
# --- a scrape symbolizes everything, bounded in time ---
t0=$(date +%s.%N)
# 60 s: the finding was minutes of reading a 200 GB file under the
# session lock; a scrape of these few objects takes seconds even in TCG.
code=$(timeout 90 curl -s -m 60 -o "$out/heap.pb.gz" -w '%{http_code}' "${url}heap")
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
curl -s -m 60 -o "$out/heap.txt" "${url}heap?debug=1"
tap_diag "legacy text, the crafted libraries' frames: $(grep -E 'evil' "$out/heap.txt" | head -3)"
if [ "$code" = 200 ] && awk -v s="$secs" 'BEGIN { exit !(s < 60) }'; then
	tap_ok "scrape with the hostile objects answered in $secs s"
else
	tap_fail "scrape: HTTP '$code' after $secs s"
fi
rchar=$(awk '/^rchar/ { print $2 }' "/proc/$srv/io")
[ "${rchar:-0}" -lt $((1 << 30)) ] && tap_ok "the 200 GB debuglink was not read (collector rchar $rchar bytes)" ||
	tap_fail "collector read $rchar bytes"

# --- what strace saw ---
opened() { grep -E "$1" "$out/strace.log" | grep -v 'O_PATH' | grep -vE '= -1 ' || true; }
bad=$(opened '/etc/shadow|evil/shadow"|\.\./etc/shadow')
[ -z "$bad" ] && tap_ok "/etc/shadow never opened (debuglinks ../, a symlinked basename, claims)" ||
	{ tap_diag "$bad"; tap_fail "/etc/shadow opened"; }
bad=$(opened 'secret/lib\.so')
[ -z "$bad" ] && tap_ok "the root-only library claimed by nobody never opened" ||
	{ tap_diag "$(head -5 <<<"$bad")"; tap_fail "secret/lib.so opened"; }
tap_diag "opens traced: $(wc -l <"$out/strace.log"); of the secret library, all refused: $(grep -c 'secret/lib.so' "$out/strace.log")"

# --- bounds: descriptors and memory (KPP_SYM_MAX_PENDING_FDS = 256) ---
fds=$(ls "/proc/$srv/fd" | wc -l)
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$srv/status")
cpu1=$(cpu)
tap_diag "collector: $fds fds, VmRSS $rss kB, CPU $(( (cpu1 - cpu0) )) ticks during the run"
[ "$fds" -le 300 ] && tap_ok "descriptors bounded: $fds <= 300" || tap_fail "descriptors: $fds"
[ "$rss" -le $((512 * 1024)) ] && tap_ok "RSS bounded: $rss kB <= 512 MiB" || tap_fail "RSS: $rss kB"

# --- refusals counted in the profile comment ---
c=$(zcat "$out/heap.pb.gz" | tr -c '[:print:]' '\n' | grep -m1 'symbolizer refused' || true)
tap_diag "comment: $c"
claims=$(sed -nE 's/.*path claims ([0-9]+).*/\1/p' <<<"$c")
dl=$(sed -nE 's/.*debuglinks ([0-9]+) \(too big ([0-9]+)\).*/\1 \2/p' <<<"$c")
if [ "${claims:-0}" -gt 0 ] && [ "${dl%% *}" -gt 0 ] 2>/dev/null && [ "${dl##* }" -gt 0 ] 2>/dev/null; then
	tap_ok "refusals counted: path claims $claims, debuglinks ${dl%% *}, too big ${dl##* }"
else
	tap_fail "refusals not counted: '$c'"
fi

# --- the normal program is unharmed (it has exited: its allocations) ---
t=$(go tool pprof -symbolize=none -sample_index=alloc_space -top "${url}heap?pid=$wl" 2>&1)
grep -q func1 <<<"$t" && grep -q func2 <<<"$t" && tap_ok "root's workload profiled: func1, func2" ||
	{ tap_diag "$t"; tap_fail "root's workload profile"; }
tap_done
