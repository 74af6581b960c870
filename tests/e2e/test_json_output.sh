#!/usr/bin/env bash
# xroce's --json output and stats --watch, checked with python3's json module
# (tests/e2e/json_check.py) across a veth pair between two namespaces, both
# ends attached:
#  - gids --json lists the IPv4-mapped GID of the address; an interface whose
#    name holds a quote, a backslash, a control byte and a byte that is not
#    UTF-8 comes back as the same name (the last as U+FFFD);
#  - status --json lists both ends with their ifindex; qps --json lists no QP;
#  - during a run of xroce-pingpong (MESSAGES 64-byte SENDs each way), qps
#    --json sampled on both ends shows the RC QP in RTS with its PSNs and MSN
#    advanced from the starting PSNs the tool printed, a congestion window
#    and a round-trip estimate (srtt_us) in some sample; afterwards, stats
#    --json shows redirected, engine rx_frames and tx_frames grown by at least
#    MESSAGES on each end and no malformed frame dropped; the QPs are gone;
#  - stats --watch 1 (text, ended by SIGINT) and --watch 0.5 --json (JSON
#    lines, ended by SIGTERM) ran through the traffic: at least 2 intervals
#    each, redirected moving, exit 0;
#  - a SEND larger than the receive buffer moves the responder's
#    inv_req_naks_tx and the requester's inv_req_naks_rx by exactly 1, and no
#    other NAK counter;
#  - every member name of every document is described in docs/json-output.md;
#  - a failing command prints an error and no half document.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce
messages=30000
doc=docs/json-output.md

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_json_output "$pingpong" "$xroce"
command -v python3 >/dev/null || fail "python3 is missing"
check() { python3 tests/e2e/json_check.py "$@"; }
x() { netns_exec "$1" "$xroce" "${@:2}"; }
watch_pid="" watch_json_pid=""
# Runs in the background, so that $! is timeout's PID: it hands signals on to xroce.
watch_in() {
	local ns=$1 out=$2
	shift 2
	nsenter --net="/var/run/netns/$ns" timeout 60 "$xroce" "$@" >"$out" 2>&1 &
}
stop_watches() {
	e2e_stop_pid "$watch_pid"
	e2e_stop_pid "$watch_json_pid"
}
trap 'stop_watches; e2e_cleanup' EXIT

netns_pair js "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
ifindex_a=$(ip -n "$NETNS_A" -o link show dev "$VETH_A" | cut -d: -f1)
ifindex_b=$(ip -n "$NETNS_B" -o link show dev "$VETH_B" | cut -d: -f1)

# ---- gids, status, qps on idle interfaces.
x "$NETNS_A" gids "$VETH_A" --json >"$logdir/gids.json" || fail "gids --json exited non-zero"
check gids "$logdir/gids.json" "$VETH_A" "$ADDR_A" || fail "gids --json"

weird=$'j"\\\x01\xff\xc3\xa9q'
ip -n "$NETNS_A" link add "$weird" type veth peer name jspeer &&
	ip -n "$NETNS_A" addr add 192.0.2.1/24 dev "$weird" &&
	ip -n "$NETNS_A" link set "$weird" up ||
	fail "cannot create an interface with a quote, backslash and control byte in its name"
x "$NETNS_A" gids "$weird" --json >"$logdir/gids-weird.json" || fail "gids --json of $weird"
check gids "$logdir/gids-weird.json" $'j"\\\x01\xef\xbf\xbd\xc3\xa9q' 192.0.2.1 ||
	fail "gids --json of a name that needs escaping"
echo "ok   gids --json: IPv4-mapped GIDs; a name with \", \\, \\x01, \\xff and é escaped"

status=0
x "$NETNS_A" status --json >"$logdir/status.json" 2>"$logdir/status.err" || status=$?
check status "$logdir/status.json" "$status" "$VETH_A:$ifindex_a" "$VETH_B:$ifindex_b" ||
	{ cat "$logdir/status.err"; fail "status --json"; }
x "$NETNS_A" qps "$VETH_A" --json >"$logdir/qps-idle.json" || fail "qps --json exited non-zero"
check qps-idle "$logdir/qps-idle.json" "$VETH_A" || fail "qps --json on an idle interface"
echo "ok   status --json lists both ends; qps --json lists no QP while idle"

