#!/usr/bin/env bash
# Remote atomics under contention, through the real XDP program and AF_XDP.
# Three namespaces: the target T and two initiators A and B, each joined to T
# by its own veth pair (one process owns an interface, so the two initiators
# need an interface each; T's process opens both of its ends). xroce is
# attached on all four ends. atomic_contention then runs:
#   1. 40,000 remote fetch-and-adds from A, 40,000 from B and 20,000 local
#      __atomic_fetch_add on T's CPU, on one counter: exactly 100,000, and
#      every original value returned exactly once;
#   2. a spin lock on remote compare-and-swap guarding a 64-byte record
#      (READ, update, WRITE, release): 5,000 sections each, no lost update.
# All three processes must pass. Ends with the stats of the four ends.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
bin=$BUILD/tests/atomic_contention
xroce=$BUILD/xroce
port=$((20000 + $$ % 20000))
limit=120

fail() {
	echo "test_atomic_contention: FAIL: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (namespaces, XDP)"
for b in "$bin" "$xroce"; do
	[ -x "$b" ] || fail "$b is missing (make all)"
done

# shellcheck source=scripts/netns.sh
source scripts/netns.sh
logdir=$(mktemp -d /tmp/xroce-test-atomic.XXXXXX)
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	netns_cleanup
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# netns_pair joins two new namespaces; here T is shared by two links, so
# the topology is built by hand and registered with netns.sh's lists so that
# netns_cleanup detaches and deletes it all.
ns_t="xroce-act-$$-t" ns_a="xroce-act-$$-a" ns_b="xroce-act-$$-b"
net="10.$((100 + $$ % 100))"
sub_a="$net.$(($$ / 100 % 120 + 1))" sub_b="$net.$(($$ / 100 % 120 + 121))"
for ns in "$ns_t" "$ns_a" "$ns_b"; do
	ip netns add "$ns" || fail "could not create namespace $ns"
	NETNS_CREATED+=("$ns")
	ip -n "$ns" link set lo up || fail "lo up in $ns"
done
for side in a b; do
	peer_ns=$([ "$side" = a ] && echo "$ns_a" || echo "$ns_b")
	subnet=$([ "$side" = a ] && echo "$sub_a" || echo "$sub_b")
	t_dev="xac$$t$side" p_dev="xac$$$side"
	ip link add "$t_dev" netns "$ns_t" type veth peer name "$p_dev" netns "$peer_ns" ||
		fail "could not create veth $t_dev"
	NETNS_VETHS+=("$ns_t:$t_dev" "$peer_ns:$p_dev")
	for end in "$ns_t:$t_dev:$subnet.1" "$peer_ns:$p_dev:$subnet.2"; do
		IFS=: read -r ns dev addr <<<"$end"
		ip -n "$ns" addr add "$addr/24" dev "$dev" &&
			ip -n "$ns" link set "$dev" up &&
			netns_exec "$ns" ethtool -K "$dev" tx off >/dev/null || fail "could not set up $dev"
		why=$(netns_attach "$ns:$dev") || fail "$why"
	done
done
t_dev_a="xac$$ta" t_dev_b="xac$$tb"

start=$SECONDS
netns_exec "$ns_t" timeout "$limit" "$bin" target "$t_dev_a" "$t_dev_b" -p "$port" \
	>"$logdir/target.log" 2>&1 &
pids+=($!)
netns_exec "$ns_a" timeout "$limit" "$bin" initiator "xac$$a" "$sub_a.1" 1 -p "$port" \
	>"$logdir/initiator1.log" 2>&1 &
pids+=($!)
netns_exec "$ns_b" timeout "$limit" "$bin" initiator "xac$$b" "$sub_b.1" 2 -p "$port" \
	>"$logdir/initiator2.log" 2>&1 &
pids+=($!)
statuses=()
for pid in "${pids[@]}"; do
	status=0
	wait "$pid" || status=$?
	statuses+=("$status")
done
pids=()
elapsed=$((SECONDS - start))
for who in target initiator1 initiator2; do
	echo "--- $who:"
	sed 's/^/    /' "$logdir/$who.log"
done
echo "(${elapsed} s)"
[ "${statuses[*]}" = "0 0 0" ] ||
	fail "exit statuses target/initiator 1/initiator 2: ${statuses[*]} (124 = timed out)"
grep -q '^\[target\] PASS$' "$logdir/target.log" || fail "target: no PASS line"
for id in 1 2; do
	grep -q "^\[initiator $id\] PASS$" "$logdir/initiator$id.log" || fail "initiator $id: no PASS line"
done
echo "ok   100,000 contended adds exact; 10,000 locked sections, no lost update"

netns_check_stats "${NETNS_VETHS[@]}" >"$logdir/stats" || stats_ok=no
cat "$logdir/stats"
[ "${stats_ok:-yes}" = yes ] || fail "$(tail -n 1 "$logdir/stats")"
echo "test_atomic_contention: PASS"
