/* SPDX-License-Identifier: MIT */
/*
 * RDMA WRITE, WRITE with immediate, READ and atomics through two transport
 * cores on the in-memory link: bytes land exactly where they should, the
 * bytes around them stay untouched, atomics return the original value and
 * change the target once, and access violations earn the verbs statuses.
 */
#include "core_harness.h"

#define GUARD 64
#define GUARD_FILL 0xa5
#define REQ 0
#define RSP 1

static const int remote_all = H_REMOTE_ALL;

static int post_rdma(struct h_pair *p, uint64_t wr_id, struct xr_sge *sge, int nsge,
		     enum xr_wr_opcode op, uint64_t raddr, uint32_t rkey, uint32_t imm_be)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = nsge,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED,
				.imm_data = imm_be};
	struct xr_send_wr *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

static int post_atomic(struct h_pair *p, uint64_t wr_id, struct xr_sge *sge, enum xr_wr_opcode op,
		       uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

static void write_and_check(struct h_pair *p, uint64_t id, uint32_t len, bool imm)
{
	struct h_buf *src = h_buf(p, REQ, len, XR_ACCESS_LOCAL_WRITE, 0);
	struct h_buf *dst = h_buf(p, RSP, len + 2 * GUARD, remote_all, GUARD_FILL);
	struct xr_sge sge = h_sge(src, 0, len);
	long bad;

	h_fill(src->base, len, id);
	if (imm) {
		struct xr_sge none = {0};

		CHECK(h_post_recv(p, RSP, id, &none, 0) == 0, "post_recv");
	}
	CHECK(post_rdma(p, id, &sge, 1, imm ? XR_WR_RDMA_WRITE_WITH_IMM : XR_WR_RDMA_WRITE,
			(uintptr_t)dst->base + GUARD, dst->mr->rkey, 0x01020304) == 0,
	      "post WRITE %u", len);
	h_settle(p);
	h_expect_wc(p->side[REQ].scq, "writer", id, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	bad = h_first_mismatch(dst->base + GUARD, len, id);
	CHECK(bad < 0, "WRITE %u: byte %ld differs", len, bad);
	CHECK(h_first_not(dst->base, GUARD, GUARD_FILL) < 0 &&
		  h_first_not(dst->base + GUARD + len, GUARD, GUARD_FILL) < 0,
	      "WRITE %u: bytes around the target changed", len);
	if (imm) {
		struct xr_wc wc = h_poll_one(p->side[RSP].rcq, "target of WRITE with immediate");

		CHECK(wc.status == XR_WC_SUCCESS && wc.opcode == XR_WC_RECV_RDMA_WITH_IMM &&
			  wc.byte_len == len && (wc.wc_flags & XR_WC_WITH_IMM) &&
			  wc.imm_data == 0x01020304,
		      "WRITE_IMM %u: status %d opcode %d byte_len %u imm %08x", len, wc.status,
		      wc.opcode, wc.byte_len, wc.imm_data);
	}
	h_expect_no_wc(p->side[RSP].rcq, "target after WRITE");
}

static void test_write(void)
{
	static const uint32_t sizes[] = {0, 1, 1024, 1025, 1 << 20};
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;

	h_setup(&p, 11, 1024, &o);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		write_and_check(&p, 10 + i, sizes[i], false);
		write_and_check(&p, 20 + i, sizes[i], true);
	}
	h_pair_destroy(&p);
}

static void test_read(void)
{
	static const uint32_t sizes[] = {0, 1, 1024, 1025, 1 << 20};
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;

	h_setup(&p, 12, 1024, &o);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i];
		struct h_buf *src = h_buf(&p, RSP, len, remote_all, 0);
		struct h_buf *dst =
		    h_buf(&p, REQ, len + 2 * GUARD, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
		struct xr_sge sge = h_sge(dst, GUARD, len);

		h_fill(src->base, len, 30 + i);
		CHECK(post_rdma(&p, 30 + i, &sge, 1, XR_WR_RDMA_READ, (uintptr_t)src->base,
				src->mr->rkey, 0) == 0,
		      "post READ");
		h_settle(&p);
		h_expect_wc(p.side[REQ].scq, "reader", 30 + i, XR_WC_SUCCESS, XR_WC_RDMA_READ);
		CHECK(h_first_mismatch(dst->base + GUARD, len, 30 + i) < 0, "READ %u content", len);
		CHECK(h_first_not(dst->base, GUARD, GUARD_FILL) < 0 &&
			  h_first_not(dst->base + GUARD + len, GUARD, GUARD_FILL) < 0,
		      "READ %u: bytes around the landing area changed", len);
	}
	/* Several READs posted at once, more than max_rd_atomic (1): all complete in order. */
	{
		struct h_buf *src = h_buf(&p, RSP, 8 * 3000, remote_all, 0);
		struct h_buf *dst = h_buf(&p, REQ, 8 * 3000, XR_ACCESS_LOCAL_WRITE, 0);

		h_fill(src->base, 8 * 3000, 99);
		for (int k = 0; k < 8; k++) {
			struct xr_sge sge = h_sge(dst, (size_t)k * 3000, 3000);

			CHECK(post_rdma(&p, 100 + k, &sge, 1, XR_WR_RDMA_READ,
					(uintptr_t)src->base + (size_t)k * 3000, src->mr->rkey,
					0) == 0,
			      "post READ %d", k);
		}
		h_settle(&p);
		for (int k = 0; k < 8; k++)
			h_expect_wc(p.side[REQ].scq, "batched READ", 100 + k, XR_WC_SUCCESS,
				    XR_WC_RDMA_READ);
		CHECK(h_first_mismatch(dst->base, 8 * 3000, 99) < 0, "batched READ content");
	}
	h_pair_destroy(&p);
}

