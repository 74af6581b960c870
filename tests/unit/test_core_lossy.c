/* SPDX-License-Identifier: MIT */
/*
 * Reliable delivery through two transport cores over a bad in-memory link:
 * mixed SEND, WRITE, WRITE with immediate, READ, compare-and-swap and
 * fetch-and-add in both directions at once, with seeded loss, duplication,
 * reordering and corruption. Every message must arrive exactly once, in
 * order, intact; every atomic must be applied exactly once; every
 * completion must be a success. Deterministic: virtual time, seeded link.
 *
 * A third host shares the link: now and then (seeded too) it slips a frame
 * to one side, built with the core's own builder so its ICRC is right. Ghost
 * ACKs, NAKs, RNR NAKs and responses in the peer's name with PSNs outside the
 * outstanding window; and frames that would be believed but for their
 * addresses, from its own IP or to another MAC: an ACK inside the window,
 * a WRITE with the real key or a SEND at the very PSN the responder
 * expects. None may change the outcome, and each must be counted under its
 * reason.
 *
 * Seeds take turns at what the two ends speak: selective repeat both, go-back-N
 * both, and selective repeat against a standard go-back-N peer, which must
 * never be sent a SACK or a self-placing packet.
 *
 * XR_LOSSY_OPS, XR_LOSSY_SEEDS and XR_LOSSY_FIRST_SEED override the size of the run.
 */
#include "core_harness.h"

#define SLOTS 128      /* data slots per direction; > twice the outstanding limit */
#define SLOT_SIZE 3072 /* three packets at MTU 1024 */
#define OUTSTANDING 48 /* WRs in flight per direction */
#define RECV_SLOTS 96  /* receives kept posted */
#define MIN_SEND 8     /* a SEND carries its op number in its first 8 bytes */

enum op_kind { OP_SEND, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS, OP_FAA, OP_KINDS };

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

/* One direction: side `from` is the requester, `to` the responder. */
struct flow {
	int from, to;
	uint64_t rng;
	uint32_t total, posted, completed;
	uint32_t recv_msgs_sent, recv_msgs_seen; /* SEND / WRITE_IMM, in order */
	uint64_t cas_sent, faa_sent, cas_done, faa_done;
	struct h_buf *src, *wdst, *rsrc, *rdst, *atom, *res, *rbuf;
	/* per outstanding WR, by wr_id % SLOTS */
	uint8_t kind[SLOTS];
	uint32_t len[SLOTS];
	uint64_t expect[SLOTS]; /* atomics: the original value they must return */
	uint32_t recv_posted;
	uint32_t recv_len[RECV_SLOTS];
};

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void post_recv_slot(struct h_pair *p, struct flow *f, uint32_t n)
{
	struct xr_sge sge = h_sge(f->rbuf, (size_t)(n % RECV_SLOTS) * SLOT_SIZE, SLOT_SIZE);

	CHECK(h_post_recv(p, f->to, n, &sge, 1) == 0, "post_recv %u", n);
}

