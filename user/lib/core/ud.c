/* SPDX-License-Identifier: MIT */
/*
 * Unreliable datagrams: address handles, UD sends (one SEND_ONLY with a
 * DETH per message, no acknowledgement) and UD receives, whose buffers start
 * with the 40-byte GRH: the IPv6 header, or 20 zero bytes and the IPv4
 * header, as Soft-RoCE and hardware RoCE deliver them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct xr_ah *xr_core_create_ah(struct xr_pd *pd, const struct xr_ah_attr *attr,
				const uint8_t dmac[6], int *err)
{
	struct xr_core *core = pd->core;
	const struct xr_global_route *grh = &attr->grh;
	struct xr_ah_impl *ah;

	*err = -EINVAL;
	if (!attr->is_global || grh->sgid_index >= core->num_gids ||
	    (attr->port_num && attr->port_num != 1))
		return NULL;
	/* Both ends of a path are of one family: IPv4-mapped, or IPv6. */
	if (xr_gid_is_v4mapped(&core->gids[grh->sgid_index]) != xr_gid_is_v4mapped(&grh->dgid))
		return NULL;
	*err = -ENOMEM;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	xr_core_path_init(core, &ah->path, grh, dmac);
	ah->pub.device = pd->device;
	ah->pub.pd = pd;
	ah->pub.handle = ++core->pd_seq;
	pd->refs++;
	*err = 0;
	return &ah->pub;
}

int xr_core_destroy_ah(struct xr_ah *ah)
{
	ah->pd->refs--;
	free(ah);
	return 0;
}

/* ---- sending ------------------------------------------------------------- */

static bool send_ud(struct xr_qp_impl *qp, struct xr_swqe *w)
{
	bool imm = w->opcode == XR_WR_SEND_WITH_IMM;
	struct xr_bth_fields bth = {
	    .opcode = imm ? XR_OP_UD_SEND_ONLY_IMM : XR_OP_UD_SEND_ONLY,
	    .se = w->send_flags & XR_SEND_SOLICITED,
	    .dqpn = w->ud.remote_qpn,
	    .psn = qp->snd_psn,
	};
	uint32_t f = xr_opinfo[bth.opcode].flags;
	struct xr_pkt_out out;
	uint8_t *deth;

	if (!xr_core_frame_begin_to(qp->core, &w->ud.path, &bth, w->length, &out))
		return false;
	deth = out.bth + xr_deth_off(f);
	xr_put32(deth, w->ud.qkey);
	xr_put32(deth + 4, qp->pub.qp_num & XR_QPN_MASK); /* a reserved byte, then the QPN */
	if (imm)
		memcpy(out.bth + xr_immdt_off(f), &w->imm_be, 4);
	if (w->is_inline)
		xr_pkt_put_payload(&out, 0, w->inline_data, w->length);
	else
		xr_sgl_copy_out(qp->core, w->sge, w->num_sge, 0, &out, w->length);
	xr_core_frame_send(qp->core, qp, &out);
	qp->snd_psn = xr_psn_add(qp->snd_psn, 1);
	return true;
}

int xr_ud_run(struct xr_qp_impl *qp, int budget)
{
	int sent = 0;

	if (qp->pub.state != XR_QPS_RTS)
		return 0;
	while (qp->tx_idx != qp->sq_head && sent < budget) {
		struct xr_swqe *w = xr_sq_at(qp, qp->tx_idx);

		/* Checked when sent: the gather list's MRs may have gone since posting. */
		if (xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, 0) !=
		    XR_WC_SUCCESS) {
			xr_swqe_complete(w, XR_WC_LOC_PROT_ERR);
			qp->tx_idx++;
			xr_qp_retire_sends(qp);
			xr_qp_to_error(qp);
			return sent;
		}
		if (!send_ud(qp, w))
			break; /* no transmit buffer now: the next round sends it */
		/* Nothing acknowledges a datagram: it is complete once it left. */
		xr_swqe_complete(w, XR_WC_SUCCESS);
		qp->tx_idx++;
		sent++;
	}
	xr_qp_retire_sends(qp);
	return sent;
}

/* ---- receiving ------------------------------------------------------------ */

void xr_ud_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	struct xr_core *core = qp->core;
	uint8_t grh[XR_GRH_SIZE] = {0};
	struct xr_wc wc = {.opcode = XR_WC_RECV, .qp_num = qp->pub.qp_num};
	struct xr_rwqe *r;

	if (pkt->deth_qkey != qp->qkey) {
		core->stats.rx_bad_qkey++;
		return;
	}
	if (pkt->payload_len > qp->mtu) {
		core->stats.rx_malformed++;
		return;
	}
	/* No receive WQE, or no room to report one: a datagram is simply lost. */
	if (!xr_recv_ready(qp) || xr_cq_full(qp->rcq)) {
		core->stats.rx_no_recv++;
		return;
	}
	r = xr_recv_wqe(qp);
	wc.wr_id = r->wr_id;
	wc.src_qp = pkt->deth_sqpn;
	if (r->length < XR_GRH_SIZE + pkt->payload_len) {
		wc.status = XR_WC_LOC_LEN_ERR;
	} else if (xr_core_check_sgl(core, qp->pub.pd, r->sge, r->num_sge, XR_ACCESS_LOCAL_WRITE) !=
		   XR_WC_SUCCESS) {
		wc.status = XR_WC_LOC_PROT_ERR;
	} else {
		if (pkt->ipv6)
			memcpy(grh, pkt->frame + pkt->l3_off, XR_GRH_SIZE);
		else
			memcpy(grh + XR_GRH_SIZE - XR_IPV4_HLEN, pkt->frame + pkt->l3_off,
			       XR_IPV4_HLEN);
		xr_sgl_copy_in(core, r->sge, r->num_sge, 0, grh, XR_GRH_SIZE);
		xr_sgl_copy_in(core, r->sge, r->num_sge, XR_GRH_SIZE, pkt->payload,
			       pkt->payload_len);
		wc.byte_len = XR_GRH_SIZE + pkt->payload_len;
		wc.wc_flags = XR_WC_GRH;
		if (pkt->opflags & XR_OPF_IMMDT) {
			wc.imm_data = pkt->imm_be;
			wc.wc_flags |= XR_WC_WITH_IMM;
		}
	}
	xr_cq_push(qp->rcq, &wc, pkt->se);
	xr_recv_consumed(qp);
	/* As for RC: a local protection error is fatal to the QP. */
	if (wc.status == XR_WC_LOC_PROT_ERR)
		xr_qp_to_error(qp);
}
