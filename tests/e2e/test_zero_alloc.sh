#!/usr/bin/env bash
# The data path allocates nothing: zero_alloc_e2e runs 10,000 checked
# operations (SEND, WRITE, READ, FAA, CAS) across a veth pair through XDP
# and AF_XDP, counting every heap allocation in both processes (engine
# threads included) while they run; both must count none.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/zero_alloc_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_zero_alloc "$e2e" "$xroce"

netns_pair zal "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
netns_run_pair "$logdir" 180 "$e2e" "$VETH_A" -p "$roce_port" -- \
	"$VETH_B" "$ADDR_A" -p "$roce_port" ||
	fail "zero_alloc_e2e: $NETNS_PAIR_STATUS (124 = timed out)"
for side in server client; do
	grep -q "^\[$side\] 10000 operations checked; 0 allocations, 0 frees while they ran$" \
		"$logdir/$side.log" || fail "$side: the data path allocated"
done
echo "test_zero_alloc: PASS"
