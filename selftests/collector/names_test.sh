#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Names and lines as a user judges them, in the VM (module + shim +
# collector), each profile read by `go tool pprof`:
#   1. a C program linked with ld.lld shows its own functions;
#   2. a Rust program (rustc links with rust-lld) shows its functions,
#      demangled without hashes, above the allocator (drop_frames);
#   3. a program chroot'ed at /app/sites, a path that exists only inside
#      its root, shows its functions although it exited before the profile
#      was written;
#   4. at -O2 the inlined helper make_node() is an inlined frame at the
#      file:line `addr2line -i` gives, and `pprof -list` shows the source;
#   5. a stripped program whose debug file only a debuginfod server has:
#      unnamed (and left to pprof: no has_functions) without
#      DEBUGINFOD_URLS, named with file:line with it.  Debian's debuginfod
#      serves a directory of separated debug files; it listens on every
#      interface, and the guest has only loopback, so it runs here only.
# (A MMAP record naming a FIFO: symbolize_test, fifo_not_opened.)
# Run from the repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
SHIM=$top/build/user/shim/libkpprof.so
N=$top/build/selftests/collector/names
out=$(mktemp -d /tmp/kpprof-names.XXXXXX)
trap 'rm -rf "$out"' EXIT
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local PPROF_TMPDIR=$out

tap_plan

pp() { go tool pprof -symbolize=none "$@" 2>&1; }
# the function names of `pprof -top` output, one a line
names() { awk '/flat%/ { on = 1; next } on { print $NF }' <<<"$1"; }
has_fn() { names "$1" | grep -qx -- "$2"; }
run() { # run NAME CMD...: record CMD into $out/NAME
	local d=$out/$1
	shift
	if ! timeout 120 $K record -o "$d" --mem-rate 4096 -- "$@" 2>"$out/log"; then
		tap_diag "$(cat "$out/log")"
		return 1
	fi
	pp -raw "$d/heap.pb.gz" >/dev/null || { tap_diag "pprof -raw rejects $d/heap.pb.gz"; return 1; }
}

# 1. C, ld.lld, PIE
if run lld "$N/sites-lld" 20000; then
	t=$(pp -sample_index=inuse_space -top "$out/lld/heap.pb.gz")
	tap_diag "$t"
	if has_fn "$t" fill_sites && has_fn "$t" other_sites; then
		tap_ok "ld.lld C program: fill_sites and other_sites named"
	else
		tap_fail "ld.lld C program: its functions are not named"
	fi
else
	tap_fail "ld.lld C program: record failed"
fi

# 2. Rust
if [ -x "$N/rust_sites" ]; then
	if run rust "$N/rust_sites" 20000; then
		t=$(pp -sample_index=inuse_space -top "$out/rust/heap.pb.gz")
		tap_diag "$t"
		top1=$(names "$t" | head -1)
		if [ "$top1" = "rust_sites::build_rust_sites" ] && ! grep -q '::h[0-9a-f]\{16\}' <<<"$t"; then
			tap_ok "Rust: top is rust_sites::build_rust_sites, no hashes"
		else
			tap_fail "Rust: top is '$top1'"
		fi
	else
		tap_fail "Rust: record failed"
	fi
else
	tap_skip "Rust" "no rustc where the tests were built"
fi

