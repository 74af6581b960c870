#!/usr/bin/env bash
# Shared receive queues end to end across a veth pair between two namespaces
# (see tests/e2e/srq_e2e.c): 16 RC QPs whose receives all come from one SRQ
# on the receiving side, 64 messages of 2 to 5 packets each, 8 in flight per
# QP (128 in flight) against an SRQ of 16 buffers, then with the SRQ resized
# to 256 and 128 receives posted. srq_e2e checks that every message arrives
# exactly once, in order on its QP and byte-exact, and that the receive
# completions are exactly the receives posted, one per message. This script
# then requires the RNR NAK flow that the starved SRQ caused on both ends
# (`xroce stats`: engine_rnr_naks_tx on the receiver, engine_rnr_naks_rx on
# the sender, both > 0), no malformed-frame drops, and nothing sent to a QP
# that was not there (drop_unknown_qp and engine_rx_unknown_qp 0).
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/srq_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_srq_e2e "$e2e" "$xroce"

netns_pair srq "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# Receiver (the SRQ) in A, sender in B.
e2e_run_cases 240

rnr_tx=$(e2e_stat "$NETNS_A" "$VETH_A" engine_rnr_naks_tx)
rnr_rx=$(e2e_stat "$NETNS_B" "$VETH_B" engine_rnr_naks_rx)
[ -n "$rnr_tx" ] && [ "$rnr_tx" -gt 0 ] ||
	fail "the receiver's engine_rnr_naks_tx is '$rnr_tx': the starved SRQ sent no RNR NAK"
[ -n "$rnr_rx" ] && [ "$rnr_rx" -gt 0 ] ||
	fail "the sender's engine_rnr_naks_rx is '$rnr_rx': no RNR NAK arrived"
echo "ok   RNR NAKs while the SRQ was empty: $rnr_tx sent by the receiver, $rnr_rx received by the sender"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	for counter in drop_unknown_qp engine_rx_unknown_qp; do
		value=$(e2e_stat "${end%%:*}" "${end#*:}" $counter)
		[ "$value" = 0 ] || fail "${end#*:}: $counter is '$value', expected 0"
	done
done
e2e_check_stats
echo "test_srq_e2e: PASS"
