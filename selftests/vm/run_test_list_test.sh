#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the counting rules scripts/check relies on: selftests/lib/tap.sh
# output and scripts/run-test-list's tally of '# Totals:' lines, crashes,
# missing Totals, exit statuses and timeouts.  No VM.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
work=$(mktemp -d /tmp/run-test-list-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
tap=". '$top/selftests/lib/tap.sh'"

# tally LIST-LINES...: runs run-test-list on a list of those lines, prints its
# closing line (exit status appended).
tally() {
	printf '%s\n' "$@" >"$work/t.list"
	local rc
	KPPROF_TEST_TIMEOUT=3 "$top/scripts/run-test-list" "$work/t.list" >"$work/out" 2>&1
	rc=$?
	echo "$(tail -n 1 "$work/out") rc:$rc"
}
# same NAME GOT WANT
same() {
	if [ "$2" = "$3" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "got '$2', want '$3'"
	fi
}

tap_plan 31

out=$(bash -c "$tap; tap_plan; tap_ok a; tap_fail b why; tap_skip c no; tap_done"; echo "rc:$?")
same "tap.sh prints kselftest lines and exits 1 on failure" "$out" \
	"TAP version 13
ok 1 a
not ok 2 b # why
ok 3 c # SKIP no
1..3
# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
rc:1"
out=$(bash -c "$tap; tap_plan 2; tap_check t true; tap_check f false; tap_done" | tail -n 1)
same "tap_check turns exit statuses into ok / not ok" "$out" \
	"# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0"
out=$(bash -c "$tap; tap_plan; tap_skip only why; tap_done"; echo "rc:$?")
same "all skipped exits 4 (KSFT_SKIP)" "${out##*$'\n'}" "rc:4"

same "passes, skips and comments are summed" \
	"$(tally '# a comment' '' "bash -c \"$tap; tap_plan; tap_ok a; tap_skip b c; tap_done\"" \
		"bash -c \"$tap; tap_plan; tap_ok a; tap_done\"")" \
	"run-test-list: programs:2 pass:2 fail:0 skip:1 rc:0"
same "failed cases are summed" \
	"$(tally "bash -c \"$tap; tap_plan; tap_ok a; tap_fail b; tap_done\"")" \
	"run-test-list: programs:1 pass:1 fail:1 skip:0 rc:1"
same "no Totals line is one failure" "$(tally 'echo hello')" \
	"run-test-list: programs:1 pass:0 fail:1 skip:0 rc:1"
same "a crash after Totals is one more failure" \
	"$(tally "bash -c \"$tap; tap_plan 1; tap_ok a; tap_done\"; kill -SEGV \$\$")" \
	"run-test-list: programs:1 pass:1 fail:1 skip:0 rc:1"
# The summary line names the failed cases (a CI page cut to its last lines
# keeps only the summaries): tap.sh's detail and the harness's assertion.
tally "bash -c \"$tap; tap_plan; tap_ok a; tap_diag 'noise'; tap_fail b 'b went wrong'; tap_done\"" >/dev/null
same "a failed program's summary names its failed case" \
	"$(grep -m1 '^# \[FAIL\]' "$work/out" | sed 's/.*s; //')" "not ok 2 b # b went wrong)"
tally "bash -c \"echo 1..1; echo '# RUN t.a ...'; echo '# t.c:9:a:Expected 1 (1) == 2 (2)'; echo '#  FAIL  t.a'; echo 'not ok 1 t.a'; echo '# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0'; exit 1\"" >/dev/null
same "... and the harness's reason before it" \
	"$(grep -m1 '^# \[FAIL\]' "$work/out" | sed 's/.*s; //')" "# t.c:9:a:Expected 1 (1) == 2 (2) | not ok 1 t.a)"
same "a non-zero exit with no failed case is a failure" \
	"$(tally "bash -c \"$tap; tap_plan 2; tap_ok a; tap_ok b; tap_done\"; exit 1")" \
	"run-test-list: programs:1 pass:2 fail:1 skip:0 rc:1"
same "a hung program times out and fails" "$(tally 'sleep 60')" \
	"run-test-list: programs:1 pass:0 fail:1 skip:0 rc:1"
same "a line's timeout=N gives that program more time (3 s default here)" \
	"$(tally "timeout=8 bash -c \"sleep 5; $tap; tap_plan; tap_ok a; tap_done\"")" \
	"run-test-list: programs:1 pass:1 fail:0 skip:0 rc:0"
grep -q "timed out after 8 s" <<<"$(tally 'timeout=8 sleep 60'; cat "$work/out")" &&
	tap_ok "... and bounds it: 'timed out after 8 s'" ||
	tap_fail "timeout=8 sleep 60: $(grep -m1 FAIL "$work/out")"
same "timeout=N never shortens the default" \
	"$(tally "timeout=1 bash -c \"sleep 2; $tap; tap_plan; tap_ok a; tap_done\"")" \
	"run-test-list: programs:1 pass:1 fail:0 skip:0 rc:0"
same "a line's cpus=N beyond the CPUs online is one skip" \
	"$(tally "cpus=100000 bash -c \"touch '$work/ran'; $tap; tap_plan; tap_ok a; tap_done\"")" \
	"run-test-list: programs:1 pass:0 fail:0 skip:1 rc:0"
