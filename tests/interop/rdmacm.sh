#!/usr/bin/env bash
# Unmodified librdmacm programs under xroce-run (xroce's librdmacm.so.1 and
# libibverbs.so.1) in netns xrhost against the same programs on Linux's
# Soft-RoCE in the guest, each way round:
#   rdmacm rping to-rxe|from-rxe  rping, 20 pings of 4096 bytes, -V at both
#                   ends (each compares every byte); both exit 0 and the
#                   client shows the 20 pings;
#   rdmacm udaddy to-rxe|from-rxe  udaddy (UD over SIDR): both "return
#                   status 0";
#   rdmacm qperf to-rxe|from-rxe  qperf -cm1 rc_bw rc_lat: a bandwidth and a
#                   latency (the qperf server, which serves until stopped,
#                   is stopped after). Debian's qperf 0.4.11 has its server
#                   send the client its port before it listens (fixed
#                   upstream after 0.4.11, "Fix rdmacm race"): xroce's REQ
#                   comes before the guest, slower, listens, and is rejected
#                   (reason 8, seen in captures). So while xroce is qperf's
#                   client the guest takes its frames 50 ms late (netem):
#                   the latency shown has that in it;
#   rdmacm mckey to-rxe|from-rxe  mckey, 20 datagrams of 1024 bytes to a
#                   239.0.0.0/8 group: the receiver joins as a full member,
#                   the sender (once the receiver has joined) as a
#                   send-only one (-o); both "return status 0".
# "to-rxe": xroce's program is the client, the guest's the server; "from-rxe":
# the other way round. Prints PASS/FAIL per run.
#
# Two ways to run it, as cm.sh: sourced by tests/interop/run.sh, or executed
# directly (then it sets the guest up and tears it down itself).
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository).

rc_in_host() {
	nsenter --net="/var/run/netns/$RC_HOST_NS" "$@"
}

