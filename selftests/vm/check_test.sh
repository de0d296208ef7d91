#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Can scripts/check's count be fooled?  Each case runs the real
# scripts/check and scripts/run-test-list in a scratch tree whose only
# component, selftests/zz, holds one lying or broken program, with stubs
# for what is not under test (make, scripts/kernels, scripts/vm-run runs
# its command on the host), and compares the closing
# "N passed, N failed, N skipped" line and the exit status with the truth:
# a fake summary line, a fake '# Totals:' line, no plan, a plan not kept,
# no case at all, a 'not ok' behind a passing Totals line, a crash, a
# directory that does not build beside its old binary, a kernel of the
# matrix that is not installed, a run that selects no test.  No VM.
#
# usage: selftests/vm/check_test.sh [REV]   REV: take scripts/check and
#        scripts/run-test-list from that git revision (to show that an
#        older counter is fooled), default the working tree.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
rev=${1:-}
work=$(mktemp -d /tmp/check-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# tree: a fresh scratch tree in $work/t with the counter under test.
tree() {
	local t=$work/t f
	rm -rf "$t"
	mkdir -p "$t/scripts/vm" "$t/selftests/lib" "$t/selftests/zz"
	for f in scripts/check scripts/run-test-list; do
		if [ -n "$rev" ]; then
			git -C "$top" show "$rev:$f" >"$t/$f"
		else
			cp "$top/$f" "$t/$f"
		fi
		chmod +x "$t/$f"
	done
	cp "$top/selftests/lib/tap.sh" "$t/selftests/lib/"
	printf 'all:\nmodule-debug-kernel:\n' >"$t/Makefile"
	cat >"$t/scripts/kernels" <<-'EOF'
	#!/bin/bash
	# stub: the default kernel; KERNELS_MISSING=1: 6.12 is not installed
	[ "${1:-}" = --default ] && { echo "${KERNELS_DEFAULT:-6.1.0-stub}"; exit; }
	echo 6.1.0-stub
	if [ "${KERNELS_MISSING:-0}" = 1 ]; then
		echo "kernels: the kernel matrix lacks linux-image-6.12 with its headers; install it with 'make deps'" >&2
		exit 1
	fi
	echo 6.12.0-stub
	EOF
	cat >"$t/scripts/vm-run" <<-'EOF'
	#!/bin/bash
	# stub: the command after "--", on the host; its options noted
	echo "$*" >>"$(dirname "$0")/../vm-run.args"
	# VMRUN_STUB_BOOTFAIL=N: the first N boots die before the run begins
	boots=$(dirname "$0")/../vm-run.boots
	echo x >>"$boots"
	if [ "$(wc -l <"$boots")" -le "${VMRUN_STUB_BOOTFAIL:-0}" ]; then
		echo "vm-run: FAILED (boot): the guest kernel panicked while booting, before the run began (stub)" >&2
		exit 125
	fi
	# VMRUN_STUB_NUL=1: the first boot panics (not while booting), its
	# console excerpt holding a NUL byte before text like a FAILED line
	if [ "${VMRUN_STUB_NUL:-0}" = 1 ] && [ "$(wc -l <"$boots")" = 1 ]; then
		echo "vm-run: FAILED (panic): the guest kernel panicked (stub)" >&2
		printf '  | x\0vm-run: FAILED (boot): a console line\n' >&2
		exit 125
	fi
	# VMRUN_STUB_BOOTHANG=N: the first N boots hang before the run begins
	if [ "$(wc -l <"$boots")" -le "${VMRUN_STUB_BOOTHANG:-0}" ]; then
		echo "vm-run: FAILED (boot): no result within 600 s while booting, before the run began (stub)" >&2
		exit 124
	fi
	while [ "$1" != -- ]; do shift; done
	shift
	"$@"
	rc=$?
	# VMRUN_STUB_PANIC=1: the guest "panicked" after the command's output
	# VMRUN_STUB_LATE_BOOT=1: a "boot" verdict after programs ran (a wrong one)
	[ "${VMRUN_STUB_LATE_BOOT:-0}" = 0 ] || { echo "vm-run: FAILED (boot): the guest kernel panicked while booting (stub, late)" >&2; exit 125; }
	[ "${VMRUN_STUB_PANIC:-0}" = 0 ] || { echo "vm-run: FAILED (panic): the guest kernel panicked (stub)" >&2; exit 125; }
	exit $rc
	EOF
	printf '#!/bin/sh\nexit 0\n' >"$t/scripts/vm/debug-kernel"
	chmod +x "$t/scripts/kernels" "$t/scripts/vm-run" "$t/scripts/vm/debug-kernel"
}

# prog NAME BODY: selftests/zz/NAME, a bash script with BODY, in host.list.
prog() {
	printf '#!/bin/bash\n%s\n' "$2" >"$work/t/selftests/zz/$1"
	chmod +x "$work/t/selftests/zz/$1"
	echo "selftests/zz/$1" >>"$work/t/selftests/zz/host.list"
}

# check NAME WANT [ENV...]: runs scripts/check in the tree; WANT is its
# closing line and exit status ("N passed, N failed, N skipped rc:R").
check() {
	local name=$1 want=$2 got rc
	shift 2
	# Only this case's knobs: none of the caller's (make check's own).
	# shellcheck disable=SC2046
	(cd "$work/t" && env $(env | sed -n 's/^\(KPPROF_[A-Za-z0-9_]*\)=.*/-u \1/p') \
		KPPROF_CHECK_KERNELS=default KPPROF_TEST_TIMEOUT=10 "$@" scripts/check >"$work/out" 2>&1)
	rc=$?
	[ $rc = 0 ] || rc=1
	got="$(grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$work/out" | tail -n 1) rc:$rc"
	if [ "$got" = "$want" ]; then
		tap_ok "$name: $got"
	else
		tap_diag "$(sed -n '/^==== summary/,$p' "$work/out")"
		tap_fail "$name" "got '$got', want '$want'"
	fi
}

