/* SPDX-License-Identifier: MIT */
/*
 * Congestion notification in virtual time: connected QPs send ECT(0); a
 * frame a switch marked CE earns its sender's QP a CNP (the RoCEv2 annex's
 * format, at most one per QP per 50 us); CNPs cut the requester's rate
 * (DCQCN), which paces it and keeps a congested queue short, and recovers
 * once the marks stop; nothing is lost on the way. CNPs that do not fit
 * their connection change nothing.
 */
#include "core_harness.h"

#define MS UINT64_C(1000000)
#define US UINT64_C(1000)

/* What each side sent: frames by ECN codepoint, and the CNPs, the last one kept. */
struct ecn_tap {
	uint64_t frames[2], ect0[2], not_ect[2], cnps[2];
	uint8_t cnp[2][128];
	uint32_t cnp_len[2];
};

static void tap_ecn(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct ecn_tap *t = arg;
	struct xr_pkt pkt;

	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK)
		return;
	t->frames[from]++;
	t->ect0[from] += pkt.ecn == XR_ECN_ECT0;
	t->not_ect[from] += pkt.ecn == 0;
	if (pkt.opcode == XR_OP_CNP && len <= sizeof(t->cnp[from])) {
		t->cnps[from]++;
		memcpy(t->cnp[from], frame, len);
		t->cnp_len[from] = len;
	}
}

/* Posts a signaled WRITE of len bytes at off of src to the same offset of dst, from side 0. */
static void post_write(struct h_pair *p, struct h_buf *src, struct h_buf *dst, uint64_t wr_id,
		       size_t off, uint32_t len)
{
	CHECK(h_post_write(p, 0, wr_id, src, off, dst, off, len) == 0, "post WRITE %" PRIu64,
	      wr_id);
}

