#!/usr/bin/env bash
# Restarting is immediate and safe. Across a veth pair between two
# namespaces, with reopen_loop (tests/e2e/reopen_loop.c):
#  1. both sides open their device, connect an RC QP, RDMA WRITE and SEND
#     (checked byte for byte), close everything and go round again at once,
#     200 times: every reopen succeeds, though the kernel releases the
#     previous AF_XDP socket's queue asynchronously;
#  2. a process holding the device with QPs in RTS is killed with SIGKILL
#     and its successor starts at once, without waiting for it to be reaped:
#     it opens the device (within xr_open_device's bound), finds none of the
#     dead owner's QPs in the shared QP table, and serves a client;
#  3. while that successor lives, 15 xroce-pingpong servers on the same
#     interface share its device (user/lib/share.h), each QP of theirs in
#     the shared QP table; a 16th process (xroce-perf) fails at once, naming
#     the successor's pid; the 15 are killed with SIGKILL and their QPs
#     leave the table; the successor still serves a client after all that;
#  4. a clean close leaves no lock file behind.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
loop=$BUILD/tests/reopen_loop
pingpong=$BUILD/xroce-pingpong
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))
iterations=200
hold_qps=3
lock_dir=/run/xroce
# xr_open_device's bound (XR_OPEN_WAIT_MS); a full owner must be reported well before it.
open_wait_ms=5000
live_holder_report_ms=3000
# The processes an owner shares its device with (XR_SHARE_MAX_GUESTS).
max_guests=15

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_restart "$loop" "$pingpong" "$perf" "$xroce"
hold_pid=""
guest_pids=()
trap 'for p in "${guest_pids[@]}"; do pkill -KILL -P "$p"; done; e2e_stop_pid "$hold_pid"; e2e_cleanup' EXIT

netns_pair rs "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# QPs in VETH_A's shared QP table, as `xroce qps` lists them.
qps_on_a() {
	netns_exec "$NETNS_A" "$xroce" qps "$VETH_A" | grep -c '^0x'
}

# One client iteration against the server in A; first iteration number $1.
run_client() {
	netns_exec "$NETNS_B" timeout 60 "$loop" client "$VETH_B" "$ADDR_A" -p "$roce_port" \
		-n 1 -f "$1" >"$logdir/client.log" 2>&1 &&
		grep -q '^\[client\] PASS: 1 iterations' "$logdir/client.log"
}

# ---- 1. 200 reopens in a row on both sides, each with a WRITE and a SEND.
netns_run_pair "$logdir" 240 "$loop" "$VETH_A" -p "$roce_port" -n "$iterations" -- \
	"$VETH_B" "$ADDR_A" -p "$roce_port" -n "$iterations" ||
	fail "$iterations reopens: $NETNS_PAIR_STATUS (124 = timed out)"
for side in server client; do
	grep -Eq "^\[$side\] PASS: $iterations iterations; device opened $iterations times" \
		"$logdir/$side.log" || fail "$side: no PASS line for $iterations iterations"
done
echo "ok   $iterations reopens in a row on each side, a WRITE and a SEND checked in each"
for dev in "$VETH_A" "$VETH_B"; do
	[ ! -e "$lock_dir/$dev.lock" ] || fail "$lock_dir/$dev.lock left behind after clean closes"
done
echo "ok   no lock file left after clean closes"

# ---- 2. The owner is killed with SIGKILL; its successor starts at once.
netns_exec "$NETNS_A" "$loop" hold "$VETH_A" "$ADDR_B" -q "$hold_qps" >"$logdir/hold.log" 2>&1 &
hold_pid=$!
e2e_wait_for_line "$logdir/hold.log" "^\[hold\] pid [0-9]+: $hold_qps QPs in RTS$" "$hold_pid" 20 ||
	{ cat "$logdir/hold.log"; fail "the holder did not bring up its QPs"; }
holder=$(sed -En 's/^\[hold\] pid ([0-9]+): .*/\1/p' "$logdir/hold.log")
[ "$(qps_on_a)" -eq "$hold_qps" ] || fail "the holder's $hold_qps QPs are not in the QP table"
[ "$(cat "$lock_dir/$VETH_A.lock")" = "$holder" ] ||
	fail "$lock_dir/$VETH_A.lock does not hold the holder's pid $holder"

kill -KILL "$holder"
netns_exec "$NETNS_A" timeout 120 "$loop" server "$VETH_A" -p "$roce_port" -n 2 -k \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
hold_status=0
wait "$hold_pid" || hold_status=$?
hold_pid=""
[ "$hold_status" -eq 137 ] || fail "the holder exited with $hold_status, not by SIGKILL"
e2e_wait_for_line "$logdir/server.log" '^\[server\] pid [0-9]+: device open in' "$server_pid" 20 ||
	{ e2e_show_logs; fail "the successor could not open the device after SIGKILL"; }
