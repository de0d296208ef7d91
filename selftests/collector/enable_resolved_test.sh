#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Review M4: `kpprof enable --shim PATH` checked the owners of PATH's
# resolved form and wrote PATH itself into the preload file, so a symlink
# in a user's directory passed the check and could be repointed later.
# Now the resolved path is the one checked and the one written; disable
# --shim PATH still finds it.  Runs on a scratch preload file.  Repo root;
# needs root (a directory owned by nobody).
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
K=${KPPROF:-$top/build/user/kpprof/kpprof}
if [ "$(id -u)" != 0 ]; then
	tap_skip "enable writes the resolved path" "needs root (a directory owned by nobody)"
	tap_done
fi
out=$(mktemp -d /tmp/kpprof-enable.XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
mkdir -m 755 "$out/lib" "$out/user"
install -m 0644 "$top/build/user/shim/libkpprof.so" "$out/lib/libkpprof.so"
chown nobody "$out/user"
ln -s "$out/lib/libkpprof.so" "$out/user/libkpprof.so"
chown -h nobody "$out/user/libkpprof.so"
f=$out/ld.so.preload

"$K" enable --shim "$out/user/libkpprof.so" --preload-file "$f" >"$out/e.out" 2>&1
if [ -f "$f" ] && [ "$(cat "$f")" = "$out/lib/libkpprof.so" ]; then
	tap_ok "enable writes the resolved path it checked, not the user's symlink"
else
	tap_fail "enable wrote: $(cat "$f" 2>/dev/null) ($(cat "$out/e.out"))"
fi
# The user repoints the symlink: the preload file is not affected.
ln -sfn /nonexistent/evil.so "$out/user/libkpprof.so"
if ! grep -q "$out/user" "$f" 2>/dev/null; then
	tap_ok "no entry under the user's directory"
else
	tap_fail "the preload file names $out/user"
fi
ln -sfn "$out/lib/libkpprof.so" "$out/user/libkpprof.so"
"$K" disable --shim "$out/user/libkpprof.so" --preload-file "$f" >"$out/d.out" 2>&1
if [ ! -e "$f" ]; then
	tap_ok "disable --shim with the symlinked name removes the resolved entry"
else
	tap_fail "after disable: $(cat "$f") ($(cat "$out/d.out"))"
fi
tap_done
