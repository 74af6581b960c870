/* SPDX-License-Identifier: MIT */
/*
 * State shared between the XDP program and userspace: the layouts of the
 * pinned maps under /sys/fs/bpf/xroce/IFNAME/. The BPF program defines the
 * maps with these value types so their BTF names every field for bpftool.
 */
#ifndef XROCE_XDP_SHARED_H
#define XROCE_XDP_SHARED_H

#include <linux/types.h>

#include "xroce/qp_type.h"

/*
 * A QP's entry in qp_table is at slot xr_qpn_slot(qpn); the entry names the
 * QPN it holds (xr_qp_entry.qpn), so a frame for a number that merely shares
 * the slot is for no QP. QPNs below XR_QPN_BASE are never handed out.
 */
#define XR_QPN_BASE 0x11
#define XR_MAX_QP 1024
#define XR_MAX_QUEUES 64
/* Engine threads a device has at most (one per queue up to this). */
#define XR_MAX_ENGINES 16

static inline __u32 xr_qpn_slot(__u32 qpn)
{
	return qpn & (XR_MAX_QP - 1);
}

/*
 * QP1, the general services interface (management datagrams: the CM's),
 * has a slot of its own after the XR_MAX_QP a device's QPs share, so that
 * every one of those stays free for a QP.
 */
#define XR_GSI_QPN 1
#define XR_GSI_SLOT XR_MAX_QP
#define XR_QP_TABLE_SLOTS (XR_MAX_QP + 1)

/* The entry of qp_table that a frame for qpn belongs to. */
static inline __u32 xr_qp_table_slot(__u32 qpn)
{
	return qpn == XR_GSI_QPN ? XR_GSI_SLOT : xr_qpn_slot(qpn);
}

#define XR_PIN_ROOT "/sys/fs/bpf/xroce"

/* Pinned names inside XR_PIN_ROOT/IFNAME/. */
#define XR_PIN_PROG_LINK "link"
#define XR_PIN_QP_MAP "qp_table"
#define XR_PIN_XSK_MAP "xsk_map"
#define XR_PIN_STATS_MAP "stats"
#define XR_PIN_CONFIG_MAP "config"
#define XR_PIN_ENGINE_MAP "engine_stats"
#define XR_PIN_MCAST_MAP "mcast_groups"
#define XR_PIN_ENGINE_PORT_MAP "engine_port"

/* Multicast groups a device can join: the size of the mcast_groups map. */
#define XR_MAX_MCAST_GROUPS 64

/* Values of xr_qp_entry.state: 0 means no QP, the XDP program drops. */
enum xr_xdp_qp_state {
	XR_XDP_QP_NONE = 0,
	XR_XDP_QP_ACTIVE = 1, /* accepts frames: steer them to the engine */
	XR_XDP_QP_CLOSED = 2, /* exists but accepts nothing (RESET, ERR) */
};

/* A QP's transport counters: kept by the engine, published in its qp_table entry. */
struct xr_qp_counters {
	__u64 tx_frames;
	__u64 retransmits; /* packets sent again (go-back-N, early READ/atomic asks) */
	__u64 timeouts;	   /* local ACK timeouts */
	__u64 seq_naks_tx; /* PSN sequence NAKs sent as responder */
	__u64 rnr_naks_tx;
	__u64 rnr_naks_rx;
	__u64 dup_requests; /* duplicates that reached the engine */
	/* NAKs by kind (AETH NAK codes 0-3), sent as responder, received as requester */
	__u64 seq_naks_rx;
	__u64 inv_req_naks_tx;
	__u64 inv_req_naks_rx;
	__u64 rem_access_naks_tx;
	__u64 rem_access_naks_rx;
	__u64 rem_op_naks_tx;
	__u64 rem_op_naks_rx;
	__u64 tail_probes; /* first unacknowledged packets sent again as probes */
	/* selective repeat (docs/selective-repeat.md) */
	__u64 sacks_tx;	       /* SACKs sent as responder */
	__u64 sacks_rx;	       /* SACKs received as requester */
	__u64 sr_resends;      /* packets a SACK showed lost, sent again alone */
	__u64 sr_placed_ahead; /* packets placed past a gap, held until it filled */
	/* congestion notification (docs/congestion-control.md) */
	__u64 ecn_marked; /* frames received with CE in their IP header */
	__u64 cnps_tx;	  /* CNPs sent to the peer's QP for them */
	__u64 cnps_rx;	  /* CNPs received: they slow the requester (DCQCN) */
};

