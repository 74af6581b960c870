# shellcheck shell=bash
# Helpers of test_hostile_e2e.sh: three hosts on one switch, counters and QP
# fields read from `xroce --json`, and captures. Source it after
# tests/e2e/e2e_common.sh and e2e_init; it uses $xroce and $logdir.
#
# hostile_topology TAG SUBNET
#                       namespaces A, B, C (NETNS_A, NETNS_B, NETNS_C) each
#                       with a veth (VETH_A, VETH_B, VETH_C; ADDR_A, ADDR_B,
#                       ADDR_C = SUBNET.1, .2, .3) to bridge br0 in NETNS_M
#                       (ports VETH_MA, VETH_MB, VETH_MC). The bridge floods
#                       unknown unicast; C's port learns no addresses, so
#                       that C's frames with B's source MAC do not make the
#                       bridge send B's traffic to C (port security on a real
#                       switch; poisoning it is no attack on xroce). GRO is
#                       on at the bridge's ports: a veth takes XDP_TX frames
#                       from its peer only with NAPI, which GRO enables.
#                       Cleanup as for netns_pair (netns_cleanup).
# counters SIDE FILE    writes "xdp.NAME VALUE" and "engine.NAME VALUE" lines
#                       of SIDE's (A or B) `xroce stats --json` to FILE.
# value_of FILE KEY...  the sum of the KEYs' values in FILE.
# qp_field SIDE QPN FIELD
#                       a field of QP QPN in SIDE's `xroce qps --json`
#                       (empty when the QP is not listed).
# capture_start NAME NS DEV FILTER
#                       tcpdump on DEV in NS into $logdir/NAME.pcap, each
#                       frame handed over and written at once (without
#                       --immediate-mode the kernel holds frames up to a
#                       second in a block that stopping tcpdump discards:
#                       the last case's frames went missing); returns once
#                       it listens, else fails.
# capture_stop_all      stops every capture and fails unless none dropped a
#                       frame.
# capture_count NAME FILTER
#                       how many frames of $logdir/NAME.pcap match FILTER.

CAPTURE_PIDS=()
CAPTURE_NAMES=()

hostile_topology() {
	local entry ns dev port
	netns_name_ends "$1" "$2"
	NETNS_C=${NETNS_A%-a}-c
	VETH_C=${VETH_A%a}c
	VETH_MC=${VETH_A%a}mc
	ADDR_C=$2.3
	for ns in "$NETNS_A" "$NETNS_B" "$NETNS_C" "$NETNS_M"; do
		ip netns add "$ns" || return 1
		NETNS_CREATED+=("$ns")
	done
	ip -n "$NETNS_M" link add br0 type bridge &&
		ip -n "$NETNS_M" link set br0 up || return 1
	for entry in "$NETNS_A:$VETH_A:$VETH_MA" "$NETNS_B:$VETH_B:$VETH_MB" \
		"$NETNS_C:$VETH_C:$VETH_MC"; do
		IFS=: read -r ns dev port <<<"$entry"
		ip link add "$dev" netns "$ns" type veth peer name "$port" netns "$NETNS_M" &&
			ip -n "$NETNS_M" link set "$port" master br0 up &&
			netns_exec "$NETNS_M" ethtool -K "$port" tx off gro on >/dev/null || return 1
	done
	NETNS_VETHS+=("$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B")
	netns_configure_ends || return 1
	ip -n "$NETNS_C" link set lo up &&
		ip -n "$NETNS_C" addr add "$ADDR_C/24" dev "$VETH_C" &&
		ip -n "$NETNS_C" link set "$VETH_C" up &&
		netns_exec "$NETNS_C" ethtool -K "$VETH_C" tx off >/dev/null &&
		bridge -n "$NETNS_M" link set dev "$VETH_MC" learning off
}

# side_ns SIDE / side_dev SIDE: the namespace and interface of A or B.
side_ns() {
	if [ "$1" = A ]; then echo "$NETNS_A"; else echo "$NETNS_B"; fi
}

side_dev() {
	if [ "$1" = A ]; then echo "$VETH_A"; else echo "$VETH_B"; fi
}

counters() {
	netns_exec "$(side_ns "$1")" "$xroce" stats "$(side_dev "$1")" --json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for section in ("xdp", "engine"):
    for name, value in doc[section].items():
        print(f"{section}.{name} {value}")' >"$2"
}

value_of() {
	local file=$1
	shift
	awk -v keys="$*" 'BEGIN { n = split(keys, k, " "); for (i = 1; i <= n; i++) want[k[i]] = 1 }
		$1 in want { sum += $2 } END { print sum + 0 }' "$file"
}

qp_field() {
	netns_exec "$(side_ns "$1")" "$xroce" qps "$(side_dev "$1")" --json | python3 -c '
import json, sys
qpn, field = int(sys.argv[1], 0), sys.argv[2]
for qp in json.load(sys.stdin)["qps"]:
    if qp["qpn"] == qpn:
        print(qp[field])' "$2" "$3"
}

capture_start() {
	local name=$1 ns=$2 dev=$3 filter=$4 pid
	nsenter --net="/var/run/netns/$ns" tcpdump --immediate-mode -i "$dev" -n -U -s 128 -B 8192 \
		-w "$logdir/$name.pcap" "$filter" 2>"$logdir/$name.tcpdump" &
	pid=$!
	CAPTURE_PIDS+=("$pid")
	CAPTURE_NAMES+=("$name")
	for _ in $(seq 100); do
		grep -q 'listening on' "$logdir/$name.tcpdump" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$logdir/$name.tcpdump"
	fail "tcpdump on $dev did not start"
}

# Stops the captures still running (also from the cleanup); their exit status does not matter then.
capture_kill_all() {
	local pid
	for pid in "${CAPTURE_PIDS[@]}"; do
		kill -INT "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	CAPTURE_PIDS=()
}

capture_stop_all() {
	local name dropped
	capture_kill_all
	for name in "${CAPTURE_NAMES[@]}"; do
		dropped=$(awk '/packets dropped by kernel/ { print $1 }' "$logdir/$name.tcpdump")
		[ "$dropped" = 0 ] || fail "capture $name: '$dropped' frames dropped by the kernel"
	done
}

capture_count() {
	tcpdump -n -r "$logdir/$1.pcap" ${2:+"$2"} 2>/dev/null | wc -l
}
