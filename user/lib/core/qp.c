/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: creation, the verbs state machine with the attributes each
 * transition requires and allows, posting work requests, and the error
 * state's flush.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* With an SRQ the receive capabilities are the SRQ's: the QP's are ignored, as in verbs. */
/*
 * A queue of 0 WRs is allowed, as verbs allow a QP that only sends or only
 * receives (qperf's bandwidth tests make them): it gets the smallest ring,
 * and the capabilities returned say so.
 */
static bool cap_ok(const struct xr_qp_cap *cap, bool srq)
{
	return cap->max_send_wr <= XR_MAX_WR &&
	       (srq || (cap->max_recv_wr <= XR_MAX_WR && cap->max_recv_sge <= XR_MAX_SGE)) &&
	       cap->max_send_sge <= XR_MAX_SGE && cap->max_inline_data <= XR_MAX_INLINE;
}

#define QPN_LAST (XR_MULTICAST_QPN - 1)
/* The size of a scatter/gather entry in a WQE (struct ib_sge's). */
#define XR_SGE_SIZE 16

/* The QPN after qpn in the cycle through every number a QP may have. */
static uint32_t qpn_after(uint32_t qpn)
{
	return qpn >= QPN_LAST ? XR_QPN_BASE : qpn + 1;
}

/*
 * The next QPN after the last one handed out whose slot is free, the first
 * at random: a peer (or a stray frame of an old connection) cannot know
 * which QPN a new QP gets, and a QPN just destroyed is the last to come back.
 * 0 when every slot is taken.
 */
static uint32_t new_qpn(struct xr_core *core)
{
	uint32_t qpn = core->last_qpn;

	if (!qpn)
		qpn = XR_QPN_BASE + (uint32_t)(xr_core_random(core) % (QPN_LAST - XR_QPN_BASE + 1));
	else
		qpn = qpn_after(qpn);
	/* Past the wrap, XR_MAX_QP numbers in a row cover every slot. */
	for (uint32_t n = 0; n < 2 * XR_MAX_QP; n++, qpn = qpn_after(qpn))
		if (!core->qps[xr_qpn_slot(qpn)] && xr_xdp_claim_slot(core, xr_qpn_slot(qpn))) {
			core->last_qpn = qpn;
			return qpn;
		}
	return 0;
}

struct xr_qp_impl *xr_core_create_qp(struct xr_pd *pd, const struct xr_qp_init_attr *attr, int *err)
{
	struct xr_core *core = pd->core;
	struct xr_qp_impl *qp;
	uint32_t qpn, slot;

	*err = -EINVAL;
	struct xr_srq_impl *srq = (struct xr_srq_impl *)attr->srq;

	if (!attr->send_cq || !attr->recv_cq || !cap_ok(&attr->cap, srq) ||
	    (srq && srq->core != core))
		return NULL;
	if (attr->qp_type != XR_QPT_RC && attr->qp_type != XR_QPT_UC && attr->qp_type != XR_QPT_UD)
		return *err = -EOPNOTSUPP, NULL;
	*err = -ENOMEM;
	qpn = new_qpn(core);
	if (!qpn)
		return NULL;
	slot = xr_qpn_slot(qpn);
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		xr_xdp_release_slot(core, slot);
		return NULL;
	}
	qp->sq_size = xr_pow2_at_least(attr->cap.max_send_wr);
	qp->rq_size = srq ? 0 : xr_pow2_at_least(attr->cap.max_recv_wr);
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->rq = srq ? NULL : calloc(qp->rq_size, sizeof(*qp->rq));
	if (!qp->sq || (!srq && !qp->rq) ||
	    (attr->qp_type == XR_QPT_RC && xr_sr_alloc(qp, core) != 0)) {
		xr_sr_free(qp);
		free(qp->sq);
		free(qp->rq);
		free(qp);
		xr_xdp_release_slot(core, slot);
		return NULL;
	}
	qp->core = core;
	qp->slot = slot;
	/* Until its peer's frames say which queue they arrive on: QPs spread over them all. */
	qp->tx_queue = core->port.tx_queues ? qpn % core->port.tx_queues : 0;
	qp->lane = qp->tx_queue % core->nlanes;
	qp->scq = (struct xr_cq_impl *)attr->send_cq;
	qp->rcq = (struct xr_cq_impl *)attr->recv_cq;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->cap = attr->cap;
	qp->cap.max_send_wr = qp->sq_size;
	qp->cap.max_recv_wr = qp->rq_size;
	if (!qp->cap.max_send_sge)
		qp->cap.max_send_sge = 1;
	/*
	 * As rxe: a send WQE holds its SGEs or as much inline data, whichever
	 * is more. Programs written on rxe and mlx5 (librdmacm's rdma_xclient)
	 * send 16 inline bytes from a QP that asked for none.
	 */
	if (qp->cap.max_inline_data < qp->cap.max_send_sge * XR_SGE_SIZE)
		qp->cap.max_inline_data = qp->cap.max_send_sge * XR_SGE_SIZE < XR_MAX_INLINE
					      ? qp->cap.max_send_sge * XR_SGE_SIZE
					      : XR_MAX_INLINE;
	if (srq)
		qp->cap.max_recv_sge = 0;
	else if (!qp->cap.max_recv_sge)
		qp->cap.max_recv_sge = 1;
	qp->srq = srq;
	qp->pub.device = core->device;
	qp->pub.pd = pd;
	qp->pub.qp_context = attr->qp_context;
	qp->pub.send_cq = attr->send_cq;
	qp->pub.recv_cq = attr->recv_cq;
	qp->pub.srq = attr->srq;
	qp->pub.qp_num = qpn;
	qp->pub.state = XR_QPS_RESET;
	qp->pub.qp_type = attr->qp_type;
	xr_cwnd_reset(qp);
	xr_dcqcn_reset(qp);
	/* A datagram is one packet of at most the port's MTU: UD has no path MTU. */
	if (attr->qp_type == XR_QPT_UD) {
		qp->path_mtu = core->active_mtu;
		qp->mtu = xr_mtu_bytes(core->active_mtu);
	}
	qp->scq->refs++;
	qp->rcq->refs++;
	if (srq)
		srq->refs++;
	pd->refs++;
	core->qps[slot] = qp;
	if (slot >= core->qp_slots_used)
		core->qp_slots_used = slot + 1;
	xr_xdp_publish_qp(qp);
	*err = 0;
	return qp;
}

