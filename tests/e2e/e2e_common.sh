# shellcheck shell=bash
# The frame of the end-to-end shell tests that run between namespaces
# (scripts/netns.sh, which this sources). From the repository's root:
#
#   source tests/e2e/e2e_common.sh
#   e2e_init test_name "$BUILD/tests/prog" "$xroce"
#   netns_pair tag "$(e2e_subnet)" || fail "could not create the namespaces"
#   e2e_attach_both
#
# e2e_init NAME BIN...  defines fail, checks for root and that each BIN is
#                       executable, makes $logdir and installs the cleanup on
#                       every exit path.
# fail MESSAGE...       prints "NAME: FAIL: MESSAGE" and exits 1.
# e2e_subnet            a /24 prefix derived from the PID, so that concurrent
#                       tests do not share addresses.
# e2e_attach_both       `xroce attach` on VETH_A in NETNS_A and VETH_B in
#                       NETNS_B, or fail.
# e2e_stop_pid PID      stops PID (if not empty) and reaps it.
# e2e_wait_listening PID PORT [NS]
#                       waits (10 s at most) until PID, a server started in
#                       NS (default NETNS_A), listens on TCP PORT; status 1
#                       if PID exits first or the time runs out.
# e2e_server_then_client SECONDS PORT SERVER_NS CLIENT_NS SERVER-CMD... -- CLIENT-CMD...
#                       runs SERVER-CMD in the background and CLIENT-CMD,
#                       each under timeout SECONDS in its namespace, into
#                       $logdir/server.log and client.log; with a PORT, the
#                       client starts only once the server listens there
#                       (for clients that do not retry a refused connect);
#                       sets server_status and client_status (the client's
#                       is 1 when the server never listened).
# e2e_wait_for_line FILE REGEX PID SECONDS
#                       waits until a line of FILE matches REGEX, while PID
#                       lives and for SECONDS at most; status 1 otherwise.
# e2e_stat NS DEV NAME  one counter of DEV's `xroce stats` in NS ($xroce).
# mac_of NS DEV         DEV's MAC address.
# e2e_show_logs [LABEL] prints $logdir/server.log and client.log indented.
# e2e_case_fail LABEL MESSAGE...
#                       prints every log of case LABEL ($logdir/LABEL.*),
#                       indented under its name, then fails with "LABEL: MESSAGE".
# e2e_expect_lines LABEL FILE LINE...
#                       $logdir/FILE holds exactly the LINEs, in order, or
#                       case LABEL fails.
# e2e_check_no_malformed LABEL
#                       neither end (A and B) counted a malformed MAD, or
#                       case LABEL fails (each owner of a device zeroes its
#                       counters: run it after every case).
# e2e_none_running COMM NS...
#                       fails if a process named COMM still runs in any NS.
# e2e_run_cases SECONDS runs $e2e's server in A and client in B on port
#                       $roce_port (netns_run_pair); both must exit 0, find a
#                       path MTU of $e2e_path_mtu (default 1024, the veths'
#                       MTU of 1500) and print a PASS summary, or fail.
# e2e_add_ipv6 PREFIX   gives A PREFIX::1/64 and B PREFIX::2/64 (nodad), then
#                       e2e_wait_dad.
# e2e_wait_dad          waits (10 s at most) until neither end has a tentative
#                       IPv6 address: link-local GIDs answer once duplicate
#                       address detection is done; or fails.
# e2e_check_stats       prints both ends' xroce stats; fails unless each has
#                       no malformed-frame drops and redirected frames
#                       (netns_check_stats).
# The cleanup stops the processes whose ids are in client_pid, server_pid and
# mb_pid (in that order), then calls netns_cleanup and removes $logdir.

# shellcheck source=scripts/netns.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/netns.sh"

