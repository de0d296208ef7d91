#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shim's statistics and safety on the host, without the module (issue
# 8): the shim reads its config from a file (KPPROF_TEST_CONFIG) and
# appends its records to a file (KPPROF_TEST_SINK), which shim_reader
# --decode prints; safety_workload runs each case.  Statistical bounds
# are 5 standard deviations wide: a correct shim fails one about once in
# 1.7 million runs.
# usage: selftests/shim/safety_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

# cfg MEM BLOCK MUTEX: a config page file (every profile on).
cfg() {
	shim_test_config "$1" "$2" "$3" >"$tmp/cfg"
}

# run LIB ARGS...: run the workload; records in $tmp/dump, stdout in
# $tmp/out, stderr in $tmp/err, exit status in $tmp/rc.
run() {
	local lib=$1
	shift
	shim_run 300 "$lib" "$d/safety_workload" "$@"
}

# check NAME EXPR [DIAG]: pass if the shell arithmetic EXPR holds.
check() {
	if (( $2 )); then
		tap_ok "$1"
	else
		tap_fail "$1" "($2) is false"
		[ -n "${3:-}" ] && tap_diag "$3"
		tap_diag "$(head -c 400 "$tmp/out") $(grep -v '^kpprof' "$tmp/err" | head -c 400)"
	fi
}

count() {	# count AWK-CONDITION: records in the dump that match
	awk "$1 { n++ } END { print n + 0 }" "$tmp/dump"
}

wake_ns() {	# the workload's measured wake-up latency (-1: not printed, fails)
	sed -n 's/^wake_ns \([0-9]*\)$/\1/p' "$tmp/out" | grep . || echo -1
}

# (%.0f: mawk's %d stops at 2^31 - 1, 2147 ms of ns: the colliding
# mutexes' sums are 20 times that, and two sums cut there compare equal.)
sum() {		# sum FIELD AWK-CONDITION
	awk "$2 { s += \$$1 } END { printf \"%.0f\n\", s }" "$tmp/dump"
}

