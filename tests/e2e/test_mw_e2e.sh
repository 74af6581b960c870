#!/usr/bin/env bash
# Memory windows, fast registration and invalidation end to end, through the
# real XDP program and AF_XDP (tests/e2e/mw_e2e.c has every case):
#   1. every regular case across a veth pair between two namespaces: type 1
#      windows (bind, edges, rights, rebind, unbind), type 2 windows (bound by
#      work request, LOCAL_INV, only through their QP), SEND with invalidate
#      (of a window, of a fast-reg MR, and of keys that cannot be invalidated),
#      fast registration (discontiguous pages at a chosen iova, re-registration,
#      READ with invalidate), ordering of WRITE/READ and LOCAL_INV, bind errors,
#      xr_dereg_mr under a bound window, invalid arguments. Both sides must pass;
#      then no malformed-frame drops and frames redirected on both ends.
#   2. through tests/e2e/middlebox.c (namespaces A <-> M <-> B), one run each:
#      retransmit      the client's first WRITE frame is dropped: the target
#                      invalidates its window, the retransmission is refused
#                      (REM_ACCESS_ERR, target memory unchanged);
#      late-duplicate  a copy of the client's first WRITE frame comes 300 ms
#                      late, after the key was invalidated: nothing is placed;
#      partial         the 3rd WRITE frame (the last packet of a 3-packet
#                      WRITE) is dropped: the target invalidates once the first
#                      two landed; the rest is refused and never lands.
#      read-replay     the first READ response is dropped: the target
#                      invalidates its window; the READ asked again is
#                      refused (not replayed) and nothing lands at the
#                      initiator.
#      send-inv-retransmit  the ACK of a SEND_WITH_INV is dropped: the
#                      retransmitted SEND is a duplicate, acknowledged without
#                      being delivered or invalidating again (one receive, QP
#                      in RTS); the key is invalid afterwards.
#      The middlebox counters must show the drop or the late copy, the
#      retransmission and the NAK (none for send-inv-retransmit). For 300 ms
#      after a drop, the middlebox also drops copies of the lost packet (a
#      tail-loss probe comes within a millisecond or so, a replayed response
#      as soon): the target must have acted first, which takes it
#      milliseconds; the ACK timeout's retransmission comes 537 ms after.
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/mw_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_mw_e2e "$e2e" "$middlebox" "$xroce"

# 1. Every regular case, target in A, initiator in B.
netns_pair mwe "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
e2e_run_cases 120
e2e_check_stats
echo "ok   no malformed-frame drops; frames redirected on both ends"
netns_cleanup

# 2. The impaired cases, target in A, initiator in B: the client's requests go b2a.
netns_middlebox_pair mwm "$(e2e_subnet)" || fail "could not create the middlebox namespaces"
e2e_attach_both

# impaired_case NAME MIDDLEBOX_ARGS...: mw_e2e --impaired NAME through a fresh middlebox.
impaired_case() {
	local name=$1 side
	shift
	mb_start "$@"
	netns_run_pair "$logdir" 60 "$e2e" "$VETH_A" -p "$roce_port" --impaired "$name" -- \
		"$VETH_B" "$ADDR_A" -p "$roce_port" --impaired "$name" ||
		fail "$name: $NETNS_PAIR_STATUS (124 = timed out)"
	roce_port=$((roce_port + 1))
	mb_stop
	echo "--- middlebox:"
	sed 's/^/    /' "$logdir/mb.log"
	for side in server client; do
		grep -q "^\[$side\] PASS: 0 of 1 cases failed$" "$logdir/$side.log" ||
			fail "$name: $side: no PASS summary line"
	done
	target_qpn=$(client_qpn 1 peer)
	initiator_qpn=$(client_qpn 1 local)
	if [ -z "$target_qpn" ] || [ -z "$initiator_qpn" ]; then
		fail "$name: the client printed no QP numbers"
	fi
}

# expect_refused_retransmission NAME DIR COUNTER: the middlebox dropped one
# frame (COUNTER of DIR), the request was sent again, and earned a NAK.
expect_refused_retransmission() {
	local name=$1
	[ "$(mb_dir "$2" "$3")" = 1 ] ||
		fail "$name: the middlebox's $2 $3 is $(mb_dir "$2" "$3"), expected 1"
	[ "$(mb_qp b2a "$target_qpn" retransmits)" -ge 1 ] ||
		fail "$name: no retransmission to QP $target_qpn"
	[ "$(mb_qp a2b "$initiator_qpn" naks)" -ge 1 ] ||
		fail "$name: no NAK to QP $initiator_qpn"
}

impaired_case retransmit --b2a-drop-write 1 --b2a-drop-copies-us 300000
expect_refused_retransmission retransmit b2a writes_dropped
echo "ok   retransmit: a WRITE retransmitted after LOCAL_INV of its window was refused; nothing landed"

impaired_case late-duplicate --b2a-late-write 1 --late-write-us 300000
[ "$(mb_dir b2a writes_late)" = 1 ] ||
	fail "late-duplicate: the middlebox sent $(mb_dir b2a writes_late) late copies, expected 1"
dups=$(netns_exec "$NETNS_A" "$xroce" stats "$VETH_A" |
	awk '$1 == "dups_answered" || $1 == "engine_dup_requests" { n += $2 } END { print n + 0 }')
[ "$dups" -ge 1 ] || fail "late-duplicate: the target saw no duplicate request"
echo "ok   late-duplicate: the WRITE's copy came 300 ms late, after LOCAL_INV, and placed nothing ($dups duplicate(s) answered)"

impaired_case partial --b2a-drop-write 3 --b2a-drop-copies-us 300000
expect_refused_retransmission partial b2a writes_dropped
echo "ok   partial: the last packet of a 3-packet WRITE, retransmitted after LOCAL_INV, was refused; its bytes never landed"

impaired_case read-replay --a2b-drop-read-response 1 --a2b-drop-copies-us 300000
expect_refused_retransmission read-replay a2b read_responses_dropped
echo "ok   read-replay: a READ asked again after LOCAL_INV of its window was refused; nothing landed at the initiator"

impaired_case send-inv-retransmit --a2b-drop-ack 1
[ "$(mb_dir a2b plain_acks_dropped)" = 1 ] ||
	fail "send-inv-retransmit: the middlebox dropped $(mb_dir a2b plain_acks_dropped) ACKs, expected 1"
[ "$(mb_qp b2a "$target_qpn" retransmits)" -ge 1 ] ||
	fail "send-inv-retransmit: the SEND_WITH_INV was not retransmitted"
[ "$(mb_qp a2b "$initiator_qpn" naks)" = 1 ] ||
	fail "send-inv-retransmit: $(mb_qp a2b "$initiator_qpn" naks) NAKs, expected 1 (for the last WRITE only)"
echo "ok   send-inv-retransmit: the SEND_WITH_INV retransmitted after its ACK was lost was acknowledged, not delivered or invalidating again"

e2e_check_stats
echo "test_mw_e2e: PASS"
