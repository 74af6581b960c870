#!/usr/bin/env bash
# libxroce's rtnetlink module against the kernel, through netlink_probe:
# interface facts, the GID table in rxe's order, neighbour resolution from
# an empty cache, failure for an address nobody has, and a missing interface.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
probe=$BUILD/tests/netlink_probe

suffix=$$$RANDOM
ns1=xrnl1-$suffix ns2=xrnl2-$suffix
if1=xrnla$suffix if2=xrnlb$suffix
if1=${if1:0:15} if2=${if2:0:15}
net=$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))
addr1=10.$net.1 addr1b=10.$((${net%%.*} + 1)).${net#*.}.1 addr2=10.$net.2
addr6=fd00:${net/./:}::1 addr6_peer=fd00:${net/./:}::2
nobody=10.$net.77

cleanup() {
	ip netns del "$ns1" 2>/dev/null
	ip netns del "$ns2" 2>/dev/null
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

[ -x "$probe" ] || fail "$probe not built (make $BUILD/tests/netlink_probe)"

ip netns add "$ns1" && ip netns add "$ns2" || fail "cannot create namespaces"
ip link add "$if1" netns "$ns1" type veth peer name "$if2" netns "$ns2" || fail "cannot create veth"
ip -n "$ns1" link set "$if1" up
ip -n "$ns2" link set "$if2" up
ip -n "$ns1" addr add "$addr1/24" dev "$if1"
ip -n "$ns1" addr add "$addr1b/24" dev "$if1"
ip -n "$ns1" addr add "$addr6/64" dev "$if1" nodad
ip -n "$ns2" addr add "$addr2/24" dev "$if2"
ip -n "$ns2" addr add "$addr6_peer/64" dev "$if2" nodad

in_ns1() {
	ip netns exec "$ns1" "$@"
}

mac_of() { # NS IFNAME
	ip -n "$1" link show "$2" | awk '/link\/ether/ { print $2 }'
}

# fe80::/64 + modified EUI-64, written out as eight 4-digit groups.
eui64_gid() {
	local b
	IFS=: read -ra b <<<"$1"
	printf 'fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s\n' $((0x${b[0]} ^ 2)) "${b[1]}" \
		"${b[2]}" "${b[3]}" "${b[4]}" "${b[5]}"
}

v4mapped_gid() {
	local o
	IFS=. read -ra o <<<"$1"
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "${o[@]}"
}

v6_full() {
	python3 -c 'import ipaddress, sys; print(ipaddress.IPv6Address(sys.argv[1]).exploded)' "$1"
}

mac1=$(mac_of "$ns1" "$if1")
mac2=$(mac_of "$ns2" "$if2")
[ -n "$mac1" ] && [ -n "$mac2" ] || fail "cannot read the veth MACs"

# --- interface facts and GID table ---
out=$(in_ns1 "$probe" "$if1") || fail "netlink_probe $if1 failed: $out"
field() {
	awk -v k="$1" '$1 == k { print $2 }' <<<"$out"
}
[ "$(field ifindex)" = "$(ip -n "$ns1" -o link show "$if1" | cut -d: -f1)" ] ||
	fail "ifindex $(field ifindex) differs from ip link's"
[ "$(field mac)" = "$mac1" ] || fail "mac $(field mac), expected $mac1"
[ "$(field mtu)" = 1500 ] || fail "mtu $(field mtu), expected 1500"
queues=$(ip netns exec "$ns1" sh -c "ls -d /sys/class/net/$if1/queues/rx-* | wc -l")
[ "$(field queues)" = "$queues" ] || fail "queues $(field queues), expected $queues"

expected=$(
	echo "gid 0 $(eui64_gid "$mac1")"
	echo "gid 1 $(v4mapped_gid "$addr1")"
	echo "gid 2 $(v4mapped_gid "$addr1b")"
	echo "gid 3 $(v6_full "$addr6")"
)
gids=$(grep '^gid ' <<<"$out")
[ "$gids" = "$expected" ] || fail "GID table:
$gids
expected:
$expected"

# rxe's own table for this MAC (rxe-peer README): the U/L bit flips from 1 to 0.
in_ns1 ip link set "$if1" address 52:54:00:77:00:01 || fail "cannot set the MAC"
out=$(in_ns1 "$probe" "$if1") || fail "netlink_probe $if1 failed: $out"
gid0=$(awk '$1 == "gid" && $2 == 0 { print $3 }' <<<"$out")
[ "$gid0" = fe80:0000:0000:0000:5054:00ff:fe77:0001 ] || fail "gid 0 for 52:54:00:77:00:01 is $gid0"

# --- neighbour resolution from an empty cache ---
in_ns1 ip neigh flush dev "$if1"
in_ns1 ip -6 neigh flush dev "$if1"
[ -z "$(in_ns1 ip neigh show "$addr2" dev "$if1")" ] || fail "neighbour cache not empty"
out=$(in_ns1 "$probe" "$if1" resolve "$addr2") || fail "resolving $addr2 failed: $out"
[ "$out" = "neigh $mac2" ] || fail "resolved $addr2 to '$out', expected $mac2"
out=$(in_ns1 "$probe" "$if1" resolve "$addr6_peer") || fail "resolving $addr6_peer failed: $out"
[ "$out" = "neigh $mac2" ] || fail "resolved $addr6_peer to '$out', expected $mac2"

# --- an address nobody has: fails within the probe's 3 s timeout ---
start=$(date +%s%N)
if out=$(in_ns1 "$probe" "$if1" resolve "$nobody" 2>&1); then
	fail "resolving $nobody succeeded: $out"
fi
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$elapsed_ms" -lt 4500 ] || fail "resolving $nobody took ${elapsed_ms} ms"
grep -q "No route to host" <<<"$out" || fail "unexpected error for $nobody: $out"

# --- a missing interface ---
if out=$(in_ns1 "$probe" "nope$suffix" 2>&1); then
	fail "netlink_probe on a missing interface succeeded"
fi
grep -q "No such device" <<<"$out" || fail "unclear error for a missing interface: $out"

echo "netlink: link, GID table, neighbour resolution OK"
