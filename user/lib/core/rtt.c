/* SPDX-License-Identifier: MIT */
/*
 * Round-trip estimation of a requester, as TCP's without timestamps (RFC
 * 6298, Karn's rule): one packet at a time is timed, a fresh one that asks
 * for an ACK, so that the sample is not the responder's wait for an AckReq;
 * the sample is taken when the acknowledged PSN reaches it, and dropped if
 * it was sent again first (its ACK could then answer either copy).
 */
#include "core.h"

void xr_rtt_sent(struct xr_qp_impl *qp, uint32_t psn, bool ackreq, bool fresh, uint64_t now)
{
	if (!fresh) {
		if (qp->rtt_sent_at && xr_psn_diff(psn, qp->rtt_psn) <= 0)
			qp->rtt_sent_at = 0;
		return;
	}
	if (ackreq && !qp->rtt_sent_at && now) {
		qp->rtt_psn = psn;
		qp->rtt_sent_at = now;
	}
}

void xr_rtt_acked(struct xr_qp_impl *qp, uint64_t now)
{
	uint64_t sample, dev;

	if (!qp->rtt_sent_at || xr_psn_diff(qp->acked_psn, qp->rtt_psn) < 0)
		return;
	sample = now > qp->rtt_sent_at ? now - qp->rtt_sent_at : 1;
	qp->rtt_sent_at = 0;
	if (!qp->srtt_ns) {
		qp->srtt_ns = sample;
		qp->rttvar_ns = sample / 2;
		return;
	}
	dev = sample > qp->srtt_ns ? sample - qp->srtt_ns : qp->srtt_ns - sample;
	qp->rttvar_ns = (3 * qp->rttvar_ns + dev) / 4;
	qp->srtt_ns = (7 * qp->srtt_ns + sample) / 8;
}
