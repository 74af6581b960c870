/* SPDX-License-Identifier: MIT */
/*
 * The transport core, without I/O: requester, responder and completer as
 * state machines driven by xr_core_rx (a received frame) and xr_core_progress
 * (time passing, work posted). They emit frames through struct xr_core_port,
 * place data directly into registered memory and push completions to CQs.
 * Time is always a parameter (nanoseconds, any monotonic origin).
 *
 * Not thread-safe: the owner (the engine, or a unit test) serialises calls.
 */
#ifndef XROCE_CORE_H
#define XROCE_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "packet.h"
#include "xroce/xdp_shared.h"
#include "xroce/xroce.h"

#define XR_MAX_SGE 16
#define XR_MAX_INLINE 256
#define XR_MAX_WR 16384
#define XR_MAX_CQE 65536
/*
 * Memory regions and windows share one table of keys. A key holds its table
 * index in bits 31:20, random bits in 19:8 and the owner's key byte in 7:0
 * (mr.c says why).
 */
#define XR_MAX_KEYS 4096
#define XR_KEY_INDEX_SHIFT 20
#define XR_KEY_BYTE 0xffu
/* Pages a fast-registration MR can map (xr_alloc_mr's max_num_sg). */
#define XR_MAX_FAST_REG_PAGES 65536
#define XR_MAX_PD 1024
/*
 * PSNs sent but not yet acknowledged, at most: the congestion window moves
 * between these bounds (AIMD), so that a loss under go-back-N costs a
 * retransmission of what is in flight, not of a full send window.
 */
#define XR_SEND_WINDOW 512
#define XR_CWND_MIN 8
/* The least a loss cuts the congestion window to; only the ACK timer goes below (cwnd.c). */
#define XR_CWND_LOSS_FLOOR 24
_Static_assert(XR_CWND_LOSS_FLOOR >= XR_CWND_MIN, "the loss floor is above the minimum");
/* The requester asks for an ACK at least this often inside a long message. */
#define XR_ACKREQ_INTERVAL 64
/*
 * Frames one QP's sender (RC or UC requester, UD) may send per engine round.
 * The QPs with work share the transmit ring (2048 frames) round robin: 64
 * keeps one QP's batch as large as a round's receive batch, so a single
 * QP streams as fast as before, while 32 QPs fill the ring and none can
 * take every buffer of a round from those behind it.
 */
#define XR_REQUESTER_ROUND_FRAMES 64
/*
 * PSNs sent and not yet acknowledged over all of a core's QPs, at most.
 * Each QP's window alone lets 1,024 QPs put half a million packets in
 * flight, which a receiver's AF_XDP ring (2048 frames) drops by the
 * thousand; half that ring leaves room for other peers' traffic and for
 * the ACKs, and is still twice the largest window one QP streams with.
 */
#define XR_CORE_WINDOW 1024

/* READ/atomic responder resources a QP can keep (max_dest_rd_atomic). */
#define XR_MAX_RD_ATOMIC 16

/*
 * READs/atomics a QP may have in flight (max_rd_atomic). It costs the
 * requester a counter, not memory, and 128 is what Soft-RoCE offers: perftest
 * (4.5) sets a client's initiator depth to the server's max_qp_rd_atom, so a
 * smaller bound makes ib_read_bw fail against a rxe server.
 */
#define XR_MAX_INIT_RD_ATOMIC 128

/*
 * The longest message (port attribute max_msg_sz): 1 GiB, as mlx5. A longer
 * READ, WRITE or SEND is an invalid request; the bound also keeps a READ's
 * responses (2^22 PSNs at MTU 256) well inside half the PSN space.
 */
#define XR_MAX_MSG_SZ (1u << 30)

/*
 * Everything that leaves the core goes through its port: frames out, and
 * what it reports (completion events). The core calls these from inside
 * whatever serialises it (the device lock): they must not block, and the
 * I/O they lead to (waking a consumer) is for their owner to do later.
 */
struct xr_core_port {
	void *ctx;
	/*
	 * Queues the port transmits on, 0 to tx_queues - 1 (0: one). A QP's
	 * frames go out on one of them: the queue its traffic arrives on,
	 * as xr_core_rx is told, so that both directions share a queue (and
	 * whatever serves it).
	 */
	uint32_t tx_queues;
	/*
	 * Engine threads that run the core, 1 to XR_MAX_ENGINES (0: one). A
	 * QP belongs to the engine of its queue, tx_queue mod engines: that
	 * engine's rounds (xr_core_progress_lane) run it and fire its timers.
	 */
	uint32_t engines;
	/* A buffer for one frame, or NULL when none is free right now. */
	uint8_t *(*tx_alloc)(void *ctx, uint32_t *cap);
	/* Sends buf on queue, after the frames submitted there before. */
	void (*tx_submit)(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len);
	/*
	 * A plain ACK, which may leave after frames submitted later (the port
	 * may hold it back to send with them). NULL: tx_submit.
	 */
	void (*tx_submit_ack)(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len);
	void (*tx_abort)(void *ctx, uint8_t *buf);
	/*
	 * A sound frame for a QPN this core does not hold, which another
	 * process sharing the device may: true when it took the frame. NULL:
	 * every QP there is is this core's.
	 */
	bool (*rx_foreign)(void *ctx, const uint8_t *frame, uint32_t len, uint32_t dqpn);
	/*
	 * An armed CQ with a completion channel fired (once per arming, the
	 * CQ is disarmed already). NULL: nobody listens.
	 */
	void (*cq_event)(void *ctx, struct xr_cq *cq);
};

struct xr_core;

/* Opaque in the public header; defined here. */
struct xr_pd {
	struct xr_core *core;
	struct xr_device *device;
	uint32_t handle;
	uint32_t refs; /* MRs and QPs using it */
};

struct xr_cq_impl {
	struct xr_cq pub;
	struct xr_core *core;
	struct xr_wc *ring;
	uint32_t size;	     /* slots, a power of two */
	uint32_t head, tail; /* produced, consumed */
	uint64_t overflows;
	bool overrun_reported;	/* CQ_ERR raised for the overrun under way */
	uint32_t refs;		/* QPs using it */
	uint32_t async_unacked; /* asynchronous events (CQ_ERR) taken and not acknowledged */
	/* Completion events: 0, or the arming of xr_req_notify_cq (one-shot). */
	int armed;
	struct xr_comp_channel *channel;
	struct xr_cq_impl *next_event; /* in the channel's queue of fired CQs */
	uint32_t events_fired, events_got,
	    events_acked; /* fired, taken by xr_get_cq_event, acked */
};

enum xr_cq_arm {
	XR_CQ_ARM_NONE,
	XR_CQ_ARM_ALL,
	XR_CQ_ARM_SOLICITED,
};

enum xr_swqe_state {
	XR_SWQE_POSTED, /* posted, not yet completed */
	XR_SWQE_DONE,	/* completed, waiting to be retired in order */
};

