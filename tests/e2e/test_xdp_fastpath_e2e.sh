#!/usr/bin/env bash
# The XDP fast paths end to end, with send_e2e (every RC SEND case, ending
# with a 10,000-message stream) and the fast paths on (the library's default):
#   1. across a veth pair between two namespaces: the run passes, and on the
#      sender's interface XDP absorbed ACKs itself (acks_absorbed > 0) and
#      rejected none for its ICRC. Prints the share of the ACKs absorbed in
#      XDP against those the engine received; the sender receives nothing but
#      responses, so every frame redirected there is one.
#   2. through tests/e2e/middlebox.c duplicating 5% of the sender's requests:
#      the run passes, and the receiver's XDP answered duplicates itself
#      (dups_answered > 0) with ACKs the sender accepted.
# In both, XDP's address binding dropped none of the peers' frames
# (drop_bad_src, drop_bad_dst, drop_bad_pkey stay 0 at both ends).
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/send_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_xdp_fastpath "$e2e" "$middlebox" "$xroce"

# Receiver in A, sender in B: B's XDP program sees the ACKs, A's the requests.
run_send_e2e() {
	local label=$1 server_status=0 client_status=0 side
	netns_exec "$NETNS_A" timeout 240 "$e2e" server "$VETH_A" -p "$roce_port" \
		>"$logdir/server.log" 2>&1 &
	server_pid=$!
	netns_exec "$NETNS_B" timeout 240 "$e2e" client "$VETH_B" "$ADDR_A" -p "$roce_port" \
		>"$logdir/client.log" 2>&1 || client_status=$?
	wait "$server_pid" || server_status=$?
	server_pid=""
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		for side in server client; do
			echo "--- $side:"
			tail -n 20 "$logdir/$side.log" | sed 's/^/    /'
		done
		fail "$label: send_e2e server exit $server_status, client exit $client_status (124 = timed out)"
	fi
	for side in server client; do
		grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
			fail "$label: $side printed no PASS summary line"
	done
	echo "ok   $label: send_e2e passed on both sides with the XDP fast paths on"
}

unset XROCE_XDP_FAST_PATH
netns_pair xfp "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
run_send_e2e "veth pair"

counter() {
	awk -v c="$1" '$1 == c { print $2 }' <<<"$2"
}

# LABEL IFNAME STATS: real peers' frames all fit their QPs' paths.
expect_bound() {
	local name value
	for name in drop_bad_src drop_bad_dst drop_bad_pkey; do
		value=$(counter "$name" "$3")
		[ "$value" = 0 ] || fail "$1: $2: $name is '$value': XDP dropped a peer's frame as unbound"
	done
}

sender_stats=$(netns_exec "$NETNS_B" "$xroce" stats "$VETH_B") || fail "xroce stats $VETH_B failed"
receiver_stats=$(netns_exec "$NETNS_A" "$xroce" stats "$VETH_A") || fail "xroce stats $VETH_A failed"
echo "--- xroce stats $VETH_B (sender):"
sed 's/^/    /' <<<"$sender_stats"

absorbed=$(counter acks_absorbed "$sender_stats")
to_engine=$(counter redirected "$sender_stats")
woke=$(counter acks_to_engine "$sender_stats")
bad_icrc=$(counter drop_bad_icrc "$sender_stats")
for value in "$absorbed" "$to_engine" "$woke" "$bad_icrc"; do
	[[ $value =~ ^[0-9]+$ ]] || fail "$VETH_B: xroce stats lacks the fast-path counters"
done
[ "$absorbed" -gt 0 ] || fail "$VETH_B: acks_absorbed is 0: XDP absorbed no ACK"
[ "$bad_icrc" -eq 0 ] || fail "$VETH_B: drop_bad_icrc is $bad_icrc: valid ACKs failed the BPF ICRC"
for name in drop_bad_icrc dups_answered; do
	echo "     $VETH_A (receiver) $name: $(counter "$name" "$receiver_stats")"
done
[ "$(counter drop_bad_icrc "$receiver_stats")" = 0 ] ||
	fail "$VETH_A: drop_bad_icrc is not 0: valid requests failed the BPF ICRC"

expect_bound "veth pair" "$VETH_B" "$sender_stats"
expect_bound "veth pair" "$VETH_A" "$receiver_stats"

total=$((absorbed + to_engine))
echo "ok   ACKs at the sender: $absorbed absorbed in XDP, $to_engine to the engine" \
	"($woke of them to wake it): $((absorbed * 100 / total))% absorbed"

# ---- 2. Duplicated requests, answered by the receiver's XDP.
netns_middlebox_pair xfd "$(e2e_subnet)" || fail "could not create the middlebox namespaces"
e2e_attach_both
mb_start --b2a-dup 5 --seed 7 --max-seconds 240
run_send_e2e "5% of the requests duplicated"
mb_stop
duplicated=$(mb_dir b2a duplicated)

receiver_stats=$(netns_exec "$NETNS_A" "$xroce" stats "$VETH_A") || fail "xroce stats $VETH_A failed"
sender_stats=$(netns_exec "$NETNS_B" "$xroce" stats "$VETH_B") || fail "xroce stats $VETH_B failed"
echo "--- xroce stats $VETH_A (receiver):"
sed 's/^/    /' <<<"$receiver_stats"
answered=$(counter dups_answered "$receiver_stats")
if ! [[ $duplicated =~ ^[1-9][0-9]*$ ]]; then
	fail "the middlebox duplicated no request ('$duplicated')"
fi
if ! [[ $answered =~ ^[1-9][0-9]*$ ]]; then
	fail "$VETH_A: dups_answered is '$answered' with $duplicated requests duplicated"
fi
for end in "$VETH_A:$receiver_stats" "$VETH_B:$sender_stats"; do
	[ "$(counter drop_bad_icrc "${end#*:}")" = 0 ] ||
		fail "${end%%:*}: drop_bad_icrc is not 0: a valid frame failed the BPF ICRC"
	expect_bound "middlebox" "${end%%:*}" "${end#*:}"
done
echo "ok   $duplicated requests duplicated: $answered answered in XDP," \
	"$(counter acks_absorbed "$sender_stats") ACKs absorbed at the sender"
echo "test_xdp_fastpath: PASS"
