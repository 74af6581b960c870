/* SPDX-License-Identifier: MIT */
/*
 * The completer: consumes ACKs and NAKs, completes send WQEs in order, and
 * runs the two retry flows: the local ACK timeout (retry_cnt) and RNR NAKs
 * (rnr_retry, 7 = forever).
 */
#include <string.h>

#include "core.h"

static bool outstanding(const struct xr_qp_impl *qp)
{
	return xr_psn_diff(qp->snd_psn, xr_psn_add(qp->acked_psn, 1)) > 0;
}

/*
 * Whether psn is one a response may carry: from the oldest unacknowledged
 * PSN to the last one sent, as the spec's requester checks responses.
 * Anything else answers no request of ours.
 */
static bool in_window(const struct xr_qp_impl *qp, uint32_t psn)
{
	return xr_psn_diff(psn, qp->acked_psn) > 0 && xr_psn_diff(psn, qp->snd_psn) < 0;
}

static void drop_ghost(struct xr_qp_impl *qp)
{
	qp->core->stats.rx_ghost_acks++;
}

static void drop_bad_response(struct xr_qp_impl *qp)
{
	qp->core->stats.rx_bad_response++;
}

static struct xr_swqe *wqe_of_psn(struct xr_qp_impl *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (!w->psn_assigned) {
			/* A done local operation has no PSNs; an unstarted WQE ends the search. */
			if (w->state == XR_SWQE_DONE)
				continue;
			break;
		}
		if (xr_psn_diff(psn, w->last_psn) <= 0)
			return w;
	}
	return NULL;
}

static void complete_wqe(struct xr_qp_impl *qp, struct xr_swqe *w, enum xr_wc_status st)
{
	if (w->state != XR_SWQE_DONE && xr_wr_is_read_atomic(w->opcode) && qp->rd_outstanding)
		qp->rd_outstanding--;
	xr_swqe_complete(w, st);
}

/* Fails the WQE holding psn with st: the QP moves to ERR and flushes the rest. */
static void fail_at(struct xr_qp_impl *qp, uint32_t psn, enum xr_wc_status st)
{
	struct xr_swqe *w = wqe_of_psn(qp, psn);

	if (!w && qp->sq_tail != qp->sq_head)
		w = xr_sq_at(qp, qp->sq_tail);
	if (w)
		complete_wqe(qp, w, st);
	xr_qp_retire_sends(qp);
	xr_qp_to_error(qp);
}

/*
 * How long the requester waits without an ACK before it probes: about two
 * round trips, doubled for every probe that went unanswered. 0: no probe
 * (no estimate yet, or the wait would reach the ACK timer, whose expiry
 * retransmits anyway).
 */
static uint64_t probe_wait(const struct xr_qp_impl *qp)
{
	uint64_t wait = 2 * qp->srtt_ns + 2 * qp->rttvar_ns;

	if (!qp->srtt_ns || qp->probe_backoff > XR_PROBE_MAX_BACKOFF)
		return 0;
	if (wait < XR_PROBE_MIN_NS)
		wait = XR_PROBE_MIN_NS;
	wait <<= qp->probe_backoff;
	return wait < xr_qp_ack_timeout_ns(qp) / 2 ? wait : 0;
}

void xr_completer_arm_probe(struct xr_qp_impl *qp, uint64_t now)
{
	uint64_t wait = probe_wait(qp);

	qp->probe_deadline = wait && outstanding(qp) ? now + wait : 0;
}