/* ---- memory: regions, windows and the key table they share ---------------- */

enum xr_key_kind {
	XR_KEY_FREE,
	XR_KEY_MR,
	XR_KEY_MW,
};

struct xr_key_slot {
	enum xr_key_kind kind;
	void *obj; /* struct xr_mr_impl or struct xr_mw_impl */
};

enum xr_mr_kind {
	XR_MR_USER,	/* xr_reg_mr: valid from the start, addresses are pointers */
	XR_MR_FAST_REG, /* xr_alloc_mr: valid between an XR_WR_REG_MR and an invalidation */
};

/* A fast-registration MR's or a memory window's state (the spec's Free / Valid). */
enum xr_mem_state {
	XR_MEM_INVALID,
	XR_MEM_VALID,
};

/* Pages a fast registration maps: byte 0 of the region is page_off into pages[0]. */
struct xr_page_map {
	uint64_t iova, length;
	uint64_t *pages;
	uint32_t npages;
	uint32_t page_shift;
	uint32_t page_off;
};

struct xr_mr_impl {
	struct xr_mr pub;
	struct xr_core *core;
	enum xr_mr_kind kind;
	enum xr_mem_state state;
	/* The keys accesses must carry (the engine's, not pub's): local SGEs, remote peers. */
	uint32_t lkey, rkey;
	int access;    /* the engine's view of pub.access */
	uint64_t iova; /* where the region starts in its own address space */
	uint64_t length;
	uint32_t mw_bound; /* windows bound to it: it may not go while any is */
	/* fast registration: what is mapped now, and what the next REG_MR takes */
	uint32_t max_pages;
	struct xr_page_map map, staged;
};

struct xr_qp_impl;

struct xr_mw_impl {
	struct xr_mw pub;
	struct xr_core *core;
	enum xr_mem_state state; /* type 1: always valid; type 2: valid while bound */
	uint32_t key;		 /* the rkey accesses must carry */
	struct xr_mr_impl *mr;	 /* bound to, or NULL */
	uint64_t addr, length;
	int access;
	struct xr_qp_impl *qp; /* type 2: accesses must come through the QP it was bound on */
};

/* An address handle: the path of UD sends through it. */
struct xr_ah_impl {
	struct xr_ah pub;
	struct xr_path path;
};

/* The ring sizes of queues: the smallest power of two not below n. */
static inline uint32_t xr_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static inline struct xr_mr_impl *xr_mr_impl(struct xr_mr *mr)
{
	return (struct xr_mr_impl *)mr;
}

static inline struct xr_mw_impl *xr_mw_impl(struct xr_mw *mw)
{
	return (struct xr_mw_impl *)mw;
}

/* ---- work requests ------------------------------------------------------ */

/* What a work-request opcode is: one table (wr.c) drives posting, sending and completing. */
enum xr_wr_flags {
	XR_WRF_VALID = 1 << 0,
	XR_WRF_LOCAL = 1 << 1,	    /* runs in the engine, puts nothing on the wire */
	XR_WRF_READ = 1 << 2,	    /* an RDMA READ: responses come back */
	XR_WRF_ATOMIC = 1 << 3,	    /* one 8-byte result comes back */
	XR_WRF_MASKED = 1 << 4,	    /* needs XR_DEVICE_MASKED_ATOMICS */
	XR_WRF_REMOTE = 1 << 5,	    /* carries a remote address and rkey */
	XR_WRF_DATA = 1 << 6,	    /* its gather list goes out as payload */
	XR_WRF_INVALIDATE = 1 << 7, /* invalidates invalidate_rkey */
	XR_WRF_IMM = 1 << 8,	    /* carries imm_data */
};

struct xr_wr_info {
	uint32_t flags;
	enum xr_wc_opcode wc_opcode;
	/* Wire opcodes of a message's first, middle, last and only packets. */
	uint8_t op_first, op_middle, op_last, op_only;
};

#define XR_WR_OPCODES (XR_WR_REG_MR + 1)
extern const struct xr_wr_info xr_wr_info[XR_WR_OPCODES];

/* The table entry of op; an all-zero (invalid) one for opcodes xroce does not know. */
static inline const struct xr_wr_info *xr_wr(enum xr_wr_opcode op)
{
	static const struct xr_wr_info invalid;

	return (unsigned)op < XR_WR_OPCODES ? &xr_wr_info[op] : &invalid;
}

/* The arguments of a bind (XR_WR_BIND_MW, or xr_bind_mw for a type 1 window). */
struct xr_bind_args {
	struct xr_mw_impl *mw;
	uint32_t new_rkey;
	struct xr_mr_impl *mr; /* NULL when length is 0 */
	uint64_t addr, length;
	unsigned int access;
};

/* Where a UD send goes: the AH's path (copied: the AH may go once posted) and the peer. */
struct xr_ud_args {
	struct xr_path path;
	uint32_t remote_qpn;
	uint32_t qkey; /* the Q_Key to send, the QP's when the WR's had its high bit set */
};

/* The arguments of an XR_WR_REG_MR. */
struct xr_reg_args {
	struct xr_mr_impl *mr;
	uint32_t key;
	int access;
};

struct xr_swqe {
	uint64_t wr_id;
	enum xr_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_be;
	uint32_t invalidate_rkey;
	union {
		struct xr_bind_args bind;
		struct xr_reg_args reg;
		struct xr_ud_args ud;
	};
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint64_t compare_add_mask, swap_mask; /* masked atomics */
	uint32_t length;		      /* total bytes */
	int num_sge;
	bool is_inline;
	bool signaled;
	bool psn_assigned;
	bool sr; /* its packets go in selective repeat's self-placing form */
	enum xr_swqe_state state;
	enum xr_wc_status status;
	uint32_t first_psn, last_psn, npkts;
	struct xr_sge sge[XR_MAX_SGE];
	uint8_t inline_data[XR_MAX_INLINE];
};

/*
 * A READ or atomic the responder accepted: kept so that its responses can
 * be sent as transmit buffers allow, and replayed (never re-executed) when a
 * duplicate request arrives.
 */
struct xr_rd_resource {
	bool valid, atomic;
	uint32_t first_psn, last_psn;
	uint32_t next_psn; /* next response to send; last_psn + 1 when all sent */
	uint64_t va;
	uint32_t rkey; /* checked again for every response: the MR may be gone */
	uint32_t length;
	uint64_t orig;	  /* atomic: the value before the operation */
	uint8_t syndrome; /* ACK, or the NAK the request earned */
	/* A duplicate restarted the responses; only once per engine round. */
	bool replayed, replayed_this_round;
};

struct xr_rwqe {
	uint64_t wr_id;
	int num_sge;
	uint32_t length;
	struct xr_sge sge[XR_MAX_SGE];
};

