#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Shim benchmarks: each figure is the best of 5 runs (micro) or the median
# of 5 interleaved runs (whole programs), next to its baseline measured in
# the same run.  With /dev/kpprof present (the VM), shimmed runs go through
# shim_reader, which sets the config and drains the ring as a collector
# would.  Without it (the host, native speed) the shim reads its config
# from a file (KPPROF_TEST_CONFIG) and writes its records to /dev/null:
# everything but the module's work on each write(2) is measured.
#
#   unsampled malloc+free pair, 1 and 2 threads   ns, shim vs none
#   uncontended lock+unlock pair                  ns, shim (profiles off/on) vs none
#   sampled allocation at 16 and 64 frames        us, fp vs libunwind
#   two-thread allocation-heavy workload, sort    wall/CPU at 512 KiB and at rate 1
#   gperftools HEAPPROFILE and heaptrack          each against its own baseline
# usage: selftests/shim/bench.sh [--quick]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
d=$top/selftests/shim
lib=$top/user/shim/libkpprof.so
w=$d/shim_workload
tmp=$(mktemp -d /tmp/shim-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
module=0
[ -c /dev/kpprof ] && module=1
N=${KPPROF_BENCH_ITERS:-10000000}
HEAVY=${KPPROF_BENCH_HEAVY:-400000}
if [ "${1:-}" = --quick ]; then
	N=300000 HEAVY=50000
fi

# best5 KEY CMD...: run CMD five times, print the smallest value of KEY
# (micro-benchmarks: the machine is shared, noise only ever adds time).
best5() {
	local key=$1
	shift
	for i in 1 2 3 4 5; do
		"$@" 2>/dev/null | awk -v k="$key" '$1 == k { print $2 }'
	done | sort -g | head -n 1
}

# median3 KEY CMD...: run CMD three times, print the median of KEY's value.
median3() {
	local key=$1 v
	shift
	for i in 1 2 3; do
		"$@" 2>/dev/null | awk -v k="$key" '$1 == k { print $2 }'
	done | sort -g | sed -n 2p
}

# shimmed RATE [ENV...] -- CMD...: CMD with the shim at heap rate RATE.
shimmed() {
	local rate=$1 blk=${BLK:-0} mtx=${MTX:-0}
	shift
	if [ $module = 1 ]; then
		"$d/shim_reader" --preload "$lib" --mem-rate "$rate" --block-rate "$blk" \
			--mutex-fraction "$mtx" --dump /dev/null -- "$@"
	else
		mkcfg "$rate" "$blk" "$mtx" >"$tmp/cfg"
		KPPROF_TEST_CONFIG=$tmp/cfg LD_PRELOAD=$lib "$@"
	fi
}

# mkcfg MEM BLOCK MUTEX: a struct kpprof_config_page (seq 2, ABI 1, all
# profiles flagged on, depth 64), padded to a page.
mkcfg() {
	/usr/bin/python3 -c 'import struct, sys
m, b, x = (int(a) for a in sys.argv[1:4])
page = struct.pack("<IIQQQIIII16x", 2, 2, 0, m, b, x, 64, 0, 7)
sys.stdout.buffer.write(page.ljust(4096, b"\0"))' "$1" "$2" "$3"
}

# plain CMD...: the baseline, under shim_reader too (without the shim) so
# both sides pay the same for the reader's polling.
plain() {
	if [ $module = 1 ]; then
		"$d/shim_reader" --dump /dev/null -- "$@"
	else
		"$@"
	fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
diff_() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", a - b }'; }

echo "# shim benchmarks ($([ $module = 1 ] && echo "module loaded, records through the ring" || echo "no module: config from a file, records to /dev/null"), $(nproc) CPUs)"

for thr in 1 2; do
	base=$(best5 malloc_free_pair_${thr}thr plain "$w" bench-malloc $thr $N)
	shim=$(best5 malloc_free_pair_${thr}thr shimmed 524288 "$w" bench-malloc $thr $N)
	echo "malloc+free pair, $thr thread(s): none $base ns, shim (rate 512 KiB) $shim ns, added $(diff_ "$shim" "$base") ns"
done

base=$(best5 lock_unlock_pair plain "$w" bench-lock $N)
shim=$(best5 lock_unlock_pair shimmed 524288 "$w" bench-lock $N)
echo "lock+unlock pair: none $base ns, shim (contention profiles off) $shim ns, added $(diff_ "$shim" "$base") ns"
shim=$(BLK=10000 MTX=10 best5 lock_unlock_pair shimmed 524288 "$w" bench-lock $N)
echo "lock+unlock pair: shim (block 10 us, mutex 1/10 on) $shim ns, added $(diff_ "$shim" "$base") ns"

S=$((N / 100))
for depth in 16 64; do
	base=$(median3 alloc_at_depth_$depth plain "$w" bench-sampled $depth $S)
	fp=$(KPPROF_UNWIND=fp median3 alloc_at_depth_$depth shimmed 1 "$w" bench-sampled $depth $S)
	lu=$(KPPROF_UNWIND=libunwind median3 alloc_at_depth_$depth shimmed 1 "$w" bench-sampled $depth $S)
	echo "sampled allocation, $depth frames: none $base us, fp $fp us (+$(diff_ "$fp" "$base")), libunwind $lu us (+$(diff_ "$lu" "$base"))"
done

# Whole programs: wall and CPU seconds.  The VM's vCPUs share the host with
# whatever else runs there, so baseline and shimmed runs are interleaved
# (A B C A B C ...) and each figure is the median of 5.
# interleave KEY CMD_A -- CMD_B -- CMD_C: print the three medians.
interleave() {
	local key=$1 i which
	shift
	local -a a=() b=() c=() cur
	which=a
	for x in "$@"; do
		if [ "$x" = -- ]; then
			[ $which = a ] && which=b || which=c
			continue
		fi
		eval "$which+=(\"\$x\")"
	done
	for i in 1 2 3 4 5; do
		"${a[@]}" 2>/dev/null | awk -v k="$key" '$1 == k { print "a", $2 }'
		"${b[@]}" 2>/dev/null | awk -v k="$key" '$1 == k { print "b", $2 }'
		"${c[@]}" 2>/dev/null | awk -v k="$key" '$1 == k { print "c", $2 }'
	done >"$tmp/il"
	for which in a b c; do
		awk -v w=$which '$1 == w { print $2 }' "$tmp/il" | sort -g | sed -n 3p
	done | tr '\n' ' '
}

for thr in 1 2; do
	for key in heavy_wall heavy_cpu; do
		read -r base def one < <(interleave $key plain "$w" bench-heavy "$HEAVY" $thr -- \
			shimmed 524288 "$w" bench-heavy "$HEAVY" $thr -- shimmed 1 "$w" bench-heavy "$((HEAVY / 10))" $thr)
		# rate 1 ran a tenth of the iterations: scale it back.
		one=$(awk -v x="$one" 'BEGIN { printf "%.4f", x * 10 }')
		echo "heavy workload, $thr thread(s), $key: none $base s, shim 512 KiB $def s (x$(ratio "$def" "$base")), shim rate 1 $one s (x$(ratio "$one" "$base"), from 1/10 of the iterations)"
	done
done

# A real program: sort of 1M numbers, timed by bash.
awk 'BEGIN { x = 1; for (i = 0; i < 1000000; i++) { x = (x * 1103515245 + 12345) % 2147483648; print x } }' >"$tmp/in.txt"
sortrun() {
	TIMEFORMAT='%R %U %S'
	{ time "$@" sort -n "$tmp/in.txt" >/dev/null 2>&1; } 2>&1 | tail -n 1 |
		awk '{ printf "wall %s\ncpu %.3f\n", $1, $2 + $3 }'
}
for key in wall cpu; do
	read -r base def one < <(interleave $key sortrun plain -- sortrun shimmed 524288 -- sortrun shimmed 1)
	echo "sort -n of 1M lines, $key: none $base s, shim 512 KiB $def s (x$(ratio "$def" "$base")), shim rate 1 $one s (x$(ratio "$one" "$base"))"
done

heavy() { "$@" "$w" bench-heavy "$HEAVY"; }
# Other heap profilers on the same workload, each against its own baseline.
tc=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 2>/dev/null)
if [ -n "$tc" ]; then
	for key in heavy_wall heavy_cpu; do
		base=$(median3 $key heavy env LD_PRELOAD="$tc")
		prof=$(median3 $key heavy env LD_PRELOAD="$tc" HEAPPROFILE="$tmp/hp" HEAP_PROFILE_INUSE_INTERVAL=0)
		echo "gperftools HEAPPROFILE $key: tcmalloc alone $base s, with heap profiler $prof s (x$(ratio "$prof" "$base"))"
	done
fi
if command -v heaptrack >/dev/null; then
	for key in heavy_wall heavy_cpu; do
		base=$(median3 $key heavy env)
		prof=$(median3 $key heavy heaptrack -o "$tmp/ht")
		echo "heaptrack $key: none $base s, heaptrack $prof s (x$(ratio "$prof" "$base"))"
	done
fi
