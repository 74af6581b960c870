/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for unit tests of the transport core: two cores joined by
 * an in-memory link (user/lib/core/mem_port.h), a PD, CQs and one connected
 * RC QP per side, registered buffers, and a pump that runs both cores in
 * virtual time. Header-only; every helper is static inline.
 *
 * Checks do not stop a test: CHECK counts the failure and prints where and
 * why; h_group prints one PASS/FAIL line per group; h_exit_status tells main
 * what to return.
 */
#ifndef XROCE_TESTS_CORE_HARNESS_H
#define XROCE_TESTS_CORE_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/mem_port.h"

/* ---- checks ------------------------------------------------------------ */

static int h_failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			h_failures++;                                                              \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

static inline void h_group(const char *name, void (*run)(void))
{
	int before = h_failures;

	run();
	printf("%s %s", h_failures == before ? "PASS" : "FAIL", name);
	if (h_failures != before)
		printf(" (%d checks failed)", h_failures - before);
	putchar('\n');
	fflush(stdout);
}

static inline int h_exit_status(void)
{
	return h_failures ? 1 : 0;
}

/* ---- two cores, one link ------------------------------------------------ */

#define H_NS_PER_STEP 1000ull	/* virtual time per pump step: 1 us */
#define H_MAX_STEPS 20000000ull /* per h_run call: a wedged test fails, never hangs */
#define H_MAX_BUFS 64

struct h_buf {
	uint8_t *base;
	size_t len;
	struct xr_mr *mr;
};

struct h_side {
	struct xr_core *core;
	struct xr_pd *pd;
	struct xr_cq_impl *scq, *rcq;
	struct xr_qp_impl *qp;
	uint8_t mac[6];
};

struct h_pair {
	struct xr_mem_link link;
	struct h_side side[2];
	uint64_t now;	/* virtual ns */
	uint32_t burst; /* frames delivered per side per step */
	struct h_buf bufs[H_MAX_BUFS];
	int nbufs;
};

/* Connection parameters of the QP pair (both sides get the same). */
struct h_qp_opts {
	struct xr_qp_cap cap;
	int sq_sig_all;
	uint32_t sq_psn[2]; /* the starting PSN each side sends with */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t rd_atomic;     /* max_rd_atomic and max_dest_rd_atomic */
	struct xr_srq *srq[2]; /* each side's SRQ, or NULL */
	bool go_back_n[2];     /* the side speaks no selective repeat, as a standard peer */
	bool no_ecn[2];	       /* the side sends Not-ECT (XROCE_ECN=0) */
};

static inline struct h_qp_opts h_default_opts(void)
{
	struct h_qp_opts o = {
	    .cap = {.max_send_wr = 64,
		    .max_recv_wr = 64,
		    .max_send_sge = 4,
		    .max_recv_sge = 4,
		    .max_inline_data = XR_MAX_INLINE},
	    .sq_sig_all = 1,
	    /* Side 0 starts just before the 24-bit wrap so long transfers cross it. */
	    .sq_psn = {0xfffff0, 0x1234},
	    .timeout = 14, /* 67 ms */
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .min_rnr_timer = 1, /* 10 us */
	    .rd_atomic = 1,	/* 0 would make the responder refuse every READ and atomic */
	};
	return o;
}

static inline union xr_gid h_gid_of_side(int side)
{
	union xr_gid gid = {.raw = {[10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1}};

	gid.raw[15] = (uint8_t)(side + 1);
	return gid;
}

/*
 * Builds two cores (MAC, one IPv4-mapped GID, MTU 1024), a PD and CQs each,
 * each core run by engines engine threads (0: one), as far as its lanes go.
 */
static inline int h_pair_init_engines(struct h_pair *p, uint64_t seed, uint32_t depth,
				      uint32_t engines)
{
	int err;

	memset(p, 0, sizeof(*p));
	err = xr_mem_link_init(&p->link, depth, seed);
	if (err)
		return err;
	p->link.engines = engines;
	p->burst = depth;
	p->now = 1000000; /* any origin: not zero, so "0 = no deadline" is never a time */
	for (int s = 0; s < 2; s++) {
		struct h_side *hs = &p->side[s];
		struct xr_core_port port;

		hs->core = calloc(1, sizeof(*hs->core));
		if (!hs->core)
			return -ENOMEM;
		xr_mem_link_port(&p->link, s, &port);
		xr_core_init(hs->core, &port);
		/* Keys from the seed too: a run is the same every time. */
		hs->core->rng = seed * 2 + (uint64_t)s + 1;
		memcpy(hs->mac, (uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)(s + 1)}, 6);
		memcpy(hs->core->mac, hs->mac, 6);
		hs->core->gids[0] = h_gid_of_side(s);
		hs->core->num_gids = 1;
		hs->core->active_mtu = XR_MTU_1024;
		hs->pd = xr_core_alloc_pd(hs->core);
		if (!hs->pd)
			return -ENOMEM;
		hs->scq = xr_core_create_cq(hs->core, 4096, &err);
		if (!hs->scq)
			return err;
		hs->rcq = xr_core_create_cq(hs->core, 4096, &err);
		if (!hs->rcq)
			return err;
	}
	return 0;
}