/*
 * One entry per QP slot in the mmap-able qp_table array, shared by the XDP
 * program and the engine. Ownership is per field, and the pairs that must be
 * read together are packed into one 64-bit word, written atomically.
 *
 * Before anything else XDP binds a frame to the QP its destination QPN
 * names: the entry at xr_qpn_slot(QPN) must hold that QPN (qpn), the P_Key
 * must be the default one, and the addresses must fit the path below
 * (drop_bad_dst, drop_bad_src otherwise). A group (multicast, broadcast)
 * MAC is for UD only, and a datagram to QPN 0xFFFFFF must come to one; UD
 * takes datagrams from any source.
 *
 * XDP fast paths (RC, IPv4, from RTR: the path is valid), on bound frames only:
 *  - requester side: a plain ACK (opcode 0x11, syndrome ACK) for this QP,
 *    with a valid ICRC, whose PSN lies in [acked PSN, req_next_psn), is
 *    absorbed: XDP advances xdp_ack (compare-and-swap, never backwards) and
 *    drops the frame. Not while engine_sleeping is set: then, and also when
 *    the flag turns up right after the advance, the ACK goes to the socket
 *    so that it wakes the engine (as AF_XDP's need_wakeup).
 *  - responder side: a SEND/WRITE request whose PSN is in the duplicate
 *    region behind the committed expected PSN (at most 2^22 behind) is turned
 *    into the ACK the spec requires (PSN = committed - 1, MSN = committed MSN)
 *    and sent with XDP_TX along the path: to peer_mac/peer_gid from
 *    local_mac/local_gid, DSCP of traffic_class, from udp_sport; nothing of
 *    the request's own addresses. Only userspace advances the committed PSN,
 *    after the request was placed: XDP never acknowledges anything unplaced.
 */
struct xr_qp_entry {
	__u32 state;   /* enum xr_xdp_qp_state; written by userspace */
	__u32 qp_type; /* enum xr_qp_type (qp_type.h) */
	/* userspace: msn << 32 | next expected PSN; everything before it placed */
	__u64 committed;
	/* XDP (and userspace when it resets the QP): msn << 32 | newest acked PSN */
	__u64 xdp_ack;
	__u32 req_next_psn;    /* userspace: PSNs before it have been sent */
	__u32 engine_sleeping; /* userspace: set before the engine blocks */
	__u32 dest_qpn;	       /* userspace: the peer's QPN, for ACKs XDP builds */
	__u16 udp_sport;       /* userspace: this QP's UDP source port */
	__u16 fast_path;       /* userspace: XR_XDP_FAST_* bits enabled for this QP */
	__u64 rx_frames;       /* XDP: frames steered to the engine */
	__u64 acks_absorbed;   /* XDP: plain ACKs consumed in XDP */
	__u64 dups_answered;   /* XDP: duplicate requests answered with XDP_TX */
	/* userspace: the QP's transport counters, refreshed every engine round */
	struct xr_qp_counters counters;
	__u32 qp_state; /* userspace: enum xr_qp_state (RESET..ERR), for operators */
	__u32 qkey;	/* userspace: a UD QP's Q_Key, which XDP checks each datagram against */
	__u32 qpn;	/* userspace: the QP number this slot holds now */
	/*
	 * userspace: the path frames must fit (address binding). Every QP: a
	 * unicast frame's destination MAC must be local_mac. Connected QPs (RC,
	 * UC) from RTR: the source address must be peer_gid and the destination
	 * local_gid (IPv4 as IPv4-mapped GIDs); replies XDP builds go to
	 * peer_mac/peer_gid from local_mac/local_gid, never to a frame's source.
	 */
	__u8 local_mac[6];
	__u8 peer_mac[6];
	__u8 local_gid[16];
	__u8 peer_gid[16];
	/* userspace: the TOS byte of replies XDP builds: the path's DSCP, the QP's ECN codepoint */
	__u8 traffic_class;
	__u8 path_valid; /* userspace: 1 once the connected path above is set */
	/*
	 * userspace: which process sharing the device holds the QP: 0 the
	 * device's owner, N its N-th guest (the owner routes their frames)
	 */
	__u16 holder;
	/*
	 * userspace: the requester's view of its path, for operators: the
	 * smoothed round-trip time and its mean deviation in microseconds (0
	 * before the first sample), and the congestion window in PSNs
	 */
	__u32 srtt_us;
	__u32 rttvar_us;
	__u32 cwnd;
	/* userspace: enum xr_qp_sr_flags, whether each side speaks selective repeat */
	__u32 sr_flags;
	/*
	 * userspace: the rate DCQCN paces the requester at, in Mb/s (0: not
	 * limited, no CNP came or it recovered)
	 */
	__u32 rate_mbps;
};

