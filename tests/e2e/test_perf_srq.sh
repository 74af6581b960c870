#!/usr/bin/env bash
# xroce-perf --use-srq against itself across a veth pair between two
# namespaces, server in A, client in B: as perftest's, the receiving side's
# QPs (send_bw's server, both sides of send_lat) take their receives from one
# shared receive queue of -r entries, shared out evenly between the QPs'
# buffers at the start and reposted as they complete. Runs: send_bw RC with
# one QP, with -q 4 and 64 KiB messages, with -q 16 -r 16 (one receive per QP
# against the 128 SENDs each QP keeps in flight; the RNR NAKs this took, if
# any, are printed), and with -c UD -a (every size from 2 to the 1024-byte
# MTU, the SRQ filled anew for each); send_bw -c UD and -c UC; send_lat RC;
# and a server with
# --use-srq against a client without (the flag only matters where the
# receives are). Both sides must exit 0, print "Using SRQ      : ON" (the
# client without the flag: OFF) and the result line with the run's size and
# the iterations of all QPs; send_bw's server counts what arrived, so a lost
# or doubled message fails the run. perftest's refusals must be refused with
# its words and exit 1: --use-srq with a verb other than SEND, and fewer
# receives than QPs.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
iters=200

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/perf_common.sh
source tests/e2e/perf_common.sh
e2e_init test_perf_srq "$perf" "$xroce"

netns_pair psr "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# run TEST SIZE KIND CLIENT_SRQ [OPTIONS...]: the server with --use-srq and
# OPTIONS, the client with OPTIONS and --use-srq when CLIENT_SRQ is ON.
run() {
	local test=$1 size=$2 kind=$3 client_srq=$4 side total=$iters srq conn=RC args
	shift 4
	args=" $* "
	[[ $args =~ \ -q\ ([0-9]+)\  ]] && total=$((iters * BASH_REMATCH[1]))
	[[ $args =~ \ -c\ (U[CD])\  ]] && conn=${BASH_REMATCH[1]}
	server_status=0 client_status=0
	netns_exec "$NETNS_A" timeout 60 "$perf" "$test" -d "$VETH_A" -n $iters --use-srq "$@" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	# shellcheck disable=SC2046 # --use-srq or nothing
	netns_exec "$NETNS_B" timeout 60 "$perf" "$test" -d "$VETH_B" -n $iters \
		$([ "$client_srq" = ON ] && echo --use-srq) "$@" "$ADDR_A" >"$logdir/client.log" 2>&1 ||
		client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$test $*: server exit $server_status, client exit $client_status"
	fi
	for side in server client; do
		srq=ON
		[ $side = client ] && srq=$client_srq
		if ! grep -qxP " Connection type : $conn\t\tUsing SRQ      : $srq" "$logdir/$side.log"; then
			e2e_show_logs
			fail "$test $*: the $side does not say Connection type : $conn, Using SRQ : $srq"
		fi
	done
	for side in server client; do
		[ "$kind" = bw ] && [ $side = client ] && [ "$test" = send_bw ] || [ "$kind" = lat ] ||
			[ "$test" = send_bw ] || continue
		if ! perf_result_ok "$logdir/$side.log" "$size" "$kind" $total; then
			e2e_show_logs
			fail "$test $*: the $side has no sane result line for $size bytes x $total"
		fi
	done
	echo "ok: $test --use-srq $*$([ "$client_srq" = OFF ] && echo " (the client without it)"): $(awk -v s="$size" -v n=$total '$1 == s && $2 == n' "$logdir/server.log" |
		head -n 1 | tr -s ' \t' ' ')"
}

run send_bw 4096 bw ON -x 1 -s 4096
grep -qxF " RX depth        : $iters" "$logdir/server.log" ||
	fail "send_bw --use-srq: the server does not show RX depth $iters (the SRQ's)"
run send_bw 65536 bw ON -x 1 -s 65536 -q 4
run send_bw 4096 bw ON -x 1 -s 4096 -q 16 -r 16
# Whether 16 receives ran out depends on how fast the server reposts: shown, not required
# (srq_e2e starves its SRQ on purpose).
echo "    RNR NAKs so far: the server sent $(e2e_stat "$NETNS_A" "$VETH_A" engine_rnr_naks_tx), the client received $(e2e_stat "$NETNS_B" "$VETH_B" engine_rnr_naks_rx)"
run send_bw 1024 bw ON -x 1 -c UD -s 1024
run send_bw 4096 bw ON -x 1 -c UC -s 4096
run send_lat 64 lat ON -x 1 -s 64
run send_bw 4096 bw OFF -x 1 -s 4096 -q 2

# -a: every size, the SRQ refilled for each (UD: up to the MTU).
netns_exec "$NETNS_A" timeout 120 "$perf" send_bw -d "$VETH_A" -n 50 -x 1 -c UD -a --use-srq \
	>"$logdir/server.log" 2>&1 &
server_pid=$!
client_status=0
netns_exec "$NETNS_B" timeout 120 "$perf" send_bw -d "$VETH_B" -n 50 -x 1 -c UD -a --use-srq \
	"$ADDR_A" >"$logdir/client.log" 2>&1 || client_status=$?
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
for size in 2 4 8 16 32 64 128 256 512 1024; do
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ] ||
		! perf_result_ok "$logdir/server.log" $size bw 50 || ! perf_result_ok "$logdir/client.log" $size bw 50; then
		e2e_show_logs
		fail "send_bw -c UD -a --use-srq: server exit $server_status, client exit $client_status, or no result line for $size bytes"
	fi
done
echo "ok: send_bw -c UD -a --use-srq -n 50: 10 sizes, 2 to 1024"

refused() {
	local test=$1 message=$2 status=0
	shift 2
	"$perf" "$test" -d "$VETH_A" "$@" >"$logdir/refused.log" 2>&1 || status=$?
	if [ "$status" -ne 1 ] || ! grep -qF "xroce-perf: $message" "$logdir/refused.log"; then
		sed 's/^/    /' "$logdir/refused.log"
		fail "$test $*: exit $status, expected 1 and \"$message\""
	fi
	echo "ok: $test $*: refused: $message"
}
refused write_bw "Using SRQ only available in SEND tests" --use-srq
refused read_lat "Using SRQ only available in SEND tests" --use-srq
refused send_bw "Using SRQ depth should be greater than number of QPs" --use-srq -q 16 -r 8
refused send_bw "Using SRQ depth should be greater than number of QPs" --use-srq -q 16 -n 10
echo "test_perf_srq: PASS"
