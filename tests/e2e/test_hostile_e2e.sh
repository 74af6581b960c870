#!/usr/bin/env bash
# Hostile peers on one L2 segment: hosts A and B (xroce) and C (no xroce) on
# one bridge. A and B run hostile_exchange, a long RC exchange both ways
# whose every byte, immediate and atomic result is checked; meanwhile C
# forges frames with tests/e2e/forge (correct ICRCs, so only xroce's rules on
# who may send what can refuse them), each case N frames at A's QP:
#   1. ACK, NAKs (PSN sequence, invalid request, remote access), RNR NAK
#      (timer 0) from C's own IP and MAC: XDP drop_bad_src +N exactly.
#   2. the same spoofed from B's IP and MAC with PSNs far (>= 2^21) from any
#      A sent: engine rx_ghost_acks +N at least (XDP's ACK fast path must
#      not absorb them; a retransmission between A and B could add some).
#   3. SEND, WRITE, FETCH_AND_ADD, COMPARE_AND_SWAP, READ with guessed R_Keys
#      from C's IP: drop_bad_src +N exactly; to a random QPN that does not
#      exist: drop_unknown_qp +N exactly.
#   4. duplicate probes: SENDs spoofed from B's IP with C's MAC, PSNs behind
#      A's expected PSN: each answered in XDP, re-ACKed or deferred by the
#      engine (dups_answered + dup_requests + rx_dup_deferred +N at least);
#      the answers go to B: C's capture sees no RoCE frame to C's MAC or IP
#      during the whole test.
#   5. ATOMIC ACKNOWLEDGEs spoofed from B at PSNs just ahead of A's next
#      PSN, the realistic worst case (an attacker sniffing knows it): each
#      lands on a READ, SEND or WRITE in flight (rx_bad_response) or on no
#      outstanding request (rx_ghost_acks): the two +N at least. A posts no
#      atomics (--no-atomics): a forged response at the exact PSN of an
#      atomic in flight cannot be told from the real one without
#      cryptography. The exchange checks that no source buffer changed.
#   6. READ requests for 2 GiB (RETH length 0x80000000): from C's IP
#      drop_bad_src +N exactly; spoofed from B's IP at PSNs 2^21 behind A's
#      expected PSN: duplicates (dup_requests + rx_dup_deferred +N at
#      least), no invalid-request NAK (inv_req_naks_tx +0: it would kill
#      the connection), and no READ response with one of those PSNs on the
#      wire to B. Spoofed requests never use the exact expected PSN: that
#      one RoCE must believe (no cryptography), and it would end the
#      connection.
#   7. a PSN storm: 5000 SENDs spoofed from B at PSNs far from A's
#      expected PSN: the counters are reported; both processes stay, A's
#      QP stays in RTS and the exchange completes.
#   8. SENDs to a MAC nobody has (the bridge floods them) with A's IP and
#      QPN, and to A's MAC with an IP that is not A's: drop_bad_dst +N
#      exactly each.
#   9. a P_Key other than 0xFFFF: drop_bad_pkey +N exactly.
# After every case A's QP must still be in RTS. A capture at the bridge's
# port to A counts each case's frames (marked by IP ID and UDP source port):
# all N must have reached A. At the end the exchange must pass on both
# sides. One ok/FAIL line per case; the exit status is 1 on any FAIL.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
exchange=$BUILD/tests/hostile_exchange
forge=$BUILD/tests/forge
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))
frames=50
storm=5000
marker_sport=57630 # 0xE11E: the UDP source port of every forged frame
nobody_mac=02:de:ad:be:ef:01

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_hostile_e2e "$exchange" "$forge" "$xroce"
command -v tcpdump >/dev/null || fail "tcpdump is missing (scripts/install-deps.sh)"
# shellcheck source=tests/e2e/hostile_common.sh
source tests/e2e/hostile_common.sh
trap 'capture_kill_all; e2e_cleanup' EXIT

