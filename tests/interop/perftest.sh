#!/usr/bin/env bash
# perftest interop: unmodified perftest (ib_*_bw, ib_*_lat, rdma-core's
# perftest 4.5) in the rxe-peer guest rxeA against xroce-perf in netns xrhost,
# each test twice: xroce-perf as server with the guest as client, and the
# guest as server with xroce-perf as client. Runs named "unmodified ..." put
# Debian's own perftest on our side as well, under build/xroce-run on device
# xroce_IFNAME, in place of xroce-perf. A run passes when both sides
# exit 0 and both print the result line with the run's byte and iteration
# counts (a passive perftest bandwidth server prints the client's report; a
# passive latency server prints no table, so its remote address is checked).
# Runs with -q N (several QPs, bw tests only) expect N times the iterations in
# the result line, as perftest counts those of all QPs, and N remote
# addresses with distinct QPNs on each side. Runs with -o N (outstanding
# READs/atomics) are captured on the guest's tap (tests/e2e/capture.sh; not
# on xrhost0, where XDP takes the frames): the capture must hold every
# request, never more than N in flight, and N at some point when xroce-perf is
# the requester (tests/e2e/rd_inflight.sh); both sides must print "Outstand
# reads : N" (read_bw: and OUT 0x0N for both QPs). Runs named IPv6 use the
# link-local GIDs (-x 0). Runs with UD or UC use those connection types
# (-c); as perftest's, a send_bw server waits for every message, so one lost
# datagram fails the run (perftest's server gives up after 60-120 s without
# a message, exit 17). The multicast run (-g, UD) sends to the IPv4 group
# 239.1.2.3 given with -M (an IPv4-mapped MGID, so both sides' GIDs are of
# one IP version, which perftest requires); the server attaches its QP to
# the group and announces the group as its GID with QPN 0xffffff, which the
# client's remote address must show. Runs named --use-srq give both sides
# --use-srq: the receiving side's QPs (send_bw's server, both sides of
# send_lat) share one SRQ, and both sides must print "Using SRQ      : ON".
# Runs with -m N (tests/interop/mtu4096.sh) must show "Mtu : N[B]" on both
# sides. Prints PASS/FAIL per run.
#
# Soft-RoCE 6.1 as a multicast receiver neither joins the IP group (no IGMP
# report) nor programs the right MAC filter for an IPv4 group (33:33:ef:...
# instead of 01:00:5e:...), so the guest receives nothing of the group by
# itself. When the guest is the receiver, a helper built here into rxe-peer's
# share (tests/interop/guest/mcast_join.c, /share/mcast_join in the guest)
# holds the group's membership on the guest's eth0 while ib_send_bw runs.
#
# Two ways to run it:
#   sourced by tests/interop/run.sh after its pingpong runs: it reuses that
#   script's guest, attachment, log dir and helpers, and adds to its
#   passed/failed counts and failures list;
#   executed directly: it sets the guest up itself (rxe-peer setup, up 1,
#   xroce attach), prints "N passed, N failed" and tears everything down
#   (RXE_PEER_KEEP=1 leaves the guest up).
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository), RXE_PEER_WORK (its
# work dir, default /tmp/rxe-peer), PERF_ITERS (default 200), GUEST_TIMEOUT
# (seconds a guest tool may run, default 120), PERF_RUNS (a regular
# expression: only the runs whose name matches it, default all).

# The multicast group of the -g runs, as an IPv4 address and as perftest's -M.
PERF_MCAST_GROUP=239.1.2.3
PERF_MCAST_MGID=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:3

# Runs NAME: the guest's and our command lines for one test, both directions;
# QPS (default 1) is the number of QPs the command lines ask for with -q, OUTS
# (default none) the outstanding READs/atomics they ask for with -o. With
# PERF_JOIN=GROUP the guest, when it is the server, holds GROUP's membership.
perftest_run_pair() {
	local name=$1 guest_args=$2 perf_args=$3 size=$4 kind=$5 qps=${6:-1} outs=${7:-}
	[[ $name =~ ${PERF_RUNS:-.} ]] || return 0
	perftest_one "$name" xroce-server "$guest_args" "$perf_args" "$size" "$kind" "$qps" "$outs"
	perftest_one "$name" guest-server "$guest_args" "$perf_args" "$size" "$kind" "$qps" "$outs"
}

# The result line of a run: "SIZE ITERS ..." as perftest prints it. Its
# figures may be "inf": perftest times latency with the clock rate it
# measures at start, which a TCG-emulated guest now and then measures as 0
# (seen once in send_lat --use-srq); the line is printed only after all
# ITERS exchanges, which is what this checks.
perftest_result_ok() {
	grep -Eq "^ $2 +$3 +([0-9]|inf)" "$1"
}

# perftest_check LOG SIZE KIND ROLE QPS: does this side's output show the
# run, and the QPS distinct remote QPs it ran on? ROLE is server or client; a
# passive latency server (read_lat, atomic_lat) prints no table, only the
# addresses of both sides.
perftest_check() {
	local log=$1 size=$2 kind=$3 role=$4 qps=$5
	awk -v qps="$qps" '$1 == "remote" && $2 == "address:" { n++; qpn[$6] = 1 }
		END { exit !(n == qps && length(qpn) == qps) }' "$log" || return 1
	case "$kind:$role" in
	passive-lat:server) true ;;
	*) perftest_result_ok "$log" "$size" $((PERF_ITERS * qps)) ;;
	esac
}

