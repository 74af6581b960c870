#!/usr/bin/env bash
# Connection management interop: Linux's rdma_cm and ib_cm in the guest
# against xroce's communication manager on QP1 in netns xrhost.
#   cm no-listener  xroce's device open in xrhost (open_device --hold), nobody
#                   listening; the guest's unmodified rping connects to it.
#                   rping must report RDMA_CM_EVENT_REJECTED at once (no
#                   retry, within 10 s); the capture on the guest's tap must
#                   show Linux's REQ and xroce's REJ to it: a UD SEND_ONLY
#                   from QP1 to QP1 (GSI Q_Key), reason 8 (invalid service
#                   ID), MessageREJected 0 (the REQ), the REQ's transaction
#                   ID and local communication ID echoed; xroce's counters
#                   count the MADs and nothing dropped as unmatched or forged.
#   cm xroce-connects  xroce's RDMA CM (tests/e2e/rdma_cm_e2e client-expect)
#                   connects to the guest's unmodified `rping -s` on port
#                   7174: ESTABLISHED, then a disconnect rping sees; the REQ
#                   and RTU xroce sent must equal those of the golden
#                   rdmacm_rping.pcap field by field (cm_compare active).
#   cm rping-connects  the guest's unmodified `rping -c` connects to xroce's
#                   RDMA CM (rdma_cm_e2e server-establish): ESTABLISHED, rping's
#                   first SEND (16 bytes) received on the QP the CM moved to
#                   RTS (both PSNs and QPNs right), then xroce disconnects; the
#                   REP must equal the golden one (cm_compare passive).
# Prints PASS/FAIL per run.
#
# Two ways to run it, as mw.sh: sourced by tests/interop/run.sh, or executed
# directly (then it sets the guest up and tears it down itself).
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository).

cm_in_host() {
	nsenter --net="/var/run/netns/$CM_HOST_NS" "$@"
}

cm_stat() {
	cm_in_host "$CM_XROCE" stats "$CM_HOST_IF" | awk -v c="$1" '$1 == c { print $2 }'
}

# cm_rej_why PCAP: why the capture lacks xroce's REJ of Linux's REQ (nothing when it has it).
cm_rej_why() {
	python3 - "$1" "$CM_HOST_IP" "$CM_GUEST_IP" <<'EOF'
import struct, sys
sys.path.insert(0, "tests/e2e")
import roce_pcap
path, host, guest = sys.argv[1], sys.argv[2], sys.argv[3]
reqs, rejs = [], []
for fr in roce_pcap.frames(path):
    mad = fr.payload
    if not roce_pcap.is_qp1_mad(fr) or mad[1] != 0x07:
        continue
    attr = struct.unpack(">H", mad[16:18])[0]
    tid = mad[8:16]
    if attr == 0x0010 and fr.src == guest and fr.dst == host:
        reqs.append((tid, mad[24:28]))
    elif attr == 0x0012 and fr.src == host and fr.dst == guest:
        rejs.append((tid, mad[28:32], mad[32] >> 6, struct.unpack(">H", mad[34:36])[0]))
if not reqs:
    print("the capture has no REQ from the guest")
elif not rejs:
    print(f"the capture has {len(reqs)} REQ(s) and no REJ from xroce")
else:
    tid, comm = reqs[0]
    bad = [r for r in rejs if r != (tid, comm, 0, 8)]
    if bad:
        t, c, m, reason = bad[0]
        print(f"REJ: TID {t.hex()} remote ID {c.hex()} MessageREJected {m} reason {reason}; "
              f"expected TID {tid.hex()}, remote ID {comm.hex()}, 0, 8")
    elif len(reqs) != 1:
        print(f"{len(reqs)} REQs: Linux retried, the REJ did not stop it")
EOF
}

