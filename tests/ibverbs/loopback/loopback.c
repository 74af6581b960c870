// SPDX-License-Identifier: MIT
/*
 * Loopback through libibverbs: one process, one device, QPs connected to
 * each other through the device's own GID, as hardware RoCE and Soft-RoCE
 * allow. Two RC QPs run every operation in both directions (SEND, SEND with
 * immediate, WRITE, WRITE with immediate, READ, both atomics; messages of
 * one and of many packets) and a WRITE through a wrong rkey, which must
 * complete with IBV_WC_REM_ACCESS_ERR; two UD QPs exchange a datagram
 * through an address handle to the device's own GID. Every completion's
 * status, opcode, length and immediate is checked against its request,
 * and every byte against what was sent.
 *
 * Usage: loopback DEVICE GID_INDEX; prints "loopback: ok: N checks".
 */
#define CHECK_PROGRAM "loopback"
#include <arpa/inet.h>
#include <stdlib.h>

#include "../check.h"
#include "../qp_setup.h"

#define BUF_SIZE (256 * 1024)
#define BIG 65536 /* many packets at any path MTU */
#define SMALL 3000
#define WAIT_MS 10000
#define UD_GRH 40
#define QKEY 0x11111111u

struct end {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static struct ibv_wc wait_one(struct ibv_cq *cq, const char *what)
{
	long long deadline = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() < deadline)
		;
	CHECK(n == 1, "%s: no completion within %d ms (poll %d)", what, WAIT_MS, n);
	return wc;
}

static void expect(struct ibv_cq *cq, const char *what, enum ibv_wc_status status,
		   enum ibv_wc_opcode opcode, uint64_t wr_id)
{
	struct ibv_wc wc = wait_one(cq, what);

	CHECK(wc.status == status, "%s: status %s, want %s", what, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == opcode, "%s: opcode %d, want %d", what, wc.opcode, opcode);
	CHECK(wc.wr_id == wr_id, "%s: wr_id %llu, want %llu", what, (unsigned long long)wc.wr_id,
	      (unsigned long long)wr_id);
}

static void post_recv(struct end *e, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(e->qp, &wr, &bad) == 0, "ibv_post_recv");
}

/* Posts one signaled WR of opcode from e's buffer at off. */
static void post(struct end *e, enum ibv_wr_opcode opcode, uint32_t off, uint32_t len,
		 const struct end *peer, uint32_t peer_off, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = opcode,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.imm_data = htonl(0x1000u + (uint32_t)wr_id);
	if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)peer->buf + peer_off;
		wr.wr.atomic.rkey = rkey;
	} else if (peer) {
		wr.wr.rdma.remote_addr = (uintptr_t)peer->buf + peer_off;
		wr.wr.rdma.rkey = rkey;
	}
	CHECK(ibv_post_send(e->qp, &wr, &bad) == 0, "ibv_post_send opcode %d", opcode);
}

static void fill(uint8_t *p, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static void create_rc(struct ibv_context *ctx, struct ibv_pd *pd, struct end *e)
{
	struct ibv_qp_init_attr init = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC;

	e->buf = aligned_alloc(4096, BUF_SIZE);
	CHECK(e->buf != NULL, "aligned_alloc");
	memset(e->buf, 0, BUF_SIZE);
	e->mr = ibv_reg_mr(pd, e->buf, BUF_SIZE, access);
	CHECK(e->mr != NULL, "ibv_reg_mr: %s", strerror(errno));
	e->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(e->cq != NULL, "ibv_create_cq: %s", strerror(errno));
	init.send_cq = init.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &init);
	CHECK(e->qp != NULL, "ibv_create_qp: %s", strerror(errno));
}

/* INIT -> RTR -> RTS toward the peer QP, through our own GID. */
static void connect_rc(struct end *e, uint32_t peer_qpn, int gid_index, const union ibv_gid *gid)
{
	rc_to_init(e->qp,
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		   "INIT");
	rc_to_rtr(e->qp, peer_qpn, 100, gid, gid_index, 4, "RTR");
	rc_to_rts(e->qp, 100, 4, "RTS");
}

