# shellcheck shell=bash
# What the tests of unmodified verbs programs under xroce-run share. From
# the repository's root, with BUILD set:
#
#   source tests/ibverbs/ibverbs_common.sh
#   ibverbs_setup NAME TAG PACKAGE TOOL...
#
# ibverbs_setup NAME TAG PACKAGE TOOL...
#     sources e2e_common.sh and starts test NAME (e2e_init), fails unless
#     each TOOL (of Debian's PACKAGE) is installed, makes the namespace pair
#     TAG with xroce attached to both ends, and sets run (xroce-run) and
#     gid_a / gid_b, the indexes of each end's IPv4-mapped GID.
# ibverbs_v4_gid_index NS DEV ADDR
#     the index of DEV's IPv4-mapped GID of ADDR, as ibv_devinfo -v run in
#     NS on xroce_DEV shows it (empty when there is none).

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh

ibverbs_setup() {
	local name=$1 tag=$2 package=$3 tool
	shift 3
	run=$BUILD/xroce-run
	e2e_init "$name" "$run" "$BUILD/ibverbs/libibverbs.so.1" "$BUILD/xroce"
	for tool in "$@"; do
		command -v "$tool" >/dev/null || fail "$tool is missing ($package)"
	done
	netns_pair "$tag" "$(e2e_subnet)" || fail "could not create the namespaces"
	e2e_attach_both
	gid_a=$(ibverbs_v4_gid_index "$NETNS_A" "$VETH_A" "$ADDR_A")
	gid_b=$(ibverbs_v4_gid_index "$NETNS_B" "$VETH_B" "$ADDR_B")
	[ -n "$gid_a" ] && [ -n "$gid_b" ] ||
		fail "no IPv4-mapped GID in ibv_devinfo -v (A '$gid_a', B '$gid_b')"
}

ibverbs_v4_gid_index() {
	local ns=$1 dev=$2 addr=$3 gid
	# shellcheck disable=SC2086 # the address's four numbers
	gid=$(printf '::ffff:%d.%d.%d.%d' ${addr//./ })
	netns_exec "$ns" timeout 30 "$run" ibv_devinfo -v -d "xroce_$dev" |
		sed -nE "s/^[[:space:]]+GID\[ *([0-9]+)\]:[[:space:]]+$gid, RoCE v2$/\1/p"
}

