#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The whole system-wide story, in the VM (root, module loaded), as a person
# following README.md "On a real machine" would live it:
#   make install (into /tmp/kp, and the guest's /etc: a writable copy of the
#   host's, bind-mounted), the collector started with kpprof.service's own
#   command line, environment and capability bounding set, `kpprof enable`,
#   unrelated programs started WITHOUT LD_PRELOAD (some excluded through
#   /etc/kpprof/exclude by comm and by path, one with KPPROF_DISABLE=1),
#   profiles fetched over HTTP and judged, the collector restarted while the
#   shim is in ld.so.preload (it must not profile itself), `kpprof disable`
#   leaves /etc/ld.so.preload as it was, and programs started after it are
#   not profiled.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
tap_plan

[ "$(id -u)" = 0 ] && [ -c /dev/kpprof ] ||
	{ tap_skip "system-wide story" "needs root and the module (run in scripts/vm-run)"; tap_done; }
out=$(mktemp -d /tmp/kpprof-sw.XXXXXX)
chmod 755 "$out"
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
prefix=$out/kp
wl=$out/wl
srv=
cleanup() {
	[ -z "$srv" ] || { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }
	[ ! -e /etc/ld.so.preload ] || grep -q libkpprof /etc/ld.so.preload 2>/dev/null &&
		"$prefix/bin/kpprof" disable >/dev/null 2>&1
	mountpoint -q /etc && umount /etc
	rm -rf "$out"
}
trap cleanup EXIT

# A writable /etc: the host's root is read-only in the guest.
had_preload=no
[ -e /etc/ld.so.preload ] && had_preload=yes && cp /etc/ld.so.preload "$out/preload.orig"
cp -a /etc "$out/etc" && mount --bind "$out/etc" /etc &&
	tap_ok "a writable copy of /etc bind-mounted" || { tap_fail "bind-mount /etc"; tap_done; }

# make install into the guest: binaries under $prefix, configuration in /etc.
if make -s -C "$top" install PREFIX="$prefix" DKMSDIR="$prefix/src" >"$out/install.log" 2>&1 &&
	[ -x "$prefix/bin/kpprof" ] && [ -f /etc/default/kpprof ] && [ -f /etc/kpprof/exclude ]; then
	tap_ok "make install PREFIX=$prefix (configuration in /etc)"
else
	tap_diag "$(tail -5 "$out/install.log")"
	tap_fail "make install"
	tap_done
fi
K=$prefix/bin/kpprof
unit=$prefix/lib/systemd/system/kpprof.service

# The programs: one binary under four names, and a real one (python3).
mkdir -p "$wl"
for n in wl_profiled wl_excl_comm wl_excl_path wl_disabled wl_after; do
	cp "$top/build/selftests/install/wl_heap" "$wl/$n"
done
cat >>/etc/kpprof/exclude <<EOT
wl_excl_comm
$wl/wl_excl_path
EOT

# The collector, as systemd would start it: the unit's Environment= lines,
# then its EnvironmentFile= (which wins), then ExecStart= with systemd's
# ${VAR} / $VAR expansion, under its CapabilityBoundingSet= and
# NoNewPrivileges=.  The file system sandbox needs systemd itself (see
# systemd-analyze in unit_test.sh).
start_collector() {
	local envf cmd caps
	(
		set -a
		for kv in $(sed -n 's/^Environment=//p' "$unit"); do export "${kv?}"; done
		envf=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
		# shellcheck disable=SC1090
		[ ! -r "$envf" ] || . "$envf"
		set +a
		cmd=$(sed -n 's/^ExecStart=//p' "$unit")
		caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' |
			sed -E 's/cap_/+/g; s/ +/,/g')
		eval "set -- $cmd"
		exec setpriv --bounding-set=-all,"$caps" --inh-caps=-all --no-new-privs "$@"
	) >"$out/serve-$1.out" 2>&1 &
	srv=$!
	wait_for 60 grep -q serving "$out/serve-$1.out"
}
if start_collector 1; then
	tap_ok "collector started with the unit's command line: $(sed -n 's/^ExecStart=//p' "$unit")"
else
	tap_diag "$(cat "$out/serve-1.out")"
	tap_fail "collector did not start"
	tap_done
fi
. /etc/default/kpprof
url=http://$KPPROF_LISTEN/debug/pprof
grep -q "serving http://$KPPROF_LISTEN" "$out/serve-1.out" &&
	tap_ok "it listens on KPPROF_LISTEN of /etc/default/kpprof ($KPPROF_LISTEN)" ||
	tap_fail "listen address" "$(cat "$out/serve-1.out")"
grep CapEff "/proc/$srv/status" | grep -q 00000140000800c4 &&
	tap_ok "its capabilities: CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE, CAP_SETUID, CAP_SETGID only" ||
	tap_fail "collector capabilities" "$(grep Cap "/proc/$srv/status")"

# System-wide capture on.
if "$K" enable >"$out/enable.out" 2>&1 &&
	grep -qx "$prefix/lib/$(gcc -print-multiarch)/kpprof/libkpprof.so" /etc/ld.so.preload; then
	tap_ok "kpprof enable: /etc/ld.so.preload names the installed shim"
else
	tap_diag "$(cat "$out/enable.out") / $(cat /etc/ld.so.preload 2>&1)"
	tap_fail "kpprof enable"
fi

