# shellcheck shell=bash
# Helpers for tests that need two network namespaces joined by a veth pair.
# Source it, create pairs, and install the cleanup on every exit path:
#
#   source scripts/netns.sh
#   trap netns_cleanup EXIT
#   netns_pair demo            # sets NETNS_A NETNS_B VETH_A VETH_B ADDR_A ADDR_B
#   netns_exec "$NETNS_A" build/xroce status
#
# netns_pair TAG [SUBNET]  creates two namespaces and a veth between them with
#                          unique names (TAG, at most 3 characters, + PID +
#                          counter), addresses SUBNET.1/24 and SUBNET.2/24
#                          (default 10.77.0), links up and TX checksum offload
#                          off on both ends (so frames from local sockets carry
#                          a complete UDP checksum). With NETNS_QUEUES=N each
#                          end has N rx and N tx queues (default: one each).
# netns_middlebox_pair TAG [SUBNET]
#                          like netns_pair, but A and B are joined through a
#                          third namespace NETNS_M: VETH_A <-> VETH_MA in M and
#                          VETH_B <-> VETH_MB in M, for an L2 middlebox
#                          (tests/e2e/middlebox.c) to bridge. M's ends are up,
#                          without addresses, with TX checksum offload, GRO and
#                          GSO off (a bridge through AF_PACKET must see and
#                          send the frames exactly as they are on the wire).
# netns_exec NS CMD...     runs CMD in NS's network namespace only: unlike
#                          `ip netns exec` it keeps /sys/fs/bpf and the pins.
# netns_wait_tcp_listen NS PORT
#                          waits (5 s at most) until something listens on TCP
#                          PORT in NS; status 1 if nothing does.
# netns_attach NS:DEV...   runs `xroce attach DEV` in NS for each; prints which
#                          one failed and returns 1 on the first failure.
# netns_run_pair LOGDIR SECONDS PROG SERVER_ARGS... -- CLIENT_ARGS...
#                          runs `PROG server SERVER_ARGS` in NETNS_A and, once
#                          it is started, `PROG client CLIENT_ARGS` in NETNS_B,
#                          each under `timeout SECONDS`, logging to
#                          LOGDIR/server.log and LOGDIR/client.log; prints both
#                          logs indented. Returns 0 when both exit 0, else 1
#                          with NETNS_PAIR_STATUS "server exit N, client exit M".
#                          The server's PID is in NETNS_SERVER_PID while it runs
#                          (netns_cleanup stops it).
# netns_stat NS DEV NAME    prints counter NAME of `xroce stats DEV` in NS.
# netns_check_stats NS:DEV... prints `xroce stats` of each end and returns 1,
#                          saying why, unless no frame was dropped as malformed
#                          or as too long for the AF_XDP sockets, and frames
#                          were redirected to AF_XDP on each.
# netns_cleanup            stops NETNS_SERVER_PID, detaches xroce from every
#                          veth created here, removes
#                          any pins left under /sys/fs/bpf/xroce/VETH and
#                          any lock file /run/xroce/VETH.lock, and
#                          deletes the namespaces. Idempotent. Processes started
#                          in the namespaces are the caller's to stop first.
#
# XROCE (default: $BUILD/xroce, BUILD defaults to build and, when relative,
# is taken from the repository's root) is the loader used for attaching,
# stats and detaching.

NETNS_CREATED=()
NETNS_VETHS=()
NETNS_COUNT=0
NETNS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

netns_exec() {
	local ns=$1
	shift
	nsenter --net="/var/run/netns/$ns" "$@"
}

# Names the two ends (and the middle, for netns_middlebox_pair) uniquely.
netns_name_ends() {
	local tag=${1:0:3} subnet=${2:-10.77.0}
	local id="$$$NETNS_COUNT"
	NETNS_COUNT=$((NETNS_COUNT + 1))
	NETNS_A="xroce-$tag-$id-a"
	NETNS_B="xroce-$tag-$id-b"
	NETNS_M="xroce-$tag-$id-m"
	VETH_A="x$tag${id}a"
	VETH_B="x$tag${id}b"
	VETH_MA="x$tag${id}ma"
	VETH_MB="x$tag${id}mb"
	ADDR_A="$subnet.1"
	ADDR_B="$subnet.2"
}

# Gives VETH_A and VETH_B their addresses and brings them (and lo) up.
netns_configure_ends() {
	local entry ns dev addr
	for entry in "$NETNS_A:$VETH_A:$ADDR_A" "$NETNS_B:$VETH_B:$ADDR_B"; do
		IFS=: read -r ns dev addr <<<"$entry"
		ip -n "$ns" link set lo up &&
			ip -n "$ns" addr add "$addr/24" dev "$dev" &&
			ip -n "$ns" link set "$dev" up &&
			netns_exec "$ns" ethtool -K "$dev" tx off >/dev/null || return 1
	done
}

