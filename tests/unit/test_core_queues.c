/* SPDX-License-Identifier: MIT */
/*
 * Which port queue a QP's frames leave on, through two cores on the
 * in-memory link (which, like veth, delivers a frame on the queue it was
 * sent on): QPs start spread over the queues by QPN, a connected QP follows
 * the queue its peer's frames arrive on, and a frame from a queue the port
 * does not send on, or from no queue, leaves the QP where it was.
 */
#include "core_harness.h"

#define REQ 0
#define RSP 1
#define QUEUES 2
#define LEN 8192 /* eight packets at path MTU 1024 */

/* Two cores whose ports send on tx_queues[side] queues, a connected RC QP on each. */
static void setup(struct h_pair *p, const uint32_t tx_queues[2])
{
	struct h_qp_opts o = h_default_opts();
	int err = h_pair_init(p, 7, 256);

	for (int s = 0; !err && s < 2; s++)
		p->side[s].core->port.tx_queues = tx_queues[s];
	if (!err)
		err = h_connect(p, &o);
	if (err) {
		fprintf(stderr, "test fixture: cannot build two connected cores: %s\n",
			strerror(-err));
		exit(2);
	}
}

/* A signaled WRITE of LEN bytes from REQ, run to its completion; whether they landed. */
static bool write_lands(struct h_pair *p, uint64_t wr_id, uint8_t fill)
{
	struct h_buf *src = h_buf(p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, fill);
	struct h_buf *dst = h_buf(p, RSP, LEN, H_REMOTE_ALL, 0);

	CHECK(h_post_write(p, REQ, wr_id, src, 0, dst, 0, LEN) == 0, "post the WRITE");
	CHECK(h_settle(p) == H_QUIET, "the WRITE settles");
	h_expect_wc(p->side[REQ].scq, "the WRITE", wr_id, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	return h_first_not(dst->base, LEN, fill) < 0;
}

static void test_spread_by_qpn(void)
{
	struct h_pair p;

	setup(&p, (uint32_t[2]){QUEUES, QUEUES});
	for (int s = 0; s < 2; s++) {
		struct xr_qp_impl *qp = p.side[s].qp;

		CHECK(qp->tx_queue == qp->pub.qp_num % QUEUES,
		      "side %d: QPN %#x starts on queue %u", s, qp->pub.qp_num, qp->tx_queue);
	}
	h_pair_destroy(&p);
}

static void test_follow_peer(void)
{
	struct xr_mem_counters *req_tx, *rsp_tx;
	uint32_t mine, other;
	struct h_pair p;

	setup(&p, (uint32_t[2]){QUEUES, QUEUES});
	req_tx = &p.link.dir[REQ].counters;
	rsp_tx = &p.link.dir[RSP].counters;
	/* The responder starts on the other queue than the requester's. */
	mine = p.side[REQ].qp->tx_queue;
	other = (mine + 1) % QUEUES;
	p.side[RSP].qp->tx_queue = other;

	CHECK(write_lands(&p, 1, 0x5a), "the WRITE's bytes landed");
	CHECK(req_tx->on_queue[mine] == req_tx->submitted && req_tx->submitted >= LEN / 1024,
	      "every request (%" PRIu64 ") left on the requester's queue %u: %" PRIu64,
	      req_tx->submitted, mine, req_tx->on_queue[mine]);
	CHECK(p.side[RSP].qp->tx_queue == mine, "the responder follows to queue %u (on %u)", mine,
	      p.side[RSP].qp->tx_queue);
	CHECK(rsp_tx->submitted > 0 && rsp_tx->on_queue[mine] == rsp_tx->submitted &&
		  rsp_tx->on_queue[other] == 0,
	      "every ACK (%" PRIu64 ") left on queue %u, none on %u (%" PRIu64 ")",
	      rsp_tx->submitted, mine, other, rsp_tx->on_queue[other]);
	h_pair_destroy(&p);
}

/* The requester sends on a queue the responder's port has no transmit ring for. */
static void test_unknown_queue_kept(void)
{
	struct xr_mem_counters *rsp_tx;
	uint32_t kept;
	struct h_pair p;

	setup(&p, (uint32_t[2]){QUEUES + 2, QUEUES});
	rsp_tx = &p.link.dir[RSP].counters;
	p.side[REQ].qp->tx_queue = QUEUES + 1;
	kept = p.side[RSP].qp->tx_queue;

	CHECK(write_lands(&p, 2, 0x3c), "the WRITE's bytes landed");
	CHECK(p.side[RSP].qp->tx_queue == kept, "the responder stays on queue %u (on %u)", kept,
	      p.side[RSP].qp->tx_queue);
	CHECK(rsp_tx->submitted > 0 && rsp_tx->on_queue[kept] == rsp_tx->submitted,
	      "every ACK (%" PRIu64 ") left on queue %u", rsp_tx->submitted, kept);

	h_pair_destroy(&p);
}

static void test_no_queue_kept(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_forge f;
	struct h_pair p;
	uint32_t kept;

	setup(&p, (uint32_t[2]){QUEUES, QUEUES});
	kept = p.side[RSP].qp->tx_queue;
	/* A SEND from the requester's path, as loopback or a guest's relay would deliver it. */
	if (h_forge_begin(&f, &p.side[REQ].qp->path, XR_OP_RC_SEND_ONLY, p.side[RSP].qp->pub.qp_num,
			  o.sq_psn[REQ], 0, 0)) {
		h_forge_deliver(&p, RSP, &f);
		CHECK(p.side[RSP].qp->rx_frames == 1, "the frame reached the responder's QP");
		CHECK(p.side[RSP].qp->tx_queue == kept,
		      "a frame from no queue leaves the QP on queue %u (on %u)", kept,
		      p.side[RSP].qp->tx_queue);
	}
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("QPs start spread over the queues by QPN", test_spread_by_qpn);
	h_group("a connected QP sends on the queue its peer's frames arrive on", test_follow_peer);
	h_group("a frame from a queue the port does not send on moves nothing",
		test_unknown_queue_kept);
	h_group("a frame from no queue moves nothing", test_no_queue_kept);
	return h_exit_status();
}
