/* SPDX-License-Identifier: MIT */
/*
 * Which port queue a QP's frames leave on, and which engine runs it,
 * through two cores on the in-memory link (which, like veth, delivers a
 * frame on the queue it was sent on): QPs start spread over the queues by
 * QPN, a connected QP follows the queue its peer's frames arrive on, and a
 * frame from a queue the port does not send on, or from no queue, leaves
 * the QP where it was. With two engines, a QP belongs to its queue's:
 * only that engine's rounds send for it and fire its timers, it goes with
 * its timer when it moves, and XDP's engine-sleeping flag follows it.
 */
#include "core_harness.h"

#define REQ 0
#define RSP 1
#define QUEUES 2
#define LEN 8192 /* eight packets at path MTU 1024 */

/*
 * Two cores whose ports send on tx_queues[side] queues, run by engines
 * engines each (0: one), a connected RC QP on each.
 */
static void setup_engines(struct h_pair *p, const uint32_t tx_queues[2], uint32_t engines)
{
	struct h_qp_opts o = h_default_opts();
	int err = h_pair_init_engines(p, 7, 256, engines);

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

static void setup(struct h_pair *p, const uint32_t tx_queues[2])
{
	setup_engines(p, tx_queues, 0);
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
	xr_core_qp_set_queue(p.side[RSP].qp, other);

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
	xr_core_qp_set_queue(p.side[REQ].qp, QUEUES + 1);
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

/* Frames side s submitted so far. */
static uint64_t submitted(struct h_pair *p, int s)
{
	return p->link.dir[s].counters.submitted;
}

static void test_engine_runs_its_qps(void)
{
	struct h_buf *src, *dst;
	struct xr_core *core;
	struct xr_qp_impl *qp;
	uint32_t mine, other;
	struct h_pair p;
	uint64_t before;

	setup_engines(&p, (uint32_t[2]){QUEUES, QUEUES}, QUEUES);
	core = p.side[REQ].core;
	qp = p.side[REQ].qp;
	mine = qp->lane;
	other = (mine + 1) % QUEUES;
	CHECK(core->nlanes == QUEUES, "the core has %u lanes (%u)", QUEUES, core->nlanes);
	CHECK(qp->lane == qp->tx_queue % QUEUES, "QPN %#x on queue %u is lane %u's", qp->pub.qp_num,
	      qp->tx_queue, qp->lane);
	src = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x77);
	dst = h_buf(&p, RSP, LEN, H_REMOTE_ALL, 0);
	(void)xr_core_take_readied(core);
	CHECK(h_post_write(&p, REQ, 3, src, 0, dst, 0, LEN) == 0, "post the WRITE");
	CHECK(xr_core_take_readied(core) == 1u << mine,
	      "the post announces lane %u's work, and only its", mine);
	CHECK(xr_core_take_readied(core) == 0, "taken once, the announcement is gone");
	CHECK(xr_core_lane_outstanding(core, mine) && !xr_core_lane_outstanding(core, other),
	      "lane %u has the work outstanding, lane %u none", mine, other);

	before = submitted(&p, REQ);
	xr_core_progress_lane(core, other, p.now);
	CHECK(submitted(&p, REQ) == before, "the other engine's round sends nothing (%" PRIu64 ")",
	      submitted(&p, REQ) - before);
	xr_core_progress_lane(core, mine, p.now);
	CHECK(submitted(&p, REQ) - before == LEN / 1024,
	      "the QP's engine sends its %u packets (%" PRIu64 ")", LEN / 1024,
	      submitted(&p, REQ) - before);
	CHECK(core->lanes[mine].ntimers == 1 && core->lanes[other].ntimers == 0,
	      "its retransmit timer is on lane %u (%u) and not on %u (%u)", mine,
	      core->lanes[mine].ntimers, other, core->lanes[other].ntimers);
	CHECK(h_settle(&p) == H_QUIET, "the WRITE settles");
	h_expect_wc(p.side[REQ].scq, "the WRITE", 3, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_not(dst->base, LEN, 0x77) < 0, "its bytes landed");
	h_pair_destroy(&p);
}

/* A QP with PSNs in flight and its timer armed moves to the other engine; its frames were lost. */
static void test_move_takes_timer(void)
{
	struct h_buf *src, *dst;
	struct xr_core *core;
	struct xr_qp_impl *qp;
	uint32_t mine, other, in_flight;
	struct xr_mem_counters *req_tx;
	struct h_pair p;
	uint64_t before;

	setup_engines(&p, (uint32_t[2]){QUEUES, QUEUES}, QUEUES);
	core = p.side[REQ].core;
	qp = p.side[REQ].qp;
	req_tx = &p.link.dir[REQ].counters;
	mine = qp->lane;
	other = (mine + 1) % QUEUES;
	src = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x6b);
	dst = h_buf(&p, RSP, LEN, H_REMOTE_ALL, 0);
	CHECK(h_post_write(&p, REQ, 4, src, 0, dst, 0, LEN) == 0, "post the WRITE");
	xr_core_progress_lane(core, mine, p.now);
	CHECK(xr_mem_link_discard(&p.link, RSP, UINT32_MAX) == LEN / 1024,
	      "its %u packets were sent, and are lost", LEN / 1024);
	in_flight = core->lanes[mine].in_flight;
	CHECK(in_flight > 0 && in_flight == core->in_flight, "lane %u has %u PSNs in flight", mine,
	      in_flight);

	xr_core_qp_set_queue(qp, other);
	CHECK(qp->lane == other && qp->tx_queue == other, "the QP is lane %u's (%u)", other,
	      qp->lane);
	CHECK(core->lanes[other].ntimers == 1 && core->lanes[mine].ntimers == 0,
	      "its timer moved with it: lane %u has %u, lane %u %u", other,
	      core->lanes[other].ntimers, mine, core->lanes[mine].ntimers);
	CHECK(core->lanes[other].in_flight == in_flight && core->lanes[mine].in_flight == 0 &&
		  core->in_flight == in_flight,
	      "its PSNs in flight moved with it (%u, %u; core %u)", core->lanes[other].in_flight,
	      core->lanes[mine].in_flight, core->in_flight);

	p.now = core->lanes[other].timers[0]->timer_at;
	before = submitted(&p, REQ);
	xr_core_progress_lane(core, mine, p.now);
	CHECK(submitted(&p, REQ) == before, "the old engine's round retransmits nothing");
	xr_core_progress_lane(core, other, p.now);
	CHECK(submitted(&p, REQ) > before && req_tx->on_queue[other] == submitted(&p, REQ) - before,
	      "the new engine's round retransmits (%" PRIu64 "), all on queue %u (%" PRIu64 ")",
	      submitted(&p, REQ) - before, other, req_tx->on_queue[other]);
	CHECK(h_settle(&p) == H_QUIET, "the WRITE settles");
	h_expect_wc(p.side[REQ].scq, "the WRITE", 4, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_not(dst->base, LEN, 0x6b) < 0, "its bytes landed");
	CHECK(core->in_flight == 0 && core->lanes[other].in_flight == 0 &&
		  xr_core_timer_count(core) == 0,
	      "nothing left in flight (%u) or timed (%u)", core->in_flight,
	      xr_core_timer_count(core));
	h_pair_destroy(&p);
}

