#!/usr/bin/env bash
# Asynchronous events end to end, between two namespaces through XDP and
# AF_XDP: async_e2e on each end (two RC QPs, QP 1 on an SRQ), driven by this
# script (tests/e2e/members.sh). End A waits in epoll on its async fd; each
# event kind that can be provoked here must wake it, be the right event about
# the right object, and nothing may come before its cause or twice:
#   - COMM_EST: the first SEND to each QP in RTR, once per QP;
#   - SRQ_LIMIT_REACHED: once the SRQ holds fewer receives than the armed
#     limit, once, then disarmed;
#   - xr_get_async_event on an empty non-blocking fd: EAGAIN;
#   - SQ_DRAINED: RTS -> SQD with a SEND in flight, once it is acknowledged;
#   - PORT_ERR / PORT_ACTIVE: `ip link set dev A down`, then up;
#   - GID_CHANGE: an address added (a new GID at the end, the other indexes
#     unchanged), removed (its entry empty, the others unchanged), another
#     added (it takes the empty entry);
#   - QP_LAST_WQE_REACHED: the SRQ's QP moved to ERR by the application
#     (and no QP_FATAL for that);
#   - QP_FATAL: B gone, A's SEND exhausts its retries.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/async_e2e
xroce=$BUILD/xroce

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_async_e2e "$e2e" "$xroce"
# shellcheck source=tests/e2e/members.sh
source tests/e2e/members.sh
trap 'member_stop_all; e2e_cleanup' EXIT

subnet=$(e2e_subnet)
netns_pair asy "$subnet" || fail "could not create the namespaces"
e2e_attach_both

member_start a "$NETNS_A" "$e2e" "$VETH_A"
read -r ready_a qa0 qa1 gid_a <<<"$REPLY"
member_start b "$NETNS_B" "$e2e" "$VETH_B"
read -r ready_b qb0 qb1 gid_b <<<"$REPLY"
[ "$ready_a $ready_b" = "ready ready" ] || fail "the ends did not start"

member_ask a "rtr $qb0 $qb1 $gid_b"
member_ask b "rtr $qa0 $qa1 $gid_a"
member_ask b rts
member_ask a "quiet 300"
member_ask a "recv 0 4"
member_ask a "recv 1 4"
member_ask b "send 0"
member_ask a "expect COMM_EST 3000" "ok COMM_EST qp 0"
member_ask b "send 0"
member_ask a "quiet 300"
echo "ok   COMM_EST: once, for QP 0's first packet in RTR"

member_ask a "arm 3"
member_ask b "send 1"
member_ask a "expect COMM_EST 3000" "ok COMM_EST qp 1"
member_ask a "quiet 300" # 3 receives left: not below the limit
member_ask b "send 1"
member_ask a "expect SRQ_LIMIT_REACHED 3000" "ok SRQ_LIMIT_REACHED"
member_ask b "send 1"
member_ask a "quiet 300"
member_ask a rts
member_ask a empty
echo "ok   SRQ_LIMIT_REACHED once when 2 of 4 were left (limit 3), disarmed after; EAGAIN when empty"

member_ask b "recv 0 4"
member_ask a "send 0"
member_ask a "sqd 0"
member_ask a "expect SQ_DRAINED 3000" "ok SQ_DRAINED qp 0"
member_ask a "quiet 300"
member_ask a "resume 0"
echo "ok   SQ_DRAINED once QP 0's SEND in flight when it entered SQD was acknowledged"

ip -n "$NETNS_A" link set "$VETH_A" down || fail "link down"
member_ask a "expect PORT_ERR 3000" "ok PORT_ERR"
ip -n "$NETNS_A" link set "$VETH_A" up || fail "link up"
member_ask a "expect PORT_ACTIVE 3000" "ok PORT_ACTIVE"
member_ask a "quiet 300"
echo "ok   PORT_ERR on link down, PORT_ACTIVE on link up"

member_ask a gids
before=${REPLY#ok gids}
next=$(wc -w <<<"$before")
ip -n "$NETNS_A" addr add "$subnet.9/24" dev "$VETH_A" || fail "addr add"
member_ask a "expect GID_CHANGE 3000" "ok GID_CHANGE"
member_ask a gids "ok gids$before $next=::ffff:$subnet.9"
ip -n "$NETNS_A" addr del "$subnet.9/24" dev "$VETH_A" || fail "addr del"
member_ask a "expect GID_CHANGE 3000" "ok GID_CHANGE"
member_ask a gids "ok gids$before $next=-"
ip -n "$NETNS_A" addr add "$subnet.10/24" dev "$VETH_A" || fail "addr add"
member_ask a "expect GID_CHANGE 3000" "ok GID_CHANGE"
member_ask a gids "ok gids$before $next=::ffff:$subnet.10"
member_ask a "quiet 300"
echo "ok   GID_CHANGE for each address added or removed; the other entries kept their indexes"

member_ask a "err 1"
member_ask a "expect QP_LAST_WQE_REACHED 3000" "ok QP_LAST_WQE_REACHED qp 1"
member_ask a "quiet 300"
echo "ok   QP_LAST_WQE_REACHED when the SRQ's QP was moved to ERR, and no QP_FATAL"

member_quit b
member_ask a "send 0"
member_ask a "expect QP_FATAL 5000" "ok QP_FATAL qp 0"
member_ask a "quiet 300"
echo "ok   QP_FATAL once the peer was gone and the SEND's retries ran out"
member_quit a
echo "test_async_e2e: PASS"
