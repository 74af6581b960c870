/* SPDX-License-Identifier: MIT */
/*
 * Work-request opcodes in one table (as wire.h has one for packets): what
 * each needs at posting, which packets it becomes, how it completes; and the
 * local work requests, which run in the engine in send-queue order.
 */
#include <string.h>

#include "core.h"

#define MSG(first, middle, last, only) first, middle, last, only
#define ONE(op) op, op, op, op
#define LOCAL 0, 0, 0, 0

const struct xr_wr_info xr_wr_info[XR_WR_OPCODES] = {
    [XR_WR_SEND] = {XR_WRF_VALID | XR_WRF_DATA, XR_WC_SEND,
		    MSG(XR_OP_RC_SEND_FIRST, XR_OP_RC_SEND_MIDDLE, XR_OP_RC_SEND_LAST,
			XR_OP_RC_SEND_ONLY)},
    [XR_WR_SEND_WITH_IMM] = {XR_WRF_VALID | XR_WRF_DATA | XR_WRF_IMM, XR_WC_SEND,
			     MSG(XR_OP_RC_SEND_FIRST, XR_OP_RC_SEND_MIDDLE, XR_OP_RC_SEND_LAST_IMM,
				 XR_OP_RC_SEND_ONLY_IMM)},
    [XR_WR_SEND_WITH_INV] = {XR_WRF_VALID | XR_WRF_DATA | XR_WRF_INVALIDATE, XR_WC_SEND,
			     MSG(XR_OP_RC_SEND_FIRST, XR_OP_RC_SEND_MIDDLE, XR_OP_RC_SEND_LAST_INV,
				 XR_OP_RC_SEND_ONLY_INV)},
    [XR_WR_RDMA_WRITE] = {XR_WRF_VALID | XR_WRF_DATA | XR_WRF_REMOTE, XR_WC_RDMA_WRITE,
			  MSG(XR_OP_RC_WRITE_FIRST, XR_OP_RC_WRITE_MIDDLE, XR_OP_RC_WRITE_LAST,
			      XR_OP_RC_WRITE_ONLY)},
    [XR_WR_RDMA_WRITE_WITH_IMM] = {XR_WRF_VALID | XR_WRF_DATA | XR_WRF_REMOTE | XR_WRF_IMM,
				   XR_WC_RDMA_WRITE,
				   MSG(XR_OP_RC_WRITE_FIRST, XR_OP_RC_WRITE_MIDDLE,
				       XR_OP_RC_WRITE_LAST_IMM, XR_OP_RC_WRITE_ONLY_IMM)},
    [XR_WR_RDMA_READ] = {XR_WRF_VALID | XR_WRF_READ | XR_WRF_REMOTE, XR_WC_RDMA_READ,
			 ONE(XR_OP_RC_READ_REQUEST)},
    [XR_WR_RDMA_READ_WITH_INV] = {XR_WRF_VALID | XR_WRF_READ | XR_WRF_REMOTE | XR_WRF_INVALIDATE,
				  XR_WC_RDMA_READ, ONE(XR_OP_RC_READ_REQUEST)},
    [XR_WR_ATOMIC_CMP_AND_SWP] = {XR_WRF_VALID | XR_WRF_ATOMIC | XR_WRF_REMOTE, XR_WC_COMP_SWAP,
				  ONE(XR_OP_RC_CMP_SWAP)},
    [XR_WR_ATOMIC_FETCH_AND_ADD] = {XR_WRF_VALID | XR_WRF_ATOMIC | XR_WRF_REMOTE, XR_WC_FETCH_ADD,
				    ONE(XR_OP_RC_FETCH_ADD)},
    [XR_WR_MASKED_ATOMIC_CMP_AND_SWP] = {XR_WRF_VALID | XR_WRF_ATOMIC | XR_WRF_MASKED |
					     XR_WRF_REMOTE,
					 XR_WC_MASKED_COMP_SWAP, ONE(XR_OP_RC_MASKED_CMP_SWAP)},
    [XR_WR_MASKED_ATOMIC_FETCH_AND_ADD] = {XR_WRF_VALID | XR_WRF_ATOMIC | XR_WRF_MASKED |
					       XR_WRF_REMOTE,
					   XR_WC_MASKED_FETCH_ADD, ONE(XR_OP_RC_MASKED_FETCH_ADD)},
    [XR_WR_LOCAL_INV] = {XR_WRF_VALID | XR_WRF_LOCAL | XR_WRF_INVALIDATE, XR_WC_LOCAL_INV, LOCAL},
    [XR_WR_BIND_MW] = {XR_WRF_VALID | XR_WRF_LOCAL, XR_WC_BIND_MW, LOCAL},
    [XR_WR_REG_MR] = {XR_WRF_VALID | XR_WRF_LOCAL, XR_WC_REG_MR, LOCAL},
};

/* The spec's rules for a fast registration, as rxe applies them. */
static enum xr_wc_status exec_reg_mr(struct xr_qp_impl *qp, const struct xr_reg_args *r)
{
	struct xr_mr_impl *mr = r->mr;
	const int known = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
			  XR_ACCESS_REMOTE_ATOMIC | XR_ACCESS_MW_BIND;

	if (!mr || xr_core_key_obj(qp->core, mr->lkey, XR_KEY_MR) != mr)
		return XR_WC_LOC_QP_OP_ERR;
	/* A valid MR is invalidated first; only the key byte may change. */
	if (mr->kind != XR_MR_FAST_REG || mr->state != XR_MEM_INVALID || mr->pub.pd != qp->pub.pd ||
	    !xr_mr_names_key(mr, r->key) || !mr->staged.npages)
		return XR_WC_LOC_QP_OP_ERR;
	if ((r->access & ~known) ||
	    ((r->access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) &&
	     !(r->access & XR_ACCESS_LOCAL_WRITE)))
		return XR_WC_LOC_QP_OP_ERR;
	memcpy(mr->map.pages, mr->staged.pages, mr->staged.npages * sizeof(uint64_t));
	mr->map.npages = mr->staged.npages;
	mr->map.page_shift = mr->staged.page_shift;
	mr->map.page_off = mr->staged.page_off;
	mr->map.iova = mr->staged.iova;
	mr->map.length = mr->staged.length;
	mr->iova = mr->map.iova;
	mr->length = mr->map.length;
	xr_mr_set_key_byte(mr, (uint8_t)r->key);
	mr->access = mr->pub.access = r->access;
	mr->state = XR_MEM_VALID;
	return XR_WC_SUCCESS;
}

enum xr_wc_status xr_core_exec_local(struct xr_qp_impl *qp, struct xr_swqe *w)
{
	switch (w->opcode) {
	case XR_WR_BIND_MW:
		return xr_core_exec_bind(qp, &w->bind);
	case XR_WR_LOCAL_INV:
		return xr_core_invalidate_key(qp, w->invalidate_rkey) ? XR_WC_LOC_QP_OP_ERR
								      : XR_WC_SUCCESS;
	case XR_WR_REG_MR:
		return exec_reg_mr(qp, &w->reg);
	default:
		return XR_WC_LOC_QP_OP_ERR;
	}
}
