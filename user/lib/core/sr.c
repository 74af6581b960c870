/* SPDX-License-Identifier: MIT */
/*
 * Selective repeat between xroce peers (docs/selective-repeat.md), in the
 * manner of IRN (SIGCOMM 2018). The requester offers it on every request
 * (XR_BTH_SR_CAPABLE); a responder that speaks it answers with SACKs, which
 * tells the requester to send its WRITEs self-placing: every packet carries
 * the message's RETH and its own offset. The responder places such packets
 * out of order within XR_SR_WINDOW PSNs and commits them in PSN order, so
 * that completions, MSNs and receive WQEs go exactly as in go-back-N; its
 * SACK names every PSN it holds past the expected one, and the requester
 * sends again only the holes below the newest one received.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum xr_sr_tx_flags {
	SR_TX_SACKED = 1 << 0, /* the responder holds it */
	SR_TX_LOST = 1 << 1,   /* a SACK showed a hole there: to be sent again */
	SR_TX_RESENT = 1 << 2, /* sent again at resent_at */
};

enum xr_sr_rx_flags {
	SR_RX_HELD = 1 << 0,
	SR_RX_LAST = 1 << 1,	 /* ends its message */
	SR_RX_RECV_WQE = 1 << 2, /* WRITE with immediate: completes a receive WQE */
	SR_RX_SE = 1 << 3,
	SR_RX_ACKREQ = 1 << 4,
};

/* Packets received past a hole that make it lost (TCP's DupThresh). */
#define XR_SR_DUP_THRESH 3

static struct xr_sr_tx_slot *tx_slot(const struct xr_qp_impl *qp, uint32_t psn)
{
	return &qp->sr_tx[psn % XR_SR_WINDOW];
}

static struct xr_sr_rx_slot *rx_slot(const struct xr_qp_impl *qp, uint32_t psn)
{
	return &qp->sr_rx[psn % XR_SR_WINDOW];
}

/* The slot of psn, taken over from whatever PSN it held before. */
static struct xr_sr_tx_slot *tx_slot_for(struct xr_qp_impl *qp, uint32_t psn)
{
	struct xr_sr_tx_slot *s = tx_slot(qp, psn);

	if (s->psn != psn) {
		s->psn = psn;
		s->flags = 0;
	}
	return s;
}

int xr_sr_alloc(struct xr_qp_impl *qp, struct xr_core *core)
{
	if (!(core->caps & XR_DEVICE_SELECTIVE_REPEAT))
		return 0;
	qp->sr_tx = calloc(XR_SR_WINDOW, sizeof(*qp->sr_tx));
	qp->sr_rx = calloc(XR_SR_WINDOW, sizeof(*qp->sr_rx));
	return qp->sr_tx && qp->sr_rx ? 0 : -ENOMEM;
}

bool xr_sr_tx_enable(struct xr_qp_impl *qp)
{
	if (!qp->sr_tx)
		return false;
	qp->sr_peer = true;
	qp->sr_high = qp->acked_psn;
	qp->sr_lost = 0;
	return true;
}

bool xr_sr_rx_enable(struct xr_qp_impl *qp)
{
	if (!qp->sr_rx)
		return false;
	qp->sr_requester = true;
	qp->sr_held = 0;
	qp->sr_newest = xr_psn_add(qp->epsn, XR_PSN_MASK);
	return true;
}

void xr_sr_tx_forget(struct xr_qp_impl *qp)
{
	if (qp->sr_tx)
		memset(qp->sr_tx, 0, XR_SR_WINDOW * sizeof(*qp->sr_tx));
	qp->sr_lost = 0;
	qp->sr_high = qp->acked_psn;
}

void xr_sr_rx_forget(struct xr_qp_impl *qp)
{
	if (qp->sr_rx)
		memset(qp->sr_rx, 0, XR_SR_WINDOW * sizeof(*qp->sr_rx));
	qp->sr_held = 0;
	qp->sr_newest = xr_psn_add(qp->epsn, XR_PSN_MASK);
}

void xr_sr_reset(struct xr_qp_impl *qp)
{
	xr_sr_tx_forget(qp);
	xr_sr_rx_forget(qp);
	qp->sr_peer = qp->sr_requester = qp->sr_heard = false;
	qp->sack_due = false;
}

void xr_sr_free(struct xr_qp_impl *qp)
{
	free(qp->sr_tx);
	free(qp->sr_rx);
	qp->sr_tx = NULL;
	qp->sr_rx = NULL;
}

/* ---- requester ------------------------------------------------------------ */

