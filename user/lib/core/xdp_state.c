/* SPDX-License-Identifier: MIT */
/*
 * The QP state the XDP fast paths work from (xroce/xdp_shared.h): what the
 * engine publishes for them, and the ACKs they absorbed, which the engine
 * reads back and completes as if they had come through the socket.
 */
#include <string.h>

#include "core.h"
#include "mad.h"

/* The QP's entry in XDP's qp_table. */
static struct xr_qp_entry *entry_of(struct xr_qp_impl *qp)
{
	return qp->core->xdp_qps ? &qp->core->xdp_qps[qp->slot] : NULL;
}

/*
 * The addresses XDP binds the QP's frames to and sends its replies along:
 * this device's MAC for every QP, and for a connected QP that has its path
 * (from RTR) both ends of that path. Anything else is zeroed, so that a
 * path the QP had before a reset binds nothing.
 */
static void publish_path(struct xr_qp_entry *e, const struct xr_qp_impl *qp, bool active)
{
	bool connected = qp->pub.qp_type == XR_QPT_RC || qp->pub.qp_type == XR_QPT_UC;

	memcpy(e->local_mac, qp->core->mac, sizeof(e->local_mac));
	e->path_valid = active && connected;
	if (!e->path_valid) {
		memset(e->peer_mac, 0, sizeof(e->peer_mac));
		memset(e->local_gid, 0, sizeof(e->local_gid));
		memset(e->peer_gid, 0, sizeof(e->peer_gid));
		e->traffic_class = 0;
		return;
	}
	memcpy(e->peer_mac, qp->path.dmac, sizeof(e->peer_mac));
	memcpy(e->local_gid, qp->path.sgid.raw, sizeof(e->local_gid));
	memcpy(e->peer_gid, qp->path.dgid.raw, sizeof(e->peer_gid));
	/* What the engine's own frames carry: the DSCP and the ECN codepoint. */
	e->traffic_class = (uint8_t)((qp->path.traffic_class & ~XR_ECN_MASK) | qp->path.ecn);
}

bool xr_xdp_claim_slot(struct xr_core *core, uint32_t slot)
{
	uint32_t none = XR_XDP_QP_NONE;
	struct xr_qp_entry *e;

	if (!core->xdp_qps)
		return true;
	e = &core->xdp_qps[slot];
	/* Closed, as a QP in RESET: XDP acts on nothing of the entry yet. */
	if (!__atomic_compare_exchange_n(&e->state, &none, XR_XDP_QP_CLOSED, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return false;
	e->holder = core->xdp_holder;
	return true;
}

void xr_xdp_release_slot(struct xr_core *core, uint32_t slot)
{
	if (!core->xdp_qps)
		return;
	/* Nobody's before it is free: the owner never takes it for a holder's. */
	core->xdp_qps[slot].holder = 0;
	__atomic_store_n(&core->xdp_qps[slot].state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
}

void xr_xdp_publish_qp(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);
	uint32_t st;

	if (!e)
		return;
	switch (qp->pub.state) {
	case XR_QPS_RTR:
	case XR_QPS_RTS:
	case XR_QPS_SQD:
	case XR_QPS_SQE:
		st = XR_XDP_QP_ACTIVE;
		break;
	default:
		st = XR_XDP_QP_CLOSED;
	}
	/* Closed first, so XDP never acts on a half-written entry. */
	__atomic_store_n(&e->state, XR_XDP_QP_CLOSED, __ATOMIC_SEQ_CST);
	e->qp_type = qp->pub.qp_type;
	e->qpn = qp->pub.qp_num;
	e->holder = qp->core->xdp_holder;
	e->qp_state = qp->pub.state;
	e->qkey = qp->qkey;
	e->dest_qpn = qp->dest_qpn;
	e->udp_sport = qp->path.udp_sport;
	/* A slot's last QP may have left it set for another engine. */
	e->engine_sleeping = qp->core->lanes[qp->lane].engine_sleeping;
	publish_path(e, qp, st == XR_XDP_QP_ACTIVE);
	e->fast_path = st == XR_XDP_QP_ACTIVE && xr_gid_is_v4mapped(&qp->path.dgid)
			   ? qp->core->xdp_fast_path
			   : 0;
	__atomic_store_n(&e->committed, xr_pack_psn_msn(qp->epsn, qp->msn), __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->xdp_ack, xr_pack_psn_msn(qp->acked_psn, 0), __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->req_next_psn, qp->snd_psn, __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->state, st, __ATOMIC_SEQ_CST);
}

void xr_xdp_publish_gsi(struct xr_core *core)
{
	struct xr_qp_entry *e;

	if (!core->xdp_qps)
		return;
	e = &core->xdp_qps[XR_GSI_SLOT];
	/* Closed first, as every QP's; XDP's counters in the entry stay as they are. */
	__atomic_store_n(&e->state, XR_XDP_QP_CLOSED, __ATOMIC_SEQ_CST);
	e->holder = 0;
	e->qp_type = XR_QPT_UD;
	e->qpn = XR_GSI_QPN;
	e->qp_state = XR_QPS_RTS;
	e->qkey = XR_GSI_QKEY;
	e->udp_sport = xr_udp_sport_for_qpn(XR_GSI_QPN);
	memcpy(e->local_mac, core->mac, sizeof(e->local_mac));
	__atomic_store_n(&e->state, XR_XDP_QP_ACTIVE, __ATOMIC_SEQ_CST);
}

void xr_xdp_publish_committed(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);

	if (e)
		__atomic_store_n(&e->committed, xr_pack_psn_msn(qp->epsn, qp->msn),
				 __ATOMIC_RELEASE);
}

void xr_xdp_publish_next_psn(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);

	if (e)
		__atomic_store_n(&e->req_next_psn, qp->snd_psn, __ATOMIC_RELEASE);
}

