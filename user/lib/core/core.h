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
#define XR_MAX_MR 4096
#define XR_MAX_PD 1024
/*
 * PSNs sent but not yet acknowledged, at most: the congestion window moves
 * between these bounds (AIMD), so that a loss under go-back-N costs a
 * retransmission of what is in flight, not of a full send window.
 */
#define XR_SEND_WINDOW 512
#define XR_CWND_MIN 8
/* The requester asks for an ACK at least this often inside a long message. */
#define XR_ACKREQ_INTERVAL 64

/* READ/atomic responder resources a QP can keep (max_dest_rd_atomic). */
#define XR_MAX_RD_ATOMIC 16

/* The I/O a core needs: frames out, and the MAC of a peer. */
struct xr_core_port {
	void *ctx;
	/* A buffer for one frame, or NULL when none is free right now. */
	uint8_t *(*tx_alloc)(void *ctx, uint32_t *cap);
	void (*tx_submit)(void *ctx, uint8_t *buf, uint32_t len);
	void (*tx_abort)(void *ctx, uint8_t *buf);
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
	uint32_t refs; /* QPs using it */
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

struct xr_swqe {
	uint64_t wr_id;
	enum xr_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm_be;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint64_t compare_add_mask, swap_mask; /* masked atomics */
	uint32_t length;		      /* total bytes */
	int num_sge;
	bool is_inline;
	bool signaled;
	bool psn_assigned;
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
};

struct xr_rwqe {
	uint64_t wr_id;
	int num_sge;
	uint32_t length;
	struct xr_sge sge[XR_MAX_SGE];
};

struct xr_qp_impl {
	struct xr_qp pub;
	struct xr_core *core;
	struct xr_cq_impl *scq, *rcq;
	uint32_t slot;
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

	/* send queue: [sq_tail, sq_head) posted and not retired */
	struct xr_swqe *sq;
	uint32_t sq_size; /* power of two */
	uint32_t sq_head, sq_tail;

	/* receive queue */
	struct xr_rwqe *rq;
	uint32_t rq_size;
	uint32_t rq_head, rq_tail;

	/* requester */
	uint32_t snd_psn; /* next PSN never sent before */
	uint32_t tx_idx;  /* WQE the next packet belongs to */
	uint32_t tx_pkt;  /* packet number inside it */
	uint32_t tx_psn;  /* PSN of the next packet to (re)transmit */

	/* completer */
	uint32_t acked_psn;	 /* last PSN acknowledged (snd start - 1 initially) */
	uint32_t ack_hint;	 /* newest PSN an ACK covered, held back by a READ/atomic */
	uint64_t retry_deadline; /* 0: no timer */
	uint64_t rnr_deadline;	 /* 0: not waiting after an RNR NAK */
	uint8_t retry_left, rnr_left;
	uint32_t rd_outstanding; /* READ/atomic WQEs sent and not completed */
	bool rd_resent;		 /* a lost READ/atomic response was asked for again early */
	uint32_t cwnd, ssthresh; /* congestion window and slow-start threshold, in PSNs */
	uint32_t cwnd_acc;	 /* PSNs acknowledged toward the next additive increase */
	uint32_t recover_psn;	 /* no further decrease until this PSN is acknowledged */
	bool in_recovery;

	/* responder */
	uint32_t epsn; /* next expected PSN */
	uint32_t msn;
	bool nak_sent;	  /* a PSN sequence NAK for the current gap is out */
	bool ack_pending; /* an ACK of ack_psn goes out at the end of the rx batch */
	uint32_t ack_psn;
	bool recv_active; /* a multi-packet SEND is being received */
	uint32_t recv_off;
	bool write_active; /* a multi-packet WRITE is being placed */
	uint64_t write_va;
	uint32_t write_rkey; /* checked again for every packet: the MR may be gone */
	uint32_t write_left, write_total;
	struct xr_rd_resource rd_res[XR_MAX_RD_ATOMIC];
	uint32_t rd_res_next; /* ring position of the next resource to use */