bool xr_sr_sacked(const struct xr_qp_impl *qp, uint32_t psn)
{
	const struct xr_sr_tx_slot *s;

	if (!qp->sr_tx)
		return false;
	s = tx_slot(qp, psn);
	return s->psn == psn && (s->flags & SR_TX_SACKED);
}

void xr_sr_sent(struct xr_qp_impl *qp, uint32_t psn, bool fresh)
{
	struct xr_sr_tx_slot *s;

	if (!qp->sr_tx)
		return;
	s = tx_slot_for(qp, psn);
	if (fresh) {
		/* What the slot knew was of the PSN 2^24 before. */
		s->flags = 0;
		return;
	}
	s->flags = (uint8_t)((s->flags & ~SR_TX_LOST) | SR_TX_RESENT);
	s->resent_at = qp->tx_new_psn;
}

/* Bit i of a SACK's bitmap: PSN base + i. */
static uint8_t sack_bit(uint32_t i)
{
	return (uint8_t)(0x80 >> (i % 8));
}

static bool bit_set(const uint8_t *bitmap, uint32_t i)
{
	return bitmap[i / 8] & sack_bit(i);
}

/*
 * How far past its base (the responder's expected PSN) a SACK shows
 * something received, held (its bitmap) or not (its newest PSN); <= 0 for
 * nothing.
 */
static int32_t sack_reach(const struct xr_pkt *pkt)
{
	int32_t reach = xr_psn_diff(pkt->sack_newest, xr_psn_add(pkt->psn, 1));

	for (int32_t byte = XR_SR_WINDOW / 8 - 1; byte >= 0 && 8 * byte + 7 > reach; byte--)
		if (pkt->sack_bitmap[byte]) {
			int32_t i = 8 * byte + 7;

			while (!bit_set(pkt->sack_bitmap, (uint32_t)i))
				i--;
			return i > reach ? i : reach;
		}
	return reach;
}

bool xr_sr_sack_fits(const struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	int32_t reach = sack_reach(pkt);

	return reach <= 0 ||
	       xr_psn_diff(xr_psn_add(pkt->psn, 1 + (uint32_t)reach), qp->tx_new_psn) < 0;
}

/*
 * A hole is lost once the responder received a packet XR_SR_DUP_THRESH
 * PSNs or more past it, held or not (a packet it could not hold, a SEND
 * say, is a hole too), as TCP's SACK recovery decides (RFC 6675): a packet
 * merely overtaken by a couple of others is not sent twice, and a loss in
 * the last packets of a burst, with fewer behind it, is the tail-loss
 * probe's to find. A hole already sent again is lost again only once a
 * packet sent after that retransmission got through.
 */
void xr_sr_take_sack(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	uint32_t base = xr_psn_add(pkt->psn, 1);
	const uint8_t *bitmap = pkt->sack_bitmap;
	int32_t top = sack_reach(pkt);

	if (top <= 0)
		return;
	if (top >= XR_SR_WINDOW)
		top = XR_SR_WINDOW - 1;
	if (xr_psn_diff(xr_psn_add(base, (uint32_t)top), qp->sr_high) > 0)
		qp->sr_high = xr_psn_add(base, (uint32_t)top);
	for (int32_t i = top; i >= 0; i--) {
		uint32_t psn = xr_psn_add(base, (uint32_t)i);
		bool got = bit_set(bitmap, (uint32_t)i);
		struct xr_sr_tx_slot *s;

		/* Acknowledged already (an ACK overtook the SACK), or never sent. */
		if (xr_psn_diff(psn, qp->acked_psn) <= 0 || xr_psn_diff(psn, qp->tx_new_psn) >= 0)
			continue;
		s = tx_slot_for(qp, psn);
		if (got) {
			s->flags = (uint8_t)((s->flags & ~SR_TX_LOST) | SR_TX_SACKED);
			continue;
		}
		if ((s->flags & (SR_TX_LOST | SR_TX_SACKED)) || top - i < XR_SR_DUP_THRESH)
			continue;
		if ((s->flags & SR_TX_RESENT) && xr_psn_diff(qp->sr_high, s->resent_at) < 0)
			continue;
		s->flags |= SR_TX_LOST;
		qp->sr_lost++;
	}
}

/*
 * Sends again the PSNs marked lost, oldest first, walking the WQEs that
 * hold them. A READ or atomic is a hole at its request's PSN only (its
 * responses' PSNs are never the responder's to hold): that request goes
 * again whole.
 */