# perftest_outs_check LOG OUTS: this side announced OUTS outstanding reads
# and, in a read test, shows OUTS for both QPs (its own and the peer's).
perftest_outs_check() {
	local log=$1 outs=$2
	grep -Eq "^ Outstand reads  : $outs\$" "$log" || return 1
	grep -q "RDMA_Read" "$log" || return 0
	[ "$(grep -c "^ \(local\|remote\) address: .* OUT $(printf '%#04x' "$outs") " "$log")" -eq 2 ]
}

# perftest_outs_why PCAP OUTS REQUESTER: why the capture of a run with -o OUTS
# fails (nothing when it passes): every request captured, at most OUTS in
# flight, and OUTS at some point when xroce is the REQUESTER. When the guest
# is, how close it comes to OUTS is its own pace under emulation (a rxe
# requester has been seen to stay at 3 of 4): only the bound is ours to
# honour, by answering every request it sends.
perftest_outs_why() {
	local counts requests in_flight
	counts=$(tests/e2e/rd_inflight.sh "$1") || {
		echo "rd_inflight.sh failed on $1"
		return
	}
	read -r _ requests _ in_flight <<<"$counts"
	if [ "$requests" != "$PERF_ITERS" ]; then
		echo "the capture holds $requests distinct requests, expected $PERF_ITERS"
	elif [ "$in_flight" -gt "$2" ]; then
		echo "up to $in_flight requests in flight, expected at most $2"
	elif [ "$3" = xroce ] && [ "$in_flight" -ne "$2" ]; then
		echo "xroce-perf kept at most $in_flight requests in flight, expected $2 at some point"
	fi
}

# perftest_group_check LOG SIDE: LOG shows, as its SIDE (local or remote)
# address, QPN 0xffffff and the group PERF_MCAST_MGID as the MGID.
perftest_group_check() {
	local mgid
	mgid=$(IFS=:; for b in $PERF_MCAST_MGID; do printf '%02d:' "$b"; done)
	grep -A1 -E "^ $2 address: LID 0000 QPN 0xffffff PSN " "$1" | grep -qxF " MGID: ${mgid%:}"
}

