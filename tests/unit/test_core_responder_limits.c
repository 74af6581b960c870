/* SPDX-License-Identifier: MIT */
/*
 * The responder's resources against a peer that asks too much: a READ or
 * WRITE longer than max_msg_sz, READs and atomics beyond max_dest_rd_atomic
 * (none at all with 0), a storm of duplicates of one READ, and new requests
 * while a saved response is still going out. Requests are forged as side
 * 0's QP would send them and handed to side 1's core; every READ response
 * side 1 sends is checked byte by byte against the memory it answers for.
 */
#include "core_harness.h"

#define MTU 1024
#define REQ 0
#define RSP 1
/* What xr_responder_run may send per QP and round (responder.c). */
#define ROUND_FRAMES 64
#define STORM 100
#define MAX_READS 4

static const int remote_all = H_REMOTE_ALL;

/* A READ side 1 answers: its PSNs and the bytes each response must carry. */
struct read_expect {
	uint32_t first_psn, npkts, len;
	const uint8_t *src;
	uint32_t frames; /* responses seen */
};

/* What side 1 sent to one QP of side 0. */
struct watch {
	uint32_t dqpn;
	struct read_expect reads[MAX_READS];
	int nreads;
	uint32_t read_frames, bad_frames, first_psn_frames;
	uint32_t naks[5], atomic_acks;
	uint32_t round_frames, max_round_frames; /* READ responses and atomic ACKs per round */
};

static struct read_expect *expect_read(struct watch *w, uint32_t psn, const struct h_buf *src,
				       uint32_t off, uint32_t len)
{
	struct read_expect *r = &w->reads[w->nreads++];

	*r = (struct read_expect){.first_psn = psn & XR_PSN_MASK,
				  .npkts = len ? (len + MTU - 1) / MTU : 1,
				  .len = len,
				  .src = src->base + off};
	return r;
}

static void check_read_response(struct watch *w, const struct xr_pkt *pkt)
{
	for (int i = 0; i < w->nreads; i++) {
		struct read_expect *r = &w->reads[i];
		int32_t n = xr_psn_diff(pkt->psn, r->first_psn);
		uint32_t off, want;

		if (n < 0 || (uint32_t)n >= r->npkts)
			continue;
		off = (uint32_t)n * MTU;
		want = r->len - off < MTU ? r->len - off : MTU;
		if (pkt->payload_len != want || memcmp(pkt->payload, r->src + off, want) ||
		    !(pkt->opflags & XR_OPF_LAST) != ((uint32_t)n + 1 < r->npkts))
			w->bad_frames++;
		r->frames++;
		w->first_psn_frames += n == 0;
		return;
	}
	w->bad_frames++; /* a response for a PSN no READ asked for */
}

static void watch_frames(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct watch *w = arg;
	struct xr_pkt pkt;

	if (from != RSP || xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK || pkt.dqpn != w->dqpn)
		return;
	if (pkt.opflags & XR_OPF_READ) {
		w->read_frames++;
		w->round_frames++;
		check_read_response(w, &pkt);
	} else if (pkt.opcode == XR_OP_RC_ATOMIC_ACK) {
		w->atomic_acks++;
		w->round_frames++;
	} else if (pkt.opcode == XR_OP_RC_ACK &&
		   (pkt.aeth_syndrome & XR_AETH_TYPE_MASK) == XR_AETH_NAK &&
		   (pkt.aeth_syndrome & XR_AETH_VALUE_MASK) < 5) {
		w->naks[pkt.aeth_syndrome & XR_AETH_VALUE_MASK]++;
	}
}

/* Ends side 1's engine round: what it sends from now on counts for the next. */
static void end_round(struct h_pair *p, struct watch *w)
{
	xr_core_progress(p->side[RSP].core, p->now);
	if (w->round_frames > w->max_round_frames)
		w->max_round_frames = w->round_frames;
	w->round_frames = 0;
	p->now += H_NS_PER_STEP;
}

/*
 * Rounds of side 1 alone until it sends nothing more (bounded): the round
 * under way may have spent its budget on receiving, so a quiet round counts
 * only after another one.
 */
