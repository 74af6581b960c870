/* SPDX-License-Identifier: MIT */
/*
 * extended server DEV GID_INDEX PORT
 * extended client DEV GID_INDEX PORT SERVER_IPV4
 *
 * The extended verbs end to end, built against Debian's -libverbs like any
 * application and run under xroce-run, one side per namespace (QP numbers,
 * GIDs and keys over TCP). Both sides use CQs from ibv_create_cq_ex, read
 * with ibv_start_poll / ibv_next_poll / ibv_end_poll and every
 * ibv_wc_read_* accessor, and QPs from ibv_create_qp_ex, posted to with the
 * ibv_wr_* interface. The client, over RC:
 *   1. SEND (one SGE), SEND with immediate (an SGE list), WRITE, WRITE with
 *      immediate (inline data, its buffer overwritten before the post), in
 *      one ibv_wr_start..ibv_wr_complete;
 *   2. READ, compare-and-swap, fetch-and-add;
 *   3. a READ through a type 2 memory window the server bound with
 *      ibv_wr_bind_mw (remote read only, over part of its MR), which the
 *      server then invalidates with ibv_wr_local_inv;
 * then over UD a SEND with immediate through ibv_wr_set_ud_addr, which the
 * server answers through an AH from ibv_init_ah_from_wc and
 * ibv_create_ah_from_wc. Every completion is checked field by field against
 * the work request, and every byte where it landed. Then bad input: too
 * many SGEs, too much inline data, an AH on the RC QP, ibv_wr_* outside
 * ibv_wr_start..complete, a setter before any builder, an operation the QP
 * was not created for, wr_flags it does not know, an aborted batch,
 * ibv_post_send with too many SGEs, and what ibv_create_qp_ex and
 * ibv_create_cq_ex refuse (create flags other than a UD QP's
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, which is taken): each gets its errno
 * and posts nothing, which the server proves by receiving exactly the one
 * SEND the client posts last.
 * Also ibv_query_device_ex and ibv_query_port's extended attributes.
 * Prints "extended SIDE: ok: N checks" and exits 0, or names the first failure.
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PROGRAM "extended"
#include "../check.h"
#include "../two_sided.h"

#define BUF_SIZE (64 * 1024)
#define RC_RECV_SLOT 256   /* RC receives: slots from 0 */
#define UD_RECV_AREA 8192  /* UD receives: 512-byte slots from here */
#define WRITE_AREA 16384   /* the client's WRITEs land here on the server */
#define READ_AREA 20480	   /* the client READs this from the server */
#define ATOMIC_WORD 24576  /* the server's word for the atomics */
#define SOURCE_AREA 32768  /* the client's send data */
#define READ_INTO 40960	   /* where the client's READ lands */
#define ATOMIC_INTO 41984  /* the atomics' original values */
#define UD_REPLY_AREA 8192 /* the client's UD receive */
#define WINDOW_OFFSET 512  /* the server's window, into its READ_AREA */
#define WINDOW_LENGTH 1024
#define WINDOW_READ_INTO 44032 /* where the client's READ through it lands */
#define QKEY 0x11111111u
#define GRH_BYTES 40
#define TIMEOUT_MS 20000
#define MAX_SEND_SGE 2
#define MAX_INLINE 64

struct peer {
	uint32_t rc_qpn, ud_qpn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *rc, *ud;
	struct ibv_qp_ex *rcx, *udx;
	int gid_index;
	union ibv_gid gid;
	struct peer remote;
	int sock;
};

/* One completion as the ibv_wc_read_* accessors give it. */
struct got {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, qp_num, src_qp, slid;
	__be32 imm;
	unsigned int wc_flags;
	uint8_t sl, dlid_path_bits;
};

static void read_current(struct ibv_cq_ex *cq, struct got *g)
{
	g->wr_id = cq->wr_id;
	g->status = cq->status;
	g->opcode = ibv_wc_read_opcode(cq);
	g->vendor_err = ibv_wc_read_vendor_err(cq);
	g->byte_len = ibv_wc_read_byte_len(cq);
	g->imm = ibv_wc_read_imm_data(cq);
	g->qp_num = ibv_wc_read_qp_num(cq);
	g->src_qp = ibv_wc_read_src_qp(cq);
	g->wc_flags = ibv_wc_read_wc_flags(cq);
	g->slid = ibv_wc_read_slid(cq);
	g->sl = ibv_wc_read_sl(cq);
	g->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/* Up to n completions within timeout_ms, each poll walking with ibv_next_poll. */
static int poll_ex(struct ibv_cq_ex *cq, struct got *out, int n, int timeout_ms)
{
	struct ibv_poll_cq_attr attr = {0};
	long long deadline = now_ms() + timeout_ms;
	int got = 0, ret;

	while (got < n && now_ms() < deadline) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			continue;
		CHECK(ret == 0, "ibv_start_poll: %d", ret);
		read_current(cq, &out[got++]);
		while (got < n && (ret = ibv_next_poll(cq)) == 0)
			read_current(cq, &out[got++]);
		CHECK(got == n || ret == ENOENT, "ibv_next_poll: %d", ret);
		ibv_end_poll(cq);
	}
	return got;
}

