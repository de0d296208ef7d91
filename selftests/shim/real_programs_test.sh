#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Real programs no one here wrote, run without and with the shim: their
# output and exit status must be identical.  On the host (no module) this
# checks pure pass-through; in the VM (module loaded, --records) the shimmed
# run goes through shim_reader at a 4 KiB rate and must also produce
# allocation records, none of them rejected.
#
# usage: selftests/shim/real_programs_test.sh [--records] [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
records=0
if [ "${1:-}" = --records ]; then
	records=1
	shift
fi
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-real.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

tap_plan
tap_diag "shim: $lib"
# Otherwise every comparison below would pass vacuously.
if LD_PRELOAD=$lib cat /proc/self/maps 2>&1 | grep -q "$(basename "$lib")"; then
	tap_ok "the shim loads into programs"
else
	tap_fail "the shim loads into programs"
	tap_done
fi

# The programs.  Each is a shell snippet run in an empty directory of its
# own; what it prints must not depend on time, pids or addresses.
prog_python() {
	cat >s.py <<-'EOF'
	import json, collections
	words = [("w%d" % (i * 7919 % 1000)) for i in range(200000)]
	c = collections.Counter(words)
	d = {k: [v] * 3 for k, v in c.most_common(50)}
	print(len(c), sum(c.values()), json.dumps(d, sort_keys=True)[:200])
	EOF
	/usr/bin/python3 s.py
}

prog_perl() {
	perl -e 'my %h; for my $i (1..200000) { $h{"k" . ($i * 31 % 5000)} .= "x" }
		my @k = sort { length($h{$b}) <=> length($h{$a}) || $a cmp $b } keys %h;
		print scalar(@k), " $k[0] $k[-1] ", length(join(",", @k)), "\n"'
}

prog_git() {
	export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e \
		GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e \
		GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'
	git init -q -b main r && cd r || return 1
	for i in $(seq 1 50); do echo "line $i" >"f$i.txt"; done
	git add . && git commit -q -m first && echo more >>f1.txt && git commit -q -am second &&
		git log --format='%H %s' && git count-objects | sed 's/, [0-9]* kilobytes//'
}

prog_gcc() {
	cat >t.c <<-'EOF'
	#include <stdio.h>
	struct p { int x, y; };
	static int area(struct p a, struct p b) { return (b.x - a.x) * (b.y - a.y); }
	int main(void) { struct p a = { 1, 2 }, b = { 11, 22 }; printf("%d\n", area(a, b)); return 0; }
	EOF
	gcc -O2 -c t.c -o t.o && gcc t.o -o t && ./t && sha256sum t.o
}

prog_sort() {
	awk 'BEGIN { x = 1; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648; print x } }' >in.txt
	sort -n in.txt | sha256sum
	sort -r in.txt | head -n 3
}

prog_cxx() {
	"$d/cxx_throw"
}

# run_prog NAME FUNC: one test case.
run_prog() {
	local name=$1 fn=$2 want got rc1 rc2 st recs rej
	mkdir -p "$tmp/$name.plain" "$tmp/$name.shim"
	want=$(cd "$tmp/$name.plain" && "$fn" 2>&1)
	rc1=$?
	if [ $records = 1 ]; then
		got=$(cd "$tmp/$name.shim" && export -f "$fn" && d=$d \
			"$d/shim_reader" --preload "$lib" --mem-rate 4096 --dump "$tmp/$name.dump" -- \
			bash -c "d=$d; $fn" 2>"$tmp/$name.err")
		rc2=$?
	else
		got=$(cd "$tmp/$name.shim" && LD_PRELOAD=$lib "$fn" 2>&1)
		rc2=$?
	fi
	if [ "$want" != "$got" ] || [ $rc1 != $rc2 ] || [ $rc1 != 0 ]; then
		tap_fail "$name: same output and status with the shim" "exit $rc1 vs $rc2"
		tap_diag "without: $(echo "$want" | head -c 400)"
		tap_diag "with:    $(echo "$got" | head -c 400)"
		return
	fi
	tap_ok "$name: same output and status with the shim"
	[ $records = 1 ] || return
	recs=$(awk '$1 == "ALLOC" { n++ } END { print n + 0 }' "$tmp/$name.dump")
	rej=$(sed -n 's/.* rejected \([0-9]*\) .*/\1/p' "$tmp/$name.err" | tail -n 1)
	if [ "$recs" -gt 0 ] && [ "${rej:-1}" = 0 ]; then
		tap_ok "$name: $recs allocation records, none rejected"
	else
		tap_fail "$name: allocation records, none rejected" "ALLOC $recs, rejected ${rej:-?}"
		tap_diag "$(tail -n 3 "$tmp/$name.err")"
	fi
}

run_prog python prog_python
run_prog perl prog_perl
run_prog git prog_git
run_prog gcc prog_gcc
run_prog sort prog_sort
run_prog cxx prog_cxx
tap_done
