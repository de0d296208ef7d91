#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15 (review §1.5, §1.6, §1.7, §9), on the host in test mode at rate 1:
# what a sample may cost the program it runs in.
#   - a sampled malloc in a handler on an 8 KiB sigaltstack with a guard
#     page does not overflow it;
#   - a signal handler that needs 200 KiB of stack (it would run on an
#     8 MiB thread stack without the shim) survives being delivered while
#     a sample runs on its private stack (DEEP_KIB; 20 such deliveries),
#     and one using 32 KiB under a finite RLIMIT_AS (64 KiB stacks there);
#   - on a 16 KiB makecontext() stack, malloc+free with a sample takes at
#     most 1 KiB more of the caller's stack than without the shim;
#   - a frame pointer chain that leads to the top of the address space
#     (rbp -16, as binutils' as leaves it) or past the stack does not make
#     either walker read there (KPPROF_UNWIND=fp crashed as);
#   - a thread's first sample inside pthread_getattr_np (its cpuset
#     allocation, with the thread's descriptor lock held) does not hang
#     the fp walker, which learns the bounds with that function (java hung);
#   - no descriptor appears in /proc/self/fd once the process has sampled;
#   - a sample never waits for the loader: a library constructor that forks,
#     or takes a lock another thread holds while it allocates, while that
#     thread's first samples are taken, finishes (bounded by a timeout);
#   - the DWARF unwinder names every frame of an 18-deep chain of
#     frame-pointer-less functions in a shared library;
#   - the shim exports no unwinder symbol (the program's exceptions keep
#     libgcc_s);
#   - its static TLS, carved from every thread's stack, is at most
#     TLS_MAX bytes (record buffers live on private stacks, not in TLS);
#   - the DWARF unwinder's rule cache (unwind_cache.c) takes the same stacks
#     as libgcc's unwinder: libkpprof-crosscheck.so compares every stack it
#     takes (python3 with threads and sqlite, the fp-less chain, a 64-deep
#     workload), and takes most of them.
# usage: selftests/shim/stack_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"
STACK_EXTRA_MAX=1024	# bytes of the caller's stack a sample may add
T=60			# seconds: a run that takes longer hung
TLS_MAX=512		# bytes of static TLS
DEEP_KIB=200		# KiB of stack a signal handler uses

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

# shimmed LIB UNWIND CMD...: CMD at rate 1 under LIB, the sink in $tmp/sink.
shimmed() {
	local lib=$1 unwind=$2
	shift 2
	rm -f "$tmp/sink"
	KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_TEST_SINK=$tmp/sink \
		KPPROF_UNWIND=$unwind LD_PRELOAD=$lib timeout -s KILL $T "$@"
}

# foreign20 OUTPUT: stack_checks deephandler ran at least 20 handlers on
# another stack than the thread's (its loop stops at 20; one more may land
# before it looks).
foreign20() {
	awk '$1 == "deephandler" && $4 >= 20 { ok = 1 } END { exit !ok }' <<<"$1"
}

plain_co=$("$d/stack_checks" costack | awk '{ print $2 }')
out=$("$d/stack_checks" deephandler $DEEP_KIB 1 raw 2>&1); rc=$?
[ $rc = 0 ] && grep -q "^deephandler [1-9][0-9]* handlers, 0 on another stack" <<<"$out" &&
	tap_ok "without the shim: a handler using $DEEP_KIB KiB of stack ($out)" ||
	tap_fail "without the shim: a handler using $DEEP_KIB KiB of stack" "rc $rc: $out"