static void expect(const struct got *g, const char *what, uint64_t wr_id, enum ibv_wc_opcode opcode,
		   uint32_t byte_len, uint32_t qp_num, unsigned int wc_flags)
{
	CHECK(g->wr_id == wr_id && g->status == IBV_WC_SUCCESS,
	      "%s: wr_id %llu status %s, want %llu success", what, (unsigned long long)g->wr_id,
	      ibv_wc_status_str(g->status), (unsigned long long)wr_id);
	CHECK(g->opcode == opcode, "%s: opcode %d, want %d", what, g->opcode, opcode);
	CHECK(g->byte_len == byte_len, "%s: byte_len %u, want %u", what, g->byte_len, byte_len);
	CHECK(g->qp_num == qp_num, "%s: qp_num 0x%x, want 0x%x", what, g->qp_num, qp_num);
	CHECK(g->wc_flags == wc_flags, "%s: wc_flags 0x%x, want 0x%x", what, g->wc_flags, wc_flags);
	CHECK(g->vendor_err == 0 && g->slid == 0 && g->sl == 0 && g->dlid_path_bits == 0,
	      "%s: vendor_err %u slid %u sl %u dlid_path_bits %u, want all 0 on RoCE", what,
	      g->vendor_err, g->slid, g->sl, g->dlid_path_bits);
}

static void expect_one(struct ibv_cq_ex *cq, const char *what, struct got *g)
{
	CHECK(poll_ex(cq, g, 1, TIMEOUT_MS) == 1, "%s: no completion in %d ms", what, TIMEOUT_MS);
}

static void expect_none(struct ibv_cq_ex *cq, const char *what)
{
	struct got g = {0};

	CHECK(poll_ex(cq, &g, 1, 200) == 0, "%s: a completion arrived (wr_id %llu, status %s)",
	      what, (unsigned long long)g.wr_id, ibv_wc_status_str(g.status));
}

/* ---- setup ------------------------------------------------------------------------- */

static void check_queries(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dev;
	struct ibv_port_attr port;

	CHECK(ibv_query_device_ex(ctx, NULL, &dev) == 0, "ibv_query_device_ex");
	CHECK(dev.phys_port_cnt_ex == 1 && dev.orig_attr.phys_port_cnt == 1,
	      "phys_port_cnt_ex %u, phys_port_cnt %u: want 1", dev.phys_port_cnt_ex,
	      dev.orig_attr.phys_port_cnt);
	CHECK(dev.orig_attr.max_qp_wr > 0 && dev.orig_attr.max_sge >= MAX_SEND_SGE,
	      "max_qp_wr %d max_sge %d", dev.orig_attr.max_qp_wr, dev.orig_attr.max_sge);
	/* No timestamps: what ibv_create_cq_ex's refusal below agrees with. */
	CHECK(dev.completion_timestamp_mask == 0 && dev.hca_core_clock == 0,
	      "completion_timestamp_mask 0x%llx, hca_core_clock %llu: want 0",
	      (unsigned long long)dev.completion_timestamp_mask,
	      (unsigned long long)dev.hca_core_clock);
	CHECK(ibv_query_port(ctx, 1, &port) == 0, "ibv_query_port");
	CHECK(port.state == IBV_PORT_ACTIVE && port.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "port state %d link_layer %d", port.state, port.link_layer);
	CHECK(port.flags & IBV_QPF_GRH_REQUIRED, "port flags 0x%x: want IBV_QPF_GRH_REQUIRED",
	      port.flags);
	CHECK(ibv_query_port(ctx, 2, &port) == EINVAL, "ibv_query_port 2: want EINVAL");
}

static struct ibv_cq_ex *create_cq_ex(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex attr = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &attr);

	CHECK(cq != NULL, "ibv_create_cq_ex: %s", strerror(errno));
	return cq;
}

