/* SPDX-License-Identifier: MIT */
/*
 * Loss recovery of the requester, frame by frame in virtual time: the
 * round-trip estimate (samples from ACK timing, Karn's rule).
 */
#include "core_harness.h"

#define MS 1000000ull
#define US 1000ull

/* Sends one 1-packet WRITE from side 0 at now; true when it went out. */
static bool send_write(struct h_pair *p, struct h_buf *src, struct h_buf *dst, uint64_t wr_id)
{
	struct xr_sge sge = h_sge(src, 0, 512);
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_RDMA_WRITE,
	    .send_flags = XR_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)dst->base, .rkey = dst->mr->rkey}};
	struct xr_send_wr *bad = NULL;

	if (xr_core_post_send(p->side[0].qp, &wr, &bad))
		return false;
	xr_core_progress(p->side[0].core, p->now);
	return xr_mem_link_queued(&p->link, 1) == 1;
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
	 * Karn: a WRITE lost and sent again after the ACK timer gives no
	 * sample, however long it took.
	 */
	xr_mem_link_set_impair(&p.link, 0, &(struct xr_mem_impair){.loss = 1});
	CHECK(send_write(&p, src, dst, 3) || xr_mem_link_counters(&p.link, 0)->dropped == 1,
	      "the third WRITE was sent and lost");
	xr_mem_link_set_impair(&p.link, 0, NULL);
	CHECK(h_run(&p, p.now + 10000 * MS, NULL, NULL) == H_QUIET, "the retransmission recovers");
	h_expect_wc(p.side[0].scq, "third WRITE", 3, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(qp->cnt.timeouts == 1, "one ACK timer expiry, got %llu",
	      (unsigned long long)qp->cnt.timeouts);
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

int main(void)
{
	h_group("recovery: round-trip estimate from ACK timing, Karn's rule", test_rtt_samples);
	return h_exit_status();
}
