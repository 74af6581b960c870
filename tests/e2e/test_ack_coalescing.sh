#!/usr/bin/env bash
# ACKs ride with the answer. xroce-pingpong (the application polls its CQ,
# so its thread runs the engine) makes 10,000 round trips of 64 B: each side
# sends a SEND and an ACK per iteration. With the default ACK hold, the ACK
# a round makes waits in the TX ring for the SEND the application answers
# with, and both leave in one system call: on each end the engine sends at
# least 1.5 frames per system call it makes (engine_tx_frames over
# engine_syscalls; without coalescing each frame costs a kick of its own, and
# the engine's other calls come on top). Then XROCE_ACK_HOLD_US=0 (every
# round kicks what it made), 2,000 round trips: there the ratio must stay
# below 1.2 on both ends, which shows the check above measures the hold.
# Both runs check every byte and the iteration count (run_must_pass), so a
# held ACK that never left would fail them.
# Last, exit_after_recv: after 200 answered round trips (so the server's
# engine holds its ACKs), the server takes one more SEND and calls exit(0)
# with its QP, CQs and device open; the client's last SEND must still
# complete successfully without any retransmission (engine_retransmits and
# engine_timeouts 0 on its end): the ACK leaves as the process exits, not
# in answer to a retransmission after a timeout.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce
exit_after_recv=$BUILD/tests/exit_after_recv
port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ack_coalescing "$pingpong" "$xroce" "$exit_after_recv"

netns_pair ack "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

PINGPONG_LOCAL_GID_SEP=", "
# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh

# frames_per_syscall NS DEV: engine_tx_frames / engine_syscalls, as a decimal, or "none".
frames_per_syscall() {
	local frames syscalls
	frames=$(e2e_stat "$1" "$2" engine_tx_frames)
	syscalls=$(e2e_stat "$1" "$2" engine_syscalls)
	if [ -z "$frames" ] || [ -z "$syscalls" ] || [ "$syscalls" -eq 0 ]; then
		echo none
		return
	fi
	awk -v f="$frames" -v s="$syscalls" 'BEGIN { printf "%.2f", f / s }'
}

# check_ratio RUN OP LIMIT: every end's frames per syscall OP (ge or lt) LIMIT.
check_ratio() {
	local end ratio
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		ratio=$(frames_per_syscall "${end%%:*}" "${end#*:}")
		[ "$ratio" != none ] || fail "$1: ${end#*:}: no engine_tx_frames/engine_syscalls"
		awk -v r="$ratio" -v l="$3" -v op="$2" \
			'BEGIN { exit !((op == "ge") ? (r >= l) : (r < l)) }' ||
			fail "$1: ${end#*:}: $ratio frames per engine system call, expected $2 $3"
		echo "$1: ${end#*:}: $ratio frames per engine system call"
	done
}

iters=10000
run_must_pass 64 "-s 64"
check_ratio "default hold" ge 1.5

iters=2000
PINGPONG_RUN="env XROCE_ACK_HOLD_US=0"
run_must_pass 64 "-s 64"
check_ratio "XROCE_ACK_HOLD_US=0" lt 1.2

e2e_server_then_client 60 "$port" "$NETNS_A" "$NETNS_B" \
	"$exit_after_recv" server "$VETH_A" "$port" -- \
	"$exit_after_recv" client "$VETH_B" "$ADDR_A" "$port"
if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
	e2e_show_logs
	fail "exit_after_recv: server exit $server_status, client exit $client_status (124 = timed out)"
fi
rtx=$(e2e_stat "$NETNS_B" "$VETH_B" engine_retransmits)
tmo=$(e2e_stat "$NETNS_B" "$VETH_B" engine_timeouts)
[ "$rtx" = 0 ] && [ "$tmo" = 0 ] ||
	fail "exit_after_recv: the client retransmitted ($rtx frames, $tmo timeouts): the server's last ACK did not leave as it exited"
echo "ok: a receiver that exits with everything open still acknowledged its last message at once"
echo "test_ack_coalescing: PASS"
