#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A profiled program outlives its collector (VM, repo root): a workload
# under the shim samples every allocation (KPPROF_MEM_RATE=1) without
# pause while `kpprof serve` is stopped by SIGTERM, started again, killed
# by SIGKILL and started again.  It must keep sampling with no collector
# (a module that zapped every producer's ring at the consumer's detach,
# before 0dc4c6f, killed it with SIGBUS at its next record), each new
# serve must see the records it took after the restart, the records it
# took while no collector ran must reach the next one or be counted lost,
# and it exits 0.
#
# The workload (workloads/restart_churn) allocates in phaseK() in phase K
# and moves on at each SIGUSR1, saying when a phase has taken 2000
# samples and how many iterations the one before took, so every count
# below is of samples taken at a known time:
#   0 under serve 1 | SIGTERM | 1 no collector | serve 2 | 2 under serve 2
#   | SIGKILL | 3 no collector | serve 3 | 4 under serve 3 | 5 stop.
# Phase 1's records all go to serve 2, phases 3 and 4's all to serve 3
# (what a collector left unread in its ring, the next one reads), so each
# of those serves' count of the phase, plus the losses it was told of,
# is what the workload did.  The workload samples no faster than an
# attached collector drains, so the first gap loses nothing (the module
# keeps the records for the next collector); the second lasts until its
# ring has overflowed, and serve 3 must be told of those losses (a lost
# allocation's free sends no record: each allocation missing is one
# record counted lost).  Every wait is for a condition, with generous
# bounds (TCG on a loaded 2-core host).
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
W=$top/build/selftests/collector/workloads
SHIM=$top/build/user/shim/libkpprof.so
out=$(mktemp -d /tmp/kpprof-restart.XXXXXX)
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out
tap_plan
# bash reports each job a signal ended ("Killed", "Bus error") on stderr,
# whenever it reaps it: as '#' lines, never mistaken for TAP.
exec 2> >(sed -u 's/^/# /' >&2)
tap_need_device
# The VM's init leaves loopback down; serving needs it.
ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null || true
# serve learns loopback clients' uids by sock_diag; the VM's init cannot autoload it.
modprobe -q tcp_diag 2>/dev/null || true

srv='' url='' wl='' wl_first=0 n_srv=0
# Each serve restores the rates it found, but a killed one cannot: ours
# are put back at the end.
orig=$($K ctl)
rate() { sed -nE "s/^$1 +([0-9]+).*/\1/p" <<<"$orig"; }
# shellcheck disable=SC2317  # called by the trap
cleanup() {
	# by pid: a bare wait would wait for the sed behind stderr too
	for p in $wl $srv; do
		kill -KILL "$p" && wait "$p"
	done 2>/dev/null
	$K ctl --mem-rate "$(rate mem_rate)" --block-rate "$(rate block_rate)" \
		--mutex-fraction "$(rate mutex_fraction)" >/dev/null 2>&1
	rm -rf "$out"
}
trap cleanup EXIT
# The heap profile's flag must be on for the shim's records to be taken
# (KPPROF_MEM_RATE only replaces the rate); its rate does not matter.
[ "$(rate mem_rate)" != 0 ] || $K ctl --mem-rate 524288 >/dev/null

consumer() { $K stat | sed -nE 's/^consumer +//p'; }
attached() { [ "$(consumer)" = attached ]; }
detached() { [ "$(consumer)" = none ]; }
# alive PID: running, not a zombie
alive() { [ -r "/proc/$1/stat" ] && ! awk '{ exit $3 != "Z" }' "/proc/$1/stat"; }
# signame STATUS: what a shell's exit status > 128 says
signame() { echo "SIG$(kill -l $(($1 - 128)) 2>/dev/null) (signal $(($1 - 128)))"; }

# start_serve: a new serve, attached; 1 (after tap_fail) if not
start_serve() {
	n_srv=$((n_srv + 1))
	$K serve --listen 127.0.0.1:0 >"$out/serve$n_srv.out" 2>&1 &
	srv=$!
	if ! wait_for 120 grep -q serving "$out/serve$n_srv.out" || ! wait_for 60 attached; then
		tap_diag "$(cat "$out/serve$n_srv.out")" "consumer: $(consumer)"
		tap_fail "serve $n_srv starts and attaches"
		return 1
	fi
	url=$(sed -nE 's/.*serving (http:[^ ]*)/\1/p' "$out/serve$n_srv.out")
	tap_ok "serve $n_srv starts and attaches ($url)"
}