/*
 * A tail-loss probe: no ACK came for about two round trips, so the last
 * packets sent, or their ACKs, were probably lost, or a retransmission
 * was. Two packets go again, asking for an ACK: the first unacknowledged
 * one and the last one sent. Whatever the responder lacks, its answers
 * drive recovery as they do anywhere, and no ACK has to be guessed at:
 * - only ACKs were lost: both are duplicates, answered with an ACK of all;
 * - the last packets were lost: the last one sent is out of sequence and
 *   earns the NAK that nothing after the gap could;
 * - a retransmission, or the NAK of a gap, was lost: a go-back-N
 *   responder that sent its one NAK for the gap stays silent on anything
 *   out of sequence, but the first unacknowledged packet is in sequence
 *   (it takes it and ACKs), which opens the gap's NAK again for the last.
 * The ACK timer and retry_cnt are left alone: only their expiry counts.
 */
static void send_probe(struct xr_qp_impl *qp, uint64_t now)
{
	uint32_t first = xr_psn_add(qp->acked_psn, 1);
	uint32_t last = xr_psn_add(qp->tx_new_psn, XR_PSN_MASK);

	if (!xr_requester_probe(qp, first) ||
	    (xr_psn_diff(last, first) > 0 && !xr_requester_probe(qp, last))) {
		qp->probe_deadline = now + XR_PROBE_MIN_NS; /* no buffer: soon again */
		return;
	}
	qp->cnt.tail_probes++, qp->core->stats.tail_probes++;
	qp->probe_backoff++;
	xr_completer_arm_probe(qp, now);
}

/* After the acknowledged PSN advanced: retire, reset budgets, re-arm the timer. */
static void on_progress(struct xr_qp_impl *qp, uint64_t now)
{
	xr_qp_retire_sends(qp);
	xr_xdp_note_acked(qp);
	xr_rtt_acked(qp, now);
	/* The hint is only ever ahead of acked_psn; never let it go stale (PSNs wrap). */
	if (xr_psn_diff(qp->ack_hint, qp->acked_psn) < 0)
		qp->ack_hint = qp->acked_psn;
	qp->retry_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	qp->rd_resent = false;
	/* A rewind may have left tx behind what is now acknowledged. */
	if (xr_psn_diff(qp->tx_psn, qp->acked_psn) <= 0)
		xr_requester_rewind(qp, xr_psn_add(qp->acked_psn, 1));
	qp->retry_deadline = outstanding(qp) ? now + xr_qp_ack_timeout_ns(qp) : 0;
	qp->probe_backoff = 0;
	xr_completer_arm_probe(qp, now);
}

/*
 * Everything up to and including psn is acknowledged, except that an ACK
 * never completes a READ or atomic: those need their response, so the
 * acknowledged PSN stops in front of the first one still waiting, and the
 * rest of the ACK is kept (ack_hint) for when that response has come.
 * Only progress touches the retry budgets and the timer.
 */
static void ack_through(struct xr_qp_impl *qp, uint32_t psn, uint64_t now)
{
	uint32_t upto = psn;

	if (xr_psn_diff(psn, qp->acked_psn) <= 0)
		return; /* old or duplicate */
	if (xr_psn_diff(psn, qp->snd_psn) >= 0)
		return; /* acknowledges a PSN never sent: ignore */
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);

		if (w->state == XR_SWQE_DONE)
			continue;
		if (!w->psn_assigned || xr_psn_diff(w->first_psn, psn) > 0)
			break;
		if (xr_wr_is_read_atomic(w->opcode)) {
			upto = xr_psn_add(w->first_psn, XR_PSN_MASK);
			/*
			 * An ACK beyond a READ/atomic whose response is missing means
			 * the response (or its request) was lost: ask again at once,
			 * only for that request (the rest is acknowledged), rather than
			 * wait for the timer. Once per timer period and per progress,
			 * so a stream of later ACKs cannot turn into a storm.
			 */
			if (xr_psn_diff(psn, w->last_psn) > 0 && !qp->rd_resent) {
				qp->rd_resent = true;
				xr_requester_resend_read_atomic(
				    qp, w,
				    xr_psn_diff(qp->acked_psn, w->first_psn) >= 0
					? xr_psn_add(qp->acked_psn, 1)
					: w->first_psn);
			}
			if (xr_psn_diff(psn, qp->ack_hint) > 0)
				qp->ack_hint = psn;
			break;
		}
		if (xr_psn_diff(w->last_psn, psn) > 0)
			break;
		complete_wqe(qp, w, XR_WC_SUCCESS);
	}
	if (xr_psn_diff(upto, qp->acked_psn) <= 0)
		return;
	xr_cwnd_on_ack(qp, (uint32_t)xr_psn_diff(upto, qp->acked_psn));
	qp->acked_psn = upto;
	on_progress(qp, now);
}

