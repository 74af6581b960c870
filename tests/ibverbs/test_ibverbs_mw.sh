#!/usr/bin/env bash
# Memory windows through xroce's libibverbs.so.1: the libibverbs agent of
# the memory-window interop test (tests/interop/guest/rxe_mw_peer.c, built
# here against Debian's -libverbs) runs under xroce-run on xroce_VETH_A,
# and xroce_mw_peer drives it from VETH_B with -x (its peer is xroce, not
# Soft-RoCE 6.1). Every case runs with each side owning the memory, so
# the agent binds type 1 windows with ibv_bind_mw and type 2 windows with
# IBV_WR_BIND_MW, invalidates them with IBV_WR_LOCAL_INV, is the target of
# SEND with invalidate, and reaches the other side's windows; each step
# checks exact completion statuses, opcodes, flags, keys and the memory of
# both sides (see xroce_mw_peer.c). Both programs must exit 0 with
# "RESULT PASS" and the session ended by BYE.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
port=18521
cases="mw1 mw2 mw2-qp mw-access send-inv send-inv-bad"

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_mw ivm ibverbs-utils ibv_devinfo
driver=$BUILD/tests/xroce_mw_peer
[ -x "$driver" ] || fail "$driver is missing (make all)"

agent=$logdir/rxe_mw_peer
cc -std=gnu11 -Wall -Wextra -Werror -o "$agent" tests/interop/guest/rxe_mw_peer.c -libverbs ||
	fail "rxe_mw_peer.c does not build against <infiniband/verbs.h>"

# mw_run CASE OWNER: one run with a fresh pair of processes, QPs and windows.
mw_run() {
	local case=$1 owner=$2 agent_status=0 driver_status=0
	local agent_log=$logdir/$case-$owner.agent.log driver_log=$logdir/$case-$owner.driver.log
	netns_exec "$NETNS_A" timeout 90 "$run" "$agent" -d "xroce_$VETH_A" -x "$gid_a" \
		-p "$port" -t 80 >"$agent_log" 2>&1 &
	server_pid=$!
	# xroce_mw_peer retries a refused connect while the agent starts.
	netns_exec "$NETNS_B" timeout 100 "$driver" -d "$VETH_B" -p "$port" -x \
		"$case" "$owner" "$ADDR_A" >"$driver_log" 2>&1 || driver_status=$?
	wait "$server_pid" || agent_status=$?
	server_pid=""
	if ! grep -q "^RESULT PASS$" "$driver_log" || [ "$driver_status" -ne 0 ] ||
		[ "$agent_status" -ne 0 ] || ! grep -q "^session ended with BYE$" "$agent_log"; then
		sed 's/^/    driver| /' "$driver_log" | tail -n 25
		sed 's/^/    agent | /' "$agent_log" | tail -n 25
		fail "$case, $owner owns: xroce_mw_peer exit $driver_status," \
			"rxe_mw_peer exit $agent_status ($(grep -m1 '^RESULT' "$driver_log"))"
	fi
	echo "ok   $case, $owner owns: $(grep -c '^  \[' "$driver_log") steps," \
		"agent on $(sed -n 's/^device //p' "$agent_log")"
}

for case in $cases; do
	mw_run "$case" rxe
	mw_run "$case" xroce
done
mw_run send-inv-fmr xroce
e2e_check_stats
echo "test_ibverbs_mw: PASS"
