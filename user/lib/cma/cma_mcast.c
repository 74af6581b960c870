// SPDX-License-Identifier: MIT
/*
 * Multicast over the CM, as the kernel's cma.c joins on RoCE: there is no
 * subnet administrator to ask, so a join is complete at once. The group's
 * GID is the IP group's (IPv4-mapped for IPv4), its MAC is derived from it,
 * and the event carries the address handle to send to it. Where librdmacm
 * attaches the QP when the application takes the event, the CM does it
 * at the join: the QP is libxroce's, and the membership of the IP group
 * (xr_attach_mcast's) is what the kernel's join would have sent.
 *
 * An id's groups are changed only by calls on that id (join, leave,
 * destroy), which the application does not make concurrently, as with
 * librdmacm; cma_lock guards the list against the duplicate check of a
 * join racing a leave all the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

/* The hop limit cma.c gives a RoCEv2 group (IPV6_DEFAULT_HOPLIMIT). */
#define CMA_MCAST_HOP_LIMIT 64

struct cma_mcast {
	union xr_gid mgid; /* the group's address, as a GID */
	bool attached;	   /* the id's QP receives the group */
	struct cma_mcast *next;
};

static bool group_addr_ok(const struct cma_id *id, const struct sockaddr *addr, union xr_gid *mgid)
{
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return false;
	/* The group's frames go out with the source's IP version. */
	if (addr->sa_family != ((const struct sockaddr *)&id->pub.route.src_addr)->sa_family)
		return false;
	cma_addr_to_gid(addr, mgid);
	return xr_gid_is_multicast(mgid);
}

static struct cma_mcast **find_locked(struct cma_id *id, const union xr_gid *mgid)
{
	struct cma_mcast **pos;

	for (pos = &id->mcasts; *pos; pos = &(*pos)->next)
		if (!memcmp(&(*pos)->mgid, mgid, sizeof(*mgid)))
			break;
	return pos;
}

static int post_join(struct cma_id *id, const struct cma_mcast *mc, int attach_err, void *context)
{
	struct xr_rdma_cm_event ev = {
	    .event =
		attach_err ? XR_RDMA_CM_EVENT_MULTICAST_ERROR : XR_RDMA_CM_EVENT_MULTICAST_JOIN,
	    .status = attach_err,
	};
	struct xr_ah_attr *ah = &ev.param.ud.ah_attr;

	cma_ah_of_route(id, ah);
	ah->grh.dgid = mc->mgid;
	ah->grh.flow_label = 0;
	ah->grh.hop_limit = CMA_MCAST_HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
	ev.param.ud.qp_num = XR_MULTICAST_QPN;
	ev.param.ud.qkey = id->qkey;
	/* librdmacm hands the join's context back as the event's private data. */
	ev.param.ud.private_data = context;
	return cma_post_event(id, &ev, NULL, 0);
}

static void detach(struct cma_id *id, struct cma_mcast *mc)
{
	if (mc->attached && id->pub.qp)
		xr_detach_mcast(id->pub.qp, &mc->mgid, 0);
	mc->attached = false;
}

static int join(struct xr_rdma_cm_id *pub, const struct sockaddr *addr, uint32_t flags,
		void *context)
{
	struct cma_id *id = cma_id_of(pub);
	struct cma_mcast *mc;
	int err = 0;

	if (id->state != CMA_ADDR_BOUND && id->state != CMA_ADDR_RESOLVED)
		return cma_fail(-EINVAL);
	if (!id->cdev || pub->qp_type != XR_QPT_UD)
		return cma_fail(-EINVAL);
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return cma_fail(-ENOMEM);
	if (!group_addr_ok(id, addr, &mc->mgid)) {
		free(mc);
		return cma_fail(-EINVAL);
	}
	pthread_mutex_lock(&cma_lock);
	if (*find_locked(id, &mc->mgid)) {
		pthread_mutex_unlock(&cma_lock);
		free(mc);
		return cma_fail(-EADDRINUSE);
	}
	mc->next = id->mcasts;
	id->mcasts = mc;
	pthread_mutex_unlock(&cma_lock);
	if (pub->qp && flags == XR_RDMA_MC_JOIN_FLAG_FULLMEMBER) {
		err = xr_attach_mcast(pub->qp, &mc->mgid, 0);
		mc->attached = !err;
	}
	err = post_join(id, mc, err, context);
	if (err) {
		/* No event, no join: the application would wait for one forever. */
		pthread_mutex_lock(&cma_lock);
		*find_locked(id, &mc->mgid) = mc->next;
		pthread_mutex_unlock(&cma_lock);
		detach(id, mc);
		free(mc);
		return cma_fail(err);
	}
	return 0;
}

int xr_rdma_join_multicast(struct xr_rdma_cm_id *id, const struct sockaddr *addr, void *context)
{
	if (!id || !addr)
		return cma_fail(-EINVAL);
	return join(id, addr, XR_RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int xr_rdma_join_multicast_ex(struct xr_rdma_cm_id *id,
			      const struct xr_rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (!id || !attr)
		return cma_fail(-EINVAL);
	if (attr->comp_mask >= XR_RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cma_fail(-EOPNOTSUPP);
	if (!(attr->comp_mask & XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS) || !attr->addr)
		return cma_fail(-EINVAL);
	if (!(attr->comp_mask & XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= XR_RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_fail(-EINVAL);
	return join(id, attr->addr, attr->join_flags, context);
}

int xr_rdma_leave_multicast(struct xr_rdma_cm_id *pub, const struct sockaddr *addr)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct cma_mcast **pos, *mc;
	union xr_gid mgid;

	if (!id || !addr)
		return cma_fail(-EINVAL);
	if (!group_addr_ok(id, addr, &mgid))
		return cma_fail(-EADDRNOTAVAIL);
	pthread_mutex_lock(&cma_lock);
	pos = find_locked(id, &mgid);
	mc = *pos;
	if (mc)
		*pos = mc->next;
	pthread_mutex_unlock(&cma_lock);
	if (!mc)
		return cma_fail(-EADDRNOTAVAIL);
	detach(id, mc);
	free(mc);
	return 0;
}

void cma_mcast_detach_all(struct cma_id *id)
{
	for (struct cma_mcast *mc = id->mcasts; mc; mc = mc->next)
		detach(id, mc);
}

void cma_mcast_release(struct cma_id *id)
{
	struct cma_mcast *mc;

	cma_mcast_detach_all(id);
	pthread_mutex_lock(&cma_lock);
	mc = id->mcasts;
	id->mcasts = NULL;
	pthread_mutex_unlock(&cma_lock);
	while (mc) {
		struct cma_mcast *next = mc->next;

		free(mc);
		mc = next;
	}
}
