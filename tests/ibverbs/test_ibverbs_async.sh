#!/usr/bin/env bash
# Fork safety, asynchronous events and the shared receive queue through
# xroce's libibverbs.so.1, end to end: tests/ibverbs/async/async.c, built
# against Debian's -libverbs like any application, runs under xroce-run
# with RDMAV_FORK_SAFE=1 as the server on xroce_VETH_A and the client on
# xroce_VETH_B. ibv_fork_init is 0 and fork IBV_FORK_UNNEEDED, and an RDMA
# WRITE after fork() lands in the page the parent sees, not the one it had
# before copy-on-write, and an RDMA READ returns it; the async_fd,
# non-blocking, is EAGAIN when empty and readable (poll) for each event;
# an SRQ as ibv_create/query/modify_srq report it (a limit above max_wr
# refused), two RC QPs in RTR on it taking
# its receives in posted order (their own ibv_post_recv EINVAL), COMM_EST
# for each QP and SRQ_LIMIT_REACHED once the armed limit is crossed (then
# disarmed); ibv_destroy_srq EBUSY while QPs use it; a QP moved to ERR
# raises QP_LAST_WQE_REACHED. Both sides must print their "ok" line and
# exit 0. Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
port=18519

# shellcheck source=tests/ibverbs/ibverbs_common.sh
source tests/ibverbs/ibverbs_common.sh
ibverbs_setup test_ibverbs_async iae ibverbs-utils ibv_devinfo

ibverbs_run_two_sided async tests/ibverbs/async/async.c "$port" RDMAV_FORK_SAFE=1
e2e_check_stats
echo "test_ibverbs_async: PASS"
