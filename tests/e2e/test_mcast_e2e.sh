#!/usr/bin/env bash
# Multicast end to end through the real XDP program and AF_XDP: three
# namespaces on one Linux bridge (a fourth namespace; snooping off, so the
# bridge floods every group to every port, as a switch does that knows no
# members), xroce attached on each. mcast_e2e runs a sender in S, a receiver
# with two UD QPs in R1 and one with two in R2; the script orders them:
#   - R1 attaches both QPs (one of them twice), R2 only its first: while a QP
#     is attached, `ip maddr` on the receiver shows the IP group and its
#     multicast MAC (the kernel joined it: IGMP or MLD);
#   - 40 messages: each attached QP gets each one exactly once, byte for
#     byte with the GRH naming the group and the sender, R2's other QP none;
#   - R2 detaches: its membership is gone from `ip maddr`, it gets nothing
#     more, and its XDP drops the next 20 (drop_mcast_unjoined +20, nothing
#     reaches its engine) while R1's QPs get them; a QP attached cannot be
#     destroyed (EBUSY), detaching what is not attached is EINVAL;
#   - R1 detaches one QP, then the other: delivery stops for each at once.
# First over IPv4 (group 239.1.2.3, the first IPv4-mapped GIDs), then over
# IPv6 (group ff12::1:2:3, link-local GIDs).
# bpftool shows each receiver's pinned group table (the group, its QPs, the
# frames XDP steered), empty once the last QP detached.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/mcast_e2e
xroce=$BUILD/xroce

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_mcast_e2e "$e2e" "$xroce"

# shellcheck source=tests/e2e/members.sh
source tests/e2e/members.sh
trap 'member_stop_all; e2e_cleanup' EXIT

# The star: S, R1, R2 each with a veth to bridge br0 in namespace M.
id=$$
subnet=$(e2e_subnet)
ns_m="xroce-mc-$id-m"
ip netns add "$ns_m" || fail "could not create $ns_m"
NETNS_CREATED+=("$ns_m")
ip -n "$ns_m" link add br0 type bridge mcast_snooping 0 || fail "no bridge"
ip -n "$ns_m" link set br0 up
declare -A NS DEV ADDR
n=1
for end in s r1 r2; do
	NS[$end]="xroce-mc-$id-$end"
	DEV[$end]="xmc$id$end"
	ADDR[$end]="$subnet.$n"
	n=$((n + 1))
	ip netns add "${NS[$end]}" || fail "could not create ${NS[$end]}"
	NETNS_CREATED+=("${NS[$end]}")
	ip link add "${DEV[$end]}" netns "${NS[$end]}" type veth peer name "${DEV[$end]}b" \
		netns "$ns_m" || fail "could not create ${DEV[$end]}"
	NETNS_VETHS+=("${NS[$end]}:${DEV[$end]}")
	ip -n "$ns_m" link set "${DEV[$end]}b" master br0 up &&
		ip -n "${NS[$end]}" link set lo up &&
		ip -n "${NS[$end]}" addr add "${ADDR[$end]}/24" dev "${DEV[$end]}" &&
		ip -n "${NS[$end]}" link set "${DEV[$end]}" up &&
		netns_exec "${NS[$end]}" "$xroce" attach "${DEV[$end]}" >/dev/null ||
		fail "could not set up ${DEV[$end]}"
done

# expect_counts MS END Q N COUNTS...: waits until END's QP Q has N (MS ms at
# most), then every QP's count must be as COUNTS says. A count that must not
# grow is asked for as one more than it is, waiting MS for what must not come.
expect_counts() {
	local ms=$1 end=$2 q=$3 n=$4
	shift 4
	member_ask "$end" "wait $q $n $ms"
	[ "$REPLY" = "ok counts $* dups 0 bad 0" ] ||
		fail "$end: '$REPLY', expected 'ok counts $* dups 0 bad 0' (each message once, exact)"
}

# xdp_counter END NAME: a counter of END's `xroce stats`.
xdp_counter() {
	netns_exec "${NS[$1]}" "$xroce" stats "${DEV[$1]}" |
		awk -v c="$2" '$1 == c { v = $2 } END { print v + 0 }'
}

# member_of END WANT(yes|no) ADDR MAC: whether `ip maddr` lists the group as it should.
member_of() {
	local end=$1 want=$2 addr=$3 mac=$4 maddr has=no
	maddr=$(ip -n "${NS[$end]}" maddr show dev "${DEV[$end]}")
	grep -Eq "^\s+inet6? +$addr\$" <<<"$maddr" && grep -q "link  $mac" <<<"$maddr" && has=yes
	[ "$has" = "$want" ] && return 0
	echo "$maddr"
	fail "$end: group $addr ($mac) in ip maddr: $has, expected $want"
}

