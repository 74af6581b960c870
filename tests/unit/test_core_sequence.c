/* SPDX-License-Identifier: MIT */
/*
 * A responder's message sequence rules, with frames forged as side 0's QP
 * would send them and handed to side 1's core: a SEND_FIRST while a WRITE
 * is under way is an invalid request (NAK, ERR), not a second message; a
 * receive that fails while its CQ is full is reported with its own status
 * once there is room, not lost.
 */
#include "core_harness.h"

#define MTU 1024

/* Hands side 1 a request of side 0's QP at PSN psn with len payload bytes of fill. */
static void inject(struct h_pair *p, uint8_t opcode, uint32_t psn, uint32_t len, uint8_t fill,
		   const struct h_buf *reth_target, uint32_t reth_len)
{
	struct xr_bth_fields bth = {
	    .opcode = opcode, .dqpn = p->side[1].qp->pub.qp_num, .psn = psn & XR_PSN_MASK};
	static uint8_t frame[4096];
	struct xr_pkt_out out;

	if (xr_pkt_build(frame, sizeof(frame), &p->side[0].qp->path, &bth, len, 1, &out)) {
		CHECK(false, "build opcode %#x", opcode);
		return;
	}
	if (reth_target) {
		uint64_t va = (uintptr_t)reth_target->base;
		uint32_t rkey = reth_target->mr->rkey;

		for (int i = 0; i < 8; i++)
			out.ext[i] = (uint8_t)(va >> (56 - 8 * i));
		for (int i = 0; i < 4; i++) {
			out.ext[8 + i] = (uint8_t)(rkey >> (24 - 8 * i));
			out.ext[12 + i] = (uint8_t)(reth_len >> (24 - 8 * i));
		}
	}
	memset(out.payload, fill, len);
	xr_pkt_seal(&out);
	xr_core_rx(p->side[1].core, out.frame, out.frame_len, XR_RX_NO_QUEUE, p->now);
}

static void test_send_first_inside_write(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *target, *recv;
	struct xr_qp_impl *qp;
	struct xr_sge sge;
	struct h_pair p;
	uint32_t psn;

	h_setup(&p, 21, 64, &o);
	qp = p.side[1].qp;
	target = h_buf(&p, 1, 2 * MTU, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	recv = h_buf(&p, 1, 4 * MTU, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(recv, 0, 4 * MTU);
	CHECK(h_post_recv(&p, 1, 1, &sge, 1) == 0, "recv");
	psn = qp->epsn;
	inject(&p, XR_OP_RC_WRITE_FIRST, psn, MTU, 0xaa, target, 2 * MTU);
	CHECK(qp->write_active && qp->epsn == ((psn + 1) & XR_PSN_MASK), "WRITE_FIRST taken");
	inject(&p, XR_OP_RC_SEND_FIRST, psn + 1, MTU, 0xbb, NULL, 0);
	CHECK(qp->pub.state == XR_QPS_ERR && qp->cnt.inv_req_naks_tx == 1,
	      "SEND_FIRST inside a WRITE: invalid request NAK (%llu) and ERR (state %d)",
	      (unsigned long long)qp->cnt.inv_req_naks_tx, qp->pub.state);
	CHECK(h_first_not(recv->base, 4 * MTU, 0) < 0, "nothing of the SEND placed");
	h_pair_destroy(&p);
}

static void test_error_with_cq_full(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_wc filler = {.wr_id = 999, .status = XR_WC_SUCCESS}, wc;
	struct xr_qp_impl *qp;
	struct h_buf *recv;
	struct xr_sge sge;
	struct h_pair p;
	uint32_t psn;
	int fillers = 0;

	h_setup(&p, 22, 64, &o);
	qp = p.side[1].qp;
	recv = h_buf(&p, 1, 1500, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(recv, 0, 1500);
	CHECK(h_post_recv(&p, 1, 7, &sge, 1) == 0, "recv");
	CHECK(h_post_recv(&p, 1, 8, &sge, 1) == 0, "recv");
	psn = qp->epsn;
	inject(&p, XR_OP_RC_SEND_FIRST, psn, MTU, 0x11, NULL, 0);
	CHECK(qp->recv_active, "SEND_FIRST into the 1500-byte receive");
	/* Meanwhile another QP's completions fill the shared CQ. */
	while (!xr_cq_full(p.side[1].rcq))
		xr_cq_push(p.side[1].rcq, &filler, false);
	inject(&p, XR_OP_RC_SEND_LAST, psn + 1, MTU, 0x22, NULL, 0);
	CHECK(qp->pub.state == XR_QPS_ERR, "2048 bytes into 1500: ERR");
	while (h_poll(p.side[1].rcq, &wc, 1) == 1)
		fillers += wc.wr_id == 999;
	CHECK(fillers == (int)p.side[1].rcq->size - 1, "only the fillers were queued (%d)",
	      fillers);
	xr_core_progress(p.side[1].core, p.now);
	CHECK(h_poll(p.side[1].rcq, &wc, 1) == 1 && wc.wr_id == 7 && wc.status == XR_WC_LOC_LEN_ERR,
	      "once there is room, the receive reports its own error: wr_id %llu status %s",
	      (unsigned long long)wc.wr_id, xr_wc_status_str(wc.status));
	CHECK(h_poll(p.side[1].rcq, &wc, 1) == 1 && wc.wr_id == 8 &&
		  wc.status == XR_WC_WR_FLUSH_ERR,
	      "the next receive is flushed");
	CHECK(p.side[1].rcq->overflows == 0, "no completion lost (%llu)",
	      (unsigned long long)p.side[1].rcq->overflows);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("SEND_FIRST while a WRITE is under way: invalid request",
		test_send_first_inside_write);
	h_group("a receive error while the CQ is full is reported later, not lost",
		test_error_with_cq_full);
	return h_exit_status();
}
