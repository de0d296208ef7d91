#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof enable / disable on a scratch preload file (--preload-file): the
# shim is added once and removed again, everything else in the file is kept
# byte for byte, the file is replaced by rename (never rewritten in place),
# a file that was absent is absent again, and shims that would break or
# subvert every process are refused.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
K=${KPPROF:-$top/build/user/kpprof/kpprof}
out=$(mktemp -d /tmp/kpprof-preload.XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
# A root-owned copy of the shim in a root-owned directory (the worktree
# may belong to anyone).
mkdir -m 755 "$out/lib"
install -m 0644 "$top/build/user/shim/libkpprof.so" "$out/lib/libkpprof.so"
S=$out/lib/libkpprof.so
f=$out/ld.so.preload

printf '# site policy\n/usr/lib/other.so   # a comment\n\n/opt/a.so:/opt/b.so\n\t/opt/c.so' >"$f"
cp "$f" "$out/orig"
ino=$(stat -c %i "$f")
if "$K" enable --shim "$S" --preload-file "$f" >"$out/e.out" 2>&1 &&
	[ "$(tail -1 "$f")" = "$S" ] && [ "$(head -c "$(stat -c %s "$out/orig")" "$f")" = "$(cat "$out/orig")" ]; then
	tap_ok "enable appends the shim on a line of its own, the rest untouched"
else
	tap_diag "$(cat "$out/e.out"; cat "$f")"
	tap_fail "enable"
fi
[ "$(stat -c %i "$f")" != "$ino" ] && tap_ok "the file was replaced by rename (new inode)" ||
	tap_fail "the file was rewritten in place"
"$K" enable --shim "$S" --preload-file "$f" >"$out/e2.out" 2>&1
[ "$(grep -c "$S" "$f")" = 1 ] && grep -q "already in" "$out/e2.out" &&
	tap_ok "a second enable changes nothing" || tap_fail "second enable" "$(cat "$f")"
ls "$out" | grep -q 'kpprof-' && tap_fail "temporary file left behind" || tap_ok "no temporary file left"
if "$K" disable --preload-file "$f" >"$out/d.out" 2>&1 && cmp -s "$f" "$out/orig"; then
	tap_ok "disable restores the file byte for byte: $(cat "$out/d.out")"
else
	tap_diag "$(cat "$out/d.out"; diff "$out/orig" "$f")"
	tap_fail "disable"
fi
"$K" disable --preload-file "$f" >"$out/d2.out" 2>&1 && cmp -s "$f" "$out/orig" &&
	tap_ok "a second disable changes nothing" || tap_fail "second disable"

# Entries on a shared line, and every libkpprof.so (any directory).
printf '/opt/a.so %s /opt/b.so\n/old/place/libkpprof.so\n# libkpprof.so in a comment stays\n' "$S" >"$f"
"$K" disable --preload-file "$f" >/dev/null 2>&1
[ "$(cat "$f")" = "$(printf '/opt/a.so /opt/b.so\n# libkpprof.so in a comment stays')" ] &&
	tap_ok "disable removes every libkpprof.so entry, on shared lines too, not comments" ||
	tap_fail "shared-line disable" "$(cat "$f")"
printf '/opt/x/libkpprof.so\n%s\n' "$S" >"$f"
"$K" disable --shim "$S" --preload-file "$f" >/dev/null 2>&1
[ "$(cat "$f")" = /opt/x/libkpprof.so ] && tap_ok "disable --shim removes only that path" ||
	tap_fail "disable --shim" "$(cat "$f")"

rm -f "$f"
"$K" enable --shim "$S" --preload-file "$f" >/dev/null 2>&1
[ "$(cat "$f")" = "$S" ] && [ "$(stat -c %a "$f")" = 644 ] &&
	tap_ok "enable creates a missing file, mode 0644" || tap_fail "enable on a missing file"
"$K" disable --preload-file "$f" >/dev/null 2>&1
[ ! -e "$f" ] && tap_ok "disable removes a file it left empty" || tap_fail "empty file left"

# Concurrent enables: the directory lock serializes them, one entry results.
printf '/opt/a.so\n' >"$f"
for _ in 1 2 3 4; do "$K" enable --shim "$S" --preload-file "$f" >/dev/null 2>&1 & done
wait
[ "$(grep -c "$S" "$f")" = 1 ] && grep -qx /opt/a.so "$f" &&
	tap_ok "four concurrent enables: one entry" || tap_fail "concurrent enables" "$(cat "$f")"

# Refusals: the preload file must stay as it was.
printf '/opt/a.so\n' >"$f"
cp "$f" "$out/orig"
refuse() { # NAME SHIM EXPECTED-MESSAGE
	if "$K" enable --shim "$2" --preload-file "$f" >"$out/r.out" 2>&1; then
		tap_fail "enable accepted $1"
	elif ! cmp -s "$f" "$out/orig"; then
		tap_fail "refusing $1 changed the file"
	elif grep -q "$3" "$out/r.out"; then
		tap_ok "refuses $1: $(grep -m1 "$3" "$out/r.out")"
	else
		tap_fail "refusing $1: unexpected message" "$(cat "$out/r.out")"
	fi
}
echo garbage >"$out/lib/garbage.so"
chmod 644 "$out/lib/garbage.so"
refuse "a file that is not a library" "$out/lib/garbage.so" "does not load"
printf '#include <stdlib.h>\n__attribute__((constructor)) static void f(void) { abort(); }\n' |
	gcc -shared -fPIC -x c -o "$out/lib/aborts.so" -
chmod 644 "$out/lib/aborts.so"
refuse "a library that kills every program" "$out/lib/aborts.so" "died of signal"
printf 'void missing_symbol(void); void g(void) { missing_symbol(); }\n' |
	gcc -shared -fPIC -x c -o "$out/lib/unresolved.so" -
chmod 644 "$out/lib/unresolved.so"
refuse "a library with an unresolved symbol" "$out/lib/unresolved.so" "undefined symbol"
refuse "a missing file" "$out/lib/missing.so" "No such file"
install -m 0666 "$S" "$out/lib/writable.so"
refuse "a shim anyone may write" "$out/lib/writable.so" "writable by group or others"
mkdir -m 777 "$out/open"
install -m 0644 "$S" "$out/open/libkpprof.so"
refuse "a shim in a directory anyone may write" "$out/open/libkpprof.so" "writable by group or others"
install -m 0644 "$S" "$out/lib/nobody.so"
chown nobody "$out/lib/nobody.so"
refuse "a shim owned by another user" "$out/lib/nobody.so" "not root"
if "$K" enable --shim lib/libkpprof.so --preload-file "$f" >"$out/r.out" 2>&1; then
	tap_fail "enable accepted a relative path"
else
	grep -q "absolute path" "$out/r.out" && tap_ok "refuses a relative path" || tap_fail "relative path message"
fi
tap_done