	/* statistics */
	uint64_t rx_frames;
	struct xr_qp_counters cnt; /* published in the QP's qp_table entry */
};

struct xr_core {
	struct xr_core_port port;
	struct xr_device *device; /* NULL in unit tests */
	uint8_t mac[6];
	union xr_gid gids[XR_MAX_GIDS];
	int num_gids;
	enum xr_mtu active_mtu;
	uint64_t caps;		     /* enum xr_device_cap_flags */
	uint16_t xdp_fast_path;	     /* enum xr_xdp_fast_path bits for new QPs */
	struct xr_qp_entry *xdp_qps; /* shared with XDP, or NULL */

	struct xr_qp_impl *qps[XR_MAX_QP];
	uint32_t qp_slots_used; /* slots >= this are all free: loops stop there */
	struct xr_mr *mrs[XR_MAX_MR];
	uint32_t mr_key_seq;
	uint32_t pd_seq;
	uint16_t ip_id;
	struct xr_engine_stats stats;
};

/* ---- core.c ---- */
void xr_core_init(struct xr_core *core, const struct xr_core_port *port);
/* A received frame. Never fails: bad frames are counted and dropped. */
void xr_core_rx(struct xr_core *core, const uint8_t *frame, uint32_t len, uint64_t now);
/* Transmit what can be, fire due timers; returns the next deadline (0 = none). */
uint64_t xr_core_progress(struct xr_core *core, uint64_t now);
/* Builds the headers of a frame for qp: NULL when no tx buffer is free. */
uint8_t *xr_core_frame_begin(struct xr_core *core, struct xr_qp_impl *qp,
			     const struct xr_bth_fields *bth, uint32_t payload_len,
			     struct xr_pkt_out *out);
void xr_core_frame_send(struct xr_core *core, struct xr_qp_impl *qp, struct xr_pkt_out *out);
/* Returns false when no tx buffer was available. */
bool xr_core_send_ack(struct xr_core *core, struct xr_qp_impl *qp, uint8_t syndrome, uint32_t psn);

/* ---- mr.c ---- */
struct xr_pd *xr_core_alloc_pd(struct xr_core *core);
int xr_core_dealloc_pd(struct xr_pd *pd);
struct xr_mr *xr_core_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access, int *err);
int xr_core_dereg_mr(struct xr_mr *mr);
struct xr_mr *xr_core_mr_lookup(struct xr_core *core, uint32_t key);
/* Checks an SGE against its MR: 0, or the completion status to report. */
enum xr_wc_status xr_core_check_sge(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int need_access);
/* Checks every SGE of a list: 0, or the completion status to report. */
enum xr_wc_status xr_core_check_sgl(struct xr_core *core, struct xr_pd *pd,
				    const struct xr_sge *sge, int num_sge, int need_access);
/* Copies between a scatter/gather list (already checked) and a flat buffer. */
void xr_sgl_copy_out(const struct xr_sge *sge, int num_sge, uint32_t offset, uint8_t *dst,
		     uint32_t len);
void xr_sgl_copy_in(const struct xr_sge *sge, int num_sge, uint32_t offset, const uint8_t *src,
		    uint32_t len);

/* ---- cq.c ---- */
struct xr_cq_impl *xr_core_create_cq(struct xr_core *core, int cqe, int *err);
int xr_core_destroy_cq(struct xr_cq_impl *cq);
int xr_core_poll_cq(struct xr_cq_impl *cq, int n, struct xr_wc *wc);
/* No room for another completion: producers hold back until the application polls. */
bool xr_cq_full(const struct xr_cq_impl *cq);
/* Queues a completion; solicited: it came from a message with the SE bit. */
void xr_cq_push(struct xr_cq_impl *cq, const struct xr_wc *wc, bool solicited);
/* Delivers a completion event of an armed CQ to its channel (channel.c). */
void xr_channel_notify(struct xr_comp_channel *channel, struct xr_cq_impl *cq);
/* Removes the events of cq (being destroyed) that nobody took from the channel's queue. */
void xr_channel_forget(struct xr_comp_channel *channel, struct xr_cq_impl *cq);

/* ---- qp.c ---- */
struct xr_qp_impl *xr_core_create_qp(struct xr_pd *pd, const struct xr_qp_init_attr *attr,
				     int *err);
