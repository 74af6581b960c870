// SPDX-License-Identifier: MIT
/*
 * Connections: listen, connect, accept, reject and disconnect, on the IB
 * CM as Linux's cma.c drives ib_cm, with the QP moved along as librdmacm
 * moves it: INIT when the CM creates it, RTR and RTS from what the REQ and
 * REP carry (both PSNs, the path, the depths, the retry counts), ERR when
 * the connection is rejected or disconnected. UD ids resolve their peer's
 * QP with SIDR instead.
 *
 * The IB CM calls cm_handler from inside the device's core, with the
 * device's lock held: it moves the QP with the core's own calls, answers
 * on the wire at once (the RTU follows the REP in the same engine round)
 * and queues the application's event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

/* The REQ's and SIDR_REQ's room for the application, after the CMA header. */
#define CMA_REQ_USER_DATA (XR_CM_REQ_PRIVATE_DATA_SIZE - CMA_HDR_SIZE)
#define CMA_SIDR_REQ_USER_DATA (XR_CM_SIDR_REQ_PRIVATE_DATA_SIZE - CMA_HDR_SIZE)

static struct xr_qp_impl *qp_impl(struct xr_qp *qp)
{
	return (struct xr_qp_impl *)qp;
}

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/* The QP's ACK timeout: the option's, else what ib_cm derives from the path. */
static uint8_t ack_timeout(const struct cma_id *id)
{
	return id->ack_timeout ? id->ack_timeout : CMA_PACKET_LIFETIME + 1;
}

/* The MADs' path: the route the id resolved, or the one its REQ came along. */
static void mad_path(const struct cma_id *id, struct xr_path *path)
{
	const struct xr_rdma_path *p = &id->pub.route.path;

	memset(path, 0, sizeof(*path));
	memcpy(path->smac, id->pub.verbs->netdev.mac, 6);
	memcpy(path->dmac, p->dmac, 6);
	path->sgid = p->sgid;
	path->dgid = p->dgid;
	path->hop_limit = p->hop_limit;
	path->traffic_class = p->traffic_class;
	path->flow_label = p->flow_label;
}

void cma_ah_of_route(const struct cma_id *id, struct xr_ah_attr *ah)
{
	const struct xr_rdma_path *p = &id->pub.route.path;
	int sgid_index =
	    cma_gid_index(id->pub.verbs, (const struct sockaddr *)&id->pub.route.src_addr);

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = p->dgid;
	ah->grh.sgid_index = (uint8_t)(sgid_index < 0 ? 0 : sgid_index);
	ah->grh.flow_label = p->flow_label;
	ah->grh.hop_limit = p->hop_limit;
	ah->grh.traffic_class = p->traffic_class;
}

/* ---- the QP ----------------------------------------------------------------- */

int cma_qp_init(struct cma_id *id)
{
	struct xr_qp_attr attr = {.qp_state = XR_QPS_INIT, .port_num = 1};
	int mask = XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT;
	int err;

	if (id->pub.qp_type != XR_QPT_UD) {
		mask |= XR_QP_ACCESS_FLAGS; /* none until the REP says what the peer may do */
		return xr_modify_qp(id->pub.qp, &attr, mask);
	}
	attr.qkey = id->qkey;
	err = xr_modify_qp(id->pub.qp, &attr, mask | XR_QP_QKEY);
	if (err)
		return err;
	attr.qp_state = XR_QPS_RTR;
	err = xr_modify_qp(id->pub.qp, &attr, XR_QP_STATE);
	if (err)
		return err;
	attr.qp_state = XR_QPS_RTS;
	attr.sq_psn = 0;
	return xr_modify_qp(id->pub.qp, &attr, XR_QP_STATE | XR_QP_SQ_PSN);
}

/*
 * A message's starting PSN is the one its sender expects to receive, so the
 * one its receiver sends from (Linux's ib_cm, confirmed on rping's capture:
 * the client's first SEND carries the REP's starting PSN, the server's
 * first READ the REQ's).
 */
