#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# compat_test: a 32-bit producer (compat32_writer) is held to its own end
# of user space, 4 GiB: its records may not carry addresses beyond it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"

tap_plan 4
"$here/../../build/selftests/kmod/compat32_writer"
rc=$?
if [ $rc -eq 126 ]; then
	# ENOEXEC: a kernel without IA32 emulation (the debug kernel's
	# minimal config) runs no 32-bit program; nothing to test here.
	for what in "32-bit producer ran" "pc below 4 GiB accepted" \
		"pc above 4 GiB refused (EINVAL)" "munmap end above 4 GiB refused (EINVAL)"; do
		tap_skip "$what" "this kernel cannot execute 32-bit programs (no IA32 emulation)"
	done
	tap_done
fi
if [ $rc -ge 64 ]; then
	tap_fail "32-bit producer ran" "exit $rc (no /dev/kpprof, or no IA32 emulation)"
	rc=7
else
	tap_ok "32-bit producer ran"
fi
bit=1
for what in "pc below 4 GiB accepted" "pc above 4 GiB refused (EINVAL)" \
	"munmap end above 4 GiB refused (EINVAL)"; do
	if [ $((rc & bit)) -eq 0 ]; then
		tap_ok "$what"
	else
		tap_fail "$what" "exit $rc"
	fi
	bit=$((bit * 2))
done
tap_done
