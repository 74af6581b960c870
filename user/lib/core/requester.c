/* SPDX-License-Identifier: MIT */
/*
 * The requester: turns send WQEs into request packets, one MTU at a time,
 * assigning PSNs once and retransmitting from any PSN after a rewind
 * (go-back-N). A READ takes one PSN per response packet it asks for; a
 * rewind into the middle of a READ asks again for the rest only.
 */
#include <string.h>

#include "core.h"

static uint8_t request_opcode(const struct xr_swqe *w, uint32_t pkt)
{
	const struct xr_wr_info *wi = xr_wr(w->opcode);
	bool first = pkt == 0, last = pkt + 1 == w->npkts;

	if (first && last)
		return wi->op_only;
	if (first)
		return wi->op_first;
	return last ? wi->op_last : wi->op_middle;
}

static void put64(uint8_t *p, uint64_t v)
{
	xr_put32(p, (uint32_t)(v >> 32));
	xr_put32(p + 4, (uint32_t)v);
}

/* First transmission of a WQE: check its local buffers, give it its PSNs. */
static enum xr_wc_status start_wqe(struct xr_qp_impl *qp, struct xr_swqe *w)
{
	/* READ and atomic results are written into the local buffers. */
	int need = xr_wr_is_read_atomic(w->opcode) ? XR_ACCESS_LOCAL_WRITE : 0;
	enum xr_wc_status st = xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, need);

	if (st != XR_WC_SUCCESS)
		return st;
	if (xr_wr_is_atomic(w->opcode))
		w->npkts = 1;
	else
		w->npkts = w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1;
	/* Self-placing once the responder showed it speaks selective repeat. */
	w->sr = qp->sr_peer && qp->pub.qp_type == XR_QPT_RC &&
		(xr_wr(w->opcode)->flags & (XR_WRF_DATA | XR_WRF_REMOTE)) ==
		    (XR_WRF_DATA | XR_WRF_REMOTE);
	w->first_psn = qp->snd_psn;
	w->last_psn = xr_psn_add(qp->snd_psn, w->npkts - 1);
	qp->snd_psn = xr_psn_add(qp->snd_psn, w->npkts);
	xr_xdp_publish_next_psn(qp);
	w->psn_assigned = true;
	if (xr_wr_is_read_atomic(w->opcode))
		qp->rd_outstanding++;
	return XR_WC_SUCCESS;
}

/*
 * PSNs past the acknowledged one the requester may have sent: the
 * congestion window, and with selective repeat no more than the responder
 * holds out of order.
 */
static uint32_t send_window(const struct xr_qp_impl *qp)
{
	return qp->sr_peer && qp->cwnd >= XR_SR_WINDOW ? XR_SR_WINDOW - 1 : qp->cwnd;
}

/*
 * Whether the packet with this PSN asks for an ACK: the last of a message,
 * the last the congestion window or the core's window allows (else nothing
 * would ever answer and only the timer could open it again), and every so
 * often in between, so that ACKs clock the window open at a quarter of it
 * or every 64 packets.
 */
static bool ack_due(const struct xr_qp_impl *qp, uint32_t psn, bool last)
{
	uint32_t interval = XR_ACKREQ_INTERVAL;

	if (last || xr_psn_diff(psn, qp->acked_psn) >= (int32_t)send_window(qp) ||
	    qp->core->in_flight + 1 >= XR_CORE_WINDOW)
		return true;
	while (interval > 1 && interval > send_window(qp) / 4)
		interval >>= 1;
	return (psn & (interval - 1)) == interval - 1;
}

/*
 * Sends packet pkt of w; for a READ, the request for packets pkt.. of the
 * response. now: when, for the round-trip estimate (0: not to be timed).
 * probe: asks for an ACK whatever its place.
 */
