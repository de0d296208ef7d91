#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real program, for foreign_suites.sh: sqlite3 (Debian's) builds a
# 300,000-row database in a file (a recursive CTE, two indexes, sorting
# with 4 worker threads: PRAGMA threads), queries it, checks it
# (PRAGMA integrity_check) and compares the same figures computed two
# ways (through an index and by a full scan, in SQL and in awk).
# Whatever LD_PRELOAD and KPPROF_* the caller set apply.  Exit status 0
# only if every figure agrees.
# usage: foreign_sqlite.sh [ROWS]
set -u -o pipefail
rows=${1:-300000}
dir=$(mktemp -d /tmp/shim-sqlite.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "sqlite: $*"; exit 1; }
out=$(timeout 120 sqlite3 "$dir/db" <<SQL
PRAGMA threads = 4;
PRAGMA cache_size = -20000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT, j TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $rows)
INSERT INTO t SELECT i, (i * 7919) % 10007, printf('row-%08d-%s', i, hex(randomblob(8))),
	json_object('i', i, 'sq', i * i % 1000) FROM c;
CREATE INDEX tk ON t(k);
CREATE INDEX ts ON t(s);
SELECT 'count', count(*) FROM t;
SELECT 'sum_k_index', sum(k) FROM t INDEXED BY tk WHERE k >= 0;
SELECT 'sum_k_scan', sum(k) FROM t NOT INDEXED;
SELECT 'groups', count(*) FROM (SELECT k, count(*) FROM t GROUP BY k);
SELECT 'json', sum(json_extract(j, '\$.sq')) FROM t;
SELECT 'sorted', count(*) FROM (SELECT s FROM t ORDER BY substr(s, 14) DESC);
DELETE FROM t WHERE id % 3 = 0;
VACUUM;
SELECT 'after_delete', count(*) FROM t;
PRAGMA integrity_check;
SQL
) || fail "sqlite3 exit status $?"
get() { awk -F'|' -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
want_k=$(awk -v n="$rows" 'BEGIN { for (i = 1; i <= n; i++) s += (i * 7919) % 10007; printf "%d", s }')
want_sq=$(awk -v n="$rows" 'BEGIN { for (i = 1; i <= n; i++) s += (i * i) % 1000; printf "%d", s }')
[ "$(get count)" = "$rows" ] || fail "count $(get count)"
[ "$(get sum_k_index)" = "$want_k" ] && [ "$(get sum_k_scan)" = "$want_k" ] ||
	fail "sum(k): index $(get sum_k_index), scan $(get sum_k_scan), awk $want_k"
[ "$(get json)" = "$want_sq" ] || fail "json sum $(get json), awk $want_sq"
[ "$rows" -lt 10007 ] || [ "$(get groups)" = 10007 ] || fail "groups $(get groups)"
[ "$(get sorted)" = "$rows" ] || fail "sorted $(get sorted)"
[ "$(get after_delete)" = "$((rows - rows / 3))" ] || fail "after delete $(get after_delete)"
grep -qx ok <<<"$out" || fail "integrity_check: $(tail -3 <<<"$out")"
echo "sqlite: ok"
