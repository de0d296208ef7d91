#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real server under load, for foreign_suites.sh: redis-server (Debian's,
# jemalloc inside; its background threads free deleted keys: lazyfree;
# no I/O threads, which spin on a CPU each) on a unix socket in a fresh directory,
# loaded by redis-benchmark (20 clients, its own threads), a BGSAVE (a
# fork of the threaded server) in the middle, then a check that every key
# written (and not deleted) reads back, and a clean SHUTDOWN.  Whatever LD_PRELOAD and
# KPPROF_* the caller set apply to every process here.  Prints
# "metric: redis TEST requests/s" lines; exit status 0 only if all held.
# usage: foreign_redis.sh [REQUESTS]
set -u -o pipefail
n=${1:-100000}
dir=$(mktemp -d /tmp/shim-redis.XXXXXX)
s=$dir/sock
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "redis: $*"; [ -f "$dir/log" ] && tail -5 "$dir/log"; exit 1; }
cli() { timeout 60 redis-cli -s "$s" "$@"; }

redis-server --port 0 --unixsocket "$s" --save '' --appendonly no --dir "$dir" \
	--logfile "$dir/log" --lazyfree-lazy-user-del yes &
pid=$!
for _ in $(seq 300); do	# up to 30 s
	[ "$(cli ping 2>/dev/null)" = PONG ] && break
	kill -0 "$pid" 2>/dev/null || fail "server exited at start"
	sleep 0.1
done
[ "$(cli ping 2>/dev/null)" = PONG ] || fail "server not up after 30 s"

timeout 120 redis-benchmark -s "$s" -n "$n" -c 20 -r 10000 -t set,get,incr,lpush,lpop,hset \
	--csv >"$dir/bench" 2>&1 || fail "redis-benchmark failed: $(tail -3 "$dir/bench")"
cli bgsave >/dev/null || fail "BGSAVE refused"
timeout 120 redis-benchmark -s "$s" -n "$n" -c 20 -r 10000 -t set,get --csv 2>&1 |
	sed 's/^"\([A-Z]*\)/"\1_DURING_BGSAVE/' >>"$dir/bench" || fail "redis-benchmark (beside BGSAVE) failed"
for _ in $(seq 600); do	# the forked child's save, up to 60 s
	cli info persistence | grep -q '^rdb_bgsave_in_progress:0' && break
	sleep 0.1
done
cli info persistence | grep -q '^rdb_last_bgsave_status:ok' || fail "BGSAVE did not succeed"

# Every key written reads back: 20000 keys through a pipe, then MGET.
for i in $(seq 20000); do printf 'SET k:%d v%d\r\n' "$i" "$((i * 7))"; done |
	timeout 60 redis-cli -s "$s" --pipe >"$dir/pipe" 2>&1 || fail "--pipe: $(cat "$dir/pipe")"
cli del $(seq -f 'k:%g' 1 10000) >/dev/null || fail "DEL"	# lazyfree threads
got=$(cli mget $(seq -f 'k:%g' 1 20000) | awk '/^v/ { s += substr($1, 2); n++ } END { print s, n }')
want=$((7 * (20000 * 20001 / 2 - 10000 * 10001 / 2)))
[ "$got" = "$want 10000" ] || fail "keys read back: sum and count $got, not $want 10000"

sed -n 's/^"\([A-Z_]*\)[^"]*","\([0-9.]*\)".*/metric: redis \1 \2 requests\/s/p' "$dir/bench"
cli shutdown nosave >/dev/null 2>&1
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || fail "server exit status $rc"
echo "redis: ok"
