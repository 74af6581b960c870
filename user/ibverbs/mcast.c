/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups for UD QPs. The GID is the group (RoCE has no LIDs, so
 * lid is ignored); libxroce joins the interface to the IP group and steers
 * its datagrams to every attached QP.
 */
#include "shim.h"

_Static_assert(sizeof(union ibv_gid) == sizeof(union xr_gid), "GIDs are passed as they are");

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return xv_errno(xr_attach_mcast(xv_qp(qp)->xr, (const union xr_gid *)gid, lid));
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return xv_errno(xr_detach_mcast(xv_qp(qp)->xr, (const union xr_gid *)gid, lid));
}