int xr_core_destroy_qp(struct xr_qp_impl *qp)
{
	struct xr_core *core = qp->core;

	/*
	 * As ibv_destroy_qp: a QP still attached to a multicast group stays, and
	 * so does one with asynchronous events taken and not acknowledged.
	 */
	if (qp->mcast_groups || qp->async_unacked)
		return -EBUSY;
	/* Datagrams posted before the QP goes still leave, as from a NIC whose doorbell rang. */
	if (qp->pub.qp_type == XR_QPT_UD)
		xr_ud_run(qp, (int)qp->sq_size);
	xr_xdp_release_slot(core, qp->slot);
	xr_core_qp_forget(qp);
	xr_core_forget_events(core, &qp->pub);
	xr_core_unbind_qp_windows(qp);
	core->qps[qp->slot] = NULL;
	while (core->qp_slots_used && !core->qps[core->qp_slots_used - 1])
		core->qp_slots_used--;
	qp->scq->refs--;
	qp->rcq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	((struct xr_pd *)qp->pub.pd)->refs--;
	xr_sr_free(qp);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return 0;
}

/* ---- state machine ---------------------------------------------------- */

struct transition {
	int required;
	int optional;
};

#define RC_INIT_ATTRS (XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS)
#define RC_RTR_REQUIRED                                                                            \
	(XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN | XR_QP_MAX_DEST_RD_ATOMIC |    \
	 XR_QP_MIN_RNR_TIMER)
#define RC_RTS_REQUIRED                                                                            \
	(XR_QP_SQ_PSN | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC)
#define RC_RTS_OPTIONAL                                                                            \
	(XR_QP_CUR_STATE | XR_QP_ACCESS_FLAGS | XR_QP_MIN_RNR_TIMER | XR_QP_ALT_PATH |             \
	 XR_QP_PATH_MIG_STATE)

#define UD_INIT_ATTRS (XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY)

/* The UD rows of the verbs table (ib_modify_qp_is_ok). */
static bool ud_transition(enum xr_qp_state cur, enum xr_qp_state next, struct transition *t)
{
	t->required = t->optional = 0;
	if (next == XR_QPS_RESET || next == XR_QPS_ERR)
		return true;
	switch (cur) {
	case XR_QPS_RESET:
		t->required = UD_INIT_ATTRS;
		return next == XR_QPS_INIT;
	case XR_QPS_INIT:
		if (next == XR_QPS_INIT) {
			t->optional = UD_INIT_ATTRS;
			return true;
		}
		t->optional = XR_QP_PKEY_INDEX | XR_QP_QKEY;
		return next == XR_QPS_RTR;
	case XR_QPS_RTR:
		t->required = XR_QP_SQ_PSN;
		t->optional = XR_QP_CUR_STATE | XR_QP_QKEY;
		return next == XR_QPS_RTS;
	case XR_QPS_RTS:
	case XR_QPS_SQE:
		t->optional = XR_QP_CUR_STATE | XR_QP_QKEY;
		return next == XR_QPS_RTS;
	default:
		return false;
	}
}