subnet=$(e2e_subnet)
hostile_topology hs "$subnet" || fail "could not create the three hosts and the bridge"
e2e_attach_both
mac_a=$(mac_of "$NETNS_A" "$VETH_A")
mac_b=$(mac_of "$NETNS_B" "$VETH_B")
mac_c=$(mac_of "$NETNS_C" "$VETH_C")
other_ip=$subnet.99

capture_start to_c "$NETNS_C" "$VETH_C" "udp port 4791 and (ether dst $mac_c or dst host $ADDR_C)"
capture_start to_a "$NETNS_M" "$VETH_MA" "udp src port $marker_sport"
capture_start to_b "$NETNS_M" "$VETH_MB" \
	"src host $ADDR_A and udp dst port 4791 and udp[8] >= 0x0d and udp[8] <= 0x10"

# ---- the exchange: the server in A (no atomics of its own, see case 5), the client in B.
nsenter --net="/var/run/netns/$NETNS_A" "$exchange" server "$VETH_A" -p "$port" \
	--no-atomics >"$logdir/server.log" 2>&1 &
server_pid=$!
nsenter --net="/var/run/netns/$NETNS_B" "$exchange" client "$VETH_B" "$ADDR_A" \
	-p "$port" >"$logdir/client.log" 2>&1 &
client_pid=$!
for _ in $(seq 300); do
	grep -q '^\[server\] running' "$logdir/server.log" &&
		grep -q '^\[client\] running' "$logdir/client.log" && break
	kill -0 "$server_pid" 2>/dev/null && kill -0 "$client_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q '^\[client\] running' "$logdir/client.log" && grep -q '^\[server\] running' "$logdir/server.log" || {
	e2e_show_logs
	fail "the exchange did not start"
}
read -r qpn_a qpn_b < <(sed -n 's/^\[server\] qp local \(0x[0-9a-f]*\) peer \(0x[0-9a-f]*\),.*/\1 \2/p' \
	"$logdir/server.log")
[ -n "$qpn_b" ] || fail "no QPNs in the server's log"
echo "ok   exchange running: A's QP $qpn_a, B's QP $qpn_b"

# ---- the cases.
results=()
failures=0
reach=() # "IP_ID FRAMES LABEL" of each case, checked in the capture at A's port
case_id=0

# forge_from WHO ARGS...: forge in C, addressed to A's QP, from C itself
# (own MAC and IP) or spoofing B (B's IP, and B's MAC unless ARGS say).
forge_from() {
	local who=$1 src_mac src_ip
	shift
	if [ "$who" = C ]; then src_mac=$mac_c src_ip=$ADDR_C; else src_mac=$mac_b src_ip=$ADDR_B; fi
	netns_exec "$NETNS_C" "$forge" "$VETH_C" --smac "$src_mac" --sip "$src_ip" \
		--dmac "$mac_a" --dip "$ADDR_A" --qpn "$qpn_a" --sport "$marker_sport" \
		--ip-id "$((0xe100 + case_id))" --seed "$case_id" "$@" >>"$logdir/forge.log" 2>&1
}

# record VERDICT LINE: one result line; a FAIL counts.
record() {
	results+=("$(printf '%-4s %s' "$1" "$2")")
	[ "$1" = ok ] || failures=$((failures + 1))
}

