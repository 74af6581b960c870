/* SPDX-License-Identifier: MIT */
/*
 * Multicast joins: libxroce's CM joins the group and attaches the id's QP
 * (librdmacm would attach it when the application takes MULTICAST_JOIN;
 * the QP is the same one, behind the verbs layer's wrapper). A synchronous
 * id waits for the join's event, as librdmacm's does.
 */
#include "rdmacm.h"

#define RC_SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(RC_SAME(RDMA_CM_JOIN_MC_ATTR_ADDRESS, XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS) &&
		   RC_SAME(RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS, XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) &&
		   RC_SAME(RDMA_CM_JOIN_MC_ATTR_RESERVED, XR_RDMA_CM_JOIN_MC_ATTR_RESERVED),
	       "librdmacm's join attribute mask is libxroce's");
_Static_assert(RC_SAME(RDMA_MC_JOIN_FLAG_FULLMEMBER, XR_RDMA_MC_JOIN_FLAG_FULLMEMBER) &&
		   RC_SAME(RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
			   XR_RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) &&
		   RC_SAME(RDMA_MC_JOIN_FLAG_RESERVED, XR_RDMA_MC_JOIN_FLAG_RESERVED),
	       "librdmacm's join flags are libxroce's");

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	err = xr_rdma_join_multicast(rc_id(id)->xr, addr, context);
	return err ? rc_fail(-err) : rc_complete(rc_id(id));
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	struct xr_rdma_cm_join_mc_attr_ex attr;
	int err;

	if (!id || !mc_join_attr)
		return rc_fail(EINVAL);
	attr = (struct xr_rdma_cm_join_mc_attr_ex){
	    .comp_mask = mc_join_attr->comp_mask,
	    .join_flags = mc_join_attr->join_flags,
	    .addr = mc_join_attr->addr,
	};
	err = xr_rdma_join_multicast_ex(rc_id(id)->xr, &attr, context);
	return err ? rc_fail(-err) : rc_complete(rc_id(id));
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (!id)
		return rc_fail(EINVAL);
	return rc_ret(xr_rdma_leave_multicast(rc_id(id)->xr, addr));
}