perftest_wait_listening() {
	local pid=$1 _
	for _ in $(seq 1 100); do
		perftest_in_host ss -Hltn 'sport = :18515' | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

perftest_in_host() {
	nsenter --net="/var/run/netns/$PERF_HOST_NS" "$@"
}

# perftest_one NAME DIRECTION GUEST_ARGS PERF_ARGS SIZE KIND QPS OUTS
perftest_one() {
	local name=$1 dir=$2 guest_args=$3 perf_args=$4 size=$5 kind=$6 qps=$7 outs=$8
	local total=$((PERF_ITERS * qps))
	local label="$name $dir" tag="perftest-${name// /_}-$dir" id why=""
	local host_log guest_log host_status=0 guest_status=0 pid host_role guest_role pcap
	host_log=$PERF_LOGDIR/$tag.xroce.log
	guest_log=$PERF_LOGDIR/$tag.rxe.log
	pcap=$PERF_LOGDIR/$tag.pcap
	local guest_cmd="timeout $GUEST_TIMEOUT ib_$guest_args -x $PERF_GID -F -n $PERF_ITERS"
	if [ -n "${PERF_JOIN:-}" ] && [ "$dir" = guest-server ]; then
		# The membership ends with the test, or at the latest when the tool would have timed out.
		guest_cmd="/share/mcast_join $PERF_JOIN eth0 $((GUEST_TIMEOUT + 5)) & j=\$!; $guest_cmd; rc=\$?; kill \$j; exit \$rc"
	fi
	# Our side: xroce-perf, or Debian's perftest under xroce-run; the
	# options are meant to be split into words.
	local perf_cmd ours=xroce-perf
	# shellcheck disable=SC2206
	perf_cmd=(timeout $((GUEST_TIMEOUT + 30)) "$PERF_BIN" $perf_args -d "$PERF_HOST_IF")
	if [ "${PERF_UNMODIFIED:-0}" = 1 ]; then
		ours="xroce-run ib_${perf_args%% *}"
		# shellcheck disable=SC2206
		perf_cmd=(timeout $((GUEST_TIMEOUT + 30)) "$PERF_RUN" ib_$perf_args -d "xroce_$PERF_HOST_IF")
	fi
	perf_cmd+=(-x "$PERF_GID" -F -n "$PERF_ITERS")

	if [ -n "$outs" ] && ! capture_start "$PERF_PEER_NS" "$PERF_CAPTURE_IF" "$pcap"; then
		why=$CAPTURE_WHY
	fi
	if [ -n "$why" ]; then
		echo "(not started)" >"$host_log"
		echo "(not started)" >"$guest_log"
	elif [ "$dir" = xroce-server ]; then
		host_role=server guest_role=client
		perftest_in_host "${perf_cmd[@]}" >"$host_log" 2>&1 &
		pid=$!
		if ! perftest_wait_listening "$pid"; then
			kill "$pid" 2>/dev/null
			wait "$pid" || host_status=$?
			why="$ours did not listen on port 18515 (exit $host_status)"
			echo "(not started)" >"$guest_log"
		else
			id=$("$RXE_PEER" start "$PERF_GUEST" "$guest_cmd $PERF_HOST_IP") ||
				why="rxe-peer start failed"
			if [ -n "$id" ]; then
				"$RXE_PEER" wait "$PERF_GUEST" "$id" $((GUEST_TIMEOUT + 30)) \
					>"$guest_log" 2>&1 || guest_status=$?
			fi
			wait "$pid" || host_status=$?
		fi
	else
		host_role=client guest_role=server
		id=$("$RXE_PEER" start "$PERF_GUEST" "$guest_cmd") || why="rxe-peer start failed"
		if [ -n "$id" ]; then
			# The guest needs 2-3 s to listen; xroce-perf also retries a refused connect.
			sleep 2
			perftest_in_host "${perf_cmd[@]}" "$PERF_GUEST_IP" >"$host_log" 2>&1 ||
				host_status=$?
			# If we failed before connecting, the guest still waits in accept():
			# a connection that closes at once makes it give up now.
			if ! grep -q "remote address:" "$host_log"; then
				perftest_in_host timeout 5 bash -c \
					"exec 3<>/dev/tcp/$PERF_GUEST_IP/18515" 2>/dev/null
			fi
			"$RXE_PEER" wait "$PERF_GUEST" "$id" $((GUEST_TIMEOUT + 30)) \
				>"$guest_log" 2>&1 || guest_status=$?
		fi
	fi
	if [ -n "$CAPTURE_PID" ] && ! capture_stop "$PERF_HOST_NS" "$PERF_GUEST_IP" && [ -z "$why" ]; then
		why=$CAPTURE_WHY
	fi

	if [ -z "$why" ]; then
		if [ "$host_status" -ne 0 ] || [ "$guest_status" -ne 0 ]; then
			why="$ours exit $host_status, perftest exit $guest_status"
		elif ! perftest_check "$host_log" "$size" "$kind" "$host_role" "$qps"; then
			why="$ours printed no result line for $size bytes x $total or not $qps remote QPs"
		elif ! perftest_check "$guest_log" "$size" "$kind" "$guest_role" "$qps"; then
			why="perftest printed no result line for $size bytes x $total or not $qps remote QPs"
		elif [[ $guest_args == *--use-srq* ]] &&
			! grep -qP "^ Connection type : \S+\t\tUsing SRQ      : ON$" "$host_log"; then
			why="$ours does not say Using SRQ : ON"
		elif [[ $guest_args == *--use-srq* ]] &&
			! grep -qP "^ Connection type : \S+\t\tUsing SRQ      : ON$" "$guest_log"; then
			why="perftest does not say Using SRQ : ON"
		elif [[ $guest_args =~ -m\ ([0-9]+) ]] &&
			! { grep -qE "^ Mtu +: ${BASH_REMATCH[1]}\[B\]" "$host_log" &&
				grep -qE "^ Mtu +: ${BASH_REMATCH[1]}\[B\]" "$guest_log"; }; then
			why="not both sides show Mtu ${BASH_REMATCH[1]}"
		elif [ "$PERF_GID" -eq 0 ] && [ "$(grep -c '^ GID: 254:128:' "$guest_log")" -lt 2 ]; then
			why="perftest does not show link-local (fe80::) GIDs on both sides"
		elif [ -n "$outs" ] && ! perftest_outs_check "$host_log" "$outs"; then
			why="$ours does not show $outs outstanding reads"
		elif [ -n "$outs" ] && ! perftest_outs_check "$guest_log" "$outs"; then
			why="perftest does not show $outs outstanding reads"
		elif [ -n "${PERF_JOIN:-}" ] && ! perftest_group_check "$host_log" \
			"$([ "$host_role" = server ] && echo local || echo remote)"; then
			why="$ours does not show the server's address as the group, QPN 0xffffff"
		elif [ -n "${PERF_JOIN:-}" ] && ! perftest_group_check "$guest_log" \
			"$([ "$guest_role" = server ] && echo local || echo remote)"; then
			why="perftest does not show the server's address as the group, QPN 0xffffff"
		elif [ -n "$outs" ]; then
			# perftest's client is the requester.
			why=$(perftest_outs_why "$pcap" "$outs" \
				"$([ "$host_role" = client ] && echo xroce || echo guest)")
		fi
	fi
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		printf 'PASS %-34s %s\n' "$label" \
			"$(grep -hE "^ $size +$total +[0-9]" "$host_log" "$guest_log" | head -n1 |
				tr -s ' \t' ' ')"
	else
		failed=$((failed + 1))
		failures+=("$label")
		printf 'FAIL %-34s %s\n' "$label" "$why"
		local log
		for log in "$host_log" "$guest_log"; do
			echo "    --- $(basename "$log"):"
			tail -n 12 "$log" | sed 's/^/    | /'
		done
	fi
}

