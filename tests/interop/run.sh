#!/usr/bin/env bash
# make interop: xroce-pingpong against an unmodified ibv_rc_pingpong,
# Debian's unmodified ibv_rc_pingpong under xroce-run against the same
# program on Soft-RoCE (runs named "verbs ..."),
# xroce-uc-pingpong against an unmodified ibv_uc_pingpong,
# xroce-ud-pingpong against an unmodified ibv_ud_pingpong, and
# xroce-srq-pingpong against an unmodified ibv_srq_pingpong, on Linux
# Soft-RoCE (rdma_rxe) in a qemu guest booted by rxe-peer (see its README).
# For each size, two runs of ITERS round trips with --chk on both sides:
#   guest-server  ibv_*_pingpong server in rxeA, xroce's client in xrhost
#   xroce-server  xroce's server in xrhost, ibv_*_pingpong client in rxeA
# RC (ibv_rc_pingpong) over IPv4 (GID index 1, ::ffff:a.b.c.d) for each of
# SIZES, then over IPv6 with the link-local GIDs (-g 0, fe80::/64 from the
# MAC) for each of SIZES_V6; UD (ibv_ud_pingpong, runs named "ud ...": one
# datagram per message, at most the path MTU, 1024 on these 1500-byte links)
# over IPv4 for each of SIZES_UD and over IPv6 for each of SIZES_UD_V6; UC
# (ibv_uc_pingpong, runs named "uc ...": messages of several packets at path
# MTU 1024, unacknowledged, a lost packet losing its message and ending the
# run) over IPv4 for each of SIZES_UC, ITERS_UC round trips each; SRQ
# (ibv_srq_pingpong -q SRQ_QPS, runs named "srq ...": SRQ_QPS RC QPs on one
# shared receive queue on each side, ITERS exchanges over all of them, the
# out-of-band exchange of 256 addresses each way) over IPv4 for each of
# SIZES_SRQ; an SRQ run also needs SRQ_QPS address lines of each kind, with
# distinct QPNs, on both sides. Verbs runs (KIND verbs) take the host side's
# ibv_rc_pingpong from Debian, unmodified, under build/xroce-run on device
# xroce_IFNAME, over IPv4 for each of SIZES_VERBS.
# A run passes when both sides exit 0, both print the summary lines, the
# guest reports no invalid data and both GIDs are the expected ones.
# The UD xroce-server run of CAPTURE_UD_SIZE bytes over IPv4 is captured on
# the guest's tap (rxe-peer capture, whole frames) and passes only if, with
# tshark, each side sent ITERS UD SEND-only datagrams (opcode 0x64) with the
# DETH Q_Key 0x11111111, its own QPN as DETH source QP, the other's as BTH
# destination QP, consecutive PSNs from the one it announced, and every ICRC
# checks out; xroce's must also carry what rxe's do (UDP source port 0xC000 +
# the 14-bit hash of the QPN, checksum 0, TTL 64, DF, DSCP/ECN 0, P_Key
# 0xFFFF, no AckReq); what rxe sent is printed under the run.
# Prints PASS/FAIL per run, then "N passed, N failed"; exits non-zero when
# anything failed.
# The guest and xroce's attachment to xrhost0 are torn down on every exit path
# (RXE_PEER_KEEP=1 leaves them up, as perftest.sh and mw.sh run alone do).
#
# Env: BUILD (default build), RXE_PEER (the rxe-peer script, default
# ../shared/rxe-peer/rxe-peer next to the repository), SIZES, SIZES_V6,
# SIZES_UD, SIZES_UD_V6, CAPTURE_UD_SIZE (empty: no capture), SIZES_UC,
# SIZES_SRQ, SRQ_QPS (default 8), SIZES_VERBS, ITERS, ITERS_UC (default
# ITERS), GUEST_TIMEOUT (seconds a guest tool may run, default 120), KINDS
# (which groups of runs, default all: "rc ud uc srq verbs perftest mw cm rdmacm mtu4096"; e.g. KINDS=srq
# runs only the SRQ runs; perftest.sh's PERF_RUNS selects among its runs).
set -u
# A relative RXE_PEER is the caller's, from where they started us.
[ -n "${RXE_PEER:-}" ] && RXE_PEER=$(realpath -s "$RXE_PEER")
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
RXE_PEER=${RXE_PEER:-$PWD/../shared/rxe-peer/rxe-peer}
SIZES=${SIZES:-1 1024 4096 16384 65536}
SIZES_V6=${SIZES_V6:-1 4096 65536}
SIZES_UD=${SIZES_UD:-1 512 1024}
SIZES_UD_V6=${SIZES_UD_V6:-1024}
SIZES_UC=${SIZES_UC:-1 4096 65536}
SIZES_SRQ=${SIZES_SRQ:-4096 65536}
SRQ_QPS=${SRQ_QPS:-8}
SIZES_VERBS=${SIZES_VERBS:-1 4096 65536}
KINDS=" ${KINDS:-rc ud uc srq verbs perftest mw cm rdmacm mtu4096} "
CAPTURE_UD_SIZE=${CAPTURE_UD_SIZE-1024}
ITERS=${ITERS:-100}
ITERS_UC=${ITERS_UC:-$ITERS}
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
ud_pingpong=$(readlink -f "$BUILD/xroce-ud-pingpong")
uc_pingpong=$(readlink -f "$BUILD/xroce-uc-pingpong")
srq_pingpong=$(readlink -f "$BUILD/xroce-srq-pingpong")
xroce=$(readlink -f "$BUILD/xroce")
xroce_run=$(readlink -f "$BUILD/xroce-run")
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
	# A failure may be the emulated guest's: its kernel log and link counters
	# tell (read over the 9p control channel, which works when its network does not).
	if [ "$peer_up" -eq 1 ] && [ "$failed" -gt 0 ]; then
		"$RXE_PEER" exec rxeA 'dmesg | tail -n 60; /usr/bin/ip -s link; cd /sys/class/infiniband/rxeA/ports/1/hw_counters && grep . *' \
			>"$logdir/guest-state.txt" 2>&1
		echo "interop: the guest's kernel log and counters: $logdir/guest-state.txt"
	fi
	if [ "$peer_up" -eq 1 ] && [ "${RXE_PEER_KEEP:-0}" != 1 ]; then
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
for bin in "$pingpong" "$ud_pingpong" "$uc_pingpong" "$srq_pingpong" "$xroce" "$xroce_run"; do
	[ -x "$bin" ] || die "$bin is missing (make all)"
