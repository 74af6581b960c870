#!/usr/bin/env bash
# Debian's unmodified perftest under xroce-run between two namespaces: each
# program's server on xroce_VETH_A, its client on xroce_VETH_B with the
# server's address, at the IPv4-mapped GID (-x) as ibv_devinfo -v shows it,
# 200 iterations per QP:
#   - ib_send_bw, ib_write_bw, ib_read_bw at 1 B, 4 KiB and 64 KiB, on one QP
#     and on four (-q 4); ib_atomic_bw with compare-and-swap and
#     fetch-and-add, -q 1 and -q 4; the three at 64 KiB bidirectional (-b);
#   - ib_send_lat, ib_write_lat, ib_read_lat at 2 B (their default), 4 KiB
#     and 64 KiB; ib_atomic_lat with both atomics (the latency programs take
#     one QP: perftest refuses -q for them);
#   - UD: ib_send_bw -c UD at 1 KiB (the port MTU) on one and four QPs and
#     bidirectional, ib_send_lat -c UD; multicast (-g): the server's UD QP
#     attached to the IPv4 group 239.1.2.3 (-M, an IPv4-mapped MGID,
#     ibv_attach_mcast), the client sending to the group (QPN 0xffffff);
#   - completion events (-e) for the programs that have them (perftest has
#     none for RDMA WRITE).
# Both sides must exit 0; the client's (and for SENDs and -b the server's)
# result line must carry the message size and iteration count asked for and
# positive, ordered figures: an average bandwidth and message rate (a
# server's peak may be 0: perftest's receiver has no peak), or latencies with
# minimum <= typical <= maximum. Last, each end's engine counted no
# malformed frames.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
iters=200
port=18515

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_perftest ipt perftest ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw \
	ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat

# The value of option FLAG in OPTS, or DEFAULT.
option() {
	local flag=$1 default=$2 value
	value=$(sed -nE "s/.*(^| )$flag ([^ ]+).*/\2/p" <<<"$3")
	echo "${value:-$default}"
}

# PROGRAM OPTS: one run; fails unless both sides pass with the right result.
perftest_case() {
	local prog=$1 opts=$2 kind bytes count qps server_reports=0
	kind=${prog##*_}
	case $prog in
	ib_atomic_*) bytes=8 ;;
	*_bw) bytes=$(option -s 65536 "$opts") ;;
	*) bytes=$(option -s 2 "$opts") ;;
	esac
	qps=$(option -q 1 "$opts")
	count=$iters
	[ "$kind" = bw ] && count=$((iters * qps))
	case "$prog $opts " in ib_send_* | *" -b "*) server_reports=1 ;; esac
	# shellcheck disable=SC2086 # the options are meant to be split into words
	e2e_server_then_client 60 "$port" "$NETNS_A" "$NETNS_B" \
		"$run" "$prog" -d "xroce_$VETH_A" -x "$gid_a" -F -p "$port" -n "$iters" $opts -- \
		"$run" "$prog" -d "xroce_$VETH_B" -x "$gid_b" -F -p "$port" -n "$iters" $opts "$ADDR_A"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ] ||
		! perftest_result_ok "$logdir/client.log" "$kind" "$bytes" "$count" ||
		{ [ "$server_reports" = 1 ] && ! perftest_result_ok "$logdir/server.log" "$kind" "$bytes" "$count"; }; then
		e2e_show_logs
		fail "$prog $opts: server exit $server_status, client exit $client_status (124 = timed out), or no result line for $bytes B x $count"
	fi
	echo "ok   $prog $opts: $(awk '/^ *#bytes/ { getline; print; exit }' "$logdir/client.log" | tr -s ' \t' ' ')"
}

for prog in ib_send_bw ib_write_bw ib_read_bw; do
	for opts in "-s 1" "-s 4096" "-s 65536" "-s 1 -q 4" "-s 65536 -q 4" "-s 65536 -b"; do
		perftest_case $prog "$opts"
	done
done
for opts in "-A CMP_AND_SWAP" "-A FETCH_AND_ADD" "-A CMP_AND_SWAP -q 4" "-A FETCH_AND_ADD -q 4"; do
	perftest_case ib_atomic_bw "$opts"
done
for prog in ib_send_lat ib_write_lat ib_read_lat; do
	for opts in "-s 2" "-s 4096" "-s 65536"; do
		perftest_case $prog "$opts"
	done
done
perftest_case ib_atomic_lat "-A CMP_AND_SWAP"
perftest_case ib_atomic_lat "-A FETCH_AND_ADD"
for opts in "-c UD -s 1024" "-c UD -s 1024 -q 4" "-c UD -s 1024 -b"; do
	perftest_case ib_send_bw "$opts"
done
perftest_case ib_send_lat "-c UD -s 1024"
perftest_case ib_send_bw "-c UD -g -M 0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:3 -s 1024"
for side in server client; do
	grep -A1 -E "^ (local|remote) address: LID 0000 QPN 0xffffff PSN " "$logdir/$side.log" |
		grep -qxF " MGID: 00:00:00:00:00:00:00:00:00:00:255:255:239:01:02:03" ||
		fail "ib_send_bw -g: the $side does not show the group 239.1.2.3 and QPN 0xffffff"
done
for prog in ib_send_bw ib_read_bw ib_atomic_bw ib_send_lat ib_read_lat ib_atomic_lat; do
	perftest_case $prog "-e"
done
perftest_case ib_send_bw "-c UD -s 1024 -e"
e2e_check_stats
echo "test_perftest: PASS"
