#!/usr/bin/env bash
# UC end to end through the impairing middlebox: namespaces A <-veth-> M
# <-veth-> B, xroce attached in A and B, tests/e2e/middlebox.c bridging in M
# with --verbose (a line for every frame it drops, duplicates or holds back).
# uc_e2e's server (the receiver) runs in A, its client (the sender) in B:
# 950 messages of 2 to 8 packets, SEND_WITH_IMM and WRITE_WITH_IMM in six
# bursts, over the same QP pair, each named by its immediate. Three runs,
# each with a fresh middlebox impairing what the sender sends (b2a):
#   clean     no impairment: every message reported;
#   loss      3% loss: exactly the messages none of whose packets was
#             dropped are reported;
#   impaired  3% loss, 2% duplication, 3% reordering (a frame held back
#             until 3 later ones went): no message a packet of which was
#             dropped is reported.
# In every run uc_e2e checks that every message reported is one that was
# sent, reported once, whole and byte-exact (see uc_e2e.c); and this script,
# from uc_e2e's list of messages (first PSN, packets, reported or not) and
# the middlebox's log and counters:
#   - nothing went back a2b (UC acknowledges nothing) and nothing was sent
#     twice (no PSN at or below one seen before, the sender's engine counted
#     no retransmission, it sent each message's packets once);
#   - every frame the middlebox dropped has the PSN of a packet of a message
#     and the UC opcode of its place in it (SEND/WRITE FIRST, MIDDLE,
#     LAST_WITH_IMMEDIATE: 0x20 0x21 0x23, 0x26 0x27 0x29);
#   - the receiver's engine received exactly the frames the middlebox let
#     through (no loss it did not choose), and dropped none as malformed;
#   - engine_uc_dropped_msgs on the receiver is at least the number of
#     messages not reported whose first packet was delivered, less one: each
#     such message started and was given up when a later packet came; only
#     the last one may still be waiting. With loss alone it is at most that
#     number. A message whose first packet was dropped is not counted (the
#     receiver sees no start, and its other packets could be the rest of the
#     message before): the script prints how many there were, and how many
#     were lost entirely;
#   - loss and impaired: the middlebox dropped (and duplicated, reordered)
#     frames and some messages were not reported.
# Needs root. Env: BUILD (build dir, default build), SEED (the middlebox's
# seed; default: random, printed).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
e2e=$BUILD/tests/uc_e2e
middlebox=$BUILD/tests/middlebox
xroce=$BUILD/xroce
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
roce_port=$((20000 + $$ % 20000))

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/middlebox.sh
source tests/e2e/middlebox.sh
e2e_init test_uc_e2e "$e2e" "$middlebox" "$xroce"

netns_middlebox_pair uce "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both
echo "seed $seed (SEED=$seed reproduces the impairments)"
# The receiver's list of messages (uc_e2e.c); the client ignores it.
export UC_E2E_MESSAGES=$logdir/messages

# account: joins the receiver's list of messages with the middlebox's log;
# prints "KEY VALUE" pairs: messages packets reported missing broken
# reported_broken missing_clean first_lost entirely_lost unknown_drops
# bad_opcodes dup_lines hold_lines dup_held (frames both duplicated and held
# back, which the middlebox sends once).
account() {
	awk '
	function expected_opcode(kind, pos, packets) {
		if (pos == 0) return kind == "send" ? "0x20" : "0x26"
		if (pos == packets - 1) return kind == "send" ? "0x23" : "0x29"
		return kind == "send" ? "0x21" : "0x27"
	}
	FNR == NR {
		g = $1; packets[g] = $3; kind[g] = $4; reported[g] = ($5 == "reported")
		for (p = 0; p < $3; p++) {
			psn = ($2 + p) % 16777216
			owner[psn] = g; pos[psn] = p
		}
		n++; total += $3
		next
	}
	$1 == "b2a" && $7 == "psn" {
		if ($2 == "duplicate") { dups++; duplicated[$8] = 1 }
		if ($2 == "hold") { holds++; dup_held += ($8 in duplicated) }
		if ($2 != "drop") next
		if (!($8 in owner)) { unknown++; next }
		g = owner[$8]
		drops[g]++
		if (pos[$8] == 0) first[g] = 1
		if ($4 != expected_opcode(kind[g], pos[$8], packets[g])) bad_op++
	}
	END {
		for (g = 0; g < n; g++) {
			broken = drops[g] > 0
			nbroken += broken
			if (reported[g]) { nrep++; rep_broken += broken; continue }
			nmiss++
			miss_clean += !broken
			first_lost += (g in first)
			entirely += drops[g] == packets[g]
		}
		printf "messages %d packets %d reported %d missing %d broken %d reported_broken %d missing_clean %d first_lost %d entirely_lost %d unknown_drops %d bad_opcodes %d dup_lines %d hold_lines %d dup_held %d\n",
			n, total, nrep, nmiss, nbroken, rep_broken, miss_clean, first_lost, entirely,
			unknown, bad_op, dups, holds, dup_held
	}' "$logdir/messages" "$logdir/mb.log"
}

