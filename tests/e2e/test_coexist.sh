#!/usr/bin/env bash
# xroce beside what else runs on an interface, and where it is run from, on a
# veth pair between two namespaces:
#   1. `ip netns exec NS xroce attach IF` (a private mount namespace whose
#      /sys hides bpffs): fails with the nsenter hint, and leaves no pins and
#      no XDP; an application opening the device there fails with ENOMEDIUM.
#   2. another XDP program (a pass program compiled here), native, then
#      generic: attach fails with one line naming its id and name and the
#      `ip link` command that removes it, opening the device fails with
#      EBUSY; the program stays, no pins are left.
#   3. --mode generic: ip link shows xdpgeneric, status "mode generic";
#      --mode native on a bridge (no native XDP in its driver) fails saying
#      so; no --mode on the bridge falls back to generic with one warning.
#      An unknown mode is refused.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
opener=$BUILD/tests/open_device
xroce=$BUILD/xroce
pins=/sys/fs/bpf/xroce
enomedium=123 ebusy=16

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_coexist "$opener" "$xroce"
command -v clang >/dev/null || fail "clang is missing (make deps)"
command -v bpftool >/dev/null || fail "bpftool is missing (make deps)"
foreign_pin=/sys/fs/bpf/xroce-test-coexist-$$
trap 'rm -f "$foreign_pin"; e2e_cleanup' EXIT

netns_pair st2 "$(e2e_subnet)" || fail "could not create the namespaces"
bridge=${VETH_A}br
ip -n "$NETNS_A" link add "$bridge" type bridge || fail "cannot create a bridge in $NETNS_A"
NETNS_VETHS+=("$NETNS_A:$bridge")

# expect_error CMD... : CMD must exit non-zero, print nothing on stdout and
# the line in $message on stderr.
expect_error() {
	local out err rc
	out=$("$@" 2>"$logdir/err")
	rc=$?
	err=$(cat "$logdir/err")
	[ "$rc" -ne 0 ] || fail "$* exited 0, expected: $message"
	[ "$err" = "$message" ] || fail "$*: stderr '$err', expected '$message'"
	[ -z "$out" ] || fail "$*: printed '$out' on stdout on failure"
}

# expect_no_attachment DEV: no pins for DEV and no XDP on it (in NETNS_A).
expect_no_attachment() {
	[ ! -e "$pins/$1" ] || fail "$pins/$1 exists: $(ls "$pins/$1")"
	ip -n "$NETNS_A" link show dev "$1" | grep -q xdp &&
		fail "$1 has XDP: $(ip -n "$NETNS_A" link show dev "$1")"
	return 0
}

# expect_open_error DEV ERRNO: open_device DEV in NETNS_A (through ip netns
# exec when IP_NETNS_EXEC is set) must fail with ERRNO.
expect_open_error() {
	local out
	if [ -n "${IP_NETNS_EXEC:-}" ]; then
		out=$(ip netns exec "$NETNS_A" "$opener" "$1")
	else
		out=$(netns_exec "$NETNS_A" "$opener" "$1")
	fi && fail "open_device $1 succeeded: $out"
	grep -q "^open $1: errno $2: " <<<"$out" || fail "open_device $1: '$out', expected errno $2"
	echo "     $out"
}

# ---- 1. ip netns exec.
message="xroce: /sys/fs/bpf here is a private mount namespace's (ip netns exec), not the host's bpffs: run nsenter --net=/var/run/netns/$NETNS_A xroce attach $VETH_A instead"
expect_error ip netns exec "$NETNS_A" "$xroce" attach "$VETH_A"
expect_no_attachment "$VETH_A"
IP_NETNS_EXEC=1 expect_open_error "$VETH_A" "$enomedium"
expect_no_attachment "$VETH_A"
echo "ok   ip netns exec ... xroce attach: '$message', no pins, no XDP"

# ---- 2. Another XDP program, native then generic.
cat >"$logdir/pass.bpf.c" <<'EOF'
#include <linux/bpf.h>
__attribute__((section("xdp"), used)) int xr_test_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
__attribute__((section("license"), used)) char program_license[] = "GPL";
EOF
clang -O2 -target bpf -I"/usr/include/$(uname -m)-linux-gnu" -c "$logdir/pass.bpf.c" \
	-o "$logdir/pass.bpf.o" || fail "cannot compile the pass program"
