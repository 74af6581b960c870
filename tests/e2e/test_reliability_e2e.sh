#!/usr/bin/env bash
# RC reliability end to end through an impairing middlebox: namespaces
# A <-veth-> M <-veth-> B, xroce attached in A and B, tests/e2e/middlebox.c
# bridging in M. reliability_e2e's client (initiator) runs in A, its server
# (target) in B.
#   1. mixed: 20,000 SEND / WRITE / WRITE_IMM / READ / CAS / FAA at 5% loss,
#      1% duplication, 2% reordering and 0.1% corruption in both directions:
#      all succeed, in order, exactly once (see reliability_e2e.c); the
#      middlebox must have impaired both directions and seen retransmissions.
#      Three times: with selective repeat at both ends (SACKs and
#      self-placing WRITEs on the wire, lost packets sent again alone),
#      with go-back-N at both ends, and with selective repeat against a
#      go-back-N server (XROCE_SELECTIVE_REPEAT=0), which never receives a
#      frame of selective repeat's.
#   2. atomic-ack: the middlebox drops the 1st and 3rd atomic ACK: the FAA and
#      the CAS are each retransmitted, return their original values, and apply
#      once.
#   3. idle: with a 4.3 s ACK timeout, operations between idle engines
#      complete in under 0.5 s; anything sent again was a tail-loss probe
#      (two packets each at most), never the ACK timer's retransmission;
#   4. tail loss: the same, with the middlebox dropping the last WRITE (its
#      only packet, followed by nothing that could earn a NAK): it still
#      completes in under 0.5 s, recovered by a tail-loss probe, with no
#      ACK timer expiry.
#   5. congestion: the mixed workload through a 200 Mb/s bottleneck that
#      marks CE behind 16 queued frames and never drops: the client's frames
#      go ECT(0), the server answers the marks with CNPs, the client takes
#      each one (DCQCN cuts its rate), counted alike by the middlebox and
#      both engines; every op succeeds and nothing is lost. Again with the
#      client Not-ECT (XROCE_ECN=0): nothing is marked and no CNP flows.
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

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_reliability_e2e "$e2e" "$middlebox" "$xroce"

show_middlebox() {
	echo "--- middlebox:"
	grep -v '^qp ' "$logdir/mb.log" | sed 's/^/    /'
}

netns_middlebox_pair rel "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
echo "seed $seed (SEED=$seed reproduces the impairments and the plan)"

if [ "$bench" = 1 ]; then
	for loss in 0 1 5; do
		mb_start --seed "$seed" --loss "$loss"
		reliability_case "bench at $loss% loss" --bench --label "$loss%-loss" --seconds 3
		mb_stop
		echo "    middlebox: $(mb_dir a2b dropped) of $(mb_dir a2b roce) a2b and $(mb_dir b2a dropped) of $(mb_dir b2a roce) b2a RoCE frames dropped"
	done
	grep -h '^\[client\] bench' "$logdir"/client.log >/dev/null
	echo "test_reliability_e2e: bench done"
	exit 0
fi

# 1. The mixed workload through every impairment at once.
# mixed_case NAME: the mixed case, with server_env and client_env as set.
mixed_case() {
	local name=$1
	mb_start --seed "$seed" --loss 5 --dup 1 --reorder 2 --reorder-gap 3 --corrupt 0.1
	reliability_case "$name" --case mixed --ops "$ops" --seed "$seed"
	mb_stop
	show_middlebox
	for dir in a2b b2a; do
		for counter in dropped duplicated reordered; do
			[ "$(mb_dir $dir $counter)" -gt 0 ] || fail "$name: the middlebox $counter nothing $dir"
		done
		[ "$(mb_dir $dir socket_drops)" = 0 ] ||
			fail "$name: the middlebox lost frames it did not mean to ($dir)"
	done
	[ "$(($(mb_dir a2b corrupted) + $(mb_dir b2a corrupted)))" -gt 0 ] || fail "$name: nothing was corrupted"
	[ "$(mb_dir a2b retransmits)" -gt 0 ] || fail "$name: no retransmission seen"
	grep -q "^\[client\] mixed: $ops of $ops ops completed with success" "$logdir/client.log" ||
		fail "$name: not every op completed"
	echo "ok   $name: $ops ops exactly once through loss, duplication, reordering and corruption; $(mb_dir a2b retransmits) requests retransmitted"
}

mixed_case mixed-selective-repeat
[ "$(mb_dir b2a sacks)" -gt 0 ] && [ "$(mb_dir a2b self_placing)" -gt 0 ] ||
	fail "mixed-selective-repeat: $(mb_dir b2a sacks) SACKs, $(mb_dir a2b self_placing) self-placing WRITEs"
[ "$(e2e_stat "$NETNS_A" "$VETH_A" engine_sr_resends)" -gt 0 ] ||
	fail "mixed-selective-repeat: the client sent nothing again selectively"
echo "ok   mixed-selective-repeat: $(mb_dir b2a sacks) SACKs, $(mb_dir a2b self_placing) self-placing WRITEs"

server_env=(XROCE_SELECTIVE_REPEAT=0)
client_env=(XROCE_SELECTIVE_REPEAT=0)
mixed_case mixed-go-back-n
client_env=()
mixed_case mixed-against-go-back-n
server_env=()
for dir in a2b b2a; do
	[ "$(mb_dir $dir sacks)" = 0 ] && [ "$(mb_dir $dir self_placing)" = 0 ] ||
		fail "mixed-against-go-back-n: $(mb_dir $dir sacks) SACKs, $(mb_dir $dir self_placing) self-placing WRITEs went $dir"
done
echo "ok   mixed-against-go-back-n: the go-back-N server was sent no frame of selective repeat's"

