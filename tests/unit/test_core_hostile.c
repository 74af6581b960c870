/* SPDX-License-Identifier: MIT */
/*
 * Frames a third host on the segment (or a confused peer) sends into a
 * running exchange between two connected cores, forged with the core's own
 * builder so that the ICRC is right and only what they claim betrays them:
 * another source or destination address, a PSN outside the outstanding
 * window (ghost ACKs, NAKs, RNR NAKs, responses), a response of the wrong
 * kind for the request it claims to answer. Each is dropped, counted once
 * under its reason, and changes nothing: no completion, no ERR, no RNR
 * wait, not a byte in memory; the exchange then completes exactly as it
 * does without them.
 */
#include "ud_harness.h"

#define MTU 1024

static const union xr_gid no_gid;

static struct xr_path path_claiming(const struct h_pair *p, int from, const union xr_gid *sgid,
				    const union xr_gid *dgid, const uint8_t *dmac)
{
	struct xr_path path = h_path_from(p, from);

	if (memcmp(sgid, &no_gid, sizeof(*sgid)))
		path.sgid = *sgid;
	if (memcmp(dgid, &no_gid, sizeof(*dgid)))
		path.dgid = *dgid;
	if (dmac)
		memcpy(path.dmac, dmac, 6);
	return path;
}

static void ack_from(struct h_pair *p, int to, const struct xr_path *path, uint32_t psn)
{
	h_forge_response(p, to, path, XR_OP_RC_ACK, psn, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 0, 0,
			 0);
}

/* A WRITE_ONLY to side to's QP at psn, to va with rkey: what a guessed key would reach. */
static void forge_write(struct h_pair *p, int to, const struct xr_path *path, uint32_t psn,
			uint64_t va, uint32_t rkey, uint32_t len, uint8_t fill)
{
	struct h_forge f;

	if (!h_forge_begin(&f, path, XR_OP_RC_WRITE_ONLY, p->side[to].qp->pub.qp_num, psn, len,
			   fill))
		return;
	h_put64(f.out.ext, va);
	h_put32(f.out.ext + 8, rkey);
	h_put32(f.out.ext + 12, len);
	h_forge_deliver(p, to, &f);
}

static int post_rdma(struct h_pair *p, int s, uint64_t wr_id, enum xr_wr_opcode op,
		     struct xr_sge *sge, uint64_t remote, uint32_t rkey)
{
	struct xr_send_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = 1, .opcode = op};
	struct xr_send_wr *bad;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	return xr_core_post_send(p->side[s].qp, &wr, &bad);
}

static uint32_t last_sent(const struct xr_qp_impl *qp)
{
	return xr_psn_add(qp->snd_psn, XR_PSN_MASK);
}

/* Everything the engine of side s drops on what a frame claims, or for damage. */
static uint64_t all_drops(const struct h_pair *p, int s)
{
	const struct xr_engine_stats *st = &p->side[s].core->stats;

	return h_hostile_drops(p, s) + st->rx_unknown_qp + st->rx_bad_state + st->rx_bad_pkey +
	       st->rx_malformed + st->rx_bad_icrc;
}

/* ---- address binding ---------------------------------------------------- */

