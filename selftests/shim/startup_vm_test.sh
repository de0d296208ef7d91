#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 11 against the module (run in the VM), through `kpprof record`:
# nothing is lost by what start-up no longer does.
#   - late: a process that allocates small, dlopens a library, then
#     samples late: its heap profile has samples in the program
#     (late_main_alloc) and in the library (plugin_alloc), symbolized;
#     libunwind was not loaded before its first sample;
#   - chain: record's command forks a child that never samples, whose
#     children (one forked, one forked and exec'ed) sample late: both
#     grandchildren are in the profile (record follows descendants through
#     the child's COMM records), each with both functions;
#   - /bin/true under record: exit status, no profile samples.
# Every profile written is read by go tool pprof -raw.
# usage: selftests/shim/startup_vm_test.sh [SHIM.so]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/lib/tap.sh"
d=$top/build/selftests/shim
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
K=$top/build/user/kpprof/kpprof
tmp=$(mktemp -d /tmp/shim-startup-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp GOCACHE=$tmp/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$tmp

tap_plan
tap_need_device
pp() { go tool pprof -symbolize=none "$@" 2>&1; }
# pid_fns PROFILE: "PID fn..." for each pid with samples (pprof labels
# samples with their pid only when a profile holds several processes: then
# "all"): which of late_main_alloc and plugin_alloc its heap samples show
pid_fns() {
	local p pids
	pids=$(pp -raw "$1" | grep -oE 'pid:\[[0-9]+\]' | sort -u | tr -dc '0-9\n')
	# shellcheck disable=SC2046  # the function names, one word each
	if [ -z "$pids" ]; then
		echo all $(pp -sample_index=alloc_space -top -nodecount=100 "$1" |
			grep -oE '(late_main_alloc|plugin_alloc)$' | sort -u)
		return
	fi
	for p in $pids; do
		# shellcheck disable=SC2046
		echo "$p" $(pp -tagfocus="pid=$p" -sample_index=alloc_space -top -nodecount=100 "$1" |
			grep -oE '(late_main_alloc|plugin_alloc)$' | sort -u)
	done
}

# 1. late
if KPPROF_SHIM=$lib "$K" record -o "$tmp/late" --mem-rate 16777216 -- \
	"$d/late_sampler" late >"$tmp/late.out" 2>"$tmp/late.err"; then
	pp -raw "$tmp/late/heap.pb.gz" >"$tmp/late.raw"
	got=$(pid_fns "$tmp/late/heap.pb.gz")
	# One process: its pid (the collector labels every sample) or "all".
	if [[ $got =~ ^(all|[0-9]+)\ late_main_alloc\ plugin_alloc$ ]]; then
		tap_ok "late sampler: program and dlopen'ed library symbolized ($got)"
	else
		tap_diag "$(head -n 40 "$tmp/late.raw")"
		tap_fail "late sampler: profile" "$got"
	fi
	grep -q 'libunwind before: no' "$tmp/late.out" &&
		tap_ok "late sampler: libunwind not loaded before the first sample" ||
		tap_fail "late sampler: libunwind" "$(cat "$tmp/late.out")"
else
	tap_diag "$(tail -n 5 "$tmp/late.err")"
	tap_fail "late sampler: kpprof record failed"
fi

# 2. chain: the child never samples; both grandchildren must be followed.
if KPPROF_SHIM=$lib "$K" record -o "$tmp/chain" --mem-rate 16777216 -- \
	"$d/late_sampler" chain >"$tmp/chain.out" 2>"$tmp/chain.err"; then
	pp -raw "$tmp/chain/heap.pb.gz" >"$tmp/chain.raw"
	got=$(pid_fns "$tmp/chain/heap.pb.gz")
	full=$(grep -c 'late_main_alloc plugin_alloc' <<<"$got")
	if [ "$full" = 2 ]; then
		tap_ok "chain: both grandchildren of a child that never samples followed, each symbolized"
	else
		tap_diag "$(cat "$tmp/chain.err")"
		# what the profile holds: its counters (comment) and every sample
		# with its pid and frames (addresses where no name was found)
		tap_diag "$(pp -raw "$tmp/chain/heap.pb.gz" | head -n 120)"
		tap_fail "chain: grandchildren in the profile" "pids and functions: ${got:-none}"
	fi
else
	tap_diag "$(tail -n 5 "$tmp/chain.err")"
	tap_fail "chain: kpprof record failed"
fi

# 3. a process that never samples
KPPROF_SHIM=$lib "$K" record -o "$tmp/true" -- /bin/true 2>"$tmp/true.err"
rc=$?
n=$(pp -raw "$tmp/true/heap.pb.gz" | grep -cE 'pid:\[')
[ $rc = 0 ] && [ "$n" = 0 ] && tap_ok "/bin/true: status 0, no samples" ||
	tap_fail "/bin/true under record" "rc $rc, $n samples"

bad=0 n=0
while IFS= read -r p; do
	n=$((n + 1))
	go tool pprof -symbolize=none -raw "$p" >/dev/null 2>&1 || { bad=1; tap_diag "unreadable: $p"; }
done < <(find "$tmp" -name '*.pb.gz')
[ $bad = 0 ] && [ $n -gt 0 ] && tap_ok "all $n profiles written are read by go tool pprof -raw" ||
	tap_fail "profiles unreadable by go tool pprof"
tap_done
