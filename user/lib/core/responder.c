/* SPDX-License-Identifier: MIT */
/*
 * The responder: checks each request's PSN against the expected PSN,
 * places SEND payloads into receive WQEs and WRITE payloads into memory
 * regions, executes atomics, answers READs, and sends ACKs, RNR NAKs and
 * NAKs as rxe does. READ and atomic results live in responder resources so
 * a duplicate request is replayed, never executed twice.
 */
#include <string.h>

#include "core.h"

/*
 * ACKs wait for the end of the receive batch, so a burst of requests asking
 * for one costs one ACK of the newest; everything acknowledged is placed.
 */
static void queue_ack(struct xr_qp_impl *qp, uint32_t psn)
{
	qp->ack_pending = true;
	qp->ack_psn = psn;
}

/* Sends a NAK (XR_NAK_* code) and counts it by kind. */
static void send_nak(struct xr_qp_impl *qp, uint8_t code, uint32_t psn)
{
	if (!xr_core_send_ack(qp->core, qp, XR_AETH_NAK | code, psn))
		return;
	switch (code) {
	case XR_NAK_PSN_SEQ_ERR:
		qp->cnt.seq_naks_tx++, qp->core->stats.seq_naks_tx++;
		break;
	case XR_NAK_INVALID_REQUEST:
		qp->cnt.inv_req_naks_tx++, qp->core->stats.inv_req_naks_tx++;
		break;
	case XR_NAK_REMOTE_ACCESS_ERR:
		qp->cnt.rem_access_naks_tx++, qp->core->stats.rem_access_naks_tx++;
		break;
	case XR_NAK_REMOTE_OP_ERR:
		qp->cnt.rem_op_naks_tx++, qp->core->stats.rem_op_naks_tx++;
		break;
	}
}

/* A fatal request error: NAK it, complete the receive in progress, go to ERR. */
static void fatal(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint8_t nak,
		  enum xr_wc_status recv_status)
{
	if (recv_status != XR_WC_SUCCESS && xr_recv_ready(qp) && xr_cq_full(qp->rcq)) {
		/* No room to report it now: the flush in ERR reports it first, with this status. */
		xr_recv_wqe(qp);
		qp->recv_error = recv_status;
	} else if (recv_status != XR_WC_SUCCESS && xr_recv_ready(qp)) {
		struct xr_rwqe *r = xr_recv_wqe(qp);
		struct xr_wc wc = {.wr_id = r->wr_id,
				   .status = recv_status,
				   .opcode = XR_WC_RECV,
				   .qp_num = qp->pub.qp_num,
				   .src_qp = qp->dest_qpn};

		xr_cq_push(qp->rcq, &wc, false);
		xr_recv_consumed(qp);
	}
	send_nak(qp, nak, pkt->psn);
	xr_qp_to_error(qp);
}

void xr_recv_finish(struct xr_qp_impl *qp, enum xr_wc_opcode opcode, uint32_t byte_len,
		    unsigned int wc_flags, uint32_t imm_or_rkey, bool solicited)
{
	struct xr_rwqe *r = xr_recv_wqe(qp);
	struct xr_wc wc = {.wr_id = r->wr_id,
			   .status = XR_WC_SUCCESS,
			   .opcode = opcode,
			   .byte_len = byte_len,
			   .qp_num = qp->pub.qp_num,
			   .src_qp = qp->dest_qpn,
			   .wc_flags = wc_flags};

	if (wc_flags & XR_WC_WITH_IMM)
		wc.imm_data = imm_or_rkey;
	else if (wc_flags & XR_WC_WITH_INV)
		wc.invalidated_rkey = imm_or_rkey;
	xr_cq_push(qp->rcq, &wc, solicited);
	xr_recv_consumed(qp);
	qp->recv_active = false;
}

void xr_recv_complete(struct xr_qp_impl *qp, const struct xr_pkt *pkt, enum xr_wc_opcode opcode,
		      uint32_t byte_len)
{
	if (pkt->opflags & XR_OPF_IMMDT)
		xr_recv_finish(qp, opcode, byte_len, XR_WC_WITH_IMM, pkt->imm_be, pkt->se);
	else if (pkt->opflags & XR_OPF_IETH)
		xr_recv_finish(qp, opcode, byte_len, XR_WC_WITH_INV, pkt->ieth_rkey, pkt->se);
	else
		xr_recv_finish(qp, opcode, byte_len, 0, 0, pkt->se);
}

void xr_responder_fatal(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint8_t nak)
{
	fatal(qp, pkt, nak, XR_WC_SUCCESS);
}

