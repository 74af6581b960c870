#!/usr/bin/env bash
# The RDMA connection manager when things go wrong, end to end through the
# real XDP program and AF_XDP: namespaces A <-> M <-> B, xroce attached in A
# and B, the middlebox (tests/e2e/middlebox.c) forwarding between them
# unimpaired in M, the third host on the path. rdma_cm_faults's servers run
# in A, its clients in B:
#   a. a REQ flood past the backlog: a listener with backlog 2 takes no
#      event while a client connects 8 ids at once; 6 are REJECTED at once
#      (reason 28, no event ever reached the application), and only then is
#      the listener let go: it gets exactly the 2 queued requests, accepts
#      them, both are ESTABLISHED, then disconnected; no request comes after;
#   b. a listener that exits on the request, without answering or destroying
#      anything: the client is REJECTED (reason 28, the library's goodbye at
#      exit), its QP flushes a SEND, and once it destroyed everything it has
#      as many file descriptors as before and `xroce qps` lists none of its
#      QPs;
#   c. the same, the listener exiting right after it accepted: the client
#      got ESTABLISHED, then REJECTED (the goodbye of an id whose REP is
#      unanswered) or DISCONNECTED (if the RTU came first); the rest as b;
#   d. forged CM messages for a live connection from M: the connection's IDs,
#      transaction ID and QPNs read from a capture in M of its setup, then to
#      A a REJ and a DREQ from M's own address (otherwise right), a REJ and a
#      DREQ from B's address with a wrong communication ID, a REJ with a wrong
#      transaction ID; to B a REP from M's address, one from A's with a wrong
#      communication ID, one with a wrong transaction ID. A must count
#      exactly 2 more cm_forged and 3 more cm_unmatched, B 1 and 2, and the
#      connection must carry a second echo and end with its own DREQ/DREP.
# After each case both programs must have exited 0 with exactly the output
# expected and no engine may have counted a malformed MAD; at the end no
# rdma_cm_faults is left in any namespace.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
prog=$BUILD/tests/rdma_cm_faults
middlebox=$BUILD/tests/middlebox
forge=$BUILD/tests/forge
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))
flood_count=8
backlog=2
# Bounds: a program's whole run; how long its result lines may take.
run_seconds=60
line_seconds=15

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_rdma_cm_faults "$prog" "$middlebox" "$forge" "$xroce"
command -v tcpdump >/dev/null || fail "tcpdump is missing (scripts/install-deps.sh)"
# shellcheck source=tests/e2e/capture.sh
source tests/e2e/capture.sh
trap 'capture_kill; e2e_cleanup' EXIT

netns_middlebox_pair rcf "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
mb_start
third_addr=${ADDR_A%.*}.77
third_mac=02:00:00:78:00:77

# start NS LABEL TAG ARGS...: `rdma_cm_faults ARGS` in NS, in the
# background under timeout, into $logdir/LABEL.TAG.out and .err; its PID
# (timeout's, which passes signals on) in $started.
start() {
	local ns=$1 label=$2 tag=$3
	shift 3
	nsenter --net="/var/run/netns/$ns" timeout -k 5 "$run_seconds" "$prog" "$@" \
		>"$logdir/$label.$tag.out" 2>"$logdir/$label.$tag.err" &
	started=$!
}

# go_on PID: SIGUSR1 to the program timeout PID runs (timeout would die of it).
go_on() {
	pkill -USR1 -P "$1" || fail "no program under PID $1 to signal"
}

# await LABEL TAG REGEX: TAG's output has a line matching REGEX within $line_seconds.
await() {
	local pid_var=${2}_pid
	e2e_wait_for_line "$logdir/$1.$2.out" "$3" "${!pid_var}" "$line_seconds" ||
		e2e_case_fail "$1" "$2 did not print a line matching '$3' within $line_seconds s"
}

# finish LABEL TAG: TAG's program exits 0 within $run_seconds (timeout's bound).
finish() {
	local pid_var=${2}_pid status=0
	wait "${!pid_var}" || status=$?
	printf -v "$pid_var" ''
	[ "$status" -eq 0 ] || e2e_case_fail "$1" "$2 exited $status (124: timed out)"
}

# The QPs other than QP1 that `xroce qps` lists in NS on DEV.
qps_open() {
	netns_exec "$1" "$xroce" qps "$2" --json |
		python3 -c 'import json, sys; print(len([q for q in json.load(sys.stdin)["qps"] if q["qpn"] != 1]))'
}

server_pid="" client_pid=""

