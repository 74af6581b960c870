#!/usr/bin/env bash
# Attachments whose interface went away, end to end on a veth pair between
# two namespaces:
#   1. both namespaces deleted and re-created with the same names: status
#      marks both entries stale (interface was gone); an application opening
#      the device is refused with ESTALE and xr_strerror's advice, and the
#      pins stay; `xroce attach` replaces A's with its one-line message;
#      `xroce detach --stale` removes B's only; `xroce gc` then finds none;
#      re-attached, send_e2e passes every case across the pair.
#   2. another interface takes the name (the attached veth renamed, a bridge
#      created under its old name): stale (another interface has that name
#      now); attach replaces it (in generic mode, with the warning, as a
#      bridge has no native XDP) and the renamed veth has no XDP left.
#   3. the library's own attachment (an application killed while holding
#      its device, then the veth deleted and re-created): the next open
#      replaces it by itself, and detaches it on close; the loader's
#      attachment of the other end is still refused with ESTALE.
#   4. the same interface name in a third namespace: attach, detach and
#      open there are refused (attached in another network namespace) and
#      the first namespace's attachment is untouched.
# `detach --stale` removes every stale entry of the bpffs, including those of
# tests other builds run at the same time on this machine: the test runs in a
# mount namespace of its own, with a bpffs of its own on /sys/fs/bpf.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
if [ "${XROCE_TEST_OWN_BPFFS:-}" != 1 ]; then
	exec unshare --mount --propagation unchanged env XROCE_TEST_OWN_BPFFS=1 bash "$0" "$@"
fi
BUILD=${BUILD:-build}
e2e=$BUILD/tests/send_e2e
opener=$BUILD/tests/open_device
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))
estale=116 exdev=18

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_stale "$e2e" "$opener" "$xroce"
mount --make-rprivate /sys && mount -t bpf bpf /sys/fs/bpf ||
	fail "cannot mount a private bpffs on /sys/fs/bpf"

netns_pair st "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# xr NS ARGS...: xroce ARGS in NS's network namespace; NS "-": in the test's own.
xr() {
	local ns=$1
	shift
	if [ "$ns" = - ]; then
		"$xroce" "$@"
	else
		netns_exec "$ns" "$xroce" "$@"
	fi
}

# status_of NS DEV: DEV's line of `xroce status` run in NS.
status_of() {
	xr "$1" status | grep "^$2: "
}

# wait_status NS DEV TEXT: waits (at most 10 s) until DEV's status line
# contains TEXT; a deleted namespace's interfaces go away asynchronously.
wait_status() {
	local try
	for try in $(seq 100); do
		status_of "$1" "$2" | grep -qF "$3" && return 0
		sleep 0.1
	done
	fail "$2's status never showed '$3': $(status_of "$1" "$2")"
}

# link_id NS DEV: the link id DEV's status line shows.
link_id() {
	status_of "$1" "$2" | sed -n 's/.*link id \([0-9]*\),.*/\1/p'
}

# expect_refused NS DEV ERRNO [ARGS]: open_device DEV must fail with ERRNO;
# its line is left in $refused.
expect_refused() {
	local ns=$1 dev=$2 errno=$3
	shift 3
	refused=$(netns_exec "$ns" "$opener" "$dev" "$@") &&
		fail "open_device $dev $* succeeded: $refused"
	grep -q "^open $dev: errno $errno: " <<<"$refused" ||
		fail "open_device $dev $*: '$refused', expected errno $errno"
}

# ---- 1. Both namespaces deleted, then re-created with the same names.
link_a=$(link_id "$NETNS_A" "$VETH_A")
[ -n "$link_a" ] && status_of "$NETNS_A" "$VETH_A" | grep -q ", ifindex [0-9]*, mode native," ||
	fail "status does not show $VETH_A live in native mode: $(xr "$NETNS_A" status)"
ip netns del "$NETNS_A" && ip netns del "$NETNS_B" || fail "cannot delete the namespaces"
wait_status - "$VETH_A" "STALE (interface was gone)"
wait_status - "$VETH_B" "STALE (interface was gone)"
ip netns add "$NETNS_A" && ip netns add "$NETNS_B" &&
	ip link add "$VETH_A" netns "$NETNS_A" type veth peer name "$VETH_B" netns "$NETNS_B" &&
	netns_configure_ends || fail "cannot re-create the namespaces and the veth pair"