static void test_foreign_addresses(void)
{
	static const uint8_t other_mac[6] = {0x02, 0, 0, 0, 0, 0x77},
			     group_mac[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
	union xr_gid third = h_third_gid();
	struct h_qp_opts o = h_default_opts();
	const struct xr_engine_stats *st[2];
	struct xr_qp_impl *req, *resp;
	uint32_t len = 4 * MTU, epsn;
	struct h_buf *src, *dst;
	struct xr_path path;
	struct xr_sge sge;
	struct h_pair p;

	h_setup(&p, 31, 64, &o);
	req = p.side[0].qp;
	resp = p.side[1].qp;
	st[0] = &p.side[0].core->stats;
	st[1] = &p.side[1].core->stats;
	src = h_buf(&p, 0, len, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, 2 * len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	h_fill(src->base, len, 1);
	sge = h_sge(src, 0, len);
	CHECK(post_rdma(&p, 0, 1, XR_WR_RDMA_WRITE, &sge, (uintptr_t)dst->base, dst->mr->rkey) == 0,
	      "post WRITE");
	/* The WRITE is on the wire; its ACK has not come. */
	xr_core_progress(p.side[0].core, p.now);
	CHECK(req->snd_psn == xr_psn_add(o.sq_psn[0], 4), "4 packets sent");

	/* The ACK of all of it, but from a third host's IP, then to another IP, another MAC. */
	path = path_claiming(&p, 1, &third, &no_gid, NULL);
	ack_from(&p, 0, &path, last_sent(req));
	CHECK(st[0]->rx_bad_src == 1, "ACK from a third host's IP: rx_bad_src %llu",
	      (unsigned long long)st[0]->rx_bad_src);
	path = path_claiming(&p, 1, &no_gid, &third, NULL);
	ack_from(&p, 0, &path, last_sent(req));
	path = path_claiming(&p, 1, &no_gid, &no_gid, other_mac);
	ack_from(&p, 0, &path, last_sent(req));
	/* A group's MAC is for datagrams only. */
	path = path_claiming(&p, 1, &no_gid, &no_gid, group_mac);
	ack_from(&p, 0, &path, last_sent(req));
	CHECK(st[0]->rx_bad_dst == 3, "ACKs to another IP, MAC, a group MAC: rx_bad_dst %llu",
	      (unsigned long long)st[0]->rx_bad_dst);
	CHECK(req->acked_psn == xr_psn_add(o.sq_psn[0], XR_PSN_MASK), "nothing acknowledged");
	h_expect_no_wc(p.side[0].scq, "forged ACKs");

	/* A WRITE at the very PSN the responder expects, with the right key, from elsewhere. */
	epsn = resp->epsn;
	path = path_claiming(&p, 0, &third, &no_gid, NULL);
	forge_write(&p, 1, &path, epsn, (uintptr_t)dst->base + len, dst->mr->rkey, MTU, 0xee);
	path = path_claiming(&p, 0, &no_gid, &third, NULL);
	forge_write(&p, 1, &path, epsn, (uintptr_t)dst->base + len, dst->mr->rkey, MTU, 0xee);
	path = path_claiming(&p, 0, &no_gid, &no_gid, other_mac);
	forge_write(&p, 1, &path, epsn, (uintptr_t)dst->base + len, dst->mr->rkey, MTU, 0xee);
	CHECK(st[1]->rx_bad_src == 1 && st[1]->rx_bad_dst == 2,
	      "forged WRITEs: rx_bad_src %llu (want 1), rx_bad_dst %llu (want 2)",
	      (unsigned long long)st[1]->rx_bad_src, (unsigned long long)st[1]->rx_bad_dst);
	CHECK(resp->epsn == epsn && !resp->write_active, "the responder took none of them");
	CHECK(h_first_not(dst->base, 2 * len, 0) < 0, "nothing placed");
	/* Counted once, under their reasons only. */
	CHECK(all_drops(&p, 0) == 4 && all_drops(&p, 1) == 3,
	      "drops counted %llu + %llu times, want 4 + 3", (unsigned long long)all_drops(&p, 0),
	      (unsigned long long)all_drops(&p, 1));

	CHECK(h_settle(&p) == H_QUIET, "exchange settles");
	h_expect_wc(p.side[0].scq, "the real WRITE", 1, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, len, 1) < 0 && h_first_not(dst->base + len, len, 0) < 0,
	      "the WRITE's bytes, and only those");
	CHECK(req->pub.state == XR_QPS_RTS && resp->pub.state == XR_QPS_RTS, "both QPs in RTS");
	CHECK(all_drops(&p, 0) == 4 && all_drops(&p, 1) == 3, "the real frames all taken");
	h_pair_destroy(&p);
}

/* A datagram to a QPN of this host, but to an IP that is none of its GIDs. */
static void test_ud_destination(void)
{
	struct h_qp_opts o = h_default_opts();
	union xr_gid third = h_third_gid();
	struct xr_qp_impl *ud;
	struct h_buf *rbuf;
	struct xr_path path;
	struct h_forge f;
	struct xr_wc wc;
	struct h_pair p;

	h_setup(&p, 32, 64, &o);
	ud = ud_qp(&p, 1, 0x1111, p.side[1].rcq, true);
	rbuf = h_buf(&p, 1, 40 + MTU, XR_ACCESS_LOCAL_WRITE, 0);
	post_recv_buf(ud, rbuf, 40 + MTU, 7);
	for (int good = 0; good < 2; good++) {
		path = path_claiming(&p, 0, &no_gid, good ? &no_gid : &third, NULL);
		if (!h_forge_begin(&f, &path, XR_OP_UD_SEND_ONLY, ud->pub.qp_num, 1, 64, 0x5a))
			break;
		h_put32(f.out.bth + xr_deth_off(0), 0x1111);
		h_put32(f.out.bth + xr_deth_off(0) + 4, 0x42);
		h_forge_deliver(&p, 1, &f);
		if (!good) {
			CHECK(p.side[1].core->stats.rx_bad_dst == 1, "to a foreign IP: rx_bad_dst");
			h_expect_no_wc(p.side[1].rcq, "datagram to a foreign IP");
		}
	}
	/* The same datagram to this host's IP is taken: the check is the address alone. */
	CHECK(h_poll(p.side[1].rcq, &wc, 1) == 1 && wc.wr_id == 7 && wc.status == XR_WC_SUCCESS &&
		  wc.byte_len == 40 + 64,
	      "datagram to our IP received");
	CHECK(h_first_not(rbuf->base + 40, 64, 0x5a) < 0, "its payload");
	xr_core_destroy_qp(ud);
	h_pair_destroy(&p);
}

/* ---- ghosts ------------------------------------------------------------- */

static const uint8_t nak_codes[] = {XR_NAK_PSN_SEQ_ERR, XR_NAK_INVALID_REQUEST,
				    XR_NAK_REMOTE_ACCESS_ERR, XR_NAK_REMOTE_OP_ERR};

/*
 * Ghosts for side 0's QP from its peer's own addresses, at acked_psn, ahead
 * of anything sent and well behind: every NAK kind, an RNR NAK with the
 * longest timer (655 ms), and but at acked_psn a plain ACK, a READ response
 * and an ATOMIC ACK. Returns how many.
 */
static uint32_t inject_ghosts(struct h_pair *p)
{
	struct xr_path peer = h_path_from(p, 1);
	struct xr_qp_impl *qp = p->side[0].qp;
	uint32_t psns[] = {qp->acked_psn, qp->snd_psn, xr_psn_add(qp->snd_psn, 1000),
			   xr_psn_add(qp->acked_psn, XR_PSN_MASK - 5000)};
	uint32_t n = 0;

	for (size_t i = 0; i < sizeof(psns) / sizeof(psns[0]); i++) {
		for (size_t k = 0; k < sizeof(nak_codes); k++, n++)
			h_forge_response(p, 0, &peer, XR_OP_RC_ACK, psns[i],
					 XR_AETH_NAK | nak_codes[k], 0, 0, 0);
		h_forge_response(p, 0, &peer, XR_OP_RC_ACK, psns[i], XR_AETH_RNR_NAK | 0, 0, 0, 0);
		n++;
		/* The same ACK as the last one is a harmless duplicate, not a ghost. */
		if (psns[i] == qp->acked_psn)
			continue;
		ack_from(p, 0, &peer, psns[i]);
		h_forge_response(p, 0, &peer, XR_OP_RC_READ_RESPONSE_ONLY, psns[i], XR_AETH_ACK, 0,
				 MTU, 0xee);
		h_forge_response(p, 0, &peer, XR_OP_RC_ATOMIC_ACK, psns[i], XR_AETH_ACK, ~0ull, 0,
				 0);
		n += 3;
	}
	return n;
}

#define GHOST_WRITES 6
#define GHOST_LEN (4 * MTU)

struct ghost_run {
	bool forge;
	uint32_t completed, injected, injected_busy;
	uint64_t done_at;
};

static bool ghost_step(struct h_pair *p, void *arg)
{
	struct ghost_run *g = arg;
	struct xr_wc wc;

	while (h_poll(p->side[0].scq, &wc, 1) == 1) {
		CHECK(wc.status == XR_WC_SUCCESS && wc.wr_id == g->completed,
		      "completion %u: wr %" PRIu64 " %s", g->completed, wc.wr_id,
		      xr_wc_status_str(wc.status));
		g->completed++;
	}
	/* Mid-exchange: some WRITEs acknowledged, the others in flight. */
	if (g->forge && !g->injected_busy && g->completed &&
	    xr_psn_add(p->side[0].qp->acked_psn, 1) != p->side[0].qp->snd_psn)
		g->injected_busy = inject_ghosts(p);
	if (g->completed == GHOST_WRITES && !g->done_at)
		g->done_at = p->now;
	return g->completed == GHOST_WRITES;
}

/* The same exchange of WRITEs, with ghosts injected before, during and after it or not. */
static void ghost_exchange(struct ghost_run *g)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *src, *dst;
	struct xr_qp_impl *qp;
	struct h_pair p;
	uint64_t start;

	h_setup(&p, 33, 64, &o);
	/* A few frames per step: ACKs come in pieces, so there is a moment mid-exchange. */
	p.burst = 4;
	qp = p.side[0].qp;
	src = h_buf(&p, 0, GHOST_WRITES * GHOST_LEN, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, GHOST_WRITES * GHOST_LEN, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE,
		    0);
	h_fill(src->base, GHOST_WRITES * GHOST_LEN, 2);
	/* Nothing outstanding yet: no NAK can be about a request of ours. */
	if (g->forge)
		g->injected = inject_ghosts(&p);
	start = p.now;
	for (uint32_t i = 0; i < GHOST_WRITES; i++) {
		struct xr_sge sge = h_sge(src, (size_t)i * GHOST_LEN, GHOST_LEN);

		CHECK(post_rdma(&p, 0, i, XR_WR_RDMA_WRITE, &sge,
				(uintptr_t)dst->base + (size_t)i * GHOST_LEN, dst->mr->rkey) == 0,
		      "post WRITE %u", i);
	}
	CHECK(h_run(&p, p.now + 10ull * 1000000000ull, ghost_step, g) == H_DONE,
	      "the WRITEs complete");
	g->done_at -= start;
	CHECK(h_first_mismatch(dst->base, GHOST_WRITES * GHOST_LEN, 2) < 0, "every byte written");
	if (g->forge) {
		uint32_t after = inject_ghosts(&p);
		const struct xr_engine_stats *st = &p.side[0].core->stats;

		CHECK(g->injected_busy, "ghosts injected while WRITEs were in flight");
		g->injected += g->injected_busy + after;
		CHECK(st->rx_ghost_acks == g->injected, "rx_ghost_acks %llu, %u injected",
		      (unsigned long long)st->rx_ghost_acks, g->injected);
		CHECK(h_hostile_drops(&p, 0) == st->rx_ghost_acks, "no other reason counted");
		CHECK(st->rnr_naks_rx == 0 && st->seq_naks_rx == 0 && st->inv_req_naks_rx == 0 &&
			  st->rem_access_naks_rx == 0 && st->rem_op_naks_rx == 0 &&
			  st->timeouts == 0 && qp->cnt.retransmits == 0,
		      "no NAK believed, nothing resent");
	}
	CHECK(h_settle(&p) == H_QUIET, "settles");
	CHECK(qp->pub.state == XR_QPS_RTS && !qp->rnr_deadline && !qp->retry_deadline,
	      "QP in RTS, no RNR wait, no timer (state %d)", qp->pub.state);
	h_expect_no_wc(p.side[0].scq, "after the exchange");
	h_pair_destroy(&p);
}