for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	for unwind in dwarf fp; do
		out=$(shimmed "$lib" $unwind "$d/stack_checks" altstack 8192 2>&1); rc=$?
		[ $rc = 0 ] && [ -s "$tmp/sink" ] && grep -q '^ok: 100 handlers' <<<"$out" &&
			tap_ok "$b $unwind: sampled malloc in a handler on an 8 KiB sigaltstack" ||
			tap_fail "$b $unwind: 8 KiB sigaltstack" "rc $rc: $out"

		# raw: a handler installed past sigaction() (rt_sigaction), which
		# the shim cannot move to the thread's stack (sigwrap.c): it runs
		# on the private stack, which must hold it
		out=$(shimmed "$lib" $unwind "$d/stack_checks" deephandler $DEEP_KIB 20 raw 2>&1); rc=$?
		[ $rc = 0 ] && foreign20 "$out" &&
			tap_ok "$b $unwind: a handler using $DEEP_KIB KiB of stack, delivered during samples ($out)" ||
			tap_fail "$b $unwind: a handler using $DEEP_KIB KiB of stack during a sample" \
				"rc $rc (139: SIGSEGV; fewer than 20 on another stack: not provoked): $out"

		# Under a finite RLIMIT_AS the private stacks are 64 KiB (README,
		# Known limits): a 32 KiB handler still fits.
		out=$(ulimit -v 4000000 && shimmed "$lib" $unwind "$d/stack_checks" deephandler 32 20 raw 2>&1); rc=$?
		[ $rc = 0 ] && foreign20 "$out" &&
			tap_ok "$b $unwind: under ulimit -v, a handler using 32 KiB during samples ($out)" ||
			tap_fail "$b $unwind: under ulimit -v, a 32 KiB handler during a sample" "rc $rc: $out"

		out=$(shimmed "$lib" $unwind "$d/stack_checks" badrbp 2>&1); rc=$?
		[ $rc = 0 ] && [ -s "$tmp/sink" ] && [ "$out" = "badrbp ok" ] &&
			tap_ok "$b $unwind: malloc called with rbp -16, 1 << 62, past the stack's top" ||
			tap_fail "$b $unwind: malloc called with a stray rbp" "rc $rc (139: SIGSEGV): $out"

		out=$(shimmed "$lib" $unwind "$d/stack_checks" getattr 2>&1); rc=$?
		[ $rc = 0 ] && [ -s "$tmp/sink" ] && [ "$out" = "getattr ok" ] &&
			tap_ok "$b $unwind: samples inside pthread_getattr_np, of the thread itself and of others" ||
			tap_fail "$b $unwind: samples inside pthread_getattr_np" "rc $rc (137: hung, killed after $T s): $out"

		co=$(shimmed "$lib" $unwind "$d/stack_checks" costack | awk '{ print $2 }')
		[ -n "$co" ] && [ -n "$plain_co" ] && [ -s "$tmp/sink" ] &&
		[ $((co - plain_co)) -le $STACK_EXTRA_MAX ] &&
			tap_ok "$b $unwind: a sample on a 16 KiB coroutine stack: $co bytes, $((co - plain_co)) more than without the shim" ||
			tap_fail "$b $unwind: coroutine stack" "with $co bytes, without $plain_co (at most +$STACK_EXTRA_MAX)"
	done

	# Off its thread's own stack a sample asks the kernel whether it is on
	# the altstack (a raw call may have set it: user/shim/altstack.c), once
	# per 64 KiB region, not at each sample (a system call: 1.7 us against
	# 0.3 a sample at rate 1).  costacks samples 20 times on each of 1 and
	# of 3 stacks in turn: it must have asked (the path is live), and at
	# most once per stack and once for the thread's first sample
	# (helper-24 F3: every question forgot the other regions, 3 stacks
	# asked at every sample).
	for n in 1 3; do
		q=$(KPPROF_DEBUG=1 shimmed "$lib" dwarf "$d/stack_checks" costacks $n 2>&1 >/dev/null |
			sed -n 's/.*sigaltstack questions \([0-9]*\).*/\1/p')
		s=$("$d/shim_reader" --decode "$tmp/sink" 2>/dev/null | grep -c ALLOC)
		[ -n "$q" ] && [ "$q" -ge 1 ] && [ "$q" -le $((n + 1)) ] && [ "$s" -ge $((20 * n)) ] &&
			tap_ok "$b: samples on $n coroutine stacks asked the kernel about the altstack $q times for $s samples" ||
			tap_fail "$b: sigaltstack questions on $n coroutine stacks" "asked ${q:-?} times (1 to $((n + 1)) expected) for $s samples"
	done

	out=$(shimmed "$lib" dwarf "$d/stack_checks" fds)
	[ -s "$tmp/sink" ] && grep -q '^fds same' <<<"$out" &&
		tap_ok "$b: no descriptor appears once the process sampled ($out)" ||
		tap_fail "$b: descriptors after sampling" "$out"

	for mode in fork lock; do
		out=$(CTOR_MODE=$mode shimmed "$lib" dwarf "$d/ctor_race" "$d/libshim_ctor.so" 2>&1); rc=$?
		[ $rc = 0 ] && [ "$out" = ok ] &&
			tap_ok "$b: a constructor that ${mode}s beside another thread's first samples finishes" ||
			tap_fail "$b: constructor that ${mode}s" "rc $rc (137: hung, killed after $T s): $out"
	done

	out=$(shimmed "$lib" dwarf "$d/stack_checks" deep "$d/libshim_deep.so")
	[ "$out" = "deep 19/19" ] &&
		tap_ok "$b: every frame of a frame-pointer-less chain is named ($out)" ||
		tap_fail "$b: frame-pointer-less chain" "$out"
	tap_diag "$b fp: $(shimmed "$lib" fp "$d/stack_checks" deep "$d/libshim_deep.so") (fp cannot see through it)"

	syms=$(nm -D --defined-only "$lib" | grep -E '_Unwind_|__register_frame|__deregister_frame')
	[ -z "$syms" ] && tap_ok "$b: exports no unwinder symbol" ||
		tap_fail "$b: exports unwinder symbols" "$syms"

	tls=$(readelf -lW "$lib" | awk '$1 == "TLS" { print $6 }')
	[ -n "$tls" ] && tls=$((tls))
	[ -n "$tls" ] && [ "$tls" -le $TLS_MAX ] &&
		tap_ok "$b: static TLS $tls bytes (at most $TLS_MAX)" ||
		tap_fail "$b: static TLS" "${tls:-none} bytes, at most $TLS_MAX"