# stop_serve SIG: serve stops; the module has no consumer before we go on
# (the workload's next record is after the detach, as pring_detach_test's)
stop_serve() {
	local rc want=0

	kill "-$1" "$srv"
	if ! wait_for 120 detached; then
		tap_fail "serve $n_srv stops on SIG$1" "still a consumer 120 s later"
		return 1
	fi
	wait "$srv" 2>/dev/null
	rc=$?
	srv=
	[ "$1" = KILL ] && want=137
	if [ $rc = $want ] && ! grep -q Sanitizer "$out/serve$n_srv.out"; then
		tap_ok "serve $n_srv stops on SIG$1 (status $rc), no consumer left"
	else
		tap_diag "$(cat "$out/serve$n_srv.out")"
		tap_fail "serve $n_srv stops on SIG$1" "exit status $rc, expected $want (or a sanitizer report)"
	fi
}

# start_wl FIRST: a workload from phase FIRST; 1 if it does not take its
# first samples
start_wl() {
	wl_first=$1
	: >"$out/wl.out"
	KPPROF_MEM_RATE=1 LD_PRELOAD=$SHIM "$W/restart_churn" 5 "$1" >"$out/wl.out" 2>&1 &
	wl=$!
	wait_for 120 acked_or_gone "$1" && acked "$1"
}

acked() { grep -q "^phase $1 running" "$out/wl.out"; }
acked_or_gone() { acked "$1" || ! alive "$wl"; }

# reap: the workload is gone, or is made to go; $why says how it went
reap() {
	local rc

	alive "$wl" && kill -KILL "$wl"
	wait "$wl"
	rc=$?
	wl=
	if [ $rc -gt 128 ]; then
		why="the workload died of $(signame $rc)"
	else
		why="the workload exited with status $rc"
	fi
}

# phase K: the workload moves on to phase K and takes 2000 samples in it
phase() {
	kill -USR1 "$wl" 2>/dev/null
	wait_for 120 acked_or_gone "$1" && acked "$1"
}
# ran K: iterations of phase K (known once phase K+1 runs, or at the end)
ran() {
	sed -nE "s/^phase $(($1 + 1)) running \\(phase $1 ran ([0-9]+)\\)/\\1/p; s/^ran $1 ([0-9]+)$/\\1/p" \
		"$out/wl.out" | head -n1
}

# scrape FILE: the current serve's heap of the workload, up to date (gc=1)
scrape() {
	[ "$(curl -s -m 300 -o "$1" -w '%{http_code}' "${url}heap?pid=$wl&gc=1")" = 200 ]
}
# count FILE FUNC: allocations (alloc_objects; rate 1: not scaled) whose
# leaf frame is FUNC
count() {
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk -v fn="$2" '
		/^Samples:/ { s = 1; next }
		/^Locations/ { s = 0; l = 1; next }
		/^Mappings/ { l = 0 }
		s && $1 ~ /^[0-9]+$/ { split($0, a, ":"); split(a[2], ids, " ")
			ns++; v[ns] = $1; leaf[ns] = ids[1] }
		l && /^ *[0-9]+: 0x/ { id = $1; sub(":", "", id); name[id] = $4 }
		END { for (i = 1; i <= ns; i++) if (name[leaf[i]] == fn) t += v[i]; print t + 0 }'
}
# lost FILE: the records the collector was told were lost (in producer
# rings, and refused by its own ring), "emptied" the times a ring was
# emptied (its records lost uncounted); "LOST EMPTIED"
lost() {
	go tool pprof -comments "$1" 2>/dev/null | awk '
		/producer rings lost/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "lost" && $(i - 2) == "producer") l = $(i + 1) + 0
				if ($i == "(emptied") { e = $(i + 1); sub(")", "", e) }
				if ($i == "drops") d = $(i + 1) + $(i + 5) + $(i + 7)
			}
		} END { print l + d, e + 0 }'
}
# ring_lost: records producers lost in their full rings, over the
# module's life (kpprof stat)
ring_lost() { $K stat | awk '/^ring lost full/ { print $4 }'; }
ring_lost_above() { [ "$(ring_lost)" -gt "$1" ]; }
# sees N FUNC: the current serve counts samples of FUNC (heap N.pb.gz)
sees() { scrape "$out/$1.pb.gz" && [ "$(count "$out/$1.pb.gz" "$2")" -gt 0 ]; }

