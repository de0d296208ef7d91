#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shim's safety cases against the real module (run in the VM, kpprof.ko
# loaded): records go through KPPROF_IOC_SUBMIT, so a regular file put on
# the shim's descriptor number gets nothing, even while the number is
# swapped under a sampling thread; a seccomp allowlist without ioctl does
# not kill the program, and the module accepts the shim's NOTE before the
# filter goes in; exec ends the image with COMM EXEC.
# usage: selftests/shim/safety_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-safety-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

tap_plan
tap_need_device

# run NAME READER_OPTS... -- CMD...: dump in $tmp/NAME.dump.
run() {
	local name=$1
	shift
	"$d/shim_reader" --preload "$lib" --dump "$tmp/$name.dump" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}

count() {	# count NAME AWK-CONDITION
	awk "$2 { n++ } END { print n + 0 }" "$tmp/$1.dump"
}

check() {	# check NAME WHAT EXPR
	if (( $3 )); then
		tap_ok "$1: $2"
	else
		tap_fail "$1: $2" "($3) is false"
		tap_diag "$(tail -n 3 "$tmp/$1.err")"
		tap_diag "$(head -c 600 "$tmp/$1.out")"
	fi
}

# after_note NAME: records made after the NOTE.  CYCLE is the module's;
# LOST too, and it reports samples the ring refused before the NOTE (the
# module's drain sends a ring's LOST after its records).
after_note() {
	awk '$1 == "NOTE" { f = 1; next }
	     f && $1 != "CYCLE" && $1 != "LOST" { n++ } END { print n + 0 }' \
		"$tmp/$1.dump"
}

rejected() {	# rejected NAME: records the module refused
	local r
	r=$(sed -n 's/.* rejected \([0-9]*\) .*/\1/p' "$tmp/$1.err" | tail -n 1)
	echo "${r:-1}"
}

run dup2 --mem-rate 4096 -- "$d/safety_workload" dup2
check dup2 "a file dup2()ed on the shim's number gets no byte" \
	"$(cat "$tmp/dup2.rc") == 0 && $(grep -c '^ok dup2 (0 bytes' "$tmp/dup2.out") == 1"

run dup2race --mem-rate 4096 -- "$d/safety_workload" dup2race 1500
check dup2race "a file swapped in and out of the number gets no byte" \
	"$(cat "$tmp/dup2race.rc") == 0 && $(grep -c '^ok dup2race (0 bytes' "$tmp/dup2race.out") == 1"

for s in seccomp-prctl seccomp-syscall seccomp-exec; do
	run $s --mem-rate 4096 -- "$d/safety_workload" $s
	check $s "survives a filter without ioctl; NOTE SECCOMP accepted; no record after it" \
		"$(cat "$tmp/$s.rc") == 0 && $(count $s '$1 == "NOTE" && $5 == 1') == 1 && $(after_note $s) == 0 && $(rejected $s) == 0"
done

# The collector names the process that went quiet, on stderr and in the
# profiles' comments (read back by an independent reader).
kp=$top/build/user/kpprof/kpprof
if [ -x "$kp" ]; then
	mkdir -p "$tmp/rec"
	KPPROF_SHIM=$lib "$kp" record -o "$tmp/rec" --mem-rate 4096 -- \
		"$d/safety_workload" seccomp-prctl >"$tmp/rec.out" 2>"$tmp/rec.err"
	echo $? >"$tmp/rec.rc"
	msg='pid [0-9]*: seccomp filter installed, heap/lock sampling stopped ([0-9]* events not recorded)'
	check rec "kpprof record says which pid stopped, in its warning and the profile comment" \
		"$(cat "$tmp/rec.rc") == 0 && $(grep -c "$msg" "$tmp/rec.err") == 1 && $(go tool pprof -comments "$tmp/rec/heap.pb.gz" 2>/dev/null | grep -c "$msg") == 1"
	go tool pprof -symbolize=none -raw "$tmp/rec/heap.pb.gz" >/dev/null 2>&1 &&
		tap_ok "rec: heap profile passes go tool pprof -raw" ||
		tap_fail "rec: heap profile passes go tool pprof -raw"
else
	tap_skip "rec: collector reports the seccomp stop" "build/user/kpprof/kpprof not built"
fi

run exec --mem-rate 1 -- "$d/safety_workload" exec
check exec "COMM START EXEC START (failed exec) EXEC START EXIT, one pid" \
	"$(cat "$tmp/exec.rc") == 0 && $(awk '$1 == "COMM" { s = s $5; p[$2] = 1 } END { print (s == "020203" && length(p) == 1) }' "$tmp/exec.dump") == 1 && $(rejected exec) == 0"

