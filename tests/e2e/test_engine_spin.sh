#!/usr/bin/env bash
# The engine does not sleep while an operation is outstanding. xroce-pingpong
# with -e (the application sleeps on completion events, so the engine thread
# does all the work) runs 10,000 round trips of 64 B, 20,000 SENDs each way
# counted; then on both ends:
#   - engine_sleeps_in_flight is 0 (the engine never blocked in poll while a
#     SEND was unsent or unacknowledged);
#   - engine_sleeps and engine_syscalls are counted at all (> 0 on some end:
#     the engine did sleep while idle, so the first check is no accident).
# Then the same with XROCE_SPIN_IN_FLIGHT_US=0 XROCE_BUSY_POLL_US=0 (sleep
# as soon as a round finds nothing to do), 1,000 round trips: there
# engine_sleeps_in_flight must be > 0, which shows the counter sees the
# sleeps the default avoids.
# Then the engine thread's stand-by: xroce-pingpong without -e polls its CQ
# and so runs the engine itself, 20,000 round trips; engine_standby_looks,
# the times the standing-by engine thread woke to see whether the
# application still polls, summed over both ends, must be under a quarter
# of the same run's with XROCE_STANDBY_MAX_US=200 (a look every 200 us, the
# stand-by before it was spaced out), and that run's must be > 0.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
pingpong=$BUILD/xroce-pingpong
xroce=$BUILD/xroce

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
e2e_init test_engine_spin "$pingpong" "$xroce"

netns_pair spn "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

PINGPONG_LOCAL_GID_SEP=", "
# shellcheck source=tests/e2e/pingpong_common.sh
source tests/e2e/pingpong_common.sh

# sum_stat NAME: NAME's value on both ends, added.
sum_stat() {
	echo $(($(e2e_stat "$NETNS_A" "$VETH_A" "$1") + $(e2e_stat "$NETNS_B" "$VETH_B" "$1")))
}

iters=10000
run_must_pass 64 "-s 64 -e"
for end in "$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B"; do
	value=$(e2e_stat "${end%%:*}" "${end#*:}" engine_sleeps_in_flight)
	[ "$value" = 0 ] || fail "${end#*:}: engine_sleeps_in_flight is '$value' after $iters round trips, expected 0"
done
sleeps=$(sum_stat engine_sleeps)
syscalls=$(sum_stat engine_syscalls)
[ "$sleeps" -gt 0 ] || fail "engine_sleeps is 0 on both ends: the counter counts nothing"
[ "$syscalls" -gt 0 ] || fail "engine_syscalls is 0 on both ends: the counter counts nothing"
echo "ok: $iters round trips (-e): no sleep with an operation outstanding; $sleeps sleeps while idle, $syscalls syscalls"

iters=1000
PINGPONG_RUN="env XROCE_SPIN_IN_FLIGHT_US=0 XROCE_BUSY_POLL_US=0"
run_must_pass 64 "-s 64 -e"
in_flight=$(sum_stat engine_sleeps_in_flight)
[ "$in_flight" -gt 0 ] ||
	fail "XROCE_SPIN_IN_FLIGHT_US=0: engine_sleeps_in_flight is 0 after $iters round trips, expected > 0"
echo "ok: XROCE_SPIN_IN_FLIGHT_US=0: $in_flight sleeps with an operation outstanding"

iters=20000
PINGPONG_RUN=
run_must_pass 64 "-s 64"
spaced=$(sum_stat engine_standby_looks)
PINGPONG_RUN="env XROCE_STANDBY_MAX_US=200"
run_must_pass 64 "-s 64"
every=$(sum_stat engine_standby_looks)
[ "$every" -gt 0 ] || fail "XROCE_STANDBY_MAX_US=200: engine_standby_looks is 0: the counter counts nothing"
[ $((spaced * 4)) -lt "$every" ] ||
	fail "engine_standby_looks is $spaced with the default stand-by, $every with XROCE_STANDBY_MAX_US=200: not spaced out"
echo "ok: a polling application: $spaced stand-by looks (default), $every (XROCE_STANDBY_MAX_US=200)"
echo "test_engine_spin: PASS"