void xr_responder_rnr_nak(struct xr_qp_impl *qp, uint32_t psn)
{
	xr_core_send_ack(qp->core, qp, XR_AETH_RNR_NAK | qp->min_rnr_timer, psn);
	qp->cnt.rnr_naks_tx++, qp->core->stats.rnr_naks_tx++;
}

/* Returns false when the packet was answered with an RNR NAK or a fatal NAK. */
static bool handle_send(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	struct xr_rwqe *r;

	if (f & XR_OPF_FIRST) {
		/* A new message while another is under way, SEND or WRITE, breaks the sequence. */
		if (qp->recv_active || qp->write_active) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		if (!xr_recv_ready(qp) || xr_cq_full(qp->rcq)) {
			xr_responder_rnr_nak(qp, pkt->psn);
			return false;
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
	r = xr_recv_wqe(qp);
	if (pkt->payload_len > r->length - qp->recv_off ||
	    pkt->payload_len > XR_MAX_MSG_SZ - qp->recv_off) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_LOC_LEN_ERR);
		return false;
	}
	/* No room to report the message: RNR, and the LAST packet comes again. */
	if ((f & XR_OPF_LAST) && xr_cq_full(qp->rcq)) {
		xr_responder_rnr_nak(qp, pkt->psn);
		return false;
	}
	/* Checked for every packet: an MR can be deregistered in the middle of a message. */
	if (xr_core_check_sgl(qp->core, qp->pub.pd, r->sge, r->num_sge, XR_ACCESS_LOCAL_WRITE) !=
	    XR_WC_SUCCESS) {
		fatal(qp, pkt, XR_NAK_REMOTE_OP_ERR, XR_WC_LOC_PROT_ERR);
		return false;
	}
	/*
	 * SEND with invalidate: a key that may not be invalidated through this
	 * QP fails the message at both ends: the receive with REM_INV_REQ_ERR
	 * (as rxe), the sender by an invalid request NAK (rxe 6.1 ACKs instead,
	 * leaving its sender unaware; tests/interop/mw.sh records both).
	 */
	if ((f & XR_OPF_IETH) && xr_core_invalidate_rkey(qp, pkt->ieth_rkey)) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_REM_INV_REQ_ERR);
		return false;
	}
	xr_sgl_copy_in(qp->core, r->sge, r->num_sge, qp->recv_off, pkt->payload, pkt->payload_len);
	qp->recv_off += pkt->payload_len;
	if (f & XR_OPF_LAST) {
		xr_recv_complete(qp, pkt, XR_WC_RECV, qp->recv_off);
		qp->msn = (qp->msn + 1) & 0xffffff;
	}
	return true;
}

static bool handle_write(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	struct xr_mr_impl *mr = NULL;

	if (f & XR_OPF_FIRST) {
		if (qp->write_active || qp->recv_active || pkt->reth_len > XR_MAX_MSG_SZ) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		if (pkt->reth_len && !xr_core_resolve_rkey(qp, pkt->reth_rkey, pkt->reth_va,
							   pkt->reth_len, XR_ACCESS_REMOTE_WRITE)) {
			fatal(qp, pkt, XR_NAK_REMOTE_ACCESS_ERR, XR_WC_SUCCESS);
			return false;
		}
		qp->write_active = true;
		qp->write_va = pkt->reth_va;
		qp->write_rkey = pkt->reth_rkey;
		qp->write_left = qp->write_total = pkt->reth_len;
	} else if (!qp->write_active) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return false;
	}
	/* WRITE with immediate needs a receive WQE: RNR before anything is placed. */
	if ((f & XR_OPF_RECV_WQE) && (!xr_recv_ready(qp) || xr_cq_full(qp->rcq))) {
		if (f & XR_OPF_FIRST)
			qp->write_active = false;
		xr_responder_rnr_nak(qp, pkt->psn);
		return false;
	}
	if ((!(f & XR_OPF_LAST) && pkt->payload_len != qp->mtu) || pkt->payload_len > qp->mtu ||
	    pkt->payload_len > qp->write_left ||
	    ((f & XR_OPF_LAST) && pkt->payload_len != qp->write_left)) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return false;
	}
	/* Again for every packet: the key may have been invalidated or rebound since. */
	if (pkt->payload_len) {
		mr = xr_core_resolve_rkey(qp, qp->write_rkey, qp->write_va, pkt->payload_len,
					  XR_ACCESS_REMOTE_WRITE);
		if (!mr) {
			fatal(qp, pkt, XR_NAK_REMOTE_ACCESS_ERR, XR_WC_SUCCESS);
			return false;
		}
		xr_mr_copy_in(mr, qp->write_va, pkt->payload, pkt->payload_len);
	}
	qp->write_va += pkt->payload_len;
	qp->write_left -= pkt->payload_len;
	if (f & XR_OPF_LAST) {
		qp->write_active = false;
		if (f & XR_OPF_RECV_WQE)
			xr_recv_complete(qp, pkt, XR_WC_RECV_RDMA_WITH_IMM, qp->write_total);
		qp->msn = (qp->msn + 1) & 0xffffff;
	}
	return true;
}