static void flow_init(struct h_pair *p, struct flow *f, int from, uint32_t total, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	f->from = from;
	f->to = 1 - from;
	f->total = total;
	f->rng = seed;
	f->src = h_buf(p, from, (size_t)SLOTS * SLOT_SIZE, XR_ACCESS_LOCAL_WRITE, 0);
	f->rdst = h_buf(p, from, (size_t)SLOTS * SLOT_SIZE, XR_ACCESS_LOCAL_WRITE, 0);
	f->res = h_buf(p, from, (size_t)SLOTS * 8, XR_ACCESS_LOCAL_WRITE, 0);
	f->wdst = h_buf(p, f->to, (size_t)SLOTS * SLOT_SIZE, remote_all, 0);
	f->rsrc = h_buf(p, f->to, (size_t)SLOTS * SLOT_SIZE, remote_all, 0);
	f->atom = h_buf(p, f->to, 16, remote_all, 0); /* [0] CAS chain, [1] FAA counter */
	f->rbuf = h_buf(p, f->to, (size_t)RECV_SLOTS * SLOT_SIZE, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(f->rsrc->base, (size_t)SLOTS * SLOT_SIZE, 1000 + (uint64_t)from);
	for (uint32_t n = 0; n < RECV_SLOTS; n++)
		post_recv_slot(p, f, f->recv_posted++);
}

static void flow_post(struct h_pair *p, struct flow *f)
{
	uint32_t i = f->posted, s = i % SLOTS;
	size_t off = (size_t)s * SLOT_SIZE;
	enum op_kind k = (enum op_kind)(next_rand(&f->rng) % OP_KINDS);
	uint32_t len = (uint32_t)(next_rand(&f->rng) % (SLOT_SIZE + 1));
	struct xr_send_wr wr = {.wr_id = i, .num_sge = 1, .send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad;
	struct xr_sge sge;

	/* SENDs and WRITE_IMMs need a receive: keep them within what is posted. */
	if ((k == OP_SEND || k == OP_WRITE_IMM) &&
	    f->recv_msgs_sent - f->recv_msgs_seen >= RECV_SLOTS)
		k = OP_WRITE;
	f->kind[s] = (uint8_t)k;
	switch (k) {
	case OP_SEND:
		len = len < MIN_SEND ? MIN_SEND : len;
		h_fill(f->src->base + off, len, i);
		memcpy(f->src->base + off, &i, sizeof(i));
		sge = h_sge(f->src, off, len);
		wr.opcode = XR_WR_SEND;
		f->recv_msgs_sent++;
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
		h_fill(f->src->base + off, len, i);
		sge = h_sge(f->src, off, len);
		wr.opcode = k == OP_WRITE ? XR_WR_RDMA_WRITE : XR_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = i;
		wr.wr.rdma.remote_addr = (uintptr_t)f->wdst->base + off;
		wr.wr.rdma.rkey = f->wdst->mr->rkey;
		if (k == OP_WRITE_IMM)
			f->recv_msgs_sent++;
		break;
	case OP_READ:
		memset(f->rdst->base + off, 0, SLOT_SIZE);
		sge = h_sge(f->rdst, off, len);
		wr.opcode = XR_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)f->rsrc->base + off;
		wr.wr.rdma.rkey = f->rsrc->mr->rkey;
		break;
	default:
		len = 8;
		sge = h_sge(f->res, (size_t)s * 8, 8);
		wr.opcode = k == OP_CAS ? XR_WR_ATOMIC_CMP_AND_SWP : XR_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)f->atom->base + (k == OP_CAS ? 0 : 8);
		wr.wr.atomic.rkey = f->atom->mr->rkey;
		/* The CAS chain: the k-th swaps k for k + 1, so it must find k. */
		wr.wr.atomic.compare_add = k == OP_CAS ? f->cas_sent : 1;
		wr.wr.atomic.swap = f->cas_sent + 1;
		f->expect[s] = k == OP_CAS ? f->cas_sent++ : f->faa_sent++;
	}
	f->len[s] = len;
	wr.sg_list = &sge;
	CHECK(xr_core_post_send(p->side[f->from].qp, &wr, &bad) == 0, "post op %u", i);
	f->posted++;
}

static void check_completion(struct flow *f, const struct xr_wc *wc)
{
	uint32_t i = f->completed, s = i % SLOTS;
	size_t off = (size_t)s * SLOT_SIZE;
	uint64_t got;
	long bad;

	CHECK(wc->status == XR_WC_SUCCESS && wc->wr_id == i,
	      "flow %d: completion %u: wr %" PRIu64 " %s", f->from, i, wc->wr_id,
	      xr_wc_status_str(wc->status));
	switch (f->kind[s]) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		bad = h_first_mismatch(f->wdst->base + off, f->len[s], i);
		CHECK(bad < 0, "flow %d: WRITE %u: byte %ld differs", f->from, i, bad);
		break;
	case OP_READ:
		CHECK(memcmp(f->rdst->base + off, f->rsrc->base + off, f->len[s]) == 0,
		      "flow %d: READ %u content", f->from, i);
		break;
	case OP_CAS:
	case OP_FAA:
		memcpy(&got, f->res->base + (size_t)s * 8, 8);
		CHECK(got == f->expect[s], "flow %d: atomic %u returned %" PRIu64 ", want %" PRIu64,
		      f->from, i, got, f->expect[s]);
		if (f->kind[s] == OP_CAS)
			f->cas_done++;
		else
			f->faa_done++;
		break;
	default:
		break;
	}
	f->completed++;
}