static bool send_packet(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t pkt, uint64_t now,
			bool probe)
{
	uint32_t off = pkt * qp->mtu;
	bool is_read = xr_wr(w->opcode)->flags & XR_WRF_READ;
	uint32_t len = w->length - off < qp->mtu ? w->length - off : qp->mtu;
	bool last = is_read || pkt + 1 == w->npkts;
	bool uc = qp->pub.qp_type == XR_QPT_UC;
	uint8_t opcode = request_opcode(w, pkt);
	struct xr_bth_fields bth = {
	    /* UC's opcodes are RC's in the UC transport's range; nothing acknowledges them. */
	    .opcode = uc      ? (uint8_t)(opcode | XR_TRANSPORT_UC)
		      : w->sr ? XR_SR_OPCODE(opcode)
			      : opcode,
	    .se = last && (w->send_flags & XR_SEND_SOLICITED),
	    .ackreq = !uc && (probe || ack_due(qp, xr_psn_add(w->first_psn, pkt), last)),
	    .sr_capable = !uc && (qp->core->caps & XR_DEVICE_SELECTIVE_REPEAT),
	    .sr_heard = qp->sr_peer,
	    .dqpn = qp->dest_qpn,
	    .psn = xr_psn_add(w->first_psn, pkt),
	};
	const struct xr_opinfo *oi = &xr_opinfo[bth.opcode];
	struct xr_pkt_out out;

	if (is_read || !(oi->flags & XR_OPF_PAYLOAD))
		len = 0;
	if (!xr_core_frame_begin(qp->core, qp, &bth, len, &out))
		return false;
	if (oi->flags & XR_OPF_RETH) {
		uint8_t *h = out.bth + xr_reth_off(oi->flags);

		/* A self-placing packet carries its message's RETH and its offset (PLETH). */
		put64(h, w->remote_addr + (w->sr ? 0 : off));
		xr_put32(h + 8, w->rkey);
		xr_put32(h + 12, is_read ? w->length - off : w->length);
	}
	if (oi->flags & XR_OPF_PLETH)
		xr_put32(out.bth + xr_pleth_off(oi->flags), off);
	if (oi->flags & XR_OPF_ATMETH) {
		uint8_t *h = out.bth + xr_atmeth_off(oi->flags);
		put64(h, w->remote_addr);
		xr_put32(h + 8, w->rkey);
		put64(h + 12, w->opcode == XR_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add);
		put64(h + 20, w->opcode == XR_WR_ATOMIC_CMP_AND_SWP ? w->compare_add : 0);
	}
	if (oi->flags & XR_OPF_MATMETH) {
		bool cas = w->opcode == XR_WR_MASKED_ATOMIC_CMP_AND_SWP;
		uint8_t *h = out.bth + xr_atmeth_off(oi->flags);

		put64(h, w->remote_addr);
		xr_put32(h + 8, w->rkey);
		put64(h + 12, cas ? w->swap : w->compare_add);
		put64(h + 20, cas ? w->compare_add : 0);
		put64(h + 28, cas ? w->swap_mask : w->compare_add_mask);
		put64(h + 36, cas ? w->compare_add_mask : 0);
	}
	if (oi->flags & XR_OPF_IMMDT)
		memcpy(out.bth + xr_immdt_off(oi->flags), &w->imm_be, 4);
	if (oi->flags & XR_OPF_IETH)
		xr_put32(out.bth + xr_ieth_off(oi->flags), w->invalidate_rkey);
	if (len) {
		if (w->is_inline)
			xr_pkt_put_payload(&out, 0, w->inline_data + off, len);
		else
			xr_sgl_copy_out(qp->core, w->sge, w->num_sge, off, &out, len);
	}
	xr_core_frame_send(qp->core, qp, &out);
	xr_dcqcn_sent(qp, out.frame_len, qp->core->now);
	if (!uc) {
		bool fresh = xr_psn_diff(bth.psn, qp->tx_new_psn) >= 0;

		xr_rtt_sent(qp, bth.psn, bth.ackreq, fresh, now);
		xr_sr_sent(qp, bth.psn, fresh);
		if (fresh)
			qp->tx_new_psn = xr_psn_add(is_read ? w->last_psn : bth.psn, 1);
	}
	return true;
}

static bool is_read_wqe(const struct xr_swqe *w)
{
	return xr_wr(w->opcode)->flags & XR_WRF_READ;
}