# A FREE refused by a full ring is submitted again before a later record
# (the block is held until then): the collector sees the block freed.  A
# handshake, not a time, so a busy machine cannot change the outcome: the
# reader reads nothing until the workload, its block freed, sends SIGUSR1;
# the reader notes the losses so far (the rings stay full while it reads
# nothing, so they were full at the free), drains everything, then sends
# SIGUSR2 and the workload allocates once more.  KPPROF_DEBUG=1: the
# shim's exit line counts the FREEs it held.
KPPROF_DEBUG=1 KPPROF_UNWIND=fp run fullring --mem-rate 1 --depth 1 \
	--stall-until-signal -- "$d/safety_workload" fullring 60000
a=$(sed -n 's/^ADDR target //p' "$tmp/fullring.err")
lost=$(sed -n 's/^shim_reader: at signal dropped \([0-9]*\)$/\1/p' "$tmp/fullring.err")
held=$(sed -n 's/.* frees held \([0-9]*\),.*/\1/p' "$tmp/fullring.err" | tail -n 1)
check fullring "the ring was full at the free (${lost:-no} records lost by then, ${held:-no} FREEs held); its ALLOC and FREE both arrived" \
	"$(cat "$tmp/fullring.rc") == 0 && ${lost:-0} > 0 && ${held:-0} > 0 && $(grep -c '^shim_reader: drained' "$tmp/fullring.err") == 1 && $(count fullring "\$1 == \"ALLOC\" && \$5 == \"$a\" && \$6 == 4000") == 1 && $(count fullring "\$1 == \"FREE\" && \$5 == \"$a\" && \$6 == 4000") == 1"

# The NOTE that says sampling stopped goes in when the ring is full: the
# reader reads nothing until the workload, filter in, sends SIGUSR1, so
# the shim's bounded wait for a drain runs out.  Room samples may not use
# (pring.c room_for()) lets it in; the samples the ring refused arrive as
# LOST, after it.  The workload allocates again once the reader has
# drained: a sample after the stop would be an ALLOC after the NOTE, not
# a refusal counted with the flood's.
run seccomp-full --mem-rate 1 --depth 1 --stall-until-signal -- \
	"$d/safety_workload" seccomp-full 60000
lost=$(awk '$1 == "LOST" { n += $5 } END { print n + 0 }' "$tmp/seccomp-full.dump")
check seccomp-full "the ring was full at the filter (${lost} samples lost); NOTE SECCOMP arrived; no record after it" \
	"$(cat "$tmp/seccomp-full.rc") == 0 && $lost > 0 && $(count seccomp-full '$1 == "NOTE" && $5 == 1') == 1 && $(after_note seccomp-full) == 0 && $(rejected seccomp-full) == 0"

# The same with four failed execs first: each writes COMM EXEC and COMM
# START, which may use that room too; they must not take the NOTE's
# (room_for(): only the last record of a process, NOTE SECCOMP or COMM
# EXIT, may take the last entry), and an EXEC that went in has its START
# (the first START is the process's own, from its constructor).
run seccomp-full-exec --mem-rate 1 --depth 1 --stall-until-signal -- \
	"$d/safety_workload" seccomp-full 60000 4
lost=$(awk '$1 == "LOST" { n += $5 } END { print n + 0 }' "$tmp/seccomp-full-exec.dump")
execs=$(count seccomp-full-exec '$1 == "COMM" && $5 == 2')
starts=$(count seccomp-full-exec '$1 == "COMM" && $5 == 0')
check seccomp-full-exec "the ring was full at four failed execs and the filter (${lost} samples lost, COMM EXEC ${execs}, START ${starts}); each EXEC has its START; NOTE SECCOMP arrived; no record after it" \
	"$(cat "$tmp/seccomp-full-exec.rc") == 0 && $lost > 0 && $starts == $execs + 1 && $(count seccomp-full-exec '$1 == "NOTE" && $5 == 1') == 1 && $(after_note seccomp-full-exec) == 0 && $(rejected seccomp-full-exec) == 0"

run lockfirst --mem-rate 65536 -- "$d/safety_workload" lockfirst 2000
n=$(count lockfirst '$1 == "ALLOC" && $6 == 4096')
# p = 1 - exp(-1/16): 121 +- 10.7 expected, 5 sd
check lockfirst "lock-first threads: $n of 2000 sampled, 121 expected" \
	"$(cat "$tmp/lockfirst.rc") == 0 && $n >= 68 && $n <= 175 && $(rejected lockfirst) == 0"

tap_done