# acct KEY: a value of the last account.
acct() {
	awk -v k="$1" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }' <<<"$accounting"
}

# uc_run NAME MIDDLEBOX_ARGS...: uc_e2e through a fresh middlebox; both
# sides must pass; then the checks every run shares. Sets accounting.
uc_run() {
	local name=$1 side mb_roce mb_dropped mb_dups through rx tx qpn
	shift
	rm -f "$UC_E2E_MESSAGES"
	mb_start --seed "$seed" --verbose "$@"
	netns_run_pair "$logdir" 120 "$e2e" "$VETH_A" -p "$roce_port" -- \
		"$VETH_B" "$ADDR_A" -p "$roce_port" ||
		fail "$name: $NETNS_PAIR_STATUS (124 = timed out)"
	roce_port=$((roce_port + 1))
	mb_stop
	echo "--- middlebox:"
	grep -E '^(middlebox|dir|qp) ' "$logdir/mb.log" | sed 's/^/    /'
	for side in server client; do
		grep -q "^\[$side\] path MTU 1024;" "$logdir/$side.log" ||
			fail "$name: $side: the path MTU is not 1024 with the veth's 1500 bytes"
		grep -q "^\[$side\] PASS: 0 of [0-9]* cases failed$" "$logdir/$side.log" ||
			fail "$name: $side: no PASS summary line"
	done
	[ -s "$UC_E2E_MESSAGES" ] || fail "$name: the receiver wrote no list of messages"
	accounting=$(account)
	echo "    account: $accounting"
	[ "$(acct messages)" = 950 ] || fail "$name: $(acct messages) messages in the list, expected 950"

	# What went over the wire: each packet once, towards the receiver only.
	for dir in a2b b2a; do
		[ "$(mb_dir $dir socket_drops)" = 0 ] && [ "$(mb_dir $dir send_errors)" = 0 ] ||
			fail "$name: the middlebox lost $dir frames it did not mean to"
	done
	[ "$(mb_dir a2b roce)" = 0 ] || fail "$name: $(mb_dir a2b roce) RoCE frames went back to the sender"
	mb_roce=$(mb_dir b2a roce) mb_dropped=$(mb_dir b2a dropped) mb_dups=$(mb_dir b2a duplicated)
	qpn=$(sed -n 's/^\[server\] path MTU [0-9]*; UC QP \(0x[0-9a-f]*\),.*/\1/p' "$logdir/server.log")
	[ "$mb_roce" = "$(acct packets)" ] && [ "$(mb_qp b2a "$qpn" requests)" = "$mb_roce" ] &&
		[ "$(mb_qp b2a "$qpn" retransmits)" = 0 ] ||
		fail "$name: the sender sent $mb_roce frames, $(mb_qp b2a "$qpn" requests) UC requests to QP $qpn ($(mb_qp b2a "$qpn" retransmits) at or below a PSN seen before), expected each of the $(acct packets) packets once"
	tx=$(e2e_stat "$NETNS_B" "$VETH_B" engine_tx_frames)
	[ "$tx" = "$(acct packets)" ] && [ "$(e2e_stat "$NETNS_B" "$VETH_B" engine_retransmits)" = 0 ] ||
		fail "$name: the sender's engine sent $tx frames, expected $(acct packets), none retransmitted"
	[ "$(acct unknown_drops)" = 0 ] && [ "$(acct bad_opcodes)" = 0 ] ||
		fail "$name: of the dropped frames, $(acct unknown_drops) had no message's PSN and $(acct bad_opcodes) not the UC opcode of their place"
	rx=$(e2e_stat "$NETNS_A" "$VETH_A" engine_rx_frames)
	through=$((mb_roce - mb_dropped + mb_dups - $(acct dup_held)))
	[ "$rx" = "$through" ] ||
		fail "$name: the receiver's engine received $rx frames; the middlebox let $through through ($mb_roce - $mb_dropped dropped + $mb_dups duplicated - $(acct dup_held) of those held back and sent once)"
	for counter in engine_rx_malformed engine_rx_bad_icrc engine_rx_unknown_qp engine_rx_bad_state \
		drop_bad_length drop_unknown_qp drop_qp_state dups_answered; do
		[ "$(e2e_stat "$NETNS_A" "$VETH_A" $counter)" = 0 ] ||
			fail "$name: the receiver's $counter is $(e2e_stat "$NETNS_A" "$VETH_A" $counter), expected 0"
	done
	# Nothing reported that cannot have arrived whole.
	[ "$(acct reported_broken)" = 0 ] ||
		fail "$name: $(acct reported_broken) messages were reported although the middlebox dropped a packet of theirs"
	uc_dropped=$(e2e_stat "$NETNS_A" "$VETH_A" engine_uc_dropped_msgs)
	started=$(($(acct missing) - $(acct first_lost)))
	[ "$uc_dropped" -ge $((started - 1)) ] ||
		fail "$name: engine_uc_dropped_msgs is $uc_dropped; $started messages not reported had their first packet delivered (at least $((started - 1)) must have been given up)"
	echo "    the receiver gave up $uc_dropped messages (engine_uc_dropped_msgs); $started messages not reported had their first packet delivered, $(acct first_lost) lost it ($(acct entirely_lost) lost entirely)"
}