/*
 * Responses a QP sends per engine round, READ data and atomic ACKs, new or
 * replayed: enough to keep one READ streaming (a round takes microseconds),
 * small against the transmit ring (2048 frames) so that one QP's 1 GiB READ
 * or replay storm leaves buffers to the QPs after it in the round.
 */
#define XR_RESPONDER_ROUND_FRAMES 64

/* Whether some of res's responses have still to go out. */
static bool sending(const struct xr_rd_resource *res)
{
	return res->valid && xr_psn_diff(res->next_psn, res->last_psn) <= 0;
}

/*
 * The resource a new READ or atomic takes: the oldest one, NULL when its
 * first responses are still going out. A requester keeps at most
 * max_dest_rd_atomic outstanding and completes them in order, so it has the
 * oldest one's responses before it sends another: otherwise it exceeds the
 * responder resources. A replay of the oldest one still under way is of no
 * use to it any more and stops here; its frames sent so far stay whole.
 */
static struct xr_rd_resource *free_resource(struct xr_qp_impl *qp)
{
	struct xr_rd_resource *res = &qp->rd_res[qp->rd_res_next % qp->max_dest_rd_atomic];

	return sending(res) && !res->replayed ? NULL : res;
}

static struct xr_rd_resource *take_resource(struct xr_qp_impl *qp)
{
	struct xr_rd_resource *res = &qp->rd_res[qp->rd_res_next % qp->max_dest_rd_atomic];

	qp->rd_res_next = (qp->rd_res_next + 1) % qp->max_dest_rd_atomic;
	memset(res, 0, sizeof(*res));
	return res;
}

/* Accepts a READ or atomic request; send_responses sends its responses. */
static bool handle_read_atomic(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	struct xr_rd_resource *res;
	struct xr_mr_impl *mr;

	/* Beyond the responder resources (none at all with max_dest_rd_atomic 0), as rxe. */
	if (qp->recv_active || qp->write_active || !qp->max_dest_rd_atomic || !free_resource(qp)) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return false;
	}
	if (pkt->opflags & XR_OPF_READ) {
		if (pkt->reth_len > XR_MAX_MSG_SZ) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		if (pkt->reth_len && !xr_core_resolve_rkey(qp, pkt->reth_rkey, pkt->reth_va,
							   pkt->reth_len, XR_ACCESS_REMOTE_READ)) {
			fatal(qp, pkt, XR_NAK_REMOTE_ACCESS_ERR, XR_WC_SUCCESS);
			return false;
		}
		res = take_resource(qp);
		res->va = pkt->reth_va;
		res->rkey = pkt->reth_rkey;
		res->length = pkt->reth_len;
		res->first_psn = pkt->psn;
		res->last_psn =
		    xr_psn_add(pkt->psn, pkt->reth_len ? (pkt->reth_len - 1) / qp->mtu : 0);
	} else {
		if ((pkt->opflags & XR_OPF_MATMETH) &&
		    !(qp->core->caps & XR_DEVICE_MASKED_ATOMICS)) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		if (pkt->atm_va & 7) {
			fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
			return false;
		}
		mr = xr_core_resolve_rkey(qp, pkt->atm_rkey, pkt->atm_va, 8,
					  XR_ACCESS_REMOTE_ATOMIC);
		if (!mr) {
			fatal(qp, pkt, XR_NAK_REMOTE_ACCESS_ERR, XR_WC_SUCCESS);
			return false;
		}
		res = take_resource(qp);
		res->atomic = true;
		res->orig = xr_atomic_execute(xr_mr_u64(mr, pkt->atm_va), pkt);
		res->first_psn = res->last_psn = pkt->psn;
	}
	res->next_psn = res->first_psn;
	res->syndrome = XR_AETH_ACK | XR_AETH_ACK_UNLIMITED;
	res->valid = true;
	qp->msn = (qp->msn + 1) & 0xffffff;
	/* The responses occupy the request's PSN and those after it; the caller steps past. */
	qp->epsn = res->last_psn;
	return true;
}

