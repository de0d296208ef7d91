#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A short, fixed-length run of each libFuzzer harness (decoder+aggregation,
# pprof builder+encoder) under ASan+UBSan: any crash, leak or sanitizer
# report fails.  Longer runs: build/selftests/collector/fuzz/fuzz_decode -max_total_time=600
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan 2
for spec in fuzz_decode:200000 fuzz_pprof:10000; do
	f=${spec%:*} runs=${spec#*:}
	bin=$top/build/selftests/collector/fuzz/$f
	tmp=$(mktemp -d)
	if out=$(cd "$top" && "$bin" -runs=$runs -seed=1 -max_len=1024 -artifact_prefix="$tmp/" 2>&1); then
		tap_ok "$f: $(grep -o 'Done [0-9]* runs.*' <<<"$out")"
	else
		tap_diag "$(tail -30 <<<"$out")"
		tap_fail "$f"
	fi
	rm -rf "$tmp"
done
tap_done