enum xr_qp_sr_flags {
	XR_QP_SR_REQUESTER = 1 << 0, /* our requests go self-placing, resent by SACK */
	XR_QP_SR_RESPONDER = 1 << 1, /* we hold the peer's requests out of order */
};

enum xr_xdp_fast_path {
	XR_XDP_FAST_ACK = 1 << 0, /* absorb plain ACKs */
	XR_XDP_FAST_DUP = 1 << 1, /* answer duplicate SEND/WRITE requests */
};

static inline __u64 xr_pack_psn_msn(__u32 psn, __u32 msn)
{
	return (__u64)msn << 32 | psn;
}

/* Per-CPU counters, one field per reason; bpftool prints them by name. */
struct xr_xdp_stats {
	__u64 passed_non_roce; /* not UDP/4791: handed to the kernel */
	__u64 redirected;      /* steered to an AF_XDP socket */
	__u64 drop_truncated;  /* frame ends inside a header */
	__u64 drop_bad_tver;   /* BTH transport version != 0 */
	__u64 drop_bad_opcode; /* opcode not in the table */
	__u64 drop_bad_length; /* headers + pad + ICRC longer than the frame */
	__u64 drop_unknown_qp; /* destination QP not open here */
	__u64 drop_qp_state;   /* QP exists but accepts nothing */
	__u64 drop_no_socket;  /* no AF_XDP socket on this rx queue */
	__u64 drop_bad_icrc;   /* a frame XDP consumes failed its ICRC */
	__u64 acks_absorbed;   /* plain ACKs consumed in XDP */
	__u64 acks_to_engine;  /* ACKs steered to a sleeping engine to wake it */
	__u64 dups_answered;   /* duplicate requests answered with XDP_TX */
	/* RoCEv2 frames over IPv6, also counted above by what became of them */
	__u64 roce_ipv6;
	__u64 drop_bad_qkey; /* a datagram whose DETH Q_Key is not its UD QP's */
	/* multicast RoCE (QPN 0xFFFFFF) for a group no local QP is attached to */
	__u64 drop_mcast_unjoined;
	__u64 drop_bad_pkey; /* P_Key not the default 0xFFFF */
	/* a connected QP's frame whose source IP is not its peer's */
	__u64 drop_bad_src;
	/* destination MAC not this interface's (nor multicast), or IP not the QP's */
	__u64 drop_bad_dst;
};

/*
 * The mcast_groups hash map: one entry per group that local UD QPs are
 * attached to, keyed by the group's GID as a frame's destination address
 * makes it (an IPv4 group IPv4-mapped). The engine adds an entry when the
 * first QP attaches and deletes it when the last detaches; XDP steers a
 * multicast datagram to the engine only while its group has an entry, and
 * counts it there.
 */