status=$(xr "$NETNS_A" status)
grep -q "^$VETH_A: .*STALE (interface was gone), mode native, QPs in use 0$" <<<"$status" &&
	grep -q "^$VETH_B: .*STALE (interface was gone)" <<<"$status" &&
	grep -q "^2 stale: \`xroce attach IFNAME\` replaces one, \`xroce detach --stale\` removes them all$" \
		<<<"$status" || fail "status after re-creating the interfaces: $status"
echo "ok   namespaces deleted and re-created: status marks both entries stale"

expect_refused "$NETNS_A" "$VETH_A" "$estale"
out=$refused
grep -qF 'run `xroce attach IFNAME` (replaces it) or `xroce detach --stale`' <<<"$out" ||
	fail "open_device's message does not say what to do: $out"
expect_refused "$NETNS_A" "$VETH_A" "$estale" --no-attach
[ "$(link_id "$NETNS_A" "$VETH_A")" = "$link_a" ] || fail "a refused open changed the pins"
ip -n "$NETNS_A" link show dev "$VETH_A" | grep -q xdp && fail "a refused open attached XDP"
echo "ok   open_device refused with ESTALE: $out"

out=$(xr "$NETNS_A" attach "$VETH_A") || fail "attach over the stale entry failed: $out"
[ "$(head -n 1 <<<"$out")" = "replaced a stale attachment of $VETH_A (interface was gone)" ] ||
	fail "attach did not say it replaced the stale entry: $out"
status_of "$NETNS_A" "$VETH_A" | grep -q ", ifindex [0-9]*, mode native, QPs in use 0$" ||
	fail "$VETH_A not live after attach: $(status_of "$NETNS_A" "$VETH_A")"
echo "ok   attach replaced the stale entry: $(head -n 1 <<<"$out")"

out=$(xr "$NETNS_A" detach --stale) || fail "detach --stale failed: $out"
[ "$out" = "removed the stale attachment of $VETH_B (interface was gone)" ] ||
	fail "detach --stale: '$out'"
status=$(xr "$NETNS_A" status)
grep -q "^$VETH_B: " <<<"$status" && fail "status still lists $VETH_B: $status"
grep -q "^$VETH_A: .*ifindex" <<<"$status" || fail "detach --stale removed $VETH_A: $status"
grep -q stale <<<"$status" && fail "status still mentions stale entries: $status"
[ "$(xr "$NETNS_B" gc)" = "no stale attachments" ] || fail "gc found something after detach --stale"
echo "ok   detach --stale removed $VETH_B's entry only; gc then finds none"

xr "$NETNS_B" attach "$VETH_B" >/dev/null || fail "attach $VETH_B"
e2e_run_cases 240
e2e_check_stats

# ---- 2. Another interface takes the name.
renamed=${VETH_A}r
ip -n "$NETNS_A" link set dev "$VETH_A" down &&
	ip -n "$NETNS_A" link set dev "$VETH_A" name "$renamed" &&
	ip -n "$NETNS_A" link add "$VETH_A" type bridge || fail "cannot rename $VETH_A"
wait_status "$NETNS_A" "$VETH_A" "STALE (another interface has that name now)"
expect_refused "$NETNS_A" "$VETH_A" "$estale"
out=$(xr "$NETNS_A" attach "$VETH_A" 2>"$logdir/attach.err") ||
	fail "attach over a renamed interface: $out $(cat "$logdir/attach.err")"