static struct ibv_qp *create_qp_ex(struct side *s, enum ibv_qp_type type, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex attr = {
	    .send_cq = ibv_cq_ex_to_cq(s->scq),
	    .recv_cq = ibv_cq_ex_to_cq(s->rcq),
	    .cap = {.max_send_wr = 16,
		    .max_recv_wr = 16,
		    .max_send_sge = MAX_SEND_SGE,
		    .max_recv_sge = 1,
		    .max_inline_data = MAX_INLINE},
	    .qp_type = type,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = s->pd,
	    .send_ops_flags = send_ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &attr);

	CHECK(qp != NULL, "ibv_create_qp_ex type %d: %s", type, strerror(errno));
	CHECK(attr.cap.max_send_sge == MAX_SEND_SGE && attr.cap.max_inline_data >= MAX_INLINE,
	      "caps: max_send_sge %u max_inline_data %u", attr.cap.max_send_sge,
	      attr.cap.max_inline_data);
	return qp;
}

/* INIT: receives can be posted. */
static void init_qps(struct side *s)
{
	rc_to_init(s->rc,
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		   "RC INIT");
	ud_to_init(s->ud, QKEY);
}

static void bring_up(struct side *s)
{
	rc_to_rtr(s->rc, s->remote.rc_qpn, 0, &s->remote.gid, s->gid_index, 4, "RC RTR");
	rc_to_rts(s->rc, 0, 4, "RC RTS");
	ud_to_rts(s->ud);
}

static void post_recv(struct ibv_qp *qp, struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(s->buf + off), .length = len, .lkey = s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "ibv_post_recv %llu", (unsigned long long)wr_id);
}

static void setup(struct side *s, const char *dev, int gid_index, bool server)
{
	struct peer me;

	s->ctx = open_device(dev);
	check_queries(s->ctx);
	s->gid_index = gid_index;
	CHECK(ibv_query_gid(s->ctx, 1, gid_index, &s->gid) == 0, "ibv_query_gid %d", gid_index);
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd != NULL, "ibv_alloc_pd");
	s->buf = aligned_alloc(4096, BUF_SIZE);
	CHECK(s->buf != NULL, "buffer");
	memset(s->buf, 0, BUF_SIZE);
	for (size_t i = 0; i < 4096; i++) {
		s->buf[SOURCE_AREA + i] = pattern(i, 7);
		s->buf[READ_AREA + i] = pattern(i, 13);
	}
	*(uint64_t *)(s->buf + ATOMIC_WORD) = 100;
	s->mr =
	    ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	CHECK(s->mr != NULL, "ibv_reg_mr: %s", strerror(errno));
	s->scq = create_cq_ex(s->ctx);
	s->rcq = create_cq_ex(s->ctx);
	s->rc = create_qp_ex(s, IBV_QPT_RC,
			     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |
				 IBV_QP_EX_WITH_LOCAL_INV);
	s->ud = create_qp_ex(s, IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	s->rcx = ibv_qp_to_qp_ex(s->rc);
	s->udx = ibv_qp_to_qp_ex(s->ud);
	CHECK(s->rcx && s->udx && &s->rcx->qp_base == s->rc, "ibv_qp_to_qp_ex");
	init_qps(s);
	/* The server's receives are there before the client can send. */
	if (server) {
		for (int i = 0; i < 8; i++)
			post_recv(s->rc, s, 100 + (uint64_t)i, (size_t)i * RC_RECV_SLOT,
				  RC_RECV_SLOT);
		for (int i = 0; i < 2; i++)
			post_recv(s->ud, s, 200 + (uint64_t)i, UD_RECV_AREA + (size_t)i * 512, 512);
	}
	me = (struct peer){.rc_qpn = s->rc->qp_num,
			   .ud_qpn = s->ud->qp_num,
			   .rkey = s->mr->rkey,
			   .addr = (uintptr_t)s->buf,
			   .gid = s->gid};
	side_xfer(s->sock, &me, sizeof(me), true, "QP numbers");
	side_xfer(s->sock, &s->remote, sizeof(s->remote), false, "the peer's QP numbers");
	bring_up(s);
}

static void teardown(struct side *s)
{
	CHECK(ibv_destroy_qp(s->rc) == 0 && ibv_destroy_qp(s->ud) == 0, "ibv_destroy_qp");
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(s->scq)) == 0 &&
		  ibv_destroy_cq(ibv_cq_ex_to_cq(s->rcq)) == 0,
	      "ibv_destroy_cq");
	CHECK(ibv_dereg_mr(s->mr) == 0 && ibv_dealloc_pd(s->pd) == 0, "dereg/dealloc");
	CHECK(ibv_close_device(s->ctx) == 0, "ibv_close_device");
	free(s->buf);
	close(s->sock);
}

