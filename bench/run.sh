#!/usr/bin/env bash
# Benchmarks xroce against kernel sockets on the same veth pair, in one run:
#   - iperf3 TCP, without XDP and with xroce attached to both ends;
#   - a UDP socket ping-pong of 8-byte messages (build/bench/udp_pingpong);
#   - xroce RC SEND bandwidth (64 KiB messages, 16 in flight) and 8-byte SEND
#     round trips (build/bench/xroce_send_bench).
# Ends with a table: test, result, baseline. Exits non-zero if a test failed.
# BENCH_SECONDS (default 5, at most 10) is the length of each timed test.
# Run through `make bench`, which builds first; needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
duration=${BENCH_SECONDS:-5}
if ! [[ $duration =~ ^[0-9]+$ ]] || [ "$duration" -lt 1 ] || [ "$duration" -gt 10 ]; then
	echo "bench: BENCH_SECONDS must be 1..10" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (namespaces, XDP)" >&2
	exit 1
fi

source scripts/netns.sh
server_pids=()
logdir=$(mktemp -d /tmp/xroce-bench.XXXXXX)
cleanup() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_pair bch
echo "bench: $NETNS_A ($VETH_A, $ADDR_A) <-> $NETNS_B ($VETH_B, $ADDR_B), ${duration} s per test"
server_timeout=$((duration * 3 + 40))
client_timeout=$((duration * 3 + 30))

# start_server NAME CMD...: runs CMD in namespace A in the background, output in $logdir/NAME.server.
start_server() {
	local name=$1
	shift
	netns_exec "$NETNS_A" timeout "$server_timeout" "$@" >"$logdir/$name.server" 2>&1 &
	server_pids+=($!)
}

# run_client NAME CMD...: runs CMD in namespace B, output in $logdir/NAME.client; shows it on failure.
run_client() {
	local name=$1
	shift
	if netns_exec "$NETNS_B" timeout "$client_timeout" "$@" >"$logdir/$name.client" 2>&1; then
		return 0
	fi
	echo "bench: $name failed:"
	tail -n 5 "$logdir/$name.client" "$logdir/$name.server" 2>/dev/null | sed 's/^/    | /'
	return 1
}

# wait_servers: reaps the background servers (each exits after its one client).
wait_servers() {
	local pid
	for pid in "${server_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	server_pids=()
}

