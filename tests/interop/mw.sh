#!/usr/bin/env bash
# Memory window interop: xroce_mw_peer (tests/interop/xroce_mw_peer.c) in
# netns xrhost against rxe_mw_peer (tests/interop/guest/rxe_mw_peer.c, a
# libibverbs program built here into rxe-peer's share and run in the guest
# rxeA) on Linux Soft-RoCE. Each case runs twice, once with the guest owning
# the memory (it binds the windows and invalidates them, xroce accesses
# through them) and once with xroce owning it, each run with a fresh pair of
# processes and QPs:
#   mw1           type 1 windows (ibv_bind_mw / xr_bind_mw): bind, access
#                 through both QPs, rebind (old key refused), unbind (refused)
#   mw2           type 2 windows (bind by work request), LOCAL_INV: refused
#   mw2-qp        a type 2 window refuses other QPs and accesses past its end
#   mw-access     a window grants only the rights it was bound with
#   send-inv      SEND with invalidate (SEND_LAST_INV) of a type 2 window:
#                 WITH_INV receive with that key, refused after, binds again
#   send-inv-bad  SEND with invalidate (SEND_ONLY_INV) of a type 1 window:
#                 both ends fail the message, the window survives
#   send-inv-fmr  (xroce owns) a fast-registration MR invalidated by SEND
#                 with invalidate, registered again, invalidated by LOCAL_INV
# Every step checks the exact completion statuses on both sides, the bytes
# moved, and that refused accesses changed no memory (see xroce_mw_peer.c).
# A run passes when xroce_mw_peer prints "RESULT PASS" and both programs
# exit 0. The send-inv runs are captured on the guest's tap
# (tests/e2e/capture.sh), where they must show the SEND with invalidate's
# last packet with the right opcode (0x16 SEND_LAST_INV, 0x17 SEND_ONLY_INV)
# and the key in its IETH, and for send-inv-bad with xroce the target its
# NAK invalid request (AETH syndrome 0x61; rxe as the target ACKs such a
# SEND, see xroce_mw_peer.c). Prints PASS/FAIL per run.
#
# Two ways to run it, as perftest.sh:
#   sourced by tests/interop/run.sh: it reuses that script's guest,
#   attachment and log dir, and adds to its passed/failed counts and
#   failures list;
#   executed directly: it sets the guest up itself (rxe-peer setup, up 1,
#   xroce attach), prints "N passed, N failed" and tears everything down
#   (RXE_PEER_KEEP=1 leaves the guest up).
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository), RXE_PEER_WORK (its
# work dir, default /tmp/rxe-peer), MW_CASES (default all, as "CASE:OWNER"
# words), GUEST_TIMEOUT (seconds a guest program may run, default 120).

mw_in_host() {
	nsenter --net="/var/run/netns/$MW_HOST_NS" "$@"
}

# mw_capture_why PCAP OPCODE [NAK_SYNDROME]: why the capture of a send-inv
# run lacks what it must show (nothing when it has it): a packet with BTH
# opcode OPCODE (decimal) carrying the key the run's log names in its IETH,
# and with NAK_SYNDROME an acknowledge with that AETH syndrome.
mw_capture_why() {
	local pcap=$1 opcode=$2 nak=${3:-} log=$4 key frames
	key=$(sed -n 's/.*SEND_WITH_INV of .* invalidating \(0x[0-9a-f]*\) .*/\1/p' "$log" | head -n1)
	[ -n "$key" ] || {
		echo "the log names no invalidated key"
		return
	}
	frames=$(tshark -r "$pcap" -Y "infiniband.bth.opcode == $opcode" \
		-T fields -e infiniband.ieth 2>/dev/null | tr "," "\n")
	if [ -z "$frames" ]; then
		echo "the capture has no packet with opcode $(printf '%#04x' "$opcode")"
	elif ! grep -qix "${key#0x}" <<<"${frames//:/}"; then
		echo "no packet with opcode $(printf '%#04x' "$opcode") carries $key in its IETH" \
			"(IETH: $(echo "$frames" | tr '\n' ' '))"
	elif [ -n "$nak" ] && [ -z "$(tshark -r "$pcap" -Y "infiniband.aeth.syndrome == $nak" \
		-T fields -e frame.number 2>/dev/null)" ]; then
		echo "the capture has no acknowledge with AETH syndrome $(printf '%#04x' "$nak")"
	fi
}

# mw_one CASE OWNER
mw_one() {
	local case=$1 owner=$2 id="" why="" host_status=0 guest_status=0 capture=""
	local label="mw $case, $owner owns" tag="mw-$case-$owner"
	local host_log=$MW_LOGDIR/$tag.xroce.log guest_log=$MW_LOGDIR/$tag.rxe.log
	local pcap=$MW_LOGDIR/$tag.pcap
	local guest_cmd="timeout $GUEST_TIMEOUT /share/rxe_mw_peer -x 1 -p $MW_PORT -t $((GUEST_TIMEOUT - 10))"

	case $case in
	send-inv) capture="22" ;;
	send-inv-fmr) capture="23" ;;
	send-inv-bad) capture="23" ;;
	esac
	if [ -n "$capture" ] && ! capture_start "$MW_PEER_NS" "$MW_CAPTURE_IF" "$pcap"; then
		why=$CAPTURE_WHY
	fi
	if [ -z "$why" ]; then
		id=$("$RXE_PEER" start "$MW_GUEST" "$guest_cmd") || why="rxe-peer start failed"
	fi
	if [ -n "$why" ]; then
		echo "(not started)" >"$host_log"
		echo "(not started)" >"$guest_log"
	else
		# xroce_mw_peer retries a refused connect while the guest program starts.
		mw_in_host timeout $((GUEST_TIMEOUT + 30)) "$MW_BIN" -d "$MW_HOST_IF" -p "$MW_PORT" \
			"$case" "$owner" "$MW_GUEST_IP" >"$host_log" 2>&1 || host_status=$?
		# If we failed before connecting, the guest still waits in accept():
		# a connection that closes at once makes it give up now.
		if ! grep -q "^remote:" "$host_log"; then
			mw_in_host timeout 5 bash -c "exec 3<>/dev/tcp/$MW_GUEST_IP/$MW_PORT" 2>/dev/null
		fi
		"$RXE_PEER" wait "$MW_GUEST" "$id" $((GUEST_TIMEOUT + 30)) >"$guest_log" 2>&1 ||
			guest_status=$?
	fi
	if [ -n "$CAPTURE_PID" ] && ! capture_stop "$MW_HOST_NS" "$MW_GUEST_IP" && [ -z "$why" ]; then
		why=$CAPTURE_WHY
	fi

	if [ -n "$why" ]; then
		:
	elif ! grep -q "^RESULT PASS$" "$host_log"; then
		why=$(grep -m1 "^RESULT" "$host_log" || echo "xroce_mw_peer exit $host_status, no result")
	elif [ "$host_status" -ne 0 ] || [ "$guest_status" -ne 0 ]; then
		why="xroce_mw_peer exit $host_status, rxe_mw_peer exit $guest_status"
	elif ! grep -q "^session ended with BYE$" "$guest_log"; then
		why="rxe_mw_peer did not see the session end"
	elif [ -n "$capture" ]; then
		why=$(mw_capture_why "$pcap" "$capture" \
			"$([ "$case:$owner" = send-inv-bad:xroce ] && echo 97)" "$host_log")
	fi
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		printf 'PASS %-34s %s steps\n' "$label" "$(grep -c '^  \[' "$host_log")"
	else
		failed=$((failed + 1))
		failures+=("$label")
		printf 'FAIL %-34s %s\n' "$label" "$why"
		local log
		for log in "$host_log" "$guest_log"; do
			echo "    --- $(basename "$log"):"
			tail -n 15 "$log" | sed 's/^/    | /'
		done
	fi
}