static struct ibv_ah *ah_to(struct side *s, const union ibv_gid *gid)
{
	struct ibv_ah_attr a = {
	    .is_global = 1,
	    .port_num = 1,
	    .grh = {.dgid = *gid, .sgid_index = (uint8_t)s->gid_index, .hop_limit = 64}};
	struct ibv_ah *ah = ibv_create_ah(s->pd, &a);

	CHECK(ah != NULL, "ibv_create_ah: %s", strerror(errno));
	return ah;
}

static uint64_t src(struct side *s, size_t off)
{
	return (uintptr_t)(s->buf + SOURCE_AREA + off);
}

/* ---- the client ---------------------------------------------------------------- */

static void client_rc_batch(struct side *s)
{
	struct ibv_qp_ex *q = s->rcx;
	struct ibv_sge list[2] = {{.addr = src(s, 100), .length = 50, .lkey = s->mr->lkey},
				  {.addr = src(s, 200), .length = 70, .lkey = s->mr->lkey}};
	uint8_t inline_bytes[32];
	struct got g[4];

	memset(inline_bytes, 0x5a, sizeof(inline_bytes));
	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 1;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 100);
	q->wr_id = 2;
	ibv_wr_send_imm(q, htobe32(0xa1b2c3d4));
	ibv_wr_set_sge_list(q, 2, list);
	q->wr_id = 3;
	ibv_wr_rdma_write(q, s->remote.rkey, s->remote.addr + WRITE_AREA);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 300), 200);
	q->wr_id = 4;
	ibv_wr_rdma_write_imm(q, s->remote.rkey, s->remote.addr + WRITE_AREA + 200,
			      htobe32(0x01020304));
	ibv_wr_set_inline_data(q, inline_bytes, sizeof(inline_bytes));
	/* Inline data is copied by the setter: this must not reach the wire. */
	memset(inline_bytes, 0xee, sizeof(inline_bytes));
	CHECK(ibv_wr_complete(q) == 0, "ibv_wr_complete of SEND, SEND_IMM, WRITE, WRITE_IMM");

	CHECK(poll_ex(s->scq, g, 4, TIMEOUT_MS) == 4, "4 send completions");
	expect(&g[0], "SEND", 1, IBV_WC_SEND, 100, s->rc->qp_num, 0);
	expect(&g[1], "SEND_IMM", 2, IBV_WC_SEND, 120, s->rc->qp_num, 0);
	expect(&g[2], "WRITE", 3, IBV_WC_RDMA_WRITE, 200, s->rc->qp_num, 0);
	expect(&g[3], "WRITE_IMM", 4, IBV_WC_RDMA_WRITE, 32, s->rc->qp_num, 0);
}

static void client_read_atomics(struct side *s)
{
	struct ibv_qp_ex *q = s->rcx;
	uint64_t *orig = (uint64_t *)(s->buf + ATOMIC_INTO);
	struct got g[3];

	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 5;
	ibv_wr_rdma_read(q, s->remote.rkey, s->remote.addr + READ_AREA);
	ibv_wr_set_sge(q, s->mr->lkey, (uintptr_t)(s->buf + READ_INTO), 300);
	q->wr_id = 6;
	ibv_wr_atomic_cmp_swp(q, s->remote.rkey, s->remote.addr + ATOMIC_WORD, 100, 200);
	ibv_wr_set_sge(q, s->mr->lkey, (uintptr_t)&orig[0], 8);
	q->wr_id = 7;
	ibv_wr_atomic_fetch_add(q, s->remote.rkey, s->remote.addr + ATOMIC_WORD, 5);
	ibv_wr_set_sge(q, s->mr->lkey, (uintptr_t)&orig[1], 8);
	CHECK(ibv_wr_complete(q) == 0, "ibv_wr_complete of READ, CAS, FAA");

	CHECK(poll_ex(s->scq, g, 3, TIMEOUT_MS) == 3, "3 READ/atomic completions");
	expect(&g[0], "READ", 5, IBV_WC_RDMA_READ, 300, s->rc->qp_num, 0);
	expect(&g[1], "CAS", 6, IBV_WC_COMP_SWAP, 8, s->rc->qp_num, 0);
	expect(&g[2], "FAA", 7, IBV_WC_FETCH_ADD, 8, s->rc->qp_num, 0);
	for (size_t i = 0; i < 300; i++)
		CHECK(s->buf[READ_INTO + i] == pattern(i, 13), "READ byte %zu: 0x%02x, want 0x%02x",
		      i, s->buf[READ_INTO + i], pattern(i, 13));
	CHECK(orig[0] == 100 && orig[1] == 200, "CAS returned %llu (want 100), FAA %llu (want 200)",
	      (unsigned long long)orig[0], (unsigned long long)orig[1]);
}

