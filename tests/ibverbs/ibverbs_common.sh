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
# ibverbs_run_two_sided NAME SOURCE PORT [VAR=VALUE...]
#     builds SOURCE (a C program of tests/ibverbs) against Debian's
#     -libverbs as any application is built, and runs it under xroce-run,
#     with the VARs in its environment, as "NAME server" on xroce_VETH_A
#     and "NAME client" on xroce_VETH_B, meeting on PORT; fails unless both
#     exit 0 having printed "NAME SIDE: ok:", and prints those lines.
# ibverbs_no_roce_reached NS DEV
#     fails unless DEV's xroce (attached, counting every RoCEv2 frame it
#     sees) saw none: all its counters but passed_non_roce are 0; prints an
#     ok line. Needs xroce set (netns_xroce).
# perftest_result_ok LOG KIND BYTES ITERATIONS
#     LOG has perftest's result line for BYTES and ITERATIONS with sane
#     figures; KIND is bw (a positive average and message rate; a server's
#     peak may be 0) or lat (minimum <= typical <= maximum, all positive).
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

ibverbs_run_two_sided() {
	local name=$1 source=$2 port=$3 prog
	shift 3
	prog=$logdir/$name
	cc -std=gnu11 -Wall -Wextra -Werror -o "$prog" "$source" -libverbs ||
		fail "$source does not build against <infiniband/verbs.h>"
	# netns_run_pair runs WRAPPER server|client ARGS: the program under xroce-run.
	printf '#!/bin/sh\nexec env %s %q %q "$@"\n' "$*" "$run" "$prog" >"$logdir/under-xroce-run"
	chmod +x "$logdir/under-xroce-run"
	netns_run_pair "$logdir" 120 "$logdir/under-xroce-run" "xroce_$VETH_A" "$gid_a" "$port" -- \
		"xroce_$VETH_B" "$gid_b" "$port" "$ADDR_A" >"$logdir/pair.log" ||
		{ cat "$logdir/pair.log"; fail "$NETNS_PAIR_STATUS (124 = timed out)"; }
	if ! grep -q "^$name server: ok:" "$logdir/server.log" ||
		! grep -q "^$name client: ok:" "$logdir/client.log"; then
		cat "$logdir/pair.log"
		fail "a side did not print its ok line"
	fi
	grep -h "^$name" "$logdir/server.log" "$logdir/client.log" | sed 's/^/ok   /'
}

ibverbs_no_roce_reached() {
	local ns=$1 dev=$2 wire
	netns_exec "$ns" "$xroce" stats "$dev" >"$logdir/stats_$dev" || fail "xroce stats $dev"
	wire=$(awk '$1 !~ /^engine_/ && $1 != "passed_non_roce" { n += $2 } END { print n + 0 }' \
		"$logdir/stats_$dev")
	[ "$wire" -eq 0 ] || { cat "$logdir/stats_$dev"; fail "$wire RoCE frames reached $dev"; }
	echo "ok   no RoCE frame reached $dev"
}

perftest_result_ok() {
	local log=$1 kind=$2 bytes=$3 count=$4
	awk -v kind="$kind" -v bytes="$bytes" -v count="$count" '
		header && NF >= 5 && $1 ~ /^[0-9]+$/ {
			found = 1
			if ($1 != bytes || $2 != count) bad = 1
			if (kind == "bw" && !($3 >= 0 && $4 > 0 && $5 > 0)) bad = 1
			if (kind == "lat" && !($3 > 0 && $3 <= $5 && $5 <= $4 && $6 > 0)) bad = 1
		}
		/^ *#bytes/ { header = 1 }
		END { exit !(found && !bad) }' "$log"
}

ibverbs_v4_gid_index() {
	local ns=$1 dev=$2 addr=$3 gid
	# shellcheck disable=SC2086 # the address's four numbers
	gid=$(printf '::ffff:%d.%d.%d.%d' ${addr//./ })
	netns_exec "$ns" timeout 30 "$run" ibv_devinfo -v -d "xroce_$dev" |
		sed -nE "s/^[[:space:]]+GID\[ *([0-9]+)\]:[[:space:]]+$gid, RoCE v2$/\1/p"
}

