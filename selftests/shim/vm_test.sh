#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The shim against the real module (run in the VM, kpprof.ko loaded):
#
#   shim_reader (consumer, sets the config) --fork/exec--> shim_workload
#        ^                                      LD_PRELOAD=libkpprof.so
#        |  ring                                         |
#        +---------------- /dev/kpprof <---- write(2) ---+
#
# Each case runs one workload scenario under shim_reader, which dumps every
# record (one line each, see shim_reader.c), and checks the dump with awk:
# the right kinds, counts, pids, stacks whose leaf is the calling function
# (SITE ranges the workload prints), frees matching allocations, and the
# module's statistics (nothing rejected).
# usage: selftests/shim/vm_test.sh [SHIM.so]   (default build/user/shim/libkpprof.so)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-vm.XXXXXX)
# KPPROF_SHIM_KEEP=DIR keeps the dumps there for inspection.
trap 'if [ -n "${KPPROF_SHIM_KEEP:-}" ]; then mkdir -p "$KPPROF_SHIM_KEEP"; cp "$tmp"/* "$KPPROF_SHIM_KEEP"/; fi; rm -rf "$tmp"' EXIT

tap_plan
tap_diag "shim: $lib"
tap_need_device

# h(x): a hex address as a number (mawk has no strtonum; addresses are
# below 2^53, exact in a double).
AWK_HEX='function h(x,  i, n) { x = tolower(x); sub(/^0x/, "", x); n = 0
	for (i = 1; i <= length(x); i++) n = n * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1
	return n }'

# run NAME READER_OPTS... -- CMD...: dump in $tmp/NAME.dump, stderr (SITE
# lines, reader stats) in $tmp/NAME.err, stdout in $tmp/NAME.out.
run() {
	local name=$1
	shift
	"$d/shim_reader" --preload "$lib" --dump "$tmp/$name.dump" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}

# site NAME FUNC: "start end" of FUNC as the workload printed it.
site() {
	awk -v f="$2" '$1 == "SITE" && $2 == f { print $3, $4; exit }' "$tmp/$1.err"
}

# in_site NAME FUNC KIND: count records of KIND whose leaf pc is in FUNC.
in_site() {
	local r
	r=$(site "$1" "$2")
	awk -v s="${r% *}" -v e="${r#* }" -v k="$3" '
		'"$AWK_HEX"'
		$1 == k && $4 > 0 { pc = h($8)
			if (pc >= h(s) && pc < h(e)) n++ }
		END { print n + 0 }' "$tmp/$1.dump"
}

count() {	# count NAME AWK-CONDITION
	awk "$2 { n++ } END { print n + 0 }" "$tmp/$1.dump"
}

# check NAME WHAT EXPR: a test case named "NAME: WHAT" that passes if the
# shell arithmetic EXPR holds; on failure, show the run's diagnostics.
check() {
	if (( $3 )); then
		tap_ok "$1: $2"
	else
		tap_fail "$1: $2" "($3) is false"
		tap_diag "$(tail -n 3 "$tmp/$1.err")"
		tap_diag "$(head -c 600 "$tmp/$1.out")"
	fi
}

ok_run() {	# ok_run NAME: exit 0, "ok" on stdout, nothing rejected
	local rc rej
	rc=$(cat "$tmp/$1.rc")
	rej=$(sed -n 's/.* rejected \([0-9]*\) .*/\1/p' "$tmp/$1.err" | tail -n 1)
	check "$1" "exit status 0 and ok" "$rc == 0 && $(grep -c '^ok' "$tmp/$1.out") >= 1"
	check "$1" "module rejected no record" "${rej:-1} == 0"
}

# ---------------------------------------------------------------- alloc
run alloc --mem-rate 1 -- "$d/shim_workload" alloc 100
ok_run alloc
check alloc "one COMM START" "$(count alloc '$1 == "COMM" && $5 == 0') == 1"
check alloc "100 mallocs with alloc_site as leaf" "$(in_site alloc alloc_site ALLOC) == 100"
check alloc "8 other allocation functions with other_site as leaf" \
	"$(in_site alloc other_site ALLOC) == 8"
