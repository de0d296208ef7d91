#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# debug_kernel_catch.sh: does the debug kernel catch a bug in the module?
#
# Plants one bug at a time in a throw-away copy of the module's sources
# (build/kmod-mutants/debug-NAME; never in kmod/ itself), builds it against
# the debug kernel (scripts/vm/debug-kernel), loads it there with
# 'scripts/vm-run --kernel debug', and expects the run to fail with the
# checker's report.  ok when caught; not ok when the run passes.
#
#   oob_write  kpp_format_build writes one byte past its kzalloc'd buffer
#              at module load: expects "KASAN: slab-out-of-bounds"
#
# Not in any list (a module build and a KASAN boot, minutes).  Run by hand:
#   make debug-kernel && selftests/kmod/debug_kernel_catch.sh
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
. selftests/lib/tap.sh

# NAME|FILE|EXPECTED REPORT|OLD TEXT|NEW TEXT   (\n and \t in the texts)
mutations='
oob_write|kmod/format.c|KASAN: slab-out-of-bounds|\tbuf = kzalloc(size, GFP_KERNEL);\n\tif (!buf)\n\t\treturn -ENOMEM;\n|\tbuf = kzalloc(size, GFP_KERNEL);\n\tif (!buf)\n\t\treturn -ENOMEM;\n\t((volatile char *)buf)[size] = 1;\n
'

tap_plan
if ! tree=$(scripts/vm/debug-kernel --cached); then
	tap_skip "debug kernel" "not built: run 'make debug-kernel' first"
	tap_done
fi
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=${line%%|*}
	file=$(printf '%s' "$line" | awk -F'|' '{print $2}')
	expect=$(printf '%s' "$line" | awk -F'|' '{print $3}')
	dir=build/kmod-mutants/debug-$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r Kbuild kmod ioctl "$dir"/
	rm -f "$dir"/kmod/*.o "$dir"/kmod/.*.cmd
	if ! MUT_LINE="$line" MUT_FILE="$dir/$file" python3 - <<'PY'
import os, re, sys
fields = re.split(r'(?<!\\)\|', os.environ['MUT_LINE'])
unesc = lambda t: t.replace('\\|', '|').replace('\\n', '\n').replace('\\t', '\t')
old, new = unesc(fields[3]), unesc(fields[4])
path = os.environ['MUT_FILE']
src = open(path).read()
if src.count(old) != 1:
    sys.exit(1)
open(path, 'w').write(src.replace(old, new))
PY
	then
		tap_skip "$name" "text to mutate not found (once) in $file"
		continue
	fi
	if ! env -u KERNELRELEASE make -C "$tree" M="$top/$dir" KPPROF_VERSION="mutant-$name" modules \
		>"$dir/build.log" 2>&1; then
		tap_fail "$name" "mutant does not build (see $dir/build.log)"
		continue
	fi
	KPPROF_KO=$top/$dir/kpprof.ko scripts/vm-run --kernel debug --timeout 600 -- true \
		>"$dir/run.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && grep -q "$expect" "$dir/run.log"; then
		tap_ok "$name: the debug run fails (exit $rc) with '$expect'"
		grep -m1 "$expect" "$dir/run.log" | sed 's/^/# /'
	else
		tap_fail "$name" "exit $rc, no '$expect' in $dir/run.log"
	fi
done <<<"$mutations"
tap_done