# perftest_init: the settings perftest_one runs with; counts a failure and
# returns 1 when our tools are missing.
perftest_init() {
	PERF_BIN=$(readlink -f "${BUILD:-build}/xroce-perf")
	PERF_RUN=$(readlink -f "${BUILD:-build}/xroce-run")
	PERF_ITERS=${PERF_ITERS:-200}
	# GID index of both sides: 1 is the IPv4-mapped GID; a run may set 0 (IPv6 link-local).
	PERF_GID=1
	GUEST_TIMEOUT=${GUEST_TIMEOUT:-120}
	PERF_HOST_NS=${RXE_PEER_HOST_NS:-xrhost}
	PERF_HOST_IF=${RXE_PEER_HOST_IF:-xrhost0}
	PERF_GUEST=rxeA
	PERF_GUEST_IP=${RXE_PEER_NET:-10.77.0}.1
	PERF_HOST_IP=${RXE_PEER_NET:-10.77.0}.100
	PERF_LOGDIR=${logdir:?}
	# rxe-peer's capture point: the guest's tap in its bridge namespace.
	PERF_PEER_NS=${RXE_PEER_NS:-xrpeer}
	PERF_CAPTURE_IF=${RXE_PEER_CAPIF:-xrtap0}
	# shellcheck source=tests/e2e/capture.sh
	source tests/e2e/capture.sh
	if [ ! -x "$PERF_BIN" ] || [ ! -x "$PERF_RUN" ]; then
		failed=$((failed + 1))
		failures+=("perftest: xroce-perf or xroce-run missing")
		echo "FAIL perftest: $PERF_BIN or $PERF_RUN is missing (make all)"
		return 1
	fi
}

