// SPDX-License-Identifier: MIT
/*
 * The xroce XDP program: hands everything that is not RoCEv2 to the kernel,
 * drops malformed RoCEv2 frames and frames for QPs that are not open here
 * (each reason counted), and steers the rest to the AF_XDP socket of the rx
 * queue. The engine in userspace trusts what arrives on its socket to have
 * complete headers for its opcode, so every check here is a bound it relies on.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xroce/wire.h"
#include "xroce/xdp_shared.h"

/* IPv4 frag_off bits that mark a fragment: MF and the fragment offset. */
#define IPV4_FRAGMENT_MASK 0x3fff

struct vlan_tag {
	__be16 tci;
	__be16 encapsulated_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XR_MAX_QP);
	__type(key, __u32);
	__type(value, struct xr_qp_entry);
} qp_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XR_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsk_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xr_xdp_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xr_xdp_config);
} config SEC(".maps");

/*
 * Finds the UDP header of a frame addressed to the RoCEv2 port. Returns NULL
 * when the frame is not RoCEv2, including frames that end before the UDP
 * destination port: without it nothing says they are RoCE, so the kernel
 * (which validates IP itself) decides about them. *ip_payload_len is the UDP
 * length the IP header announces.
 */
static __always_inline struct udphdr *find_roce_udp(void *data, void *data_end,
						    __u32 *ip_payload_len)
{
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__be16 proto;
	void *l3;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_tag *vlan = l3;

		if ((void *)(vlan + 1) > data_end)
			return NULL;
		proto = vlan->encapsulated_proto;
		l3 = vlan + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl_bytes, tot_len;

		if ((void *)(ip + 1) > data_end)
			return NULL;
		if (ip->version != 4 || ip->ihl < 5 || ip->protocol != IPPROTO_UDP)
			return NULL;
		/* Only the first fragment has a UDP header, and RoCE never fragments. */
		if (ip->frag_off & bpf_htons(IPV4_FRAGMENT_MASK))
			return NULL;
		ihl_bytes = ip->ihl * 4;
		tot_len = bpf_ntohs(ip->tot_len);
		if (tot_len < ihl_bytes)
			return NULL;
		udp = l3 + ihl_bytes;
		*ip_payload_len = tot_len - ihl_bytes;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > data_end)
			return NULL;
		/* RoCEv2 sends no extension headers. */
		if (ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		udp = (void *)(ip6 + 1);
		*ip_payload_len = bpf_ntohs(ip6->payload_len);
	} else {
		return NULL;
	}

	if ((void *)&udp->len > data_end)
		return NULL;
	if (udp->dest != bpf_htons(XR_ROCEV2_UDP_PORT))
		return NULL;
	return udp;
}

SEC("xdp")
int xroce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xr_xdp_stats *counters;
	struct xr_qp_entry *qp;
	struct xr_opinfo info;
	struct udphdr *udp;
	struct xr_bth *bth;
	__u32 ip_payload_len = 0, udp_len, slot, zero = 0;
	__u32 pad;

	counters = bpf_map_lookup_elem(&stats, &zero);
	if (!counters)
		return XDP_ABORTED;

	udp = find_roce_udp(data, data_end, &ip_payload_len);
	if (!udp) {
		counters->passed_non_roce++;
		return XDP_PASS;
	}

	bth = (void *)(udp + 1);
	if ((void *)(bth + 1) > data_end) {
		counters->drop_truncated++;
		return XDP_DROP;
	}
	if (bth->flags & XR_BTH_TVER_MASK) {
		counters->drop_bad_tver++;
		return XDP_DROP;
	}
	info = xr_opinfo[bth->opcode];
	if (!(info.flags & XR_OPF_VALID)) {
		counters->drop_bad_opcode++;
		return XDP_DROP;
	}
	if ((void *)bth + info.hdr_len > data_end) {
		counters->drop_truncated++;
		return XDP_DROP;
	}

	/* Ethernet may pad a short frame, so the frame may be longer than UDP says. */
	udp_len = bpf_ntohs(udp->len);
	pad = (bth->flags & XR_BTH_PAD_MASK) >> XR_BTH_PAD_SHIFT;
	if (udp_len != ip_payload_len || (void *)udp + udp_len > data_end ||
	    udp_len < sizeof(*udp) + info.hdr_len + pad + XR_ICRC_SIZE) {
		counters->drop_bad_length++;
		return XDP_DROP;
	}

	/* GSI (QPN 1) and multicast QPNs have no slot and fall out as unknown. */
	slot = (bpf_ntohl(bth->qpn) & XR_QPN_MASK) - XR_QPN_BASE;
	qp = slot < XR_MAX_QP ? bpf_map_lookup_elem(&qp_table, &slot) : NULL;
	if (!qp || qp->state == XR_XDP_QP_NONE) {
		counters->drop_unknown_qp++;
		return XDP_DROP;
	}
	if (qp->state != XR_XDP_QP_ACTIVE) {
		counters->drop_qp_state++;
		return XDP_DROP;
	}

	if (bpf_redirect_map(&xsk_map, ctx->rx_queue_index, XDP_DROP) != XDP_REDIRECT) {
		counters->drop_no_socket++;
		return XDP_DROP;
	}
	counters->redirected++;
	__sync_fetch_and_add(&qp->rx_frames, 1);
	return XDP_REDIRECT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
