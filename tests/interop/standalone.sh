# shellcheck shell=bash
# The frame of an interop script run on its own rather than sourced by
# tests/interop/run.sh (perftest.sh, mw.sh): rxe-peer setup and up 1, xroce
# attached to the host interface, the script's MAIN, then "N passed, N
# failed", with the guest and the attachment torn down on every exit path
# (RXE_PEER_KEEP=1 leaves them up). From the repository root:
#
#   source tests/interop/standalone.sh
#   interop_standalone TAG MAIN
#
# It sets what run.sh would have: RXE_PEER (default ../shared/rxe-peer/rxe-peer
# next to the repository), logdir, passed, failed, failures; and exits with
# MAIN's verdict.

interop_die() {
	echo "$INTEROP_TAG: $*" >&2
	exit 1
}

interop_in_host() {
	nsenter --net="/var/run/netns/$INTEROP_HOST_NS" "$@"
}

interop_standalone_cleanup() {
	declare -F capture_kill >/dev/null && capture_kill
	if [ "$INTEROP_PEER_UP" -eq 1 ] && [ "${RXE_PEER_KEEP:-0}" != 1 ]; then
		if [ -d "/sys/fs/bpf/xroce/$INTEROP_HOST_IF" ]; then
			interop_in_host "$INTEROP_XROCE" detach "$INTEROP_HOST_IF" >/dev/null 2>&1 ||
				echo "$INTEROP_TAG: xroce detach $INTEROP_HOST_IF failed" >&2
		fi
		"$RXE_PEER" down >"$logdir/down.log" 2>&1 ||
			echo "$INTEROP_TAG: rxe-peer down failed" >&2
	fi
	echo "logs: $logdir"
}

interop_standalone() {
	INTEROP_TAG=$1
	local main=$2
	RXE_PEER=${RXE_PEER:-$PWD/../shared/rxe-peer/rxe-peer}
	INTEROP_XROCE=$(readlink -f "${BUILD:-build}/xroce")
	INTEROP_HOST_IF=${RXE_PEER_HOST_IF:-xrhost0}
	INTEROP_HOST_NS=${RXE_PEER_HOST_NS:-xrhost}
	INTEROP_PEER_UP=0
	logdir=$(mktemp -d "/tmp/xroce-$INTEROP_TAG.XXXXXX")
	passed=0
	failed=0
	failures=()
	trap interop_standalone_cleanup EXIT
	trap 'exit 130' INT TERM

	[ "$(id -u)" -eq 0 ] || interop_die "needs root (namespaces, XDP, qemu)"
	[ -x "$RXE_PEER" ] || interop_die "rxe-peer not found at $RXE_PEER (set RXE_PEER)"
	[ -x "$INTEROP_XROCE" ] || interop_die "$INTEROP_XROCE is missing (make all)"
	"$RXE_PEER" setup >"$logdir/setup.log" 2>&1 ||
		interop_die "rxe-peer setup failed, see $logdir/setup.log"
	INTEROP_PEER_UP=1
	echo "rxe-peer up 1 (the guest boots in 15-25 s)"
	"$RXE_PEER" up 1 >"$logdir/up.log" 2>&1 || interop_die "rxe-peer up 1 failed, see $logdir/up.log"
	if [ ! -d "/sys/fs/bpf/xroce/$INTEROP_HOST_IF" ]; then
		interop_in_host "$INTEROP_XROCE" attach "$INTEROP_HOST_IF" >"$logdir/attach.log" 2>&1 ||
			interop_die "xroce attach $INTEROP_HOST_IF failed: $(cat "$logdir/attach.log")"
	fi
	"$main"
	[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
