/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups: which local UD QPs are attached to which group, and the
 * delivery of a group's datagrams to each of them. Joining the group on the
 * interface and the XDP group table are the device's (user/lib/mcast.c).
 */
#include <errno.h>
#include <string.h>

#include "core.h"

bool xr_gid_is_multicast(const union xr_gid *gid)
{
	if (xr_gid_is_v4mapped(gid))
		return (gid->raw[12] & 0xf0) == 0xe0;
	return gid->raw[0] == 0xff;
}

void xr_mcast_mac(const union xr_gid *gid, uint8_t mac[6])
{
	if (xr_gid_is_v4mapped(gid)) {
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = gid->raw[13] & 0x7f;
		mac[4] = gid->raw[14];
		mac[5] = gid->raw[15];
	} else {
		mac[0] = mac[1] = 0x33;
		memcpy(mac + 2, &gid->raw[12], 4);
	}
}

static int find_group(const struct xr_core *core, const union xr_gid *gid)
{
	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++)
		if (core->mcast[i].nqps && !memcmp(&core->mcast[i].gid, gid, sizeof(*gid)))
			return i;
	return -1;
}

static int find_qp(const struct xr_mcast_group *g, const struct xr_qp_impl *qp)
{
	for (uint32_t i = 0; i < g->nqps; i++)
		if (g->qps[i] == qp)
			return (int)i;
	return -1;
}

static uint32_t total_attachments(const struct xr_core *core)
{
	uint32_t n = 0;

	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++)
		n += core->mcast[i].nqps;
	return n;
}

int xr_core_attach_mcast(struct xr_qp_impl *qp, const union xr_gid *gid, int *group, bool *first)
{
	struct xr_core *core = qp->core;
	struct xr_mcast_group *g;
	int i;

	if (qp->pub.qp_type != XR_QPT_UD || !xr_gid_is_multicast(gid))
		return -EINVAL;
	i = find_group(core, gid);
	*first = i < 0;
	if (i >= 0 && find_qp(&core->mcast[i], qp) >= 0) {
		*group = i;
		return 0; /* as rxe: attached once, delivered once */
	}
	if (total_attachments(core) >= XR_MAX_TOTAL_MCAST_QP_ATTACH)
		return -ENOMEM;
	if (i < 0) {
		for (i = 0; i < XR_MAX_MCAST_GROUPS && core->mcast[i].nqps; i++)
			;
		if (i == XR_MAX_MCAST_GROUPS)
			return -ENOMEM;
		core->mcast[i].gid = *gid;
	}
	g = &core->mcast[i];
	if (g->nqps == XR_MAX_MCAST_QP_ATTACH)
		return -ENOMEM;
	g->qps[g->nqps++] = qp;
	qp->mcast_groups++;
	*group = i;
	return 0;
}

int xr_core_detach_mcast(struct xr_qp_impl *qp, const union xr_gid *gid, int *group, bool *last)
{
	struct xr_core *core = qp->core;
	struct xr_mcast_group *g;
	int i = find_group(core, gid), at;

	if (i < 0)
		return -EINVAL;
	g = &core->mcast[i];
	at = find_qp(g, qp);
	if (at < 0)
		return -EINVAL;
	g->qps[at] = g->qps[--g->nqps];
	qp->mcast_groups--;
	*group = i;
	*last = !g->nqps;
	return 0;
}

void xr_mcast_rx(struct xr_core *core, const struct xr_pkt *pkt)
{
	struct xr_mcast_group *g;
	int i;

	if (xr_opcode_transport(pkt->opcode) != XR_TRANSPORT_UD) {
		core->stats.rx_unknown_qp++; /* only UD is multicast */
		return;
	}
	i = find_group(core, &pkt->dgid);
	if (i < 0) {
		core->stats.rx_unknown_qp++; /* detached while XDP was steering it */
		return;
	}
	g = &core->mcast[i];
	for (uint32_t q = 0; q < g->nqps; q++) {
		struct xr_qp_impl *qp = g->qps[q];

		if (qp->pub.state < XR_QPS_RTR || qp->pub.state == XR_QPS_ERR) {
			core->stats.rx_bad_state++;
			continue;
		}
		qp->rx_frames++;
		xr_ud_rx(qp, pkt);
	}
}