# ---- a. A REQ flood past the backlog.
label=flood
start "$NETNS_A" "$label" server backlog-server "$ADDR_A" "$port" "$backlog"
server_pid=$started
await "$label" server '^listening$'
start "$NETNS_B" "$label" client flood "$ADDR_A" "$port" "$flood_count"
client_pid=$started
rejections=$((flood_count - backlog))
for _ in $(seq $((line_seconds * 20))); do
	[ "$(grep -c '^got REJECTED status 28$' "$logdir/$label.client.out")" -ge "$rejections" ] && break
	sleep 0.05
done
# Long enough for any further rejection to show: then none may have come.
sleep 0.5
[ "$(grep -c '^got REJECTED status 28$' "$logdir/$label.client.out")" -eq "$rejections" ] &&
	! grep -q ESTABLISHED "$logdir/$label.client.out" ||
	e2e_case_fail "$label" "before the listener took any event, the client did not have exactly $rejections rejections and no connection"
go_on "$server_pid"
finish "$label" client
finish "$label" server
mapfile -t want < <(for _ in $(seq "$rejections"); do echo "got REJECTED status 28"; done
	for _ in $(seq "$backlog"); do echo "got ESTABLISHED status 0"; done
	echo "flood done established $backlog rejected $rejections")
e2e_expect_lines "$label" "$label.client.out" "${want[@]}"
e2e_expect_lines "$label" "$label.server.out" listening "requests $backlog" "established $backlog" "served $backlog" "server done"
e2e_check_no_malformed "$label"
echo "ok   a. $flood_count REQs at a listener of backlog $backlog: $rejections rejected at once (reason 28), $backlog queued, accepted and served"

# ---- b, c. The listener dies mid-handshake.
for how in request accept; do
	label=die-on-$how
	port=$((port + 1))
	start "$NETNS_A" "$label" server die-server "$ADDR_A" "$port" "$how"
	server_pid=$started
	await "$label" server '^listening$'
	start "$NETNS_B" "$label" client orphan-client "$ADDR_A" "$port"
	client_pid=$started
	await "$label" client '^clean$'
	left=$(qps_open "$NETNS_B" "$VETH_B")
	[ "$left" = 0 ] || e2e_case_fail "$label" "xroce qps lists $left QPs of the client's after it destroyed them"
	go_on "$client_pid"
	finish "$label" client
	finish "$label" server
	e2e_expect_lines "$label" "$label.server.out" listening dying
	if [ "$how" = request ]; then
		e2e_expect_lines "$label" "$label.client.out" "got REJECTED status 28" "send flushed" clean
		echo "ok   b. the listener exits on the request: REJECTED (28), the QP flushed, nothing left"
	else
		ending=$(sed -n 2p "$logdir/$label.client.out")
		case $ending in
		"got REJECTED status 28" | "got DISCONNECTED status 0") ;;
		*) e2e_case_fail "$label" "after ESTABLISHED: '$ending'" ;;
		esac
		e2e_expect_lines "$label" "$label.client.out" "got ESTABLISHED status 0" "$ending" "send flushed" clean
		echo "ok   c. the listener exits after accepting: ESTABLISHED, then ${ending#got }, the QP flushed, nothing left"
	fi
	e2e_check_no_malformed "$label"
done

# ---- d. Forged CM messages from the third host.
label=forged
port=$((port + 1))
CAPTURE_SNAPLEN=512 capture_start "$NETNS_M" "$VETH_MA" "$logdir/setup.pcap" ||
	e2e_case_fail "$label" "$CAPTURE_WHY"
