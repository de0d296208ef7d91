# SPDX-License-Identifier: GPL-2.0
# The preamble of the shim's host tests (selftests/shim/*_host_test.sh),
# sourced first thing, without arguments:
#
#   [shim_defaults="LIB..."] . "$(dirname "$0")/lib.sh"
#
# sets top (the tree), d (where this directory's programs are built:
# build/selftests/shim), tmp (a fresh directory
# /tmp/shim-NAME.XXXXXX, NAME the test's name, removed at exit), sources
# selftests/lib/tap.sh and test_config.sh (shim_test_config), and, when the
# test got no arguments, makes its positional parameters the shim builds
# named in shim_defaults (default: libkpprof.so libkpprof-ubsan.so; empty:
# none), each under build/user/shim/.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
d=$top/build/selftests/shim
. "$top/selftests/lib/tap.sh"
. "$top/selftests/shim/test_config.sh"
if [ $# = 0 ]; then
	for _l in ${shim_defaults-libkpprof.so libkpprof-ubsan.so}; do
		set -- "$@" "$top/build/user/shim/$_l"
	done
	unset _l
fi
tmp=$(mktemp -d "/tmp/shim-$(basename "$0" _host_test.sh).XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shim_run SECONDS PRELOAD [VAR=VALUE...] CMD...: CMD in test mode under
# PRELOAD (config $tmp/cfg, records to $tmp/sink, emptied first), its
# environment given by env after timeout (so neither writes records of its
# own), killed after SECONDS (status 124, or 137 five seconds later); stdout
# in $tmp/out, stderr in $tmp/err, exit status in $tmp/rc, records decoded
# in $tmp/dump (empty if none).
shim_run() {
	local limit=$1 pre=$2
	shift 2
	rm -f "$tmp/sink"
	timeout -k 5 "$limit" env KPPROF_TEST_CONFIG="$tmp/cfg" KPPROF_TEST_SINK="$tmp/sink" \
		LD_PRELOAD="$pre" "$@" >"$tmp/out" 2>"$tmp/err"
	echo $? >"$tmp/rc"
	if [ -f "$tmp/sink" ]; then
		"$d/shim_reader" --decode "$tmp/sink" >"$tmp/dump"
	else
		: >"$tmp/dump"
	fi
}
