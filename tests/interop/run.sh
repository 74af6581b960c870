#!/usr/bin/env bash
# make interop: xroce-pingpong against an unmodified ibv_rc_pingpong on Linux
# Soft-RoCE (rdma_rxe) in a qemu guest booted by rxe-peer (see its README).
# For each size, two runs of ITERS round trips with --chk on both sides:
#   guest-server  ibv_rc_pingpong server in rxeA, xroce-pingpong client in xrhost
#   xroce-server  xroce-pingpong server in xrhost, ibv_rc_pingpong client in rxeA
# over IPv4 (GID index 1, ::ffff:a.b.c.d), then for each of SIZES_V6 the same
# two runs over IPv6 with the link-local GIDs (-g 0, fe80::/64 from the MAC).
# A run passes when both sides exit 0, both print the summary lines and the
# guest reports no invalid data. Prints PASS/FAIL per run, then
# "N passed, N failed"; exits non-zero when anything failed.
# The guest and xroce's attachment to xrhost0 are torn down on every exit path.
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository), SIZES, SIZES_V6, ITERS,
# GUEST_TIMEOUT (seconds a guest tool may run, default 120).
set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
RXE_PEER=${RXE_PEER:-$PWD/../shared/rxe-peer/rxe-peer}
SIZES=${SIZES:-1 1024 4096 16384 65536}
SIZES_V6=${SIZES_V6:-1 4096 65536}
ITERS=${ITERS:-100}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-120}

# rxe-peer's fixed topology (its README): guest rxeA at .1, our side at .100.
host_ns=${RXE_PEER_HOST_NS:-xrhost}
host_if=${RXE_PEER_HOST_IF:-xrhost0}
net=${RXE_PEER_NET:-10.77.0}
guest=rxeA
guest_ip=$net.1
host_ip=$net.100
# GID index 1 is rxe's and xroce's first IPv4-mapped GID, index 0 the
# link-local IPv6 one; rxe-peer gives the guest this MAC.
guest_ll=fe80::5054:ff:fe77:1
# Duplicate address detection must end before a link-local address answers.
DAD_WAIT_TENTHS=100

pingpong=$(readlink -f "$BUILD/xroce-pingpong")
xroce=$(readlink -f "$BUILD/xroce")
logdir=$(mktemp -d /tmp/xroce-interop.XXXXXX)
server_pid=""
peer_up=0
passed=0
failed=0
failures=()

die() {
	echo "interop: $*" >&2
	exit 1
}

in_host_ns() {
	nsenter --net="/var/run/netns/$host_ns" "$@"
}

