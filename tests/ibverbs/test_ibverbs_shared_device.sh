#!/usr/bin/env bash
# Two processes on one device: unmodified programs whose server and client
# both use xroce_VETH_A, as they would one RDMA NIC. The first to open the
# device owns it; the second shares it through the owner (user/lib/share.h),
# and their QPs, connected through the device's own GID, loop back inside
# the owner.
#   - ibv_rc_pingpong, server and client on xroce_VETH_A: 3000 B messages,
#     200 iterations, each side checking every byte it receives (-c);
#   - ib_write_bw, server and client on xroce_VETH_A: 64 KiB, 200 iterations.
# Every program must exit 0 with its result line (iterations and bytes as
# asked). Then: the owner passed at least one request and one ACK per
# pingpong message through (engine_relay_frames), and no RoCE frame reached
# the other end (xroce is attached there too and counts every RoCEv2 frame
# it sees: all its counters but passed_non_roce stay 0).
#   - Last, a guest on the wire: while an ib_write_bw server owns
#     xroce_VETH_A and waits, a second process on it runs ibv_rc_pingpong
#     against a server on xroce_VETH_B (its QP's frames pass XDP and the
#     owner both ways), then the waiting server's client comes; all pass,
#     and B's XDP steered the pingpong's frames to its engine.
#   - The owner goes: tests/ibverbs/shared/owner_gone.c holds xroce_VETH_A
#     as its owner while a second instance shares it with an RC QP and a
#     receive posted; the owner is killed with SIGKILL, and the sharer must
#     get IBV_EVENT_DEVICE_FATAL, its receive flushed (IBV_WC_WR_FLUSH_ERR),
#     its QP in ERR, and tear everything down cleanly.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
iters=200
port=18517
# Each pingpong message and its ACK pass the owner once (the client's messages
# going in, the server's coming out to the client).
min_relay_frames=$((2 * 2 * iters))

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_shared_device ivs perftest ibv_rc_pingpong ib_write_bw
xroce=$(netns_xroce)

# NAME SERVER-COMMAND... -- CLIENT-COMMAND...: both in NETNS_A under
# xroce-run, the client started once the server listens on $port; fails
# unless both exit 0.
run_on_one_device() {
	local name=$1
	shift
	e2e_server_then_client 60 "$port" "$NETNS_A" "$NETNS_A" "$@"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$name: server exit $server_status, client exit $client_status (124 = timed out)"
	fi
}

dev=xroce_$VETH_A
run_on_one_device ibv_rc_pingpong \
	"$run" ibv_rc_pingpong -d "$dev" -g "$gid_a" -p "$port" -s 3000 -n "$iters" -c -- \
	"$run" ibv_rc_pingpong -d "$dev" -g "$gid_a" -p "$port" -s 3000 -n "$iters" -c "$ADDR_A"
for side in server client; do
	grep -qE "^$((3000 * iters * 2)) bytes in [0-9.]+ seconds" "$logdir/$side.log" &&
		grep -qE "^$iters iters in [0-9.]+ seconds" "$logdir/$side.log" ||
		{ e2e_show_logs; fail "ibv_rc_pingpong $side: no result lines for $iters x 3000 B"; }
done
echo "ok   ibv_rc_pingpong on one device: $(grep -h "iters in" "$logdir/client.log")"

run_on_one_device ib_write_bw \
	"$run" ib_write_bw -d "$dev" -x "$gid_a" -F -p "$port" -n "$iters" -s 65536 -- \
	"$run" ib_write_bw -d "$dev" -x "$gid_a" -F -p "$port" -n "$iters" -s 65536 "$ADDR_A"
perftest_result_ok "$logdir/client.log" bw 65536 "$iters" ||
	{ e2e_show_logs; fail "ib_write_bw: no result line for 65536 B x $iters"; }
echo "ok   ib_write_bw on one device: $(awk '/^ *#bytes/ { getline; print; exit }' \
	"$logdir/client.log" | tr -s ' \t' ' ')"

relayed=$(e2e_stat "$NETNS_A" "$VETH_A" engine_relay_frames)
dropped=$(e2e_stat "$NETNS_A" "$VETH_A" engine_relay_drops)
[ "${relayed:-0}" -ge "$min_relay_frames" ] ||
	fail "engine_relay_frames ${relayed:-none}, want at least $min_relay_frames"
echo "ok   the owner passed $relayed frames between the processes (${dropped:-?} lost and sent again)"

ibverbs_no_roce_reached "$NETNS_B" "$VETH_B"

