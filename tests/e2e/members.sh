# shellcheck shell=bash
# Test programs driven line by line from a shell test ("members"): each runs
# in a namespace, reads commands from a FIFO and answers each with one line
# into a file, so that the script can order what several processes do.
# Source after e2e_common.sh (it uses $logdir and fail):
#
#   member_start NAME NS CMD...   starts CMD in NS's network namespace
#                                 (timeout 120), reads its first line into REPLY
#   member_ask NAME COMMAND [WANT] sends COMMAND; its answer (REPLY) must be
#                                 WANT, by default anything starting "ok "
#   member_next NAME              waits (10 s at most) for NAME's next line
#   member_show NAME              prints NAME's output and errors, indented
#   member_quit NAME              sends "quit", waits for NAME to exit 0, forgets it
#   member_quit_all               member_quit for every member
#   member_stop_all               kills every member (for the EXIT trap)

declare -A MEMBER_FD MEMBER_LINES MEMBER_PID

member_start() {
	local name=$1 ns=$2 fd
	shift 2
	mkfifo "$logdir/$name.in"
	# Opened read-write so that the member never sees end of file between commands.
	exec {fd}<>"$logdir/$name.in"
	MEMBER_FD[$name]=$fd
	MEMBER_LINES[$name]=0
	: >"$logdir/$name.out"
	netns_exec "$ns" timeout 120 "$@" <&"$fd" >"$logdir/$name.out" 2>"$logdir/$name.err" &
	MEMBER_PID[$name]=$!
	member_next "$name"
}

member_next() {
	local name=$1 want=$((MEMBER_LINES[$1] + 1)) _
	for _ in $(seq 1000); do
		if [ "$(wc -l <"$logdir/$name.out")" -ge "$want" ]; then
			REPLY=$(sed -n "${want}p" "$logdir/$name.out")
			MEMBER_LINES[$name]=$want
			return 0
		fi
		sleep 0.01
	done
	member_show "$name"
	fail "$name: no answer after 10 s"
}

member_show() {
	echo "--- $1 output:"
	sed 's/^/    /' "$logdir/$1.out"
	echo "--- $1 errors:"
	sed 's/^/    /' "$logdir/$1.err"
}

member_ask() {
	local name=$1 cmd=$2 want=${3:-}
	echo "$cmd" >&"${MEMBER_FD[$name]}"
	member_next "$name"
	if [ -n "$want" ]; then
		[ "$REPLY" = "$want" ] && return 0
	else
		[ "${REPLY:0:3}" = "ok " ] && return 0
	fi
	member_show "$name"
	fail "$name: '$cmd' answered '$REPLY', expected '${want:-ok ...}'"
}

# Forgets NAME: closes its FIFO.
member_forget() {
	exec {MEMBER_FD[$1]}>&-
	rm -f "$logdir/$1.in"
	unset "MEMBER_FD[$1]" "MEMBER_LINES[$1]" "MEMBER_PID[$1]"
}

member_quit_all() {
	local name
	for name in "${!MEMBER_PID[@]}"; do
		member_quit "$name"
	done
}

member_stop_all() {
	local name
	for name in "${!MEMBER_PID[@]}"; do
		e2e_stop_pid "${MEMBER_PID[$name]}"
	done
}

# member_quit NAME: sends "quit" to NAME, waits for it to exit 0, forgets it.
member_quit() {
	local status=0
	echo quit >&"${MEMBER_FD[$1]}"
	wait "${MEMBER_PID[$1]}" || status=$?
	[ "$status" -eq 0 ] || {
		member_show "$1"
		fail "$1 exited with $status"
	}
	member_forget "$1"
}
