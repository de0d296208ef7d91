#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The module's code standards as tests, on the host: checkpatch --strict
# finds nothing, and a W=1 build under sparse (C=2) prints no warning, for
# the default kernel and for every other kernel whose headers are installed
# (the matrix: 6.12 and 6.12-rt; `make deps` installs them).
# The lint builds happen in build/module-lint/<release> so ./kpprof.ko is
# untouched.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$top/selftests/lib/tap.sh"
cd "$top" || exit 1

default=$(dpkg-query -W -f='${Depends}' linux-image-amd64 | sed -E 's/^linux-image-([^ ,]+).*/\1/')
kernels=("$default")
for build in /lib/modules/*/build; do
	kver=$(basename "$(dirname "$build")")
	[ "$kver" = "$default" ] || [ ! -f "$build/Makefile" ] || kernels+=("$kver")
done

tap_plan $((2 + ${#kernels[@]}))
tap_check "checkpatch --strict clean (make style)" make -s style

if ! command -v sparse >/dev/null; then
	tap_fail "sparse installed" "no sparse: run 'make deps'"
else
	tap_ok "sparse installed"
fi

for kver in "${kernels[@]}"; do
	lint=$top/build/module-lint/$kver
	rm -rf "$lint" && mkdir -p "$lint" && cp -r Kbuild kmod ioctl "$lint/"
	out=$(make -C "/lib/modules/$kver/build" M="$lint" C=2 W=1 KPPROF_VERSION=lint \
		KPPROF_DEBUG=y modules 2>&1)
	rc=$?
	# Debian's headers have no vmlinux for BTF: that note is not about our code.
	warnings=$(printf '%s\n' "$out" | grep -E 'warning|error' | grep -v 'Skipping BTF generation')
	if [ $rc -ne 0 ] || [ -n "$warnings" ]; then
		tap_diag "$out"
		tap_fail "W=1 + sparse build clean for $kver" \
			"exit $rc, $(printf "%s\n" "$warnings" | wc -l) warning lines"
	else
		tap_ok "W=1 + sparse build clean for $kver"
	fi
done
tap_done
