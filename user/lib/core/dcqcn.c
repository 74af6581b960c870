/* SPDX-License-Identifier: MIT */
/*
 * Congestion notification, as RoCEv2 NICs do it (docs/congestion-control.md):
 * connected QPs send ECN-capable (ECT(0)); the receiver of a frame a switch
 * marked CE answers its sender's QP with a CNP, at most one per QP per
 * CNP_INTERVAL_NS (the notification point); a QP that receives CNPs paces
 * its requests at a rate DCQCN sets (the reaction point: Zhu et al.,
 * "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015).
 *
 * DCQCN's timers run lazily: whenever the QP sends, or a CNP comes, the
 * periods that elapsed since are applied, so an idle QP costs nothing.
 */
#include <string.h>

#include "core.h"

/* Notification point: CNPs per QP at most one in this (DCQCN's N). */
#define CNP_INTERVAL_NS 50000ull
/* Alpha's gain g, 1/256: alpha = (1 - g) alpha + g on a CNP. */
#define ALPHA_G_SHIFT 8
/* Alpha decays by (1 - g) every K without a CNP; K is a little over N. */
#define ALPHA_PERIOD_NS 55000ull
/*
 * The rate increases every T, and every B bytes sent; the first F
 * increases of each (fast recovery) only close half the distance to the
 * rate before the cut. T and B are larger than the paper's (55 us, 10 MB
 * at 40 Gb/s): a software path's round trip is tens to hundreds of
 * microseconds and its rate about a gigabit, so the rate must not climb
 * back faster than CNPs can answer.
 */
#define INCREASE_PERIOD_NS 300000ull
#define INCREASE_BYTES (256ull << 10)
#define FAST_RECOVERY_STAGES 5
/* Additive and hyper increase steps (R_AI, R_HAI), and the floor, in bytes/s. */
#define RATE_AI (5000000ull / 8)
#define RATE_HAI (50000000ull / 8)
#define RATE_MIN (10000000ull / 8)
/* An interface that does not tell its speed: more than a software path carries. */
#define DEFAULT_LINE_RATE (10000000000ull / 8)
/* Pacing: credit a QP may build up while the engine was away, as time at its rate. */
#define PACING_BURST_NS 100000ull
/* Increases applied at once after an idle spell: past them the QP is back at full speed. */
#define MAX_CATCH_UP 64
/* Alpha decays applied at once: by then (1 - 1/256)^4096 has taken it to nothing. */
#define MAX_ALPHA_DECAYS 4096

static uint64_t line_rate(const struct xr_qp_impl *qp)
{
	return qp->core->line_rate ? qp->core->line_rate : DEFAULT_LINE_RATE;
}

void xr_dcqcn_reset(struct xr_qp_impl *qp)
{
	memset(&qp->dcqcn, 0, sizeof(qp->dcqcn));
	qp->dcqcn.alpha = XR_DCQCN_ALPHA_ONE;
	qp->pace_blocked = false;
}

uint8_t xr_dcqcn_ecn_codepoint(const struct xr_qp_impl *qp)
{
	bool connected = qp->pub.qp_type == XR_QPT_RC || qp->pub.qp_type == XR_QPT_UC;

	return connected && (qp->core->caps & XR_DEVICE_ECN) ? XR_ECN_ECT0 : 0;
}

/* One increase event, of either kind: DCQCN's fast recovery, additive or hyper increase. */
static void increase(struct xr_dcqcn *d, uint64_t line)
{
	uint32_t low = d->timer_stage < d->byte_stage ? d->timer_stage : d->byte_stage;
	uint32_t high = d->timer_stage < d->byte_stage ? d->byte_stage : d->timer_stage;

	if (low > FAST_RECOVERY_STAGES)
		d->target += (uint64_t)(low - FAST_RECOVERY_STAGES) * RATE_HAI;
	else if (high >= FAST_RECOVERY_STAGES)
		d->target += RATE_AI;
	if (d->target > line)
		d->target = line;
	d->rate = (d->rate + d->target) / 2;
	/* Back at the interface's speed (within a step): nothing to pace any more. */
	if (d->rate + RATE_AI >= line)
		d->limiting = false;
}

/* Applies the alpha decays and timer increases due by now. */
static void advance(struct xr_qp_impl *qp, uint64_t now)
{
	struct xr_dcqcn *d = &qp->dcqcn;
	uint32_t n;

	/* alpha_at 0: no CNP yet, and alpha stays at its start, 1. */
	for (n = 0; d->alpha_at && d->alpha && now >= d->alpha_at && n < MAX_ALPHA_DECAYS; n++) {
		d->alpha -= d->alpha >> ALPHA_G_SHIFT;
		d->alpha_at += ALPHA_PERIOD_NS;
	}
	if (n == MAX_ALPHA_DECAYS)
		d->alpha = 0;
	for (n = 0; d->limiting && now >= d->increase_at && n < MAX_CATCH_UP; n++) {
		d->timer_stage++;
		increase(d, line_rate(qp));
		d->increase_at += INCREASE_PERIOD_NS;
	}
	if (n == MAX_CATCH_UP)
		d->limiting = false;
}

