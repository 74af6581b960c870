/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues in the transport core, on the in-memory link: the
 * attributes and their errors (sizes, limit, resize keeping what is posted,
 * EBUSY while used, post_recv refused on a QP with an SRQ); RC SENDs of
 * several packets through an SRQ with fewer buffers than messages in
 * flight: each delivered once, in order, RNR NAKs while it was empty, the
 * limit event once per arming; UD through an SRQ; a QP in ERR flushes the
 * WQE it holds and leaves the rest to the others.
 */
#include "core_harness.h"
#include "ud_harness.h"

#define QKEY 0x22222222u

static struct xr_srq_impl *make_srq(struct h_pair *p, int s, uint32_t max_wr, uint32_t limit,
				    int *err)
{
	struct xr_srq_init_attr init = {
	    .attr = {.max_wr = max_wr, .max_sge = 2, .srq_limit = limit}};

	return xr_core_create_srq(p->side[s].pd, &init, err);
}

static int post_srq(struct xr_srq_impl *srq, const struct h_buf *b, uint32_t off, uint32_t len,
		    uint64_t wr_id)
{
	struct xr_sge sge = h_sge(b, off, len);
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad = NULL;

	return xr_core_post_srq_recv(srq, &wr, &bad);
}

static int count_events(struct xr_core *core, enum xr_event_type type, void *element)
{
	struct xr_async_event ev;
	int n = 0;

	while (xr_core_take_event(core, &ev))
		if (ev.event_type == type && ev.element.srq == element)
			n++;
	return n;
}

