#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11 on the host (KPPROF_TEST_CONFIG, records to a KPPROF_TEST_SINK
# file): what a process that never samples pays, and that one that samples
# late still gets everything.
#   - /bin/true and an idle program write COMM (START) and COMM (EXIT),
#     nothing else: no mapping record;
#   - nothing but the shim is loaded for it: no libunwind, liblzma, libm,
#     libgcc_s in a program that does not need them itself;
#   - strace -f -c: /bin/true with the shim makes at most SYSCALLS_ADDED
#     syscalls more than without it;
#   - LD_DEBUG=bindings, no module (pass-through): the loader looks up at
#     most BINDINGS_MAX symbols for the shim's imports (issue 15: each
#     import is a search through every object at load), besides the
#     dlsym(RTLD_NEXT) of each wrapped function's next definition, each
#     once;
#   - a late sampler (small allocations, a dlopen, then big ones): no
#     libunwind is loaded even after its first sample, its mappings (the program, the
#     dlopen'ed plugin) precede the first stack record, and its stacks fall
#     in the program and in the plugin;
#   - a chain (a child that never samples, a forked and an exec'ed
#     grandchild that sample late): every process's COMM, both
#     grandchildren's mappings and stacks.
# usage: selftests/shim/startup_host_test.sh [SHIM.so...]
set -u
. "$(dirname "$0")/lib.sh"

# The syscalls a process that never samples adds, in test mode (README,
# "Start-up cost"): loading libkpprof.so (openat, read, newfstatat, 4 mmap,
# close, mprotect: 9 here), the seccomp check (openat, read, close), the
# config file and the sink (openat, newfstatat, mmap, close, openat,
# prlimit64, fcntl, close), the exclude file (1 openat), COMM START and
# EXIT (2 writes), the getpid at exit that tells a vfork child's exit()
# from its parent's (init.c kpp_fini()): 24, one spare for a loader that
# maps one more segment; and 3 for the new-process check (getpid, mmap
# and madvise of a MADV_WIPEONFORK page: init.c).
SYSCALLS_ADDED=28
# The shim's imports looked up at a pass-through start (issue 15): 52
# here, after sys.h and without the C start files (70 before); a little
# room for another toolchain.  Besides them, 25 dlsym of next definitions.
BINDINGS_MAX=54
WRAPPED_NEXT='malloc free calloc realloc memalign posix_memalign aligned_alloc
valloc pvalloc pthread_mutex_lock pthread_mutex_trylock pthread_mutex_timedlock
pthread_mutex_unlock pthread_rwlock_rdlock pthread_rwlock_wrlock
pthread_rwlock_tryrdlock pthread_rwlock_trywrlock execve execv execvp execvpe
fexecve execveat prctl syscall'

tap_plan
mkcfg() { # MEM_RATE: a config page, heap profile on at MEM_RATE
	shim_test_config "$1" 0 0
}
# cfg: heap profile on, rate 1 TiB: these processes certainly never sample
# (at 512 KiB, cat's 128 KiB buffer alone is sampled one time in five).
mkcfg $((1 << 40)) >"$tmp/cfg" && mkcfg $((16 << 20)) >"$tmp/cfg16m" || { tap_fail "config files"; tap_done; }

# shimmed LIB CFG CMD...: CMD under LIB, records to $tmp/sink (emptied first)
shimmed() {
	local lib=$1 cfg=$2
	shift 2
	rm -f "$tmp/sink"
	KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$cfg KPPROF_TEST_SINK=$tmp/sink \
		LD_PRELOAD=$lib "$@"
}
decode() { "$d/shim_reader" --decode "$tmp/sink"; }
kinds() { decode | awk '{ printf "%s%s", (NR > 1 ? " " : ""), ($1 == "COMM" ? "COMM" $5 : $1) }'; }

