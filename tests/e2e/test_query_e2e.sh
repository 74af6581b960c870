#!/usr/bin/env bash
# xr_query_port, xr_query_qp and xr_resize_cq on real devices: query_e2e
# opens VETH_A (attached in NETNS_A, its peer VETH_B in NETNS_B) and checks
# the port (ACTIVE, MTU 1024 at netdev MTU 1500 with a max MTU of 2048, the
# most single-buffer AF_XDP sockets carry, the GID table's length,
# width and speed from the veth's ethtool speed, 10000 Mb/s), an RC QP
# brought to RTS toward ADDR_B and queried at each step, the alternate-path
# attributes refused, a CQ on a completion channel filled by a flush,
# resized without losing a completion; then the port follows the link at
# call time (VETH_A down: DOWN/DISABLED; VETH_B down: DOWN/POLLING).
# Then both ends at MTU 9000 with generic XDP: the sockets are multi-buffer,
# and active_mtu and max_mtu are 4096.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/query_e2e
xroce=$BUILD/xroce

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_query_e2e "$e2e" "$xroce"
command -v ethtool >/dev/null || fail "ethtool is missing"

netns_pair qry "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

speed=$(netns_exec "$NETNS_A" ethtool "$VETH_A" 2>/dev/null | sed -n 's/^\s*Speed: \([0-9]*\)Mb\/s/\1/p')
[ -n "$speed" ] || fail "ethtool reports no speed for $VETH_A"
echo "ok   ethtool: $VETH_A runs at $speed Mb/s"

# ---- MTU 1500: port, QP, CQ, link changes.
netns_exec "$NETNS_A" "$e2e" "$VETH_A" --speed "$speed" --active-mtu 3 --max-mtu 4 \
	--peer "$ADDR_B" --peer-ns "$NETNS_B" --peer-if "$VETH_B" >"$logdir/mtu1500.log" 2>&1
status=$?
sed 's/^/    /' "$logdir/mtu1500.log"
[ $status -eq 0 ] || fail "query_e2e at MTU 1500 (exit $status)"

# ---- MTU 9000, generic XDP.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" detach "${end#*:}" >/dev/null || fail "detach ${end#*:}"
done
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link set dev "${end#*:}" mtu 9000 || fail "MTU 9000 on ${end#*:}"
done
out=$(netns_exec "$NETNS_A" "$xroce" attach --mode generic "$VETH_A" 2>&1) ||
	fail "attach --mode generic $VETH_A at MTU 9000: $out"
netns_exec "$NETNS_A" "$e2e" "$VETH_A" --speed "$speed" --active-mtu 5 --max-mtu 5 \
	>"$logdir/mtu9000.log" 2>&1
status=$?
sed 's/^/    /' "$logdir/mtu9000.log"
[ $status -eq 0 ] || fail "query_e2e at MTU 9000 (exit $status)"
echo "PASS"