static void drain(struct h_pair *p, struct watch *w)
{
	for (int i = 0, quiet = 0; i < 100000 && quiet < 2; i++) {
		uint32_t before = w->read_frames + w->atomic_acks;

		end_round(p, w);
		quiet = w->read_frames + w->atomic_acks == before ? quiet + 1 : 0;
	}
}

/* Hands side 1 a request as QP from (side 0) would send it to QP to. */
static void inject(struct h_pair *p, const struct xr_qp_impl *from, const struct xr_qp_impl *to,
		   uint8_t opcode, uint32_t psn, const uint8_t *ext, uint32_t ext_len,
		   uint32_t payload_len)
{
	struct h_forge f;

	if (!h_forge_begin(&f, &from->path, opcode, to->pub.qp_num, psn, payload_len, 0x5a))
		return;
	memcpy(f.out.ext, ext, ext_len);
	h_forge_deliver(p, RSP, &f);
}

static void reth(uint8_t ext[XR_RETH_SIZE], uint64_t va, uint32_t rkey, uint32_t len)
{
	h_put64(ext, va);
	h_put32(ext + 8, rkey);
	h_put32(ext + 12, len);
}

static void inject_read(struct h_pair *p, uint32_t psn, const struct h_buf *src, uint32_t off,
			uint32_t len)
{
	uint8_t ext[XR_RETH_SIZE];

	reth(ext, (uintptr_t)src->base + off, src->mr->rkey, len);
	inject(p, p->side[REQ].qp, p->side[RSP].qp, XR_OP_RC_READ_REQUEST, psn, ext, sizeof(ext),
	       0);
}

/* Connects the harness pair, side 1 keeping dest_rd_atomic responder resources. */
static void setup(struct h_pair *p, uint64_t seed, uint8_t dest_rd_atomic, struct watch *w)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_attr a;
	int err = h_pair_init(p, seed, 1024);

	o.rd_atomic = 1;
	for (int s = 0; s < 2 && !err; s++)
		err = h_create_qp(p, s, &o);
	for (int s = 0; s < 2 && !err; s++) {
		err = h_to_init(p, s);
		a = h_rtr_attr(p, s, &o);
		if (s == RSP)
			a.max_dest_rd_atomic = dest_rd_atomic;
		if (!err)
			err = xr_core_modify_qp(p->side[s].qp, &a, H_RTR_MASK, p->side[1 - s].mac);
		if (!err)
			err = h_to_rts(p, s, &o);
	}
	if (err) {
		fprintf(stderr, "test fixture: cannot connect: %s\n", strerror(-err));
		exit(2);
	}
	h_allow_atomics(p);
	memset(w, 0, sizeof(*w));
	w->dqpn = p->side[REQ].qp->pub.qp_num;
	xr_mem_link_set_tap(&p->link, watch_frames, w);
}

/* ---- max_msg_sz --------------------------------------------------------- */

static void read_of_length(uint32_t len, uint8_t want_nak, const char *what)
{
	struct h_pair p;
	struct watch w;
	struct h_buf *src;
	struct xr_qp_impl *qp;

	setup(&p, 31, 1, &w);
	qp = p.side[RSP].qp;
	src = h_buf(&p, RSP, 64 * 1024, remote_all, 0x77);
	inject_read(&p, qp->epsn, src, 0, len);
	drain(&p, &w);
	CHECK(w.naks[want_nak] == 1 && qp->pub.state == XR_QPS_ERR,
	      "%s: NAK %u sent %u times, state %d", what, want_nak, w.naks[want_nak],
	      qp->pub.state);
	CHECK(w.read_frames == 0, "%s: %u READ responses sent", what, w.read_frames);
	if (want_nak == XR_NAK_INVALID_REQUEST)
		CHECK(qp->cnt.inv_req_naks_tx == 1 && p.side[RSP].core->stats.inv_req_naks_tx == 1,
		      "%s: counted as invalid request NAK", what);
	h_pair_destroy(&p);
}

