#!/usr/bin/env bash
# QP1 between two namespaces. xroce is attached in A only, where
# open_device holds the device open; B is a plain host. From B, forge sends
# 5 datagrams to A's QP1 with another Q_Key than the GSI's, 5 MAD Gets of a
# class xroce serves no agent for (performance management), and 3 CM REQs
# as rping's for a port nobody listens on. Then:
#   - A's XDP steered the 8 MADs to the engine and dropped the 5 others as
#     drop_bad_qkey;
#   - A's engine counts 8 mads_rx, 5 mads_unserved and 8 mads_tx, and no
#     mads_malformed;
#   - a capture in B holds exactly 8 RoCE frames from A, each a UD SEND_ONLY
#     from QP1 to QP1 with the GSI Q_Key: 5 GetResps with status 0x0004
#     (unsupported class or version), one for each Get's transaction ID,
#     its data returned unchanged; 3 CM REJs of a REQ, reason 8 (invalid
#     service ID), one for each REQ's communication ID and transaction ID.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
forge=$BUILD/tests/forge
holder=$BUILD/tests/open_device
xroce=$BUILD/xroce
count=5
reqs=3

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_gsi_e2e "$forge" "$holder" "$xroce"
command -v tcpdump >/dev/null || fail "tcpdump is missing (scripts/install-deps.sh)"
# shellcheck source=tests/e2e/capture.sh
source tests/e2e/capture.sh
trap 'capture_kill; e2e_cleanup' EXIT

netns_pair gsi "$(e2e_subnet)" || fail "could not create the namespaces"
netns_attach "$NETNS_A:$VETH_A" || fail "could not attach xroce to $VETH_A"
mac_a=$(mac_of "$NETNS_A" "$VETH_A")
mac_b=$(mac_of "$NETNS_B" "$VETH_B")

# nsenter, not a shell function: $! must be open_device itself, for the cleanup to stop it.
nsenter --net="/var/run/netns/$NETNS_A" "$holder" "$VETH_A" --hold >"$logdir/holder.log" 2>&1 &
server_pid=$!
e2e_wait_for_line "$logdir/holder.log" "^opened " "$server_pid" 10 ||
	fail "open_device did not open $VETH_A: $(cat "$logdir/holder.log")"

CAPTURE_SNAPLEN=512 capture_start "$NETNS_B" "$VETH_B" "$logdir/b.pcap" || fail "$CAPTURE_WHY"
forge_to_a() {
	netns_exec "$NETNS_B" "$forge" "$VETH_B" --smac "$mac_b" --dmac "$mac_a" --sip "$ADDR_B" \
		--dip "$ADDR_A" --qpn 1 --count "$count" "$@" >>"$logdir/forge.log" 2>&1 ||
		fail "forge $*: $(cat "$logdir/forge.log")"
}
forge_to_a --op mad-get --qkey 0x11111111
forge_to_a --op mad-get
forge_to_a --op cm-req --count "$reqs"
for _ in $(seq 100); do
	[ "$(e2e_stat "$NETNS_A" "$VETH_A" engine_mads_tx)" = $((count + reqs)) ] && break
	sleep 0.1
done
# The answers are on their way to B once counted: a moment for them to get there first.
sleep 0.2
capture_stop "$NETNS_A" "$ADDR_B" || fail "$CAPTURE_WHY"

stat_a() { e2e_stat "$NETNS_A" "$VETH_A" "$1"; }
for pair in "drop_bad_qkey $count" "engine_mads_rx $((count + reqs))" \
	"engine_mads_unserved $count" "engine_mads_tx $((count + reqs))" "engine_mads_malformed 0" \
	"engine_rx_bad_qkey 0" "engine_cm_unmatched 0"; do
	name=${pair% *} want=${pair#* }
	got=$(stat_a "$name")
	[ "$got" = "$want" ] || fail "A's $name is '$got', expected $want"
done

python3 - "$logdir/b.pcap" "$ADDR_A" "$count" "$reqs" <<'EOF' || fail "the answers in B's capture are wrong (above)"
import struct, sys
sys.path.insert(0, "tests/e2e")
import roce_pcap
path, addr_a, want, want_rej = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
seen, rejs, errors = {}, {}, []
for fr in roce_pcap.frames(path):
    if fr.src != addr_a:
        continue
    if not roce_pcap.is_qp1_mad(fr):
        errors.append(f"not a whole MAD from QP1 to QP1: opcode {fr.opcode:#x} dqpn {fr.dqpn} "
                      f"qkey {fr.qkey:#x}, {len(fr.payload)} bytes with its ICRC")
        continue
    mad = fr.payload
    method, status = mad[3], struct.unpack(">H", mad[4:6])[0]
    tid = struct.unpack(">Q", mad[8:16])[0]
    attr = struct.unpack(">H", mad[16:18])[0]
    if mad[1] == 0x07:
        # REJ: local comm ID, remote comm ID, message REJected (2 bits), reason
        remote_id = struct.unpack(">I", mad[28:32])[0]
        reason = struct.unpack(">H", mad[34:36])[0]
        if attr != 0x0012 or method != 0x03 or reason != 8 or mad[32] >> 6 != 0 or \
                remote_id != tid - 0x5a5a0000 + 0x10000:
            errors.append(f"CM: attribute {attr:#x} method {method:#x} reason {reason} "
                          f"remote ID {remote_id:#x} for TID {tid:#x}")
        rejs[tid] = rejs.get(tid, 0) + 1
        continue
    if method != 0x81 or status != 0x0004 or mad[1] != 0x04:
        errors.append(f"method {method:#x} status {status:#x} class {mad[1]:#x}")
    if mad[24:256] != bytes(range(232)):
        errors.append(f"TID {tid:#x}: the data came back changed")
    seen[tid] = seen.get(tid, 0) + 1
want_tids = {0x5a5a0000 + i for i in range(want)}
if sum(seen.values()) != want or set(seen) != want_tids:
    errors.append(f"answers by TID {sorted((hex(t), n) for t, n in seen.items())}, expected one each of {sorted(hex(t) for t in want_tids)}")
want_rejs = {0x5a5a0000 + i for i in range(want_rej)}
if sum(rejs.values()) != want_rej or set(rejs) != want_rejs:
    errors.append(f"REJs by TID {sorted((hex(t), n) for t, n in rejs.items())}, expected one each of {sorted(hex(t) for t in want_rejs)}")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
EOF
echo "ok: $count MAD Gets of an unserved class answered with GetResp 0x0004, $reqs REQs for no listener with REJ 8, counted"
