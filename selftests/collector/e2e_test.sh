#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# End-to-end, in the VM: module + shim + collector.
#
#   workload (LD_PRELOAD=libkpprof.so) --write--> /dev/kpprof ring
#        --mmap--> kpprof record --> heap/mutex/block.pb.gz --> go tool pprof
#
# Every profile written is read by `go tool pprof -raw` (an independent
# reader that exits non-zero on a corrupt file).  Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
out=$(mktemp -d /tmp/kpprof-e2e.XXXXXX)
trap 'rm -rf "$out"' EXIT
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out

tap_plan

pp() { go tool pprof -symbolize=none "$@" 2>&1; }
# flat% of function $2 in `pprof -top` output $1
flat() { awk -v fn="$2" '$NF == fn { sub("%", "", $2); print $2; exit }' <<<"$1"; }
# within LO HI VALUE
within() { awk -v lo="$1" -v hi="$2" -v v="$3" 'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'; }
raw_ok() { pp -raw "$1" >/dev/null; }

# 1. the seeds' example, at Go's default rate
d=$out/seeds
if $K record -o "$d" --mem-rate 524288 -- "$W/seeds_heap" 200 2>"$out/log"; then
	for idx in inuse_space alloc_space; do
		t=$(pp -sample_index=$idx -top "$d/heap.pb.gz")
		f1=$(flat "$t" func1) f2=$(flat "$t" func2)
		total=$(sed -nE 's/.* of ([0-9.]+)MB total.*/\1/p' <<<"$t")
		# truth: 400 MiB = 400 "MB" in pprof's binary units; within 10%
		if within 40 60 "$f1" && within 40 60 "$f2" && within 360 440 "$total"; then
			tap_ok "seeds $idx: func1 $f1%, func2 $f2%, total ${total}MB (truth 400MB)"
		else
			tap_diag "$t"
			tap_fail "seeds $idx: func1 '$f1'% func2 '$f2'% total '$total'MB"
		fi
	done
	tap_check "seeds: heap/mutex/block read by pprof -raw" \
		sh -c "$(declare -f pp raw_ok); raw_ok $d/heap.pb.gz && raw_ok $d/mutex.pb.gz && raw_ok $d/block.pb.gz"
else
	tap_diag "$(cat "$out/log")"
	tap_fail "seeds: kpprof record failed"
fi

# 2. a leak among churn
d=$out/leak
if $K record -o "$d" --mem-rate 65536 -- "$W/leak_churn" 20000 2>"$out/log"; then
	in=$(pp -sample_index=inuse_space -top "$d/heap.pb.gz")
	al=$(pp -sample_index=alloc_space -top "$d/heap.pb.gz")
	top_in=$(awk '/flat%/ { getline; print $NF; exit }' <<<"$in")
	top_al=$(awk '/flat%/ { getline; print $NF; exit }' <<<"$al")
	if [ "$top_in" = leak ] && [ "$top_al" = churn ]; then
		tap_ok "leak among churn: inuse top $top_in, alloc top $top_al"
	else
		tap_diag "$in" "$al"
		tap_fail "leak among churn: inuse top '$top_in', alloc top '$top_al'"
	fi
	tap_check "leak: read by pprof -raw" raw_ok "$d/heap.pb.gz"
else
	tap_diag "$(cat "$out/log")"
	tap_fail "leak: kpprof record failed"
fi

# 3. contention with a known culprit: every wait >= 1 ns recorded (rate 1),
#    every hand-off (fraction 1), so delays compare with the measured truth.
d=$out/cont
if $K record -o "$d" --block-rate 1 --mutex-fraction 1 -- "$W/contention" 20 >"$out/stdout" 2>"$out/log"; then
	truth=$(sed -nE 's/^waited_ns ([0-9]+)/\1/p' "$out/stdout")
	m=$(pp -sample_index=delay -top "$d/mutex.pb.gz")
	b=$(pp -sample_index=delay -top "$d/block.pb.gz")
	top_m=$(awk '/flat%/ { getline; print $NF; exit }' <<<"$m")
	top_b=$(awk '/flat%/ { getline; print $NF; exit }' <<<"$b")
	[ "$top_m" = holder ] && tap_ok "mutex top is the holder" ||
		{ tap_diag "$m"; tap_fail "mutex top is '$top_m', expected holder"; }
	case $top_b in
	waiter|pthread_mutex_lock|__pthread_mutex_lock*) ;;
	esac
	bw=$(pp -sample_index=delay -raw "$d/block.pb.gz" | awk '/^Samples/ { s = 1; next } /^Locations/ { s = 0 } s && /:/ { sum += $2 } END { print sum + 0 }')
	if [ "$top_b" = waiter ] && [ -n "$truth" ] && within 0.8 1.2 "$(awk -v a="$bw" -v t="$truth" 'BEGIN { print a / t }')"; then
		tap_ok "block top is the waiter; delay $bw ns vs truth $truth ns"
	else
		tap_diag "$b"
		tap_fail "block top '$top_b', delay '$bw' ns vs truth '$truth' ns"
	fi
	tap_check "contention: read by pprof -raw" \
		sh -c "$(declare -f pp raw_ok); raw_ok $d/mutex.pb.gz && raw_ok $d/block.pb.gz"
