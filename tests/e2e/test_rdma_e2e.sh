#!/usr/bin/env bash
# RDMA WRITE, WRITE with immediate, READ and atomics end to end across a veth
# pair between two namespaces, through the real XDP program and AF_XDP:
# `xroce attach` on both ends, then rdma_e2e's server (the target, which
# exposes its memory regions) and client (the initiator) run every case:
# WRITE / WRITE_IMM / READ at 0, 1, MTU, MTU+1 bytes and 1 MiB, 8 READs
# outstanding at once, CAS hit and miss, FAA, and the access errors, each on
# a fresh QP pair. Both must pass. Ends with both ends' xroce stats: no
# malformed-frame drops, and frames were redirected to AF_XDP.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/rdma_e2e
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_rdma_e2e "$e2e" "$xroce"

netns_pair rde "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# Target in A, initiator in B.
e2e_run_cases 180

e2e_check_stats
echo "ok   no malformed-frame drops; frames redirected on both ends"
echo "test_rdma_e2e: PASS"
