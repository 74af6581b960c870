/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues. Only the basic SRQ of ibv_create_srq: the inline
 * ibv_create_srq_ex calls it for a basic SRQ with a PD, and reaches
 * verbs_context.create_srq_ex (left NULL: EOPNOTSUPP) only for XRC,
 * tag-matching or CQ-bound SRQs, which xroce does not have.
 */
#include <stdlib.h>

#include "shim.h"

static void srq_attr_to_xr(const struct ibv_srq_attr *in, struct xr_srq_attr *out)
{
	out->max_wr = in->max_wr;
	out->max_sge = in->max_sge;
	out->srq_limit = in->srq_limit;
}

static void srq_attr_from_xr(const struct xr_srq_attr *in, struct ibv_srq_attr *out)
{
	out->max_wr = in->max_wr;
	out->max_sge = in->max_sge;
	out->srq_limit = in->srq_limit;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
	struct xr_srq_init_attr xa = {0};
	struct xv_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return xv_null(ENOMEM);
	/* libxroce's srq_context finds this wrapper for asynchronous events. */
	xa.srq_context = srq;
	srq_attr_to_xr(&srq_init_attr->attr, &xa.attr);
	srq->xr = xr_create_srq(xv_pd(pd)->xr, &xa);
	if (!srq->xr) {
		err = errno;
		free(srq);
		return xv_null(err);
	}
	srq_attr_from_xr(&xa.attr, &srq_init_attr->attr);
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = srq_init_attr->srq_context;
	srq->ibv.pd = pd;
	srq->ibv.handle = srq->xr->handle;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	return &srq->ibv;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	struct xr_srq_attr xa;

	srq_attr_to_xr(srq_attr, &xa);
	return xv_errno(xr_modify_srq(xv_srq(srq)->xr, &xa, srq_attr_mask));
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	struct xr_srq_attr xa;
	int err;

	err = xr_query_srq(xv_srq(srq)->xr, &xa);
	if (err)
		return xv_errno(err);
	srq_attr_from_xr(&xa, srq_attr);
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	int err;

	err = xr_destroy_srq(xv_srq(srq)->xr);
	if (err)
		return xv_errno(err);
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(xv_srq(srq));
	return 0;
}