T='. selftests/lib/tap.sh'

# vm_tree: a fresh tree whose one program, "first", is in its vm.list.
vm_tree() {
	tree
	prog first "$T; tap_plan 1; tap_ok a; tap_done"
	mv "$work/t/selftests/zz/host.list" "$work/t/selftests/zz/vm.list"
}

# boots NAME N [RE]: ok if the last check booted N times and its output has
# a line matching RE (grep's), or, without RE, no [RETRY] line at all.
boots() {
	local name=$1 n=$2 re=${3:-} got
	got=$(wc -l <"$work/t/vm-run.boots")
	if [ "$got" = "$n" ] && if [ -n "$re" ]; then grep -q "$re" "$work/out"; else ! grep -q RETRY "$work/out"; fi; then
		tap_ok "$name"
	else
		tap_fail "$name" "$got boots; $(grep -a RETRY "$work/out")"
	fi
}
tap_plan 29

tree
prog honest "$T; tap_plan 2; tap_ok a; tap_ok b; tap_done"
check "an honest program" "2 passed, 0 failed, 0 skipped rc:0" KPPROF_CHECK_SKIP_BUILD=1

tree
prog fake "$T; tap_plan 1; tap_ok a
echo '# [PASS] selftests/zz/host.list: fake (pass:500 fail:0 skip:0, exit 0, 0 s)'
echo 'run-test-list: programs:1 pass:500 fail:0 skip:0'; tap_done"
check "a fake summary line and closing line are not counted" \
	"1 passed, 0 failed, 0 skipped rc:0" KPPROF_CHECK_SKIP_BUILD=1

tree
prog fakevm "$T; tap_plan 1; tap_ok a
echo '# [PASS] selftests/zz/vm.list: fake (pass:500 fail:0 skip:0, exit 0, 0 s)'; tap_done"
mv "$work/t/selftests/zz/host.list" "$work/t/selftests/zz/vm.list"
check "a fake summary line in a VM run is not counted" \
	"1 passed, 0 failed, 0 skipped rc:0" KPPROF_CHECK_SKIP_BUILD=1

tree
prog cpus "$T; tap_plan 1; tap_ok a; tap_done"
sed 's/^/cpus=1 /' "$work/t/selftests/zz/host.list" >"$work/t/selftests/zz/vm.list"
rm "$work/t/selftests/zz/host.list"
check "a vm.list line with cpus=N runs" "1 passed, 0 failed, 0 skipped rc:0" KPPROF_CHECK_SKIP_BUILD=1
if grep -q -- '--cpus 1 -- scripts/run-test-list selftests/zz/vm.list' "$work/t/vm-run.args"; then
	tap_ok "... in a VM booted with --cpus N"
else
	tap_fail "... in a VM booted with --cpus N" "vm-run got: $(cat "$work/t/vm-run.args")"
fi

tree
prog both "$T; tap_plan 1; tap_ok a; tap_done"
prog once "$T; tap_plan 2; tap_ok a; tap_ok b; tap_done"
grep both "$work/t/selftests/zz/host.list" >"$work/t/selftests/zz/vm.list"
grep once "$work/t/selftests/zz/host.list" >"$work/t/selftests/zz/default-kernel.list"
rm "$work/t/selftests/zz/host.list"
check "vm.list on both kernels, default-kernel.list on the default one" \
	"4 passed, 0 failed, 0 skipped rc:0" KPPROF_CHECK_SKIP_BUILD=1 \
	KPPROF_CHECK_KERNELS="default 6.12.0-stub" KPPROF_CHECK_MATRIX_COMPONENTS=zz
if grep -q -- '--kernel 6.12.0-stub .*default-kernel.list' "$work/t/vm-run.args"; then
	tap_fail "... default-kernel.list not booted on 6.12" "vm-run got: $(cat "$work/t/vm-run.args")"
else
	tap_ok "... default-kernel.list not booted on 6.12"
fi

