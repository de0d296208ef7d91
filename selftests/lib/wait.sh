# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Waiting for a condition instead of sleeping a fixed time: a fixed sleep
# is too short on a loaded machine (or under ASan in TCG) and wastes time
# on an idle one.  Source it, then:
#
#   wait_for SECONDS CMD...   runs CMD every 0.1 s until it exits 0 (returns
#                             0) or SECONDS pass (returns 1; CMD is tried a
#                             last time at the deadline).
#   wait_sigcaught PID SIG SECONDS
#                             waits until process PID has a handler for
#                             signal number SIG (its SigCgt in
#                             /proc/PID/status): a background job of a
#                             script starts with SIGINT ignored, so a SIGINT
#                             sent before its handler exists is lost.
# Bounds are generous (tens of seconds): they only limit how long a broken
# run takes to fail.  Works in bash and dash.

wait_for() {
	local secs="$1" end
	shift
	end=$(($(date +%s) + secs))
	while ! "$@"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			"$@"
			return
		fi
		sleep 0.1
	done
}

# sigcaught PID SIG: exit 0 if PID catches signal SIG.
sigcaught() {
	local mask
	mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
	[ -n "$mask" ] && [ $(((0x$mask >> ($2 - 1)) & 1)) = 1 ]
}

wait_sigcaught() {
	wait_for "$3" sigcaught "$1" "$2"
}
