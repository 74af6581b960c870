#!/usr/bin/env bash
# Debian's unmodified ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and
# ibv_srq_pingpong under xroce-run between two namespaces: the server on xroce_VETH_A, the
# client on xroce_VETH_B with the server's address, at the GID index of the
# IPv4-mapped GID as ibv_devinfo -v shows it. 100 round trips per run, every
# run with --chk (each side checks the bytes it received), polling and
# sleeping on completion events (-e):
#   - RC and UC: SENDs of 1 B, 4 KiB and 64 KiB (multi-packet);
#   - UD: datagrams of 1 B and 1024 B (the port MTU), each side sending
#     through an address handle (ibv_create_ah) made from the GID the other
#     side sent over TCP;
#   - SRQ: RC QPs sharing one receive queue per side (ibv_create_srq,
#     ibv_post_srq_recv): 16 QPs with 16 receives (the fewest it allows) of
#     4 KiB, 4 QPs with 64 KiB SENDs, 1 QP with 1 receive of 1 B, and 8 QPs
#     with -e; ibv_srq_pingpong counts the round trips over all QPs.
# Then a 4 KiB RC SEND into 1 KiB receive buffers must fail on both sides
# with an error completion, not pass or hang.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
iters=100
port=18515

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_pingpong ivp ibverbs-utils ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
	ibv_srq_pingpong
echo "ok   IPv4-mapped GIDs at index $gid_a (A) and $gid_b (B)"

PINGPONG_RUN=$run
PINGPONG_DEV_A=xroce_$VETH_A PINGPONG_DEV_B=xroce_$VETH_B
PINGPONG_GID_A=$gid_a PINGPONG_GID_B=$gid_b
PINGPONG_PORT=$port
PINGPONG_LOCAL_GID_SEP=", "
PINGPONG_GID_RE="::ffff:[0-9.]+"
# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh

# TOOL OPTS...: one run of each OPTS ("-s SIZE ..."), each must pass with the right totals.
pingpong_runs() {
	local opts
	pingpong=$1
	shift
	for opts in "$@"; do
		run_must_pass "$(awk '{ print $2 }' <<<"$opts")" "$opts"
		echo "ok   $pingpong $opts: $(grep 'usec/iter' "$logdir/client.log")"
	done
}

for tool in ibv_rc_pingpong ibv_uc_pingpong; do
	pingpong_runs "$tool" "-s 1 --chk" "-s 4096 --chk" "-s 65536 --chk" "-s 1 -e --chk" \
		"-s 4096 -e --chk" "-s 65536 -e --chk"
done
PINGPONG_LOCAL_GID_SEP=": "
pingpong_runs ibv_ud_pingpong "-s 1 --chk" "-s 1024 --chk" "-s 1 -e --chk" "-s 1024 -e --chk"
PINGPONG_LOCAL_GID_SEP=", "
pingpong_runs ibv_srq_pingpong "-s 4096 -q 16 -r 16 --chk" "-s 65536 -q 4 --chk" \
	"-s 1 -q 1 -r 1 --chk" "-s 4096 -q 8 -e --chk"

pingpong=ibv_rc_pingpong
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
