#!/usr/bin/env bash
# xroce-perf -o/--outs (outstanding READs/atomics) between two namespaces
# joined through the middlebox (A <-> M <-> B), each run captured in M on
# the client's side, where the frames pass through the kernel (xroce's ends
# hide them from a capture: XDP takes them before the stack does). The
# middlebox holds the responses 1 ms on their way back, so that the capture
# sees every request the client has outstanding at once, however fast the
# server answers and the middlebox forwards:
#   1. read_bw and atomic_bw with the same -o N on both sides: both print
#      "Outstand reads : N" (read_bw also OUT 0x0N for both QPs), the run
#      completes, and at most N requests are ever in flight in the capture,
#      and N are at some point (tests/e2e/rd_inflight.sh);
#   2. -o on one side only: the client issues at most the server's -o (as
#      perftest's does) and at most its own (unlike perftest's);
#   3. without -o the same run has more than N in flight: the capture can see
#      the limit being kept, not just low traffic;
#   4. read_lat and atomic_lat take -o too;
#   5. the option is refused, with exit 1 and its message, where it does not
#      apply: send/write tests, 0, above the device's maximum, not a number.
# Needs root, tcpdump and tshark. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
middlebox=$BUILD/tests/middlebox
iters=200

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
# shellcheck source=tests/e2e/capture.sh
source tests/e2e/capture.sh
e2e_init test_perf_outs "$perf" "$xroce" "$middlebox"
trap 'capture_kill; e2e_cleanup' EXIT
command -v tcpdump >/dev/null || fail "tcpdump not found (scripts/install-deps.sh installs it)"

netns_middlebox_pair oup "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
mb_start --a2b-delay-us 1000

# outs_printed LOG N: the test header says N outstanding reads.
outs_printed() {
	grep -Eq "^ Outstand reads  : $2\$" "$1"
}

# run TEST SIZE "SERVER_OPTIONS" "CLIENT_OPTIONS": one run, captured; both
# sides must exit 0 and the client print the result line for SIZE x iters.
# Sets in_flight and requests from the capture.
run() {
	local test=$1 size=$2 server_opts=$3 client_opts=$4 server_status=0 client_status=0 counts
	capture_start "$NETNS_M" "$VETH_MB" "$logdir/run.pcap" || fail "$test: $CAPTURE_WHY"
	# shellcheck disable=SC2086 # the options are meant to be split into words
	netns_exec "$NETNS_A" timeout 60 "$perf" "$test" -d "$VETH_A" -x 1 -n $iters $server_opts \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	# shellcheck disable=SC2086
	netns_exec "$NETNS_B" timeout 60 "$perf" "$test" -d "$VETH_B" -x 1 -n $iters $client_opts \
		"$ADDR_A" >"$logdir/client.log" 2>&1 || client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
	capture_stop "$NETNS_B" "$ADDR_A" || fail "$test: $CAPTURE_WHY"
	label="$test server [$server_opts] client [$client_opts]"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$label: server exit $server_status, client exit $client_status"
	fi
	if ! awk -v s="$size" -v n="$iters" '$1 == s && $2 == n { ok = 1 } END { exit !ok }' \
		"$logdir/client.log"; then
		e2e_show_logs
		fail "$label: the client printed no result line for $size bytes x $iters"
	fi
	counts=$(tests/e2e/rd_inflight.sh "$logdir/run.pcap") || fail "$label: rd_inflight failed"
	requests=$(awk '{ print $2 }' <<<"$counts")
	in_flight=$(awk '{ print $4 }' <<<"$counts")
	[ "$requests" = "$iters" ] ||
		fail "$label: the capture holds $requests distinct requests, expected $iters"
}

# limited TEST SIZE N "SERVER_OPTIONS" "CLIENT_OPTIONS": one run, with never
# more than N requests in flight and N at some point.
limited() {
	local test=$1 size=$2 n=$3
	run "$test" "$size" "$4" "$5"
	[ "$in_flight" -eq "$n" ] || {
		e2e_show_logs
		fail "$label: up to $in_flight requests in flight, expected at most and at some point $n"
	}
	echo "ok: $label: $requests requests, at most $in_flight in flight"
}

limited read_bw 4096 2 "-s 4096 -o 2" "-s 4096 -o 2"
for side in server client; do
	outs_printed "$logdir/$side.log" 2 || fail "read_bw -o 2: the $side does not print 2 outstanding reads"
	[ "$(grep -c "^ \(local\|remote\) address: .* OUT 0x02 " "$logdir/$side.log")" -eq 2 ] ||
		fail "read_bw -o 2: the $side does not show OUT 0x02 for both QPs"
done
limited atomic_bw 8 3 "-o 3" "-o 3"
for side in server client; do
	outs_printed "$logdir/$side.log" 3 || fail "atomic_bw -o 3: the $side does not print 3 outstanding reads"
done
limited atomic_bw 8 1 "-A CMP_AND_SWAP -o 1" "-A CMP_AND_SWAP -o 1"
limited read_bw 4096 2 "-s 4096 -o 2" "-s 4096"
# Without -o a side announces the device's maximum.
max_outs=$(awk '$1 == "Outstand" { print $4 }' "$logdir/client.log")
[ "${max_outs:-0}" -gt 3 ] || fail "read_bw without -o: the client announces '$max_outs' outstanding reads"
limited read_bw 4096 3 "-s 4096" "-s 4096 -o 3"

run read_bw 4096 "-s 4096" "-s 4096"
[ "$in_flight" -gt 3 ] || fail "$label: only $in_flight in flight without -o: the capture cannot show a limit of 3"
echo "ok: $label (no -o): $requests requests, up to $in_flight in flight"

limited read_lat 64 1 "-s 64 -o 2" "-s 64 -o 2"
outs_printed "$logdir/client.log" 2 || fail "read_lat -o 2: the client does not print 2 outstanding reads"
limited atomic_lat 8 1 "-o 2" "-o 2"

mb_stop

# refused TEST OUTS MESSAGE: xroce-perf TEST -o OUTS exits 1 at once with MESSAGE.
refused() {
	local status=0 out
	out=$(netns_exec "$NETNS_A" timeout 10 "$perf" "$1" -d "$VETH_A" -o "$2" 2>&1) || status=$?
	[ "$status" -eq 1 ] || fail "$1 -o $2: exit $status, expected 1: $out"
	grep -qF -- "$3" <<<"$out" || fail "$1 -o $2: no '$3' in: $out"
	echo "ok: $1 -o $2 refused: $out"
}

refused send_bw 2 "-o (outstanding READs/atomics) is for read and atomic tests only"
refused write_lat 2 "-o (outstanding READs/atomics) is for read and atomic tests only"
refused read_bw 0 "-o 0: outstanding READs/atomics must be between 1 and $max_outs (the device's maximum)"
refused atomic_bw $((max_outs + 1)) \
	"-o $((max_outs + 1)): outstanding READs/atomics must be between 1 and $max_outs (the device's maximum)"
refused read_lat x "invalid value 'x' for -o"
echo "test_perf_outs: PASS"