struct conn_attrs {
	uint32_t remote_qpn;
	uint32_t sq_psn, rq_psn;
	uint8_t responder_resources; /* reads and atomics we answer at once */
	uint8_t initiator_depth;     /* ... and have in flight */
	uint8_t retry_count, rnr_retry_count;
	uint8_t path_mtu;
	uint8_t timeout;
};

/* Under the device lock: INIT -> RTR -> RTS as ib_cm's init_qp_attr gives them. */
static int qp_connect_locked(struct cma_id *id, const struct conn_attrs *c)
{
	struct xr_qp_impl *qp = qp_impl(id->pub.qp);
	struct xr_qp_attr attr = {0};
	int err;

	attr.qp_state = XR_QPS_RTR;
	/* ib_cm grants remote writes always, reads and atomics when it answers any. */
	attr.qp_access_flags = XR_ACCESS_REMOTE_WRITE;
	if (c->responder_resources)
		attr.qp_access_flags |= XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
	attr.path_mtu = c->path_mtu;
	attr.dest_qp_num = c->remote_qpn;
	attr.rq_psn = c->rq_psn;
	attr.max_dest_rd_atomic = c->responder_resources;
	attr.min_rnr_timer = 0;
	cma_ah_of_route(id, &attr.ah_attr);
	err = xr_core_modify_qp(qp, &attr,
				XR_QP_STATE | XR_QP_ACCESS_FLAGS | XR_QP_AV | XR_QP_PATH_MTU |
				    XR_QP_DEST_QPN | XR_QP_RQ_PSN | XR_QP_MAX_DEST_RD_ATOMIC |
				    XR_QP_MIN_RNR_TIMER,
				id->pub.route.path.dmac);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = XR_QPS_RTS;
	attr.sq_psn = c->sq_psn;
	attr.timeout = c->timeout;
	attr.retry_cnt = c->retry_count;
	attr.rnr_retry = c->rnr_retry_count;
	attr.max_rd_atomic = c->initiator_depth;
	return xr_core_modify_qp(qp, &attr,
				 XR_QP_STATE | XR_QP_SQ_PSN | XR_QP_TIMEOUT | XR_QP_RETRY_CNT |
				     XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC,
				 NULL);
}

/* Under the device lock: a connection that ended or never was takes no more work. */
static void qp_error_locked(struct cma_id *id)
{
	struct xr_qp_attr attr = {.qp_state = XR_QPS_ERR};

	if (id->pub.qp)
		xr_core_modify_qp(qp_impl(id->pub.qp), &attr, XR_QP_STATE, NULL);
}

/* ---- events from the IB CM ------------------------------------------------ */

/* The depths from our side of the connection, as ib_cm reports a REQ's and a REP's. */
static void conn_param_of_req(const struct xr_cm_req_param *req, struct xr_rdma_conn_param *c)
{
	c->responder_resources = req->initiator_depth;
	c->initiator_depth = req->responder_resources;
	c->flow_control = req->flow_control;
	c->retry_count = req->retry_count;
	c->rnr_retry_count = req->rnr_retry_count;
	c->srq = req->srq;
	c->qp_num = req->qpn;
}

static void conn_param_of_rep(const struct xr_cm_rep_param *rep, struct xr_rdma_conn_param *c)
{
	c->responder_resources = rep->initiator_depth;
	c->initiator_depth = rep->responder_resources;
	c->flow_control = rep->flow_control;
	c->rnr_retry_count = rep->rnr_retry_count;
	c->srq = rep->srq;
	c->qp_num = rep->qpn;
}

/* An event with a status and the message's private data, nothing else. */
static void post(struct cma_id *id, enum xr_rdma_cm_event_type type, int status, const void *pd,
		 uint8_t pd_len)
{
	struct xr_rdma_cm_event ev = {.event = type, .status = status};

	cma_post_event(id, &ev, pd, pd_len);
}

