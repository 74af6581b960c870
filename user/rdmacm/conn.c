/* SPDX-License-Identifier: MIT */
/*
 * QPs and connections. A QP is xroce's libibverbs' own, made with
 * ibv_create_qp_ex on the id's device, and handed to libxroce's CM
 * (xr_rdma_set_qp), which moves it INIT -> RTR -> RTS as the REQ and REP
 * say and to ERR on a reject or disconnect.
 */
#include <string.h>

#include "rdmacm.h"

/* librdmacm's CQs of an id, made when rdma_create_qp is given none. */
static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

static int create_cq(struct rdma_cm_id *id, uint32_t size, struct ibv_comp_channel **channel,
		     struct ibv_cq **cq)
{
	*channel = ibv_create_comp_channel(id->verbs);
	if (!*channel)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)size, id, *channel, 0);
	return *cq ? 0 : -1;
}

static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if ((recv_size && create_cq(id, recv_size, &id->recv_cq_channel, &id->recv_cq)) ||
	    (send_size && create_cq(id, send_size, &id->send_cq_channel, &id->send_cq))) {
		int err = errno;

		destroy_cqs(id);
		return rc_fail(err);
	}
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int err;

	if (!id || !attr || id->qp || !id->verbs)
		return rc_fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (xroce_ibv_device_of(attr->pd->context) != xroce_ibv_device_of(id->verbs)) {
		return rc_fail(EINVAL);
	}
	if (!attr->pd)
		return rc_fail(ENOMEM);
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return rc_fail(EINVAL);
	if (create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		err = errno;
		goto fail;
	}
	err = -xr_rdma_set_qp(rc_id(id)->xr, xroce_ibv_qp_of(qp));
	if (err) {
		ibv_destroy_qp(qp);
		goto fail;
	}
	qp->state = qp->qp_type == IBV_QPT_UD ? IBV_QPS_RTS : IBV_QPS_INIT;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
fail:
	destroy_cqs(id);
	return rc_fail(err);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr = {0};
	int ret;

	if (!id || !qp_init_attr)
		return rc_fail(EINVAL);
	/* ibv_qp_init_attr_ex begins as ibv_qp_init_attr does. */
	memcpy(&attr, qp_init_attr, sizeof(*qp_init_attr));
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr);
	memcpy(qp_init_attr, &attr, sizeof(*qp_init_attr));
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp) {
		xr_rdma_set_qp(rc_id(id)->xr, NULL);
		ibv_destroy_qp(id->qp);
		id->qp = NULL;
	}
	destroy_cqs(id);
}

/* xr_rdma_connect or xr_rdma_accept with librdmacm's parameters (NULL: none). */
static int with_conn_param(int (*call)(struct xr_rdma_cm_id *, const struct xr_rdma_conn_param *),
			   struct rdma_cm_id *id, const struct rdma_conn_param *in)
{
	struct xr_rdma_conn_param xp = {0}, *out = &xp;

	if (!id)
		return rc_fail(EINVAL);
	if (in) {
		RC_CONN_PARAM_FIELDS(RC_COPY_FIELD)
	}
	return rc_ret(call(rc_id(id)->xr, in ? out : NULL));
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (with_conn_param(xr_rdma_connect, id, conn_param))
		return -1;
	return rc_complete(rc_id(id));
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (with_conn_param(xr_rdma_accept, id, conn_param))
		return -1;
	if (id->qp_type == IBV_QPT_UD) {
		/* A SIDR_REP ends it: no event follows. */
		if (rc_id(id)->sync && id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		return 0;
	}
	return rc_complete(rc_id(id));
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	if (!id)
		return rc_fail(EINVAL);
	return rc_ret(xr_rdma_reject(rc_id(id)->xr, private_data, private_data_len));
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	err = xr_rdma_disconnect(rc_id(id)->xr);
	if (err)
		return rc_fail(-err);
	return rc_complete(rc_id(id));
}

int rdma_establish(struct rdma_cm_id *id)
{
	if (!id)
		return rc_fail(EINVAL);
	if (id->qp)
		return rc_fail(EINVAL);
	return rc_ret(xr_rdma_establish(rc_id(id)->xr));
}