/* The server's window begins WINDOW_OFFSET into its READ_AREA. */
static void client_read_window(struct side *s)
{
	struct ibv_qp_ex *q = s->rcx;
	uint32_t window_rkey;
	struct got g;

	side_xfer(s->sock, &window_rkey, sizeof(window_rkey), false, "the window's rkey");
	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 8;
	ibv_wr_rdma_read(q, window_rkey, s->remote.addr + READ_AREA + WINDOW_OFFSET);
	ibv_wr_set_sge(q, s->mr->lkey, (uintptr_t)(s->buf + WINDOW_READ_INTO), WINDOW_LENGTH);
	CHECK(ibv_wr_complete(q) == 0, "ibv_wr_complete of the READ through the window");
	expect_one(s->scq, "READ through the window", &g);
	expect(&g, "READ through the window", 8, IBV_WC_RDMA_READ, WINDOW_LENGTH, s->rc->qp_num, 0);
	for (size_t i = 0; i < WINDOW_LENGTH; i++)
		CHECK(s->buf[WINDOW_READ_INTO + i] == pattern(WINDOW_OFFSET + i, 13),
		      "READ through the window, byte %zu", i);
}

static void client_ud(struct side *s)
{
	struct ibv_ah *ah = ah_to(s, &s->remote.gid);
	struct got g;
	uint8_t data[48];

	post_recv(s->ud, s, 300, UD_REPLY_AREA, 512);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i, 29);
	ibv_wr_start(s->udx);
	s->udx->wr_flags = IBV_SEND_SIGNALED;
	s->udx->wr_id = 8;
	ibv_wr_send_imm(s->udx, htobe32(0x0badf00d));
	ibv_wr_set_ud_addr(s->udx, ah, s->remote.ud_qpn, QKEY);
	ibv_wr_set_inline_data(s->udx, data, sizeof(data));
	CHECK(ibv_wr_complete(s->udx) == 0, "ibv_wr_complete of a UD SEND_IMM");
	expect_one(s->scq, "UD SEND_IMM", &g);
	expect(&g, "UD SEND_IMM", 8, IBV_WC_SEND, 48, s->ud->qp_num, 0);

	/* The server's answer, through an AH made from this datagram's completion. */
	expect_one(s->rcq, "UD reply", &g);
	expect(&g, "UD reply", 300, IBV_WC_RECV, GRH_BYTES + 16, s->ud->qp_num, IBV_WC_GRH);
	CHECK(g.src_qp == s->remote.ud_qpn, "UD reply src_qp 0x%x, want 0x%x", g.src_qp,
	      s->remote.ud_qpn);
	for (size_t i = 0; i < 16; i++)
		CHECK(s->buf[UD_REPLY_AREA + GRH_BYTES + i] == pattern(i, 31), "UD reply byte %zu",
		      i);
	CHECK(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
}

