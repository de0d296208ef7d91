#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Other projects' test suites, as Debian ships them, run plainly and under
# the shim in test mode (KPPROF_TEST_CONFIG; KPPROF_TEST_RING=1: records go
# into the emulated producer ring as with the module, no syscall per record,
# and the producers themselves drain it into /dev/null, which the module
# would do in the collector's context)
# at the default rates (heap 512 KiB, no lock profiles) and at rate 1
# (every allocation and every contended lock sampled).  Issue 15's proof:
# every test that passes plainly passes under the shim, none takes more
# than twice as long.  Not in host.list: it runs for tens of minutes.
#
#   python3: python3 -m test, one module at a time (libpython3.11-testsuite)
#            modules of threads, subprocess, signals, os, ctypes, fork;
#   python-more (not by default): 27 more of its modules (resource limits,
#            faulthandler, pools of threads and processes, ptys, sockets, the
#            C API, tracemalloc, mmap, embedding, asyncio, sqlite3, ssl...);
#   glib, gdk-pixbuf (or any other directory of /usr/share/installed-tests):
#            each .test's Exec (libglib2.0-tests, gdk-pixbuf-tests; not by
#            default: libsoup-3.0, pango, graphene-1.0, RSVG, libgcab-1.0,
#            libjcat, dbus...: libsoup's server-test and http2-test hang or
#            time out plainly too, now and then).  dbus's (dbus-tests) run
#            from /usr/lib/dbus-1.0; those needing a session bus fail plainly;
#   systemd: every unit test of /usr/lib/systemd/tests (systemd-tests), exit
#            77 a skip; test-execute needs /run/systemd/inaccessible (which a
#            booted systemd makes): without it, it fails plainly too;
#   cxx:     libstdc++'s threads, every mutex kind, condition variables,
#            futures and exceptions across threads (foreign_threads.cc, g++);
#   rust:    std::sync, panics with symbolized backtraces, aligned and large
#            allocations (foreign_sync.rs; skipped without rustc);
#   perl:    ithreads, shared variables, Thread::Queue (foreign_threads.pl);
#   gc:      Boehm's conservative collector with threads that also malloc
#            (foreign_gc.c, libgc-dev): its stop-the-world scans each thread's
#            stack from the sp its signal handler sees (sigscan_host_test.sh);
#   redis:   a real server under load (foreign_redis.sh): redis-server
#            with I/O threads, redis-benchmark, a BGSAVE fork, every key
#            read back, clean shutdown (redis-server, redis-tools);
#   postgres: a real server under load (foreign_postgres.sh): initdb,
#            pgbench -i and 20 s of pgbench with 4 clients, balances
#            checked, clean stop (postgresql-15, postgresql-client-15);
#   sqlite:  sqlite3 builds, sorts with worker threads, queries and checks
#            a 300,000-row database (foreign_sqlite.sh; sqlite3).
# Their "metric:" lines (throughput) are printed for each mode: they, not
# the verdict, show what the shim costs a server (pgbench and
# redis-benchmark run for a fixed time or count, and postgres, started by
# pg_ctl, is not a child whose CPU time /usr/bin/time sees).
# Timings on a shared, loaded machine are noisy: rerun a SLOW test alone
# (some of glib's tests, gvariant for one, draw random cases: a run's work
# differs from the next one's; compare the CPU time of several runs).  At rate
# 1 every allocation costs a sample (a stack walk, a record, the ring's
# drain): tests that allocate millions of blocks (glib's gmenumodel,
# gvariant, gdbus-proxy-threads) take 2 to 5x the CPU there, and SLOW says so.
#
# usage: selftests/shim/foreign_suites.sh [-s 'SUITE...'] [SHIM.so]
# Prints one line per test and mode ("test mode rc seconds, CPU seconds"),
# a verdict per test (OK, FAIL: passes plainly but not under the shim,
# SLOW: more than 2x and more than 1 s more CPU time, the test's and its
# children's) and totals; exit 1 if any FAIL or SLOW.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/selftests/shim/test_config.sh"
# The suites' packages (scripts/packages/optional/foreign.list), which
# `make deps` leaves out: installed here when one is missing.
want=$(sed -e 's/#.*//' "$top/scripts/packages/optional/foreign.list" | tr -s ' \t' '\n\n' | grep .)
# shellcheck disable=SC2086  # one package name per word
if ! dpkg-query -W $want >/dev/null 2>&1; then
	apt-get update -qq && apt-get install -y -qq $want >/dev/null ||
		{ echo "foreign_suites: cannot install: $(echo $want)" >&2; exit 2; }