start "$NETNS_A" "$label" server hold-server "$ADDR_A" "$port"
server_pid=$started
await "$label" server '^listening$'
start "$NETNS_B" "$label" client hold-client "$ADDR_A" "$port" 4096
client_pid=$started
await "$label" client '^holding$'
capture_stop "$NETNS_B" "$ADDR_A" || e2e_case_fail "$label" "$CAPTURE_WHY"
# The REQ (B to A) and the REP (A to B): TID, both communication IDs, the server's QPN.
read -r tid client_id server_id server_qpn < <(python3 - "$logdir/setup.pcap" "$ADDR_A" "$ADDR_B" <<'EOF'
import sys
sys.path.insert(0, "tests/e2e")
import roce_pcap
pcap, a, b = sys.argv[1:]
req = rep = None
for fr in roce_pcap.frames(pcap):
    if not roce_pcap.is_qp1_mad(fr) or fr.payload[1] != 0x07:
        continue
    attr = int.from_bytes(fr.payload[16:18], "big")
    if attr == 0x0010 and fr.src == b and fr.dst == a:
        req = fr.payload
    elif attr == 0x0013 and fr.src == a and fr.dst == b:
        rep = fr.payload
if req is None or rep is None:
    sys.exit("no REQ or REP in the capture")
u = lambda m, off, n: int.from_bytes(m[off:off + n], "big")
print(hex(u(req, 8, 8)), hex(u(req, 24, 4)), hex(u(rep, 24, 4)), hex(u(rep, 36, 3)))
EOF
)
[ -n "${server_qpn:-}" ] || e2e_case_fail "$label" "the capture of the setup holds no REQ and REP"
mac_a=$(mac_of "$NETNS_A" "$VETH_A")
mac_b=$(mac_of "$NETNS_B" "$VETH_B")
before() { e2e_stat "$1" "$2" "engine_cm_$3"; }
a_forged=$(before "$NETNS_A" "$VETH_A" forged) a_unmatched=$(before "$NETNS_A" "$VETH_A" unmatched)
b_forged=$(before "$NETNS_B" "$VETH_B" forged) b_unmatched=$(before "$NETNS_B" "$VETH_B" unmatched)
# forge_to SIDE OP SIP ARGS...: one OP frame into A (on VETH_MA) or B (VETH_MB).
forge_to() {
	local side=$1 op=$2 sip=$3 dev dmac dip smac
	shift 3
	if [ "$side" = A ]; then
		dev=$VETH_MA dmac=$mac_a dip=$ADDR_A smac=$mac_b
	else
		dev=$VETH_MB dmac=$mac_b dip=$ADDR_B smac=$mac_a
	fi
	[ "$sip" = "$third_addr" ] && smac=$third_mac
	netns_exec "$NETNS_M" "$forge" "$dev" --op "$op" --smac "$smac" --dmac "$dmac" \
		--sip "$sip" --dip "$dip" --qpn 1 --count 1 "$@" >>"$logdir/$label.forge.out" 2>&1 ||
		e2e_case_fail "$label" "forge $op to $side failed"
}
wrong_id() { printf '0x%x' $(($1 ^ 0x1000)); }
to_a=(--local-id "$client_id" --remote-id "$server_id" --remote-qpn "$server_qpn")
forge_to A cm-rej "$third_addr" "${to_a[@]}" --tid "$tid"
forge_to A cm-dreq "$third_addr" "${to_a[@]}" --tid 0x77
forge_to A cm-rej "$ADDR_B" --local-id "$client_id" --remote-id "$(wrong_id "$server_id")" --tid "$tid"
forge_to A cm-dreq "$ADDR_B" --local-id "$(wrong_id "$client_id")" --remote-id "$server_id" \
	--remote-qpn "$server_qpn" --tid 0x78
forge_to A cm-rej "$ADDR_B" "${to_a[@]}" --tid "$(printf '0x%x' $((tid ^ 0x5a)))"
to_b=(--remote-id "$client_id" --remote-qpn "$server_qpn")
forge_to B cm-rep "$third_addr" --local-id "$server_id" "${to_b[@]}" --tid "$tid"
forge_to B cm-rep "$ADDR_A" --local-id "$(wrong_id "$server_id")" "${to_b[@]}" --tid "$tid"
forge_to B cm-rep "$ADDR_A" --local-id "$server_id" "${to_b[@]}" --tid "$(printf '0x%x' $((tid ^ 0x5a)))"
# The engines count as they take the frames: wait for the counts, then they must be exact.
counts() {
	echo "$(($(before "$NETNS_A" "$VETH_A" forged) - a_forged)) $(($(before "$NETNS_A" "$VETH_A" unmatched) - a_unmatched))" \
		"$(($(before "$NETNS_B" "$VETH_B" forged) - b_forged)) $(($(before "$NETNS_B" "$VETH_B" unmatched) - b_unmatched))"
}
for _ in $(seq 50); do
	[ "$(counts)" = "2 3 1 2" ] && break
	sleep 0.1
done
got=$(counts)
[ "$got" = "2 3 1 2" ] ||
	e2e_case_fail "$label" "cm_forged/cm_unmatched grew by A: ${got% * *}, B: ${got#* * }; expected A: 2 3, B: 1 2"
go_on "$client_pid"
finish "$label" client
finish "$label" server
e2e_expect_lines "$label" "$label.client.out" "echo ok 1" holding "echo ok 2" "client done"
e2e_expect_lines "$label" "$label.server.out" listening "echoed 2" "server done"
e2e_check_no_malformed "$label"
echo "ok   d. 8 forged REJ/DREQ/REP (third host's address, wrong communication or transaction ID): A counted 2 forged, 3 unmatched, B 1 and 2; the connection echoed again and closed cleanly"

mb_stop
e2e_none_running rdma_cm_faults "$NETNS_A" "$NETNS_B" "$NETNS_M"
echo "ok   no rdma_cm_faults left in any namespace"
echo "test_rdma_cm_faults: PASS"