static inline int h_pair_init(struct h_pair *p, uint64_t seed, uint32_t depth)
{
	return h_pair_init_engines(p, seed, depth, 0);
}

static inline int h_create_qp(struct h_pair *p, int s, const struct h_qp_opts *o)
{
	struct h_side *hs = &p->side[s];
	struct xr_qp_init_attr init = {
	    .send_cq = &hs->scq->pub,
	    .recv_cq = &hs->rcq->pub,
	    .cap = o->cap,
	    .qp_type = XR_QPT_RC,
	    .sq_sig_all = o->sq_sig_all,
	    .srq = o->srq[s],
	};
	int err;

	hs->qp = xr_core_create_qp(hs->pd, &init, &err);
	return hs->qp ? 0 : err;
}

static inline int h_to_init(struct h_pair *p, int s)
{
	struct xr_qp_attr a = {.qp_state = XR_QPS_INIT,
			       .port_num = 1,
			       .qp_access_flags = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
						  XR_ACCESS_REMOTE_READ};

	return xr_core_modify_qp(p->side[s].qp, &a,
				 XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS,
				 NULL);
}

static inline struct xr_qp_attr h_rtr_attr(struct h_pair *p, int s, const struct h_qp_opts *o)
{
	struct xr_qp_attr a = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = XR_MTU_1024,
	    .dest_qp_num = p->side[1 - s].qp->pub.qp_num,
	    .rq_psn = o->sq_psn[1 - s],
	    .max_dest_rd_atomic = o->rd_atomic,
	    .min_rnr_timer = o->min_rnr_timer,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = h_gid_of_side(1 - s), .sgid_index = 0}},
	};
	return a;
}

#define H_RTR_MASK                                                                                 \
	(XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |                 \
	 XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER)
#define H_RTS_MASK                                                                                 \
	(XR_QP_STATE | XR_QP_SQ_PSN | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |          \
	 XR_QP_MAX_QP_RD_ATOMIC)

static inline int h_to_rtr(struct h_pair *p, int s, const struct h_qp_opts *o)
{
	struct xr_qp_attr a = h_rtr_attr(p, s, o);

	return xr_core_modify_qp(p->side[s].qp, &a, H_RTR_MASK, p->side[1 - s].mac);
}

static inline struct xr_qp_attr h_rts_attr(int s, const struct h_qp_opts *o)
{
	struct xr_qp_attr a = {
	    .qp_state = XR_QPS_RTS,
	    .sq_psn = o->sq_psn[s],
	    .timeout = o->timeout,
	    .retry_cnt = o->retry_cnt,
	    .rnr_retry = o->rnr_retry,
	    .max_rd_atomic = o->rd_atomic,
	};
	return a;
}

static inline int h_to_rts(struct h_pair *p, int s, const struct h_qp_opts *o)
{
	struct xr_qp_attr a = h_rts_attr(s, o);

	return xr_core_modify_qp(p->side[s].qp, &a, H_RTS_MASK, NULL);
}

/* One RC QP per side, connected to each other and brought to RTS. */
static inline int h_connect(struct h_pair *p, const struct h_qp_opts *o)
{
	int err;

	for (int s = 0; s < 2; s++) {
		err = h_create_qp(p, s, o);
		if (err)
			return err;
	}
	for (int s = 0; s < 2; s++) {
		err = h_to_init(p, s);
		if (!err)
			err = h_to_rtr(p, s, o);
		if (!err)
			err = h_to_rts(p, s, o);
		if (err)
			return err;
	}
	return 0;
}

/* Every access a QP or an MR can grant remotely, and local write. */
#define H_REMOTE_ALL                                                                               \
	(XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |                  \
	 XR_ACCESS_REMOTE_ATOMIC)

/* Both QPs accept atomics too (h_to_init grants remote write and read). */
static inline void h_allow_atomics(struct h_pair *p)
{
	struct xr_qp_attr a = {.qp_state = XR_QPS_RTS, .qp_access_flags = H_REMOTE_ALL};

	for (int s = 0; s < 2; s++)
		CHECK(xr_core_modify_qp(p->side[s].qp, &a, XR_QP_STATE | XR_QP_ACCESS_FLAGS,
					NULL) == 0,
		      "RTS->RTS with access flags");
}

