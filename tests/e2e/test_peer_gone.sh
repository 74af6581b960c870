#!/usr/bin/env bash
# A peer that goes away, end to end through the middlebox (namespaces
# A <-> M <-> B, xroce attached in A and B; reliability_e2e's client in A,
# server in B, retry_cnt 3, ACK timeout 14 = 67 ms):
#   1. killed: the server is killed (SIGKILL) after connecting;
#   2. detached: the server stays, but its XDP program is detached
#      (xroce detach), so B's kernel answers with ICMP port unreachable.
# Each time the client's SEND must end in RETRY_EXC_ERR within
# (retry_cnt + 1) ACK timeouts (+ slack), a SEND queued behind it and a WRITE
# posted later in WR_FLUSH_ERR, and the middlebox must have seen the first
# request sent exactly retry_cnt + 1 times, and once more for each tail-loss
# probe the client's engine counted (it has no round-trip estimate here,
# so none is expected; a probe is not an ACK timer expiry, which retry_cnt
# counts).
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/reliability_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))

retry_cnt=3

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_peer_gone "$e2e" "$middlebox" "$xroce"

netns_middlebox_pair pgo "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# run_gone HOW: the server in B connects, then goes away HOW (kill | detach).
run_gone() {
	local how=$1 client_status=0
	# The previous run's server log must not answer the wait below (the new
	# server truncates it only once it is started), or the new server is
	# signalled before it connected.
	rm -f "$logdir/server.log" "$logdir/client.log"
	mb_start
	# No timeout(1) in between: the signals must reach the server itself, whose
	# own waits are bounded.
	nsenter --net="/var/run/netns/$NETNS_B" "$e2e" server "$VETH_B" -p "$port" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	nsenter --net="/var/run/netns/$NETNS_A" timeout 120 "$e2e" client "$VETH_A" "$ADDR_B" \
		-p "$port" --case peer-gone --retry-cnt "$retry_cnt" >"$logdir/client.log" 2>&1 &
	client_pid=$!
	port=$((port + 1))
	for _ in $(seq 100); do
		grep -q 'waiting to be killed' "$logdir/server.log" && break
		sleep 0.1
	done
	grep -q "waiting to be killed" "$logdir/server.log" ||
		fail "$how: the server did not connect: $(cat "$logdir/server.log" "$logdir/client.log")"
	if [ "$how" = kill ]; then
		kill -KILL "$server_pid"
	else
		netns_exec "$NETNS_B" "$xroce" detach "$VETH_B" >/dev/null || fail "xroce detach $VETH_B failed"
		kill -USR1 "$server_pid"
	fi
	wait "$client_pid" || client_status=$?
	client_pid=""
	# Quietly: the shell would report the killed job.
	{ e2e_stop_pid "$server_pid"; } 2>/dev/null
	server_pid=""
	mb_stop
	e2e_show_logs "$how"
	[ "$client_status" -eq 0 ] || fail "$how: client exit $client_status (124 = timed out)"
	grep -q '^\[client\] PASS' "$logdir/client.log" || fail "$how: no PASS line from the client"
	local peer sends probes
	peer=$(client_qpn 0 peer)
	sends=$(mb_qp a2b "$peer" first_psn_sends)
	probes=$(e2e_stat "$NETNS_A" "$VETH_A" engine_tail_probes)
	[ "$sends" = $((retry_cnt + 1 + probes)) ] ||
		fail "$how: the first request went out ${sends:-0} times, expected 1 + $retry_cnt retransmissions + $probes probes"
	echo "ok   $how: RETRY_EXC_ERR after $retry_cnt retransmissions within the bound; later WRs flushed"
}

run_gone kill
run_gone detach
echo "test_peer_gone: PASS"
