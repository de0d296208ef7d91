#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb builds the packages with debhelper and dh-dkms into build/deb/;
# their contents (dpkg-deb -c) are exactly the files make install lays
# out, split by package; conffiles, dependencies and maintainer scripts are
# as promised (DKMS registration; the service neither enabled nor started;
# ld.so.preload never touched); unpacked into a scratch root (dpkg-deb -x,
# never this machine's root) the programs run.  Installing them for real
# is the VM test deb_vm_test.sh.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
for t in dpkg-buildpackage dh dh_dkms; do
	command -v $t >/dev/null || { tap_skip "make deb" "$t missing (scripts/packages/install.list)"; tap_done; }
done
out=$(mktemp -d /tmp/kpprof-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

t0=$(date +%s)
if nice -n 10 make -s deb >"$out/deb.log" 2>&1; then
	tap_ok "make deb ($(($(date +%s) - t0)) s): $(cd build/deb && echo *.deb)"
else
	tap_diag "$(tail -30 "$out/deb.log")"
	tap_fail "make deb"
	tap_done
fi
files() { dpkg-deb -c "build/deb/$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' |
	grep -v '^/usr/share/doc/' | sort; }
check() { # PACKAGE-FILE EXPECTED...
	local deb=$1 got want
	shift
	got=$(files "$deb")
	want=$(printf '%s\n' "$@" | sort)
	if [ "$got" = "$want" ]; then
		tap_ok "$deb holds $(echo $got)"
	else
		tap_diag "$(diff <(echo "$want") <(echo "$got"))"
		tap_fail "$deb contents"
	fi
}
check "kpprof_${ver}_amd64.deb" /usr/bin/kpprof /usr/share/man/man1/kpprof.1.gz \
	/lib/systemd/system/kpprof.service /lib/udev/rules.d/60-kpprof.rules \
	/etc/default/kpprof /etc/modprobe.d/kpprof.conf
check "kpprof-shim_${ver}_amd64.deb" "/usr/lib/$ma/kpprof/libkpprof.so" \
	/usr/share/man/man7/libkpprof.7.gz /etc/kpprof/exclude
check "kpprof-dev_${ver}_all.deb" /usr/include/kpprof/kpprof.h
check "kpprof-dkms_${ver}_all.deb" "/usr/src/kpprof-$ver/dkms.conf" "/usr/src/kpprof-$ver/Makefile" \
	"/usr/src/kpprof-$ver/Kbuild" "/usr/src/kpprof-$ver/ioctl/kpprof.h" \
	$(git ls-files 'kmod/*.[ch]' | sed "s|^|/usr/src/kpprof-$ver/|")

info() { dpkg-deb -f "build/deb/$1" "$2"; }
ctrl() { dpkg-deb --ctrl-tarfile "build/deb/$1" | tar -xO "./$2" 2>/dev/null; }
grep -q '^dkms' <<<"$(info "kpprof-dkms_${ver}_all.deb" Depends)" &&
	ctrl "kpprof-dkms_${ver}_all.deb" postinst | grep -q 'dkms' &&
	ctrl "kpprof-dkms_${ver}_all.deb" prerm | grep -q 'dkms remove' &&
	tap_ok "kpprof-dkms depends on dkms and registers/removes the module with it" ||
	tap_fail "kpprof-dkms scripts"
[ "$(ctrl "kpprof_${ver}_amd64.deb" conffiles | sort | tr '\n' ' ')" = "/etc/default/kpprof /etc/modprobe.d/kpprof.conf " ] &&
	[ "$(ctrl "kpprof-shim_${ver}_amd64.deb" conffiles)" = /etc/kpprof/exclude ] &&
	tap_ok "the /etc files are conffiles (an administrator's edits survive upgrades)" ||
	tap_fail "conffiles"
post=$(ctrl "kpprof_${ver}_amd64.deb" postinst)
if grep -q 'deb-systemd-helper' <<<"$post" && ! grep -qE 'deb-systemd-invoke (start|restart)' <<<"$post" &&
	! grep -q 'was-enabled.*||' <<<"$post" && grep -q 'if deb-systemd-helper --quiet was-enabled' <<<"$post"; then
	tap_ok "kpprof.service is neither enabled nor started by installation"
else
	tap_diag "$post"
	tap_fail "postinst enables or starts the service"
fi
scripts=$(for d in build/deb/*.deb; do for s in preinst postinst prerm postrm; do ctrl "${d#build/deb/}" $s; done; done)
! grep -q 'ld.so.preload\|kpprof enable' <<<"$scripts" &&
	tap_ok "no maintainer script touches /etc/ld.so.preload" || tap_fail "a maintainer script enables capture"
grep -q 'libc6' <<<"$(info "kpprof-shim_${ver}_amd64.deb" Depends)" &&
	! grep -q 'libunwind' <<<"$(info "kpprof-shim_${ver}_amd64.deb" Depends)" &&
	grep -q 'libtraceevent' <<<"$(info "kpprof_${ver}_amd64.deb" Depends)" &&
	tap_ok "shared library dependencies: computed (dh_shlibdeps); the shim needs no libunwind" ||
	tap_fail "Depends" "kpprof-shim: '$(info "kpprof-shim_${ver}_amd64.deb" Depends)'"

r=$out/root
for d in build/deb/kpprof*.deb; do case $d in *dbgsym*) ;; *) dpkg-deb -x "$d" "$r" ;; esac; done
v=$("$r/usr/bin/kpprof" --version 2>&1)
[ "$v" = "kpprof $ver" ] && tap_ok "the packaged kpprof --version: $v" || tap_fail "packaged --version" "$v"
sh=$("$r/usr/bin/kpprof" enable --dry-run --preload-file "$out/none" 2>&1 | tail -1)
[ "$sh" = "$r/usr/lib/$ma/kpprof/libkpprof.so" ] &&
	tap_ok "the packaged kpprof finds the packaged shim, which loads (enable --dry-run)" ||
	tap_fail "packaged shim" "$sh"
grep -qx 'ExecStart=/usr/bin/kpprof serve --listen ${KPPROF_LISTEN} $KPPROF_OPTS' "$r/lib/systemd/system/kpprof.service" &&
	tap_ok "the packaged unit runs /usr/bin/kpprof" || tap_fail "packaged unit ExecStart"
rm -rf build/deb/src
tap_done
