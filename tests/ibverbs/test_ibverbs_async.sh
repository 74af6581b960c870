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

prog=$logdir/async
cc -std=gnu11 -Wall -Wextra -Werror -o "$prog" tests/ibverbs/async/async.c -libverbs ||
	fail "async.c does not build against <infiniband/verbs.h>"

# netns_run_pair runs PROG server|client ARGS: PROG is the program under
# xroce-run, with the fork safety rdma-core documents asked for.
printf '#!/bin/sh\nexec env RDMAV_FORK_SAFE=1 %q %q "$@"\n' "$run" "$prog" >"$logdir/under-xroce-run"
chmod +x "$logdir/under-xroce-run"
netns_run_pair "$logdir" 120 "$logdir/under-xroce-run" "xroce_$VETH_A" "$gid_a" "$port" -- \
	"xroce_$VETH_B" "$gid_b" "$port" "$ADDR_A" >"$logdir/pair.log" ||
	{ cat "$logdir/pair.log"; fail "$NETNS_PAIR_STATUS (124 = timed out)"; }
if ! grep -q "^async server: ok:" "$logdir/server.log" ||
	! grep -q "^async client: ok:" "$logdir/client.log"; then
	cat "$logdir/pair.log"
	fail "a side did not print its ok line"
fi
grep -h "^async" "$logdir/server.log" "$logdir/client.log" | sed 's/^/ok   /'
e2e_check_stats
echo "test_ibverbs_async: PASS"
