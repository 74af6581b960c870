/* SPDX-License-Identifier: MIT */
/*
 * Engine rounds at scale: 1,024 RC QP pairs through the transport core on a
 * lossless in-memory link whose transmit pool is far smaller than what the
 * QPs want to send at once, and more than the core's window in flight. Every QP moves WRITEs and
 * SENDs, reposting as its work requests complete (as xroce-perf does); the data is checked byte for
 * byte, nothing may be retransmitted or time out, and no QP may starve: each completes its first
 * work request within a bounded number of rounds. Then the idle QPs must cost nothing: a round runs
 * only QPs with work. One line per group; exits non-zero if any check failed.
 */
#include "core_harness.h"

#define NQP 1024
#define WRS_PER_QP 8 /* alternately WRITE and SEND */
#define WR_LEN 2048  /* two packets at MTU 1024 */
#define IN_FLIGHT 2  /* work requests each QP keeps posted */
/* Frames in flight per direction: 16 QPs' worth of one burst, against 1,024 QPs. */
#define LINK_DEPTH 64
/*
 * Rounds by which every QP has completed its first work request. Served
 * round robin, 16 QPs get buffers per round, so each waits about 64 rounds
 * for its first turn, and its completion comes a few rounds later. Served in
 * slot order, the first QPs refill the pool with reposted work each round
 * and the last ones wait until those are done: some 256 rounds.
 */
#define FIRST_WR_ROUNDS 80

struct scale_run {
	struct xr_qp_impl *qp[2][NQP];
	struct h_buf *src, *dst;
	uint32_t posted[NQP], completed[NQP];
	uint64_t first_done_round[NQP];
	uint64_t round;
	uint32_t done, recvs, bad;
	uint32_t max_in_flight; /* the sender core's PSNs in flight, most seen */
};

static size_t slot_off(uint32_t q, uint32_t k)
{
	return ((size_t)q * WRS_PER_QP + k) * WR_LEN;
}

static uint64_t msg_of(uint32_t q, uint32_t k)
{
	return (uint64_t)q * WRS_PER_QP + k;
}

static void post_next(struct scale_run *r, uint32_t q)
{
	uint32_t k = r->posted[q];
	struct xr_sge sge = h_sge(r->src, slot_off(q, k), WR_LEN);
	struct xr_send_wr wr = {.wr_id = msg_of(q, k), .sg_list = &sge, .num_sge = 1};
	struct xr_send_wr *bad = NULL;

	if (k % 2 == 0) {
		wr.opcode = XR_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)(r->dst->base + slot_off(q, k));
		wr.wr.rdma.rkey = r->dst->mr->rkey;
	} else {
		wr.opcode = XR_WR_SEND;
	}
	if (xr_core_post_send(r->qp[0][q], &wr, &bad)) {
		r->bad++;
		return;
	}
	r->posted[q]++;
}

/* Once per round: takes the completions, checks receives, reposts. */
static bool take_and_repost(struct h_pair *p, void *arg)
{
	struct scale_run *r = arg;
	struct xr_wc wc[64];
	int n;

	r->round++;
	if (p->side[0].core->in_flight > r->max_in_flight)
		r->max_in_flight = p->side[0].core->in_flight;
	while ((n = h_poll(p->side[1].rcq, wc, 64)) > 0)
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id / WRS_PER_QP);

			if (wc[i].status != XR_WC_SUCCESS || wc[i].byte_len != WR_LEN || q >= NQP ||
			    wc[i].qp_num != r->qp[1][q]->pub.qp_num)
				r->bad++;
			r->recvs++;
		}
	while ((n = h_poll(p->side[0].scq, wc, 64)) > 0)
		for (int i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id / WRS_PER_QP);

			if (wc[i].status != XR_WC_SUCCESS || q >= NQP ||
			    wc[i].wr_id != msg_of(q, r->completed[q])) {
				r->bad++;
				continue;
			}
			if (r->completed[q]++ == 0)
				r->first_done_round[q] = r->round;
			if (r->completed[q] == WRS_PER_QP)
				r->done++;
			if (r->posted[q] < WRS_PER_QP)
				post_next(r, q);
		}
	return r->done == NQP && r->recvs == NQP * WRS_PER_QP / 2;
}