struct xr_srq_impl {
	struct xr_srq pub;
	struct xr_core *core;
	struct xr_rwqe *ring;
	uint32_t size;	     /* slots, a power of two */
	uint32_t head, tail; /* posted, taken by a QP */
	uint32_t max_sge;
	uint32_t limit;		/* armed when not 0 */
	uint32_t refs;		/* QPs using it */
	uint32_t async_unacked; /* asynchronous events taken and not acknowledged */
};

/* A link of a ready list: circular, through a sentinel in the core. */
struct xr_ready_link {
	struct xr_ready_link *prev, *next;
};

/*
 * DCQCN (dcqcn.c, docs/congestion-control.md) on one QP: the reaction
 * point's rate for its requests, and when its notification point last
 * sent a CNP. Rates in bytes per second.
 */
struct xr_dcqcn {
	bool limiting;			  /* a CNP came: requests are paced at rate */
	uint64_t rate, target;		  /* DCQCN's Rc and Rt */
	uint32_t cut_psn;		  /* RC: the last PSN sent when a CNP last cut the rate */
	uint32_t alpha;			  /* its estimate of congestion, in 1/XR_DCQCN_ALPHA_ONE */
	uint64_t alpha_at;		  /* the next decay of alpha, if no CNP comes first */
	uint64_t increase_at;		  /* the next timer-driven increase */
	uint64_t bytes_left;		  /* sent before the next byte-counter increase */
	uint32_t timer_stage, byte_stage; /* increases of each kind since the last cut */
	uint64_t next_tx_at;		  /* pacing: when the next request may leave */
	/* the rate the QP was sending at, measured over windows of XR_DCQCN_SAMPLE_NS */
	uint64_t sample_at, sample_bytes, measured_rate;
	uint64_t last_cnp_tx; /* notification point: when the QP last sent a CNP (0: never) */
};

struct xr_qp_impl {
	struct xr_qp pub;
	struct xr_core *core;
	struct xr_cq_impl *scq, *rcq;
	uint32_t slot; /* xr_qpn_slot(pub.qp_num): in core->qps and in XDP's qp_table */
	/* The port queue its frames go out on (xr_core_port.tx_queues). */
	uint32_t tx_queue;
	uint32_t lane; /* the engine that runs it: tx_queue mod the core's lanes */
	/* scheduling (core.c): its lane's ready list (next NULL: not on it) and timer heap */
	struct xr_ready_link ready;
	uint32_t timer_pos;  /* 1 + its index in its lane's timers; 0: no deadline */
	uint64_t timer_at;   /* its deadline there */
	uint32_t in_flight;  /* its share of core->in_flight, as last counted */
	bool window_blocked; /* its requester stopped at the core's window */
	bool window_waiting; /* its link is on core->window_wait, not the ready list */
	int sq_sig_all;
	struct xr_qp_cap cap;

	/* attributes */
	uint32_t mtu; /* bytes */
	enum xr_mtu path_mtu;
	uint32_t dest_qpn;
	uint32_t qkey;
	unsigned int access;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t sgid_index;
	struct xr_ah_attr ah;
	struct xr_path path;
	uint32_t mcast_groups; /* groups the QP is attached to: it cannot be destroyed */

	/* send queue: [sq_tail, sq_head) posted and not retired */
	struct xr_swqe *sq;
	uint32_t sq_size; /* power of two */
	uint32_t sq_head, sq_tail;

	/* receive queue, or the SRQ and the WQE taken from it for the message at hand */
	struct xr_rwqe *rq;
	uint32_t rq_size;
	uint32_t rq_head, rq_tail;
	struct xr_srq_impl *srq;
	struct xr_rwqe srq_wqe;
	bool srq_wqe_held;
	bool comm_established; /* COMM_EST raised: a packet came in RTR */
	/* The error the receive in progress ended with, not yet reported (CQ full) */
	enum xr_wc_status recv_error;
	/* SQD: requests started before still go out; SQ_DRAINED once all are acknowledged */
	bool sq_draining, sqd_notify;
	uint32_t async_unacked; /* asynchronous events taken and not acknowledged */

	/* requester */
	uint32_t snd_psn;    /* next PSN never sent before */
	uint32_t tx_idx;     /* WQE the next packet belongs to */
	uint32_t tx_pkt;     /* packet number inside it */
	uint32_t tx_psn;     /* PSN of the next packet to (re)transmit */
	uint32_t tx_new_psn; /* the first PSN never transmitted (a READ's: its requests) */

	/* round-trip estimation (rtt.c): smoothed and mean deviation, 0 before a sample */
	uint64_t srtt_ns, rttvar_ns;
	uint32_t rtt_psn;     /* the packet being timed */
	uint64_t rtt_sent_at; /* when it was sent; 0: none is timed */

	/* completer */
	uint32_t acked_psn;	 /* last PSN acknowledged (snd start - 1 initially) */
	uint32_t ack_hint;	 /* newest PSN an ACK covered, held back by a READ/atomic */
	uint64_t retry_deadline; /* 0: no timer */
	uint64_t rnr_deadline;	 /* 0: not waiting after an RNR NAK */
	uint8_t retry_left, rnr_left;
	uint32_t rd_outstanding; /* READ/atomic WQEs sent and not completed */
	bool rd_resent;		 /* a lost READ/atomic response was asked for again early */
	/* congestion window (cwnd.c) */
	uint32_t cwnd, ssthresh; /* congestion window and slow-start threshold, in PSNs */
	uint32_t cwnd_acc;	 /* PSNs acknowledged toward the next additive increase */
	uint32_t recover_psn;	 /* no further decrease until this PSN is acknowledged */
	bool in_recovery;
	/* tail-loss probes (completer.c) */
	uint64_t probe_deadline; /* 0: none armed */
	uint8_t probe_backoff;	 /* probes sent since the last progress */

	/*
	 * selective repeat (sr.c), as requester: the responder answers with
	 * SACKs, so WRITEs go in its self-placing form and only what a SACK
	 * shows missing is sent again; per PSN in flight, what it knows
	 */
	bool sr_peer;
	struct xr_sr_tx_slot *sr_tx; /* XR_SR_WINDOW slots, by PSN (RC with the capability) */
	uint32_t sr_high;	     /* the newest PSN a SACK reported received */
	uint32_t sr_lost;	     /* PSNs marked lost since the last resend pass (0: none) */

	/* congestion control (dcqcn.c): ECN's notification and reaction points */
	struct xr_dcqcn dcqcn;
	bool pace_blocked; /* the requester stopped at the DCQCN rate: the timer brings it back */