static void test_atomics(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;
	struct h_buf *target, *res;
	uint64_t *t, got;
	struct xr_sge sge;

	h_setup(&p, 13, 1024, &o);
	h_allow_atomics(&p);
	target = h_buf(&p, RSP, 64, remote_all, 0);
	res = h_buf(&p, REQ, 8, XR_ACCESS_LOCAL_WRITE, 0);
	t = (uint64_t *)(target->base + 8);
	*t = 100;
	sge = h_sge(res, 0, 8);

	CHECK(post_atomic(&p, 1, &sge, XR_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)t, target->mr->rkey,
			  5, 0) == 0,
	      "post FAA");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "FAA", 1, XR_WC_SUCCESS, XR_WC_FETCH_ADD);
	memcpy(&got, res->base, 8);
	CHECK(got == 100 && *t == 105, "FAA: returned %" PRIu64 ", target %" PRIu64, got, *t);

	CHECK(post_atomic(&p, 2, &sge, XR_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)t, target->mr->rkey,
			  105, 7) == 0,
	      "post CAS");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "CAS hit", 2, XR_WC_SUCCESS, XR_WC_COMP_SWAP);
	memcpy(&got, res->base, 8);
	CHECK(got == 105 && *t == 7, "CAS hit: returned %" PRIu64 ", target %" PRIu64, got, *t);

	CHECK(post_atomic(&p, 3, &sge, XR_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)t, target->mr->rkey, 1,
			  9) == 0,
	      "post CAS");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "CAS miss", 3, XR_WC_SUCCESS, XR_WC_COMP_SWAP);
	memcpy(&got, res->base, 8);
	CHECK(got == 7 && *t == 7, "CAS miss: returned %" PRIu64 ", target %" PRIu64, got, *t);
	CHECK(((uint64_t *)target->base)[0] == 0 && ((uint64_t *)target->base)[2] == 0,
	      "neighbours of the atomic target changed");
	h_pair_destroy(&p);
}

/*
 * Exactly one NAK went each way's counters, of the kind that earns status
 * want (remote access or invalid request), in the QPs' and the engines'.
 */