/* XDP's per-QP engine_sleeping flag: the QP's engine's, also after it moves. */
static void test_sleeping_flag_follows(void)
{
	struct xr_qp_entry *table = calloc(XR_QP_TABLE_SLOTS, sizeof(*table));
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_entry *e;
	struct xr_core *core;
	struct xr_qp_impl *qp;
	uint32_t mine, other;
	struct h_pair p;

	if (!table || h_pair_init_engines(&p, 9, 256, QUEUES)) {
		fprintf(stderr, "test fixture: cannot build two cores\n");
		exit(2);
	}
	core = p.side[REQ].core;
	core->port.tx_queues = QUEUES;
	core->xdp_qps = table;
	CHECK(h_create_qp(&p, REQ, &o) == 0, "create the QP with an XDP entry");
	qp = p.side[REQ].qp;
	e = &table[qp->slot];
	mine = qp->lane;
	other = (mine + 1) % QUEUES;

	xr_core_set_engine_sleeping(core, other, true);
	CHECK(!e->engine_sleeping, "another engine's sleep leaves the QP's ACKs to XDP");
	xr_core_set_engine_sleeping(core, mine, true);
	CHECK(e->engine_sleeping, "its own engine's sleep steers its ACKs to the socket");
	xr_core_set_engine_sleeping(core, other, false);
	xr_core_qp_set_queue(qp, other);
	CHECK(!e->engine_sleeping, "moved to an engine awake, XDP absorbs its ACKs again");
	xr_core_set_engine_sleeping(core, mine, false);
	xr_core_set_engine_sleeping(core, other, true);
	CHECK(e->engine_sleeping, "its new engine's sleep steers them to the socket");
	xr_core_set_engine_sleeping(core, other, false);
	core->xdp_qps = NULL;
	h_pair_destroy(&p);
	free(table);
}

int main(void)
{
	h_group("QPs start spread over the queues by QPN", test_spread_by_qpn);
	h_group("a connected QP sends on the queue its peer's frames arrive on", test_follow_peer);
	h_group("a frame from a queue the port does not send on moves nothing",
		test_unknown_queue_kept);
	h_group("a frame from no queue moves nothing", test_no_queue_kept);
	h_group("with two engines, only a QP's own engine runs it", test_engine_runs_its_qps);
	h_group("a QP that moves to another engine takes its timer and PSNs in flight",
		test_move_takes_timer);
	h_group("XDP's engine-sleeping flag follows a QP's engine", test_sleeping_flag_follows);
	return h_exit_status();
}