	/* responder */
	uint32_t epsn; /* next expected PSN */
	uint32_t msn;
	bool nak_sent;	  /* a PSN sequence NAK for the current gap is out */
	bool ack_pending; /* an ACK of ack_psn goes out at the end of the rx batch */
	uint32_t ack_psn;
	bool recv_active; /* a multi-packet SEND is being received */
	uint32_t recv_off;
	bool write_active; /* a multi-packet WRITE is being placed */
	bool uc_dropping;  /* UC: packets are dropped until a message starts */
	uint64_t write_va;
	uint32_t write_rkey; /* checked again for every packet: the MR may be gone */
	uint32_t write_left, write_total;
	struct xr_rd_resource rd_res[XR_MAX_RD_ATOMIC];
	uint32_t rd_res_next;	      /* ring position of the next resource to use */
	uint32_t rd_res_frames_round; /* responses sent in this engine round */
	/*
	 * selective repeat (sr.c), as responder: the requester set
	 * XR_BTH_SR_CAPABLE; sr_heard once it sets XR_BTH_SR_HEARD: it knows we
	 * speak it too (until then every answer is a SACK, which tells it)
	 */
	bool sr_requester, sr_heard;
	bool sack_due;		     /* a SACK goes out at the end of the rx batch */
	struct xr_sr_rx_slot *sr_rx; /* XR_SR_WINDOW slots, by PSN (RC with the capability) */
	uint32_t sr_held;	     /* packets placed past epsn, not yet committed */
	uint32_t sr_newest;	     /* the newest PSN received past epsn, held or not */

	/* statistics */
	uint64_t rx_frames;
	struct xr_qp_counters cnt; /* published in the QP's qp_table entry */
};

/* QPs one multicast group delivers to, and the attachments a device holds. */
#define XR_MAX_MCAST_QP_ATTACH 32
#define XR_MAX_TOTAL_MCAST_QP_ATTACH (XR_MAX_MCAST_GROUPS * XR_MAX_MCAST_QP_ATTACH)

/* Asynchronous events the core holds until the device takes them. */
#define XR_MAX_EVENTS 256

/* A group local UD QPs are attached to; unused while nqps is 0. */
struct xr_mcast_group {
	union xr_gid gid;
	uint32_t nqps;
	struct xr_qp_impl *qps[XR_MAX_MCAST_QP_ATTACH];
};

/*
 * What one engine thread runs: the QPs with work, oldest first (core.c),
 * and those with a deadline, a binary min-heap by timer_at.
 */
struct xr_core_lane {
	struct xr_ready_link ready;
	struct xr_qp_impl *timers[XR_MAX_QP];
	uint32_t ntimers;
	uint32_t in_flight;   /* its QPs' share of core->in_flight */
	bool engine_sleeping; /* as last told (xr_core_set_engine_sleeping) */
};

struct xr_core {
	struct xr_core_port port;
	struct xr_device *device; /* NULL in unit tests */
	uint8_t mac[6];
	union xr_gid gids[XR_MAX_GIDS];
	int num_gids;
	enum xr_mtu active_mtu;
	uint64_t caps;		     /* enum xr_device_cap_flags */
	uint64_t line_rate;	     /* the interface's, bytes per second (0: unknown) */
	uint64_t now;		     /* the time of the frame or round being handled */
	uint16_t xdp_fast_path;	     /* enum xr_xdp_fast_path bits for new QPs */
	struct xr_qp_entry *xdp_qps; /* shared with XDP, or NULL */
	/*
	 * Which of the processes sharing the device this core is (0 its owner):
	 * the holder of its QPs' entries in xdp_qps, by which the owner routes.
	 */
	uint16_t xdp_holder;

	struct xr_qp_impl *qps[XR_MAX_QP]; /* at xr_qpn_slot of their QPN */
	uint32_t qp_slots_used;		   /* slots >= this are all free: loops stop there */
	struct xr_core_lane lanes[XR_MAX_ENGINES];
	uint32_t nlanes;
	/* Atomic, two lanes or more: bit i, lane i got work since xr_core_take_readied. */
	uint32_t lanes_readied;
	uint64_t qp_visits; /* QPs run by xr_core_progress, all rounds: what a round costs */
	uint32_t in_flight; /* PSNs sent, not acknowledged, all QPs (XR_CORE_WINDOW) */
	/* QPs with nothing in flight that wait for the core's window, oldest first */
	struct xr_ready_link window_wait;
	uint32_t last_qpn; /* handed out last; 0 before the first QP */
	struct xr_key_slot keys[XR_MAX_KEYS];
	/* keys and QPNs: seeded unpredictably in xr_core_init (tests may set it) */
	uint64_t rng;
	uint32_t pd_seq;
	uint16_t ip_id;
	uint32_t gsi_psn; /* of QP1's next send */
	struct xr_cm *cm; /* the communication manager, once anything used it (cm.h) */
	/* Frames sent that must leave at once: all but plain ACKs, which may wait for company. */
	uint64_t tx_urgent;
	struct xr_mcast_group mcast[XR_MAX_MCAST_GROUPS];
	/* Asynchronous events raised, for the device to hand out: a ring. */
	struct xr_async_event events[XR_MAX_EVENTS];
	bool event_forgotten[XR_MAX_EVENTS]; /* its object was destroyed first */
	uint32_t events_head, events_tail;
	uint64_t events_lost; /* raised while the ring was full */
	struct xr_engine_stats stats;
};

/* ---- core.c ---- */
void xr_core_init(struct xr_core *core, const struct xr_core_port *port);
/* Frees what the core allocated by itself (its CM); QPs and other objects are their owners'. */
void xr_core_release(struct xr_core *core);
/*
 * A received frame, from the port's rx queue queue or, from elsewhere (the
 * device itself, another process sharing it), XR_RX_NO_QUEUE. Never fails:
 * bad frames are counted and dropped.
 */
void xr_core_rx(struct xr_core *core, const uint8_t *frame, uint32_t len, uint32_t queue,
		uint64_t now);
#define XR_RX_NO_QUEUE UINT32_MAX
/*
 * One engine's round: transmit what its QPs can, fire their due timers
 * (lane 0 also the CM's); returns its next deadline (0 = none).
 */
uint64_t xr_core_progress_lane(struct xr_core *core, uint32_t lane, uint64_t now);
/* Every lane's round; returns the earliest deadline (0 = none). */
uint64_t xr_core_progress(struct xr_core *core, uint64_t now);
/* Some operation is outstanding: posted and not yet sent, or sent and not yet acknowledged. */
bool xr_core_outstanding(const struct xr_core *core);
/* The same for lane's QPs. */
bool xr_core_lane_outstanding(const struct xr_core *core, uint32_t lane);
/*
 * Any thread: the lanes given work since the last call, as bits, and
 * forgets them. Their engines must look at them if they sleep. A core of
 * one lane keeps no bits (an atomic per post for nothing): its lane.
 */
static inline uint32_t xr_core_take_readied(struct xr_core *core)
{
	if (core->nlanes == 1)
		return 1;
	if (!__atomic_load_n(&core->lanes_readied, __ATOMIC_RELAXED))
		return 0;
	return __atomic_exchange_n(&core->lanes_readied, 0, __ATOMIC_SEQ_CST);
}
/* The QPs with a deadline, all lanes. */
uint32_t xr_core_timer_count(const struct xr_core *core);
/*
 * qp may have work: the next xr_core_progress runs it. Whatever gives a QP
 * work outside a round (a frame, a post, a state change) calls this.
 */
