#!/usr/bin/env bash
# Two queues: a veth pair whose ends have two receive and two transmit queues
# each, xroce attached on both. The engine has an AF_XDP socket on each
# receive queue and sends each connected QP's frames on the queue its peer's
# arrive on; veth delivers a frame on the peer's receive queue of the number
# it was sent on. Two engine threads (XROCE_ENGINES=2) each serve one queue
# and the QPs whose frames arrive on it.
#   1. rdma_e2e's and send_e2e's cases (every operation around the MTU up to
#      1 MiB, atomics, access errors, gather and scatter, a 10,000-message
#      stream), both ends passing.
#   2. xroce-perf write_bw with 4 QPs of 64 KiB WRITEs: QPs start on queue
#      QPN mod 2, so each queue carries two of them: the server's XDP saw
#      at least a quarter of the data packets on each receive queue, the
#      client's at least an ACK for every four WRITEs of a queue; each of
#      the server's engine threads received at least a quarter of the data
#      packets itself (the server polls no CQ, so no application thread
#      takes its frames); `xroce status` shows two queues and two engines.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
rdma_e2e=$BUILD/tests/rdma_e2e
send_e2e=$BUILD/tests/send_e2e
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))
qps=4
iters=200
size=65536

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/perf_common.sh
source tests/e2e/perf_common.sh
e2e_init test_multiqueue_e2e "$rdma_e2e" "$send_e2e" "$perf" "$xroce"
command -v ethtool >/dev/null || fail "ethtool is missing (scripts/install-deps.sh)"
export XROCE_ENGINES=2

NETNS_QUEUES=2 netns_pair mq "$(e2e_subnet)" || fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	channels=$(netns_exec "${end%%:*}" ethtool -l "${end#*:}" | sed -n '/^Current/,$p')
	echo "$channels" | grep -q "^RX:[[:space:]]*2$" && echo "$channels" | grep -q "^TX:[[:space:]]*2$" ||
		fail "${end#*:} does not have two queues each way: $channels"
done
e2e_attach_both

# 1. Every operation.
for e2e in "$rdma_e2e" "$send_e2e"; do
	roce_port=$port
	e2e_run_cases 240
	e2e_check_stats
	port=$((port + 1))
done

# xdp_packets NS DEV QUEUE: frames XDP saw on DEV's receive queue QUEUE (veth's counter).
xdp_packets() {
	netns_exec "$1" ethtool -S "$2" | awk -v name="rx_queue_$3_xdp_packets:" '$1 == name { print $2 }'
}

# rx_by_engine NS DEV: the frames each engine thread of DEV received, one per line.
rx_by_engine() {
	netns_exec "$1" "$xroce" stats "$2" | awk '$1 == "engine_rx_by_engine" { for (i = 2; i <= NF; i++) print $i }'
}

# 2. Four QPs over two queues.
declare -A before
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	for queue in 0 1; do
		before[$end:$queue]=$(xdp_packets "${end%%:*}" "${end#*:}" $queue)
		[ -n "${before[$end:$queue]}" ] || fail "no XDP counter for queue $queue of ${end#*:}"
	done
done
perf_status_line=$logdir/status_line
perf_pair write_bw -x 1 -n $iters -s $size -q $qps
perf_status_line=
if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
	e2e_show_logs
	fail "write_bw -q $qps: server exit $server_status, client exit $client_status"
fi
perf_result_ok "$logdir/client.log" $size bw $((iters * qps)) ||
	{ e2e_show_logs && fail "write_bw -q $qps: no sane result line"; }
grep -q ", queues 2, engines 2$" "$logdir/status_line" ||
	fail "xroce status does not show two queues and two engines: '$(cat "$logdir/status_line")'"
echo "ok   xroce status: $(sed 's/.*, path MTU/path MTU/' "$logdir/status_line")"
# The server gets the data packets (path MTU 1024), at least a quarter of
# them on each queue; the client gets ACKs, which may cover several WRITEs
# each: at least one for every four of a queue's WRITEs.
data=$((iters * qps * size / 1024))
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	least=$((data / 4))
	[ "${end%%:*}" = "$NETNS_B" ] && least=$((iters * qps / 2 / 4))
	for queue in 0 1; do
		seen=$(($(xdp_packets "${end%%:*}" "${end#*:}" $queue) - ${before[$end:$queue]}))
		[ "$seen" -ge "$least" ] ||
			fail "${end#*:} saw $seen frames on queue $queue, fewer than $least"
		echo "ok   ${end#*:} queue $queue: $seen frames (at least $least)"
	done
done
mapfile -t engine_after < <(rx_by_engine "$NETNS_A" "$VETH_A")
# The counters are the last engine's, the server's: it opened the device after the others.
[ "${#engine_after[@]}" -eq 2 ] ||
	fail "$VETH_A's stats do not count frames for two engines: '${engine_after[*]}'"
for engine in 0 1; do
	got=${engine_after[engine]}
	[ "$got" -ge $((data / 4)) ] ||
		fail "$VETH_A's engine $engine received $got frames, fewer than $((data / 4))"
	echo "ok   $VETH_A engine $engine received $got frames (at least $((data / 4)))"
done
e2e_check_stats
echo "test_multiqueue_e2e: PASS"