# 1. No impairment: everything arrives, everything is reported.
uc_run clean
[ "$(acct reported)" = 950 ] && [ "$uc_dropped" = 0 ] && [ "$(mb_dir b2a dropped)" = 0 ] ||
	fail "clean: $(acct reported) of 950 messages reported, $uc_dropped given up, expected all and none"
echo "ok   clean: 950 messages of 2 to 8 packets, all reported whole, nothing sent back, nothing given up"

# 2. Loss alone: reported exactly when every packet arrived.
uc_run loss --b2a-loss 3
[ "$(mb_dir b2a dropped)" -gt 0 ] && [ "$(acct missing)" -gt 0 ] ||
	fail "loss: the middlebox dropped $(mb_dir b2a dropped) frames, $(acct missing) messages not reported; expected some of each"
[ "$(acct missing_clean)" = 0 ] ||
	fail "loss: $(acct missing_clean) messages all of whose packets arrived were not reported"
[ "$uc_dropped" -le "$started" ] ||
	fail "loss: engine_uc_dropped_msgs is $uc_dropped, more than the $started messages that could have started"
echo "ok   loss: $(mb_dir b2a dropped) frames dropped; $(acct reported) messages reported whole, exactly those none of whose packets was dropped; $(acct missing) not, none of them reported in part"

# 3. Loss, duplication and reordering: never a message a packet of which was lost.
uc_run impaired --b2a-loss 3 --b2a-dup 2 --b2a-reorder 3 --reorder-gap 3
for counter in dropped duplicated reordered; do
	[ "$(mb_dir b2a $counter)" -gt 0 ] || fail "impaired: the middlebox $counter nothing"
done
[ "$(acct missing)" -gt 0 ] && [ "$(acct reported)" -gt 0 ] ||
	fail "impaired: $(acct reported) messages reported and $(acct missing) not, expected some of each"
echo "ok   impaired: $(mb_dir b2a dropped) frames dropped, $(mb_dir b2a duplicated) duplicated, $(mb_dir b2a reordered) reordered; $(acct reported) messages reported whole and once, none with a packet lost; $(acct missing) not"

# The receiver's XDP redirected frames and dropped none as malformed; the
# sender's received no RoCE frame at all, and dropped none either.
netns_check_stats "$NETNS_A:$VETH_A" >"$logdir/stats" || fail "$(tail -n 1 "$logdir/stats")"
for counter in redirected drop_truncated drop_bad_tver drop_bad_opcode drop_bad_length \
	drop_unknown_qp drop_qp_state engine_rx_frames; do
	[ "$(e2e_stat "$NETNS_B" "$VETH_B" $counter)" = 0 ] ||
		fail "the sender's $counter is $(e2e_stat "$NETNS_B" "$VETH_B" $counter), expected 0 (UC sends nothing back)"
done
echo "ok   the receiver's XDP dropped nothing as malformed; the sender's saw no RoCE frame"
echo "test_uc_e2e: PASS"
