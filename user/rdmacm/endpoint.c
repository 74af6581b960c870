/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's endpoints: synchronous ids set up from an rdma_addrinfo
 * (rdma_create_ep), a passive one's requests taken one at a time
 * (rdma_get_request), and their shared receive queues.
 */
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

/* rdma_create_ep's resolution timeouts, librdmacm's. */
#define EP_RESOLVE_TIMEOUT_MS 2000

static int passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct rc_id *rc = rc_id(id);

	if (rdma_bind_addr(id, res->ai_src_addr))
		return -1;
	if (pd)
		id->pd = pd;
	if (qp_init_attr) {
		rc->qp_init_attr = malloc(sizeof(*qp_init_attr));
		if (!rc->qp_init_attr)
			return rc_fail(ENOMEM);
		*rc->qp_init_attr = *qp_init_attr;
		rc->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	}
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	int err;

	if (!id || !res)
		return rc_fail(EINVAL);
	if (rdma_create_id(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		if (passive_ep(cm_id, res, pd, qp_init_attr))
			goto fail;
		*id = cm_id;
		return 0;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, EP_RESOLVE_TIMEOUT_MS) ||
	    rdma_resolve_route(cm_id, EP_RESOLVE_TIMEOUT_MS))
		goto fail;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto fail;
	}
	*id = cm_id;
	return 0;
fail:
	err = errno;
	rdma_destroy_ep(cm_id);
	return rc_fail(err);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rc_id *rc = listen ? rc_id(listen) : NULL;
	struct rdma_cm_event *event;
	int err = 0;

	if (!rc || !id || !rc->sync)
		return rc_fail(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->event == RDMA_CM_EVENT_REJECTED)
		err = ECONNREFUSED;
	else if (event->status)
		err = event->status < 0 ? -event->status : event->status;
	else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		err = EINVAL;
	if (!err && rc->qp_init_attr) {
		struct ibv_qp_init_attr attr = *rc->qp_init_attr;

		if (rdma_create_qp(event->id, listen->pd, &attr))
			err = errno;
	}
	if (err) {
		listen->event = event;
		return rc_fail(err);
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr basic;
	struct ibv_pd *pd;

	if (!id || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || id->srq)
		return rc_fail(EINVAL);
	/* xroce's SRQs are basic ones: no XRC, no tag matching. */
	if (attr->srq_type != IBV_SRQT_BASIC)
		return rc_fail(EOPNOTSUPP);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : id->pd;
	if (!pd)
		return rc_fail(EINVAL);
	basic.srq_context = attr->srq_context;
	basic.attr = attr->attr;
	id->srq = ibv_create_srq(pd, &basic);
	if (!id->srq)
		return -1;
	attr->attr = basic.attr;
	attr->pd = pd;
	attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	id->pd = pd;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {0};
	int ret;

	if (!attr)
		return rc_fail(EINVAL);
	ex.attr = attr->attr;
	ex.srq_context = attr->srq_context;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	attr->attr = ex.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
