#!/usr/bin/env bash
# xroce-srq-pingpong against itself across a veth pair between two
# namespaces: RC QPs on one shared receive queue per side, as
# ibv_srq_pingpong. Runs of 1000 exchanges (over all QPs, as
# ibv_srq_pingpong counts them): the defaults (16 QPs, 500 receives, 4 KiB),
# -q 16 -r 16 with --chk (the smallest SRQ ibv_srq_pingpong allows for 16
# QPs: one receive for each QP's message in flight, refilled at every
# completion), -q 16 -r 17 with 64 KiB multi-packet SENDs and --chk, one QP
# with one receive, 255 QPs (the most), -e (completion events) with --chk,
# and IPv6 link-local GIDs (-g 0). Each side must exit 0, print one local and
# one remote address line per QP (distinct QPNs) and the summary lines with
# the totals of 1000 round trips; with --chk the client checks every echoed
# byte and the server the page-start bytes of every receive. After each run
# neither end may have dropped a frame as malformed; the RNR NAKs each side
# sent, and the frames that came for a QP already gone, are printed: as in
# ibv_srq_pingpong, a side stops once the totals of all QPs are reached, so
# the SENDs the peer still had in flight on other QPs then find no QP.
# Failures that must be reported, not hang or pass:
#   - -q 16 -r 8 (fewer receives than QPs) and -q 256: refused with
#     ibv_srq_pingpong's reasons; -o (on-demand paging): refused;
#   - a server with -q 4 and a client with -q 8: the server refuses the
#     client's 8 addresses, the client sees the exchange end; both exit 1.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-srq-pingpong
xroce=$BUILD/xroce
iters=1000

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_srq_pingpong "$pingpong" "$xroce"

netns_pair srq "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh
PINGPONG_LOCAL_GID_SEP=", "

# The link-local addresses (the GIDs at index 0) answer once DAD is done.
e2e_wait_dad

# check_qps RUN QPS: each side printed QPS local and QPS remote address
# lines, with QPS distinct QPNs each, and the client's remote QPNs are the
# server's local ones, in order.
check_qps() {
	local side kind n
	for side in server client; do
		for kind in local remote; do
			n=$(grep -E "^  $kind address: +LID" "$logdir/$side.log" | awk '{ print $6 }' | sort -u | wc -l)
			[ "$n" = "$2" ] || fail "'$1': $side printed $n distinct $kind QPNs, expected $2"
		done
	done
	[ "$(grep '^  local address:' "$logdir/server.log" | awk '{ print $6 }')" = \
		"$(grep '^  remote address:' "$logdir/client.log" | awk '{ print $6 }')" ] ||
		fail "'$1': the client's remote QPNs are not the server's local ones"
}

# check_engines RUN: no malformed frame on either end; prints the RNR NAKs
# each side sent and the frames that found no QP.
check_engines() {
	local end ns dev info=""
	check_counters "$1" - engine_rx_malformed drop_bad_length drop_bad_icrc
	for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
		ns=${end%%:*} dev=${end#*:}
		info+=" $dev $(e2e_stat "$ns" "$dev" engine_rnr_naks_tx)/$(e2e_stat "$ns" "$dev" drop_unknown_qp)"
	done
	echo "RNR NAKs sent/frames for no QP:$info"
}

for run in "" "-q 16 -r 16 --chk" "-q 16 -r 17 -s 65536 --chk" "-q 1 -r 1 -s 1 --chk" \
	"-q 255 -r 255 -s 64" "-q 8 -e --chk" "-g 0 -q 4 --chk"; do
	size=4096 qps=16
	[[ $run =~ -s\ ([0-9]+) ]] && size=${BASH_REMATCH[1]}
	[[ $run =~ -q\ ([0-9]+) ]] && qps=${BASH_REMATCH[1]}
	run_must_pass "$size" "$run"
	check_qps "$run" "$qps"
	if [[ $run == *"-g 0"* ]]; then
		grep -q "^  remote address: .*GID fe80::" "$logdir/client.log" ||
			fail "'$run': the client did not use the server's link-local GID"
	fi
	rnr=$(check_engines "$run") || { echo "$rnr"; exit 1; }
	echo "ok: '${run:-(defaults)}': $qps QPs, $size bytes, $iters round trips; $rnr; $(grep 'usec/iter' "$logdir/client.log")"
done

# Refused before anything is opened, with ibv_srq_pingpong's reasons.
refused() {
	local why=$1 status=0
	shift
	netns_exec "$NETNS_A" timeout 30 "$pingpong" -d "$VETH_A" -g 1 "$@" >"$logdir/server.log" 2>&1 ||
		status=$?
	if [ "$status" -ne 1 ] || ! grep -qF -- "$why" "$logdir/server.log"; then
		cat "$logdir/server.log"
		fail "$*: exit $status, expected 1 and '$why'"
	fi
}
refused "rx_depth 8 is too small for 16 QPs -- must have at least one receive per QP." -q 16 -r 8
refused "num_qp 256 must be less than 256" -q 256 -r 500
refused "-o/--odp: xroce has no on-demand paging" -o
echo "ok: -q 16 -r 8, -q 256 and -o are refused"

# Different -q on the two sides: both fail, neither hangs.
netns_exec "$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g 1 -q 4 >"$logdir/server.log" 2>&1 &
server_pid=$!
client_status=0
netns_exec "$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g 1 -q 8 "$ADDR_A" \
	>"$logdir/client.log" 2>&1 || client_status=$?
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
if [ "$server_status" -ne 1 ] || [ "$client_status" -ne 1 ] ||
	! grep -q "the peer has 8 QPs, we have 4: run both sides with the same -q" "$logdir/server.log" ||
	! grep -q "couldn't read remote address \[0\]" "$logdir/client.log"; then
	e2e_show_logs
	fail "-q 4 against -q 8: server exit $server_status, client exit $client_status (both must fail, the server naming both counts)"
fi
echo "ok: -q 4 against -q 8 fails on both sides:"
grep -h "peer has\|couldn't read" "$logdir/server.log" "$logdir/client.log" | sed 's/^/    /'
echo "test_srq_pingpong: PASS"
