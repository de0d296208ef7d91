#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof ctl and stat against the module (VM): rates set and shown, a
# value the module refuses gives one clear line and changes nothing, and
# stat reports the ring, a collector in a pid namespace of its own is
# refused.  Restores the configuration it found.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
tap_plan
orig=$($K ctl) || { tap_fail "kpprof ctl shows the configuration"; tap_done; }
tap_ok "kpprof ctl shows the configuration"
rate() { sed -nE "s/^$1 +([0-9]+).*/\1/p"; }
old_mem=$(rate mem_rate <<<"$orig") old_block=$(rate block_rate <<<"$orig")
old_mutex=$(rate mutex_fraction <<<"$orig") old_cycle=$(rate cycle_period_ms <<<"$orig")

out=$($K ctl --mem-rate 4096 --block-rate 10000 --mutex-fraction 5)
if [ "$(rate mem_rate <<<"$out")" = 4096 ] && [ "$(rate block_rate <<<"$out")" = 10000 ] &&
   [ "$(rate mutex_fraction <<<"$out")" = 5 ] && ! grep -q "(block off)" <<<"$out"; then
	tap_ok "ctl sets mem_rate, block_rate, mutex_fraction (and turns block on)"
else
	tap_diag "$out"
	tap_fail "ctl set"
fi
out=$($K ctl --block-rate 0)
grep -q "(block off)" <<<"$out" && tap_ok "block-rate 0 turns the block profile off" ||
	{ tap_diag "$out"; tap_fail "block-rate 0"; }
err=$($K ctl --cycle-ms 1 2>&1 >/dev/null) && rc=0 || rc=$?
now=$($K ctl)
if [ $rc -ne 0 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q "refused" <<<"$err" &&
   [ "$(rate cycle_period_ms <<<"$now")" = "$old_cycle" ]; then
	tap_ok "cycle-ms 1 refused with one line, nothing changed: $err"
else
	tap_diag "exit $rc: $err" "$now"
	tap_fail "invalid cycle-ms"
fi
out=$($K stat)
grep -qE '^ring_size +[0-9]+ bytes' <<<"$out" && grep -qE '^consumer +none' <<<"$out" &&
	tap_ok "stat shows the ring, no consumer" || { tap_diag "$out"; tap_fail "stat"; }
# refused WHAT MESSAGE: the collector run just before ($rc, $err) exited
# non-zero saying MESSAGE, and left no consumer attached.
refused() {
	local out
	out=$($K stat)
	if [ $rc -ne 0 ] && grep -q "$2" <<<"$err" && grep -qE '^consumer +none' <<<"$out"; then
		tap_ok "$1 is refused: $err"
	else
		tap_diag "exit $rc: $err" "$out"
		tap_fail "$1 is not refused"
	fi
}
# A collector in a pid namespace of its own is refused with a message
# that says why (the records carry the host's pids), and attaches nothing.
tmpd=$(mktemp -d)
err=$(unshare --pid --fork "$K" collect -o "$tmpd" -d 1 2>&1 >/dev/null) && rc=0 || rc=$?
refused "a collector in its own pid namespace" "pid namespace of its own"
# In the host's pid namespace but with another namespace's /proc (a
# mount namespace that mounted its own): refused too, after the attach,
# which it gives back.
unshare --pid --fork --mount --mount-proc sleep 600 </dev/null >/dev/null 2>&1 &
bg=$!
# nsenter -r: our root is a mount of our namespace, its /proc ours
inside() { nsenter --mount --root --target "$bg" "$@"; }
wait_for 30 sh -c "nsenter --mount --root --target $bg cat /proc/1/comm 2>/dev/null | grep -qx sleep" ||
	tap_diag "the other namespace's /proc is not mounted after 30 s"
err=$(inside "$K" collect -o "$tmpd" -d 1 2>&1 >/dev/null) && rc=0 || rc=$?
# the namespace's init ignores SIGTERM from outside, and unshare waits for it
kill -KILL $(pgrep -P "$bg") 2>/dev/null
wait "$bg" 2>/dev/null
refused "a collector with another pid namespace's /proc" "/proc is not of the host's pid namespace"
# Not a proc file system at /proc (a tmpfs with a self link naming us,
# in a mount namespace of its own): refused too.
err=$(unshare --mount sh -c 'mount --make-rprivate / && mount -t tmpfs none /proc &&
	ln -s $$ /proc/self && exec "$0" collect -o "$1" -d 1' "$K" "$tmpd" 2>&1 >/dev/null) && rc=0 || rc=$?
refused "a collector with a tmpfs at /proc" "/proc is not a proc file system"
rm -rf "$tmpd"
$K ctl --mem-rate "$old_mem" --block-rate "$old_block" --mutex-fraction "$old_mutex" >/dev/null
tap_done
