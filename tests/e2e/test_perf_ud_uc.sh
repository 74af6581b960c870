#!/usr/bin/env bash
# xroce-perf against itself with perftest's unreliable connection types,
# across a veth pair between two namespaces, server in A, client in B:
# -c UD (send_bw, send_lat; the default size and -a, which shrink to the
# 1024-byte MTU as perftest's do), -c UC (send_bw, write_bw, send_lat,
# write_lat) and UD multicast (send_bw -g to an IPv4 group given with -M,
# and to perftest's default IPv6 group over the link-local GIDs; send_lat -g,
# where each side receives on its own default group). Both sides
# must exit 0, say "Connection type : UD" (or UC), and print the result line
# with the run's size and iteration count; send_bw's server counts what
# arrived, so a lost message fails the run. With -g the server must announce
# the group as its MGID with QPN 0xffffff, and the client must show that as
# its remote. The combinations perftest refuses must be refused with its
# words and exit status 1: UD with a verb other than SEND, UC with READ, and
# an explicit UD size above the MTU (after the MTU exchange, on both sides).
# Needs root. Env: BUILD (build dir, default build).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
perf=$BUILD/xroce-perf
xroce=$BUILD/xroce
iters=50

# shellcheck source=tests/e2e/e2e_common.sh
source tests/e2e/e2e_common.sh
# shellcheck source=tests/e2e/perf_common.sh
source tests/e2e/perf_common.sh
e2e_init test_perf_ud_uc "$perf" "$xroce"

netns_pair pud "$(e2e_subnet)" || fail "could not create the namespaces"
e2e_attach_both

# result_ok LOG SIZE KIND [TOTAL]: perf_result_ok with TOTAL $iters by default.
result_ok() {
	perf_result_ok "$1" "$2" "$3" "${4:-$iters}"
}

# The GID line perftest prints for the 16 bytes of a colon-separated group.
gid_line() {
	local label=$1 out="" byte
	IFS=: read -ra bytes <<<"$2"
	for byte in "${bytes[@]}"; do
		out+=$(printf '%02d:' "$byte")
	done
	echo " $label: ${out%:}"
}

# group_ok LOG SIDE MGID: LOG shows, as its SIDE address, QPN 0xffffff and
# the group MGID.
group_ok() {
	grep -A1 -E "^ $2 address: LID 0000 QPN 0xffffff PSN " "$1" | grep -qxF "$(gid_line MGID "$3")"
}

# run TEST CONN SIZE KIND SERVER_MEASURES [OPTIONS...]; with -q N in
# OPTIONS the result lines count the iterations of all N QPs, as perftest's.
run() {
	local test=$1 conn=$2 size=$3 kind=$4 server_measures=$5 side total=$iters args
	shift 5
	args=" $* "
	[ "${args/ -q 2 / }" != "$args" ] && total=$((iters * 2))
	perf_pair "$test" -n $iters "$@"
	if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
		e2e_show_logs
		fail "$test $*: server exit $server_status, client exit $client_status"
	fi
	for side in server client; do
		if ! grep -qP "^ Connection type : $conn\t\tUsing SRQ" "$logdir/$side.log"; then
			e2e_show_logs
			fail "$test $*: the $side does not say Connection type : $conn"
		fi
	done
	if ! result_ok "$logdir/client.log" "$size" "$kind" $total ||
		{ [ "$server_measures" = yes ] &&
			! result_ok "$logdir/server.log" "$size" "$kind" $total; }; then
		e2e_show_logs
		fail "$test $*: no sane result line for $size bytes x $total"
	fi
	echo "ok: $test $*: $(awk -v s="$size" -v n=$total '$1 == s && $2 == n' "$logdir/client.log" |
		tr -s ' \t' ' ')"
}

# refused TEST MESSAGE OPTIONS...: perftest's refusal, before any connection.
refused() {
	local test=$1 message=$2 status=0
	shift 2
	"$perf" "$test" -d "$VETH_A" "$@" >"$logdir/refused.log" 2>&1 || status=$?
	if [ "$status" -ne 1 ] || ! grep -qxF "xroce-perf: $message" "$logdir/refused.log"; then
		sed 's/^/    /' "$logdir/refused.log"
		fail "$test $*: exit $status, expected 1 and \"$message\""
	fi
	echo "ok: $test $*: refused: $message"
}

