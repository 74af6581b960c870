#!/usr/bin/env bash
# An open device follows its interface's MAC. XDP binds a QP's frames to
# the MAC in its qp_table entry, so when the MAC changes (ip link set
# address) while a QP exists, the port monitor must republish it:
#   - xroce-pingpong's server in A creates its QP, then A's MAC changes;
#     the QP's entry, and QP1's, name the new MAC (bpftool dump of the
#     pinned qp_table);
#   - the client in B connects only then, to the new MAC, and the pingpong
#     passes on both sides with nothing dropped as drop_bad_dst.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce
iters=20

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_mac_change "$pingpong" "$xroce"

netns_pair xmc "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# The local_macs of the entries in use in IFNAME's qp_table (the QP's and
# QP1's), each once, one a line (aa:bb:...).
entry_macs() {
	bpftool -j map dump pinned "/sys/fs/bpf/xroce/$1/qp_table" | python3 -c '
import json, sys
for elem in json.load(sys.stdin):
    value = elem.get("formatted", elem)["value"]
    if value["state"]:
        print(":".join("%02x" % int(b, 0) if isinstance(b, str) else "%02x" % b
                       for b in value["local_mac"]))
' | sort -u
}

old_mac=$(ip -n "$NETNS_A" link show "$VETH_A" | awk '/link\/ether/ { print $2 }')
new_mac=$(printf '02:42:%02x:%02x:%02x:%02x' $((RANDOM % 256)) $((RANDOM % 256)) \
	$((RANDOM % 256)) $((RANDOM % 256)))

netns_exec "$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g 1 -n "$iters" \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
	[ "$(entry_macs "$VETH_A")" = "$old_mac" ] && break
	sleep 0.1
done
[ "$(entry_macs "$VETH_A")" = "$old_mac" ] ||
	fail "the server's QP entry does not name $old_mac: '$(entry_macs "$VETH_A")'"

ip -n "$NETNS_A" link set dev "$VETH_A" address "$new_mac" || fail "cannot change $VETH_A's MAC"
for _ in $(seq 100); do
	[ "$(entry_macs "$VETH_A")" = "$new_mac" ] && break
	sleep 0.1
done
[ "$(entry_macs "$VETH_A")" = "$new_mac" ] ||
	fail "after the change to $new_mac the QP's entry names '$(entry_macs "$VETH_A")'"
echo "ok   $VETH_A $old_mac -> $new_mac: the existing QP's entry names the new MAC"

client_status=0
netns_exec "$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g 1 -n "$iters" "$ADDR_A" \
	>"$logdir/client.log" 2>&1 || client_status=$?
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
	e2e_show_logs "after the MAC change"
	fail "pingpong after the MAC change: server exit $server_status, client exit $client_status"
fi
dropped=$(e2e_stat "$NETNS_A" "$VETH_A" drop_bad_dst)
[ "$dropped" = 0 ] || fail "$VETH_A: drop_bad_dst is '$dropped' after the MAC change"
echo "ok   pingpong connected after the change passes, nothing dropped as drop_bad_dst"
echo "test_mac_change: PASS"