e2e_init() {
	E2E_NAME=$1
	shift
	[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
	local bin
	for bin in "$@"; do
		[ -x "$bin" ] || fail "$bin is missing (make all)"
	done
	logdir=$(mktemp -d "/tmp/xroce-$E2E_NAME.XXXXXX")
	client_pid="" server_pid="" mb_pid=""
	trap e2e_cleanup EXIT
	trap 'exit 130' INT TERM
}

fail() {
	echo "$E2E_NAME: FAIL: $*"
	exit 1
}

e2e_stop_pid() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

e2e_wait_listening() {
	for _ in $(seq 100); do
		netns_exec "${3:-$NETNS_A}" ss -Hltn "sport = :$2" | grep -q . && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

e2e_server_then_client() {
	local seconds=$1 port=$2 server_ns=$3 client_ns=$4 server=()
	shift 4
	while [ "$1" != -- ]; do
		server+=("$1")
		shift
	done
	shift
	netns_exec "$server_ns" timeout "$seconds" "${server[@]}" >"$logdir/server.log" 2>&1 &
	server_pid=$!
	client_status=0
	if [ -n "$port" ] && ! e2e_wait_listening "$server_pid" "$port" "$server_ns"; then
		echo "(the server never listened on port $port)" >"$logdir/client.log"
		client_status=1
	else
		netns_exec "$client_ns" timeout "$seconds" "$@" >"$logdir/client.log" 2>&1 ||
			client_status=$?
	fi
	server_status=0
	wait "$server_pid" || server_status=$?
	server_pid=""
}

e2e_wait_for_line() {
	local file=$1 regex=$2 pid=$3 _
	for _ in $(seq $(($4 * 20))); do
		grep -Eq "$regex" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || { grep -Eq "$regex" "$file"; return; }
		sleep 0.05
	done
	return 1
}

e2e_stat() {
	netns_stat "$@"
}

mac_of() {
	ip -n "$1" -j link show dev "$2" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["address"])'
}

e2e_cleanup() {
	e2e_stop_pid "$client_pid"
	e2e_stop_pid "$server_pid"
	e2e_stop_pid "$mb_pid"
	netns_cleanup
	rm -rf "$logdir"
}

e2e_subnet() {
	echo "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))"
}

e2e_attach_both() {
	local end
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		netns_exec "${end%%:*}" "$(netns_xroce)" attach "${end#*:}" >/dev/null ||
			fail "xroce attach ${end#*:} failed"
	done
}

e2e_case_fail() {
	local label=$1 file
	shift
	for file in "$logdir/$label".*; do
		[ -e "$file" ] || continue
		echo "--- $(basename "$file"):"
		sed 's/^/    /' "$file"
	done
	fail "$label: $*"
}

e2e_expect_lines() {
	local label=$1 file=$2
	shift 2
	printf '%s\n' "$@" | cmp -s - "$logdir/$file" ||
		e2e_case_fail "$label" "$file is not exactly: $(printf '"%s" ' "$@")"
}

e2e_check_no_malformed() {
	local end value
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		value=$(e2e_stat "${end%%:*}" "${end#*:}" engine_mads_malformed)
		[ "$value" = 0 ] ||
			e2e_case_fail "$1" "${end#*:}: engine_mads_malformed is '$value', expected 0"
	done
}

e2e_none_running() {
	local comm=$1 ns pid
	shift
	for ns in "$@"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "$comm" ] ||
				fail "$comm (pid $pid) is still running in $ns"
		done
	done
}

e2e_show_logs() {
	local side
	for side in server client; do
		echo "--- ${1:+$1 }$side:"
		sed 's/^/    /' "$logdir/$side.log"
	done
}

e2e_run_cases() {
	local side name
	name=$(basename "$e2e")
	netns_run_pair "$logdir" "$1" "$e2e" "$VETH_A" -p "$roce_port" -- \
		"$VETH_B" "$ADDR_A" -p "$roce_port" ||
		fail "$name: $NETNS_PAIR_STATUS (124 = timed out)"
	for side in server client; do
		grep -q "^\[$side\] path MTU ${e2e_path_mtu:-1024};" "$logdir/$side.log" ||
			fail "$side: path MTU is not ${e2e_path_mtu:-1024}"
		grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
			fail "$side: no PASS summary line"
	done
	echo "ok   $name: every case passed on both sides"
}

e2e_check_stats() {
	local status=0
	netns_check_stats "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" >"$logdir/stats" || status=1
	cat "$logdir/stats"
	[ "$status" -eq 0 ] || fail "$(tail -n 1 "$logdir/stats")"
}

e2e_add_ipv6() {
	ip -n "$NETNS_A" -6 addr add "$1::1/64" dev "$VETH_A" nodad &&
		ip -n "$NETNS_B" -6 addr add "$1::2/64" dev "$VETH_B" nodad ||
		fail "could not add the IPv6 addresses"
	e2e_wait_dad
}

e2e_wait_dad() {
	local end _
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		for _ in $(seq 100); do
			[ -z "$(ip -n "${end%%:*}" -6 addr show dev "${end#*:}" tentative)" ] && continue 2
			sleep 0.1
		done
		fail "${end#*:}: IPv6 addresses still tentative after 10 s"
	done
}
