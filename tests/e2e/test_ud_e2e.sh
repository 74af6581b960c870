#!/usr/bin/env bash
# UD queue pairs and address handles end to end across a veth pair between
# two namespaces, through the real XDP program and AF_XDP: `xroce attach` on
# both ends, then ud_e2e's server (one receiver QP) and client (three sender
# QPs) run every case, first over IPv4 (the first IPv4-mapped GID), then over
# the IPv6 link-local GIDs (index 0, once duplicate address detection is
# done), where the GRH must be the IPv6 header:
#   - SEND and SEND with immediate of 0, 1, MTU-1 and MTU bytes: completions,
#     the 40-byte GRH byte for byte, payload and canaries;
#   - two sender QPs to one receiver: src_qp and the sender's GID
#     (xr_init_ah_from_wc), and replies through xr_create_ah_from_wc reach
#     the QP they answer;
#   - a wrong Q_Key (no completion, drop_bad_qkey, in XDP, moved by exactly the
#     number sent), Q_Keys with the high bit set (the sending QP's own), MTU+1
#     bytes (-EINVAL at post, nothing sent), a receive list too small
#     (XR_WC_LOC_LEN_ERR), no receive posted (engine_rx_no_recv).
# ud_e2e checks the counters case by case (running `xroce stats` itself,
# XROCE is its path); after each run this script checks each end's totals:
# drop_bad_qkey and engine_rx_no_recv moved by exactly what the run
# dropped on purpose, nothing was malformed, for an unknown QP or in a bad
# state, and XDP counted the run's RoCEv2 frames over the family it used.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/ud_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))
# What the server's cases drop on purpose: 3 + 1 wrong Q_Keys, 2 without a receive.
WANT_BAD_QKEY=4
WANT_NO_RECV=2

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ud_e2e "$e2e" "$xroce"

netns_pair ude "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
XROCE=$(netns_xroce)
export XROCE

# counter NS DEV NAME...: the values of DEV's `xroce stats` counters NAME..., in order.
counter() {
	local ns=$1 dev=$2 stats name
	shift 2
	stats=$(netns_exec "$ns" "$xroce" stats "$dev") || fail "xroce stats $dev failed"
	for name in "$@"; do
		awk -v c="$name" '$1 == c { v = $2 } END { print v + 0 }' <<<"$stats"
	done
}

# roce_frames NS DEV: "ALL IPV6", the RoCEv2 frames XDP saw on DEV and how
# many of them came over IPv6 (all XDP counters but passed_non_roce;
# acks_to_engine is a part of redirected).
roce_frames() {
	netns_exec "$1" "$xroce" stats "$2" | awk '
		$1 == "roce_ipv6" { v6 = $2 }
		$1 !~ /^(engine_|passed_non_roce|acks_to_engine|roce_ipv6)/ { roce += $2 }
		END { print roce + 0, v6 + 0 }'
}