check alloc "sizes 1000..1099 recorded from alloc_site" \
	"$(awk '$1 == "ALLOC" && $6 >= 1000 && $6 < 1100 && $7 == 1 { n++ } END { print n + 0 }' "$tmp/alloc.dump") >= 100"
# Every sampled block of the workload is freed: each ALLOC address has a
# later FREE with the same size (realloc frees, then allocates).
check alloc "every allocation freed with its size" "$(awk '
	$1 == "ALLOC" { live[$5] = $6 }
	$1 == "FREE" && ($5 in live) { if (live[$5] == $6) freed++; delete live[$5]; next }
	$1 == "FREE" && !($5 in live) { stray++ }
	END { print (freed >= 109 && stray == 0) }' "$tmp/alloc.dump") == 1"
check alloc "MMAP of the program with a 20-byte build-id" \
	"$(count alloc '$1 == "MMAP" && $8 == 20 && $9 ~ /shim_workload$/') == 1"
check alloc "MMAP of libc" "$(count alloc '$1 == "MMAP" && $9 ~ /libc\.so/') >= 1"
check alloc "stacks reach main's caller (depth >= 3)" \
	"$(awk '$1 == "ALLOC" && $4 >= 3 { n++ } END { print n + 0 }' "$tmp/alloc.dump") >= 100"

KPPROF_UNWIND=fp run alloc_fp --mem-rate 1 -- "$d/shim_workload" alloc 100
ok_run alloc_fp
check alloc_fp "fp unwinder: 100 mallocs with alloc_site as leaf" \
	"$(in_site alloc_fp alloc_site ALLOC) == 100"

run depth --mem-rate 1 --depth 2 -- "$d/shim_workload" alloc 20
ok_run depth
check depth "stacks cut at max_stack_depth 2" \
	"$(count depth '$1 == "ALLOC" && $4 > 2') == 0 && $(count depth '$1 == "ALLOC" && $4 == 2') >= 20"

# Through code without frame pointers (libstdc++, and cxx_throw itself is
# built without them): libunwind stacks still reach the program's own
# functions; fp stacks mostly do not (printed, not asserted: it is why
# libunwind is the default).
reach() {	# reach NAME: percent of ALLOC stacks with a pc in cxx_throw's text
	awk "$AWK_HEX"'
		$1 == "MMAP" && $9 ~ /cxx_throw$/ { s = h($5); e = h($6) }
		$1 == "ALLOC" { all++; for (i = 8; i <= NF; i++) if (h($i) >= s && h($i) < e) { n++; break } }
		END { printf "%d\n", all ? 100 * n / all : 0 }' "$tmp/$1.dump"
}
run cxx_lu --mem-rate 1 -- "$d/cxx_throw"
KPPROF_UNWIND=fp run cxx_fp --mem-rate 1 -- "$d/cxx_throw"
tap_diag "stacks reaching cxx_throw's code: libunwind $(reach cxx_lu)%, fp $(reach cxx_fp)%"
check cxx_lu "libunwind stacks reach the program through libstdc++" "$(reach cxx_lu) >= 95"
for r in cxx_lu cxx_fp; do	# fp through code without frame pointers: no bad pc sent
	rej=$(sed -n 's/.* rejected \([0-9]*\) .*/\1/p' "$tmp/$r.err" | tail -n 1)
	check $r "exit 0, module rejected no record" "$(cat "$tmp/$r.rc") == 0 && ${rej:-1} == 0"
done

# ---------------------------------------------------------------- rates
# 64 MiB in 64-byte blocks at mean 64 KiB: 1024 samples expected, sd 32.
run rate --mem-rate 65536 -- "$d/shim_workload" volume 64 64
ok_run rate
n=$(in_site rate alloc_site ALLOC)
check rate "Poisson rate 64 KiB: $n samples of 1024 expected" "$n > 870 && $n < 1180"
check rate "records carry the rate" "$(count rate '$1 == "ALLOC" && $7 != 65536') == 0"

