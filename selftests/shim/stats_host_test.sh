#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shim's sampling decisions, tested against their distributions at
# rates above 1 (issue 15; tests review: a fixed stride for the heap's
# Poisson countdown, a block profile without its d/rate draw, or a mutex
# profile recording every hand-off at fraction 10 passed every host test).
# Test mode: config from a file, records read back from KPPROF_TEST_SINK.
# Every band is 5 standard deviations of the statistic under the rule
# (a correct shim fails a case about once in 1.7 million runs):
#  - heap, N allocations of a fixed size s at rate R: the sampled count is
#    Binomial(N, p), p = 1 - exp(-s/R);
#  - heap, the gaps (in allocations) between consecutive samples of
#    64-byte blocks at 4 KiB are Geometric(p): their variance over
#    (1-p)/p^2 is 1 +- sqrt((8 + p^2/(1-p))/k) for k gaps.  A stride gives
#    gaps that hardly vary (ratio near 0) with a count inside its band;
#  - block profile at rate 1 ms, waits of 20..300 us: each wait d is
#    recorded with probability d/rate; the count is a sum of Bernoullis
#    (mean and variance from the waits the workload measured itself);
#  - mutex profile at fraction 10: every hand-off to a sleeping waiter is
#    recorded with probability 1/10, Binomial(R, 0.1); at fraction 1 all R.
# usage: selftests/shim/stats_host_test.sh [SHIM.so...]
set -u
shim_defaults="libkpprof.so" . "$(dirname "$0")/lib.sh"

# run LIB PROG ARGS...: PROG under the shim; records in $tmp/dump,
# stdout $tmp/out, stderr $tmp/err, status $tmp/rc.
run() {
	shim_run 120 "$@"
}

# verdict NAME LINE: LINE is "ok|bad TEXT" from an awk judge.
verdict() {
	local v=${2%% *} text=${2#* }
	if [ "$(cat "$tmp/rc")" = 0 ] && [ "$v" = ok ]; then
		tap_ok "$1: $text"
	else
		tap_fail "$1: $text" "exit $(cat "$tmp/rc")"
		tap_diag "$(head -c 300 "$tmp/err")"
	fi
}

tap_plan
for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	R=4096
	shim_test_config $R 0 0 >"$tmp/cfg"
	for sn in 1024:20000 12288:20000 64:200000; do
		s=${sn%:*} n=${sn#*:}
		run "$lib" "$d/heap_stats" "$s" "$n"
		# Sampled count, and (for s << R) the dispersion of the gaps.
		line=$(awk -v s="$s" -v R=$R -v N="$n" '
			NR == FNR { idx[$2] = $1; next }
			$1 == "ALLOC" && $6 == s && ($5 in idx) { k++; at[k] = idx[$5] + 0 }
			END {
				p = 1 - exp(-s / R); m = N * p; sd = sqrt(N * p * (1 - p))
				z = (k - m) / sd
				ok = (z >= -5 && z <= 5)
				msg = sprintf("count %d, expected %.0f +- %.1f (z %.2f)", k, m, sd, z)
				if (s * 16 < R && k > 100) {
					# gaps between consecutive sampled indices
					# one thread: records come in allocation order
					for (i = 2; i <= k; i++) { g = at[i] - at[i - 1]; if (g <= 0) ok = 0; sg += g; sgg += g * g }
					kg = k - 1; mean = sg / kg; v = (sgg - kg * mean * mean) / (kg - 1)
					ratio = v / ((1 - p) / (p * p))
					sdr = sqrt((8 + p * p / (1 - p)) / kg)
					zr = (ratio - 1) / sdr
					if (zr < -5 || zr > 5) ok = 0
					msg = msg sprintf("; gap variance / geometric %.3f +- %.3f (z %.2f)", ratio, sdr, zr)
				}
				print (ok ? "ok " : "bad ") msg
			}' "$tmp/out" "$tmp/dump")
		verdict "$b: heap rate $R, $n x $s B" "$line"
	done

	# Block profile: waits shorter than the rate, recorded with p = d/rate.
	shim_test_config 0 1000000 0 >"$tmp/cfg"
	run "$lib" "$d/lock_workload" handoff 1000
	a=$(sed -n 's/^ADDR m //p' "$tmp/err")
	line=$(awk -v a="$a" -v rate=1000000 '
		NR == FNR { if ($1 == "WAIT") { p = $2 / rate; if (p > 1) p = 1; m += p; v += p * (1 - p); w++ } next }
		$1 == "BLOCK" && $5 == a { k++ }
		END {
			sd = sqrt(v); z = sd > 0 ? (k - m) / sd : 99
			printf "%s %d of %d waits recorded, expected %.1f +- %.1f (z %.2f)\n",
				(w == 1000 && z >= -5 && z <= 5) ? "ok" : "bad", k, w, m, sd, z
		}' "$tmp/out" "$tmp/dump")
	verdict "$b: block rate 1 ms, waits of 20..300 us" "$line"

	# Mutex profile: 1 hand-off in 10 recorded; at fraction 1 every one.
	for f in 10 1; do
		n=$([ $f = 10 ] && echo 2000 || echo 300)
		shim_test_config 0 0 $f >"$tmp/cfg"
		run "$lib" "$d/lock_workload" handoff $n
		a=$(sed -n 's/^ADDR m //p' "$tmp/err")
		line=$(awk -v a="$a" -v f=$f -v R=$n '
			$1 == "MUTEX" && $5 == a { k++; if ($7 != f) bad++ }
			END {
				p = 1 / f; m = R * p; sd = sqrt(R * p * (1 - p))
				if (sd == 0) ok = (k == R); else { z = (k - m) / sd; ok = (z >= -5 && z <= 5) }
				printf "%s %d of %d hand-offs recorded, expected %.0f +- %.1f, rate field wrong in %d\n",
					(ok && !bad) ? "ok" : "bad", k, R, m, sd, bad
			}' "$tmp/dump")
		verdict "$b: mutex fraction $f" "$line"
	done
done
tap_done
