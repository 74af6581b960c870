#!/usr/bin/env bash
# xroce on a veth pair whose MTU is 9000 before the attach: veth refuses a
# native XDP program that cannot take multi-buffer frames there, so this
# holds only while the program loads as xdp.frags. Then, through the
# attached program:
#   - RoCE works: write_bw and read_bw of 64 KiB messages complete at path
#     MTU 4096, on multi-buffer AF_XDP sockets (a full frame takes two
#     descriptors each way), and `xroce status` says so;
#   - TCP at MTU 9000 passes XDP intact: 8 MiB sent one way arrive with the
#     same SHA-256, in frames that averaged more than a page (so they did
#     carry fragments through XDP), and XDP counted no malformed RoCE.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
tcp_port=18871
tcp_bytes=$((8 << 20))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/perf_common.sh
source tests/e2e/perf_common.sh
e2e_init test_jumbo_attach "$perf" "$xroce"
command -v python3 >/dev/null || fail "python3 is missing (scripts/install-deps.sh)"

netns_pair jmb "$(e2e_subnet)" || fail "could not create the namespaces"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	ip -n "${end%%:*}" link set dev "${end#*:}" mtu 9000 ||
		fail "could not set MTU 9000 on ${end#*:}"
done
e2e_attach_both
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	netns_exec "${end%%:*}" "$xroce" status >"$logdir/status" 2>&1 ||
		fail "xroce status ${end#*:} failed: $(cat "$logdir/status")"
	awk -v dev="${end#*:}" '$1 == dev ":" && /mode native/ { ok = 1 } END { exit !ok }' "$logdir/status" ||
		fail "${end#*:} is not attached in native mode: $(cat "$logdir/status")"
done

# perf TEST: 64 KiB messages, server in A, client in B; the client's path MTU must be 4096.
perf() {
	local test=$1 mtu
	perf_status_line=$logdir/status_line
	perf_pair "$test" -x 1 -n 50 -s 65536
	perf_status_line=
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$test at MTU 9000: server exit $server_status, client exit $client_status"
	fi
	perf_result_ok "$logdir/client.log" 65536 bw 50 || {
		e2e_show_logs
		fail "$test at MTU 9000: no sane result line"
	}
	mtu=$(sed -n 's/^ Mtu *: \([0-9]*\)\[B\]/\1/p' "$logdir/client.log")
	[ "$mtu" = 4096 ] || fail "$test at MTU 9000: path MTU '$mtu', expected 4096"
	grep -q ", path MTU 4096 (multi-buffer sockets, frames up to 8192 bytes), queues 1, engines 1$" \
		"$logdir/status_line" || fail "xroce status during $test: '$(cat "$logdir/status_line")'"
	echo "ok: $test 64 KiB at interface MTU 9000, path MTU $mtu"
}
perf write_bw
perf read_bw

# TCP: the receiver prints the SHA-256 and byte count of what it got.
cat >"$logdir/tcp.py" <<'EOF'
import hashlib, random, socket, sys
role, addr, port, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if role == "sink":
    srv = socket.create_server((addr, port))
    srv.settimeout(20)
    conn, _ = srv.accept()
    conn.settimeout(20)
    h, n = hashlib.sha256(), 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
    print(h.hexdigest(), n)
else:
    data = random.Random(7).randbytes(size)
    with socket.create_connection((addr, port), timeout=20) as s:
        s.sendall(data)
    print(hashlib.sha256(data).hexdigest(), size)
EOF
rx_before=$(ip -n "$NETNS_A" -j -s link show dev "$VETH_A" |
	python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]["rx"]; print(s["bytes"], s["packets"])')
netns_exec "$NETNS_A" timeout 30 python3 "$logdir/tcp.py" sink "$ADDR_A" $tcp_port $tcp_bytes \
	>"$logdir/sink.out" 2>&1 &
server_pid=$!
e2e_wait_listening "$server_pid" $tcp_port || fail "the TCP sink never listened: $(cat "$logdir/sink.out")"
netns_exec "$NETNS_B" timeout 30 python3 "$logdir/tcp.py" source "$ADDR_A" $tcp_port $tcp_bytes \
	>"$logdir/source.out" 2>&1 || fail "TCP source failed: $(cat "$logdir/source.out")"
wait "$server_pid" || fail "TCP sink failed: $(cat "$logdir/sink.out")"
server_pid=""
[ "$(cat "$logdir/sink.out")" = "$(cat "$logdir/source.out")" ] ||
	fail "TCP at MTU 9000 arrived as '$(cat "$logdir/sink.out")', sent '$(cat "$logdir/source.out")'"
rx_after=$(ip -n "$NETNS_A" -j -s link show dev "$VETH_A" |
	python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]["rx"]; print(s["bytes"], s["packets"])')
read -r bytes0 packets0 <<<"$rx_before"
read -r bytes1 packets1 <<<"$rx_after"
average=$(((bytes1 - bytes0) / (packets1 - packets0 > 0 ? packets1 - packets0 : 1)))
[ "$average" -gt 4096 ] ||
	fail "TCP frames averaged $average bytes: none needed fragments at MTU 9000"
echo "ok: 8 MiB of TCP intact through XDP at MTU 9000 (frames averaged $average bytes)"

netns_check_stats "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B" >"$logdir/stats" ||
	fail "$(cat "$logdir/stats")"
[ "$(netns_stat "$NETNS_A" "$VETH_A" passed_non_roce)" -gt 0 ] ||
	fail "XDP on $VETH_A passed no non-RoCE frame: the TCP did not go through it"
echo "test_jumbo_attach: PASS"
