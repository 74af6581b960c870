#!/usr/bin/env bash
# RDMA WRITE, WRITE with immediate, READ and atomics end to end across a veth
# pair between two namespaces, through the real XDP program and AF_XDP:
# `xroce attach` on both ends, then rdma_e2e's server (the target, which
# exposes its memory regions) and client (the initiator) run every case:
# WRITE / WRITE_IMM / READ at 0, 1, MTU, MTU+1 bytes and 1 MiB, 8 READs
# outstanding at once, CAS hit and miss, FAA, and the access errors, each on
# a fresh QP pair. Both must pass. Ends with both ends' xroce stats: no
# malformed-frame drops, and frames were redirected to AF_XDP.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/rdma_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

fail() {
	echo "test_rdma_e2e: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for bin in "$e2e" "$xroce"; do
	[ -x "$bin" ] || fail "$bin is missing (make all)"
done

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-rdma-e2e.XXXXXX)
cleanup() {
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_pair rde "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" || fail "could not create the namespaces"
why=$(netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B") || fail "$why"

# Target in A, initiator in B.
netns_run_pair "$logdir" 180 "$e2e" "$VETH_A" -p "$roce_port" -- \
	"$VETH_B" "$ADDR_A" -p "$roce_port" ||
	fail "rdma_e2e: $NETNS_PAIR_STATUS (124 = timed out)"
for side in server client; do
	grep -q "^\[$side\] path MTU 1024;" "$logdir/$side.log" ||
		fail "$side: path MTU is not 1024 with the veth's 1500-byte MTU"
	grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
		fail "$side: no PASS summary line"
done
echo "ok   rdma_e2e: every case passed on both sides"

netns_check_stats "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" >"$logdir/stats" || stats_ok=no
cat "$logdir/stats"
[ "${stats_ok:-yes}" = yes ] || fail "$(tail -n 1 "$logdir/stats")"
echo "ok   no malformed-frame drops; frames redirected on both ends"
echo "test_rdma_e2e: PASS"