# rc_host_listens PID SECONDS: until xroce's engine has begun a listen, while PID lives.
rc_host_listens() {
	local pid=$1 i listens
	for ((i = 0; i < $2 * 10; i++)); do
		listens=$(rc_in_host "$RC_XROCE" stats "$RC_HOST_IF" |
			awk '$1 == "engine_cm_listens" { print $2 }')
		[ "${listens:-0}" -ge 1 ] && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# rc_to_rxe LABEL "GUEST SERVER CMD" "HOST CLIENT ARGS" CHECK: the
# guest's server, then xroce's client; CHECK (a function) is given the
# client's and the server's logs and prints why they fail (nothing: pass).
# With RC_KEEPS=1 the server serves until stopped, and is stopped after.
rc_to_rxe() {
	local label=$1 server=$2 client=$3 check=$4 job why="" status=0
	local log=$RC_LOGDIR/${label// /-}.host.log guest_log=$RC_LOGDIR/${label// /-}.guest.log

	job=$("$RXE_PEER" start "$RC_GUEST" "timeout 60 $server")
	# The guest's program listens within a second of starting; before, a REQ is rejected.
	sleep 2
	# shellcheck disable=SC2086 # the arguments are words
	rc_in_host timeout 60 "$RC_RUN" $client >"$log" 2>&1 || status=$?
	if [ "${RC_KEEPS:-0}" = 1 ]; then
		"$RXE_PEER" exec "$RC_GUEST" "killall ${server%% *}" >/dev/null 2>&1
	fi
	"$RXE_PEER" wait "$RC_GUEST" "$job" 70 >"$guest_log" 2>&1
	if [ "$status" -ne 0 ]; then
		why="xroce's ${client%% *} exited with $status"
	else
		why=$($check "$log" "$guest_log")
	fi
	interop_report "$label" "$why" "$($RC_DETAIL "$log")" "$log" "$guest_log"
}

# rc_from_rxe LABEL "HOST SERVER ARGS" "GUEST CLIENT CMD" CHECK: xroce's
# server, then the guest's client once xroce listens (or, with RC_TCP_PORT,
# once the host listens on that TCP port, as qperf does before any RDMA;
# with RC_READY, once the server's output has a line matching it).
rc_from_rxe() {
	local label=$1 server=$2 client=$3 check=$4 pid why="" status=0
	local log=$RC_LOGDIR/${label// /-}.host.log guest_log=$RC_LOGDIR/${label// /-}.guest.log

	# Attached afresh, so that engine_cm_listens counts this server's listen only.
	rc_in_host "$RC_XROCE" detach "$RC_HOST_IF" >/dev/null &&
		rc_in_host "$RC_XROCE" attach "$RC_HOST_IF" >/dev/null ||
		why="xroce could not attach $RC_HOST_IF again"
	# shellcheck disable=SC2086 # the arguments are words
	nsenter --net="/var/run/netns/$RC_HOST_NS" timeout 60 "$RC_RUN" $server >"$log" 2>&1 &
	pid=$!
	if [ -n "${RC_TCP_PORT:-}" ]; then
		for _ in $(seq 100); do
			rc_in_host ss -ltn "sport = :$RC_TCP_PORT" | grep -q LISTEN && break
			sleep 0.1
		done
	elif [ -n "${RC_READY:-}" ]; then
		for _ in $(seq 100); do
			grep -qE "$RC_READY" "$log" && break
			sleep 0.1
		done
	elif [ -z "$why" ] && ! rc_host_listens "$pid" 10; then
		why="xroce's ${server%% *} did not listen within 10 s"
	fi
	if [ -z "$why" ]; then
		"$RXE_PEER" exec "$RC_GUEST" "timeout 60 $client" >"$guest_log" 2>&1 || status=$?
	fi
	if [ "${RC_KEEPS:-0}" = 1 ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	else
		wait "$pid" || why=${why:-"xroce's ${server%% *} exited with $?"}
	fi
	if [ -z "$why" ] && [ "$status" -ne 0 ]; then
		why="the guest's ${client%% *} exited with $status"
	fi
	[ -n "$why" ] || why=$($check "$guest_log" "$log")
	interop_report "$label" "$why" "$($RC_DETAIL "$guest_log")" "$log" "$guest_log"
}

# Checks: CLIENT_LOG SERVER_LOG; print why not.
rc_rping_ok() {
	local n
	n=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "$1")
	[ "$n" -eq 20 ] || echo "the client showed $n pings, not 20"
}
rc_rping_detail() {
	echo "$(grep -cE '^ping data: ' "$1") pings of 4096 bytes, verified at both ends"
}
rc_both_status0_ok() {
	grep -qx 'return status 0' "$1" || echo "the client did not return status 0"
	grep -qx 'return status 0' "$2" || echo "the server did not return status 0"
}
rc_udaddy_detail() {
	echo "UD over SIDR, both return status 0"
}
rc_mckey_detail() {
	echo "20 datagrams of 1024 bytes to a group, both return status 0"
}
rc_qperf_ok() {
	grep -qE '^ +bw += +[0-9.]+ [KMG]B/sec$' "$1" || echo "no bandwidth from rc_bw"
	grep -qE '^ +latency += +[0-9.]+ (ns|us|ms)$' "$1" || echo "no latency from rc_lat"
}
rc_qperf_detail() {
	grep -E '^ +(bw|latency) ' "$1" | tr -s ' ' | tr '\n' ';'
}

rdmacm_main() {
	# shellcheck source=tests/interop/report.sh
	source tests/interop/report.sh
	RC_XROCE=$(readlink -f "${BUILD:-build}/xroce")
	RC_RUN=$(readlink -f "${BUILD:-build}/xroce-run")
	RC_HOST_NS=${RXE_PEER_HOST_NS:-xrhost}
	RC_HOST_IF=${RXE_PEER_HOST_IF:-xrhost0}
	RC_GUEST=rxeA
	RC_GUEST_IP=${RXE_PEER_NET:-10.77.0}.1
	RC_HOST_IP=${RXE_PEER_NET:-10.77.0}.100
	RC_LOGDIR=${logdir:?}
	local g=$RC_GUEST_IP h=$RC_HOST_IP rping="-p 7175 -S 4096 -C 20 -V"
	local group=239.77.0.$((RANDOM % 254 + 1)) mckey="-C 20 -S 1024"
	echo "unmodified librdmacm programs against Linux's Soft-RoCE"

	RC_DETAIL=rc_rping_detail
	rc_to_rxe "rdmacm rping to-rxe" "rping -s -a $g $rping" "rping -c -a $g $rping -v" rc_rping_ok
	rc_from_rxe "rdmacm rping from-rxe" "rping -s -a $h $rping" "rping -c -a $h $rping -v" \
		rc_rping_ok

	RC_DETAIL=rc_udaddy_detail
	rc_to_rxe "rdmacm udaddy to-rxe" "udaddy" "udaddy -s $g" rc_both_status0_ok
	rc_from_rxe "rdmacm udaddy from-rxe" "udaddy" "udaddy -s $h" rc_both_status0_ok

	RC_DETAIL=rc_mckey_detail
	rc_to_rxe "rdmacm mckey to-rxe" "mckey -m $group -b $g $mckey" "mckey -m $group -b $h -s -o $mckey" \
		rc_both_status0_ok
	RC_READY='^mckey: joined dgid: '
	rc_from_rxe "rdmacm mckey from-rxe" "stdbuf -oL mckey -m $group -b $h $mckey" \
		"mckey -m $group -b $g -s -o $mckey" rc_both_status0_ok
	RC_READY=

	RC_DETAIL=rc_qperf_detail RC_KEEPS=1
	if "$RXE_PEER" impair "$RC_GUEST" ingress 'delay 50ms' >/dev/null 2>&1; then
		rc_to_rxe "rdmacm qperf to-rxe" "qperf" "qperf -cm1 -t 2 $g rc_bw rc_lat" rc_qperf_ok
		"$RXE_PEER" impair "$RC_GUEST" off >/dev/null 2>&1
	else
		interop_report "rdmacm qperf to-rxe" "rxe-peer impair (netem) failed" ""
	fi
	RC_TCP_PORT=19765
	rc_from_rxe "rdmacm qperf from-rxe" "qperf" "qperf -cm1 -t 2 $h rc_bw rc_lat" rc_qperf_ok
	RC_KEEPS=0 RC_TCP_PORT=""
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced by run.sh: the guest is up and xroce is attached to its host interface.
	rdmacm_main
	return 0
fi

set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/interop/standalone.sh
source tests/interop/standalone.sh
interop_standalone rdmacm rdmacm_main