mw_main() {
	MW_BIN=$(readlink -f "${BUILD:-build}/tests/xroce_mw_peer")
	GUEST_TIMEOUT=${GUEST_TIMEOUT:-120}
	MW_HOST_NS=${RXE_PEER_HOST_NS:-xrhost}
	MW_HOST_IF=${RXE_PEER_HOST_IF:-xrhost0}
	MW_GUEST=rxeA
	MW_GUEST_IP=${RXE_PEER_NET:-10.77.0}.1
	MW_PORT=18610
	MW_LOGDIR=${logdir:?}
	MW_PEER_NS=${RXE_PEER_NS:-xrpeer}
	MW_CAPTURE_IF=${RXE_PEER_CAPIF:-xrtap0}
	local share=${RXE_PEER_WORK:-/tmp/rxe-peer}/share spec
	# shellcheck source=tests/e2e/capture.sh
	source tests/e2e/capture.sh
	if [ ! -x "$MW_BIN" ]; then
		failed=$((failed + 1))
		failures+=("mw: xroce_mw_peer missing")
		echo "FAIL mw: $MW_BIN is missing (make all)"
		return
	fi
	# The guest runs the host's rdma-core: build against it, into the guest's /share.
	if ! cc -O2 -Wall -Wextra -Werror -o "$share/rxe_mw_peer" \
		tests/interop/guest/rxe_mw_peer.c -libverbs >"$MW_LOGDIR/rxe_mw_peer.build.log" 2>&1; then
		failed=$((failed + 1))
		failures+=("mw: rxe_mw_peer build")
		echo "FAIL mw: building rxe_mw_peer failed:"
		sed 's/^/    | /' "$MW_LOGDIR/rxe_mw_peer.build.log"
		return
	fi
	echo "memory windows and invalidation against rxe_mw_peer"
	for spec in ${MW_CASES:-mw1:rxe mw1:xroce mw2:rxe mw2:xroce mw2-qp:rxe mw2-qp:xroce \
		mw-access:rxe mw-access:xroce send-inv:rxe send-inv:xroce send-inv-bad:rxe send-inv-bad:xroce send-inv-fmr:xroce}; do
		mw_one "${spec%%:*}" "${spec#*:}"
	done
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced by run.sh: the guest is up and xroce is attached to its host interface.
	mw_main
	return 0
fi

set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/interop/standalone.sh
source tests/interop/standalone.sh
interop_standalone mw mw_main
