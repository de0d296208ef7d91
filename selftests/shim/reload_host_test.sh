#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The DWARF unwinder's rule cache (unwind_cache.c) after dlclose, on the
# host in test mode at rate 1: two libraries with the same code and
# .eh_frame layout but another frame size at the same pc are loaded in
# turn at one address (reload.c, reload_plug.S).  libkpprof-crosscheck.so
# compares every cached stack with libgcc's: none may differ (a rule kept
# from the unloaded library took 1 frame of 6).
# usage: selftests/shim/reload_host_test.sh [CROSSCHECK-SHIM.so]
set -u
shim_defaults= . "$(dirname "$0")/lib.sh"
lib=$(realpath "${1:-$top/build/user/shim/libkpprof-crosscheck.so}")

tap_plan 2
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }
out=$(KPPROF_DEBUG=1 KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
	KPPROF_TEST_SINK=/dev/null LD_PRELOAD=$lib timeout -s KILL 60 "$d/reload" "$d" 2>&1)
rc=$?
addrs=$(grep '^libreload' <<<"$out" | awk '{ print $2 }' | sort -u | wc -l)
cached=$(sed -n 's/.*stacks: [0-9]* by libgcc, \([0-9]*\) cached.*/\1/p' <<<"$out")
if [ $rc = 0 ] && [ "$addrs" = 1 ] && [ "${cached:-0}" -gt 0 ]; then
	tap_ok "both libraries loaded at one address, $cached stacks cached and checked"
else
	tap_fail "set-up" "rc $rc, $addrs addresses, ${cached:-?} cached: $out"
fi
bad=$(grep -c 'cached stack differs' <<<"$out")
[ "$bad" = 0 ] && tap_ok "no cached stack differs from libgcc's after a reload at the same address" ||
	tap_fail "$bad cached stacks differ from libgcc's" "$(grep -m3 differs <<<"$out")"
tap_done