# 3. chroot at /app/sites, a path only the root has
root=$out/root
mkdir -p "$root/app" "$root/dev" "$root$(dirname "$SHIM")"
cp "$N/sites-bfd" "$root/app/sites"
cp "$SHIM" "$root$SHIM"
for f in $( (ldd "$root/app/sites"; ldd "$SHIM") | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
done
cp -a /dev/kpprof "$root/dev/kpprof" 2>/dev/null ||
	mknod "$root/dev/kpprof" c "$(stat -c '%t' /dev/kpprof | xargs printf %d 0x)" \
		"$(stat -c '%T' /dev/kpprof | xargs printf %d 0x)"
# The collector names a chroot'ed program's functions from the files it
# opened through /proc/PID/root while the program lived (it trusts no path
# a record claims): the program is held alive, after its allocations, until
# the collector holds its binary open (or 60 s), then released to exit.
held_run() {
	local fifo=$out/hold rc i p
	mkfifo "$fifo"
	run chroot chroot "$root" /app/sites 20000 hold <"$fifo" &
	local bg=$!
	exec 9>"$fifo"
	for ((i = 0; i < 600; i++)); do
		for p in $(pgrep -x "$(basename "$K")"); do
			ls -l "/proc/$p/fd" 2>/dev/null | grep -q -- "-> $root/app/sites\$" && break 2
		done
		sleep 0.1
	done
	[ $i -lt 600 ] || tap_diag "the collector did not open $root/app/sites within 60 s"
	exec 9>&-
	wait $bg
	rc=$?
	rm -f "$fifo"
	return $rc
}
if [ -e /app/sites ]; then
	tap_skip "chroot" "/app/sites exists outside the root"
elif held_run; then
	t=$(pp -sample_index=inuse_space -top "$out/chroot/heap.pb.gz")
	tap_diag "$t"
	if has_fn "$t" fill_sites && has_fn "$t" other_sites; then
		tap_ok "chroot'ed /app/sites, exited: its functions named"
	else
		tap_fail "chroot'ed /app/sites: its functions are not named"
	fi
	# pprof takes mapping 0 for the main binary: the program, not chroot(1)
	# that exec'ed it nor a library.
	m0=$(pp -raw "$out/chroot/heap.pb.gz" | awk '/^Mappings/ { getline; print $3; exit }')
	[ "$m0" = /app/sites ] && tap_ok "chroot'ed /app/sites is mapping 0 (the main binary)" ||
		tap_fail "chroot: mapping 0 is '$m0', not /app/sites"
else
	tap_fail "chroot: record failed"
fi

# 4. -O2, make_node inlined into fill_sites
if run o2 "$N/sites-o2" 20000; then
	t=$(pp -sample_index=inuse_space -lines -top "$out/o2/heap.pb.gz")
	tap_diag "$t"
	# the inlined call site's malloc return address, as addr2line -i sees it
	ra=$(objdump -d --no-show-raw-insn "$N/sites-o2" |
	     awk '/<fill_sites>:/ { on = 1 } on && /call.*<malloc@plt>/ { getline; sub(":", "", $1); print $1; exit }')
	want=$(addr2line -i -f -e "$N/sites-o2" "$(printf '%#x' $((0x$ra - 1)))" | paste -sd' ')
	tap_diag "addr2line -i -f: $want"
	fl=$(awk '$(NF-1) == "make_node" || ($NF == "(inline)" && $(NF-2) == "make_node") { print }' <<<"$t" | head -1)
	line=$(addr2line -i -e "$N/sites-o2" "$(printf '%#x' $((0x$ra - 1)))" | head -1 | sed 's/ .*//')
	if [ -n "$fl" ] && grep -q "$(basename "$line")" <<<"$fl" && grep -q "(inline)" <<<"$fl"; then
		tap_ok "-O2: make_node is an inlined frame at $(basename "$line")"
	else
		tap_fail "-O2: no inlined make_node at $(basename "$line")"
	fi
	l=$(pp -sample_index=inuse_space -list 'fill_sites' -source_path "$top/selftests/collector/names" "$out/o2/heap.pb.gz")
	if grep -q 'make_node(1024)' <<<"$l"; then
		tap_ok "-O2: pprof -list fill_sites shows the source"
	else
		tap_diag "$l"
		tap_fail "-O2: pprof -list fill_sites shows no source"
	fi
else
	tap_fail "-O2: record failed"
fi

# 5. debuginfod
if command -v debuginfod >/dev/null && [ -x "$N/sites-lld" ]; then
	mkdir -p "$out/dbg" "$out/bin"
	objcopy --only-keep-debug "$N/sites-lld" "$out/dbg/sites.debug"
	objcopy --strip-all "$N/sites-lld" "$out/bin/sites-stripped"
	id=$(readelf -n "$out/bin/sites-stripped" | awk '/Build ID/ { print $3 }')
	debuginfod -d "$out/dbg.sqlite" -p 18002 -F "$out/dbg" >"$out/dlog" 2>&1 &
	dpid=$!
	for _ in $(seq 120); do
		curl -sf -o /dev/null "http://127.0.0.1:18002/buildid/$id/debuginfo" && break
		sleep 0.5
	done
	if run nodbgd "$out/bin/sites-stripped" 20000; then
		t=$(pp -sample_index=inuse_space -top "$out/nodbgd/heap.pb.gz")
		r=$(pp -raw "$out/nodbgd/heap.pb.gz" | grep 'sites-stripped')
		if ! has_fn "$t" other_sites && ! grep -q '\[FN\]' <<<"$r"; then
			tap_ok "stripped, no DEBUGINFOD_URLS: unnamed, has_functions unset"
		else
			tap_diag "$t" "$r"
			tap_fail "stripped, no DEBUGINFOD_URLS: named or has_functions set"
		fi
	else
		tap_fail "debuginfod: record failed"
	fi
	if DEBUGINFOD_URLS=http://127.0.0.1:18002 DEBUGINFOD_CACHE_PATH=$out/dcache \
	   run dbgd "$out/bin/sites-stripped" 20000; then
		t=$(pp -sample_index=inuse_space -lines -top "$out/dbgd/heap.pb.gz")
		tap_diag "$t"
		if grep -q 'other_sites .*sites.c:[0-9]' <<<"$t" && [ -d "$out/dcache/$id" ]; then
			tap_ok "stripped, debug file from debuginfod (cached): other_sites at sites.c"
		else
			tap_diag "$(cat "$out/dlog" | tail -5)"
			tap_fail "stripped, debuginfod: not named"
		fi
	else
		tap_fail "debuginfod: record failed"
	fi
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
else
	tap_skip "debuginfod" "no debuginfod"
fi

tap_done
