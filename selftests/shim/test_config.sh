# SPDX-License-Identifier: GPL-2.0
# Sourced by the shim's host tests and bench.sh.
#
#   shim_test_config MEM_RATE BLOCK_RATE MUTEX_FRACTION
#
# writes to stdout the config page that KPPROF_TEST_CONFIG names (the shim
# reads it instead of the module's): struct kpprof_config_page of
# ioctl/kpprof.h with seq 2 (even: published), the ABI version of that
# header, cycle 0, the three rates, max_stack_depth 64, cycle_period_ms 0,
# flags 7 (heap, block and mutex profiles on), padded to a page.
shim_test_config() {
	local abi
	abi=$(sed -n 's/^#define KPPROF_ABI_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
		"$(dirname "${BASH_SOURCE[0]}")/../../ioctl/kpprof.h")
	/usr/bin/python3 -c 'import struct, sys
m, b, x, abi = (int(a) for a in sys.argv[1:5])
page = struct.pack("<IIQQQIIII16x", 2, abi, 0, m, b, x, 64, 0, 7)
sys.stdout.buffer.write(page.ljust(4096, b"\0"))' "$1" "$2" "$3" "$abi"
}