static void test_ghosts(void)
{
	struct ghost_run clean = {.forge = false}, forged = {.forge = true};

	ghost_exchange(&clean);
	ghost_exchange(&forged);
	CHECK(forged.done_at == clean.done_at,
	      "with ghosts the WRITEs took %" PRIu64 " ns, without %" PRIu64 " ns", forged.done_at,
	      clean.done_at);
}

/* ---- responses of the wrong kind ---------------------------------------- */

static void test_atomic_ack_for_write(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_impl *qp;
	struct h_buf *src, *dst;
	struct xr_path peer;
	struct xr_sge sge;
	struct h_pair p;
	uint32_t acked;

	h_setup(&p, 34, 64, &o);
	qp = p.side[0].qp;
	peer = h_path_from(&p, 1);
	src = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, 64, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	h_fill(src->base, 64, 3);
	sge = h_sge(src, 0, 64);
	CHECK(post_rdma(&p, 0, 5, XR_WR_RDMA_WRITE, &sge, (uintptr_t)dst->base, dst->mr->rkey) == 0,
	      "post WRITE");
	xr_core_progress(p.side[0].core, p.now);
	acked = qp->acked_psn;
	/* At the WRITE's own PSN, the next response expected. */
	h_forge_response(&p, 0, &peer, XR_OP_RC_ATOMIC_ACK, last_sent(qp), XR_AETH_ACK,
			 0x4141414141414141ull, 0, 0);
	CHECK(p.side[0].core->stats.rx_bad_response == 1, "rx_bad_response %llu",
	      (unsigned long long)p.side[0].core->stats.rx_bad_response);
	CHECK(qp->acked_psn == acked, "not acknowledged");
	h_expect_no_wc(p.side[0].scq, "ATOMIC ACK for a WRITE");
	CHECK(h_first_mismatch(src->base, 64, 3) < 0, "source buffer unchanged");
	CHECK(h_settle(&p) == H_QUIET, "settles");
	h_expect_wc(p.side[0].scq, "the WRITE", 5, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, 64, 3) < 0 && h_first_mismatch(src->base, 64, 3) < 0,
	      "written, source intact");
	h_pair_destroy(&p);
}