# group_entry END: "GID QPS RX_FRAMES" of each entry of END's pinned group table, as bpftool dumps it.
group_entry() {
	bpftool -j map dump pinned "/sys/fs/bpf/xroce/${DEV[$1]}/mcast_groups" | python3 -c '
import ipaddress, json, sys
for e in json.load(sys.stdin):
    e = e.get("formatted", e)
    gid = ipaddress.IPv6Address(bytes(e["key"]["gid"]))
    gid = gid.ipv4_mapped or gid
    print(gid, e["value"]["qps_attached"], e["value"]["rx_frames"])'
}

# run_family LABEL GROUP GROUP_MAC GID_INDEX
run_family() {
	local label=$1 group=$2 mac=$3 gid_index=$4 sender_qp sender_gid before after
	member_start s "${NS[s]}" "$e2e" sender "${DEV[s]}" "$gid_index" "$group"
	read -r _ sender_qp sender_gid <<<"$REPLY"
	[ -n "$sender_gid" ] || fail "sender: no 'qp' line: $REPLY"
	for end in r1 r2; do
		member_start "$end" "${NS[$end]}" "$e2e" receiver "${DEV[$end]}" "$gid_index" "$group" 2
		[ "$REPLY" = ready ] || fail "$end: $REPLY"
		member_ask "$end" "sender $sender_qp $sender_gid"
		member_of "$end" no "$group" "$mac"
	done

	member_ask r1 "attach 0" && member_ask r1 "attach 1" && member_ask r1 "attach 0" && member_ask r2 "attach 0"
	member_of r1 yes "$group" "$mac"
	member_of r2 yes "$group" "$mac"
	echo "ok   $label: attached (R1 both QPs, one twice; R2 one): $group and $mac in ip maddr"

	member_ask s "send 0 40 512" "ok sent 40"
	expect_counts 5000 r1 1 40 40 40
	expect_counts 5000 r1 0 40 40 40
	expect_counts 5000 r2 0 40 40 0
	echo "ok   $label: 40 messages, each once to each of the 3 attached QPs, none to the other"
	[ "$(group_entry r1)" = "$group 2 40" ] && [ "$(group_entry r2)" = "$group 1 40" ] ||
		fail "$label: bpftool shows R1's group table as '$(group_entry r1)', R2's as '$(group_entry r2)'; expected '$group 2 40' and '$group 1 40'"
	echo "ok   $label: bpftool: the group in each table, its QPs attached, 40 frames steered"

	member_ask r2 "destroy 0" "ok destroy 0 errno EBUSY"
	member_ask r2 "detach 1" "error detach 1: EINVAL"
	member_ask r2 "detach 0"
	member_of r2 no "$group" "$mac"
	[ -z "$(group_entry r2)" ] || fail "$label: R2's group table still holds $(group_entry r2)"
	before=$(xdp_counter r2 drop_mcast_unjoined)
	local engine_before
	engine_before=$(xdp_counter r2 engine_rx_unknown_qp)
	member_ask s "send 40 20 512" "ok sent 20"
	expect_counts 5000 r1 0 60 60 60
	expect_counts 1000 r2 0 41 40 0
	after=$(xdp_counter r2 drop_mcast_unjoined)
	[ $((after - before)) -eq 20 ] ||
		fail "$label: R2 drop_mcast_unjoined moved by $((after - before)), expected 20"
	[ "$(xdp_counter r2 engine_rx_unknown_qp)" = "$engine_before" ] ||
		fail "$label: R2's engine saw frames of a group it left"
	echo "ok   $label: R2 detached: left the group, got none of 20 more, XDP dropped them (drop_mcast_unjoined +20); destroy while attached EBUSY, detach not attached EINVAL"

	member_ask r1 "detach 1"
	member_ask s "send 60 10 512" "ok sent 10"
	expect_counts 5000 r1 0 70 70 60
	member_ask r1 "detach 0"
	member_of r1 no "$group" "$mac"
	before=$(xdp_counter r1 drop_mcast_unjoined)
	member_ask s "send 70 10 512" "ok sent 10"
	expect_counts 1000 r1 0 71 70 60
	after=$(xdp_counter r1 drop_mcast_unjoined)
	[ $((after - before)) -eq 10 ] ||
		fail "$label: R1 drop_mcast_unjoined moved by $((after - before)), expected 10"
	echo "ok   $label: R1 detached one QP, then the other: delivery stopped for each at once"

	member_quit_all
}

run_family IPv4 239.1.2.3 01:00:5e:01:02:03 -1

# Link-local GIDs answer once duplicate address detection is done.
for end in s r1 r2; do
	for _ in $(seq 100); do
		[ -z "$(ip -n "${NS[$end]}" -6 addr show dev "${DEV[$end]}" tentative)" ] && continue 2
		sleep 0.1
	done
	fail "${DEV[$end]}: IPv6 addresses still tentative after 10 s"
done
run_family IPv6 ff12::1:2:3 33:33:00:02:00:03 0
echo "test_mcast_e2e: PASS"