/*
 * The opcode response n of a READ of npkts packets carries: FIRST,
 * MIDDLE.., LAST, or ONLY. A READ asked again from the middle is answered
 * in the original numbering (MIDDLE.., LAST), as rxe's responder and ours
 * replay it.
 */
static uint8_t read_response_opcode(uint32_t n, uint32_t npkts)
{
	if (npkts == 1)
		return XR_OP_RC_READ_RESPONSE_ONLY;
	if (n == 0)
		return XR_OP_RC_READ_RESPONSE_FIRST;
	return n + 1 == npkts ? XR_OP_RC_READ_RESPONSE_LAST : XR_OP_RC_READ_RESPONSE_MIDDLE;
}

/* Whether a response of this opcode fits w, the WQE whose PSNs hold psn. */
static bool response_fits(const struct xr_swqe *w, uint8_t opcode, uint32_t psn)
{
	if (opcode == XR_OP_RC_ATOMIC_ACK)
		return xr_wr_is_atomic(w->opcode);
	if (!(xr_wr(w->opcode)->flags & XR_WRF_READ))
		return false;
	return opcode == read_response_opcode((uint32_t)xr_psn_diff(psn, w->first_psn), w->npkts);
}

/*
 * A READ response packet or an atomic ACK. Only one of a request in
 * flight, of the kind and at the place in the sequence that request
 * expects, is believed; of those, only the next expected PSN is taken.
 */