cleanup() {
	# A capture perftest.sh left running (tests/e2e/capture.sh).
	declare -F capture_kill >/dev/null && capture_kill
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	if [ "$peer_up" -eq 1 ]; then
		if [ -d "/sys/fs/bpf/xroce/$host_if" ]; then
			in_host_ns "$xroce" detach "$host_if" >/dev/null 2>&1 ||
				echo "interop: xroce detach $host_if failed" >&2
		fi
		"$RXE_PEER" down >"$logdir/down.log" 2>&1 || echo "interop: rxe-peer down failed" >&2
	fi
	echo "logs: $logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, XDP, qemu)"
[ -x "$RXE_PEER" ] || die "rxe-peer not found at $RXE_PEER (set RXE_PEER)"
for bin in "$pingpong" "$xroce"; do
	[ -x "$bin" ] || die "$bin is missing (make all)"
done

echo "rxe-peer setup"
"$RXE_PEER" setup >"$logdir/setup.log" 2>&1 || die "rxe-peer setup failed, see $logdir/setup.log"
peer_up=1
echo "rxe-peer up 1 (the guest boots in 15-25 s)"
"$RXE_PEER" up 1 >"$logdir/up.log" 2>&1 || die "rxe-peer up 1 failed, see $logdir/up.log"
in_host_ns "$xroce" attach "$host_if" >"$logdir/attach.log" 2>&1 ||
	die "xroce attach $host_if failed: $(cat "$logdir/attach.log")"
for _ in $(seq "$DAD_WAIT_TENTHS"); do
	[ -z "$(in_host_ns ip -6 addr show dev "$host_if" tentative)" ] &&
		[ -z "$("$RXE_PEER" exec "$guest" '/usr/bin/ip -6 addr show dev eth0 tentative')" ] &&
		break
	sleep 0.1
done
# The kernel's link-local address of our interface: xroce's GID 0 must be it.
host_ll=$(in_host_ns ip -6 -o addr show dev "$host_if" scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
[ -n "$host_ll" ] || die "$host_if has no IPv6 link-local address"

# Summary lines of ibv_rc_pingpong (and xroce-pingpong) for SIZE; no invalid data.
summary_ok() {
	local log=$1 size=$2
	grep -Eq "^$((size * ITERS * 2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec" "$log" &&
		grep -Eq "^$ITERS iters in [0-9.]+ seconds = [0-9.]+ usec/iter" "$log" &&
		! grep -q "invalid data" "$log"
}

# GID ADDRESS_FAMILY_INDEX: the GIDs of both sides at that index.
host_gid() {
	if [ "$1" -eq 0 ]; then echo "$host_ll"; else echo "::ffff:$host_ip"; fi
}
guest_gid() {
	if [ "$1" -eq 0 ]; then echo "$guest_ll"; else echo "::ffff:$guest_ip"; fi
}

# Both GIDs at GID_INDEX must be the ones the two sides address: catches a
# GID table whose order differs from rxe's.
gid_ok() {
	local log=$1 gid_index=$2
	grep -q "local address: .*GID $(host_gid "$gid_index")\$" "$log" &&
		grep -q "remote address: .*GID $(guest_gid "$gid_index")\$" "$log"
}

# report NAME HOST_STATUS GUEST_STATUS HOST_LOG GUEST_LOG SIZE GID_INDEX [WHY_IT_FAILED]
report() {
	local name=$1 host_status=$2 guest_status=$3 host_log=$4 guest_log=$5 size=$6 gid_index=$7
	local why=${8:-}
	if [ -n "$why" ]; then
		:
	elif [ "$host_status" -ne 0 ] || [ "$guest_status" -ne 0 ]; then
		why="xroce-pingpong exit $host_status, ibv_rc_pingpong exit $guest_status"
	elif ! gid_ok "$host_log" "$gid_index"; then
		why="GIDs at index $gid_index are not $(host_gid "$gid_index") and $(guest_gid "$gid_index")"
	elif ! summary_ok "$host_log" "$size" || ! summary_ok "$guest_log" "$size"; then
		why="summary lines missing or invalid data reported"
	fi
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		printf 'PASS %-28s %s\n' "$name" "$(grep -h 'usec/iter' "$host_log")"
	else
		failed=$((failed + 1))
		failures+=("$name")
		printf 'FAIL %-28s %s\n' "$name" "$why"
		for log in "$host_log" "$guest_log"; do
			echo "    --- $(basename "$log"):"
			tail -n 15 "$log" | sed 's/^/    | /'
		done
	fi
}

# guest_pingpong SIZE GID_INDEX [SERVER]
guest_pingpong() {
	echo "timeout $GUEST_TIMEOUT ibv_rc_pingpong -g $2 -n $ITERS -s $1 --chk ${3:-}"
}

# run_guest_server SIZE GID_INDEX
run_guest_server() {
	local size=$1 gid_index=$2 id host_status=0 guest_status=0
	local name="guest-server -g $2 -s $1" tag=guest-server-g$2-$1
	local host_log=$logdir/$tag.xroce.log guest_log=$logdir/$tag.rxe.log
	id=$("$RXE_PEER" start "$guest" "$(guest_pingpong "$size" "$gid_index")") ||
		die "rxe-peer start failed"
	# The guest server needs 2-3 s to listen; xroce-pingpong also retries a refused connect.
	sleep 3
	in_host_ns timeout $((GUEST_TIMEOUT + 30)) "$pingpong" -d "$host_if" -g $gid_index \
		-n "$ITERS" -s "$size" --chk "$guest_ip" >"$host_log" 2>&1 || host_status=$?
	# If we failed before the exchange, the guest server still waits in accept():
	# a connection that closes at once makes it give up now rather than at its timeout.
	if ! grep -q "remote address:" "$host_log"; then
		in_host_ns timeout 5 bash -c "exec 3<>/dev/tcp/$guest_ip/18515" 2>/dev/null
	fi
	"$RXE_PEER" wait "$guest" "$id" $((GUEST_TIMEOUT + 30)) >"$guest_log" 2>&1 || guest_status=$?
	report "$name" "$host_status" "$guest_status" "$host_log" "$guest_log" "$size" "$gid_index"
}

# Waits up to 20 s for our server to listen: the guest client connects only once.
wait_listening() {
	local _
	for _ in $(seq 1 100); do
		in_host_ns ss -Hltn 'sport = :18515' | grep -q . && return 0
		kill -0 "$server_pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# run_xroce_server SIZE GID_INDEX
run_xroce_server() {
	local size=$1 gid_index=$2 id host_status=0 guest_status=0
	local name="xroce-server -g $2 -s $1" tag=xroce-server-g$2-$1
	local host_log=$logdir/$tag.xroce.log guest_log=$logdir/$tag.rxe.log
	in_host_ns timeout $((GUEST_TIMEOUT + 30)) "$pingpong" -d "$host_if" -g $gid_index \
		-n "$ITERS" -s "$size" --chk >"$host_log" 2>&1 &
	server_pid=$!
	if ! wait_listening; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" || host_status=$?
		server_pid=""
		echo "(not started)" >"$guest_log"
		report "$name" "$host_status" 0 "$host_log" "$guest_log" "$size" "$gid_index" \
			"xroce-pingpong did not listen on port 18515 (exit $host_status)"
		return
	fi
	id=$("$RXE_PEER" start "$guest" "$(guest_pingpong "$size" "$gid_index" "$host_ip")") ||
		die "rxe-peer start failed"
	"$RXE_PEER" wait "$guest" "$id" $((GUEST_TIMEOUT + 30)) >"$guest_log" 2>&1 || guest_status=$?
	wait "$server_pid" || host_status=$?
	server_pid=""
	report "$name" "$host_status" "$guest_status" "$host_log" "$guest_log" "$size" "$gid_index"
}

for size in $SIZES; do
	run_guest_server "$size" 1
	run_xroce_server "$size" 1
done
for size in $SIZES_V6; do
	run_guest_server "$size" 0
	run_xroce_server "$size" 0
done

# perftest (ib_*_bw, ib_*_lat) against xroce-perf on the same guest; adds to the counts.
source tests/interop/perftest.sh
# Memory windows (type 1 and 2), fast registration, LOCAL_INV and SEND with
# invalidate, both ways, against rxe_mw_peer in the same guest; adds to the counts.
source tests/interop/mw.sh

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