/* The REP's event: CONNECT_RESPONSE or ESTABLISHED with its parameters. */
static void post_rep(struct cma_id *id, enum xr_rdma_cm_event_type type,
		     const struct xr_cm_event *cev)
{
	struct xr_rdma_cm_event ev = {.event = type};

	conn_param_of_rep(&cev->param.rep, &ev.param.conn);
	cma_post_event(id, &ev, cev->private_data, cev->private_data_len);
}

static void rep_received(struct cma_id *id, const struct xr_cm_event *cev)
{
	const struct xr_cm_rep_param *rep = &cev->param.rep;
	struct conn_attrs c = {
	    .remote_qpn = rep->qpn,
	    .sq_psn = rep->starting_psn,
	    .rq_psn = id->starting_psn,
	    .responder_resources = min_u8(id->responder_resources, rep->initiator_depth),
	    .initiator_depth = min_u8(id->initiator_depth, rep->responder_resources),
	    .retry_count = id->retry_count,
	    .rnr_retry_count = rep->rnr_retry_count,
	    .path_mtu = id->pub.route.path.mtu,
	    .timeout = ack_timeout(id),
	};
	int err;

	if (!id->pub.qp) {
		/* The application moves its QP, then calls xr_rdma_establish. */
		id->req.responder_resources = c.responder_resources;
		id->req.initiator_depth = c.initiator_depth;
		post_rep(id, XR_RDMA_CM_EVENT_CONNECT_RESPONSE, cev);
		return;
	}
	err = qp_connect_locked(id, &c);
	if (err) {
		xr_cm_send_rej(id->cm, XR_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, xr_now_ns());
		qp_error_locked(id);
		post(id, XR_RDMA_CM_EVENT_CONNECT_ERROR, err, NULL, 0);
		return;
	}
	xr_cm_send_rtu(id->cm, NULL, 0);
	post_rep(id, XR_RDMA_CM_EVENT_ESTABLISHED, cev);
}

static void sidr_rep_received(struct cma_id *id, const struct xr_cm_event *cev)
{
	const struct xr_cm_sidr_rep_param *rep = &cev->param.sidr_rep;
	struct xr_rdma_cm_event ev = {.event = XR_RDMA_CM_EVENT_ESTABLISHED};

	if (rep->status != XR_CM_SIDR_SUCCESS) {
		ev.event = XR_RDMA_CM_EVENT_UNREACHABLE;
		ev.status = rep->status;
	} else if (rep->qkey != id->qkey) {
		ev.event = XR_RDMA_CM_EVENT_UNREACHABLE;
		ev.status = -EINVAL;
	} else {
		cma_ah_of_route(id, &ev.param.ud.ah_attr);
		ev.param.ud.qp_num = rep->qpn;
		ev.param.ud.qkey = rep->qkey;
	}
	cma_post_event(id, &ev, cev->private_data, cev->private_data_len);
}

/* Disconnected once, whichever of DREQ, DREP or their timeout says it first. */
static void disconnected(struct cma_id *id, int status)
{
	if (id->state != CMA_CONNECT)
		return;
	id->state = CMA_DISCONNECT;
	post(id, XR_RDMA_CM_EVENT_DISCONNECTED, status, NULL, 0);
}

static int request_received(struct xr_cm_id *cm, const struct xr_cm_event *cev);