#define UC_INIT_ATTRS (XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS)
#define UC_RTS_OPTIONAL                                                                            \
	(XR_QP_CUR_STATE | XR_QP_ACCESS_FLAGS | XR_QP_ALT_PATH | XR_QP_PATH_MIG_STATE)

/* The UC rows of the verbs table (ib_modify_qp_is_ok): RC's without the reliability. */
static bool uc_transition(enum xr_qp_state cur, enum xr_qp_state next, struct transition *t)
{
	t->required = t->optional = 0;
	if (next == XR_QPS_RESET || next == XR_QPS_ERR)
		return true;
	switch (cur) {
	case XR_QPS_RESET:
		t->required = UC_INIT_ATTRS;
		return next == XR_QPS_INIT;
	case XR_QPS_INIT:
		if (next == XR_QPS_INIT) {
			t->optional = UC_INIT_ATTRS;
			return true;
		}
		t->required = XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN;
		t->optional = XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX;
		return next == XR_QPS_RTR;
	case XR_QPS_RTR:
		t->required = XR_QP_SQ_PSN;
		t->optional = UC_RTS_OPTIONAL;
		return next == XR_QPS_RTS;
	case XR_QPS_RTS:
	case XR_QPS_SQE:
		t->optional = UC_RTS_OPTIONAL;
		return next == XR_QPS_RTS;
	default:
		return false;
	}
}

/* The RC rows of the verbs table (ib_modify_qp_is_ok); valid == required|optional set. */
static bool rc_transition(enum xr_qp_state cur, enum xr_qp_state next, struct transition *t)
{
	t->required = t->optional = 0;
	if (next == XR_QPS_RESET || next == XR_QPS_ERR)
		return true;
	switch (cur) {
	case XR_QPS_RESET:
		t->required = RC_INIT_ATTRS;
		return next == XR_QPS_INIT;
	case XR_QPS_INIT:
		if (next == XR_QPS_INIT) {
			t->optional = RC_INIT_ATTRS;
			return true;
		}
		t->required = RC_RTR_REQUIRED;
		t->optional = XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX;
		return next == XR_QPS_RTR;
	case XR_QPS_RTR:
		t->required = RC_RTS_REQUIRED;
		t->optional = RC_RTS_OPTIONAL;
		return next == XR_QPS_RTS;
	case XR_QPS_RTS:
	case XR_QPS_SQE:
		t->optional = RC_RTS_OPTIONAL;
		return next == XR_QPS_RTS;
	default:
		return false;
	}
}

