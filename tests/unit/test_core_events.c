/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous events the transport core raises, on the in-memory
 * link: COMM_EST once, for the first packet a QP takes in RTR; QP_FATAL when
 * a transport error (retries exhausted) takes a QP to ERR, never when the
 * application moves it there; QP_LAST_WQE_REACHED when a QP with an SRQ
 * enters ERR, either way; none twice.
 */
#include "core_harness.h"

struct counted {
	int comm_est, fatal, last_wqe, other;
};

static struct counted take_events(struct xr_core *core, struct xr_qp *qp)
{
	struct xr_async_event ev;
	struct counted c = {0};

	while (xr_core_take_event(core, &ev)) {
		if (ev.element.qp != qp)
			c.other++;
		else if (ev.event_type == XR_EVENT_COMM_EST)
			c.comm_est++;
		else if (ev.event_type == XR_EVENT_QP_FATAL)
			c.fatal++;
		else if (ev.event_type == XR_EVENT_QP_LAST_WQE_REACHED)
			c.last_wqe++;
		else
			c.other++;
	}
	return c;
}

static void test_comm_est(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_sge s, d;
	struct counted c;
	struct h_pair p;

	if (h_pair_init(&p, 11, 64) || h_create_qp(&p, 0, &o) || h_create_qp(&p, 1, &o) ||
	    h_to_init(&p, 0) || h_to_init(&p, 1) || h_to_rtr(&p, 0, &o) || h_to_rts(&p, 0, &o) ||
	    h_to_rtr(&p, 1, &o))
		exit(2);
	src = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 1);
	dst = h_buf(&p, 1, 64, XR_ACCESS_LOCAL_WRITE, 0);
	s = h_sge(src, 0, 64);
	d = h_sge(dst, 0, 64);
	for (int i = 0; i < 3; i++)
		CHECK(h_post_recv(&p, 1, (uint64_t)i, &d, 1) == 0, "recv");
	c = take_events(p.side[1].core, &p.side[1].qp->pub);
	CHECK(c.comm_est == 0, "nothing before a packet came");
	for (int i = 0; i < 2; i++)
		CHECK(h_post_send(&p, 0, (uint64_t)i, &s, 1, XR_WR_SEND, 0, 0) == 0, "send");
	h_settle(&p);
	c = take_events(p.side[1].core, &p.side[1].qp->pub);
	CHECK(c.comm_est == 1 && c.fatal == 0 && c.other == 0,
	      "two SENDs to a QP in RTR: COMM_EST once (%d), nothing else", c.comm_est);
	CHECK(h_to_rts(&p, 1, &o) == 0, "to RTS");
	CHECK(h_post_send(&p, 0, 2, &s, 1, XR_WR_SEND, 0, 0) == 0, "send");
	h_settle(&p);
	c = take_events(p.side[1].core, &p.side[1].qp->pub);
	CHECK(c.comm_est == 0, "none in RTS");
	c = take_events(p.side[0].core, &p.side[0].qp->pub);
	CHECK(c.comm_est == 0 && c.fatal == 0, "the sender, in RTS from the start, raised none");
	h_pair_destroy(&p);
}

