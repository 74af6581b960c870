// SPDX-License-Identifier: MIT
/*
 * The xroce XDP program: hands everything that is not RoCEv2 to the kernel,
 * drops malformed RoCEv2 frames, frames for QPs that are not open here and
 * frames that do not fit the QP's addresses (each reason counted), and steers
 * the rest to the AF_XDP socket of the rx queue. The engine in userspace
 * trusts what arrives on its socket to have complete headers for its opcode,
 * so every check here is a bound it relies on.
 *
 * Two fast paths spare the engine work it would only repeat (the contract is
 * in xroce/xdp_shared.h): plain ACKs are absorbed into the QP's entry, and
 * duplicate SEND/WRITE requests are answered with an ACK sent back by XDP_TX.
 * Both see only frames bound to their connection (P_Key, MACs, IPs), verify
 * the ICRC of what they consume, and anything they are unsure about goes to
 * the engine as before.
 */
#include <stdbool.h>
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
#include "icrc.h"

/* IPv4 frag_off bits that mark a fragment: MF and the fragment offset. */
#define IPV4_FRAGMENT_MASK 0x3fff
#define IPV4_DONT_FRAGMENT 0x4000

#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* An RC ACK: BTH, AETH and ICRC after the UDP header, nothing else. */
#define ACK_UDP_LEN (sizeof(struct udphdr) + XR_BTH_SIZE + XR_AETH_SIZE + XR_ICRC_SIZE)
#define ACK_FRAME_LEN (XR_FAST_UDP_OFF + ACK_UDP_LEN)
#define ACK_ICRC_OFF (ACK_FRAME_LEN - XR_ICRC_SIZE)

/*
 * Compare-and-swap attempts on xdp_ack before the ACK goes to the engine
 * instead: only another CPU absorbing an ACK of the same QP competes.
 */
#define ACK_CAS_TRIES 8

/*
 * How far behind xdp_ack a plain ACK may be and still be absorbed as a late
 * duplicate: ACKs still in flight trail the newest by at most what was
 * outstanding (the engine's send window, 512). Older ones answer nothing the
 * QP sent lately; the engine counts them as ghosts.
 */
#define STALE_ACK_WINDOW 1024

/* How far behind the committed PSN XDP still recognises a duplicate. */
#define DUP_WINDOW (1 << 22)

/* A fast path declined the frame: steer it to the engine as usual. */
#define FAST_PATH_DECLINED -1
/* An ACK the engine must see because it sleeps: steer it there and count it. */
#define FAST_PATH_WAKE_ENGINE -2

struct vlan_tag {
	__be16 tci;
	__be16 encapsulated_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XR_QP_TABLE_SLOTS);
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

/* Written by the engine, not by this program: pinned beside the others for bpftool. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xr_engine_stats);
} engine_stats SEC(".maps");

/* Written by the engine, not by this program: its path MTU and what bounds it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xr_engine_port);
} engine_port SEC(".maps");

/* Groups local QPs are attached to: written by the engine (xr_mcast_entry). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XR_MAX_MCAST_GROUPS);
	__type(key, struct xr_mcast_key);
	__type(value, struct xr_mcast_entry);
} mcast_groups SEC(".maps");

/*
 * Finds the UDP header of a frame addressed to the RoCEv2 port. Returns NULL
 * when the frame is not RoCEv2, including frames that end before the UDP
 * destination port: without it nothing says they are RoCE, so the kernel
 * (which validates IP itself) decides about them. *ip_payload_len is the UDP
 * length the IP header announces, *ipv6 whether that header is IPv6, *l3_out
 * where it starts.
 */
static __always_inline struct udphdr *
find_roce_udp(void *data, void *data_end, __u32 *ip_payload_len, bool *ipv6, void **l3_out)
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
		if (ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		udp = (void *)(ip6 + 1);
		*ip_payload_len = bpf_ntohs(ip6->payload_len);
		*ipv6 = true;
	} else {
		return NULL;
	}

	if ((void *)&udp->len > data_end)
		return NULL;
	if (udp->dest != bpf_htons(XR_ROCEV2_UDP_PORT))
		return NULL;
	*l3_out = l3;
	return udp;
}

