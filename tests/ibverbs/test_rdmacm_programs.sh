#!/usr/bin/env bash
# Unmodified librdmacm programs (Debian's rdmacm-utils and qperf) on xroce's
# librdmacm.so.1 and libibverbs.so.1, under xroce-run, between two
# namespaces through the XDP program and AF_XDP. Each case gets a fresh
# namespace pair with xroce attached on both ends; the server runs in A,
# the client in B once A's engine has begun a listen (engine_cm_listens):
#   - ABI: SONAME librdmacm.so.1, exporting exactly the versioned symbols of
#     Debian's librdmacm.so.1 (RDMACM_1.0 to 1.3), and rping under xroce-run
#     maps xroce's, not Debian's;
#   a. rping -S 4096 -C 100 -V both ends (-V: each side compares every byte
#      of every ping): 100 pings shown by the client (-v), both exit 0;
#   b. udaddy (RDMA_PS_UDP, UD QPs found through SIDR): both report
#      "return status 0";
#   c. ucmatose -c 4 -C 10: 4 RC connections at once, 10 messages each way,
#      then disconnected: both "return status 0";
#   d. rdma_server / rdma_client: synchronous ids from rdma_create_ep, a
#      request taken with rdma_get_request, librdmacm's own CQs: both "end 0";
#   e. rdma_xserver / rdma_xclient -c r: the same over a shared receive queue
#      from rdma_create_srq: both "end 0";
#   f. cmtime -c 50: 50 connections set up and torn down; the client exits 0
#      with its step table (the server serves until stopped);
#   g. qperf -cm1 rc_bw rc_lat: a bandwidth and a latency from RC QPs the CM
#      connected (its UD and UC tests use no CM, and address by LID, which
#      RoCE has not);
#   h. mckey over IPv4 and IPv6 (a group of 239.0.0.0/8, then of ff0e::/16):
#      the receiver in A joins as a full member (its QP made with
#      IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, -l), the sender in B as a
#      send-only member (-o) once A's has joined; 20 datagrams of 1024
#      bytes: both "return status 0", and A's XDP steered exactly 20 frames
#      to its engine and dropped none for want of a member;
#   i. rping to a port nobody listens on, A's device held open: the CM's
#      REJECTED (reason 8) reaches rping, which exits non-zero within 15 s;
#   j. rstream: rsocket fails with ENOSYS, as the README says.
# After each case neither namespace has a program left running, and no
# engine counted a malformed MAD.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
run=$BUILD/xroce-run
lib=$BUILD/ibverbs/librdmacm.so.1
holder=$BUILD/tests/open_device
xroce=$BUILD/xroce
port=$((7000 + $$ % 900))
unused_port=7999
# Bounds: a client's whole run, how long a server may take to exit after its client.
client_seconds=60
server_exit_seconds=20

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_rdmacm_programs "$run" "$lib" "$holder" "$xroce"
holder_pid=""
trap 'e2e_stop_pid "$holder_pid"; e2e_cleanup' EXIT
subnet=$(e2e_subnet)
system=$(ldconfig -p | awk '$1 == "librdmacm.so.1" && /x86-64|64bit/ { print $NF; exit }')
[ -n "$system" ] && [ -f "$system" ] || fail "Debian's librdmacm.so.1 is not installed (librdmacm1)"
for prog in rping udaddy ucmatose rdma_server rdma_client rdma_xserver rdma_xclient cmtime \
	mckey rstream qperf; do
	command -v "$prog" >/dev/null || fail "$prog is not installed (rdmacm-utils, qperf)"
done

# ---- ABI ----------------------------------------------------------------------
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librdmacm.so.1 ] || fail "SONAME is '$soname'"
exports() {
	nm -D --defined-only "$1" | awk '$2 != "A" && $3 ~ /@/ { print $3 }' | sort
}
exports "$lib" >"$logdir/ours"
exports "$system" >"$logdir/debian"
diff_out=$(diff "$logdir/debian" "$logdir/ours") ||
	fail "exports differ from Debian's librdmacm (< Debian's, > ours):"$'\n'"$diff_out"
echo "ok   librdmacm.so.1 exports Debian's $(wc -l <"$logdir/ours") symbols at their versions"
deps=$("$run" ldd "$(command -v rping)") || fail "ldd rping: $deps"
grep -q "librdmacm.so.1 => $(cd "$BUILD/ibverbs" && pwd)/librdmacm.so.1 " <<<"$deps" ||
	fail "rping under xroce-run does not load xroce's librdmacm.so.1:"$'\n'"$deps"
echo "ok   rping under xroce-run loads xroce's librdmacm.so.1"

# ---- cases --------------------------------------------------------------------
# fresh_pair: the previous case's namespaces go, a new pair comes with xroce
# attached on both ends (its counters start at 0).
fresh_pair() {
	netns_cleanup
	netns_pair rcp "$subnet" || fail "could not create the namespaces"
	e2e_attach_both
}