static void check_one_nak(struct h_pair *p, const char *what, enum xr_wc_status want)
{
	const struct xr_qp_counters *req = &p->side[REQ].qp->cnt, *rsp = &p->side[RSP].qp->cnt;
	const struct xr_engine_stats *req_eng = &p->side[REQ].core->stats,
				     *rsp_eng = &p->side[RSP].core->stats;
	bool access = want == XR_WC_REM_ACCESS_ERR;

	CHECK(rsp->rem_access_naks_tx == access && req->rem_access_naks_rx == access &&
		  rsp->inv_req_naks_tx == !access && req->inv_req_naks_rx == !access,
	      "%s: NAKs by kind: remote access %" PRIu64 " sent, %" PRIu64
	      " received; invalid request %" PRIu64 " sent, %" PRIu64 " received",
	      what, (uint64_t)rsp->rem_access_naks_tx, (uint64_t)req->rem_access_naks_rx,
	      (uint64_t)rsp->inv_req_naks_tx, (uint64_t)req->inv_req_naks_rx);
	CHECK(!rsp->rem_op_naks_tx && !req->rem_op_naks_rx && !rsp->seq_naks_tx &&
		  !req->seq_naks_rx,
	      "%s: other NAKs counted", what);
	CHECK(rsp_eng->rem_access_naks_tx == rsp->rem_access_naks_tx &&
		  req_eng->rem_access_naks_rx == req->rem_access_naks_rx &&
		  rsp_eng->inv_req_naks_tx == rsp->inv_req_naks_tx &&
		  req_eng->inv_req_naks_rx == req->inv_req_naks_rx,
	      "%s: the engines' NAK counters differ from the QPs'", what);
}

/* One faulty request on a fresh pair: the status it earns, then flushes. */
static void expect_remote_error(const char *what, int mr_access, uint64_t offset, uint32_t len,
				enum xr_wr_opcode op, bool wrong_rkey, enum xr_wc_status want)
{
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;
	struct h_buf *local, *remote;
	struct xr_sge sge;
	uint32_t rkey;
	int err;

	h_setup(&p, 14, 1024, &o);
	h_allow_atomics(&p);
	local = h_buf(&p, REQ, 4096, XR_ACCESS_LOCAL_WRITE, 0);
	remote = h_buf(&p, RSP, 4096, mr_access, GUARD_FILL);
	rkey = wrong_rkey ? remote->mr->rkey ^ 0x100 : remote->mr->rkey;
	sge = h_sge(local, 0, len);
	if (op == XR_WR_ATOMIC_FETCH_AND_ADD)
		err = post_atomic(&p, 1, &sge, op, (uintptr_t)remote->base + offset, rkey, 1, 0);
	else
		err = post_rdma(&p, 1, &sge, 1, op, (uintptr_t)remote->base + offset, rkey, 0);
	CHECK(err == 0, "%s: post", what);
	sge = h_sge(local, 0, 16);
	CHECK(post_rdma(&p, 2, &sge, 1, XR_WR_RDMA_WRITE, (uintptr_t)remote->base, remote->mr->rkey,
			0) == 0,
	      "%s: post second", what);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, what, 1, want, XR_WC_RDMA_WRITE);
	h_expect_wc(p.side[REQ].scq, what, 2, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE);
	CHECK(p.side[REQ].qp->pub.state == XR_QPS_ERR && p.side[RSP].qp->pub.state == XR_QPS_ERR,
	      "%s: both QPs in ERR (states %d, %d)", what, p.side[REQ].qp->pub.state,
	      p.side[RSP].qp->pub.state);
	CHECK(h_first_not(remote->base, 4096, GUARD_FILL) < 0, "%s: remote memory changed", what);
	check_one_nak(&p, what, want);
	h_pair_destroy(&p);
}

static void test_access_errors(void)
{
	const int no_write = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ;
	const int no_read = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE;

	expect_remote_error("WRITE, invalid rkey", remote_all, 0, 64, XR_WR_RDMA_WRITE, true,
			    XR_WC_REM_ACCESS_ERR);
	expect_remote_error("WRITE, MR without remote write", no_write, 0, 64, XR_WR_RDMA_WRITE,
			    false, XR_WC_REM_ACCESS_ERR);
	expect_remote_error("WRITE past the MR end", remote_all, 4000, 200, XR_WR_RDMA_WRITE, false,
			    XR_WC_REM_ACCESS_ERR);
	expect_remote_error("READ, MR without remote read", no_read, 0, 64, XR_WR_RDMA_READ, false,
			    XR_WC_REM_ACCESS_ERR);
	expect_remote_error("READ past the MR end", remote_all, 100, 4096, XR_WR_RDMA_READ, false,
			    XR_WC_REM_ACCESS_ERR);
	expect_remote_error("atomic, MR without remote atomic", no_read | XR_ACCESS_REMOTE_READ, 0,
			    8, XR_WR_ATOMIC_FETCH_AND_ADD, false, XR_WC_REM_ACCESS_ERR);
	expect_remote_error("atomic, misaligned", remote_all, 4, 8, XR_WR_ATOMIC_FETCH_AND_ADD,
			    false, XR_WC_REM_INV_REQ_ERR);
}