static void test_read_longer_than_max_msg_sz(void)
{
	/* Checked before the key: against a 64 KiB MR the length alone decides. */
	read_of_length(1u << 31, XR_NAK_INVALID_REQUEST, "READ of 2 GiB");
	read_of_length(XR_MAX_MSG_SZ + 1, XR_NAK_INVALID_REQUEST, "READ of 1 GiB + 1");
	read_of_length(UINT32_MAX, XR_NAK_INVALID_REQUEST, "READ of 4 GiB - 1");
	read_of_length(XR_MAX_MSG_SZ, XR_NAK_REMOTE_ACCESS_ERR, "READ of 1 GiB past the MR");
}

static void test_write_longer_than_max_msg_sz(void)
{
	struct h_pair p;
	struct watch w;
	struct h_buf *dst;
	struct xr_qp_impl *qp;
	uint8_t ext[XR_RETH_SIZE];

	setup(&p, 32, 1, &w);
	qp = p.side[RSP].qp;
	dst = h_buf(&p, RSP, 4 * MTU, remote_all, 0);
	reth(ext, (uintptr_t)dst->base, dst->mr->rkey, XR_MAX_MSG_SZ + 1);
	inject(&p, p.side[REQ].qp, qp, XR_OP_RC_WRITE_FIRST, qp->epsn, ext, sizeof(ext), MTU);
	CHECK(w.naks[XR_NAK_INVALID_REQUEST] == 1 && qp->pub.state == XR_QPS_ERR,
	      "WRITE_FIRST of 1 GiB + 1: invalid request NAK (%u), ERR (state %d)",
	      w.naks[XR_NAK_INVALID_REQUEST], qp->pub.state);
	CHECK(h_first_not(dst->base, 4 * MTU, 0) < 0, "nothing of the WRITE placed");
	h_pair_destroy(&p);
}

/* ---- max_dest_rd_atomic ------------------------------------------------- */

static int post_wr(struct h_pair *p, uint64_t wr_id, struct xr_sge *sge, enum xr_wr_opcode op,
		   const struct h_buf *remote)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;

	if (xr_wr_is_atomic(op)) {
		wr.wr.atomic.remote_addr = (uintptr_t)remote->base;
		wr.wr.atomic.rkey = remote->mr->rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)remote->base;
		wr.wr.rdma.rkey = remote->mr->rkey;
	}
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

/* A requester allowed one READ/atomic in flight, a responder that keeps none. */
static void refused_without_resources(enum xr_wr_opcode op, const char *what)
{
	struct h_pair p;
	struct watch w;
	struct h_buf *remote, *local;
	struct xr_sge sge;

	setup(&p, 33, 0, &w);
	remote = h_buf(&p, RSP, 4096, remote_all, 0x3c);
	local = h_buf(&p, REQ, 4096, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(local, 0, xr_wr_is_atomic(op) ? 8 : 4096);
	CHECK(post_wr(&p, 1, &sge, op, remote) == 0, "%s: post", what);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, what, 1, XR_WC_REM_INV_REQ_ERR, 0);
	CHECK(w.naks[XR_NAK_INVALID_REQUEST] == 1 && p.side[RSP].qp->cnt.inv_req_naks_tx == 1,
	      "%s: one invalid request NAK (%u)", what, w.naks[XR_NAK_INVALID_REQUEST]);
	CHECK(w.read_frames == 0 && w.atomic_acks == 0, "%s: %u READ responses, %u atomic ACKs",
	      what, w.read_frames, w.atomic_acks);
	CHECK(h_first_not(remote->base, 4096, 0x3c) < 0 && h_first_not(local->base, 4096, 0) < 0,
	      "%s: no byte changed on either side", what);
	h_pair_destroy(&p);
}

static void test_max_dest_rd_atomic_zero(void)
{
	refused_without_resources(XR_WR_RDMA_READ, "READ, max_dest_rd_atomic 0");
	refused_without_resources(XR_WR_ATOMIC_FETCH_AND_ADD, "FAA, max_dest_rd_atomic 0");
	refused_without_resources(XR_WR_ATOMIC_CMP_AND_SWP, "CAS, max_dest_rd_atomic 0");
}

