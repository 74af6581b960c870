#!/usr/bin/env bash
# RC reliability end to end through an impairing middlebox: namespaces
# A <-veth-> M <-veth-> B, xroce attached in A and B, tests/e2e/middlebox.c
# bridging in M. reliability_e2e's client (initiator) runs in A, its server
# (target) in B.
#   1. mixed: 20,000 SEND / WRITE / WRITE_IMM / READ / CAS / FAA at 5% loss,
#      1% duplication, 2% reordering and 0.1% corruption in both directions:
#      all succeed, in order, exactly once (see reliability_e2e.c); the
#      middlebox must have impaired both directions and seen retransmissions.
#   2. atomic-ack: the middlebox drops the 1st and 3rd atomic ACK: the FAA and
#      the CAS are each retransmitted, return their original values, and apply
#      once.
#   3. idle: with a 4.3 s ACK timeout, operations between idle engines
#      complete in under 0.5 s.
# With --bench it only measures WRITE bandwidth at 0%, 1% and 5% loss.
# Needs root. Env: BUILD (build dir, default build), OPS (default 20000),
# SEED (default: random, printed); XROCE_XDP_FAST_PATH=0 (read by libxroce)
# keeps every frame in userspace, for comparison.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/reliability_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
ops=${OPS:-20000}
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
port=$((20000 + $$ % 20000))
bench=0
[ "${1:-}" = --bench ] && bench=1

fail() {
	echo "test_reliability_e2e: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for bin in "$e2e" "$middlebox" "$xroce"; do
	[ -x "$bin" ] || fail "$bin is missing (make all)"
done

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-reliability.XXXXXX)
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

# Starts the middlebox with impairment options ARGS; its log is $logdir/mb.log.
start_middlebox() {
	nsenter --net="/var/run/netns/$NETNS_M" "$middlebox" "$VETH_MA" "$VETH_MB" \
		--seed "$seed" --max-seconds 300 "$@" >"$logdir/mb.log" 2>&1 &
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

# mb_dir DIR KEY: a direction's counter; mb_qp DIR QPN KEY: one destination QP's.
mb_dir() {
	awk -v d="$1" -v k="$2" '$1 == "dir" && $2 == d { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"$logdir/mb.log"
}
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

show_middlebox() {
	echo "--- middlebox:"
	grep -v '^qp ' "$logdir/mb.log" | sed 's/^/    /'
}

netns_middlebox_pair rel "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" ||
	fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" attach "${end#*:}" >/dev/null || fail "xroce attach ${end#*:} failed"
done
echo "seed $seed (SEED=$seed reproduces the impairments and the plan)"

if [ "$bench" = 1 ]; then
	for loss in 0 1 5; do
		start_middlebox --loss "$loss"
		run_case "bench at $loss% loss" --bench --label "$loss%-loss" --seconds 3
		stop_middlebox
		echo "    middlebox: $(mb_dir a2b dropped) of $(mb_dir a2b roce) a2b and $(mb_dir b2a dropped) of $(mb_dir b2a roce) b2a RoCE frames dropped"
	done
	grep -h '^\[client\] bench' "$logdir"/client.log >/dev/null
	echo "test_reliability_e2e: bench done"
	exit 0
fi

# 1. The mixed workload through every impairment at once.
start_middlebox --loss 5 --dup 1 --reorder 2 --reorder-gap 3 --corrupt 0.1
run_case mixed --case mixed --ops "$ops" --seed "$seed"
stop_middlebox
show_middlebox
for dir in a2b b2a; do
	for counter in dropped duplicated reordered; do
		[ "$(mb_dir $dir $counter)" -gt 0 ] || fail "mixed: the middlebox $counter nothing $dir"
	done
	[ "$(mb_dir $dir socket_drops)" = 0 ] || fail "mixed: the middlebox lost frames it did not mean to ($dir)"
done
[ "$(($(mb_dir a2b corrupted) + $(mb_dir b2a corrupted)))" -gt 0 ] || fail "mixed: nothing was corrupted"
[ "$(mb_dir a2b retransmits)" -gt 0 ] || fail "mixed: no retransmission seen"
grep -q "^\[client\] mixed: $ops of $ops ops completed with success" "$logdir/client.log" ||
	fail "mixed: not every op completed"
echo "ok   mixed: $ops ops exactly once through loss, duplication, reordering and corruption; $(mb_dir a2b retransmits) requests retransmitted"

# 2. Lost atomic ACKs: the responder must replay, not apply again.
start_middlebox --b2a-drop-atomic-ack 1 --b2a-drop-atomic-ack 3
run_case atomic-ack --case atomic-ack
stop_middlebox
server_qpn=$(client_qpn 0 peer)
[ "$(mb_dir b2a atomic_acks_dropped)" = 2 ] ||
	fail "atomic-ack: the middlebox dropped $(mb_dir b2a atomic_acks_dropped) atomic ACKs, expected 2"
[ "$(mb_qp a2b "$server_qpn" retransmits)" -ge 2 ] ||
	fail "atomic-ack: $(mb_qp a2b "$server_qpn" retransmits) retransmitted requests, expected the FAA and the CAS again"
[ "$(mb_qp b2a "$(client_qpn 0 local)" atomic_acks)" = 4 ] ||
	fail "atomic-ack: $(mb_qp b2a "$(client_qpn 0 local)" atomic_acks) atomic ACKs sent, expected 4 (2 dropped, 2 replayed)"
echo "ok   atomic-ack: two atomic ACKs lost; each retransmitted atomic returned its original value and applied once"

# 3. Nothing waits for a 4.3 s timer.
start_middlebox
run_case idle --case idle
stop_middlebox
[ "$(mb_dir a2b retransmits)" = 0 ] || fail "idle: $(mb_dir a2b retransmits) retransmissions on a clean path"
echo "ok   idle: every operation between idle engines completed in under 0.5 s"

for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	echo "--- xroce stats ${end#*:}:"
	netns_exec "${end%%:*}" "$xroce" stats "${end#*:}" | sed 's/^/    /'
done
echo "test_reliability_e2e: PASS"