done

# The rule cache against libgcc, on the test build that compares them.
xc=$top/build/user/shim/libkpprof-crosscheck.so
py='import json, threading, sqlite3
d = [{"k": i, "v": [str(j) for j in range(5)]} for i in range(2000)]
json.loads(json.dumps(d))
def f(n): return [bytearray(100) for _ in range(50)] if n == 0 else f(n - 1)
c = sqlite3.connect(":memory:"); c.execute("create table t(a)")
c.executemany("insert into t values(?)", [(i,) for i in range(2000)])
ts = [threading.Thread(target=f, args=(8,)) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]'
{
	KPPROF_DEBUG=1 shimmed "$xc" dwarf /usr/bin/python3 -c "$py"
	KPPROF_DEBUG=1 shimmed "$xc" dwarf "$d/stack_checks" deep "$d/libshim_deep.so"
	KPPROF_DEBUG=1 shimmed "$xc" dwarf "$d/shim_workload" bench-sampled 64 2000
} >"$tmp/xc" 2>&1
differ=$(grep -c 'cached stack differs' "$tmp/xc")
cached=$(sed -n 's/.*stacks: \([0-9]*\) by libgcc, \([0-9]*\) cached.*/\2/p' "$tmp/xc" | paste -sd+ | bc)
slow=$(sed -n 's/.*stacks: \([0-9]*\) by libgcc, \([0-9]*\) cached.*/\1/p' "$tmp/xc" | paste -sd+ | bc)
[ "$differ" = 0 ] && [ "${cached:-0}" -gt 1000 ] && [ "${slow:-0}" -lt "$((cached / 100 + 1))" ] &&
	tap_ok "rule cache: $cached stacks taken as libgcc takes them, $slow left to libgcc" ||
	{ tap_diag "$(grep -m 5 'differs' "$tmp/xc")"; tap_fail "rule cache" "$differ stacks differ; $cached cached, $slow by libgcc"; }
tap_done