bool xr_dcqcn_may_send(struct xr_qp_impl *qp, uint64_t now)
{
	struct xr_dcqcn *d = &qp->dcqcn;

	if (!d->limiting)
		return true;
	advance(qp, now);
	if (!d->limiting || d->next_tx_at <= now)
		return true;
	qp->pace_blocked = true;
	return false;
}

void xr_dcqcn_sent(struct xr_qp_impl *qp, uint32_t bytes, uint64_t now)
{
	struct xr_dcqcn *d = &qp->dcqcn;
	uint64_t since = now - d->sample_at, start;

	/* A window with an idle spell in it says nothing of the rate: only a full one counts. */
	if (since >= XR_DCQCN_SAMPLE_NS) {
		if (since < 2 * XR_DCQCN_SAMPLE_NS)
			d->measured_rate = d->sample_bytes * 1000000000ull / since;
		d->sample_at = now;
		d->sample_bytes = 0;
	}
	d->sample_bytes += bytes;
	if (!d->limiting)
		return;
	start = now > PACING_BURST_NS && d->next_tx_at < now - PACING_BURST_NS
		    ? now - PACING_BURST_NS
		    : d->next_tx_at;
	d->next_tx_at = start + bytes * 1000000000ull / d->rate;
	if (bytes < d->bytes_left) {
		d->bytes_left -= bytes;
		return;
	}
	d->bytes_left = INCREASE_BYTES;
	d->byte_stage++;
	increase(d, line_rate(qp));
}

void xr_dcqcn_cnp_rx(struct xr_qp_impl *qp, uint64_t now)
{
	struct xr_dcqcn *d = &qp->dcqcn;
	uint64_t line = line_rate(qp);

	qp->cnt.cnps_rx++, qp->core->stats.cnps_rx++;
	advance(qp, now);
	/*
	 * One cut per window, as TCP reacts to ECN: until everything sent
	 * before the last cut is acknowledged, CNPs answer frames that went
	 * into the queue that cut is draining. DCQCN cuts on every one (one
	 * per 50 us at most), which drives a sender whose window stays
	 * queued for longer than that to the floor. They still hold the rate
	 * where it is, as DCQCN's do: the increases start over from them.
	 */
	if (!d->limiting || qp->pub.qp_type != XR_QPT_RC ||
	    xr_psn_diff(qp->acked_psn, d->cut_psn) >= 0) {
		if (!d->limiting) {
			/*
			 * DCQCN starts from the line rate; a software sender
			 * seldom reaches it, so the first cut starts from the
			 * rate the QP was sending at, or it would take several
			 * to bite.
			 */
			d->rate =
			    d->measured_rate && d->measured_rate < line ? d->measured_rate : line;
			d->limiting = true;
			d->next_tx_at = now;
		}
		d->cut_psn = xr_psn_add(qp->tx_new_psn, XR_PSN_MASK);
		d->target = d->rate;
		d->rate -= d->rate * d->alpha / (2 * XR_DCQCN_ALPHA_ONE);
		if (d->rate < RATE_MIN)
			d->rate = RATE_MIN;
	}
	d->alpha = d->alpha - (d->alpha >> ALPHA_G_SHIFT) + (XR_DCQCN_ALPHA_ONE >> ALPHA_G_SHIFT);
	d->alpha_at = now + ALPHA_PERIOD_NS;
	d->increase_at = now + INCREASE_PERIOD_NS;
	d->timer_stage = d->byte_stage = 0;
	d->bytes_left = INCREASE_BYTES;
}

/* A CNP to the QP that sent the marked frame: BTH (BECN set, PSN 0), 16 bytes of 0. */
static bool send_cnp(struct xr_qp_impl *qp)
{
	struct xr_bth_fields bth = {.opcode = XR_OP_CNP, .becn = true, .dqpn = qp->dest_qpn};
	/* A CNP carries no data to slow down: it goes Not-ECT, never marked itself. */
	struct xr_path path = qp->path;
	struct xr_pkt_out out;

	path.ecn = 0;
	if (!xr_core_frame_begin_to(qp->core, &path, &bth, 0, &out))
		return false;
	xr_core_frame_send(qp->core, qp, &out);
	return true;
}

void xr_dcqcn_ce_rx(struct xr_qp_impl *qp, uint64_t now)
{
	struct xr_dcqcn *d = &qp->dcqcn;

	qp->cnt.ecn_marked++, qp->core->stats.ecn_marked++;
	if (d->last_cnp_tx && now - d->last_cnp_tx < CNP_INTERVAL_NS)
		return;
	if (!send_cnp(qp))
		return;
	d->last_cnp_tx = now ? now : 1;
	qp->cnt.cnps_tx++, qp->core->stats.cnps_tx++;
}

uint64_t xr_dcqcn_deadline(const struct xr_qp_impl *qp)
{
	return qp->pace_blocked ? qp->dcqcn.next_tx_at : 0;
}