/* Receive side of a flow: SENDs and WRITE_IMMs, each exactly once, in order. */
static void check_receive(struct h_pair *p, struct flow *f, const struct xr_wc *wc)
{
	uint32_t r = (uint32_t)wc->wr_id, i;
	size_t off = (size_t)(r % RECV_SLOTS) * SLOT_SIZE;

	CHECK(wc->status == XR_WC_SUCCESS && r == f->recv_msgs_seen,
	      "flow %d: receive %u: wr %u %s", f->from, f->recv_msgs_seen, r,
	      xr_wc_status_str(wc->status));
	if (wc->status != XR_WC_SUCCESS)
		return; /* a flushed receive is not reposted: that would flush again, forever */
	if (wc->opcode == XR_WC_RECV_RDMA_WITH_IMM) {
		i = wc->imm_data;
		CHECK(f->kind[i % SLOTS] == OP_WRITE_IMM && wc->byte_len == f->len[i % SLOTS],
		      "flow %d: WRITE_IMM %u: byte_len %u", f->from, i, wc->byte_len);
	} else {
		memcpy(&i, f->rbuf->base + off, sizeof(i));
		CHECK(f->kind[i % SLOTS] == OP_SEND && wc->byte_len == f->len[i % SLOTS],
		      "flow %d: SEND %u: byte_len %u", f->from, i, wc->byte_len);
		for (uint32_t k = sizeof(i); k < wc->byte_len; k++)
			if (f->rbuf->base[off + k] != h_pattern(i, k)) {
				CHECK(0, "flow %d: SEND %u: byte %u differs", f->from, i, k);
				break;
			}
	}
	f->recv_msgs_seen++;
	post_recv_slot(p, f, f->recv_posted++);
}

/* Chance per pump step that the third host sends a frame. */
#define FORGE_RATE 0.1

enum forged_kind {
	FORGED_GHOST,	  /* the peer's addresses, a PSN outside the window */
	FORGED_THIRD_IP,  /* from the third host's IP */
	FORGED_OTHER_MAC, /* right IPs, another host's MAC */
	FORGED_KINDS,
};

struct forger {
	uint64_t rng;
	uint64_t sent[FORGED_KINDS];
};

struct run_state {
	struct flow *flows;
	struct forger *forger;
};

static void forge_ghost(struct h_pair *p, struct forger *fg, int to)
{
	static const uint8_t opcodes[] = {XR_OP_RC_ACK, XR_OP_RC_ACK, XR_OP_RC_ACK,
					  XR_OP_RC_READ_RESPONSE_ONLY, XR_OP_RC_ATOMIC_ACK};
	static const uint8_t kinds[] = {XR_AETH_ACK, XR_AETH_NAK, XR_AETH_RNR_NAK};
	const struct xr_qp_impl *qp = p->side[to].qp;
	struct xr_path peer = h_path_from(p, 1 - to);
	uint64_t r = next_rand(&fg->rng);
	uint8_t opcode = opcodes[r % 5], syndrome = XR_AETH_ACK;
	/* Anywhere up to a quarter of the PSN space ahead of what was sent, or behind. */
	uint32_t off = (uint32_t)(r >> 8) & ((1u << 22) - 1), psn;

	if (opcode == XR_OP_RC_ACK)
		syndrome = (uint8_t)(kinds[(r >> 4) % 3] | (r >> 32 & XR_AETH_VALUE_MASK));
	if (r & 1 << 30)
		psn = xr_psn_add(qp->snd_psn, off);
	else
		psn = xr_psn_add(qp->acked_psn, XR_PSN_MASK - off); /* acked - 1 - off */
	h_forge_response(p, to, &peer, opcode, psn, syndrome, r, 1024, 0xee);
	fg->sent[FORGED_GHOST]++;
}

