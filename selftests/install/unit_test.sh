#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof.service passes `systemd-analyze verify` with no message at all
# (installed with a real prefix in a scratch directory, so its ExecStart
# exists and its Documentation= man pages resolve to the installed ones),
# keeps the hardening the README and the unit promise, and the manual
# pages format without warnings and describe every verb and option that
# `kpprof --help` and `kpprof VERB --help` offer.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
tap_plan
out=$(mktemp -d /tmp/kpprof-unit.XXXXXX)
trap 'rm -rf "$out"' EXIT
p=$out/usr
make -s install PREFIX="$p" SYSCONFDIR="$out/etc" DKMSDIR="$out/src" >"$out/install.log" 2>&1 ||
	{ tap_diag "$(cat "$out/install.log")"; tap_fail "make install"; tap_done; }
unit=$p/lib/systemd/system/kpprof.service

v=$(MANPATH=$p/share/man: systemd-analyze verify "$unit" 2>&1)
rc=$?
[ $rc = 0 ] && [ -z "$v" ] && tap_ok "systemd-analyze verify: clean" ||
	{ tap_diag "$v"; tap_fail "systemd-analyze verify (exit $rc)"; }
# The check can fail: a misspelt key is reported.
sed 's/^ProtectHome=/ProtectHom=/' "$unit" >"$out/bad.service"
v=$(MANPATH=$p/share/man: systemd-analyze verify "$out/bad.service" 2>&1)
grep -q "Unknown key 'ProtectHom'" <<<"$v" && tap_ok "verify reports a misspelt key (the check works)" ||
	tap_fail "verify misses a misspelt key" "$v"
s=$(systemd-analyze security --offline=true "$unit" 2>&1 | grep 'Overall exposure')
tap_diag "systemd-analyze security --offline: ${s#→ }"
for want in 'CapabilityBoundingSet=CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_CHECKPOINT_RESTORE CAP_SETUID CAP_SETGID' \
	'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=read-only' \
	'DevicePolicy=closed' 'DeviceAllow=/dev/kpprof rw' 'Environment=KPPROF_DISABLE=1' \
	'SystemCallFilter=@system-service' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK' \
	"EnvironmentFile=-$out/etc/default/kpprof" 'MemoryDenyWriteExecute=yes'; do
	grep -qxF "$want" "$unit" && tap_ok "unit: $want" || tap_fail "unit lacks $want"
done
# Every setting in [Service] has a comment above it or on its block.
undoc=$(awk '/^\[Service\]/ { s = 1; next } /^\[/ { s = 0 }
	s && /^#/ { c = 1; next } s && /^$/ { c = 0; next }
	s && /^[A-Za-z]/ && !c { print }' "$unit")
[ -z "$undoc" ] && tap_ok "every [Service] setting is under a comment saying why" ||
	tap_fail "settings without a reason" "$undoc"
grep -q '^\[Install\]' "$unit" && ! grep -q '^Alias=' "$unit" && tap_ok "unit installable (WantedBy)" ||
	tap_fail "[Install]"

for m in man1/kpprof.1 man7/libkpprof.7; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p/share/man/$m" 2>&1 >/dev/null)
	[ -z "$w" ] && tap_ok "man $m formats without warnings" || tap_fail "man $m" "$w"
done
man1=$(MANWIDTH=200 man -l "$p/share/man/man1/kpprof.1" 2>/dev/null)
K=$top/build/user/kpprof/kpprof
verbs=$("$K" --help | awk '/^Verbs:/ { v = 1; next } v && !NF { exit } v { print $1 }')
missing=
for verb in $verbs; do
	grep -q "kpprof $verb" <<<"$man1" || missing+=" $verb"
	for opt in $("$K" "$verb" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		[ "$opt" = --help ] && continue
		grep -qF -- "$opt" <<<"$man1" || missing+=" $verb$opt"
	done
done
[ -n "$verbs" ] && [ -z "$missing" ] &&
	tap_ok "kpprof.1 describes every verb and option of --help ($(echo $verbs))" ||
	tap_fail "kpprof.1 lacks:$missing"
man7=$(MANWIDTH=200 man -l "$p/share/man/man7/libkpprof.7" 2>/dev/null)
# test-mode knobs (KPPROF_TEST_*) are for the project's own tests, not the manual
envs=$(grep -oE '^\| `KPPROF_[A-Z_]+`' "$top/user/shim/README.md" | tr -d '|` ' | sort -u | grep -v '^KPPROF_TEST_')
missing=
for e in $envs KPPROF_DISABLE; do grep -q "$e" <<<"$man7" || missing+=" $e"; done
[ -z "$missing" ] && tap_ok "libkpprof.7 describes the shim's environment ($(echo $envs KPPROF_DISABLE))" ||
	tap_fail "libkpprof.7 lacks:$missing"
tap_done