run send_bw UD 1024 bw yes -x 1 -c UD -s 1024
run send_bw UD 512 bw yes -x 1 -c UD -s 512 -q 2
run send_lat UD 64 lat yes -x 1 -c UD -s 64
run send_bw UC 4096 bw yes -x 1 -c UC -s 4096
run write_bw UC 65536 bw yes -x 1 -c UC -s 65536
run send_lat UC 3000 lat yes -x 1 -c UC -s 3000
run write_lat UC 3000 lat yes -x 1 -c UC -s 3000

# Without -s a UD test takes the MTU, and -a stops there.
run send_bw UD 1024 bw yes -x 1 -c UD
for side in server client; do
	grep -qxF "xroce-perf: Max msg size in UD is MTU 1024" "$logdir/$side.log" ||
		fail "send_bw -c UD: the $side does not say it shrank the size to the MTU"
done
perf_pair send_lat -n $iters -x 1 -c UD -a
if [ "$server_status" -ne 0 ] || [ "$client_status" -ne 0 ]; then
	e2e_show_logs
	fail "send_lat -c UD -a: server exit $server_status, client exit $client_status"
fi
for size in 2 4 8 16 32 64 128 256 512 1024; do
	if ! result_ok "$logdir/client.log" $size lat || ! result_ok "$logdir/server.log" $size lat; then
		e2e_show_logs
		fail "send_lat -c UD -a: no result line for $size bytes"
	fi
done
if [ "$(awk -v n=$iters '$2 == n && $1 ~ /^[0-9]+$/' "$logdir/client.log" | wc -l)" -ne 10 ]; then
	e2e_show_logs
	fail "send_lat -c UD -a: not exactly the 10 sizes from 2 to 1024"
fi
echo "ok: send_lat -x 1 -c UD -a: 10 sizes, 2 to 1024"

# Multicast: an IPv4 group (239.1.2.3), and perftest's default IPv6 one.
e2e_wait_dad
group=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:3
for args in "-x 1 -M $group" "-x 0"; do
	# shellcheck disable=SC2086 # the options are meant to be split into words
	run send_bw UD 1024 bw yes -g -s 1024 $args
	mgid=$group
	[ "$args" = "-x 0" ] && mgid=255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0
	if ! grep -qxF " MultiCast runs on UD!" "$logdir/server.log" ||
		! grep -qxF "                    Send BW Multicast Test" "$logdir/client.log" ||
		! group_ok "$logdir/server.log" local "$mgid" ||
		! group_ok "$logdir/client.log" remote "$mgid"; then
		e2e_show_logs
		fail "send_bw -g $args: the group $mgid is not the server's address on both sides"
	fi
done
# send_lat -g: each side receives on a group of its own, the client's one more.
run send_lat UD 64 lat yes -g -s 64 -x 0
if ! group_ok "$logdir/server.log" local 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0 ||
	! group_ok "$logdir/client.log" remote 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0 ||
	! grep -A1 -E "^ local address: LID 0000 QPN 0xffffff PSN " "$logdir/client.log" |
	grep -qxF "$(gid_line GID 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:1)"; then
	e2e_show_logs
	fail "send_lat -g -x 0: the sides do not announce their two groups"
fi

refused write_bw "UD connection only possible in SEND verb" -c UD
refused write_lat "UD connection only possible in SEND verb" -c UD
refused read_bw "UC connection not possible in READ/ATOMIC verbs" -c UC
refused write_bw "MultiCast feature only available on SEND verb" -g
refused send_bw "Only 1 QP supported in multicast" -g -q 2
perf_pair send_bw -n $iters -x 1 -c UD -s 2048
for side in server client; do
	status=${side}_status
	if [ "${!status}" -ne 1 ] ||
		! grep -qxF "xroce-perf: Max message size in UD cannot be greater than MTU (1024)" \
			"$logdir/$side.log"; then
		e2e_show_logs
		fail "send_bw -c UD -s 2048: the $side exits ${!status}, expected 1 and the MTU's refusal"
	fi
done
echo "ok: send_bw -c UD -s 2048: refused by both sides after the MTU exchange"
echo "test_perf_ud_uc: PASS"