/* WRITE, READ and atomics over a lossy link: results exact, atomics applied once. */
static void test_lossy_mix(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_mem_impair imp = {.loss = 0.10,
				    .duplicate = 0.02,
				    .reorder = 0.05,
				    .reorder_window = 8,
				    .corrupt = 0.005};
	enum { N = 300, SZ = 2500 };
	struct h_pair p;
	struct h_buf *wsrc, *wdst, *rsrc, *rdst, *ctr, *res;
	int done = 0;

	h_setup(&p, 15, 1024, &o);
	h_allow_atomics(&p);
	xr_mem_link_set_impair(&p.link, 0, &imp);
	xr_mem_link_set_impair(&p.link, 1, &imp);
	wsrc = h_buf(&p, REQ, (size_t)N * SZ, XR_ACCESS_LOCAL_WRITE, 0);
	wdst = h_buf(&p, RSP, (size_t)N * SZ, remote_all, 0);
	rsrc = h_buf(&p, RSP, (size_t)N * SZ, remote_all, 0);
	rdst = h_buf(&p, REQ, (size_t)N * SZ, XR_ACCESS_LOCAL_WRITE, 0);
	ctr = h_buf(&p, RSP, 8, remote_all, 0);
	res = h_buf(&p, REQ, (size_t)N * 8, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(wsrc->base, (size_t)N * SZ, 1);
	h_fill(rsrc->base, (size_t)N * SZ, 2);
	for (int i = 0; i < N; i++) {
		struct xr_sge sge;
		size_t off = (size_t)i * SZ;
		int err;

		while (p.side[REQ].qp->sq_head - p.side[REQ].qp->sq_tail >= 48)
			h_run(&p, p.now + 1000000000ull, NULL, NULL);
		switch (i % 3) {
		case 0:
			sge = h_sge(wsrc, off, SZ);
			err = post_rdma(&p, (uint64_t)i, &sge, 1, XR_WR_RDMA_WRITE,
					(uintptr_t)wdst->base + off, wdst->mr->rkey, 0);
			break;
		case 1:
			sge = h_sge(rdst, off, SZ);
			err = post_rdma(&p, (uint64_t)i, &sge, 1, XR_WR_RDMA_READ,
					(uintptr_t)rsrc->base + off, rsrc->mr->rkey, 0);
			break;
		default:
			sge = h_sge(res, (size_t)i * 8, 8);
			err = post_atomic(&p, (uint64_t)i, &sge, XR_WR_ATOMIC_FETCH_AND_ADD,
					  (uintptr_t)ctr->base, ctr->mr->rkey, 1, 0);
		}
		CHECK(err == 0, "post %d", i);
	}
	h_settle(&p);
	for (;;) {
		struct xr_wc wc;

		if (h_poll(p.side[REQ].scq, &wc, 1) != 1)
			break;
		CHECK(wc.status == XR_WC_SUCCESS && wc.wr_id == (uint64_t)done,
		      "completion %d: wr %" PRIu64 " %s", done, wc.wr_id,
		      xr_wc_status_str(wc.status));
		done++;
	}
	CHECK(done == N, "%d of %d completed", done, N);
	for (int i = 0; i < N; i++) {
		size_t off = (size_t)i * SZ;

		if (i % 3 == 0)
			CHECK(memcmp(wdst->base + off, wsrc->base + off, SZ) == 0, "WRITE %d", i);
		else if (i % 3 == 1)
			CHECK(memcmp(rdst->base + off, rsrc->base + off, SZ) == 0, "READ %d", i);
	}
	{
		uint64_t v, seen = 0;

		memcpy(&v, ctr->base, 8);
		CHECK(v == N / 3, "counter %" PRIu64 " after %d fetch-and-adds", v, N / 3);
		/* Each FAA saw a distinct original value: none was executed twice. */
		for (int i = 2; i < N; i += 3) {
			uint64_t got;

			memcpy(&got, res->base + (size_t)i * 8, 8);
			CHECK(got == (uint64_t)(i / 3), "FAA %d returned %" PRIu64, i, got);
			seen++;
		}
		CHECK(seen == N / 3, "atomics checked");
	}
	CHECK(p.side[REQ].qp->cnt.retransmits > 0, "the lossy link caused no retransmission");
	h_pair_destroy(&p);
}

/* What the requester puts on the wire: READs outstanding, fences, SE bits. */
struct wire_watch {
	int reads_out, max_reads_out; /* READ requests sent minus last responses sent */
	int write_while_reads_out;    /* WRITE packets sent while a READ was outstanding */
	int se_packets, last_se_opcode;
};

static void watch_frames(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct wire_watch *w = arg;
	struct xr_pkt pkt;

	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK)
		return;
	if (from == REQ && pkt.opcode == XR_OP_RC_READ_REQUEST) {
		if (++w->reads_out > w->max_reads_out)
			w->max_reads_out = w->reads_out;
	} else if (from == RSP && (pkt.opflags & XR_OPF_READ) && (pkt.opflags & XR_OPF_LAST)) {
		w->reads_out--;
	} else if (from == REQ && (pkt.opflags & XR_OPF_WRITE) && w->reads_out > 0) {
		w->write_while_reads_out++;
	}
	if (from == REQ && pkt.se) {
		w->se_packets++;
		w->last_se_opcode = pkt.opcode;
	}
}