done

echo "rxe-peer setup"
"$RXE_PEER" setup >"$logdir/setup.log" 2>&1 || die "rxe-peer setup failed, see $logdir/setup.log"
peer_up=1
echo "rxe-peer up 1 (the guest boots in 15-25 s)"
"$RXE_PEER" up 1 >"$logdir/up.log" 2>&1 || die "rxe-peer up 1 failed, see $logdir/up.log"
# Attached already: a run with RXE_PEER_KEEP=1 before this one (as standalone.sh).
if [ ! -d "/sys/fs/bpf/xroce/$host_if" ]; then
	in_host_ns "$xroce" attach "$host_if" >"$logdir/attach.log" 2>&1 ||
		die "xroce attach $host_if failed: $(cat "$logdir/attach.log")"
fi
for _ in $(seq "$DAD_WAIT_TENTHS"); do
	[ -z "$(in_host_ns ip -6 addr show dev "$host_if" tentative)" ] &&
		[ -z "$("$RXE_PEER" exec "$guest" '/usr/bin/ip -6 addr show dev eth0 tentative')" ] &&
		break
	sleep 0.1
done
# The kernel's link-local address of our interface: xroce's GID 0 must be it.
host_ll=$(in_host_ns ip -6 -o addr show dev "$host_if" scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
[ -n "$host_ll" ] || die "$host_if has no IPv6 link-local address"

# The round trips of a KIND of run.
iters_of() {
	if [ "$1" = uc ]; then echo "$ITERS_UC"; else echo "$ITERS"; fi
}

# Summary lines of ibv_*_pingpong (and xroce's) for SIZE and ITERS; no invalid data.
summary_ok() {
	local log=$1 size=$2 iters=$3
	grep -Eq "^$((size * iters * 2)) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec" "$log" &&
		grep -Eq "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter" "$log" &&
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

# The tools of a KIND of run: rc, uc, ud, srq or verbs, or rc4k or verbs4k
# (tests/interop/mtu4096.sh: the same at path MTU 4096), the device our side
# names with -d, and the options both take.
host_tool() {
	case ${1%4k} in
	uc | ud | srq) echo "xroce-$1-pingpong" ;;
	verbs) echo "xroce-run ibv_rc_pingpong" ;;
	*) echo xroce-pingpong ;;
	esac
}
host_cmd() {
	case ${1%4k} in
	uc) echo "$uc_pingpong" ;;
	ud) echo "$ud_pingpong" ;;
	srq) echo "$srq_pingpong" ;;
	verbs) echo "$xroce_run ibv_rc_pingpong" ;;
	*) echo "$pingpong" ;;
	esac
}
host_dev() {
	if [ "${1%4k}" = verbs ]; then echo "xroce_$host_if"; else echo "$host_if"; fi
}
guest_tool() {
	if [ "${1%4k}" = verbs ]; then echo ibv_rc_pingpong; else echo "ibv_${1%4k}_pingpong"; fi
}
kind_opts() {
	case $1 in
	srq) echo "-q $SRQ_QPS" ;;
	*4k) echo "-m 4096" ;;
	esac
}

