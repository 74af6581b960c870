#!/usr/bin/env bash
# Debian's unmodified ibv_devices and ibv_devinfo -v under xroce-run:
#   - in namespace A, with xroce attached to VETH_A: exactly one device,
#     xroce_VETH_A, its node GUID the MAC's EUI-64 (ff:fe inserted, the
#     universal/local bit flipped, as rxe makes it); ibv_devinfo -v shows an
#     InfiniBand-transport device with one active Ethernet port, path MTU
#     1024 of 2048 (the veth's 1500 bytes less the RoCE headers), the
#     IPv4-mapped GID of ADDR_A as RoCE v2, xroce's QP limits (16 READs
#     answered, 128 in flight per QP);
#   - the port follows the link: with the peer down it is PORT_DOWN
#     (POLLING), then PORT_ACTIVE again;
#   - in namespace B, where nothing is attached, no device at all, although
#     VETH_A's pins are in the same bpffs: devices are per namespace.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
run=$BUILD/xroce-run

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ibverbs_devices "$run" "$BUILD/ibverbs/libibverbs.so.1" "$BUILD/xroce"
for prog in ibv_devices ibv_devinfo; do
	command -v "$prog" >/dev/null || fail "$prog is missing (ibverbs-utils)"
done

netns_pair ivd "$(e2e_subnet)" || fail "could not create the namespaces"
netns_attach "$NETNS_A:$VETH_A" || fail "xroce attach $VETH_A failed"
dev=xroce_$VETH_A

# ---- ibv_devices ---------------------------------------------------------

netns_exec "$NETNS_A" timeout 30 "$run" ibv_devices >"$logdir/devices" 2>&1 ||
	{ cat "$logdir/devices"; fail "ibv_devices failed"; }
cat "$logdir/devices"
mac=$(ip -n "$NETNS_A" -o link show "$VETH_A" | grep -oE 'link/ether [0-9a-f:]+' | awk '{ print $2 }')
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac"
guid=$(printf '%02x%s%sfffe%s%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" "$m3" "$m4" "$m5")
rows=$(awk 'NR > 2 { print $1, $2 }' "$logdir/devices")
[ "$rows" = "$dev $guid" ] ||
	fail "ibv_devices lists '$rows', expected exactly '$dev $guid' (MAC $mac)"
echo "ok   ibv_devices: $dev, node GUID $guid from MAC $mac"

# ---- ibv_devinfo -v --------------------------------------------------------

devinfo() {
	netns_exec "$NETNS_A" timeout 30 "$run" ibv_devinfo "$@" >"$logdir/devinfo" 2>&1 ||
		{ cat "$logdir/devinfo"; fail "ibv_devinfo $* failed"; }
}
# expect LABEL REGEX: a line of the last ibv_devinfo output matches.
expect() {
	grep -Eq "$2" "$logdir/devinfo" || { cat "$logdir/devinfo"; fail "ibv_devinfo: no $1 line ($2)"; }
}
devinfo -v
# shellcheck disable=SC2086 # the address's four numbers
v4_gid=$(printf '::ffff:%d.%d.%d.%d' ${ADDR_A//./ })
expect hca_id "^hca_id:[[:space:]]+$dev$"
expect transport "^[[:space:]]+transport:[[:space:]]+InfiniBand \(0\)$"
expect node_guid "^[[:space:]]+node_guid:[[:space:]]+${guid:0:4}:${guid:4:4}:${guid:8:4}:${guid:12:4}$"
expect phys_port_cnt "^[[:space:]]+phys_port_cnt:[[:space:]]+1$"
expect max_qp "^[[:space:]]+max_qp:[[:space:]]+1024$"
expect max_qp_wr "^[[:space:]]+max_qp_wr:[[:space:]]+[1-9][0-9]*$"
# Responder resources and initiator depth: perftest's client takes the
# server's max_qp_rd_atom as its depth, and rxe's is 128.
expect max_qp_rd_atom "^[[:space:]]+max_qp_rd_atom:[[:space:]]+16$"
expect max_qp_init_rd_atom "^[[:space:]]+max_qp_init_rd_atom:[[:space:]]+128$"
expect port "^[[:space:]]+port:[[:space:]]+1$"
expect state "^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$"
expect max_mtu "^[[:space:]]+max_mtu:[[:space:]]+2048 \(4\)$"
expect active_mtu "^[[:space:]]+active_mtu:[[:space:]]+1024 \(3\)$"
expect link_layer "^[[:space:]]+link_layer:[[:space:]]+Ethernet$"
expect phys_state "^[[:space:]]+phys_state:[[:space:]]+LINK_UP \(5\)$"
expect "IPv4 GID" "^[[:space:]]+GID\[ +[0-9]+\]:[[:space:]]+$v4_gid, RoCE v2$"
echo "ok   ibv_devinfo -v: $dev, port 1 active, Ethernet, MTU 1024 of 2048, $(grep -cE 'GID\[' "$logdir/devinfo") GIDs, $v4_gid among them"

devinfo -d "$dev"
expect hca_id "^hca_id:[[:space:]]+$dev$"
! netns_exec "$NETNS_A" timeout 30 "$run" ibv_devinfo -d "xroce_none$$" >"$logdir/none" 2>&1 ||
	fail "ibv_devinfo -d on a device that is not there succeeded"

# ---- the port follows the link ---------------------------------------------

ip -n "$NETNS_B" link set "$VETH_B" down || fail "could not take $VETH_B down"
devinfo -v
expect "state (peer down)" "^[[:space:]]+state:[[:space:]]+PORT_DOWN \(1\)$"
expect "phys_state (peer down)" "^[[:space:]]+phys_state:[[:space:]]+POLLING \(2\)$"
ip -n "$NETNS_B" link set "$VETH_B" up || fail "could not bring $VETH_B up"
# Carrier comes back within a moment of the peer's going up.
for _ in $(seq 50); do
	devinfo
	grep -Eq "state:[[:space:]]+PORT_ACTIVE" "$logdir/devinfo" && break
	sleep 0.1
done
expect "state (peer up again)" "^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$"
echo "ok   the port is PORT_DOWN (POLLING) while the peer is down, PORT_ACTIVE again after"

# ---- namespaces ------------------------------------------------------------

netns_exec "$NETNS_B" timeout 30 "$run" ibv_devices >"$logdir/devices-b" 2>&1 ||
	{ cat "$logdir/devices-b"; fail "ibv_devices in $NETNS_B failed"; }
[ -z "$(awk 'NR > 2' "$logdir/devices-b")" ] ||
	fail "ibv_devices lists in $NETNS_B, where nothing is attached: $(cat "$logdir/devices-b")"
echo "ok   in the other namespace, nothing attached there: no device"
echo "test_ibverbs_devices: PASS"