void xr_core_qp_ready(struct xr_qp_impl *qp);
/* qp is going away: off the ready list and the timer heap. */
void xr_core_qp_forget(struct xr_qp_impl *qp);
/* qp's frames leave on queue from now on, and the engine of that queue runs it. */
void xr_core_qp_set_queue(struct xr_qp_impl *qp, uint32_t queue);
/*
 * Counts qp's PSNs in flight into the core's again; returns how many more
 * all QPs together may have in flight (0: the core's window is full).
 */
uint32_t xr_core_window_left(struct xr_qp_impl *qp);
/* gid is one of this device's (a zero GID never is). */
bool xr_core_gid_is_local(const struct xr_core *core, const union xr_gid *gid);
/* The path from our GID grh->sgid_index to grh->dgid via dmac (udp_sport is the caller's). */
void xr_core_path_init(const struct xr_core *core, struct xr_path *path,
		       const struct xr_global_route *grh, const uint8_t dmac[6]);
/* Builds the headers of a frame for qp: NULL when no tx buffer is free. */
uint8_t *xr_core_frame_begin(struct xr_core *core, struct xr_qp_impl *qp,
			     const struct xr_bth_fields *bth, uint32_t payload_len,
			     struct xr_pkt_out *out);
/* The same along another path than the QP's (a UD send's address handle). */
uint8_t *xr_core_frame_begin_to(struct xr_core *core, const struct xr_path *path,
				const struct xr_bth_fields *bth, uint32_t payload_len,
				struct xr_pkt_out *out);
/* Seals and sends a frame built above; qp (NULL for QP1) counts it. */
void xr_core_frame_send(struct xr_core *core, struct xr_qp_impl *qp, struct xr_pkt_out *out);
/* Returns false when no tx buffer was available. */
bool xr_core_send_ack(struct xr_core *core, struct xr_qp_impl *qp, uint8_t syndrome, uint32_t psn);

/* ---- mr.c ---- */
struct xr_pd *xr_core_alloc_pd(struct xr_core *core);
int xr_core_dealloc_pd(struct xr_pd *pd);
/* xr_core_reg_mr's argument checks alone: 0 or -EINVAL. */
int xr_core_check_reg_mr(const void *addr, size_t length, int access);
struct xr_mr *xr_core_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access, int *err);
struct xr_mr *xr_core_alloc_mr(struct xr_pd *pd, uint32_t max_num_sg, int *err);
int xr_core_map_mr_sg(struct xr_mr *mr, const struct xr_sge *sg, int sg_nents, const uint64_t *iova,
		      unsigned int page_size);
int xr_core_dereg_mr(struct xr_mr *mr);
/* The core's source of numbers a peer cannot predict (keys, the first QPN). */
uint64_t xr_core_random(struct xr_core *core);
/* A free index of the key table, chosen at random, with random bits and key byte; -ENOMEM. */
int xr_core_new_key(struct xr_core *core, enum xr_key_kind kind, void *obj, uint32_t *key);
void xr_core_free_key(struct xr_core *core, uint32_t key);
static inline uint32_t xr_key_index(uint32_t key)
{
	return key >> XR_KEY_INDEX_SHIFT;
}
/* The object behind key's index if it is of that kind (nothing else of key is checked). */
void *xr_core_key_obj(struct xr_core *core, uint32_t key, enum xr_key_kind kind);
/* The MR whose current lkey is key and which is valid, or NULL. */
struct xr_mr_impl *xr_core_mr_lookup(struct xr_core *core, uint32_t key);
/* Whether key is mr's lkey or rkey but for the key byte (what a REG_MR may change). */
bool xr_mr_names_key(const struct xr_mr_impl *mr, uint32_t key);
/* Gives both of mr's keys key_byte as their key byte. */
void xr_mr_set_key_byte(struct xr_mr_impl *mr, uint8_t key_byte);
/* Whether [addr, addr + len) lies inside mr's address space. */
bool xr_mr_covers(const struct xr_mr_impl *mr, uint64_t addr, uint64_t len);
/*
 * Copies from a flat buffer into a valid MR's addresses (covered by it), and
 * from them into the payload of a frame being built, at off.
 */
void xr_mr_copy_in(const struct xr_mr_impl *mr, uint64_t addr, const void *src, uint32_t len);
void xr_mr_copy_out(const struct xr_mr_impl *mr, uint64_t addr, struct xr_pkt_out *out,
		    uint32_t off, uint32_t len);
/* The memory behind an 8-byte aligned address of a valid MR (never split by a page). */
uint64_t *xr_mr_u64(const struct xr_mr_impl *mr, uint64_t addr);
/* Checks an SGE against its MR: 0, or the completion status to report. */
enum xr_wc_status xr_core_check_sge(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int need_access);
/* Checks every SGE of a list: 0, or the completion status to report. */
enum xr_wc_status xr_core_check_sgl(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int num_sge, int need_access);
/* The same for a scatter/gather list (already checked). */
void xr_sgl_copy_out(struct xr_core *core, const struct xr_sge *sge, int num_sge, uint32_t offset,
		     struct xr_pkt_out *out, uint32_t len);
void xr_sgl_copy_in(struct xr_core *core, const struct xr_sge *sge, int num_sge, uint32_t offset,
		    const uint8_t *src, uint32_t len);

/* ---- mw.c ---- */
struct xr_mw *xr_core_alloc_mw(struct xr_pd *pd, enum xr_mw_type type, int *err);
int xr_core_dealloc_mw(struct xr_mw *mw);
/* Binds as b says, through qp: XR_WC_SUCCESS, or XR_WC_MW_BIND_ERR when a rule forbids it. */
enum xr_wc_status xr_core_exec_bind(struct xr_qp_impl *qp, const struct xr_bind_args *b);
/*
 * Invalidates key through qp: a fast-registration MR without bound windows,
 * or a type 2 window, valid, of qp's PD (a window: bound through qp). 0, or
 * -EINVAL when key names nothing it may invalidate. A local invalidation
 * (LOCAL_INV, READ_WITH_INV) may name an MR by its lkey or its rkey; a
 * peer's (SEND_WITH_INV), xr_core_invalidate_rkey, only by its rkey.
 */
int xr_core_invalidate_key(struct xr_qp_impl *qp, uint32_t key);
int xr_core_invalidate_rkey(struct xr_qp_impl *qp, uint32_t rkey);
/* Type 2 windows bound through qp become invalid: qp is going away. */
void xr_core_unbind_qp_windows(struct xr_qp_impl *qp);
/*
 * The MR a remote access of one XR_ACCESS_REMOTE_* bit to [va, va + len)
 * with rkey reaches through qp, once every check passed: qp allows it; rkey
 * is a valid MR or window of qp's PD (a type 2 window: bound through qp)
 * with that access over the whole range. NULL when any check fails.
 */