# Whether KIND's runs are selected (KINDS).
selected() {
	[[ $KINDS == *" $1 "* ]]
}

# An SRQ run's LOG shows SRQ_QPS local and SRQ_QPS remote addresses, each
# kind with distinct QPNs.
srq_addresses_ok() {
	local kind
	for kind in local remote; do
		[ "$(grep -E "^  $kind address: +LID" "$1" | awk '{ print $6 }' | sort -u | wc -l)" = \
			"$SRQ_QPS" ] || return 1
	done
}

# report KIND NAME HOST_STATUS GUEST_STATUS HOST_LOG GUEST_LOG SIZE GID_INDEX [WHY_IT_FAILED [NOTE]]
report() {
	local kind=$1 name=$2 host_status=$3 guest_status=$4 host_log=$5 guest_log=$6 size=$7
	local gid_index=$8 why=${9:-} note=${10:-}
	if [ -n "$why" ]; then
		:
	elif [ "$host_status" -ne 0 ] || [ "$guest_status" -ne 0 ]; then
		why="$(host_tool "$kind") exit $host_status, $(guest_tool "$kind") exit $guest_status"
	elif ! gid_ok "$host_log" "$gid_index"; then
		why="GIDs at index $gid_index are not $(host_gid "$gid_index") and $(guest_gid "$gid_index")"
	elif ! summary_ok "$host_log" "$size" "$(iters_of "$kind")" ||
		! summary_ok "$guest_log" "$size" "$(iters_of "$kind")"; then
		why="summary lines missing or invalid data reported"
	elif [ "$kind" = srq ] &&
		{ ! srq_addresses_ok "$host_log" || ! srq_addresses_ok "$guest_log"; }; then
		why="not $SRQ_QPS local and $SRQ_QPS remote addresses with distinct QPNs on both sides"
	fi
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		printf 'PASS %-28s %s\n' "$name" "$(grep -h 'usec/iter' "$host_log")"
		[ -z "$note" ] || echo "${note//$'\n'/$'\n'    }" | sed '1s/^/    /'
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

# guest_pingpong KIND SIZE GID_INDEX [SERVER]
guest_pingpong() {
	echo "timeout $GUEST_TIMEOUT $(guest_tool "$1") -g $3 -n $(iters_of "$1") -s $2 --chk $(kind_opts "$1") ${4:-}"
}

# run_name KIND DIRECTION SIZE GID_INDEX, run_tag (the same for log names):
# RC runs keep their historical names, UC and UD runs start with "uc", "ud".
run_name() {
	if [ "$1" = rc ]; then echo "$2 -g $4 -s $3"; else echo "$1 $2 -g $4 -s $3"; fi
}
run_tag() {
	if [ "$1" = rc ]; then echo "$2-g$4-$3"; else echo "$1-$2-g$4-$3"; fi
}

# QPN and PSN of the local or remote address line of a pingpong log, as numbers.
address_of() {
	sed -n "s/^  $2 address: .*QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\)[:,] GID .*/\1 \2/p" "$1" |
		head -n 1
}

# The UDP source port rxe gives a QP: 0xC000 + hash_32(QPN, 14).
rxe_sport() {
	echo $((0xC000 + ((($1 * 0x61C88647) & 0xffffffff) >> 18)))
}

# ud_capture_why PCAP HOST_LOG SIZE NOTE_FILE: why the capture of a UD run
# over IPv4 is not what the header of this script says (nothing when it is);
# writes what rxe sent to NOTE_FILE.
ud_capture_why() {
	local pcap=$1 host_log=$2 size=$3 note=$4 hq hpsn gq gpsn icrc
	local pad=$(((4 - size % 4) % 4)) ip_len
	ip_len=$((20 + 8 + 12 + 8 + size + pad + 4))
	read -r hq hpsn <<<"$(address_of "$host_log" local)"
	read -r gq gpsn <<<"$(address_of "$host_log" remote)"
	if [ -z "$hq" ] || [ -z "$gq" ]; then
		echo "no QPNs in $(basename "$host_log")"
		return
	fi
	tshark -r "$pcap" -Y 'udp.dstport == 4791 && !icmp' -T fields -E separator=, \
		-e ip.src -e ip.ttl -e ip.flags.df -e ip.dsfield -e ip.id -e ip.len -e udp.srcport \
		-e udp.checksum -e infiniband.bth.opcode -e infiniband.bth.se -e infiniband.bth.m \
		-e infiniband.bth.padcnt -e infiniband.bth.tver -e infiniband.bth.p_key \
		-e infiniband.bth.destqp -e infiniband.bth.a -e infiniband.bth.psn \
		-e infiniband.deth.q_key -e infiniband.deth.srcqp \
		>"$pcap.fields" 2>"$pcap.tshark.log" || {
		echo "tshark failed: $(tail -n 1 "$pcap.tshark.log")"
		return
	}
	local n_host=0 n_guest=0 first_id="" last_id="" guest_fields=""
	local src ttl df ds id len sport csum op se m padcnt tver pkey dqp a psn qkey sqp fields
	while IFS=, read -r src ttl df ds id len sport csum op se m padcnt tver pkey dqp a psn qkey sqp; do
		local own peer n start
		if [ "$src" = "$host_ip" ]; then
			own=$hq peer=$gq n=$n_host start=$hpsn
			n_host=$((n_host + 1))
		elif [ "$src" = "$guest_ip" ]; then
			own=$gq peer=$hq n=$n_guest start=$gpsn
			n_guest=$((n_guest + 1))
			[ -n "$first_id" ] || first_id=$id
			last_id=$id
			fields="sport $sport csum $csum ttl $ttl df $df dsfield $ds pkey $pkey tver $tver ackreq $a se $se migreq $m padcnt $padcnt"
			if [ -z "$guest_fields" ]; then
				guest_fields=$fields
			elif [ "$fields" != "${guest_fields% (not in every datagram)}" ]; then
				guest_fields="${guest_fields% (not in every datagram)} (not in every datagram)"
			fi
		else
			continue
		fi
		if [ "$op" != 100 ] || [ $((qkey)) -ne $((0x11111111)) ] || [ $((sqp)) -ne $((own)) ] ||
			[ $((dqp)) -ne $((peer)) ] || [ "$len" != "$ip_len" ] ||
			[ "$psn" -ne $(((start + n) & 0xffffff)) ]; then
			echo "datagram $((n + 1)) from $src: opcode $op, Q_Key $qkey, source QP $sqp, destination QP $dqp, IPv4 length $len, PSN $psn; expected 100, 0x11111111, $own, $peer, $ip_len, $(((start + n) & 0xffffff))"
			return
		fi
		if [ "$src" = "$host_ip" ] &&
			[ "sport $sport csum $csum ttl $ttl df $df dsfield $ds pkey $pkey tver $tver ackreq $a se $se migreq $m padcnt $padcnt" != \
				"sport $(rxe_sport "$hq") csum 0x0000 ttl 64 df 1 dsfield 0x00 pkey 65535 tver 0 ackreq 0 se 0 migreq 0 padcnt $pad" ]; then
			echo "xroce's datagram $((n + 1)): sport $sport csum $csum ttl $ttl df $df dsfield $ds pkey $pkey tver $tver ackreq $a se $se migreq $m padcnt $padcnt; expected sport $(rxe_sport "$hq") csum 0x0000 ttl 64 df 1 dsfield 0x00 pkey 65535 tver 0 ackreq 0 se 0 migreq 0 padcnt $pad"
			return
		fi
	done <"$pcap.fields"
	if [ "$n_host" -ne "$ITERS" ] || [ "$n_guest" -ne "$ITERS" ]; then
		echo "the capture holds $n_host datagrams from xroce and $n_guest from rxe, expected $ITERS each"
		return
	fi
	icrc=$("$RXE_PEER" icrc "$pcap" 2>&1)
	if ! grep -q "ICRC ok=$((2 * ITERS)) bad=0" <<<"$icrc"; then
		echo "ICRC check: $icrc"
		return
	fi
	{
		echo "capture: $((2 * ITERS)) UD SEND-only datagrams, DETH Q_Key 0x11111111, source QPs $hq (xroce) and $gq (rxe), PSNs consecutive from the announced ones, every ICRC good"
		echo "rxe sent: $guest_fields (its QPN's hash gives $(rxe_sport "$gq")), IP IDs $first_id..$last_id, PSNs from $gpsn"
	} >"$note"
}

# capture_begin PCAP / capture_end: the whole frames on the guest's tap.
capture_begin() {
	"$RXE_PEER" capture start "$1" 'udp port 4791' >"$1.log" 2>&1
}
capture_end() {
	"$RXE_PEER" capture stop >>"$1.log" 2>&1
}

# finish KIND NAME HOST_STATUS GUEST_STATUS HOST_LOG GUEST_LOG SIZE GID_INDEX PCAP:
# report, after checking the capture (if any) of a run that passed so far.
finish() {
	local pcap=$9 why="" note="" note_file
	if [ -n "$pcap" ]; then
		capture_end "$pcap" || why="rxe-peer capture stop failed: $(tail -n 3 "$pcap.log")"
		if [ -z "$why" ] && [ "$3" -eq 0 ] && [ "$4" -eq 0 ]; then
			note_file=$pcap.note
			why=$(ud_capture_why "$pcap" "$5" "$7" "$note_file")
			[ -n "$why" ] || note=$(cat "$note_file")
		fi
	fi
	report "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$why" "$note"
}

# run_guest_server KIND SIZE GID_INDEX [PCAP]
run_guest_server() {
	local kind=$1 size=$2 gid_index=$3 pcap=${4:-} id host_status=0 guest_status=0 name tag
	name=$(run_name "$kind" guest-server "$size" "$gid_index")
	tag=$(run_tag "$kind" guest-server "$size" "$gid_index")
	local host_log=$logdir/$tag.xroce.log guest_log=$logdir/$tag.rxe.log
	if [ -n "$pcap" ] && ! capture_begin "$pcap"; then
		report "$kind" "$name" 0 0 /dev/null "$pcap.log" "$size" "$gid_index" \
			"rxe-peer capture start failed"
		return
	fi
	id=$("$RXE_PEER" start "$guest" "$(guest_pingpong "$kind" "$size" "$gid_index")") ||
		die "rxe-peer start failed"
	# The guest server needs 2-3 s to listen; xroce's client also retries a refused connect.
	sleep 3
	# shellcheck disable=SC2046 # host_cmd and kind_opts are meant to be split into words
	in_host_ns timeout $((GUEST_TIMEOUT + 30)) $(host_cmd "$kind") -d "$(host_dev "$kind")" \
		-g "$gid_index" -n "$(iters_of "$kind")" -s "$size" --chk $(kind_opts "$kind") "$guest_ip" \
		>"$host_log" 2>&1 ||
		host_status=$?
	# If we failed before the exchange, the guest server still waits in accept():
	# a connection that closes at once makes it give up now rather than at its timeout.
	if ! grep -q "remote address:" "$host_log"; then
		in_host_ns timeout 5 bash -c "exec 3<>/dev/tcp/$guest_ip/18515" 2>/dev/null
	fi
	"$RXE_PEER" wait "$guest" "$id" $((GUEST_TIMEOUT + 30)) >"$guest_log" 2>&1 || guest_status=$?
	finish "$kind" "$name" "$host_status" "$guest_status" "$host_log" "$guest_log" "$size" \
		"$gid_index" "$pcap"
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

# run_xroce_server KIND SIZE GID_INDEX [PCAP]
run_xroce_server() {
	local kind=$1 size=$2 gid_index=$3 pcap=${4:-} id host_status=0 guest_status=0 name tag
	name=$(run_name "$kind" xroce-server "$size" "$gid_index")
	tag=$(run_tag "$kind" xroce-server "$size" "$gid_index")
	local host_log=$logdir/$tag.xroce.log guest_log=$logdir/$tag.rxe.log
	if [ -n "$pcap" ] && ! capture_begin "$pcap"; then
		report "$kind" "$name" 0 0 /dev/null "$pcap.log" "$size" "$gid_index" \
			"rxe-peer capture start failed"
		return
	fi
	# shellcheck disable=SC2046 # host_cmd and kind_opts are meant to be split into words
	in_host_ns timeout $((GUEST_TIMEOUT + 30)) $(host_cmd "$kind") -d "$(host_dev "$kind")" \
		-g "$gid_index" -n "$(iters_of "$kind")" -s "$size" --chk $(kind_opts "$kind") \
		>"$host_log" 2>&1 &
	server_pid=$!
	if ! wait_listening; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" || host_status=$?
		server_pid=""
		[ -z "$pcap" ] || capture_end "$pcap"
		echo "(not started)" >"$guest_log"
		report "$kind" "$name" "$host_status" 0 "$host_log" "$guest_log" "$size" "$gid_index" \
			"$(host_tool "$kind") did not listen on port 18515 (exit $host_status)"
		return
	fi
	id=$("$RXE_PEER" start "$guest" "$(guest_pingpong "$kind" "$size" "$gid_index" "$host_ip")") ||
		die "rxe-peer start failed"
	"$RXE_PEER" wait "$guest" "$id" $((GUEST_TIMEOUT + 30)) >"$guest_log" 2>&1 || guest_status=$?
	wait "$server_pid" || host_status=$?
	server_pid=""
	finish "$kind" "$name" "$host_status" "$guest_status" "$host_log" "$guest_log" "$size" \
		"$gid_index" "$pcap"
}

selected rc && for size in $SIZES; do
	run_guest_server rc "$size" 1
	run_xroce_server rc "$size" 1
done
selected rc && for size in $SIZES_V6; do
	run_guest_server rc "$size" 0
	run_xroce_server rc "$size" 0
done
# UD after RC: rxe's QPNs have moved on from its first ones and xroce's are
# random, so that the capture tells a source QP from a destination QP.
selected ud && for size in $SIZES_UD; do
	run_guest_server ud "$size" 1
	pcap=""
	[ "$size" = "$CAPTURE_UD_SIZE" ] && pcap=$logdir/ud-xroce-server-g1-$size.pcap
	run_xroce_server ud "$size" 1 "$pcap"
done
selected ud && for size in $SIZES_UD_V6; do
	run_guest_server ud "$size" 0
	run_xroce_server ud "$size" 0
done
selected uc && for size in $SIZES_UC; do
	run_guest_server uc "$size" 1
	run_xroce_server uc "$size" 1
done
selected srq && for size in $SIZES_SRQ; do
	run_guest_server srq "$size" 1
	run_xroce_server srq "$size" 1
done
selected verbs && for size in $SIZES_VERBS; do
	run_guest_server verbs "$size" 1
	run_xroce_server verbs "$size" 1
done

# perftest (ib_*_bw, ib_*_lat) against xroce-perf on the same guest; adds to the counts.
selected perftest && source tests/interop/perftest.sh
# Memory windows (type 1 and 2), fast registration, LOCAL_INV and SEND with
# invalidate, both ways, against rxe_mw_peer in the same guest; adds to the counts.
selected mw && source tests/interop/mw.sh
# shellcheck source=tests/interop/cm.sh
selected cm && source tests/interop/cm.sh
# shellcheck source=tests/interop/rdmacm.sh
selected rdmacm && source tests/interop/rdmacm.sh
# Last: it restarts the guest with every link at MTU 9000.
# shellcheck source=tests/interop/mtu4096.sh
selected mtu4096 && source tests/interop/mtu4096.sh

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