static int cm_handler(struct xr_cm_id *cm, const struct xr_cm_event *cev)
{
	struct cma_id *id = cm->context;

	if (cev->type == XR_CM_REQ_RECEIVED || cev->type == XR_CM_SIDR_REQ_RECEIVED)
		return request_received(cm, cev);
	if (id->state == CMA_DESTROYING)
		return 0;
	switch (cev->type) {
	case XR_CM_REP_RECEIVED:
		rep_received(id, cev);
		break;
	case XR_CM_RTU_RECEIVED:
	case XR_CM_USER_ESTABLISHED:
		post(id, XR_RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		break;
	case XR_CM_REQ_ERROR:
	case XR_CM_REP_ERROR:
	case XR_CM_SIDR_REQ_ERROR:
		qp_error_locked(id);
		post(id, XR_RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		break;
	case XR_CM_REJ_RECEIVED:
		qp_error_locked(id);
		post(id, XR_RDMA_CM_EVENT_REJECTED, cev->param.rej.reason, cev->private_data,
		     cev->private_data_len);
		break;
	case XR_CM_DREQ_ERROR:
		disconnected(id, -ETIMEDOUT);
		break;
	case XR_CM_DREQ_RECEIVED:
	case XR_CM_DREP_RECEIVED:
		disconnected(id, 0);
		break;
	case XR_CM_TIMEWAIT_EXIT:
		post(id, XR_RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
		break;
	case XR_CM_SIDR_REP_RECEIVED:
		sidr_rep_received(id, cev);
		break;
	default: /* an MRA: the peer needs time, the IB CM waits longer */
		break;
	}
	return 0;
}

/* ---- the passive side ------------------------------------------------------- */

/* The listener of a REQ's address: the wildcard, or its very address. */
static bool listener_takes(const struct cma_id *listener, const struct sockaddr *dst)
{
	const struct sockaddr *bound = (const struct sockaddr *)&listener->pub.route.src_addr;

	if (cma_any_addr(bound))
		return bound->sa_family == dst->sa_family ||
		       (bound->sa_family == AF_INET6 && !listener->afonly);
	return cma_addr_equal(bound, dst);
}

/* Under cma_lock: one of the listener's backlog, if it has any left. */
static bool backlog_take(struct cma_id *listener)
{
	bool ok;

	pthread_mutex_lock(&cma_lock);
	ok = !listener->destroying && listener->backlog > 0;
	if (ok)
		listener->backlog--;
	pthread_mutex_unlock(&cma_lock);
	return ok;
}

static void backlog_return(struct cma_id *listener)
{
	pthread_mutex_lock(&cma_lock);
	listener->backlog++;
	pthread_mutex_unlock(&cma_lock);
}

/* The new connection's route: the REQ's path back, the header's addresses. */
static void child_route(struct cma_id *child, const struct cma_listen *l, struct xr_cm_id *cm,
			const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
			uint8_t req_mtu)
{
	struct xr_rdma_route *route = &child->pub.route;
	uint16_t port = cma_port((const struct sockaddr *)&l->id->pub.route.src_addr);
	int active_mtu = l->cdev->dev->core.active_mtu;

	route->src_addr = *dst;
	cma_set_port((struct sockaddr *)&route->src_addr, port);
	route->dst_addr = *src;
	route->path.sgid = cm->path.sgid;
	route->path.dgid = cm->path.dgid;
	memcpy(route->path.dmac, cm->path.dmac, 6);
	route->path.flow_label = cm->path.flow_label;
	route->path.traffic_class = cm->path.traffic_class;
	route->path.hop_limit = 64;
	route->path.pkey = XR_DEFAULT_PKEY;
	route->path.mtu = (uint8_t)(req_mtu && req_mtu < active_mtu ? req_mtu : active_mtu);
	route->path.packet_life_time = CMA_PACKET_LIFETIME;
	route->num_paths = 1;
}

static int request_received(struct xr_cm_id *cm, const struct xr_cm_event *cev)
{
	struct cma_listen *l = cev->listen_id->context;
	struct cma_id *listener = l->id, *child;
	struct xr_rdma_cm_event ev = {.event = XR_RDMA_CM_EVENT_CONNECT_REQUEST};
	struct sockaddr_storage src, dst;
	bool sidr = cev->type == XR_CM_SIDR_REQ_RECEIVED;

	if (!cev->private_data || cev->private_data_len < CMA_HDR_SIZE ||
	    cma_hdr_parse(cev->private_data, &src, &dst) ||
	    !listener_takes(listener, (const struct sockaddr *)&dst))
		return -EINVAL; /* the IB CM rejects it */
	if (!backlog_take(listener))
		return -ENOMEM;
	child = cma_id_new_child(listener, l->cdev);
	if (!child) {
		backlog_return(listener);
		return -ENOMEM;
	}
	child_route(child, l, cm, &src, &dst, sidr ? 0 : cev->param.req.path_mtu);
	child->cm = cm;
	cm->context = child;
	ev.listen_id = &listener->pub;
	if (!sidr) {
		child->req = cev->param.req;
		child->req.private_data = NULL;
		conn_param_of_req(&cev->param.req, &ev.param.conn);
	}
	if (cma_post_event(child, &ev, cev->private_data + CMA_HDR_SIZE,
			   (uint8_t)(cev->private_data_len - CMA_HDR_SIZE))) {
		/* The listener is going: the peer is rejected, the child never seen. */
		cm->context = NULL;
		child->cm = NULL;
		child->listener = NULL;
		cma_id_forget(child);
		backlog_return(listener);
		return -ECANCELED;
	}
	return 0;
}

static void listens_release(struct cma_id *id)
{
	while (id->listens) {
		struct cma_listen *l = id->listens;
		struct xr_device *dev = l->cdev->dev;

		id->listens = l->next;
		pthread_mutex_lock(&dev->lock);
		xr_cm_destroy_id(l->cm, xr_now_ns());
		xr_unlock_and_notify(dev);
		free(l);
	}
}

void cma_conn_release(struct cma_id *id)
{
	struct xr_device *dev = id->pub.verbs;

	listens_release(id);
	if (!dev)
		return;
	pthread_mutex_lock(&dev->lock);
	id->state = CMA_DESTROYING;
	if (id->cm) {
		/* A connection being set up is rejected, an established one disconnected. */
		id->cm->context = NULL;
		xr_cm_destroy_id(id->cm, xr_now_ns());
		id->cm = NULL;
	}
	xr_unlock_and_notify(dev);
}

static int listen_on(struct cma_id *id, struct cma_device *cdev, uint64_t service_id)
{
	struct xr_device *dev = cdev->dev;
	struct cma_listen *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->id = id;
	l->cdev = cdev;
	pthread_mutex_lock(&dev->lock);
	err = xr_cm_create_id(&dev->core, cm_handler, l, &l->cm);
	if (!err) {
		err = xr_cm_listen(l->cm, service_id);
		if (err) {
			xr_cm_destroy_id(l->cm, xr_now_ns());
			err = err == -EBUSY ? -EADDRINUSE : err;
		}
	}
	xr_unlock_and_notify(dev);
	if (err) {
		free(l);
		return err;
	}
	l->next = id->listens;
	id->listens = l;
	return 0;
}

#define CMA_MAX_LISTEN_DEVICES 16

int xr_rdma_listen(struct xr_rdma_cm_id *pub, int backlog)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct cma_device *cdevs[CMA_MAX_LISTEN_DEVICES];
	uint64_t service_id;
	int n = 1, err = 0;

	if (!id)
		return cma_fail(-EINVAL);
	if (id->state == CMA_IDLE) {
		struct sockaddr_in any = {.sin_family = AF_INET};

		err = xr_rdma_bind_addr(pub, (const struct sockaddr *)&any);
		if (err)
			return err;
	}
	if (id->state != CMA_ADDR_BOUND)
		return cma_fail(-EINVAL);
	if (id->cdev)
		cdevs[0] = id->cdev;
	else
		n = cma_devices_all(cdevs, CMA_MAX_LISTEN_DEVICES);
	if (n <= 0)
		return cma_fail(n < 0 ? n : -ENODEV);
	pthread_mutex_lock(&cma_lock);
	id->backlog = backlog > 0 && backlog < CMA_MAX_BACKLOG ? backlog : CMA_MAX_BACKLOG;
	pthread_mutex_unlock(&cma_lock);
	service_id =
	    cma_service_id(pub->ps, cma_port((const struct sockaddr *)&pub->route.src_addr));
	for (int i = 0; i < n && !err; i++)
		err = listen_on(id, cdevs[i], service_id);
	if (err) {
		listens_release(id);
		return cma_fail(err);
	}
	id->state = CMA_LISTEN;
	return 0;
}

/* librdmacm's depths: 0xff asks for the device's most, more than that is refused. */
static int depth(uint8_t asked, uint8_t fallback, uint32_t max, uint8_t *out)
{
	if (asked == CMA_MAX_DEPTH) {
		*out = (uint8_t)(fallback < max ? fallback : max);
		return 0;
	}
	if (asked > max)
		return -EINVAL;
	*out = asked;
	return 0;
}

int xr_rdma_accept(struct xr_rdma_cm_id *pub, const struct xr_rdma_conn_param *param)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	const uint8_t *pd = param ? param->private_data : NULL;
	uint8_t pd_len = param ? param->private_data_len : 0;
	struct xr_device_attr dattr;
	struct xr_device *dev;
	uint8_t resp_res, init_depth;
	int err;

	if (!id || !id->cdev || (!pub->qp && !param) || (pd_len && !pd))
		return cma_fail(-EINVAL);
	dev = pub->verbs;
	xr_query_device(dev, &dattr);
	if (pub->qp_type == XR_QPT_UD) {
		struct xr_cm_sidr_rep_param rep = {
		    .status = XR_CM_SIDR_SUCCESS,
		    .qpn = pub->qp ? pub->qp->qp_num : param->qp_num,
		    .qkey = id->qkey,
		    .private_data = pd,
		    .private_data_len = pd_len,
		};

		if (pd_len > XR_CM_SIDR_REP_PRIVATE_DATA_SIZE)
			return cma_fail(-EINVAL);
		pthread_mutex_lock(&dev->lock);
		err = id->cm && id->state == CMA_CONNECT ? xr_cm_send_sidr_rep(id->cm, &rep)
							 : -EINVAL;
		xr_unlock_and_notify(dev);
		return err ? cma_fail(err) : 0;
	}
	/* The REQ's initiator depth is what we answer, its responder resources what we send. */
	err = depth(param ? param->responder_resources : CMA_MAX_DEPTH, id->req.initiator_depth,
		    dattr.max_qp_rd_atom, &resp_res);
	if (!err)
		err = depth(param ? param->initiator_depth : CMA_MAX_DEPTH,
			    id->req.responder_resources, dattr.max_qp_init_rd_atom, &init_depth);
	if (err || pd_len > XR_CM_REP_PRIVATE_DATA_SIZE)
		return cma_fail(-EINVAL);

	pthread_mutex_lock(&dev->lock);
	if (!id->cm || id->state != CMA_CONNECT ||
	    (id->cm->state != XR_CM_REQ_RCVD && id->cm->state != XR_CM_MRA_REQ_SENT)) {
		err = -EINVAL;
	} else {
		struct conn_attrs c = {
		    .remote_qpn = id->req.qpn,
		    .sq_psn = id->req.starting_psn,
		    .rq_psn = id->starting_psn,
		    .responder_resources = resp_res,
		    .initiator_depth = init_depth,
		    .retry_count = id->req.retry_count,
		    .rnr_retry_count = id->req.rnr_retry_count,
		    .path_mtu = pub->route.path.mtu,
		    .timeout = id->ack_timeout ? id->ack_timeout : id->req.local_ack_timeout,
		};
		struct xr_cm_rep_param rep = {
		    .qpn = pub->qp ? pub->qp->qp_num : param->qp_num,
		    .starting_psn = id->starting_psn,
		    .responder_resources = resp_res,
		    .initiator_depth = init_depth,
		    .target_ack_delay = CMA_TARGET_ACK_DELAY,
		    .rnr_retry_count = param ? min_u8(param->rnr_retry_count, 7) : 7,
		    .srq = pub->qp ? pub->qp->srq != NULL : param->srq,
		    .flow_control = param ? param->flow_control : 0,
		    .private_data = pd,
		    .private_data_len = pd_len,
		};

		err = pub->qp ? qp_connect_locked(id, &c) : 0;
		if (!err)
			err = xr_cm_send_rep(id->cm, &rep, xr_now_ns());
	}
	xr_unlock_and_notify(dev);
	return err ? cma_fail(err) : 0;
}

int xr_rdma_reject(struct xr_rdma_cm_id *pub, const void *private_data, uint8_t len)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct xr_device *dev;
	int err;

	if (!id || !id->cdev || (len && !private_data))
		return cma_fail(-EINVAL);
	dev = pub->verbs;
	pthread_mutex_lock(&dev->lock);
	if (!id->cm || id->state != CMA_CONNECT) {
		err = -EINVAL;
	} else if (pub->qp_type == XR_QPT_UD) {
		struct xr_cm_sidr_rep_param rep = {
		    .status = XR_CM_SIDR_REJECT,
		    .private_data = private_data,
		    .private_data_len = len,
		};

		err = len > XR_CM_SIDR_REP_PRIVATE_DATA_SIZE ? -EINVAL
							     : xr_cm_send_sidr_rep(id->cm, &rep);
	} else {
		err = xr_cm_send_rej(id->cm, XR_CM_REJ_CONSUMER_DEFINED, NULL, 0, private_data, len,
				     xr_now_ns());
	}
	xr_unlock_and_notify(dev);
	return err ? cma_fail(err) : 0;
}