struct xr_mcast_key {
	__u8 gid[16];
};

struct xr_mcast_entry {
	__u32 qps_attached; /* userspace: local QPs attached to the group */
	__u32 reserved;
	__u64 rx_frames; /* XDP: the group's datagrams steered to the engine */
};

/*
 * The engine's port (the single entry of the engine_port array): the path
 * MTU its QPs may use and what bounds it, for `xroce status`. The engine
 * that owns the device writes it when it opens the device and zeroes it
 * when it closes it.
 */
struct xr_engine_port {
	__u32 active_mtu;	  /* bytes, 256 ... 4096; 0: no engine has the device */
	__u32 netdev_mtu;	  /* the interface's MTU when the engine opened it */
	__u32 max_frame;	  /* the longest frame its AF_XDP sockets carry each way */
	__u32 multi_buffer;	  /* 1: the sockets are multi-buffer (XDP_USE_SG) */
	__s32 multi_buffer_error; /* negative errno: they were asked to be and the kernel refused */
	__u32 interface_bound;	  /* 1: the interface's MTU, not the sockets, bounds the path MTU */
	__u32 rx_queues;	  /* the rx queues it has an AF_XDP socket on */
	__u32 tx_queues;	  /* of those, how many it sends on */
	__u32 engines;		  /* engine threads, each serving every engines-th queue */
};

/*
 * The engine's own counters (single-entry, mmap-able array): what happened to
 * the frames XDP steered to it, and transport events summed over its QPs.
 * Written by the engine after every round; bpftool and `xroce stats` read it.
 * Counters are only ever appended here and in xr_qp_counters: `xroce stats
 * --json` and `xroce qps --json` name every field (docs/json-output.md).
 */
