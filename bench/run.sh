#!/usr/bin/env bash
# Benchmarks xroce against kernel sockets on one veth pair, in one run:
#   - baselines: iperf3 TCP without XDP and with xroce attached to both ends,
#     and a UDP socket ping-pong of 8 B and 4 KiB messages (build/bench/udp_pingpong);
#   - xroce-perf write_bw and read_bw at 4 KiB, 64 KiB and 1 MiB, path MTU
#     1024 on interface MTU 1500;
#   - write_bw of 64 KiB over 4, 16, 128 and 1,024 QPs (the 1-QP figure is
#     the one above), with the engines' retransmissions and local ACK timeouts;
#   - write_bw of 64 KiB over 4 QPs on a second veth pair whose ends have two
#     queues each way (two QPs on each), beside the same on one queue;
#   - write_lat, send_lat and read_lat of 8 B and 4 KiB: average, p50, p99,
#     p99.9 and maximum (half round trips; read_lat's are whole ones, beside
#     the UDP round trip), each also beside the floor of the path: raw
#     frames ping-ponged through the same XDP program and AF_XDP sockets
#     (build/bench/xsk_floor), without the transport;
#   - the floor under the bandwidths: 1 KiB frames blasted one way through
#     the same path as fast as it takes them, no transport, no flow control
#     (build/bench/xsk_floor blast and sink), beside WRITE 64 KiB at MTU 1024;
#   - what the ICRC costs per frame beside the payload copy (build/bench/copy_crc);
#   - the RDMA connection manager, through unmodified librdmacm programs on
#     xroce's librdmacm.so.1 and libibverbs.so.1 (build/xroce-run): cmtime
#     (rdmacm-utils) setting up and tearing down cm_conns (100) connections,
#     the time per connection of resolve addr, resolve route, connect and
#     disconnect, and connections per second from create id to established,
#     beside the kernel's TCP connections set up and closed one at a time
#     (build/bench/tcp_connect, no XDP); qperf -cm1 rc_bw (64 KiB SENDs)
#     beside iperf3 and WRITE 64 KiB, and rc_lat (1-byte SENDs, half round
#     trips) beside the UDP ping-pong and SEND 8 B;
#   - goodput under loss through the test middlebox (bench/loss.sh, last);
#   - the same bandwidths at path MTU 4096 on interface MTU 9000, when the
#     interfaces take MTU 9000 with xroce attached and xroce's active_mtu is
#     then 4096 (else those rows say n/a and why), beside iperf3 at MTU 9000.
# Every iperf3 and xroce-perf bandwidth comes with the CPU time (user + system,
# of client and server together, from /usr/bin/time) per GB (10^9 bytes)
# moved, and every xroce-perf figure with the system calls both engines made
# per message (per iteration for latencies), from their own counters
# (engine_syscalls); cmtime's and qperf's figures come alone.
# Ends with one table: figure, xroce, baseline, ratio (xroce / baseline).
# Absolute figures move with whatever else runs on the machine; no figure is
# asserted. Exits non-zero only if a test failed outright.
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
# ns_pids: the processes running in the two namespaces (once they exist).
ns_pids() {
	local ns
	for ns in "${NETNS_A:-}" "${NETNS_B:-}"; do
		[ -z "$ns" ] || ip netns pids "$ns" 2>/dev/null || true
	done
}
cleanup() {
	local pid left i
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	# Whatever still runs in our namespaces (a server's child that outlived it,
	# as qperf's forked test processes could): TERM, then KILL after 2 s.
	left=$(ns_pids)
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086 # one PID a word
		kill $left 2>/dev/null || true
		for ((i = 0; i < 20; i++)); do
			left=$(ns_pids)
			[ -n "$left" ] || break
			sleep 0.1
		done
		# shellcheck disable=SC2086
		[ -z "$left" ] || kill -KILL $left 2>/dev/null || true
	fi
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_pair bch
echo "bench: $NETNS_A ($VETH_A, $ADDR_A) <-> $NETNS_B ($VETH_B, $ADDR_B), ${duration} s per test"
# Setting up 1,024 QPs and draining what they have in flight take time beyond the test's.
server_timeout=$((duration * 3 + 70))
client_timeout=$((duration * 3 + 60))

# start_server NAME CMD...: runs CMD in namespace A in the background under
# timeout, output in $logdir/NAME.server, its CPU time (user and system
# seconds, its children's included) in $logdir/NAME.server.cpu. A simple
# command (nsenter, as netns_exec runs it, which execs timeout), so the PID
# kept is timeout's; stopping timeout stops its whole process group (and
# kills it 5 s later if it has not exited).
start_server() {
	local name=$1
	shift
	nsenter --net="/var/run/netns/$NETNS_A" timeout -k 5 "$server_timeout" \
		/usr/bin/time -q -f '%U %S' -o "$logdir/$name.server.cpu" "$@" \
		>"$logdir/$name.server" 2>&1 &
	server_pids+=($!)
}

# run_client NAME CMD...: runs CMD in namespace B, output in $logdir/NAME.client, CPU
# time as the server's; shows both outputs on failure.
run_client() {
	local name=$1
	shift
	netns_exec "$NETNS_B" timeout -k 5 "$client_timeout" /usr/bin/time -q -f '%U %S' \
		-o "$logdir/$name.client.cpu" "$@" >"$logdir/$name.client" 2>&1 && return 0
	echo "bench: $name failed:"
	tail -n 5 "$logdir/$name.client" "$logdir/$name.server" 2>/dev/null | sed 's/^/    | /'
	return 1
}

# wait_servers: reaps the background servers (each exits after its one client); 1 if one failed.
wait_servers() {
	local pid status=0
	for pid in "${server_pids[@]}"; do
		wait "$pid" || status=1
	done
	server_pids=()
	return $status
}

# stop_servers: stops the background servers that serve until stopped (cmtime's,
# qperf's) and reaps them; 1 if one had exited already (it died before its
# client was done).
stop_servers() {
	local pid status=0
	for pid in "${server_pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || status=1
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	server_pids=()
	return $status
}

# wait_for SECONDS PID CMD...: runs CMD every 0.1 s until it succeeds, while
# PID (a server's) lives, for SECONDS at most; 1 if PID exited or time ran out.
wait_for() {
	local tenths=$(($1 * 10)) pid=$2 i
	shift 2
	for ((i = 0; i < tenths; i++)); do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# engine_stat NS DEV NAME: one engine counter (engine_NAME) of DEV's xroce stats in NS.
engine_stat() {
	netns_stat "$1" "$2" "engine_$3"
}

# cm_listening: A's engine has begun an RDMA CM listen.
# shellcheck disable=SC2317 # run by wait_for
cm_listening() {
	local listens
	listens=$(engine_stat "$NETNS_A" "$VETH_A" cm_listens) || return 1
	[ "${listens:-0}" -ge 1 ]
}

# cpu_per_gb NAME BYTES: CPU seconds of NAME's client and server per 10^9 bytes moved.
cpu_per_gb() {
	awk -v bytes="$2" '{ cpu += $1 + $2 } END { printf "%.2f", cpu / (bytes / 1e9) }' \
		"$logdir/$1.client.cpu" "$logdir/$1.server.cpu"
}

# Figures of the table: text for the cells, numbers for the ratios.
declare -A cell num

# iperf3_tcp KEY: TCP throughput from B's iperf3 client to A's server.
iperf3_tcp() {
	local key=$1 gbits bytes
	cell[$key]=failed
	start_server "$key" iperf3 -s -1 -p 5201
	if netns_wait_tcp_listen "$NETNS_A" 5201 &&
		run_client "$key" iperf3 -c "$ADDR_A" -p 5201 -t "$duration" -J &&
		wait_servers; then
		read -r gbits bytes < <(python3 -c 'import json, sys
s = json.load(sys.stdin)["end"]["sum_received"]
print("%.2f %d" % (s["bits_per_second"] / 1e9, s["bytes"]))' <"$logdir/$key.client") &&
			num[$key]=$gbits &&
			cell[$key]="$gbits Gbit/s, $(cpu_per_gb "$key" "$bytes") CPU s/GB" &&
			return 0
	fi
	wait_servers || true
	return 1
}

# engine_counters KEY: retransmits, timeouts and syscalls of both ends' engines
# (the counters of the last process that had each device open), summed, as "R T S".
engine_counters() {
	local end
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		netns_exec "${end%%:*}" "$BUILD/xroce" stats "${end#*:}" --json \
			>"$logdir/$1.stats.${end#*:}" || return 1
	done
	python3 -c 'import json, sys
engines = [json.load(open(f))["engine"] for f in sys.argv[1:]]
print(*(sum(e[c] for e in engines) for c in ("retransmits", "timeouts", "syscalls")))' \
		"$logdir/$1.stats.$VETH_A" "$logdir/$1.stats.$VETH_B"
}

# perf KEY TEST ARGS...: xroce-perf server in A, client in B; sets perf_line
# to the client's result row and perf_mtu to the path MTU it ran at.
perf() {
	local key=$1 test=$2
	shift 2
	perf_line=
	perf_mtu=
	start_server "$key" "$BUILD/xroce-perf" "$test" -d "$VETH_A" -x 1 -F "$@"
	if netns_wait_tcp_listen "$NETNS_A" 18515 &&
		run_client "$key" "$BUILD/xroce-perf" "$test" -d "$VETH_B" -x 1 -F "$@" "$ADDR_A" &&
		wait_servers; then
		perf_line=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$logdir/$key.client" | tail -n 1)
		perf_mtu=$(sed -n 's/^ Mtu *: \([0-9]*\)\[B\]/\1/p' "$logdir/$key.client")
		[ -n "$perf_line" ] && [ -n "$perf_mtu" ] && return 0
		echo "bench: $key printed no result"
		return 1
	fi
	wait_servers || true
	return 1
}

# per_op COUNT OPS: COUNT / OPS with two decimals.
per_op() {
	awk -v c="$1" -v n="$2" 'BEGIN { printf "%.2f", (n > 0 ? c / n : 0) }'
}

# perf_bw KEY TEST ARGS...: a bandwidth test; its cell: Gbit/s (xroce-perf's
# MB are MiB), CPU per GB, retransmissions, timeouts and syscalls per message.
perf_bw() {
	local key=$1 gbits bytes msgs rtx tmo sys
	cell[$key]=failed
	perf "$@" || return 1
	read -r gbits bytes msgs <<<"$(awk '{ printf "%.2f %d %d", $4 * 1048576 * 8 / 1e9, $1 * $2, $2 }' \
		<<<"$perf_line")"
	read -r rtx tmo sys <<<"$(engine_counters "$key")" && [ -n "$sys" ] || {
		echo "bench: $key: xroce stats failed"
		return 1
	}
	num[$key]=$gbits
	cell[$key]="$gbits Gbit/s, $(cpu_per_gb "$key" "$bytes") CPU s/GB, rtx $rtx, tmo $tmo, $(per_op "$sys" "$msgs") sys/msg"
}

lat_stats=(avg p50 p99 p999 max)
declare -A stat_name=([avg]=average [p50]=p50 [p99]=p99 [p999]=p99.9 [max]=max)

# perf_lat KEY TEST ARGS...: a latency test; num[KEY_STAT] and cell[KEY_STAT]
# for each of lat_stats, cell[KEY_sys] the syscalls per iteration.
perf_lat() {
	local key=$1 stat values rtx tmo sys
	for stat in "${lat_stats[@]}"; do cell[${key}_$stat]=failed; done
	cell[${key}_sys]=failed
	perf "$@" || return 1
	# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	read -r -a values <<<"$(awk '{ print $6, $5, $8, $9, $4 }' <<<"$perf_line")"
	for stat in "${lat_stats[@]}"; do
		num[${key}_$stat]=${values[0]}
		cell[${key}_$stat]="${values[0]} us"
		values=("${values[@]:1}")
	done
	read -r rtx tmo sys <<<"$(engine_counters "$key")" && [ -n "$sys" ] || {
		echo "bench: $key: xroce stats failed"
		return 1
	}
	cell[${key}_sys]="$(per_op "$sys" "$(awk '{ print $2 }' <<<"$perf_line")") syscalls/iteration, rtx $rtx, tmo $tmo"
}

failed=0

echo "bench: ICRC and payload copy per frame (copy_crc)"
"$BUILD/bench/copy_crc" >"$logdir/copy_crc"
echo "bench: iperf3 TCP, no XDP"
iperf3_tcp tcp_plain || failed=1

lat_sizes=(8 4096)
declare -A size_name=([8]="8 B" [4096]="4 KiB" [65536]="64 KiB" [1048576]="1 MiB")
# pingpong_cells PREFIX SIZE LABEL [failed]: the cells of a ping-pong baseline,
# PREFIX_SIZE_STAT (half round trips) and PREFIX_rtt_SIZE_STAT (whole ones),
# from the stat_us= fields of $logdir/PREFIX_SIZE.client; "failed" marks them so.
pingpong_cells() {
	local prefix=$1 size=$2 label=$3 stat half
	for stat in "${lat_stats[@]}"; do
		if [ "${4:-}" = failed ]; then
			cell[${prefix}_${size}_$stat]=failed cell[${prefix}_rtt_${size}_$stat]=failed
			continue
		fi
		half=$(grep -o " ${stat}_us=[^ ]*" "$logdir/${prefix}_$size.client" | cut -d= -f2)
		num[${prefix}_${size}_$stat]=$half
		cell[${prefix}_${size}_$stat]="$label $half us (half RTT)"
		num[${prefix}_rtt_${size}_$stat]=$(awk -v h="$half" 'BEGIN { printf "%.2f", 2 * h }')
		cell[${prefix}_rtt_${size}_$stat]="$label ${num[${prefix}_rtt_${size}_$stat]} us (RTT)"
	done
}

for size in "${lat_sizes[@]}"; do
	echo "bench: UDP ping-pong, ${size_name[$size]}"
	pingpong_cells udp "$size" - failed
	start_server "udp_$size" "$BUILD/bench/udp_pingpong" server 18602
	if run_client "udp_$size" "$BUILD/bench/udp_pingpong" client "$ADDR_A" 18602 \
		$((duration * 10000)) "$size" && wait_servers; then
		pingpong_cells udp "$size" "UDP ping-pong"
	else
		wait_servers || true
		failed=1
	fi
done

# The baseline of the connection manager's figures: TCP connections set up and
# torn down one after the other (bench/tcp_connect), as many as cmtime's.
cm_conns=100
# tcp_field NAME: NAME's value in tcp_connect's result line.
tcp_field() {
	sed -n "s/^tcp_connect .* $1=\([^ ]*\).*/\1/p" "$logdir/tcp_connect.client"
}
echo "bench: TCP connect and close, $cm_conns connections one at a time (tcp_connect)"
for key in tcp_conn_connect tcp_conn_close tcp_conn_rate tcp_conn_cycle; do cell[$key]=failed; done
start_server tcp_connect "$BUILD/bench/tcp_connect" server 18603 "$cm_conns"
if netns_wait_tcp_listen "$NETNS_A" 18603 &&
	run_client tcp_connect "$BUILD/bench/tcp_connect" client "$ADDR_A" 18603 "$cm_conns" &&
	wait_servers && [ -n "$(tcp_field setup_per_s)" ]; then
	for phase in connect close cycle; do
		avg=$(tcp_field "${phase}_avg_us") p50=$(tcp_field "${phase}_p50_us")
		p99=$(tcp_field "${phase}_p99_us")
		num[tcp_conn_$phase]=$avg
		cell[tcp_conn_$phase]="TCP $phase, no XDP: $avg us (p50 $p50, p99 $p99)"
	done
	num[tcp_conn_rate]=$(tcp_field setup_per_s)
	cell[tcp_conn_rate]="TCP, no XDP: ${num[tcp_conn_rate]} connects/s, one at a time"
	cell[tcp_conn_cycle]="$avg us (p50 $p50, p99 $p99), $(tcp_field cycles_per_s) cycles/s"
else
	wait_servers || true
	failed=1
fi

echo "bench: attaching xroce to both ends"
netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" || exit 1
echo "bench: iperf3 TCP, xroce attached"
iperf3_tcp tcp_xdp || failed=1

sizes=(4096 65536 1048576)

echo "bench: write_bw and read_bw, path MTU 1024"
for test in write_bw read_bw; do
	for size in "${sizes[@]}"; do
		perf_bw "${test}_${size}_1024" "$test" -s "$size" -D "$duration" -m 1024 || failed=1
	done
done

qp_counts=(4 16 128 1024)
echo "bench: write_bw 64 KiB over ${qp_counts[*]} QPs"
for qps in "${qp_counts[@]}"; do
	perf_bw "qps_$qps" write_bw -s 65536 -D "$duration" -m 1024 -q "$qps" || failed=1
done

# The floor: raw frames through the same XDP program and AF_XDP sockets, no transport.
mac_a=$(ip -n "$NETNS_A" -o link show dev "$VETH_A" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
for size in "${lat_sizes[@]}"; do
	echo "bench: AF_XDP ping-pong (the floor), ${size_name[$size]}"
	iters=$((duration * 10000))
	pingpong_cells xsk "$size" - failed
	# Frames of 1,024 bytes at most; 1,000 warm-up round trips come first.
	start_server "xsk_$size" "$BUILD/bench/xsk_floor" echo "$VETH_A" \
		$(((iters + 1000) * ((size + 1023) / 1024)))
	sleep 0.5 # the echo side's socket must be bound before the first frame
	if run_client "xsk_$size" "$BUILD/bench/xsk_floor" ping "$VETH_B" "$mac_a" "$iters" \
		"$size" && wait_servers; then
		pingpong_cells xsk "$size" "AF_XDP floor"
	else
		wait_servers || true
		failed=1
	fi
done

# Gbit/s as the sink counted it, and CPU seconds of both sides per GB it
# counted (each side's CPU rate over its own interval).
echo "bench: AF_XDP one-way blast of 1 KiB frames (the floor)"
cell[xsk_blast]=failed
start_server xsk_blast "$BUILD/bench/xsk_floor" sink "$VETH_A"
sleep 0.5 # the sink's socket must be bound before the first frame
if run_client xsk_blast "$BUILD/bench/xsk_floor" blast "$VETH_B" "$mac_a" "$duration" &&
	wait_servers; then
	read -r gbits cpu_gb <<<"$(awk '
		/^xsk_floor blast/ { for (i = 3; i <= NF; i++) { split($i, kv, "="); b[kv[1]] = kv[2] } }
		/^xsk_floor sink/ { for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] } }
		END { printf "%s %.2f", s["gbit_s"],
			(b["cpu_s"] / b["seconds"] + s["cpu_s"] / s["seconds"]) / (s["bytes"] / s["seconds"] / 1e9) }' \
		"$logdir/xsk_blast.client" "$logdir/xsk_blast.server")"
	num[xsk_blast]=$gbits
	cell[xsk_blast]="AF_XDP floor: $gbits Gbit/s, $cpu_gb CPU s/GB"
else
	wait_servers || true
	failed=1
fi

lat_tests=(write_lat send_lat read_lat)
for test in "${lat_tests[@]}"; do
	for size in "${lat_sizes[@]}"; do
		echo "bench: $test ${size_name[$size]}"
		perf_lat "${test}_$size" "$test" -s "$size" -n $((duration * 20000)) -m 1024 || failed=1
	done
done

# The RDMA connection manager: unmodified librdmacm programs (Debian's
# rdmacm-utils and qperf) on xroce's librdmacm.so.1 and libibverbs.so.1,
# under xroce-run, at interface MTU 1500.
cm_port=18604 # cmtime's RDMA CM port (a service ID, not a TCP port)
qperf_port=19765 # qperf's server listens there (TCP) for its control connections
# cmtime's steps shown, and those from nothing to established (its setup rate).
cm_steps=("resolve addr" "resolve route" "connect" "disconnect")
cm_setup_steps=("create id" "resolve addr" "resolve route" "create qp" "connect")

# cm_why LABEL WHY: says why LABEL has no figures, with the end of its logs
# (which run_client has shown already when the client failed).
cm_why() {
	echo "bench: $1: $2"
	[ "$2" = "the client failed" ] ||
		tail -n 5 "$logdir/$1.client" "$logdir/$1.server" 2>/dev/null | sed 's/^/    | /' || true
}

# cmtime_step STEP: cmtime's client's line for STEP, as "total_ms max_ms min_us
# us_per_conn" (cmtime prints "%-13s: " then four %11.2f: the step's wall
# time over all connections, the slowest and the fastest connection's own
# time, and the wall time over the number of connections); empty if none.
cmtime_step() {
	awk -F: -v step="$1" '{ name = $1; sub(/ +$/, "", name) }
		name == step && NF == 2 && split($2, f, " ") == 4 { line = f[1] " " f[2] " " f[3] " " f[4] }
		END { print line }' "$logdir/cmtime.client"
}

# cmtime_run: cmtime's server in A and client in B, cm_conns connections set up
# and torn down through the CM; cells cm_STEP (STEP's spaces as _) and cm_setup.
cmtime_run() {
	local step why="" listens total max min per setup_ms=0
	for step in "${cm_steps[@]}"; do cell[cm_${step// /_}]=failed; done
	cell[cm_setup]=failed
	if ! command -v cmtime >/dev/null; then
		why="cmtime is not installed (rdmacm-utils)"
	# The counter is the last device owner's (xroce-perf's, which never listens
	# through the CM) until cmtime's server opens the device and starts it again.
	elif ! listens=$(engine_stat "$NETNS_A" "$VETH_A" cm_listens) || [ "$listens" != 0 ]; then
		why="engine_cm_listens is '$listens' before cmtime's server started"
	else
		start_server cmtime "$BUILD/xroce-run" cmtime -p "$cm_port" -c "$cm_conns"
		if ! wait_for 10 "${server_pids[-1]}" cm_listening; then
			why="the server did not listen within 10 s"
		elif ! run_client cmtime "$BUILD/xroce-run" cmtime -s "$ADDR_A" -p "$cm_port" \
			-c "$cm_conns"; then
			why="the client failed"
		fi
		# It serves until stopped.
		stop_servers || why=${why:-"the server exited before its client was done"}
	fi
	# cmtime's client counts a connection that failed as done, and exits 0.
	if [ -z "$why" ] && grep -qE '^(event: |RDMA_CM_EVENT_|failure|failing)' "$logdir/cmtime.client"; then
		why="the client reported errors: $(grep -m 1 -E '^(event: |RDMA_CM_EVENT_|failure|failing)' \
			"$logdir/cmtime.client")"
	fi
	if [ -z "$why" ]; then
		for step in "${cm_setup_steps[@]}" "${cm_steps[@]}"; do
			read -r total max min per <<<"$(cmtime_step "$step")"
			if ! [[ $per =~ ^[0-9.]+$ ]]; then
				why="no '$step' line in the client's table"
				break
			fi
		done
	fi
	if [ -n "$why" ]; then
		cm_why cmtime "$why"
		for step in "${cm_steps[@]}"; do cell[cm_${step// /_}]="n/a ($why)"; done
		cell[cm_setup]="n/a ($why)"
		return 1
	fi
	for step in "${cm_steps[@]}"; do
		read -r total max min per <<<"$(cmtime_step "$step")"
		max=$(awk -v m="$max" 'BEGIN { printf "%.2f", m * 1000 }')
		num[cm_${step// /_}]=$per
		cell[cm_${step// /_}]="$per us/conn (each $min to $max us)"
	done
	for step in "${cm_setup_steps[@]}"; do
		read -r total max min per <<<"$(cmtime_step "$step")"
		setup_ms=$(awk -v a="$setup_ms" -v b="$total" 'BEGIN { print a + b }')
	done
	num[cm_setup]=$(awk -v n="$cm_conns" -v ms="$setup_ms" 'BEGIN { printf "%.0f", (ms > 0 ? n * 1000 / ms : 0) }')
	cell[cm_setup]="${num[cm_setup]} conn/s (create id to established)"
}

# qperf_run: qperf's server in A, `qperf -cm1 ADDR_A rc_bw rc_lat` in B, over RC
# QPs the CM connected; cells qperf_bw (Gbit/s; qperf's units are powers of
# 1000 bytes per second) and qperf_lat (us; qperf's latency is half a round trip).
qperf_run() {
	local why="" bw lat
	cell[qperf_bw]=failed cell[qperf_lat]=failed
	if ! command -v qperf >/dev/null; then
		why="qperf is not installed"
	else
		start_server qperf "$BUILD/xroce-run" qperf
		# Debian's qperf listens a little after it starts.
		if ! netns_wait_tcp_listen "$NETNS_A" "$qperf_port"; then
			why="the server did not listen on TCP $qperf_port within 5 s"
		elif ! run_client qperf "$BUILD/xroce-run" qperf -cm1 -t "$duration" "$ADDR_A" rc_bw \
			rc_lat; then
			why="the client failed"
		fi
		# It serves until stopped.
		stop_servers || why=${why:-"the server exited before its client was done"}
	fi
	if [ -z "$why" ]; then
		# "    bw  =  1.23 GB/sec", "    latency  =  12.3 us"
		read -r bw lat <<<"$(awk '
			function value(v) { gsub(",", "", v); return v + 0 }
			$1 == "bw" && $2 == "=" {
				f = $4 == "bytes/sec" ? 1 : $4 == "KB/sec" ? 1e3 : $4 == "MB/sec" ? 1e6 : \
					$4 == "GB/sec" ? 1e9 : $4 == "TB/sec" ? 1e12 : 0
				if (f) bw = sprintf("%.2f", value($3) * f * 8 / 1e9)
			}
			$1 == "latency" && $2 == "=" {
				f = $4 == "ns" ? 1e-3 : $4 == "us" ? 1 : $4 == "ms" ? 1e3 : $4 == "sec" ? 1e6 : 0
				if (f) lat = sprintf("%.2f", value($3) * f)
			}
			END { print (bw == "" ? "-" : bw), (lat == "" ? "-" : lat) }' "$logdir/qperf.client")"
		[ "$bw" != - ] || why="no bw line (rc_bw) in the client's output"
		[ "$lat" != - ] || why=${why:+"$why; "}"no latency line (rc_lat) in the client's output"
	fi
	if [ "${bw:--}" != - ]; then
		num[qperf_bw]=$bw
		cell[qperf_bw]="$bw Gbit/s"
	else
		cell[qperf_bw]="n/a ($why)"
	fi
	if [ "${lat:--}" != - ]; then
		num[qperf_lat]=$lat
		cell[qperf_lat]="$lat us (half RTT)"
	else
		cell[qperf_lat]="n/a ($why)"
	fi
	[ -z "$why" ] && return 0
	cm_why qperf "$why"
	return 1
}

echo "bench: cmtime, $cm_conns connections through the CM"
cmtime_run || failed=1
echo "bench: qperf -cm1 rc_bw and rc_lat"
qperf_run || failed=1

# MTU 9000 with xroce attached needs an XDP program that takes multi-buffer frames.
echo "bench: interface MTU 9000"
mtu_9000=yes
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link set dev "${end#*:}" mtu 9000 2>/dev/null || mtu_9000=no
done
# The path MTU xroce-perf agrees on without -m is the smaller active_mtu of the two ends.
if perf mtu_probe write_bw -s 4096 -n 100; then
	active_mtu=$perf_mtu
else
	active_mtu=unknown
	failed=1
fi
if [ "$mtu_9000" = yes ]; then
	echo "bench: iperf3 TCP, xroce attached, MTU 9000"
	iperf3_tcp tcp_xdp_9000 || failed=1
else
	cell[tcp_xdp_9000]="n/a (MTU 9000 refused)"
fi
for test in write_bw read_bw; do
	for size in "${sizes[@]}"; do
		key=${test}_${size}_4096
		if [ "$mtu_9000" = yes ] && [ "$active_mtu" = 4096 ]; then
			perf_bw "$key" "$test" -s "$size" -D "$duration" -m 4096 || failed=1
		elif [ "$mtu_9000" = yes ]; then
			cell[$key]="n/a (active_mtu $active_mtu)"
		else
			cell[$key]="n/a (active_mtu $active_mtu: MTU 9000 refused)"
		fi
	done
done

# Two queues: a second pair, MTU 1500, whose ends have two rx and two tx
# queues; served by one engine thread, then by one per queue.
echo "bench: write_bw 64 KiB over 4 QPs, two queues, one engine and two"
one_queue=("$NETNS_A" "$NETNS_B" "$VETH_A" "$VETH_B" "$ADDR_A" "$ADDR_B")
if NETNS_QUEUES=2 netns_pair bq && netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; then
	export XROCE_ENGINES=1
	perf_bw qps_4_2q_1e write_bw -s 65536 -D "$duration" -m 1024 -q 4 || failed=1
	XROCE_ENGINES=2
	perf_bw qps_4_2q write_bw -s 65536 -D "$duration" -m 1024 -q 4 || failed=1
	unset XROCE_ENGINES
else
	cell[qps_4_2q_1e]="n/a (no two-queue veth pair)"
	cell[qps_4_2q]="n/a (no two-queue veth pair)"
	failed=1
fi
read -r NETNS_A NETNS_B VETH_A VETH_B ADDR_A ADDR_B <<<"${one_queue[*]}"

# ratio KEY BASE_KEY: num[KEY] / num[BASE_KEY], or - when either is missing.
ratio() {
	if [ -n "${num[$1]:-}" ] && [ -n "${num[$2]:-}" ]; then
		awk -v a="${num[$1]}" -v b="${num[$2]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
	else
		echo -
	fi
}

# line FIGURE XROCE BASELINE RATIO: one line of the table.
line() {
	printf '%-34s %-56s %-42s %s\n' "$@"
}

# row FIGURE KEY [BASELINE_TEXT BASE_KEY]...: the figure, with one line per baseline.
row() {
	local figure=$1 xroce=${cell[$2]} key=$2
	shift 2
	if [ $# -eq 0 ]; then
		line "$figure" "$xroce" - -
		return
	fi
	while [ $# -gt 0 ]; do
		line "$figure" "$xroce" "$1" "$(ratio "$key" "$2")"
		figure=
		xroce=
		shift 2
	done
}

declare -A test_name=([write_bw]=WRITE [read_bw]=READ [write_lat]=WRITE [send_lat]=SEND
	[read_lat]=READ)
echo
echo "xroce on $VETH_A/$VETH_B, ${duration} s per test; CPU s/GB: user + system seconds of both"
echo "processes per 10^9 bytes; rtx, tmo: retransmissions and local ACK timeouts of both engines;"
echo "sys/msg, syscalls/iteration: system calls of both engines (engine_syscalls) per message or iteration"
echo "engine spin: XROCE_BUSY_POLL_US=${XROCE_BUSY_POLL_US:-50 (default)} after the last work," \
	"XROCE_SPIN_IN_FLIGHT_US=${XROCE_SPIN_IN_FLIGHT_US:-unset (default: no sleep while an operation is outstanding)}," \
	"XROCE_ACK_HOLD_US=${XROCE_ACK_HOLD_US:-5 (default)}," \
	"XROCE_STANDBY_MAX_US=${XROCE_STANDBY_MAX_US:-5000 (default)}"
echo "AF_XDP floor: bench/xsk_floor, raw frames through the same XDP program and AF_XDP sockets"
echo "with no transport, both sides busy-polling: what the kernel path costs on this machine"
echo "(bandwidth: 1 KiB frames one way, no flow control, what the sink counted; its CPU includes"
echo "both sides' busy-polling)"
echo "CM, qperf: unmodified librdmacm programs (rdmacm-utils' cmtime, qperf -cm1) under xroce-run,"
echo "interface MTU 1500. cmtime issues each step for its $cm_conns connections at once: us/conn is"
echo "the step's wall time over $cm_conns (each: the fastest and the slowest connection); setup rate:"
echo "$cm_conns over create id, resolve addr and route, create qp and connect. TCP (bench/tcp_connect):"
echo "$cm_conns connections one at a time; connect: socket() + connect(); close: shutdown, the"
echo "server's accept, EOF and close, the client's EOF. qperf rc_lat: half round trips of 1-byte"
echo "SENDs (beside the 8 B ones); rc_bw: 64 KiB SENDs over one QP, in Gbit/s (qperf's MB are 10^6 B)"
line figure xroce "baseline (same run)" ratio
for mtu in 1024 4096; do
	for test in write_bw read_bw; do
		for size in "${sizes[@]}"; do
			key=${test}_${size}_$mtu
			figure="${test_name[$test]} ${size_name[$size]}, 1 QP, MTU $mtu"
			if [ "$key" = write_bw_65536_1024 ]; then
				row "$figure" "$key" "iperf3 TCP, no XDP: ${cell[tcp_plain]%%,*}" tcp_plain \
					"iperf3 TCP, xroce attached: ${cell[tcp_xdp]%%,*}" tcp_xdp \
					"${cell[xsk_blast]}" xsk_blast
				row "qperf rc_bw, SEND 64 KiB, CM" qperf_bw \
					"iperf3 TCP, xroce attached: ${cell[tcp_xdp]%%,*}" tcp_xdp \
					"xroce-perf WRITE 64 KiB: ${cell[$key]%%,*}" "$key"
			elif [ "$key" = write_bw_65536_4096 ]; then
				row "$figure" "$key" "iperf3 TCP, no XDP: ${cell[tcp_plain]%%,*}" tcp_plain \
					"iperf3 TCP, xroce attached: ${cell[tcp_xdp]%%,*}" tcp_xdp \
					"same, MTU 9000: ${cell[tcp_xdp_9000]%%,*}" tcp_xdp_9000
			else
				row "$figure" "$key"
			fi
		done
	done
done
for qps in "${qp_counts[@]}"; do
	row "WRITE 64 KiB, $qps QPs, MTU 1024" "qps_$qps" \
		"1 QP: ${cell[write_bw_65536_1024]%%,*}" write_bw_65536_1024
done
row "  same, 2 queues, 1 engine" qps_4_2q_1e "4 QPs on 1 queue: ${cell[qps_4]%%,*}" qps_4
row "  same, 2 queues, 2 engines" qps_4_2q "1 engine: ${cell[qps_4_2q_1e]%%,*}" qps_4_2q_1e
for test in "${lat_tests[@]}"; do
	for size in "${lat_sizes[@]}"; do
		key=${test}_$size
		base=udp_$size floor=xsk_$size
		[ "$test" = read_lat ] && base=udp_rtt_$size floor=xsk_rtt_$size
		for stat in "${lat_stats[@]}"; do
			row "${test_name[$test]} ${size_name[$size]} latency, ${stat_name[$stat]}" \
				"${key}_$stat" "${cell[${base}_$stat]}" "${base}_$stat" \
				"${cell[${floor}_$stat]}" "${floor}_$stat"
		done
		line "  engines" "${cell[${key}_sys]}" - -
		if [ "$key" = send_lat_8 ]; then
			row "qperf rc_lat, SEND 1 B, CM" qperf_lat "${cell[udp_8_avg]}, 8 B" udp_8_avg \
				"xroce-perf SEND 8 B: ${cell[send_lat_8_avg]}" send_lat_8_avg
		fi
	done
done
for step in "${cm_steps[@]}"; do
	key=cm_${step// /_}
	case $step in
	connect) row "CM $step, cmtime" "$key" "${cell[tcp_conn_connect]}" tcp_conn_connect ;;
	disconnect) row "CM $step, cmtime" "$key" "${cell[tcp_conn_close]}" tcp_conn_close ;;
	*) row "CM $step, cmtime" "$key" ;;
	esac
done
row "CM setup rate, cmtime" cm_setup "${cell[tcp_conn_rate]}" tcp_conn_rate
line "iperf3 TCP, no XDP" - "${cell[tcp_plain]}" -
line "iperf3 TCP, xroce attached" - "${cell[tcp_xdp]}" -
line "  same, MTU 9000" - "${cell[tcp_xdp_9000]}" -
line "TCP connect + close, no XDP" - "${cell[tcp_conn_cycle]}" -
echo
echo "ICRC per frame, ns (bench/copy_crc; median of 15 runs taken in turns; hot: one 64 KiB source"
echo "reused, cold: a walk through 256 MiB): tx, the copy carrying the ICRC against a copy then"
echo "an ICRC pass; rx, the check then the copy (what the engine does) against the copy alone"
sed 's/^copy_crc //' "$logdir/copy_crc"
echo
echo "Goodput under loss (bench/loss.sh, through the test middlebox):"
bench/loss.sh || failed=1
exit $failed
