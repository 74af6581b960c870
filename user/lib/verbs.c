/* SPDX-License-Identifier: MIT */
/*
 * The public API: argument checks, the device lock around the core, errno
 * conventions (int functions return 0 or -errno; pointer functions NULL
 * with errno set), and waking the engine when work is posted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "mcast.h"
#include "mem_pin.h"
#include "xsk_port.h"

static inline struct xr_device *dev_of_pd(struct xr_pd *pd)
{
	return pd->core->device;
}

static inline struct xr_qp_impl *qp_impl(struct xr_qp *qp)
{
	return (struct xr_qp_impl *)qp;
}

static inline struct xr_cq_impl *cq_impl(struct xr_cq *cq)
{
	return (struct xr_cq_impl *)cq;
}

static int fail(int err)
{
	errno = -err;
	return err;
}

static void *fail_ptr(int err)
{
	errno = -err;
	return NULL;
}

struct xr_pd *xr_alloc_pd(struct xr_device *dev)
{
	struct xr_pd *pd;

	if (!dev)
		return fail_ptr(-EINVAL);
	pthread_mutex_lock(&dev->lock);
	pd = xr_core_alloc_pd(&dev->core);
	pthread_mutex_unlock(&dev->lock);
	return pd ? pd : fail_ptr(-ENOMEM);
}

int xr_dealloc_pd(struct xr_pd *pd)
{
	struct xr_device *dev;
	int err;

	if (!pd)
		return fail(-EINVAL);
	dev = dev_of_pd(pd);
	pthread_mutex_lock(&dev->lock);
	err = xr_core_dealloc_pd(pd);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

/* The rights ib_umem pins writable for: a window bound with MW_BIND may grant writes. */
#define XR_ACCESS_WRITABLE                                                                         \
	(XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC |                \
	 XR_ACCESS_MW_BIND)

struct xr_mr *xr_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_device *dev;
	struct xr_mr *mr;
	int err;

	if (!pd)
		return fail_ptr(-EINVAL);
	err = xr_core_check_reg_mr(addr, length, access);
	/* Pinned before the MR exists (and outside the lock: it faults the pages in). */
	if (!err)
		err = xr_mem_pin(addr, length, access & XR_ACCESS_WRITABLE);
	if (err)
		return fail_ptr(err);
	dev = dev_of_pd(pd);
	pthread_mutex_lock(&dev->lock);
	mr = xr_core_reg_mr(pd, addr, length, access, &err);
	pthread_mutex_unlock(&dev->lock);
	if (!mr) {
		xr_mem_unpin(addr, length);
		return fail_ptr(err);
	}
	return mr;
}

int xr_dereg_mr(struct xr_mr *mr)
{
	struct xr_device *dev;
	void *addr;
	size_t length;
	bool pinned;
	int err;

	if (!mr)
		return fail(-EINVAL);
	/* Read before the MR goes; a fast-registration MR pinned nothing. */
	pinned = xr_mr_impl(mr)->kind == XR_MR_USER;
	addr = mr->addr;
	length = mr->length;
	dev = dev_of_pd(mr->pd);
	pthread_mutex_lock(&dev->lock);
	err = xr_core_dereg_mr(mr);
	pthread_mutex_unlock(&dev->lock);
	if (err)
		return fail(err);
	if (pinned)
		xr_mem_unpin(addr, length);
	return 0;
}

struct xr_mr *xr_alloc_mr(struct xr_pd *pd, uint32_t max_num_sg)
{
	struct xr_device *dev;
	struct xr_mr *mr;
	int err;

	if (!pd)
		return fail_ptr(-EINVAL);
	dev = dev_of_pd(pd);
	pthread_mutex_lock(&dev->lock);
	mr = xr_core_alloc_mr(pd, max_num_sg, &err);
	pthread_mutex_unlock(&dev->lock);
	return mr ? mr : fail_ptr(err);
}

int xr_map_mr_sg(struct xr_mr *mr, const struct xr_sge *sg, int sg_nents, const uint64_t *iova,
		 unsigned int page_size)
{
	struct xr_device *dev;
	int ret;

	if (!mr)
		return fail(-EINVAL);
	dev = dev_of_pd(mr->pd);
	pthread_mutex_lock(&dev->lock);
	ret = xr_core_map_mr_sg(mr, sg, sg_nents, iova, page_size);
	pthread_mutex_unlock(&dev->lock);
	return ret < 0 ? fail(ret) : ret;
}

