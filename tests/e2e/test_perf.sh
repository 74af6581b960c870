#!/usr/bin/env bash
# xroce-perf against itself across a veth pair between two namespaces: each
# of the 8 tests (send/write/read/atomic, bw and lat) with a small iteration
# count, server in A, client in B. Both sides must exit 0; every side that
# measures must print the result line with the run's size and iteration
# count and a non-zero bandwidth or latency (a passive latency server prints
# no table, as perftest's does, so only its exit status counts). With -q N
# (several QPs, bw tests only) each QP runs the iterations and the result line
# counts them all, as perftest's does; both sides must list N local and N
# remote QPs with distinct QPNs.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
iters=50

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/perf_common.sh
source tests/e2e/perf_common.sh
e2e_init test_perf "$perf" "$xroce"

netns_pair prf "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# The number of QPs that OPTIONS ask for with -q (1 without it).
qps_of() {
	local qps=1
	while [ $# -gt 0 ]; do
		[ "$1" = -q ] && qps=$2
		shift
	done
	echo "$qps"
}

# Does LOG list QPS local and QPS remote QPs, with distinct QPNs on each side?
qps_listed() {
	local log=$1 qps=$2
	awk -v qps="$qps" '
		$2 == "address:" { n[$1]++; qpn[$1 " " $6]++ }
		END {
			if (n["local"] != qps || n["remote"] != qps) exit 1
			for (k in qpn) if (qpn[k] > 1) exit 1
		}' "$log"
}

# run TEST SIZE KIND SERVER_MEASURES [OPTIONS...]
run() {
	local test=$1 size=$2 kind=$3 server_measures=$4
	local qps total
	shift 4
	qps=$(qps_of "$@")
	total=$((iters * qps))
	perf_pair "$test" -x 1 -n $iters "$@"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$test $*: server exit $server_status, client exit $client_status"
	fi
	if ! perf_result_ok "$logdir/client.log" "$size" "$kind" "$total" ||
		{ [ "$server_measures" = yes ] &&
			! perf_result_ok "$logdir/server.log" "$size" "$kind" "$total"; }; then
		e2e_show_logs
		fail "$test $*: no sane result line for $size bytes x $total"
	fi
	if ! qps_listed "$logdir/client.log" "$qps" || ! qps_listed "$logdir/server.log" "$qps"; then
		e2e_show_logs
		fail "$test $*: the sides do not list $qps local and $qps remote QPs"
	fi
	echo "ok: $test $*: $(awk -v s="$size" -v n=$total '$1 == s && $2 == n' "$logdir/client.log" |
		tr -s ' \t' ' ')"
}

# The server of write/read/atomic bw prints the client's report it receives.
perf_status_line=$logdir/status_line
run send_bw 4096 bw yes -s 4096
perf_status_line=
# At MTU 1500 the interface bounds the path MTU: 1024 and 80 bytes of headers fit, 2048 not.
grep -q ", QPs in use [0-9]*, path MTU 1024 (interface MTU 1500), queues 1, engines 1$" "$logdir/status_line" ||
	fail "xroce status while an engine had $VETH_A: '$(cat "$logdir/status_line")'"
echo "ok: xroce status shows the engine's path MTU 1024, bounded by interface MTU 1500"
netns_exec "$NETNS_A" "$xroce" status | grep -q "^$VETH_A: .*QPs in use 0$" ||
	fail "xroce status still shows a path MTU after the engine closed: $(netns_exec "$NETNS_A" "$xroce" status)"
run write_bw 65536 bw yes -s 65536
run read_bw 4096 bw yes -s 4096
run atomic_bw 8 bw yes -A CMP_AND_SWAP
run atomic_bw 8 bw yes -A FETCH_AND_ADD
run send_bw 4096 bw yes -s 4096 -q 2
run write_bw 65536 bw yes -s 65536 -q 2
run send_lat 64 lat yes -s 64
run write_lat 3000 lat yes -s 3000
run read_lat 3000 lat no -s 3000
run atomic_lat 8 lat no
echo "test_perf: PASS"