# wait_tcp_listen PORT: until something listens on PORT in namespace A (at most 5 s).
wait_tcp_listen() {
	for _ in $(seq 50); do
		netns_exec "$NETNS_A" ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# iperf3_tcp NAME: TCP throughput from B's iperf3 client to A's server; sets gbits.
iperf3_tcp() {
	local name=$1 status=0
	gbits=failed
	start_server "$name" iperf3 -s -1 -p 5201
	if wait_tcp_listen 5201 &&
		run_client "$name" iperf3 -c "$ADDR_A" -p 5201 -t "$duration" -J; then
		gbits=$(python3 -c 'import json, sys
print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' \
			<"$logdir/$name.client") || { gbits=failed; status=1; }
	else
		status=1
	fi
	wait_servers
	return $status
}

# field FILE KEY: the value of KEY=VALUE in FILE.
field() {
	grep -o "$2=[^ ]*" "$1" | head -n 1 | cut -d= -f2
}

failed=0

echo "bench: iperf3 TCP, no XDP"
iperf3_tcp tcp_plain || failed=1
tcp_plain=$gbits

echo "bench: UDP ping-pong, 8 B"
start_server udp "$BUILD/bench/udp_pingpong" server 18602
if run_client udp "$BUILD/bench/udp_pingpong" client "$ADDR_A" 18602 $((duration * 4000)); then
	udp_lat="$(field "$logdir/udp.client" avg_us) / $(field "$logdir/udp.client" p50_us) / $(field "$logdir/udp.client" p99_us) us"
else
	udp_lat=failed
	failed=1
fi
wait_servers

echo "bench: attaching xroce to both ends"
tcp_xdp="n/a (attach failed)"
if netns_exec "$NETNS_A" "$BUILD/xroce" attach "$VETH_A" &&
	netns_exec "$NETNS_B" "$BUILD/xroce" attach "$VETH_B"; then
	echo "bench: iperf3 TCP, xroce attached"
	iperf3_tcp tcp_xdp || failed=1
	tcp_xdp=$gbits
else
	failed=1
fi

echo "bench: xroce RC SEND bandwidth (64 KiB, depth 16) and 8 B round trips"
start_server xroce "$BUILD/bench/xroce_send_bench" server "$VETH_A"
if run_client xroce "$BUILD/bench/xroce_send_bench" client "$VETH_B" "$ADDR_A" "$duration" 100000; then
	log=$logdir/xroce.client
	send_bw="$(field "$log" Gbit/s) Gbit/s, $(field "$log" MB/s) MB/s, $(field "$log" msg/s) msg/s"
	send_lat="$(field "$log" avg_us) / $(field "$log" p50_us) / $(field "$log" p99_us) us"
else
	send_bw=failed
	send_lat=failed
	failed=1
fi
wait_servers

# perf TEST ARGS...: xroce-perf server in A, client in B; sets perf_line to the client's result row.
perf() {
	local test=$1 status=0
	shift
	perf_line=
	start_server "perf_$test" "$BUILD/xroce-perf" "$test" -d "$VETH_A" -x 1 -F "$@"
	if wait_tcp_listen 18515 &&
		run_client "perf_$test" "$BUILD/xroce-perf" "$test" -d "$VETH_B" -x 1 -F "$@" "$ADDR_A"; then
		perf_line=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$logdir/perf_$test.client" | tail -n 1)
		[ -n "$perf_line" ] || status=1
	else
		status=1
	fi
	wait_servers
	return $status
}

bw_iters=$((duration * 3000))
echo "bench: xroce-perf write_bw, read_bw (64 KiB) and write_lat (8 B)"
if perf write_bw -s 65536 -n "$bw_iters"; then
	write_bw="$(awk '{printf "%.0f MB/s = %.2f Gbit/s", $4, $4 * 8 / 1000}' <<<"$perf_line")"
else
	write_bw=failed
	failed=1
fi
if perf read_bw -s 65536 -n "$bw_iters"; then
	read_bw="$(awk '{printf "%.0f MB/s = %.2f Gbit/s", $4, $4 * 8 / 1000}' <<<"$perf_line")"
else
	read_bw=failed
	failed=1
fi
if perf write_lat -s 8 -n $((duration * 2000)); then
	write_lat="$(awk '{printf "%s / %s / %s us", $5, $6, $8}' <<<"$perf_line")"
else
	write_lat=failed
	failed=1
fi

echo
printf '%-36s %-44s %s\n' test result baseline
printf '%-36s %-44s %s\n' "RC SEND bw, 64 KiB, depth 16" "$send_bw" \
	"iperf3 TCP: $tcp_plain Gbit/s; $tcp_xdp Gbit/s with xroce attached"
printf '%-36s %-44s %s\n' "RC SEND 8 B RTT avg / p50 / p99" "$send_lat" \
	"UDP ping-pong RTT: $udp_lat"
printf '%-36s %-44s %s\n' "xroce-perf write_bw, 64 KiB" "$write_bw" \
	"iperf3 TCP: $tcp_plain Gbit/s"
printf '%-36s %-44s %s\n' "xroce-perf read_bw, 64 KiB" "$read_bw" \
	"iperf3 TCP: $tcp_plain Gbit/s"
printf '%-36s %-44s %s\n' "xroce-perf write_lat 8 B typ/avg/99%" "$write_lat" \
	"(one way, RTT/2, as perftest) UDP RTT above"
exit $failed