cm_no_listener() {
	local label="cm no-listener" log=$CM_LOGDIR/cm-no-listener.rping.log
	local pcap=$CM_LOGDIR/cm-no-listener.pcap why="" holder="" start elapsed status=0

	# nsenter, not a shell function: $! must be open_device itself, to be stopped below.
	nsenter --net="/var/run/netns/$CM_HOST_NS" "$CM_HOLDER" "$CM_HOST_IF" --hold \
		>"$CM_LOGDIR/cm-holder.log" 2>&1 &
	holder=$!
	for _ in $(seq 100); do
		grep -q "^opened " "$CM_LOGDIR/cm-holder.log" && break
		sleep 0.1
	done
	grep -q "^opened " "$CM_LOGDIR/cm-holder.log" ||
		why="open_device: $(cat "$CM_LOGDIR/cm-holder.log")"
	if [ -z "$why" ] && ! CAPTURE_SNAPLEN=512 capture_start "$CM_PEER_NS" "$CM_CAPTURE_IF" "$pcap"; then
		why=$CAPTURE_WHY
	fi
	if [ -z "$why" ]; then
		start=$(date +%s%N)
		"$RXE_PEER" exec "$CM_GUEST" "timeout 30 rping -c -a $CM_HOST_IP -p 7174 -C 1 -v" \
			>"$log" 2>&1 || status=$?
		elapsed=$((($(date +%s%N) - start) / 1000000))
		capture_stop "$CM_HOST_NS" "$CM_GUEST_IP" || why=$CAPTURE_WHY
	fi
	if [ -n "$why" ]; then
		:
	elif ! grep -q "RDMA_CM_EVENT_REJECTED" "$log"; then
		why="rping (exit $status) did not report RDMA_CM_EVENT_REJECTED"
	elif [ "$status" -eq 0 ]; then
		why="rping exited 0 after a rejection"
	elif [ "$elapsed" -ge 10000 ]; then
		why="the rejection took $elapsed ms"
	else
		why=$(cm_rej_why "$pcap")
	fi
	if [ -z "$why" ]; then
		local rx tx unmatched forged
		rx=$(cm_stat engine_mads_rx) tx=$(cm_stat engine_mads_tx)
		unmatched=$(cm_stat engine_cm_unmatched) forged=$(cm_stat engine_cm_forged)
		[ "${rx:-0}" -ge 1 ] && [ "${tx:-0}" -ge 1 ] && [ "$unmatched" = 0 ] && [ "$forged" = 0 ] ||
			why="xroce's counters: mads_rx $rx mads_tx $tx cm_unmatched $unmatched cm_forged $forged"
	fi
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	interop_report "$label" "$why" "rejected in $elapsed ms" "$log"
}

# cm_compare_why ROLE PCAP: why xroce's CM messages in PCAP differ from the golden (nothing: equal).
cm_compare_why() {
	local out=$CM_LOGDIR/cm-compare-$1.log
	"$CM_COMPARE" "$CM_GOLDEN" "$2" "$1" >"$out" 2>&1 && return 0
	echo "cm_compare $1: $(grep -E '^(DIFF|BAD)|^cm_compare' "$out" | head -n 4 | tr '\n' ';')"
}

cm_xroce_connects() {
	local label="cm xroce-connects" log=$CM_LOGDIR/cm-xroce-connects.log
	local rping_log=$CM_LOGDIR/cm-xroce-connects.rping.log pcap=$CM_LOGDIR/cm-xroce-connects.pcap
	local job why="" status=0

	job=$("$RXE_PEER" start "$CM_GUEST" "timeout 60 rping -s -a $CM_GUEST_IP -p 7174 -C 1 -v")
	# rping listens within a second of starting; a REQ before that is rejected (reason 8).
	sleep 2
	CAPTURE_SNAPLEN=512 capture_start "$CM_PEER_NS" "$CM_CAPTURE_IF" "$pcap" || why=$CAPTURE_WHY
	if [ -z "$why" ]; then
		cm_in_host timeout 60 "$CM_E2E" client-expect "$CM_GUEST_IP" 7174 ESTABLISHED \
			>"$log" 2>&1 || status=$?
		capture_stop "$CM_HOST_NS" "$CM_GUEST_IP" || why=$CAPTURE_WHY
	fi
	"$RXE_PEER" wait "$CM_GUEST" "$job" 70 >"$rping_log" 2>&1
	if [ -n "$why" ]; then
		:
	elif [ "$status" -ne 0 ] || ! grep -qx "got ESTABLISHED status 0" "$log"; then
		why="rdma_cm_e2e (exit $status) did not connect"
	elif ! grep -q "DISCONNECT EVENT" "$rping_log"; then
		why="rping never saw the disconnect"
	else
		why=$(cm_compare_why active "$pcap")
	fi
	interop_report "$label" "$why" "REQ and RTU equal the golden capture's" "$log" "$rping_log"
}

