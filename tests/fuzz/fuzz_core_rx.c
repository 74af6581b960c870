// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness of the transport core's receive path. Each input gets a
 * fresh core (so that a crash replays from its input alone) with QPs of
 * every type (RC, UC, UD) in every state (RESET, INIT, RTR, RTS, SQD, ERR),
 * receives posted, sends posted and sent (READs and atomics outstanding), MRs
 * over memory with PROT_NONE guard pages on both sides (one read-only, one
 * with canary bytes around it), and memory windows of both types.
 *
 * The input is a sequence of records, each a frame for xr_core_rx:
 *   flags, qp selector, key selector, time, length (2 bytes, big-endian), frame
 * Unless its flags say otherwise, the harness fixes up what fuzzing could
 * never guess: the destination QPN becomes one of the QPs' (selector 255: the
 * multicast QPN, and the group's address), the addresses fit that QP's path,
 * R_Keys become real keys (the selector picks one) with addresses near their
 * memory, and the ICRC is recomputed. PSNs can be made relative to what the
 * QP expects. Time advances and xr_core_progress runs as the time byte says.
 *
 * Checked: ASan/UBSan stay quiet, nothing is written outside registered
 * memory (guard pages, canaries, a read-only region), the core's queues
 * never hold more than their size, QPs that take no frames are untouched,
 * every frame the core sends parses with a correct ICRC, and all of it can
 * be torn down without a leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_core_rx: invariant broken at line %d: %s\n",         \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Record flags: each turns one fix-up off, or asks for something on the side. */
enum {
	KEEP_ICRC = 1 << 0,
	KEEP_QPN = 1 << 1,
	KEEP_ADDRESSES = 1 << 2,
	KEEP_KEYS = 1 << 3,
	RELATIVE_PSN = 1 << 4,
	POLL_CQS = 1 << 5,
	STARVE_TX = 1 << 6, /* no transmit buffer while this record is handled */
};
#define RECORD_HDR 6
#define MAX_RECORDS 64
#define MULTICAST_SELECTOR 255

/* Time byte: bits 0-5 a count, bit 6 the unit (1 us or 10 ms), bit 7: progress after rx. */
#define TIME_COUNT_MASK 0x3f
#define TIME_COARSE 0x40
#define TIME_PROGRESS 0x80

#define CANARY 64
#define CANARY_BYTE 0xa5
#define KEY_SLOP 16   /* addresses may miss their memory by this much */
#define RECV_LEN 4000 /* a 3000-byte message of the captures fits */
#define CQ_DEPTH 8
#define TX_CAP 4096
#define QKEY 0x11111111u
#define PEER_QPN_BASE 0x400
#define NSTATES 6

static const enum xr_qp_state states[NSTATES] = {XR_QPS_RESET, XR_QPS_INIT, XR_QPS_RTR,
						 XR_QPS_RTS,   XR_QPS_SQD,  XR_QPS_ERR};
static const enum xr_qp_type types[] = {XR_QPT_RC, XR_QPT_UC, XR_QPT_UD};
#define NTYPES (sizeof(types) / sizeof(types[0]))
#define NQPS (NTYPES * NSTATES)

static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

/* Registered memory: data pages between two PROT_NONE pages. */
struct region {
	uint8_t *map, *data;
	size_t map_len, data_len;
	uint8_t *reg; /* the registered part of data */
	size_t reg_len;
	struct xr_mr *mr;
};

enum { REGION_EXACT, REGION_CANARIED, REGION_READ_ONLY, NREGIONS };

/* A key a frame may name, and the memory it reaches. */
struct key {
	uint32_t rkey;
	uint64_t base, len;
};

struct fixture {
	struct xr_core *core;
	struct xr_pd *pd;
	struct xr_cq_impl *scq, *rcq;
	struct xr_qp_impl *qps[NQPS];
	struct xr_qp_impl *mcast_qp;
	struct xr_ah *ah;
	struct xr_mw *mw[2];
	struct region regions[NREGIONS];
	struct key keys[NREGIONS + 2 + 1];
	int nkeys;
	union xr_gid our_gid, peer_gid, group_gid;
	uint64_t now;
	bool starve_tx;
	int tx_outstanding; /* buffers the core holds: none once it returns */
};