static void test_attributes(void)
{
	struct xr_srq_init_attr init = {.attr = {.max_wr = 5, .max_sge = 1}};
	struct xr_recv_wr wrs[17], *bad = NULL;
	struct xr_srq_attr a = {0};
	struct xr_srq_impl *srq;
	struct xr_qp_impl *qp;
	struct xr_sge sge;
	struct h_buf *b;
	struct h_pair p;
	int err;

	if (h_pair_init(&p, 3, 64))
		exit(2);
	b = h_buf(&p, 1, 4096, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(b, 0, 64);
	CHECK(!make_srq(&p, 1, 0, 0, &err) && err == -EINVAL, "max_wr 0: EINVAL");
	CHECK(!make_srq(&p, 1, XR_MAX_WR + 1, 0, &err) && err == -EINVAL, "max_wr too big: EINVAL");
	CHECK(!make_srq(&p, 1, 4, 5, &err) && err == -EINVAL, "limit above max_wr: EINVAL");
	srq = xr_core_create_srq(p.side[1].pd, &init, &err);
	CHECK(srq && init.attr.max_wr == 8, "max_wr 5 gets 8 (reported back): %u",
	      init.attr.max_wr);
	if (!srq)
		exit(2);
	xr_core_query_srq(srq, &a);
	CHECK(a.max_wr == 8 && a.max_sge == 1 && a.srq_limit == 0, "query: %u %u %u", a.max_wr,
	      a.max_sge, a.srq_limit);
	a.srq_limit = 9;
	CHECK(xr_core_modify_srq(srq, &a, XR_SRQ_LIMIT) == -EINVAL, "limit 9 of 8: EINVAL");
	a.srq_limit = 3;
	CHECK(xr_core_modify_srq(srq, &a, XR_SRQ_LIMIT) == 0, "limit 3");
	CHECK(xr_core_modify_srq(srq, &a, 1 << 5) == -EINVAL, "an unknown mask bit: EINVAL");
	for (int i = 0; i < 6; i++)
		CHECK(post_srq(srq, b, (uint32_t)i * 64, 64, (uint64_t)i) == 0, "post %d", i);
	a.max_wr = 4;
	CHECK(xr_core_modify_srq(srq, &a, XR_SRQ_MAX_WR) == -EINVAL,
	      "resize below the 6 posted: EINVAL");
	a.max_wr = 16;
	CHECK(xr_core_modify_srq(srq, &a, XR_SRQ_MAX_WR) == 0, "resize to 16");
	xr_core_query_srq(srq, &a);
	CHECK(a.max_wr == 16 && a.srq_limit == 3, "query after resize: %u, limit %u", a.max_wr,
	      a.srq_limit);
	for (int i = 0; i < 17; i++)
		wrs[i] = (struct xr_recv_wr){
		    .wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1, .next = &wrs[i + 1]};
	wrs[16].next = NULL;
	CHECK(xr_core_post_srq_recv(srq, wrs, &bad) == -ENOMEM && bad == &wrs[10],
	      "16 slots, 6 used: the 11th of 17 is refused (bad_wr)");
	wrs[0].num_sge = 3;
	wrs[0].next = NULL;
	CHECK(xr_core_post_srq_recv(srq, wrs, &bad) == -ENOMEM, "full");

	{
		struct xr_qp_init_attr qinit = {.send_cq = &p.side[1].scq->pub,
						.recv_cq = &p.side[1].rcq->pub,
						.srq = &srq->pub,
						.cap = {.max_send_wr = 4, .max_send_sge = 1},
						.qp_type = XR_QPT_RC};
		struct xr_qp_attr qa = {.qp_state = XR_QPS_INIT, .port_num = 1};
		struct xr_recv_wr one = {.sg_list = &sge, .num_sge = 1};
		struct xr_qp_init_attr back;
		struct xr_qp_attr got;

		qp = xr_core_create_qp(p.side[1].pd, &qinit, &err);
		CHECK(qp, "an RC QP with the SRQ (max_recv_wr 0 is fine): %d", err);
		if (!qp)
			exit(2);
		xr_core_modify_qp(qp, &qa, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT, NULL);
		CHECK(xr_core_post_recv(qp, &one, &bad) == -EINVAL, "post_recv on it: EINVAL");
		xr_core_query_qp(qp, &got, &back);
		CHECK(back.srq == &srq->pub && got.cap.max_recv_wr == 0,
		      "query_qp names the SRQ, max_recv_wr 0");
		CHECK(xr_core_destroy_srq(srq) == -EBUSY, "destroy while a QP uses it: EBUSY");
		xr_core_destroy_qp(qp);
	}
	CHECK(xr_core_destroy_srq(srq) == 0, "destroy once unused");
	h_pair_destroy(&p);
}

#define MSGS 24
#define MSG_LEN 2500 /* three packets at MTU 1024 */
#define SLOTS 4

struct srq_run {
	struct xr_srq_impl *srq;
	struct h_buf *dst;
	int received, bad, armings, events;
};

/* Each receive is checked and its buffer posted again; the limit re-armed after each event. */
static bool drain_and_repost(struct h_pair *p, void *arg)
{
	struct srq_run *r = arg;
	struct xr_wc wc;

	while (h_poll(p->side[1].rcq, &wc, 1) == 1) {
		uint32_t off = (uint32_t)wc.wr_id * MSG_LEN;

		if (wc.status != XR_WC_SUCCESS || wc.byte_len != MSG_LEN ||
		    h_first_mismatch(r->dst->base + off, MSG_LEN, (uint64_t)r->received) >= 0)
			r->bad++;
		r->received++;
		if (post_srq(r->srq, r->dst, off, MSG_LEN, wc.wr_id))
			r->bad++;
	}
	r->events += count_events(p->side[1].core, XR_EVENT_SRQ_LIMIT_REACHED, &r->srq->pub);
	if (r->events == r->armings && r->armings < 3) {
		struct xr_srq_attr a = {.srq_limit = 2};

		if (xr_core_modify_srq(r->srq, &a, XR_SRQ_LIMIT) == 0)
			r->armings++;
	}
	return r->received == MSGS;
}

static void test_rc_through_srq(void)
{
	struct h_qp_opts o = h_default_opts();
	struct srq_run r = {0};
	struct xr_srq_attr a;
	struct h_buf *src;
	struct h_pair p;
	enum h_run_result res;
	int err;

	if (h_pair_init(&p, 5, 256))
		exit(2);
	r.srq = make_srq(&p, 1, SLOTS, 0, &err);
	if (!r.srq)
		exit(2);
	o.srq[1] = &r.srq->pub;
	if (h_connect(&p, &o))
		exit(2);
	src = h_buf(&p, 0, (size_t)MSGS * MSG_LEN, XR_ACCESS_LOCAL_WRITE, 0);
	r.dst = h_buf(&p, 1, (size_t)SLOTS * MSG_LEN, XR_ACCESS_LOCAL_WRITE, 0);
	for (uint64_t s = 0; s < SLOTS; s++)
		CHECK(post_srq(r.srq, r.dst, (uint32_t)s * MSG_LEN, MSG_LEN, s) == 0, "post %d",
		      (int)s);
	for (int k = 0; k < MSGS; k++) {
		struct xr_sge sge = h_sge(src, (size_t)k * MSG_LEN, MSG_LEN);

		h_fill(src->base + (size_t)k * MSG_LEN, MSG_LEN, (uint64_t)k);
		CHECK(h_post_send(&p, 0, (uint64_t)k, &sge, 1, XR_WR_SEND, 0, 0) == 0, "send %d",
		      k);
	}
	res = h_run(&p, p.now + 60ull * 1000000000ull, drain_and_repost, &r);
	CHECK(res == H_DONE, "all %d messages received: %s after %d", MSGS, h_run_result_str(res),
	      r.received);
	h_settle(&p);
	drain_and_repost(&p, &r);
	CHECK(r.received == MSGS && r.bad == 0,
	      "%d received, %d of them wrong or out of order (each once, in order)", r.received,
	      r.bad);
	for (int k = 0; k < MSGS; k++)
		h_expect_wc(p.side[0].scq, "send", (uint64_t)k, XR_WC_SUCCESS, XR_WC_SEND);
	CHECK(p.side[1].qp->cnt.rnr_naks_tx > 0 && p.side[0].qp->cnt.rnr_naks_rx > 0,
	      "RNR NAKs while the SRQ was empty: %llu sent",
	      (unsigned long long)p.side[1].qp->cnt.rnr_naks_tx);
	CHECK(r.armings == 3 && r.events == 3, "the limit fired once per arming: %d of %d",
	      r.events, r.armings);
	xr_core_query_srq(r.srq, &a);
	CHECK(a.srq_limit == 0, "disarmed after the last event: %u", a.srq_limit);
	for (int s = 0; s < 2; s++) {
		xr_core_destroy_qp(p.side[s].qp);
		p.side[s].qp = NULL;
	}
	CHECK(xr_core_destroy_srq(r.srq) == 0, "destroy the SRQ once its QP is gone");
	h_pair_destroy(&p);
}

static void test_ud_and_flush(void)
{
	struct xr_ah_attr attr = {.is_global = 1, .port_num = 1};
	struct xr_qp_impl *sender, *a, *b;
	struct xr_srq_impl *srq;
	struct h_buf *src, *dst;
	struct xr_qp_attr qa = {.qp_state = XR_QPS_ERR};
	struct xr_sge sge;
	struct xr_ah *ah;
	struct xr_wc wc;
	struct h_pair p;
	int err;

	if (h_pair_init(&p, 9, 64))
		exit(2);
	srq = make_srq(&p, 1, 8, 0, &err);
	if (!srq)
		exit(2);
	sender = ud_qp(&p, 0, QKEY, p.side[0].rcq, true);
	a = ud_qp_srq(&p, 1, QKEY, p.side[1].rcq, true, &srq->pub);
	b = ud_qp_srq(&p, 1, QKEY, p.side[1].scq, true, &srq->pub);
	src = h_buf(&p, 0, 100, XR_ACCESS_LOCAL_WRITE, 0x5a);
	dst = h_buf(&p, 1, 3 * (XR_GRH_SIZE + 100), XR_ACCESS_LOCAL_WRITE, 0);
	for (uint64_t i = 0; i < 3; i++)
		post_srq(srq, dst, (uint32_t)i * (XR_GRH_SIZE + 100), XR_GRH_SIZE + 100, i);
	attr.grh.dgid = p.side[1].core->gids[0];
	ah = xr_core_create_ah(p.side[0].pd, &attr, p.side[1].mac, &err);
	sge = h_sge(src, 0, 100);
	CHECK(ud_send(sender, ah, b->pub.qp_num, QKEY, &sge, 1, false, 1) == 0, "UD send");
	h_settle(&p);
	CHECK(h_poll(p.side[1].scq, &wc, 1) == 1 && wc.status == XR_WC_SUCCESS && wc.wr_id == 0 &&
		  wc.byte_len == XR_GRH_SIZE + 100 && wc.qp_num == b->pub.qp_num &&
		  h_first_not(dst->base + XR_GRH_SIZE, 100, 0x5a) < 0,
	      "a datagram to the second QP lands in the SRQ's first buffer");
	/* QP a holds a WQE (as in the middle of a message); ERR flushes it, and only it. */
	xr_recv_wqe(a);
	CHECK(xr_core_modify_qp(a, &qa, XR_QP_STATE, NULL) == 0, "to ERR");
	CHECK(h_poll(p.side[1].rcq, &wc, 1) == 1 && wc.status == XR_WC_WR_FLUSH_ERR &&
		  wc.wr_id == 1 && h_poll(p.side[1].rcq, &wc, 1) == 0,
	      "exactly the held WQE flushed");
	CHECK(ud_send(sender, ah, b->pub.qp_num, QKEY, &sge, 1, false, 2) == 0, "UD send");
	h_settle(&p);
	CHECK(h_poll(p.side[1].scq, &wc, 1) == 1 && wc.status == XR_WC_SUCCESS && wc.wr_id == 2,
	      "the other QP still gets the SRQ's next buffer (wr_id %llu)",
	      (unsigned long long)wc.wr_id);
	xr_core_destroy_ah(ah);
	xr_core_destroy_qp(sender);
	xr_core_destroy_qp(a);
	xr_core_destroy_qp(b);
	CHECK(xr_core_destroy_srq(srq) == 0, "destroy the SRQ");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("SRQ attributes: sizes, limit, resize keeps what is posted, EBUSY, EINVAL",
		test_attributes);
	h_group("RC through an SRQ of 4: 24 messages once and in order, RNR, limit per arming",
		test_rc_through_srq);
	h_group("UD through an SRQ; ERR flushes the WQE a QP holds, the rest stay shared",
		test_ud_and_flush);
	return h_exit_status();
}