for side in a b; do
	if [ $side = a ]; then ns=$NETNS_A dev=$VETH_A; else ns=$NETNS_B dev=$VETH_B; fi
	x "$ns" stats "$dev" --json >"$logdir/stats-before-$side.json" || fail "stats --json $dev"
	check stats "$logdir/stats-before-$side.json" "$dev" || fail "stats --json $dev"
done

# ---- Traffic, with qps sampled and stats watched on both ends.
netns_exec "$NETNS_A" timeout 120 "$pingpong" -d "$VETH_A" -g 1 -s 64 -n $messages \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
# The server's QP exists from before the client connects: wait for it.
for _ in $(seq 100); do
	x "$NETNS_A" qps "$VETH_A" --json >"$logdir/qps-wait.json" || fail "qps --json"
	[ "$(check qps-count "$logdir/qps-wait.json" "$VETH_A")" -gt 0 ] && break
	sleep 0.1
done
[ "$(check qps-count "$logdir/qps-wait.json" "$VETH_A")" -gt 0 ] ||
	{ e2e_show_logs; fail "the server's QP never showed in qps --json"; }

watch_in "$NETNS_A" "$logdir/watch.txt" stats "$VETH_A" --watch 1
watch_pid=$!
watch_in "$NETNS_B" "$logdir/watch.jsonl" stats "$VETH_B" --watch 0.5 --json
watch_json_pid=$!

netns_exec "$NETNS_B" timeout 120 "$pingpong" -d "$VETH_B" -g 1 -s 64 -n $messages "$ADDR_A" \
	>"$logdir/client.log" 2>&1 &
client_pid=$!
samples=0
while kill -0 "$client_pid" 2>/dev/null && [ $samples -lt 1000 ]; do
	x "$NETNS_A" qps "$VETH_A" --json >"$logdir/qps-a.$samples.json"
	x "$NETNS_B" qps "$VETH_B" --json >"$logdir/qps-b.$samples.json"
	samples=$((samples + 1))
	sleep 0.05
done
client_status=0 server_status=0
wait "$client_pid" || client_status=$?
client_pid=""
wait "$server_pid" || server_status=$?
server_pid=""
for side in server client; do
	grep -Eq "^$messages iters in [0-9.]+ seconds" "$logdir/$side.log" || {
		e2e_show_logs
		fail "pingpong: server exit $server_status, client exit $client_status"
	}
done
echo "ok   xroce-pingpong: $messages messages each way; $samples qps samples on each end"

# "  local address:  LID 0x0000, QPN 0x000011, PSN 0xf0ed1f, GID ..." -> "0x000011 0xf0ed1f"
address_of() {
	sed -n "s/^ *$2 address: .*QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\),.*/\1 \2/p" "$1"
}
read -r server_qpn server_psn <<<"$(address_of "$logdir/server.log" local)"
read -r client_qpn client_psn <<<"$(address_of "$logdir/client.log" local)"
[ -n "$server_psn" ] && [ -n "$client_psn" ] || { e2e_show_logs; fail "no QPN/PSN in the logs"; }
check qps-traffic "$VETH_A" "$server_qpn" "$client_qpn" "$server_psn" "$client_psn" $messages \
	"$logdir"/qps-a.*.json || fail "qps --json on the server's end"
check qps-traffic "$VETH_B" "$client_qpn" "$server_qpn" "$client_psn" "$server_psn" $messages \
	"$logdir"/qps-b.*.json || fail "qps --json on the client's end"
x "$NETNS_A" qps "$VETH_A" --json >"$logdir/qps-after.json" || fail "qps --json after the run"
check qps-idle "$logdir/qps-after.json" "$VETH_A" || fail "QPs still listed after the run"
echo "ok   qps --json showed each QP in RTS mid-traffic with PSNs advanced; gone afterwards"

for side in a b; do
	if [ $side = a ]; then ns=$NETNS_A dev=$VETH_A; else ns=$NETNS_B dev=$VETH_B; fi
	x "$ns" stats "$dev" --json >"$logdir/stats-after-$side.json" || fail "stats --json $dev"
	check moved "$logdir/stats-before-$side.json" "$logdir/stats-after-$side.json" "$dev" \
		$messages || fail "stats --json $dev after the traffic"
done
echo "ok   stats --json: redirected, rx_frames, tx_frames grew by >= $messages; no malformed drops"