# wait_listen LABEL PID: until A's engine has begun a listen, while PID lives (10 s at most).
wait_listen() {
	local label=$1 pid=$2 i listens
	for ((i = 0; i < 100; i++)); do
		listens=$(e2e_stat "$NETNS_A" "$VETH_A" engine_cm_listens)
		[ "${listens:-0}" -ge 1 ] && return 0
		kill -0 "$pid" 2>/dev/null || e2e_case_fail "$label" "the server exited before it listened"
		sleep 0.1
	done
	e2e_case_fail "$label" "the server did not listen within 10 s"
}

# no_leftovers LABEL: nothing of ours runs in either namespace, no malformed MAD was counted.
no_leftovers() {
	local label=$1 ns left malformed
	for ns in "$NETNS_A" "$NETNS_B"; do
		left=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
		[ -z "$left" ] || e2e_case_fail "$label" "processes left in $ns: $left"
	done
	for ns in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		malformed=$(e2e_stat "${ns%%:*}" "${ns#*:}" engine_mads_malformed)
		[ "${malformed:-0}" -eq 0 ] || e2e_case_fail "$label" "${ns#*:} counted $malformed malformed MADs"
	done
}

# run_case LABEL SERVER_KEEPS "SERVER ARGS" "CLIENT ARGS": the server under
# xroce-run in A, then the client in B once A listens (@A stands for A's
# address; with tcp_port set, once the server listens on that TCP port, as
# qperf's does before any RDMA). The client must exit 0; the server must
# exit 0 by itself, or, when SERVER_KEEPS is "keeps" (it serves until
# stopped), is stopped after the client and must not have died before.
tcp_port=""
run_case() {
	local label=$1 keeps=$2 server_args client_args status i
	fresh_pair
	server_args=${3//@A/$ADDR_A} client_args=${4//@A/$ADDR_A}
	# shellcheck disable=SC2086 # the arguments are words
	nsenter --net="/var/run/netns/$NETNS_A" "$run" $server_args \
		>"$logdir/$label.server" 2>&1 &
	server_pid=$!
	if [ -n "$tcp_port" ]; then
		e2e_wait_listening "$server_pid" "$tcp_port" ||
			e2e_case_fail "$label" "the server did not listen on TCP $tcp_port"
	else
		wait_listen "$label" "$server_pid"
	fi
	# shellcheck disable=SC2086
	nsenter --net="/var/run/netns/$NETNS_B" timeout "$client_seconds" "$run" $client_args \
		>"$logdir/$label.client" 2>&1
	status=$?
	[ "$status" -eq 0 ] || e2e_case_fail "$label" "the client exited with $status"
	if [ "$keeps" = keeps ]; then
		kill -0 "$server_pid" 2>/dev/null || e2e_case_fail "$label" "the server died"
		e2e_stop_pid "$server_pid"
	else
		for ((i = 0; i < server_exit_seconds * 10; i++)); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$server_pid" 2>/dev/null &&
			e2e_case_fail "$label" "the server did not exit within $server_exit_seconds s"
		wait "$server_pid"
		status=$?
		[ "$status" -eq 0 ] || e2e_case_fail "$label" "the server exited with $status"
	fi
	server_pid=""
	no_leftovers "$label"
}

# expect LABEL WHICH REGEX [COUNT]: WHICH's output (server or client) has a
# line matching REGEX (exactly COUNT of them when given).
expect() {
	local label=$1 which=$2 regex=$3 count=${4:-} n
	n=$(grep -cE "$regex" "$logdir/$label.$which")
	if [ -n "$count" ]; then
		[ "$n" -eq "$count" ] || e2e_case_fail "$label" "the $which printed $n lines like '$regex', not $count"
	else
		[ "$n" -ge 1 ] || e2e_case_fail "$label" "the $which printed no line like '$regex'"
	fi
}

run_case a.rping exits "rping -s -a @A -p $port -S 4096 -C 100 -V" \
	"rping -c -a @A -p $port -S 4096 -C 100 -V -v"
expect a.rping client '^ping data: rdma-ping-[0-9]+: ' 100
expect a.rping client '^ping data: rdma-ping-99: '
echo "ok   a. rping: 100 pings of 4096 bytes, verified at both ends"

run_case b.udaddy exits udaddy "udaddy -s @A"
expect b.udaddy server '^return status 0$' 1
expect b.udaddy client '^return status 0$' 1
echo "ok   b. udaddy: UD over SIDR, both ends return status 0"

run_case c.ucmatose exits "ucmatose -p $port -c 4 -C 10" "ucmatose -s @A -p $port -c 4 -C 10"
expect c.ucmatose server '^return status 0$' 1
expect c.ucmatose client '^return status 0$' 1
echo "ok   c. ucmatose: 4 connections, 10 messages each, both ends return status 0"

run_case d.rdma_server exits "rdma_server -p $port" "rdma_client -s @A -p $port"
expect d.rdma_server server '^rdma_server: end 0$' 1
expect d.rdma_server client '^rdma_client: end 0$' 1
echo "ok   d. rdma_server / rdma_client: endpoints, rdma_get_request, both end 0"

run_case e.rdma_xserver exits "rdma_xserver -c r -p $port" "rdma_xclient -s @A -c r -p $port"
expect e.rdma_xserver server '^rdma_xserver: end 0$' 1
expect e.rdma_xserver client '^rdma_xclient: end 0$' 1
echo "ok   e. rdma_xserver / rdma_xclient over an SRQ: both end 0"

run_case f.cmtime keeps "cmtime -p $port -c 50" "cmtime -s @A -p $port -c 50"
expect f.cmtime client '^connect +:'
expect f.cmtime client '^disconnect +:'
echo "ok   f. cmtime: 50 connections set up and torn down"
sed -n '/^step/,$p' "$logdir/f.cmtime.client" | sed 's/^/     /'

tcp_port=19765 # qperf's
run_case g.qperf keeps "qperf" "qperf -cm1 -t 2 @A rc_bw rc_lat"
tcp_port=""
expect g.qperf client '^ +bw += +[0-9.]+ [KMG]B/sec$' 1
expect g.qperf client '^ +latency += +[0-9.]+ (ns|us|ms)$' 1
echo "ok   g. qperf -cm1: $(grep -E '^ +(bw|latency) ' "$logdir/g.qperf.client" | tr -s ' ' | tr '\n' ';')"

# mckey_case LABEL GROUP SRC_A SRC_B: A's mckey receives what B's sends to GROUP.
mckey_messages=20
mckey_case() {
	local label=$1 group=$2 src_a=$3 src_b=$4 status steered unjoined
	nsenter --net="/var/run/netns/$NETNS_A" timeout "$client_seconds" "$run" stdbuf -oL \
		mckey -m "$group" -b "$src_a" -l -C "$mckey_messages" -S 1024 >"$logdir/$label.server" 2>&1 &
	server_pid=$!
	e2e_wait_for_line "$logdir/$label.server" "^mckey: joined dgid: " "$server_pid" 10 ||
		e2e_case_fail "$label" "the receiver did not join within 10 s"
	nsenter --net="/var/run/netns/$NETNS_B" timeout "$client_seconds" "$run" \
		mckey -m "$group" -b "$src_b" -s -o -C "$mckey_messages" -S 1024 \
		>"$logdir/$label.client" 2>&1
	status=$?
	[ "$status" -eq 0 ] || e2e_case_fail "$label" "the sender exited with $status"
	wait "$server_pid"
	status=$?
	server_pid=""
	[ "$status" -eq 0 ] || e2e_case_fail "$label" "the receiver exited with $status"
	expect "$label" server '^return status 0$' 1
	expect "$label" client '^return status 0$' 1
	steered=$(e2e_stat "$NETNS_A" "$VETH_A" redirected)
	unjoined=$(e2e_stat "$NETNS_A" "$VETH_A" drop_mcast_unjoined)
	[ "${steered:-0}" -eq "$mckey_messages" ] && [ "${unjoined:-1}" -eq 0 ] ||
		e2e_case_fail "$label" "A's XDP steered ${steered:-?} frames (not $mckey_messages) and dropped ${unjoined:-?} unjoined"
	no_leftovers "$label"
}

fresh_pair
mckey_case h.mckey "239.77.$((RANDOM % 256)).$(($$ % 254 + 1))" "$ADDR_A" "$ADDR_B"
fresh_pair
prefix=fd00:79:$(printf '%x' $(($$ % 65536)))
e2e_add_ipv6 "$prefix"
mckey_case h.mckey6 "ff0e::77:$(printf '%x' $(($$ % 65536)))" "$prefix::1" "$prefix::2"
echo "ok   h. mckey over IPv4 and IPv6: $mckey_messages datagrams to a group, each steered once"

# i. Nobody listens: the peer's CM answers on QP1 only while a process owns its device.
label=i.no_listener
fresh_pair
nsenter --net="/var/run/netns/$NETNS_A" "$holder" "$VETH_A" --hold >"$logdir/$label.holder" 2>&1 &
holder_pid=$!
e2e_wait_for_line "$logdir/$label.holder" "^opened " "$holder_pid" 10 ||
	e2e_case_fail "$label" "open_device did not open $VETH_A"
start=$SECONDS
nsenter --net="/var/run/netns/$NETNS_B" timeout 30 "$run" rping -c -a "$ADDR_A" -p "$unused_port" \
	-C 1 -v >"$logdir/$label.client" 2>&1
status=$?
took=$((SECONDS - start))
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || e2e_case_fail "$label" "rping exited with $status"
[ "$took" -le 15 ] || e2e_case_fail "$label" "rping took $took s"
expect "$label" client 'RDMA_CM_EVENT_REJECTED, error 8'
e2e_stop_pid "$holder_pid"
holder_pid=""
no_leftovers "$label"
echo "ok   i. rping to a port nobody listens on: REJECTED (8) in ${took} s, exit $status"

label=j.rsocket
nsenter --net="/var/run/netns/$NETNS_B" timeout 10 "$run" rstream -s "$ADDR_A" \
	>"$logdir/$label.client" 2>&1
status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || e2e_case_fail "$label" "rstream exited with $status"
expect "$label" client '^rsocket failed: Function not implemented$' 1
echo "ok   j. rstream: rsocket fails with ENOSYS"
echo "test_rdmacm_programs: PASS"
