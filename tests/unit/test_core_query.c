/* SPDX-License-Identifier: MIT */
/*
 * Queries and resizing in the core: xr_core_query_qp after every transition
 * of RC, UC and UD queue pairs returns what was set (the path as an address
 * vector of port 1, the current PSNs once traffic moved them, the init
 * attributes and the capabilities the QP really has); the alternate-path
 * attributes are refused with -EOPNOTSUPP and change nothing; a CQ resized
 * up, and down to exactly what it holds, keeps every completion in order,
 * and refuses to shrink below that; an armed CQ reports its event through
 * the port (cq_event), once per arming.
 */
#include "core_harness.h"

#define CTX_MAGIC ((void *)0x5eed)

static void check_no_alt_path(const struct xr_qp_attr *a, const char *when)
{
	static const struct xr_ah_attr zero_ah;

	CHECK(!memcmp(&a->alt_ah_attr, &zero_ah, sizeof(zero_ah)) && !a->alt_pkey_index &&
		  !a->alt_port_num && !a->alt_timeout && a->path_mig_state == XR_MIG_MIGRATED,
	      "%s: alternate path fields are zero, path_mig_state MIGRATED", when);
	CHECK(!a->sq_draining && !a->en_sqd_async_notify, "%s: no SQD", when);
	CHECK(a->port_num == 1 && a->pkey_index == 0, "%s: port 1, P_Key index 0 (got %u, %u)",
	      when, a->port_num, a->pkey_index);
}

static struct xr_qp_attr query(struct xr_qp_impl *qp, struct xr_qp_init_attr *init)
{
	struct xr_qp_attr a;

	memset(&a, 0xa5, sizeof(a)); /* every field must be written */
	CHECK(xr_core_query_qp(qp, &a, init) == 0, "query_qp");
	return a;
}

static void check_init_attrs(struct h_pair *p, int s, const struct xr_qp_init_attr *init,
			     enum xr_qp_type type, const struct xr_qp_cap *created)
{
	struct h_side *hs = &p->side[s];

	CHECK(init->qp_context == CTX_MAGIC && init->send_cq == &hs->scq->pub &&
		  init->recv_cq == &hs->rcq->pub && init->qp_type == type && init->sq_sig_all == 0,
	      "init attrs: context, CQs, type, sq_sig_all as created");
	CHECK(!memcmp(&init->cap, created, sizeof(*created)),
	      "init cap is what create returned: %u/%u wr, %u/%u sge, %u inline",
	      init->cap.max_send_wr, init->cap.max_recv_wr, init->cap.max_send_sge,
	      init->cap.max_recv_sge, init->cap.max_inline_data);
}

/* A QP of type on side s with a context and an odd-sized cap (rounded up). */
static struct xr_qp_impl *create(struct h_pair *p, int s, enum xr_qp_type type,
				 struct xr_qp_cap *created)
{
	struct h_side *hs = &p->side[s];
	struct xr_qp_init_attr init = {
	    .qp_context = CTX_MAGIC,
	    .send_cq = &hs->scq->pub,
	    .recv_cq = &hs->rcq->pub,
	    .cap = {.max_send_wr = 20,
		    .max_recv_wr = 33,
		    .max_send_sge = 3,
		    .max_recv_sge = 2,
		    .max_inline_data = 100},
	    .qp_type = type,
	};
	int err;

	hs->qp = xr_core_create_qp(hs->pd, &init, &err);
	if (!hs->qp) {
		fprintf(stderr, "test fixture: create_qp: %s\n", strerror(-err));
		exit(2);
	}
	*created = hs->qp->cap;
	CHECK(created->max_send_wr == 32 && created->max_recv_wr == 64 &&
		  created->max_send_sge == 3 && created->max_recv_sge == 2 &&
		  created->max_inline_data == 100,
	      "cap rounded up to powers of two, the rest as asked");
	return hs->qp;
}