# run_family LABEL PORT GID_A_PREFIX GID_B_PREFIX [-g INDEX]: every case,
# server in A and client in B, each on the GID the options choose, which
# must start with the given prefix.
run_family() {
	local label=$1 port=$2 want_a=$3 want_b=$4 side want ns dev line
	local start_bad start_none dropped_bad dropped_none bad none malformed unknown state icrc all v6
	local -A before_all before_v6
	shift 4
	for side in server client; do
		[ $side = server ] && ns=$NETNS_A dev=$VETH_A || ns=$NETNS_B dev=$VETH_B
		read -r "before_all[$side]" "before_v6[$side]" < <(roce_frames "$ns" "$dev")
	done
	netns_run_pair "$logdir" 60 "$e2e" "$VETH_A" -p "$port" "$@" -- \
		"$VETH_B" "$ADDR_A" -p "$port" "$@" ||
		fail "$label: $NETNS_PAIR_STATUS (124 = timed out)"
	for side in server client; do
		[ $side = server ] && ns=$NETNS_A dev=$VETH_A want=$want_a ||
			ns=$NETNS_B dev=$VETH_B want=$want_b
		grep -Eq "^\[$side\] GID [0-9]+ $want" "$logdir/$side.log" ||
			fail "$label: $side did not use a GID starting with $want"
		grep -q "^\[$side\] MTU 1024;" "$logdir/$side.log" ||
			fail "$label: $side: the MTU is not 1024 with the veth's 1500 bytes"
		grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
			fail "$label: $side has no PASS summary line"

		# The drop counters: where they started, what the cases dropped, where they are.
		line=$(grep "^\[$side\] counters at start: " "$logdir/$side.log")
		read -r start_bad start_none < <(awk '{ print $6, $8 }' <<<"$line")
		line=$(grep "^\[$side\] dropped on purpose: " "$logdir/$side.log")
		read -r dropped_bad dropped_none < <(awk '{ print $6, $8 }' <<<"$line")
		[ -n "$start_none" ] && [ -n "$dropped_none" ] ||
			fail "$label: $side did not report its counters"
		if [ $side = server ]; then
			[ "$dropped_bad" -eq "$WANT_BAD_QKEY" ] && [ "$dropped_none" -eq "$WANT_NO_RECV" ] ||
				fail "$label: the server dropped $dropped_bad/$dropped_none on purpose, expected $WANT_BAD_QKEY/$WANT_NO_RECV"
		else
			[ "$dropped_bad" -eq 0 ] && [ "$dropped_none" -eq 0 ] ||
				fail "$label: the client dropped $dropped_bad/$dropped_none on purpose, expected none"
		fi
		read -r bad engine_bad none malformed unknown state icrc < <(counter "$ns" "$dev" \
			drop_bad_qkey engine_rx_bad_qkey engine_rx_no_recv engine_rx_malformed \
			engine_rx_unknown_qp engine_rx_bad_state engine_rx_bad_icrc | paste -sd' ')
		# A wrong Q_Key is XDP's to drop: the engine never sees one.
		[ "$bad" -eq $((start_bad + dropped_bad)) ] && [ "$engine_bad" -eq 0 ] ||
			fail "$label: $dev: drop_bad_qkey is $bad, expected $start_bad + $dropped_bad; engine_rx_bad_qkey $engine_bad, expected 0"
		[ "$none" -eq $((start_none + dropped_none)) ] ||
			fail "$label: $dev: engine_rx_no_recv is $none, expected $start_none + $dropped_none"
		[ "$malformed$unknown$state$icrc" = 0000 ] ||
			fail "$label: $dev: engine_rx_malformed/unknown_qp/bad_state/bad_icrc are $malformed/$unknown/$state/$icrc, expected 0"
		echo "ok   $label: $dev: drop_bad_qkey (XDP) +$dropped_bad, engine_rx_no_recv +$dropped_none, nothing else dropped"

		# Every RoCEv2 frame of the run came over the family of the GIDs.
		read -r all v6 < <(roce_frames "$ns" "$dev")
		all=$((all - before_all[$side])) v6=$((v6 - before_v6[$side]))
		case $label in
		IPv4) [ "$all" -gt 0 ] && [ "$v6" -eq 0 ] ;;
		*) [ "$all" -gt 0 ] && [ "$v6" -eq "$all" ] ;;
		esac || fail "$label: $dev: $all RoCEv2 frames in the run, $v6 of them over IPv6"
		echo "ok   $label: $dev: $all RoCEv2 frames, $v6 over IPv6"
	done
	echo "ok   ud_e2e over $label: every case passed on both sides"
}

run_family IPv4 "$roce_port" "::ffff:$ADDR_A" "::ffff:$ADDR_B"
e2e_wait_dad
run_family IPv6 $((roce_port + 1)) "fe80::" "fe80::" -g 0

e2e_check_stats
echo "test_ud_e2e: PASS"
