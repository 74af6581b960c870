#!/usr/bin/env bash
# Path MTU 4096 end to end: namespaces A <-veth-> M <-veth-> B, every veth at
# MTU 9000, xroce attached in A and B, so their AF_XDP sockets are
# multi-buffer and a full frame takes two descriptors each way;
# tests/e2e/middlebox.c bridges in M.
#   1. rdma_e2e's cases (WRITE, WRITE_IMM and READ of 0, 1, MTU, MTU+1 bytes
#      and 1 MiB, READs of 3*MTU+17 at once, atomics, access errors), then
#      send_e2e's (SEND of sizes around the MTU up to 1 MiB, gather and
#      scatter lists, a 10,000-message stream), through a clean middlebox and
#      captured in M: every middle packet (SEND, WRITE in either form, READ
#      response) carried exactly 4,096 bytes, each kind was seen, and no frame
#      carried more.
#   2. reliability_e2e's mixed workload (messages of up to four packets)
#      through 5% loss, 1% duplication, 2% reordering and 0.1% corruption in
#      both directions: every op completes, in order, exactly once.
# Neither end counted a frame too long for its sockets, nor a malformed one
# but where the middlebox corrupted frames.
# Needs root. Env: BUILD (build dir, default build), OPS (mixed ops, default
# 20000), SEED (default: random, printed).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
rdma_e2e=$BUILD/tests/rdma_e2e
send_e2e=$BUILD/tests/send_e2e
reliability_e2e=$BUILD/tests/reliability_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
ops=${OPS:-20000}
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
port=$((20000 + $$ % 20000))
e2e_path_mtu=4096
# The UDP length of a full middle packet: UDP header, BTH, payload, ICRC.
middle_udp_len=$((8 + 12 + e2e_path_mtu + 4))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
# shellcheck source=tests/e2e/capture.sh
source tests/e2e/capture.sh
e2e_init test_mtu4096_e2e "$rdma_e2e" "$send_e2e" "$reliability_e2e" "$middlebox" "$xroce"
command -v python3 >/dev/null || fail "python3 is missing (scripts/install-deps.sh)"
trap 'capture_kill; e2e_cleanup' EXIT

netns_middlebox_pair m4k "$(e2e_subnet)" || fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_M:$VETH_MA" "$NETNS_M:$VETH_MB" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link set dev "${end#*:}" mtu 9000 ||
		fail "could not set MTU 9000 on ${end#*:}"
done
e2e_attach_both
echo "seed $seed (SEED=$seed reproduces the impairments and the plan)"

# check_ends LABEL: no malformed frame and none too long at either end (the
# engine counters are the last owner's: call it after every run).
check_ends() {
	netns_check_stats "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" >"$logdir/stats" ||
		fail "$1: $(tail -n 1 "$logdir/stats")"
}

# 1. Every operation at sizes around the MTU, captured in M.
mb_start --seed "$seed"
capture_start "$NETNS_M" "$VETH_MA" "$logdir/m.pcap" || fail "$CAPTURE_WHY"
for e2e in "$rdma_e2e" "$send_e2e"; do
	roce_port=$port
	e2e_run_cases 240
	check_ends "$(basename "$e2e")"
	port=$((port + 1))
done
capture_stop "$NETNS_B" "$ADDR_A" || fail "$CAPTURE_WHY"
mb_stop
python3 - "$logdir/m.pcap" "$middle_udp_len" <<'EOF' || fail "the capture: see above"
import sys
sys.path.insert(0, "tests/e2e")
import roce_pcap

# Middle packets by opcode: name, what they carry beside the payload (SR
# WRITE_MIDDLE, selective repeat's self-placing form: RETH and PLETH).
MIDDLES = {0x01: ("SEND_MIDDLE", 0), 0x07: ("WRITE_MIDDLE", 0),
           0xE7: ("SR_WRITE_MIDDLE", 16 + 8), 0x0E: ("READ_RESPONSE_MIDDLE", 0)}
# Each kind must be seen: WRITEs go in either form.
KINDS = {"SEND": {0x01}, "WRITE": {0x07, 0xE7}, "READ response": {0x0E}}
# The most a frame carries beside a full payload: SR WRITE_LAST_IMM's RETH, PLETH and immediate.
LARGEST_EXTRA = 16 + 8 + 4
middle_len = int(sys.argv[2])
seen = {op: 0 for op in MIDDLES}
bad = []
longest = 0
for fr in roce_pcap.frames(sys.argv[1]):
    longest = max(longest, fr.udp_len)
    if fr.opcode in MIDDLES:
        name, extra = MIDDLES[fr.opcode]
        seen[fr.opcode] += 1
        if fr.udp_len != middle_len + extra:
            bad.append(f"{name} {fr.src} -> {fr.dst} of UDP length {fr.udp_len}")
missing = [kind for kind, ops in KINDS.items() if not any(seen[op] for op in ops)]
if bad or missing or longest > middle_len + LARGEST_EXTRA:
    print(f"middle packets without 4096 bytes of payload: {bad[:5]} ({len(bad)} in all);"
          f" kinds never seen: {missing}; longest UDP length {longest}")
    sys.exit(1)
print("ok   capture: " + ", ".join(f"{n} {MIDDLES[op][0]}" for op, n in seen.items() if n) +
      f" of 4096-byte payloads; longest UDP length {longest}")
EOF

# 2. The mixed workload through every impairment at once.
e2e=$reliability_e2e
mb_start --seed "$seed" --loss 5 --dup 1 --reorder 2 --reorder-gap 3 --corrupt 0.1
reliability_case mixed --case mixed --ops "$ops" --seed "$seed"
mb_stop
grep -q "^\[client\] case mixed, path MTU 4096," "$logdir/client.log" ||
	fail "mixed: the client's path MTU is not 4096"
grep -q "^\[client\] mixed: $ops of $ops ops completed with success" "$logdir/client.log" ||
	fail "mixed: not every op completed"
[ "$(mb_dir a2b retransmits)" -gt 0 ] || fail "mixed: no retransmission seen"
# Corruption may leave frames malformed: only the sockets' bound must hold.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	[ "$(e2e_stat "${end%%:*}" "${end#*:}" engine_rx_too_long)" = 0 ] ||
		fail "mixed: ${end#*:} received frames too long for its sockets"
done
echo "ok   mixed: $ops ops exactly once at path MTU 4096 through loss, duplication, reordering and corruption; $(mb_dir a2b retransmits) requests retransmitted"
echo "test_mtu4096_e2e: PASS"
