# shellcheck shell=bash
# What the pingpong tests (test_pingpong, test_ud_pingpong, test_uc_pingpong,
# test_srq_pingpong) share; source it after e2e_common.sh and netns_pair.
# The caller sets pingpong (the tool), xroce (the loader), iters, and for check_output
# PINGPONG_LOCAL_GID_SEP, what the tool prints before its own GID: ", ", or
# ": " as ibv_ud_pingpong does (the peer's always follows ", ").
#
# Optional: PINGPONG_RUN, a launcher the tool runs under (xroce-run);
# PINGPONG_DEV_A/B, the device names (default the veths); PINGPONG_GID_A/B,
# the GID indexes (default 1); PINGPONG_PORT, the tool's TCP port, given
# with -p, and the client starts only once the server listens there (for
# tools whose client does not retry); PINGPONG_GID_RE, what a printed GID
# must match (default any GID).
#
# run_pair SERVER_OPTS CLIENT_OPTS
#     starts the server in A and the client in B with the options; sets
#     server_status, client_status and the logs $logdir/{server,client}.log.
# run_must_pass SIZE OPTS
#     run_pair with OPTS on both sides; fails unless both exit 0 and
#     check_output SIZE passes.
# check_output SIZE
#     both sides printed the ibv_*_pingpong address lines and the summary
#     lines with the totals of iters round trips of SIZE bytes.
# check_counters RUN FRAMES COUNTER...
#     on both ends, engine_tx_frames and engine_rx_frames are FRAMES (not
#     checked when FRAMES is -) and every COUNTER is 0, or fail naming RUN.

run_pair() {
	local server_opts=$1 client_opts=$2 common
	common="-n $iters${PINGPONG_PORT:+ -p $PINGPONG_PORT}"
	# shellcheck disable=SC2086 # the options are meant to be split into words
	e2e_server_then_client 150 "${PINGPONG_PORT:-}" "$NETNS_A" "$NETNS_B" \
		${PINGPONG_RUN:-} "$pingpong" -d "${PINGPONG_DEV_A:-$VETH_A}" -g "${PINGPONG_GID_A:-1}" \
		$common $server_opts -- \
		${PINGPONG_RUN:-} "$pingpong" -d "${PINGPONG_DEV_B:-$VETH_B}" -g "${PINGPONG_GID_B:-1}" \
		$common $client_opts "$ADDR_A"
}

run_must_pass() {
	run_pair "$2" "$2"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ] || ! check_output "$1"; then
		e2e_show_logs
		fail "$pingpong '$2': server exit $server_status, client exit $client_status (124 = timed out)"
	fi
}

check_output() {
	local size=$1 side log addr="LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}"
	local gid=${PINGPONG_GID_RE:-[0-9a-f:.]+}
	for side in server client; do
		log=$logdir/$side.log
		grep -Eq "^  local address:  $addr${PINGPONG_LOCAL_GID_SEP}GID $gid$" "$log" &&
			grep -Eq "^  remote address: $addr, GID $gid$" "$log" &&
			grep -Eq "^$((size * iters * 2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$log" &&
			grep -Eq "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$log" ||
			return 1
	done
}

check_counters() {
	local run=$1 frames=$2 end ns dev counter value
	shift 2
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		ns=${end%%:*} dev=${end#*:}
		if [ "$frames" != - ]; then
			for counter in engine_tx_frames engine_rx_frames; do
				value=$(e2e_stat "$ns" "$dev" $counter)
				[ "$value" = "$frames" ] ||
					fail "'$run': $dev: $counter is '$value', expected $frames"
			done
		fi
		for counter in "$@"; do
			value=$(e2e_stat "$ns" "$dev" $counter)
			[ "$value" = 0 ] || fail "'$run': $dev: $counter is '$value', expected 0"
		done
	done
}