static int check_values(struct xr_qp_impl *qp, const struct xr_qp_attr *a, int mask)
{
	struct xr_core *core = qp->core;

	if ((mask & XR_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & XR_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & XR_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned)(XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
					      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if ((mask & XR_QP_PATH_MTU) && (a->path_mtu < XR_MTU_256 || a->path_mtu > core->active_mtu))
		return -EINVAL;
	if ((mask & XR_QP_DEST_QPN) && a->dest_qp_num > XR_QPN_MASK)
		return -EINVAL;
	if ((mask & XR_QP_AV) &&
	    (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= core->num_gids ||
	     (a->ah_attr.port_num && a->ah_attr.port_num != 1)))
		return -EINVAL;
	if ((mask & XR_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & XR_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & XR_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & XR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & XR_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > XR_MAX_INIT_RD_ATOMIC)
		return -EINVAL;
	if ((mask & XR_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > XR_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & XR_QP_CUR_STATE) && a->cur_qp_state != qp->pub.state)
		return -EINVAL;
	return 0;
}

static void reset_transport(struct xr_qp_impl *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	qp->srq_wqe_held = false; /* RESET removes the QP's WQEs without completions */
	qp->comm_established = false;
	qp->recv_error = XR_WC_SUCCESS;
	qp->tx_idx = qp->tx_pkt = 0;
	qp->retry_deadline = qp->rnr_deadline = qp->probe_deadline = 0;
	qp->probe_backoff = 0;
	qp->msn = 0;
	qp->nak_sent = false;
	qp->ack_pending = false;
	xr_cwnd_reset(qp);
	qp->srtt_ns = qp->rttvar_ns = 0;
	qp->rtt_sent_at = 0;
	qp->recv_active = false;
	qp->write_active = false;
	qp->uc_dropping = false;
	qp->rd_outstanding = 0;
	memset(qp->rd_res, 0, sizeof(qp->rd_res));
	/* A new connection offers selective repeat afresh, and starts at full speed. */
	xr_sr_reset(qp);
	xr_dcqcn_reset(qp);
}

static void apply(struct xr_qp_impl *qp, const struct xr_qp_attr *a, int mask, const uint8_t *dmac)
{
	struct xr_core *core = qp->core;

	if (mask & XR_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & XR_QP_PATH_MTU) {
		qp->path_mtu = a->path_mtu;
		qp->mtu = xr_mtu_bytes(a->path_mtu);
	}
	if (mask & XR_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num;
	if (mask & XR_QP_QKEY)
		qp->qkey = a->qkey;
	if (mask & XR_QP_AV) {
		const struct xr_global_route *grh = &a->ah_attr.grh;

		qp->ah = a->ah_attr;
		qp->sgid_index = grh->sgid_index;
		xr_core_path_init(core, &qp->path, grh, dmac);
		qp->path.ecn = xr_dcqcn_ecn_codepoint(qp);
	}
	if (mask & (XR_QP_AV | XR_QP_DEST_QPN))
		qp->path.udp_sport =
		    xr_udp_sport_for_conn(qp->ah.grh.flow_label, qp->pub.qp_num, qp->dest_qpn);
	if (mask & XR_QP_RQ_PSN)
		qp->epsn = a->rq_psn & XR_PSN_MASK;
	if (mask & XR_QP_SQ_PSN) {
		qp->snd_psn = a->sq_psn & XR_PSN_MASK;
		qp->tx_psn = qp->tx_new_psn = qp->snd_psn;
		qp->rtt_sent_at = 0;
		qp->acked_psn = xr_psn_add(qp->snd_psn, XR_PSN_MASK); /* sq_psn - 1 */
		qp->ack_hint = qp->acked_psn;
	}
	if (mask & XR_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & XR_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & XR_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	if (mask & XR_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & XR_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & XR_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

typedef bool (*transition_fn)(enum xr_qp_state, enum xr_qp_state, struct transition *);

/*
 * The rows of the verbs table around SQD, per type: into it from RTS, back
 * to RTS, and SQD to SQD, where the path and the timers may change.
 */
static bool sqd_transition(enum xr_qp_type type, enum xr_qp_state cur, enum xr_qp_state next,
			   struct transition *t)
{
	t->required = 0;
	if (cur == XR_QPS_RTS) {
		t->optional = XR_QP_EN_SQD_ASYNC_NOTIFY;
		return true;
	}
	if (next == XR_QPS_RTS) {
		t->optional = type == XR_QPT_UD	  ? XR_QP_CUR_STATE | XR_QP_QKEY
			      : type == XR_QPT_UC ? UC_RTS_OPTIONAL
						  : RC_RTS_OPTIONAL;
		return true;
	}
	switch (type) {
	case XR_QPT_UD:
		t->optional = XR_QP_PKEY_INDEX | XR_QP_QKEY;
		break;
	case XR_QPT_UC:
		t->optional = XR_QP_AV | XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX |
			      XR_QP_PATH_MIG_STATE;
		break;
	default:
		t->optional = XR_QP_PORT | XR_QP_AV | XR_QP_TIMEOUT | XR_QP_RETRY_CNT |
			      XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC | XR_QP_MAX_DEST_RD_ATOMIC |
			      XR_QP_ALT_PATH | XR_QP_ACCESS_FLAGS | XR_QP_PKEY_INDEX |
			      XR_QP_MIN_RNR_TIMER | XR_QP_PATH_MIG_STATE;
	}
	return true;
}

static bool is_sqd_row(enum xr_qp_state cur, enum xr_qp_state next)
{
	return (cur == XR_QPS_RTS && next == XR_QPS_SQD) ||
	       (cur == XR_QPS_SQD && (next == XR_QPS_RTS || next == XR_QPS_SQD));
}

static transition_fn transition_of(const struct xr_qp_impl *qp)
{
	switch (qp->pub.qp_type) {
	case XR_QPT_UD:
		return ud_transition;
	case XR_QPT_UC:
		return uc_transition;
	default:
		return rc_transition;
	}
}

static void enter_error(struct xr_qp_impl *qp, bool fatal);

int xr_core_modify_qp(struct xr_qp_impl *qp, const struct xr_qp_attr *attr, int attr_mask,
		      const uint8_t *dmac)
{
	enum xr_qp_state cur = qp->pub.state;
	enum xr_qp_state next = (attr_mask & XR_QP_STATE) ? attr->qp_state : cur;
	int attrs = attr_mask & ~(XR_QP_STATE);
	struct transition t;
	int err;

	if (next > XR_QPS_ERR || (attr_mask & ~((1 << 21) - 1)))
		return -EINVAL;
	if (is_sqd_row(cur, next) ? !sqd_transition(qp->pub.qp_type, cur, next, &t)
				  : !transition_of(qp)(cur, next, &t))
		return -EINVAL;
	if ((attrs & t.required) != t.required || (attrs & ~(t.required | t.optional)))
		return -EINVAL;
	if ((attrs & XR_QP_AV) && !dmac)
		return -EINVAL;
	/* Allowed by the verbs table, but xroce has no alternate path to migrate to. */
	if (attrs & (XR_QP_ALT_PATH | XR_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	err = check_values(qp, attr, attrs);
	if (err)
		return err;
	/* The spec lets SQD's attributes change only once the send queue has drained. */
	if (cur == XR_QPS_SQD && next == XR_QPS_SQD && attrs && qp->sq_draining)
		return -EBUSY;

	apply(qp, attr, attrs, dmac);
	if (cur == XR_QPS_RTS && next == XR_QPS_SQD) {
		qp->sq_draining = true;
		qp->sqd_notify = (attrs & XR_QP_EN_SQD_ASYNC_NOTIFY) && attr->en_sqd_async_notify;
	} else if (cur == XR_QPS_SQD && next != XR_QPS_SQD) {
		qp->sq_draining = false; /* back to RTS, or away: no SQ_DRAINED any more */
	}
	if (next == XR_QPS_RESET) {
		qp->pub.state = XR_QPS_RESET;
		reset_transport(qp);
	} else if (next == XR_QPS_ERR) {
		enter_error(qp, false);
	} else {
		qp->pub.state = next;
	}
	if (next == XR_QPS_RTS && cur == XR_QPS_RTR)
		qp->retry_left = qp->retry_cnt, qp->rnr_left = qp->rnr_retry;
	xr_xdp_publish_qp(qp);
	/* Sending may start or resume (RTS), a drain begin (SQD), a flush (ERR). */
	xr_core_qp_ready(qp);
	return 0;
}

/*
 * What ibv_query_qp returns (the kernel's rxe_qp_to_attr): the attributes as
 * set, the current state and PSNs, the capabilities the QP really has; the
 * path as an address vector of port 1 (RoCE: global, no LID) once one was
 * given. No alternate path: those fields stay zero.
 */
int xr_core_query_qp(struct xr_qp_impl *qp, struct xr_qp_attr *a, struct xr_qp_init_attr *init)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = a->cur_qp_state = qp->pub.state;
	a->path_mtu = qp->path_mtu;
	a->path_mig_state = XR_MIG_MIGRATED;
	a->sq_draining = qp->pub.state == XR_QPS_SQD && qp->sq_draining;
	a->en_sqd_async_notify = qp->sqd_notify;
	a->qkey = qp->qkey;
	a->rq_psn = qp->epsn;
	a->sq_psn = qp->snd_psn;
	a->dest_qp_num = qp->dest_qpn;
	a->qp_access_flags = qp->access;
	a->cap = qp->cap;
	if (qp->ah.is_global) {
		a->ah_attr = qp->ah;
		a->ah_attr.dlid = 0;
		a->ah_attr.port_num = 1;
	}
	a->pkey_index = 0;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->port_num = 1;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->pub.qp_context;
		init->send_cq = qp->pub.send_cq;
		init->recv_cq = qp->pub.recv_cq;
		init->srq = qp->pub.srq;
		init->cap = qp->cap;
		init->qp_type = qp->pub.qp_type;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

uint64_t xr_qp_ack_timeout_ns(const struct xr_qp_impl *qp)
{
	/* 4.096 us * 2^timeout; 0 means infinite, which we bound to the largest. */
	unsigned t = qp->timeout ? qp->timeout : 31;
	return 4096ull << t;
}

/* ---- completion and flush -------------------------------------------- */

/*
 * Retires completed WQEs from the tail in order, reporting what must be
 * reported. A full CQ stops it: the WQE stays on the send queue (so posting
 * meets -ENOMEM) until the application polls, and nothing is lost.
 */
void xr_qp_retire_sends(struct xr_qp_impl *qp)
{
	while (qp->sq_tail != qp->sq_head) {
		struct xr_swqe *w = xr_sq_at(qp, qp->sq_tail);
		struct xr_wc wc = {0};

		if (w->state != XR_SWQE_DONE)
			break;
		if (w->signaled || w->status != XR_WC_SUCCESS) {
			if (xr_cq_full(qp->scq))
				break;
			wc.wr_id = w->wr_id;
			wc.status = w->status;
			wc.opcode = xr_wr(w->opcode)->wc_opcode;
			wc.qp_num = qp->pub.qp_num;
			wc.byte_len = w->length;
			xr_cq_push(qp->scq, &wc, false);
		}
		qp->sq_tail++;
	}
}

/* In ERR every outstanding WQE completes with WR_FLUSH_ERR (after any real error). */
void xr_qp_flush(struct xr_qp_impl *qp)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (w->state == XR_SWQE_DONE)
			continue;
		xr_swqe_complete(w, XR_WC_WR_FLUSH_ERR);
		w->signaled = true; /* flushed WRs are always reported */
	}
	xr_qp_retire_sends(qp);
	/* With an SRQ only the WQE the QP holds is its own: the rest stay for the others. */
	while ((qp->srq ? qp->srq_wqe_held : qp->rq_tail != qp->rq_head) && !xr_cq_full(qp->rcq)) {
		struct xr_rwqe *r = xr_recv_wqe(qp);
		struct xr_wc wc = {.wr_id = r->wr_id,
				   .status = qp->recv_error ? qp->recv_error : XR_WC_WR_FLUSH_ERR,
				   .opcode = XR_WC_RECV,
				   .qp_num = qp->pub.qp_num};

		xr_cq_push(qp->rcq, &wc, false);
		xr_recv_consumed(qp);
		qp->recv_error = XR_WC_SUCCESS;
	}
	qp->recv_active = false;
	qp->write_active = false;
	qp->retry_deadline = qp->rnr_deadline = qp->probe_deadline = 0;
	qp->probe_backoff = 0;
}

/*
 * fatal: a transport error took the QP there (QP_FATAL), not the application.
 * A QP with an SRQ then tells that it takes no more of the SRQ's WQEs: its
 * last one has been flushed (LAST_WQE_REACHED).
 */
static void enter_error(struct xr_qp_impl *qp, bool fatal)
{
	bool was_error = qp->pub.state == XR_QPS_ERR;

	qp->pub.state = XR_QPS_ERR;
	xr_qp_flush(qp);
	xr_xdp_publish_qp(qp);
	/* What a full CQ held back is flushed by the rounds. */
	xr_core_qp_ready(qp);
	if (was_error)
		return;
	if (fatal)
		xr_core_raise_event(qp->core, XR_EVENT_QP_FATAL, &qp->pub);
	if (qp->srq)
		xr_core_raise_event(qp->core, XR_EVENT_QP_LAST_WQE_REACHED, &qp->pub);
}

void xr_qp_to_error(struct xr_qp_impl *qp)
{
	enter_error(qp, true);
}

void xr_core_device_fatal(struct xr_core *core)
{
	xr_core_raise_event(core, XR_EVENT_DEVICE_FATAL, NULL);
	for (uint32_t slot = 0; slot < core->qp_slots_used; slot++)
		if (core->qps[slot])
			enter_error(core->qps[slot], false);
}

void xr_qp_check_drained(struct xr_qp_impl *qp)
{
	if (qp->pub.state != XR_QPS_SQD || !qp->sq_draining)
		return;
	/* Retired up to what was started, and the next one not begun: nothing in flight. */
	if (qp->sq_tail != qp->tx_idx ||
	    (qp->tx_idx != qp->sq_head && xr_sq_at(qp, qp->tx_idx)->psn_assigned))
		return;
	qp->sq_draining = false;
	if (qp->sqd_notify)
		xr_core_raise_event(qp->core, XR_EVENT_SQ_DRAINED, &qp->pub);
}

/* ---- posting ---------------------------------------------------------- */

/* The arguments of a local work request that posting can check. */
static int validate_local_wr(struct xr_qp_impl *qp, const struct xr_send_wr *wr)
{
	switch (wr->opcode) {
	case XR_WR_BIND_MW:
		/* A type 1 window is bound by xr_bind_mw, never by a work request. */
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != XR_MW_TYPE_2 ||
		    (wr->bind_mw.bind_info.length && !wr->bind_mw.bind_info.mr))
			return -EINVAL;
		break;
	case XR_WR_REG_MR:
		if (!wr->reg.mr || xr_mr_impl(wr->reg.mr)->kind != XR_MR_FAST_REG)
			return -EINVAL;
		break;
	default:
		break;
	}
	(void)qp;
	return wr->num_sge ? -EINVAL : 0;
}

static int validate_send_wr(struct xr_qp_impl *qp, const struct xr_send_wr *wr)
{
	const struct xr_wr_info *wi = xr_wr(wr->opcode);
	uint64_t total = 0;

	if (!(wi->flags & XR_WRF_VALID))
		return -EINVAL;
	if ((wi->flags & XR_WRF_MASKED) && !(qp->core->caps & XR_DEVICE_MASKED_ATOMICS))
		return -EOPNOTSUPP;
	if (wr->num_sge < 0 || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	/* A UD QP sends datagrams only, each to an address handle of this device. */
	if (qp->pub.qp_type == XR_QPT_UD &&
	    ((wr->opcode != XR_WR_SEND && wr->opcode != XR_WR_SEND_WITH_IMM) || !wr->wr.ud.ah ||
	     wr->wr.ud.ah->pd->core != qp->core || wr->wr.ud.remote_qpn > XR_QPN_MASK))
		return -EINVAL;
	/* UC has no responses: SEND and WRITE only, with or without immediate. */
	if (qp->pub.qp_type == XR_QPT_UC && wr->opcode != XR_WR_SEND &&
	    wr->opcode != XR_WR_SEND_WITH_IMM && wr->opcode != XR_WR_RDMA_WRITE &&
	    wr->opcode != XR_WR_RDMA_WRITE_WITH_IMM)
		return -EINVAL;
	if (wi->flags & XR_WRF_LOCAL)
		return validate_local_wr(qp, wr);
	for (int i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > XR_MAX_MSG_SZ)
		return -EINVAL;
	/* A datagram is one packet: larger than the MTU, it cannot be sent at all. */
	if (qp->pub.qp_type == XR_QPT_UD && total > qp->mtu)
		return -EINVAL;
	/* An atomic returns the original 8 bytes into exactly one 8-byte SGE. */
	if (xr_wr_is_atomic(wr->opcode) && (wr->num_sge != 1 || total != 8))
		return -EINVAL;
	if ((wr->send_flags & XR_SEND_INLINE) && !(wi->flags & XR_WRF_DATA))
		return -EINVAL;
	if (wr->send_flags & XR_SEND_INLINE) {
		if (total > qp->cap.max_inline_data)
			return -EINVAL;
	} else if ((uint32_t)wr->num_sge > qp->cap.max_send_sge) {
		return -EINVAL;
	}
	return 0;
}

static bool qp_can_post_send(const struct xr_qp_impl *qp)
{
	enum xr_qp_state st = qp->pub.state;

	return st == XR_QPS_RTS || st == XR_QPS_ERR || st == XR_QPS_SQD;
}

/* Puts wr, checked by validate_send_wr, on the send queue, which has room for it. */
static void queue_send_wr(struct xr_qp_impl *qp, struct xr_send_wr *wr)
{
	struct xr_swqe *w = xr_sq_at(qp, qp->sq_head);

	memset(w, 0, offsetof(struct xr_swqe, sge));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	if (xr_wr(wr->opcode)->flags & XR_WRF_IMM)
		w->imm_be = wr->imm_data;
	if (xr_wr(wr->opcode)->flags & XR_WRF_INVALIDATE)
		w->invalidate_rkey = wr->invalidate_rkey;
	if (qp->pub.qp_type == XR_QPT_UD) {
		const struct xr_ah_impl *ah = (const struct xr_ah_impl *)wr->wr.ud.ah;

		w->ud.path = ah->path;
		w->ud.path.udp_sport = xr_udp_sport_for_qpn(qp->pub.qp_num);
		w->ud.remote_qpn = wr->wr.ud.remote_qpn;
		/* A Q_Key with the high bit set stands for the QP's own (IBA 10.2.5). */
		w->ud.qkey =
		    (wr->wr.ud.remote_qkey & 0x80000000u) ? qp->qkey : wr->wr.ud.remote_qkey;
	} else if (wr->opcode == XR_WR_BIND_MW) {
		const struct xr_mw_bind_info *bi = &wr->bind_mw.bind_info;

		w->bind = (struct xr_bind_args){
		    .mw = xr_mw_impl(wr->bind_mw.mw),
		    .new_rkey = wr->bind_mw.rkey,
		    .mr = bi->length ? xr_mr_impl(bi->mr) : NULL,
		    .addr = bi->addr,
		    .length = bi->length,
		    .access = bi->mw_access_flags,
		};
		/* Its new rkey is the application's from now on, as for type 1. */
		wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
	} else if (wr->opcode == XR_WR_REG_MR) {
		w->reg = (struct xr_reg_args){
		    .mr = xr_mr_impl(wr->reg.mr), .key = wr->reg.key, .access = wr->reg.access};
	} else if (xr_wr(wr->opcode)->flags & XR_WRF_MASKED) {
		w->remote_addr = wr->wr.masked_atomic.remote_addr;
		w->rkey = wr->wr.masked_atomic.rkey;
		w->compare_add = wr->wr.masked_atomic.compare_add;
		w->swap = wr->wr.masked_atomic.swap;
		w->compare_add_mask = wr->wr.masked_atomic.compare_add_mask;
		w->swap_mask = wr->wr.masked_atomic.swap_mask;
	} else if (xr_wr_is_atomic(wr->opcode)) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	w->signaled = qp->sq_sig_all || (wr->send_flags & XR_SEND_SIGNALED);
	w->state = XR_SWQE_POSTED;
	w->status = XR_WC_SUCCESS;
	for (int i = 0; i < wr->num_sge; i++)
		w->length += wr->sg_list[i].length;
	if (wr->send_flags & XR_SEND_INLINE) {
		uint32_t off = 0;

		/* Inline data is copied now: the caller may reuse its buffers. */
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->is_inline = true;
		w->num_sge = 0;
	} else {
		w->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, sizeof(*w->sge) * (size_t)wr->num_sge);
	}
	qp->sq_head++;
}

/* After WRs were queued: in ERR they are flushed at once, else the QP has work. */
static void send_queue_grew(struct xr_qp_impl *qp)
{
	if (qp->pub.state == XR_QPS_ERR)
		xr_qp_flush(qp);
	xr_core_qp_ready(qp);
}

int xr_core_post_send_all_or_none(struct xr_qp_impl *qp, struct xr_send_wr *wr,
				  struct xr_send_wr **bad)
{
	struct xr_send_wr *stop = wr;
	uint32_t count = 0;
	int err = qp_can_post_send(qp) ? 0 : -EINVAL;

	while (!err && stop) {
		err = validate_send_wr(qp, stop);
		if (!err) {
			stop = stop->next;
			count++;
		}
	}
	if (!err && count > qp->sq_size - (qp->sq_head - qp->sq_tail)) {
		stop = wr;
		err = -ENOMEM;
	}
	if (err) {
		if (bad)
			*bad = stop;
		return err;
	}
	for (; wr; wr = wr->next)
		queue_send_wr(qp, wr);
	send_queue_grew(qp);
	return 0;
}

int xr_core_post_send(struct xr_qp_impl *qp, struct xr_send_wr *wr, struct xr_send_wr **bad)
{
	int err = qp_can_post_send(qp) ? 0 : -EINVAL;

	for (; wr && !err; wr = wr->next) {
		err = validate_send_wr(qp, wr);
		if (err)
			break;
		if (qp->sq_head - qp->sq_tail >= qp->sq_size) {
			err = -ENOMEM;
			break;
		}
		queue_send_wr(qp, wr);
	}
	if (err && bad)
		*bad = wr;
	send_queue_grew(qp);
	return err;
}

int xr_core_bind_mw(struct xr_qp_impl *qp, struct xr_mw *mw, const struct xr_mw_bind *bind)
{
	const struct xr_mw_bind_info *bi = &bind->bind_info;
	struct xr_swqe *w;

	if (mw->type != XR_MW_TYPE_1 || (bi->length && !bi->mr))
		return -EINVAL;
	if (!qp_can_post_send(qp))
		return -EINVAL;
	if (qp->sq_head - qp->sq_tail >= qp->sq_size)
		return -ENOMEM;
	w = xr_sq_at(qp, qp->sq_head);
	memset(w, 0, offsetof(struct xr_swqe, sge));
	w->wr_id = bind->wr_id;
	w->opcode = XR_WR_BIND_MW;
	w->send_flags = bind->send_flags;
	w->bind = (struct xr_bind_args){
	    .mw = xr_mw_impl(mw),
	    .new_rkey = xr_inc_rkey(mw->rkey),
	    .mr = bi->length ? xr_mr_impl(bi->mr) : NULL,
	    .addr = bi->addr,
	    .length = bi->length,
	    .access = bi->mw_access_flags,
	};
	w->signaled = qp->sq_sig_all || (bind->send_flags & XR_SEND_SIGNALED);
	w->state = XR_SWQE_POSTED;
	w->status = XR_WC_SUCCESS;
	qp->sq_head++;
	mw->rkey = w->bind.new_rkey;
	send_queue_grew(qp);
	return 0;
}

int xr_core_post_recv(struct xr_qp_impl *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	int err = 0;

	/* A QP with an SRQ takes its receives from there (xr_post_srq_recv). */
	if (qp->pub.state == XR_QPS_RESET || qp->srq)
		err = -EINVAL;
	for (; wr && !err; wr = wr->next) {
		if (qp->rq_head - qp->rq_tail >= qp->rq_size) {
			err = -ENOMEM;
			break;
		}
		err = xr_rwqe_fill(xr_rq_at(qp, qp->rq_head), wr, qp->cap.max_recv_sge);
		if (err)
			break;
		qp->rq_head++;
	}
	if (err && bad)
		*bad = wr;
	if (qp->pub.state == XR_QPS_ERR)
		xr_qp_flush(qp);
	/* In ERR, a flush a full CQ holds back. */
	xr_core_qp_ready(qp);
	return err;
}
