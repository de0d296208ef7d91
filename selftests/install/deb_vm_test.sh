#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# README.md "On a real machine", with the packages, for real, in the VM: in
# a throw-away root (an overlay on the host's read-only root, its upper layer
# a tmpfs of the guest), the commands of the README run as written (without
# sudo): apt installs the three .debs (DKMS builds and installs kpprof.ko
# for the running kernel), modprobe loads that module, kpprof enable, the
# service enabled (systemctl, offline in the chroot), the collector started
# with the unit's command line (no systemd in the VM to start it), a
# program started without LD_PRELOAD is profiled through go tool pprof and
# curl, then kpprof disable, systemctl disable, modprobe -r and apt purge
# leave a root with no trace of kpprof.  Needs build/deb/*.deb (make deb,
# or deb_test.sh on the host).  Repo root.
#
# Building the module inside the VM takes about 6 minutes under TCG, more
# than make check's whole VM budget: by default the kernel headers are
# hidden in the throw-away root, so the package's DKMS hook registers the
# source and skips the build (dkms_test.sh builds it for every kernel on the
# host), and the module loaded is vm-run's.  KPPROF_INSTALL_VM_DKMS=1 runs
# the whole path: DKMS builds and installs in the VM and modprobe loads that
# module (scripts/vm-run --timeout 1200).
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
[ "$(id -u)" = 0 ] && [ -c /dev/kpprof ] ||
	{ tap_skip "packages in the VM" "needs root and the module (run in scripts/vm-run)"; tap_done; }
ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
debs="build/deb/kpprof_${ver}_amd64.deb build/deb/kpprof-shim_${ver}_amd64.deb build/deb/kpprof-dkms_${ver}_all.deb"
for d in $debs; do
	[ -f "$top/$d" ] || { tap_fail "$d missing: run make deb (deb_test.sh does) first"; tap_done; }
done
kver=$(uname -r)
vmko=/run/kpprof-vm/kpprof.ko
o=$(mktemp -d /tmp/kpprof-debvm.XXXXXX)
R=$o/root
srv= wl=
cleanup() {
	[ -z "$wl" ] || { kill "$wl" 2>/dev/null; wait "$wl" 2>/dev/null; }
	[ -z "$srv" ] || { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }
	for m in run tmp dev/pts dev sys proc ""; do umount "$R/$m" 2>/dev/null; done
	# The other VM tests expect vm-run's module.
	grep -q '^kpprof ' /proc/modules || insmod "$vmko" 2>/dev/null
	rm -rf "$o"
}
trap cleanup EXIT
modprobe overlay 2>/dev/null
mkdir -p "$o/up" "$o/work" "$R"
if mount -t overlay overlay -o "lowerdir=/,upperdir=$o/up,workdir=$o/work" "$R"; then
	mount -t proc proc "$R/proc" && mount -t sysfs sys "$R/sys" && mount --bind /dev "$R/dev" &&
		mount --bind /dev/pts "$R/dev/pts" && mount -t tmpfs tmp "$R/tmp" && mount -t tmpfs run "$R/run"
	tap_ok "a throw-away root: overlay of / with a tmpfs upper layer"
else
	tap_fail "overlay mount"
	tap_done
fi
# DKMS builds for the running kernel and the newest installed one; under
# TCG one build is enough: hide the other kernels' configs in the overlay.
for c in "$R"/boot/config-*; do [ "$c" = "$R/boot/config-$kver" ] || rm -f "$c"; done
export HOME=/tmp GOCACHE=/tmp/gocache GOTOOLCHAIN=local PPROF_TMPDIR=/tmp DEBIAN_FRONTEND=noninteractive
in_root() { chroot "$R" /bin/bash -c "cd '$top' && $1"; }
step() { # NAME COMMAND: run a README command in the root
	if in_root "$2" >"$o/step.out" 2>&1; then
		tap_ok "$1: $2"
	else
		tap_diag "$(tail -25 "$o/step.out")"
		tap_fail "$1: $2"
	fi
}

