#!/usr/bin/env bash
# The xroce loader end to end, on a veth pair between two fresh namespaces:
# attach on both ends (pins, `ip link` shows the program, ping still works,
# RoCE-port datagrams are dropped and counted by reason), status, stats,
# bpftool's named fields, the one-line errors with a non-zero exit, and detach
# leaving the interface exactly as it was with no pins.
# The loader runs under nsenter --net so its pins land in the host's bpffs.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
xroce=$(realpath "$BUILD/xroce")

suffix=$$$((RANDOM % 1000))
ns_a=xrla-$suffix ns_b=xrlb-$suffix
if_a=xrla$suffix if_b=xrlb$suffix
if_a=${if_a:0:15} if_b=${if_b:0:15}
addr_a=10.78.0.1 addr_b=10.78.0.2
pins=/sys/fs/bpf/xroce
foreign_pin=/sys/fs/bpf/xroce-test-foreign-$suffix

cleanup() {
	rm -rf "${pins:?}/$if_a" "${pins:?}/$if_b"
	rm -f "$foreign_pin"
	rmdir "$pins" 2>/dev/null
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

in_ns() {
	local ns=$1
	shift
	nsenter --net="/var/run/netns/$ns" "$@"
}

# stat_of NS IFNAME COUNTER: the counter's value from `xroce stats`.
stat_of() {
	in_ns "$1" "$xroce" stats "$2" | awk -v name="$3" '$1 == name { print $2 }'
}

# expect_error NS MESSAGE ARGS...: xroce ARGS must exit non-zero with MESSAGE
# as its single line on stderr and print nothing on stdout.
expect_error() {
	local ns=$1 message=$2 out err rc
	shift 2
	out=$(in_ns "$ns" "$xroce" "$@" 2>/tmp/xroce-err.$suffix)
	rc=$?
	err=$(cat /tmp/xroce-err.$suffix)
	rm -f /tmp/xroce-err.$suffix
	[ "$rc" -ne 0 ] || fail "xroce $* exited 0, expected: $message"
	[ "$err" = "$message" ] || fail "xroce $*: stderr '$err', expected '$message'"
	[ -z "$out" ] || fail "xroce $*: printed '$out' on stdout on failure"
	echo "ok   xroce $* -> exit $rc, '$message'"
}

[ -x "$xroce" ] || fail "no loader at $BUILD/xroce (make $BUILD/xroce)"
command -v ping >/dev/null || fail "ping is not installed (apt-get install iputils-ping)"
ip netns add "$ns_a" && ip netns add "$ns_b" || fail "cannot create namespaces"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b" ||
	fail "cannot create the veth pair"
for end in "$ns_a $if_a $addr_a" "$ns_b $if_b $addr_b"; do
	read -r ns dev addr <<<"$end"
	ip -n "$ns" addr add "$addr/24" dev "$dev" && ip -n "$ns" link set "$dev" up ||
		fail "cannot configure $dev"
done
# Attach/detach must leave both ends exactly so (veth's maxmtu depends on the
# peer's XDP, so compare once both ends are detached).
before_a=$(ip -n "$ns_a" -d link show dev "$if_a")
before_b=$(ip -n "$ns_b" -d link show dev "$if_b")

# Attach on both ends: native XDP on veth needs a program on the peer too.
in_ns "$ns_a" "$xroce" attach "$if_a" || fail "attach $if_a"
in_ns "$ns_b" "$xroce" attach "$if_b" || fail "attach $if_b"
for pin in link qp_table xsk_map stats config engine_stats engine_port mcast_groups; do
	[ -e "$pins/$if_a/$pin" ] || fail "no pin $pins/$if_a/$pin after attach"
done
link_a=$(ip -n "$ns_a" link show dev "$if_a")
prog_id=$(sed -n 's/.*prog\/xdp id \([0-9]*\) name xroce_xdp.*/\1/p' <<<"$link_a")
[ -n "$prog_id" ] || fail "ip link shows no native xroce_xdp program on $if_a: $link_a"
echo "ok   attach on both ends, native XDP prog id $prog_id on $if_a, pins in $pins/$if_a"

status=$(in_ns "$ns_a" "$xroce" status) || fail "status exited non-zero"
grep -q "^$if_a: pins $pins/$if_a, prog id $prog_id, .*QPs in use 0$" <<<"$status" ||
	fail "status does not list $if_a with prog id $prog_id and 0 QPs: $status"
echo "ok   status lists $if_a with its pin dir, prog id and QPs in use"

in_ns "$ns_a" ping -c 3 -i 0.2 -w 10 -q "$addr_b" >/dev/null ||
	fail "ping $addr_b from $ns_a fails while attached on both ends"
passed=$(stat_of "$ns_a" "$if_a" passed_non_roce)
[ "${passed:-0}" -ge 3 ] || fail "passed_non_roce is '$passed' after 3 ping replies"
echo "ok   ping across the veth while attached; passed_non_roce $passed"

# Datagrams to the RoCE port from a socket on the peer: one too short for a
# BTH, one a SEND ONLY for the GSI QP, which xroce does not serve.
in_ns "$ns_b" bash -c "printf x >/dev/udp/$addr_a/4791" || fail "cannot send to port 4791"
in_ns "$ns_b" bash -c "printf '\x04\x00\xff\xff\x00\x00\x00\x01\x00\x00\x00\x00ICRC' \
	>/dev/udp/$addr_a/4791" || fail "cannot send to port 4791"
for try in $(seq 20); do
	[ "$(stat_of "$ns_a" "$if_a" drop_unknown_qp)" = 1 ] && break
	sleep 0.1
done
[ "$(stat_of "$ns_a" "$if_a" drop_truncated)" = 1 ] ||
	fail "drop_truncated is not 1 after a 1-byte datagram to 4791"
[ "$(stat_of "$ns_a" "$if_a" drop_unknown_qp)" = 1 ] ||
	fail "drop_unknown_qp is not 1 after a SEND to QP 1"
echo "ok   RoCE-port datagrams dropped: drop_truncated 1, drop_unknown_qp 1"

stats=$(in_ns "$ns_a" "$xroce" stats "$if_a") || fail "stats exited non-zero"
for name in passed_non_roce redirected drop_truncated drop_bad_tver drop_bad_opcode \
	drop_bad_length drop_unknown_qp drop_qp_state drop_no_socket; do
	grep -Eq "^$name +[0-9]+$" <<<"$stats" || fail "stats has no line for $name: $stats"
done
dump=$(bpftool map dump pinned "$pins/$if_a/stats") || fail "bpftool cannot dump the stats pin"
grep -q '"drop_truncated": 1' <<<"$dump" || fail "bpftool dump has no named drop_truncated: $dump"
bpftool map dump pinned "$pins/$if_a/qp_table" | grep -q '"rx_frames"' ||
	fail "bpftool dump of qp_table has no named fields"
bpftool map dump pinned "$pins/$if_a/engine_stats" | grep -q '"rx_bad_icrc"' ||
	fail "bpftool dump of engine_stats has no named fields"
for name in engine_rx_frames engine_rx_bad_icrc engine_retransmits engine_timeouts; do
	grep -Eq "^$name +[0-9]+$" <<<"$stats" || fail "stats has no line for $name: $stats"
done
echo "ok   stats prints every counter by name; bpftool shows named fields"

qps=$(in_ns "$ns_a" "$xroce" qps "$if_a") || fail "qps exited non-zero"
[ "$qps" = "no queue pairs open on $if_a" ] || fail "qps on an idle interface: $qps"
gids=$(in_ns "$ns_a" "$xroce" gids "$if_a") || fail "gids exited non-zero"
want_gid="1 0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${addr_a//./ })"
grep -qx "$want_gid" <<<"$gids" || fail "gids has no '$want_gid': $gids"
echo "ok   qps lists no QPs on an idle interface; gids shows $addr_a as GID 1"

expect_error "$ns_a" "xroce: no such interface: nosuch$suffix" attach "nosuch$suffix"
expect_error "$ns_a" "xroce: already attached: $if_a" attach "$if_a"
expect_error "$ns_a" "xroce: no such interface: nosuch$suffix" detach "nosuch$suffix"
nobody_err=$(in_ns "$ns_a" setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$xroce" detach "$if_a" 2>&1 >/dev/null)
[ $? -ne 0 ] && [ "$nobody_err" = "xroce: not permitted (run as root)" ] ||
	fail "detach as nobody: '$nobody_err', expected 'xroce: not permitted (run as root)'"
echo "ok   xroce detach as nobody -> 'xroce: not permitted (run as root)'"
[ -e "$pins/$if_a/link" ] || fail "a refused detach removed pins"

in_ns "$ns_a" "$xroce" detach "$if_a" || fail "detach $if_a"
[ ! -e "$pins/$if_a" ] || fail "$pins/$if_a still exists after detach"
ip -n "$ns_a" link show dev "$if_a" | grep -q xdp && fail "ip link still shows xdp on $if_a"
in_ns "$ns_a" "$xroce" status | grep -q "^$if_a:" && fail "status still lists $if_a"
echo "ok   detach: no xdp on $if_a, pin dir gone, status no longer lists it"

expect_error "$ns_a" "xroce: not attached: $if_a" detach "$if_a"
expect_error "$ns_a" "xroce: not attached: $if_a" stats "$if_a"

# Someone else's XDP program: xroce must refuse and leave it alone. (bpftool,
# not `ip link ... obj`, which would leave its own directories in bpffs.)
bpftool prog load "$BUILD/bpf/xroce_xdp.bpf.o" "$foreign_pin" type xdp ||
	fail "cannot load a foreign program"
in_ns "$ns_a" bpftool net attach xdpdrv pinned "$foreign_pin" dev "$if_a" ||
	fail "cannot attach a foreign program"
foreign_id=$(bpftool prog show pinned "$foreign_pin" | sed -n 's/^\([0-9]*\): xdp .*/\1/p')
[ -n "$foreign_id" ] || fail "bpftool shows no id for the foreign program"
expect_error "$ns_a" "xroce: another XDP program is attached to $if_a: id $foreign_id name xroce_xdp (remove it first: ip link set dev $if_a xdpdrv off)" attach "$if_a"
[ ! -e "$pins/$if_a" ] || fail "a refused attach left $pins/$if_a"
ip -n "$ns_a" link show dev "$if_a" | grep -q "prog/xdp id" ||
	fail "a refused attach removed the foreign program"
in_ns "$ns_a" bpftool net detach xdpdrv dev "$if_a" || fail "cannot detach the foreign program"
rm -f "$foreign_pin"

# Attach again after detach; then detach the peer too and ping without XDP.
in_ns "$ns_a" "$xroce" attach "$if_a" >/dev/null || fail "attach after detach"
in_ns "$ns_a" "$xroce" detach "$if_a" >/dev/null || fail "second detach"
in_ns "$ns_b" "$xroce" detach "$if_b" >/dev/null || fail "detach $if_b"
[ ! -e "$pins/$if_b" ] || fail "$pins/$if_b still exists after detach"
after_a=$(ip -n "$ns_a" -d link show dev "$if_a")
after_b=$(ip -n "$ns_b" -d link show dev "$if_b")
[ "$after_a" = "$before_a" ] || fail "$if_a differs from before attach: $after_a"
[ "$after_b" = "$before_b" ] || fail "$if_b differs from before attach: $after_b"
in_ns "$ns_a" ping -c 1 -w 5 -q "$addr_b" >/dev/null || fail "ping fails after detach"
echo "ok   re-attach, detach both ends: links identical to before attach, ping without XDP"
echo "PASS"