successor=$(sed -En 's/^\[server\] pid ([0-9]+): device open in ([0-9.]+) ms$/\1/p' "$logdir/server.log")
open_ms=$(sed -En 's/^\[server\] pid ([0-9]+): device open in ([0-9.]+) ms$/\2/p' "$logdir/server.log")
[ -n "$successor" ] || fail "no pid in the successor's line: $(cat "$logdir/server.log")"
awk -v ms="$open_ms" -v max="$open_wait_ms" 'BEGIN { exit !(ms < max) }' ||
	fail "the successor took $open_ms ms to open the device (bound $open_wait_ms ms)"
[ "$(qps_on_a)" -eq 0 ] || fail "the killed holder's QPs are still in the QP table: $(netns_exec "$NETNS_A" "$xroce" qps "$VETH_A")"
echo "ok   successor of a SIGKILLed owner opened the device in $open_ms ms; none of the $hold_qps dead QPs left"
run_client 0 || { e2e_show_logs; fail "the successor did not serve a client"; }
echo "ok   the successor served a WRITE and a SEND"

# ---- 3. A live owner: 15 more processes share its device, a 16th is refused at once.
[ "$(cat "$lock_dir/$VETH_A.lock")" = "$successor" ] ||
	fail "$lock_dir/$VETH_A.lock does not hold the owner's pid $successor"
qps_before=$(qps_on_a)
for i in $(seq "$max_guests"); do
	# No timeout(1) between: SIGKILL must reach the sharer (it gives up after 60 s).
	netns_exec "$NETNS_A" "$pingpong" -d "$VETH_A" -g 1 -p $((roce_port + 10 + i)) \
		>"$logdir/guest$i.log" 2>&1 &
	guest_pids+=("$!")
done
for i in $(seq "$max_guests"); do
	e2e_wait_listening "${guest_pids[i - 1]}" $((roce_port + 10 + i)) ||
		{ cat "$logdir/guest$i.log"; fail "sharer $i did not open the device and listen"; }
done
[ "$(qps_on_a)" -eq $((qps_before + max_guests)) ] ||
	fail "$max_guests sharers with a QP each: $(qps_on_a) QPs in the table, want $((qps_before + max_guests))"
echo "ok   $max_guests processes share the owner's device, their QPs in its table"
expected="couldn't open the xroce device of $VETH_A: process $successor owns it and takes no more processes"
start=$(now_ms)
status=0
netns_exec "$NETNS_A" timeout 20 "$perf" write_bw -d "$VETH_A" -p $((roce_port + 1)) \
	>"$logdir/intruder.log" 2>&1 || status=$?
elapsed=$(($(now_ms) - start))
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
	cat "$logdir/intruder.log"
	fail "xroce-perf as a 16th sharer: exit $status, expected a failure"
fi
grep -qF "xroce-perf: $expected" "$logdir/intruder.log" ||
	{ cat "$logdir/intruder.log"; fail "xroce-perf does not name the owner $successor"; }
[ "$elapsed" -lt "$live_holder_report_ms" ] ||
	fail "xroce-perf took $elapsed ms to report the full owner (expected < $live_holder_report_ms)"
echo "ok   a 16th process fails in $elapsed ms: $(grep -F "$expected" "$logdir/intruder.log")"
# The sharers themselves, children of the nsenter each job is; quietly, as
# the shell would report each job killed.
{
	for pid in "${guest_pids[@]}"; do
		pkill -KILL -P "$pid"
	done
	for pid in "${guest_pids[@]}"; do
		wait "$pid"
	done
} 2>/dev/null
guest_pids=()
for _ in $(seq 100); do
	[ "$(qps_on_a)" -eq "$qps_before" ] && break
	sleep 0.05
done
[ "$(qps_on_a)" -eq "$qps_before" ] ||
	fail "the killed sharers' QPs stay in the table (want $qps_before QPs): $(netns_exec "$NETNS_A" "$xroce" qps "$VETH_A")"
echo "ok   the killed sharers' QPs left the table"
run_client 1 || { e2e_show_logs; fail "the owner did not serve a client after its sharers"; }
echo "ok   the owner still serves a WRITE and a SEND after its sharers"
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
[ "$server_status" -eq 0 ] || { e2e_show_logs; fail "the successor exited with $server_status"; }
grep -q '^\[server\] PASS: 2 iterations' "$logdir/server.log" || fail "the successor has no PASS line"

# ---- 4. Clean closes leave nothing behind.
[ ! -e "$lock_dir/$VETH_A.lock" ] || fail "$lock_dir/$VETH_A.lock left behind after a clean close"
echo "ok   the lock file went with the last clean close"
echo "test_restart: PASS"