# startup_cost LIB NAME: nothing loaded for the shim but the shim; the
# syscalls of /bin/true.
startup_cost() {
	local lib=$1 b=$2 maps extra n0 n1

	maps=$(shimmed "$lib" "$tmp/cfg" /bin/cat /proc/self/maps)
	extra=$(grep -oE '/[^ ]*/(libunwind|liblzma|libm|libgcc_s)[.-][^ ]*' <<<"$maps" | sort -u | tr '\n' ' ')
	[ -z "$extra" ] && tap_ok "$b: cat loads nothing for the shim but the shim" ||
		tap_fail "$b: objects loaded for the shim" "$extra"

	# "binding file A [0] to B [0]: normal symbol `NAME' [VERSION]"; the
	# environment as bench.sh's no-module variant: no KPPROF_*.
	env -u KPPROF_TEST_CONFIG -u KPPROF_DISABLE LD_DEBUG=bindings \
		LD_DEBUG_OUTPUT="$tmp/bind" LD_PRELOAD="$lib" /bin/true
	cat "$tmp"/bind.* 2>/dev/null | awk -v lib="$lib" -v names="$WRAPPED_NEXT" '
		BEGIN { n = split(names, w); for (i = 1; i <= n; i++) wrapped[w[i]] = 1 }
		$2 == "binding" && $4 == lib {
			sym = $0
			sub(/.*symbol `/, "", sym)
			sub(/'"'"'.*/, "", sym)
			if ($7 != lib && (sym in wrapped)) {
				if (seen[sym]++)
					twice = twice " " sym
				next
			}
			imports++
		}
		END { printf "%d%s\n", imports, twice }' >"$tmp/bindings"
	rm -f "$tmp"/bind.*
	read -r nb twice <"$tmp/bindings"
	if [ -n "$nb" ] && [ "$nb" -gt 0 ] && [ "$nb" -le $BINDINGS_MAX ] && [ -z "${twice:-}" ]; then
		tap_ok "$b: pass-through start: $nb symbol look-ups for the shim's imports (at most $BINDINGS_MAX), each next definition once"
	else
		tap_fail "$b: pass-through start: ${nb:-no} symbol look-ups for the shim's imports (at most $BINDINGS_MAX)" \
			"next definitions looked up more than once:${twice:- none}"
	fi

	if ! command -v strace >/dev/null; then
		tap_fail "$b: strace missing (scripts/packages/shim.list)"
		return
	fi
	strace -f -c -o "$tmp/st0" /bin/true
	KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/cfg \
		strace -f -c -o "$tmp/st1" -E LD_PRELOAD="$lib" /bin/true
	# "% time, seconds, usecs/call, calls[, errors] total"
	n0=$(awk '$NF == "total" { print $4 }' "$tmp/st0")
	n1=$(awk '$NF == "total" { print $4 }' "$tmp/st1")
	if [ -n "$n0" ] && [ -n "$n1" ] && [ "$n1" -le $((n0 + SYSCALLS_ADDED)) ]; then
		tap_ok "$b: /bin/true: $n1 syscalls with the shim, $n0 without (at most +$SYSCALLS_ADDED)"
	else
		tap_diag "$(cat "$tmp/st1")"
		tap_fail "$b: /bin/true: $n1 syscalls with the shim, $n0 without (at most +$SYSCALLS_ADDED)"
	fi
}

for lib in "$@"; do
	b=$(basename "$lib")
	if [ ! -f "$lib" ]; then
		tap_fail "$b: $lib missing"
		continue
	fi
	lib=$(realpath "$lib")

	# 1. Processes that never sample: COMM START (0) and EXIT (3) only.
	shimmed "$lib" "$tmp/cfg" /bin/true
	got=$(kinds)
	[ "$got" = "COMM0 COMM3" ] && tap_ok "$b: /bin/true writes COMM START and EXIT only" ||
		tap_fail "$b: /bin/true" "records: $got"
	out=$(shimmed "$lib" "$tmp/cfg" "$d/late_sampler" idle)
	got=$(kinds)
	[ "$got" = "COMM0 COMM3" ] && [ "$out" = "libunwind: no" ] &&
		tap_ok "$b: an idle program: COMM START and EXIT, libunwind not loaded" ||
		tap_fail "$b: idle program" "records: $got; $out"

	# 2. and 3.: the production library only (a sanitizer build loads
	# its runtime, and what that needs, into every process).
	if ! readelf -d "$lib" | grep -q 'NEEDED.*san'; then
		startup_cost "$lib" "$b"
	fi

	# 4. A late sampler.
	out=$(shimmed "$lib" "$tmp/cfg16m" "$d/late_sampler" late)
	decode >"$tmp/late"
	# covered covered in_exe in_plug: every pc of every ALLOC lies in an
	# object whose MMAP came before that ALLOC (the shim sends an object's
	# mappings with the first stack through it), and some ALLOC has a pc
	# in the program and one in the plugin
	res=$(/usr/bin/python3 - "$tmp/late" "$d/late_sampler" "$d/libshim_plugin.so" <<'PY'
import sys
maps, inside, uncovered = [], set(), 0
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "MMAP":
        maps.append((int(f[4], 16), int(f[5], 16), f[8]))
    elif f[0] == "ALLOC":
        for pc in f[7:]:
            pc = int(pc, 16)
            hit = set(p for lo, hi, p in maps if lo <= pc < hi)
            uncovered += not hit
            inside.update(hit)
ok = int(uncovered == 0)
print(ok, ok, *(int(p in inside) for p in sys.argv[2:4]))
PY
)
	first_mmap=$(awk '$1 != "COMM" { print $1; exit }' "$tmp/late")
	[ "$first_mmap" = MMAP ] && [ "$res" = "1 1 1 1" ] &&
		tap_ok "$b: late sampler: every pc mapped before its stack, stacks in program and plugin" ||
		tap_fail "$b: late sampler" "first non-COMM $first_mmap; pcs covered x2, stacks in exe/plugin: $res"
	want=$'libunwind before: no\nlibunwind after: no'
	[ "$out" = "$want" ] && tap_ok "$b: late sampler: no libunwind loaded by a sample" ||
		tap_fail "$b: late sampler: libunwind" "$out"
	last=$(tail -n 1 "$tmp/late" | awk '{ print $1 $5 }')
	[ "$last" = COMM3 ] && tap_ok "$b: late sampler: COMM EXIT last" ||
		tap_fail "$b: late sampler: last record $last"

	# 5. A chain: records of all processes share the sink (no pids in test
	# mode), so count them: COMM START (root, exec'ed grandchild), FORK
	# (the idle child, both grandchildren: the exec'ed one is forked
	# first), and each grandchild's own mappings.
	out=$(shimmed "$lib" "$tmp/cfg16m" "$d/late_sampler" chain)
	decode >"$tmp/chain"
	starts=$(awk '$1 == "COMM" && $5 == 0' "$tmp/chain" | wc -l)
	forks=$(awk '$1 == "COMM" && $5 == 1' "$tmp/chain" | wc -l)
	plug=$(awk -v p="$d/libshim_plugin.so" '$1 == "MMAP" && $9 == p' "$tmp/chain" | wc -l)
	allocs=$(awk '$1 == "ALLOC"' "$tmp/chain" | wc -l)
	if [ "$starts" = 2 ] && [ "$forks" = 3 ] && [ "$plug" = 2 ] && [ "$allocs" -ge 40 ] &&
	   [ "$(grep -c 'libunwind after: no' <<<"$out")" = 2 ]; then
		tap_ok "$b: chain: 2 START, 3 FORK (the idle child's too), plugin mapped twice, $allocs samples"
	else
		tap_diag "$out"
		tap_fail "$b: chain" "START $starts FORK $forks plugin maps $plug samples $allocs"
	fi
done
tap_done