bpftool prog load "$logdir/pass.bpf.o" "$foreign_pin" type xdp || fail "cannot load the pass program"
foreign_id=$(bpftool prog show pinned "$foreign_pin" | sed -n 's/^\([0-9]*\): xdp .*/\1/p')
[ -n "$foreign_id" ] || fail "bpftool shows no id for the pass program"
for hook in xdpdrv xdpgeneric; do
	netns_exec "$NETNS_A" bpftool net attach "$hook" pinned "$foreign_pin" dev "$VETH_A" ||
		fail "cannot attach the pass program ($hook)"
	message="xroce: another XDP program is attached to $VETH_A: id $foreign_id name xr_test_pass (remove it first: ip link set dev $VETH_A $hook off)"
	expect_error netns_exec "$NETNS_A" "$xroce" attach "$VETH_A"
	expect_error netns_exec "$NETNS_A" "$xroce" attach --mode generic "$VETH_A"
	expect_open_error "$VETH_A" "$ebusy"
	[ ! -e "$pins/$VETH_A" ] || fail "a refused attach left $pins/$VETH_A"
	ip -n "$NETNS_A" link show dev "$VETH_A" | grep -q "prog/xdp id $foreign_id " ||
		fail "the pass program is gone ($hook): $(ip -n "$NETNS_A" link show dev "$VETH_A")"
	ip -n "$NETNS_A" link set dev "$VETH_A" "$hook" off || fail "the hint's ip link command failed"
	ip -n "$NETNS_A" link show dev "$VETH_A" | grep -q xdp && fail "the hint's command left XDP on"
	echo "ok   the pass program ($hook) stays; '$message'; its command removes it"
done
rm -f "$foreign_pin"

# ---- 3. Modes.
out=$(netns_exec "$NETNS_A" "$xroce" attach --mode generic "$VETH_A") || fail "attach --mode generic"
[ "$out" = "attached to $VETH_A in generic mode, pinned under $pins/$VETH_A" ] ||
	fail "attach --mode generic said: $out"
ip -n "$NETNS_A" link show dev "$VETH_A" | grep -q " xdpgeneric " ||
	fail "no generic XDP on $VETH_A: $(ip -n "$NETNS_A" link show dev "$VETH_A")"
netns_exec "$NETNS_A" "$xroce" status | grep -q "^$VETH_A: .*, ifindex [0-9]*, mode generic, QPs in use 0$" ||
	fail "status does not show $VETH_A in generic mode: $(netns_exec "$NETNS_A" "$xroce" status)"
netns_exec "$NETNS_A" "$xroce" detach "$VETH_A" >/dev/null || fail "detach $VETH_A"
expect_no_attachment "$VETH_A"
echo "ok   attach --mode generic: xdpgeneric, status says mode generic"

message="xroce: $bridge's driver has no native XDP support: use --mode generic"
expect_error netns_exec "$NETNS_A" "$xroce" attach --mode native "$bridge"
expect_no_attachment "$bridge"
out=$(netns_exec "$NETNS_A" "$xroce" attach "$bridge" 2>"$logdir/err") || fail "attach $bridge"
[ "$(cat "$logdir/err")" = "xroce: warning: $bridge's driver has no native XDP support: attached in generic mode (slower)" ] ||
	fail "attach $bridge warned: '$(cat "$logdir/err")'"
[ "$out" = "attached to $bridge in generic mode, pinned under $pins/$bridge" ] ||
	fail "attach $bridge said: $out"
netns_exec "$NETNS_A" "$xroce" status | grep -q "^$bridge: .*, mode generic, QPs in use 0$" ||
	fail "status does not show $bridge in generic mode"
netns_exec "$NETNS_A" "$xroce" detach "$bridge" >/dev/null || fail "detach $bridge"
echo "ok   a bridge: --mode native refused, no --mode falls back to generic with one warning"

message="xroce: unknown mode: turbo (native or generic)"
expect_error netns_exec "$NETNS_A" "$xroce" attach --mode turbo "$VETH_A"
expect_no_attachment "$VETH_A"
echo "ok   attach --mode turbo refused"
echo "test_coexist: PASS"
