/* SPDX-License-Identifier: MIT */
/*
 * The completer: consumes ACKs and NAKs, completes send WQEs in order, and
 * runs the two retry flows: the local ACK timeout (retry_cnt) and RNR NAKs
 * (rnr_retry, 7 = forever).
 */
#include "core.h"

static bool outstanding(const struct xr_qp_impl *qp)
{
	return xr_psn_diff(qp->snd_psn, xr_psn_add(qp->acked_psn, 1)) > 0;
}

static struct xr_swqe *wqe_of_psn(struct xr_qp_impl *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (!w->psn_assigned)
			break;
		if (xr_psn_diff(psn, w->last_psn) <= 0)
			return w;
	}
	return NULL;
}

/* Fails the WQE holding psn with st: the QP moves to ERR and flushes the rest. */
static void fail_at(struct xr_qp_impl *qp, uint32_t psn, enum xr_wc_status st)
{
	struct xr_swqe *w = wqe_of_psn(qp, psn);

	if (!w && qp->sq_tail != qp->sq_head)
		w = xr_sq_at(qp, qp->sq_tail);
	if (w)
		xr_swqe_complete(w, st);
	xr_qp_retire_sends(qp);
	xr_qp_to_error(qp);
}

/* Everything up to and including psn is acknowledged. */
static void ack_through(struct xr_qp_impl *qp, uint32_t psn, uint64_t now)
{
	if (xr_psn_diff(psn, qp->acked_psn) <= 0)
		return; /* old or duplicate */
	if (xr_psn_diff(psn, qp->snd_psn) >= 0)
		return; /* acknowledges a PSN never sent: ignore */
	qp->acked_psn = psn;
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (!w->psn_assigned || xr_psn_diff(w->last_psn, psn) > 0)
			break;
		if (w->state != XR_SWQE_DONE)
			xr_swqe_complete(w, XR_WC_SUCCESS);
	}
	xr_qp_retire_sends(qp);
	/* Progress resets both retry budgets. */
	qp->retry_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	/* A rewind may have left tx behind what is now acknowledged. */
	if (xr_psn_diff(qp->tx_psn, psn) <= 0)
		xr_requester_rewind(qp, xr_psn_add(psn, 1));
	qp->retry_deadline = outstanding(qp) ? now + xr_qp_ack_timeout_ns(qp) : 0;
}

static enum xr_wc_status nak_status(uint8_t code)
{
	switch (code) {
	case XR_NAK_INVALID_REQUEST:
		return XR_WC_REM_INV_REQ_ERR;
	case XR_NAK_REMOTE_ACCESS_ERR:
		return XR_WC_REM_ACCESS_ERR;
	case XR_NAK_REMOTE_OP_ERR:
		return XR_WC_REM_OP_ERR;
	case XR_NAK_INVALID_RD_REQUEST:
		return XR_WC_REM_INV_RD_REQ_ERR;
	default:
		return XR_WC_BAD_RESP_ERR;
	}
}

void xr_completer_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	uint8_t syn = pkt->aeth_syndrome, val = syn & XR_AETH_VALUE_MASK;
	uint32_t psn = pkt->psn;

	if (pkt->opcode != XR_OP_RC_ACK)
		return; /* READ responses and atomic ACKs: not requested by this requester */
	/* A response for a PSN never sent is a ghost: drop it. */
	if (xr_psn_diff(psn, qp->snd_psn) >= 0)
		return;

	switch (syn & XR_AETH_TYPE_MASK) {
	case XR_AETH_ACK:
		ack_through(qp, psn, now);
		break;
	case XR_AETH_RNR_NAK:
		ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
		qp->rnr_naks_rx++;
		if (qp->rnr_retry != 7) {
			if (qp->rnr_left == 0) {
				fail_at(qp, psn, XR_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->rnr_left--;
		}
		xr_requester_rewind(qp, psn);
		qp->rnr_deadline = now + (uint64_t)xr_rnr_timer_us[val] * 1000;
		qp->retry_deadline = 0;
		break;
	case XR_AETH_NAK:
		if (val == XR_NAK_PSN_SEQ_ERR) {
			/* Implicitly acknowledges what precedes psn; resend from psn. */
			ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
			if (xr_psn_diff(psn, qp->acked_psn) == 1)
				xr_requester_rewind(qp, psn);
			qp->retry_deadline = outstanding(qp) ? now + xr_qp_ack_timeout_ns(qp) : 0;
		} else {
			ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
			fail_at(qp, psn, nak_status(val));
		}
		break;
	default:
		break;
	}
}

uint64_t xr_completer_timers(struct xr_qp_impl *qp, uint64_t now)
{
	if (qp->rnr_deadline && now >= qp->rnr_deadline)
		qp->rnr_deadline = 0; /* the requester resumes from the rewound PSN */
	if (qp->retry_deadline && now >= qp->retry_deadline) {
		if (!outstanding(qp)) {
			qp->retry_deadline = 0;
		} else if (qp->retry_left == 0) {
			fail_at(qp, xr_psn_add(qp->acked_psn, 1), XR_WC_RETRY_EXC_ERR);
			return 0;
		} else {
			qp->retry_left--;
			qp->timeouts++;
			xr_requester_rewind(qp, xr_psn_add(qp->acked_psn, 1));
			qp->retry_deadline = now + xr_qp_ack_timeout_ns(qp);
		}
	}
	if (qp->rnr_deadline)
		return qp->rnr_deadline;
	return qp->retry_deadline;
}
