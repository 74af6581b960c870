# shellcheck shell=bash
# A complete capture of a run's RoCE frames with tcpdump, for counting them
# afterwards (tests/e2e/rd_inflight.sh). Frames that XDP takes never reach a
# capture: capture where they pass through a kernel (a middlebox's or a
# bridge's end). Source it; one capture at a time.
#
# capture_start NS IFNAME PCAP
#     tcpdump in namespace NS on IFNAME into PCAP: UDP/4791 and the sentinel
#     port, headers only (-s 128, or CAPTURE_SNAPLEN bytes) and a 32 MiB
#     buffer, so that a slow host drops nothing; returns once it listens (at
#     most 10 s), else returns 1.
# capture_stop NS ADDR
#     sends a sentinel datagram from NS to ADDR (the discard port, through the
#     capture point after every frame of the run), waits until tcpdump wrote
#     it (-U writes each frame at once; at most 5 s), then stops tcpdump.
#     Returns 1 if tcpdump failed, dropped frames or the sentinel never came.
# Both set CAPTURE_WHY when they return 1. Call them directly, not in $(...):
# they keep tcpdump's PID in CAPTURE_PID while it runs (capture_kill stops it:
# call it on every exit path).

CAPTURE_PID=""
CAPTURE_WHY=""
CAPTURE_SENTINEL_PORT=9

capture_start() {
	local ns=$1 ifname=$2 pcap=$3
	CAPTURE_PCAP=$pcap
	rm -f "$pcap" "$pcap.log"
	# nsenter, not a shell function: $! must be tcpdump itself, for capture_stop to signal.
	nsenter --net="/var/run/netns/$ns" tcpdump --immediate-mode -U -n -s "${CAPTURE_SNAPLEN:-128}" -B 32768 \
		-i "$ifname" -w "$pcap" "udp port 4791 or udp port $CAPTURE_SENTINEL_PORT" \
		>/dev/null 2>"$pcap.log" &
	CAPTURE_PID=$!
	for _ in $(seq 100); do
		grep -q "^tcpdump: listening on" "$pcap.log" && return 0
		kill -0 "$CAPTURE_PID" 2>/dev/null || break
		sleep 0.1
	done
	CAPTURE_WHY="tcpdump did not start: $(cat "$pcap.log")"
	capture_kill
	return 1
}

capture_stop() {
	local ns=$1 addr=$2 status=0 seen=0
	nsenter --net="/var/run/netns/$ns" bash -c \
		"echo sentinel >/dev/udp/$addr/$CAPTURE_SENTINEL_PORT" 2>/dev/null
	for _ in $(seq 50); do
		seen=$(tcpdump -r "$CAPTURE_PCAP" -n "udp port $CAPTURE_SENTINEL_PORT" 2>/dev/null |
			wc -l)
		[ "$seen" -gt 0 ] && break
		sleep 0.1
	done
	kill -TERM "$CAPTURE_PID"
	wait "$CAPTURE_PID" || status=$?
	CAPTURE_PID=""
	if [ "$status" -ne 0 ]; then
		CAPTURE_WHY="tcpdump exited with status $status: $(cat "$CAPTURE_PCAP.log")"
	elif [ "$seen" -eq 0 ]; then
		CAPTURE_WHY="the sentinel datagram never reached the capture"
	elif ! grep -q "^0 packets dropped by kernel" "$CAPTURE_PCAP.log"; then
		CAPTURE_WHY="tcpdump missed frames: $(grep dropped "$CAPTURE_PCAP.log")"
	else
		return 0
	fi
	return 1
}

# Stops a capture that is still running, quietly (cleanup on exit).
capture_kill() {
	[ -n "$CAPTURE_PID" ] || return 0
	kill -TERM "$CAPTURE_PID" 2>/dev/null
	wait "$CAPTURE_PID" 2>/dev/null
	CAPTURE_PID=""
}
