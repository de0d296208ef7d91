#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 15, "Proof", through the module (run in the VM, kpprof.ko loaded):
# torture.c (see torture_host_test.sh for what it does) under the shim at
# rate 1 (heap, block and mutex) for SECS seconds (default 90), records in
# the producer rings, shim_reader the consumer.  The records are counted as
# they stream (nothing stored: the guest's /tmp is RAM).  Asserts:
#   - no hang (timeout), no crash, every child ended normally: "torture: ok"
#     (a raw-filtered child that met a syscall of the shim's own would have
#     trapped and named it);
#   - the module rejected nothing;
#   - losses accounted: the consumer's drops (dropped = consumer ring full +
#     share + producer rings' lost) minus the producers' in-band LOST.full
#     is what the consumer ring itself dropped (>= 0); the COMM counts
#     match what torture did (as on the host), less at most those drops;
#   - each sandboxed child (listed by torture): K = 200 markers before its
#     filter and (raw) K after it, (libc) none after it and a NOTE SECCOMP,
#     or fewer by at most what its LOST records say its ring dropped; no
#     heap or lock record of a libc child after its NOTE.
# usage: selftests/shim/torture_vm_test.sh [SHIM.so [SECS]]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/lib/wait.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
secs=${2:-90}
tmp=$(mktemp -d /tmp/shim-torture-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
K=200

tap_plan
tap_need_device

# The torture's own bound is secs + 10 s per child still running; give it
# secs + 240 s under TCG.
timeout -k 10 $((secs + 240)) "$d/shim_reader" --preload "$lib" --mem-rate 1 \
	--block-rate 1 --mutex-fraction 1 --dump >(awk '
	{ n++ }
	$1 == "COMM" { comm[$5]++ }
	$1 == "ALLOC" && $6 == 4241 { pre[$2]++ }
	$1 == "ALLOC" && $6 == 4242 { post[$2]++ }
	$1 == "NOTE" && $5 == 1 { note[$2]++ }
	($1 == "ALLOC" || $1 == "FREE" || $1 == "BLOCK" || $1 == "MUTEX") && ($2 in note) {
		after[$2]++ }
	$1 == "LOST" { lost[$2] += $5; lostsum += $5 }
	END {
		printf "records %d lost %d comm %d %d %d %d\n", n, lostsum,
			comm[0], comm[1], comm[2], comm[3]
		for (p in pre) printf "child %s %d %d %d %d %d\n", p, pre[p], post[p],
			note[p], lost[p], after[p]
		for (p in post) if (!(p in pre)) printf "child %s 0 %d %d %d %d\n", p,
			post[p], note[p], lost[p], after[p]
		# a child whose markers were all lost still has its LOST records
		for (p in lost) if (!(p in pre) && !(p in post))
			printf "child %s 0 0 %d %d %d\n", p, note[p], lost[p], after[p]
	}' >"$tmp/counts") \
	-- "$d/torture" "$secs" "$d/libshim_plugin.so" module >"$tmp/out" 2>"$tmp/err"
rc=$?
# the awk behind >() may still be writing
wait_for 60 grep -qs '^records ' "$tmp/counts"
out=$(grep -v '^seccomp-child ' "$tmp/out")
if [ $rc = 0 ] && [ "$(tail -n 1 <<<"$out")" = "torture: ok" ]; then
	tap_ok "torture $secs s at rate 1: no hang, every child ended normally"
else
	tap_fail "torture $secs s at rate 1" "exit $rc: $(tr '\n' ' ' <<<"$out")"
	tap_diag "$(grep -v '^shim_reader' "$tmp/err" | head -n 20)"
fi
tap_diag "$(tr '\n' ' ' <<<"$out")"
tap_diag "$(grep '^shim_reader' "$tmp/err")"

reader=$(grep '^shim_reader: status' "$tmp/err" | tail -n 1)
accepted=$(sed -n 's/.* accepted \([0-9]*\) .*/\1/p' <<<"$reader")
rejected=$(sed -n 's/.* rejected \([0-9]*\) .*/\1/p' <<<"$reader")
dropped=$(sed -n 's/.* dropped \([0-9]*\)$/\1/p' <<<"$reader")
read -r _ records _ lostsum _ start forks execs exits < <(grep '^records ' "$tmp/counts")
if [ -n "${records:-}" ] && [ "${rejected:-x}" = 0 ] && [ -n "${dropped:-}" ] &&
   [ "$lostsum" -le "$dropped" ]; then
	tap_ok "module: $accepted accepted, $records read, 0 rejected, $dropped dropped of which $lostsum in band"
else
	tap_fail "module accounting" "reader: ${reader:-none}; counts: $(head -n 1 "$tmp/counts")"
fi

made() { awk -v w="$1" '$0 ~ "^" w " [0-9]+ bad" { print $(NF - 2) }' <<<"$out"; }
fork=$(made fork) ufork=$(made _Fork) clone=$(made clone) vfork=$(made vfork)
spawn=$(made posix_spawn) hfork=$(made "handler fork")
hufork=$(made "handler _Fork") hspawn=$(made "handler posix_spawn")
slibc=$(made "seccomp libc") sraw=$(made "seccomp raw")
consumer_drops=$(( ${dropped:-1} - ${lostsum:-0} ))
# COMM FORK, EXEC and START precede the process's first sample here, so
# they take no producer ring (an ioctl each): only the consumer's drops
# can make them fewer.  EXIT: the exec'ed images never sample (ioctl too).
images=$(( ufork + hufork + clone + vfork + spawn + hspawn ))
want_forks=$(( fork + hfork + ufork + hufork + clone + slibc + sraw ))
cd_=$consumer_drops
if [ -n "${forks:-}" ] && (( forks <= want_forks && want_forks - forks <= cd_ &&
      execs + cd_ >= ufork + hufork + clone && start + cd_ >= 1 + images &&
      exits + cd_ >= 1 + images )); then
	tap_ok "records match: FORK $forks of $want_forks, EXEC $execs, START $start, EXIT $exits (consumer ring drops $cd_)"
else
	tap_fail "records" "FORK ${forks:-none} (want $want_forks), EXEC ${execs:-none} (>= $((ufork + hufork + clone))), START ${start:-none}, EXIT ${exits:-none} (>= $((1 + images))), consumer drops $cd_"
fi

# each sandboxed child: markers + its in-band losses
bad=0 n=0 lossy=0
while read -r _ kind pid; do
	n=$((n + 1))
	read -r _ _ pre post note lost after < <(grep "^child $pid " "$tmp/counts")
	pre=${pre:-0} post=${post:-0} note=${note:-0} lost=${lost:-0} after=${after:-0}
	want_post=$K
	[ "$kind" = libc ] && want_post=0
	[ "$lost" -gt 0 ] && lossy=$((lossy + 1))
	if [ "$consumer_drops" = 0 ] && [ "$lost" = 0 ]; then
		ok=$(( pre == K && post == want_post && after == 0 ))
		[ "$kind" = libc ] && [ "$note" != 1 ] && ok=0
	else
		ok=$(( pre <= K && post <= want_post && after == 0 &&
		       (K - pre) + (want_post - post) <= lost + consumer_drops ))
	fi
	if [ "$ok" != 1 ]; then
		bad=$((bad + 1))
		[ $bad -le 5 ] && tap_diag "$kind child $pid: before $pre, after $post (want $K, $want_post), NOTE $note, records after it $after, lost $lost"
	fi
done < <(grep '^seccomp-child ' "$tmp/out")
if [ $n -gt 0 ] && [ $n = $((slibc + sraw)) ] && [ $bad = 0 ]; then
	tap_ok "seccomp: $slibc libc-filtered children stopped, $sraw raw-filtered kept sampling; markers match ($lossy with in-band losses)"
else
	tap_fail "seccomp markers" "$bad of $n children wrong (torture made $slibc + $sraw)"
fi
tap_done
