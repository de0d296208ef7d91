# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Throwaway certificates for the mutual-TLS tests of `kpprof serve`, made
# with the openssl CLI.  Source it, then `tls_certs DIR`; DIR gets (PEM,
# keys mode 0600, EC P-256, valid two days unless said):
#   ca.pem ca.key               the client (and server) CA
#   server.pem server.key       CN=localhost, IP 127.0.0.1 and 10.99.0.1, serverAuth
#   good.pem good.key           CN=scraper, issued by the CA, clientAuth
#   other.pem other.key         CN=intruder, issued by the CA, clientAuth
#   self.pem self.key           CN=scraper, self-signed (no CA issued it)
#   expired.pem expired.key     CN=scraper, issued by the CA, expired in 2020
#   wrong.key                   a key that matches no certificate
# Returns non-zero (after saying why) if openssl fails.
#
# tls_serve OUT ARGS...: starts `$K serve ARGS...` (ARGS with a plain and
# a tls: listener) in the background, output in OUT/serve.out, and waits
# (30 s at most) for both; sets srv (its pid), url, turl and tport (the
# TLS port), or fails the test ("server did not start") and ends it.

tls_certs() {
	local d=$1 n
	mkdir -p "$d/ca-db" || return 1
	cat >"$d/openssl.cnf" <<-'EOF'
	[req]
	distinguished_name = dn
	[dn]
	[ca_ext]
	basicConstraints = critical, CA:TRUE
	keyUsage = critical, keyCertSign, cRLSign
	subjectKeyIdentifier = hash
	[server_ext]
	basicConstraints = critical, CA:FALSE
	keyUsage = critical, digitalSignature
	extendedKeyUsage = serverAuth
	subjectAltName = IP:127.0.0.1, IP:10.99.0.1, DNS:localhost
	[client_ext]
	basicConstraints = critical, CA:FALSE
	keyUsage = critical, digitalSignature
	extendedKeyUsage = clientAuth
	# `openssl ca` only: a certificate with dates in the past
	[ca]
	default_ca = test_ca
	[test_ca]
	database = $ENV::TLS_CERTS_DB/index.txt
	new_certs_dir = $ENV::TLS_CERTS_DB
	serial = $ENV::TLS_CERTS_DB/serial
	default_md = sha256
	policy = any
	unique_subject = no
	[any]
	commonName = supplied
	EOF
	: >"$d/ca-db/index.txt"
	echo 1000 >"$d/ca-db/serial"
	(
		set -e
		cd "$d"
		export TLS_CERTS_DB=$d/ca-db OPENSSL_CONF=$d/openssl.cnf
		for n in ca server good other self expired wrong; do
			openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $n.key
			chmod 600 $n.key
		done
		openssl req -new -x509 -key ca.key -subj /CN=kpprof-test-ca -days 2 \
			-config openssl.cnf -extensions ca_ext -out ca.pem
		sign() { # NAME CN EXT
			openssl req -new -key "$1.key" -subj "/CN=$2" -config openssl.cnf -out "$1.csr"
			openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
				-extfile openssl.cnf -extensions "$3" -out "$1.pem"
		}
		sign server localhost server_ext
		sign good scraper client_ext
		sign other intruder client_ext
		openssl req -new -x509 -key self.key -subj /CN=scraper -days 2 \
			-config openssl.cnf -extensions client_ext -out self.pem
		openssl req -new -key expired.key -subj /CN=scraper -config openssl.cnf -out expired.csr
		openssl ca -batch -config openssl.cnf -cert ca.pem -keyfile ca.key -in expired.csr \
			-startdate 20200101000000Z -enddate 20200102000000Z \
			-extfile openssl.cnf -extensions client_ext -notext -out expired.pem
	) >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log"; return 1; }
}

tls_serve() {
	local o=$1
	shift
	"$K" serve "$@" >"$o/serve.out" 2>&1 &
	srv=$!
	wait_for 30 grep -q "serving https" "$o/serve.out"
	url=$(sed -nE 's/.*serving (http:[^ ]*).*/\1/p' "$o/serve.out" | head -1)
	turl=$(sed -nE 's/.*serving (https:[^ ]*).*/\1/p' "$o/serve.out" | head -1)
	if [ -z "$url" ] || [ -z "$turl" ]; then
		tap_diag "$(cat "$o/serve.out")"
		tap_fail "server did not start"
		tap_done
	fi
	tport=${turl##*:}
	tport=${tport%%/*}
}
