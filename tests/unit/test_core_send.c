/* SPDX-License-Identifier: MIT */
/*
 * RC SEND through the transport core, two cores wired by the in-memory link
 * and driven in virtual time: payload placement, completions, the verbs QP
 * state machine, local and remote errors, RNR flow, transport retry, and
 * delivery under seeded loss, duplication, reordering and corruption.
 * One line per group; exits non-zero if any check failed.
 */
#include <arpa/inet.h>

#include "core_harness.h"

#define GUARD 64
#define GUARD_FILL 0xa5
#define SENDER 0
#define RECEIVER 1

/* The core's retry budget counts retransmissions, so timeouts matter: 4.2 ms here. */
#define SHORT_TIMEOUT 10

static uint64_t ack_timeout_ns(uint8_t timeout)
{
	return 4096ull << timeout;
}

/* ---- frame tap: what a side put on the wire ------------------------------ */

struct tap_counts {
	uint64_t frames[2];
	uint64_t requests[2];
	uint64_t rnr_naks[2];
	/* Transmissions of one watched PSN, by sender side 0. */
	uint32_t watch_psn;
	uint64_t watch_hits;
};

static void count_frames(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct tap_counts *c = arg;
	struct xr_pkt pkt;

	c->frames[from]++;
	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK)
		return;
	if (pkt.opflags & XR_OPF_REQUEST) {
		c->requests[from]++;
		if (from == SENDER && pkt.psn == c->watch_psn)
			c->watch_hits++;
	} else if (pkt.opcode == XR_OP_RC_ACK &&
		   (pkt.aeth_syndrome & XR_AETH_TYPE_MASK) == XR_AETH_RNR_NAK) {
		c->rnr_naks[from]++;
	}
}

/* ---- one message, checked end to end ------------------------------------- */

/*
 * Sends len bytes of pattern msg from side `from` through a buffer laid out
 * between guards, into a receive area `slack` bytes larger than the message,
 * and checks placement, guards and both completions.
 */