if [ ! -e "$work/ran" ] && grep -q "needs 100000 CPUs, has $(nproc)" "$work/out"; then
	tap_ok "... and does not run it, saying why"
else
	tap_fail "cpus=100000: ran it, or said no reason: $(grep -m1 SKIP "$work/out")"
fi
same "cpus=N within the CPUs online runs it, before or after timeout=N" \
	"$(tally "timeout=8 cpus=1 bash -c \"sleep 4; $tap; tap_plan; tap_ok a; tap_done\"" \
		"cpus=$(nproc) timeout=8 bash -c \"$tap; tap_plan; tap_ok a; tap_done\"")" \
	"run-test-list: programs:2 pass:2 fail:0 skip:0 rc:0"
same "xfail counts as pass, error as fail" \
	"$(tally "printf '1..3\nok 1 a\nok 2 b # XFAIL why\nnot ok 3 c # error\n# Totals: pass:1 fail:0 xfail:1 xpass:0 skip:0 error:1\n'")" \
	"run-test-list: programs:1 pass:2 fail:1 skip:0 rc:1"
same "a whole-program skip (plan 1..0 with a SKIP directive) is one skip" \
	"$(tally "printf '1..0 # SKIP no device\n'; exit 4")" \
	"run-test-list: programs:1 pass:0 fail:0 skip:1 rc:0"
same "results numbered out of order fail" \
	"$(tally "printf '1..2\nok 1 a\nok 1 b\n# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0\n'")" \
	"run-test-list: programs:1 pass:2 fail:1 skip:0 rc:1"
same "two plans (another program's TAP, unindented) fail" \
	"$(tally "printf '1..1\nok 1 a\n1..1\n# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0\n'")" \
	"run-test-list: programs:1 pass:1 fail:1 skip:0 rc:1"
printf '# only a comment\n' >"$work/empty.list"
out=$(KPPROF_TEST_TIMEOUT=3 "$top/scripts/run-test-list" "$work/empty.list" 2>&1; echo "rc:$?")
same "a list with no program fails" "$(tail -n 2 <<<"$out" | tr '\n' ' ')" \
	"run-test-list: programs:0 pass:0 fail:1 skip:0 rc:1 "
printf '%s\n' "bash -c \"$tap; tap_plan 1; tap_ok a; echo '@@k1 fake'; env | grep -c KPPROF_TALLY_KEY; tap_done\"" >"$work/k.list"
out=$(KPPROF_TALLY_KEY=k1 "$top/scripts/run-test-list" "$work/k.list" 2>&1)
same "keyed lines: the summary and closing line, not the program's; no key in its environment" \
	"$(grep -c '^@@k1 ' <<<"$out") $(grep '^@@k1 run' <<<"$out") $(grep -cx 0 <<<"$out")" \
	"3 @@k1 run-test-list: programs:1 pass:1 fail:0 skip:0 1"

# bench LINES...: run-test-list --bench on one program printing LINES.
bench() {
	printf '%s\n' "$@" >"$work/b.out"
	echo "cat '$work/b.out'" >"$work/b.list"
	local rc
	KPPROF_TEST_TIMEOUT=3 "$top/scripts/run-test-list" --bench "$work/b.list" >"$work/out" 2>&1
	rc=$?
	echo "$(tail -n 1 "$work/out") rc:$rc"
}
good="run-test-list: programs:1 pass:1 fail:0 skip:0 rc:0"
bad="run-test-list: programs:1 pass:0 fail:1 skip:0 rc:1"
same "bench: figures, and a negative difference (noise), pass" \
	"$(bench '# shim benchmarks' \
		'malloc+free pair, 1 thread(s): none 6.68 ns, shim (rate 512 KiB) 6.52 ns, added -0.16 ns' \
		'sampled allocation, 16 frames: none 1.2 us, fp 1.5 us (+-0.30), libunwind 3.1 us (++1.90)' \
		'churn, x: none 1.2 s, shim 512 KiB 1.3 s (x1.083, target <= 1.10)' \
		'  /dev/kpprof                  123 ns/write' \
		'records decoded+aggregated: 100 in 0.100 s = 1.00 M records/s on one core')" "$good"
same "bench: an empty figure fails (a shimmed run that died)" \
	"$(bench 'malloc+free pair, 1 thread(s): none 6.45 ns, shim (rate 512 KiB)  ns, added -6.45 ns')" "$bad"
same "bench: an empty ratio fails" "$(bench 'churn, k: none 1.2 s, shim 512 KiB 1.3 s (x, target <= 1.10)')" "$bad"
same "bench: a zero ratio fails" "$(bench 'churn, k: none 1.2 s, shim 512 KiB 1.3 s (x0.000, target <= 1.10)')" "$bad"
same "bench: a negative time fails" "$(bench 'startup: none -12 us per process')" "$bad"
same "bench: a negative memory delta (noise) passes" "$(bench '  Slab growth                   -4 KiB')" "$good"
same "bench: nan fails" "$(bench 'write cost: -nan ns/write')" "$bad"
same "bench: no figure at all fails" "$(bench '# shim benchmarks' 'nothing measured')" "$bad"
tap_done
