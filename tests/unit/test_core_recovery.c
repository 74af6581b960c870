/* SPDX-License-Identifier: MIT */
/*
 * Loss recovery of the requester, frame by frame in virtual time: the
 * round-trip estimate (samples from ACK timing, Karn's rule), tail-loss
 * probes (recovery without the ACK timer when the end of a burst, a
 * retransmission or an ACK is lost), and selective repeat between xroce
 * peers: offered in band, never seen by a standard peer, and sending
 * again only what was lost.
 */
#include "core_harness.h"

#define MS 1000000ull
#define US 1000ull

/*
 * Posts a WRITE of len bytes from the start of src to the start of dst on
 * side 0, which sends it at now; returns the frames queued toward side 1.
 */
static uint32_t post_write_len(struct h_pair *p, struct h_buf *src, struct h_buf *dst,
			       uint64_t wr_id, uint32_t len)
{
	CHECK(h_post_write(p, 0, wr_id, src, 0, dst, 0, len) == 0, "post WRITE %" PRIu64, wr_id);
	xr_core_progress(p->side[0].core, p->now);
	return xr_mem_link_queued(&p->link, 1);
}

/* Sends one 1-packet WRITE from side 0 at now; true when it went out. */
static bool send_write(struct h_pair *p, struct h_buf *src, struct h_buf *dst, uint64_t wr_id)
{
	return post_write_len(p, src, dst, wr_id, 512) == 1;
}

/* Time passes by delay; then everything queued toward side arrives and it answers. */
static void arrive(struct h_pair *p, int side, uint64_t delay)
{
	p->now += delay;
	xr_mem_link_deliver(&p->link, side, p->side[side].core, p->now, 64);
	xr_core_progress(p->side[side].core, p->now);
}