static uint8_t *tx_alloc(void *ctx, uint32_t *cap)
{
	struct fixture *f = ctx;
	uint8_t *buf;

	if (f->starve_tx)
		return NULL;
	/* Exactly cap bytes: ASan sees a frame built past its buffer. */
	buf = malloc(TX_CAP);
	REQUIRE(buf);
	f->tx_outstanding++;
	*cap = TX_CAP;
	return buf;
}

static void tx_submit(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct fixture *f = ctx;
	struct xr_pkt pkt;

	(void)queue;
	REQUIRE(len <= TX_CAP);
	REQUIRE(xr_pkt_parse(buf, len, &pkt) == XR_PARSE_OK);
	REQUIRE(xr_pkt_icrc_ok(&pkt));
	REQUIRE(memcmp(pkt.smac, our_mac, 6) == 0);
	f->tx_outstanding--;
	free(buf);
}

static void tx_abort(void *ctx, uint8_t *buf)
{
	struct fixture *f = ctx;

	f->tx_outstanding--;
	free(buf);
}

static union xr_gid gid_v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	union xr_gid g = {
	    .raw = {[10] = 0xff, [11] = 0xff, [12] = a, [13] = b, [14] = c, [15] = d}};

	return g;
}

static void map_region(struct fixture *f, int which, size_t pages, int access)
{
	struct region *r = &f->regions[which];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int err;

	r->data_len = pages * page;
	r->map_len = r->data_len + 2 * page;
	r->map = mmap(NULL, r->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(r->map != MAP_FAILED);
	r->data = r->map + page;
	REQUIRE(mprotect(r->data, r->data_len, PROT_READ | PROT_WRITE) == 0);
	memset(r->data, 0x10 + which, r->data_len);
	if (which == REGION_CANARIED) {
		memset(r->data, CANARY_BYTE, CANARY);
		memset(r->data + r->data_len - CANARY, CANARY_BYTE, CANARY);
		r->reg = r->data + CANARY;
		r->reg_len = r->data_len - 2 * CANARY;
	} else {
		r->reg = r->data;
		r->reg_len = r->data_len;
	}
	if (which == REGION_READ_ONLY)
		REQUIRE(mprotect(r->data, r->data_len, PROT_READ) == 0);
	r->mr = xr_core_reg_mr(f->pd, r->reg, r->reg_len, access, &err);
	REQUIRE(r->mr);
	f->keys[f->nkeys++] =
	    (struct key){.rkey = r->mr->rkey, .base = (uintptr_t)r->reg, .len = r->reg_len};
}

static struct xr_sge sge_in(const struct fixture *f, int which, size_t off, uint32_t len)
{
	const struct region *r = &f->regions[which];

	return (struct xr_sge){
	    .addr = (uintptr_t)(r->reg + off), .length = len, .lkey = r->mr->lkey};
}

static void post_recvs(struct fixture *f, struct xr_qp_impl *qp, int n)
{
	for (int i = 0; i < n; i++) {
		/* UD receives take the 40-byte GRH first. */
		struct xr_sge sge = sge_in(f, i & 1 ? REGION_CANARIED : REGION_EXACT,
					   (size_t)i * RECV_LEN, RECV_LEN);
		struct xr_recv_wr wr = {.wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
		struct xr_recv_wr *bad;

		REQUIRE(xr_core_post_recv(qp, &wr, &bad) == 0);
	}
}

static void post_send(struct xr_qp_impl *qp, struct xr_send_wr *wr)
{
	struct xr_send_wr *bad;

	wr->send_flags |= XR_SEND_SIGNALED;
	REQUIRE(xr_core_post_send(qp, wr, &bad) == 0);
}

/* Sends of every kind the QP's type allows; READs and atomics land in canaried memory. */
static void post_sends(struct fixture *f, struct xr_qp_impl *qp)
{
	struct xr_sge src = sge_in(f, REGION_EXACT, 0, 300);
	struct xr_sge read_dst = sge_in(f, REGION_CANARIED, 2048, 1500);
	struct xr_sge atomic_dst = sge_in(f, REGION_CANARIED, 8, 8);
	struct xr_send_wr wr;

	if (qp->pub.qp_type == XR_QPT_UD) {
		wr = (struct xr_send_wr){
		    .wr_id = 1, .sg_list = &src, .num_sge = 1, .opcode = XR_WR_SEND};
		wr.wr.ud.ah = f->ah;
		wr.wr.ud.remote_qpn = PEER_QPN_BASE;
		wr.wr.ud.remote_qkey = QKEY;
		post_send(qp, &wr);
		return;
	}
	wr = (struct xr_send_wr){.wr_id = 1, .sg_list = &src, .num_sge = 1, .opcode = XR_WR_SEND};
	post_send(qp, &wr);
	wr = (struct xr_send_wr){
	    .wr_id = 2, .sg_list = &src, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE};
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x1234;
	post_send(qp, &wr);
	if (qp->pub.qp_type != XR_QPT_RC)
		return;
	wr = (struct xr_send_wr){
	    .wr_id = 3, .sg_list = &read_dst, .num_sge = 1, .opcode = XR_WR_RDMA_READ};
	wr.wr.rdma.remote_addr = 0x20000;
	wr.wr.rdma.rkey = 0x1234;
	post_send(qp, &wr);
	wr = (struct xr_send_wr){
	    .wr_id = 4, .sg_list = &atomic_dst, .num_sge = 1, .opcode = XR_WR_ATOMIC_FETCH_AND_ADD};
	wr.wr.atomic.remote_addr = 0x30000;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.rkey = 0x1234;
	post_send(qp, &wr);
}

static void modify(struct xr_qp_impl *qp, struct xr_qp_attr *a, int mask, const uint8_t *dmac)
{
	REQUIRE(xr_core_modify_qp(qp, a, mask | XR_QP_STATE, dmac) == 0);
}

/* Type 1 through xr_bind_mw, type 2 through a BIND_MW work request, both on an RC QP in RTS. */
static void bind_windows(struct fixture *f, struct xr_qp_impl *qp)
{
	struct region *r = &f->regions[REGION_EXACT];
	struct xr_mw_bind bind = {.wr_id = 7,
				  .bind_info = {.mr = r->mr,
						.addr = (uintptr_t)r->reg + 4096,
						.length = 2048,
						.mw_access_flags = XR_ACCESS_REMOTE_WRITE |
								   XR_ACCESS_REMOTE_READ |
								   XR_ACCESS_REMOTE_ATOMIC}};
	struct xr_send_wr wr = {.wr_id = 8, .opcode = XR_WR_BIND_MW};
	int err;

	f->mw[0] = xr_core_alloc_mw(f->pd, XR_MW_TYPE_1, &err);
	f->mw[1] = xr_core_alloc_mw(f->pd, XR_MW_TYPE_2, &err);
	REQUIRE(f->mw[0] && f->mw[1]);
	REQUIRE(xr_core_bind_mw(qp, f->mw[0], &bind) == 0);
	f->keys[f->nkeys++] = (struct key){
	    .rkey = f->mw[0]->rkey, .base = bind.bind_info.addr, .len = bind.bind_info.length};
	wr.bind_mw.mw = f->mw[1];
	wr.bind_mw.rkey = xr_inc_rkey(f->mw[1]->rkey);
	wr.bind_mw.bind_info = bind.bind_info;
	wr.bind_mw.bind_info.addr += 2048;
	post_send(qp, &wr);
	xr_core_progress(f->core, f->now);
	REQUIRE(xr_mw_impl(f->mw[1])->state == XR_MEM_VALID);
	f->keys[f->nkeys++] = (struct key){.rkey = wr.bind_mw.rkey,
					   .base = wr.bind_mw.bind_info.addr,
					   .len = wr.bind_mw.bind_info.length};
}

/* Walks qp up to target, posting receives at INIT and sends at RTS. */
static void bring_up(struct fixture *f, struct xr_qp_impl *qp, int index, enum xr_qp_state target)
{
	enum xr_qp_type type = qp->pub.qp_type;
	struct xr_qp_attr a;
	int mask;

	if (target == XR_QPS_RESET)
		return;
	a = (struct xr_qp_attr){.qp_state = XR_QPS_INIT,
				.port_num = 1,
				.qkey = QKEY,
				.qp_access_flags = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
						   XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC};
	mask = XR_QP_PKEY_INDEX | XR_QP_PORT;
	mask |= type == XR_QPT_UD ? XR_QP_QKEY : XR_QP_ACCESS_FLAGS;
	modify(qp, &a, mask, NULL);
	post_recvs(f, qp, 4);
	if (target == XR_QPS_INIT)
		return;

	a = (struct xr_qp_attr){.qp_state = XR_QPS_RTR};
	mask = 0;
	if (type != XR_QPT_UD) {
		a.path_mtu = XR_MTU_1024;
		a.dest_qp_num = PEER_QPN_BASE + (uint32_t)index;
		a.rq_psn = 0x100u * (uint32_t)index;
		a.ah_attr = (struct xr_ah_attr){
		    .is_global = 1, .port_num = 1, .grh = {.dgid = f->peer_gid, .sgid_index = 0}};
		mask = XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN;
	}
	if (type == XR_QPT_RC) {
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		mask |= XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER;
	}
	modify(qp, &a, mask, peer_mac);
	if (target == XR_QPS_RTR)
		return;

	a = (struct xr_qp_attr){.qp_state = XR_QPS_RTS, .sq_psn = 0xfffff0u - (uint32_t)index};
	mask = XR_QP_SQ_PSN;
	if (type == XR_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY | XR_QP_MAX_QP_RD_ATOMIC;
	}
	modify(qp, &a, mask, NULL);
	/* Before the sends: a bind waits for every WQE ahead of it to complete. */
	if (type == XR_QPT_RC && !f->mw[0])
		bind_windows(f, qp);
	post_sends(f, qp);
	/* Out on the wire: READ and atomic now wait for their responses. */
	xr_core_progress(f->core, f->now);
	if (target == XR_QPS_RTS)
		return;
	a = (struct xr_qp_attr){.qp_state = target};
	modify(qp, &a, 0, NULL);
}

static void setup(struct fixture *f)
{
	struct xr_core_port port = {
	    .ctx = f, .tx_alloc = tx_alloc, .tx_submit = tx_submit, .tx_abort = tx_abort};
	struct xr_ah_attr ah_attr;
	int err, group;
	bool first;

	memset(f, 0, sizeof(*f));
	f->now = 1000000000;
	f->our_gid = gid_v4(10, 0, 0, 1);
	f->peer_gid = gid_v4(10, 0, 0, 2);
	f->group_gid = gid_v4(239, 1, 1, 1);
	f->core = calloc(1, sizeof(*f->core));
	REQUIRE(f->core);
	xr_core_init(f->core, &port);
	f->core->rng = 0x5eed; /* keys the same every run: inputs replay */
	memcpy(f->core->mac, our_mac, 6);
	f->core->gids[0] = f->our_gid;
	f->core->num_gids = 1;
	f->core->active_mtu = XR_MTU_1024;
	f->pd = xr_core_alloc_pd(f->core);
	REQUIRE(f->pd);
	f->scq = xr_core_create_cq(f->core, CQ_DEPTH, &err);
	f->rcq = xr_core_create_cq(f->core, CQ_DEPTH, &err);
	REQUIRE(f->scq && f->rcq);

	map_region(f, REGION_EXACT, 8,
		   XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
		       XR_ACCESS_REMOTE_ATOMIC | XR_ACCESS_MW_BIND);
	map_region(f, REGION_CANARIED, 4,
		   XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC);
	map_region(f, REGION_READ_ONLY, 1, XR_ACCESS_REMOTE_READ);

	ah_attr = (struct xr_ah_attr){
	    .is_global = 1, .port_num = 1, .grh = {.dgid = f->peer_gid, .sgid_index = 0}};
	f->ah = xr_core_create_ah(f->pd, &ah_attr, peer_mac, &err);
	REQUIRE(f->ah);

	for (size_t t = 0; t < NTYPES; t++) {
		for (int s = 0; s < NSTATES; s++) {
			int i = (int)t * NSTATES + s;
			struct xr_qp_init_attr init = {
			    .send_cq = &f->scq->pub,
			    .recv_cq = &f->rcq->pub,
			    .cap = {.max_send_wr = 8,
				    .max_recv_wr = 8,
				    .max_send_sge = 2,
				    .max_recv_sge = 2,
				    .max_inline_data = 64},
			    .qp_type = types[t],
			};

			f->qps[i] = xr_core_create_qp(f->pd, &init, &err);
			REQUIRE(f->qps[i]);
			bring_up(f, f->qps[i], i, states[s]);
		}
	}
	f->keys[f->nkeys++] = (struct key){.rkey = 0xdeadbeef, .base = 0x1000, .len = 4096};
	/* The UD QP in RTS listens to a group too. */
	f->mcast_qp = f->qps[2 * NSTATES + 3];
	REQUIRE(xr_core_attach_mcast(f->mcast_qp, &f->group_gid, &group, &first) == 0);
}

static void check_invariants(const struct fixture *f)
{
	const struct xr_cq_impl *cqs[] = {f->scq, f->rcq};
	const struct xr_core *c = f->core;

	for (int i = 0; i < 2; i++)
		REQUIRE(cqs[i]->head - cqs[i]->tail <= cqs[i]->size);
	REQUIRE(c->events_head - c->events_tail <= XR_MAX_EVENTS);
	REQUIRE(f->tx_outstanding == 0);
	for (size_t i = 0; i < NQPS; i++) {
		const struct xr_qp_impl *qp = f->qps[i];

		REQUIRE(qp->sq_head - qp->sq_tail <= qp->sq_size);
		REQUIRE(qp->srq || qp->rq_head - qp->rq_tail <= qp->rq_size);
		/* Below RTR a QP takes no frame at all. */
		if (states[i % NSTATES] < XR_QPS_RTR) {
			REQUIRE(qp->pub.state == states[i % NSTATES]);
			REQUIRE(qp->rx_frames == 0);
		}
		for (int r = 0; r < XR_MAX_RD_ATOMIC; r++)
			REQUIRE(!qp->rd_res[r].valid || qp->rd_res[r].length <= (1u << 31));
	}
	for (int i = 0; i < CANARY; i++) {
		const struct region *r = &f->regions[REGION_CANARIED];

		REQUIRE(r->data[i] == CANARY_BYTE);
		REQUIRE(r->data[r->data_len - CANARY + i] == CANARY_BYTE);
	}
}

static void drain_cqs(struct fixture *f, int max)
{
	struct xr_wc wc[4];
	struct xr_cq_impl *cqs[] = {f->scq, f->rcq};

	for (int i = 0; i < 2; i++)
		for (int n = 0; n < max; n += 4)
			if (xr_core_poll_cq(cqs[i], 4, wc) < 4)
				break;
}

static void teardown(struct fixture *f)
{
	int group;
	bool last;

	REQUIRE(xr_core_detach_mcast(f->mcast_qp, &f->group_gid, &group, &last) == 0);
	for (size_t i = 0; i < NQPS; i++)
		REQUIRE(xr_core_destroy_qp(f->qps[i]) == 0);
	for (int i = 0; i < 2; i++)
		REQUIRE(xr_core_dealloc_mw(f->mw[i]) == 0);
	REQUIRE(xr_core_destroy_ah(f->ah) == 0);
	for (int i = 0; i < NREGIONS; i++) {
		REQUIRE(xr_core_dereg_mr(f->regions[i].mr) == 0);
		REQUIRE(munmap(f->regions[i].map, f->regions[i].map_len) == 0);
	}
	REQUIRE(xr_core_destroy_cq(f->scq) == 0);
	REQUIRE(xr_core_destroy_cq(f->rcq) == 0);
	REQUIRE(xr_core_dealloc_pd(f->pd) == 0);
	xr_core_release(f->core);
	free(f->core);
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put24(p, v >> 8);
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

/* An address near key's memory: mostly inside, sometimes just past either end. */
static uint64_t va_near(const struct key *k, uint64_t fuzzed)
{
	return k->base + fuzzed % (k->len + 2 * KEY_SLOP) - KEY_SLOP;
}

static void fix_addresses(const struct fixture *f, uint8_t *frame, const struct xr_pkt *pkt,
			  const struct xr_qp_impl *qp, bool multicast)
{
	uint8_t *l3 = frame + pkt->l3_off;
	union xr_gid dst = multicast ? f->group_gid : f->our_gid;
	const union xr_gid *src = qp->pub.qp_type == XR_QPT_UD ? NULL : &qp->path.dgid;

	if (multicast)
		xr_mcast_mac(&dst, frame);
	else
		memcpy(frame, our_mac, 6);
	if (src)
		memcpy(frame + 6, qp->path.dmac, 6);
	if (pkt->ipv6) {
		memcpy(l3 + 24, dst.raw, 16);
		if (src)
			memcpy(l3 + 8, src->raw, 16);
	} else {
		memcpy(l3 + 16, dst.raw + 12, 4);
		if (src)
			memcpy(l3 + 12, src->raw + 12, 4);
	}
}

static void fix_keys(const struct fixture *f, uint8_t *bth, const struct xr_pkt *pkt,
		     uint8_t selector)
{
	const struct key *k = &f->keys[selector % f->nkeys];
	uint32_t fl = pkt->opflags;

	if (fl & XR_OPF_RETH) {
		put64(bth + xr_reth_off(fl), va_near(k, pkt->reth_va));
		put32(bth + xr_reth_off(fl) + 8, k->rkey);
	}
	if (fl & (XR_OPF_ATMETH | XR_OPF_MATMETH)) {
		put64(bth + xr_atmeth_off(fl), va_near(k, pkt->atm_va));
		put32(bth + xr_atmeth_off(fl) + 8, k->rkey);
	}
	if (fl & XR_OPF_IETH)
		put32(bth + xr_ieth_off(fl), k->rkey);
}

/* Near the PSN the QP expects next: a request's, or the response to the oldest request. */
static void fix_psn(uint8_t *bth, const struct xr_pkt *pkt, const struct xr_qp_impl *qp)
{
	uint32_t base = pkt->opflags & XR_OPF_REQUEST ? qp->epsn : qp->acked_psn + 1;
	int8_t delta = (int8_t)(pkt->psn & 0xff);

	put24(bth + 9, (base + (uint32_t)(int32_t)delta) & XR_PSN_MASK);
}

static void fix_up(struct fixture *f, uint8_t *frame, uint32_t len, uint8_t flags, uint8_t qp_sel,
		   uint8_t key_sel)
{
	struct xr_pkt pkt;
	struct xr_qp_impl *qp;
	uint8_t *bth;
	bool multicast = qp_sel == MULTICAST_SELECTOR;

	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK)
		return;
	bth = frame + pkt.bth_off;
	qp = multicast ? f->mcast_qp : f->qps[qp_sel % NQPS];
	if (!(flags & KEEP_QPN))
		put24(bth + 5, multicast ? XR_MULTICAST_QPN : qp->pub.qp_num);
	if (!(flags & KEEP_ADDRESSES))
		fix_addresses(f, frame, &pkt, qp, multicast);
	if (!(flags & KEEP_KEYS))
		fix_keys(f, bth, &pkt, key_sel);
	if (flags & RELATIVE_PSN)
		fix_psn(bth, &pkt, qp);
	if (!(flags & KEEP_ICRC)) {
		uint32_t icrc_off = (uint32_t)(pkt.icrc - frame);
		uint32_t crc = xr_icrc(frame, pkt.l3_off, pkt.ipv6, icrc_off);

		frame[icrc_off] = (uint8_t)crc;
		frame[icrc_off + 1] = (uint8_t)(crc >> 8);
		frame[icrc_off + 2] = (uint8_t)(crc >> 16);
		frame[icrc_off + 3] = (uint8_t)(crc >> 24);
	}
}

static void advance(struct fixture *f, uint8_t t)
{
	uint64_t unit = t & TIME_COARSE ? 10000000ull : 1000ull;

	f->now += (t & TIME_COUNT_MASK) * unit;
	if (t & TIME_PROGRESS)
		xr_core_progress(f->core, f->now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fixture f;
	size_t pos = 0;

	setup(&f);
	check_invariants(&f);
	for (int n = 0; n < MAX_RECORDS && size - pos >= RECORD_HDR; n++) {
		const uint8_t *h = data + pos;
		uint32_t len = (uint32_t)(h[4] << 8 | h[5]);
		uint8_t *frame;

		pos += RECORD_HDR;
		if (len > size - pos)
			len = (uint32_t)(size - pos);
		/* Exactly len bytes: ASan sees a read past the frame. */
		frame = malloc(len ? len : 1);
		REQUIRE(frame);
		memcpy(frame, data + pos, len);
		pos += len;
		fix_up(&f, frame, len, h[0], h[1], h[2]);
		f.starve_tx = h[0] & STARVE_TX;
		xr_core_rx(f.core, frame, len, XR_RX_NO_QUEUE, f.now);
		free(frame);
		advance(&f, h[3]);
		f.starve_tx = false;
		if (h[0] & POLL_CQS)
			drain_cqs(&f, CQ_DEPTH);
		check_invariants(&f);
	}
	/* Let every timer fire: retransmissions, RNR waits, retries running out. */
	for (int i = 0; i < 8; i++) {
		f.now += 1000000000ull;
		xr_core_progress(f.core, f.now);
		drain_cqs(&f, 4 * CQ_DEPTH);
		check_invariants(&f);
	}
	teardown(&f);
	return 0;
}