static void send_and_check(struct h_pair *p, int from, uint64_t msg, uint32_t len, bool imm)
{
	int to = 1 - from;
	uint32_t rlen = len + 100;
	struct h_buf *src = h_buf(p, from, len + 2 * GUARD, 0, GUARD_FILL);
	struct h_buf *dst = h_buf(p, to, rlen + 2 * GUARD, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
	struct xr_sge ssge = h_sge(src, GUARD, len), rsge = h_sge(dst, GUARD, rlen);
	uint32_t imm_be = htonl(0xc0de0000u | (uint32_t)msg);
	enum h_run_result r;
	struct xr_wc wc;
	long bad;

	h_fill(src->base + GUARD, len, msg);
	CHECK(h_post_recv(p, to, msg, &rsge, 1) == 0, "post_recv for %u bytes", len);
	CHECK(h_post_send(p, from, msg, &ssge, 1, imm ? XR_WR_SEND_WITH_IMM : XR_WR_SEND,
			  XR_SEND_SIGNALED, imm_be) == 0,
	      "post_send of %u bytes", len);
	r = h_settle(p);
	CHECK(r == H_QUIET, "%u bytes: run ended with %s", len, h_run_result_str(r));

	h_expect_wc(p->side[from].scq, "sender", msg, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p->side[to].rcq, "receiver");
	CHECK(wc.wr_id == msg && wc.status == XR_WC_SUCCESS && wc.opcode == XR_WC_RECV,
	      "%u bytes: receive completion wr %" PRIu64 " %s opcode %d", len, wc.wr_id,
	      xr_wc_status_str(wc.status), wc.opcode);
	CHECK(wc.byte_len == len, "%u bytes: byte_len %u", len, wc.byte_len);
	CHECK(wc.qp_num == p->side[to].qp->pub.qp_num && wc.src_qp == p->side[from].qp->pub.qp_num,
	      "%u bytes: qp_num %u src_qp %u", len, wc.qp_num, wc.src_qp);
	if (imm)
		CHECK((wc.wc_flags & XR_WC_WITH_IMM) && wc.imm_data == imm_be,
		      "%u bytes with immediate: flags %#x imm %#x, want %#x", len, wc.wc_flags,
		      wc.imm_data, imm_be);
	else
		CHECK(!(wc.wc_flags & XR_WC_WITH_IMM), "%u bytes: WITH_IMM flag without immediate",
		      len);
	bad = h_first_mismatch(dst->base + GUARD, len, msg);
	CHECK(bad < 0, "%u bytes: payload differs at byte %ld", len, bad);
	bad = h_first_not(dst->base, GUARD, GUARD_FILL);
	CHECK(bad < 0, "%u bytes: guard before the landing area written at %ld", len, bad);
	bad = h_first_not(dst->base + GUARD + len, rlen - len + GUARD, GUARD_FILL);
	CHECK(bad < 0, "%u bytes: %ld bytes past the message written", len, bad);
	bad = h_first_not(src->base, GUARD, GUARD_FILL);
	CHECK(bad < 0 && h_first_mismatch(src->base + GUARD, len, msg) < 0 &&
		  h_first_not(src->base + GUARD + len, GUARD, GUARD_FILL) < 0,
	      "%u bytes: the send buffer changed", len);
	h_expect_no_wc(p->side[from].scq, "sender after one message");
	h_expect_no_wc(p->side[to].rcq, "receiver after one message");
}

static void test_sizes(void)
{
	static const uint32_t sizes[] = {0, 1, 1023, 1024, 1025, 3 * 1024 + 7, 1 << 20};
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;

	h_setup(&p, 1, 1024, &o);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		send_and_check(&p, SENDER, 100 + i, sizes[i], false);
	/* The other direction, over the same QPs. */
	send_and_check(&p, RECEIVER, 200, 3 * 1024 + 7, false);
	CHECK(p.side[SENDER].qp->cnt.retransmits == 0 && p.side[SENDER].qp->cnt.timeouts == 0,
	      "lossless link: %" PRIu64 " retransmits %" PRIu64 " timeouts",
	      (uint64_t)p.side[SENDER].qp->cnt.retransmits,
	      (uint64_t)p.side[SENDER].qp->cnt.timeouts);
	h_pair_destroy(&p);
}

static void test_backpressure(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;

	/* Eight frames in flight per direction, far below the 512-PSN send window. */
	h_setup(&p, 2, 8, &o);
	send_and_check(&p, SENDER, 1, 1 << 20, false);
	send_and_check(&p, SENDER, 2, 5000, false);
	CHECK(xr_mem_link_counters(&p.link, SENDER)->alloc_failed > 0,
	      "a full link never refused a buffer");
	CHECK(p.side[SENDER].qp->cnt.retransmits == 0,
	      "back-pressure caused %" PRIu64 " retransmits",
	      (uint64_t)p.side[SENDER].qp->cnt.retransmits);
	h_pair_destroy(&p);
}

static void test_immediate(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;

	h_setup(&p, 3, 1024, &o);
	send_and_check(&p, SENDER, 1, 100, true);
	send_and_check(&p, SENDER, 2, 2500, true);
	send_and_check(&p, SENDER, 3, 0, true);
	send_and_check(&p, SENDER, 4, 100, false);
	h_pair_destroy(&p);
}

static void test_gather_scatter(void)
{
	static const uint32_t glen[3] = {700, 1500, 333};
	static const uint32_t slen[4] = {100, 1200, 900, 1000};
	struct h_qp_opts o = h_default_opts();
	uint8_t expect[700 + 1500 + 333];
	struct xr_sge gsge[3], ssge[4];
	struct h_buf *gbuf[3], *sbuf[4];
	uint32_t total = 0, off = 0;
	struct h_pair p;
	struct xr_wc wc;

	h_setup(&p, 4, 1024, &o);
	h_fill(expect, sizeof(expect), 7);
	for (int i = 0; i < 3; i++) {
		gbuf[i] = h_buf(&p, SENDER, glen[i] + 2 * GUARD, 0, GUARD_FILL);
		memcpy(gbuf[i]->base + GUARD, expect + total, glen[i]);
		gsge[i] = h_sge(gbuf[i], GUARD, glen[i]);
		total += glen[i];
	}
	for (int i = 0; i < 4; i++) {
		sbuf[i] =
		    h_buf(&p, RECEIVER, slen[i] + 2 * GUARD, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
		ssge[i] = h_sge(sbuf[i], GUARD, slen[i]);
	}
	CHECK(h_post_recv(&p, RECEIVER, 9, ssge, 4) == 0, "post_recv with 4 SGEs");
	CHECK(h_post_send(&p, SENDER, 9, gsge, 3, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "post_send with 3 SGEs");
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_wc(p.side[SENDER].scq, "sender", 9, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p.side[RECEIVER].rcq, "receiver");
	CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == total, "receive: %s, byte_len %u of %u",
	      xr_wc_status_str(wc.status), wc.byte_len, total);
	for (int i = 0; i < 4; i++) {
		uint32_t n = total - off < slen[i] ? total - off : slen[i];
		struct h_buf *b = sbuf[i];

		CHECK(memcmp(b->base + GUARD, expect + off, n) == 0,
		      "scatter entry %d holds the wrong bytes", i);
		CHECK(h_first_not(b->base, GUARD, GUARD_FILL) < 0 &&
			  h_first_not(b->base + GUARD + n, b->len - GUARD - n, GUARD_FILL) < 0,
		      "scatter entry %d: bytes outside its %u-byte share written", i, n);
		off += n;
	}
	h_pair_destroy(&p);
}

static void test_unsignaled(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct h_pair p;

	o.sq_sig_all = 0;
	h_setup(&p, 5, 1024, &o);
	src = h_buf(&p, SENDER, 6 * 1500, 0, 0);
	dst = h_buf(&p, RECEIVER, 6 * 1500, XR_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < 6; i++) {
		struct xr_sge rs = h_sge(dst, (size_t)i * 1500, 1500);

		h_fill(src->base + i * 1500, 1500, (uint64_t)i);
		CHECK(h_post_recv(&p, RECEIVER, (uint64_t)i, &rs, 1) == 0, "post_recv %d", i);
	}
	/* Three unsignaled, then one signaled: only the last reports. */
	for (int i = 0; i < 4; i++) {
		struct xr_sge ss = h_sge(src, (size_t)i * 1500, 1500);

		CHECK(h_post_send(&p, SENDER, (uint64_t)i, &ss, 1, XR_WR_SEND,
				  i == 3 ? XR_SEND_SIGNALED : 0, 0) == 0,
		      "post_send %d", i);
	}
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_wc(p.side[SENDER].scq, "signaled send after unsignaled ones", 3, XR_WC_SUCCESS,
		    XR_WC_SEND);
	h_expect_no_wc(p.side[SENDER].scq, "unsignaled sends");
	/* Two unsignaled alone: no completion at all, but the data arrives. */
	for (int i = 4; i < 6; i++) {
		struct xr_sge ss = h_sge(src, (size_t)i * 1500, 1500);

		CHECK(h_post_send(&p, SENDER, (uint64_t)i, &ss, 1, XR_WR_SEND, 0, 0) == 0,
		      "post_send %d", i);
	}
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_no_wc(p.side[SENDER].scq, "trailing unsignaled sends");
	for (int i = 0; i < 6; i++) {
		struct xr_wc wc = h_poll_one(p.side[RECEIVER].rcq, "receiver");

		CHECK(wc.wr_id == (uint64_t)i && wc.status == XR_WC_SUCCESS && wc.byte_len == 1500,
		      "receive %d: wr %" PRIu64 " %s len %u", i, wc.wr_id,
		      xr_wc_status_str(wc.status), wc.byte_len);
		CHECK(h_first_mismatch(dst->base + i * 1500, 1500, (uint64_t)i) < 0,
		      "message %d corrupted", i);
	}
	CHECK(p.side[SENDER].qp->sq_head == p.side[SENDER].qp->sq_tail,
	      "unsignaled WQEs were not retired");
	h_pair_destroy(&p);
}

static void test_inline(void)
{
	struct h_qp_opts o = h_default_opts();
	uint8_t data[2][120], expect[240];
	struct xr_sge isge[2] = {
	    {.addr = (uintptr_t)data[0], .length = 120, .lkey = 0xdead},
	    {.addr = (uintptr_t)data[1], .length = 120, .lkey = 0xbeef},
	};
	uint8_t big[XR_MAX_INLINE + 1] = {0};
	struct xr_sge bsge = {.addr = (uintptr_t)big, .length = sizeof(big)};
	struct h_buf *dst;
	struct xr_sge rsge;
	struct h_pair p;
	struct xr_wc wc;

	o.cap.max_inline_data = XR_MAX_INLINE;
	h_setup(&p, 6, 1024, &o);
	dst = h_buf(&p, RECEIVER, 256 + 2 * GUARD, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
	rsge = h_sge(dst, GUARD, 256);
	h_fill(expect, sizeof(expect), 11);
	memcpy(data, expect, sizeof(expect));
	CHECK(h_post_recv(&p, RECEIVER, 1, &rsge, 1) == 0, "post_recv");
	/* Unregistered memory with made-up keys: inline data never looks at them. */
	CHECK(h_post_send(&p, SENDER, 1, isge, 2, XR_WR_SEND, XR_SEND_SIGNALED | XR_SEND_INLINE,
			  0) == 0,
	      "inline post_send");
	/* Inline data is owned by the WQE once posted. */
	memset(data, 0, sizeof(data));
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_wc(p.side[SENDER].scq, "inline sender", 1, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p.side[RECEIVER].rcq, "inline receiver");
	CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == sizeof(expect),
	      "inline receive: %s len %u", xr_wc_status_str(wc.status), wc.byte_len);
	CHECK(memcmp(dst->base + GUARD, expect, sizeof(expect)) == 0,
	      "inline payload is not what was posted");
	CHECK(h_first_not(dst->base + GUARD + sizeof(expect), 256 - sizeof(expect) + GUARD,
			  GUARD_FILL) < 0,
	      "inline receive wrote past the message");
	CHECK(h_post_send(&p, SENDER, 2, &bsge, 1, XR_WR_SEND, XR_SEND_INLINE, 0) == -EINVAL,
	      "inline beyond max_inline_data accepted");
	h_pair_destroy(&p);
}

/* ---- errors ---------------------------------------------------------------- */

static void test_recv_too_small(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_sge ssge, rsge[2];
	struct h_pair p;

	h_setup(&p, 7, 1024, &o);
	src = h_buf(&p, SENDER, 4000, 0, 1);
	dst = h_buf(&p, RECEIVER, 4000 + GUARD, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
	rsge[0] = h_sge(dst, 0, 1000);
	rsge[1] = h_sge(dst, 1000, 3000);
	ssge = h_sge(src, 0, 2000);
	CHECK(h_post_recv(&p, RECEIVER, 1, &rsge[0], 1) == 0, "post_recv 1");
	CHECK(h_post_recv(&p, RECEIVER, 2, &rsge[1], 1) == 0, "post_recv 2");
	CHECK(h_post_send(&p, SENDER, 1, &ssge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "post_send 1");
	CHECK(h_post_send(&p, SENDER, 2, &ssge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "post_send 2");
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_wc(p.side[RECEIVER].rcq, "receiver, 2000 bytes into 1000", 1, XR_WC_LOC_LEN_ERR,
		    XR_WC_RECV);
	h_expect_wc(p.side[RECEIVER].rcq, "receiver, next receive", 2, XR_WC_WR_FLUSH_ERR,
		    XR_WC_RECV);
	h_expect_wc(p.side[SENDER].scq, "sender of the oversized SEND", 1, XR_WC_REM_INV_REQ_ERR,
		    XR_WC_SEND);
	h_expect_wc(p.side[SENDER].scq, "sender, next SEND", 2, XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
	CHECK(p.side[SENDER].qp->pub.state == XR_QPS_ERR, "sender QP in state %d",
	      p.side[SENDER].qp->pub.state);
	CHECK(p.side[RECEIVER].qp->pub.state == XR_QPS_ERR, "receiver QP in state %d",
	      p.side[RECEIVER].qp->pub.state);
	CHECK(h_first_not(dst->base + 1000, 3000 + GUARD, GUARD_FILL) < 0,
	      "bytes written beyond the too-small receive");
	CHECK(p.side[RECEIVER].qp->cnt.inv_req_naks_tx == 1 &&
		  p.side[SENDER].qp->cnt.inv_req_naks_rx == 1 &&
		  p.side[SENDER].core->stats.inv_req_naks_rx == 1,
	      "invalid request NAKs: %" PRIu64 " sent, %" PRIu64 " received, expected 1 each",
	      (uint64_t)p.side[RECEIVER].qp->cnt.inv_req_naks_tx,
	      (uint64_t)p.side[SENDER].qp->cnt.inv_req_naks_rx);
	/* Work posted in ERR completes at once, flushed. */
	CHECK(h_post_send(&p, SENDER, 3, &ssge, 1, XR_WR_SEND, 0, 0) == 0, "post_send in ERR");
	CHECK(h_post_recv(&p, RECEIVER, 3, &rsge[1], 1) == 0, "post_recv in ERR");
	h_expect_wc(p.side[SENDER].scq, "send posted in ERR", 3, XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
	h_expect_wc(p.side[RECEIVER].rcq, "receive posted in ERR", 3, XR_WC_WR_FLUSH_ERR,
		    XR_WC_RECV);
	h_expect_no_wc(p.side[SENDER].scq, "sender at the end");
	h_expect_no_wc(p.side[RECEIVER].rcq, "receiver at the end");
	h_pair_destroy(&p);
}

/* The first SGE is broken in some way; nothing may reach the wire. */
static void bad_local_sge(const char *what, int seed, struct xr_sge (*breaker)(struct h_buf *b))
{
	struct h_qp_opts o = h_default_opts();
	struct tap_counts tc = {0};
	struct h_buf *src, *dst;
	struct xr_sge bad, good, rsge;
	struct h_pair p;

	h_setup(&p, (uint64_t)seed, 1024, &o);
	xr_mem_link_set_tap(&p.link, count_frames, &tc);
	src = h_buf(&p, SENDER, 2048, 0, 1);
	dst = h_buf(&p, RECEIVER, 2048, XR_ACCESS_LOCAL_WRITE, GUARD_FILL);
	bad = breaker(src);
	good = h_sge(src, 0, 100);
	rsge = h_sge(dst, 0, 2048);
	CHECK(h_post_recv(&p, RECEIVER, 1, &rsge, 1) == 0, "%s: post_recv", what);
	CHECK(h_post_send(&p, SENDER, 1, &bad, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "%s: post_send must accept it (the check happens at execution)", what);
	CHECK(h_post_send(&p, SENDER, 2, &good, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "%s: post_send 2", what);
	CHECK(h_settle(&p) == H_QUIET, "%s: run did not settle", what);
	h_expect_wc(p.side[SENDER].scq, what, 1, XR_WC_LOC_PROT_ERR, XR_WC_SEND);
	h_expect_wc(p.side[SENDER].scq, "the WR behind it", 2, XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
	CHECK(tc.frames[SENDER] == 0, "%s: %" PRIu64 " frames sent", what, tc.frames[SENDER]);
	CHECK(p.side[SENDER].qp->pub.state == XR_QPS_ERR, "%s: sender QP in state %d", what,
	      p.side[SENDER].qp->pub.state);
	CHECK(p.side[RECEIVER].qp->pub.state == XR_QPS_RTS, "%s: receiver QP in state %d", what,
	      p.side[RECEIVER].qp->pub.state);
	h_expect_no_wc(p.side[RECEIVER].rcq, what);
	CHECK(h_first_not(dst->base, 2048, GUARD_FILL) < 0, "%s: receive buffer written", what);
	h_pair_destroy(&p);
}

static struct xr_sge wrong_lkey(struct h_buf *b)
{
	struct xr_sge s = h_sge(b, 0, 100);

	s.lkey ^= 0x5a00; /* another table index */
	return s;
}

static struct xr_sge stale_lkey(struct h_buf *b)
{
	struct xr_sge s = h_sge(b, 0, 100);

	s.lkey ^= 0x01; /* same index, other generation */
	return s;
}

static struct xr_sge past_the_end(struct h_buf *b)
{
	return h_sge(b, b->len - 50, 100);
}

static void test_bad_lkey(void)
{
	bad_local_sge("unknown lkey", 8, wrong_lkey);
	bad_local_sge("stale lkey", 9, stale_lkey);
	bad_local_sge("SGE past the MR", 10, past_the_end);
}

static void test_modify_qp(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src;
	struct xr_sge sge;
	struct xr_send_wr wr[6], *bad;
	struct xr_qp_attr a;
	struct xr_qp_impl *qp;
	struct h_pair p;
	int rc;

	o.cap.max_send_wr = 4;
	o.cap.max_recv_wr = 4;
	if (h_pair_init(&p, 11, 64) || h_create_qp(&p, SENDER, &o) ||
	    h_create_qp(&p, RECEIVER, &o)) {
		CHECK(0, "fixture");
		return;
	}
	qp = p.side[SENDER].qp;
	src = h_buf(&p, SENDER, 64, 0, 1);
	sge = h_sge(src, 0, 64);
	for (int i = 0; i < 6; i++)
		wr[i] = (struct xr_send_wr){.wr_id = (uint64_t)i,
					    .next = i < 5 ? &wr[i + 1] : NULL,
					    .sg_list = &sge,
					    .num_sge = 1,
					    .opcode = XR_WR_SEND,
					    .send_flags = XR_SEND_SIGNALED};

	a = (struct xr_qp_attr){.qp_state = XR_QPS_INIT, .port_num = 1};
	rc = xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RESET,
	      "RESET->INIT without access flags: %d, state %d", rc, qp->pub.state);
	a = h_rtr_attr(&p, SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTR_MASK, p.side[RECEIVER].mac);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RESET, "RESET->RTR: %d, state %d", rc,
	      qp->pub.state);
	a = h_rts_attr(SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTS_MASK, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RESET, "RESET->RTS: %d, state %d", rc,
	      qp->pub.state);
	a = (struct xr_qp_attr){.qp_state = XR_QPS_INIT, .port_num = 2};
	rc = xr_core_modify_qp(
	    qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RESET, "RESET->INIT on port 2: %d", rc);

	CHECK(h_to_init(&p, SENDER) == 0 && qp->pub.state == XR_QPS_INIT, "RESET->INIT");
	bad = NULL;
	rc = xr_core_post_send(qp, &wr[0], &bad);
	CHECK(rc == -EINVAL && bad == &wr[0], "post_send in INIT: %d, bad_wr %p", rc, (void *)bad);
	a = h_rtr_attr(&p, SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTR_MASK & ~XR_QP_DEST_QPN, p.side[RECEIVER].mac);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_INIT, "INIT->RTR without dest QPN: %d", rc);
	rc = xr_core_modify_qp(qp, &a, H_RTR_MASK, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_INIT, "INIT->RTR without a dmac: %d", rc);
	a.path_mtu = XR_MTU_4096; /* above the port's active MTU */
	rc = xr_core_modify_qp(qp, &a, H_RTR_MASK, p.side[RECEIVER].mac);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_INIT, "INIT->RTR with MTU 4096: %d", rc);
	a = h_rts_attr(SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTS_MASK, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_INIT, "INIT->RTS: %d", rc);

	CHECK(h_to_rtr(&p, SENDER, &o) == 0 && qp->pub.state == XR_QPS_RTR, "INIT->RTR");
	bad = NULL;
	rc = xr_core_post_send(qp, &wr[0], &bad);
	CHECK(rc == -EINVAL && bad == &wr[0], "post_send in RTR: %d", rc);
	a = h_rts_attr(SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTS_MASK & ~XR_QP_RETRY_CNT, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RTR, "RTR->RTS without retry_cnt: %d", rc);
	a.timeout = 32;
	rc = xr_core_modify_qp(qp, &a, H_RTS_MASK, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RTR, "RTR->RTS with timeout 32: %d", rc);
	a = h_rts_attr(SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, H_RTS_MASK | XR_QP_DEST_QPN, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RTR,
	      "RTR->RTS with an attribute not allowed there: %d", rc);
	CHECK(h_to_rts(&p, SENDER, &o) == 0 && qp->pub.state == XR_QPS_RTS, "RTR->RTS");
	a = h_rtr_attr(&p, SENDER, &o);
	rc = xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL);
	CHECK(rc == -EINVAL && qp->pub.state == XR_QPS_RTS, "RTS->RTR: %d", rc);

	/* The peer comes up too, so the accepted WRs can complete. */
	CHECK(h_to_init(&p, RECEIVER) == 0 && h_to_rtr(&p, RECEIVER, &o) == 0 &&
		  h_to_rts(&p, RECEIVER, &o) == 0,
	      "peer bring-up");
	for (int i = 0; i < 6; i++) {
		struct h_buf *dst = h_buf(&p, RECEIVER, 64, XR_ACCESS_LOCAL_WRITE, 0);
		struct xr_sge rs = h_sge(dst, 0, 64);

		rc = h_post_recv(&p, RECEIVER, (uint64_t)i, &rs, 1);
		CHECK(rc == (i < 4 ? 0 : -ENOMEM), "post_recv %d into a 4-deep RQ: %d", i, rc);
	}
	/* All or none (ibv_wr_complete): no room for 6, or a bad third WR, posts nothing. */
	bad = NULL;
	rc = xr_core_post_send_all_or_none(qp, &wr[0], &bad);
	CHECK(rc == -ENOMEM && bad == &wr[0],
	      "6 WRs all-or-none into a 4-deep SQ: %d, bad_wr is wr %ld", rc,
	      bad ? (long)(bad - wr) : -1L);
	wr[2].num_sge = -1;
	rc = xr_core_post_send_all_or_none(qp, &wr[0], &bad);
	CHECK(rc == -EINVAL && bad == &wr[2],
	      "all-or-none with a bad third WR: %d, bad_wr is wr %ld", rc,
	      bad ? (long)(bad - wr) : -1L);
	wr[2].num_sge = 1;
	CHECK(qp->sq_head == qp->sq_tail, "all-or-none refusals posted %u WRs",
	      qp->sq_head - qp->sq_tail);
	bad = NULL;
	rc = xr_core_post_send(qp, &wr[0], &bad);
	CHECK(rc == -ENOMEM && bad == &wr[4], "6 WRs into a 4-deep SQ: %d, bad_wr is wr %ld", rc,
	      bad ? (long)(bad - wr) : -1L);
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	for (int i = 0; i < 4; i++)
		h_expect_wc(p.side[SENDER].scq, "accepted WR", (uint64_t)i, XR_WC_SUCCESS,
			    XR_WC_SEND);
	h_expect_no_wc(p.side[SENDER].scq, "WRs refused with -ENOMEM");
	for (int i = 0; i < 4; i++)
		h_expect_wc(p.side[RECEIVER].rcq, "receiver", (uint64_t)i, XR_WC_SUCCESS,
			    XR_WC_RECV);
	/* Room again once completed. */
	wr[5].next = NULL;
	rc = xr_core_post_send(qp, &wr[4], &bad);
	CHECK(rc == 0, "2 WRs into the drained SQ: %d", rc);
	h_pair_destroy(&p);
}

/* ---- RNR ------------------------------------------------------------------- */

static void test_rnr_recovers(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_sge ssge, rsge;
	enum h_run_result r;
	struct h_pair p;
	struct xr_wc wc;

	o.rnr_retry = 7;
	o.min_rnr_timer = 4; /* 40 us */
	h_setup(&p, 12, 1024, &o);
	src = h_buf(&p, SENDER, 3000, 0, 0);
	dst = h_buf(&p, RECEIVER, 3000, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(src->base, 3000, 5);
	ssge = h_sge(src, 0, 3000);
	rsge = h_sge(dst, 0, 3000);
	CHECK(h_post_send(&p, SENDER, 1, &ssge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
	      "post_send");
	r = h_run(&p, p.now + 2000000, NULL, NULL);
	CHECK(r == H_TIME_LIMIT, "without a receive the sender stopped retrying: %s",
	      h_run_result_str(r));
	h_expect_no_wc(p.side[SENDER].scq, "sender before the receive is posted");
	CHECK(p.side[SENDER].qp->cnt.rnr_naks_rx > 0 && p.side[RECEIVER].qp->cnt.rnr_naks_tx > 0,
	      "no RNR NAK: %" PRIu64 " received, %" PRIu64 " sent",
	      (uint64_t)p.side[SENDER].qp->cnt.rnr_naks_rx,
	      (uint64_t)p.side[RECEIVER].qp->cnt.rnr_naks_tx);
	CHECK(p.side[RECEIVER].qp->cnt.rnr_naks_tx <= 2000 / 40 + 1,
	      "%" PRIu64 " RNR NAKs in 2 ms with a 40 us RNR timer",
	      (uint64_t)p.side[RECEIVER].qp->cnt.rnr_naks_tx);
	CHECK(h_post_recv(&p, RECEIVER, 1, &rsge, 1) == 0, "post_recv");
	CHECK(h_settle(&p) == H_QUIET, "run did not settle");
	h_expect_wc(p.side[SENDER].scq, "sender after RNR", 1, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p.side[RECEIVER].rcq, "receiver after RNR");
	CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == 3000, "receive: %s len %u",
	      xr_wc_status_str(wc.status), wc.byte_len);
	CHECK(h_first_mismatch(dst->base, 3000, 5) < 0, "payload after RNR differs");
	CHECK(p.side[SENDER].qp->pub.state == XR_QPS_RTS, "sender QP in state %d",
	      p.side[SENDER].qp->pub.state);
	h_pair_destroy(&p);
}

static void test_rnr_exhausted(void)
{
	for (uint8_t retry = 0; retry <= 6; retry++) {
		struct h_qp_opts o = h_default_opts();
		struct tap_counts tc = {0};
		struct h_buf *src;
		struct xr_sge ssge;
		struct h_pair p;

		o.rnr_retry = retry;
		o.min_rnr_timer = 1;
		h_setup(&p, 13 + retry, 1024, &o);
		xr_mem_link_set_tap(&p.link, count_frames, &tc);
		src = h_buf(&p, SENDER, 100, 0, 0);
		ssge = h_sge(src, 0, 100);
		CHECK(h_post_send(&p, SENDER, 1, &ssge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
		      "post_send");
		CHECK(h_post_send(&p, SENDER, 2, &ssge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0,
		      "post_send");
		CHECK(h_settle(&p) == H_QUIET, "rnr_retry %u: run did not settle", retry);
		h_expect_wc(p.side[SENDER].scq, "RNR retries exhausted", 1, XR_WC_RNR_RETRY_EXC_ERR,
			    XR_WC_SEND);
		h_expect_wc(p.side[SENDER].scq, "the WR behind it", 2, XR_WC_WR_FLUSH_ERR,
			    XR_WC_SEND);
		CHECK(p.side[RECEIVER].qp->cnt.rnr_naks_tx == retry + 1u &&
			  tc.rnr_naks[RECEIVER] == retry + 1u &&
			  p.side[SENDER].qp->cnt.rnr_naks_rx == retry + 1u,
		      "rnr_retry %u: responder counted %" PRIu64 " RNR NAKs, %" PRIu64
		      " on the wire, requester received %" PRIu64 ", want %u",
		      retry, (uint64_t)p.side[RECEIVER].qp->cnt.rnr_naks_tx, tc.rnr_naks[RECEIVER],
		      (uint64_t)p.side[SENDER].qp->cnt.rnr_naks_rx, retry + 1u);
		CHECK(p.side[SENDER].qp->pub.state == XR_QPS_ERR,
		      "rnr_retry %u: sender in state %d", retry, p.side[SENDER].qp->pub.state);
		CHECK(p.side[SENDER].qp->cnt.timeouts == 0,
		      "rnr_retry %u: %" PRIu64 " ACK timeouts", retry,
		      (uint64_t)p.side[SENDER].qp->cnt.timeouts);
		h_pair_destroy(&p);
	}
}

/* ---- transport retry --------------------------------------------------------- */

static void test_peer_gone(void)
{
	static const uint8_t retry_cnts[] = {0, 3, 7};

	for (size_t i = 0; i < sizeof(retry_cnts); i++) {
		uint8_t retry = retry_cnts[i];
		const struct xr_mem_impair blackhole = {.loss = 1.0};
		struct h_qp_opts o = h_default_opts();
		struct tap_counts tc = {0};
		struct h_buf *src, *dst;
		struct xr_sge ssge, rsge;
		uint64_t start, elapsed, tmo;
		struct h_pair p;

		o.retry_cnt = retry;
		o.timeout = SHORT_TIMEOUT;
		tmo = ack_timeout_ns(SHORT_TIMEOUT);
		h_setup(&p, 30 + i, 1024, &o);
		xr_mem_link_set_tap(&p.link, count_frames, &tc);
		tc.watch_psn = o.sq_psn[SENDER];
		src = h_buf(&p, SENDER, 3000, 0, 0);
		dst = h_buf(&p, RECEIVER, 3000, XR_ACCESS_LOCAL_WRITE, 0);
		ssge = h_sge(src, 0, 3000);
		rsge = h_sge(dst, 0, 3000);
		for (int k = 0; k < 3; k++)
			CHECK(h_post_recv(&p, RECEIVER, (uint64_t)k, &rsge, 1) == 0, "post_recv");
		xr_mem_link_set_impair(&p.link, SENDER, &blackhole);
		xr_mem_link_set_impair(&p.link, RECEIVER, &blackhole);
		start = p.now;
		for (int k = 0; k < 3; k++)
			CHECK(h_post_send(&p, SENDER, (uint64_t)k, &ssge, 1, XR_WR_SEND, 0, 0) == 0,
			      "post_send");
		CHECK(h_settle(&p) == H_QUIET, "retry_cnt %u: run did not settle", retry);
		elapsed = p.now - start;
		h_expect_wc(p.side[SENDER].scq, "peer gone", 0, XR_WC_RETRY_EXC_ERR, XR_WC_SEND);
		h_expect_wc(p.side[SENDER].scq, "second WR", 1, XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
		h_expect_wc(p.side[SENDER].scq, "third WR", 2, XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
		h_expect_no_wc(p.side[SENDER].scq, "peer gone");
		CHECK(p.side[SENDER].qp->cnt.timeouts == retry,
		      "retry_cnt %u: %" PRIu64 " timeouts before giving up", retry,
		      (uint64_t)p.side[SENDER].qp->cnt.timeouts);
		CHECK(tc.watch_hits == retry + 1u,
		      "retry_cnt %u: first PSN transmitted %" PRIu64 " times, want %u", retry,
		      tc.watch_hits, retry + 1u);
		CHECK(elapsed >= (retry + 1u) * tmo && elapsed < (retry + 2u) * tmo,
		      "retry_cnt %u: gave up after %" PRIu64 " ns, timeout %" PRIu64 " ns", retry,
		      elapsed, tmo);
		CHECK(p.side[SENDER].qp->pub.state == XR_QPS_ERR,
		      "retry_cnt %u: sender in state %d", retry, p.side[SENDER].qp->pub.state);
		h_expect_no_wc(p.side[RECEIVER].rcq, "receiver of a black hole");
		CHECK(h_post_send(&p, SENDER, 9, &ssge, 1, XR_WR_SEND, 0, 0) == 0,
		      "post_send in ERR");
		h_expect_wc(p.side[SENDER].scq, "WR posted after the failure", 9,
			    XR_WC_WR_FLUSH_ERR, XR_WC_SEND);
		h_pair_destroy(&p);
	}
}

/* ---- a long stream over a bad link ------------------------------------------- */

#define STREAM_MSGS 2000
#define STREAM_MAX 5000
#define STREAM_SLOTS 64 /* sends in flight, and the receive ring's largest size */

struct stream {
	uint64_t seed;
	uint32_t recv_slots;
	/* A slow receiver: a buffer is reposted this long after its completion. */
	uint64_t repost_delay;
	uint64_t completed_at[STREAM_SLOTS];
	uint32_t reposted;
	uint32_t size[STREAM_MSGS];
	uint32_t posted, sent_done, recv_done;
	struct h_buf *sbuf, *rbuf;
	uint8_t expect[STREAM_MAX];
	bool failed; /* report the first problem only */
};

/* Message k: bytes of pattern k, its sequence number in the first four (when they fit). */
static void stream_message(uint8_t *dst, uint32_t k, uint32_t len)
{
	h_fill(dst, len, k);
	if (len >= 4)
		memcpy(dst, &k, 4);
}

static void stream_fail(struct stream *st, const char *fmt, uint32_t k, uint32_t a, uint32_t b)
{
	if (st->failed)
		return;
	st->failed = true;
	CHECK(0, "seed %" PRIu64 " message %u: %s (%u vs %u)", st->seed, k, fmt, a, b);
}

static bool stream_step(struct h_pair *p, void *arg)
{
	struct stream *st = arg;
	struct xr_wc wc[32];
	int n;

	while ((n = h_poll(p->side[SENDER].scq, wc, 32)) > 0) {
		for (int i = 0; i < n; i++, st->sent_done++) {
			if (wc[i].status != XR_WC_SUCCESS || wc[i].wr_id != st->sent_done)
				stream_fail(st, "send completion: status, wr_id", st->sent_done,
					    wc[i].status, (uint32_t)wc[i].wr_id);
		}
	}
	while ((n = h_poll(p->side[RECEIVER].rcq, wc, 32)) > 0) {
		for (int i = 0; i < n; i++, st->recv_done++) {
			uint32_t k = st->recv_done, slot = k % st->recv_slots;
			uint8_t *got = st->rbuf->base + (size_t)slot * STREAM_MAX;

			if (k >= STREAM_MSGS) {
				stream_fail(st, "a receive completion too many", k, k, STREAM_MSGS);
				continue;
			}
			if (wc[i].status != XR_WC_SUCCESS || wc[i].wr_id != k) {
				stream_fail(st, "receive completion: status, wr_id", k,
					    wc[i].status, (uint32_t)wc[i].wr_id);
				continue;
			}
			if (wc[i].byte_len != st->size[k]) {
				stream_fail(st, "byte_len, size sent", k, wc[i].byte_len,
					    st->size[k]);
				continue;
			}
			stream_message(st->expect, k, st->size[k]);
			if (memcmp(got, st->expect, st->size[k]) != 0)
				stream_fail(st, "payload differs (first 4 bytes, size)", k,
					    st->size[k] >= 4 ? *(uint32_t *)got : 0, st->size[k]);
			st->completed_at[slot] = p->now;
		}
	}
	while (st->reposted < st->recv_done && st->reposted + st->recv_slots < STREAM_MSGS &&
	       p->now >= st->completed_at[st->reposted % st->recv_slots] + st->repost_delay) {
		uint32_t k = st->reposted + st->recv_slots, slot = st->reposted % st->recv_slots;
		struct xr_sge rs = h_sge(st->rbuf, (size_t)slot * STREAM_MAX, STREAM_MAX);

		if (h_post_recv(p, RECEIVER, k, &rs, 1) != 0)
			stream_fail(st, "repost of a receive failed", k, 0, 0);
		st->reposted++;
	}
	while (st->posted < STREAM_MSGS && st->posted - st->sent_done < STREAM_SLOTS) {
		uint32_t k = st->posted, slot = k % STREAM_SLOTS;
		struct xr_sge ss = h_sge(st->sbuf, (size_t)slot * STREAM_MAX, st->size[k]);

		stream_message(st->sbuf->base + (size_t)slot * STREAM_MAX, k, st->size[k]);
		if (h_post_send(p, SENDER, k, &ss, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) != 0) {
			stream_fail(st, "post_send failed", k, 0, 0);
			return true;
		}
		st->posted++;
	}
	return st->failed || (st->sent_done == STREAM_MSGS && st->recv_done == STREAM_MSGS);
}

static void stream_over_bad_link(uint64_t seed, uint32_t recv_slots, uint64_t repost_delay)
{
	const struct xr_mem_impair bad = {
	    .loss = 0.10, .duplicate = 0.02, .reorder = 0.5, .reorder_window = 8, .corrupt = 0.005};
	struct h_qp_opts o = h_default_opts();
	const struct xr_mem_counters *c0, *c1;
	struct stream *st = calloc(1, sizeof(*st));
	uint64_t rng = seed;
	enum h_run_result r;
	struct h_pair p;

	if (!st) {
		CHECK(0, "out of memory");
		return;
	}
	o.cap.max_send_wr = STREAM_SLOTS;
	o.cap.max_recv_wr = STREAM_SLOTS;
	o.timeout = SHORT_TIMEOUT;
	h_setup(&p, seed, 1024, &o);
	st->seed = seed;
	st->recv_slots = recv_slots;
	st->repost_delay = repost_delay;
	for (int k = 0; k < STREAM_MSGS; k++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		st->size[k] = (uint32_t)((rng >> 33) % (STREAM_MAX + 1));
	}
	st->sbuf = h_buf(&p, SENDER, (size_t)STREAM_SLOTS * STREAM_MAX, 0, 0);
	st->rbuf = h_buf(&p, RECEIVER, (size_t)STREAM_SLOTS * STREAM_MAX, XR_ACCESS_LOCAL_WRITE, 0);
	for (uint32_t k = 0; k < recv_slots; k++) {
		struct xr_sge rs = h_sge(st->rbuf, (size_t)k * STREAM_MAX, STREAM_MAX);

		CHECK(h_post_recv(&p, RECEIVER, k, &rs, 1) == 0, "post_recv %u", k);
	}
	xr_mem_link_set_impair(&p.link, SENDER, &bad);
	xr_mem_link_set_impair(&p.link, RECEIVER, &bad);
	/* An hour of virtual time is far more than 2000 messages can need. */
	r = h_run(&p, p.now + 3600ull * 1000000000ull, stream_step, st);
	CHECK(r == H_DONE && !st->failed,
	      "seed %" PRIu64 ": run ended with %s after %u sends and %u receives completed", seed,
	      h_run_result_str(r), st->sent_done, st->recv_done);
	if (r == H_DONE && !st->failed) {
		CHECK(h_settle(&p) == H_QUIET, "seed %" PRIu64 ": did not settle", seed);
		stream_step(&p, st);
		CHECK(!st->failed && st->sent_done == STREAM_MSGS && st->recv_done == STREAM_MSGS,
		      "seed %" PRIu64 ": completions after the end: %u sends, %u receives", seed,
		      st->sent_done, st->recv_done);
		CHECK(p.side[SENDER].qp->pub.state == XR_QPS_RTS &&
			  p.side[RECEIVER].qp->pub.state == XR_QPS_RTS,
		      "seed %" PRIu64 ": QP states %d %d", seed, p.side[SENDER].qp->pub.state,
		      p.side[RECEIVER].qp->pub.state);
	}
	c0 = xr_mem_link_counters(&p.link, SENDER);
	c1 = xr_mem_link_counters(&p.link, RECEIVER);
	/* The link must really have hurt both directions, and the core noticed the damage. */
	CHECK(c0->dropped && c0->duplicated && c0->reordered && c0->corrupted && c1->dropped &&
		  c1->duplicated && c1->reordered && c1->corrupted,
	      "seed %" PRIu64 ": impairments missing", seed);
	CHECK(p.side[RECEIVER].core->stats.rx_bad_icrc + p.side[RECEIVER].core->stats.rx_malformed >
		  0,
	      "seed %" PRIu64 ": no corrupted frame was rejected", seed);
	CHECK(!repost_delay || p.side[RECEIVER].qp->cnt.rnr_naks_tx > 0,
	      "seed %" PRIu64 ": a slow receiver, yet no RNR NAK", seed);
	printf("  seed %" PRIu64 ": %.1f ms virtual; data %" PRIu64 " frames (%" PRIu64
	       " lost, %" PRIu64 " dup, %" PRIu64 " reordered, %" PRIu64 " corrupt); acks %" PRIu64
	       " frames (%" PRIu64 " lost); %" PRIu64 " rewinds, %" PRIu64 " timeouts, %" PRIu64
	       " seq NAKs, %" PRIu64 " RNR NAKs\n",
	       seed, (double)(p.now - 1000000) / 1e6, c0->submitted, c0->dropped, c0->duplicated,
	       c0->reordered, c0->corrupted, c1->submitted, c1->dropped,
	       (uint64_t)p.side[SENDER].qp->cnt.retransmits,
	       (uint64_t)p.side[SENDER].qp->cnt.timeouts,
	       (uint64_t)p.side[RECEIVER].qp->cnt.seq_naks_tx,
	       (uint64_t)p.side[RECEIVER].qp->cnt.rnr_naks_tx);
	h_pair_destroy(&p);
	free(st);
}

static void test_lossy_stream(void)
{
	static const uint64_t seeds[] = {1, 2, 3, 0xfeedface, 20240601};

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		stream_over_bad_link(seeds[i], STREAM_SLOTS, 0);
}

static void test_lossy_stream_rnr(void)
{
	stream_over_bad_link(6, 8, 200000);
	stream_over_bad_link(7, 8, 200000);
}

int main(void)
{
	h_group("send sizes 0..1 MiB, both directions", test_sizes);
	h_group("back-pressure from a full link", test_backpressure);
	h_group("send with immediate", test_immediate);
	h_group("gather 3 SGEs, scatter 4 SGEs", test_gather_scatter);
	h_group("unsignaled sends", test_unsignaled);
	h_group("inline sends", test_inline);
	h_group("receive too small: LOC_LEN_ERR / REM_INV_REQ_ERR, flush", test_recv_too_small);
	h_group("bad local SGE: LOC_PROT_ERR, nothing sent, flush", test_bad_lkey);
	h_group("modify_qp state machine and posting limits", test_modify_qp);
	h_group("RNR NAK then receive posted", test_rnr_recovers);
	h_group("RNR retries exhausted, rnr_retry 0..6", test_rnr_exhausted);
	h_group("peer gone: RETRY_EXC_ERR after retry_cnt timeouts", test_peer_gone);
	h_group("2000 SENDs over 10% loss, dup, reorder, corruption, 5 seeds", test_lossy_stream);
	h_group("the same with a slow receiver, 8 receives (RNR under loss), 2 seeds",
		test_lossy_stream_rnr);
	return h_exit_status();
}
