#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xkernel_compare.sh can fail: fed summaries that agree it passes, fed one
# whose estimate is 6 sigma off (or of another workload) it fails, and with
# a single kernel it skips rather than passing.  Host.  Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
cmpx=$top/selftests/collector/xkernel_compare.sh
out=$(mktemp -d /tmp/kpprof-xkcmp.XXXXXX)
trap 'rm -rf "$out"' EXIT

tap_plan 4
# verdict DIR: the exit status and Totals line of the comparison of DIR
verdict() {
	KPPROF_XKERNEL_DIR=$1 "$cmpx" >"$out/log" 2>&1
	echo "$? $(grep '^# Totals' "$out/log")"
}
mkdir -p "$out/same" "$out/off" "$out/other" "$out/one"
printf '%s\n' "f_a alloc_objects 1000 1010.0 20.0" "f_a alloc_space 64000 64640.0 1280.0" >"$out/same/k1.tsv"
printf '%s\n' "f_a alloc_objects 1000 990.0 20.0" "f_a alloc_space 64000 63360.0 1280.0" >"$out/same/k2.tsv"
cp "$out/same/k1.tsv" "$out/off/k1.tsv"
# 6 sigma of the difference: 6 * sqrt(20^2 + 20^2) = 170
printf '%s\n' "f_a alloc_objects 1000 1180.0 20.0" "f_a alloc_space 64000 64640.0 1280.0" >"$out/off/k2.tsv"
cp "$out/same/k1.tsv" "$out/other/k1.tsv"
printf '%s\n' "f_b alloc_objects 1000 1010.0 20.0" "f_b alloc_space 64000 64640.0 1280.0" >"$out/other/k2.tsv"
cp "$out/same/k1.tsv" "$out/one/k1.tsv"

v=$(verdict "$out/same")
[[ $v == "0 "*"pass:1 fail:0"* ]] && tap_ok "agreeing summaries pass ($v)" || tap_fail "agreeing summaries: $v"
v=$(verdict "$out/off")
[[ $v == "1 "*"fail:1"* ]] && tap_ok "an estimate 6 sigma off fails ($v)" || tap_fail "6 sigma off: $v"
v=$(verdict "$out/other")
[[ $v == "1 "*"fail:1"* ]] && tap_ok "another workload's summary fails ($v)" || tap_fail "another workload: $v"
v=$(verdict "$out/one")
[[ $v == "4 "*"skip:1"* ]] && tap_ok "one kernel skips ($v)" || tap_fail "one kernel: $v"
tap_done
