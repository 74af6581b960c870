#!/usr/bin/env bash
# xr_reg_mr checks and pins memory as ibv_reg_mr does (reg_mr_e2e, on
# VETH_A's device in NETNS_A): EFAULT on unmapped and read-only memory asked
# for write rights, pages locked until the last MR over them goes, ENOMEM
# beyond RLIMIT_MEMLOCK once CAP_IPC_LOCK is dropped. Remote accesses into
# registered memory are test_rdma_e2e's and test_mw_e2e's.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/reg_mr_e2e
xroce=$BUILD/xroce

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_reg_mr "$e2e" "$xroce"

netns_pair rmr "$(e2e_subnet)" || fail "could not create the namespaces"
netns_attach "$NETNS_A:$VETH_A" || fail "attach $VETH_A"

netns_exec "$NETNS_A" timeout 60 "$e2e" "$VETH_A" >"$logdir/reg_mr.log" 2>&1
status=$?
sed 's/^/    /' "$logdir/reg_mr.log"
[ $status -eq 0 ] || fail "reg_mr_e2e (exit $status)"
echo "PASS"