/* ---- the active side -------------------------------------------------------- */

static int connect_ud_locked(struct cma_id *id, const uint8_t *hdr_and_data, uint8_t len)
{
	struct xr_cm_sidr_req_param req = {
	    .service_id = cma_service_id(
		id->pub.ps, cma_port((const struct sockaddr *)&id->pub.route.dst_addr)),
	    .timeout = CMA_CM_RESPONSE_TIMEOUT,
	    .max_cm_retries = CMA_MAX_CM_RETRIES,
	    .private_data = hdr_and_data,
	    .private_data_len = len,
	};
	struct xr_path path;

	mad_path(id, &path);
	return xr_cm_send_sidr_req(id->cm, &path, &req, xr_now_ns());
}

static int connect_rc_locked(struct cma_id *id, const struct xr_rdma_conn_param *param,
			     const uint8_t *hdr_and_data, uint8_t len)
{
	struct xr_qp *qp = id->pub.qp;
	struct xr_cm_req_param req = {
	    .service_id = cma_service_id(
		id->pub.ps, cma_port((const struct sockaddr *)&id->pub.route.dst_addr)),
	    .qpn = qp ? qp->qp_num : param->qp_num,
	    .qp_type = qp ? qp->qp_type : XR_QPT_RC,
	    .starting_psn = id->starting_psn,
	    .responder_resources = id->responder_resources,
	    .initiator_depth = id->initiator_depth,
	    .remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT,
	    .local_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT,
	    .retry_count = id->retry_count,
	    .rnr_retry_count = id->rnr_retry_count,
	    .max_cm_retries = CMA_MAX_CM_RETRIES,
	    .path_mtu = id->pub.route.path.mtu,
	    .local_ack_timeout = ack_timeout(id),
	    .srq = qp ? qp->srq != NULL : param->srq,
	    .flow_control = param ? param->flow_control : 0,
	    .private_data = hdr_and_data,
	    .private_data_len = len,
	};
	struct xr_path path;

	mad_path(id, &path);
	return xr_cm_send_req(id->cm, &path, &req, xr_now_ns());
}

