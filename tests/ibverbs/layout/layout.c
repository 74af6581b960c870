/* SPDX-License-Identifier: MIT */
/*
 * layout DEVICE: built against the installed <infiniband/verbs.h> and
 * Debian's -libverbs like any verbs application, run on xroce's
 * libibverbs.so.1 (xroce-run). Two checks that a layout mistake fails:
 *   - at compile time, the offsets and sizes the inline functions of
 *     verbs.h use, as rdma-core's x86_64 ABI has them (binaries built
 *     against any libibverbs-dev rely on these numbers);
 *   - at run time, that the objects the library hands out are what those
 *     inline functions find: verbs_context in front of the ibv_context with
 *     its size, the ops table filled, each object's fields set, and posting,
 *     polling and arming through the inline functions reaching the library.
 * Prints "layout: ok: N checks" and exits 0, or names the first failure.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define ABI(expr, value) _Static_assert((expr) == (value), #expr " == " #value)
ABI(offsetof(struct ibv_context, ops.alloc_mw), 64);
ABI(offsetof(struct ibv_context, ops.bind_mw), 72);
ABI(offsetof(struct ibv_context, ops.poll_cq), 96);
ABI(offsetof(struct ibv_context, ops.req_notify_cq), 104);
ABI(offsetof(struct ibv_context, ops.post_srq_recv), 168);
ABI(offsetof(struct ibv_context, ops.post_send), 208);
ABI(offsetof(struct ibv_context, ops.post_recv), 216);
ABI(offsetof(struct ibv_context, abi_compat), 320);
ABI(sizeof(struct ibv_context), 328);
ABI(sizeof(struct verbs_context), 648);
ABI(offsetof(struct verbs_context, sz), 312);
ABI(offsetof(struct verbs_context, context), 320);
ABI(offsetof(struct verbs_context, query_port), 0);
ABI(offsetof(struct verbs_context, create_cq_ex), 200);
ABI(offsetof(struct verbs_context, query_device_ex), 216);
ABI(offsetof(struct verbs_context, create_qp_ex), 264);
ABI(sizeof(struct ibv_wc), 48);
ABI(sizeof(struct ibv_send_wr), 128);
ABI(sizeof(struct ibv_recv_wr), 32);
ABI(sizeof(struct ibv_sge), 16);
ABI(sizeof(struct ibv_qp), 160);
ABI(sizeof(struct ibv_cq), 128);
ABI(sizeof(struct ibv_port_attr), 52);
ABI(sizeof(struct ibv_device), 664);
ABI(sizeof(struct ibv_qp_attr), 144);
ABI(sizeof(struct ibv_device_attr), 232);
ABI(offsetof(struct ibv_cq_ex, status), 132);
ABI(offsetof(struct ibv_cq_ex, start_poll), 144);
ABI(offsetof(struct ibv_cq_ex, read_opcode), 168);
ABI(offsetof(struct ibv_cq_ex, read_dlid_path_bits), 240);
ABI(offsetof(struct ibv_qp_ex, wr_id), 168);
ABI(offsetof(struct ibv_qp_ex, wr_flags), 176);
ABI(offsetof(struct ibv_qp_ex, wr_send), 240);
ABI(offsetof(struct ibv_qp_ex, wr_start), 320);
ABI(offsetof(struct ibv_qp_ex, wr_complete), 328);
#endif

#define CHECK_PROGRAM "layout"
#include "../check.h"

static struct ibv_device *find(struct ibv_device **list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qpi = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC};
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct verbs_context *vctx;
	struct ibv_comp_channel *ch;
	struct ibv_port_attr port;
	struct ibv_send_wr swr = {0}, *bad_swr = NULL;
	struct ibv_recv_wr rwr = {0}, *bad_rwr = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cq_ex;
	struct ibv_qp *qp;
	static char buf[4096];
	int n, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: layout DEVICE\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	CHECK(list[n] == NULL, "the list of %d devices is not NULL-terminated", n);
	CHECK(find(list, argv[1]), "%s is not listed", argv[1]);
	ctx = ibv_open_device(find(list, argv[1]));
	CHECK(ctx, "ibv_open_device: %s", strerror(errno));
	CHECK(ctx->device == find(list, argv[1]), "ctx->device is not the device opened");

	vctx = verbs_get_ctx(ctx);
	CHECK(vctx, "abi_compat does not mark an extended context");
	CHECK((char *)&vctx->context == (char *)ctx,
	      "verbs_context is not in front of ibv_context");
	CHECK(vctx->sz == sizeof(*vctx), "verbs_context.sz %zu, expected %zu", vctx->sz,
	      sizeof(*vctx));
	CHECK(ctx->ops.post_send && ctx->ops.post_recv && ctx->ops.poll_cq &&
		  ctx->ops.req_notify_cq,
	      "the ops the inline functions call are not all set");
	CHECK(verbs_get_ctx_op(ctx, query_port), "no query_port in verbs_context");
	CHECK(ctx->num_comp_vectors == 1, "num_comp_vectors %d", ctx->num_comp_vectors);

	/* The inline ibv_query_port takes the verbs_context op. */
	memset(&port, 0xa5, sizeof(port));
	CHECK(!ibv_query_port(ctx, 1, &port), "ibv_query_port: %s", strerror(errno));
	CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u", port.link_layer);
	CHECK(port.port_cap_flags2 == 0, "port_cap_flags2 %#x: the tail of the struct not written",
	      port.port_cap_flags2);
	CHECK(ibv_query_port(ctx, 2, &port) == EINVAL, "port 2 is not EINVAL");

	pd = ibv_alloc_pd(ctx);
	CHECK(pd && pd->context == ctx, "ibv_alloc_pd: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "ibv_reg_mr: %s", strerror(errno));
	CHECK(mr->context == ctx && mr->pd == pd && mr->addr == buf && mr->length == sizeof(buf),
	      "ibv_mr fields");
	CHECK(mr->lkey != mr->rkey, "lkey == rkey (%#x)", mr->lkey);

	ch = ibv_create_comp_channel(ctx);
	CHECK(ch && ch->context == ctx && ch->fd >= 0, "ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 16, &checks, ch, 0);
	CHECK(cq, "ibv_create_cq: %s", strerror(errno));
	CHECK(cq->context == ctx && cq->channel == ch && cq->cq_context == &checks && cq->cqe >= 16,
	      "ibv_cq fields (cqe %d)", cq->cqe);
	CHECK(ch->refcnt == 1, "channel refcnt %d with one CQ", ch->refcnt);
	CHECK(!ibv_req_notify_cq(cq, 0), "ibv_req_notify_cq (inline, ops.req_notify_cq)");
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "an empty CQ polls a completion");

	qpi.send_cq = cq;
	qpi.recv_cq = cq;
	qp = ibv_create_qp(pd, &qpi);
	CHECK(qp, "ibv_create_qp: %s", strerror(errno));
	CHECK(qp->context == ctx && qp->pd == pd && qp->send_cq == cq && qp->recv_cq == cq &&
		  qp->qp_type == IBV_QPT_RC && qp->state == IBV_QPS_RESET && qp->qp_num,
	      "ibv_qp fields");
	CHECK(qpi.cap.max_send_wr >= 4 && qpi.cap.max_recv_wr >= 4, "capabilities not returned");
	CHECK(!ibv_modify_qp(qp, &qa,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "RESET -> INIT");
	CHECK(qp->state == IBV_QPS_INIT, "qp->state %d after INIT", qp->state);

	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = mr->lkey};
	rwr = (struct ibv_recv_wr){.wr_id = 7, .sg_list = &sge, .num_sge = 1};
	CHECK(!ibv_post_recv(qp, &rwr, &bad_rwr), "ibv_post_recv (inline, ops.post_recv)");
	/* A SEND before RTS is refused, naming the request. */
	swr = (struct ibv_send_wr){.wr_id = 8,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED};
	ret = ibv_post_send(qp, &swr, &bad_swr);
	CHECK(ret > 0 && bad_swr == &swr, "ibv_post_send in INIT: %d, bad_wr %p", ret,
	      (void *)bad_swr);
	swr.opcode = IBV_WR_TSO;
	bad_swr = NULL;
	CHECK(ibv_post_send(qp, &swr, &bad_swr) == EOPNOTSUPP && bad_swr == &swr,
	      "TSO is not EOPNOTSUPP");
	/* An extended CQ is an ibv_cq at its start, with its poll functions set. */
	cq_ex = ibv_create_cq_ex(ctx, &(struct ibv_cq_init_attr_ex){.cqe = 4});
	CHECK(cq_ex && ibv_cq_ex_to_cq(cq_ex)->context == ctx && cq_ex->cqe >= 4 &&
		  cq_ex->start_poll && cq_ex->next_poll && cq_ex->end_poll && cq_ex->read_opcode,
	      "ibv_create_cq_ex's object");
	CHECK(ibv_start_poll(cq_ex, &(struct ibv_poll_cq_attr){0}) == ENOENT,
	      "ibv_start_poll on an empty CQ is not ENOENT");
	CHECK(!ibv_destroy_cq(ibv_cq_ex_to_cq(cq_ex)), "ibv_destroy_cq of an extended CQ");

	/* Into ERR: the posted receive is flushed to the CQ with its wr_id. */
	qa.qp_state = IBV_QPS_ERR;
	CHECK(!ibv_modify_qp(qp, &qa, IBV_QP_STATE), "INIT -> ERR");
	n = 0;
	for (int i = 0; i < 1000 && !n; i++)
		n = ibv_poll_cq(cq, 1, &wc);
	CHECK(n == 1 && wc.wr_id == 7 && wc.status == IBV_WC_WR_FLUSH_ERR &&
		  wc.qp_num == qp->qp_num,
	      "flushed receive: n %d wr_id %llu status %d", n, (unsigned long long)wc.wr_id,
	      wc.status);

	CHECK(!ibv_destroy_qp(qp), "ibv_destroy_qp");
	CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	CHECK(!ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(ctx), "ibv_close_device");
	ibv_free_device_list(list);
	CHECK_SUMMARY();
	return 0;
}