# 2. Lost atomic ACKs: the responder must replay, not apply again.
mb_start --seed "$seed" --b2a-drop-atomic-ack 1 --b2a-drop-atomic-ack 3
reliability_case atomic-ack --case atomic-ack
mb_stop
server_qpn=$(client_qpn 0 peer)
[ "$(mb_dir b2a atomic_acks_dropped)" = 2 ] ||
	fail "atomic-ack: the middlebox dropped $(mb_dir b2a atomic_acks_dropped) atomic ACKs, expected 2"
[ "$(mb_qp a2b "$server_qpn" retransmits)" -ge 2 ] ||
	fail "atomic-ack: $(mb_qp a2b "$server_qpn" retransmits) retransmitted requests, expected the FAA and the CAS again"
[ "$(mb_qp b2a "$(client_qpn 0 local)" atomic_acks)" = 4 ] ||
	fail "atomic-ack: $(mb_qp b2a "$(client_qpn 0 local)" atomic_acks) atomic ACKs sent, expected 4 (2 dropped, 2 replayed)"
echo "ok   atomic-ack: two atomic ACKs lost; each retransmitted atomic returned its original value and applied once"

# client_engine COUNTER: COUNTER of the client's engine (the last one on A's
# device; its counters stay after it exits).
client_engine() {
	e2e_stat "$NETNS_A" "$VETH_A" "$1"
}

# 3. Nothing waits for a 4.3 s timer.
mb_start --seed "$seed"
reliability_case idle --case idle
mb_stop
probes=$(client_engine engine_tail_probes)
[ "$(mb_dir a2b retransmits)" -le $((2 * probes)) ] ||
	fail "idle: $(mb_dir a2b retransmits) retransmissions on a clean path, only $probes tail-loss probes"
[ "$(client_engine engine_timeouts)" = 0 ] || fail "idle: the ACK timer expired on a clean path"
echo "ok   idle: every operation between idle engines completed in under 0.5 s ($probes probes)"

# 4. The last packet of a burst lost, and nothing after it to earn a NAK.
mb_start --seed "$seed" --a2b-drop-write 2
reliability_case idle-tail-loss --case idle
mb_stop
[ "$(mb_dir a2b writes_dropped)" = 1 ] || fail "tail loss: the middlebox dropped no WRITE"
[ "$(client_engine engine_tail_probes)" -ge 1 ] || fail "tail loss: no tail-loss probe"
[ "$(client_engine engine_timeouts)" = 0 ] || fail "tail loss: the ACK timer expired"
echo "ok   tail loss: the last WRITE lost and recovered in under 0.5 s by $(client_engine engine_tail_probes) probe(s), no ACK timer expiry"

# 5. A congested queue that marks instead of dropping.
# congestion_case NAME: the mixed case through the marking bottleneck.
congestion_case() {
	local name=$1
	mb_start --seed "$seed" --a2b-rate-mbps 200 --a2b-queue-frames 4000 --a2b-ce-threshold 16
	reliability_case "$name" --case mixed --ops 5000 --seed "$seed"
	mb_stop
	show_middlebox
	grep -q "^\[client\] mixed: 5000 of 5000 ops completed with success" "$logdir/client.log" ||
		fail "$name: not every op completed"
	for dir in a2b b2a; do
		[ "$(mb_dir $dir dropped)" = 0 ] && [ "$(mb_dir $dir socket_drops)" = 0 ] ||
			fail "$name: frames were lost $dir"
	done
}
congestion_case congestion-ecn
marked=$(mb_dir a2b ce_marked) cnps=$(mb_dir b2a cnps)
[ "$(mb_dir a2b ect)" -gt 0 ] && [ "$marked" -gt 0 ] ||
	fail "congestion-ecn: $(mb_dir a2b ect) ECN-capable frames, $marked marked CE"
[ "$cnps" -gt 0 ] && [ "$(mb_dir a2b cnps)" = 0 ] ||
	fail "congestion-ecn: $cnps CNPs from the server, $(mb_dir a2b cnps) from the client"
server_cnps=$(e2e_stat "$NETNS_B" "$VETH_B" engine_cnps_tx)
[ "$(e2e_stat "$NETNS_B" "$VETH_B" engine_ecn_marked)" = "$marked" ] && [ "$server_cnps" = "$cnps" ] ||
	fail "congestion-ecn: the server saw $(e2e_stat "$NETNS_B" "$VETH_B" engine_ecn_marked) of $marked marks and sent $server_cnps of $cnps CNPs"
[ "$(client_engine engine_cnps_rx)" = "$cnps" ] ||
	fail "congestion-ecn: the client took $(client_engine engine_cnps_rx) of $cnps CNPs"
echo "ok   congestion-ecn: $marked frames marked CE, $cnps CNPs sent and taken, the queue at most $(mb_dir a2b queue_max) frames, nothing lost"

client_env=(XROCE_ECN=0)
congestion_case congestion-not-ect
client_env=()
[ "$(mb_dir a2b ect)" = 0 ] && [ "$(mb_dir a2b ce_marked)" = 0 ] && [ "$(mb_dir b2a cnps)" = 0 ] ||
	fail "congestion-not-ect: $(mb_dir a2b ect) ECN-capable frames, $(mb_dir a2b ce_marked) marked, $(mb_dir b2a cnps) CNPs"
echo "ok   congestion-not-ect: Not-ECT frames queued up to $(mb_dir a2b queue_max), none marked, no CNP"

for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	echo "--- xroce stats ${end#*:}:"
	netns_exec "${end%%:*}" "$xroce" stats "${end#*:}" | sed 's/^/    /'
done
echo "test_reliability_e2e: PASS"