/* Untagged IPv4 without options: the only layout the fast paths handle. */
static __always_inline bool fast_path_layout(void *data, void *data_end, struct udphdr *udp)
{
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return false;
	return eth->h_proto == bpf_htons(ETH_P_IP) && (void *)udp == data + XR_FAST_UDP_OFF;
}

/*
 * A frame a switch marked Congestion Experienced is the engine's: it owes the
 * sender a CNP, which the fast paths do not build. Marks are rare (a queue
 * past its threshold), so they cost the fast paths little.
 */
static __always_inline bool marked_ce(void *data, void *data_end)
{
	struct iphdr *ip = data + sizeof(struct ethhdr);

	if ((void *)(ip + 1) > data_end)
		return false;
	return (ip->tos & XR_ECN_MASK) == XR_ECN_CE;
}

/* Whether the ICRC stored at icrc_off matches the frame. */
static __always_inline bool icrc_ok(struct xdp_md *ctx, __u32 icrc_off)
{
	__s64 crc = xr_icrc_ipv4(ctx, icrc_off);
	__u8 stored[XR_ICRC_SIZE];

	if (crc < 0 || bpf_xdp_load_bytes(ctx, icrc_off, stored, sizeof(stored)))
		return false;
	/* Stored little-endian, whatever the host. */
	return (__u32)crc ==
	       (stored[0] | stored[1] << 8 | stored[2] << 16 | (__u32)stored[3] << 24);
}

enum ack_progress {
	ACK_ADVANCED, /* xdp_ack moved up to this ACK */
	ACK_OLD,      /* at or a little behind xdp_ack: nothing new */
	ACK_UNSENT,   /* acknowledges a PSN never sent */
	ACK_STALE,    /* further behind than any ACK still on its way can be */
	ACK_CONTENDED,
};

/* Moves xdp_ack up to psn, never backwards; msn travels with it. */
static __always_inline enum ack_progress advance_xdp_ack(struct xr_qp_entry *qp, __u32 psn,
							 __u32 msn)
{
	__u32 next_psn = READ_ONCE(qp->req_next_psn);
	__u64 want = xr_pack_psn_msn(psn, msn);
	int tries;

	for (tries = 0; tries < ACK_CAS_TRIES; tries++) {
		__u64 seen = READ_ONCE(qp->xdp_ack);
		__u32 acked = seen & XR_PSN_MASK;
		__u32 ahead = (psn - acked) & XR_PSN_MASK;

		if (xr_psn_diff(psn, acked) <= 0)
			return xr_psn_diff(acked, psn) <= STALE_ACK_WINDOW ? ACK_OLD : ACK_STALE;
		if (ahead >= ((next_psn - acked) & XR_PSN_MASK))
			return ACK_UNSENT;
		if (__sync_val_compare_and_swap(&qp->xdp_ack, seen, want) == seen)
			return ACK_ADVANCED;
	}
	return ACK_CONTENDED;
}

/*
 * A plain ACK for a requester: absorbed into xdp_ack and dropped, unless the
 * engine sleeps (then it goes to the socket to wake it) or it is not
 * plainly in the window. xdp_ack advances in either case, so that it keeps
 * up with the ACKs a sleeping engine receives itself.
 */
