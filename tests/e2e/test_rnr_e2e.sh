#!/usr/bin/env bash
# RNR NAK flow end to end through the middlebox (namespaces A <-> M <-> B,
# xroce attached in A and B; reliability_e2e's client in A, server in B):
#   1. rnr-late: the receiver posts its first receive 200 ms after the sender
#      posts a SEND (rnr_retry 7, min_rnr_timer 12 = 0.64 ms): the SEND
#      succeeds, and the middlebox saw RNR NAKs from B to the client's QP.
#   2. rnr-exhaust: rnr_retry 0..6 on seven pairs, no receive ever posted
#      (min_rnr_timer 1 = 10 us): each SEND ends in RNR_RETRY_EXC_ERR, and the
#      middlebox counted exactly rnr_retry + 1 RNR NAKs to that QP.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/reliability_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))

fail() {
	echo "test_rnr_e2e: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for bin in "$e2e" "$middlebox" "$xroce"; do
	[ -x "$bin" ] || fail "$bin is missing (make all)"
done

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-rnr-e2e.XXXXXX)
mb_pid="" server_pid=""
stop_pid() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
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

# run_case NAME CLIENT_ARGS...: server in B, client in A; both must pass.
run_case() {
	local name=$1 server_status=0 client_status=0
	shift
	nsenter --net="/var/run/netns/$NETNS_B" timeout 200 "$e2e" server "$VETH_B" -p "$port" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	nsenter --net="/var/run/netns/$NETNS_A" timeout 200 "$e2e" client "$VETH_A" "$ADDR_B" \
		-p "$port" "$@" >"$logdir/client.log" 2>&1 || client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
	port=$((port + 1))
	for side in server client; do
		echo "--- $name $side:"
		sed 's/^/    /' "$logdir/$side.log"
	done
	[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ] ||
		fail "$name: server exit $server_status, client exit $client_status (124 = timed out)"
	grep -q '^\[client\] PASS' "$logdir/client.log" && grep -q '^\[server\] PASS' "$logdir/server.log" ||
		fail "$name: no PASS line on both sides"
}

# The QP number the client reports for pair N: "local" (its own) or "peer".
client_qpn() {
	awk -v n="$1" -v w="$2" '$1 == "[client]" && $2 == "qp" && $3 == n { for (i = 4; i < NF; i++) if ($i == w) print $(i + 1) }' \
		"$logdir/client.log"
}

netns_middlebox_pair rnr "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" ||
	fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" attach "${end#*:}" >/dev/null || fail "xroce attach ${end#*:} failed"
done

# 1. A late receive.
start_middlebox
run_case rnr-late --case rnr-late
stop_middlebox
qpn=$(client_qpn 0 local)
naks=$(mb_qp b2a "$qpn" rnr_naks)
[ -n "$naks" ] && [ "$naks" -ge 1 ] || fail "rnr-late: ${naks:-no} RNR NAKs to QP $qpn, expected at least 1"
grep -q '^\[client\] rnr-late: SEND completed with success' "$logdir/client.log" ||
	fail "rnr-late: no successful SEND"
echo "ok   rnr-late: the SEND succeeded after $naks RNR NAKs"

# 2. Never a receive: the RNR retry budget runs out, exactly.
start_middlebox
run_case rnr-exhaust --case rnr-exhaust
stop_middlebox
for retry in 0 1 2 3 4 5 6; do
	qpn=$(client_qpn "$retry" local)
	grep -q "^\[client\] rnr-exhaust: rnr_retry $retry qp $qpn: \"RNR retry counter exceeded\"" "$logdir/client.log" ||
		fail "rnr-exhaust: rnr_retry $retry: no RNR_RETRY_EXC_ERR"
	naks=$(mb_qp b2a "$qpn" rnr_naks)
	[ "$naks" = $((retry + 1)) ] ||
		fail "rnr-exhaust: rnr_retry $retry: ${naks:-no} RNR NAKs to QP $qpn, expected $((retry + 1))"
	echo "ok   rnr-exhaust: rnr_retry $retry: RNR_RETRY_EXC_ERR after $naks RNR NAKs"
done
echo "test_rnr_e2e: PASS"
