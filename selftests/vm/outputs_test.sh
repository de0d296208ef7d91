#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every build output is under build/ (mk/build.mk), so that 'make clean'
# (rm -rf build) is the whole clean and a stray output shows up in
# 'git status'.  After the build (make check builds everything before the
# host lists; this list runs last of them), git must list no file outside
# build/ and the two run directories vm-tmp/ and demo-out/: neither
# untracked nor ignored.  In a fresh clone, as CI runs, anything listed is
# an output written beside the sources (or left by a test); in a working
# tree it may also be a new file not yet added.  The .gitignore files may
# only name such directories: a pattern like '*.o' would hide a stray
# object.  Repo root.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
cd "$top" || exit 1
allowed='^(build|vm-tmp|demo-out)(/|$)'

tap_plan 3

# 1. Something was built, or the next check proves nothing.
kver=$(scripts/kernels --default 2>/dev/null)
missing=
for f in build/module/$kver/kpprof.ko build/user/shim/libkpprof.so build/user/kpprof/kpprof \
	build/selftests/kmod/uapi_layout_test build/selftests/shim/unit_test \
	build/selftests/collector/decode_test build/selftests/install/wl_heap; do
	[ -e "$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then
	tap_ok "the tree is built (module, shim, collector, selftests)"
else
	tap_fail "the tree is built" "missing:$missing (make all; make -C selftests/<c>)"
fi

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	tap_skip "git lists nothing outside build/" "not a git work tree"
	tap_skip ".gitignore names only build/, vm-tmp/, demo-out/" "not a git work tree"
	tap_done
fi

# 2. git status: every untracked or ignored path, one a line.
stray=$(git status --porcelain --ignored --untracked-files=all | sed -n 's/^\(??\|!!\) //p' |
	grep -Ev "$allowed")
if [ -z "$stray" ]; then
	tap_ok "git lists nothing outside build/, vm-tmp/, demo-out/"
else
	tap_diag "$(head -40 <<<"$stray")"
	tap_fail "git lists nothing outside build/, vm-tmp/, demo-out/" \
		"$(wc -l <<<"$stray") paths beside the sources: build outputs go under build/ (mk/build.mk); a new source: git add it"
fi

# 3. The ignore files hide nothing but those directories.
bad=$(git ls-files -z '*.gitignore' | xargs -0 -r grep -HnEv '^(#.*|[[:space:]]*|/(build|vm-tmp|demo-out)/)$')
nested=$(git ls-files '*.gitignore' | grep -vx '.gitignore' | sed 's/$/: an ignore file of its own/')
if [ -z "$bad" ] && [ -z "$nested" ]; then
	tap_ok ".gitignore names only build/, vm-tmp/, demo-out/"
else
	tap_diag "$(printf '%s\n' "$bad" "$nested" | head -40)"
	tap_fail ".gitignore names only build/, vm-tmp/, demo-out/" \
		"other patterns or ignore files would hide outputs beside the sources"
fi
tap_done