fi
suites="python glib gdk-pixbuf systemd cxx rust perl gc redis postgres sqlite"
if [ "${1:-}" = -s ]; then suites=$2; shift 2; fi
lib=$(realpath "${1:-$top/build/user/shim/libkpprof.so}")
tmp=$(mktemp -d /tmp/shim-foreign.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
T=${T:-900}	# seconds: one test run longer than this counts as a failure
shim_test_config 524288 0 0 >"$tmp/default" || exit 2
shim_test_config 1 1 1 >"$tmp/rate1" || exit 2
# readable by the servers' own users (postgres)
chmod 755 "$tmp" && chmod 644 "$tmp/default" "$tmp/rate1" || exit 2
bad=0
declare -A n

# run MODE NAME DIR CMD...: prints "NAME MODE rc wall-seconds CPU-seconds",
# sets $rc $secs (wall) $cpu (user + system of the test and its children,
# from /usr/bin/time, which the verdict uses: on a shared machine another
# process's time slice lands in the wall time of whichever mode ran then).
run() {
	local mode=$1 name=$2 dir=$3 t0 t1
	shift 3
	t0=$(date +%s.%N)
	if [ "$mode" = plain ]; then
		(cd "$dir" && /usr/bin/time -o "$tmp/time" -f '%U %S' timeout -s KILL "$T" "$@") </dev/null >"$tmp/out" 2>&1
	else
		(cd "$dir" && KPPROF_EXCLUDE_FILE=$tmp/none KPPROF_TEST_CONFIG=$tmp/$mode \
			KPPROF_TEST_RING=1 LD_PRELOAD=$lib \
			/usr/bin/time -o "$tmp/time" -f '%U %S' timeout -s KILL "$T" "$@") </dev/null >"$tmp/out" 2>&1
	fi
	rc=$?
	t1=$(date +%s.%N)
	secs=$(echo "$t1 - $t0" | bc)
	# the last line: /usr/bin/time writes "Command exited with ..." first
	cpu=$(tail -n 1 "$tmp/time" 2>/dev/null | awk 'NF == 2 { print $1 + $2 }')
	[ -n "$cpu" ] || { echo "foreign_suites: no CPU time for $name ($mode)" >&2; exit 2; }
	printf '%s %s rc %d %.1f s, CPU %.2f s\n' "$name" "$mode" "$rc" "$secs" "$cpu"
	sed -n 's/^metric: /#   /p' "$tmp/out"
}

# one SUITE NAME DIR CMD...: the three modes and a verdict.
one() {
	local suite=$1 name=$2 dir=$3 prc pcpu verdict=OK mode
	shift 3
	run plain "$name" "$dir" "$@"
	prc=$rc pcpu=$cpu
	n[$suite.plain.$([ $prc = 0 ] && echo pass || echo fail)]=$((${n[$suite.plain.$([ $prc = 0 ] && echo pass || echo fail)]:-0} + 1))
	for mode in default rate1; do
		run $mode "$name" "$dir" "$@"
		local v=$([ $rc = 0 ] && echo pass || echo fail)
		n[$suite.$mode.$v]=$((${n[$suite.$mode.$v]:-0} + 1))
		if [ $prc = 0 ] && [ $rc != 0 ]; then
			verdict="${verdict#OK}${verdict:+ }FAIL($mode)"
			verdict=${verdict# }
			sed 's/^/#   /' "$tmp/out" | tail -20
		elif [ $prc = 0 ] && [ "$(echo "$cpu > 2 * $pcpu && $cpu > $pcpu + 1" | bc)" = 1 ] &&
		     [ $rc = 0 ]; then
			verdict="${verdict#OK} SLOW($mode)"
			verdict=${verdict# }
		fi
	done
	echo "$name: $verdict"
	[ "$verdict" = OK ] || bad=$((bad + 1))
}

for suite in $suites; do
	case $suite in
	python)
		for m in test_threading test_thread test_subprocess test_signal test_os \
			 test_ctypes test_fork1 test_threadsignals; do
			one python "python:$m" "$tmp" /usr/bin/python3 -m test -j1 "$m"
		done ;;
	python-more)
		# more of the interpreter's own suite: resource limits, faulthandler's
		# signals, pools of threads and processes, ptys, sockets, the C API,
		# tracemalloc, mmap, embedding, asyncio, sqlite3, ssl, compression
		for m in test_resource test_faulthandler test_concurrent_futures \
			 test_multiprocessing_fork test_posix test_pty test_socket test_capi \
			 test_tracemalloc test_mmap test_embed test_queue test_sys test_gc \
			 test_selectors test_asyncio test_sqlite3 test_ssl test_hashlib \
			 test_zlib test_lzma test_decimal test_weakref test_io \
			 test_threading_local test_socketserver test_logging; do
			one python "python:$m" "$tmp" /usr/bin/python3 -m test -j1 "$m"
		done ;;
	systemd)
		# every unit test Debian ships (systemd-tests): exit 77 is a skip
		for t in /usr/lib/systemd/tests/test-*; do
			one systemd "systemd:$(basename "$t")" "$tmp" "$t"
		done ;;
	cxx)	# libstdc++'s threads, every mutex kind, futures, exceptions
		g++ -O2 -g -pthread -o "$tmp/foreign_threads" "$top/selftests/shim/foreign_threads.cc" || exit 2
		one cxx cxx:threads "$tmp" "$tmp/foreign_threads" 300000 ;;
	rust)	# std::sync, panics with backtraces, aligned allocations (rustc)
		command -v rustc >/dev/null || { echo "# rust: no rustc, skipped"; continue; }
		rustc -O -g -o "$tmp/foreign_sync" "$top/selftests/shim/foreign_sync.rs" || exit 2
		one rust rust:sync "$tmp" "$tmp/foreign_sync" 100000 ;;
	gc)	# Boehm's libgc: stop-the-world by signal, stacks scanned from the
		# handler's sp (sigscan_host_test.sh), threads that also malloc
		gcc -O2 -g -pthread -o "$tmp/foreign_gc" "$top/selftests/shim/foreign_gc.c" -lgc || exit 2
		one gc gc:threads "$tmp" "$tmp/foreign_gc" 10 ;;
	perl)	# ithreads: interpreter clones, shared variables, Thread::Queue
		one perl perl:threads "$tmp" perl "$top/selftests/shim/foreign_threads.pl" 200000 ;;
	redis|postgres|sqlite)
		one $suite "$suite" "$tmp" "$top/selftests/shim/foreign_$suite.sh" ;;
	*)	# GNOME-style installed tests: /usr/share/installed-tests/SUITE
		for f in /usr/share/installed-tests/"$suite"/*.test; do
			exe=$(sed -n 's/^Exec=//p' "$f")
			[ -n "$exe" ] || continue
			# Exec= is a command line, with quotes
			# dbus installs its programs elsewhere (/usr/lib/dbus-1.0)
			d=/usr/libexec/installed-tests/$suite
			[ -d "$d" ] || d=$tmp
			one "$suite" "$suite:$(basename "$f" .test)" "$d" sh -c "exec $exe"
		done ;;
	esac
done
for k in $(printf '%s\n' "${!n[@]}" | sort); do
	echo "# Totals: $k ${n[$k]}"
done
echo "# verdicts not OK: $bad"
[ $bad = 0 ]