static void check_inline_limit(struct h_pair *p, int s, uint32_t max_inline)
{
	struct h_buf *b = h_buf(p, s, max_inline + 1, XR_ACCESS_LOCAL_WRITE, 7);
	struct xr_sge sge = h_sge(b, 0, max_inline + 1);

	CHECK(h_post_send(p, s, 1, &sge, 1, XR_WR_SEND, XR_SEND_INLINE, 0) == -EINVAL,
	      "inline beyond the queried max_inline_data (%u) is refused", max_inline);
	sge.length = max_inline;
	CHECK(h_post_send(p, s, 2, &sge, 1, XR_WR_SEND, XR_SEND_INLINE | XR_SEND_SIGNALED, 0) == 0,
	      "inline of exactly the queried max_inline_data is taken");
}

/* RC or UC: the connected transitions, queried after each. */
static void connected(enum xr_qp_type type)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_init_attr init;
	struct xr_qp_cap cap[2];
	struct xr_qp_attr a, want;
	struct h_pair p;
	bool rc = type == XR_QPT_RC;
	int rtr_mask =
	    rc ? H_RTR_MASK
	       : (XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN);
	int rts_mask = rc ? H_RTS_MASK : (XR_QP_STATE | XR_QP_SQ_PSN);
	unsigned int access = rc ? H_REMOTE_ALL : XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE;

	o.rd_atomic = 5;
	o.min_rnr_timer = 12;
	o.timeout = 17;
	o.retry_cnt = 6;
	o.rnr_retry = 3;
	if (h_pair_init(&p, 7, 256)) {
		fprintf(stderr, "test fixture: h_pair_init\n");
		exit(2);
	}
	for (int s = 0; s < 2; s++)
		create(&p, s, type, &cap[s]);

	a = query(p.side[0].qp, &init);
	CHECK(a.qp_state == XR_QPS_RESET && a.cur_qp_state == XR_QPS_RESET, "RESET");
	check_init_attrs(&p, 0, &init, type, &cap[0]);
	CHECK(!memcmp(&a.cap, &cap[0], sizeof(cap[0])), "attr cap = created cap");
	check_no_alt_path(&a, "RESET");
	CHECK(xr_core_query_qp(p.side[0].qp, &a, NULL) == 0, "query without init attrs");

	for (int s = 0; s < 2; s++) {
		struct xr_qp_attr ia = {
		    .qp_state = XR_QPS_INIT, .port_num = 1, .qp_access_flags = access};

		CHECK(xr_core_modify_qp(p.side[s].qp, &ia,
					XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT |
					    XR_QP_ACCESS_FLAGS,
					NULL) == 0,
		      "to INIT");
	}
	a = query(p.side[0].qp, NULL);
	CHECK(a.qp_state == XR_QPS_INIT && a.cur_qp_state == XR_QPS_INIT &&
		  a.qp_access_flags == access,
	      "INIT: state, access flags %#x", a.qp_access_flags);
	check_no_alt_path(&a, "INIT");

	/* INIT -> RTR with an alternate path: refused, nothing applied. */
	want = h_rtr_attr(&p, 0, &o);
	want.ah_attr.grh.hop_limit = 17;
	want.ah_attr.grh.traffic_class = 0x28;
	want.ah_attr.grh.flow_label = 0x12345;
	want.ah_attr.sl = 3;
	want.ah_attr.dlid = 99; /* RoCE has no LIDs: it queries as 0 */
	want.alt_port_num = 1;
	CHECK(xr_core_modify_qp(p.side[0].qp, &want, rtr_mask | XR_QP_ALT_PATH, p.side[1].mac) ==
		  -EOPNOTSUPP,
	      "INIT->RTR with XR_QP_ALT_PATH: EOPNOTSUPP");
	a = query(p.side[0].qp, NULL);
	CHECK(a.qp_state == XR_QPS_INIT && a.dest_qp_num == 0 && !a.ah_attr.is_global &&
		  a.path_mtu == 0,
	      "refused INIT->RTR left the QP in INIT with nothing of it applied");

	if (rc) {
		/* Responder resources above the device's max_qp_rd_atom (16). */
		want.max_dest_rd_atomic = 17;
		CHECK(xr_core_modify_qp(p.side[0].qp, &want, rtr_mask, p.side[1].mac) == -EINVAL,
		      "INIT->RTR with max_dest_rd_atomic 17: EINVAL");
		CHECK(query(p.side[0].qp, NULL).qp_state == XR_QPS_INIT, "still INIT");
		want.max_dest_rd_atomic = 5;
	} else {
		want.max_dest_rd_atomic = want.min_rnr_timer = 0;
	}
	CHECK(xr_core_modify_qp(p.side[0].qp, &want, rtr_mask, p.side[1].mac) == 0, "to RTR");
	{
		struct xr_qp_attr b = h_rtr_attr(&p, 1, &o);

		CHECK(xr_core_modify_qp(p.side[1].qp, &b, rtr_mask, p.side[0].mac) == 0,
		      "peer to RTR");
	}
	a = query(p.side[0].qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTR && a.cur_qp_state == XR_QPS_RTR, "RTR");
	CHECK(a.path_mtu == XR_MTU_1024 && a.dest_qp_num == p.side[1].qp->pub.qp_num &&
		  a.rq_psn == o.sq_psn[1],
	      "RTR: path_mtu %d, dest_qp_num %u, rq_psn %#x", a.path_mtu, a.dest_qp_num, a.rq_psn);
	CHECK(a.ah_attr.is_global == 1 && a.ah_attr.port_num == 1 && a.ah_attr.dlid == 0 &&
		  a.ah_attr.sl == 3 &&
		  !memcmp(&a.ah_attr.grh.dgid, &want.ah_attr.grh.dgid, sizeof(union xr_gid)) &&
		  a.ah_attr.grh.sgid_index == 0 && a.ah_attr.grh.hop_limit == 17 &&
		  a.ah_attr.grh.traffic_class == 0x28 && a.ah_attr.grh.flow_label == 0x12345,
	      "RTR: the address vector as given, port 1, no LID");
	if (rc)
		CHECK(a.max_dest_rd_atomic == 5 && a.min_rnr_timer == 12,
		      "RTR: max_dest_rd_atomic %u, min_rnr_timer %u", a.max_dest_rd_atomic,
		      a.min_rnr_timer);
	check_no_alt_path(&a, "RTR");

	/* RTR -> RTS with an alternate path or a migration state: refused. */
	want = h_rts_attr(0, &o);
	CHECK(xr_core_modify_qp(p.side[0].qp, &want, rts_mask | XR_QP_ALT_PATH, NULL) ==
		  -EOPNOTSUPP,
	      "RTR->RTS with XR_QP_ALT_PATH: EOPNOTSUPP");
	CHECK(xr_core_modify_qp(p.side[0].qp, &want, rts_mask | XR_QP_PATH_MIG_STATE, NULL) ==
		  -EOPNOTSUPP,
	      "RTR->RTS with XR_QP_PATH_MIG_STATE: EOPNOTSUPP");
	a = query(p.side[0].qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTR && a.sq_psn == 0 && a.timeout == 0,
	      "refused RTR->RTS left the QP in RTR with nothing of it applied");

	if (rc) {
		/* An initiator depth above max_qp_init_rd_atom (128, as rxe's): refused. */
		want.max_rd_atomic = 129;
		CHECK(xr_core_modify_qp(p.side[0].qp, &want, rts_mask, NULL) == -EINVAL,
		      "RTR->RTS with max_rd_atomic 129: EINVAL");
		CHECK(query(p.side[0].qp, NULL).qp_state == XR_QPS_RTR, "still RTR");
		want.max_rd_atomic = 128;
	} else {
		want.timeout = want.retry_cnt = want.rnr_retry = want.max_rd_atomic = 0;
	}
	CHECK(xr_core_modify_qp(p.side[0].qp, &want, rts_mask, NULL) == 0, "to RTS");
	{
		struct xr_qp_attr b = h_rts_attr(1, &o);

		CHECK(xr_core_modify_qp(p.side[1].qp, &b, rts_mask, NULL) == 0, "peer to RTS");
	}
	a = query(p.side[0].qp, &init);
	CHECK(a.qp_state == XR_QPS_RTS && a.cur_qp_state == XR_QPS_RTS && a.sq_psn == o.sq_psn[0],
	      "RTS: state, sq_psn %#x", a.sq_psn);
	if (rc)
		CHECK(a.timeout == 17 && a.retry_cnt == 6 && a.rnr_retry == 3 &&
			  a.max_rd_atomic == 128,
		      "RTS: timeout %u, retry_cnt %u, rnr_retry %u, max_rd_atomic %u", a.timeout,
		      a.retry_cnt, a.rnr_retry, a.max_rd_atomic);
	check_init_attrs(&p, 0, &init, type, &cap[0]);
	check_no_alt_path(&a, "RTS");

	{
		struct xr_qp_attr m = {.qp_state = XR_QPS_RTS, .qp_access_flags = 0};

		CHECK(xr_core_modify_qp(p.side[0].qp, &m,
					XR_QP_STATE | XR_QP_ACCESS_FLAGS | XR_QP_PATH_MIG_STATE,
					NULL) == -EOPNOTSUPP,
		      "RTS->RTS with XR_QP_PATH_MIG_STATE: EOPNOTSUPP");
		CHECK(query(p.side[0].qp, NULL).qp_access_flags == access,
		      "refused RTS->RTS changed no access flag");
	}

	/* Traffic moves the PSNs: 3 one-packet SENDs (one of them inline). */
	{
		struct h_buf *src = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 1);
		struct h_buf *dst = h_buf(&p, 1, 4096, XR_ACCESS_LOCAL_WRITE, 0);

		for (int i = 0; i < 3; i++) {
			struct xr_sge rs = h_sge(dst, (size_t)i * 1024, 1024);

			CHECK(h_post_recv(&p, 1, 10 + (uint64_t)i, &rs, 1) == 0, "post recv");
		}
		for (int i = 0; i < 2; i++) {
			struct xr_sge ss = h_sge(src, 0, 64);

			CHECK(h_post_send(&p, 0, (uint64_t)i, &ss, 1, XR_WR_SEND, XR_SEND_SIGNALED,
					  0) == 0,
			      "post send");
		}
		check_inline_limit(&p, 0, cap[0].max_inline_data);
		h_settle(&p);
		a = query(p.side[0].qp, NULL);
		CHECK(a.sq_psn == ((o.sq_psn[0] + 3) & 0xffffff),
		      "after 3 packets sq_psn is the next to send: %#x", a.sq_psn);
		a = query(p.side[1].qp, NULL);
		CHECK(a.rq_psn == ((o.sq_psn[0] + 3) & 0xffffff),
		      "the peer's rq_psn is the next it expects: %#x", a.rq_psn);
	}

	{
		struct xr_qp_attr e = {.qp_state = XR_QPS_ERR};

		CHECK(xr_core_modify_qp(p.side[0].qp, &e, XR_QP_STATE, NULL) == 0, "to ERR");
		a = query(p.side[0].qp, NULL);
		CHECK(a.qp_state == XR_QPS_ERR && a.cur_qp_state == XR_QPS_ERR, "ERR");
		e.qp_state = XR_QPS_RESET;
		CHECK(xr_core_modify_qp(p.side[0].qp, &e, XR_QP_STATE, NULL) == 0, "to RESET");
		CHECK(query(p.side[0].qp, NULL).qp_state == XR_QPS_RESET, "RESET again");
	}
	h_pair_destroy(&p);
}

