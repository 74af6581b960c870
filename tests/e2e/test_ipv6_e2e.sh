#!/usr/bin/env bash
# RoCEv2 over IPv6 end to end across a veth pair between two namespaces,
# through the real XDP program and AF_XDP, with IPv6 GIDs only:
#   - rdma_e2e on the link-local GID (index 0, fe80::/64 from the MAC):
#     WRITE, WRITE with immediate, READ, atomics and the access errors;
#   - send_e2e on a global GID (an fd00::/8 address given to each end);
#   - xroce-pingpong with --chk on each, 64 KiB SENDs.
# The out-of-band exchange runs over IPv4, the QPs over IPv6: each side must
# print the IPv6 GID it used, and XDP must have counted every RoCEv2 frame
# it saw as IPv6 (roce_ipv6), none over IPv4, none malformed.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
rdma_e2e=$BUILD/tests/rdma_e2e
send_e2e=$BUILD/tests/send_e2e
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))
# A /64 of its own per run, so that concurrent tests share no address.
prefix=fd00:77:$(printf '%x' $(($$ % 65536)))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_ipv6_e2e "$rdma_e2e" "$send_e2e" "$pingpong" "$xroce"

netns_pair v6e "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_add_ipv6 "$prefix"
e2e_attach_both

# gid_index NS DEV PREFIX: the index of DEV's GID that starts with PREFIX
# (as `xroce gids` prints it: 8 groups of 4 hex digits).
gid_index() {
	netns_exec "$1" "$xroce" gids "$2" | awk -v p="$3" 'index($2, p) == 1 { print $1; exit }'
}
global_a=$(gid_index "$NETNS_A" "$VETH_A" "fd00:0077:")
global_b=$(gid_index "$NETNS_B" "$VETH_B" "fd00:0077:")
[ -n "$global_a" ] && [ -n "$global_b" ] || fail "no global IPv6 GID in the GID tables"
echo "ok   global GIDs at index $global_a ($VETH_A) and $global_b ($VETH_B)"

# run_cases PROG GID_A GID_B WANT: PROG's server in A and client in B on
# GID_A and GID_B; both pass and name a GID starting with WANT.
run_cases() {
	local prog=$1 gid_a=$2 gid_b=$3 want=$4 name side
	name=$(basename "$prog")
	netns_run_pair "$logdir" 180 "$prog" "$VETH_A" -p "$roce_port" -g "$gid_a" -- \
		"$VETH_B" "$ADDR_A" -p "$roce_port" -g "$gid_b" ||
		fail "$name: $NETNS_PAIR_STATUS (124 = timed out)"
	for side in server client; do
		grep -Eq "^\[$side\] GID [0-9]+ $want" "$logdir/$side.log" ||
			fail "$name: $side did not use an IPv6 GID starting with $want"
		grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
			fail "$name: $side has no PASS summary line"
	done
	echo "ok   $name over $want...: every case passed on both sides"
}

run_cases "$rdma_e2e" 0 0 "fe80::"
run_cases "$send_e2e" "$global_a" "$global_b" "$prefix::"

# xroce-pingpong SIZE GID_A GID_B WANT: 100 round trips, the client checking every byte.
run_pingpong() {
	local size=$1 gid_a=$2 gid_b=$3 want=$4 side status=0
	netns_exec "$NETNS_A" timeout 60 "$pingpong" -d "$VETH_A" -g "$gid_a" -n 100 -s "$size" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	netns_exec "$NETNS_B" timeout 60 "$pingpong" -d "$VETH_B" -g "$gid_b" -n 100 -s "$size" \
		--chk "$ADDR_A" >"$logdir/client.log" 2>&1 || status=$?
	wait "$server_pid" || status=$((status + $?))
	server_pid=""
	for side in server client; do
		grep -q "^$((size * 200)) bytes in .* Mbit/sec$" "$logdir/$side.log" &&
			grep -q "local address: .* GID $want" "$logdir/$side.log" || status=1
	done
	if [ "$status" -ne 0 ]; then
		e2e_show_logs "pingpong -s $size -g $gid_a/$gid_b"
		fail "xroce-pingpong -s $size over $want... failed"
	fi
	echo "ok   xroce-pingpong -s $size --chk over $want...: $(grep usec/iter "$logdir/client.log")"
}

run_pingpong 65536 0 0 "fe80::"
run_pingpong 65536 "$global_a" "$global_b" "$prefix::"

e2e_check_stats
# Every RoCEv2 frame XDP saw (all but passed_non_roce; acks_to_engine is a
# part of redirected) came over IPv6.
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	stats=$(netns_exec "${end%%:*}" "$xroce" stats "${end#*:}") || fail "xroce stats failed"
	read -r roce ipv6 < <(awk '
		$1 == "roce_ipv6" { v6 = $2 }
		$1 !~ /^(engine_|passed_non_roce|acks_to_engine|roce_ipv6)/ { roce += $2 }
		END { print roce + 0, v6 + 0 }' <<<"$stats")
	[ "$ipv6" -gt 0 ] && [ "$ipv6" -eq "$roce" ] ||
		fail "${end#*:}: $roce RoCEv2 frames, of which $ipv6 over IPv6 (all must be)"
	echo "ok   ${end#*:}: all $roce RoCEv2 frames came over IPv6"
done
echo "test_ipv6_e2e: PASS"
