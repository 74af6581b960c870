/* SPDX-License-Identifier: MIT */
/*
 * Helpers for unit tests of UD QPs on the in-memory link (core_harness.h):
 * a UD QP brought to RTR or RTS, a UD send through an address handle, and
 * a receive of one buffer. Header-only; every helper is static inline.
 */
#ifndef XROCE_TESTS_UD_HARNESS_H
#define XROCE_TESTS_UD_HARNESS_H

#include <arpa/inet.h>

#include "core_harness.h"

/* A UD QP on side s taking its receives from srq (NULL: a receive queue of its own). */
static inline struct xr_qp_impl *ud_qp_srq(struct h_pair *p, int s, uint32_t qkey,
					   struct xr_cq_impl *cq, bool to_rts, struct xr_srq *srq)
{
	struct xr_qp_init_attr init = {.send_cq = &cq->pub,
				       .recv_cq = &cq->pub,
				       .cap = {.max_send_wr = 32,
					       .max_recv_wr = 32,
					       .max_send_sge = 2,
					       .max_recv_sge = 2,
					       .max_inline_data = 64},
				       .qp_type = XR_QPT_UD,
				       .sq_sig_all = 1,
				       .srq = srq};
	struct xr_qp_attr a = {.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = qkey};
	struct xr_qp_impl *qp;
	int err;

	qp = xr_core_create_qp(p->side[s].pd, &init, &err);
	CHECK(qp, "create UD QP: %s", strerror(-err));
	if (!qp)
		exit(2);
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY,
				NULL) == 0,
	      "UD RESET->INIT");
	a = (struct xr_qp_attr){.qp_state = XR_QPS_RTR};
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL) == 0, "UD INIT->RTR");
	if (to_rts) {
		a = (struct xr_qp_attr){.qp_state = XR_QPS_RTS, .sq_psn = 0x123};
		CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN, NULL) == 0,
		      "UD RTR->RTS");
	}
	return qp;
}

static inline struct xr_qp_impl *ud_qp(struct h_pair *p, int s, uint32_t qkey,
				       struct xr_cq_impl *cq, bool to_rts)
{
	return ud_qp_srq(p, s, qkey, cq, to_rts, NULL);
}

static inline int ud_send(struct xr_qp_impl *qp, struct xr_ah *ah, uint32_t remote_qpn,
			  uint32_t qkey, struct xr_sge *sge, int nsge, bool imm, uint64_t wr_id)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = nsge,
				.opcode = imm ? XR_WR_SEND_WITH_IMM : XR_WR_SEND,
				.imm_data = htonl(0xfeed0000u | (uint32_t)wr_id)};
	struct xr_send_wr *bad = NULL;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = qkey;
	return xr_core_post_send(qp, &wr, &bad);
}

static inline void post_recv_buf(struct xr_qp_impl *qp, const struct h_buf *b, uint32_t len,
				 uint64_t wr_id)
{
	struct xr_sge sge = h_sge(b, 0, len);
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad = NULL;

	CHECK(xr_core_post_recv(qp, &wr, &bad) == 0, "post receive");
}

#endif /* XROCE_TESTS_UD_HARNESS_H */