static void test_rc(void)
{
	connected(XR_QPT_RC);
}

static void test_uc(void)
{
	connected(XR_QPT_UC);
}

static void test_ud(void)
{
	struct xr_qp_init_attr init;
	struct xr_qp_attr a, m;
	struct xr_qp_cap cap;
	struct xr_qp_impl *qp;
	struct h_pair p;

	if (h_pair_init(&p, 9, 64)) {
		fprintf(stderr, "test fixture: h_pair_init\n");
		exit(2);
	}
	qp = create(&p, 0, XR_QPT_UD, &cap);
	m = (struct xr_qp_attr){.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = 0x11110000};
	CHECK(xr_core_modify_qp(qp, &m, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY,
				NULL) == 0,
	      "UD to INIT");
	a = query(qp, &init);
	CHECK(a.qp_state == XR_QPS_INIT && a.qkey == 0x11110000, "UD INIT: qkey %#x", a.qkey);
	check_init_attrs(&p, 0, &init, XR_QPT_UD, &cap);
	check_no_alt_path(&a, "UD INIT");

	m = (struct xr_qp_attr){.qp_state = XR_QPS_RTR, .qkey = 0x22220000};
	CHECK(xr_core_modify_qp(qp, &m, XR_QP_STATE | XR_QP_QKEY, NULL) == 0, "UD to RTR");
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTR && a.qkey == 0x22220000 && a.path_mtu == XR_MTU_1024 &&
		  a.dest_qp_num == 0 && !a.ah_attr.is_global,
	      "UD RTR: qkey %#x, path_mtu the port's (%d), no destination", a.qkey, a.path_mtu);

	m = (struct xr_qp_attr){.qp_state = XR_QPS_RTS, .sq_psn = 0x777};
	CHECK(xr_core_modify_qp(qp, &m, XR_QP_STATE | XR_QP_SQ_PSN | XR_QP_ALT_PATH, NULL) ==
		  -EINVAL,
	      "UD RTR->RTS with XR_QP_ALT_PATH: not in UD's table, EINVAL");
	CHECK(query(qp, NULL).qp_state == XR_QPS_RTR, "still RTR");
	CHECK(xr_core_modify_qp(qp, &m, XR_QP_STATE | XR_QP_SQ_PSN, NULL) == 0, "UD to RTS");
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTS && a.sq_psn == 0x777 && a.qkey == 0x22220000,
	      "UD RTS: sq_psn %#x", a.sq_psn);
	check_no_alt_path(&a, "UD RTS");
	h_pair_destroy(&p);
}