tap_plan
for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")

	# Finding 2: 5000 threads lock, unlock, then malloc(4096) once at a
	# 64 KiB rate: each is sampled with p = 1 - exp(-1/16); expect
	# 303 +- 16.9.  Before the fix every one was (5000).
	cfg 65536 0 0
	run "$lib" lockfirst 5000
	n=$(count '$1 == "ALLOC" && $6 == 4096')
	check "$b: lock-first threads: $n of 5000 sampled, 303 expected" \
		"$(cat "$tmp/rc") == 0 && $n >= 219 && $n <= 387"

	# Finding 3: 1024 rounds, 8 threads; countdowns drawn at 512 KiB, then
	# 64 MiB rate and 32 MiB allocated per round.  With a lock call after
	# the switch (it notices the rate at once): 512 +- 22.6 samples, an
	# estimate of 32 MiB per round.  Without one, each thread stays blind
	# until its 512 KiB countdown ends (documented): 448 +- 21 expected.
	# Before the fix: about 8 samples per round (8192), 512 MiB.
	for mode in lock nolock; do
		cfg 524288 0 0
		run "$lib" rateswitch 1024 $mode
		n=$(count '$1 == "ALLOC" && $6 == 4096 && $7 == 67108864')
		est=$(awk '$1 == "ALLOC" && $6 == 4096 && $7 == 67108864 { w += $6 / (1 - exp(-$6 / $7)) }
			END { printf "%.1f", w / 1024 / 1048576 }' "$tmp/dump")
		lo=$([ $mode = lock ] && echo 399 || echo 342)
		check "$b: rate switch 512 KiB -> 64 MiB ($mode): $n samples, estimate $est MiB of 32 per round" \
			"$(cat "$tmp/rc") == 0 && $n >= $lo && $n <= 625"
	done

	# A failed realloc leaves a sampled block as it was: its FREE went in
	# before the real realloc (issue 15: realloc is the real one), so it is
	# recorded again, and freed once more by the later realloc: ALLOC FREE
	# ALLOC FREE, never two ALLOCs of it live at once.
	cfg 1 0 0
	run "$lib" realloc-fail
	a=$(sed -n 's/^ADDR block //p' "$tmp/err")
	seq=$(awk -v a="$a" '($1 == "ALLOC" || $1 == "FREE") && $5 == a { printf "%s ", $1 }' "$tmp/dump")
	check "$b: failed realloc: block recorded again after its FREE ($seq)" \
		"$(cat "$tmp/rc") == 0 && $([ "$seq" = "ALLOC FREE ALLOC FREE " ] && echo 1 || echo 0)"

	# Finding 6: two mutexes sharing a wait-table slot: all the blocked
	# time must be charged to unlockers.
	# The charge is the wait up to each hand-off (Go's mutex profile); the
	# waiters' blocked time also holds their wake-up latency after it,
	# which the workload measures (wake_ns) and a loaded machine makes
	# tens of ms a hand-off: the charge must be at least 80% of the
	# blocked time less that latency.  The latency must stay under a
	# quarter of the blocked time (a few % of it even at load 10), so the
	# charge is at least 60% of the blocked time whatever the latency: a
	# shim that loses 40% of it fails, and a measured latency too large
	# to tell (a bound that no longer means anything) fails too.
	cfg 0 1 1
	run "$lib" collide 600
	bl=$(sum 6 '$1 == "BLOCK"')
	ch=$(sum 6 '$1 == "MUTEX"')
	wk=$(wake_ns)
	check "$b: colliding mutexes: blocked $((bl / 1000000)) ms (wake-ups $((wk / 1000000)) ms of it), charged $((ch / 1000000)) ms" \
		"$(cat "$tmp/rc") == 0 && $bl > 0 && $wk >= 0 && $wk * 4 < $bl && $ch * 10 >= ($bl - $wk) * 8 && $ch * 10 <= $bl * 12"

	# A recursive mutex's inner unlock hands nothing off: one MUTEX
	# record per real hand-off (20 rounds), the wait charged in full.
	run "$lib" recursive 20
	n=$(count '$1 == "MUTEX"')
	bl=$(sum 6 '$1 == "BLOCK"')
	ch=$(sum 6 '$1 == "MUTEX"')
	wk=$(wake_ns)
	check "$b: recursive mutex: $n hand-offs of 20, blocked $((bl / 1000000)) ms (wake-ups $((wk / 1000000)) ms of it), charged $((ch / 1000000)) ms" \
		"$(cat "$tmp/rc") == 0 && $n <= 20 && $n >= 10 && $wk >= 0 && $wk * 4 < $bl && $ch * 10 >= ($bl - $wk) * 8"

	# The unlock inside pthread_cond_timedwait hands the mutex off too.
	run "$lib" condwait 20
	bl=$(sum 6 '$1 == "BLOCK"')
	ch=$(sum 6 '$1 == "MUTEX"')
	wk=$(wake_ns)
	check "$b: cond_wait hand-off: blocked $((bl / 1000000)) ms (wake-ups $((wk / 1000000)) ms of it), charged $((ch / 1000000)) ms" \
		"$(cat "$tmp/rc") == 0 && $bl > 0 && $wk >= 0 && $wk * 4 < $bl && $ch * 10 >= ($bl - $wk) * 8"

	# Finding 7: a seccomp allowlist without write/ioctl/fstat/pipe2/
	# mincore/fcntl: the program survives; the shim said so first.
	cfg 4096 0 0
	for s in seccomp-prctl seccomp-syscall seccomp-exec; do
		run "$lib" $s
		check "$b: $s: survives, NOTE SECCOMP sent, nothing after it" \
			"$(cat "$tmp/rc") == 0 && $(count '$1 == "NOTE" && $5 == 1') == 1 && $(awk '$1 == "NOTE" { f = 1; next } f { n++ } END { print n + 0 }' "$tmp/dump") == 0"
	done

	# A fork from a signal handler while the main thread samples every
	# allocation: every child exits (they hung when the signal had
	# interrupted the shim's dl_iterate_phdr(): the child inherited the
	# loader's lock, owned by the parent's thread id, and its next walk
	# blocked for ever; the sampling path now runs with asynchronous
	# signals blocked), and the child's count of threads in sampling
	# paths comes back to 0 (it went to -1, or stayed at 1).
	cfg 1 0 0
	rm -f "$tmp/sink"
	KPPROF_UNWIND=fp KPPROF_DEBUG=1 KPPROF_TEST_CONFIG=$tmp/cfg KPPROF_TEST_SINK=/dev/null \
		LD_PRELOAD=$lib "$d/safety_workload" forksig 100 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for _ in $(seq 1 120); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 $pid 2>/dev/null; then
		kids=$(ps -o pid=,stat= --ppid $pid | awk '$2 !~ /Z/ { print $1 }')
		# shellcheck disable=SC2086
		kill -9 $pid $kids 2>/dev/null
		wait $pid 2>/dev/null
		tap_fail "$b: fork from a signal handler: all children exit" \
			"$(echo $kids | wc -w) children still running after 60 s (killed)"
	else
		wait $pid
		check "$b: fork from a signal handler: all children exit" "$? == 0"
	fi
	done_kids=$(grep -c 'in sampling paths' "$tmp/err")
	bad=$(grep -c 'in sampling paths [^0]' "$tmp/err")
	check "$b: fork from a signal handler: $bad of $done_kids finished processes miscounted" \
		"$done_kids >= 50 && $bad == 0" "$(grep 'in sampling paths [^0]' "$tmp/err" | head -3)"

	# Stack: a sample in a signal handler on a sigaltstack adds at most
	# 1 KiB to what the handler uses without the shim, with either
	# unwinder (the sample's body runs on a private stack, issue 15), and
	# survives on an altstack of that size (rounded up to a page).
	cfg 1 0 0
	base=$("$d/safety_workload" altstack 65536 2>&1 | sed -n 's/^STACK used \([0-9]*\).*/\1/p')
	for u in dwarf:1024 fp:1024; do
		KPPROF_UNWIND=${u%:*} run "$lib" altstack 65536
		used=$(sed -n 's/^STACK used \([0-9]*\).*/\1/p' "$tmp/err")
		size=$(( (base + ${u#*:} + 4095) / 4096 * 4096 ))
		KPPROF_UNWIND=${u%:*} run "$lib" altstack $size
		check "$b: ${u%:*} sample on a sigaltstack adds $((used - base)) bytes (at most ${u#*:}); survives on $size" \
			"${used:-999999} - ${base:-0} <= ${u#*:} && $(cat "$tmp/rc") == 0"
	done

	# exec: the image that sampled ends with COMM EXEC; a failed exec
	# starts a fresh one (START), the real one too, which ends with EXIT.
	run "$lib" exec
	check "$b: exec: COMM START EXEC START (failed) EXEC START EXIT" \
		"$(cat "$tmp/rc") == 0 && $(awk '$1 == "COMM" { s = s $5 } END { print (s == "020203") }' "$tmp/dump") == 1"
done
tap_done
