#!/usr/bin/env bash
# The RDMA connection manager (xroce/rdma_cm.h) end to end across a veth pair
# between two namespaces, through the real XDP program and AF_XDP: `xroce
# attach` on both ends, then rdma_cm_e2e's servers in A and clients in B,
# which find each other through the CM alone (no out-of-band socket):
#   a. IPv4 RC: one server accepts 3 connections one after another; clients
#      of 1, 4096 and 65536 bytes each get their SEND echoed byte for byte
#      (private data both ways, DREQ/DREP at the end);
#   b. a REQ for a port nobody listens on (A's device held open by
#      open_device) is REJECTED with reason 8 (invalid service ID);
#   c. a listener that rejects: REJECTED with reason 28 (consumer defined)
#      and its private data;
#   d. resolving an address no host answers ARP for, with a 500 ms timeout:
#      ADDR_ERROR after 400 to 3000 ms;
#   e. UD over SIDR: the client learns the server's QPN, Q_Key and address
#      from ESTABLISHED and sends it a datagram;
#   f. multicast over the CM, IPv4 (a 239.0.0.0/8 group) then IPv6 (ff0e::/16):
#      the receiver in A first checks the join API's errors (a join before
#      binding, from an RC id, of a unicast address, with a bad comp_mask or
#      flags, leaving what was never joined: each its errno, no event), then
#      joins as a full member; the sender in B joins send-only and sends 16
#      datagrams of 512 bytes to the AH MULTICAST_JOIN gave it; the receiver
#      gets each one intact, in order, and no more within 500 ms;
#   g. IPv6 RC (fd00::/8 addresses, nodad) with one 4096-byte echo, whose
#      RoCEv2 frames XDP must count as IPv6.
# After each case its processes must have exited 0, with exactly the output
# lines expected, and neither engine may have counted a malformed MAD; at the
# end each engine must have received MADs and no rdma_cm_e2e may be left in
# either namespace.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
prog=$BUILD/tests/rdma_cm_e2e
holder=$BUILD/tests/open_device
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))
# The port case b connects to: nobody listens there.
unused_port=7999
# A /64 of its own per run, so that concurrent tests share no address.
prefix=fd00:78:$(printf '%x' $(($$ % 65536)))
# Bounds: a client's whole run, and how long a server may take to exit after its last client.
client_seconds=30
server_exit_seconds=20

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_rdma_cm_e2e "$prog" "$holder" "$xroce"
holder_pid=""
trap 'e2e_stop_pid "$holder_pid"; e2e_cleanup' EXIT
subnet=$(e2e_subnet)
unused_addr=$subnet.99

netns_pair rcm "$subnet" || fail "could not create the namespaces"
e2e_add_ipv6 "$prefix"
e2e_attach_both

# start_server_until READY LABEL MODE ARGS...: `rdma_cm_e2e MODE ARGS` in A,
# in the background (nsenter execs it: $server_pid is the program itself),
# stdout into $logdir/LABEL.server.out and stderr into .server.err; waits
# (10 s at most) until it prints the line READY. start_server: until
# "listening".
start_server_until() {
	local ready=$1 label=$2
	shift 2
	nsenter --net="/var/run/netns/$NETNS_A" "$prog" "$@" \
		>"$logdir/$label.server.out" 2>"$logdir/$label.server.err" &
	server_pid=$!
	e2e_wait_for_line "$logdir/$label.server.out" "^$ready\$" "$server_pid" 10 ||
		e2e_case_fail "$label" "the server ($*) did not say \"$ready\" within 10 s"
}
start_server() {
	start_server_until listening "$@"
}

# finish_server LABEL: waits ($server_exit_seconds at most, then kills it)
# for the server to exit; fails unless it exited 0.
finish_server() {
	local label=$1 status _
	for _ in $(seq $((server_exit_seconds * 10))); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$server_pid" 2>/dev/null; then
		e2e_stop_pid "$server_pid"
		server_pid=""
		e2e_case_fail "$label" "the server did not exit within $server_exit_seconds s"
	fi
	status=0
	wait "$server_pid" || status=$?
	server_pid=""
	[ "$status" -eq 0 ] || e2e_case_fail "$label" "the server exited $status"
}

# run_client LABEL TAG ARGS...: `rdma_cm_e2e ARGS` in B under timeout, into
# $logdir/LABEL.TAG.out and .err; fails unless it exits 0.
run_client() {
	local label=$1 tag=$2 status=0
	shift 2
	netns_exec "$NETNS_B" timeout -k 5 "$client_seconds" "$prog" "$@" \
		>"$logdir/$label.$tag.out" 2>"$logdir/$label.$tag.err" || status=$?
	[ "$status" -eq 0 ] || e2e_case_fail "$label" "$tag ($*) exited $status (124: timed out)"
}

# ---- a. IPv4: three echoes in a row through one listener.
label="ipv4"
start_server "$label" server "$ADDR_A" "$port" 3
for size in 1 4096 65536; do
	run_client "$label" "client-$size" client "$ADDR_A" "$port" "$size"
	e2e_expect_lines "$label" "$label.client-$size.out" "echo ok $size"
done
finish_server "$label"
e2e_expect_lines "$label" "$label.server.out" listening "served 1" "served 2" "served 3" "server done"
e2e_check_no_malformed "$label"
echo "ok   a. IPv4: 3 connections through one listener, echoes of 1, 4096 and 65536 bytes"

# ---- b. Nobody listens: A's engine (run by open_device) rejects with reason 8.
label="no-listener"
# nsenter, not a shell function: $! must be open_device itself, for the cleanup to stop it.
nsenter --net="/var/run/netns/$NETNS_A" "$holder" "$VETH_A" --hold >"$logdir/$label.holder.out" 2>&1 &
holder_pid=$!
e2e_wait_for_line "$logdir/$label.holder.out" "^opened " "$holder_pid" 10 ||
	e2e_case_fail "$label" "open_device did not open $VETH_A"
