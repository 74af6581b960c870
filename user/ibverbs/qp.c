/* SPDX-License-Identifier: MIT */
/* Queue pairs: creating, the state machine (ibv_modify_qp), querying. */
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* The attribute mask bits libxroce knows; they have ibv_qp_attr_mask's values. */
#define XV_QP_ATTR_MASK ((1 << 21) - 1)

struct xv_qp *xv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init_attr)
{
	struct xr_qp_init_attr xa = {0};
	struct xv_qp *qp;
	int err;

	if (init_attr->qp_type != IBV_QPT_RC && init_attr->qp_type != IBV_QPT_UC &&
	    init_attr->qp_type != IBV_QPT_UD)
		return xv_null(EOPNOTSUPP);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return xv_null(ENOMEM);
	xa.qp_context = qp;
	xa.send_cq = init_attr->send_cq ? xv_cq(init_attr->send_cq)->xr : NULL;
	xa.recv_cq = init_attr->recv_cq ? xv_cq(init_attr->recv_cq)->xr : NULL;
	xa.srq = init_attr->srq ? xv_srq(init_attr->srq)->xr : NULL;
	xa.cap.max_send_wr = init_attr->cap.max_send_wr;
	xa.cap.max_recv_wr = init_attr->cap.max_recv_wr;
	xa.cap.max_send_sge = init_attr->cap.max_send_sge;
	xa.cap.max_recv_sge = init_attr->cap.max_recv_sge;
	xa.cap.max_inline_data = init_attr->cap.max_inline_data;
	xa.qp_type = (enum xr_qp_type)init_attr->qp_type;
	xa.sq_sig_all = init_attr->sq_sig_all;
	qp->xr = xr_create_qp(xv_pd(pd)->xr, &xa);
	if (!qp->xr) {
		err = errno;
		free(qp);
		return xv_null(err);
	}
	/* As libibverbs: the caller learns the capabilities it really got. */
	init_attr->cap.max_send_wr = xa.cap.max_send_wr;
	init_attr->cap.max_recv_wr = xa.cap.max_recv_wr;
	init_attr->cap.max_send_sge = xa.cap.max_send_sge;
	init_attr->cap.max_recv_sge = xa.cap.max_recv_sge;
	init_attr->cap.max_inline_data = xa.cap.max_inline_data;
	qp->ibv.context = pd->context;
	qp->ibv.qp_context = init_attr->qp_context;
	qp->ibv.pd = pd;
	qp->ibv.send_cq = init_attr->send_cq;
	qp->ibv.recv_cq = init_attr->recv_cq;
	qp->ibv.srq = init_attr->srq;
	qp->ibv.qp_num = qp->xr->qp_num;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = init_attr->qp_type;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	return qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init_attr)
{
	struct xv_qp *qp = xv_create_qp(pd, init_attr);

	return qp ? &qp->ibv : NULL;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct xr_qp_attr xa = {0};
	int err;

	if (attr_mask & IBV_QP_RATE_LIMIT)
		return EOPNOTSUPP;
	if (attr_mask & ~XV_QP_ATTR_MASK)
		return EINVAL;
	xa.qp_state = (enum xr_qp_state)attr->qp_state;
	xa.cur_qp_state = (enum xr_qp_state)attr->cur_qp_state;
	xa.path_mtu = (enum xr_mtu)attr->path_mtu;
	xa.path_mig_state = (enum xr_mig_state)attr->path_mig_state;
	xa.qkey = attr->qkey;
	xa.rq_psn = attr->rq_psn;
	xa.sq_psn = attr->sq_psn;
	xa.dest_qp_num = attr->dest_qp_num;
	xa.qp_access_flags = attr->qp_access_flags;
	xa.cap.max_send_wr = attr->cap.max_send_wr;
	xa.cap.max_recv_wr = attr->cap.max_recv_wr;
	xa.cap.max_send_sge = attr->cap.max_send_sge;
	xa.cap.max_recv_sge = attr->cap.max_recv_sge;
	xa.cap.max_inline_data = attr->cap.max_inline_data;
	xv_ah_attr_to_xr(&attr->ah_attr, &xa.ah_attr);
	xv_ah_attr_to_xr(&attr->alt_ah_attr, &xa.alt_ah_attr);
	xa.pkey_index = attr->pkey_index;
	xa.alt_pkey_index = attr->alt_pkey_index;
	xa.en_sqd_async_notify = attr->en_sqd_async_notify;
	xa.max_rd_atomic = attr->max_rd_atomic;
	xa.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	xa.min_rnr_timer = attr->min_rnr_timer;
	xa.port_num = attr->port_num;
	xa.timeout = attr->timeout;
	xa.retry_cnt = attr->retry_cnt;
	xa.rnr_retry = attr->rnr_retry;
	xa.alt_port_num = attr->alt_port_num;
	xa.alt_timeout = attr->alt_timeout;
	err = xr_modify_qp(xv_qp(qp)->xr, &xa, attr_mask);
	if (err)
		return xv_errno(err);
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct xr_qp_init_attr xi;
	struct xr_qp_attr xa;
	int err;

	err = xr_query_qp(xv_qp(qp)->xr, &xa, attr_mask, &xi);
	if (err)
		return xv_errno(err);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)xa.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)xa.cur_qp_state;
	attr->path_mtu = (enum ibv_mtu)xa.path_mtu;
	attr->path_mig_state = (enum ibv_mig_state)xa.path_mig_state;
	attr->qkey = xa.qkey;
	attr->rq_psn = xa.rq_psn;
	attr->sq_psn = xa.sq_psn;
	attr->dest_qp_num = xa.dest_qp_num;
	attr->qp_access_flags = xa.qp_access_flags;
	attr->cap.max_send_wr = xa.cap.max_send_wr;
	attr->cap.max_recv_wr = xa.cap.max_recv_wr;
	attr->cap.max_send_sge = xa.cap.max_send_sge;
	attr->cap.max_recv_sge = xa.cap.max_recv_sge;
	attr->cap.max_inline_data = xa.cap.max_inline_data;
	xv_ah_attr_from_xr(&xa.ah_attr, &attr->ah_attr);
	xv_ah_attr_from_xr(&xa.alt_ah_attr, &attr->alt_ah_attr);
	attr->pkey_index = xa.pkey_index;
	attr->alt_pkey_index = xa.alt_pkey_index;
	attr->en_sqd_async_notify = xa.en_sqd_async_notify;
	attr->sq_draining = xa.sq_draining;
	attr->max_rd_atomic = xa.max_rd_atomic;
	attr->max_dest_rd_atomic = xa.max_dest_rd_atomic;
	attr->min_rnr_timer = xa.min_rnr_timer;
	attr->port_num = xa.port_num;
	attr->timeout = xa.timeout;
	attr->retry_cnt = xa.retry_cnt;
	attr->rnr_retry = xa.rnr_retry;
	attr->alt_port_num = xa.alt_port_num;
	attr->alt_timeout = xa.alt_timeout;

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = qp->qp_type;
	init_attr->sq_sig_all = xi.sq_sig_all;
	qp->state = attr->qp_state;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	int err;

	err = xr_destroy_qp(xv_qp(qp)->xr);
	if (err)
		return xv_errno(err);
	pthread_cond_destroy(&qp->cond);
	pthread_mutex_destroy(&qp->mutex);
	xv_free_wr_batch(xv_qp(qp)->wr_batch);
	free(xv_qp(qp));
	return 0;
}

/* Only QPs made by ibv_create_qp_ex have the extended work-request interface. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return xv_qp(qp)->wr_batch ? &xv_qp(qp)->ex : xv_null(EOPNOTSUPP);
}
