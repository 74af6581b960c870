#!/usr/bin/env bash
# rd_inflight.sh PCAP [MTU]: how many RDMA READ and atomic requests were ever
# outstanding at once in a capture, as the point where it was taken saw them.
# Prints "requests N max_in_flight M": N distinct requests (a retransmission,
# whose PSN is not beyond the highest its requester used, is not counted
# again: a READ uses a PSN per response packet, its length over the path
# MTU, default 1024, so that one asked again from the middle, as a
# tail-loss probe does, is a retransmission too), M the largest number sent
# and not yet answered. A request is
# answered by the READ response Last or Only, or the Atomic Acknowledge, whose
# PSN is at or beyond its own; responses come in request order, so one such
# response answers every request of its flow up to it.
# Flows are told apart by source and destination address: one requesting QP
# per direction and host pair (perftest's -q 1). Frames ICMP quotes are not
# counted. Needs tshark.
set -u
pcap=${1:?usage: rd_inflight.sh PCAP [MTU]}
mtu=${2:-1024}
command -v tshark >/dev/null || { echo "rd_inflight: tshark not found" >&2; exit 1; }

tshark -r "$pcap" -Y 'infiniband && !icmp && !icmpv6' --disable-protocol rpcordma -T fields \
	-E occurrence=f -e ip.src -e ip.dst -e ipv6.src -e ipv6.dst -e infiniband.bth.opcode \
	-e infiniband.bth.psn -e infiniband.reth.dmalen 2>/dev/null |
	awk -F'\t' -v mtu="$mtu" '
	# PSNs are 24-bit: a - b as a signed distance.
	function psn_diff(a, b,   d) {
		d = (a - b) % 16777216
		if (d < 0) d += 16777216
		return d >= 8388608 ? d - 16777216 : d
	}
	{
		src = $1 != "" ? $1 : $3
		dst = $2 != "" ? $2 : $4
		op = $5 + 0
		psn = $6 + 0
		if (op == 12 || op == 19 || op == 20) {
			# RDMA READ request, compare-and-swap, fetch-and-add.
			flow = src ">" dst
			if (flow in highest && psn_diff(psn, highest[flow]) <= 0)
				next
			npsns = op == 12 && $7 + 0 > mtu ? int(($7 + mtu - 1) / mtu) : 1
			highest[flow] = (psn + npsns - 1) % 16777216
			queue[flow, tail[flow]++] = psn
			requests++
			open_now = tail[flow] - head[flow]
			if (open_now > max_open) max_open = open_now
		} else if (op == 15 || op == 16 || op == 18) {
			# READ response Last, Only, Atomic Acknowledge: for the flow back.
			flow = dst ">" src
			# "+ 0": an unset head would make the subscript "flow SUBSEP", not 0.
			while (head[flow] < tail[flow] && psn_diff(queue[flow, head[flow] + 0], psn) <= 0)
				head[flow]++
		}
	}
	END { printf "requests %d max_in_flight %d\n", requests, max_open }'