/* Every RC operation from req to rsp; seed makes each direction's bytes its own. */
static void rc_operations(struct end *req, struct end *rsp, unsigned seed)
{
	uint32_t rkey = rsp->mr->rkey;
	uint64_t *remote = (uint64_t *)(rsp->buf + 2 * BIG);
	uint64_t *result = (uint64_t *)(req->buf + 2 * BIG);
	struct ibv_wc wc;

	/* SEND of several packets, then with immediate: the receive sees length and imm. */
	fill(req->buf, SMALL, seed);
	post_recv(rsp, BIG, SMALL, 1);
	post(req, IBV_WR_SEND, 0, SMALL, NULL, 0, 0, 11);
	expect(req->cq, "SEND", IBV_WC_SUCCESS, IBV_WC_SEND, 11);
	wc = wait_one(rsp->cq, "SEND receive");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == SMALL &&
		  !(wc.wc_flags & IBV_WC_WITH_IMM) && wc.qp_num == rsp->qp->qp_num,
	      "SEND receive: status %d opcode %d byte_len %u flags %#x", wc.status, wc.opcode,
	      wc.byte_len, wc.wc_flags);
	CHECK(!memcmp(rsp->buf + BIG, req->buf, SMALL), "SEND: bytes differ");

	post_recv(rsp, BIG, SMALL, 2);
	post(req, IBV_WR_SEND_WITH_IMM, 0, 100, NULL, 0, 0, 12);
	expect(req->cq, "SEND_WITH_IMM", IBV_WC_SUCCESS, IBV_WC_SEND, 12);
	wc = wait_one(rsp->cq, "SEND_WITH_IMM receive");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 100 &&
		  (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x1000u + 12,
	      "SEND_WITH_IMM receive: status %d byte_len %u flags %#x imm %#x", wc.status,
	      wc.byte_len, wc.wc_flags, ntohl(wc.imm_data));

	/* WRITE of many packets lands; READ brings back what the responder has. */
	fill(req->buf, BIG, seed + 1);
	post(req, IBV_WR_RDMA_WRITE, 0, BIG, rsp, 0, rkey, 13);
	expect(req->cq, "WRITE", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 13);
	CHECK(!memcmp(rsp->buf, req->buf, BIG), "WRITE: bytes differ");

	fill(rsp->buf + BIG, BIG, seed + 2);
	post(req, IBV_WR_RDMA_READ, BIG, BIG, rsp, BIG, rkey, 14);
	expect(req->cq, "READ", IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 14);
	CHECK(!memcmp(req->buf + BIG, rsp->buf + BIG, BIG), "READ: bytes differ");

	/* WRITE with immediate consumes a receive and reports the immediate. */
	fill(req->buf, SMALL, seed + 3);
	post_recv(rsp, 0, 0, 3);
	post(req, IBV_WR_RDMA_WRITE_WITH_IMM, 0, SMALL, rsp, 4096, rkey, 15);
	expect(req->cq, "WRITE_WITH_IMM", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 15);
	wc = wait_one(rsp->cq, "WRITE_WITH_IMM receive");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		  wc.byte_len == SMALL && ntohl(wc.imm_data) == 0x1000u + 15,
	      "WRITE_WITH_IMM receive: status %d opcode %d byte_len %u imm %#x", wc.status,
	      wc.opcode, wc.byte_len, ntohl(wc.imm_data));
	CHECK(!memcmp(rsp->buf + 4096, req->buf, SMALL), "WRITE_WITH_IMM: bytes differ");

	/* Atomics: the old value comes back, the remote one changes. */
	*remote = 40 + seed;
	{
		struct ibv_sge sge = {
		    .addr = (uintptr_t)result, .length = 8, .lkey = req->mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 16,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.atomic = {.remote_addr = (uintptr_t)remote,
						       .rkey = rkey,
						       .compare_add = 2}},
				   *bad;

		CHECK(ibv_post_send(req->qp, &wr, &bad) == 0, "post FETCH_ADD");
		expect(req->cq, "FETCH_ADD", IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 16);
		CHECK(*result == 40 + seed && *remote == 42 + seed,
		      "FETCH_ADD: got %llu, remote %llu", (unsigned long long)*result,
		      (unsigned long long)*remote);

		wr.wr_id = 17;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42 + seed;
		wr.wr.atomic.swap = 7;
		CHECK(ibv_post_send(req->qp, &wr, &bad) == 0, "post CMP_SWP");
		expect(req->cq, "CMP_SWP", IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 17);
		CHECK(*result == 42 + seed && *remote == 7, "CMP_SWP: got %llu, remote %llu",
		      (unsigned long long)*result, (unsigned long long)*remote);
	}
}