KPPROF_MEM_RATE=65536 run envrate --mem-rate 1048576 -- "$d/shim_workload" volume 64 64
ok_run envrate
n=$(in_site envrate alloc_site ALLOC)
check envrate "KPPROF_MEM_RATE overrides the page: $n samples of 1024" "$n > 870 && $n < 1180"

KPPROF_MEM_RATE=0 run envoff --mem-rate 1 -- "$d/shim_workload" alloc 100
ok_run envoff
check envoff "KPPROF_MEM_RATE=0 turns heap sampling off" "$(count envoff '$1 == "ALLOC"') == 0"

# A rate set while the process runs reaches it: off (0) for 400 ms, then 4 KiB.
run switch --mem-rate 0 --switch-after 400 --switch-mem-rate 4096 -- \
	"$d/shim_workload" watch 1200
ok_run switch
check switch "no samples before the switch, many after" "$(awk '
	$1 == "SWITCH" { on = 1 }
	$1 == "ALLOC" { if (on) after++; else before++ }
	END { print (before == 0 && after > 100) }' "$tmp/switch.dump") == 1"

# ---------------------------------------------------------------- safety
run threads --mem-rate 1 -- "$d/shim_workload" threads 2000
ok_run threads
check threads "2000 short-lived threads each sampled" "$(in_site threads alloc_site ALLOC) == 2000"

run fork --mem-rate 1 -- "$d/shim_workload" fork 20
ok_run fork
parent=$(awk '$1 == "COMM" && $5 == 0 { print $2; exit }' "$tmp/fork.dump")
check fork "20 children wrote COMM FORK under their own pid" \
	"$(awk -v p="$parent" '$1 == "COMM" && $5 == 1 && $2 != p { c[$2] = 1 } END { print length(c) }' "$tmp/fork.dump") == 20"
check fork "children's allocations carry their pids" "$(awk -v p="$parent" '
	$1 == "COMM" && $5 == 1 { child[$2] = 1 }
	$1 == "ALLOC" && ($2 in child) && $6 == 5000 { n[$2]++ }
	END { for (c in n) if (n[c] == 10) ok++; print ok + 0 }' "$tmp/fork.dump") == 20"
check fork "children re-emit their mappings" "$(awk '
	$1 == "COMM" && $5 == 1 { child[$2] = 1 }
	$1 == "MMAP" && ($2 in child) && $9 ~ /shim_workload$/ { m[$2] = 1 }
	END { print length(m) }' "$tmp/fork.dump") == 20"

run exec --mem-rate 1 -- "$d/shim_workload" exec
ok_run exec
check exec "the new image starts afresh (two COMM START, same pid)" "$(awk '
	$1 == "COMM" && $5 == 0 { n[$2]++ } END { for (p in n) if (n[p] == 2) ok = 1; print ok + 0 }' "$tmp/exec.dump") == 1"
check exec "the new image is profiled" "$(in_site exec alloc_site ALLOC) == 10"

run dlopen --mem-rate 1 -- "$d/shim_workload" dlopen 30
ok_run dlopen
check dlopen "plugin mapped (MMAP with its path)" \
	"$(count dlopen '$1 == "MMAP" && $9 ~ /libshim_plugin\.so$/') >= 1"
# Every allocation made inside the plugin lies in a plugin mapping that was
# emitted before it and not unmapped since.
check dlopen "each plugin allocation follows a live mapping of it" "$(awk '
	'"$AWK_HEX"'
	$1 == "MMAP" && $9 ~ /libshim_plugin/ { live[$5] = $6 }
	$1 == "MUNMAP" { delete live[$5] }
	$1 == "ALLOC" && $6 == 777 { ok = 0
		for (s in live) if (h($8) >= h(s) && h($8) < h(live[s])) ok = 1
		good += ok; all++ }
	END { print (all == 30 && good == 30) }' "$tmp/dlopen.dump") == 1"