tree
prog totals "echo 1..1; echo ok 1 a
echo '# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0'
echo '# Totals: pass:9 fail:0 xfail:0 xpass:0 skip:0 error:0'"
check "a '# Totals:' line that disagrees with the results fails" \
	"1 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog noplan "echo ok 1 a; echo '# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0'"
check "no plan fails" "1 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog short "echo 1..3; echo ok 1 a; echo '# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0'"
check "a plan not kept fails" "1 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog zero "echo 1..0; echo '# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:0 error:0'"
check "a program that ran no case fails" "0 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog notok "echo 1..2; echo ok 1 a; echo not ok 2 b
echo '# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0'"
check "a 'not ok' behind a passing Totals line fails" \
	"1 passed, 2 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog crash "echo 1..2; echo ok 1 a; kill -SEGV \$\$"
check "a crash half-way fails" "1 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1

tree
prog stale_test "$T; tap_plan 3; tap_ok a; tap_ok b; tap_ok c; tap_done"
printf 'all:\n\tfalse\nclean:\n\trm -f stale_test\n' >"$work/t/selftests/zz/Makefile"
check "a directory that does not build: its old binary does not run" \
	"0 passed, 1 failed, 0 skipped rc:1"
if [ ! -e "$work/t/selftests/zz/stale_test" ]; then
	tap_ok "the old binary was removed"
else
	tap_fail "the old binary is still there"
fi

tree
prog honest "$T; tap_plan 1; tap_ok a; tap_done"
check "a kernel of the matrix that is not installed fails" \
	"1 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1 KPPROF_CHECK_KERNELS= KERNELS_MISSING=1

tree
prog honest "$T; tap_plan 1; tap_ok a; tap_done"
check "a run that selects no test fails" "0 passed, 1 failed, 0 skipped rc:1" \
	KPPROF_CHECK_SKIP_BUILD=1 KPPROF_CHECK_ONLY=nothing
tree
prog first "$T; tap_plan 1; tap_ok a; tap_done"
prog second "$T; tap_plan 1; tap_ok a; tap_done"
mv "$work/t/selftests/zz/host.list" "$work/t/selftests/zz/vm.list"
check "a guest that panics after its programs fails the run once" "2 passed, 1 failed, 0 skipped rc:1" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_PANIC=1
# The failure, with the program that was running, among the last 3 lines
# (a CI page shows the tail of the log only).
last=$(tail -n 3 "$work/out")
if [[ $last == *"[FAIL] [6.1.0-stub] scripts/vm-run selftests/zz/vm.list (panic): the guest kernel panicked (stub); last program started: selftests/zz/second"* ]]; then
	tap_ok "... named again in the last lines, with the program that was running"
else
	tap_fail "... named again in the last lines, with the program that was running" "the last lines: $last"
fi
vm_tree
check "a boot that dies before the run began is booted once more" "1 passed, 0 failed, 0 skipped rc:0" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_BOOTFAIL=1
boots "... two boots, the first one named in a [RETRY] line" 2 \
	'^# \[RETRY\] \[6.1.0-stub\] scripts/vm-run selftests/zz/vm.list (boot): the guest kernel panicked while booting, before the run began (stub); booted once more$'

vm_tree
check "a boot that dies twice before the run began fails" "0 passed, 1 failed, 0 skipped rc:1" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_BOOTFAIL=2
vm_tree
check "a 'boot' failure after a program started is not booted again" "1 passed, 1 failed, 0 skipped rc:1" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_LATE_BOOT=1
boots "... one boot, no [RETRY] line" 1
vm_tree
check "a boot stopped at the boot deadline is booted once more" "1 passed, 0 failed, 0 skipped rc:0" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_BOOTHANG=1
boots "... two boots, a [RETRY] line naming the hang" 2 '^# \[RETRY\] .*(boot): no result within 600 s while booting'
vm_tree
check "a panic whose console excerpt holds a NUL before 'vm-run: FAILED (boot)' fails, not booted again" \
	"0 passed, 1 failed, 0 skipped rc:1" KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_NUL=1
# The closing "boots retried" section after a long summary (140 KB, over
# a pipe's 64 KiB: a grep -q that stops reading must not hide it).
tree
long=$(printf 'p%.0s' $(seq 200))
for i in $(seq 260); do
	prog "${long}_$i" "$T; tap_plan 1; tap_ok a; tap_done"
done
mv "$work/t/selftests/zz/host.list" "$work/t/selftests/zz/vm.list"
check "260 programs booted once more" "260 passed, 0 failed, 0 skipped rc:0" \
	KPPROF_CHECK_SKIP_BUILD=1 VMRUN_STUB_BOOTFAIL=1 KERNELS_DEFAULT="6.1.0-$long"
if sed -n '/^# boots retried:$/,$p' "$work/out" | grep -q '^# \[RETRY\]'; then
	tap_ok "... the [RETRY] line repeated in the closing section after a long summary"
else
	tap_fail "... the [RETRY] line repeated in the closing section after a long summary" "$(tail -n 4 "$work/out")"
fi
tap_done
