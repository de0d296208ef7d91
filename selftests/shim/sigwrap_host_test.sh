#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In a process that samples, the shim installs the program's signal
# handlers behind a trampoline of its own (user/shim/sigwrap.c: a handler
# that interrupts a sample runs on the program's stack; sigscan_host_test.sh).
# The program must not see it: sigaction() and signal() report its own
# handlers and flags, siginfo reaches SA_SIGINFO handlers, SA_RESETHAND
# resets, SIG_IGN/SIG_DFL round-trip, and the shim's entry point the kernel
# holds means that one handler however it is read or passed on: raw
# rt_sigaction and chaining, sigset/signal, a vfork child, two threads at
# once (sigwrap_sem.c; review rsig: against c4b3304's per-signal
# trampoline, recursion, a hang, the parent's handler replaced, mixed
# flags).  Plainly, in
# pass-through (no test config: nothing is wrapped) and in test mode at
# rate 1 (everything is), both builds.
# A handler installed with signal() still gets &siginfo and &ucontext as
# its second and third arguments, as the kernel passes them, whether the
# signal lands in a sample or not (sigwrap_args.c; review rres R1: SIGSEGV
# 3 of 3 before).
# And a sample in a SA_ONSTACK handler on the thread's sigaltstack is
# skipped: with its body on the private stack, the kernel put a nested
# SA_ONSTACK signal's frame over the handler's (altstack_nest.c: SIGSEGV
# 3 of 3 before); also when the altstack was set with a raw system call,
# which the sigaltstack() wrapper never sees (the shim asks the kernel:
# user/shim/altstack.c; SIGSEGV 3 of 3 before), one just below a small
# thread stack and one on memory a coroutine sampled on before (review
# helper-24: SIGSEGV 5 of 5 each with the first way of asking), and the
# latter inside a handler after a nested one siglongjmp'd back into it
# (helper-25 M1: SIGSEGV 5 of 5 with one handler mark).  Each run
# must see nested handlers, or it proves nothing.
# usage: selftests/shim/sigwrap_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

tap_plan
: >"$tmp/none"
check() {	# NAME: judge $tmp/rc and $tmp/out
	local fails
	fails=$(grep -v '^ok ' "$tmp/out" | head -c 400 | tr '\n' ' ')
	if [ "$(cat "$tmp/rc")" = 0 ] && [ "$(grep -c '^ok ' "$tmp/out")" -ge 19 ] && [ -z "$fails" ]; then
		tap_ok "$1: $(grep -c '^ok ' "$tmp/out") checks"
	else
		tap_fail "$1" "rc $(cat "$tmp/rc"): $fails $(head -c 200 "$tmp/err")"
	fi
}
# judge NAME PATTERN: ok if the run exited 0 and its output matches PATTERN
judge() {
	if [ "$(cat "$tmp/rc")" = 0 ] && grep -q "$2" "$tmp/out"; then
		tap_ok "$1: $(cat "$tmp/out")"
	else
		tap_fail "$1" "rc $(cat "$tmp/rc") (139: SIGSEGV): $(cat "$tmp/out") $(head -c 200 "$tmp/err")"
	fi
}
args_ok='sigwrap_args [1-9][0-9]* handlers, 0 saw'
"$d/sigwrap_sem" >"$tmp/out" 2>"$tmp/err"
echo $? >"$tmp/rc"
check plainly
"$d/sigwrap_args" >"$tmp/out" 2>"$tmp/err"
echo $? >"$tmp/rc"
judge "plainly: a signal() handler's siginfo and ucontext" "$args_ok"
for lib in "$@"; do
	b=$(basename "$lib")
	timeout -k 5 30 env LD_PRELOAD="$lib" "$d/sigwrap_sem" >"$tmp/out" 2>"$tmp/err"
	echo $? >"$tmp/rc"
	check "$b, pass-through"
	shim_test_config 1 0 0 >"$tmp/cfg" || { tap_fail "config file"; continue; }
	shim_run 30 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" "$d/sigwrap_sem"
	check "$b, rate 1"
	shim_run 60 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" "$d/sigwrap_args"
	judge "$b, rate 1: a signal() handler's siginfo and ucontext" "$args_ok"
	# up to 3 runs, until one nests a second handler inside a first
	for _ in 1 2 3; do
		shim_run 30 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" "$d/altstack_nest" 2
		grep -q '([1-9][0-9]* inside a first)' "$tmp/out" && break
	done
	judge "$b, rate 1: nested SA_ONSTACK handlers on a sigaltstack" \
		'([1-9][0-9]* inside a first), 0 canaries smashed'
	for mode in raw small reused ljmp; do
		for _ in 1 2 3; do
			shim_run 30 "$lib" KPPROF_EXCLUDE_FILE="$tmp/none" "$d/altstack_nest" 2 $mode
			grep -q '([1-9][0-9]* inside a first)' "$tmp/out" && break
		done
		judge "$b, rate 1: nested SA_ONSTACK handlers on a sigaltstack set by a raw system call ($mode)" \
			'([1-9][0-9]* inside a first), 0 canaries smashed'
	done
done
tap_done