/* A frame the side would believe but for its addresses. */
static void forge_misaddressed(struct h_pair *p, struct flow *flows, struct forger *fg, int to,
			       enum forged_kind kind)
{
	const struct xr_qp_impl *qp = p->side[to].qp;
	struct xr_path path = h_path_from(p, 1 - to);
	const struct flow *f = &flows[1 - to]; /* the flow whose responder is side to */
	uint64_t r = next_rand(&fg->rng);
	uint32_t window = (uint32_t)xr_psn_diff(qp->snd_psn, qp->acked_psn);
	struct h_forge frame;

	if (kind == FORGED_THIRD_IP)
		path.sgid = h_third_gid();
	else
		path.dmac[5] ^= 0x40;
	switch (r % 3) {
	case 0:
		/* Acknowledges part of what is in flight (or repeats the last ACK). */
		h_forge_response(p, to, &path, XR_OP_RC_ACK,
				 xr_psn_add(qp->acked_psn,
					    window > 1 ? 1 + (uint32_t)(r >> 8) % (window - 1) : 0),
				 XR_AETH_ACK | XR_AETH_ACK_UNLIMITED, 0, 0, 0);
		break;
	case 1:
		if (!h_forge_begin(&frame, &path, XR_OP_RC_WRITE_ONLY, qp->pub.qp_num, qp->epsn,
				   1024, 0xee))
			return;
		h_put64(frame.out.ext,
			(uintptr_t)f->wdst->base + (r >> 8) % (SLOTS * SLOT_SIZE - 1024));
		h_put32(frame.out.ext + 8, f->wdst->mr->rkey);
		h_put32(frame.out.ext + 12, 1024);
		h_forge_deliver(p, to, &frame);
		break;
	default:
		if (!h_forge_begin(&frame, &path, XR_OP_RC_SEND_ONLY, qp->pub.qp_num, qp->epsn, 64,
				   0xee))
			return;
		h_forge_deliver(p, to, &frame);
		break;
	}
	fg->sent[kind]++;
}

static void forge_maybe(struct h_pair *p, struct flow *flows, struct forger *fg)
{
	uint64_t r;
	int to;

	if ((double)(next_rand(&fg->rng) >> 11) * 0x1.0p-53 >= FORGE_RATE)
		return;
	r = next_rand(&fg->rng);
	to = (int)(r & 1);
	switch ((r >> 1) % FORGED_KINDS) {
	case FORGED_GHOST:
		forge_ghost(p, fg, to);
		break;
	case FORGED_THIRD_IP:
		forge_misaddressed(p, flows, fg, to, FORGED_THIRD_IP);
		break;
	default:
		forge_misaddressed(p, flows, fg, to, FORGED_OTHER_MAC);
		break;
	}
}

static bool step(struct h_pair *p, void *arg)
{
	struct run_state *st = arg;
	struct flow *flows = st->flows;
	bool done = true;

	forge_maybe(p, flows, st->forger);

	for (int d = 0; d < 2; d++) {
		struct flow *f = &flows[d];
		struct xr_wc wc[16];
		int n;

		while ((n = h_poll(p->side[f->from].scq, wc, 16)) > 0)
			for (int k = 0; k < n; k++)
				check_completion(f, &wc[k]);
		while ((n = h_poll(p->side[f->to].rcq, wc, 16)) > 0)
			for (int k = 0; k < n; k++)
				check_receive(p, f, &wc[k]);
		while (f->posted < f->total && f->posted - f->completed < OUTSTANDING)
			flow_post(p, f);
		done &= f->completed == f->total;
	}
	return done || h_failures > 50;
}

