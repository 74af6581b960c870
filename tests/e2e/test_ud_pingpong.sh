#!/usr/bin/env bash
# xroce-ud-pingpong against itself across a veth pair between two namespaces
# (1500-byte MTU: the port's MTU is 1024): UD SENDs of the default size
# (1024, as ibv_ud_pingpong), 1, 3 and 1023 bytes (padded), 512 and 1024, 100
# round trips each, polling and sleeping on completion events (-e), with
# --chk (every echoed byte, and each receive checked as a UD receive:
# XR_WC_GRH, the peer's QPN as src_qp, the 40-byte GRH with the IPv4 header
# naming both addresses and the datagram's length, xr_init_ah_from_wc
# answering the peer), and once over IPv6 link-local GIDs (-g 0: the GRH is
# the IPv6 header). Both sides must print ibv_ud_pingpong's lines (the local
# address line with its ':' before GID) and the summary with the right totals.
# After each run, each end's engine must have sent and received exactly one
# frame per message (no acknowledgements, no retransmissions) and dropped
# none for a wrong Q_Key, a missing receive or a malformed header.
# Failures that must be reported, not hang or pass:
#   - -s 1025, above the port's MTU: refused before any exchange;
#   - -m (UD has no path MTU): a usage error;
#   - 1024-byte SENDs into 512-byte buffers: the server's receive completes
#     with a local length error; the client's SEND completed (a datagram is
#     not acknowledged) and it waits for an echo until stopped.
# Last, with the link MTU raised to 3000 (port MTU 2048): 2048-byte datagrams
# with --chk, and -s 2049 refused.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-ud-pingpong
xroce=$BUILD/xroce
iters=100

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ud_pingpong "$pingpong" "$xroce"

netns_pair udp "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh
PINGPONG_LOCAL_GID_SEP=": "

# The link-local addresses (the GIDs at index 0) answer once DAD is done.
e2e_wait_dad

# check_frames RUN: each end's engine, whose counters start at zero when a
# process opens the device, sent and received exactly one frame per message
# of the run that just ended, and dropped none.
check_frames() {
	check_counters "$1" "$iters" engine_rx_bad_qkey engine_rx_no_recv engine_rx_malformed \
			engine_retransmits drop_bad_length drop_unknown_qp drop_qp_state
}

for run in "" "-s 1" "-s 3 --chk" "-s 1023 --chk" "-s 1024 --chk" "-s 512 -e" "-s 1 -e --chk" \
	"-s 1024 -e --chk" "-g 0 -s 1024 --chk"; do
	size=1024
	[[ $run =~ -s\ ([0-9]+) ]] && size=${BASH_REMATCH[1]}
	run_must_pass "$size" "$run"
	if [[ $run == *"-g 0"* ]]; then
		grep -q "^  remote address: .*GID fe80::" "$logdir/client.log" ||
			fail "'$run': the client did not use the server's link-local GID"
	fi
	check_frames "$run"
	echo "ok: '${run:-(defaults)}' ($size bytes), $iters frames each way: $(grep 'usec/iter' "$logdir/client.log")"
done

# Above the port's MTU: refused at once, with ibv_ud_pingpong's reason.
status=0
netns_exec "$NETNS_A" timeout 30 "$pingpong" -d "$VETH_A" -g 1 -s 1025 >"$logdir/server.log" 2>&1 ||
	status=$?
if [ "$status" -ne 1 ] ||
	! grep -q "requested size larger than port MTU (1024)" "$logdir/server.log"; then
	cat "$logdir/server.log"
	fail "-s 1025: exit $status, expected 1 and the port MTU named"
fi
status=0
netns_exec "$NETNS_A" timeout 30 "$pingpong" -d "$VETH_A" -g 1 -m 1024 >"$logdir/server.log" 2>&1 ||
	status=$?
if [ "$status" -ne 1 ] || ! grep -q "^Usage:" "$logdir/server.log"; then
	cat "$logdir/server.log"
	fail "-m 1024: exit $status, expected a usage error"
fi
echo "ok: -s 1025 (above the MTU) and -m are refused"

# 1024-byte datagrams into 512-byte buffers (552 with the GRH space).
netns_exec "$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g 1 -n $iters -s 512 \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
# nsenter directly: $! is then timeout itself, which passes our SIGTERM on.
nsenter --net="/var/run/netns/$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g 1 -n $iters \
	-s 1024 "$ADDR_A" >"$logdir/client.log" 2>&1 &
client_pid=$!
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
# The client has nothing to wait for any more: stop it as a user would.
for _ in $(seq 50); do
	grep -q "remote address:" "$logdir/client.log" && break
	sleep 0.1
done
sleep 0.5
kill -TERM "$client_pid" 2>/dev/null
client_status=0
wait "$client_pid" || client_status=$?
client_pid=""
if [ "$server_status" -ne 1 ] ||
	! grep -q "receive completion failed: local length error" "$logdir/server.log" ||
	[ "$client_status" -ne 1 ] ||
	! grep -q "interrupted by signal 15" "$logdir/client.log" ||
	! grep -q "sends completed 1/$iters, receives completed 0/$iters" "$logdir/client.log"; then
	e2e_show_logs
	fail "oversized datagram: server exit $server_status, client exit $client_status (the server must fail with a local length error, the client's SEND must have completed)"
fi
echo "ok: an oversized datagram fails the server's receive with a local length error:"
grep -h "completion failed\|was waiting" "$logdir/server.log" "$logdir/client.log" | sed 's/^/    /'

# A 3000-byte link MTU gives a port MTU of 2048: the largest datagram grows with it.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link set "${end#*:}" mtu 3000 || fail "could not set ${end#*:}'s MTU to 3000"
done
run_must_pass 2048 "-s 2048 --chk"
check_frames "MTU 3000, -s 2048 --chk"
status=0
netns_exec "$NETNS_A" timeout 30 "$pingpong" -d "$VETH_A" -g 1 -s 2049 >"$logdir/server.log" 2>&1 ||
	status=$?
if [ "$status" -ne 1 ] ||
	! grep -q "requested size larger than port MTU (2048)" "$logdir/server.log"; then
	cat "$logdir/server.log"
	fail "MTU 3000, -s 2049: exit $status, expected 1 and the port MTU 2048 named"
fi
echo "ok: with a 3000-byte link MTU, 2048-byte datagrams pass with --chk and 2049 are refused"
echo "test_ud_pingpong: PASS"