# ---- The watches saw the whole run: end them once each has 2 intervals.
for _ in $(seq 100); do
	[ "$(grep -c '^interval [0-9]*, ' "$logdir/watch.txt")" -ge 2 ] &&
		[ "$(wc -l <"$logdir/watch.jsonl")" -ge 2 ] && break
	sleep 0.1
done
kill -INT "$watch_pid"
watch_status=0
wait "$watch_pid" || watch_status=$?
watch_pid=""
kill -TERM "$watch_json_pid"
watch_json_status=0
wait "$watch_json_pid" || watch_json_status=$?
watch_json_pid=""
[ "$watch_status" -eq 0 ] && [ "$watch_json_status" -eq 0 ] ||
	fail "watch exit $watch_status after SIGINT, --json watch exit $watch_json_status after SIGTERM"
head -n 1 "$logdir/watch.txt" | grep -q "^xroce stats $VETH_A every 1 s: " ||
	fail "stats --watch: no header line: $(head -n 1 "$logdir/watch.txt")"
intervals=$(grep -c '^interval [0-9]*, [0-9.]* s:' "$logdir/watch.txt")
[ "$intervals" -ge 2 ] || { cat "$logdir/watch.txt"; fail "stats --watch 1: $intervals intervals"; }
grep -Eq '^  redirected +[0-9.]+/s  \+[1-9][0-9]*$' "$logdir/watch.txt" ||
	{ cat "$logdir/watch.txt"; fail "stats --watch 1: redirected never moved"; }
check watch "$logdir/watch.jsonl" "$VETH_B" 2 || fail "stats --watch 0.5 --json"
echo "ok   stats --watch: $intervals text intervals ended by SIGINT, JSON lines ended by SIGTERM, exit 0"

# ---- NAKs by kind: a 4096-byte SEND into 1024-byte receives.
x "$NETNS_A" stats "$VETH_A" --json >"$logdir/naks-before-a.json" &&
	x "$NETNS_B" stats "$VETH_B" --json >"$logdir/naks-before-b.json" || fail "stats --json"
netns_exec "$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g 1 -s 1024 -n 1 \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
netns_exec "$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g 1 -s 4096 -n 1 "$ADDR_A" \
	>"$logdir/client.log" 2>&1
client_status=$?
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
grep -q "completion failed" "$logdir/server.log" && grep -q "completion failed" "$logdir/client.log" ||
	{ e2e_show_logs; fail "oversized SEND: server exit $server_status, client exit $client_status"; }
x "$NETNS_A" stats "$VETH_A" --json >"$logdir/naks-after-a.json" &&
	x "$NETNS_B" stats "$VETH_B" --json >"$logdir/naks-after-b.json" || fail "stats --json"
check naks "$logdir/naks-before-a.json" "$logdir/naks-after-a.json" "$VETH_A" inv_req_naks_tx &&
	check naks "$logdir/naks-before-b.json" "$logdir/naks-after-b.json" "$VETH_B" \
		inv_req_naks_rx || fail "NAK counters after an oversized SEND"
echo "ok   an invalid request NAK: +1 inv_req_naks_tx on the responder, +1 inv_req_naks_rx on the requester"

# ---- Every name is documented.
mid_traffic=$(grep -l '"state": "rts"' "$logdir"/qps-a.*.json | head -n 1)
check documented "$doc" "$logdir/gids.json" "$logdir/status.json" "$logdir/stats-after-a.json" \
	"$mid_traffic" "$logdir/watch.jsonl" || fail "undocumented member names"

# ---- Errors: a message on stderr, nothing on stdout.
for args in "stats nosuch0 --json" "qps nosuch0 --json" "gids nosuch0 --json" \
	"stats $VETH_A --watch 0" "stats $VETH_A --json --bogus"; do
	# shellcheck disable=SC2086 # the arguments are meant to be split
	x "$NETNS_A" $args >"$logdir/err.out" 2>"$logdir/err.txt" && fail "xroce $args exited 0"
	[ ! -s "$logdir/err.out" ] || fail "xroce $args printed on stdout: $(cat "$logdir/err.out")"
	grep -q "^xroce: " "$logdir/err.txt" || fail "xroce $args: no error message"
done
echo "ok   failing commands print one error on stderr and nothing on stdout"
echo "test_json_output: PASS"