static void test_fatal_and_last_wqe(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_mem_impair cut = {.loss = 1.0};
	struct xr_qp_attr err_attr = {.qp_state = XR_QPS_ERR};
	struct xr_srq_init_attr sinit = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct xr_srq_impl *srq;
	struct h_buf *src;
	struct xr_sge s;
	struct counted c;
	struct h_pair p;
	int err;

	if (h_pair_init(&p, 12, 64))
		exit(2);
	srq = xr_core_create_srq(p.side[1].pd, &sinit, &err);
	if (!srq)
		exit(2);
	o.srq[1] = &srq->pub;
	o.retry_cnt = 2;
	o.timeout = 8; /* about 1 ms */
	if (h_connect(&p, &o))
		exit(2);
	src = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 1);
	s = h_sge(src, 0, 64);
	/* Nothing reaches the peer: the retries run out. */
	xr_mem_link_set_impair(&p.link, 0, &cut);
	CHECK(h_post_send(&p, 0, 1, &s, 1, XR_WR_SEND, 0, 0) == 0, "send");
	h_settle(&p);
	h_expect_wc(p.side[0].scq, "the send", 1, XR_WC_RETRY_EXC_ERR, XR_WC_SEND);
	c = take_events(p.side[0].core, &p.side[0].qp->pub);
	CHECK(c.fatal == 1 && c.last_wqe == 0 && c.other == 0,
	      "retries exhausted: QP_FATAL once (%d), no LAST_WQE without an SRQ (%d)", c.fatal,
	      c.last_wqe);
	CHECK(xr_core_modify_qp(p.side[0].qp, &err_attr, XR_QP_STATE, NULL) == 0, "ERR again");
	c = take_events(p.side[0].core, &p.side[0].qp->pub);
	CHECK(c.fatal == 0, "nothing more for a QP already in ERR");

	CHECK(xr_core_modify_qp(p.side[1].qp, &err_attr, XR_QP_STATE, NULL) == 0, "SRQ QP to ERR");
	c = take_events(p.side[1].core, &p.side[1].qp->pub);
	CHECK(c.fatal == 0 && c.last_wqe == 1 && c.other == 0,
	      "moved to ERR by the application: no QP_FATAL (%d), LAST_WQE_REACHED once (%d)",
	      c.fatal, c.last_wqe);
	for (int i = 0; i < 2; i++) {
		xr_core_destroy_qp(p.side[i].qp);
		p.side[i].qp = NULL;
	}
	xr_core_destroy_srq(srq);
	h_pair_destroy(&p);
}

static void test_cq_err(void)
{
	struct xr_wc wc = {.status = XR_WC_SUCCESS}, out[4];
	struct xr_async_event ev;
	struct xr_cq_impl *cq;
	struct h_pair p;
	int err, n = 0;

	if (h_pair_init(&p, 13, 64))
		exit(2);
	cq = xr_core_create_cq(p.side[0].core, 3, &err);
	if (!cq)
		exit(2);
	for (int i = 0; i < (int)cq->size + 2; i++)
		xr_cq_push(cq, &wc, false);
	while (xr_core_take_event(p.side[0].core, &ev))
		n += ev.event_type == XR_EVENT_CQ_ERR && ev.element.cq == &cq->pub;
	CHECK(n == 1 && cq->overflows == 3, "an overrun by 3: CQ_ERR once (%d), 3 lost (%llu)", n,
	      (unsigned long long)cq->overflows);
	xr_core_poll_cq(cq, 4, out);
	for (int i = 0; i < 6; i++)
		xr_cq_push(cq, &wc, false);
	n = 0;
	while (xr_core_take_event(p.side[0].core, &ev))
		n += ev.event_type == XR_EVENT_CQ_ERR;
	CHECK(n == 1, "room made, then overrun again: one more CQ_ERR (%d)", n);
	xr_core_destroy_cq(cq);
	h_pair_destroy(&p);
}

static bool first_sent(struct h_pair *p, void *arg)
{
	(void)arg;
	return p->side[0].qp->tx_idx >= 1;
}

static int count_drained(struct xr_core *core, struct xr_qp *qp)
{
	struct xr_async_event ev;
	int n = 0;

	while (xr_core_take_event(core, &ev))
		n += ev.event_type == XR_EVENT_SQ_DRAINED && ev.element.qp == qp;
	return n;
}