/* A fresh, connected pair; aborts the whole test if the fixture cannot be built. */
static inline void h_setup(struct h_pair *p, uint64_t seed, uint32_t depth,
			   const struct h_qp_opts *o)
{
	int err = h_pair_init(p, seed, depth);

	for (int s = 0; !err && s < 2; s++)
		p->side[s].core->caps &=
		    ~((o->go_back_n[s] ? (uint64_t)XR_DEVICE_SELECTIVE_REPEAT : 0) |
		      (o->no_ecn[s] ? (uint64_t)XR_DEVICE_ECN : 0));
	if (!err)
		err = h_connect(p, o);
	if (err) {
		fprintf(stderr, "test fixture: cannot build two connected cores: %s\n",
			strerror(-err));
		exit(2);
	}
}

/* Frames each side sent in selective repeat's forms: offers, self-placing requests, SACKs. */
struct h_sr_frames {
	uint64_t offers[2], self_placing[2], sacks[2];
};

/* A tap (xr_mem_link_set_tap) counting them into a struct h_sr_frames. */
static inline void h_count_sr_frames(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct h_sr_frames *n = arg;
	struct xr_pkt pkt;

	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK)
		return;
	n->offers[from] += pkt.sr_capable;
	n->self_placing[from] += !!(pkt.opflags & XR_OPF_PLETH);
	n->sacks[from] += pkt.opcode == XR_OP_RC_SACK;
}

/* A registered buffer of len bytes on side s, filled with fill. */
static inline struct h_buf *h_buf(struct h_pair *p, int s, size_t len, int access, uint8_t fill)
{
	struct h_buf *b;
	int err;

	if (p->nbufs == H_MAX_BUFS) {
		fprintf(stderr, "test fixture: more than %d buffers\n", H_MAX_BUFS);
		exit(2);
	}
	b = &p->bufs[p->nbufs];
	b->len = len;
	b->base = malloc(len ? len : 1);
	if (!b->base) {
		fprintf(stderr, "test fixture: out of memory\n");
		exit(2);
	}
	memset(b->base, fill, len);
	b->mr = xr_core_reg_mr(p->side[s].pd, b->base, len, access, &err);
	if (!b->mr) {
		fprintf(stderr, "test fixture: reg_mr: %s\n", strerror(-err));
		exit(2);
	}
	p->nbufs++;
	return b;
}

static inline struct xr_sge h_sge(const struct h_buf *b, size_t off, uint32_t len)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)(b->base + off), .length = len, .lkey = b->mr->lkey};

	return sge;
}

static inline void h_pair_destroy(struct h_pair *p)
{
	for (int s = 0; s < 2; s++)
		if (p->side[s].qp)
			xr_core_destroy_qp(p->side[s].qp);
	for (int i = 0; i < p->nbufs; i++) {
		xr_core_dereg_mr(p->bufs[i].mr);
		free(p->bufs[i].base);
	}
	for (int s = 0; s < 2; s++) {
		struct h_side *hs = &p->side[s];

		if (hs->scq)
			xr_core_destroy_cq(hs->scq);
		if (hs->rcq)
			xr_core_destroy_cq(hs->rcq);
		if (hs->pd)
			xr_core_dealloc_pd(hs->pd);
		xr_core_release(hs->core);
		free(hs->core);
	}
	xr_mem_link_destroy(&p->link);
	memset(p, 0, sizeof(*p));
}

/* ---- virtual time ------------------------------------------------------ */

enum h_run_result {
	H_DONE,	      /* the predicate became true */
	H_QUIET,      /* nothing queued, no deadline pending: nothing will ever happen */
	H_TIME_LIMIT, /* virtual time reached `until` */
	H_STEP_LIMIT, /* H_MAX_STEPS: the cores keep busy without getting anywhere */
};

static inline const char *h_run_result_str(enum h_run_result r)
{
	static const char *const names[] = {"done", "quiet", "time limit", "step limit"};

	return names[r];
}

typedef bool (*h_pred_fn)(struct h_pair *p, void *arg);

/*
 * Steps both cores: pred (may be NULL) first, so work it posts is seen in the
 * same step; then deliver what is queued both ways, let both transmit and
 * fire timers, and advance virtual time by one step, or straight to the
 * earliest deadline when no frame is in flight. Stops when pred holds, when
 * the pair is quiet (confirmed by one more pass: pred may post new work), or
 * at virtual time until.
 */
