#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The same workload, recorded on this kernel, for the cross-kernel
# comparison.  Runs in the VM on every kernel scripts/check boots:
#
#   1. records workloads/three_sizes (three functions, 64 B / 2 KiB / 64 KiB
#      objects, known totals) at a 16 KiB sampling rate;
#   2. checks every estimate (alloc/inuse objects and bytes per function)
#      against the truth, within 5 standard deviations of Poisson sampling
#      (xkernel/heap_summary.awk says how sigma is computed), and that the
#      ring dropped nothing;
#   3. leaves the summary in build/xkernel/$(uname -r).tsv, where
#      xkernel_compare.sh (host, after every kernel's run) checks that the
#      kernels' profiles agree with each other within sampling noise.
# Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
X=$top/selftests/collector/xkernel
rate=16384
out=$(mktemp -d /tmp/kpprof-xkernel.XXXXXX)
trap 'rm -rf "$out"' EXIT
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
dest=$top/build/xkernel
rel=$(uname -r)

tap_plan

# drops: the module's drop counters (full disabled share), lifetime
drops() { $K stat 2>/dev/null | awk '/^dropped (ring_full|disabled|share)/ { printf "%s ", $3 }'; }
d0=$(drops)
if ! $K record -o "$out/p" --mem-rate $rate -- \
	"$top/build/selftests/collector/workloads/three_sizes" >"$out/truth" 2>"$out/log"; then
	tap_diag "$(cat "$out/log")"
	tap_fail "three_sizes: kpprof record failed"
	tap_done
fi
if ! go tool pprof -symbolize=none -raw "$out/p/heap.pb.gz" >"$out/raw" 2>&1; then
	tap_diag "$(cat "$out/raw")"
	tap_fail "three_sizes: go tool pprof -raw cannot read the heap profile"
	tap_done
fi
awk -v rate=$rate -f "$X/heap_summary.awk" "$out/truth" "$out/raw" >"$out/summary"

# With a drop the estimates are biased.  The module's counters are
# lifetime ones (earlier tests in this boot flood the ring on purpose):
# what counts is what moved during this recording.
d1=$(drops)
if [ -n "$d0" ] && [ "$d0" = "$d1" ]; then
	tap_ok "three_sizes: no record dropped (module drops full/disabled/share: $d1)"
else
	tap_diag "$(grep '^Comment' "$out/raw")"
	tap_fail "three_sizes: records dropped" "module drops (full disabled share) before: '$d0', after: '$d1'"
fi

while read -r fn metric truth est sd; do
	z=$(awk -v t="$truth" -v e="$est" -v s="$sd" 'BEGIN { printf "%.2f", (e - t) / s }')
	if awk -v z="$z" 'BEGIN { exit !(z >= -5 && z <= 5) }'; then
		tap_ok "$fn $metric: $est, truth $truth, ${z} sigma"
	else
		tap_fail "$fn $metric: $est, truth $truth, ${z} sigma (sigma $sd; more than 5)"
	fi
done <"$out/summary"

mkdir -p "$dest"
cp "$out/summary" "$dest/$rel.tsv"
tap_diag "summary left in build/xkernel/$rel.tsv"
tap_done
