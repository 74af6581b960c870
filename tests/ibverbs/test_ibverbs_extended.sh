#!/usr/bin/env bash
# The extended verbs through xroce's libibverbs.so.1, end to end:
# tests/ibverbs/extended/extended.c, built against Debian's -libverbs like
# any application, runs under xroce-run as the server on xroce_VETH_A and
# the client on xroce_VETH_B. ibv_create_cq_ex with ibv_start/next/end_poll
# and every ibv_wc_read_* value checked against the work request;
# ibv_create_qp_ex with the ibv_wr_* builders and setters over RC (SEND,
# SEND with immediate, WRITE, WRITE with immediate, READ, both atomics; one
# SGE, SGE lists, inline data; a READ through a type 2 memory window bound
# with ibv_wr_bind_mw and invalidated with ibv_wr_local_inv) and UD (ibv_wr_set_ud_addr, the answer
# through ibv_create_ah_from_wc); bad input gets libibverbs' errno and
# posts nothing; ibv_query_device_ex and ibv_query_port's extended
# attributes. Both sides must print their "ok" line and exit 0.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
port=18517

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_extended ive ibverbs-utils ibv_devinfo

ibverbs_run_two_sided extended tests/ibverbs/extended/extended.c "$port"
e2e_check_stats
echo "test_ibverbs_extended: PASS"
