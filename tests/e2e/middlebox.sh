# shellcheck shell=bash
# Helpers for the tests that run tests/e2e/middlebox.c between the namespaces
# of netns_middlebox_pair, most with reliability_e2e on both sides. Source it
# after tests/e2e/e2e_common.sh and e2e_init; it uses $middlebox and $e2e
# (the binaries), $port, $logdir, mb_pid and server_pid.
#
# mb_start ARGS...        starts the middlebox in NETNS_M bridging VETH_MA and
#                         VETH_MB, exiting after 300 s unless ARGS say
#                         otherwise, logging to $logdir/mb.log; fails unless it
#                         is forwarding within 5 s.
# mb_stop                 stops it; it must exit 0 and have printed counters.
# mb_dir DIR KEY          a counter of direction DIR (a2b, b2a).
# mb_qp DIR QPN KEY       a counter of the frames of DIR to destination QP QPN.
# reliability_case NAME CLIENT_ARGS...
#                         reliability_e2e's server in B and client (with
#                         CLIENT_ARGS) in A on port $port (then $port + 1);
#                         prints both logs; both must exit 0 and print PASS.
#                         The arrays server_env and client_env hold
#                         VAR=VALUE settings for each side's process.
# client_qpn N local|peer the QP number the client reported for its pair N.

server_env=()
client_env=()

mb_start() {
	nsenter --net="/var/run/netns/$NETNS_M" "$middlebox" "$VETH_MA" "$VETH_MB" \
		--max-seconds 300 "$@" >"$logdir/mb.log" 2>&1 &
	mb_pid=$!
	for _ in $(seq 50); do
		grep -q '^middlebox: forwarding' "$logdir/mb.log" && return 0
		kill -0 "$mb_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$logdir/mb.log"
	fail "the middlebox did not start"
}

mb_stop() {
	local status=0
	kill -TERM "$mb_pid"
	wait "$mb_pid" || status=$?
	mb_pid=""
	[ "$status" -eq 0 ] || fail "the middlebox exited with status $status"
	grep -q '^dir a2b ' "$logdir/mb.log" || fail "the middlebox printed no counters"
}

mb_dir() {
	awk -v d="$1" -v k="$2" '$1 == "dir" && $2 == d { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"$logdir/mb.log"
}

mb_qp() {
	awk -v d="$1" -v q="$2" -v k="$3" '$1 == "qp" && $2 == d && $3 == q { for (i = 4; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"$logdir/mb.log"
}

reliability_case() {
	local name=$1 server_status=0 client_status=0
	shift
	nsenter --net="/var/run/netns/$NETNS_B" env "${server_env[@]}" timeout 200 "$e2e" server \
		"$VETH_B" -p "$port" >"$logdir/server.log" 2>&1 &
	server_pid=$!
	nsenter --net="/var/run/netns/$NETNS_A" env "${client_env[@]}" timeout 200 "$e2e" client \
		"$VETH_A" "$ADDR_B" -p "$port" "$@" >"$logdir/client.log" 2>&1 || client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
	port=$((port + 1))
	e2e_show_logs "$name"
	[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ] ||
		fail "$name: server exit $server_status, client exit $client_status (124 = timed out)"
	grep -q '^\[client\] PASS' "$logdir/client.log" && grep -q '^\[server\] PASS' "$logdir/server.log" ||
		fail "$name: no PASS line on both sides"
}

client_qpn() {
	awk -v n="$1" -v w="$2" '$1 == "[client]" && $2 == "qp" && $3 == n { for (i = 4; i < NF; i++) if ($i == w) print $(i + 1) }' \
		"$logdir/client.log"
}