# Secure Boot: signing a module built by hand with one's own MOK (in the
# root's copy of the tree: the overlay keeps the host's kpprof.ko as it is).
# mokutil needs UEFI variables, which the VM has not.
tap_skip "mokutil --sb-state" "no UEFI in the VM"
tap_skip "mokutil --import /var/lib/dkms/mok.pub" "no UEFI in the VM"
step "make a MOK" 'openssl req -new -x509 -newkey rsa:2048 -nodes -days 36500 -subj "/CN=my kpprof MOK/" -outform DER -keyout MOK.priv -out MOK.der'
step "sign the module" '/lib/modules/$(uname -r)/build/scripts/sign-file sha256 MOK.priv MOK.der build/module/$(uname -r)/kpprof.ko'
step "check the signature" 'modinfo -F signer build/module/$(uname -r)/kpprof.ko | grep -qx "my kpprof MOK"'
# man-db's trigger re-indexes every manual page: minutes under TCG.
rm -f "$R/var/lib/man-db/auto-update"
full=${KPPROF_INSTALL_VM_DKMS:-0}
if [ "$full" != 1 ]; then
	# Where dkms install would put its build: make module's, from the host.
	rm -f "$R/lib/modules/$kver/build"
	install -D -m 0644 "$top/build/module/$kver/kpprof.ko" "$R/lib/modules/$kver/updates/dkms/kpprof.ko"
	chroot "$R" depmod "$kver"
fi
# The README's commands, in its order.
t0=$(date +%s)
step "install" "yes | apt install ./build/deb/kpprof_0.1.0_amd64.deb ./build/deb/kpprof-shim_0.1.0_amd64.deb ./build/deb/kpprof-dkms_0.1.0_all.deb"
tap_diag "apt install took $(($(date +%s) - t0)) s"
if [ "$full" = 1 ]; then
	step "DKMS built and installed the module" "dkms status kpprof | grep -q 'kpprof/$ver, $kver, x86_64: installed'"
else
	step "DKMS registered the source" "dkms status kpprof | grep -q 'kpprof/$ver: added'"
fi
if [ "$full" = 1 ]; then
	[ -s "$R/var/lib/dkms/mok.pub" ] && tap_ok "DKMS made /var/lib/dkms/mok.pub, the key the README enrolls" ||
		tap_fail "no /var/lib/dkms/mok.pub"
fi
if [ "$full" = 1 ]; then
	# vm-run's module makes way for the packaged one.
	rmmod kpprof
	step "load" "modprobe kpprof"
	v=$(cat /sys/module/kpprof/version 2>/dev/null)
	[ "$v" = "$ver" ] && tap_ok "the loaded module is the DKMS-built one (version $v)" ||
		tap_fail "loaded module version '$v', want $ver"
else
	rmmod kpprof
	step "load (make module's build, placed where DKMS installs)" "modprobe kpprof"
	tap_skip "the loaded module is the DKMS-built one" "KPPROF_INSTALL_VM_DKMS=1 (6 minutes under TCG)"
fi
# The udev rule (no udevd in the VM: udevadm test runs the rules).
in_root "udevadm test --action=add /sys/class/misc/kpprof" >"$o/udev.out" 2>&1
grep -q '60-kpprof.rules' "$o/udev.out" && grep -qiE 'mode.*0?666|0666' "$o/udev.out" &&
	tap_ok "udev: 60-kpprof.rules gives /dev/kpprof mode 0666 (producer_gid -1)" ||
	{ tap_diag "$(grep -iE 'kpprof|mode|group' "$o/udev.out" | tail -15)"; tap_fail "udev rule"; }
step "enable system-wide capture" "kpprof enable"
grep -qx "/usr/lib/x86_64-linux-gnu/kpprof/libkpprof.so" "$R/etc/ld.so.preload" &&
	tap_ok "/etc/ld.so.preload of the root names the packaged shim" || tap_fail "ld.so.preload"