static void test_rtt_samples(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;
	struct h_buf *src, *dst;
	struct xr_qp_impl *qp;

	h_setup(&p, 11, 64, &o);
	qp = p.side[0].qp;
	src = h_buf(&p, 0, 4096, XR_ACCESS_LOCAL_WRITE, 0x5a);
	dst = h_buf(&p, 1, 4096, H_REMOTE_ALL, 0);
	p.now = 10 * MS;
	CHECK(qp->srtt_ns == 0 && qp->rttvar_ns == 0, "no estimate before a sample");

	/* First sample, 200 us: srtt = R, rttvar = R / 2. */
	CHECK(send_write(&p, src, dst, 1), "the WRITE went out");
	arrive(&p, 1, 120 * US);
	arrive(&p, 0, 80 * US);
	h_expect_wc(p.side[0].scq, "first WRITE", 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(qp->srtt_ns == 200 * US && qp->rttvar_ns == 100 * US,
	      "after 200 us: srtt %" PRIu64 " rttvar %" PRIu64, qp->srtt_ns, qp->rttvar_ns);

	/* Second, 400 us: srtt = 7/8 * 200 + 1/8 * 400, rttvar = 3/4 * 100 + 1/4 * 200. */
	CHECK(send_write(&p, src, dst, 2), "the WRITE went out");
	arrive(&p, 1, 300 * US);
	arrive(&p, 0, 100 * US);
	h_expect_wc(p.side[0].scq, "second WRITE", 2, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(qp->srtt_ns == 225 * US && qp->rttvar_ns == 125 * US,
	      "after 400 us: srtt %" PRIu64 " rttvar %" PRIu64, qp->srtt_ns, qp->rttvar_ns);

	/*
	 * Karn: a WRITE lost and sent again (by a tail-loss probe) gives no
	 * sample, however long it took.
	 */
	xr_mem_link_set_impair(&p.link, 0, &(struct xr_mem_impair){.loss = 1});
	CHECK(send_write(&p, src, dst, 3) || xr_mem_link_counters(&p.link, 0)->dropped == 1,
	      "the third WRITE was sent and lost");
	xr_mem_link_set_impair(&p.link, 0, NULL);
	CHECK(h_run(&p, p.now + 10000 * MS, NULL, NULL) == H_QUIET, "the retransmission recovers");
	h_expect_wc(p.side[0].scq, "third WRITE", 3, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(qp->cnt.tail_probes == 1 && qp->cnt.timeouts == 0,
	      "one probe and no ACK timer expiry, got %llu and %llu",
	      (unsigned long long)qp->cnt.tail_probes, (unsigned long long)qp->cnt.timeouts);
	CHECK(qp->srtt_ns == 225 * US && qp->rttvar_ns == 125 * US,
	      "a retransmitted packet gave a sample: srtt %" PRIu64 " rttvar %" PRIu64, qp->srtt_ns,
	      qp->rttvar_ns);

	/* Fresh packets are timed again afterwards. */
	CHECK(send_write(&p, src, dst, 4), "the WRITE went out");
	arrive(&p, 1, 100 * US);
	arrive(&p, 0, 100 * US);
	h_expect_wc(p.side[0].scq, "fourth WRITE", 4, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(qp->srtt_ns == (7 * 225 * US + 200 * US) / 8, "after 200 us: srtt %" PRIu64,
	      qp->srtt_ns);
	h_pair_destroy(&p);
}

/*
 * A pair whose requester (side 0) has a round-trip estimate: one WRITE
 * went and was acknowledged first. The ACK timeout is 67 ms (14).
 */
struct probe_case {
	struct h_pair p;
	struct h_buf *src, *dst;
	struct xr_qp_impl *qp;
	struct h_sr_frames sr; /* what each side sent of selective repeat's */
};

/* speaks[s]: side s speaks selective repeat. */
static void probe_setup_sr(struct probe_case *c, uint64_t seed, bool speaks0, bool speaks1)
{
	struct h_qp_opts o = h_default_opts();

	memset(c, 0, sizeof(*c));
	o.go_back_n[0] = !speaks0;
	o.go_back_n[1] = !speaks1;
	h_setup(&c->p, seed, 256, &o);
	xr_mem_link_set_tap(&c->p.link, h_count_sr_frames, &c->sr);
	c->qp = c->p.side[0].qp;
	c->src = h_buf(&c->p, 0, 16 * 1024, XR_ACCESS_LOCAL_WRITE, 0);
	c->dst = h_buf(&c->p, 1, 16 * 1024, H_REMOTE_ALL, 0);
	h_fill(c->src->base, c->src->len, 7);
	c->p.now = 10 * MS;
	CHECK(send_write(&c->p, c->src, c->dst, 100), "the first WRITE went out");
	/* One microsecond each way, as h_run's steps deliver. */
	arrive(&c->p, 1, 1 * US);
	arrive(&c->p, 0, 1 * US);
	h_expect_wc(c->p.side[0].scq, "first WRITE", 100, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(c->qp->srtt_ns == 2 * US, "srtt %" PRIu64 " after one 2 us round trip",
	      c->qp->srtt_ns);
}

/* The probe cases: go-back-N at both ends, as with any standard peer. */
static void probe_setup(struct probe_case *c, uint64_t seed)
{
	probe_setup_sr(c, seed, false, false);
}

/* Posts a WRITE of npkts full packets (1 KiB each) from the start of src; side 0 sends it. */
static void post_write(struct probe_case *c, uint64_t wr_id, uint32_t npkts)
{
	uint32_t queued;

	memset(c->dst->base, 0, c->dst->len);
	queued = post_write_len(&c->p, c->src, c->dst, wr_id, npkts * 1024);
	CHECK(queued == npkts, "%u packets sent, %u queued", npkts, queued);
}

/*
 * Runs the pair until quiet; the WRITE must have completed well before the
 * ACK timer could fire, by probes alone, with every byte in place, and the
 * requester have sent exactly frames frames in all: nothing needless again.
 */
static void probe_finish(struct probe_case *c, uint64_t wr_id, uint32_t npkts, uint64_t probes,
			 uint64_t frames)
{
	uint64_t posted = c->p.now;
	struct xr_wc wc = {0};

	while (c->p.now - posted < 60 * MS && !h_poll(c->p.side[0].scq, &wc, 1))
		h_run(&c->p, c->p.now + 10 * US, NULL, NULL);
	CHECK(wc.wr_id == wr_id && wc.status == XR_WC_SUCCESS, "WRITE %" PRIu64 ": %s", wc.wr_id,
	      xr_wc_status_str(wc.status));
	CHECK(c->p.now - posted < 2 * MS, "completed %llu us after the loss",
	      (unsigned long long)((c->p.now - posted) / US));
	CHECK(c->qp->cnt.timeouts == 0, "%llu ACK timer expiries",
	      (unsigned long long)c->qp->cnt.timeouts);
	CHECK(c->qp->cnt.tail_probes == probes, "%llu probes, expected %" PRIu64,
	      (unsigned long long)c->qp->cnt.tail_probes, probes);
	CHECK(h_first_mismatch(c->dst->base, npkts * 1024, 7) == -1, "the data landed whole");
	CHECK(h_settle(&c->p) == H_QUIET, "nothing more goes");
	h_expect_no_wc(c->p.side[0].scq, "no further completion");
	CHECK(xr_mem_link_counters(&c->p.link, 0)->submitted == frames,
	      "the requester sent %llu frames, expected %" PRIu64,
	      (unsigned long long)xr_mem_link_counters(&c->p.link, 0)->submitted, frames);
	h_pair_destroy(&c->p);
}

/*
 * 10 us pass; of the frames queued toward side, the first pass arrive, the
 * next lose are lost, and the next rest arrive; then side answers.
 */
static void deliver_losing(struct probe_case *c, int side, uint32_t pass, uint32_t lose,
			   uint32_t rest)
{
	struct xr_core *core = c->p.side[side].core;

	c->p.now += 10 * US;
	CHECK(xr_mem_link_deliver(&c->p.link, side, core, c->p.now, pass) == pass &&
		  xr_mem_link_discard(&c->p.link, side, lose) == lose &&
		  xr_mem_link_deliver(&c->p.link, side, core, c->p.now, rest) == rest,
	      "%u frames to side %d, %u of them lost", pass + lose + rest, side, lose);
	xr_core_progress(core, c->p.now);
}

/* The last packet of a burst is lost: nothing follows it, so no NAK can come. */
static void test_probe_tail_lost(void)
{
	struct probe_case c;

	probe_setup(&c, 22);
	post_write(&c, 1, 4);
	deliver_losing(&c, 1, 3, 1, 0);
	/* The first WRITE, these 4, the probe: packet 1 (a duplicate) and 4 (in sequence now). */
	probe_finish(&c, 1, 4, 1, 7);
}

/*
 * A packet is lost, the responder NAKs the gap, and the retransmission is
 * lost too: a go-back-N responder has sent its one NAK and stays silent.
 */
static void test_probe_retransmission_lost(void)
{
	struct probe_case c;

	probe_setup(&c, 23);
	post_write(&c, 1, 8);
	deliver_losing(&c, 1, 2, 1, 5);
	/* The NAK of the third packet comes back: the requester goes back to it. */
	arrive(&c.p, 0, 10 * US);
	CHECK(c.qp->cnt.seq_naks_rx == 1, "one NAK");
	CHECK(xr_mem_link_queued(&c.p.link, 1) == 6, "6 packets sent again, %u queued",
	      xr_mem_link_queued(&c.p.link, 1));
	deliver_losing(&c, 1, 0, 1, 5); /* the retransmission of the third is lost */
	CHECK(xr_mem_link_queued(&c.p.link, 0) == 0, "the responder stays silent");
	/*
	 * The first WRITE, these 8, 3-8 again, the probe: 3 (taken now) and 8
	 * (out of sequence: the NAK of 4), then 4-8 again.
	 */
	probe_finish(&c, 1, 8, 1, 22);
}

/* Everything arrived; only the ACK is lost. */
static void test_probe_ack_lost(void)
{
	struct probe_case c;

	probe_setup(&c, 24);
	post_write(&c, 1, 4);
	arrive(&c.p, 1, 10 * US);
	deliver_losing(&c, 0, 0, 1, 0); /* the ACK */
	/* The first WRITE, these 4, the probe: packets 1 and 4, both duplicates. */
	probe_finish(&c, 1, 4, 1, 7);
}

/*
 * Offered on every request, answered by a SACK until the requester sends
 * self-placing packets: after the first WRITE's answer both ends know.
 */
static void test_sr_negotiated(void)
{
	struct probe_case c;

	probe_setup_sr(&c, 31, true, true);
	CHECK(c.qp->sr_peer && c.p.side[1].qp->sr_requester, "both ends speak selective repeat");
	CHECK(c.sr.offers[0] == 1 && c.sr.sacks[1] == 1 && c.sr.self_placing[0] == 0,
	      "the WRITE offered it (%" PRIu64 "), the SACK answered (%" PRIu64 ")", c.sr.offers[0],
	      c.sr.sacks[1]);
	post_write(&c, 1, 4);
	CHECK(c.sr.self_placing[0] == 4, "the next WRITE went self-placing: %" PRIu64 " of 4",
	      c.sr.self_placing[0]);
	arrive(&c.p, 1, 10 * US);
	CHECK(c.sr.sacks[1] == 1, "its answer was a plain ACK (%" PRIu64 " SACKs)", c.sr.sacks[1]);
	probe_finish(&c, 1, 4, 0, 5);
}

/*
 * One side standard: the xroce side offers or listens, and the other never
 * sees a frame it does not know, through a loss and its recovery too.
 */
static void sr_with_standard_peer(bool xroce_requester)
{
	struct probe_case c;
	int std = xroce_requester ? 1 : 0;

	probe_setup_sr(&c, 32 + std, xroce_requester, !xroce_requester);
	post_write(&c, 1, 8);
	deliver_losing(&c, 1, 2, 1, 5);
	arrive(&c.p, 0, 10 * US);
	CHECK(c.qp->cnt.seq_naks_rx == 1, "go-back-N: one NAK");
	CHECK(!c.qp->sr_peer && !c.p.side[1].qp->sr_requester, "nobody turned selective repeat on");
	CHECK(c.sr.offers[1 - std] > 0 || !xroce_requester, "the xroce requester offered it");
	CHECK(c.sr.offers[std] == 0 && c.sr.sacks[0] == 0 && c.sr.sacks[1] == 0 &&
		  c.sr.self_placing[0] == 0 && c.sr.self_placing[1] == 0,
	      "nothing non-standard went: %" PRIu64 " offers from the standard side, %" PRIu64
	      " + %" PRIu64 " SACKs, %" PRIu64 " + %" PRIu64 " self-placing",
	      c.sr.offers[std], c.sr.sacks[0], c.sr.sacks[1], c.sr.self_placing[0],
	      c.sr.self_placing[1]);
	/* The first WRITE, these 8, then 3-8 again. */
	probe_finish(&c, 1, 8, 0, 15);
}

static void test_sr_standard_responder(void)
{
	sr_with_standard_peer(true);
}

static void test_sr_standard_requester(void)
{
	sr_with_standard_peer(false);
}

/* One packet lost in the middle: the SACK names it, and it alone goes again. */
static void test_sr_one_lost(void)
{
	struct probe_case c;
	struct xr_qp_impl *responder;

	probe_setup_sr(&c, 35, true, true);
	responder = c.p.side[1].qp;
	post_write(&c, 1, 8);
	deliver_losing(&c, 1, 2, 1, 5);
	CHECK(responder->cnt.sr_placed_ahead == 5 && responder->cnt.seq_naks_tx == 0,
	      "the 5 after the gap placed ahead (%llu), no NAK",
	      (unsigned long long)responder->cnt.sr_placed_ahead);
	arrive(&c.p, 0, 10 * US);
	CHECK(c.qp->cnt.sacks_rx == 2 && xr_mem_link_queued(&c.p.link, 1) == 1,
	      "a SACK came (%llu in all), one packet sent again (%u)",
	      (unsigned long long)c.qp->cnt.sacks_rx, xr_mem_link_queued(&c.p.link, 1));
	/* The first WRITE, these 8, the third again. */
	probe_finish(&c, 1, 8, 0, 10);
}

/* The lost packet's retransmission is lost too: the probe asks for it again. */
static void test_sr_resend_lost(void)
{
	struct probe_case c;

	probe_setup_sr(&c, 36, true, true);
	post_write(&c, 1, 8);
	deliver_losing(&c, 1, 2, 1, 5);
	arrive(&c.p, 0, 10 * US);
	deliver_losing(&c, 1, 0, 1, 0);
	/* The first WRITE, these 8, the third again, the probe: the third and the eighth. */
	probe_finish(&c, 1, 8, 1, 12);
}

/* Holes of several packets and single ones: each lost packet goes again once. */
static void test_sr_holes(void)
{
	struct probe_case c;

	probe_setup_sr(&c, 37, true, true);
	post_write(&c, 1, 16);
	c.p.now += 10 * US;
	CHECK(xr_mem_link_deliver(&c.p.link, 1, c.p.side[1].core, c.p.now, 2) == 2 &&
		  xr_mem_link_discard(&c.p.link, 1, 4) == 4 &&
		  xr_mem_link_deliver(&c.p.link, 1, c.p.side[1].core, c.p.now, 3) == 3 &&
		  xr_mem_link_discard(&c.p.link, 1, 1) == 1 &&
		  xr_mem_link_deliver(&c.p.link, 1, c.p.side[1].core, c.p.now, 6) == 6,
	      "16 packets, 3-6 and 10 lost");
	xr_core_progress(c.p.side[1].core, c.p.now);
	arrive(&c.p, 0, 10 * US);
	CHECK(c.qp->cnt.sr_resends == 5, "%llu packets sent again, 5 lost",
	      (unsigned long long)c.qp->cnt.sr_resends);
	/* The first WRITE, these 16, the 5 lost again. */
	probe_finish(&c, 1, 16, 0, 22);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * A self-placing WRITE one byte longer than its region, its first packet
 * lost: the packets after it are not placed either, whatever order they
 * come in, and the WRITE fails with a remote access error.
 */
static void test_sr_write_past_region(void)
{
	struct probe_case c;
	struct xr_wc wc = {0};
	uint64_t posted;

	probe_setup_sr(&c, 38, true, true);
	memset(c.dst->base, 0, c.dst->len);
	{
		struct xr_sge sge = h_sge(c.src, 0, 4097);
		struct xr_send_wr wr = {
		    .wr_id = 9,
		    .sg_list = &sge,
		    .num_sge = 1,
		    .opcode = XR_WR_RDMA_WRITE,
		    .send_flags = XR_SEND_SIGNALED,
		    .wr.rdma = {.remote_addr = (uintptr_t)c.dst->base + c.dst->len - 4096,
				.rkey = c.dst->mr->rkey}};
		struct xr_send_wr *bad = NULL;

		CHECK(xr_core_post_send(c.qp, &wr, &bad) == 0, "post the WRITE");
	}
	xr_core_progress(c.p.side[0].core, c.p.now);
	CHECK(c.sr.self_placing[0] == 5, "5 self-placing packets sent (%" PRIu64 ")",
	      c.sr.self_placing[0]);
	deliver_losing(&c, 1, 0, 1, 4);
	CHECK(c.p.side[1].qp->cnt.sr_placed_ahead == 0, "none of the 4 after the loss placed");
	CHECK(all_zero(c.dst->base, c.dst->len), "the region is untouched");
	posted = c.p.now;
	while (c.p.now - posted < 60 * MS && !h_poll(c.p.side[0].scq, &wc, 1))
		h_run(&c.p, c.p.now + 10 * US, NULL, NULL);
	CHECK(wc.wr_id == 9 && wc.status == XR_WC_REM_ACCESS_ERR, "WRITE %" PRIu64 ": %s", wc.wr_id,
	      xr_wc_status_str(wc.status));
	CHECK(all_zero(c.dst->base, c.dst->len), "the region is still untouched");
	h_pair_destroy(&c.p);
}

/* The least congestion window a run has seen, while no ACK timer had expired. */
struct window_watch {
	struct xr_qp_impl *qp;
	uint32_t min_cwnd;
};

static bool watch_window(struct h_pair *p, void *arg)
{
	struct window_watch *w = arg;

	(void)p;
	if (!w->qp->cnt.timeouts && w->qp->cwnd < w->min_cwnd)
		w->min_cwnd = w->qp->cwnd;
	return false;
}

/*
 * Go-back-N at both ends, 3 % of the requests lost: each loss costs a PSN
 * sequence NAK and a cut, but no cut goes below XR_CWND_LOSS_FLOOR (only
 * the ACK timer's expiry may), and every byte lands.
 */
static void test_gbn_window_floor(void)
{
	enum { WRITES = 64, LEN = 64 << 10 };
	struct h_qp_opts o = h_default_opts();
	struct window_watch watch = {.min_cwnd = XR_SEND_WINDOW};
	struct h_buf *src, *dst;
	struct h_pair p;

	o.go_back_n[0] = o.go_back_n[1] = true;
	h_setup(&p, 31, 256, &o);
	watch.qp = p.side[0].qp;
	src = h_buf(&p, 0, (size_t)WRITES * LEN, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, (size_t)WRITES * LEN, H_REMOTE_ALL, 0);
	h_fill(src->base, src->len, 3);
	xr_mem_link_set_impair(&p.link, 0, &(struct xr_mem_impair){.loss = 0.03});
	for (uint64_t i = 0; i < WRITES; i++)
		CHECK(h_post_write(&p, 0, i, src, i * LEN, dst, i * LEN, LEN) == 0,
		      "post WRITE %" PRIu64, i);
	CHECK(h_run(&p, p.now + 3600 * 1000 * MS, watch_window, &watch) == H_QUIET,
	      "the WRITEs settle");
	for (uint64_t i = 0; i < WRITES; i++)
		h_expect_wc(p.side[0].scq, "WRITE", i, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, dst->len, 3) < 0, "every byte landed");
	CHECK(watch.qp->cnt.seq_naks_rx >= 5, "%llu PSN sequence NAKs",
	      (unsigned long long)watch.qp->cnt.seq_naks_rx);
	CHECK(watch.min_cwnd < XR_SEND_WINDOW, "the losses cut the window (least %u)",
	      watch.min_cwnd);
	CHECK(watch.min_cwnd >= XR_CWND_LOSS_FLOOR, "no cut below %u (least %u)",
	      XR_CWND_LOSS_FLOOR, watch.min_cwnd);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("recovery: round-trip estimate from ACK timing, Karn's rule", test_rtt_samples);
	h_group("recovery: probe after the last packets of a burst are lost", test_probe_tail_lost);
	h_group("recovery: probe after a retransmission is lost (no second NAK)",
		test_probe_retransmission_lost);
	h_group("recovery: probe after an ACK is lost", test_probe_ack_lost);
	h_group("recovery: a loss cuts a go-back-N window no lower than its floor",
		test_gbn_window_floor);
	h_group("selective repeat: offered and taken in band", test_sr_negotiated);
	h_group("selective repeat: a standard responder sees nothing new",
		test_sr_standard_responder);
	h_group("selective repeat: a standard requester sees nothing new",
		test_sr_standard_requester);
	h_group("selective repeat: one packet lost, one sent again", test_sr_one_lost);
	h_group("selective repeat: a lost retransmission, probed", test_sr_resend_lost);
	h_group("selective repeat: holes, each lost packet sent again once", test_sr_holes);
	h_group("selective repeat: a WRITE past its region places nothing",
		test_sr_write_past_region);
	return h_exit_status();
}
