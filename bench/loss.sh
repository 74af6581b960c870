#!/usr/bin/env bash
# Goodput under loss, xroce <-> xroce: xroce-perf write_bw of 64 KiB WRITEs
# (path MTU 1024) between namespaces A and B joined through the test
# middlebox in M (tests/e2e/middlebox.c, A <-> M <-> B), clean and then with
# random loss each way of 0.5, 1, 2 and 5 %, and with the same 1 and 2 % lost
# in bursts of 8 frames. Each impaired case runs twice: with selective repeat
# (sr, the default between xroce peers) and with go-back-N alone (gbn,
# XROCE_SELECTIVE_REPEAT=0 at both ends, as against a standard peer). For
# each case, in one table: the goodput, the share
# of the clean goodput kept (same run), the request frames the middlebox
# dropped, the requests retransmitted (as the middlebox saw them: a PSN not
# beyond the highest sent) per request lost, and the requester engine's
# retransmission episodes (each rewind or early ask: engine_retransmits, and
# each packet a SACK showed lost: engine_sr_resends), local ACK timer expiries
# (engine_timeouts) and tail-loss probes (engine_tail_probes), from xroce stats; and the frames the middlebox's
# sockets dropped on their own (mb_drops: it fell behind), losses no case
# asked for.
# Then congestion instead of random loss: the middlebox a bottleneck of 400
# Mb/s (about half the clean rate) holding 64 frames, dropping what finds it
# full (drop-tail, the requester Not-ECT: XROCE_ECN=0), or marking CE behind
# 16 queued frames (ecn, the default): the goodput, its share of the
# bottleneck's rate, the frames the full queue dropped, those it marked CE,
# the CNPs the responder sent, and the requester's retransmissions and timer
# expiries.
# The clean figure is the middlebox's forwarding rate as much as xroce's: the
# kept share compares like with like. No figure is asserted.
# LOSS_SECONDS (default 4, at most 10) is the length of each run. Needs root;
# run by `make bench` after its own table, or alone after `make`.
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
duration=${LOSS_SECONDS:-4}
if ! [[ $duration =~ ^[0-9]+$ ]] || [ "$duration" -lt 1 ] || [ "$duration" -gt 10 ]; then
	echo "loss: LOSS_SECONDS must be 1..10" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "loss: needs root (namespaces, XDP)" >&2
	exit 1
fi
perf=$BUILD/xroce-perf
middlebox=$BUILD/tests/middlebox
for bin in "$perf" "$middlebox"; do
	[ -x "$bin" ] || {
		echo "loss: $bin is missing (make first)" >&2
		exit 1
	}
done