static void test_ect_sent(void)
{
	for (int ecn = 1; ecn >= 0; ecn--) {
		struct h_qp_opts o = h_default_opts();
		struct ecn_tap t = {0};
		struct h_buf *src, *dst;
		struct h_pair p;

		o.no_ecn[0] = o.no_ecn[1] = !ecn;
		h_setup(&p, 21, 256, &o);
		xr_mem_link_set_tap(&p.link, tap_ecn, &t);
		src = h_buf(&p, 0, 64 << 10, XR_ACCESS_LOCAL_WRITE, 0);
		dst = h_buf(&p, 1, 64 << 10, H_REMOTE_ALL, 0);
		h_fill(src->base, src->len, 1);
		post_write(&p, src, dst, 1, 0, 64 << 10);
		CHECK(h_settle(&p) == H_QUIET, "the WRITE completes");
		h_expect_wc(p.side[0].scq, "WRITE", 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
		CHECK(h_first_mismatch(dst->base, dst->len, 1) < 0, "every byte landed");
		for (int s = 0; s < 2; s++)
			CHECK(t.frames[s] && (ecn ? t.ect0[s] : t.not_ect[s]) == t.frames[s],
			      "side %d sent %" PRIu64 " frames, %" PRIu64 " ECT(0), %" PRIu64
			      " Not-ECT (ECN %s)",
			      s, t.frames[s], t.ect0[s], t.not_ect[s], ecn ? "on" : "off");
		CHECK(!t.cnps[0] && !t.cnps[1], "no CNP without a mark");
		h_pair_destroy(&p);
	}
}

/*
 * Eight packets leave at once, the last seven behind others in the queue:
 * marked CE, they earn one CNP, in the annex's format; a mark 50 us later
 * earns the next.
 */
static void test_cnp_for_ce(void)
{
	struct h_qp_opts o = h_default_opts();
	struct ecn_tap t = {0};
	struct h_buf *src, *dst;
	struct xr_qp_impl *req, *rsp;
	struct xr_pkt cnp;
	struct h_pair p;

	h_setup(&p, 22, 256, &o);
	req = p.side[0].qp;
	rsp = p.side[1].qp;
	xr_mem_link_set_tap(&p.link, tap_ecn, &t);
	xr_mem_link_set_impair(&p.link, 0, &(struct xr_mem_impair){.ce_threshold = 1});
	src = h_buf(&p, 0, 16 << 10, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, 16 << 10, H_REMOTE_ALL, 0);
	h_fill(src->base, src->len, 2);

	post_write(&p, src, dst, 1, 0, 8 << 10);
	xr_core_progress(p.side[0].core, p.now);
	CHECK(xr_mem_link_queued(&p.link, 1) == 8, "8 packets in flight, got %u",
	      xr_mem_link_queued(&p.link, 1));
	CHECK(xr_mem_link_counters(&p.link, 0)->ce_marked == 7, "7 marked CE, got %" PRIu64,
	      xr_mem_link_counters(&p.link, 0)->ce_marked);
	xr_mem_link_deliver(&p.link, 1, p.side[1].core, p.now, 64);
	CHECK(rsp->cnt.ecn_marked == 7 && rsp->cnt.cnps_tx == 1 && t.cnps[1] == 1,
	      "7 marks seen, 1 CNP sent: %" PRIu64 " and %" PRIu64, (uint64_t)rsp->cnt.ecn_marked,
	      (uint64_t)rsp->cnt.cnps_tx);
	CHECK(xr_pkt_parse(t.cnp[1], t.cnp_len[1], &cnp) == XR_PARSE_OK && xr_pkt_icrc_ok(&cnp),
	      "the CNP parses and its ICRC holds");
	CHECK(cnp.dqpn == req->pub.qp_num && cnp.psn == 0 && !cnp.ackreq && !cnp.se &&
		  cnp.pkey == XR_DEFAULT_PKEY,
	      "to the requester's QP %#x (got %#x), PSN 0, no AckReq", req->pub.qp_num, cnp.dqpn);
	CHECK(t.cnp[1][cnp.bth_off + 4] == 0x40, "BECN set, FECN clear: byte %#x",
	      t.cnp[1][cnp.bth_off + 4]);
	CHECK(cnp.payload_len == 0 && cnp.roce_len == XR_IPV4_HLEN + XR_UDP_HLEN + XR_BTH_SIZE +
							  XR_CNP_RSVD_SIZE + XR_ICRC_SIZE,
	      "BTH, 16 reserved bytes and the ICRC: %u bytes", cnp.roce_len);
	CHECK(h_first_not(t.cnp[1] + cnp.bth_off + XR_BTH_SIZE, XR_CNP_RSVD_SIZE, 0) < 0,
	      "the reserved bytes are 0");
	CHECK(cnp.ecn == 0, "the CNP goes Not-ECT, got %u", cnp.ecn);

	/* The requester takes it: its rate is cut. */
	xr_mem_link_deliver(&p.link, 0, p.side[0].core, p.now, 64);
	CHECK(req->cnt.cnps_rx == 1 && req->dcqcn.limiting && req->dcqcn.rate,
	      "the requester took the CNP: %" PRIu64 " received, limiting %d",
	      (uint64_t)req->cnt.cnps_rx, req->dcqcn.limiting);

	/* 49 us later, a mark earns nothing more; 50 us after the CNP, a second one. */
	for (uint64_t k = 0; k < 2; k++) {
		p.now += k ? 1 * US : 49 * US;
		post_write(&p, src, dst, 2 + k, (8 + 2 * k) << 10, 2048);
		xr_core_progress(p.side[0].core, p.now);
		xr_mem_link_deliver(&p.link, 1, p.side[1].core, p.now, 64);
		CHECK(rsp->cnt.ecn_marked == 8 + k && rsp->cnt.cnps_tx == 1 + k,
		      "%s us after the first CNP: %" PRIu64 " marks, %" PRIu64 " CNPs",
		      k ? "50" : "49", (uint64_t)rsp->cnt.ecn_marked, (uint64_t)rsp->cnt.cnps_tx);
	}
	CHECK(h_settle(&p) == H_QUIET, "the WRITEs complete");
	CHECK(rsp->cnt.cnps_tx == 2 && req->cnt.cnps_rx == 2, "a second CNP: %" PRIu64 " sent",
	      (uint64_t)rsp->cnt.cnps_tx);
	for (uint64_t id = 1; id <= 3; id++)
		h_expect_wc(p.side[0].scq, "WRITE", id, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, 12 << 10, 2) < 0, "every byte landed");
	h_pair_destroy(&p);
}

struct bottleneck {
	uint64_t done_at, cut_rate;
	uint64_t queue_avg; /* frames queued toward the responder, sampled every 10 us */
	uint64_t cnps_tx, cnps_rx, retransmits;
};