# forge_case LABEL HOW MIN KEYS WHO FORGE_ARGS...: sends with forge_from and
# checks A's counters KEYS (summed) moved by exactly MIN (HOW "exact") or at
# least MIN (HOW "atleast"), waiting up to 1 s for them to get there and
# then a moment for more; the counters named in $unmoved (if set) must not
# have moved; A's QP must still be in RTS and both processes of the exchange
# run. Cases whose label does not match $HOSTILE_CASES (a regex) are skipped.
forge_case() {
	local label=$1 how=$2 min=$3 keys=$4 who=$5 before after delta verdict=ok state key moved
	local notes="" _
	shift 5
	case_id=$((case_id + 1))
	[[ $label =~ ${HOSTILE_CASES:-.} ]] || return 0
	before=$logdir/before.$case_id after=$logdir/after.$case_id
	counters A "$before"
	if ! forge_from "$who" "$@"; then
		record FAIL "$label: forge failed: $(tail -n 1 "$logdir/forge.log")"
		return
	fi
	reach+=("$((0xe100 + case_id)) $(awk '/^forge: sent/ { n = $3 } END { print n }' "$logdir/forge.log") $label")
	for _ in $(seq 10); do
		counters A "$after"
		delta=$(($(value_of "$after" "$keys") - $(value_of "$before" "$keys")))
		[ "$delta" -ge "$min" ] && break
		sleep 0.1
	done
	sleep 0.2
	counters A "$after"
	delta=$(($(value_of "$after" "$keys") - $(value_of "$before" "$keys")))
	if [ "$how" = exact ]; then
		[ "$delta" -eq "$min" ] || verdict=FAIL
	else
		[ "$delta" -ge "$min" ] || verdict=FAIL
	fi
	for key in ${unmoved:-}; do
		moved=$(($(value_of "$after" "$key") - $(value_of "$before" "$key")))
		notes+="; $key +$moved (must be +0)"
		[ "$moved" -eq 0 ] || verdict=FAIL
	done
	state=$(qp_field A "$qpn_a" state)
	[ "$state" = rts ] || verdict=FAIL
	if ! kill -0 "$server_pid" 2>/dev/null || ! kill -0 "$client_pid" 2>/dev/null; then
		notes+="; a process of the exchange is gone"
		verdict=FAIL
	fi
	record "$verdict" "$label: ${keys// / + } +$delta (expected $([ "$how" = exact ] || echo "at least ")+$min)$notes; A's QP ${state:-gone}$(detail "$before" "$after")"
}

# detail BEFORE AFTER: the other counters of A that moved, for the report.
detail() {
	join <(sort "$1") <(sort "$2") | awk '$3 != $2 { printf "%s%s +%d", n++ ? ", " : "; also ", $1, $3 - $2 }'
}

# psn_a FIELD: a PSN of A's QP (0 once the QP is gone: the case then fails on its state).
psn_a() {
	local psn
	psn=$(qp_field A "$qpn_a" "$1")
	echo "${psn:-0}"
}

for op in ack nak-seq nak-inv nak-access rnr; do
	forge_case "1 $op from C" exact "$frames" xdp.drop_bad_src C --op "$op" --count "$frames" \
		--psn-far "$(psn_a next_psn)"
done
for op in ack nak-seq nak-inv nak-access rnr; do
	forge_case "2 $op spoofed from B, far PSNs" atleast "$frames" engine.rx_ghost_acks B --op "$op" \
		--count "$frames" --psn-far "$(psn_a next_psn)"
done
for op in send write faa cas read; do
	forge_case "3 $op from C, guessed rkey" exact "$frames" xdp.drop_bad_src C --op "$op" \
		--count "$frames" --psn-far "$(psn_a expected_psn)"
done
for op in send write read; do
	forge_case "3 $op from C to a random QPN" exact "$frames" xdp.drop_unknown_qp C --op "$op" \
		--count "$frames" --qpn-random --avoid-qpn "$qpn_a" --avoid-qpn "$qpn_b" \
		--psn-far "$(psn_a expected_psn)"
done
forge_case "4 duplicate SEND probes from B's IP, C's MAC" atleast "$frames" \
	"xdp.dups_answered engine.dup_requests engine.rx_dup_deferred" B --smac "$mac_c" --op send \
	--count "$frames" --psn "$((($(psn_a expected_psn) - 0x1000) & 0xffffff))" --psn-step -1