# In a chroot without systemd, "--now" fails (nothing to start): the
# enable half is judged by its symbolic link; the collector is started below.
in_root "systemctl enable --now kpprof" >"$o/sysd.out" 2>&1
tap_diag "systemctl enable --now kpprof: $(tr '\n' ' ' <"$o/sysd.out")"
[ -L "$R/etc/systemd/system/multi-user.target.wants/kpprof.service" ] &&
	tap_ok "kpprof.service enabled (multi-user.target.wants)" || tap_fail "service not enabled"
# No systemd in the VM: start what the unit starts.
unit=$R/lib/systemd/system/kpprof.service
cmd=$(sed -n 's/^ExecStart=//p' "$unit")
(
	set -a
	for kv in $(sed -n 's/^Environment=//p' "$unit"); do export "${kv?}"; done
	. "$R/etc/default/kpprof"
	eval "set -- $cmd"
	exec chroot "$R" "$@"
) >"$o/serve.out" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q serving "$o/serve.out" && break; sleep 0.1; done
grep -q 'serving http://127.0.0.1:6061' "$o/serve.out" && tap_ok "the unit's command serves on 127.0.0.1:6061: $cmd" ||
	tap_fail "collector" "$(cat "$o/serve.out")"
# A program that knows nothing of kpprof (no LD_PRELOAD), alive while the
# profile is scraped (the collector frees an exited process's blocks).
# The heap profile shows its blocks once a cycle that saw them has ended.
# (chroot, bash and env each exec the next: $! is wl_heap's own pid.)
chroot "$R" /bin/bash -c "cd '$top' && exec env -u LD_PRELOAD build/selftests/install/wl_heap 64 600" \
	</dev/null >/dev/null 2>&1 &
wl=$!
for _ in $(seq 600); do
	curl -s 'http://127.0.0.1:6061/debug/pprof/heap?debug=1' | grep -q install_wl_leaf && break
	sleep 0.1
done
step "scrape with go tool pprof" "go tool pprof -top http://127.0.0.1:6061/debug/pprof/heap > /tmp/top.txt && grep -q install_wl_leaf /tmp/top.txt"
kill "$wl" 2>/dev/null
wait "$wl" 2>/dev/null
wl=
step "scrape with curl" "curl -s 'http://127.0.0.1:6061/debug/pprof/heap?debug=1' | head | grep -q '^heap profile: '"
step "disable system-wide capture" "kpprof disable"
[ ! -e "$R/etc/ld.so.preload" ] && tap_ok "/etc/ld.so.preload gone again" || tap_fail "ld.so.preload left"
in_root "systemctl disable --now kpprof" >"$o/sysd.out" 2>&1
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/kpprof.service" ] &&
	tap_ok "systemctl disable --now kpprof: the link is gone" || tap_fail "service still enabled"
kill "$srv"
wait "$srv"
srv=
step "unload" "modprobe -r kpprof"
grep -q '^kpprof ' /proc/modules && tap_fail "kpprof still loaded" || tap_ok "kpprof unloaded"
step "uninstall" "yes | apt purge kpprof kpprof-shim kpprof-dkms"
# What this test placed itself (default mode) is not the packages' to remove.
[ "$full" = 1 ] || rm -f "$R/lib/modules/$kver/updates/dkms/kpprof.ko"
left=$(cd "$o/up" && find . \( -path ./var -o -path ./tmp -o -path ./root -o -path ./lib/modules \
	-o -path ".$top" \) -prune -o -name '*kpprof*' -print 2>/dev/null)
[ -z "$left" ] && tap_ok "no file named kpprof left in the root (besides /var, package manager state)" ||
	tap_fail "left behind" "$left"
if [ "$full" = 1 ]; then
	ls "$R/lib/modules/$kver/updates/dkms/" 2>/dev/null | grep -q kpprof &&
		tap_fail "the DKMS module is still installed" || tap_ok "the DKMS module is uninstalled"
fi
[ -z "$(find "$R/var/lib/dkms" -name 'kpprof*' 2>/dev/null)" ] && tap_ok "DKMS forgot kpprof" ||
	tap_fail "DKMS still knows kpprof"
tap_done