run_client "$label" client client-expect "$ADDR_A" "$unused_port" REJECTED 8
e2e_stop_pid "$holder_pid"
holder_pid=""
# The REJ of a REQ for no listener may or may not carry printable private data: only the verdict counts.
grep -Fxq "got REJECTED status 8" "$logdir/$label.client.out" ||
	e2e_case_fail "$label" "no line \"got REJECTED status 8\""
e2e_check_no_malformed "$label"
echo "ok   b. a REQ for port $unused_port, where nobody listens: REJECTED, reason 8"

# ---- c. The listener rejects, with private data.
label="reject"
start_server "$label" server-reject "$ADDR_A" $((port + 1))
run_client "$label" client client-expect "$ADDR_A" $((port + 1)) REJECTED 28
finish_server "$label"
e2e_expect_lines "$label" "$label.client.out" "private data: xroce-cm-no" "got REJECTED status 28"
e2e_expect_lines "$label" "$label.server.out" listening rejected
e2e_check_no_malformed "$label"
echo "ok   c. xr_rdma_reject: REJECTED, reason 28, with the listener's private data"

# ---- d. An address nobody answers ARP for.
label="addr-timeout"
run_client "$label" client resolve-expect "$unused_addr" 500 ADDR_ERROR
line=$(cat "$logdir/$label.client.out")
[[ $line =~ ^got\ ADDR_ERROR\ status\ -?[0-9]+\ after\ ([0-9]+)\ ms$ ]] ||
	e2e_case_fail "$label" "the output is not one line \"got ADDR_ERROR status S after MS ms\""
elapsed=${BASH_REMATCH[1]}
[ "$elapsed" -ge 400 ] && [ "$elapsed" -le 3000 ] ||
	e2e_case_fail "$label" "ADDR_ERROR after $elapsed ms, expected 400 to 3000 for a 500 ms timeout"
echo "ok   d. resolving $unused_addr (no ARP answer), 500 ms timeout: ADDR_ERROR after $elapsed ms"

# ---- e. UD: SIDR, then one datagram.
label="ud"
start_server "$label" ud-server "$ADDR_A" $((port + 2))
run_client "$label" client ud-client "$ADDR_A" $((port + 2))
finish_server "$label"
e2e_expect_lines "$label" "$label.client.out" "ud sent 200"
e2e_expect_lines "$label" "$label.server.out" listening accepted "ud ok"
e2e_check_no_malformed "$label"
echo "ok   e. UD: SIDR resolved the server's QP, a 200-byte datagram arrived intact"

# ---- f. Multicast over the CM, IPv4 then IPv6.
mc_count=16
for group in "239.78.$((RANDOM % 256)).$(($$ % 254 + 1))" "ff0e::78:$(printf '%x' $(($$ % 65536)))"; do
	if [[ $group == *:* ]]; then
		label="multicast-ipv6" src_a=$prefix::1 src_b=$prefix::2
	else
		label="multicast-ipv4" src_a=$ADDR_A src_b=$ADDR_B
	fi
	start_server_until joined "$label" mc-recv "$src_a" "$group" "$mc_count"
	run_client "$label" client mc-send "$src_b" "$group" "$mc_count"
	finish_server "$label"
	e2e_expect_lines "$label" "$label.client.out" "mc sent $mc_count"
	e2e_expect_lines "$label" "$label.server.out" "join errors ok" joined "mc received $mc_count"
done
echo "ok   f. multicast over the CM: join errors, then $mc_count datagrams to a 239/8 and a ff0e::/16 group, each intact, none more"

# ---- g. IPv6: one echo, every frame of it over IPv6.
label="ipv6"
v6_before=$(e2e_stat "$NETNS_A" "$VETH_A" roce_ipv6)
start_server "$label" server "$prefix::1" $((port + 3)) 1
run_client "$label" client client "$prefix::1" $((port + 3)) 4096
finish_server "$label"
e2e_expect_lines "$label" "$label.client.out" "echo ok 4096"
e2e_expect_lines "$label" "$label.server.out" listening "served 1" "server done"
v6_after=$(e2e_stat "$NETNS_A" "$VETH_A" roce_ipv6)
[ -n "$v6_before" ] && [ -n "$v6_after" ] && [ "$v6_after" -gt "$v6_before" ] ||
	e2e_case_fail "$label" "$VETH_A: roce_ipv6 went from '$v6_before' to '$v6_after', expected it to grow"
e2e_check_no_malformed "$label"
echo "ok   g. IPv6: a 4096-byte echo to $prefix::1, $((v6_after - v6_before)) RoCEv2 frames over IPv6"

# ---- h. What is left: MADs were received (by the last owners, those of g), nothing is running.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	rx=$(e2e_stat "${end%%:*}" "${end#*:}" engine_mads_rx)
	malformed=$(e2e_stat "${end%%:*}" "${end#*:}" engine_mads_malformed)
	[ -n "$rx" ] && [ "$rx" -gt 0 ] && [ "$malformed" = 0 ] ||
		fail "${end#*:}: engine_mads_rx '$rx' (expected > 0), engine_mads_malformed '$malformed' (expected 0)"
	echo "ok   h. ${end#*:}: engine_mads_rx $rx, engine_mads_malformed 0"
done
e2e_none_running rdma_cm_e2e "$NETNS_A" "$NETNS_B"
echo "ok   h. no rdma_cm_e2e left in either namespace"
echo "test_rdma_cm_e2e: PASS"