perftest_main() {
	perftest_init || return
	echo "perftest against xroce-perf, $PERF_ITERS iterations per run"
	# NAME  GUEST_ARGS (ib_...)  XROCE_PERF_ARGS  SIZE  KIND  [QPS [OUTS]]
	perftest_run_pair send_bw "send_bw -s 4096" "send_bw -s 4096" 4096 bw
	perftest_run_pair write_bw "write_bw -s 4096" "write_bw -s 4096" 4096 bw
	perftest_run_pair "send_bw -q 2" "send_bw -s 4096 -q 2" "send_bw -s 4096 -q 2" 4096 bw 2
	perftest_run_pair "write_bw -q 2" "write_bw -s 4096 -q 2" "write_bw -s 4096 -q 2" 4096 bw 2
	perftest_run_pair read_bw "read_bw -s 4096" "read_bw -s 4096" 4096 bw
	perftest_run_pair "atomic_bw CAS" "atomic_bw -A CMP_AND_SWAP" \
		"atomic_bw -A CMP_AND_SWAP" 8 bw
	perftest_run_pair "atomic_bw FADD" "atomic_bw -A FETCH_AND_ADD" \
		"atomic_bw -A FETCH_AND_ADD" 8 bw
	perftest_run_pair "read_bw -o 4" "read_bw -s 4096 -o 4" "read_bw -s 4096 -o 4" 4096 bw 1 4
	perftest_run_pair "atomic_bw -o 2" "atomic_bw -o 2" "atomic_bw -o 2" 8 bw 1 2
	# Over IPv6: the link-local GIDs (index 0) instead of the IPv4-mapped ones.
	PERF_GID=0 perftest_run_pair "write_bw IPv6" "write_bw -s 4096" "write_bw -s 4096" 4096 bw
	PERF_GID=0 perftest_run_pair "read_bw IPv6" "read_bw -s 4096" "read_bw -s 4096" 4096 bw
	perftest_run_pair send_lat "send_lat -s 64" "send_lat -s 64" 64 pingpong-lat
	perftest_run_pair write_lat "write_lat -s 64" "write_lat -s 64" 64 pingpong-lat
	perftest_run_pair read_lat "read_lat -s 64" "read_lat -s 64" 64 passive-lat
	perftest_run_pair atomic_lat "atomic_lat" "atomic_lat" 8 passive-lat
	# UD datagrams are at most the MTU, 1024 here.
	perftest_run_pair "send_bw UD" "send_bw -c UD -s 1024" "send_bw -c UD -s 1024" 1024 bw
	perftest_run_pair "send_bw UC" "send_bw -c UC -s 4096" "send_bw -c UC -s 4096" 4096 bw
	perftest_run_pair "write_bw UC" "write_bw -c UC -s 4096" "write_bw -c UC -s 4096" 4096 bw
	perftest_run_pair "send_lat UD" "send_lat -c UD -s 64" "send_lat -c UD -s 64" 64 pingpong-lat
	# A shared receive queue on the receiving side (both sides of send_lat).
	perftest_run_pair "send_bw --use-srq" "send_bw -s 4096 --use-srq" \
		"send_bw -s 4096 --use-srq" 4096 bw
	perftest_run_pair "send_bw -q 4 --use-srq" "send_bw -s 4096 -q 4 --use-srq" \
		"send_bw -s 4096 -q 4 --use-srq" 4096 bw 4
	perftest_run_pair "send_lat --use-srq" "send_lat -s 64 --use-srq" \
		"send_lat -s 64 --use-srq" 64 pingpong-lat
	# Debian's perftest itself on our side too, under xroce-run (runs named "unmodified ...").
	local size test
	for size in 4096 65536; do
		for test in write_bw read_bw send_bw; do
			PERF_UNMODIFIED=1 perftest_run_pair "unmodified $test -s $size" \
				"$test -s $size" "$test -s $size" "$size" bw
		done
	done
	if [[ "send_bw UD -g" =~ ${PERF_RUNS:-.} ]] && perftest_build_join; then
		PERF_JOIN=$PERF_MCAST_GROUP perftest_run_pair "send_bw UD -g" \
			"send_bw -c UD -g -M $PERF_MCAST_MGID -s 1024" \
			"send_bw -c UD -g -M $PERF_MCAST_MGID -s 1024" 1024 bw
	fi
	perftest_loss
}

