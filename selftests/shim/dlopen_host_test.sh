#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15 review: the shim dlopen'ed by a program, active (test mode),
# closed, then the program forks: no call into the unloaded shim (its fork
# handlers).  Linked without the C start files it has no
# __cxa_finalize(__dso_handle) to unregister them at dlclose, so it must
# not be unloaded at all (-z nodelete).
# usage: selftests/shim/dlopen_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 0 0 >"$tmp/cfg"
for shim in "$@"; do
	name=$(basename "$shim")
	# shim_run: the program in test mode; the shim itself is dlopen'ed.
	shim_run 30 "" "$d/dlopen_fork" "$shim"
	[ "$(cat "$tmp/rc")" = 0 ] && grep -qx ok "$tmp/out" &&
		tap_ok "$name: dlopen, dlclose, fork: the program runs on" ||
		tap_fail "$name: dlopen, dlclose, fork: status $(cat "$tmp/rc")" "$(head -3 "$tmp/out" "$tmp/err")"
done
tap_done
