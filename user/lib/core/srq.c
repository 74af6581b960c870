/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues, and where a QP takes its receive WQEs from: its own
 * receive queue, or the SRQ it was created with. A QP takes a WQE from its
 * SRQ when a message needs one and holds it until that message completes (a
 * multi-packet SEND fills it packet by packet), so no other QP gets it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static uint32_t posted(const struct xr_srq_impl *srq)
{
	return srq->head - srq->tail;
}

struct xr_srq_impl *xr_core_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *init, int *err)
{
	struct xr_srq_attr *a = &init->attr;
	struct xr_srq_impl *srq;

	*err = -EINVAL;
	if (a->max_wr < 1 || a->max_wr > XR_MAX_WR || a->max_sge > XR_MAX_SGE ||
	    a->srq_limit > a->max_wr)
		return NULL;
	*err = -ENOMEM;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	srq->size = xr_pow2_at_least(a->max_wr);
	srq->ring = calloc(srq->size, sizeof(*srq->ring));
	if (!srq->ring) {
		free(srq);
		return NULL;
	}
	srq->core = pd->core;
	srq->max_sge = a->max_sge ? a->max_sge : 1;
	srq->limit = a->srq_limit;
	srq->pub.device = pd->device;
	srq->pub.pd = pd;
	srq->pub.srq_context = init->srq_context;
	srq->pub.handle = ++pd->core->pd_seq;
	pd->refs++;
	/* As the verbs do: the caller learns the room it really got. */
	a->max_wr = srq->size;
	a->max_sge = srq->max_sge;
	*err = 0;
	return srq;
}

/* Keeps what is posted, in order; modify checked that it fits. */
static int resize(struct xr_srq_impl *srq, uint32_t max_wr)
{
	uint32_t size = xr_pow2_at_least(max_wr), n = posted(srq);
	struct xr_rwqe *ring;

	ring = calloc(size, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		ring[i] = srq->ring[(srq->tail + i) & (srq->size - 1)];
	free(srq->ring);
	srq->ring = ring;
	srq->size = size;
	srq->tail = 0;
	srq->head = n;
	return 0;
}

int xr_core_modify_srq(struct xr_srq_impl *srq, const struct xr_srq_attr *attr, int mask)
{
	uint32_t size = srq->size;

	if (mask & ~(XR_SRQ_MAX_WR | XR_SRQ_LIMIT))
		return -EINVAL;
	if (mask & XR_SRQ_MAX_WR) {
		if (attr->max_wr < 1 || attr->max_wr > XR_MAX_WR || attr->max_wr < posted(srq))
			return -EINVAL;
		size = xr_pow2_at_least(attr->max_wr);
	}
	/* Checked against the size it will have, before anything changes. */
	if ((mask & XR_SRQ_LIMIT) && attr->srq_limit > size)
		return -EINVAL;
	if (!(mask & XR_SRQ_LIMIT) && srq->limit > size)
		return -EINVAL;
	if ((mask & XR_SRQ_MAX_WR) && size != srq->size) {
		int err = resize(srq, attr->max_wr);

		if (err)
			return err;
	}
	if (mask & XR_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	return 0;
}

void xr_core_query_srq(const struct xr_srq_impl *srq, struct xr_srq_attr *attr)
{
	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
}

int xr_core_destroy_srq(struct xr_srq_impl *srq)
{
	if (srq->refs || srq->async_unacked)
		return -EBUSY;
	xr_core_forget_events(srq->core, &srq->pub);
	((struct xr_pd *)srq->pub.pd)->refs--;
	free(srq->ring);
	free(srq);
	return 0;
}

int xr_rwqe_fill(struct xr_rwqe *r, const struct xr_recv_wr *wr, uint32_t max_sge)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	r->wr_id = wr->wr_id;
	r->num_sge = wr->num_sge;
	r->length = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		r->sge[i] = wr->sg_list[i];
		r->length += wr->sg_list[i].length;
	}
	return 0;
}

int xr_core_post_srq_recv(struct xr_srq_impl *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad)
{
	int err = 0;

	for (; wr; wr = wr->next) {
		if (posted(srq) >= srq->size) {
			err = -ENOMEM;
			break;
		}
		err = xr_rwqe_fill(&srq->ring[srq->head & (srq->size - 1)], wr, srq->max_sge);
		if (err)
			break;
		srq->head++;
	}
	if (err && bad)
		*bad = wr;
	return err;
}

bool xr_recv_ready(const struct xr_qp_impl *qp)
{
	if (!qp->srq)
		return qp->rq_tail != qp->rq_head;
	return qp->srq_wqe_held || posted(qp->srq);
}

struct xr_rwqe *xr_recv_wqe(struct xr_qp_impl *qp)
{
	struct xr_srq_impl *srq = qp->srq;

	if (!srq)
		return xr_rq_at(qp, qp->rq_tail);
	if (!qp->srq_wqe_held) {
		qp->srq_wqe = srq->ring[srq->tail & (srq->size - 1)];
		srq->tail++;
		qp->srq_wqe_held = true;
		/* Below the armed limit: tell the application once, then disarm. */
		if (srq->limit && posted(srq) < srq->limit) {
			srq->limit = 0;
			xr_core_raise_event(srq->core, XR_EVENT_SRQ_LIMIT_REACHED, &srq->pub);
		}
	}
	return &qp->srq_wqe;
}

void xr_recv_consumed(struct xr_qp_impl *qp)
{
	if (qp->srq)
		qp->srq_wqe_held = false;
	else
		qp->rq_tail++;
}
