#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof collect in the VM: system-wide, while two unrelated programs run
# with the shim; merged profiles hold both (pid/comm labels), per-process
# directories hold one each, and a second collector is refused with a
# clear message.  Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
S=$top/build/user/shim/libkpprof.so
out=$(mktemp -d /tmp/kpprof-collect.XXXXXX)
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
trap 'rm -rf "$out"' EXIT
tap_plan

# attached PID: the collector PID holds the ring and catches SIGINT (a
# background job starts with SIGINT ignored: one sent earlier is lost and
# the collector never stops).  60 s: ASan under TCG on a loaded host.
attached() {
	wait_for 60 sh -c "$K stat | grep -q '^consumer *attached'" &&
		wait_sigcaught "$1" 2 60
}

run_collect() {	# DIR ARGS...
	local dir=$1
	shift
	# Until interrupted: SIGINT once both programs are done.
	$K collect -o "$dir" --mem-rate 65536 "$@" 2>"$out/collect.log" &
	cpid=$!
	attached $cpid || tap_diag "the collector did not attach in 60 s"
	LD_PRELOAD=$S "$W/seeds_heap" 20
	LD_PRELOAD=$S "$W/leak_churn" 2000
	kill -INT $cpid
	wait $cpid
	collect_rc=$?
}

# A second collector while one is attached: refused, one clear line.
# The first runs until interrupted, so it is still attached however slowly
# the second starts.
$K collect -o "$out/first" 2>/dev/null &
first=$!
attached $first || tap_diag "the first collector did not attach in 60 s"
err=$($K collect -o "$out/second" -d 1 2>&1 >/dev/null)
rc=$?
kill -INT $first
wait $first
if [ $rc -ne 0 ] && grep -q "already attached" <<<"$err"; then
	tap_ok "second collector refused: $err"
else
	tap_fail "second collector: exit $rc: $err"
fi

run_collect "$out/merged"
r=$(go tool pprof -symbolize=none -raw "$out/merged/heap.pb.gz" 2>&1)
if [ $collect_rc = 0 ] && grep -q 'comm:\[seeds_heap\]' <<<"$r" && grep -q 'comm:\[leak_churn\]' <<<"$r" &&
   grep -q func1 <<<"$r" && grep -q leak <<<"$r"; then
	tap_ok "merged profile holds both programs, labelled by comm and pid"
else
	tap_diag "$(cat "$out/collect.log")" "$r"
	tap_fail "merged profile"
fi

run_collect "$out/per" --per-process
n=$(ls -d "$out"/per/*-seeds_heap "$out"/per/*-leak_churn 2>/dev/null | wc -l)
# The workloads have exited: nothing of theirs is in use (Go: a process that
# is gone has no heap); their allocations are in alloc_*.
t=$(go tool pprof -symbolize=none -sample_index=alloc_space -top "$out"/per/*-seeds_heap/heap.pb.gz 2>&1)
if [ $collect_rc = 0 ] && [ "$n" = 2 ] && grep -q func2 <<<"$t" && ! grep -q churn <<<"$t"; then
	tap_ok "per-process directories, each with its own program only"
else
	tap_diag "$(ls -R "$out/per")" "$t"
	tap_fail "per-process: $n directories"
fi
# --interval: the profiles appear while collect still runs.
$K collect -o "$out/periodic" --interval 1 --mem-rate 65536 2>"$out/collect.log" &
cpid=$!
attached $cpid || tap_diag "the collector did not attach in 60 s"
LD_PRELOAD=$S "$W/seeds_heap" 20
# A profile written before the workload ran is valid but empty: wait (180 s
# at most: each try runs go tool pprof, seconds under TCG on a loaded
# machine) for one written after it, which must show the workload.  Its
# allocations, not what it holds: it may have exited by then, and an exited
# process holds nothing.
shows_func1() {
	[ -s "$out/periodic/heap.pb.gz" ] &&
		go tool pprof -symbolize=none -sample_index=alloc_space -top "$out/periodic/heap.pb.gz" 2>&1 |
		grep -q func1
}
if wait_for 180 shows_func1 && kill -0 $cpid 2>/dev/null; then
	tap_ok "--interval writes profiles while running"
else
	tap_diag "$(cat "$out/collect.log")"
	tap_fail "--interval"
fi
kill -INT $cpid
wait $cpid

# Every profile this test wrote, read by the independent reader.
bad=0 n=0
while IFS= read -r p; do
	n=$((n + 1))
	go tool pprof -symbolize=none -raw "$p" >/dev/null 2>&1 || { bad=1; tap_diag "unreadable: $p"; }
done < <(find "$out" -name '*.pb.gz')
[ $bad = 0 ] && [ $n -gt 0 ] && tap_ok "all $n profiles written are read by go tool pprof -raw" ||
	tap_fail "profiles unreadable by go tool pprof"

tap_done