static void read_atomic_response(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->psn;
	struct xr_swqe *w;

	if (!in_window(qp, psn)) {
		drop_ghost(qp);
		return;
	}
	w = wqe_of_psn(qp, psn);
	if (!w || w->state == XR_SWQE_DONE || xr_psn_diff(psn, w->first_psn) < 0 ||
	    !response_fits(w, pkt->opcode, psn)) {
		drop_bad_response(qp);
		return;
	}
	/* It implicitly acknowledges every request before it. */
	ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
	if (psn != xr_psn_add(qp->acked_psn, 1))
		return; /* a gap: the retransmit timer asks again from acked + 1 */
	/* The result lands in local memory: its MR must still be there. */
	if (xr_core_check_sgl(qp->core, qp->pub.pd, w->sge, w->num_sge, XR_ACCESS_LOCAL_WRITE) !=
	    XR_WC_SUCCESS) {
		fail_at(qp, psn, XR_WC_LOC_PROT_ERR);
		return;
	}
	if (pkt->opcode == XR_OP_RC_ATOMIC_ACK) {
		uint8_t orig[8];
		uint64_t v = pkt->atmack_orig;

		memcpy(orig, &v, 8); /* host order, as the verbs user reads it */
		xr_sgl_copy_in(qp->core, w->sge, w->num_sge, 0, orig, 8);
	} else {
		uint32_t off = (uint32_t)xr_psn_diff(psn, w->first_psn) * qp->mtu;
		uint32_t want = w->length - off < qp->mtu ? w->length - off : qp->mtu;

		/* Every response but the last is a full MTU. */
		if (pkt->payload_len != want) {
			fail_at(qp, psn, XR_WC_BAD_RESP_ERR);
			return;
		}
		xr_sgl_copy_in(qp->core, w->sge, w->num_sge, off, pkt->payload, pkt->payload_len);
	}
	xr_cwnd_on_ack(qp, 1);
	qp->acked_psn = psn;
	if (psn == w->last_psn) {
		/* READ with invalidate: the local MR goes once the data has landed in it. */
		if (w->opcode == XR_WR_RDMA_READ_WITH_INV &&
		    xr_core_invalidate_key(qp, w->invalidate_rkey)) {
			fail_at(qp, psn, XR_WC_LOC_QP_OP_ERR);
			return;
		}
		complete_wqe(qp, w, XR_WC_SUCCESS);
	}
	on_progress(qp, now);
	/* An ACK that arrived while this response was awaited covers what follows. */
	ack_through(qp, qp->ack_hint, now);
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

static void count_nak_received(struct xr_qp_impl *qp, uint8_t code)
{
	switch (code) {
	case XR_NAK_PSN_SEQ_ERR:
		qp->cnt.seq_naks_rx++, qp->core->stats.seq_naks_rx++;
		break;
	case XR_NAK_INVALID_REQUEST:
		qp->cnt.inv_req_naks_rx++, qp->core->stats.inv_req_naks_rx++;
		break;
	case XR_NAK_REMOTE_ACCESS_ERR:
		qp->cnt.rem_access_naks_rx++, qp->core->stats.rem_access_naks_rx++;
		break;
	case XR_NAK_REMOTE_OP_ERR:
		qp->cnt.rem_op_naks_rx++, qp->core->stats.rem_op_naks_rx++;
		break;
	}
}

/*
 * Whether the request at psn (in flight) could have been refused for want
 * of a receive WQE: any packet of a SEND (the last waits for CQ room), the
 * last of a WRITE with immediate. No other request earns an RNR NAK.
 */
static bool may_earn_rnr(struct xr_qp_impl *qp, uint32_t psn)
{
	const struct xr_swqe *w = wqe_of_psn(qp, psn);

	if (!w || xr_psn_diff(psn, w->first_psn) < 0)
		return false;
	if (xr_wr(w->opcode)->wc_opcode == XR_WC_SEND)
		return true;
	return w->opcode == XR_WR_RDMA_WRITE_WITH_IMM && psn == w->last_psn;
}

/*
 * A READ's responses acknowledge it; an ACK never stops inside one. An ACK
 * whose PSN lies in a READ before its last PSN is no responder's.
 */
static bool inside_read(struct xr_qp_impl *qp, uint32_t psn)
{
	const struct xr_swqe *w = wqe_of_psn(qp, psn);

	return w && (xr_wr(w->opcode)->flags & XR_WRF_READ) && psn != w->last_psn &&
	       xr_psn_diff(psn, w->first_psn) >= 0;
}

static void plain_ack(struct xr_qp_impl *qp, uint32_t psn, uint64_t now)
{
	/* The same ACK again (a duplicate request was answered, or the link doubled it). */
	if (psn == qp->acked_psn)
		return;
	if (!in_window(qp, psn)) {
		drop_ghost(qp);
		return;
	}
	if (inside_read(qp, psn)) {
		drop_bad_response(qp);
		return;
	}
	ack_through(qp, psn, now);
}

static void rnr_nak(struct xr_qp_impl *qp, uint32_t psn, uint8_t timer, uint64_t now)
{
	if (!in_window(qp, psn)) {
		drop_ghost(qp);
		return;
	}
	if (!may_earn_rnr(qp, psn)) {
		drop_bad_response(qp);
		return;
	}
	ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
	qp->cnt.rnr_naks_rx++;
	qp->core->stats.rnr_naks_rx++;
	if (qp->rnr_retry != 7) {
		if (qp->rnr_left == 0) {
			fail_at(qp, psn, XR_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		qp->rnr_left--;
	}
	xr_requester_rewind(qp, psn);
	/* The responder dropped what it held past psn: all of it goes again. */
	xr_sr_tx_forget(qp);
	qp->rnr_deadline = now + (uint64_t)xr_rnr_timer_us[timer] * 1000;
	qp->retry_deadline = qp->probe_deadline = 0;
}

static void nak(struct xr_qp_impl *qp, uint32_t psn, uint8_t code, uint64_t now)
{
	/* Nothing outstanding, or not a PSN in flight: no request of ours was refused. */
	if (!in_window(qp, psn)) {
		drop_ghost(qp);
		return;
	}
	count_nak_received(qp, code);
	/* Implicitly acknowledges what precedes psn. */
	ack_through(qp, xr_psn_add(psn, XR_PSN_MASK), now);
	if (code != XR_NAK_PSN_SEQ_ERR) {
		fail_at(qp, psn, nak_status(code));
		return;
	}
	/* Resend from psn. */
	if (xr_psn_diff(psn, qp->acked_psn) == 1) {
		xr_cwnd_on_loss(qp, false);
		xr_requester_rewind(qp, psn);
	}
	qp->retry_deadline = outstanding(qp) ? now + xr_qp_ack_timeout_ns(qp) : 0;
}

/*
 * A selective ACK (xroce's, docs/selective-repeat.md): an ACK of its PSN,
 * the bitmap of what the responder holds past it, and the news that the
 * responder speaks selective repeat. Only a requester that offered it
 * believes one.
 */
static void sack(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	if ((pkt->aeth_syndrome & XR_AETH_TYPE_MASK) != XR_AETH_ACK ||
	    !(qp->core->caps & XR_DEVICE_SELECTIVE_REPEAT)) {
		drop_bad_response(qp);
		return;
	}
	if (pkt->psn != qp->acked_psn && !in_window(qp, pkt->psn)) {
		drop_ghost(qp);
		return;
	}
	if (!xr_sr_sack_fits(qp, pkt)) {
		drop_bad_response(qp);
		return;
	}
	qp->cnt.sacks_rx++, qp->core->stats.sacks_rx++;
	plain_ack(qp, pkt->psn, now);
	if (qp->sr_peer || xr_sr_tx_enable(qp))
		xr_sr_take_sack(qp, pkt);
}

void xr_completer_rx(struct xr_qp_impl *qp, const struct xr_pkt *pkt, uint64_t now)
{
	uint8_t syn = pkt->aeth_syndrome, val = syn & XR_AETH_VALUE_MASK;

	if (pkt->opcode == XR_OP_RC_SACK) {
		sack(qp, pkt, now);
		return;
	}
	if (pkt->opcode != XR_OP_RC_ACK && (syn & XR_AETH_TYPE_MASK) == XR_AETH_ACK) {
		read_atomic_response(qp, pkt, now);
		return;
	}
	switch (syn & XR_AETH_TYPE_MASK) {
	case XR_AETH_ACK:
		plain_ack(qp, pkt->psn, now);
		break;
	case XR_AETH_RNR_NAK:
		rnr_nak(qp, pkt->psn, val, now);
		break;
	case XR_AETH_NAK:
		nak(qp, pkt->psn, val, now);
		break;
	default:
		break;
	}
}

void xr_completer_ack(struct xr_qp_impl *qp, uint32_t psn, uint64_t now)
{
	ack_through(qp, psn, now);
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
			qp->cnt.timeouts++;
			qp->core->stats.timeouts++;
			qp->rd_resent = false;
			xr_cwnd_on_loss(qp, true);
			xr_requester_rewind(qp, xr_psn_add(qp->acked_psn, 1));
			qp->retry_deadline = now + xr_qp_ack_timeout_ns(qp);
		}
	}
	if (qp->rnr_deadline)
		return qp->rnr_deadline;
	if (qp->probe_deadline && now >= qp->probe_deadline) {
		qp->probe_deadline = 0;
		if (outstanding(qp))
			send_probe(qp, now);
	}
	if (qp->probe_deadline && qp->probe_deadline < qp->retry_deadline)
		return qp->probe_deadline;
	return qp->retry_deadline;
}