static inline enum h_run_result h_run(struct h_pair *p, uint64_t until, h_pred_fn pred, void *arg)
{
	bool was_quiet = false;

	for (uint64_t step = 0; step < H_MAX_STEPS; step++) {
		uint64_t next = 0;

		if (pred && pred(p, arg))
			return H_DONE;
		for (int s = 0; s < 2; s++)
			xr_mem_link_deliver(&p->link, s, p->side[s].core, p->now, p->burst);
		for (int s = 0; s < 2; s++) {
			uint64_t d = xr_core_progress(p->side[s].core, p->now);

			if (d && (!next || d < next))
				next = d;
		}
		if (xr_mem_link_queued(&p->link, 0) || xr_mem_link_queued(&p->link, 1)) {
			next = p->now + H_NS_PER_STEP;
		} else if (!next) {
			if (was_quiet)
				return H_QUIET;
			was_quiet = true;
			continue;
		} else if (next < p->now + H_NS_PER_STEP) {
			next = p->now + H_NS_PER_STEP;
		}
		was_quiet = false;
		if (next >= until) {
			p->now = until;
			/* What this step did may be what pred waits for. */
			return pred && pred(p, arg) ? H_DONE : H_TIME_LIMIT;
		}
		p->now = next;
	}
	return H_STEP_LIMIT;
}

/* Runs until nothing more can happen (bounded to an hour of virtual time). */
static inline enum h_run_result h_settle(struct h_pair *p)
{
	return h_run(p, p->now + 3600ull * 1000000000ull, NULL, NULL);
}

/* ---- completions ------------------------------------------------------- */

static inline int h_poll(struct xr_cq_impl *cq, struct xr_wc *wc, int n)
{
	return xr_core_poll_cq(cq, n, wc);
}

/* Exactly one completion must be waiting; returns it (zeroed if none). */
static inline struct xr_wc h_poll_one(struct xr_cq_impl *cq, const char *what)
{
	struct xr_wc wc = {0};
	int n = h_poll(cq, &wc, 1);

	CHECK(n == 1, "%s: expected a completion, got none", what);
	return wc;
}

static inline void h_expect_wc(struct xr_cq_impl *cq, const char *what, uint64_t wr_id,
			       enum xr_wc_status status, enum xr_wc_opcode opcode)
{
	struct xr_wc wc = {0};

	if (h_poll(cq, &wc, 1) != 1) {
		CHECK(0, "%s: expected completion of wr %" PRIu64 " with %s, got none", what, wr_id,
		      xr_wc_status_str(status));
		return;
	}
	CHECK(wc.wr_id == wr_id && wc.status == status &&
		  (status != XR_WC_SUCCESS || wc.opcode == opcode),
	      "%s: expected wr %" PRIu64 " %s opcode %d, got wr %" PRIu64 " %s opcode %d", what,
	      wr_id, xr_wc_status_str(status), opcode, wc.wr_id, xr_wc_status_str(wc.status),
	      wc.opcode);
}

static inline void h_expect_no_wc(struct xr_cq_impl *cq, const char *what)
{
	struct xr_wc wc;
	int n = h_poll(cq, &wc, 1);

	CHECK(n == 0, "%s: unexpected completion wr %" PRIu64 " %s", what, wc.wr_id,
	      xr_wc_status_str(wc.status));
}

/* ---- posting ------------------------------------------------------------ */

static inline int h_post_send(struct h_pair *p, int s, uint64_t wr_id, struct xr_sge *sge,
			      int num_sge, enum xr_wr_opcode op, unsigned int flags,
			      uint32_t imm_be)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = num_sge,
				.opcode = op,
				.send_flags = flags,
				.imm_data = imm_be};
	struct xr_send_wr *bad = NULL;

	return xr_core_post_send(p->side[s].qp, &wr, &bad);
}

/* A signaled WRITE from side s: len bytes at src_off of src to dst_off of dst. */
static inline int h_post_write(struct h_pair *p, int s, uint64_t wr_id, const struct h_buf *src,
			       size_t src_off, const struct h_buf *dst, size_t dst_off,
			       uint32_t len)
{
	struct xr_sge sge = h_sge(src, src_off, len);
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_RDMA_WRITE,
	    .send_flags = XR_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)dst->base + dst_off, .rkey = dst->mr->rkey}};
	struct xr_send_wr *bad = NULL;

	return xr_core_post_send(p->side[s].qp, &wr, &bad);
}

static inline int h_post_recv(struct h_pair *p, int s, uint64_t wr_id, struct xr_sge *sge,
			      int num_sge)
{
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = num_sge};
	struct xr_recv_wr *bad = NULL;

	return xr_core_post_recv(p->side[s].qp, &wr, &bad);
}