/* RTS -> SQD while SENDs are under way: the begun ones finish, nothing new starts. */
static void test_sqd(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_attr a = {.qp_state = XR_QPS_SQD, .en_sqd_async_notify = 1}, got;
	struct xr_qp_impl *qp;
	struct h_buf *src, *dst;
	int started = 0, done = 0;
	struct xr_wc wc;
	struct h_pair p;

	h_setup(&p, 14, 4, &o); /* 4 frames in flight: the SENDs go out a few at a time */
	qp = p.side[0].qp;
	src = h_buf(&p, 0, 3000, XR_ACCESS_LOCAL_WRITE, 7);
	dst = h_buf(&p, 1, 8 * 3000, XR_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < 8; i++) {
		struct xr_sge s = h_sge(src, 0, 3000), d = h_sge(dst, (size_t)i * 3000, 3000);

		CHECK(h_post_recv(&p, 1, (uint64_t)i, &d, 1) == 0, "recv");
		CHECK(h_post_send(&p, 0, (uint64_t)i, &s, 1, XR_WR_SEND, 0, 0) == 0, "send");
	}
	CHECK(h_run(&p, p.now + 1000000000ull, first_sent, NULL) == H_DONE, "the first SEND out");
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++)
		started += xr_sq_at(qp, i)->psn_assigned;
	CHECK(started >= 1 && started < 8, "some SENDs begun (%d of 8)", started);
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_EN_SQD_ASYNC_NOTIFY, NULL) == 0,
	      "RTS -> SQD");
	xr_core_query_qp(qp, &got, NULL);
	CHECK(got.qp_state == XR_QPS_SQD && got.sq_draining == 1 && got.en_sqd_async_notify == 1,
	      "query: SQD, draining, notify");
	a = (struct xr_qp_attr){.qp_state = XR_QPS_SQD, .timeout = 10};
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_TIMEOUT, NULL) == -EBUSY,
	      "SQD -> SQD with new attributes while draining: EBUSY");
	h_settle(&p);
	while (h_poll(p.side[0].scq, &wc, 1) == 1)
		done += wc.status == XR_WC_SUCCESS && wc.wr_id == (uint64_t)done;
	CHECK(done == started, "the %d begun completed, in order, and no other (%d)", started,
	      done);
	CHECK(count_drained(p.side[0].core, &qp->pub) == 1, "SQ_DRAINED once");
	xr_core_query_qp(qp, &got, NULL);
	CHECK(got.sq_draining == 0, "query: drained");
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_TIMEOUT, NULL) == 0 &&
		  qp->timeout == 10,
	      "SQD -> SQD: the timeout may change once drained");
	a = (struct xr_qp_attr){.qp_state = XR_QPS_SQD, .qkey = 5};
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_QKEY, NULL) == -EINVAL,
	      "SQD -> SQD: not the Q_Key of an RC QP");
	a = (struct xr_qp_attr){.qp_state = XR_QPS_RTS};
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL) == 0, "SQD -> RTS");
	h_settle(&p);
	while (h_poll(p.side[0].scq, &wc, 1) == 1)
		done += wc.status == XR_WC_SUCCESS && wc.wr_id == (uint64_t)done;
	CHECK(done == 8, "back in RTS the rest went out: %d of 8", done);
	for (int i = 0; i < 8; i++)
		h_expect_wc(p.side[1].rcq, "receive", (uint64_t)i, XR_WC_SUCCESS, XR_WC_RECV);

	/* Into SQD with nothing begun and no notification asked for: drained, silently. */
	a = (struct xr_qp_attr){.qp_state = XR_QPS_SQD};
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL) == 0, "RTS -> SQD, no notify");
	h_settle(&p);
	CHECK(count_drained(p.side[0].core, &qp->pub) == 0, "no SQ_DRAINED without notify");
	xr_core_query_qp(qp, &got, NULL);
	CHECK(got.sq_draining == 0 && got.en_sqd_async_notify == 0, "drained at once");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("SQD: begun requests finish, none starts, SQ_DRAINED once; attrs once drained",
		test_sqd);
	h_group("CQ_ERR once per overrun", test_cq_err);
	h_group("COMM_EST once, for the first packet in RTR", test_comm_est);
	h_group("QP_FATAL on a transport error only; LAST_WQE_REACHED for an SRQ QP in ERR",
		test_fatal_and_last_wqe);
	return h_exit_status();
}