/* READ responses out of place, for a READ of three packets, then its real ones. */
static void test_read_response_order(void)
{
	struct h_qp_opts o = h_default_opts();
	uint32_t len = 3 * MTU, first, acked;
	const struct xr_engine_stats *st;
	struct h_buf *rsrc, *rdst;
	struct xr_qp_impl *qp;
	struct xr_path peer;
	struct xr_sge sge;
	struct h_pair p;
	const struct {
		uint8_t opcode;
		uint32_t n; /* packet of the READ */
	} wrong[] = {
	    {XR_OP_RC_READ_RESPONSE_MIDDLE, 0}, {XR_OP_RC_READ_RESPONSE_LAST, 0},
	    {XR_OP_RC_READ_RESPONSE_ONLY, 0},	{XR_OP_RC_READ_RESPONSE_FIRST, 1},
	    {XR_OP_RC_READ_RESPONSE_LAST, 1},	{XR_OP_RC_READ_RESPONSE_MIDDLE, 2},
	    {XR_OP_RC_ATOMIC_ACK, 0},
	};

	h_setup(&p, 35, 64, &o);
	qp = p.side[0].qp;
	st = &p.side[0].core->stats;
	peer = h_path_from(&p, 1);
	rsrc = h_buf(&p, 1, len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ, 0);
	rdst = h_buf(&p, 0, len, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(rsrc->base, len, 4);
	sge = h_sge(rdst, 0, len);
	CHECK(post_rdma(&p, 0, 6, XR_WR_RDMA_READ, &sge, (uintptr_t)rsrc->base, rsrc->mr->rkey) ==
		  0,
	      "post READ");
	xr_core_progress(p.side[0].core, p.now);
	first = xr_psn_add(qp->snd_psn, XR_PSN_MASK - 2);
	acked = qp->acked_psn;
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
		h_forge_response(&p, 0, &peer, wrong[i].opcode, xr_psn_add(first, wrong[i].n),
				 XR_AETH_ACK, ~0ull, MTU, 0xee);
	/* A READ is acknowledged by its responses: a plain ACK never stops inside one. */
	ack_from(&p, 0, &peer, first);
	ack_from(&p, 0, &peer, xr_psn_add(first, 1));
	CHECK(st->rx_bad_response == sizeof(wrong) / sizeof(wrong[0]) + 2,
	      "rx_bad_response %llu, want %zu", (unsigned long long)st->rx_bad_response,
	      sizeof(wrong) / sizeof(wrong[0]) + 2);
	CHECK(qp->acked_psn == acked && qp->pub.state == XR_QPS_RTS, "nothing taken, QP in RTS");
	CHECK(h_first_not(rdst->base, len, 0) < 0, "nothing placed");
	h_expect_no_wc(p.side[0].scq, "wrong READ responses");
	CHECK(h_settle(&p) == H_QUIET, "settles");
	h_expect_wc(p.side[0].scq, "the READ", 6, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(h_first_mismatch(rdst->base, len, 4) < 0, "every byte read");
	CHECK(st->rx_bad_response == sizeof(wrong) / sizeof(wrong[0]) + 2,
	      "the real responses all fit");
	h_pair_destroy(&p);
}

/* READ responses for a compare-and-swap, and an RNR NAK for a WRITE (that takes no receive). */
static void test_response_for_other_kind(void)
{
	struct h_qp_opts o = h_default_opts();
	struct h_buf *word, *res, *src, *dst;
	struct xr_send_wr wr = {.wr_id = 8, .num_sge = 1, .opcode = XR_WR_ATOMIC_CMP_AND_SWP};
	const struct xr_engine_stats *st;
	struct xr_send_wr *bad;
	struct xr_qp_impl *qp;
	uint64_t v = 41, got, start;
	struct xr_path peer;
	struct xr_sge sge;
	struct h_pair p;

	o.rd_atomic = 1;
	h_setup(&p, 36, 64, &o);
	h_allow_atomics(&p);
	qp = p.side[0].qp;
	st = &p.side[0].core->stats;
	peer = h_path_from(&p, 1);
	word = h_buf(&p, 1, 8, H_REMOTE_ALL, 0);
	memcpy(word->base, &v, 8);
	res = h_buf(&p, 0, 8, XR_ACCESS_LOCAL_WRITE, 0x33);
	sge = h_sge(res, 0, 8);
	wr.sg_list = &sge;
	wr.wr.atomic.remote_addr = (uintptr_t)word->base;
	wr.wr.atomic.rkey = word->mr->rkey;
	wr.wr.atomic.compare_add = 41;
	wr.wr.atomic.swap = 42;
	CHECK(xr_core_post_send(qp, &wr, &bad) == 0, "post CAS");
	xr_core_progress(p.side[0].core, p.now);
	h_forge_response(&p, 0, &peer, XR_OP_RC_READ_RESPONSE_LAST, last_sent(qp), XR_AETH_ACK, 0,
			 8, 0xee);
	h_forge_response(&p, 0, &peer, XR_OP_RC_READ_RESPONSE_ONLY, last_sent(qp), XR_AETH_ACK, 0,
			 8, 0xee);
	CHECK(st->rx_bad_response == 2, "READ responses for a CAS: rx_bad_response %llu",
	      (unsigned long long)st->rx_bad_response);
	CHECK(h_first_not(res->base, 8, 0x33) < 0, "result buffer untouched");
	CHECK(h_settle(&p) == H_QUIET, "settles");
	h_expect_wc(p.side[0].scq, "the CAS", 8, XR_WC_SUCCESS, XR_WC_COMP_SWAP);
	memcpy(&got, res->base, 8);
	memcpy(&v, word->base, 8);
	CHECK(got == 41 && v == 42, "CAS returned %" PRIu64 " (want 41), word %" PRIu64, got, v);

	src = h_buf(&p, 0, 2 * MTU, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, 2 * MTU, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	h_fill(src->base, 2 * MTU, 5);
	sge = h_sge(src, 0, 2 * MTU);
	CHECK(post_rdma(&p, 0, 9, XR_WR_RDMA_WRITE, &sge, (uintptr_t)dst->base, dst->mr->rkey) == 0,
	      "post WRITE");
	xr_core_progress(p.side[0].core, p.now);
	start = p.now;
	/* In the window, but a WRITE without immediate never waits for a receive. */
	h_forge_response(&p, 0, &peer, XR_OP_RC_ACK, last_sent(qp), XR_AETH_RNR_NAK | 0, 0, 0, 0);
	CHECK(st->rx_bad_response == 3 && !qp->rnr_deadline && st->rnr_naks_rx == 0,
	      "RNR NAK for a WRITE: rx_bad_response %llu, rnr wait %" PRIu64,
	      (unsigned long long)st->rx_bad_response, qp->rnr_deadline);
	CHECK(h_settle(&p) == H_QUIET, "settles");
	h_expect_wc(p.side[0].scq, "the WRITE", 9, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(dst->base, 2 * MTU, 5) < 0, "written");
	CHECK(p.now - start < 1000000, "no stall: %" PRIu64 " ns", p.now - start);
	h_pair_destroy(&p);
}

/* ---- message size ------------------------------------------------------- */

static void test_max_msg_sz(void)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_impl *qp;
	struct xr_sge sge[2];
	struct h_buf *buf;
	struct h_pair p;
	uint32_t head;

	h_setup(&p, 37, 64, &o);
	qp = p.side[0].qp;
	buf = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 0);
	head = qp->sq_head;
	/* Posting checks lengths, not memory: nothing of this is ever sent. */
	sge[0] = h_sge(buf, 0, XR_MAX_MSG_SZ / 2);
	sge[1] = h_sge(buf, 0, XR_MAX_MSG_SZ / 2 + 1);
	CHECK(h_post_send(&p, 0, 1, sge, 2, XR_WR_SEND, 0, 0) == -EINVAL,
	      "a SEND of max_msg_sz + 1 bytes: EINVAL");
	CHECK(qp->sq_head == head, "not queued");
	sge[1].length = XR_MAX_MSG_SZ / 2;
	CHECK(h_post_send(&p, 0, 2, sge, 2, XR_WR_SEND, 0, 0) == 0 && qp->sq_head == head + 1,
	      "a SEND of max_msg_sz bytes: posted");
	sge[1].length = XR_MAX_MSG_SZ + 1;
	CHECK(post_rdma(&p, 0, 3, XR_WR_RDMA_READ, &sge[1], 0, 0) == -EINVAL,
	      "a READ of max_msg_sz + 1 bytes: EINVAL");
	CHECK(qp->sq_head == head + 1 && qp->pub.state == XR_QPS_RTS,
	      "the refused WRs left no trace");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("frames from a third host's IP, to another IP or MAC: dropped by reason",
		test_foreign_addresses);
	h_group("datagram to an IP not of this device: dropped", test_ud_destination);
	h_group("ghost ACKs, NAKs, RNR NAKs, responses: dropped, no stall", test_ghosts);
	h_group("ATOMIC ACK for a WRITE: dropped, source intact", test_atomic_ack_for_write);
	h_group("READ responses out of order, ACK inside a READ: dropped",
		test_read_response_order);
	h_group("READ response for a CAS, RNR NAK for a WRITE: dropped",
		test_response_for_other_kind);
	h_group("a WR longer than max_msg_sz is refused", test_max_msg_sz);
	return h_exit_status();
}
