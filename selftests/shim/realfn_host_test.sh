#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15 review: the shim's real functions (real.c) are the next
# definitions the loader's dlsym(RTLD_NEXT) gives.  The shim asks dlsym
# today; a look-up of its own in the objects' hash tables was tried and
# got each case below wrong, so they stay as its test.
#   - a library linked at a non-zero address and loaded below it (its load
#     bias wraps, as a prelinked library's can): the shim reads its hash
#     table where it is, and the program runs;
#   - a weak malloc in a library before libc: the shim forwards to it as
#     the loader binds it, and not under LD_DYNAMIC_WEAK, where the loader
#     binds libc's global malloc instead (any value, even empty);
#   - an auditor (LD_AUDIT) that replaces what dlsym finds for libc's
#     malloc: the shim's next malloc is the replacement, as the loader's
#     audit interface promises (la_symbind, LA_SYMB_DLSYM); the same with
#     the auditor named by the program (DT_AUDIT).
# Each case is checked without the shim first: the loader's own answer.
# usage: selftests/shim/realfn_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan

run() { # PRELOAD CMD...: stdout+stderr in $tmp/out, status in $tmp/rc
	local pre=$1
	shift
	timeout -k 5 30 env LD_PRELOAD="$pre" "$@" >"$tmp/out" 2>&1
	echo $? >"$tmp/rc"
}

# "" first: the loader's own answers, no shim; then each shim.
for shim in "" "$@"; do
	name=${shim:+$(basename "$shim")}
	name=${name:-no shim}
	run "$shim" "$d/realfn_wrap"
	[ "$(cat "$tmp/rc")" = 0 ] && grep -qx 'ok 1 2' "$tmp/out" &&
		tap_ok "$name: a library whose load bias wraps: the program runs" ||
		tap_fail "$name: a library whose load bias wraps: status $(cat "$tmp/rc")" "$(head -3 "$tmp/out")"
	for e in "" LD_DYNAMIC_WEAK=1 LD_DYNAMIC_WEAK=; do
		run "$shim" env $e "$d/realfn_weak"
		n=$(grep -c 'the weak malloc' "$tmp/out")
		if [ -z "$e" ]; then want=1; else want=0; fi
		[ "$(cat "$tmp/rc")" = 0 ] && [ "$n" = "$want" ] &&
			tap_ok "$name${e:+, $e}: the weak malloc called as the loader binds it ($want)" ||
			tap_fail "$name${e:+, $e}: the weak malloc called $n times (loader: $want), status $(cat "$tmp/rc")" "$(head -3 "$tmp/out")"
	done
	# The auditor's replacement is what dlsym answers: only the shim asks.
	[ -n "$shim" ] || continue
	run "$shim" env LD_AUDIT="$d/librealfn_audit.so" "$d/realfn_plain"
	n=$(grep -c 'the audited malloc' "$tmp/out")
	[ "$(cat "$tmp/rc")" = 0 ] && [ "$n" = 1 ] &&
		tap_ok "$name, LD_AUDIT: its next malloc is the one the auditor gave dlsym" ||
		tap_fail "$name, LD_AUDIT: the auditor's malloc called $n times (want 1), status $(cat "$tmp/rc")" "$(head -3 "$tmp/out")"
	run "$shim" "$d/realfn_dtaudit"
	n=$(grep -c 'the audited malloc' "$tmp/out")
	[ "$(cat "$tmp/rc")" = 0 ] && [ "$n" = 1 ] &&
		tap_ok "$name, DT_AUDIT: its next malloc is the one the auditor gave dlsym" ||
		tap_fail "$name, DT_AUDIT: the auditor's malloc called $n times (want 1), status $(cat "$tmp/rc")" "$(head -3 "$tmp/out")"
done
tap_done
