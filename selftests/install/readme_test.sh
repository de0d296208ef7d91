#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every command of README.md's "On a real machine" runs in a test: each
# line of its sh blocks (without "sudo ") must appear, as written, in the
# test that runs it (deb_test.sh builds with `make deb`; deb_vm_test.sh runs
# the rest in the VM, in a throw-away root).  A command no test can run
# here is reported as a skip with the reason, never as a pass.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
cmds=$(awk '/^## On a real machine/ { s = 1; next } /^## / { s = 0 }
	s && /^```sh/ { b = 1; next } s && /^```/ { b = 0; next } s && b && NF { print }' README.md)
[ "$(wc -l <<<"$cmds")" -ge 10 ] && tap_ok "README.md 'On a real machine' has $(wc -l <<<"$cmds") commands" ||
	{ tap_fail "no commands found in README.md 'On a real machine'"; tap_done; }
while IFS= read -r c; do
	c=${c#sudo }
	case $c in
	"make deb")
		grep -qF 'make -s deb' selftests/install/deb_test.sh && tap_ok "README: $c (deb_test.sh)" ||
			tap_fail "README: $c is run by no test" ;;
	mokutil*)
		grep -qF "tap_skip \"$c\"" selftests/install/deb_vm_test.sh &&
			tap_skip "README: $c" "needs UEFI variables, which the test VM has not" ||
			tap_fail "README: $c is not even listed as skipped" ;;
	*)
		grep -qF -- "$c" selftests/install/deb_vm_test.sh && tap_ok "README: $c (deb_vm_test.sh)" ||
			tap_fail "README: $c is run by no test" ;;
	esac
done <<<"$cmds"
tap_done