int xr_sr_resend_lost(struct xr_qp_impl *qp, int budget)
{
	uint32_t from = xr_psn_add(qp->acked_psn, 1), left = 0;
	int sent = 0;

	if (!qp->sr_lost || !qp->sr_tx)
		return 0;
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct xr_swqe *w = xr_sq_at(qp, i);
		bool whole = xr_wr_is_read_atomic(w->opcode);
		uint32_t psn;

		if (w->state == XR_SWQE_DONE)
			continue;
		if (!w->psn_assigned || xr_psn_diff(w->first_psn, qp->sr_high) > 0)
			break;
		if (xr_psn_diff(w->last_psn, from) < 0)
			continue;
		psn = xr_psn_diff(w->first_psn, from) > 0 || whole ? w->first_psn : from;
		for (;; psn = xr_psn_add(psn, 1)) {
			struct xr_sr_tx_slot *s = tx_slot(qp, psn);

			if (s->psn == psn && (s->flags & SR_TX_LOST)) {
				/* Paced by DCQCN as new data is: the rest when it may send. */
				if (sent == budget || !xr_dcqcn_may_send(qp, qp->core->now)) {
					left++;
					budget = sent;
				} else if (xr_requester_resend(qp, w, psn)) {
					qp->cnt.sr_resends++, qp->core->stats.sr_resends++;
					sent++;
				} else {
					left++;
					budget = sent; /* no buffer: the rest next round */
				}
			}
			if (whole || psn == w->last_psn || psn == qp->sr_high)
				break;
		}
	}
	qp->sr_lost = left;
	return sent;
}

/* ---- responder ------------------------------------------------------------ */

/*
 * Places a self-placing WRITE packet: everything it needs is in it, its
 * message's RETH and its offset, so it is checked alone: against the key
 * for the whole message, as a FIRST packet is in go-back-N, so that a
 * WRITE running past its window places none of its bytes. Failures fail
 * the QP when the packet is the expected one (as go-back-N would); one
 * out of order is dropped, and fails it once it is.
 */
static bool place_write(struct xr_qp_impl *qp, const struct xr_pkt *pkt, bool in_order)
{
	uint32_t f = pkt->opflags, off = pkt->pleth_offset, len = pkt->payload_len;
	struct xr_mr_impl *mr;

	if (pkt->reth_len > XR_MAX_MSG_SZ || off % qp->mtu || len > qp->mtu ||
	    off > pkt->reth_len || len > pkt->reth_len - off ||
	    (!(f & XR_OPF_LAST) && len != qp->mtu) ||
	    ((f & XR_OPF_LAST) && off + len != pkt->reth_len) || ((f & XR_OPF_FIRST) && off)) {
		if (in_order)
			xr_responder_fatal(qp, pkt, XR_NAK_INVALID_REQUEST);
		return false;
	}
	if (!len)
		return true;
	mr = xr_core_resolve_rkey(qp, pkt->reth_rkey, pkt->reth_va, pkt->reth_len,
				  XR_ACCESS_REMOTE_WRITE);
	if (!mr) {
		if (in_order)
			xr_responder_fatal(qp, pkt, XR_NAK_REMOTE_ACCESS_ERR);
		return false;
	}
	xr_mr_copy_in(mr, pkt->reth_va + off, pkt->payload, len);
	return true;
}

static void hold(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	struct xr_sr_rx_slot *s = rx_slot(qp, pkt->psn);
	uint32_t f = pkt->opflags;

	s->psn = pkt->psn;
	s->flags = SR_RX_HELD | ((f & XR_OPF_LAST) ? SR_RX_LAST : 0) |
		   ((f & XR_OPF_RECV_WQE) ? SR_RX_RECV_WQE : 0) | (pkt->se ? SR_RX_SE : 0) |
		   (pkt->ackreq ? SR_RX_ACKREQ : 0);
	s->imm_be = pkt->imm_be;
	s->byte_len = pkt->reth_len;
	qp->sr_held++;
}

static bool held(const struct xr_qp_impl *qp, uint32_t psn)
{
	const struct xr_sr_rx_slot *s = rx_slot(qp, psn);

	return s->psn == psn && (s->flags & SR_RX_HELD);
}