[ "$out" = "replaced a stale attachment of $VETH_A (another interface has that name now)
attached to $VETH_A in generic mode, pinned under /sys/fs/bpf/xroce/$VETH_A" ] ||
	fail "attach over a renamed interface said: $out"
[ "$(cat "$logdir/attach.err")" = "xroce: warning: $VETH_A's driver has no native XDP support: attached in generic mode (slower)" ] ||
	fail "attach on a bridge warned: $(cat "$logdir/attach.err")"
ip -n "$NETNS_A" link show dev "$renamed" | grep -q xdp &&
	fail "the renamed veth still has XDP: $(ip -n "$NETNS_A" link show dev "$renamed")"
ip -n "$NETNS_A" link show dev "$VETH_A" | grep -q xdpgeneric || fail "no generic XDP on the bridge"
xr "$NETNS_A" detach "$VETH_A" >/dev/null && ip -n "$NETNS_A" link del "$VETH_A" &&
	ip -n "$NETNS_A" link set dev "$renamed" name "$VETH_A" &&
	ip -n "$NETNS_A" link set dev "$VETH_A" up || fail "cannot undo the rename"
echo "ok   another interface under the name: stale, replaced; the renamed veth has no XDP left"

# ---- 3. The library's own attachment, left by a killed application.
# nsenter itself (not the netns_exec function, which would run in a subshell)
# so that $! is the application: nsenter execs it.
nsenter --net="/var/run/netns/$NETNS_A" "$opener" "$VETH_A" --hold >"$logdir/hold.log" 2>&1 &
server_pid=$!
for try in $(seq 100); do
	grep -q "^opened $VETH_A$" "$logdir/hold.log" && break
	kill -0 "$server_pid" 2>/dev/null || fail "open_device --hold exited: $(cat "$logdir/hold.log")"
	sleep 0.1
done
grep -q "^opened $VETH_A$" "$logdir/hold.log" || fail "open_device --hold did not open in 10 s"
status_of "$NETNS_A" "$VETH_A" | grep -q ", ifindex [0-9]*, mode native," ||
	fail "the library did not attach $VETH_A: $(status_of "$NETNS_A" "$VETH_A")"
kill -KILL "$server_pid"
wait "$server_pid" 2>/dev/null
[ $? -eq 137 ] || fail "open_device --hold was not killed by SIGKILL"
server_pid=""
pgrep -f "$opener $VETH_A --hold" >/dev/null && fail "open_device --hold still runs"
ip -n "$NETNS_A" link del "$VETH_A" || fail "cannot delete the veth pair"
wait_status "$NETNS_A" "$VETH_A" "STALE (interface was gone)"
wait_status "$NETNS_A" "$VETH_B" "STALE (interface was gone)"
ip link add "$VETH_A" netns "$NETNS_A" type veth peer name "$VETH_B" netns "$NETNS_B" &&
	netns_configure_ends || fail "cannot re-create the veth pair"
expect_refused "$NETNS_B" "$VETH_B" "$estale"
out=$(netns_exec "$NETNS_A" "$opener" "$VETH_A") || fail "open over the library's stale entry: $out"
[ "$out" = "opened $VETH_A" ] || fail "open_device said: $out"
status_of "$NETNS_A" "$VETH_A" >/dev/null && fail "the library left its attachment after close"
echo "ok   the library replaced its own stale attachment and removed it on close; the loader's stays refused"

# ---- 4. The same name in a third namespace.
xr "$NETNS_A" attach "$VETH_A" >/dev/null || fail "attach $VETH_A"
link_a=$(link_id "$NETNS_A" "$VETH_A")
ns_c=${NETNS_A%-a}-c
ip netns add "$ns_c" || fail "cannot create $ns_c"
NETNS_CREATED+=("$ns_c")
ip -n "$ns_c" link add "$VETH_A" type bridge && ip -n "$ns_c" link set "$VETH_A" up ||
	fail "cannot create $VETH_A in $ns_c"
status_of "$ns_c" "$VETH_A" | grep -q "in another network namespace (ifindex [0-9]* there), mode native," ||
	fail "status in $ns_c: $(status_of "$ns_c" "$VETH_A")"
message="xroce: $VETH_A is attached in another network namespace (pins are per interface name): detach it there first"
for cmd in attach detach; do
	err=$(xr "$ns_c" "$cmd" "$VETH_A" 2>&1 >/dev/null) && fail "$cmd in $ns_c succeeded"
	[ "$err" = "$message" ] || fail "$cmd in $ns_c: '$err'"
done
expect_refused "$ns_c" "$VETH_A" "$exdev"
[ "$(link_id "$NETNS_A" "$VETH_A")" = "$link_a" ] &&
	status_of "$NETNS_A" "$VETH_A" | grep -q ", ifindex [0-9]*, mode native," ||
	fail "$NETNS_A's attachment changed: $(status_of "$NETNS_A" "$VETH_A")"
ip -n "$ns_c" link show dev "$VETH_A" | grep -q xdp && fail "XDP attached to $ns_c's $VETH_A"
echo "ok   the same name in $ns_c: attach, detach and open refused; $NETNS_A's attachment untouched"
echo "test_stale: PASS"