struct xr_mr_impl *xr_core_resolve_rkey(struct xr_qp_impl *qp, uint32_t rkey, uint64_t va,
					uint64_t len, int access);

/* ---- ud.c ---- */
/* An address handle to dgid from gids[sgid_index], via the neighbour at dmac. */
struct xr_ah *xr_core_create_ah(struct xr_pd *pd, const struct xr_ah_attr *attr,
				const uint8_t dmac[6], int *err);
int xr_core_destroy_ah(struct xr_ah *ah);
/* A UD request for qp: a receive WQE gets the GRH and the payload, or it is dropped. */
void xr_ud_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt);
/* Sends the UD WQEs posted, at most budget; returns the number of frames sent. */
int xr_ud_run(struct xr_qp_impl *qp, int budget);

/* ---- gsi.c: QP1, management datagrams ---- */
void xr_gsi_rx(struct xr_core *core, const struct xr_pkt *pkt, uint64_t now);
/* Sends a 256-byte MAD from QP1 to QP1 along path; false when no tx buffer was free. */
bool xr_gsi_send(struct xr_core *core, const struct xr_path *path, const uint8_t *mad);
/* The path back to whoever sent pkt: to its addresses, from the ones it came to. */
void xr_gsi_path_to_sender(const struct xr_core *core, const struct xr_pkt *pkt,
			   struct xr_path *path);
/* Sends mad from QP1 back to whoever sent pkt (xr_gsi_path_to_sender). */
bool xr_gsi_answer(struct xr_core *core, const struct xr_pkt *pkt, const uint8_t *mad);

/* ---- srq.c ---- */
struct xr_srq_impl *xr_core_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *init, int *err);
int xr_core_modify_srq(struct xr_srq_impl *srq, const struct xr_srq_attr *attr, int mask);
void xr_core_query_srq(const struct xr_srq_impl *srq, struct xr_srq_attr *attr);
int xr_core_destroy_srq(struct xr_srq_impl *srq);
int xr_core_post_srq_recv(struct xr_srq_impl *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad);
/* Copies a receive work request into a WQE slot: -EINVAL if it has too many SGEs. */
int xr_rwqe_fill(struct xr_rwqe *r, const struct xr_recv_wr *wr, uint32_t max_sge);
/*
 * Where a QP's receives come from, its receive queue or its SRQ: whether a
 * WQE is there for the next message; the WQE of the message at hand (taken
 * from the SRQ on first use, so no other QP gets it); done with it.
 */
bool xr_recv_ready(const struct xr_qp_impl *qp);
struct xr_rwqe *xr_recv_wqe(struct xr_qp_impl *qp);
void xr_recv_consumed(struct xr_qp_impl *qp);

/* ---- events (core.c) ---- */
/* What an event is about: which member of its element is set. */
enum xr_event_about {
	XR_EVENT_ABOUT_QP,
	XR_EVENT_ABOUT_CQ,
	XR_EVENT_ABOUT_SRQ,
	XR_EVENT_ABOUT_PORT,
	XR_EVENT_ABOUT_DEVICE,
};
enum xr_event_about xr_event_about(enum xr_event_type type);
void xr_core_raise_event(struct xr_core *core, enum xr_event_type type, void *element);
/* The oldest event not yet taken: false when there is none. */
bool xr_core_take_event(struct xr_core *core, struct xr_async_event *ev);
/* Drops the events not yet taken about element (a QP, CQ or SRQ being destroyed). */
void xr_core_forget_events(struct xr_core *core, const void *element);

/* ---- mcast.c ---- */
/* An IPv4-mapped GID of 224.0.0.0/4 or an IPv6 GID of ff00::/8 (as ib_core tells). */
bool xr_gid_is_multicast(const union xr_gid *gid);
/* The Ethernet address of multicast gid: 01:00:5e + 23 bits (IPv4), 33:33 + 32 (IPv6). */
void xr_mcast_mac(const union xr_gid *gid, uint8_t mac[6]);
/*
 * Attaches UD qp to group gid: 0 (also when it was attached already), or
 * -EINVAL (not UD, not a multicast GID), -ENOMEM (no group or attachment
 * left). *group is the group's index; *first tells that it had no QP before.
 */
int xr_core_attach_mcast(struct xr_qp_impl *qp, const union xr_gid *gid, int *group, bool *first);
/* Undoes an attach: -EINVAL when qp is not attached; *last: the group has no QP left. */
int xr_core_detach_mcast(struct xr_qp_impl *qp, const union xr_gid *gid, int *group, bool *last);
/* A multicast datagram (destination QPN 0xFFFFFF): once to every QP attached to its group. */
void xr_mcast_rx(struct xr_core *core, const struct xr_pkt *pkt);

/* ---- uc.c, and requester.c for UC sends ---- */
/* A UC request: placed as on RC, or its message dropped silently. */
void xr_uc_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt);
/* Sends the UC WQEs posted (at most budget frames), completing each once its last packet left. */
int xr_uc_run(struct xr_qp_impl *qp, int budget);

/* ---- wr.c ---- */
/* Runs a local work request (bind, invalidate, fast registration): its completion status. */
enum xr_wc_status xr_core_exec_local(struct xr_qp_impl *qp, struct xr_swqe *w);

/* ---- cq.c ---- */
struct xr_cq_impl *xr_core_create_cq(struct xr_core *core, int cqe, int *err);
int xr_core_destroy_cq(struct xr_cq_impl *cq);
/* Room for at least cqe completions, keeping those queued in order: 0, -EINVAL, -ENOMEM. */
int xr_core_resize_cq(struct xr_cq_impl *cq, int cqe);
int xr_core_poll_cq(struct xr_cq_impl *cq, int n, struct xr_wc *wc);
/* No room for another completion: producers hold back until the application polls. */
bool xr_cq_full(const struct xr_cq_impl *cq);
/* Queues a completion; solicited: it came from a message with the SE bit. */
void xr_cq_push(struct xr_cq_impl *cq, const struct xr_wc *wc, bool solicited);

/* ---- qp.c ---- */
struct xr_qp_impl *xr_core_create_qp(struct xr_pd *pd, const struct xr_qp_init_attr *attr,
				     int *err);
int xr_core_destroy_qp(struct xr_qp_impl *qp);
/* path.dmac must be resolved by the caller when attr_mask has XR_QP_AV. */
int xr_core_modify_qp(struct xr_qp_impl *qp, const struct xr_qp_attr *attr, int attr_mask,
		      const uint8_t *dmac);
