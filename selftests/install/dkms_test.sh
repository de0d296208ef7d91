#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The DKMS source tree that 'make install' lays out builds with 'dkms build'
# for every kernel whose headers are installed (/lib/modules/*/build: here
# Debian's 6.1 and the 6.12 and 6.12-rt backports), and DKMS signs the
# result with a MOK key (a scratch one here), as it does on a Secure Boot
# machine.  Everything happens in scratch trees (--dkmstree, --sourcetree,
# --installtree): nothing is added to /var/lib/dkms or /lib/modules, which
# the test checks (kpprof's entries only).  Slow (a module build per
# kernel): host.list runs it under nice.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan

command -v dkms >/dev/null || { tap_skip "dkms" "dkms is not installed (scripts/packages/install.list)"; tap_done; }
out=$(mktemp -d /tmp/kpprof-dkms.XXXXXX)
trap 'rm -rf "$out"' EXIT
ver=$(make -s -C "$top" --no-print-directory -f Makefile -f - print-version <<<'print-version: ; @echo $(KPPROF_VERSION)' 2>/dev/null)
[ -n "$ver" ] || ver=unknown
# What the test could leave on the host if it escaped its scratch trees:
# kpprof's entries under /var/lib/dkms and /lib/modules (names, sizes,
# times).  Only those: a package installed meanwhile must not fail it.
host_kpprof() {
	find /var/lib/dkms /lib/modules -path '*kpprof*' -printf '%p %y %s %T@\n' 2>/dev/null |
		sort | sha256sum
}
before=$(host_kpprof)

if make -s -C "$top" install DESTDIR="$out/root" >"$out/install.log" 2>&1 &&
	[ -f "$out/root/usr/src/kpprof-$ver/dkms.conf" ]; then
	tap_ok "make install lays out /usr/src/kpprof-$ver/dkms.conf"
else
	tap_diag "$(tail -5 "$out/install.log")"
	tap_fail "make install (DKMS tree)"
	tap_done
fi
src=$out/root/usr/src tree=$out/dkms inst=$out/modules
mkdir -p "$tree" "$inst"
dk() { dkms "$@" --dkmstree "$tree" --sourcetree "$src" --installtree "$inst"; }
# dkms signs what it builds; the key and certificate are a scratch MOK.
export mok_signing_key=$out/mok.key mok_certificate=$out/mok.der
openssl req -new -x509 -nodes -days 1 -subj "/CN=kpprof test MOK/" -newkey rsa:2048 \
	-keyout "$mok_signing_key" -outform DER -out "$mok_certificate" >/dev/null 2>&1
if dk add -m kpprof -v "$ver" >"$out/add.log" 2>&1; then
	tap_ok "dkms add kpprof/$ver"
else
	tap_diag "$(cat "$out/add.log")"
	tap_fail "dkms add"
	tap_done
fi

kernels=0
for b in /lib/modules/*/build; do
	[ -e "$b/Makefile" ] || continue
	k=$(basename "$(dirname "$b")")
	kernels=$((kernels + 1))
	t0=$(date +%s)
	if nice -n 10 dkms build -m kpprof -v "$ver" -k "$k" --dkmstree "$tree" \
		--sourcetree "$src" --installtree "$inst" >"$out/build-$k.log" 2>&1; then
		ko=$(find "$tree/kpprof/$ver/$k" -name 'kpprof.ko*' | head -1)
		mod=$out/kpprof-$k.ko
		case $ko in
		*.xz) xz -dc "$ko" >"$mod" ;;
		*.gz) gzip -dc "$ko" >"$mod" ;;
		*) cp "$ko" "$mod" ;;
		esac
		vm=$(modinfo -F vermagic "$mod" 2>/dev/null)
		signer=$(modinfo -F signer "$mod" 2>/dev/null)
		mv=$(modinfo -F version "$mod" 2>/dev/null)
		if [ "${vm%% *}" = "$k" ] && [ "$signer" = "kpprof test MOK" ] && [ "$mv" = "$ver" ]; then
			tap_ok "dkms build for $k: ${ko##*/}, vermagic $k, signed by '$signer', version $mv ($(($(date +%s) - t0)) s)"
		else
			tap_fail "dkms build for $k" "vermagic '$vm' signer '$signer' version '$mv' ($ko)"
		fi
	else
		tap_diag "$(tail -20 "$out/build-$k.log")"
		tap_diag "$(tail -20 "$tree/kpprof/$ver/build/make.log" 2>/dev/null)"
		tap_fail "dkms build for $k"
	fi
done
deb=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null | sed -E 's/^linux-image-([^ ,]+).*/\1/')
if [ -n "$deb" ] && [ -e "/lib/modules/$deb/build/Makefile" ]; then
	tap_ok "the headers of linux-image-amd64 ($deb) were among the $kernels kernels"
else
	tap_fail "no headers for linux-image-amd64 ($deb)"
fi
if dk remove -m kpprof -v "$ver" --all >"$out/remove.log" 2>&1 && [ ! -e "$tree/kpprof" ]; then
	tap_ok "dkms remove --all leaves the scratch tree empty"
else
	tap_diag "$(cat "$out/remove.log")"
	tap_fail "dkms remove"
fi
after=$(host_kpprof)
[ "$before" = "$after" ] && tap_ok "no kpprof entry added or changed under /var/lib/dkms or /lib/modules" ||
	tap_fail "kpprof entries under the host's /var/lib/dkms or /lib/modules changed"
tap_done
