#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Allocator coverage, against the module (run in the VM): cxx_alloc calls
# every operator new/delete form K=5 times from new_site() (and, linked
# with jemalloc, mallocx/rallocx/xallocx/sdallocx/dallocx; everywhere,
# free_sized), at heap rate 1, under shim_reader.  For each variant:
#   - exactly K ALLOC records of its sizes with new_site on the stack:
#     fewer means an allocator's operator new was not seen (tcmalloc and
#     jemalloc replace it), more means glibc's new was counted twice
#     (libstdc++'s operator new calls our malloc);
#   - each of those addresses freed exactly once, with its size.
# A program with tcmalloc linked in statically (and one that preloads
# tcmalloc ahead of the shim) cannot be profiled: it must say so with a
# KPPROF_NOTE_NO_HEAP record, not stay silent.
# usage: selftests/shim/alloc_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-alloc.XXXXXX)
trap 'if [ -n "${KPPROF_SHIM_KEEP:-}" ]; then mkdir -p "$KPPROF_SHIM_KEEP"; cp "$tmp"/* "$KPPROF_SHIM_KEEP"/; fi; rm -rf "$tmp"' EXIT
K=5

tap_plan
tap_need_device

AWK_HEX='function h(x,  i, n) { x = tolower(x); sub(/^0x/, "", x); n = 0
	for (i = 1; i <= length(x); i++) n = n * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1
	return n }'

run() {	# run NAME CMD...: dump, stderr, stdout, status in $tmp/NAME.*
	local name=$1
	shift
	"$d/shim_reader" --preload "$lib" --mem-rate 1 --dump "$tmp/$name.dump" -- "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}

# variants NAME: for each VARIANT line, "v name alloc_count free_count"
# where alloc_count counts ALLOC records of that variant's sizes whose
# stack holds a pc of new_site, and free_count counts FREEs of those
# addresses with the same size.
variants() {
	awk "$AWK_HEX"'
		FNR == 1 { file++ }
		file == 1 && $1 == "SITE" && $2 == "new_site" { s = h($3); e = h($4) }
		file == 1 && $1 == "VARIANT" { nv++; vname[nv] = $3; vid[nv] = $2
			for (i = 4; i <= NF; i++) size[$i] = nv }
		file == 2 && $1 == "ALLOC" && ($6 in size) {
			for (i = 8; i <= NF; i++) if (h($i) >= s && h($i) < e) {
				a[size[$6]]++; live[$5] = $6; break } }
		file == 2 && $1 == "FREE" && ($5 in live) {
			if (live[$5] == $6) f[size[$6]]++; delete live[$5] }
		END { for (v = 1; v <= nv; v++) print vid[v], vname[v], a[v] + 0, f[v] + 0 }
	' "$tmp/$1.err" "$tmp/$1.dump"
}

rejected() {
	sed -n 's/.* rejected \([0-9]*\) .*/\1/p' "$tmp/$1.err" | tail -n 1
}

for prog in cxx_alloc cxx_alloc_tcmalloc cxx_alloc_jemalloc; do
	run $prog "$d/$prog"
	if [ "$(cat "$tmp/$prog.rc")" = 0 ] && grep -q '^ok' "$tmp/$prog.out" && [ "$(rejected $prog)" = 0 ]; then
		tap_ok "$prog: exit 0, module rejected nothing"
	else
		tap_fail "$prog: exit 0, module rejected nothing" "rc $(cat "$tmp/$prog.rc")"
		tap_diag "$(tail -n 3 "$tmp/$prog.err")"
	fi
	nv=0
	while read -r v name allocs frees; do
		nv=$((nv + 1))
		if [ "$allocs" = $K ] && [ "$frees" = $K ]; then
			tap_ok "$prog: $name sampled $K of $K, freed $K"
		else
			tap_fail "$prog: $name sampled $K of $K, freed $K" \
				"variant $v: $allocs ALLOC records from new_site, $frees FREE"
		fi
	done < <(variants $prog)
	[ $nv -ge 9 ] || tap_fail "$prog: variants listed" "only $nv"
	if grep -q '^NOTE' "$tmp/$prog.dump"; then
		tap_fail "$prog: no note" "$(grep '^NOTE' "$tmp/$prog.dump" | head -n 2)"
	else
		tap_ok "$prog: no note (malloc is interposed)"
	fi
done

# tcmalloc linked in statically, and tcmalloc preloaded ahead of the shim.
run static "$d/cxx_alloc_static"
tc=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null)
LD_PRELOAD="$tc $lib" "$d/shim_reader" --mem-rate 1 --dump "$tmp/tcfirst.dump" -- \
	"$d/cxx_alloc" >"$tmp/tcfirst.out" 2>"$tmp/tcfirst.err"
echo $? >"$tmp/tcfirst.rc"
for r in static tcfirst; do
	notes=$(awk '$1 == "NOTE" && $5 == 2' "$tmp/$r.dump" | wc -l)
	pid=$(awk '$1 == "COMM" && $5 == 0 { print $2; exit }' "$tmp/$r.dump")
	npid=$(awk '$1 == "NOTE" && $5 == 2 { print $2; exit }' "$tmp/$r.dump")
	if [ "$(cat "$tmp/$r.rc")" = 0 ] && [ "$notes" = 1 ] && [ -n "$pid" ] && [ "$pid" = "$npid" ]; then
		tap_ok "$r: one KPPROF_NOTE_NO_HEAP from the program's pid"
	else
		tap_fail "$r: one KPPROF_NOTE_NO_HEAP from the program's pid" \
			"rc $(cat "$tmp/$r.rc"), $notes notes, COMM pid ${pid:-none}, NOTE pid ${npid:-none}"
	fi
done

# The collector says it: kpprof record on the static program.
KPPROF_SHIM=$lib "$top/build/user/kpprof/kpprof" record -o "$tmp/rec" --mem-rate 1 -- \
	"$d/cxx_alloc_static" >"$tmp/rec.out" 2>"$tmp/rec.err"
rc=$?
if [ $rc = 0 ] && grep -q "kpprof: no heap profile for pid [0-9]* (cxx_alloc_stati): malloc is not interposed" "$tmp/rec.err"; then
	tap_ok "kpprof record: 'no heap profile for pid N' for the static program"
else
	tap_fail "kpprof record: 'no heap profile for pid N' for the static program" "rc $rc"
	tap_diag "$(tail -n 5 "$tmp/rec.err")"
fi
tap_done
