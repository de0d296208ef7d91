#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# torture_mutants.sh: does torture_host_test.sh fail when the shim is wrong?
#
# For each mutation below: copy the shim's sources (user/shim, ioctl) to
# build/shim-mutants/NAME, apply one small bug by exact text replacement,
# build libkpprof.so there, and run torture_host_test.sh against it.  A
# mutant is "caught" (ok) when the test reports a failure; one that
# survives is a hole in the harness (not ok).  A mutation whose text is no
# longer in the sources is skipped.
#
# Not in any list: a build and a torture run per mutant (about a minute
# each).  Run by hand:
#   selftests/shim/torture_mutants.sh [NAME...]      (default: all)
# MUTANTS_DRY=1 only checks that each mutation still applies.
# Needs: make -C selftests/shim (torture, shim_reader, libshim_plugin.so).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
. selftests/lib/tap.sh

# NAME|FILE|OLD TEXT|NEW TEXT   (\n and \t in the texts, | only as \|)
# The emit.c mutants drop a record as if the sink had taken it (counted ok).
mutations='
drop_every_100th|user/shim/emit.c|\tif (!kpp_submit(rec, size)) {|\tstatic _Atomic unsigned mut_n;\n\n\tif (atomic_fetch_add(&mut_n, 1) % 100 == 99) {\n\t\tatomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);\n\t} else if (!kpp_submit(rec, size)) {
drop_every_100th_free|user/shim/emit.c|\tif (!kpp_submit(rec, size)) {|\tstatic _Atomic unsigned mut_n;\n\n\tif (((const struct kpprof_record *)rec)->kind == KPPROF_REC_FREE \&\&\n\t    atomic_fetch_add(&mut_n, 1) % 100 == 99) {\n\t\tatomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);\n\t} else if (!kpp_submit(rec, size)) {
drop_every_100th_main_alloc|user/shim/emit.c|\tif (!kpp_submit(rec, size)) {|\tstatic _Atomic unsigned mut_n;\n\tstatic int mut_pid;\n\n\tif (!mut_pid)\n\t\tmut_pid = kpp.pid;\n\tif (((const struct kpprof_record *)rec)->kind == KPPROF_REC_ALLOC \&\& kpp.pid == mut_pid \&\&\n\t    atomic_fetch_add(&mut_n, 1) % 100 == 99) {\n\t\tatomic_fetch_add_explicit(&kpp.writes_ok, 1, memory_order_relaxed);\n\t} else if (!kpp_submit(rec, size)) {
realloc_corrupts_1_in_100|user/shim/heap.c|\t\t\tq = kpp_real.realloc(p, n);\n\t\t\tif (!q) {|\t\t\tstatic _Atomic unsigned mut_n;\n\n\t\t\tq = kpp_real.realloc(p, n);\n\t\t\tif (q \&\& atomic_fetch_add(\&mut_n, 1) % 100 == 99)\n\t\t\t\t((unsigned char *)q)[0] ^= 0x5a;\n\t\t\tif (!q) {
realloc_corrupts_large|user/shim/heap.c|\t\t\tq = kpp_real.realloc(p, n);\n\t\t\tif (!q) {|\t\t\tq = kpp_real.realloc(p, n);\n\t\t\tif (q \&\& n >= (128 << 10))\n\t\t\t\t((unsigned char *)q)[0] ^= 0x5a;\n\t\t\tif (!q) {
rule_tag_ignores_build_id|user/shim/unwind_cache.c|(!e->bid \|\| load8(e->bid) == e->bid_word))|(!e->bid \|\| 1))
fork_child_hangs|user/shim/init.c|\tif (atomic_load(&kpp.ready) != 1)\n\t\treturn;\n\tnew_process(kpp.fork_threaded);|\tif (atomic_load(\&kpp.ready) != 1)\n\t\treturn;\n\tif (getpid() % 64 == 0)\n\t\tfor (;;)\n\t\t\tpause();\n\tnew_process(kpp.fork_threaded);
'

want=("$@")
tap_plan
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=${line%%|*}
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
		continue
	fi
	file=$(printf '%s' "$line" | awk -F'|' '{print $2}')
	dir=build/shim-mutants/$name
	rm -rf "$dir"
	mkdir -p "$dir/user"
	cp -r user/shim "$dir/user/"
	cp -r ioctl mk "$dir/"
	find "$dir" \( -name '*.o' -o -name '*.d' -o -name '*.so' \) -delete
	if ! MUT_LINE="$line" selftests/lib/apply_mutant.py "$dir/$file" 2
	then
		tap_skip "$name" "text to mutate not found (once) in $file"
		continue
	fi
	if [ "${MUTANTS_DRY:-0}" = 1 ]; then
		diff -u "$file" "$dir/$file" | sed -n '/^[-+][^-+]/p' | sed 's/^/# /'
		tap_ok "$name: applies to $file"
		continue
	fi
	touch "$dir/stamp"
	# mk/build.mk puts the copy's outputs in its own build/ tree
	if ! nice make -C "$dir/user/shim" "$top/$dir/build/user/shim/libkpprof.so" \
		>"$dir/build.log" 2>&1; then
		tap_fail "$name" "mutant does not build (see $dir/build.log)"
		continue
	fi
	# wherever the shim's Makefile puts its output
	so=$(find "$dir" -name libkpprof.so -newer "$dir/stamp" | head -n 1)
	if [ -z "$so" ]; then
		tap_fail "$name" "no libkpprof.so built under $dir"
		continue
	fi
	timeout 300 selftests/shim/torture_host_test.sh "$top/$so" >"$dir/run.log" 2>&1
	rc=$?
	failed=$(grep -c '^not ok' "$dir/run.log")
	if [ "$failed" -gt 0 ]; then
		tap_ok "$name: caught ($(grep -m1 '^not ok' "$dir/run.log" | cut -c1-200))"
	elif [ "$rc" -ne 0 ]; then
		tap_fail "$name" "torture_host_test.sh exited $rc without a failing case (see $dir/run.log)"
	else
		tap_fail "$name" "SURVIVED: torture_host_test.sh passes against the mutant"
	fi
done <<<"$mutations"
tap_done
