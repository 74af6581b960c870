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

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_rnr_e2e "$e2e" "$middlebox" "$xroce"

netns_middlebox_pair rnr "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# 1. A late receive.
mb_start
reliability_case rnr-late --case rnr-late
mb_stop
qpn=$(client_qpn 0 local)
naks=$(mb_qp b2a "$qpn" rnr_naks)
[ -n "$naks" ] && [ "$naks" -ge 1 ] || fail "rnr-late: ${naks:-no} RNR NAKs to QP $qpn, expected at least 1"
grep -q '^\[client\] rnr-late: SEND completed with success' "$logdir/client.log" ||
	fail "rnr-late: no successful SEND"
echo "ok   rnr-late: the SEND succeeded after $naks RNR NAKs"

# 2. Never a receive: the RNR retry budget runs out, exactly.
mb_start
reliability_case rnr-exhaust --case rnr-exhaust
mb_stop
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