int xr_rdma_connect(struct xr_rdma_cm_id *pub, const struct xr_rdma_conn_param *param)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	uint8_t priv[XR_CM_SIDR_REQ_PRIVATE_DATA_SIZE];
	uint8_t user_len = param ? param->private_data_len : 0;
	struct xr_device_attr dattr;
	struct xr_device *dev;
	bool ud;
	int err;

	if (!id || id->state != CMA_ROUTE_RESOLVED || (user_len && !param->private_data))
		return cma_fail(-EINVAL);
	ud = pub->qp_type == XR_QPT_UD;
	if (user_len > (ud ? CMA_SIDR_REQ_USER_DATA : CMA_REQ_USER_DATA) ||
	    (!ud && !pub->qp && !param))
		return cma_fail(-EINVAL);
	dev = pub->verbs;
	xr_query_device(dev, &dattr);
	if (!ud) {
		err = depth(param ? param->responder_resources : CMA_MAX_DEPTH, CMA_MAX_DEPTH,
			    dattr.max_qp_rd_atom, &id->responder_resources);
		if (!err)
			err = depth(param ? param->initiator_depth : CMA_MAX_DEPTH, CMA_MAX_DEPTH,
				    dattr.max_qp_init_rd_atom, &id->initiator_depth);
		if (err)
			return cma_fail(err);
		id->retry_count = param ? min_u8(param->retry_count, 7) : 7;
		id->rnr_retry_count = param ? min_u8(param->rnr_retry_count, 7) : 7;
	}
	cma_hdr_build(priv, (const struct sockaddr *)&pub->route.src_addr,
		      (const struct sockaddr *)&pub->route.dst_addr);
	if (user_len)
		memcpy(priv + CMA_HDR_SIZE, param->private_data, user_len);

	pthread_mutex_lock(&dev->lock);
	err = xr_cm_create_id(&dev->core, cm_handler, id, &id->cm);
	if (!err) {
		uint8_t len = (uint8_t)(CMA_HDR_SIZE + user_len);

		err =
		    ud ? connect_ud_locked(id, priv, len) : connect_rc_locked(id, param, priv, len);
		if (err) {
			xr_cm_destroy_id(id->cm, xr_now_ns());
			id->cm = NULL;
		} else {
			id->state = CMA_CONNECT;
		}
	}
	xr_unlock_and_notify(dev);
	return err ? cma_fail(err) : 0;
}