void xr_xdp_note_acked(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);
	__u64 cur; /* the type of xdp_ack: clang rejects a uint64_t * for it */

	if (!e)
		return;
	cur = __atomic_load_n(&e->xdp_ack, __ATOMIC_ACQUIRE);
	/* Only forward: XDP may have moved it further meanwhile. */
	while (xr_psn_diff(qp->acked_psn, (uint32_t)cur & XR_PSN_MASK) > 0 &&
	       !__atomic_compare_exchange_n(&e->xdp_ack, &cur,
					    xr_pack_psn_msn(qp->acked_psn, (uint32_t)(cur >> 32)),
					    false, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
		;
}

static void publish_u32(__u32 *field, uint64_t v)
{
	__u32 v32 = v > UINT32_MAX ? UINT32_MAX : (__u32)v;

	if (*field != v32)
		*field = v32;
}

static void publish_path_estimates(struct xr_qp_entry *e, const struct xr_qp_impl *qp)
{
	/* Rounded up: 0 is for no sample yet. */
	publish_u32(&e->srtt_us, (qp->srtt_ns + 999) / 1000);
	publish_u32(&e->rttvar_us, (qp->rttvar_ns + 999) / 1000);
	publish_u32(&e->cwnd, qp->cwnd);
	publish_u32(&e->sr_flags, (qp->sr_peer ? XR_QP_SR_REQUESTER : 0) |
				      (qp->sr_requester ? XR_QP_SR_RESPONDER : 0));
	publish_u32(&e->rate_mbps,
		    qp->dcqcn.limiting ? (qp->dcqcn.rate * 8 + 999999) / 1000000 : 0);
}

/* Also refreshes the QP's counters in its entry, for bpftool and the loader. */
void xr_xdp_poll_acks(struct xr_qp_impl *qp, uint64_t now)
{
	struct xr_qp_entry *e = entry_of(qp);
	uint32_t psn;

	if (!e)
		return;
	/* Written only when changed: the entry's cache lines are shared with XDP. */
	if (memcmp(&e->counters, &qp->cnt, sizeof(qp->cnt)))
		e->counters = qp->cnt;
	publish_path_estimates(e, qp);
	if (!(e->fast_path & XR_XDP_FAST_ACK))
		return;
	psn = (uint32_t)__atomic_load_n(&e->xdp_ack, __ATOMIC_ACQUIRE) & XR_PSN_MASK;
	if (xr_psn_diff(psn, qp->acked_psn) > 0)
		xr_completer_ack(qp, psn, now);
}

void xr_core_set_engine_sleeping(struct xr_core *core, uint32_t lane, bool sleeping)
{
	core->lanes[lane].engine_sleeping = sleeping;
	if (!core->xdp_qps)
		return;
	for (uint32_t i = 0; i < core->qp_slots_used; i++)
		if (core->qps[i] && core->qps[i]->lane == lane)
			__atomic_store_n(&entry_of(core->qps[i])->engine_sleeping, sleeping,
					 __ATOMIC_SEQ_CST);
}

void xr_xdp_publish_engine_sleeping(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);

	if (e)
		__atomic_store_n(&e->engine_sleeping, qp->core->lanes[qp->lane].engine_sleeping,
				 __ATOMIC_SEQ_CST);
}

/*
 * Only the MAC of a published entry: the rest (xdp_ack above all, which XDP
 * may have moved since the engine last looked) stays as it is. Closed
 * meanwhile, as every write of the entry's fields.
 */
static void republish_local_mac(struct xr_qp_impl *qp)
{
	struct xr_qp_entry *e = entry_of(qp);
	uint32_t st;

	if (!e)
		return;
	st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
	if (st == XR_XDP_QP_NONE)
		return;
	__atomic_store_n(&e->state, XR_XDP_QP_CLOSED, __ATOMIC_SEQ_CST);
	memcpy(e->local_mac, qp->core->mac, sizeof(e->local_mac));
	__atomic_store_n(&e->state, st, __ATOMIC_SEQ_CST);
}

void xr_core_mac_changed(struct xr_core *core, const uint8_t mac[6])
{
	uint8_t old[6];

	memcpy(old, core->mac, sizeof(old));
	memcpy(core->mac, mac, sizeof(core->mac));
	for (uint32_t i = 0; i < XR_MAX_QP; i++) {
		struct xr_qp_impl *qp = core->qps[i];

		if (!qp)
			continue;
		/* Paths given before the change were from the old address: now from the new. */
		if (!memcmp(qp->path.smac, old, sizeof(old)))
			memcpy(qp->path.smac, mac, sizeof(qp->path.smac));
		republish_local_mac(qp);
	}
	if (core->xdp_qps && !core->xdp_holder &&
	    core->xdp_qps[XR_GSI_SLOT].state != XR_XDP_QP_NONE)
		xr_xdp_publish_gsi(core);
}