# The owner waits as server_pid, B's pingpong server runs as client_pid: the
# cleanup stops both on every exit path.
netns_exec "$NETNS_A" timeout 90 "$run" ib_write_bw -d "$dev" -x "$gid_a" -F -p "$port" \
	-n "$iters" -s 65536 >"$logdir/server.log" 2>&1 &
server_pid=$!
e2e_wait_listening "$server_pid" "$port" || { e2e_show_logs; fail "ib_write_bw never listened"; }
netns_exec "$NETNS_B" timeout 60 "$run" ibv_rc_pingpong -d "xroce_$VETH_B" -g "$gid_b" \
	-p "$((port + 1))" -s 3000 -n "$iters" -c >"$logdir/wire_server.log" 2>&1 &
client_pid=$!
e2e_wait_listening "$client_pid" "$((port + 1))" "$NETNS_B" ||
	{ cat "$logdir/wire_server.log"; fail "B's ibv_rc_pingpong never listened"; }
netns_exec "$NETNS_A" timeout 60 "$run" ibv_rc_pingpong -d "$dev" -g "$gid_a" -p "$((port + 1))" \
	-s 3000 -n "$iters" -c "$ADDR_B" >"$logdir/wire_client.log" 2>&1 ||
	{ cat "$logdir/wire_server.log" "$logdir/wire_client.log"; fail "the guest's pingpong with B failed"; }
wait "$client_pid" || { cat "$logdir/wire_server.log"; fail "B's ibv_rc_pingpong failed"; }
client_pid=""
grep -qE "^$iters iters in" "$logdir/wire_client.log" ||
	{ cat "$logdir/wire_client.log"; fail "the guest's pingpong printed no result"; }
echo "ok   a guest of xroce_$VETH_A with B: $(grep -h "iters in" "$logdir/wire_client.log")"
netns_exec "$NETNS_A" timeout 60 "$run" ib_write_bw -d "$dev" -x "$gid_a" -F -p "$port" \
	-n "$iters" -s 65536 "$ADDR_A" >"$logdir/client.log" 2>&1 ||
	{ e2e_show_logs; fail "the waiting ib_write_bw's client failed"; }
wait "$server_pid" || { e2e_show_logs; fail "the waiting ib_write_bw server failed"; }
server_pid=""
perftest_result_ok "$logdir/client.log" bw 65536 "$iters" ||
	{ e2e_show_logs; fail "the waiting ib_write_bw: no result line"; }
echo "ok   then the owner's own client: $(awk '/^ *#bytes/ { getline; print; exit }' \
	"$logdir/client.log" | tr -s ' \t' ' ')"
steered=$(e2e_stat "$NETNS_B" "$VETH_B" redirected)
[ "${steered:-0}" -ge "$((2 * iters))" ] ||
	fail "B's XDP steered ${steered:-no} frames to its engine, want at least $((2 * iters))"
echo "ok   B's XDP steered $steered frames of the guest's pingpong"

prog=$logdir/owner_gone
cc -std=gnu11 -Wall -Wextra -Werror -o "$prog" tests/ibverbs/shared/owner_gone.c -libverbs ||
	fail "owner_gone.c does not build against <infiniband/verbs.h>"
netns_exec "$NETNS_A" timeout 90 "$run" "$prog" hold "$dev" >"$logdir/hold.log" 2>&1 &
server_pid=$!
e2e_wait_for_line "$logdir/hold.log" '^owner_gone hold: pid [0-9]+$' "$server_pid" 20 ||
	{ cat "$logdir/hold.log"; fail "the owner did not open $dev"; }
netns_exec "$NETNS_A" timeout 60 "$run" "$prog" share "$dev" >"$logdir/share.log" 2>&1 &
client_pid=$!
e2e_wait_for_line "$logdir/share.log" '^owner_gone share: ready$' "$client_pid" 20 ||
	{ cat "$logdir/share.log"; fail "the sharer did not set up its QP"; }
kill -KILL "$(sed -En 's/^owner_gone hold: pid ([0-9]+)$/\1/p' "$logdir/hold.log")"
share_status=0
wait "$client_pid" || share_status=$?
client_pid=""
[ "$share_status" -eq 0 ] && grep -q "^owner_gone: ok:" "$logdir/share.log" ||
	{ cat "$logdir/share.log"; fail "the sharer of a killed owner exited $share_status"; }
echo "ok   the owner killed, its sharer: DEVICE_FATAL, receive flushed, QP in ERR ($(
	sed -n 's/^owner_gone: ok: //p' "$logdir/share.log"))"
echo "test_ibverbs_shared_device: PASS"
