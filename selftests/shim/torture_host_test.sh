#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, "Proof": torture.c under the shim in test mode at rate 1 for
# 15 s: threads starting and exiting (and checking that realloc of blocks
# filled to their usable size loses no byte, small blocks and a 256 KiB one
# grown with mremap), fork/_Fork/clone/vfork/posix_spawn
# from two threads, a signal handler on a sigaltstack that allocates, locks
# and forks, _Forks or posix_spawns, a
# dlopen/dlclose loop (with two same-layout libraries with other unwind
# rules at one pc, unloaded by libc's own dlclose, which the shim does not
# see), a dl_iterate_phdr callback that allocates, children
# sandboxed by a seccomp filter installed through glibc or a raw syscall
# instruction, coroutines on 16/8/4/2 KiB stacks and a handler on an 8 KiB
# sigaltstack that allocate and contend.  No hang (timeout 90 s), no child
# hung or dead (a sandboxed child's forbidden syscall traps: it names it),
# and the records match what it did:
#   COMM (FORK)  = fork + handler fork + _Fork + handler _Fork + clone +
#                  sandboxed children (a fork() child at the fork, a
#                  _Fork/clone child at its exec);
#   COMM (EXEC)  >= _Fork + handler _Fork + clone children (a vfork child
#                  sends none);
#   COMM (START) and COMM (EXIT) >= 1 + the exec'ed images;
#   the sandboxed children's markers (K = 200 each, before and after the
#   filter): ALLOC of 4241 bytes = K x (libc + raw); of 4242 bytes (after
#   the filter) = K x raw: the shim stopped for a filter it saw and kept
#   sampling through one it cannot see (no syscall of its own, or the
#   child would have trapped); NOTE SECCOMP = libc children;
#   FREE of 4241 and 4242 bytes = their ALLOCs; the main process's markers
#   (4243 bytes, counted by torture): ALLOC = FREE = that count.
# selftests/shim/torture_mutants.sh (by hand) shows that this test fails
# against shims that drop, corrupt or hang.
# Stacks with the default unwinder (libgcc's, lock-free through
# _dl_find_object, on a private stack).
# usage: selftests/shim/torture_host_test.sh [SHIM.so...]
set -u
shim_defaults="libkpprof.so" . "$(dirname "$0")/lib.sh"

tap_plan
shim_test_config 1 1 1 >"$tmp/cfg" || { tap_fail "config file"; tap_done; }

for lib in "$@"; do
	lib=$(realpath "$lib")
	b=$(basename "$lib")
	rm -f "$tmp/sink"
	out=$(timeout -s KILL 90 env KPPROF_TEST_CONFIG="$tmp/cfg" \
		KPPROF_TEST_SINK="$tmp/sink" LD_PRELOAD="$lib" \
		"$d/torture" 15 "$d/libshim_plugin.so" 2>&1)
	rc=$?
	[ $rc = 0 ] && [ "$(tail -n 1 <<<"$out")" = "torture: ok" ] &&
		tap_ok "$b: torture 15 s: no hang, every child ended normally" ||
		{ tap_fail "$b: torture" "exit $rc: $(tr '\n' ' ' <<<"$out")"; continue; }
	made() { awk -v w="$1" '$0 ~ "^" w " [0-9]+ bad" { print $(NF - 2) }' <<<"$out"; }
	fork=$(made fork) ufork=$(made _Fork) clone=$(made clone) vfork=$(made vfork)
	spawn=$(made posix_spawn) hfork=$(made "handler fork")
	hufork=$(made "handler _Fork") hspawn=$(made "handler posix_spawn")
	slibc=$(made "seccomp libc") sraw=$(made "seccomp raw")
	marks=$(awk '/^main marks [0-9]+$/ { print $3 }' <<<"$out")
	read -r start forks execs exits pre post notes mallocs fpre fpost fmain < <(
		"$d/shim_reader" --decode "$tmp/sink" |
		awk '$1 == "COMM" { n[$5]++ }
		     $1 == "ALLOC" || $1 == "FREE" { c[$1 " " $6]++ }
		     $1 == "NOTE" && $5 == 1 { notes++ }
		     END { print n[0] + 0, n[1] + 0, n[2] + 0, n[3] + 0,
			   c["ALLOC 4241"] + 0, c["ALLOC 4242"] + 0, notes + 0,
			   c["ALLOC 4243"] + 0, c["FREE 4241"] + 0,
			   c["FREE 4242"] + 0, c["FREE 4243"] + 0 }')
	images=$((ufork + hufork + clone + vfork + spawn + hspawn))
	want_forks=$((fork + hfork + ufork + hufork + clone + slibc + sraw))
	[ "$forks" = "$want_forks" ] && [ "$execs" -ge $((ufork + hufork + clone)) ] &&
	[ "$start" -ge $((1 + images)) ] && [ "$exits" -ge $((1 + images)) ] &&
		tap_ok "$b: torture: records match: FORK $forks, EXEC $execs, START $start, EXIT $exits" ||
		tap_fail "$b: torture: records" "FORK $forks (want $want_forks), EXEC $execs (>= $((ufork + hufork + clone))), START $start, EXIT $exits (>= $((1 + images)))"
	[ "$pre" = $((200 * (slibc + sraw))) ] && [ "$post" = $((200 * sraw)) ] &&
	[ "$notes" = "$slibc" ] &&
		tap_ok "$b: torture: seccomp: $slibc libc-filtered children stopped with a NOTE, $sraw raw-filtered kept sampling ($pre + $post markers)" ||
		tap_fail "$b: torture: seccomp markers" "before $pre (want $((200 * (slibc + sraw)))), after $post (want $((200 * sraw))), NOTE SECCOMP $notes (want $slibc)"
	# every marker block's ALLOC and FREE, in the children and the main process
	[ -n "$marks" ] && [ "$marks" -gt 0 ] && [ "$mallocs" = "$marks" ] && [ "$fmain" = "$marks" ] &&
	[ "$fpre" = "$pre" ] && [ "$fpost" = "$post" ] &&
		tap_ok "$b: torture: main process: $marks markers, $mallocs ALLOC and $fmain FREE; children's FREEs $fpre + $fpost" ||
		tap_fail "$b: torture: marker records" "main: ALLOC $mallocs, FREE $fmain (want ${marks:-?} each); children: FREE $fpre (want $pre), $fpost (want $post)"
done
tap_done
