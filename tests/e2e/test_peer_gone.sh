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
# request sent exactly retry_cnt + 1 times.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/reliability_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))

retry_cnt=3

fail() {
	echo "test_peer_gone: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for bin in "$e2e" "$middlebox" "$xroce"; do
	[ -x "$bin" ] || fail "$bin is missing (make all)"
done

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-peer-gone.XXXXXX)
mb_pid="" server_pid="" client_pid=""
stop_pid() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	stop_pid "$client_pid"
	stop_pid "$server_pid"
	stop_pid "$mb_pid"
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts the middlebox, impairing nothing; its log is $logdir/mb.log.
start_middlebox() {
	nsenter --net="/var/run/netns/$NETNS_M" "$middlebox" "$VETH_MA" "$VETH_MB" \
		--max-seconds 300 >"$logdir/mb.log" 2>&1 &
	mb_pid=$!
	for _ in $(seq 50); do
		grep -q '^middlebox: forwarding' "$logdir/mb.log" && return 0
		kill -0 "$mb_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$logdir/mb.log"
	fail "the middlebox did not start"
}

# Stops the middlebox: it prints its counters and must exit 0.
stop_middlebox() {
	local status=0
	kill -TERM "$mb_pid"
	wait "$mb_pid" || status=$?
	mb_pid=""
	[ "$status" -eq 0 ] || fail "the middlebox exited with status $status"
	grep -q '^dir a2b ' "$logdir/mb.log" || fail "the middlebox printed no counters"
}

# mb_qp DIR QPN KEY: a counter of one destination QP.
mb_qp() {
	awk -v d="$1" -v q="$2" -v k="$3" '$1 == "qp" && $2 == d && $3 == q { for (i = 4; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"$logdir/mb.log"
}

# The QP number the client reports for pair N: "local" (its own) or "peer".
client_qpn() {
	awk -v n="$1" -v w="$2" '$1 == "[client]" && $2 == "qp" && $3 == n { for (i = 4; i < NF; i++) if ($i == w) print $(i + 1) }' \
		"$logdir/client.log"
}

netns_middlebox_pair pgo "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" ||
	fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" attach "${end#*:}" >/dev/null || fail "xroce attach ${end#*:} failed"
done

# run_gone HOW: the server in B connects, then goes away HOW (kill | detach).
run_gone() {
	local how=$1 client_status=0
	start_middlebox
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
	{ stop_pid "$server_pid"; } 2>/dev/null
	server_pid=""
	stop_middlebox
	for side in server client; do
		echo "--- $how $side:"
		sed 's/^/    /' "$logdir/$side.log"
	done
	[ "$client_status" -eq 0 ] || fail "$how: client exit $client_status (124 = timed out)"
	grep -q '^\[client\] PASS' "$logdir/client.log" || fail "$how: no PASS line from the client"
	local peer sends
	peer=$(client_qpn 0 peer)
	sends=$(mb_qp a2b "$peer" first_psn_sends)
	[ "$sends" = $((retry_cnt + 1)) ] ||
		fail "$how: the first request went out ${sends:-0} times, expected 1 + $retry_cnt retransmissions"
	echo "ok   $how: RETRY_EXC_ERR after $retry_cnt retransmissions within the bound; later WRs flushed"
}

run_gone kill
run_gone detach
echo "test_peer_gone: PASS"
