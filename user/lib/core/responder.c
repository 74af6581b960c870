/* SPDX-License-Identifier: MIT */
/*
 * The responder: checks each request's PSN against the expected PSN,
 * places SEND payloads into receive WQEs, completes them, and answers
 * with ACKs, RNR NAKs and NAKs as rxe does.
 */
#include "core.h"

static void publish_epsn(struct xr_qp_impl *qp)
{
	if (qp->core->xdp_qps)
		__atomic_store_n(&qp->core->xdp_qps[qp->slot].committed_epsn, qp->epsn,
				 __ATOMIC_RELEASE);
}

/* A fatal request error: NAK it, complete the receive in progress, go to ERR. */
static void fatal(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint8_t nak,
		  enum xr_wc_status recv_status)
{
	if (recv_status != XR_WC_SUCCESS && qp->rq_tail != qp->rq_head) {
		struct xr_rwqe *r = xr_rq_at(qp, qp->rq_tail);
		struct xr_wc wc = { .wr_id = r->wr_id,
				    .status = recv_status,
				    .opcode = XR_WC_RECV,
				    .qp_num = qp->pub.qp_num,
				    .src_qp = qp->dest_qpn };

		xr_cq_push(qp->rcq, &wc);
		qp->rq_tail++;
	}
	xr_core_send_ack(qp->core, qp, XR_AETH_NAK | nak, pkt->psn);
	xr_qp_to_error(qp);
}

static void complete_recv(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	struct xr_rwqe *r = xr_rq_at(qp, qp->rq_tail);
	struct xr_wc wc = { .wr_id = r->wr_id,
			    .status = XR_WC_SUCCESS,
			    .opcode = XR_WC_RECV,
			    .byte_len = qp->recv_off,
			    .qp_num = qp->pub.qp_num,
			    .src_qp = qp->dest_qpn };

	if (pkt->opflags & XR_OPF_IMMDT) {
		wc.imm_data = pkt->imm_be;
		wc.wc_flags |= XR_WC_WITH_IMM;
	}
	xr_cq_push(qp->rcq, &wc);
	qp->rq_tail++;
	qp->recv_active = false;
}

/* Returns false when the packet was answered with an RNR NAK or a fatal NAK. */
static bool handle_send(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	struct xr_rwqe *r;

	if (f & XR_OPF_FIRST) {
		if (qp->recv_active) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		if (qp->rq_tail == qp->rq_head) {
			xr_core_send_ack(qp->core, qp, XR_AETH_RNR_NAK | qp->min_rnr_timer,
					 pkt->psn);
			qp->rnr_naks_tx++;
			return false;
		}
		r = xr_rq_at(qp, qp->rq_tail);
		for (int i = 0; i < r->num_sge; i++) {
			if (xr_core_check_sge(qp->core, qp->pub.pd, &r->sge[i],
					      XR_ACCESS_LOCAL_WRITE) != XR_WC_SUCCESS) {
				fatal(qp, pkt, XR_NAK_REMOTE_OP_ERR, XR_WC_LOC_PROT_ERR);
				return false;
			}
		}
		qp->recv_active = true;
		qp->recv_off = 0;
	} else if (!qp->recv_active) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return false;
	}
	/* Only the last packet of a message may be shorter than the MTU. */
	if ((!(f & XR_OPF_LAST) && pkt->payload_len != qp->mtu) || pkt->payload_len > qp->mtu) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_LOC_LEN_ERR);
		return false;
	}
	r = xr_rq_at(qp, qp->rq_tail);
	if (pkt->payload_len > r->length - qp->recv_off) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_LOC_LEN_ERR);
		return false;
	}
	xr_sgl_copy_in(r->sge, r->num_sge, qp->recv_off, pkt->payload, pkt->payload_len);
	qp->recv_off += pkt->payload_len;
	if (f & XR_OPF_LAST) {
		complete_recv(qp, pkt);
		qp->msn = (qp->msn + 1) & 0xffffff;
	}
	return true;
}

void xr_responder_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	int32_t d = xr_psn_diff(pkt->psn, qp->epsn);

	(void)now;
	if (d > 0) {
		/* Out of sequence: one NAK per gap, the rest dropped silently. */
		if (!qp->nak_sent) {
			xr_core_send_ack(qp->core, qp, XR_AETH_NAK | XR_NAK_PSN_SEQ_ERR, qp->epsn);
			qp->nak_sent = true;
			qp->seq_naks_tx++;
		}
		return;
	}
	if (d < 0) {
		/* Duplicate: already placed; re-acknowledge what we have. */
		qp->dup_requests++;
		xr_core_send_ack(qp->core, qp, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED,
				 xr_psn_add(qp->epsn, XR_PSN_MASK));
		return;
	}
	qp->nak_sent = false;
	if (!(pkt->opflags & XR_OPF_SEND) || (pkt->opflags & XR_OPF_IETH)) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return;
	}
	if (!handle_send(qp, pkt))
		return;
	qp->epsn = xr_psn_add(qp->epsn, 1);
	publish_epsn(qp);
	if (pkt->ackreq)
		xr_core_send_ack(qp->core, qp, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, pkt->psn);
}