/* A second READ while the first one's responses are still going out, one resource. */
static void test_beyond_max_dest_rd_atomic(void)
{
	const uint32_t a_len = 200 * MTU;
	struct h_pair p;
	struct watch w;
	struct h_buf *src;
	struct xr_qp_impl *qp;
	uint32_t psn;

	setup(&p, 34, 1, &w);
	qp = p.side[RSP].qp;
	src = h_buf(&p, RSP, a_len + 4 * MTU, remote_all, 0);
	h_fill(src->base, src->len, 1);
	psn = qp->epsn;
	expect_read(&w, psn, src, 0, a_len);
	expect_read(&w, psn + 200, src, a_len, 4 * MTU);
	inject_read(&p, psn, src, 0, a_len);
	CHECK(w.read_frames == ROUND_FRAMES, "the first READ's first round: %u responses",
	      w.read_frames);
	inject_read(&p, psn + 200, src, a_len, 4 * MTU);
	drain(&p, &w);
	CHECK(w.naks[XR_NAK_INVALID_REQUEST] == 1 && qp->pub.state == XR_QPS_ERR,
	      "responder resources exceeded: invalid request NAK (%u), ERR (state %d)",
	      w.naks[XR_NAK_INVALID_REQUEST], qp->pub.state);
	CHECK(w.reads[1].frames == 0, "the second READ got %u responses", w.reads[1].frames);
	CHECK(w.bad_frames == 0 && w.reads[0].frames == ROUND_FRAMES,
	      "%u responses of the first READ went out, %u of them wrong", w.reads[0].frames,
	      w.bad_frames);
	h_pair_destroy(&p);
}

/* ---- saved responses while they are being sent ---------------------------- */

/* Two resources: a READ arriving while the first is still being sent waits its turn. */
static void test_new_read_while_sending(void)
{
	const uint32_t a_len = 200 * MTU, b_len = 3 * MTU - 100;
	struct h_pair p;
	struct watch w;
	struct h_buf *src;
	struct xr_qp_impl *qp;
	uint32_t psn;

	setup(&p, 35, 2, &w);
	qp = p.side[RSP].qp;
	src = h_buf(&p, RSP, a_len + b_len, remote_all, 0);
	h_fill(src->base, src->len, 2);
	psn = qp->epsn;
	expect_read(&w, psn, src, 0, a_len);
	expect_read(&w, psn + 200, src, a_len, b_len);
	inject_read(&p, psn, src, 0, a_len);
	inject_read(&p, psn + 200, src, a_len, b_len);
	drain(&p, &w);
	CHECK(qp->pub.state == XR_QPS_RTS && w.naks[XR_NAK_INVALID_REQUEST] == 0,
	      "two READs in two resources: accepted (state %d)", qp->pub.state);
	CHECK(w.reads[0].frames == 200 && w.reads[1].frames == 3 && w.bad_frames == 0,
	      "first READ %u of 200 responses, second %u of 3, %u wrong", w.reads[0].frames,
	      w.reads[1].frames, w.bad_frames);
	CHECK(w.max_round_frames == ROUND_FRAMES, "at most %u responses per round (%u)",
	      ROUND_FRAMES, w.max_round_frames);
	h_pair_destroy(&p);
}

/*
 * A duplicate restarts the oldest READ's responses; a new READ then takes
 * that resource. The requester has the old READ complete (it could not have
 * sent the new one otherwise): the replay stops, whole frames only, and the
 * new READ's bytes are its own.
 */
