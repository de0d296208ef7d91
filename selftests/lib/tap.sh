# SPDX-License-Identifier: GPL-2.0
# Kselftest-style TAP for shell tests.  Source it, then:
#
#   tap_plan [N]             "TAP version 13" (and "1..N" when N is known)
#   tap_ok NAME              ok 1 NAME
#   tap_fail NAME [WHY]      not ok 2 NAME # WHY
#   tap_skip NAME WHY        ok 3 NAME # SKIP WHY
#   tap_check NAME CMD...    runs CMD; ok if it exits 0, else not ok (its
#                            output is shown as '# ' diagnostics either way)
#   tap_diag TEXT...         '# TEXT' lines
#   tap_done                 "1..N" if no plan was given, the kselftest line
#                            "# Totals: pass:N fail:N xfail:0 xpass:0 skip:N error:0",
#                            then exits 1 on any failure, 4 (KSFT_SKIP) if
#                            everything was skipped, else 0.
# scripts/check reads the Totals line, as it does for C kselftests.
# Works in bash and dash (it uses "local", which both have).

TAP_N=0 TAP_PASS=0 TAP_FAIL=0 TAP_SKIP=0 TAP_PLANNED=

tap_plan() {
	echo "TAP version 13"
	if [ $# -ge 1 ]; then
		TAP_PLANNED=$1
		echo "1..$1"
	fi
}

tap_diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

tap_ok() {
	TAP_N=$((TAP_N + 1)) TAP_PASS=$((TAP_PASS + 1))
	echo "ok $TAP_N $1"
}

tap_fail() {
	TAP_N=$((TAP_N + 1)) TAP_FAIL=$((TAP_FAIL + 1))
	if [ $# -ge 2 ]; then
		echo "not ok $TAP_N $1 # $2"
	else
		echo "not ok $TAP_N $1"
	fi
}

tap_skip() {
	TAP_N=$((TAP_N + 1)) TAP_SKIP=$((TAP_SKIP + 1))
	echo "ok $TAP_N $1 # SKIP ${2:-}"
}

tap_check() {
	local name="$1" out rc
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	[ -z "$out" ] || tap_diag "$out"
	if [ $rc -eq 0 ]; then
		tap_ok "$name"
	else
		tap_fail "$name" "exit status $rc"
	fi
}

# tap_need_device: the VM tests' first check: with no /dev/kpprof (the module
# not loaded) the test ends here, one failure.
tap_need_device() {
	[ -c /dev/kpprof ] && return 0
	tap_fail "device present" "/dev/kpprof missing: is kpprof.ko loaded?"
	tap_done
	exit 1
}

tap_done() {
	if [ -z "$TAP_PLANNED" ]; then
		echo "1..$TAP_N"
	elif [ "$TAP_PLANNED" -ne "$TAP_N" ]; then
		# A plan that was not kept is an error of the test itself.
		tap_fail "plan" "planned $TAP_PLANNED tests, ran $TAP_N"
	fi
	echo "# Totals: pass:$TAP_PASS fail:$TAP_FAIL xfail:0 xpass:0 skip:$TAP_SKIP error:0"
	if [ $TAP_FAIL -gt 0 ]; then
		exit 1
	elif [ $TAP_PASS -eq 0 ] && [ $TAP_SKIP -gt 0 ]; then
		exit 4
	fi
	exit 0
}