static void connect_all(struct h_pair *p, struct scale_run *r, const struct h_qp_opts *o)
{
	for (uint32_t q = 0; q < NQP; q++) {
		for (int s = 0; s < 2; s++) {
			if (h_create_qp(p, s, o)) {
				fprintf(stderr, "test fixture: QP %u of side %d\n", q, s);
				exit(2);
			}
			r->qp[s][q] = p->side[s].qp;
		}
		for (int s = 0; s < 2; s++)
			if (h_to_init(p, s) || h_to_rtr(p, s, o) || h_to_rts(p, s, o)) {
				fprintf(stderr, "test fixture: connecting QP pair %u\n", q);
				exit(2);
			}
	}
	/* h_pair_destroy destroys the pair's own QPs: these go in destroy_all. */
	p->side[0].qp = p->side[1].qp = NULL;
}

static void destroy_all(struct scale_run *r)
{
	for (uint32_t q = 0; q < NQP; q++)
		for (int s = 0; s < 2; s++)
			xr_core_destroy_qp(r->qp[s][q]);
}

static struct scale_run *new_run(struct h_pair *p, uint32_t depth)
{
	struct h_qp_opts o = h_default_opts();
	size_t len = (size_t)NQP * WRS_PER_QP * WR_LEN;
	struct scale_run *r = calloc(1, sizeof(*r));