int xr_core_destroy_qp(struct xr_qp_impl *qp);
/* path.dmac must be resolved by the caller when attr_mask has XR_QP_AV. */
int xr_core_modify_qp(struct xr_qp_impl *qp, const struct xr_qp_attr *attr, int attr_mask,
		      const uint8_t *dmac);
int xr_core_query_qp(struct xr_qp_impl *qp, struct xr_qp_attr *attr, struct xr_qp_init_attr *init);
int xr_core_post_send(struct xr_qp_impl *qp, struct xr_send_wr *wr, struct xr_send_wr **bad);
int xr_core_post_recv(struct xr_qp_impl *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad);
/* Moves qp to ERR and flushes both queues; the first SQ WQE gets status. */
void xr_qp_to_error(struct xr_qp_impl *qp);
void xr_qp_retire_sends(struct xr_qp_impl *qp);
void xr_qp_flush(struct xr_qp_impl *qp);
uint64_t xr_qp_ack_timeout_ns(const struct xr_qp_impl *qp);

static inline bool xr_wr_is_atomic(enum xr_wr_opcode op)
{
	return op == XR_WR_ATOMIC_CMP_AND_SWP || op == XR_WR_ATOMIC_FETCH_AND_ADD ||
	       op == XR_WR_MASKED_ATOMIC_CMP_AND_SWP || op == XR_WR_MASKED_ATOMIC_FETCH_AND_ADD;
}

/* READs and atomics: they need a response, and count against max_rd_atomic. */
static inline bool xr_wr_is_read_atomic(enum xr_wr_opcode op)
{
	return op == XR_WR_RDMA_READ || xr_wr_is_atomic(op);
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

/* ---- requester.c ---- */
/* Sends what the window allows; returns the number of frames sent. */
int xr_requester_run(struct xr_qp_impl *qp, uint64_t now);
/*
 * Sends again only the request of READ/atomic w for its response PSN psn
 * (a READ asks for the rest from there), leaving the transmit position alone.
 */
void xr_requester_resend_read_atomic(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t psn);
/* Restart transmission at psn (go-back-N). */
void xr_requester_rewind(struct xr_qp_impl *qp, uint32_t psn);

/* ---- completer.c ---- */
void xr_completer_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now);
/* An acknowledgement of everything up to psn that did not come as a frame. */
void xr_completer_ack(struct xr_qp_impl *qp, uint32_t psn, uint64_t now);
/* Fires the retransmit and RNR timers; returns the next deadline (0 = none). */
uint64_t xr_completer_timers(struct xr_qp_impl *qp, uint64_t now);

/* ---- atomics.c ---- */
/* Executes the atomic request pkt on target; returns the original value. */
uint64_t xr_atomic_execute(uint64_t *target, const struct xr_pkt *pkt);
uint64_t xr_masked_cas_result(uint64_t old, uint64_t compare, uint64_t compare_mask, uint64_t swap,
			      uint64_t swap_mask);
uint64_t xr_masked_faa_result(uint64_t old, uint64_t add, uint64_t boundary);

/* ---- xdp_state.c ---- */
void xr_xdp_publish_qp(struct xr_qp_impl *qp);
void xr_xdp_unpublish_qp(struct xr_qp_impl *qp);
void xr_xdp_publish_committed(struct xr_qp_impl *qp);
void xr_xdp_publish_next_psn(struct xr_qp_impl *qp);
/* Raises xdp_ack to the engine's acknowledged PSN (which READ responses,
 * atomic ACKs and NAKs move too), so XDP's window stays current. */
void xr_xdp_note_acked(struct xr_qp_impl *qp);
/* Completes what ACKs absorbed in XDP acknowledged. */
void xr_xdp_poll_acks(struct xr_qp_impl *qp, uint64_t now);
/* Tells XDP to steer ACKs to the socket (sleeping) or absorb them (awake). */
void xr_core_set_engine_sleeping(struct xr_core *core, bool sleeping);

/* ---- responder.c ---- */
void xr_responder_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now);
/* Sends pending READ responses and atomic ACKs as transmit buffers allow. */
void xr_responder_run(struct xr_qp_impl *qp);

#endif /* XROCE_CORE_H */