/* Sends the next response of res; false when no transmit buffer was free. */
static bool send_response(struct xr_qp_impl *qp, struct xr_rd_resource *res)
{
	uint32_t n = (uint32_t)xr_psn_diff(res->next_psn, res->first_psn);
	uint32_t npkts = (uint32_t)xr_psn_diff(res->last_psn, res->first_psn) + 1;
	uint32_t off = n * qp->mtu, len = 0;
	struct xr_bth_fields bth = {.dqpn = qp->dest_qpn, .psn = res->next_psn};
	struct xr_mr_impl *mr = NULL;
	struct xr_pkt_out out;
	uint8_t *aeth;

	if (res->atomic) {
		bth.opcode = XR_OP_RC_ATOMIC_ACK;
	} else {
		len = res->length - off < qp->mtu ? res->length - off : qp->mtu;
		if (npkts == 1)
			bth.opcode = XR_OP_RC_READ_RESPONSE_ONLY;
		else if (n == 0)
			bth.opcode = XR_OP_RC_READ_RESPONSE_FIRST;
		else if (n + 1 == npkts)
			bth.opcode = XR_OP_RC_READ_RESPONSE_LAST;
		else
			bth.opcode = XR_OP_RC_READ_RESPONSE_MIDDLE;
	}
	if (len && !(mr = xr_core_resolve_rkey(qp, res->rkey, res->va + off, len,
					       XR_ACCESS_REMOTE_READ))) {
		/* The key went away after the READ was accepted: nothing is read through it. */
		res->valid = false;
		send_nak(qp, XR_NAK_REMOTE_ACCESS_ERR, res->next_psn);
		xr_qp_to_error(qp);
		return false;
	}
	if (!xr_core_frame_begin(qp->core, qp, &bth, len, &out))
		return false;
	if (xr_opinfo[bth.opcode].flags & XR_OPF_AETH) {
		aeth = out.ext;
		xr_put32(aeth, (uint32_t)res->syndrome << 24 | qp->msn);
	}
	if (res->atomic) {
		uint8_t *h = out.bth + xr_atmack_off(xr_opinfo[bth.opcode].flags);
		xr_put32(h, (uint32_t)(res->orig >> 32));
		xr_put32(h + 4, (uint32_t)res->orig);
	} else if (len) {
		xr_mr_copy_out(mr, res->va + off, &out, 0, len);
	}
	xr_core_frame_send(qp->core, qp, &out);
	res->next_psn = xr_psn_add(res->next_psn, 1);
	return true;
}

/*
 * Sends responses while this round's budget lasts, oldest resource first:
 * the requester takes them in PSN order. Called as soon as a request asks
 * for them, so that they leave ahead of any NAK or ACK of a later PSN, which
 * would make the requester ask for them again.
 */
static void send_responses(struct xr_qp_impl *qp)
{
	for (uint32_t k = 0; k < qp->max_dest_rd_atomic; k++) {
		struct xr_rd_resource *res =
		    &qp->rd_res[(qp->rd_res_next + k) % qp->max_dest_rd_atomic];

		while (sending(res)) {
			if (qp->rd_res_frames_round == XR_RESPONDER_ROUND_FRAMES ||
			    !send_response(qp, res))
				return;
			qp->rd_res_frames_round++;
		}
	}
}

/* Whether responses that never went out yet are waiting: an ACK now would overtake them. */
static bool first_responses_pending(const struct xr_qp_impl *qp)
{
	for (uint32_t i = 0; i < qp->max_dest_rd_atomic; i++)
		if (sending(&qp->rd_res[i]) && !qp->rd_res[i].replayed)
			return true;
	return false;
}

bool xr_responder_pending(const struct xr_qp_impl *qp)
{
	for (uint32_t i = 0; i < qp->max_dest_rd_atomic; i++)
		if (sending(&qp->rd_res[i]))
			return true;
	return false;
}

/*
 * The answer a receive batch earned. A requester that speaks selective
 * repeat gets a SACK while packets are held past a hole (it names them),
 * and until it shows it heard one (XR_BTH_SR_HEARD): a SACK is how it
 * learns we speak it too. Otherwise a plain ACK, which XDP absorbs at the
 * other end.
 */
static bool send_ack_or_sack(struct xr_qp_impl *qp)
{
	if (qp->sr_requester && (qp->sr_held || !qp->sr_heard))
		return xr_sr_send_sack(qp);
	return !qp->ack_pending ||
	       xr_core_send_ack(qp->core, qp, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, qp->ack_psn);
}