netns_pair() {
	netns_name_ends "$@"
	ip netns add "$NETNS_A" || return 1
	NETNS_CREATED+=("$NETNS_A")
	ip netns add "$NETNS_B" || return 1
	NETNS_CREATED+=("$NETNS_B")
	local queues=()
	[ -z "${NETNS_QUEUES:-}" ] || queues=(numrxqueues "$NETNS_QUEUES" numtxqueues "$NETNS_QUEUES")
	ip link add "$VETH_A" "${queues[@]}" netns "$NETNS_A" type veth \
		peer name "$VETH_B" "${queues[@]}" netns "$NETNS_B" || return 1
	NETNS_VETHS+=("$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B")
	netns_configure_ends
}

netns_middlebox_pair() {
	netns_name_ends "$@"
	local ns dev
	for ns in "$NETNS_A" "$NETNS_B" "$NETNS_M"; do
		ip netns add "$ns" || return 1
		NETNS_CREATED+=("$ns")
	done
	ip link add "$VETH_A" netns "$NETNS_A" type veth peer name "$VETH_MA" netns "$NETNS_M" &&
		ip link add "$VETH_B" netns "$NETNS_B" type veth peer name "$VETH_MB" netns "$NETNS_M" ||
		return 1
	NETNS_VETHS+=("$NETNS_A:$VETH_A" "$NETNS_B:$VETH_B")
	netns_configure_ends || return 1
	for dev in "$VETH_MA" "$VETH_MB"; do
		ip -n "$NETNS_M" link set "$dev" up &&
			netns_exec "$NETNS_M" ethtool -K "$dev" tx off gro off gso off >/dev/null ||
			return 1
	done
}

netns_xroce() {
	local build=${BUILD:-build}
	[ "${build:0:1}" = / ] || build=$NETNS_REPO/$build
	echo "${XROCE:-$build/xroce}"
}

netns_wait_tcp_listen() {
	for _ in $(seq 50); do
		netns_exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

netns_attach() {
	local entry
	for entry in "$@"; do
		netns_exec "${entry%%:*}" "$(netns_xroce)" attach "${entry#*:}" >/dev/null || {
			echo "xroce attach ${entry#*:} failed"
			return 1
		}
	done
}

netns_run_pair() {
	local logdir=$1 seconds=$2 prog=$3 server_args=() client_status=0 server_status=0 side
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		server_args+=("$1")
		shift
	done
	shift
	netns_exec "$NETNS_A" timeout "$seconds" "$prog" server "${server_args[@]}" \
		>"$logdir/server.log" 2>&1 &
	NETNS_SERVER_PID=$!
	netns_exec "$NETNS_B" timeout "$seconds" "$prog" client "$@" >"$logdir/client.log" 2>&1 ||
		client_status=$?
	wait "$NETNS_SERVER_PID" || server_status=$?
	NETNS_SERVER_PID=""
	for side in server client; do
		echo "--- $side:"
		sed 's/^/    /' "$logdir/$side.log"
	done
	NETNS_PAIR_STATUS="server exit $server_status, client exit $client_status"
	[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ]
}

netns_stat() {
	netns_exec "$1" "$(netns_xroce)" stats "$2" | awk -v c="$3" '$1 == c { print $2 }'
}

netns_check_stats() {
	local entry dev stats counter value
	for entry in "$@"; do
		dev=${entry#*:}
		stats=$(netns_exec "${entry%%:*}" "$(netns_xroce)" stats "$dev") || {
			echo "xroce stats $dev failed"
			return 1
		}
		echo "--- xroce stats $dev:"
		sed 's/^/    /' <<<"$stats"
		for counter in drop_truncated drop_bad_tver drop_bad_opcode drop_bad_length engine_rx_too_long \
			redirected; do
			value=$(awk -v c="$counter" '$1 == c { print $2 }' <<<"$stats")
			if [ "$counter" = redirected ]; then
				[ -n "$value" ] && [ "$value" -gt 0 ] && continue
				echo "$dev: redirected is '$value', expected > 0"
			else
				[ "$value" = 0 ] && continue
				echo "$dev: $counter is '$value', expected 0"
			fi
			return 1
		done
	done
}

netns_cleanup() {
	local xroce entry ns dev
	xroce=$(netns_xroce)
	if [ -n "${NETNS_SERVER_PID:-}" ]; then
		kill "$NETNS_SERVER_PID" 2>/dev/null || true
		wait "$NETNS_SERVER_PID" 2>/dev/null || true
		NETNS_SERVER_PID=""
	fi
	for entry in "${NETNS_VETHS[@]}"; do
		ns=${entry%%:*}
		dev=${entry#*:}
		if [ -x "$xroce" ] && [ -d "/sys/fs/bpf/xroce/$dev" ]; then
			netns_exec "$ns" "$xroce" detach "$dev" >/dev/null 2>&1
		fi
		# A process killed while attached leaves its pins behind, and one
		# killed while it had the device open its lock file.
		rm -rf "/sys/fs/bpf/xroce/${dev:?}" "/run/xroce/${dev:?}.lock"
	done
	for ns in "${NETNS_CREATED[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	NETNS_VETHS=()
	NETNS_CREATED=()
}