int xr_rdma_establish(struct xr_rdma_cm_id *pub)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct xr_device *dev;
	int err;

	if (!id || !id->cdev)
		return cma_fail(-EINVAL);
	dev = pub->verbs;
	pthread_mutex_lock(&dev->lock);
	if (!id->cm || id->state != CMA_CONNECT || id->cm->state != XR_CM_REP_RCVD) {
		err = -EINVAL;
	} else {
		err = xr_cm_send_rtu(id->cm, NULL, 0);
		if (!err)
			post(id, XR_RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
	xr_unlock_and_notify(dev);
	return err ? cma_fail(err) : 0;
}

int xr_rdma_disconnect(struct xr_rdma_cm_id *pub)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct xr_device *dev;
	int err = -EINVAL;

	if (!id || !id->cdev)
		return cma_fail(-EINVAL);
	dev = pub->verbs;
	pthread_mutex_lock(&dev->lock);
	if (id->cm && (id->state == CMA_CONNECT || id->state == CMA_DISCONNECT)) {
		uint64_t now = xr_now_ns();

		qp_error_locked(id);
		/* A DREQ, or the DREP the peer's DREQ waits for, as cma.c does. */
		err = xr_cm_send_dreq(id->cm, NULL, 0, now);
		if (err)
			err = xr_cm_send_drep(id->cm, NULL, 0, now);
	}
	xr_unlock_and_notify(dev);
	return err ? cma_fail(err) : 0;
}