run signals --mem-rate 4096 -- "$d/shim_workload" signals
ok_run signals
check signals "sampling under a 100 us timer signal" "$(in_site signals alloc_site ALLOC) >= 5000"

run early --mem-rate 1 -- "$d/shim_workload" early
ok_run early

run closefd --mem-rate 1 -- "$d/shim_workload" closefd
ok_run closefd

# ---------------------------------------------------------------- contention
# 1 s, not 300 ms: on a loaded host (load average 15 on 2 cores) the VM
# ran too little in 300 ms for 20 contended waits.
run mutex --mem-rate 0 --block-rate 1 --mutex-fraction 1 -- "$d/shim_workload" mutex 1000
ok_run mutex
lock=$(awk '$1 == "LOCK" { print $3 }' "$tmp/mutex.err")
check mutex "BLOCK records on the mutex, waiter's stack (lock_site)" \
	"$(in_site mutex lock_site BLOCK) >= 20 && $(count mutex "\$1 == \"BLOCK\" && \$5 != \"$lock\"") == 0"
check mutex "MUTEX records, unlocker's stack (unlock_site)" \
	"$(in_site mutex unlock_site MUTEX) >= 20"
check mutex "delays positive and rate as set" \
	"$(count mutex '($1 == "BLOCK" || $1 == "MUTEX") && ($6 == 0 || $7 != 1)') == 0"

run mutexoff --mem-rate 0 --block-rate 0 --mutex-fraction 0 -- "$d/shim_workload" mutex 200
ok_run mutexoff
check mutexoff "rates 0: no contention records" "$(count mutexoff '$1 == "BLOCK" || $1 == "MUTEX"') == 0"

# block_rate 1 s: each ~1 ms wait is kept with probability d / rate, so
# only a few of the many hundreds are, each with rate = 1e9.
run blockrate --mem-rate 0 --block-rate 1000000000 -- "$d/shim_workload" mutex 300
ok_run blockrate
check blockrate "short waits sampled with probability d/rate" \
	"$(count blockrate '$1 == "BLOCK"') < 20 && $(count blockrate '$1 == "BLOCK" && $7 != 1000000000') == 0"

run rwlock --mem-rate 0 --block-rate 1 -- "$d/shim_workload" rwlock 1000
ok_run rwlock
lock=$(awk '$1 == "LOCK" { print $3 }' "$tmp/rwlock.err")
check rwlock "BLOCK records on the rwlock" "$(count rwlock "\$1 == \"BLOCK\" && \$5 == \"$lock\"") >= 20"

# ---------------------------------------------------------------- pass-through
# /dev/kpprof not writable for the process: it runs exactly as without us.
if command -v setpriv >/dev/null; then
	mode=$(stat -c %a /dev/kpprof)
	chmod 600 /dev/kpprof
	want=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$d/shim_workload" alloc 50 2>/dev/null)
	run noaccess --mem-rate 1 -- setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$d/shim_workload" alloc 50
	chmod "$mode" /dev/kpprof
	# setpriv itself runs as root (and is sampled) before it execs the
	# workload, which must then write nothing: setpriv's COMM START and
	# COMM EXEC, no START of the program.
	check noaccess "device not writable: exit 0, no records from the program" \
		"$(cat "$tmp/noaccess.rc") == 0 && $(count noaccess '$1 == "COMM" && $5 == 0') == 1 && $(count noaccess '$1 == "COMM" && $5 == 2') == 1 && $(in_site noaccess alloc_site ALLOC) == 0"
	[ "$(cat "$tmp/noaccess.out")" = "$want" ] && tap_ok "noaccess: output identical" ||
		tap_fail "noaccess: output identical"
else
	tap_skip "noaccess: device not writable" "setpriv not installed"
fi

tap_done