static __always_inline int absorb_ack(struct xdp_md *ctx, struct xr_qp_entry *qp,
				      struct xr_bth *bth, __u32 udp_len,
				      struct xr_xdp_stats *counters)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct xr_aeth *aeth = (void *)(bth + 1);
	__u32 psn, smsn;

	if (bth->opcode != XR_OP_RC_ACK || udp_len != ACK_UDP_LEN)
		return FAST_PATH_DECLINED;
	if ((void *)(aeth + 1) > data_end)
		return FAST_PATH_DECLINED;
	smsn = bpf_ntohl(aeth->smsn);
	/* NAKs and RNR NAKs change what the requester does: the engine's. */
	if (((smsn >> 24) & XR_AETH_TYPE_MASK) != XR_AETH_ACK)
		return FAST_PATH_DECLINED;
	psn = bpf_ntohl(bth->apsn) & XR_PSN_MASK;

	if (!icrc_ok(ctx, ACK_ICRC_OFF)) {
		counters->drop_bad_icrc++;
		return XDP_DROP;
	}
	switch (advance_xdp_ack(qp, psn, smsn & XR_PSN_MASK)) {
	case ACK_ADVANCED:
		/* Read after the advance: a sleeping engine must not miss it. */
		if (READ_ONCE(qp->engine_sleeping))
			return FAST_PATH_WAKE_ENGINE;
		break;
	case ACK_OLD:
		break;
	default:
		return FAST_PATH_DECLINED;
	}
	counters->acks_absorbed++;
	__sync_fetch_and_add(&qp->acks_absorbed, 1);
	return XDP_DROP;
}

static __always_inline __u16 ipv4_header_checksum(struct iphdr *ip)
{
	__u16 *words = (void *)ip;
	__u32 sum = 0;
	int i;

	for (i = 0; i < (int)sizeof(*ip) / 2; i++)
		sum += words[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	return ~sum;
}

/*
 * A SEND or WRITE request behind the committed expected PSN was placed
 * already; the requester lost our ACK. Turn the frame into the ACK the spec
 * requires (PSN committed - 1, the committed MSN) and send it back along the
 * QP's own path: its peer's MAC and IP from ours, never the frame's source,
 * which a router may have rewritten or a third host forged.
 * READs and atomics need their saved responses: those stay the engine's.
 * The caller passes only frames without fragments: shrinking one that has
 * them and sending it with XDP_TX crashes veth and generic XDP.
 */
static __always_inline int answer_duplicate(struct xdp_md *ctx, struct xr_qp_entry *qp,
					    struct xr_bth *bth, __u32 opflags, __u32 udp_len,
					    struct xr_xdp_stats *counters)
{
	__u32 icrc_off = XR_FAST_UDP_OFF + udp_len - XR_ICRC_SIZE;
	__u32 epsn, msn;
	__u64 committed;
	struct ethhdr *eth;
	struct udphdr *udp;
	struct iphdr *ip;
	struct xr_aeth *aeth;
	__s64 crc;
	__u8 *icrc;
	__s32 behind;
	void *data, *data_end;

	if (xr_opcode_transport(bth->opcode) != XR_TRANSPORT_RC ||
	    !(opflags & (XR_OPF_SEND | XR_OPF_WRITE)))
		return FAST_PATH_DECLINED;
	/* One load: the PSN and the MSN must describe the same moment. */
	committed = READ_ONCE(qp->committed);
	epsn = committed & XR_PSN_MASK;
	msn = (committed >> 32) & XR_PSN_MASK;
	behind = xr_psn_diff(bpf_ntohl(bth->apsn) & XR_PSN_MASK, epsn);
	if (behind >= 0 || behind < -DUP_WINDOW)
		return FAST_PATH_DECLINED;
	if (icrc_off > XR_ICRC_MAX_FRAME - XR_ICRC_SIZE)
		return FAST_PATH_DECLINED;
	if (!icrc_ok(ctx, icrc_off)) {
		counters->drop_bad_icrc++;
		return XDP_DROP;
	}

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (bpf_xdp_adjust_tail(ctx, (int)ACK_FRAME_LEN - (int)(data_end - data)))
		return FAST_PATH_DECLINED;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + ACK_FRAME_LEN > data_end)
		return XDP_ABORTED; /* the kernel just sized it so */
	eth = data;
	ip = data + XR_FAST_IP_OFF;
	udp = data + XR_FAST_UDP_OFF;
	bth = data + XR_FAST_BTH_OFF;
	aeth = data + XR_FAST_EXT_OFF;

	__builtin_memcpy(eth->h_dest, qp->peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, qp->local_mac, ETH_ALEN);
	ip->version = 4;
	ip->ihl = 5;
	/* As the engine's frames: the path's DSCP and ECN codepoint (ECT(0), or none). */
	ip->tos = qp->traffic_class;
	ip->tot_len = bpf_htons(sizeof(*ip) + ACK_UDP_LEN);
	/* Atomic (DF, never fragmented): its ID identifies nothing (RFC 6864). */
	ip->id = 0;
	ip->frag_off = bpf_htons(IPV4_DONT_FRAGMENT);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	/* Both IPv4-mapped: the binding check let only an IPv4 frame of this path in. */
	__builtin_memcpy(&ip->saddr, &qp->local_gid[12], sizeof(ip->saddr));
	__builtin_memcpy(&ip->daddr, &qp->peer_gid[12], sizeof(ip->daddr));
	ip->check = 0;
	ip->check = ipv4_header_checksum(ip);
	udp->source = bpf_htons(READ_ONCE(qp->udp_sport));
	udp->dest = bpf_htons(XR_ROCEV2_UDP_PORT);
	udp->len = bpf_htons(ACK_UDP_LEN);
	udp->check = 0;
	bth->opcode = XR_OP_RC_ACK;
	bth->flags = 0;
	bth->pkey = bpf_htons(XR_DEFAULT_PKEY);
	bth->qpn = bpf_htonl(READ_ONCE(qp->dest_qpn) & XR_QPN_MASK);
	bth->apsn = bpf_htonl(xr_psn_add(epsn, XR_PSN_MASK));
	aeth->smsn = bpf_htonl((__u32)XR_AETH_ACK_UNLIMITED << 24 | msn);

	crc = xr_icrc_ipv4(ctx, ACK_ICRC_OFF);
	if (crc < 0)
		return XDP_ABORTED; /* a 62-byte frame always has an ICRC */
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	icrc = data + ACK_ICRC_OFF;
	if ((void *)(icrc + XR_ICRC_SIZE) > data_end)
		return XDP_ABORTED;
	icrc[0] = crc;
	icrc[1] = crc >> 8;
	icrc[2] = crc >> 16;
	icrc[3] = crc >> 24;

	counters->dups_answered++;
	__sync_fetch_and_add(&qp->dups_answered, 1);
	return XDP_TX;
}