# Unrelated programs, started without LD_PRELOAD.
run() { # NAME [VAR=VALUE...]: run NAME from $wl without LD_PRELOAD, print its pid
	local n=$1
	shift
	# exec'ed straight from a subshell of this (shim-less) shell: through
	# env(1) the pid's first image would be env's, profiled in its own right.
	(
		unset LD_PRELOAD
		[ $# -eq 0 ] || export "$@"
		exec "$wl/$n" 64 0
	) &
	echo $!
	wait $!
}
pid_prof=$(run wl_profiled)
pid_comm=$(run wl_excl_comm)
pid_path=$(run wl_excl_path)
pid_dis=$(run wl_disabled KPPROF_DISABLE=1)
env -u LD_PRELOAD python3 -c 'import os; print(os.getpid()); x = [bytearray(1 << 20) for _ in range(64)]' \
	>"$out/py.pid"
pid_py=$(cat "$out/py.pid")

# The workloads have exited when they are asked about: an exited process
# holds nothing (its heap ends with it), so their allocations are read.
heap_top() { # PID: go tool pprof's top of alloc_space for PID, in MB
	go tool pprof -symbolize=none -sample_index=alloc_space -unit=MB -top \
		"$url/heap?gc=1&pid=$1" 2>&1
}
t=$(heap_top "$pid_prof")
mb=$(awk '/install_wl_leaf/ { sub(/MB/, "", $4); print int($4) }' <<<"$t")
if grep -q install_wl_outer <<<"$t" && [ -n "$mb" ] && [ "$mb" -ge 40 ] && [ "$mb" -le 90 ]; then
	tap_ok "wl_profiled (no LD_PRELOAD) is profiled: install_wl_leaf/outer allocated ${mb} MB of 64 (go tool pprof over HTTP)"
else
	tap_diag "$t"
	tap_fail "wl_profiled not profiled as expected"
fi
raw=$(go tool pprof -symbolize=none -raw "$url/allocs?pid=$pid_prof" 2>&1)
grep -q 'alloc_space' <<<"$raw" && grep -q install_wl_leaf <<<"$raw" &&
	tap_ok "allocs of wl_profiled read by go tool pprof -raw" || { tap_diag "$raw"; tap_fail "allocs -raw"; }
# alloc_space, not inuse: python3 frees its bytearrays at exit, and whether
# the profile already shows that depends on the cycle timing.
t=$(go tool pprof -symbolize=none -sample_index=alloc_space -unit=MB -top "$url/allocs?pid=$pid_py" 2>&1)
mb=$(sed -nE 's/.* of ([0-9.]+)MB total.*/\1/p' <<<"$t")
if [ -n "$mb" ] && awk -v m="$mb" 'BEGIN { exit !(m >= 40) }'; then
	tap_ok "python3 (no LD_PRELOAD) is profiled: ${mb} MB allocated (it allocates 64 MiB of bytearrays)"
else
	tap_diag "$t"
	tap_fail "python3 not profiled" "'$mb' MB allocated, expected at least 40"
fi

not_profiled() { # NAME PID
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' "$url/heap?gc=1&pid=$2")
	[ "$code" = 404 ] && tap_ok "$1 is not profiled (HTTP 404 for its pid)" ||
		tap_fail "$1 was profiled" "HTTP $code for pid $2"
}
not_profiled "wl_excl_comm (comm in /etc/kpprof/exclude)" "$pid_comm"
not_profiled "wl_excl_path (path in /etc/kpprof/exclude)" "$pid_path"
not_profiled "wl_disabled (KPPROF_DISABLE=1)" "$pid_dis"
not_profiled "the collector itself" "$srv"

# The collector restarted while the shim is in /etc/ld.so.preload: it loads
# the shim, which must pass through in it.
kill "$srv"
wait "$srv"
srv=
if start_collector 2; then
	grep -q libkpprof "/proc/$srv/maps" && loaded="loads the shim" || loaded="does not even load the shim"
	pid_prof=$(run wl_profiled)
	t=$(heap_top "$pid_prof")
	grep -q install_wl_leaf <<<"$t" && tap_ok "collector restarted under ld.so.preload ($loaded): still profiles" ||
		{ tap_diag "$t"; tap_fail "restarted collector does not profile"; }
	not_profiled "the restarted collector itself" "$srv"
	t=$(go tool pprof -symbolize=none -raw "$url/allocs" 2>&1)
	if grep -qE "comm:\[?kpprof|pid:\[?$srv\b" <<<"$t"; then
		tap_fail "the collector's own samples are in the merged profile"
	else
		tap_ok "no sample of the collector in the merged allocs profile"
	fi
else
	tap_diag "$(cat "$out/serve-2.out")"
	tap_fail "collector did not restart under ld.so.preload"
fi

# System-wide capture off.
if "$K" disable >"$out/disable.out" 2>&1; then
	if [ $had_preload = yes ]; then
		cmp -s /etc/ld.so.preload "$out/preload.orig" &&
			tap_ok "kpprof disable restores /etc/ld.so.preload byte for byte" ||
			tap_fail "kpprof disable left $(cat /etc/ld.so.preload)"
	else
		[ ! -e /etc/ld.so.preload ] &&
			tap_ok "kpprof disable removes the /etc/ld.so.preload it created" ||
			tap_fail "kpprof disable left /etc/ld.so.preload: $(cat /etc/ld.so.preload)"
	fi
else
	tap_fail "kpprof disable" "$(cat "$out/disable.out")"
fi
pid_after=$(run wl_after)
not_profiled "wl_after (started after kpprof disable)" "$pid_after"

kill "$srv"
wait "$srv"
rc=$?
srv=
[ $rc = 0 ] && tap_ok "collector exits 0 on SIGTERM" || tap_fail "collector exit status $rc"
make -s -C "$top" uninstall PREFIX="$prefix" DKMSDIR="$prefix/src" >/dev/null 2>&1
left=$(find "$prefix" /etc/kpprof /etc/default/kpprof /etc/modprobe.d/kpprof.conf -type f 2>/dev/null)
[ -z "$left" ] && tap_ok "make uninstall leaves no file" || tap_fail "make uninstall left: $left"
tap_done