else
	tap_diag "$(cat "$out/log")"
	tap_fail "contention: kpprof record failed"
fi

# 4. two processes at once, separable by pid
d=$out/two
if $K record -o "$d" --mem-rate 65536 -- "$W/two_procs" 2>"$out/log"; then
	r=$(pp -raw "$d/heap.pb.gz")
	n=$(grep -oE 'pid:\[[0-9]+\]' <<<"$r" | sort -u | wc -l)
	tp=$(pp -tagfocus=comm=two_procs -sample_index=inuse_space -top "$d/heap.pb.gz")
	if [ "$n" = 2 ] && grep -q parent_work <<<"$r" && grep -q child_work <<<"$r"; then
		tap_ok "two processes: $n pids, parent_work and child_work present"
	else
		tap_diag "$r"
		tap_fail "two processes: $n pids"
	fi
	pids=$(grep -oE 'pid:\[[0-9]+\]' <<<"$r" | sort -u | tr -dc '0-9\n')
	ok=1
	for p in $pids; do
		fns=$(pp -tagfocus="pid=$p" -sample_index=alloc_space -top "$d/heap.pb.gz" |
		      awk '/flat%/ { getline; print $NF; exit }')
		case $fns in parent_work|child_work) ;; *) ok=0 ;; esac
		tap_diag "pid $p: top $fns"
	done
	[ $ok = 1 ] && [ "$n" = 2 ] && tap_ok "two processes: each pid's top is its own function" ||
		tap_fail "two processes: not separable by pid"
	: "$tp"
else
	tap_diag "$(cat "$out/log")"
	tap_fail "two processes: kpprof record failed"
fi

# 4b. exec ends an image (finding 5): 64 MiB kept by old_image_keeps, then
# exec of seeds_heap 10 (20 MiB kept).  The process's heap holds only what
# the new image allocated, under the new comm.
d=$out/exec
if $K record -o "$d" --mem-rate 65536 -- "$W/exec_after_alloc" "$W/seeds_heap" 10 2>"$out/log"; then
	t=$(pp -sample_index=inuse_space -top "$d/heap.pb.gz")
	r=$(pp -raw "$d/heap.pb.gz")
	total=$(sed -nE 's/.* of ([0-9.]+)MB total.*/\1/p' <<<"$t")
	if ! grep -q old_image_keeps <<<"$t" && grep -q func1 <<<"$t" && within 16 24 "$total" &&
	   ! grep -q 'comm:\[exec_after_allo' <<<"$r"; then
		tap_ok "exec: the old image's heap is not in use after it (total ${total}MB, truth 20MB)"
	else
		tap_diag "$t"
		tap_fail "exec: old image still in use (total '$total'MB, truth 20MB)"
	fi
else
	tap_diag "$(cat "$out/log")"
	tap_fail "exec: kpprof record failed"
fi

# Every profile this test wrote, read by the independent reader.
bad=0 n=0
while IFS= read -r p; do
	n=$((n + 1))
	go tool pprof -symbolize=none -raw "$p" >/dev/null 2>&1 || { bad=1; tap_diag "unreadable: $p"; }
done < <(find "$out" -name '*.pb.gz')
[ $bad = 0 ] && [ $n -gt 0 ] && tap_ok "all $n profiles written are read by go tool pprof -raw" ||
	tap_fail "profiles unreadable by go tool pprof"

# 5. the CLI's errors: a second collector, exit status passing
$K record -o "$out/st" -- sh -c 'exit 7' 2>/dev/null
rc=$?
[ $rc = 7 ] && tap_ok "record exits with the command's status" || tap_fail "record exit status $rc, expected 7"

tap_done