enum sr_mode { SR_BOTH, SR_NEITHER, SR_SIDE0_ONLY, SR_MODES };

static const char *const sr_mode_name[SR_MODES] = {
    "selective repeat both ways", "go-back-N both ways", "selective repeat against go-back-N"};

static void check_sr_mode(const struct h_pair *p, uint64_t seed, enum sr_mode mode,
			  const struct h_sr_frames *n)
{
	if (mode == SR_BOTH) {
		for (int s = 0; s < 2; s++)
			CHECK(n->sacks[s] && n->self_placing[s] &&
				  p->side[s].qp->cnt.sr_placed_ahead &&
				  p->side[s].qp->cnt.sr_resends,
			      "seed %" PRIu64 " side %d: selective repeat unused (%" PRIu64
			      " SACKs, %" PRIu64 " self-placing)",
			      seed, s, n->sacks[s], n->self_placing[s]);
		return;
	}
	/* Side 1 is standard in both other modes; side 0 too in SR_NEITHER. */
	CHECK(!n->self_placing[0] && !n->sacks[0] && !n->self_placing[1] && !n->sacks[1],
	      "seed %" PRIu64 " (%s): %" PRIu64 " + %" PRIu64 " SACKs, %" PRIu64 " + %" PRIu64
	      " self-placing packets",
	      seed, sr_mode_name[mode], n->sacks[0], n->sacks[1], n->self_placing[0],
	      n->self_placing[1]);
}

static uint32_t env_or(const char *name, uint32_t dflt)
{
	const char *v = getenv(name);

	return v ? (uint32_t)strtoul(v, NULL, 10) : dflt;
}