cm_rping_connects() {
	local label="cm rping-connects" log=$CM_LOGDIR/cm-rping-connects.log
	local rping_log=$CM_LOGDIR/cm-rping-connects.rping.log pcap=$CM_LOGDIR/cm-rping-connects.pcap
	local server="" why="" status=0

	CAPTURE_SNAPLEN=512 capture_start "$CM_PEER_NS" "$CM_CAPTURE_IF" "$pcap" || why=$CAPTURE_WHY
	if [ -z "$why" ]; then
		nsenter --net="/var/run/netns/$CM_HOST_NS" timeout 60 "$CM_E2E" server-establish \
			"$CM_HOST_IP" 7174 >"$log" 2>&1 &
		server=$!
		for _ in $(seq 100); do
			grep -qx listening "$log" && break
			sleep 0.1
		done
		grep -qx listening "$log" || why="rdma_cm_e2e server-establish never listened"
	fi
	if [ -z "$why" ]; then
		"$RXE_PEER" exec "$CM_GUEST" "timeout 30 rping -c -a $CM_HOST_IP -p 7174 -C 1 -v" \
			>"$rping_log" 2>&1
		wait "$server" || status=$?
		server=""
		capture_stop "$CM_HOST_NS" "$CM_GUEST_IP" || why=$CAPTURE_WHY
	fi
	[ -n "$server" ] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
	if [ -n "$why" ]; then
		:
	elif [ "$status" -ne 0 ] || ! grep -qx "received 16 bytes" "$log" ||
		! grep -qx disconnected "$log"; then
		why="rdma_cm_e2e server-establish (exit $status) did not get rping's message and end"
	else
		why=$(cm_compare_why passive "$pcap")
	fi
	interop_report "$label" "$why" "rping's SEND arrived; REP equals the golden's" "$log" "$rping_log"
}

cm_main() {
	# shellcheck source=tests/interop/report.sh
	source tests/interop/report.sh
	CM_XROCE=$(readlink -f "${BUILD:-build}/xroce")
	CM_HOLDER=$(readlink -f "${BUILD:-build}/tests/open_device")
	CM_HOST_NS=${RXE_PEER_HOST_NS:-xrhost}
	CM_HOST_IF=${RXE_PEER_HOST_IF:-xrhost0}
	CM_GUEST=rxeA
	CM_GUEST_IP=${RXE_PEER_NET:-10.77.0}.1
	CM_HOST_IP=${RXE_PEER_NET:-10.77.0}.100
	CM_LOGDIR=${logdir:?}
	CM_PEER_NS=${RXE_PEER_NS:-xrpeer}
	CM_CAPTURE_IF=${RXE_PEER_CAPIF:-xrtap0}
	# shellcheck source=tests/e2e/capture.sh
	source tests/e2e/capture.sh
	CM_E2E=$(readlink -f "${BUILD:-build}/tests/rdma_cm_e2e")
	CM_COMPARE=$(readlink -f "${BUILD:-build}/tests/cm_compare")
	CM_GOLDEN=$(readlink -f "${XROCE_VECTORS:-../shared/vectors/rxe}")/rdmacm_rping.pcap
	echo "connection management against Linux's rdma_cm (rping)"
	cm_no_listener
	cm_xroce_connects
	cm_rping_connects
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced by run.sh: the guest is up and xroce is attached to its host interface.
	cm_main
	return 0
fi

set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/interop/standalone.sh
source tests/interop/standalone.sh
interop_standalone cm cm_main
