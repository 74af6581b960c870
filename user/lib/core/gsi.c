/* SPDX-License-Identifier: MIT */
/*
 * QP1, the general services interface: management datagrams in and out.
 * A MAD travels as a UD SEND_ONLY to QP 1 with the GSI Q_Key and a DETH
 * naming source QP 1, 256 bytes of payload; the PSN counts QP1's sends, as
 * rxe's. One QP1 per device, shared by every connection. The CM's class
 * goes to the communication manager (cm.h). Classes without an agent here
 * are dropped and counted; a Get or Set among them is answered with a
 * GetResp saying the class is not supported, as IBTA 13.5.3 asks.
 */
#include <string.h>

#include "cm.h"
#include "core.h"
#include "mad.h"

void xr_gsi_path_to_sender(const struct xr_core *core, const struct xr_pkt *pkt,
			   struct xr_path *path)
{
	memset(path, 0, sizeof(*path));
	memcpy(path->smac, core->mac, sizeof(path->smac));
	memcpy(path->dmac, pkt->smac, sizeof(path->dmac));
	path->sgid = pkt->dgid;
	path->dgid = pkt->sgid;
}

bool xr_gsi_send(struct xr_core *core, const struct xr_path *path, const uint8_t *mad)
{
	struct xr_bth_fields bth = {
	    .opcode = XR_OP_UD_SEND_ONLY,
	    .ackreq = true, /* as Linux's QP1 sends them */
	    .dqpn = XR_GSI_QPN,
	    .psn = core->gsi_psn,
	};
	struct xr_path p = *path;
	struct xr_pkt_out out;
	uint8_t *deth;

	p.udp_sport = xr_udp_sport_for_qpn(XR_GSI_QPN);
	if (!xr_core_frame_begin_to(core, &p, &bth, XR_MAD_SIZE, &out))
		return false;
	deth = out.bth + xr_deth_off(xr_opinfo[bth.opcode].flags);
	xr_put32(deth, XR_GSI_QKEY);
	xr_put32(deth + 4, XR_GSI_QPN);
	xr_pkt_put_payload(&out, 0, mad, XR_MAD_SIZE);
	xr_core_frame_send(core, NULL, &out);
	core->gsi_psn = xr_psn_add(core->gsi_psn, 1);
	core->stats.mads_tx++;
	return true;
}

bool xr_gsi_answer(struct xr_core *core, const struct xr_pkt *pkt, const uint8_t *mad)
{
	struct xr_path path;

	xr_gsi_path_to_sender(core, pkt, &path);
	return xr_gsi_send(core, &path, mad);
}

static bool is_request(uint8_t method)
{
	return method == XR_MAD_METHOD_GET || method == XR_MAD_METHOD_SET;
}

/* A MAD nobody here serves: dropped, and a request told so. */
static void unserved(struct xr_core *core, const struct xr_pkt *pkt, const uint8_t *mad)
{
	uint8_t resp[XR_MAD_SIZE];

	core->stats.mads_unserved++;
	if (!is_request((uint8_t)xr_mad_get(mad, XR_MAD_METHOD)))
		return;
	memcpy(resp, mad, sizeof(resp));
	xr_mad_set(resp, XR_MAD_METHOD, XR_MAD_METHOD_GET_RESP);
	xr_mad_set(resp, XR_MAD_STATUS, XR_MAD_STATUS_BAD_VERSION);
	xr_gsi_answer(core, pkt, resp);
}

void xr_gsi_rx(struct xr_core *core, const struct xr_pkt *pkt, uint64_t now)
{
	const uint8_t *mad = pkt->payload;

	if (pkt->deth_qkey != XR_GSI_QKEY) {
		core->stats.rx_bad_qkey++;
		return;
	}
	/* MADs are unicast, and the reply goes back to the sender: never to a group. */
	if (pkt->opcode != XR_OP_UD_SEND_ONLY || pkt->payload_len != XR_MAD_SIZE ||
	    (pkt->smac[0] & 1) || (pkt->dmac[0] & 1) || !xr_core_gid_is_local(core, &pkt->dgid) ||
	    xr_mad_get(mad, XR_MAD_BASE_VERSION) != XR_MGMT_BASE_VERSION) {
		core->stats.mads_malformed++;
		return;
	}
	core->stats.mads_rx++;
	if (xr_mad_get(mad, XR_MAD_MGMT_CLASS) == XR_MGMT_CLASS_CM &&
	    xr_mad_get(mad, XR_MAD_CLASS_VERSION) == XR_CM_CLASS_VERSION) {
		/* Made at the first message even with no consumer: a REQ then gets its REJ. */
		if (!core->cm)
			core->cm = xr_cm_create(core);
		if (xr_cm_rx(core->cm, pkt, mad, now))
			return;
	}
	unserved(core, pkt, mad);
}
