#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Do the kernels give the same profile?  Reads the summaries that
# xkernel_test.sh left in build/xkernel/ (one per kernel booted by this
# scripts/check run, which empties the directory first) and, for every pair
# of kernels, checks each estimate (alloc/inuse objects and bytes of each of
# three_sizes' functions) against the other kernel's: two independent
# samplings of the same workload differ by sigma_a^2 + sigma_b^2 in
# variance, so a difference beyond 5 times its standard deviation means the
# kernels do not give the same profile.  Host, after the VM runs
# (selftests/collector/after-vm.list).  Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
dir=${KPPROF_XKERNEL_DIR:-$top/build/xkernel}

tap_plan
files=()
for f in "$dir"/*.tsv; do
	[ -e "$f" ] && files+=("$f")
done
if [ ${#files[@]} -lt 2 ]; then
	tap_skip "profiles of several kernels" "${#files[@]} kernel(s) left a summary in $dir; the comparison needs two"
	tap_done
fi
tap_diag "kernels: $(for f in "${files[@]}"; do basename "$f" .tsv; done | tr '\n' ' ')"
for ((i = 0; i < ${#files[@]}; i++)); do
	for ((j = i + 1; j < ${#files[@]}; j++)); do
		a=${files[i]} b=${files[j]}
		na=$(basename "$a" .tsv) nb=$(basename "$b" .tsv)
		if ! cmp -s <(cut -d' ' -f1-3 "$a") <(cut -d' ' -f1-3 "$b"); then
			tap_fail "$na vs $nb" "the summaries are not of the same workload"
			continue
		fi
		# One pass: a line per estimate beyond 5 sigma, then the largest
		# difference ("worst ...").
		verdict=$(paste -d' ' "$a" "$b" | awk '{
			d = $4 - $9; s = sqrt($5 * $5 + $10 * $10)
			z = s > 0 ? d / s : (d == 0 ? 0 : 99)
			if (z > 5 || z < -5)
				printf "%s %s: %d vs %d, %.1f sigma\n", $1, $2, $4, $9, z
			if (z < 0) z = -z
			if (z > w) { w = z; at = $1 " " $2 }
		} END { printf "worst %.2f sigma (%s)\n", w, at }')
		bad=$(grep -v '^worst ' <<<"$verdict")
		worst=$(sed -n 's/^worst //p' <<<"$verdict")
		if [ -z "$bad" ]; then
			tap_ok "$na vs $nb: $(wc -l <"$a") estimates agree, largest difference $worst"
		else
			tap_diag "$bad"
			tap_fail "$na vs $nb: estimates differ beyond sampling noise"
		fi
	done
done
tap_done