/* A byte pattern that differs per message and per offset. */
static inline uint8_t h_pattern(uint64_t msg, size_t off)
{
	uint64_t x = (msg + 1) * 0x9e3779b97f4a7c15ull + off * 0xff51afd7ed558ccdull;

	return (uint8_t)(x >> 56 ^ x >> 23);
}

static inline void h_fill(uint8_t *dst, size_t len, uint64_t msg)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = h_pattern(msg, i);
}

/* Index of the first byte of buf[0..len) that differs from the pattern, or -1. */
static inline long h_first_mismatch(const uint8_t *buf, size_t len, uint64_t msg)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != h_pattern(msg, i))
			return (long)i;
	return -1;
}

/* Index of the first byte of buf[0..len) that is not fill, or -1. */
static inline long h_first_not(const uint8_t *buf, size_t len, uint8_t fill)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != fill)
			return (long)i;
	return -1;
}

/* ---- forged frames ------------------------------------------------------ */

/*
 * What a third host on the segment (or a buggy peer) sends: any opcode along
 * any path, built with the core's own builder so that its ICRC is right and
 * only what it claims can betray it. h_forge_begin lays the frame out, the
 * caller fills f->out.ext (extension headers, after the BTH) and the
 * payload (set to fill already), h_forge_deliver seals it and hands it to a
 * core at once, between two steps of whatever exchange is running.
 */
struct h_forge {
	uint8_t frame[XR_MEM_FRAME_SIZE];
	struct xr_pkt_out out;
};

/* The path side from's QP sends along: what a forger claiming to be it starts from. */
static inline struct xr_path h_path_from(const struct h_pair *p, int from)
{
	return p->side[from].qp->path;
}

/* A GID on the hosts' subnet that belongs to neither side: a third host's. */
static inline union xr_gid h_third_gid(void)
{
	return h_gid_of_side(98);
}

static inline bool h_forge_begin(struct h_forge *f, const struct xr_path *path, uint8_t opcode,
				 uint32_t dqpn, uint32_t psn, uint32_t payload_len, uint8_t fill)
{
	struct xr_bth_fields bth = {.opcode = opcode, .dqpn = dqpn, .psn = psn & XR_PSN_MASK};

	if (xr_pkt_build(f->frame, sizeof(f->frame), path, &bth, payload_len, 0x4242, &f->out)) {
		CHECK(false, "forge opcode %#x with %u payload bytes", opcode, payload_len);
		return false;
	}
	memset(f->out.payload, fill, payload_len);
	return true;
}

static inline void h_forge_deliver(struct h_pair *p, int to, struct h_forge *f)
{
	xr_pkt_seal(&f->out);
	xr_core_rx(p->side[to].core, f->out.frame, f->out.frame_len, XR_RX_NO_QUEUE, p->now);
}

static inline void h_put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void h_put64(uint8_t *b, uint64_t v)
{
	h_put32(b, (uint32_t)(v >> 32));
	h_put32(b + 4, (uint32_t)v);
}

/*
 * A response (ACK, NAK, RNR NAK as syndrome says; ATOMIC ACK with orig;
 * READ response with payload_len bytes of fill) for side to's QP at psn,
 * along path, delivered at once.
 */
static inline void h_forge_response(struct h_pair *p, int to, const struct xr_path *path,
				    uint8_t opcode, uint32_t psn, uint8_t syndrome, uint64_t orig,
				    uint32_t payload_len, uint8_t fill)
{
	uint32_t flags = xr_opinfo[opcode].flags;
	struct h_forge f;

	if (!h_forge_begin(&f, path, opcode, p->side[to].qp->pub.qp_num, psn,
			   (flags & XR_OPF_PAYLOAD) ? payload_len : 0, fill))
		return;
	if (flags & XR_OPF_AETH)
		h_put32(f.out.bth + xr_aeth_off(flags), (uint32_t)syndrome << 24);
	if (flags & XR_OPF_ATMACK)
		h_put64(f.out.bth + xr_atmack_off(flags), orig);
	h_forge_deliver(p, to, &f);
}

/* Frames the engine of side s dropped for what they claimed rather than for damage. */
static inline uint64_t h_hostile_drops(const struct h_pair *p, int s)
{
	const struct xr_engine_stats *st = &p->side[s].core->stats;

	return st->rx_bad_src + st->rx_bad_dst + st->rx_ghost_acks + st->rx_bad_response;
}

#endif /* XROCE_TESTS_CORE_HARNESS_H */