int xr_core_query_qp(struct xr_qp_impl *qp, struct xr_qp_attr *attr, struct xr_qp_init_attr *init);
int xr_core_post_send(struct xr_qp_impl *qp, struct xr_send_wr *wr, struct xr_send_wr **bad);
/* The whole chain or nothing of it: *bad is the WR that stopped it (the first for room). */
int xr_core_post_send_all_or_none(struct xr_qp_impl *qp, struct xr_send_wr *wr,
				  struct xr_send_wr **bad);
/* xr_bind_mw: a type 1 bind in qp's send queue; mw->rkey is the new rkey on success. */
int xr_core_bind_mw(struct xr_qp_impl *qp, struct xr_mw *mw, const struct xr_mw_bind *bind);
int xr_core_post_recv(struct xr_qp_impl *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad);
/* Moves qp to ERR and flushes both queues; the first SQ WQE gets status. */
void xr_qp_to_error(struct xr_qp_impl *qp);
/*
 * The device is gone, as a NIC after a catastrophic error: DEVICE_FATAL,
 * and every QP moves to ERR with its work flushed.
 */
void xr_core_device_fatal(struct xr_core *core);
/* In SQD, once nothing started is outstanding: draining ends (SQ_DRAINED if asked for). */
void xr_qp_check_drained(struct xr_qp_impl *qp);
void xr_qp_retire_sends(struct xr_qp_impl *qp);
void xr_qp_flush(struct xr_qp_impl *qp);
uint64_t xr_qp_ack_timeout_ns(const struct xr_qp_impl *qp);

static inline bool xr_wr_is_atomic(enum xr_wr_opcode op)
{
	return xr_wr(op)->flags & XR_WRF_ATOMIC;
}

/* READs and atomics: they need a response, and count against max_rd_atomic. */
static inline bool xr_wr_is_read_atomic(enum xr_wr_opcode op)
{
	return xr_wr(op)->flags & (XR_WRF_READ | XR_WRF_ATOMIC);
}

static inline void xr_swqe_complete(struct xr_swqe *wqe, enum xr_wc_status st)
{
	wqe->state = XR_SWQE_DONE;
	wqe->status = st;
}

static inline struct xr_swqe *xr_sq_at(struct xr_qp_impl *qp, uint32_t idx)
{
	return &qp->sq[idx & (qp->sq_size - 1)];
}

static inline struct xr_rwqe *xr_rq_at(struct xr_qp_impl *qp, uint32_t idx)
{
	return &qp->rq[idx & (qp->rq_size - 1)];
}

/*
 * The smallest wait before a tail-loss probe (twice the smoothed round
 * trip plus twice its deviation, at least this): the engine's own rounds
 * and wake-ups take tens of microseconds, which must not read as loss.
 */
#define XR_PROBE_MIN_NS 100000ull
/* Probes sent again without an answer, at most, each after twice the wait. */
#define XR_PROBE_MAX_BACKOFF 6

/* ---- requester.c ---- */
/* Sends what the window allows, at most budget frames; returns the number sent. */
int xr_requester_run(struct xr_qp_impl *qp, uint64_t now, int budget);
/*
 * Sends the packet at psn (sent before, not yet acknowledged) again with
 * AckReq set, leaving the transmit position alone; a READ or atomic's:
 * its request for the responses from psn. false: no transmit buffer.
 */
bool xr_requester_probe(struct xr_qp_impl *qp, uint32_t psn);
/*
 * Sends again only the request of READ/atomic w for its response PSN psn
 * (a READ asks for the rest from there), leaving the transmit position alone.
 */
void xr_requester_resend_read_atomic(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t psn);
/* Restart transmission at psn (go-back-N). */
void xr_requester_rewind(struct xr_qp_impl *qp, uint32_t psn);
/*
 * Sends packet psn of w (sent before, not yet acknowledged) again with
 * AckReq set, leaving the transmit position alone. false: no transmit
 * buffer, or w's memory is gone (the requester's next round fails it).
 */
bool xr_requester_resend(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t psn);

/* ---- cwnd.c ---- */
/* The window a QP starts with, and has again after a reset. */
void xr_cwnd_reset(struct xr_qp_impl *qp);
/* newly_acked PSNs were acknowledged for the first time. */
void xr_cwnd_on_ack(struct xr_qp_impl *qp, uint32_t newly_acked);
/* A loss: a PSN sequence NAK, or (timeout) the ACK timer's expiry. */
void xr_cwnd_on_loss(struct xr_qp_impl *qp, bool timeout);

/* ---- rtt.c ---- */
/*
 * A request packet psn went out at now, asking for an ACK or not, for the
 * first time (fresh) or again. now 0: untimed (never starts a sample).
 */
void xr_rtt_sent(struct xr_qp_impl *qp, uint32_t psn, bool ackreq, bool fresh, uint64_t now);
/* The acknowledged PSN advanced: the packet timed may have been answered. */
void xr_rtt_acked(struct xr_qp_impl *qp, uint64_t now);

/* ---- sr.c: selective repeat between xroce peers (docs/selective-repeat.md) ---- */
/* What the requester knows of one PSN in flight. */
struct xr_sr_tx_slot {
	uint32_t psn;	    /* the PSN this slot holds now */
	uint32_t resent_at; /* tx_new_psn when it was last sent again */
	uint8_t flags;	    /* enum xr_sr_tx_flags */
};

/* A packet the responder placed past its expected PSN, until committed in order. */
struct xr_sr_rx_slot {
	uint32_t psn;
	uint8_t flags; /* enum xr_sr_rx_flags */
	uint32_t imm_be;
	uint32_t byte_len; /* the message's, on its LAST packet */
};

/*
 * An RC QP's memory for it, when the device speaks it: taken with the QP,
 * so that the data path never allocates. -ENOMEM.
 */
int xr_sr_alloc(struct xr_qp_impl *qp, struct xr_core *core);
/* The requester turns selective repeat on: a SACK came (false: not ours to speak). */
bool xr_sr_tx_enable(struct xr_qp_impl *qp);
/* The responder turns it on: the requester set XR_BTH_SR_CAPABLE. */
bool xr_sr_rx_enable(struct xr_qp_impl *qp);
/* Back to neither end knowing (QP reset): a new connection negotiates again. */
void xr_sr_reset(struct xr_qp_impl *qp);
/* Forgets every PSN's state (QP reset, RNR NAK: the responder dropped what it held). */
void xr_sr_tx_forget(struct xr_qp_impl *qp);
void xr_sr_rx_forget(struct xr_qp_impl *qp);
void xr_sr_free(struct xr_qp_impl *qp);
/* Whether the responder reported psn received (its SACK): not to be sent again. */
bool xr_sr_sacked(const struct xr_qp_impl *qp, uint32_t psn);
/* Request psn went out, for the first time (fresh) or again. */
void xr_sr_sent(struct xr_qp_impl *qp, uint32_t psn, bool fresh);
/* Whether a SACK shows nothing received that was never sent: else it is no peer's. */
bool xr_sr_sack_fits(const struct xr_qp_impl *qp, const struct xr_pkt *pkt);
/*
 * Takes a SACK: the bitmap of what the responder holds past its PSN, and
 * the newest PSN it received; marks what that shows lost.
 */