source scripts/netns.sh
# mb_start, mb_stop, mb_dir: the middlebox as the tests run it.
source tests/e2e/middlebox.sh
fail() {
	echo "loss: $*" >&2
	exit 1
}
logdir=$(mktemp -d /tmp/xroce-loss.XXXXXX)
mb_pid=""
server_pid=""
cleanup() {
	local pid
	for pid in "$server_pid" "$mb_pid"; do
		[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
		[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	done
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_middlebox_pair lss
netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"
echo "loss: $NETNS_A ($ADDR_A) <-> $NETNS_M <-> $NETNS_B ($ADDR_B), ${duration} s per case"

# engine_counter NAME: counter NAME of the last engine on B's device, the
# requester's (each engine's counters start from 0 and stay after it exits).
engine_counter() {
	netns_stat "$NETNS_B" "$VETH_B" "$1"
}

# run_case NAME MODE MIDDLEBOX_ARGS...: one write_bw run through the
# middlebox, MODE sr, gbn or not-ect (sr with the requester Not-ECT); prints
# "NAME MB/s dropped retransmitted rtx_events timeouts probes mb_drops
# queue_dropped ce_marked cnps".
run_case() {
	local name=$1 mode=$2 status=0 mbs
	shift 2
	local sr=1 ecn=1
	[ "$mode" != gbn ] || sr=0
	[ "$mode" != not-ect ] || ecn=0
	mb_start --max-seconds $((duration + 60)) "$@"
	netns_exec "$NETNS_A" env XROCE_SELECTIVE_REPEAT=$sr timeout $((duration + 60)) "$perf" \
		write_bw -d "$VETH_A" -m 1024 >"$logdir/server.log" 2>&1 &
	server_pid=$!
	netns_wait_tcp_listen "$NETNS_A" 18515 || true
	netns_exec "$NETNS_B" env XROCE_SELECTIVE_REPEAT=$sr XROCE_ECN=$ecn timeout $((duration + 50)) "$perf" \
		write_bw -d "$VETH_B" -m 1024 -s 65536 -D "$duration" "$ADDR_A" \
		>"$logdir/client.log" 2>&1 || status=$?
	wait "$server_pid" || status=$?
	server_pid=""
	mb_stop
	if [ "$status" -ne 0 ]; then
		echo "loss: $name: write_bw failed" >&2
		cat "$logdir/server.log" "$logdir/client.log" >&2
		return 1
	fi
	# perftest's result line: bytes, iterations, peak, average MB/s, Mpps.
	mbs=$(awk '$1 == 65536 && NF >= 5 { print $4 }' "$logdir/client.log" | tail -1)
	# The counters are the last engine's, the client's of this run.
	# The requests go from B to A (b2a).
	echo "$name ${mbs:-0} $(mb_dir b2a requests_dropped) $(mb_dir b2a retransmits)" \
		"$(($(engine_counter engine_retransmits) + $(engine_counter engine_sr_resends)))" \
		"$(engine_counter engine_timeouts)" \
		"$(engine_counter engine_tail_probes)" \
		"$(($(mb_dir b2a socket_drops) + $(mb_dir a2b socket_drops)))" \
		"$(mb_dir b2a queue_dropped) $(mb_dir b2a ce_marked) $(mb_dir a2b cnps)"
}

results=()
results+=("$(run_case clean sr)")
for pct in 0.5 1 2 5; do
	for mode in gbn sr; do
		results+=("$(run_case "${pct}%-$mode" $mode --loss "$pct" --seed 7)")
	done
done
for pct in 1 2; do
	for mode in gbn sr; do
		results+=("$(run_case "${pct}%-b8-$mode" $mode --loss "$pct" --burst 8 --seed 7)")
	done
done

bottleneck_mbps=400
congested=()
congested+=("$(run_case drop-tail not-ect --b2a-rate-mbps $bottleneck_mbps --b2a-queue-frames 64)")
congested+=("$(run_case ecn sr --b2a-rate-mbps $bottleneck_mbps --b2a-queue-frames 64 \
	--b2a-ce-threshold 16)")

clean=$(awk '{ print $2 }' <<<"${results[0]}")
echo
printf '%-12s %8s %5s %8s %8s %9s %10s %8s %7s %8s\n' case MB/s kept lost retrans 'retx/lost' \
	rtx_events timeouts probes mb_drops
for row in "${results[@]}"; do
	awk -v c="$clean" '{
		kept = c > 0 ? $2 / c : 0
		ratio = $3 > 0 ? sprintf("%.2f", $4 / $3) : "-"
		printf "%-12s %8.1f %5.2f %8d %8d %9s %10d %8d %7d %8d\n", $1, $2, kept, $3, $4, ratio, $5, $6, $7, $8
	}' <<<"$row"
done

echo
echo "a bottleneck of $bottleneck_mbps Mb/s holding 64 frames:"
printf '%-12s %8s %9s %9s %9s %7s %8s %8s\n' case MB/s 'of_rate' q_dropped ce_marked cnps \
	retrans timeouts
for row in "${congested[@]}"; do
	awk -v r="$bottleneck_mbps" '{
		printf "%-12s %8.1f %9.2f %9d %9d %7d %8d %8d\n", $1, $2, $2 * 8 / r, $9, $10, $11, $4, $6
	}' <<<"$row"
done
