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

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_send_e2e "$e2e" "$xroce"
command -v python3 >/dev/null || fail "python3 is missing (TCP transfer check)"

netns_pair se2 "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# ---- RoCE: every case, receiver in A, sender in B.
e2e_run_cases 240

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
server_pid=$!
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
wait "$server_pid" || tcp_status=$?
server_pid=""
[ "$tcp_status" -eq 0 ] || { cat "$logdir/tcp.out"; fail "TCP receiver failed (exit $tcp_status)"; }
[ "$(cat "$logdir/tcp.out")" = "$tcp_bytes $sent_sum" ] ||
	fail "TCP transfer: received '$(cat "$logdir/tcp.out")', sent '$tcp_bytes $sent_sum'"
echo "ok   TCP transfer of $tcp_bytes bytes, sha256 matches"

# ---- Counters of both ends.
e2e_check_stats
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	value=$(netns_exec "${end%%:*}" "$xroce" stats "${end#*:}" | awk '$1 == "passed_non_roce" { print $2 }')
	[ -n "$value" ] && [ "$value" -gt 0 ] || fail "${end#*:}: passed_non_roce is '$value', expected > 0"
done
echo "ok   no malformed-frame drops; redirected and passed_non_roce > 0 on both ends"
echo "test_send_e2e: PASS"
