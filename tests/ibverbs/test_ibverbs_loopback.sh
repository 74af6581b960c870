#!/usr/bin/env bash
# Loopback: QPs of one device connected to each other through its own GID
# are served inside the engine, never on the wire.
#
# tests/ibverbs/loopback/loopback.c, built against Debian's -libverbs, runs
# under xroce-run on xroce_VETH_A alone: two RC QPs run every operation in
# both directions, a wrong rkey earns IBV_WC_REM_ACCESS_ERR, two UD QPs
# exchange a datagram through an AH to the device's own GID; it checks
# every completion and every byte, and must print its ok line and exit 0.
# Then: A's engine delivered the frames to itself (engine_loopback_frames
# at least one request and one response per operation), and no RoCE frame
# reached the other end (xroce is attached there too and counts every
# RoCEv2 frame it sees: all its counters but passed_non_roce stay 0).
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
# Two directions of 9 RC operations, each a request and an answer, and the datagram.
min_loopback_frames=37

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_loopback ivl ibverbs-utils ibv_devinfo

xroce=$(netns_xroce)
prog=$logdir/loopback
cc -std=gnu11 -Wall -Wextra -Werror -o "$prog" tests/ibverbs/loopback/loopback.c -libverbs ||
	fail "loopback.c does not build against <infiniband/verbs.h>"
netns_exec "$NETNS_A" timeout 60 "$run" "$prog" "xroce_$VETH_A" "$gid_a" >"$logdir/loopback.log" 2>&1 ||
	{ cat "$logdir/loopback.log"; fail "loopback exited $?"; }
grep -q "^loopback: ok:" "$logdir/loopback.log" ||
	{ cat "$logdir/loopback.log"; fail "no ok line"; }
sed 's/^/ok   /' "$logdir/loopback.log"

looped=$(e2e_stat "$NETNS_A" "$VETH_A" engine_loopback_frames)
[ "${looped:-0}" -ge "$min_loopback_frames" ] ||
	fail "engine_loopback_frames ${looped:-none}, want at least $min_loopback_frames"
echo "ok   $VETH_A's engine delivered $looped frames to itself"

ibverbs_no_roce_reached "$NETNS_B" "$VETH_B"
echo "test_ibverbs_loopback: PASS"