struct xr_engine_stats {
	__u64 rx_frames;
	__u64 rx_bad_icrc;
	__u64 rx_malformed;
	__u64 rx_unknown_qp;
	__u64 rx_bad_state;
	__u64 rx_bad_pkey;
	__u64 tx_frames;
	__u64 tx_no_buffer;
	__u64 retransmits;
	__u64 timeouts;
	__u64 seq_naks_tx;
	__u64 rnr_naks_tx;
	__u64 rnr_naks_rx;
	__u64 dup_requests;
	__u64 seq_naks_rx;
	__u64 inv_req_naks_tx;
	__u64 inv_req_naks_rx;
	__u64 rem_access_naks_tx;
	__u64 rem_access_naks_rx;
	__u64 rem_op_naks_tx;
	__u64 rem_op_naks_rx;
	__u64 rx_bad_qkey;     /* UD: dropped, the DETH Q_Key is not the QP's */
	__u64 rx_no_recv;      /* UD: dropped, no receive WQE posted (UD has no RNR) */
	__u64 uc_dropped_msgs; /* UC: messages given up after their first packet came */
	/* dropped: a connected QP's frame whose source IP is not its peer's */
	__u64 rx_bad_src;
	/* dropped: destination MAC or IP not this device's or the QP's */
	__u64 rx_bad_dst;
	/* dropped: an ACK, NAK or response that answers no outstanding request */
	__u64 rx_ghost_acks;
	/* dropped: a response whose opcode does not fit the request it answers */
	__u64 rx_bad_response;
	/* dropped: duplicate READ/atomic requests beyond one replay of each saved response per
	 * engine round */
	__u64 rx_dup_deferred;
	/* dropped: a frame longer than the AF_XDP sockets carry (xroce status: max frame) */
	__u64 rx_too_long;
	/* of rx_frames: sent by this device to itself, delivered inside the engine */
	__u64 loopback_frames;
	/*
	 * frames passed between the owner and the other processes sharing the
	 * device (user/lib/share.h), both ways: counted by the owner
	 */
	__u64 relay_frames;
	/* of those: lost because the other side's socket was full or gone */
	__u64 relay_drops;
	/*
	 * system calls the library made to move frames and completions:
	 * transmit kicks, the engine's sleeps and wake-ups, eventfd writes,
	 * the sockets of processes sharing the device
	 */
	__u64 syscalls;
	/* times the engine thread blocked waiting for frames, work or a timer */
	__u64 sleeps;
	/* of those: while an operation was outstanding (XROCE_SPIN_IN_FLIGHT_US bounds the spin) */
	__u64 sleeps_in_flight;
	/*
	 * times the engine thread, standing by while an application thread
	 * polled a CQ and ran the engine, woke to look whether it still did
	 * (XROCE_STANDBY_MAX_US spaces them out)
	 */
	__u64 standby_looks;
	/* management datagrams (QP1): received and answered or handed to the CM, sent */
	__u64 mads_rx;
	__u64 mads_tx;
	/* dropped: a frame for QP1 that is no MAD (opcode, length, base version) */
	__u64 mads_malformed;
	/*
	 * dropped: a MAD of a class or class version xroce serves no agent
	 * for; a Get or Set among them is answered with an unsupported-version status
	 */
	__u64 mads_unserved;
	/*
	 * the communication manager (RDMA CM connections): CM messages
	 * dropped because they fit no connection here (IDs, transaction ID,
	 * state), or fit one but came from another address than its peer's;
	 * duplicates answered again or ignored; requests sent again after a
	 * timeout, and given up after the last retry; listens begun (a
	 * service ID taken by a listener, per device)
	 */
	__u64 cm_unmatched;
	__u64 cm_forged;
	__u64 cm_duplicates;
	__u64 cm_retries;
	__u64 cm_timeouts;
	__u64 cm_listens;
	/*
	 * requester: the first unacknowledged packet sent again, asking for an
	 * ACK, after about two round trips without one (a tail-loss probe)
	 */
	__u64 tail_probes;
	/*
	 * selective repeat between xroce peers: SACKs sent (responder) and
	 * received (requester); packets a SACK showed lost, sent again alone;
	 * packets placed past a gap and held until it filled; packets past a
	 * gap that could not be (a standard opcode, beyond the window, failing
	 * its checks), dropped for the requester to send again
	 */
	__u64 sacks_tx;
	__u64 sacks_rx;
	__u64 sr_resends;
	__u64 sr_placed_ahead;
	__u64 sr_unplaced;
	/*
	 * congestion notification: frames received marked CE by a switch;
	 * CNPs sent for them (at most one per QP per 50 us); CNPs received,
	 * which slow their QP's requester (DCQCN)
	 */
	__u64 ecn_marked;
	__u64 cnps_tx;
	__u64 cnps_rx;
	/*
	 * of rx_frames: those each engine thread received from its queues
	 * (the rest were received by an application thread that polled)
	 */
	__u64 rx_by_engine[XR_MAX_ENGINES];
};

/* The hook an attachment runs at (xr_xdp_config.mode). */
enum xr_xdp_mode {
	XR_XDP_MODE_NATIVE = 1,	 /* in the driver, before any skb (XDP_FLAGS_DRV_MODE) */
	XR_XDP_MODE_GENERIC = 2, /* after the skb is built, any driver (XDP_FLAGS_SKB_MODE) */
};

/* Values of xr_xdp_config.flags. */
enum xr_xdp_config_flags {
	/* The library attached for its own device (and detaches on close). */
	XR_XDP_CONFIG_EMBEDDED = 1 << 0,
};

/*
 * Single-entry array describing the attachment, written once by whoever
 * attaches (the XDP program reads nothing here). It tells a later loader or
 * library whether the pins still belong to the interface of that name: pins
 * are global, interface names and indexes are per network namespace.
 */
struct xr_xdp_config {
	__u32 ifindex;	    /* the interface attached, in the namespace below */
	__u32 flags;	    /* enum xr_xdp_config_flags */
	__u64 netns_cookie; /* SO_NETNS_COOKIE of that network namespace; 0 unknown */
	__u32 mode;	    /* enum xr_xdp_mode; AF_XDP sockets bind to match */
	__u32 reserved;
};

#endif /* XROCE_XDP_SHARED_H */
