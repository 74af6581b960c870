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

prog=$logdir/extended
cc -std=gnu11 -Wall -Wextra -Werror -o "$prog" tests/ibverbs/extended/extended.c -libverbs ||
	fail "extended.c does not build against <infiniband/verbs.h>"

# netns_run_pair runs PROG server|client ARGS: PROG is the program under xroce-run.
printf '#!/bin/sh\nexec %q %q "$@"\n' "$run" "$prog" >"$logdir/under-xroce-run"
chmod +x "$logdir/under-xroce-run"
netns_run_pair "$logdir" 120 "$logdir/under-xroce-run" "xroce_$VETH_A" "$gid_a" "$port" -- \
	"xroce_$VETH_B" "$gid_b" "$port" "$ADDR_A" >"$logdir/pair.log" ||
	{ cat "$logdir/pair.log"; fail "$NETNS_PAIR_STATUS (124 = timed out)"; }
if ! grep -q "^extended server: ok:" "$logdir/server.log" ||
	! grep -q "^extended client: ok:" "$logdir/client.log"; then
	cat "$logdir/pair.log"
	fail "a side did not print its ok line"
fi
grep -h "^extended" "$logdir/server.log" "$logdir/client.log" | sed 's/^/ok   /'
e2e_check_stats
echo "test_ibverbs_extended: PASS"