forge_case "5 ATOMIC ACK spoofed from B, PSNs ahead of A's next" atleast "$frames" \
	"engine.rx_bad_response engine.rx_ghost_acks" B --op atomic-ack --count "$frames" \
	--psn "$((($(psn_a next_psn) + 8) & 0xffffff))" --psn-step 4
forge_case "6 READ 2 GiB from C" exact "$frames" xdp.drop_bad_src C --op read --len 0x80000000 \
	--count "$frames" --psn-far "$(psn_a expected_psn)"
read_psn=$((($(psn_a expected_psn) - 0x200000) & 0xffffff))
unmoved=engine.inv_req_naks_tx forge_case "6 READ 2 GiB spoofed from B, 2^21 behind" atleast "$frames" \
	"engine.dup_requests engine.rx_dup_deferred" B --op read --len 0x80000000 --count "$frames" \
	--psn "$read_psn" --psn-step -1
forge_case "7 PSN storm: $storm SENDs spoofed from B" atleast 0 engine.rx_frames B --op send \
	--count "$storm" --psn-far "$(psn_a expected_psn)"
forge_case "8 SEND to a MAC nobody has" exact "$frames" xdp.drop_bad_dst B --smac "$mac_c" \
	--dmac "$nobody_mac" --op send --count "$frames" --psn-far "$(psn_a expected_psn)"
forge_case "8 SEND to A's MAC, an IP not A's" exact "$frames" xdp.drop_bad_dst B --smac "$mac_c" \
	--dip "$other_ip" --op send --count "$frames" --psn-far "$(psn_a expected_psn)"
forge_case "9 SEND with P_Key 0x7fff" exact "$frames" xdp.drop_bad_pkey B --smac "$mac_c" \
	--pkey 0x7fff --op send --count "$frames" --psn-far "$(psn_a expected_psn)"

# ---- the end of the exchange.
kill -USR1 "$server_pid" "$client_pid" 2>/dev/null
exchange_status=0
wait "$client_pid" || exchange_status=$?
client_pid=""
wait "$server_pid" || exchange_status=$?
server_pid=""
e2e_show_logs exchange
if [ "$exchange_status" -eq 0 ] && grep -q '^\[server\] PASS' "$logdir/server.log" &&
	grep -q '^\[client\] PASS' "$logdir/client.log"; then
	record ok "exchange: every byte, immediate and atomic right both ways, no error completion"
else
	record FAIL "exchange: $(grep -h 'FAIL' "$logdir/server.log" "$logdir/client.log" | head -n 2 | tr '\n' ' ')(exit $exchange_status)"
fi

capture_stop_all
to_c=$(capture_count to_c "")
if [ "$to_c" -eq 0 ]; then
	record ok "nothing answered to C: 0 RoCE frames to C's MAC or IP"
else
	record FAIL "answered to C: $to_c RoCE frames to C's MAC or IP (the first in the log)"
	tcpdump -n -e -r "$logdir/to_c.pcap" -c 5 2>/dev/null
fi
leaked=$(capture_count to_b "(udp[16:4] & 0xffffff) <= $read_psn and (udp[16:4] & 0xffffff) > $((read_psn - frames))")
if [ "$leaked" -eq 0 ]; then
	record ok "6 no READ response to B with a PSN of the spoofed 2 GiB READs"
else
	record FAIL "6 $leaked READ response frames to B with a PSN of the spoofed 2 GiB READs"
fi
for entry in "${reach[@]}"; do
	read -r id sent label <<<"$entry"
	got=$(capture_count to_a "ip[4:2] == $id")
	if [ "$got" -eq "$sent" ]; then
		record ok "reached A: $label: $got of $sent"
	else
		record FAIL "reached A: $label: $got of $sent"
	fi
done

printf '%s\n' "${results[@]}"
[ "$failures" -eq 0 ] || fail "$failures of ${#results[@]} checks failed"
echo "test_hostile_e2e: PASS"