	if (!r || h_pair_init(p, 12, depth)) {
		fprintf(stderr, "test fixture: cannot build two cores\n");
		exit(2);
	}
	o.cap = (struct xr_qp_cap){.max_send_wr = IN_FLIGHT,
				   .max_recv_wr = WRS_PER_QP / 2,
				   .max_send_sge = 1,
				   .max_recv_sge = 1};
	connect_all(p, r, &o);
	r->src = h_buf(p, 0, len, XR_ACCESS_LOCAL_WRITE, 0);
	r->dst = h_buf(p, 1, len, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	for (uint32_t q = 0; q < NQP; q++)
		for (uint32_t k = 0; k < WRS_PER_QP; k++)
			h_fill(r->src->base + slot_off(q, k), WR_LEN, msg_of(q, k));
	return r;
}

/*
 * depth: the link's frames in flight per direction. LINK_DEPTH makes the
 * transmit pool the limit; a deep link makes the core's window the limit.
 */
static void run_1024_qps(uint32_t depth)
{
	struct h_pair p;
	struct scale_run *r = new_run(&p, depth);
	enum h_run_result res;
	uint64_t worst = 0;
	uint32_t worst_qp = 0, mismatched = 0;

	for (uint32_t q = 0; q < NQP; q++) {
		/* The SENDs (odd k) land in their own slots of dst, like the WRITEs. */
		for (uint32_t k = 1; k < WRS_PER_QP; k += 2) {
			struct xr_sge sge = h_sge(r->dst, slot_off(q, k), WR_LEN);
			struct xr_recv_wr wr = {
			    .wr_id = msg_of(q, k), .sg_list = &sge, .num_sge = 1};
			struct xr_recv_wr *bad = NULL;

			CHECK(xr_core_post_recv(r->qp[1][q], &wr, &bad) == 0, "post_recv");
		}
		for (int i = 0; i < IN_FLIGHT; i++)
			post_next(r, q);
	}
	res = h_run(&p, p.now + 10ull * 1000000000ull, take_and_repost, r);
	CHECK(res == H_DONE, "every QP done: %s after %" PRIu64 " rounds, %u of %u QPs done",
	      h_run_result_str(res), r->round, r->done, NQP);
	CHECK(r->bad == 0, "%u completions with a wrong status, order or length", r->bad);
	for (uint32_t q = 0; q < NQP; q++) {
		for (uint32_t k = 0; k < WRS_PER_QP; k++)
			if (h_first_mismatch(r->dst->base + slot_off(q, k), WR_LEN, msg_of(q, k)) >=
			    0)
				mismatched++;
		if (!r->completed[q] || r->first_done_round[q] > worst) {
			worst = r->completed[q] ? r->first_done_round[q] : UINT64_MAX;
			worst_qp = q;
		}
	}
	CHECK(mismatched == 0, "%u of %u messages differ from what was sent", mismatched,
	      NQP * WRS_PER_QP);
	CHECK(worst <= FIRST_WR_ROUNDS,
	      "QP %u completed its first work request in round %" PRIu64 " (bound %d)", worst_qp,
	      worst, FIRST_WR_ROUNDS);
	printf("    %" PRIu64 " rounds, the last first completion in round %" PRIu64 "\n", r->round,
	       worst);
	for (int s = 0; s < 2; s++) {
		const struct xr_engine_stats *st = &p.side[s].core->stats;

		CHECK(st->retransmits == 0 && st->timeouts == 0 && st->seq_naks_tx == 0 &&
			  st->rnr_naks_tx == 0,
		      "side %d: %llu retransmits, %llu timeouts, %llu sequence NAKs, %llu RNR NAKs "
		      "sent on a lossless link",
		      s, (unsigned long long)st->retransmits, (unsigned long long)st->timeouts,
		      (unsigned long long)st->seq_naks_tx, (unsigned long long)st->rnr_naks_tx);
	}
	CHECK(r->max_in_flight <= XR_CORE_WINDOW, "%u PSNs in flight, beyond the core's window %d",
	      r->max_in_flight, XR_CORE_WINDOW);
	CHECK(depth == LINK_DEPTH || r->max_in_flight > XR_CORE_WINDOW / 2,
	      "a deep link, yet the core's window (%d) was never the limit: %u at most",
	      XR_CORE_WINDOW, r->max_in_flight);
	for (int s = 0; s < 2; s++)
		CHECK(p.side[s].core->in_flight == 0 && xr_core_timer_count(p.side[s].core) == 0,
		      "side %d: done, yet %u PSNs counted in flight, %u timers", s,
		      p.side[s].core->in_flight, xr_core_timer_count(p.side[s].core));
	CHECK(depth != LINK_DEPTH || p.side[0].core->stats.tx_no_buffer > 0,
	      "the transmit pool was the limit (tx_no_buffer 0: the test tests nothing)");
	destroy_all(r);
	h_pair_destroy(&p);
	free(r);
}

static void test_1024_qps(void)
{
	run_1024_qps(LINK_DEPTH);
}

static void test_1024_qps_window(void)
{
	run_1024_qps(4096);
}

/* Idle QPs are not run: a round costs the QPs with work, not the QPs there are. */
static void test_idle_not_visited(void)
{
	struct h_pair p;
	struct scale_run *r = new_run(&p, LINK_DEPTH);
	struct xr_sge sge = h_sge(r->src, 0, WR_LEN);
	struct xr_send_wr wr = {
	    .wr_id = 1,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_RDMA_WRITE,
	    .wr.rdma = {.remote_addr = (uintptr_t)r->dst->base, .rkey = r->dst->mr->rkey}};
	struct xr_send_wr *bad = NULL;
	uint64_t before[2];
	struct xr_wc wc;

	/* Connecting put every QP on the list once; the first round finds them idle. */
	h_settle(&p);
	for (int s = 0; s < 2; s++) {
		CHECK(xr_core_timer_count(p.side[s].core) == 0,
		      "side %d: %u timers with nothing outstanding", s,
		      xr_core_timer_count(p.side[s].core));
		before[s] = p.side[s].core->qp_visits;
	}
	for (int i = 0; i < 1000; i++)
		for (int s = 0; s < 2; s++)
			xr_core_progress(p.side[s].core, p.now);
	for (int s = 0; s < 2; s++)
		CHECK(p.side[s].core->qp_visits == before[s],
		      "side %d: 1,000 rounds with 1,024 idle QPs ran %" PRIu64 " QPs", s,
		      p.side[s].core->qp_visits - before[s]);
	/* One QP's WRITE: the rounds run that QP pair, none of the 1,023 others. */
	CHECK(xr_core_post_send(r->qp[0][700], &wr, &bad) == 0, "post the WRITE");
	CHECK(h_settle(&p) == H_QUIET, "settles");
	CHECK(h_poll(p.side[0].scq, &wc, 1) == 1 && wc.status == XR_WC_SUCCESS && wc.wr_id == 1,
	      "the WRITE completes");
	CHECK(h_first_mismatch(r->dst->base, WR_LEN, 0) < 0, "its data arrived");
	for (int s = 0; s < 2; s++)
		CHECK(p.side[s].core->qp_visits - before[s] <= 10,
		      "side %d: one WRITE between two QPs ran %" PRIu64 " QPs", s,
		      p.side[s].core->qp_visits - before[s]);
	destroy_all(r);
	h_pair_destroy(&p);
	free(r);
}

int main(void)
{
	h_group("1,024 QP pairs, WRITE and SEND, small transmit pool: exact, fair, no retry",
		test_1024_qps);
	h_group("the same on a deep link: the core's window bounds what is in flight",
		test_1024_qps_window);
	h_group("idle QPs are not run", test_idle_not_visited);
	return h_exit_status();
}