static void client_bad_input(struct side *s)
{
	struct ibv_qp_ex *q = s->rcx;
	struct ibv_sge three[MAX_SEND_SGE + 1];
	uint8_t too_much[MAX_INLINE + 1] = {0};
	struct ibv_ah *ah = ah_to(s, &s->remote.gid);
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_cq_init_attr_ex ca;
	struct ibv_qp_init_attr legacy;
	struct ibv_qp *qp;
	int ret;

	for (int i = 0; i <= MAX_SEND_SGE; i++)
		three[i] = (struct ibv_sge){.addr = src(s, 0), .length = 8, .lkey = s->mr->lkey};
	q->wr_flags = IBV_SEND_SIGNALED;

	ibv_wr_start(q);
	q->wr_id = 90;
	ibv_wr_send(q);
	ibv_wr_set_sge_list(q, MAX_SEND_SGE + 1, three);
	ret = ibv_wr_complete(q);
	CHECK(ret == ENOSPC, "%d SGEs on a QP of %d: %d, want ENOSPC", MAX_SEND_SGE + 1,
	      MAX_SEND_SGE, ret);

	ibv_wr_start(q);
	q->wr_id = 91;
	ibv_wr_send(q);
	ibv_wr_set_inline_data(q, too_much, sizeof(too_much));
	ret = ibv_wr_complete(q);
	CHECK(ret == ENOSPC, "%zu inline bytes on a QP of %d: %d, want ENOSPC", sizeof(too_much),
	      MAX_INLINE, ret);

	ibv_wr_start(q);
	q->wr_id = 92;
	ibv_wr_send(q);
	ibv_wr_set_ud_addr(q, ah, s->remote.ud_qpn, QKEY);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 8);
	ret = ibv_wr_complete(q);
	CHECK(ret == EINVAL, "an AH on the RC QP: %d, want EINVAL", ret);

	/* Outside ibv_wr_start..complete: nothing to build, nothing to complete. */
	q->wr_id = 93;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 8);
	ret = ibv_wr_complete(q);
	CHECK(ret == EINVAL, "ibv_wr_complete without ibv_wr_start: %d, want EINVAL", ret);

	ibv_wr_start(q);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 8);
	ret = ibv_wr_complete(q);
	CHECK(ret == EINVAL, "a setter before any builder: %d, want EINVAL", ret);

	ibv_wr_start(s->udx);
	s->udx->wr_id = 94;
	ibv_wr_rdma_write(s->udx, s->remote.rkey, s->remote.addr);
	ret = ibv_wr_complete(s->udx);
	CHECK(ret == EOPNOTSUPP, "WRITE on a QP created for SENDs: %d, want EOPNOTSUPP", ret);

	ibv_wr_start(q);
	q->wr_id = 95;
	q->wr_flags = IBV_SEND_IP_CSUM;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 8);
	ret = ibv_wr_complete(q);
	CHECK(ret == EINVAL, "wr_flags IBV_SEND_IP_CSUM: %d, want EINVAL", ret);
	q->wr_flags = IBV_SEND_SIGNALED;

	ibv_wr_start(q);
	q->wr_id = 96;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, s->mr->lkey, src(s, 0), 8);
	ibv_wr_abort(q);

	wr = (struct ibv_send_wr){.wr_id = 97,
				  .sg_list = three,
				  .num_sge = MAX_SEND_SGE + 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	ret = ibv_post_send(s->rc, &wr, &bad);
	CHECK(ret == EINVAL && bad == &wr, "ibv_post_send of %d SGEs: %d, want EINVAL at the WR",
	      MAX_SEND_SGE + 1, ret);
	expect_none(s->scq, "refused work requests");

	qa = (struct ibv_qp_init_attr_ex){
	    .send_cq = ibv_cq_ex_to_cq(s->scq),
	    .recv_cq = ibv_cq_ex_to_cq(s->rcq),
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	    .pd = s->pd,
	    .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE};
	errno = 0;
	CHECK(ibv_create_qp_ex(s->ctx, &qa) == NULL && errno == EOPNOTSUPP,
	      "ibv_create_qp_ex of a UD QP with RDMA WRITE: errno %d, want EOPNOTSUPP", errno);
	/* Of the create flags, only a UD QP's blocking of its own multicast loopback is taken. */
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB | IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	CHECK(ibv_create_qp_ex(s->ctx, &qa) == NULL && errno == EOPNOTSUPP,
	      "ibv_create_qp_ex with IBV_QP_CREATE_SCATTER_FCS: errno %d, want EOPNOTSUPP", errno);
	qa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	qa.qp_type = IBV_QPT_RC;
	errno = 0;
	CHECK(ibv_create_qp_ex(s->ctx, &qa) == NULL && errno == EOPNOTSUPP,
	      "ibv_create_qp_ex of an RC QP blocking multicast loopback: errno %d, want EOPNOTSUPP",
	      errno);
	qa.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp_ex(s->ctx, &qa);
	CHECK(qp != NULL, "ibv_create_qp_ex of a UD QP blocking multicast loopback: errno %d",
	      errno);
	CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp of the UD QP blocking multicast loopback");
	ca = (struct ibv_cq_init_attr_ex){
	    .cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
	errno = 0;
	CHECK(ibv_create_cq_ex(s->ctx, &ca) == NULL && errno == EOPNOTSUPP,
	      "ibv_create_cq_ex with completion timestamps: errno %d, want EOPNOTSUPP", errno);
	legacy = (struct ibv_qp_init_attr){
	    .send_cq = ibv_cq_ex_to_cq(s->scq),
	    .recv_cq = ibv_cq_ex_to_cq(s->rcq),
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC};
	qp = ibv_create_qp(s->pd, &legacy);
	CHECK(qp != NULL, "ibv_create_qp");
	CHECK(ibv_qp_to_qp_ex(qp) == NULL, "ibv_qp_to_qp_ex of an ibv_create_qp QP: want NULL");
	CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
	CHECK(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
}

/* The QP still works, and nothing refused reached the server: it gets exactly this. */
static void client_last_send(struct side *s)
{
	struct ibv_wc wc;
	long long deadline = now_ms() + TIMEOUT_MS;
	int n = 0;

	memcpy(s->buf + SOURCE_AREA + 1024, "last one", 8);
	ibv_wr_start(s->rcx);
	s->rcx->wr_id = 99;
	ibv_wr_send(s->rcx);
	ibv_wr_set_sge(s->rcx, s->mr->lkey, src(s, 1024), 8);
	CHECK(ibv_wr_complete(s->rcx) == 0, "ibv_wr_complete after the refusals");
	/* ibv_poll_cq on an extended CQ, as perftest polls it. */
	while (n == 0 && now_ms() < deadline)
		n = ibv_poll_cq(ibv_cq_ex_to_cq(s->scq), 1, &wc);
	CHECK(n == 1 && wc.wr_id == 99 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
	      "last SEND through ibv_poll_cq: n %d wr_id %llu status %s", n,
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	expect_none(s->scq, "after the last SEND");
}

static void client(struct side *s)
{
	client_rc_batch(s);
	side_say(s->sock, '1');
	client_read_atomics(s);
	side_say(s->sock, '2');
	side_hear(s->sock, '2');
	client_read_window(s);
	side_say(s->sock, 'W');
	client_ud(s);
	client_bad_input(s);
	client_last_send(s);
	side_hear(s->sock, 'D');
}

/* ---- the server ---------------------------------------------------------------- */

static void server_rc_batch(struct side *s)
{
	struct got g[3];
	uint8_t want[120];

	CHECK(poll_ex(s->rcq, g, 3, TIMEOUT_MS) == 3, "3 receive completions");
	expect(&g[0], "recv of SEND", 100, IBV_WC_RECV, 100, s->rc->qp_num, 0);
	expect(&g[1], "recv of SEND_IMM", 101, IBV_WC_RECV, 120, s->rc->qp_num, IBV_WC_WITH_IMM);
	CHECK(g[1].imm == htobe32(0xa1b2c3d4), "SEND_IMM imm 0x%x", be32toh(g[1].imm));
	expect(&g[2], "recv of WRITE_IMM", 102, IBV_WC_RECV_RDMA_WITH_IMM, 32, s->rc->qp_num,
	       IBV_WC_WITH_IMM);
	CHECK(g[2].imm == htobe32(0x01020304), "WRITE_IMM imm 0x%x", be32toh(g[2].imm));
	for (size_t i = 0; i < 100; i++)
		CHECK(s->buf[i] == pattern(i, 7), "SEND byte %zu", i);
	for (size_t i = 0; i < 120; i++)
		want[i] = i < 50 ? pattern(100 + i, 7) : pattern(200 + i - 50, 7);
	CHECK(!memcmp(s->buf + RC_RECV_SLOT, want, sizeof(want)), "SEND_IMM's two SGEs' bytes");
	for (size_t i = 0; i < 200; i++)
		CHECK(s->buf[WRITE_AREA + i] == pattern(300 + i, 7), "WRITE byte %zu", i);
	for (size_t i = 0; i < 32; i++)
		CHECK(s->buf[WRITE_AREA + 200 + i] == 0x5a, "WRITE_IMM inline byte %zu: 0x%02x", i,
		      s->buf[WRITE_AREA + 200 + i]);
	CHECK(s->buf[WRITE_AREA + 232] == 0, "a byte past the WRITEs changed");
}

static void server_ud(struct side *s)
{
	struct ibv_ah_attr ah_attr;
	struct ibv_wc wc;
	struct ibv_ah *ah;
	struct ibv_grh *grh = (struct ibv_grh *)(s->buf + UD_RECV_AREA);
	struct got g;
	uint8_t reply[16];

	expect_one(s->rcq, "UD datagram", &g);
	expect(&g, "UD datagram", 200, IBV_WC_RECV, GRH_BYTES + 48, s->ud->qp_num,
	       IBV_WC_GRH | IBV_WC_WITH_IMM);
	CHECK(g.src_qp == s->remote.ud_qpn, "UD src_qp 0x%x, want 0x%x", g.src_qp,
	      s->remote.ud_qpn);
	CHECK(g.imm == htobe32(0x0badf00d), "UD imm 0x%x", be32toh(g.imm));
	for (size_t i = 0; i < 48; i++)
		CHECK(s->buf[UD_RECV_AREA + GRH_BYTES + i] == pattern(i, 29), "UD byte %zu", i);

	/* An ibv_wc from the accessors, for the verbs that take one. */
	wc = (struct ibv_wc){.wr_id = g.wr_id,
			     .status = g.status,
			     .opcode = g.opcode,
			     .byte_len = g.byte_len,
			     .imm_data = g.imm,
			     .qp_num = g.qp_num,
			     .src_qp = g.src_qp,
			     .wc_flags = g.wc_flags};
	CHECK(ibv_init_ah_from_wc(s->ctx, 1, &wc, grh, &ah_attr) == 0, "ibv_init_ah_from_wc");
	CHECK(ah_attr.is_global && ah_attr.port_num == 1 &&
		  !memcmp(&ah_attr.grh.dgid, &s->remote.gid, sizeof(union ibv_gid)),
	      "ibv_init_ah_from_wc: is_global %d port %d, dgid not the client's", ah_attr.is_global,
	      ah_attr.port_num);
	ah = ibv_create_ah_from_wc(s->pd, &wc, grh, 1);
	CHECK(ah != NULL, "ibv_create_ah_from_wc: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(reply); i++)
		reply[i] = pattern(i, 31);
	ibv_wr_start(s->udx);
	s->udx->wr_flags = IBV_SEND_SIGNALED;
	s->udx->wr_id = 400;
	ibv_wr_send(s->udx);
	ibv_wr_set_ud_addr(s->udx, ah, wc.src_qp, QKEY);
	ibv_wr_set_inline_data(s->udx, reply, sizeof(reply));
	CHECK(ibv_wr_complete(s->udx) == 0, "ibv_wr_complete of the UD reply");
	expect_one(s->scq, "UD reply sent", &g);
	expect(&g, "UD reply sent", 400, IBV_WC_SEND, 16, s->ud->qp_num, 0);
	CHECK(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
}

/* A type 2 window over part of READ_AREA, remote read only, for the client's QP. */
static void server_window(struct side *s)
{
	struct ibv_qp_ex *q = s->rcx;
	struct ibv_mw *mw = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info info = {.mr = s->mr,
					.addr = (uintptr_t)(s->buf + READ_AREA + WINDOW_OFFSET),
					.length = WINDOW_LENGTH,
					.mw_access_flags = IBV_ACCESS_REMOTE_READ};
	uint32_t rkey;
	struct got g;

	CHECK(mw != NULL, "ibv_alloc_mw: %s", strerror(errno));
	CHECK(mw->type == IBV_MW_TYPE_2 && mw->pd == s->pd && mw->context == s->ctx,
	      "the window's type, PD and context");
	rkey = ibv_inc_rkey(mw->rkey);
	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 500;
	ibv_wr_bind_mw(q, mw, rkey, &info);
	CHECK(ibv_wr_complete(q) == 0, "ibv_wr_complete of ibv_wr_bind_mw");
	expect_one(s->scq, "bind", &g);
	expect(&g, "bind", 500, IBV_WC_BIND_MW, 0, s->rc->qp_num, 0);
	side_xfer(s->sock, &rkey, sizeof(rkey), true, "the window's rkey");
	side_hear(s->sock, 'W');
	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 501;
	ibv_wr_local_inv(q, rkey);
	CHECK(ibv_wr_complete(q) == 0, "ibv_wr_complete of ibv_wr_local_inv");
	expect_one(s->scq, "local invalidate", &g);
	expect(&g, "local invalidate", 501, IBV_WC_LOCAL_INV, 0, s->rc->qp_num, 0);
	CHECK(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
}

static void server(struct side *s)
{
	struct got g;

	server_rc_batch(s);
	side_hear(s->sock, '1');
	side_hear(s->sock, '2');
	CHECK(*(uint64_t *)(s->buf + ATOMIC_WORD) == 205, "atomic word %llu, want 205",
	      (unsigned long long)*(uint64_t *)(s->buf + ATOMIC_WORD));
	side_say(s->sock, '2');
	server_window(s);
	server_ud(s);
	expect_one(s->rcq, "the client's last SEND", &g);
	expect(&g, "the client's last SEND (nothing refused arrived)", 103, IBV_WC_RECV, 8,
	       s->rc->qp_num, 0);
	CHECK(!memcmp(s->buf + 3 * RC_RECV_SLOT, "last one", 8), "last SEND's bytes");
	expect_none(s->rcq, "after the last SEND");
	side_say(s->sock, 'D');
}

int main(int argc, char **argv)
{
	struct side s = {0};
	const char *side;
	bool is_server;

	is_server = side_is_server(argc, argv);
	side = argv[1];
	s.sock = side_channel(is_server, is_server ? NULL : argv[5], atoi(argv[4]));
	setup(&s, argv[2], atoi(argv[3]), is_server);
	if (is_server)
		server(&s);
	else
		client(&s);
	teardown(&s);
	printf("extended %s: ok: %d checks\n", side, checks);
	return 0;
}
