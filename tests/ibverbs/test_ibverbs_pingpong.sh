#!/usr/bin/env bash
# Debian's unmodified ibv_rc_pingpong under xroce-run between two
# namespaces: the server on xroce_VETH_A, the client on xroce_VETH_B with
# the server's address, at the GID index of the IPv4-mapped GID as
# ibv_devinfo -v shows it. SENDs of 1 B, 4 KiB and 64 KiB (multi-packet),
# 100 round trips each, every run with --chk (each side checks the bytes
# it received), polling and sleeping on completion events (-e). Then a
# 4 KiB SEND into 1 KiB receive buffers must fail on both sides with an
# error completion, not pass or hang.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
run=$BUILD/xroce-run
iters=100
port=18515

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ibverbs_pingpong "$run" "$BUILD/ibverbs/libibverbs.so.1" "$BUILD/xroce"
command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong is missing (ibverbs-utils)"

netns_pair ivp "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# The index of NS's IPv4-mapped GID of ADDR, from ibv_devinfo -v on xroce_DEV.
v4_gid_index() {
	local ns=$1 dev=$2 addr=$3 gid
	# shellcheck disable=SC2086 # the address's four numbers
	gid=$(printf '::ffff:%d.%d.%d.%d' ${addr//./ })
	netns_exec "$ns" timeout 30 "$run" ibv_devinfo -v -d "xroce_$dev" |
		sed -nE "s/^[[:space:]]+GID\[ *([0-9]+)\]:[[:space:]]+$gid, RoCE v2$/\1/p"
}
gid_a=$(v4_gid_index "$NETNS_A" "$VETH_A" "$ADDR_A")
gid_b=$(v4_gid_index "$NETNS_B" "$VETH_B" "$ADDR_B")
[ -n "$gid_a" ] && [ -n "$gid_b" ] || fail "no IPv4-mapped GID in ibv_devinfo -v (A '$gid_a', B '$gid_b')"
echo "ok   IPv4-mapped GIDs at index $gid_a (A) and $gid_b (B)"

pingpong=ibv_rc_pingpong
PINGPONG_RUN=$run
PINGPONG_DEV_A=xroce_$VETH_A PINGPONG_DEV_B=xroce_$VETH_B
PINGPONG_GID_A=$gid_a PINGPONG_GID_B=$gid_b
PINGPONG_PORT=$port
PINGPONG_LOCAL_GID_SEP=", "
PINGPONG_GID_RE="::ffff:[0-9.]+"
# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh

for opts in "-s 1 --chk" "-s 4096 --chk" "-s 65536 --chk" "-s 1 -e --chk" "-s 4096 -e --chk" \
	"-s 65536 -e --chk"; do
	size=$(awk '{ print $2 }' <<<"$opts")
	run_pair "$opts" "$opts"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ] || ! check_output "$size"; then
		e2e_show_logs
		fail "$opts: server exit $server_status, client exit $client_status (124 = timed out)"
	fi
	echo "ok   $opts: $(grep 'usec/iter' "$logdir/client.log")"
done

run_pair "-s 1024" "-s 4096"
if [ "$server_status" -eq 0 ] || [ "$client_status" -eq 0 ] ||
	[ "$server_status" -eq 124 ] || [ "$client_status" -eq 124 ] ||
	! grep -q "Failed status" "$logdir/server.log" ||
	! grep -q "Failed status" "$logdir/client.log"; then
	e2e_show_logs
	fail "oversized SEND: server exit $server_status, client exit $client_status (both must fail with a failed completion)"
fi
echo "ok   a 4096-byte SEND into 1024-byte buffers fails on both sides:"
grep -h "Failed status" "$logdir/server.log" "$logdir/client.log" | sed 's/^/    /'
e2e_check_stats
echo "test_ibverbs_pingpong: PASS"