void xr_sr_take_sack(struct xr_qp_impl *qp, const struct xr_pkt *pkt);
/* Sends again the PSNs marked lost, at most budget; returns how many went. */
int xr_sr_resend_lost(struct xr_qp_impl *qp, int budget);
/* Responder: a request past epsn (d PSNs); placed and held when it can be. */
void xr_sr_rx_ahead(struct xr_qp_impl *qp, const struct xr_pkt *pkt, int32_t d);
/* Responder: the self-placing request at epsn; false when it failed the QP. */
bool xr_sr_rx_in_order(struct xr_qp_impl *qp, const struct xr_pkt *pkt);
/* Responder: moves epsn over the packets held from it on (stops at an RNR NAK). */
void xr_sr_commit(struct xr_qp_impl *qp);
/* Responder: epsn jumped from from to to over a READ's responses: nothing is held there. */
void xr_sr_rx_skipped(struct xr_qp_impl *qp, uint32_t from, uint32_t to);
/* Responder: sends a SACK of epsn - 1 with the held PSNs; false: no buffer. */
bool xr_sr_send_sack(struct xr_qp_impl *qp);

/* ---- dcqcn.c: ECN's notification and reaction points (docs/congestion-control.md) ---- */
#define XR_DCQCN_ALPHA_ONE 1024
/* Every XR_DCQCN_SAMPLE_NS the rate a QP sent at is measured: a first cut starts there. */
#define XR_DCQCN_SAMPLE_NS 1000000ull

/* A new connection starts at full speed and has sent no CNP. */
void xr_dcqcn_reset(struct xr_qp_impl *qp);
/* The ECN codepoint a QP's frames carry: ECT(0) for connected QPs, which answer CNPs. */
uint8_t xr_dcqcn_ecn_codepoint(const struct xr_qp_impl *qp);
/*
 * Whether the requester may send now; if not, it sets pace_blocked and the
 * time it may (the QP's deadline).
 */
bool xr_dcqcn_may_send(struct xr_qp_impl *qp, uint64_t now);
/* A request frame of bytes went out: paced, counted toward increases and the rate measured. */
void xr_dcqcn_sent(struct xr_qp_impl *qp, uint32_t bytes, uint64_t now);
/* A CNP came for the QP (reaction point): cut the rate. */
void xr_dcqcn_cnp_rx(struct xr_qp_impl *qp, uint64_t now);
/* A CE-marked frame came for the QP (notification point): a CNP to its sender, rate-limited. */
void xr_dcqcn_ce_rx(struct xr_qp_impl *qp, uint64_t now);
/* The time the paced requester may send again (0: it is not waiting for that). */
uint64_t xr_dcqcn_deadline(const struct xr_qp_impl *qp);

/* ---- completer.c ---- */
void xr_completer_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now);
/* An acknowledgement of everything up to psn that did not come as a frame. */
void xr_completer_ack(struct xr_qp_impl *qp, uint32_t psn, uint64_t now);
/* Fires the retransmit, probe and RNR timers; returns the next deadline (0 = none). */
uint64_t xr_completer_timers(struct xr_qp_impl *qp, uint64_t now);
/* A request packet went out at now: the tail-loss probe waits from then. */
void xr_completer_arm_probe(struct xr_qp_impl *qp, uint64_t now);

/* ---- atomics.c ---- */
/* Executes the atomic request pkt on target; returns the original value. */
uint64_t xr_atomic_execute(uint64_t *target, const struct xr_pkt *pkt);
uint64_t xr_masked_cas_result(uint64_t old, uint64_t compare, uint64_t compare_mask, uint64_t swap,
			      uint64_t swap_mask);
uint64_t xr_masked_faa_result(uint64_t old, uint64_t add, uint64_t boundary);

/* ---- xdp_state.c ---- */
/*
 * Takes a free slot of xdp_qps for a new QP (true; always without xdp_qps):
 * the table is shared by every process on the device, and a slot is free
 * for exactly one of them, until it releases it (when the QP is destroyed).
 */
bool xr_xdp_claim_slot(struct xr_core *core, uint32_t slot);
void xr_xdp_release_slot(struct xr_core *core, uint32_t slot);
void xr_xdp_publish_qp(struct xr_qp_impl *qp);
/* QP1's entry, for the device's owner: XDP steers MADs to the engine from then on. */
void xr_xdp_publish_gsi(struct xr_core *core);
void xr_xdp_publish_committed(struct xr_qp_impl *qp);
void xr_xdp_publish_next_psn(struct xr_qp_impl *qp);
/* Raises xdp_ack to the engine's acknowledged PSN (which READ responses,
 * atomic ACKs and NAKs move too), so XDP's window stays current. */
void xr_xdp_note_acked(struct xr_qp_impl *qp);
/* Completes what ACKs absorbed in XDP acknowledged. */
void xr_xdp_poll_acks(struct xr_qp_impl *qp, uint64_t now);
/* Tells XDP to steer the ACKs of lane's QPs to the socket (sleeping) or absorb them (awake). */
void xr_core_set_engine_sleeping(struct xr_core *core, uint32_t lane, bool sleeping);
/* qp's entry follows its lane's engine (a new QP, or one that moved to another lane). */
void xr_xdp_publish_engine_sleeping(struct xr_qp_impl *qp);
/*
 * The interface's MAC is mac now: QPs send from it, and XDP takes their
 * frames to it only (the old one names no interface here any more).
 */
void xr_core_mac_changed(struct xr_core *core, const uint8_t mac[6]);

/* ---- responder.c ---- */
/* Completes the receive WQE at the tail with the message pkt ends (RC and UC). */
void xr_recv_complete(struct xr_qp_impl *qp, const struct xr_pkt *pkt, enum xr_wc_opcode opcode,
		      uint32_t byte_len);
/* The same from the fields of a message's last packet (for one held out of order). */
void xr_recv_finish(struct xr_qp_impl *qp, enum xr_wc_opcode opcode, uint32_t byte_len,
		    unsigned int wc_flags, uint32_t imm_or_rkey, bool solicited);
void xr_responder_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now);
/* Fails the QP on request pkt: a NAK (XR_NAK_*), then ERR. */
void xr_responder_fatal(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint8_t nak);
/* Refuses the request at psn for want of a receive WQE or CQ room. */
void xr_responder_rnr_nak(struct xr_qp_impl *qp, uint32_t psn);
/*
 * Once per engine round: sends the READ responses and atomic ACKs pending,
 * a budget of them per QP and round, and the ACK queued by the receive batch.
 */
void xr_responder_run(struct xr_qp_impl *qp);
/* Whether READ responses or atomic ACKs are still to go out. */
bool xr_responder_pending(const struct xr_qp_impl *qp);

#endif /* XROCE_CORE_H */