static void test_new_read_during_replay(void)
{
	const uint32_t a_len = 200 * MTU, b_len = 2 * MTU, c_len = 3 * MTU;
	struct h_pair p;
	struct watch w;
	struct h_buf *src;
	struct xr_qp_impl *qp;
	uint32_t psn;

	setup(&p, 36, 2, &w);
	qp = p.side[RSP].qp;
	src = h_buf(&p, RSP, a_len + b_len + c_len, remote_all, 0);
	h_fill(src->base, src->len, 3);
	psn = qp->epsn;
	expect_read(&w, psn, src, 0, a_len);
	expect_read(&w, psn + 200, src, a_len, b_len);
	expect_read(&w, psn + 202, src, a_len + b_len, c_len);
	inject_read(&p, psn, src, 0, a_len);
	drain(&p, &w);
	inject_read(&p, psn + 200, src, a_len, b_len);
	end_round(&p, &w);
	inject_read(&p, psn, src, 0, a_len); /* the duplicate */
	CHECK(w.reads[0].frames == 200 + ROUND_FRAMES, "replay under way: %u responses of 200",
	      w.reads[0].frames - 200);
	inject_read(&p, psn + 202, src, a_len + b_len, c_len);
	drain(&p, &w);
	CHECK(qp->pub.state == XR_QPS_RTS && w.naks[XR_NAK_INVALID_REQUEST] == 0,
	      "the new READ is accepted (state %d)", qp->pub.state);
	CHECK(w.reads[0].frames == 200 + ROUND_FRAMES,
	      "the replay stopped: %u responses sent again", w.reads[0].frames - 200);
	CHECK(w.reads[1].frames == 2 && w.reads[2].frames == 3 && w.bad_frames == 0,
	      "READ 2: %u of 2, READ 3: %u of 3 responses, %u wrong", w.reads[1].frames,
	      w.reads[2].frames, w.bad_frames);
	h_pair_destroy(&p);
}

/* ---- duplicates ---------------------------------------------------------- */

/* Posts a READ of len bytes of remote into local on side 0's QP qp; returns its PSN. */
static uint32_t post_read(struct xr_qp_impl *qp, uint64_t wr_id, const struct h_buf *local,
			  uint32_t off, const struct h_buf *remote, uint32_t len)
{
	struct xr_sge sge = h_sge(local, off, len);
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_RDMA_READ,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;
	uint32_t psn = qp->snd_psn;

	wr.wr.rdma.remote_addr = (uintptr_t)remote->base + off;
	wr.wr.rdma.rkey = remote->mr->rkey;
	CHECK(xr_core_post_send(qp, &wr, &bad) == 0, "post READ %" PRIu64, wr_id);
	return psn;
}

