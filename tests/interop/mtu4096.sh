# shellcheck shell=bash
# Path MTU 4096 against Soft-RoCE. Sourced by tests/interop/run.sh after every
# other kind of run (KINDS mtu4096), as it restarts the guest with every link
# at MTU 9000 (RXE_PEER_MTU=9000: rxe's active_mtu is 4096) and attaches xroce
# again, whose AF_XDP sockets are then multi-buffer. Then, both directions
# each, at -m 4096:
#   rc4k     xroce-pingpong against ibv_rc_pingpong for each of SIZES_4K
#            (default 4096 16384 65536); the guest-server run of
#            CAPTURE_4K_SIZE bytes (default 16384) is captured on the
#            guest's tap: each side sent ITERS * size / 4096 full packets
#            (4,096 bytes of payload, UDP length 4120; distinct PSNs, so a
#            retransmission counts once) and none longer;
#   verbs4k  Debian's ibv_rc_pingpong under xroce-run against the same, for
#            each of SIZES_VERBS_4K (default 65536);
#   perftest ib_write_bw and ib_read_bw against xroce-perf, and Debian's
#            ib_write_bw under xroce-run, of 65536 bytes: both sides must
#            print "Mtu : 4096[B]" (tests/interop/perftest.sh).
# Uses run.sh's helpers, logdir and counts.

SIZES_4K=${SIZES_4K:-4096 16384 65536}
SIZES_VERBS_4K=${SIZES_VERBS_4K:-65536}
CAPTURE_4K_SIZE=${CAPTURE_4K_SIZE:-16384}

# mtu4096_fail NAME WHY: counts and prints a failure that is not a run's.
mtu4096_fail() {
	failed=$((failed + 1))
	failures+=("$1")
	echo "FAIL $1: $2"
}

# mtu4096_restart: the guest and xrhost0 at MTU 9000, xroce attached again.
mtu4096_restart() {
	in_host_ns "$xroce" detach "$host_if" >"$logdir/mtu4096-detach.log" 2>&1 ||
		die "xroce detach $host_if failed: $(cat "$logdir/mtu4096-detach.log")"
	"$RXE_PEER" down >"$logdir/mtu4096-down.log" 2>&1 || die "rxe-peer down failed"
	peer_up=0
	echo "rxe-peer up 1 at MTU 9000 (the guest boots in 15-25 s)"
	RXE_PEER_MTU=9000 "$RXE_PEER" up 1 >"$logdir/mtu4096-up.log" 2>&1 ||
		die "rxe-peer up 1 at MTU 9000 failed, see $logdir/mtu4096-up.log"
	peer_up=1
	in_host_ns "$xroce" attach "$host_if" >"$logdir/mtu4096-attach.log" 2>&1 ||
		die "xroce attach $host_if at MTU 9000 failed: $(cat "$logdir/mtu4096-attach.log")"
	local mtu
	mtu=$(in_host_ns ip -o link show dev "$host_if" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
	[ "$mtu" = 9000 ] || die "$host_if has MTU $mtu after rxe-peer up at MTU 9000"
}

# mtu4096_capture_why PCAP SIZE: why the capture of an rc4k run of SIZE-byte
# messages is not what the header says (nothing when it is).
mtu4096_capture_why() {
	local pcap=$1 size=$2 full=$((8 + 12 + 4096 + 4)) expected
	expected=$((ITERS * size / 4096))
	tshark -r "$pcap" -Y 'udp.dstport == 4791 && !icmp' -T fields -E separator=, \
		-e ip.src -e udp.length -e infiniband.bth.psn >"$pcap.fields" 2>"$pcap.tshark.log" || {
		echo "tshark failed: $(tail -n 1 "$pcap.tshark.log")"
		return
	}
	awk -F, -v host="$host_ip" -v guest="$guest_ip" -v full="$full" -v want="$expected" '
		$2 == full && !seen[$1 "," $3]++ { n[$1]++ }
		$2 > full + 16 { long = $1 " sent UDP length " $2 }
		END {
			if (long != "") print long
			else if (n[host] != want || n[guest] != want)
				printf "full packets: %d from xroce, %d from rxe; expected %d each\n",
					n[host], n[guest], want
		}' "$pcap.fields"
}

mtu4096_main() {
	local size pcap why
	mtu4096_restart
	for size in $SIZES_4K; do
		if [ "$size" = "$CAPTURE_4K_SIZE" ]; then
			pcap=$logdir/rc4k-guest-server-$size.pcap
			if ! capture_begin "$pcap"; then
				mtu4096_fail "rc4k capture -s $size" "rxe-peer capture start failed"
				pcap=""
			fi
			run_guest_server rc4k "$size" 1
			if [ -n "$pcap" ]; then
				capture_end "$pcap" || mtu4096_fail "rc4k capture -s $size" "rxe-peer capture stop failed"
				why=$(mtu4096_capture_why "$pcap" "$size")
				if [ -n "$why" ]; then
					mtu4096_fail "rc4k capture -s $size" "$why"
				else
					passed=$((passed + 1))
					echo "PASS rc4k capture -s $size          $((ITERS * size / 4096)) packets of 4096 bytes each way"
				fi
			fi
		else
			run_guest_server rc4k "$size" 1
		fi
		run_xroce_server rc4k "$size" 1
	done
	for size in $SIZES_VERBS_4K; do
		run_guest_server verbs4k "$size" 1
		run_xroce_server verbs4k "$size" 1
	done
	# shellcheck source=tests/interop/perftest.sh
	PERFTEST_DEFINE_ONLY=1 source tests/interop/perftest.sh
	perftest_init || return
	perftest_run_pair "write_bw -m 4096" "write_bw -s 65536 -m 4096" "write_bw -s 65536 -m 4096" \
		65536 bw
	perftest_run_pair "read_bw -m 4096" "read_bw -s 65536 -m 4096" "read_bw -s 65536 -m 4096" \
		65536 bw
	PERF_UNMODIFIED=1 perftest_run_pair "unmodified write_bw -m 4096" \
		"write_bw -s 65536 -m 4096" "write_bw -s 65536 -m 4096" 65536 bw
}

mtu4096_main