void xr_update_fast_reg_key(struct xr_mr *mr, uint8_t newkey)
{
	if (!mr)
		return;
	mr->lkey = (mr->lkey & 0xffffff00u) | newkey;
	mr->rkey = (mr->rkey & 0xffffff00u) | newkey;
}

struct xr_mw *xr_alloc_mw(struct xr_pd *pd, enum xr_mw_type type)
{
	struct xr_device *dev;
	struct xr_mw *mw;
	int err;

	if (!pd)
		return fail_ptr(-EINVAL);
	dev = dev_of_pd(pd);
	pthread_mutex_lock(&dev->lock);
	mw = xr_core_alloc_mw(pd, type, &err);
	pthread_mutex_unlock(&dev->lock);
	return mw ? mw : fail_ptr(err);
}

int xr_dealloc_mw(struct xr_mw *mw)
{
	struct xr_device *dev;
	int err;

	if (!mw)
		return fail(-EINVAL);
	dev = dev_of_pd(mw->pd);
	pthread_mutex_lock(&dev->lock);
	err = xr_core_dealloc_mw(mw);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_bind_mw(struct xr_qp *qp, struct xr_mw *mw, struct xr_mw_bind *mw_bind)
{
	struct xr_device *dev;
	int err;

	if (!qp || !mw || !mw_bind || mw->pd->core != qp_impl(qp)->core)
		return fail(-EINVAL);
	dev = qp->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_bind_mw(qp_impl(qp), mw, mw_bind);
	xr_unlock_and_notify(dev);
	xr_engine_kick(dev);
	return err ? fail(err) : 0;
}

/*
 * The MAC frames to dgid go to. Called without the lock: asking the
 * neighbour table may wait for ARP or neighbour discovery.
 */
static int resolve_dmac(struct xr_device *dev, const union xr_gid *dgid, uint8_t dmac[6])
{
	bool local;

	if (xr_gid_is_multicast(dgid)) {
		xr_mcast_mac(dgid, dmac); /* a group has no neighbour to ask */
		return 0;
	}
	/* Our own GID: the engine delivers the frames itself (loopback.h). */
	pthread_mutex_lock(&dev->lock);
	local = xr_core_gid_is_local(&dev->core, dgid);
	if (local)
		memcpy(dmac, dev->core.mac, 6);
	pthread_mutex_unlock(&dev->lock);
	return local ? 0 : xr_nl_resolve_neigh(dev->netdev.ifindex, dgid, dmac, 3000);
}

struct xr_ah *xr_create_ah(struct xr_pd *pd, struct xr_ah_attr *attr)
{
	struct xr_device *dev;
	struct xr_ah *ah;
	uint8_t dmac[6];
	int err;

	if (!pd || !attr || !attr->is_global)
		return fail_ptr(-EINVAL);
	dev = dev_of_pd(pd);
	err = resolve_dmac(dev, &attr->grh.dgid, dmac);
	if (err)
		return fail_ptr(err);
	pthread_mutex_lock(&dev->lock);
	ah = xr_core_create_ah(pd, attr, dmac, &err);
	pthread_mutex_unlock(&dev->lock);
	return ah ? ah : fail_ptr(err);
}

int xr_destroy_ah(struct xr_ah *ah)
{
	struct xr_device *dev;
	int err;

	if (!ah)
		return fail(-EINVAL);
	dev = dev_of_pd(ah->pd);
	pthread_mutex_lock(&dev->lock);
	err = xr_core_destroy_ah(ah);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

static inline struct xr_srq_impl *srq_impl(struct xr_srq *srq)
{
	return (struct xr_srq_impl *)srq;
}

struct xr_srq *xr_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *init_attr)
{
	struct xr_srq_impl *srq;
	struct xr_device *dev;
	int err;

	if (!pd || !init_attr)
		return fail_ptr(-EINVAL);
	dev = dev_of_pd(pd);
	pthread_mutex_lock(&dev->lock);
	srq = xr_core_create_srq(pd, init_attr, &err);
	pthread_mutex_unlock(&dev->lock);
	return srq ? &srq->pub : fail_ptr(err);
}

int xr_modify_srq(struct xr_srq *srq, struct xr_srq_attr *attr, int attr_mask)
{
	struct xr_device *dev;
	int err;

	if (!srq || !attr)
		return fail(-EINVAL);
	dev = srq->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_modify_srq(srq_impl(srq), attr, attr_mask);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_query_srq(struct xr_srq *srq, struct xr_srq_attr *attr)
{
	if (!srq || !attr)
		return fail(-EINVAL);
	pthread_mutex_lock(&srq->device->lock);
	xr_core_query_srq(srq_impl(srq), attr);
	pthread_mutex_unlock(&srq->device->lock);
	return 0;
}

int xr_destroy_srq(struct xr_srq *srq)
{
	struct xr_device *dev;
	int err;

	if (!srq)
		return fail(-EINVAL);
	dev = srq->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_destroy_srq(srq_impl(srq));
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_post_srq_recv(struct xr_srq *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr)
{
	struct xr_device *dev;
	int err;

	if (!srq || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(-EINVAL);
	}
	dev = srq->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_post_srq_recv(srq_impl(srq), wr, bad_wr);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_attach_mcast(struct xr_qp *qp, const union xr_gid *gid, uint16_t lid)
{
	struct xr_device *dev;
	bool first;
	int group, err;

	(void)lid; /* RoCE has no LIDs */
	if (!qp || !gid)
		return fail(-EINVAL);
	dev = qp->device;
	/* Group membership is the interface's, which the device's owner holds. */
	if (dev->share_guest)
		return fail(-EOPNOTSUPP);
	pthread_mutex_lock(&dev->lock);
	err = xr_core_attach_mcast(qp_impl(qp), gid, &group, &first);
	if (!err && first) {
		err = xr_mcast_join(dev, group, gid, 1);
		if (err) {
			bool last;

			xr_core_detach_mcast(qp_impl(qp), gid, &group, &last);
		}
	} else if (!err) {
		xr_mcast_count(dev, gid, dev->core.mcast[group].nqps);
	}
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_detach_mcast(struct xr_qp *qp, const union xr_gid *gid, uint16_t lid)
{
	struct xr_device *dev;
	bool last;
	int group, err;

	(void)lid;
	if (!qp || !gid)
		return fail(-EINVAL);
	dev = qp->device;
	pthread_mutex_lock(&dev->lock);
	/* Under the lock the engine delivers nothing to qp from here on. */
	err = xr_core_detach_mcast(qp_impl(qp), gid, &group, &last);
	if (!err && last)
		xr_mcast_leave(dev, group, gid);
	else if (!err)
		xr_mcast_count(dev, gid, dev->core.mcast[group].nqps);
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

/* 20 zero bytes then an IPv4 header without options: RoCEv2 over IPv4's GRH area. */
static bool grh_holds_ipv4(const uint8_t *raw)
{
	for (int i = 0; i < XR_GRH_SIZE - 20; i++)
		if (raw[i])
			return false;
	return raw[20] == 0x45;
}

static void gid_from_ipv4(union xr_gid *gid, const uint8_t *addr)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], addr, 4);
}

int xr_init_ah_from_wc(struct xr_device *dev, uint8_t port_num, const struct xr_wc *wc,
		       const struct xr_grh *grh, struct xr_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	union xr_gid sgid, dgid;
	int index;

	if (!dev || !wc || !grh || !ah_attr || (port_num && port_num != 1) ||
	    !(wc->wc_flags & XR_WC_GRH))
		return fail(-EINVAL);
	memset(ah_attr, 0, sizeof(*ah_attr));
	if (grh_holds_ipv4(raw)) {
		gid_from_ipv4(&sgid, raw + 20 + 12);
		gid_from_ipv4(&dgid, raw + 20 + 16);
		ah_attr->grh.traffic_class = raw[21];
	} else if ((raw[0] >> 4) == 6) {
		sgid = grh->sgid;
		dgid = grh->dgid;
		ah_attr->grh.traffic_class = (uint8_t)((raw[0] & 0x0f) << 4 | raw[1] >> 4);
		ah_attr->grh.flow_label = ((uint32_t)(raw[1] & 0x0f) << 16) | raw[2] << 8 | raw[3];
	} else {
		return fail(-EINVAL);
	}
	/* The reply leaves from the GID the datagram was sent to. */
	for (index = 0; index < dev->core.num_gids; index++)
		if (!memcmp(&dev->core.gids[index], &dgid, sizeof(dgid)))
			break;
	if (index == dev->core.num_gids)
		return fail(-ENOENT);
	ah_attr->is_global = 1;
	ah_attr->port_num = 1;
	ah_attr->grh.dgid = sgid;
	ah_attr->grh.sgid_index = (uint8_t)index;
	ah_attr->grh.hop_limit = 0xff;
	return 0;
}

struct xr_ah *xr_create_ah_from_wc(struct xr_pd *pd, const struct xr_wc *wc,
				   const struct xr_grh *grh, uint8_t port_num)
{
	struct xr_ah_attr attr;

	if (!pd)
		return fail_ptr(-EINVAL);
	if (xr_init_ah_from_wc(dev_of_pd(pd), port_num, wc, grh, &attr))
		return NULL;
	return xr_create_ah(pd, &attr);
}

struct xr_cq *xr_create_cq(struct xr_device *dev, int cqe, struct xr_comp_channel *channel)
{
	struct xr_cq_impl *cq;
	int err;

	if (!dev || (channel && channel->device != dev))
		return fail_ptr(-EINVAL);
	pthread_mutex_lock(&dev->lock);
	cq = xr_core_create_cq(&dev->core, cqe, &err);
	if (cq && channel) {
		cq->channel = channel;
		cq->pub.channel = channel;
		channel->refcnt++;
	}
	pthread_mutex_unlock(&dev->lock);
	return cq ? &cq->pub : fail_ptr(err);
}

int xr_destroy_cq(struct xr_cq *cq)
{
	struct xr_device *dev;
	int err;

	if (!cq)
		return fail(-EINVAL);
	dev = cq->device;
	pthread_mutex_lock(&dev->lock);
	if (cq_impl(cq)->events_acked != cq_impl(cq)->events_got || cq_impl(cq)->refs) {
		/* As verbs: no QP uses it, every event taken was acknowledged. */
		err = -EBUSY;
	} else {
		struct xr_comp_channel *ch = cq->channel;

		/* Events that fired and nobody took go with it, as in verbs. */
		if (ch) {
			xr_channel_forget(ch, cq_impl(cq));
			ch->refcnt--;
		}
		err = xr_core_destroy_cq(cq_impl(cq));
	}
	pthread_mutex_unlock(&dev->lock);
	return err ? fail(err) : 0;
}

int xr_resize_cq(struct xr_cq *cq, int cqe)
{
	struct xr_device *dev;
	int err;

	if (!cq)
		return fail(-EINVAL);
	dev = cq->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_resize_cq(cq_impl(cq), cqe);
	pthread_mutex_unlock(&dev->lock);
	/* Work held back by a full CQ may go on now. */
	if (!err)
		xr_engine_kick(dev);
	return err ? fail(err) : 0;
}

int xr_poll_cq(struct xr_cq *cq, int num_entries, struct xr_wc *wc)
{
	struct xr_cq_impl *c = cq_impl(cq);
	uint64_t deadline, now;
	int n;

	if (!cq || num_entries < 0 || (num_entries && !wc))
		return fail(-EINVAL);
	if (num_entries && __atomic_load_n(&c->head, __ATOMIC_ACQUIRE) != c->tail) {
		pthread_mutex_lock(&cq->device->lock);
		n = xr_core_poll_cq(c, num_entries, wc);
		pthread_mutex_unlock(&cq->device->lock);
		return n;
	}
	/*
	 * Nothing to take: a spinning poller does an engine round itself rather
	 * than compete with the engine thread for a core (run to completion);
	 * when the engine holds the lock, it is doing that work already. An
	 * armed CQ means the application is about to sleep on its channel.
	 */
	now = xr_now_ns();
	if (c->armed == XR_CQ_ARM_NONE)
		__atomic_store_n(&cq->device->app_poll_until, now + XR_APP_POLL_GRACE_NS,
				 __ATOMIC_RELAXED);
	if (pthread_mutex_trylock(&cq->device->lock))
		return 0;
	xr_engine_round_locked(cq->device, XR_ENGINE_ALL, now, &deadline);
	n = xr_core_poll_cq(c, num_entries, wc);
	xr_unlock_and_notify(cq->device);
	return n;
}

struct xr_qp *xr_create_qp(struct xr_pd *pd, struct xr_qp_init_attr *attr)
{
	struct xr_qp_impl *qp;
	struct xr_device *dev;
	int err;

	if (!pd || !attr)
		return fail_ptr(-EINVAL);
	dev = dev_of_pd(pd);
	if ((attr->send_cq && attr->send_cq->device != dev) ||
	    (attr->recv_cq && attr->recv_cq->device != dev))
		return fail_ptr(-EINVAL);
	pthread_mutex_lock(&dev->lock);
	qp = xr_core_create_qp(pd, attr, &err);
	pthread_mutex_unlock(&dev->lock);
	if (!qp)
		return fail_ptr(err);
	attr->cap = qp->cap;
	return &qp->pub;
}

int xr_modify_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int attr_mask)
{
	uint8_t dmac[6], *mac = NULL;
	struct xr_device *dev;
	int err;

	if (!qp || !attr)
		return fail(-EINVAL);
	dev = qp->device;
	if (attr_mask & XR_QP_AV) {
		/* A connected QP's peer is one port, never a group. */
		if (!attr->ah_attr.is_global || xr_gid_is_multicast(&attr->ah_attr.grh.dgid))
			return fail(-EINVAL);
		err = resolve_dmac(dev, &attr->ah_attr.grh.dgid, dmac);
		if (err)
			return fail(err);
		mac = dmac;
	}
	pthread_mutex_lock(&dev->lock);
	err = xr_core_modify_qp(qp_impl(qp), attr, attr_mask, mac);
	xr_unlock_and_notify(dev); /* to ERR: the flush completes work */
	if (!err)
		xr_engine_kick(dev);
	return err ? fail(err) : 0;
}

int xr_query_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int attr_mask,
		struct xr_qp_init_attr *init_attr)
{
	int err;

	(void)attr_mask; /* every attribute is reported */
	if (!qp || !attr)
		return fail(-EINVAL);
	pthread_mutex_lock(&qp->device->lock);
	err = xr_core_query_qp(qp_impl(qp), attr, init_attr);
	pthread_mutex_unlock(&qp->device->lock);
	return err ? fail(err) : 0;
}

int xr_destroy_qp(struct xr_qp *qp)
{
	struct xr_device *dev;
	int err;

	if (!qp)
		return fail(-EINVAL);
	dev = qp->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_destroy_qp(qp_impl(qp));
	/* What it sent on its way out goes now: the process may exit next. */
	if (!err && dev->port)
		xr_xsk_port_tx_publish(dev->port);
	pthread_mutex_unlock(&dev->lock);
	if (err)
		return fail(err);
	xr_engine_transmit(dev);
	return 0;
}

static int post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad_wr,
		     bool all_or_none)
{
	struct xr_device *dev;
	uint64_t now;
	bool app_drives;
	int err;

	if (!qp || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(-EINVAL);
	}
	dev = qp->device;
	pthread_mutex_lock(&dev->lock);
	err = all_or_none ? xr_core_post_send_all_or_none(qp_impl(qp), wr, bad_wr)
			  : xr_core_post_send(qp_impl(qp), wr, bad_wr);
	now = xr_now_ns();
	app_drives = now < __atomic_load_n(&dev->app_poll_until, __ATOMIC_RELAXED);
	if (app_drives) {
		/* The application drives the engine: transmit now, on this thread. */
		uint64_t deadline;

		xr_engine_round_locked(dev, XR_ENGINE_ALL, now, &deadline);
	}
	xr_unlock_and_notify(dev);
	if (!app_drives)
		xr_engine_wake(dev);
	return err ? fail(err) : 0;
}