/* Whether w may start now: initiator depth, and fences behind READs/atomics. */
static bool may_start(const struct xr_qp_impl *qp, const struct xr_swqe *w)
{
	uint32_t depth = qp->max_rd_atomic ? qp->max_rd_atomic : 1;

	if (xr_wr_is_read_atomic(w->opcode) && qp->rd_outstanding >= depth)
		return false;
	if ((w->send_flags & XR_SEND_FENCE) && qp->rd_outstanding)
		return false;
	return true;
}

/* Whether every WQE before tx_idx has completed: a local operation waits for that. */
static bool earlier_done(struct xr_qp_impl *qp)
{
	for (uint32_t i = qp->sq_tail; i != qp->tx_idx; i++)
		if (xr_sq_at(qp, i)->state != XR_SWQE_DONE)
			return false;
	return true;
}

/*
 * Runs the local operation w at tx_idx once everything before it completed,
 * so that it never overtakes an earlier use of the key it changes (a
 * retransmission reads its gather list again); later WQEs wait behind it.
 * Returns false when w must wait or failed (then the QP is in ERR).
 */
static bool run_local(struct xr_qp_impl *qp, struct xr_swqe *w)
{
	enum xr_wc_status st;

	if (!earlier_done(qp))
		return false;
	st = xr_core_exec_local(qp, w);
	xr_swqe_complete(w, st);
	qp->tx_idx++;
	qp->tx_pkt = 0;
	xr_qp_retire_sends(qp);
	if (st != XR_WC_SUCCESS) {
		xr_qp_to_error(qp);
		return false;
	}
	return true;
}

/* Moves the transmit position past the packet at it (a READ's request: past the READ). */
static void skip_packet(struct xr_qp_impl *qp, const struct xr_swqe *w)
{
	if (is_read_wqe(w)) {
		/* One request covers every response PSN left in the READ. */
		qp->tx_psn = xr_psn_add(w->last_psn, 1);
		qp->tx_pkt = w->npkts;
	} else {
		qp->tx_psn = xr_psn_add(qp->tx_psn, 1);
		qp->tx_pkt++;
	}
	if (qp->tx_pkt == w->npkts) {
		qp->tx_idx++;
		qp->tx_pkt = 0;
	}
}

int xr_requester_run(struct xr_qp_impl *qp, uint64_t now, int budget)
{
	int sent = 0;

	qp->window_blocked = false;
	qp->pace_blocked = false;
	if ((qp->pub.state != XR_QPS_RTS && qp->pub.state != XR_QPS_SQD) || qp->rnr_deadline)
		return 0;
	/* What a SACK showed lost goes first: the responder holds what follows it. */
	sent = xr_sr_resend_lost(qp, budget);
	while (qp->tx_idx != qp->sq_head && sent < budget) {
		struct xr_swqe *w = xr_sq_at(qp, qp->tx_idx);

		/* Draining: what was begun goes on, nothing new begins. */
		if (qp->pub.state == XR_QPS_SQD && !w->psn_assigned)
			break;
		if (xr_wr(w->opcode)->flags & XR_WRF_LOCAL) {
			if (!run_local(qp, w))
				break;
			continue;
		}
		if (!w->psn_assigned) {
			enum xr_wc_status st;

			if (!may_start(qp, w))
				break;
			st = start_wqe(qp, w);
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
		if (xr_psn_diff(qp->tx_psn, qp->acked_psn) > (int32_t)send_window(qp))
			break;
		/* Gone back over packets the responder holds (a timeout): those stay. */
		if (!is_read_wqe(w) && xr_psn_diff(qp->tx_psn, qp->tx_new_psn) < 0 &&
		    xr_sr_sacked(qp, qp->tx_psn)) {
			skip_packet(qp, w);
			continue;
		}
		if (!xr_core_window_left(qp)) {
			qp->window_blocked = true;
			break;
		}
		if (!xr_dcqcn_may_send(qp, now))
			break;
		/* Again for every packet: an MR can be deregistered while its WQE is sent. */
		if (qp->tx_pkt && xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, 0) !=
				      XR_WC_SUCCESS) {
			xr_swqe_complete(w, XR_WC_LOC_PROT_ERR);
			xr_qp_retire_sends(qp);
			xr_qp_to_error(qp);
			return sent;
		}
		if (!send_packet(qp, w, qp->tx_pkt, now, false))
			break;
		sent++;
		if (!qp->retry_deadline)
			qp->retry_deadline = now + xr_qp_ack_timeout_ns(qp);
		skip_packet(qp, w);
	}
	/* The probe waits from the last packet sent; every one of this run went at now. */
	if (sent)
		xr_completer_arm_probe(qp, now);
	return sent;
}