# perftest_loss: loss recovery against a standard peer. xroce-perf is the
# requester (client) of 64 KiB WRITEs to the guest's ib_write_bw (Soft-RoCE
# responder, go-back-N), PERF_LOSS_ITERS of them (default 1000), on a clean
# link and then with 2% of the frames lost each way (netem in the guest).
# Both runs must complete every WRITE (the result line); a line gives the
# goodput of each, the share kept, and the requester engine's ACK timer
# expiries and tail-loss probes in the lossy run. The share is a figure to
# read, not asserted (it moves with the emulated guest's pace).
perftest_loss() {
	local iters=${PERF_LOSS_ITERS:-1000} clean lossy log stats
	[[ "write_bw 64K 2% loss" =~ ${PERF_RUNS:-.} ]] || return 0
	log=$PERF_LOGDIR/perftest-write_bw_64K_clean-guest-server.xroce.log
	PERF_ITERS=$iters perftest_one "write_bw 64K clean" guest-server "write_bw -s 65536" \
		"write_bw -s 65536" 65536 bw 1 ""
	clean=$(awk -v n="$iters" '$1 == 65536 && $2 == n { print $4 }' "$log")
	if ! "$RXE_PEER" impair "$PERF_GUEST" egress 'loss 2%' >/dev/null ||
		! "$RXE_PEER" impair "$PERF_GUEST" ingress 'loss 2%' >/dev/null; then
		failed=$((failed + 1))
		failures+=("write_bw 64K 2% loss: rxe-peer impair")
		echo "FAIL write_bw 64K 2% loss: rxe-peer impair failed"
		"$RXE_PEER" impair "$PERF_GUEST" off >/dev/null 2>&1
		return
	fi
	log=$PERF_LOGDIR/perftest-write_bw_64K_2%_loss-guest-server.xroce.log
	PERF_ITERS=$iters perftest_one "write_bw 64K 2% loss" guest-server "write_bw -s 65536" \
		"write_bw -s 65536" 65536 bw 1 ""
	"$RXE_PEER" impair "$PERF_GUEST" show >"$PERF_LOGDIR/loss-impair.txt" 2>&1
	"$RXE_PEER" impair "$PERF_GUEST" off >/dev/null 2>&1
	lossy=$(awk -v n="$iters" '$1 == 65536 && $2 == n { print $4 }' "$log")
	stats=$(perftest_in_host "$(dirname "$PERF_BIN")/xroce" stats "$PERF_HOST_IF")
	awk -v c="${clean:-0}" -v l="${lossy:-0}" \
		-v t="$(awk '$1 == "engine_timeouts" { print $2 }' <<<"$stats")" \
		-v p="$(awk '$1 == "engine_tail_probes" { print $2 }' <<<"$stats")" 'BEGIN {
		printf "     write_bw 64K, xroce-perf to rxe: %.2f MB/s clean, %.2f MB/s at 2%% loss each way: %.2f kept; ACK timer expiries %s, tail-loss probes %s\n",
			c, l, (c > 0 ? l / c : 0), t, p }'
}

# Builds the guest's multicast join helper into rxe-peer's share; counts a
# failure when it cannot.
perftest_build_join() {
	local share=${RXE_PEER_WORK:-/tmp/rxe-peer}/share
	if cc -O2 -Wall -Wextra -Werror -o "$share/mcast_join" tests/interop/guest/mcast_join.c \
		>"$PERF_LOGDIR/mcast_join.build.log" 2>&1; then
		return 0
	fi
	failed=$((failed + 1))
	failures+=("perftest: mcast_join build")
	echo "FAIL perftest: building mcast_join failed:"
	sed 's/^/    | /' "$PERF_LOGDIR/mcast_join.build.log"
	return 1
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced by run.sh: the guest is up and xroce is attached to its host
	# interface. PERFTEST_DEFINE_ONLY=1: only the functions, for
	# tests/interop/mtu4096.sh.
	[ "${PERFTEST_DEFINE_ONLY:-0}" = 1 ] || perftest_main
	return 0
fi

set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/interop/standalone.sh
source tests/interop/standalone.sh
interop_standalone perftest perftest_main