/* Hands a frame to the AF_XDP socket of its rx queue; counted there and in *rx_frames. */
static __always_inline int steer_to_engine(struct xdp_md *ctx, __u64 *rx_frames,
					   struct xr_xdp_stats *counters)
{
	if (bpf_redirect_map(&xsk_map, ctx->rx_queue_index, XDP_DROP) != XDP_REDIRECT) {
		counters->drop_no_socket++;
		return XDP_DROP;
	}
	counters->redirected++;
	__sync_fetch_and_add(rx_frames, 1);
	return XDP_REDIRECT;
}

/*
 * The frame's source or destination address as a GID, the form paths and
 * groups are kept in (IPv4 IPv4-mapped). False only when the IP header is
 * not in the frame, which find_roce_udp rules out.
 */
static __always_inline bool frame_gid(void *l3, void *data_end, bool ipv6, bool source,
				      __u8 gid[16])
{
	if (ipv6) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > data_end)
			return false;
		__builtin_memcpy(gid, source ? &ip6->saddr : &ip6->daddr, 16);
	} else {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > data_end)
			return false;
		__builtin_memset(gid, 0, 10);
		gid[10] = gid[11] = 0xff;
		__builtin_memcpy(&gid[12], source ? &ip->saddr : &ip->daddr, 4);
	}
	return true;
}