static void ud_datagram(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index,
			const union ibv_gid *gid)
{
	struct ibv_qp_init_attr init = {
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_ah_attr ah_attr = {
	    .is_global = 1,
	    .port_num = 1,
	    .grh = {.dgid = *gid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64}};
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *buf = calloc(1, 8192);
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	CHECK(cq && buf, "UD CQ/buffer");
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "UD ibv_reg_mr: %s", strerror(errno));
	init.send_cq = init.recv_cq = cq;
	for (int i = 0; i < 2; i++) {
		qp[i] = ibv_create_qp(pd, &init);
		CHECK(qp[i] != NULL, "UD ibv_create_qp: %s", strerror(errno));
		ud_to_init(qp[i], QKEY);
		ud_to_rts(qp[i]);
	}
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah != NULL, "ibv_create_ah to our own GID: %s", strerror(errno));

	{
		struct ibv_sge rsge = {
		    .addr = (uintptr_t)buf + 4096, .length = 4096, .lkey = mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 21, .sg_list = &rsge, .num_sge = 1}, *rbad;
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 512, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 22,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.ud = {.ah = ah,
						   .remote_qpn = qp[1]->qp_num,
						   .remote_qkey = QKEY}},
				   *bad;

		fill(buf, 512, 99);
		CHECK(ibv_post_recv(qp[1], &rwr, &rbad) == 0, "UD ibv_post_recv");
		CHECK(ibv_post_send(qp[0], &wr, &bad) == 0, "UD ibv_post_send");
		for (int got = 0; got < 2; got++) {
			wc = wait_one(cq, "UD");
			CHECK(wc.status == IBV_WC_SUCCESS, "UD: status %s",
			      ibv_wc_status_str(wc.status));
			if (wc.wr_id == 21)
				CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 512 + UD_GRH &&
					  wc.src_qp == qp[0]->qp_num && (wc.wc_flags & IBV_WC_GRH),
				      "UD receive: opcode %d byte_len %u src_qp %u flags %#x",
				      wc.opcode, wc.byte_len, wc.src_qp, wc.wc_flags);
			else
				CHECK(wc.wr_id == 22 && wc.opcode == IBV_WC_SEND,
				      "UD send: wr_id %llu opcode %d", (unsigned long long)wc.wr_id,
				      wc.opcode);
		}
		CHECK(!memcmp(buf + 4096 + UD_GRH, buf, 512), "UD: bytes differ");
	}
	CHECK(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
	for (int i = 0; i < 2; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0, "UD ibv_destroy_qp");
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0, "UD teardown");
	free(buf);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct end a, b;
	union ibv_gid gid;
	struct ibv_pd *pd;
	int gid_index;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
		return 2;
	}
	gid_index = atoi(argv[2]);
	ctx = open_device(argv[1]);
	CHECK(ibv_query_gid(ctx, 1, gid_index, &gid) == 0, "ibv_query_gid %d", gid_index);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "ibv_alloc_pd");
	create_rc(ctx, pd, &a);
	create_rc(ctx, pd, &b);
	connect_rc(&a, b.qp->qp_num, gid_index, &gid);
	connect_rc(&b, a.qp->qp_num, gid_index, &gid);

	rc_operations(&a, &b, 1);
	rc_operations(&b, &a, 2);
	ud_datagram(ctx, pd, gid_index, &gid);

	/* A wrong rkey: the responder's NAK comes back through the loop too. */
	post(&a, IBV_WR_RDMA_WRITE, 0, 64, &b, 0, b.mr->rkey ^ 0x100, 18);
	expect(a.cq, "WRITE with a wrong rkey", IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 18);

	CHECK(ibv_destroy_qp(a.qp) == 0 && ibv_destroy_qp(b.qp) == 0, "ibv_destroy_qp");
	CHECK(ibv_dereg_mr(a.mr) == 0 && ibv_dereg_mr(b.mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_destroy_cq(a.cq) == 0 && ibv_destroy_cq(b.cq) == 0, "ibv_destroy_cq");
	CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "teardown");
	free(a.buf);
	free(b.buf);
	CHECK_SUMMARY();
	return 0;
}
