#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real server under load, for foreign_suites.sh: PostgreSQL 15 (Debian's)
# as user postgres in a fresh cluster (initdb), on a unix socket only,
# loaded by pgbench (4 clients, 2 threads, TPC-B like, SECONDS seconds)
# after pgbench -i; a backend process per connection (fork), background
# workers, signals between them, shared memory, dlopen of its modules;
# then pgbench's consistency (every transaction's balance change is in
# pgbench_history: the sums agree), and a clean stop.  Whatever LD_PRELOAD
# and KPPROF_* the caller set apply to every process here (the files they
# name must be readable by postgres).  Prints "metric: postgres tps N" and,
# with KPPROF_DEBUG=1, how many server processes the shim started in
# ("metric: postgres shim processes N"); exit status 0 only if all held.
# usage: foreign_postgres.sh [SECONDS]
set -u
secs=${1:-20}
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/shim-pg.XXXXXX)
chmod 755 "$dir"
chown postgres "$dir"
started=0
pg() { timeout 120 runuser -u postgres -- "$@"; }
cleanup() {
	[ $started = 1 ] && pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "postgres: $*"; [ -f "$dir/log" ] && tail -5 "$dir/log"; exit 1; }

pg "$bin/initdb" -A trust -U postgres -D "$dir/data" >"$dir/initdb" 2>&1 ||
	fail "initdb: $(tail -5 "$dir/initdb")"
pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
	-o "-c listen_addresses= -k $dir -c max_connections=20" start >/dev/null 2>&1 ||
	fail "pg_ctl start"
started=1
pg "$bin/pgbench" -h "$dir" -i -s 4 postgres >"$dir/init" 2>&1 || fail "pgbench -i: $(tail -3 "$dir/init")"
pg "$bin/pgbench" -h "$dir" -c 4 -j 2 -T "$secs" postgres >"$dir/run" 2>&1 ||
	fail "pgbench: $(tail -3 "$dir/run")"
grep -q '^number of failed transactions: 0' "$dir/run" || fail "failed transactions: $(grep failed "$dir/run")"
q() { pg "$bin/psql" -h "$dir" -U postgres -At -c "$1" postgres; }
h=$(q 'select sum(delta) from pgbench_history') || fail "psql"
a=$(q 'select sum(abalance) from pgbench_accounts') || fail "psql"
[ -n "$h" ] && [ "$h" = "$a" ] || fail "history sums to $h, accounts to $a"
sed -n 's/^tps = \([0-9.]*\).*/metric: postgres tps \1/p' "$dir/run"
pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || fail "pg_ctl stop"
started=0
grep -q 'database system is shut down' "$dir/log" || fail "no clean shutdown in the log"
grep -E 'PANIC|terminated by signal|server process .* was terminated' "$dir/log" &&
	fail "a server process crashed"
n=$(grep -c '^kpprof\[' "$dir/log")
[ "$n" -gt 0 ] && echo "metric: postgres shim lines in the server log $n"
echo "postgres: ok"