void xr_requester_resend_read_atomic(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t psn)
{
	if (send_packet(qp, w, (uint32_t)xr_psn_diff(psn, w->first_psn), 0, false))
		qp->cnt.retransmits++, qp->core->stats.retransmits++;
}

/* The started WQE whose PSNs hold psn, and its place in the send queue; NULL if none. */
static struct xr_swqe *wqe_holding(struct xr_qp_impl *qp, uint32_t psn, uint32_t *idx)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		/* Done local operations have no PSNs: step over them. */
		if (w->state == XR_SWQE_DONE)
			continue;
		if (!w->psn_assigned)
			break;
		if (xr_psn_diff(psn, w->first_psn) >= 0 && xr_psn_diff(psn, w->last_psn) <= 0) {
			*idx = i;
			return w;
		}
	}
	return NULL;
}

bool xr_requester_resend(struct xr_qp_impl *qp, struct xr_swqe *w, uint32_t psn)
{
	/* Its gather list is read again: the MR may have gone meanwhile. */
	if (xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, 0) != XR_WC_SUCCESS)
		return false;
	return send_packet(qp, w, (uint32_t)xr_psn_diff(psn, w->first_psn), 0, true);
}

bool xr_requester_probe(struct xr_qp_impl *qp, uint32_t psn)
{
	uint32_t idx;
	struct xr_swqe *w = wqe_holding(qp, psn, &idx);

	return w && xr_requester_resend(qp, w, psn);
}

void xr_requester_rewind(struct xr_qp_impl *qp, uint32_t psn)
{
	uint32_t idx;
	struct xr_swqe *w = wqe_holding(qp, psn, &idx);

	if (!w)
		return;
	qp->tx_idx = idx;
	qp->tx_pkt = xr_psn_diff(psn, w->first_psn);
	qp->tx_psn = psn;
	qp->cnt.retransmits++, qp->core->stats.retransmits++;
}

int xr_uc_run(struct xr_qp_impl *qp, int budget)
{
	int sent = 0;

	qp->pace_blocked = false;
	if (qp->pub.state != XR_QPS_RTS && qp->pub.state != XR_QPS_SQD)
		return 0;
	while (qp->tx_idx != qp->sq_head && sent < budget) {
		struct xr_swqe *w = xr_sq_at(qp, qp->tx_idx);
		enum xr_wc_status st = XR_WC_SUCCESS;

		/* Draining: a message begun is sent whole, nothing new begins. */
		if (qp->pub.state == XR_QPS_SQD && !w->psn_assigned)
			break;
		if (!w->psn_assigned) {
			st = start_wqe(qp, w);
			qp->tx_pkt = 0;
		} else if (qp->tx_pkt) {
			/* Again for every packet: an MR can be deregistered while it is sent. */
			st = xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, 0);
		}
		if (st != XR_WC_SUCCESS) {
			xr_swqe_complete(w, st);
			qp->tx_idx++;
			xr_qp_retire_sends(qp);
			xr_qp_to_error(qp);
			return sent;
		}
		if (!xr_dcqcn_may_send(qp, qp->core->now))
			break;
		if (!send_packet(qp, w, qp->tx_pkt, 0, false))
			break; /* no transmit buffer now: the next round goes on from here */
		sent++;
		if (++qp->tx_pkt == w->npkts) {
			/* Unreliable: a message is complete once its last packet left. */
			xr_swqe_complete(w, XR_WC_SUCCESS);
			qp->tx_idx++;
			qp->tx_pkt = 0;
		}
	}
	xr_qp_retire_sends(qp);
	return sent;
}
