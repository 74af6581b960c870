#!/usr/bin/env bash
# xroce-uc-pingpong against itself across a veth pair between two namespaces
# (1500-byte MTU, path MTU 1024): UC SENDs of the default size (4096, as
# ibv_uc_pingpong), 1, 1024, 4096 and 65536 bytes (1 to 64 packets a
# message), 100 round trips each, polling and sleeping on completion events
# (-e), with --chk (every echoed byte, and each receive a plain SEND), and
# once over the IPv6 link-local GIDs (-g 0). Both sides must print
# ibv_uc_pingpong's lines and the summary with the right totals. After each
# run, each end's engine must have sent and received exactly the packets of
# its 100 messages (UC acknowledges nothing), retransmitted nothing, given
# up no message (engine_uc_dropped_msgs 0) and dropped no frame.
# Failures that must be reported, not hang or pass:
#   - 4096-byte SENDs into 1024-byte buffers: the server's engine drops the
#     message whole and silently (engine_uc_dropped_msgs 1, no completion);
#     the client's SEND completed (UC is not acknowledged) and both wait for
#     a message until stopped.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-uc-pingpong
xroce=$BUILD/xroce
iters=100
mtu=1024

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_uc_pingpong "$pingpong" "$xroce"

netns_pair ucp "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh
PINGPONG_LOCAL_GID_SEP=", "

# The link-local addresses (the GIDs at index 0) answer once DAD is done.
e2e_wait_dad

# check_frames RUN FRAMES: each end's engine, whose counters start at zero
# when a process opens the device, sent and received exactly FRAMES frames
# in the run that just ended (no ACK, no retransmission), gave up no
# message and dropped nothing; XDP dropped nothing either.
check_frames() {
	check_counters "$1" "$2" engine_retransmits engine_timeouts engine_uc_dropped_msgs \
		engine_seq_naks_tx engine_dup_requests engine_rx_malformed engine_rx_unknown_qp \
		engine_rx_bad_state engine_rx_bad_icrc engine_rx_no_recv drop_bad_length \
		drop_unknown_qp drop_qp_state drop_bad_icrc dups_answered acks_absorbed
}

for run in "" "-s 1" "-s 1 --chk" "-s 1024 --chk" "-s 4096 --chk" "-s 65536 --chk" "-s 1 -e" \
	"-s 4096 -e --chk" "-s 65536 -e --chk" "-g 0 -s 65536 --chk"; do
	size=4096
	[[ $run =~ -s\ ([0-9]+) ]] && size=${BASH_REMATCH[1]}
	run_must_pass "$size" "$run"
	if [[ $run == *"-g 0"* ]]; then
		grep -q "^  remote address: .*GID fe80::" "$logdir/client.log" ||
			fail "'$run': the client did not use the server's link-local GID"
	fi
	packets=$(((size + mtu - 1) / mtu))
	check_frames "$run" $((packets * iters))
	echo "ok: '${run:-(defaults)}' ($size bytes, $packets packets a message), $((packets * iters)) frames each way, none acknowledged or dropped: $(grep 'usec/iter' "$logdir/client.log")"
done

# 4096-byte SENDs (4 packets) into 1024-byte buffers: the server's engine
# gives the message up; nothing completes there, and only the client's SEND
# completes. Both then wait for a message that never comes: stop them.
# nsenter directly: $! is then timeout itself, which passes our SIGTERM on.
nsenter --net="/var/run/netns/$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g 1 -n $iters \
	-s 1024 >"$logdir/server.log" 2>&1 &
server_pid=$!
nsenter --net="/var/run/netns/$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g 1 -n $iters \
	-s 4096 "$ADDR_A" >"$logdir/client.log" 2>&1 &
client_pid=$!
for _ in $(seq 100); do
	grep -q "remote address:" "$logdir/client.log" && break
	sleep 0.1
done
sleep 1
dropped=$(e2e_stat "$NETNS_A" "$VETH_A" engine_uc_dropped_msgs)
received=$(e2e_stat "$NETNS_A" "$VETH_A" engine_rx_frames)
kill -TERM "$client_pid" "$server_pid" 2>/dev/null
client_status=0 server_status=0
wait "$client_pid" || client_status=$?
wait "$server_pid" || server_status=$?
client_pid="" server_pid=""
if [ "$server_status" -ne 1 ] || [ "$client_status" -ne 1 ] ||
	! grep -q "interrupted by signal 15" "$logdir/server.log" ||
	! grep -q "sends completed 0/$iters, receives completed 0/$iters" "$logdir/server.log" ||
	! grep -q "interrupted by signal 15" "$logdir/client.log" ||
	! grep -q "sends completed 1/$iters, receives completed 0/$iters" "$logdir/client.log" ||
	[ "$dropped" != 1 ] || [ "$received" != 4 ]; then
	e2e_show_logs
	fail "oversized SEND: server exit $server_status, client exit $client_status, the server's engine received $received frames and gave up $dropped messages (expected: both stopped by the signal, the client's SEND completed, nothing received by the server, 4 frames received and 1 message given up)"
fi
echo "ok: a 4-packet SEND into 1024-byte buffers is dropped whole by the receiver (engine_uc_dropped_msgs 1, no completion); the sender's SEND completed:"
grep -h "was waiting" "$logdir/server.log" "$logdir/client.log" | sed 's/^/    /'
echo "test_uc_pingpong: PASS"