/* ---- resize ------------------------------------------------------------ */

#define N_QUEUED 7

static void push(struct xr_cq_impl *cq, uint64_t wr_id)
{
	struct xr_wc wc = {.wr_id = wr_id, .status = XR_WC_SUCCESS, .opcode = XR_WC_SEND};

	xr_cq_push(cq, &wc, false);
}

static void test_resize(void)
{
	struct xr_core core;
	struct xr_cq_impl *cq;
	struct xr_wc wc[64];
	uint64_t next = 100, expect = 100;
	int err, n;

	xr_core_init(&core, &(struct xr_core_port){0});
	cq = xr_core_create_cq(&core, 7, &err); /* 8 slots */
	CHECK(cq && cq->pub.cqe == 7, "a CQ of 7");
	if (!cq)
		return;
	/* Wrap the ring: N_QUEUED completions whose slots straddle its end. */
	for (int i = 0; i < 5; i++)
		push(cq, next++);
	CHECK(xr_core_poll_cq(cq, 3, wc) == 3 && wc[0].wr_id == 100 && wc[2].wr_id == 102,
	      "poll three");
	expect = 103;
	while (cq->head - cq->tail < N_QUEUED)
		push(cq, next++);
	CHECK(xr_cq_full(cq), "the CQ of 7 is full with %d queued", N_QUEUED);

	CHECK(xr_core_resize_cq(cq, N_QUEUED - 1) == -EINVAL, "below what is queued: EINVAL");
	CHECK(xr_core_resize_cq(cq, 0) == -EINVAL, "0: EINVAL");
	CHECK(xr_core_resize_cq(cq, -5) == -EINVAL, "negative: EINVAL");
	CHECK(xr_core_resize_cq(cq, XR_MAX_CQE + 1) == -EINVAL, "above max_cqe: EINVAL");
	CHECK(cq->head - cq->tail == N_QUEUED && cq->pub.cqe == 7, "refusals changed nothing");

	CHECK(xr_core_resize_cq(cq, 40) == 0 && cq->pub.cqe >= 40, "up to 40: cqe %d", cq->pub.cqe);
	CHECK(!xr_cq_full(cq), "room again after growing");
	push(cq, next++);
	CHECK(xr_core_resize_cq(cq, N_QUEUED + 1) == 0 && cq->pub.cqe >= N_QUEUED + 1,
	      "down to exactly what is queued (%d): cqe %d", N_QUEUED + 1, cq->pub.cqe);
	CHECK(xr_core_resize_cq(cq, N_QUEUED) == -EINVAL, "then one below: EINVAL");
	CHECK(xr_core_resize_cq(cq, XR_MAX_CQE) == 0 && cq->pub.cqe >= XR_MAX_CQE, "up to max_cqe");
	CHECK(xr_core_resize_cq(cq, N_QUEUED + 1) == 0, "and down again");

	n = xr_core_poll_cq(cq, 64, wc);
	CHECK(n == N_QUEUED + 1, "every completion is still there: %d", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == expect + (uint64_t)i, "in order: #%d is wr %" PRIu64, i,
		      wc[i].wr_id);
	CHECK(xr_core_poll_cq(cq, 1, wc) == 0, "and nothing more");
	xr_core_destroy_cq(cq);
}