int xr_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, false);
}

int xr_post_send_all_or_none(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, true);
}

int xr_post_recv(struct xr_qp *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr)
{
	struct xr_device *dev;
	int err;

	if (!qp || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return fail(-EINVAL);
	}
	dev = qp->device;
	pthread_mutex_lock(&dev->lock);
	err = xr_core_post_recv(qp_impl(qp), wr, bad_wr);
	xr_unlock_and_notify(dev);
	return err ? fail(err) : 0;
}

const char *xr_wc_status_str(enum xr_wc_status status)
{
	static const char *const names[] = {
	    [XR_WC_SUCCESS] = "success",
	    [XR_WC_LOC_LEN_ERR] = "local length error",
	    [XR_WC_LOC_QP_OP_ERR] = "local QP operation error",
	    [XR_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	    [XR_WC_LOC_PROT_ERR] = "local protection error",
	    [XR_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	    [XR_WC_MW_BIND_ERR] = "memory management operation error",
	    [XR_WC_BAD_RESP_ERR] = "bad response error",
	    [XR_WC_LOC_ACCESS_ERR] = "local access error",
	    [XR_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	    [XR_WC_REM_ACCESS_ERR] = "remote access error",
	    [XR_WC_REM_OP_ERR] = "remote operation error",
	    [XR_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	    [XR_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	    [XR_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	    [XR_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	    [XR_WC_REM_ABORT_ERR] = "aborted error",
	    [XR_WC_INV_EECN_ERR] = "invalid EE context number",
	    [XR_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	    [XR_WC_FATAL_ERR] = "fatal error",
	    [XR_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	    [XR_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned)status < sizeof(names) / sizeof(names[0]) && names[status])
		return names[status];
	return "unknown";
}