static void test_initiator_depth(void)
{
	struct h_qp_opts o = h_default_opts();
	struct wire_watch w = {0};
	struct h_pair p;
	struct h_buf *src, *dst;

	o.rd_atomic = 3;
	h_setup(&p, 16, 1024, &o);
	xr_mem_link_set_tap(&p.link, watch_frames, &w);
	src = h_buf(&p, RSP, 16 * 4096, remote_all, 0);
	dst = h_buf(&p, REQ, 16 * 4096, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(src->base, 16 * 4096, 5);
	for (int k = 0; k < 16; k++) {
		struct xr_sge sge = h_sge(dst, (size_t)k * 4096, 4096);

		CHECK(post_rdma(&p, (uint64_t)k, &sge, 1, XR_WR_RDMA_READ,
				(uintptr_t)src->base + (size_t)k * 4096, src->mr->rkey, 0) == 0,
		      "post READ %d", k);
	}
	h_settle(&p);
	for (int k = 0; k < 16; k++)
		h_expect_wc(p.side[REQ].scq, "READ", (uint64_t)k, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(h_first_mismatch(dst->base, 16 * 4096, 5) < 0, "READ content");
	CHECK(w.max_reads_out == 3, "%d READs outstanding on the wire at most, max_rd_atomic 3",
	      w.max_reads_out);
	h_pair_destroy(&p);
}

static void test_fence_and_solicited(void)
{
	struct h_qp_opts o = h_default_opts();
	struct wire_watch w = {0};
	struct h_pair p;
	struct h_buf *src, *dst, *wsrc;
	struct xr_sge rs, ws;
	struct xr_send_wr wr = {.wr_id = 2,
				.sg_list = &ws,
				.num_sge = 1,
				.opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED | XR_SEND_FENCE | XR_SEND_SOLICITED};
	struct xr_send_wr *bad;

	h_setup(&p, 17, 1024, &o);
	xr_mem_link_set_tap(&p.link, watch_frames, &w);
	src = h_buf(&p, RSP, 8192, remote_all, 0);
	dst = h_buf(&p, REQ, 8192, XR_ACCESS_LOCAL_WRITE, 0);
	wsrc = h_buf(&p, REQ, 3000, XR_ACCESS_LOCAL_WRITE, 0);
	rs = h_sge(dst, 0, 8192);
	ws = h_sge(wsrc, 0, 3000);
	wr.wr.rdma.remote_addr = (uintptr_t)src->base;
	wr.wr.rdma.rkey = src->mr->rkey;
	/* A READ, then a fenced WRITE over the same remote bytes: the WRITE waits. */
	h_fill(src->base, 8192, 6);
	h_fill(wsrc->base, 3000, 7);
	CHECK(post_rdma(&p, 1, &rs, 1, XR_WR_RDMA_READ, (uintptr_t)src->base, src->mr->rkey, 0) ==
		  0,
	      "post READ");
	CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post fenced WRITE");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ", 1, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	h_expect_wc(p.side[REQ].scq, "fenced WRITE", 2, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(w.write_while_reads_out == 0, "%d WRITE packets left before the READ completed",
	      w.write_while_reads_out);
	CHECK(h_first_mismatch(dst->base, 8192, 6) < 0, "the READ saw the WRITE's data");
	CHECK(h_first_mismatch(src->base, 3000, 7) < 0, "the WRITE did not land");
	CHECK(w.se_packets == 1 && w.last_se_opcode == XR_OP_RC_WRITE_LAST,
	      "SE bit on %d packets (last opcode 0x%02x): want only the last WRITE packet",
	      w.se_packets, w.last_se_opcode);
	h_pair_destroy(&p);
}

/* Deregisters b's MR mid-transfer; a 1-byte stand-in keeps the fixture's teardown simple. */
static void dereg_midway(struct h_pair *p, int side, struct h_buf *b)
{
	int err;

	CHECK(xr_core_dereg_mr(b->mr) == 0, "dereg_mr");
	b->mr = xr_core_reg_mr(p->side[side].pd, b->base, 1, XR_ACCESS_LOCAL_WRITE, &err);
	CHECK(b->mr != NULL, "stand-in MR");
}

/* An MR deregistered in the middle of a WRITE or READ is never touched again. */
static void test_dereg_midway(void)
{
	enum { LEN = 1 << 20 };

	for (int op = 0; op < 2; op++) {
		bool write = op == 0;
		struct h_qp_opts o = h_default_opts();
		struct h_pair p;
		struct h_buf *local, *remote;
		struct xr_sge sge;
		uint8_t *snapshot = malloc(LEN);

		h_setup(&p, 18, 16, &o); /* a shallow link: the transfer takes many steps */
		local = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x11);
		remote = h_buf(&p, RSP, LEN, remote_all, 0x22);
		sge = h_sge(local, 0, LEN);
		CHECK(post_rdma(&p, 1, &sge, 1, write ? XR_WR_RDMA_WRITE : XR_WR_RDMA_READ,
				(uintptr_t)remote->base, remote->mr->rkey, 0) == 0,
		      "post");
		h_run(&p, p.now + 20000, NULL, NULL);
		dereg_midway(&p, RSP, remote);
		memcpy(snapshot, remote->base, LEN);
		h_settle(&p);
		h_expect_wc(p.side[REQ].scq,
			    write ? "WRITE into a deregistered MR" : "READ from a deregistered MR",
			    1, XR_WC_REM_ACCESS_ERR, XR_WC_RDMA_WRITE);
		CHECK(memcmp(snapshot, remote->base, LEN) == 0,
		      "%s: the deregistered region changed", write ? "WRITE" : "READ");
		if (!write)
			CHECK(h_first_not(local->base + LEN / 2, LEN / 2, 0x11) < 0,
			      "READ: the second half arrived although its MR was gone");
		free(snapshot);
		h_pair_destroy(&p);
	}
}

int main(void)
{
	h_group("RDMA WRITE and WRITE with immediate, 0..1 MiB", test_write);
	h_group("RDMA READ 0..1 MiB, 8 READs queued behind max_rd_atomic", test_read);
	h_group("fetch-and-add, compare-and-swap hit and miss", test_atomics);
	h_group("remote access errors: REM_ACCESS_ERR, REM_INV_REQ_ERR, flush", test_access_errors);
	h_group("WRITE/READ/FAA mix over 10% loss, dup, reorder, corruption", test_lossy_mix);
	h_group("initiator depth: never more READs on the wire than max_rd_atomic",
		test_initiator_depth);
	h_group("fence waits for the READ; solicited event bit on the last packet",
		test_fence_and_solicited);
	h_group("an MR deregistered mid-WRITE / mid-READ is never touched again",
		test_dereg_midway);
	return h_exit_status();
}
