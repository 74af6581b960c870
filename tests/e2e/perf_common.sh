# shellcheck shell=bash
# What the xroce-perf tests share (test_perf, test_perf_ud_uc, test_perf_srq).
#
# perf_result_ok LOG SIZE KIND TOTAL  LOG has a result line for SIZE and TOTAL
#                                     iterations (of all QPs): for KIND bw,
#                                     "SIZE TOTAL PEAK AVG RATE" with a
#                                     non-zero average and rate; for lat,
#                                     "SIZE TOTAL MIN MAX TYPICAL AVG ..." with
#                                     a non-zero typical and average latency.
# perf_pair TEST OPTIONS...           $perf TEST OPTIONS as a server in A and a
#                                     client of it in B, each under a 60 s
#                                     limit, into $logdir/server.log and
#                                     client.log; sets server_status and
#                                     client_status. With perf_status_line
#                                     set to a file, `$xroce status` in A is
#                                     polled while the server waits, and its
#                                     line for $VETH_A, once it shows the
#                                     engine's path MTU, goes into that file
#                                     (empty if it never did within 10 s).

perf_result_ok() {
	awk -v size="$2" -v iters="$4" -v kind="$3" '
		$1 == size && $2 == iters && NF >= 5 {
			if (kind == "bw" && $4 > 0 && $5 > 0) ok = 1
			if (kind == "lat" && NF >= 9 && $5 > 0 && $6 > 0) ok = 1
		}
		END { exit !ok }' "$1"
}

perf_pair() {
	local test=$1
	shift
	server_status=0 client_status=0
	netns_exec "$NETNS_A" timeout 60 "$perf" "$test" -d "$VETH_A" "$@" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	if [ -n "${perf_status_line:-}" ]; then
		: >"$perf_status_line"
		for _ in $(seq 100); do
			netns_exec "$NETNS_A" "$xroce" status 2>/dev/null |
				grep "^$VETH_A: .*, path MTU " >"$perf_status_line" && break
			sleep 0.1
		done
	fi
	netns_exec "$NETNS_B" timeout 60 "$perf" "$test" -d "$VETH_B" "$@" \
		"$ADDR_A" >"$logdir/client.log" 2>&1 || client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
}