static __always_inline bool bytes_equal(const __u8 *a, const __u8 *b, int len)
{
	__u8 diff = 0;
	int i;

	for (i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return !diff;
}

/* The group bit of a destination MAC: multicast or broadcast. */
static __always_inline bool mac_is_group(const __u8 *mac)
{
	return mac[0] & 1;
}

/* check_binding found the frame addressed as its QP's entry says. */
#define FRAME_BOUND -1

/*
 * Whether a frame for qp is addressed as qp's entry says (the binding in
 * xroce/xdp_shared.h): to this interface's MAC, or to a group MAC for UD;
 * for a connected QP whose path is set, from its peer's GID to its own.
 * FRAME_BOUND, or the action for a frame that does not fit, counted.
 */
static __always_inline int check_binding(struct xdp_md *ctx, struct xr_qp_entry *qp, void *l3,
					 bool ipv6, struct xr_xdp_stats *counters)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	bool ud = qp->qp_type == XR_QPT_UD;
	__u8 gid[16];

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED; /* find_roce_udp checked it: cannot happen */
	if (mac_is_group(eth->h_dest) ? !ud : !bytes_equal(eth->h_dest, qp->local_mac, ETH_ALEN)) {
		counters->drop_bad_dst++;
		return XDP_DROP;
	}
	/* A UD QP takes datagrams from anyone; a connected one has a path from RTR on. */
	if (ud || !READ_ONCE(qp->path_valid))
		return FRAME_BOUND;
	if (!frame_gid(l3, data_end, ipv6, false, gid))
		return XDP_ABORTED;
	if (!bytes_equal(gid, qp->local_gid, sizeof(gid))) {
		counters->drop_bad_dst++;
		return XDP_DROP;
	}
	if (!frame_gid(l3, data_end, ipv6, true, gid))
		return XDP_ABORTED;
	if (!bytes_equal(gid, qp->peer_gid, sizeof(gid))) {
		counters->drop_bad_src++;
		return XDP_DROP;
	}
	return FRAME_BOUND;
}

/*
 * A datagram to a multicast group (destination QPN 0xFFFFFF) goes to the
 * engine, which hands it to every attached QP, only when a local QP is
 * attached to the group its destination address names, and only to a group
 * MAC: with no QP entry to name this interface's own MAC, a unicast one is
 * taken for another host's.
 */
static __always_inline int steer_multicast(struct xdp_md *ctx, void *l3, bool ipv6, __u32 opflags,
					   struct xr_xdp_stats *counters)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xr_mcast_key key = {};
	struct xr_mcast_entry *group;
	struct ethhdr *eth = data;

	/* Only UD is multicast: any other transport names a QP that does not exist. */
	if (!(opflags & XR_OPF_DETH)) {
		counters->drop_unknown_qp++;
		return XDP_DROP;
	}
	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED; /* find_roce_udp checked it: cannot happen */
	if (!mac_is_group(eth->h_dest)) {
		counters->drop_bad_dst++;
		return XDP_DROP;
	}
	if (!frame_gid(l3, data_end, ipv6, false, key.gid))
		return XDP_ABORTED;
	group = bpf_map_lookup_elem(&mcast_groups, &key);
	if (!group) {
		counters->drop_mcast_unjoined++;
		return XDP_DROP;
	}
	return steer_to_engine(ctx, &group->rx_frames, counters);
}

/*
 * Loaded as xdp.frags so that it can stay attached to an interface whose MTU
 * exceeds one page: a frame may then carry fragments past data_end, and its
 * length is bpf_xdp_get_buff_len's. Headers are always in the linear part.
 */