void xr_responder_run(struct xr_qp_impl *qp)
{
	send_responses(qp);
	if ((qp->ack_pending || qp->sack_due) && !first_responses_pending(qp) &&
	    send_ack_or_sack(qp))
		qp->ack_pending = qp->sack_due = false;
	/* Called once per engine round: the next one has a new budget and may replay again. */
	qp->rd_res_frames_round = 0;
	for (uint32_t i = 0; i < qp->max_dest_rd_atomic; i++)
		qp->rd_res[i].replayed_this_round = false;
}

/*
 * A duplicate READ or atomic: its saved response is sent again from its
 * PSN. Not while a replay of it is under way or after one in this round,
 * nor for responses still to go out anyway: the requester asks again if it
 * still misses them, and a storm of duplicates costs no more than one.
 */
static void replay(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	for (uint32_t i = 0; i < qp->max_dest_rd_atomic; i++) {
		struct xr_rd_resource *res = &qp->rd_res[i];

		if (!res->valid || xr_psn_diff(pkt->psn, res->first_psn) < 0 ||
		    xr_psn_diff(pkt->psn, res->last_psn) > 0)
			continue;
		if (res->atomic != !!(pkt->opflags & XR_OPF_ATOMIC))
			return;
		if (res->replayed_this_round ||
		    (sending(res) &&
		     (res->replayed || xr_psn_diff(pkt->psn, res->next_psn) >= 0))) {
			qp->core->stats.rx_dup_deferred++;
			return;
		}
		res->next_psn = pkt->psn;
		res->replayed = res->replayed_this_round = true;
		send_responses(qp);
		return;
	}
}

/*
 * Selective repeat's part of a request: the requester's offer, and whether
 * a self-placing packet may come at all. false: the QP failed.
 */
static bool take_sr(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	if (pkt->sr_capable && !qp->sr_requester)
		xr_sr_rx_enable(qp);
	if (pkt->sr_heard && qp->sr_requester)
		qp->sr_heard = true;
	if (!(pkt->opflags & XR_OPF_PLETH))
		return true;
	/* Only from a requester that offered it: any other gets what a standard responder gives. */
	if (!qp->sr_requester) {
		fatal(qp, pkt, XR_NAK_INVALID_REQUEST, XR_WC_SUCCESS);
		return false;
	}
	return true;
}

void xr_responder_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	int32_t d = xr_psn_diff(pkt->psn, qp->epsn);

	(void)now;
	if (!take_sr(qp, pkt))
		return;
	if (d > 0) {
		/* Held out of order when it can be placed; the SACK names the gaps. */
		if (qp->sr_requester && (qp->sr_held || (pkt->opflags & XR_OPF_PLETH))) {
			xr_sr_rx_ahead(qp, pkt, d);
			return;
		}
		/* Out of sequence: one NAK per gap, the rest dropped silently. */
		if (!qp->nak_sent) {
			send_nak(qp, XR_NAK_PSN_SEQ_ERR, qp->epsn);
			qp->nak_sent = true;
		}
		return;
	}
	if (d < 0) {
		qp->cnt.dup_requests++, qp->core->stats.dup_requests++;
		if (pkt->opflags & (XR_OPF_READ | XR_OPF_ATOMIC)) {
			replay(qp, pkt);
			return;
		}
		/* A duplicate SEND/WRITE: already placed; re-acknowledge what we have. */
		queue_ack(qp, xr_psn_add(qp->epsn, XR_PSN_MASK));
		return;
	}
	qp->nak_sent = false;
	if (pkt->opflags & XR_OPF_PLETH) {
		if (xr_sr_rx_in_order(qp, pkt))
			xr_sr_commit(qp);
		return;
	}
	if (pkt->opflags & (XR_OPF_READ | XR_OPF_ATOMIC)) {
		if (!handle_read_atomic(qp, pkt))
			return;
		qp->epsn = xr_psn_add(qp->epsn, 1);
		xr_sr_rx_skipped(qp, pkt->psn, qp->epsn);
		xr_sr_commit(qp);
		xr_xdp_publish_committed(qp);
		send_responses(qp);
		return;
	}
	if (!((pkt->opflags & XR_OPF_SEND) ? handle_send(qp, pkt) : handle_write(qp, pkt)))
		return;
	qp->epsn = xr_psn_add(qp->epsn, 1);
	if (pkt->ackreq)
		queue_ack(qp, pkt->psn);
	xr_sr_commit(qp);
	xr_xdp_publish_committed(qp);
}
