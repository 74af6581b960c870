/* SPDX-License-Identifier: MIT */
/*
 * The tables the inline functions of <infiniband/verbs.h> call through:
 * ibv_context.ops for posting and polling, struct verbs_context (in front of
 * the ibv_context, marked by abi_compat) for the extended verbs. An entry
 * left NULL makes its inline function fail with EOPNOTSUPP (or take its
 * legacy path), as libibverbs does for a provider without the verb.
 */
#include "shim.h"

void xv_set_ops(struct xv_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;

	ops->poll_cq = xv_poll_cq;
	ops->req_notify_cq = xv_req_notify_cq;
	ops->post_send = xv_post_send;
	ops->post_recv = xv_post_recv;
	ops->post_srq_recv = xv_post_srq_recv;
	ops->alloc_mw = xv_alloc_mw;
	ops->dealloc_mw = xv_dealloc_mw;
	ops->bind_mw = xv_bind_mw;

	ctx->vctx.create_cq_ex = xv_create_cq_ex;
	ctx->vctx.create_qp_ex = xv_create_qp_ex;
	ctx->vctx.query_port = xv_query_port;
	ctx->vctx.query_device_ex = xv_query_device_ex;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}
