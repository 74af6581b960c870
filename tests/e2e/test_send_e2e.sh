#!/usr/bin/env bash
# RC SEND end to end across a veth pair between two namespaces, through the
# real XDP program and AF_XDP: `xroce attach` on both ends, then send_e2e's
# server (receiver) and client (sender) run every case (sizes around the path
# MTU up to 1 MiB, immediate data, gather/scatter lists, unsignaled SENDs, a
# too-small receive on a second QP pair, a 10,000-message stream) and must
# both succeed. While still attached, ping and a TCP transfer (checksummed)
# must work across the same interface. Ends with both ends' xroce stats:
# no malformed-frame drops, and frames were redirected to AF_XDP.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/send_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))
tcp_port=$((roce_port + 1))
tcp_bytes=400000

fail() {
	echo "test_send_e2e: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for bin in "$e2e" "$xroce"; do
	[ -x "$bin" ] || fail "$bin is missing (make all)"
done
command -v python3 >/dev/null || fail "python3 is missing (TCP transfer check)"

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-send-e2e.XXXXXX)
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

netns_pair se2 "10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1))" || fail "could not create the namespaces"
why=$(netns_attach "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B") || fail "$why"

# ---- RoCE: every case, receiver in A, sender in B.
netns_run_pair "$logdir" 240 "$e2e" "$VETH_A" -p "$roce_port" -- \
	"$VETH_B" "$ADDR_A" -p "$roce_port" ||
	fail "send_e2e: $NETNS_PAIR_STATUS (124 = timed out)"
for side in server client; do
	grep -q "^\[$side\] path MTU 1024;" "$logdir/$side.log" ||
		fail "$side: path MTU is not 1024 with the veth's 1500-byte MTU"
	grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
		fail "$side: no PASS summary line"
done
echo "ok   send_e2e: every case passed on both sides"

# ---- Non-RoCE traffic while attached: XDP must pass it to the stack.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link show dev "${end#*:}" | grep -q "prog/xdp" ||
		fail "no XDP program on ${end#*:} any more after send_e2e"
done
netns_exec "$NETNS_B" ping -c 3 -i 0.2 -W 2 "$ADDR_A" >"$logdir/ping.log" 2>&1 ||
	{ cat "$logdir/ping.log"; fail "ping $ADDR_A across the attached veth failed"; }
echo "ok   ping -c 3 across the attached veth"

head -c "$tcp_bytes" /dev/urandom >"$logdir/tcp.in"
sent_sum=$(sha256sum <"$logdir/tcp.in" | cut -d' ' -f1)
netns_exec "$NETNS_A" timeout 30 python3 -c '
import hashlib, socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", int(sys.argv[1])))
srv.listen(1)
srv.settimeout(20)
conn, _ = srv.accept()
conn.settimeout(20)
digest, total = hashlib.sha256(), 0
while True:
    chunk = conn.recv(65536)
    if not chunk:
        break
    digest.update(chunk)
    total += len(chunk)
print(total, digest.hexdigest())
' "$tcp_port" >"$logdir/tcp.out" 2>&1 &
bg_pid=$!
netns_exec "$NETNS_B" timeout 30 python3 -c '
import socket, sys, time
deadline = time.monotonic() + 10
while True:
    try:
        conn = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
        break
    except ConnectionRefusedError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
with open(sys.argv[3], "rb") as f:
    conn.sendall(f.read())
conn.close()
' "$ADDR_A" "$tcp_port" "$logdir/tcp.in" >"$logdir/tcp-client.out" 2>&1 ||
	{ cat "$logdir/tcp-client.out"; fail "TCP sender failed"; }
tcp_status=0
wait "$bg_pid" || tcp_status=$?
bg_pid=""
[ "$tcp_status" -eq 0 ] || { cat "$logdir/tcp.out"; fail "TCP receiver failed (exit $tcp_status)"; }
[ "$(cat "$logdir/tcp.out")" = "$tcp_bytes $sent_sum" ] ||
	fail "TCP transfer: received '$(cat "$logdir/tcp.out")', sent '$tcp_bytes $sent_sum'"
echo "ok   TCP transfer of $tcp_bytes bytes, sha256 matches"

# ---- Counters of both ends.
netns_check_stats "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" >"$logdir/stats" || stats_ok=no
cat "$logdir/stats"
[ "${stats_ok:-yes}" = yes ] || fail "$(tail -n 1 "$logdir/stats")"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	value=$(netns_exec "${end%%:*}" "$xroce" stats "${end#*:}" | awk '$1 == "passed_non_roce" { print $2 }')
	[ -n "$value" ] && [ "$value" -gt 0 ] || fail "${end#*:}: passed_non_roce is '$value', expected > 0"
done
echo "ok   no malformed-frame drops; redirected and passed_non_roce > 0 on both ends"
echo "test_send_e2e: PASS"
