/* SPDX-License-Identifier: MIT */
/*
 * The requester: turns send WQEs into request packets, one MTU at a time,
 * assigning PSNs once and retransmitting from any PSN after a rewind
 * (go-back-N).
 */
#include <string.h>

#include "core.h"

static uint8_t send_opcode(const struct xr_swqe *w, uint32_t pkt)
{
	bool first = pkt == 0, last = pkt + 1 == w->npkts;
	bool imm = w->opcode == XR_WR_SEND_WITH_IMM;

	if (first && last)
		return imm ? XR_OP_RC_SEND_ONLY_IMM : XR_OP_RC_SEND_ONLY;
	if (first)
		return XR_OP_RC_SEND_FIRST;
	if (last)
		return imm ? XR_OP_RC_SEND_LAST_IMM : XR_OP_RC_SEND_LAST;
	return XR_OP_RC_SEND_MIDDLE;
}

/* First transmission of a WQE: check its local buffers, give it its PSNs. */
static enum xr_wc_status start_wqe(struct xr_qp_impl *qp, struct xr_swqe *w)
{
	for (int i = 0; i < w->num_sge; i++) {
		enum xr_wc_status st =
			xr_core_check_sge(qp->core, qp->pub.pd, &w->sge[i], 0);
		if (st != XR_WC_SUCCESS)
			return st;
	}
	w->npkts = w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1;
	w->first_psn = qp->snd_psn;
	w->last_psn = xr_psn_add(qp->snd_psn, w->npkts - 1);
	qp->snd_psn = xr_psn_add(qp->snd_psn, w->npkts);
	w->psn_assigned = true;
	return XR_WC_SUCCESS;
}

static bool send_packet(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t pkt)
{
	uint32_t off = pkt * qp->mtu;
	uint32_t len = w->length - off < qp->mtu ? w->length - off : qp->mtu;
	bool last = pkt + 1 == w->npkts;
	struct xr_bth_fields bth = {
		.opcode = send_opcode(w, pkt),
		.se = last && (w->send_flags & XR_SEND_SOLICITED),
		.ackreq = last || (pkt + 1) % XR_ACKREQ_INTERVAL == 0,
		.dqpn = qp->dest_qpn,
		.psn = xr_psn_add(w->first_psn, pkt),
	};
	const struct xr_opinfo *oi = &xr_opinfo[bth.opcode];
	struct xr_pkt_out out;

	if (!xr_core_frame_begin(qp->core, qp, &bth, len, &out))
		return false;
	if (oi->flags & XR_OPF_IMMDT)
		memcpy(out.bth + xr_immdt_off(oi->flags), &w->imm_be, 4);
	if (w->is_inline)
		memcpy(out.payload, w->inline_data + off, len);
	else
		xr_sgl_copy_out(w->sge, w->num_sge, off, out.payload, len);
	xr_core_frame_send(qp->core, qp, &out);
	return true;
}

int xr_requester_run(struct xr_qp_impl *qp, uint64_t now)
{
	int sent = 0;

	if (qp->pub.state != XR_QPS_RTS || qp->rnr_deadline)
		return 0;
	while (qp->tx_idx != qp->sq_head) {
		struct xr_swqe *w = xr_sq_at(qp, qp->tx_idx);

		if (!w->psn_assigned) {
			enum xr_wc_status st = start_wqe(qp, w);

			if (st != XR_WC_SUCCESS) {
				/* Nothing of it was sent; the QP goes to ERR as verbs requires. */
				xr_swqe_complete(w, st);
				xr_qp_retire_sends(qp);
				xr_qp_to_error(qp);
				return sent;
			}
			qp->tx_pkt = 0;
			qp->tx_psn = w->first_psn;
		}
		if (xr_psn_diff(qp->tx_psn, qp->acked_psn) > XR_SEND_WINDOW)
			break;
		if (!send_packet(qp, w, qp->tx_pkt))
			break;
		sent++;
		if (xr_psn_diff(qp->tx_psn, qp->acked_psn) > 0 && !qp->retry_deadline)
			qp->retry_deadline = now + xr_qp_ack_timeout_ns(qp);
		qp->tx_psn = xr_psn_add(qp->tx_psn, 1);
		if (++qp->tx_pkt == w->npkts) {
			if (w->state == XR_SWQE_POSTED)
				w->state = XR_SWQE_SENT;
			qp->tx_idx++;
			qp->tx_pkt = 0;
		}
	}
	return sent;
}

void xr_requester_rewind(struct xr_qp_impl *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (!w->psn_assigned)
			break;
		if (w->state == XR_SWQE_DONE)
			continue;
		if (xr_psn_diff(psn, w->first_psn) >= 0 && xr_psn_diff(psn, w->last_psn) <= 0) {
			qp->tx_idx = i;
			qp->tx_pkt = xr_psn_diff(psn, w->first_psn);
			qp->tx_psn = psn;
			qp->retransmits++;
			return;
		}
	}
}
