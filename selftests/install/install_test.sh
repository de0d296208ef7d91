#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make install DESTDIR=... lays out every file (and only those) with the
# right modes and paths in them; builds nothing; refuses clearly when 'make'
# has not run; keeps edited configuration; make uninstall removes it all.
# Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
out=$(mktemp -d /tmp/kpprof-install.XXXXXX)
trap 'rm -rf "$out"' EXIT
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
ver=$(make -s --no-print-directory print-version)
d=$out/root

expected="/etc/default/kpprof
/etc/kpprof/exclude
/etc/modprobe.d/kpprof.conf
/usr/local/bin/kpprof
/usr/local/include/kpprof/kpprof.h
/usr/local/lib/$ma/kpprof/libkpprof.so
/usr/local/lib/systemd/system/kpprof.service
/usr/local/lib/udev/rules.d/60-kpprof.rules
/usr/local/share/man/man1/kpprof.1
/usr/local/share/man/man7/libkpprof.7
/usr/src/kpprof-$ver/Kbuild
/usr/src/kpprof-$ver/Makefile
/usr/src/kpprof-$ver/dkms.conf
/usr/src/kpprof-$ver/ioctl/kpprof.h
$(git ls-files 'kmod/*.[ch]' | sed "s|^|/usr/src/kpprof-$ver/|")"
expected=$(sort <<<"$expected")

touch "$out/stamp"
sleep 1
if make -s install DESTDIR="$d" >"$out/install.log" 2>&1; then
	tap_ok "make install DESTDIR=$d"
else
	tap_diag "$(cat "$out/install.log")"
	tap_fail "make install"
	tap_done
fi
got=$(cd "$d" && find . -type f -o -type l | sed 's|^\.||' | sort)
if [ "$got" = "$expected" ]; then
	tap_ok "it lays out exactly the $(wc -l <<<"$got") expected files"
else
	tap_diag "$(diff <(echo "$expected") <(echo "$got"))"
	tap_fail "installed files differ from the expected list"
fi
listed=$(make -s --no-print-directory install-files | sort)
[ "$listed" = "$expected" ] && tap_ok "make install-files lists the same files" ||
	{ tap_diag "$(diff <(echo "$expected") <(echo "$listed"))"; tap_fail "install-files"; }
bad=$(cd "$d" && find . -type f ! -path ./usr/local/bin/kpprof ! -perm 0644; find . -path ./usr/local/bin/kpprof ! -perm 0755)
[ -z "$bad" ] && tap_ok "modes: kpprof 0755, every other file 0644" || tap_fail "modes" "$bad"
built=$(find "$top/user" "$top/kmod" "$top/ioctl" "$top/build/user" -newer "$out/stamp" -type f | head -5)
[ -z "$built" ] && tap_ok "install built nothing (no file of the tree is newer)" ||
	tap_fail "install wrote into the tree" "$built"
unit=$d/usr/local/lib/systemd/system/kpprof.service
grep -qx 'ExecStart=/usr/local/bin/kpprof serve --listen ${KPPROF_LISTEN} $KPPROF_OPTS' "$unit" &&
	grep -qx 'EnvironmentFile=-/etc/default/kpprof' "$unit" && ! grep -qE '@[A-Z]+@' "$unit" &&
	tap_ok "the unit names /usr/local/bin/kpprof and /etc/default/kpprof" || tap_fail "unit paths"
grep -q "^PACKAGE_VERSION=\"$ver\"" "$d/usr/src/kpprof-$ver/dkms.conf" &&
	grep -q "KPPROF_VERSION=$ver" "$d/usr/src/kpprof-$ver/Makefile" &&
	tap_ok "dkms.conf and the tree's Makefile carry version $ver" || tap_fail "DKMS version"
cmp -s "$top/ioctl/kpprof.h" "$d/usr/local/include/kpprof/kpprof.h" &&
	printf '#include <kpprof/kpprof.h>\nint main(void) { return KPPROF_ABI_VERSION < 1; }\n' |
	gcc -x c -I"$d/usr/local/include" -o "$out/abi" - 2>"$out/cc.log" && "$out/abi" &&
	tap_ok "third parties build against <kpprof/kpprof.h>" || { tap_diag "$(cat "$out/cc.log")"; tap_fail "UAPI header"; }
v=$("$d/usr/local/bin/kpprof" --version)
[ "$v" = "kpprof $ver" ] && tap_ok "kpprof --version: $v" || tap_fail "--version" "'$v', want 'kpprof $ver'"

# Installed kpprof finds the installed shim (record and enable's default).
n=$("$d/usr/local/bin/kpprof" enable --dry-run --preload-file "$out/none" 2>&1 | tail -1)
[ "$n" = "$d/usr/local/lib/$ma/kpprof/libkpprof.so" ] &&
	tap_ok "installed kpprof's default shim is the installed one" || tap_fail "default shim" "$n"

echo "KPPROF_LISTEN=127.0.0.1:7000" >>"$d/etc/default/kpprof"
make -s install DESTDIR="$d" >"$out/install2.log" 2>&1
grep -q 7000 "$d/etc/default/kpprof" && grep -q "keeping $d/etc/default/kpprof" "$out/install2.log" &&
	tap_ok "a second install keeps the edited /etc/default/kpprof" || tap_fail "config overwritten"

make -s uninstall DESTDIR="$d" >"$out/uninstall.log" 2>&1
left=$(cd "$d" && find . -type f -o -type l)
own=$(cd "$d" && find . -type d \( -name kpprof -o -name "kpprof-*" \))
[ -z "$left" ] && [ -z "$own" ] && tap_ok "make uninstall removes every file and kpprof's directories" ||
	tap_fail "uninstall left" "$left $own"
[ -d "$d/usr/local/share/man/man1" ] && tap_ok "uninstall keeps shared directories (man1)" ||
	tap_fail "uninstall removed a shared directory"

# From a tree where 'make' has not run: install must fail, clearly, and
# install nothing.
mkdir -p "$out/src"
git ls-files -z | xargs -0 cp --parents -t "$out/src"
if make -s -C "$out/src" install DESTDIR="$out/root2" >"$out/fresh.log" 2>&1; then
	tap_fail "install in an unbuilt tree succeeded"
else
	grep -q "build/user/kpprof/kpprof is missing: run 'make'" "$out/fresh.log" && [ ! -e "$out/root2" ] &&
		tap_ok "install in an unbuilt tree fails: $(head -1 "$out/fresh.log")" ||
		tap_fail "unbuilt tree" "$(cat "$out/fresh.log")"
fi
tap_done