/* Real traffic, resized while its completions wait, including mid-stream. */
static void test_resize_with_traffic(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_wc wc[32];
	struct h_pair p;
	int n = 0;

	h_setup(&p, 3, 256, &o);
	src = h_buf(&p, 0, 256, XR_ACCESS_LOCAL_WRITE, 1);
	dst = h_buf(&p, 1, 16 * 256, XR_ACCESS_LOCAL_WRITE, 0);
	CHECK(xr_core_resize_cq(p.side[0].scq, 12) == 0, "sender's CQ to 12");
	for (int i = 0; i < 12; i++) {
		struct xr_sge rs = h_sge(dst, (size_t)i * 256, 256);
		struct xr_sge ss = h_sge(src, 0, 256);

		CHECK(h_post_recv(&p, 1, 1000 + (uint64_t)i, &rs, 1) == 0, "post recv");
		CHECK(h_post_send(&p, 0, (uint64_t)i, &ss, 1, XR_WR_SEND, 0, 0) == 0, "post send");
	}
	h_settle(&p);
	CHECK(p.side[0].scq->head - p.side[0].scq->tail == 12, "12 send completions queued");
	CHECK(xr_core_resize_cq(p.side[0].scq, 11) == -EINVAL, "below 12: EINVAL");
	CHECK(xr_core_resize_cq(p.side[0].scq, 1000) == 0, "up to 1000");
	CHECK(xr_core_resize_cq(p.side[0].scq, 12) == 0, "down to exactly 12");
	n = xr_core_poll_cq(p.side[0].scq, 32, wc);
	CHECK(n == 12, "12 completions after resizing: %d", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == (uint64_t)i && wc[i].status == XR_WC_SUCCESS,
		      "send #%d: wr %" PRIu64 " %s", i, wc[i].wr_id,
		      xr_wc_status_str(wc[i].status));
	h_pair_destroy(&p);
}

