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

tap_plan 10

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
	"$(tally "bash -c \"echo '# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0'; kill -SEGV \\\$\\\$\"")" \
	"run-test-list: programs:1 pass:1 fail:1 skip:0 rc:1"
same "a non-zero exit with no failed case is a failure" \
	"$(tally "bash -c \"echo '# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0'; exit 1\"")" \
	"run-test-list: programs:1 pass:2 fail:1 skip:0 rc:1"
same "a hung program times out and fails" "$(tally 'sleep 60')" \
	"run-test-list: programs:1 pass:0 fail:1 skip:0 rc:1"
same "xfail counts as pass, xpass and error as fail" \
	"$(tally "echo '# Totals: pass:1 fail:0 xfail:2 xpass:1 skip:0 error:1'")" \
	"run-test-list: programs:1 pass:3 fail:2 skip:0 rc:1"
tap_done