static void run_seed(uint64_t seed, uint32_t ops)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_mem_impair imp = {.loss = 0.10,
				    .duplicate = 0.02,
				    .reorder = 0.05,
				    .reorder_window = 8,
				    .corrupt = 0.005};
	struct xr_qp_attr a = {.qp_state = XR_QPS_RTS, .qp_access_flags = remote_all};
	struct flow flows[2];
	struct forger fg = {.rng = seed * 7 + 3};
	struct run_state st = {flows, &fg};
	uint64_t bad_src = 0, bad_dst = 0, ghosts = 0, bad_response = 0, forged = 0, corrupted;
	enum sr_mode mode = (enum sr_mode)(seed % SR_MODES);
	struct h_sr_frames sr_frames = {0};
	struct h_pair p;
	enum h_run_result r;

	o.cap.max_send_wr = 64;
	o.cap.max_recv_wr = 128;
	o.rd_atomic = 8;
	o.go_back_n[0] = mode == SR_NEITHER;
	o.go_back_n[1] = mode != SR_BOTH;
	h_setup(&p, seed, 1024, &o);
	xr_mem_link_set_tap(&p.link, h_count_sr_frames, &sr_frames);
	for (int s = 0; s < 2; s++)
		CHECK(xr_core_modify_qp(p.side[s].qp, &a, XR_QP_STATE | XR_QP_ACCESS_FLAGS, NULL) ==
			  0,
		      "allow atomics");
	xr_mem_link_set_impair(&p.link, 0, &imp);
	xr_mem_link_set_impair(&p.link, 1, &imp);
	flow_init(&p, &flows[0], 0, ops / 2, seed * 7 + 1);
	flow_init(&p, &flows[1], 1, ops - ops / 2, seed * 7 + 2);
	r = h_run(&p, p.now + 3600ull * 1000000000ull, step, &st);
	CHECK(r == H_DONE, "seed %" PRIu64 ": run ended: %s", seed, h_run_result_str(r));
	for (int d = 0; d < 2; d++) {
		struct flow *f = &flows[d];
		uint64_t cas, faa;

		memcpy(&cas, f->atom->base, 8);
		memcpy(&faa, f->atom->base + 8, 8);
		CHECK(f->completed == f->total && f->recv_msgs_seen == f->recv_msgs_sent,
		      "seed %" PRIu64 " flow %d: %u of %u completed, %u of %u messages received",
		      seed, d, f->completed, f->total, f->recv_msgs_seen, f->recv_msgs_sent);
		CHECK(cas == f->cas_sent && faa == f->faa_sent,
		      "seed %" PRIu64 " flow %d: CAS word %" PRIu64 " after %" PRIu64
		      ", counter %" PRIu64 " after %" PRIu64 " FAAs",
		      seed, d, cas, f->cas_sent, faa, f->faa_sent);
	}
	CHECK(xr_mem_link_counters(&p.link, 0)->dropped &&
		  xr_mem_link_counters(&p.link, 1)->corrupted,
	      "the link impaired nothing");
	for (int s = 0; s < 2; s++) {
		const struct xr_engine_stats *es = &p.side[s].core->stats;

		bad_src += es->rx_bad_src;
		bad_dst += es->rx_bad_dst;
		ghosts += es->rx_ghost_acks;
		bad_response += es->rx_bad_response;
		CHECK(p.side[s].qp->pub.state == XR_QPS_RTS,
		      "seed %" PRIu64 ": side %d in state %d", seed, s, p.side[s].qp->pub.state);
	}
	for (int k = 0; k < FORGED_KINDS; k++)
		forged += fg.sent[k];
	/*
	 * The peers themselves never send from another address, nor a response
	 * of the wrong kind. A bit flipped in a destination MAC (which the ICRC
	 * does not cover) sends a frame elsewhere, and stale ACKs the link
	 * delays or doubles are ghosts: those only add to the forged ones.
	 */
	corrupted = xr_mem_link_counters(&p.link, 0)->corrupted +
		    xr_mem_link_counters(&p.link, 1)->corrupted;
	CHECK(bad_src == fg.sent[FORGED_THIRD_IP] && bad_dst >= fg.sent[FORGED_OTHER_MAC] &&
		  bad_dst <= fg.sent[FORGED_OTHER_MAC] + corrupted &&
		  ghosts >= fg.sent[FORGED_GHOST] && bad_response == 0,
	      "seed %" PRIu64 ": forged %" PRIu64 " from a third IP, %" PRIu64
	      " to another MAC, %" PRIu64 " ghosts; counted rx_bad_src %" PRIu64
	      ", rx_bad_dst %" PRIu64 ", rx_ghost_acks %" PRIu64 ", rx_bad_response %" PRIu64,
	      seed, fg.sent[FORGED_THIRD_IP], fg.sent[FORGED_OTHER_MAC], fg.sent[FORGED_GHOST],
	      bad_src, bad_dst, ghosts, bad_response);
	CHECK(forged > 0, "seed %" PRIu64 ": nothing forged", seed);
	check_sr_mode(&p, seed, mode, &sr_frames);
	printf("  seed %" PRIu64 " (%s): %u ops, %.1f ms virtual, %" PRIu64 " + %" PRIu64
	       " frames, %" PRIu64 " + %" PRIu64 " retransmission rewinds, %" PRIu64
	       " forged frames dropped\n",
	       seed, sr_mode_name[mode], ops, p.now / 1e6,
	       xr_mem_link_counters(&p.link, 0)->submitted,
	       xr_mem_link_counters(&p.link, 1)->submitted, (uint64_t)p.side[0].qp->cnt.retransmits,
	       (uint64_t)p.side[1].qp->cnt.retransmits, forged);
	h_pair_destroy(&p);
}

static void test_lossy_mix(void)
{
	uint32_t ops = env_or("XR_LOSSY_OPS", 100000), seeds = env_or("XR_LOSSY_SEEDS", 20);
	uint32_t first = env_or("XR_LOSSY_FIRST_SEED", 1);

	for (uint32_t s = first; s < first + seeds && h_failures == 0; s++)
		run_seed(s, ops);
}

int main(void)
{
	h_group("mixed ops both ways over 10% loss, 2% dup, reorder 8, 0.5% corruption, forged "
		"frames, 20 seeds",
		test_lossy_mix);
	return h_exit_status();
}
