/* SPDX-License-Identifier: MIT */
/*
 * The requester's congestion window, in PSNs it may have unacknowledged:
 * additive increase per window acknowledged (slow start below ssthresh),
 * a cut by a quarter once per window of data in flight at a loss, and back
 * to the minimum when the ACK timer expires.
 *
 * A loss cuts no lower than XR_CWND_LOSS_FLOOR. A go-back-N responder, as
 * every standard peer is, acknowledges a window at a time, so a window cut
 * at every random loss settles near sqrt(4/p) packets at a loss rate p (14
 * at 2 %), and the requester idles, waiting for ACKs, most of each round
 * trip: with Soft-RoCE as the responder and 2 % lost each way, a fifth of
 * the run went in such waits. Floored, it kept a mean of 16.4 MB/s of 64
 * KiB WRITEs over six runs, against 13.4 over eight unfloored; a window
 * fixed at 16-32 did as well, one of 64 worse (each loss sends the window
 * behind it again). Congestion still shrinks the window to the floor, the
 * ACK timer below it, and CNPs pace below it (dcqcn.c).
 */
#include "core.h"

void xr_cwnd_reset(struct xr_qp_impl *qp)
{
	qp->cwnd = qp->ssthresh = XR_SEND_WINDOW;
	qp->cwnd_acc = 0;
	qp->in_recovery = false;
}

void xr_cwnd_on_ack(struct xr_qp_impl *qp, uint32_t newly_acked)
{
	if (qp->in_recovery && xr_psn_diff(qp->acked_psn, qp->recover_psn) >= 0)
		qp->in_recovery = false;
	if (qp->cwnd >= XR_SEND_WINDOW)
		return;
	if (qp->cwnd < qp->ssthresh) {
		qp->cwnd += newly_acked;
	} else {
		qp->cwnd_acc += newly_acked;
		while (qp->cwnd_acc >= qp->cwnd) {
			qp->cwnd_acc -= qp->cwnd;
			qp->cwnd++;
		}
	}
	if (qp->cwnd > XR_SEND_WINDOW)
		qp->cwnd = XR_SEND_WINDOW;
}

void xr_cwnd_on_loss(struct xr_qp_impl *qp, bool timeout)
{
	/*
	 * By a quarter, as CUBIC's 0.7 rather than Reno's half: on Ethernet a
	 * loss is as often noise as congestion.
	 */
	uint32_t reduced = qp->cwnd - qp->cwnd / 4;

	if (qp->in_recovery && !timeout)
		return;
	/* Never below XR_CWND_MIN: the floor is above it, and cwnd never was. */
	if (reduced < XR_CWND_LOSS_FLOOR)
		reduced = qp->cwnd < XR_CWND_LOSS_FLOOR ? qp->cwnd : XR_CWND_LOSS_FLOOR;
	qp->ssthresh = reduced;
	qp->cwnd = timeout ? XR_CWND_MIN : qp->ssthresh;
	qp->cwnd_acc = 0;
	qp->in_recovery = true;
	qp->recover_psn = xr_psn_add(qp->snd_psn, XR_PSN_MASK);
}