/* A READ done, then STORM copies of its request in one round: one replay. */
static void test_duplicate_storm(void)
{
	const uint32_t len = 4 * MTU;
	struct h_pair p;
	struct watch w;
	struct h_buf *src, *dst;
	struct xr_core *rsp;
	uint32_t psn;
	uint64_t dups;

	setup(&p, 37, 1, &w);
	rsp = p.side[RSP].core;
	src = h_buf(&p, RSP, len, remote_all, 0);
	dst = h_buf(&p, REQ, len, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(src->base, len, 4);
	psn = post_read(p.side[REQ].qp, 1, dst, 0, src, len);
	expect_read(&w, psn, src, 0, len);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ", 1, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(w.reads[0].frames == 4, "READ: %u responses", w.reads[0].frames);
	dups = p.side[RSP].qp->cnt.dup_requests;

	for (int i = 0; i < STORM; i++)
		inject_read(&p, psn, src, 0, len);
	CHECK(w.reads[0].frames == 8, "%d duplicates in one round: %u responses sent again", STORM,
	      w.reads[0].frames - 4);
	CHECK(rsp->stats.rx_dup_deferred == STORM - 1, "rx_dup_deferred %" PRIu64 " (want %d)",
	      (uint64_t)rsp->stats.rx_dup_deferred, STORM - 1);
	CHECK(p.side[RSP].qp->cnt.dup_requests - dups == STORM, "dup_requests counted %" PRIu64,
	      (uint64_t)(p.side[RSP].qp->cnt.dup_requests - dups));
	/* Only the last response, asked for again: from its PSN, in the same round. */
	inject_read(&p, psn + 3, src, 0, len);
	CHECK(w.reads[0].frames == 8 && rsp->stats.rx_dup_deferred == STORM,
	      "a second duplicate in the same round is deferred");
	end_round(&p, &w);
	inject_read(&p, psn + 3, src, 0, len);
	CHECK(w.reads[0].frames == 9 && rsp->stats.rx_dup_deferred == STORM,
	      "next round: the last response replayed (%u responses)", w.reads[0].frames);
	inject_read(&p, psn, src, 0, len);
	CHECK(w.reads[0].frames == 9, "and only once in that round");
	end_round(&p, &w);
	inject_read(&p, psn, src, 0, len);
	CHECK(w.reads[0].frames == 13 && w.bad_frames == 0,
	      "the round after: the whole READ again (%u responses, %u wrong)", w.reads[0].frames,
	      w.bad_frames);
	CHECK(p.side[RSP].qp->pub.state == XR_QPS_RTS, "the responder stays in RTS");
	h_pair_destroy(&p);
}

/* An atomic's duplicates: its saved result once per round, the target changed once. */
static void test_duplicate_atomic_storm(void)
{
	struct h_pair p;
	struct watch w;
	struct h_buf *target, *local;
	struct xr_sge sge;
	struct xr_core *rsp;
	uint8_t ext[XR_ATMETH_SIZE];
	uint64_t value;
	uint32_t psn;

	setup(&p, 38, 1, &w);
	rsp = p.side[RSP].core;
	target = h_buf(&p, RSP, 8, remote_all, 0);
	local = h_buf(&p, REQ, 8, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(local, 0, 8);
	psn = p.side[REQ].qp->snd_psn;
	CHECK(post_wr(&p, 1, &sge, XR_WR_ATOMIC_FETCH_AND_ADD, target) == 0, "post FAA");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "FAA", 1, XR_WC_SUCCESS, XR_WC_FETCH_ADD);
	h_put64(ext, (uintptr_t)target->base);
	h_put32(ext + 8, target->mr->rkey);
	h_put64(ext + 12, 5);
	h_put64(ext + 20, 0);
	for (int i = 0; i < STORM; i++)
		inject(&p, p.side[REQ].qp, p.side[RSP].qp, XR_OP_RC_FETCH_ADD, psn, ext,
		       sizeof(ext), 0);
	memcpy(&value, target->base, 8);
	CHECK(w.atomic_acks == 2 && rsp->stats.rx_dup_deferred == STORM - 1 && value == 5,
	      "%d duplicate FAAs: %u atomic ACKs (want 2), %" PRIu64 " deferred, target %" PRIu64,
	      STORM, w.atomic_acks, (uint64_t)rsp->stats.rx_dup_deferred, value);
	h_pair_destroy(&p);
}

/*
 * A storm of duplicates of a 1 MiB READ, every round, on QP A, while QP B
 * on the same two cores reads through the same link: A's responses stay
 * within the per-round budget, every duplicate beyond one replay at a time
 * is deferred, and B completes with every byte right.
 */
static void test_storm_leaves_room_for_others(void)
{
	const uint32_t a_len = 1u << 20, b_len = 8 * MTU;
	const int b_reads = 32;
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_impl *a[2], *b[2];
	struct h_buf *a_src, *a_dst, *b_src, *b_dst;
	struct h_pair p;
	struct watch w = {0};
	uint64_t injected = 0;
	uint32_t a_psn;
	int b_done = 0, b_bad = 0, rounds = 0;

	o.rd_atomic = 4;
	h_setup(&p, 39, 256, &o);
	for (int s = 0; s < 2; s++)
		a[s] = p.side[s].qp;
	/* B: a second pair, connected with the harness's steps on the same cores. */
	CHECK(h_create_qp(&p, 0, &o) == 0 && h_create_qp(&p, 1, &o) == 0, "create QP B");
	for (int s = 0; s < 2; s++)
		CHECK(h_to_init(&p, s) == 0 && h_to_rtr(&p, s, &o) == 0 && h_to_rts(&p, s, &o) == 0,
		      "connect QP B side %d", s);
	for (int s = 0; s < 2; s++) {
		b[s] = p.side[s].qp;
		p.side[s].qp = a[s];
	}
	a_src = h_buf(&p, RSP, a_len, remote_all, 0);
	a_dst = h_buf(&p, REQ, a_len, XR_ACCESS_LOCAL_WRITE, 0);
	b_src = h_buf(&p, RSP, (size_t)b_reads * b_len, remote_all, 0);
	b_dst = h_buf(&p, REQ, (size_t)b_reads * b_len, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(a_src->base, a_len, 5);
	h_fill(b_src->base, b_src->len, 6);

	w.dqpn = a[REQ]->pub.qp_num;
	a_psn = post_read(a[REQ], 1, a_dst, 0, a_src, a_len);
	expect_read(&w, a_psn, a_src, 0, a_len);
	xr_mem_link_set_tap(&p.link, watch_frames, &w);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "A's READ", 1, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(w.reads[0].frames == 1024 && w.bad_frames == 0, "A's READ: %u responses",
	      w.reads[0].frames);
	w.reads[0].frames = w.first_psn_frames = 0;
	w.max_round_frames = w.round_frames = 0;

	for (int i = 0; i < b_reads; i++)
		post_read(b[REQ], 100 + (uint64_t)i, b_dst, (uint32_t)i * b_len, b_src, b_len);
	for (rounds = 0; rounds < 2000 && b_done < b_reads; rounds++) {
		struct xr_wc wc;

		xr_mem_link_deliver(&p.link, REQ, p.side[REQ].core, p.now, p.burst);
		for (int i = 0; i < STORM; i++)
			inject_read(&p, a_psn, a_src, 0, a_len);
		injected += STORM;
		xr_mem_link_deliver(&p.link, RSP, p.side[RSP].core, p.now, p.burst);
		xr_core_progress(p.side[REQ].core, p.now);
		end_round(&p, &w);
		while (h_poll(p.side[REQ].scq, &wc, 1) == 1) {
			b_done++;
			b_bad += wc.wr_id < 100 || wc.status != XR_WC_SUCCESS;
		}
	}
	CHECK(b_done == b_reads && b_bad == 0,
	      "B completed %d of %d READs (%d not right) in %d rounds", b_done, b_reads, b_bad,
	      rounds);
	CHECK(h_first_mismatch(b_dst->base, b_dst->len, 6) < 0, "B's bytes");
	CHECK(w.max_round_frames == ROUND_FRAMES,
	      "A sent up to %u responses in a round (budget %u)", w.max_round_frames, ROUND_FRAMES);
	CHECK(w.first_psn_frames >= 1 && w.bad_frames == 0, "A replayed %u times, %u frames wrong",
	      w.first_psn_frames, w.bad_frames);
	CHECK(p.side[RSP].core->stats.rx_dup_deferred == injected - w.first_psn_frames,
	      "rx_dup_deferred %" PRIu64 " = %" PRIu64 " duplicates - %u replays",
	      (uint64_t)p.side[RSP].core->stats.rx_dup_deferred, injected, w.first_psn_frames);
	for (int s = 0; s < 2; s++)
		xr_core_destroy_qp(b[s]);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("READ longer than max_msg_sz (2 GiB, 1 GiB + 1): invalid request, nothing sent",
		test_read_longer_than_max_msg_sz);
	h_group("WRITE longer than max_msg_sz: invalid request", test_write_longer_than_max_msg_sz);
	h_group("max_dest_rd_atomic 0: READ, FAA and CAS refused with invalid request",
		test_max_dest_rd_atomic_zero);
	h_group("a READ beyond max_dest_rd_atomic while responses go out: invalid request",
		test_beyond_max_dest_rd_atomic);
	h_group("a READ arriving while another is being sent waits its turn, bytes intact",
		test_new_read_while_sending);
	h_group("a new READ during a replay: the replay stops, bytes intact",
		test_new_read_during_replay);
	h_group("100 duplicates of a READ in one round: one replay, the rest deferred",
		test_duplicate_storm);
	h_group("100 duplicates of an FAA: one saved result per round, executed once",
		test_duplicate_atomic_storm);
	h_group("a duplicate storm on one QP leaves transmit buffers to another",
		test_storm_leaves_room_for_others);
	return h_exit_status();
}
