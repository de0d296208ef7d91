#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The DWARF unwinder's rule cache (unwind_cache.c) after an unload, on the
# host in test mode at rate 1: two libraries with the same code and
# .eh_frame layout but another rule at the same pc are loaded in turn at
# one address (reload.c; reload_plug.S: another frame size; reload_rbp.S:
# CFA on rbp, or on rsp with rbp non-canonical).
# libkpprof-crosscheck.so compares every cached stack with libgcc's: none
# may differ (a rule kept from the unloaded library took 1 frame of 6).
# The unload is the wrapped dlclose, then libc's own dlclose found by a
# dlsym in libc's handle, which the shim never sees (as glibc's internal
# unloads of iconv modules): a kept rule took a wrong stack, or read at a
# non-canonical address or above the stack's top (SIGSEGV) in the
# production build, and the second library's frames were named as the
# first's (one MMAP record for both, no MUNMAP).  Last, glibc's own unloads
# of iconv modules (iconv_reload.c): no MMAP over a live mapping.
# usage: selftests/shim/reload_host_test.sh [CROSSCHECK-SHIM.so [SHIM.so]]
set -u
shim_defaults= . "$(dirname "$0")/lib.sh"
lib=$(realpath "${1:-$top/build/user/shim/libkpprof-crosscheck.so}")
prod=$(realpath "${2:-$top/build/user/shim/libkpprof.so}")

tap_plan 8
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

# reload_run SHIM ARGS...: $d/reload under SHIM; output in $out, status in $rc.
reload_run() {
	local pre=$1
	shift
	out=$(KPPROF_DEBUG=1 KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
		KPPROF_TEST_SINK=/dev/null LD_PRELOAD=$pre timeout -s KILL 60 "$d/reload" "$d" "$@" 2>&1)
	rc=$?
}

# check_cross WHAT ARGS...: two results, set-up and no differing stack.
check_cross() {
	local what=$1 addrs cached bad
	shift
	reload_run "$lib" "$@"
	addrs=$(grep '^libreload' <<<"$out" | awk '{ print $2 }' | sort -u | wc -l)
	cached=$(sed -n 's/.*stacks: [0-9]* by libgcc, \([0-9]*\) cached.*/\1/p' <<<"$out")
	if [ $rc = 0 ] && [ "$addrs" = 1 ] && [ "${cached:-0}" -gt 0 ]; then
		tap_ok "$what: both libraries loaded at one address, $cached stacks cached and checked"
	else
		tap_fail "$what: set-up" "rc $rc, $addrs addresses, ${cached:-?} cached: $(grep -v differs <<<"$out")"
	fi
	bad=$(grep -c 'cached stack differs' <<<"$out")
	[ "$bad" = 0 ] && tap_ok "$what: no cached stack differs from libgcc's after a reload at the same address" ||
		tap_fail "$what: $bad cached stacks differ from libgcc's" "$(grep -m3 differs <<<"$out")"
}

check_cross "dlclose"
check_cross "libc's dlclose" libreload_a.so libreload_b.so libc

# The production build: a kept rule must not crash the program.
for order in "libreload_fp.so libreload_nofp.so" "libreload_b.so libreload_a.so"; do
	# shellcheck disable=SC2086
	reload_run "$prod" $order libc
	loads=$(grep -c '^libreload' <<<"$out")
	[ $rc = 0 ] && [ "$loads" = 6 ] &&
		tap_ok "libc's dlclose, $order: no crash (6 loads at one address)" ||
		tap_fail "libc's dlclose, $order: rc $rc after $loads of 6 loads" "$(grep -v '^kpprof' <<<"$out")"
done

# The mapping records (maps.c): each library's own MMAP, the old one's MUNMAP
# (once the libraries shared one record: the second was named as the first).
out=$(KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_TEST_SINK=$tmp/sink \
	LD_PRELOAD=$prod timeout -s KILL 60 "$d/reload" "$d" libreload_a.so libreload_b.so libc 2>&1)
rc=$?
"$d/shim_reader" --decode "$tmp/sink" >"$tmp/dump" 2>&1
na=$(grep -c '^MMAP .*/libreload_a.so$' "$tmp/dump")
nb=$(grep -c '^MMAP .*/libreload_b.so$' "$tmp/dump")
nu=$(grep -c '^MUNMAP' "$tmp/dump")
[ $rc = 0 ] && [ "$na" = 3 ] && [ "$nb" = 3 ] && [ "$nu" = 5 ] &&
	tap_ok "libc's dlclose: each of the 6 loads has its MMAP record, 5 MUNMAP" ||
	tap_fail "libc's dlclose: MMAP records" "rc $rc: libreload_a.so $na, libreload_b.so $nb (want 3 and 3), MUNMAP $nu (want 5)"
# The same with glibc's own unloads of iconv modules, which the wrapper never
# sees: every MMAP at a start still mapped in the records follows a MUNMAP
# there, and each of UTF-32.so and UNICODE.so, loaded 4 times, is sent again.
rm -f "$tmp/sink"
KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_TEST_SINK=$tmp/sink \
	LD_PRELOAD=$prod timeout -s KILL 60 "$d/iconv_reload" >/dev/null 2>&1
rc=$?
"$d/shim_reader" --decode "$tmp/sink" >"$tmp/dump" 2>&1
if [ $rc = 2 ]; then
	tap_skip "iconv modules" "no gconv modules for UTF-32 or UNICODE"
else
	over=$(awk '$1 == "MMAP" { if ($5 in live) n++; live[$5] = 1 }
		    $1 == "MUNMAP" { delete live[$5] } END { print n + 0 }' "$tmp/dump")
	nu=$(grep -c '^MMAP .*/UTF-32.so$' "$tmp/dump")
	nn=$(grep -c '^MMAP .*/UNICODE.so$' "$tmp/dump")
	[ $rc = 0 ] && [ "$over" = 0 ] && [ "$nu" -ge 2 ] && [ "$nn" -ge 2 ] &&
		tap_ok "iconv modules unloaded by glibc: $nu MMAP of UTF-32.so, $nn of UNICODE.so, none over a live one" ||
		tap_fail "iconv modules unloaded by glibc" \
			"rc $rc: $over MMAP over a live mapping, UTF-32.so $nu, UNICODE.so $nn (want 0, >= 2, >= 2): $(grep -E '^MMAP|^MUNMAP' "$tmp/dump" | grep -E 'UTF-32|UNICODE|^MUNMAP' | head -6)"
fi
tap_done
