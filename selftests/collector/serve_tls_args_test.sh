#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kpprof serve --listen tls: on the host (no module needed): the
# certificate, key and client-CA files are read and checked at start-up,
# before anything listens, and any problem stops the server with a clear
# line naming the file: missing, not PEM, a key that does not match the
# certificate, a key file others may read (as ssh refuses it), a CA file
# with no CA in it, a CA file others may write or another user owns, a FIFO
# in place of any file (refused, not waited on).  The TLS options without a tls: listener, and a tls:
# listener without them, are refused.  Repo root.
set -u
top=$(pwd)
. "$top/selftests/lib/tap.sh"
. "$top/selftests/collector/tls_certs.sh"
K=${KPPROF:-$top/build/user/kpprof/kpprof}
d=$(mktemp -d /tmp/kpprof-tls-args.XXXXXX)
trap 'rm -rf "$d"' EXIT
tap_plan
tls_certs "$d" || { tap_fail "openssl made the test certificates"; tap_done; }

# refused NAME PATTERN ARGS...: serve exits non-zero, before listening,
# with a line matching PATTERN.
refused() {
	local name=$1 pat=$2 o rc
	shift 2
	o=$(timeout 20 "$K" serve "$@" 2>&1)
	rc=$?
	if [ $rc != 0 ] && [ $rc != 124 ] && grep -qE -- "$pat" <<<"$o" && ! grep -q serving <<<"$o"; then
		tap_ok "$name: $(grep -E -- "$pat" <<<"$o" | head -1)"
	else
		tap_diag "rc $rc: $o"
		tap_fail "$name"
	fi
}
L=(--listen tls:127.0.0.1:0)
C=(--tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca.pem")

cp "$d/server.key" "$d/open.key"
chmod 644 "$d/open.key"
refused "a world-readable key is refused" "open.key: permissions 0644 are too open.*world-readable" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/open.key" --tls-client-ca "$d/ca.pem"
chmod 602 "$d/open.key"
refused "a world-writable key is refused" "open.key: permissions 0602 are too open" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/open.key" --tls-client-ca "$d/ca.pem"
refused "a missing certificate file" "--tls-cert $d/nope.pem: No such file" \
	"${L[@]}" --tls-cert "$d/nope.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca.pem"
refused "a missing key file" "--tls-key $d/nope.key: No such file" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/nope.key" --tls-client-ca "$d/ca.pem"
refused "a missing client CA file" "--tls-client-ca $d/nope.pem: No such file" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/nope.pem"
refused "a key that is not the certificate's" "wrong.key does not match the certificate of --tls-cert" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/wrong.key" --tls-client-ca "$d/ca.pem"
refused "a certificate file that is not PEM" "--tls-cert $d/openssl.cnf: not a PEM certificate" \
	"${L[@]}" --tls-cert "$d/openssl.cnf" --tls-key "$d/server.key" --tls-client-ca "$d/ca.pem"
refused "a client CA file with no certificate" "--tls-client-ca $d/openssl.cnf: no PEM certificate" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/openssl.cnf"
refused "a leaf certificate as client CA" "--tls-client-ca $d/good.pem: /CN=scraper is not a CA" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/good.pem"
refused "every bad file named in one run" "wrong.key does not match|nope.pem: No such" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/wrong.key" --tls-client-ca "$d/nope.pem"
o=$(timeout 20 "$K" serve "${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/wrong.key" \
	--tls-client-ca "$d/nope.pem" 2>&1)
[ "$(grep -c 'kpprof serve: --tls-' <<<"$o")" = 2 ] && tap_ok "... both of them" ||
	{ tap_diag "$o"; tap_fail "both bad files named"; }
# The client CA decides who sees every process: a file others may write
# (or that another user owns) would let a local user add a CA of their own
# and, from the next start, read every profile through the tls: port.
cp "$d/ca.pem" "$d/ca-open.pem"
chmod 666 "$d/ca-open.pem"
refused "a world-writable client CA file is refused" \
	"--tls-client-ca $d/ca-open.pem: permissions 0666 let others write it" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca-open.pem"
chmod 664 "$d/ca-open.pem"
refused "a group-writable client CA file is refused" \
	"--tls-client-ca $d/ca-open.pem: permissions 0664 let others write it" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca-open.pem"
if [ "$(id -u)" = 0 ]; then
	cp "$d/ca.pem" "$d/ca-theirs.pem"
	chmod 644 "$d/ca-theirs.pem"
	chown 65534 "$d/ca-theirs.pem"
	refused "a client CA file owned by another user is refused" \
		"--tls-client-ca $d/ca-theirs.pem: owned by uid 65534" \
		"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca-theirs.pem"
else
	tap_skip "a client CA file owned by another user" "needs root to chown"
fi
# A FIFO (or a device) in place of a file: refused at once, not waited on
# (opening a FIFO for reading blocks until someone writes to it).
mkfifo -m 600 "$d/fifo"
refused "a FIFO as --tls-key" "--tls-key $d/fifo: not a regular file" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/fifo" --tls-client-ca "$d/ca.pem"
refused "a FIFO as --tls-cert" "--tls-cert $d/fifo: not a regular file" \
	"${L[@]}" --tls-cert "$d/fifo" --tls-key "$d/server.key" --tls-client-ca "$d/ca.pem"
refused "a FIFO as --tls-client-ca" "--tls-client-ca $d/fifo: not a regular file" \
	"${L[@]}" --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/fifo"
refused "an empty --tls-client-name (it would match no certificate)" \
	"--tls-client-name '': an empty name matches no certificate" \
	"${L[@]}" "${C[@]}" --tls-client-name scraper --tls-client-name ""
refused "tls: without the files" "tls: needs --tls-cert, --tls-key and --tls-client-ca" \
	"${L[@]}" --tls-cert "$d/server.pem"
refused "TLS files without a tls: listener" "--tls-\\* options without a --listen tls:" \
	--listen 127.0.0.1:0 "${C[@]}"
refused "a plain non-loopback listener still needs --insecure-remote, and says tls:" \
	"--listen tls:10.99.0.1:0 with --tls-cert" --listen 10.99.0.1:0

# The good files pass these checks: what stops the server here is the
# missing module (or, with one, the timeout), never a TLS file.
o=$(timeout 5 "$K" serve "${L[@]}" "${C[@]}" --tls-client-name scraper 2>&1)
rc=$?
if ! grep -q -- '--tls-' <<<"$o" && { grep -q 'serving https://127.0.0.1:[0-9]*/debug/pprof/' <<<"$o" || [ $rc = 124 ]; }; then
	tap_ok "good files accepted ($(head -1 <<<"$o"))"
else
	tap_diag "rc $rc: $o"
	tap_fail "good files refused"
fi
tap_done
