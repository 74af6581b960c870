#!/usr/bin/env bash
# xroce in generic XDP mode end to end: `xroce attach --mode generic` on both
# ends of a veth pair between two namespaces (ip link must show xdpgeneric,
# status "mode generic"), then send_e2e's and rdma_e2e's every case must
# pass, each moving the redirected counter of both ends (frames went through
# the generic hook to AF_XDP sockets bound in copy mode) and leaving no
# malformed-frame drops; ACKs are absorbed in XDP as in native mode.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
send_e2e=$BUILD/tests/send_e2e
rdma_e2e=$BUILD/tests/rdma_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_generic_e2e "$send_e2e" "$rdma_e2e" "$xroce"

netns_pair st3 "$(e2e_subnet)" || fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ns=${end%%:*} dev=${end#*:}
	out=$(netns_exec "$ns" "$xroce" attach --mode generic "$dev" 2>&1) ||
		fail "attach --mode generic $dev: $out"
	ip -n "$ns" link show dev "$dev" | grep -q " xdpgeneric " ||
		fail "no generic XDP on $dev: $(ip -n "$ns" link show dev "$dev")"
	netns_exec "$ns" "$xroce" status | grep -q "^$dev: .*, mode generic, " ||
		fail "status does not say mode generic for $dev"
done
echo "ok   attached in generic mode on both ends"

# counter NS DEV NAME: NAME's value in `xroce stats DEV`.
counter() {
	netns_exec "$1" "$xroce" stats "$2" | awk -v c="$3" '$1 == c { print $2 }'
}

declare -A before
for e2e in "$send_e2e" "$rdma_e2e"; do
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		before[$end]=$(counter "${end%%:*}" "${end#*:}" redirected)
	done
	e2e_run_cases 240
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		now=$(counter "${end%%:*}" "${end#*:}" redirected)
		[ "$now" -gt "${before[$end]}" ] ||
			fail "$(basename "$e2e"): redirected on ${end#*:} stayed at $now"
	done
	echo "ok   $(basename "$e2e"): redirected moved on both ends"
done
e2e_check_stats
absorbed=$(counter "$NETNS_B" "$VETH_B" acks_absorbed)
[ "$absorbed" -gt 0 ] || fail "no ACK absorbed in generic XDP on $VETH_B"
echo "ok   no malformed-frame drops; $absorbed ACKs absorbed in XDP on $VETH_B"
echo "test_generic_e2e: PASS"