void xr_sr_rx_ahead(struct xr_qp_impl *qp, const struct xr_pkt *pkt, int32_t d)
{
	qp->sack_due = true;
	if (d < XR_SR_WINDOW && xr_psn_diff(pkt->psn, qp->sr_newest) > 0)
		qp->sr_newest = pkt->psn;
	if (d >= XR_SR_WINDOW || !(pkt->opflags & XR_OPF_PLETH)) {
		qp->core->stats.sr_unplaced++;
		return;
	}
	if (held(qp, pkt->psn)) {
		qp->cnt.dup_requests++, qp->core->stats.dup_requests++;
		return;
	}
	if (!place_write(qp, pkt, false)) {
		qp->core->stats.sr_unplaced++;
		return;
	}
	hold(qp, pkt);
	qp->cnt.sr_placed_ahead++, qp->core->stats.sr_placed_ahead++;
}

bool xr_sr_rx_in_order(struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	/* A message of the other form under way: the sequence is broken. */
	if (qp->recv_active || qp->write_active) {
		xr_responder_fatal(qp, pkt, XR_NAK_INVALID_REQUEST);
		return false;
	}
	if (!place_write(qp, pkt, true))
		return false;
	hold(qp, pkt);
	return true;
}

/*
 * Moves epsn over the packets held from it on, finishing their messages in
 * order: the MSN, and a WRITE with immediate's receive WQE. Without a
 * receive WQE or CQ room that one earns an RNR NAK, as in go-back-N; the
 * requester then sends everything from there again, so nothing held past
 * it is kept.
 */
void xr_sr_commit(struct xr_qp_impl *qp)
{
	bool moved = false;

	while (qp->sr_held && held(qp, qp->epsn)) {
		struct xr_sr_rx_slot *s = rx_slot(qp, qp->epsn);

		if ((s->flags & SR_RX_RECV_WQE) && (!xr_recv_ready(qp) || xr_cq_full(qp->rcq))) {
			xr_responder_rnr_nak(qp, qp->epsn);
			xr_sr_rx_forget(qp);
			break;
		}
		if (s->flags & SR_RX_RECV_WQE)
			xr_recv_finish(qp, XR_WC_RECV_RDMA_WITH_IMM, s->byte_len, XR_WC_WITH_IMM,
				       s->imm_be, s->flags & SR_RX_SE);
		if (s->flags & SR_RX_LAST)
			qp->msn = (qp->msn + 1) & 0xffffff;
		if (s->flags & SR_RX_ACKREQ) {
			qp->ack_pending = true;
			qp->ack_psn = qp->epsn;
		}
		s->flags = 0;
		qp->sr_held--;
		qp->epsn = xr_psn_add(qp->epsn, 1);
		moved = true;
	}
	if (moved)
		xr_xdp_publish_committed(qp);
	/* Kept from falling 2^23 behind, where it would read as ahead again. */
	if (xr_psn_diff(qp->sr_newest, qp->epsn) < 0)
		qp->sr_newest = xr_psn_add(qp->epsn, XR_PSN_MASK);
}

void xr_sr_rx_skipped(struct xr_qp_impl *qp, uint32_t from, uint32_t to)
{
	for (uint32_t psn = from; qp->sr_held && psn != to; psn = xr_psn_add(psn, 1))
		if (held(qp, psn)) {
			rx_slot(qp, psn)->flags = 0;
			qp->sr_held--;
		}
}

bool xr_sr_send_sack(struct xr_qp_impl *qp)
{
	struct xr_bth_fields bth = {.opcode = XR_OP_RC_SACK,
				    .dqpn = qp->dest_qpn,
				    .psn = xr_psn_add(qp->epsn, XR_PSN_MASK)};
	struct xr_pkt_out out;
	uint8_t *sacketh, *bitmap;

	if (!xr_core_frame_begin(qp->core, qp, &bth, 0, &out))
		return false;
	xr_put32(out.ext, (uint32_t)(XR_AETH_ACK | XR_AETH_ACK_UNLIMITED) << 24 | qp->msn);
	sacketh = out.bth + xr_sacketh_off(xr_opinfo[XR_OP_RC_SACK].flags);
	/* Nothing newer than the expected PSN received: the SACK's own PSN. */
	xr_put32(sacketh, xr_psn_diff(qp->sr_newest, qp->epsn) > 0 ? qp->sr_newest : bth.psn);
	bitmap = sacketh + 4;
	memset(bitmap, 0, XR_SR_WINDOW / 8);
	for (uint32_t i = 1, found = 0; found < qp->sr_held && i < XR_SR_WINDOW; i++)
		if (held(qp, xr_psn_add(qp->epsn, i))) {
			bitmap[i / 8] |= sack_bit(i);
			found++;
		}
	xr_core_frame_send(qp->core, qp, &out);
	qp->cnt.sacks_tx++, qp->core->stats.sacks_tx++;
	return true;
}