#define STREAM_WRITES 64
#define STREAM_LEN (64u << 10)

/*
 * 4 MiB of WRITEs through a link that delivers one frame per microsecond
 * (a bottleneck of about 1 GB/s) and marks CE behind 32 queued frames.
 */
static struct bottleneck run_bottleneck(bool ecn)
{
	struct h_qp_opts o = h_default_opts();
	struct bottleneck r = {0};
	struct h_buf *src, *dst;
	struct xr_qp_impl *req;
	uint64_t start, queued = 0, samples = 0;
	struct h_pair p;

	o.no_ecn[0] = o.no_ecn[1] = !ecn;
	o.cap.max_send_wr = STREAM_WRITES;
	h_setup(&p, 23, 2048, &o);
	req = p.side[0].qp;
	p.burst = 1;
	xr_mem_link_set_impair(&p.link, 0, &(struct xr_mem_impair){.ce_threshold = 32});
	src = h_buf(&p, 0, STREAM_WRITES * STREAM_LEN, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, STREAM_WRITES * STREAM_LEN, H_REMOTE_ALL, 0);
	h_fill(src->base, src->len, 3);
	start = p.now;
	for (uint64_t i = 0; i < STREAM_WRITES; i++)
		post_write(&p, src, dst, i, i * STREAM_LEN, STREAM_LEN);
	for (uint64_t n = 0; n < 100000; n++) {
		enum h_run_result rr = h_run(&p, p.now + 10 * US, NULL, NULL);

		if (req->dcqcn.limiting && (!r.cut_rate || req->dcqcn.rate < r.cut_rate))
			r.cut_rate = req->dcqcn.rate;
		if (rr == H_QUIET)
			break;
		queued += xr_mem_link_queued(&p.link, 1);
		samples++;
	}
	r.queue_avg = samples ? queued / samples : 0;
	r.done_at = p.now - start;
	for (uint64_t i = 0; i < STREAM_WRITES; i++)
		h_expect_wc(p.side[0].scq, "WRITE", i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, dst->len, 3) < 0, "every byte landed (ECN %s)",
	      ecn ? "on" : "off");
	CHECK(!xr_mem_link_counters(&p.link, 0)->dropped &&
		  !xr_mem_link_counters(&p.link, 1)->dropped,
	      "the link lost nothing");
	r.cnps_tx = p.side[1].qp->cnt.cnps_tx;
	r.cnps_rx = req->cnt.cnps_rx;
	r.retransmits = req->cnt.retransmits;
	h_pair_destroy(&p);
	return r;
}

static void test_dcqcn_slows_sender(void)
{
	struct bottleneck on = run_bottleneck(true), off = run_bottleneck(false);

	printf("     ECN on: %" PRIu64 " frames queued on average, %" PRIu64
	       " CNPs, lowest rate %" PRIu64 " MB/s, done in %" PRIu64 " us; off: %" PRIu64
	       " queued, done in %" PRIu64 " us\n",
	       on.queue_avg, on.cnps_rx, on.cut_rate / MS, on.done_at / US, off.queue_avg,
	       off.done_at / US);
	CHECK(on.cnps_tx > 0 && on.cnps_tx == on.cnps_rx,
	      "CNPs counted at both ends: %" PRIu64 " sent, %" PRIu64 " received", on.cnps_tx,
	      on.cnps_rx);
	CHECK(on.cut_rate && on.cut_rate < 1000 * MS,
	      "the requester was paced below the link's 1 GB/s: %" PRIu64 " B/s", on.cut_rate);
	CHECK(!off.cnps_tx && !off.cnps_rx, "Not-ECT frames are never marked, so no CNP");
	CHECK(on.queue_avg * 2 < off.queue_avg,
	      "paced, the queue stays short: %" PRIu64 " frames on average, %" PRIu64
	      " without ECN",
	      on.queue_avg, off.queue_avg);
	CHECK(!on.retransmits && !off.retransmits, "nothing sent twice: %" PRIu64 " and %" PRIu64,
	      on.retransmits, off.retransmits);
}

static bool write_done(struct h_pair *p, void *arg)
{
	struct xr_wc wc;

	(void)arg;
	return h_poll(p->side[0].scq, &wc, 1) == 1;
}