# balance FILE K N [LOST]: phase K's N allocations are in FILE or counted
# lost (two records an iteration, alloc and free: the allocations lost are
# at most the records lost), none twice, no ring emptied; with LOST, some
# were counted lost; sets c l e
balance() {
	scrape "$1" || return 1
	c=$(count "$1" "phase$2")
	read -r l e < <(lost "$1")
	[ "$e" = 0 ] && [ "$c" -le "$3" ] && [ $((c + l)) -ge "$3" ] && { [ -z "${4:-}" ] || [ "$l" -gt 0 ]; }
}
# accounted NAME SERVE K [LOST]: phase K's samples all reached SERVE, or
# were counted lost there (heap NAME.pb.gz, scraped once K is over; a
# backlog the serve has not read yet may take a while); with LOST, the
# losses of the gap before SERVE must be among them
accounted() {
	local f=$out/$1.pb.gz n c='' l='' e=''

	n=$(ran "$3")
	if [ -n "$n" ] && wait_for 120 balance "$f" "$3" "$n" "${4:-}"; then
		tap_ok "serve $2 has phase $3's samples: $c of $n, $l records counted lost"
	else
		tap_diag "$(go tool pprof -comments "$f" 2>&1)" "$(cat "$out/wl.out")"
		tap_fail "serve $2 has phase $3's samples" \
			"$c of '$n' allocations, $l records counted lost, rings emptied '$e' times"
	fi
}

# --- SIGTERM ---------------------------------------------------------
start_serve || tap_done
if ! start_wl 0; then
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "the workload starts sampling"
	tap_done
fi
if wait_for 300 sees s1 phase0; then
	tap_ok "serve 1 sees the workload's samples"
else
	tap_diag "$(go tool pprof -symbolize=none -raw "$out/s1.pb.gz" 2>&1 | head -40)"
	tap_fail "serve 1 sees the workload's samples"
fi
stop_serve TERM || tap_done
if phase 1; then
	tap_ok "the workload keeps sampling after serve's SIGTERM (2000 samples, no collector)"
else
	reap
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "the workload keeps sampling after serve's SIGTERM" "$why"
fi
start_serve || tap_done
if [ -n "$wl" ] && phase 2 && wait_for 300 sees s2 phase2; then
	tap_ok "serve 2 sees samples the workload took after the restart"
	accounted s2-gap 2 1
elif [ -n "$wl" ]; then
	why="phase 2 not seen"
	alive "$wl" || reap
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "serve 2 sees samples the workload took after the restart" "$why"
fi
# A workload that died above cannot show the rest: a new one, for SIGKILL.
if [ -z "$wl" ] || ! alive "$wl"; then
	[ -n "$wl" ] && reap
	if start_wl 2 && wait_for 300 sees s2 phase2; then
		tap_diag "a new workload for the SIGKILL case"
	else
		tap_diag "$(cat "$out/wl.out")"
		tap_fail "a new workload for the SIGKILL case"
		tap_done
	fi
fi

# --- SIGKILL ---------------------------------------------------------
# This gap lasts until the workload has lost records: the module's ring
# keeps its records for the next collector up to its uid's share, then
# its own ring fills.  Those losses must reach serve 3.
lost0=$(ring_lost)
stop_serve KILL || tap_done
if phase 3; then
	tap_ok "the workload keeps sampling after serve's SIGKILL (2000 samples, no collector)"
else
	reap
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "the workload keeps sampling after serve's SIGKILL" "$why"
	tap_done
fi
if wait_for 300 ring_lost_above "$lost0"; then
	tap_ok "with no collector its ring fills: $(($(ring_lost) - lost0)) records counted lost so far"
else
	tap_diag "$($K stat)"
	tap_fail "with no collector its ring fills" "no loss counted 300 s later"
fi
start_serve || tap_done
if phase 4 && wait_for 300 sees s3 phase4; then
	tap_ok "serve 3 sees samples the workload took after the restart"
	accounted s3-gap 3 3 lost
else
	why="phase 4 not seen"
	alive "$wl" || reap
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "serve 3 sees samples the workload took after the restart" "$why"
	tap_done
fi
# Phase 5: it stops allocating and says what it did; then it exits.
kill -USR1 "$wl"
if wait_for 120 grep -q '^ran 4 ' "$out/wl.out"; then
	accounted s3-end 3 4
else
	reap
	tap_fail "serve 3 has phase 4's samples" "the workload did not stop: $why"
	tap_done
fi
kill -USR1 "$wl"
wait "$wl"
rc=$?
wl=
if [ $rc = 0 ]; then
	tap_ok "the workload exits 0 ($([ "$wl_first" = 0 ] && echo "through both restarts" || echo "the SIGKILL one"))"
else
	tap_diag "$(cat "$out/wl.out")"
	tap_fail "the workload exits 0" "status $rc$([ $rc -gt 128 ] && echo ": $(signame $rc)")"
fi
stop_serve TERM
tap_done
