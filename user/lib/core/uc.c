/* SPDX-License-Identifier: MIT */
/*
 * The UC responder: SEND and WRITE placed as on RC, but nothing is
 * acknowledged, retransmitted or NAKed. A PSN other than the expected one
 * ends the message in progress silently (its receive WQE is kept, nothing is
 * reported) and packets are dropped until a message starts again (FIRST or
 * ONLY), whose PSN becomes the expected one, as the spec has UC resynchronise.
 * Any other error (no receive WQE, a length or access violation) drops the
 * message the same way.
 */
#include <string.h>

#include "core.h"

/* Gives up the message in progress, and every packet until the next one starts. */
static void drop_message(struct xr_qp_impl *qp)
{
	qp->recv_active = false;
	qp->write_active = false;
	qp->uc_dropping = true;
	qp->core->stats.uc_dropped_msgs++;
}

/* A receive WQE for a message that needs one, and room to report it. */
static bool have_recv(const struct xr_qp_impl *qp)
{
	return xr_recv_ready(qp) && !xr_cq_full(qp->rcq);
}

static bool place_send(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	struct xr_rwqe *r;

	if (pkt->opflags & XR_OPF_FIRST) {
		if (!have_recv(qp))
			return false;
		qp->recv_active = true;
		qp->recv_off = 0;
	}
	r = xr_recv_wqe(qp);
	if (pkt->payload_len > r->length - qp->recv_off ||
	    pkt->payload_len > XR_MAX_MSG_SZ - qp->recv_off ||
	    xr_core_check_sgl(qp->core, qp->pub.pd, r->sge, r->num_sge, XR_ACCESS_LOCAL_WRITE) !=
		XR_WC_SUCCESS)
		return false;
	xr_sgl_copy_in(qp->core, r->sge, r->num_sge, qp->recv_off, pkt->payload, pkt->payload_len);
	qp->recv_off += pkt->payload_len;
	if (pkt->opflags & XR_OPF_LAST) {
		xr_recv_complete(qp, pkt, XR_WC_RECV, qp->recv_off);
	}
	return true;
}

static bool place_write(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	struct xr_mr_impl *mr;

	if (f & XR_OPF_FIRST) {
		/* Longer than the port's max_msg_sz: dropped whole, as RC refuses it. */
		if (pkt->reth_len > XR_MAX_MSG_SZ)
			return false;
		qp->write_active = true;
		qp->write_va = pkt->reth_va;
		qp->write_rkey = pkt->reth_rkey;
		qp->write_left = qp->write_total = pkt->reth_len;
	}
	if ((f & XR_OPF_RECV_WQE) && !have_recv(qp))
		return false;
	if (pkt->payload_len > qp->write_left ||
	    ((f & XR_OPF_LAST) && pkt->payload_len != qp->write_left))
		return false;
	if (pkt->payload_len) {
		mr = xr_core_resolve_rkey(qp, qp->write_rkey, qp->write_va, pkt->payload_len,
					  XR_ACCESS_REMOTE_WRITE);
		if (!mr)
			return false;
		xr_mr_copy_in(mr, qp->write_va, pkt->payload, pkt->payload_len);
	}
	qp->write_va += pkt->payload_len;
	qp->write_left -= pkt->payload_len;
	if (f & XR_OPF_LAST) {
		qp->write_active = false;
		if (f & XR_OPF_RECV_WQE)
			xr_recv_complete(qp, pkt, XR_WC_RECV_RDMA_WITH_IMM, qp->write_total);
	}
	return true;
}

void xr_uc_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	bool starts = f & XR_OPF_FIRST;
	bool in_message = qp->recv_active || qp->write_active;
	bool ok;

	if (qp->uc_dropping || pkt->psn != qp->epsn) {
		/* Lost (or repeated) packets broke the message in progress, if any. */
		if (in_message)
			drop_message(qp);
		qp->uc_dropping = true;
		if (!starts)
			return; /* until a message starts again */
	} else if (starts && in_message) {
		drop_message(qp); /* a new message before the last one ended */
	} else if (!starts && !in_message) {
		qp->uc_dropping = true; /* the rest of a message that never started here */
		return;
	}
	/* In sequence, or a message's first packet, which resynchronises the PSN. */
	qp->uc_dropping = false;
	qp->epsn = xr_psn_add(pkt->psn, 1);
	/* Only the last packet of a message may be shorter than the MTU. */
	if ((!(f & XR_OPF_LAST) && pkt->payload_len != qp->mtu) || pkt->payload_len > qp->mtu)
		ok = false;
	else
		ok = (f & XR_OPF_SEND) ? place_send(qp, pkt) : place_write(qp, pkt);
	if (!ok)
		drop_message(qp);
}