/* ---- events leave through the port -------------------------------------- */

static void test_cq_event_through_port(void)
{
	struct h_qp_opts o = h_default_opts();
	const struct xr_mem_counters *c;
	struct xr_comp_channel fake = {0};
	struct h_pair p;

	h_setup(&p, 5, 64, &o);
	c = xr_mem_link_counters(&p.link, 0);
	p.side[0].scq->channel = &fake; /* the I/O layer's business; the core only passes it on */
	push(p.side[0].scq, 1);
	CHECK(c->cq_events == 0, "not armed: no event");
	p.side[0].scq->armed = XR_CQ_ARM_ALL;
	push(p.side[0].scq, 2);
	push(p.side[0].scq, 3);
	CHECK(c->cq_events == 1, "armed: one event for two completions (%" PRIu64 ")",
	      c->cq_events);
	p.side[0].scq->armed = XR_CQ_ARM_SOLICITED;
	push(p.side[0].scq, 4);
	CHECK(c->cq_events == 1, "solicited-only: no event for an unsolicited success");
	xr_cq_push(p.side[0].scq, &(struct xr_wc){.wr_id = 5, .status = XR_WC_SUCCESS}, true);
	CHECK(c->cq_events == 2, "solicited-only: an event for a solicited one");
	p.side[0].scq->channel = NULL;
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("query_qp: RC after each transition, ALT_PATH and PATH_MIG_STATE refused", test_rc);
	h_group("query_qp: UC after each transition, ALT_PATH and PATH_MIG_STATE refused", test_uc);
	h_group("query_qp: UD after each transition (qkey, path MTU, sq_psn)", test_ud);
	h_group("resize_cq: up, down to exactly what is queued, never below, order kept",
		test_resize);
	h_group("resize_cq: with the completions of real traffic waiting",
		test_resize_with_traffic);
	h_group("completion events leave the core through its port", test_cq_event_through_port);
	return h_exit_status();
}