SEC("xdp.frags")
int xroce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 frame_len;
	bool has_frags;
	struct xr_xdp_stats *counters;
	struct xr_qp_entry *qp;
	struct xr_opinfo info;
	struct udphdr *udp;
	struct xr_bth *bth;
	__u32 ip_payload_len = 0, udp_len, dqpn, slot, zero = 0;
	__u32 pad, headers_len;
	int action;
	__u16 fast_path;
	bool ipv6 = false;
	void *l3 = NULL;

	counters = bpf_map_lookup_elem(&stats, &zero);
	if (!counters)
		return XDP_ABORTED;

	udp = find_roce_udp(data, data_end, &ip_payload_len, &ipv6, &l3);
	if (!udp) {
		counters->passed_non_roce++;
		return XDP_PASS;
	}
	if (ipv6)
		counters->roce_ipv6++;
	frame_len = bpf_xdp_get_buff_len(ctx);
	has_frags = frame_len > (__u32)(data_end - data);

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

	/*
	 * Ethernet may pad a short frame, so the frame may be longer than UDP
	 * says. Pad bytes belong to the last (or only) packet of a message, and
	 * an opcode without payload has nothing between its headers and the
	 * pad. The engine's parser (xr_pkt_parse) applies the same rules.
	 */
	udp_len = bpf_ntohs(udp->len);
	pad = (bth->flags & XR_BTH_PAD_MASK) >> XR_BTH_PAD_SHIFT;
	headers_len = sizeof(*udp) + info.hdr_len + pad + XR_ICRC_SIZE;
	if (udp_len != ip_payload_len || (__u32)((void *)udp - data) + udp_len > frame_len ||
	    udp_len < headers_len || (udp_len > headers_len && !(info.flags & XR_OPF_PAYLOAD)) ||
	    (pad && !(info.flags & XR_OPF_LAST))) {
		counters->drop_bad_length++;
		return XDP_DROP;
	}

	/* xroce's P_Key table holds the default P_Key alone, as rxe's does. */
	if (bth->pkey != bpf_htons(XR_DEFAULT_PKEY)) {
		counters->drop_bad_pkey++;
		return XDP_DROP;
	}
	dqpn = bpf_ntohl(bth->qpn) & XR_QPN_MASK;
	if (dqpn == XR_MULTICAST_QPN)
		return steer_multicast(ctx, l3, ipv6, info.flags, counters);
	/* Only the QPN the slot holds now: another one sharing the slot is gone or not yet. */
	slot = xr_qp_table_slot(dqpn);
	qp = bpf_map_lookup_elem(&qp_table, &slot);
	if (!qp || qp->state == XR_XDP_QP_NONE || READ_ONCE(qp->qpn) != dqpn) {
		counters->drop_unknown_qp++;
		return XDP_DROP;
	}
	if (qp->state != XR_XDP_QP_ACTIVE) {
		counters->drop_qp_state++;
		return XDP_DROP;
	}
	action = check_binding(ctx, qp, l3, ipv6, counters);
	if (action != FRAME_BOUND)
		return action;
	/* A datagram is for its QP only with that QP's Q_Key (the DETH follows the BTH). */
	if ((info.flags & XR_OPF_DETH) && qp->qp_type == XR_QPT_UD) {
		struct xr_deth *deth = (void *)(bth + 1);

		if ((void *)(deth + 1) > data_end)
			return XDP_ABORTED; /* hdr_len covers it: cannot happen */
		if (bpf_ntohl(deth->qkey) != READ_ONCE(qp->qkey)) {
			counters->drop_bad_qkey++;
			return XDP_DROP;
		}
	}

	/*
	 * Both need the path: the ACK absorbed came from the peer, the one built
	 * goes to it. A frame with fragments is the engine's untouched (see
	 * answer_duplicate); plain ACKs are never that long.
	 */
	fast_path = READ_ONCE(qp->fast_path);
	if (fast_path && !has_frags && qp->qp_type == XR_QPT_RC && READ_ONCE(qp->path_valid) &&
	    fast_path_layout(data, data_end, udp) && !marked_ce(data, data_end)) {
		action = FAST_PATH_DECLINED;
		if (fast_path & XR_XDP_FAST_ACK)
			action = absorb_ack(ctx, qp, bth, udp_len, counters);
		if (action == FAST_PATH_DECLINED && (fast_path & XR_XDP_FAST_DUP))
			action = answer_duplicate(ctx, qp, bth, info.flags, udp_len, counters);
		if (action == FAST_PATH_WAKE_ENGINE) {
			action = steer_to_engine(ctx, &qp->rx_frames, counters);
			if (action == XDP_REDIRECT)
				counters->acks_to_engine++;
			return action;
		}
		if (action != FAST_PATH_DECLINED)
			return action;
	}
	return steer_to_engine(ctx, &qp->rx_frames, counters);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