/* Once the marks stop, DCQCN's increases bring the requester back to full speed. */
static void test_dcqcn_recovers(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_qp_impl *req;
	struct h_pair p;
	uint64_t cut, n;

	h_setup(&p, 24, 1024, &o);
	req = p.side[0].qp;
	src = h_buf(&p, 0, 256 << 10, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, 256 << 10, H_REMOTE_ALL, 0);
	h_fill(src->base, src->len, 4);
	/* A measured rate first, then a CNP forged from the responder's path. */
	for (n = 0; n < 8; n++) {
		post_write(&p, src, dst, n, 0, 256 << 10);
		CHECK(h_run(&p, p.now + 100 * MS, write_done, NULL) == H_DONE, "WRITE %" PRIu64, n);
	}
	{
		struct xr_path path = h_path_from(&p, 1);
		struct h_forge f;

		if (h_forge_begin(&f, &path, XR_OP_CNP, req->pub.qp_num, 0, 0, 0))
			h_forge_deliver(&p, 0, &f);
	}
	CHECK(req->dcqcn.limiting && req->cnt.cnps_rx == 1, "the CNP cut the rate");
	cut = req->dcqcn.rate;
	CHECK(cut && cut * 2 <= req->dcqcn.target + 1,
	      "cut to half the rate it sent at: %" PRIu64 " of %" PRIu64, cut, req->dcqcn.target);
	for (n = 0; n < 2000 && req->dcqcn.limiting; n++) {
		post_write(&p, src, dst, n, 0, 256 << 10);
		CHECK(h_run(&p, p.now + 100 * MS, write_done, NULL) == H_DONE, "WRITE %" PRIu64, n);
	}
	CHECK(!req->dcqcn.limiting, "back to full speed after %" PRIu64 " WRITEs", n);
	CHECK(h_first_mismatch(dst->base, dst->len, 4) < 0, "every byte landed");
	h_pair_destroy(&p);
}

/* CNPs that do not fit the connection change nothing. */
static void test_cnp_hostile(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_impl *req;
	struct xr_path path;
	struct h_forge f;
	struct h_pair p;

	h_setup(&p, 25, 64, &o);
	req = p.side[0].qp;

	/* From a third host. */
	path = h_path_from(&p, 1);
	path.sgid = h_third_gid();
	if (h_forge_begin(&f, &path, XR_OP_CNP, req->pub.qp_num, 0, 0, 0))
		h_forge_deliver(&p, 0, &f);
	CHECK(p.side[0].core->stats.rx_bad_src == 1, "a third host's CNP is dropped");

	/* Longer than a CNP is. */
	path = h_path_from(&p, 1);
	if (h_forge_begin(&f, &path, XR_OP_CNP, req->pub.qp_num, 0, 0, 0)) {
		uint8_t frame[256];
		uint32_t len = f.out.frame_len + 4;

		xr_pkt_seal(&f.out);
		memcpy(frame, f.out.frame, f.out.frame_len);
		memset(frame + f.out.frame_len, 0, 4);
		/* Grow the IP and UDP lengths by 4 to cover them. */
		frame[XR_ETH_HLEN + 3] += 4;
		frame[XR_ETH_HLEN + XR_IPV4_HLEN + 5] += 4;
		xr_core_rx(p.side[0].core, frame, len, XR_RX_NO_QUEUE, p.now);
	}
	CHECK(p.side[0].core->stats.rx_malformed == 1, "a CNP with a payload is malformed");

	/* To a QP that does not exist here. */
	if (h_forge_begin(&f, &path, XR_OP_CNP, req->pub.qp_num ^ 0x100, 0, 0, 0))
		h_forge_deliver(&p, 0, &f);
	CHECK(p.side[0].core->stats.rx_unknown_qp == 1, "a CNP for no QP is dropped");

	CHECK(!req->cnt.cnps_rx && !req->dcqcn.limiting, "none of them touched the QP's rate");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("ecn: connected QPs send ECT(0), Not-ECT when turned off", test_ect_sent);
	h_group("ecn: a CE mark earns one CNP per 50 us, in the annex's format", test_cnp_for_ce);
	h_group("ecn: DCQCN paces the requester and keeps a congested queue short",
		test_dcqcn_slows_sender);
	h_group("ecn: the rate recovers once the marks stop", test_dcqcn_recovers);
	h_group("ecn: CNPs that fit no connection change nothing", test_cnp_hostile);
	return h_exit_status();
}
