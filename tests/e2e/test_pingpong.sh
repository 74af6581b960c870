#!/usr/bin/env bash
# xroce-pingpong against itself across a veth pair between two namespaces:
# RC SENDs of 1 B, 1 KiB, 4 KiB and 64 KiB (multi-packet), 100 round trips
# each, polling and sleeping on completion events (-e), runs with --chk (the client checks every echoed byte), and one run
# where the client's SEND is larger than the server's receive buffers, which
# must fail on both sides with an error completion rather than pass or hang.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce
iters=100

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_pingpong "$pingpong" "$xroce"

netns_pair ppg "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh

# Both sides exit 0 and print ibv_rc_pingpong's two summary lines with the right totals.
check_summary() {
	local size=$1 side log
	for side in server client; do
		log=$logdir/$side.log
		grep -Eq "^$((size * iters * 2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$" "$log" &&
			grep -Eq "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$log" ||
			return 1
	done
}

for run in "1" "1024" "4096" "65536" "65536 --chk" "4096 -e" "65536 -e --chk"; do
	size=${run%% *}
	opts="-s $run"
	run_pair "$opts" "$opts"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ] || ! check_summary "$size"; then
		e2e_show_logs
		fail "-s $run: server exit $server_status, client exit $client_status"
	fi
	echo "ok: -s $run: $(grep 'usec/iter' "$logdir/client.log")"
done

# A 4096-byte SEND into 1024-byte receive buffers: the server's receive
# completes with a local length error and the client's SEND with a remote
# invalid request NAK; both must say so, neither may pass or time out.
run_pair "-s 1024" "-s 4096"
if [ "$server_status" -eq 0 ] || [ "$client_status" -eq 0 ] ||
	! grep -q "completion failed" "$logdir/server.log" ||
	! grep -q "completion failed" "$logdir/client.log"; then
	e2e_show_logs
	fail "oversized SEND: server exit $server_status, client exit $client_status (both must fail with a failed completion)"
fi
echo "ok: oversized SEND fails on both sides:"
grep -h "completion failed" "$logdir/server.log" "$logdir/client.log" | sed 's/^/    /'
echo "test_pingpong: PASS"
