#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The CLI's error paths on the host (no module here): each bad input gives
# one line saying what is wrong and what to do, and a non-zero exit.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
tmp=$(mktemp -d /tmp/kpprof-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export KPPROF_DEVICE=$tmp/no-such-device

tap_plan

# expect NAME PATTERN CMD...: non-zero exit, exactly one line on stderr matching PATTERN
expect() {
	local name=$1 pat=$2 err rc
	shift 2
	err=$("$@" 2>&1 >/dev/null) && rc=0 || rc=$?
	if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -qE "$pat" <<<"$err"; then
		tap_ok "$name"
	else
		tap_diag "exit $rc: $err"
		tap_fail "$name"
	fi
}

expect "unknown verb" "not a verb" "$K" frobnicate
expect "missing module (stat)" "module is not loaded.*insmod" "$K" stat
expect "missing module (ctl)" "module is not loaded" "$K" ctl
expect "missing module (serve)" "module is not loaded" "$K" serve --listen 127.0.0.1:0
expect "missing module (collect)" "module is not loaded" "$K" collect -o "$tmp" -d 1
expect "record without command" "no command given" "$K" record
expect "bad number" "'abc' is not a number" "$K" record --mem-rate abc -- true
expect "negative number" "non-negative" "$K" ctl --block-rate -5
expect "unknown pid" "no process 999999999" "$K" collect --pid 999999999
# 2^32 + 1: taken as a pid_t it would be 1 (init), which exists
expect "pid above INT_MAX" "no process 4294967297" "$K" collect --pid 4294967297
expect "top of a missing file" "cannot read .*No such file" "$K" top "$tmp/nope.pb.gz"
echo "not a profile" >"$tmp/bad.pb.gz"
expect "top of a non-profile" "not a gzip'd pprof" "$K" top "$tmp/bad.pb.gz"
printf 'x' | gzip >"$tmp/bad2.pb.gz"
expect "top of gzip non-protobuf" "not a pprof profile" "$K" top "$tmp/bad2.pb.gz"
expect "bad listen address" "expected \[IPV4\]:PORT" "$K" serve --listen nonsense
expect "unwritable output dir" "cannot create directory" "$K" record -o /proc/nope/x -- true
tap_check "usage on --help exits 0" "$K" --help

tap_done
