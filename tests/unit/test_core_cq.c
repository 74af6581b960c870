/* SPDX-License-Identifier: MIT */
/*
 * A full completion queue loses nothing: a receiver whose CQ has no room
 * answers RNR until the application polls, a sender keeps completed WQEs on
 * its send queue until their completions fit, and every completion arrives
 * exactly once, in order.
 */
#include "core_harness.h"

#define SENDER 0
#define RECEIVER 1
#define MSGS 40
#define SMALL_CQ 3 /* entries: far fewer than the messages in flight */

static void shrink_cqs(struct h_pair *p)
{
	for (int s = 0; s < 2; s++) {
		struct h_side *hs = &p->side[s];
		int err;

		CHECK(xr_core_destroy_cq(hs->scq) == 0 && xr_core_destroy_cq(hs->rcq) == 0,
		      "destroy the default CQs");
		hs->scq = xr_core_create_cq(hs->core, SMALL_CQ, &err);
		hs->rcq = xr_core_create_cq(hs->core, SMALL_CQ, &err);
		if (!hs->scq || !hs->rcq) {
			fprintf(stderr, "test fixture: small CQs: %s\n", strerror(-err));
			exit(2);
		}
	}
}

/* Takes at most one completion from each CQ per step: slower than the traffic. */
struct slow_poller {
	struct xr_cq_impl *scq, *rcq;
	uint32_t sends, recvs;
	uint64_t send_ids[MSGS], recv_ids[MSGS];
	uint32_t recv_len[MSGS];
	bool bad;
};

static bool poll_slowly(struct h_pair *p, void *arg)
{
	struct slow_poller *sp = arg;
	struct xr_wc wc;

	(void)p;
	if (h_poll(sp->scq, &wc, 1) == 1) {
		sp->bad |= wc.status != XR_WC_SUCCESS || sp->sends >= MSGS;
		if (sp->sends < MSGS)
			sp->send_ids[sp->sends++] = wc.wr_id;
	}
	if (h_poll(sp->rcq, &wc, 1) == 1) {
		sp->bad |= wc.status != XR_WC_SUCCESS || sp->recvs >= MSGS;
		if (sp->recvs < MSGS) {
			sp->recv_len[sp->recvs] = wc.byte_len;
			sp->recv_ids[sp->recvs++] = wc.wr_id;
		}
	}
	return sp->sends == MSGS && sp->recvs == MSGS;
}

static void test_full_cqs(void)
{
	struct h_qp_opts o = h_default_opts();
	struct slow_poller sp = {0};
	struct h_buf *src, *dst;
	struct h_pair p;
	enum h_run_result r;

	o.cap.max_send_wr = MSGS;
	o.cap.max_recv_wr = MSGS;
	if (h_pair_init(&p, 31, 1024)) {
		fprintf(stderr, "test fixture: cores\n");
		exit(2);
	}
	shrink_cqs(&p);
	if (h_connect(&p, &o)) {
		fprintf(stderr, "test fixture: connect\n");
		exit(2);
	}
	src = h_buf(&p, SENDER, (size_t)MSGS * 2048, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, RECEIVER, (size_t)MSGS * 2048, XR_ACCESS_LOCAL_WRITE, 0);
	for (uint32_t i = 0; i < MSGS; i++) {
		struct xr_sge rs = h_sge(dst, (size_t)i * 2048, 2048);
		struct xr_sge ss = h_sge(src, (size_t)i * 2048, 1500 + i);

		h_fill(src->base + (size_t)i * 2048, 1500 + i, i);
		CHECK(h_post_recv(&p, RECEIVER, 100 + i, &rs, 1) == 0, "post_recv %u", i);
		CHECK(h_post_send(&p, SENDER, 200 + i, &ss, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) ==
			  0,
		      "post_send %u", i);
	}
	sp.scq = p.side[SENDER].scq;
	sp.rcq = p.side[RECEIVER].rcq;
	r = h_run(&p, p.now + 60ull * 1000000000ull, poll_slowly, &sp);
	CHECK(r == H_DONE, "run ended: %s, %u sends and %u receives completed", h_run_result_str(r),
	      sp.sends, sp.recvs);
	CHECK(!sp.bad, "an error or extra completion");
	for (uint32_t i = 0; i < sp.sends; i++)
		CHECK(sp.send_ids[i] == 200 + i, "send completion %u is wr %" PRIu64, i,
		      sp.send_ids[i]);
	for (uint32_t i = 0; i < sp.recvs; i++) {
		CHECK(sp.recv_ids[i] == 100 + i && sp.recv_len[i] == 1500 + i,
		      "receive %u: wr %" PRIu64 " byte_len %u", i, sp.recv_ids[i], sp.recv_len[i]);
		CHECK(h_first_mismatch(dst->base + (size_t)i * 2048, 1500 + i, i) < 0,
		      "message %u content", i);
	}
	CHECK(p.side[SENDER].scq->overflows == 0 && p.side[RECEIVER].rcq->overflows == 0,
	      "a CQ overflowed: %" PRIu64 " / %" PRIu64, p.side[SENDER].scq->overflows,
	      p.side[RECEIVER].rcq->overflows);
	CHECK(p.side[RECEIVER].qp->cnt.rnr_naks_tx > 0,
	      "the full receive CQ never held a SEND back");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("full CQs: RNR and held-back completions, nothing lost, in order", test_full_cqs);
	return h_exit_status();
}
