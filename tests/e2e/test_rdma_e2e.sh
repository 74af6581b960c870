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
bg_pid=""
cleanup() {
	if [ -n "$bg_pid" ]; then
		kill "$bg_pid" 2>/dev/null
		wait "$bg_pid" 2>/dev/null
	fi
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_pair rde "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" || fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" attach "${end#*:}" >/dev/null || fail "xroce attach ${end#*:} failed"
done

# Target in A, initiator in B.
netns_exec "$NETNS_A" timeout 180 "$e2e" server "$VETH_A" -p "$roce_port" >"$logdir/server.log" 2>&1 &
bg_pid=$!
client_status=0
netns_exec "$NETNS_B" timeout 180 "$e2e" client "$VETH_B" "$ADDR_A" -p "$roce_port" \
	>"$logdir/client.log" 2>&1 || client_status=$?
server_status=0
wait "$bg_pid" || server_status=$?
bg_pid=""
for side in server client; do
	echo "--- $side:"
	sed 's/^/    /' "$logdir/$side.log"
done
[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ] ||
	fail "rdma_e2e: server exit $server_status, client exit $client_status (124 = timed out)"
for side in server client; do
	grep -q "^\[$side\] path MTU 1024;" "$logdir/$side.log" ||
		fail "$side: path MTU is not 1024 with the veth's 1500-byte MTU"
	grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
		fail "$side: no PASS summary line"
done
echo "ok   rdma_e2e: every case passed on both sides"

for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	dev=${end#*:}
	stats=$(netns_exec "${end%%:*}" "$xroce" stats "$dev") || fail "xroce stats $dev failed"
	echo "--- xroce stats $dev:"
	sed 's/^/    /' <<<"$stats"
	for counter in drop_truncated drop_bad_tver drop_bad_opcode drop_bad_length; do
		value=$(awk -v c="$counter" '$1 == c { print $2 }' <<<"$stats")
		[ "$value" = 0 ] || fail "$dev: $counter is '$value', expected 0"
	done
	value=$(awk '$1 == "redirected" { print $2 }' <<<"$stats")
	[ -n "$value" ] && [ "$value" -gt 0 ] || fail "$dev: redirected is '$value', expected > 0"
done
echo "ok   no malformed-frame drops; frames redirected on both ends"
echo "test_rdma_e2e: PASS"
