/* SPDX-License-Identifier: MIT */
/*
 * Unreliable connections through two transport cores on the in-memory link:
 * SEND and WRITE (with and without immediate) land exactly, with nothing
 * sent back; over a lossy link every message is either whole or not
 * reported at all, and the next one starts clean; READ and atomics do not
 * exist on UC.
 */
#include <arpa/inet.h>

#include "core_harness.h"

#define REQ 0
#define RSP 1
#define MTU 1024

/* One UC QP per side, connected to each other, in RTS. */
static void uc_setup(struct h_pair *p, uint64_t seed)
{
	const uint32_t psn[2] = {0xfffff8, 0x4242};

	if (h_pair_init(p, seed, 512))
		exit(2);
	for (int s = 0; s < 2; s++) {
		struct h_side *hs = &p->side[s];
		struct xr_qp_init_attr init = {.send_cq = &hs->scq->pub,
					       .recv_cq = &hs->rcq->pub,
					       .cap = {.max_send_wr = 256,
						       .max_recv_wr = 512,
						       .max_send_sge = 1,
						       .max_recv_sge = 1},
					       .qp_type = XR_QPT_UC,
					       .sq_sig_all = 1};
		int err;

		hs->qp = xr_core_create_qp(hs->pd, &init, &err);
		if (!hs->qp)
			exit(2);
	}
	for (int s = 0; s < 2; s++) {
		struct xr_qp_attr a = {.qp_state = XR_QPS_INIT,
				       .port_num = 1,
				       .qp_access_flags =
					   XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE};
		struct xr_qp_impl *qp = p->side[s].qp;

		CHECK(xr_core_modify_qp(
			  qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS,
			  NULL) == 0,
		      "UC RESET->INIT");
		a = (struct xr_qp_attr){
		    .qp_state = XR_QPS_RTR,
		    .path_mtu = XR_MTU_1024,
		    .dest_qp_num = p->side[1 - s].qp->pub.qp_num,
		    .rq_psn = psn[1 - s],
		    .ah_attr = {.is_global = 1,
				.port_num = 1,
				.grh = {.dgid = h_gid_of_side(1 - s)}},
		};
		CHECK(xr_core_modify_qp(qp, &a,
					XR_QP_STATE | XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_AV |
					    XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN,
					p->side[1 - s].mac) == -EINVAL,
		      "UC RTR with RC's max_dest_rd_atomic: EINVAL");
		CHECK(xr_core_modify_qp(qp, &a,
					XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN |
					    XR_QP_RQ_PSN,
					p->side[1 - s].mac) == 0,
		      "UC INIT->RTR");
		a = (struct xr_qp_attr){.qp_state = XR_QPS_RTS, .sq_psn = psn[s]};
		CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN, NULL) == 0,
		      "UC RTR->RTS");
	}
}

/* Frames the responder sent: UC answers nothing. */
static void count_frames(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	(void)frame;
	(void)len;
	if (from == RSP)
		++*(int *)arg;
}

static int post(struct h_pair *p, uint64_t wr_id, enum xr_wr_opcode op, struct xr_sge *sge,
		uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct xr_send_wr wr = {
	    .wr_id = wr_id, .sg_list = sge, .num_sge = 1, .opcode = op, .imm_data = htonl(imm)};
	struct xr_send_wr *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

static void test_clean_link(void)
{
	static const uint32_t sizes[] = {0, 1, MTU, 3 * MTU + 5};
	struct h_pair p;
	struct h_buf *src, *dst, *mem;
	int answers = 0;

	uc_setup(&p, 1);
	xr_mem_link_set_tap(&p.link, count_frames, &answers);
	src = h_buf(&p, REQ, 4 * MTU, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, RSP, 4 * MTU, XR_ACCESS_LOCAL_WRITE, 0);
	mem = h_buf(&p, RSP, 4 * MTU, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	for (int i = 0; i < 16; i++) {
		uint32_t len = sizes[i % 4];
		enum xr_wr_opcode op =
		    (enum xr_wr_opcode[]){XR_WR_SEND, XR_WR_SEND_WITH_IMM, XR_WR_RDMA_WRITE,
					  XR_WR_RDMA_WRITE_WITH_IMM}[i / 4];
		bool send = op == XR_WR_SEND || op == XR_WR_SEND_WITH_IMM;
		bool recv = op != XR_WR_RDMA_WRITE;
		struct xr_sge sge = h_sge(src, 0, len), rsge = h_sge(dst, 0, 4 * MTU);
		struct xr_wc wc;

		h_fill(src->base, len, (uint64_t)i);
		if (recv)
			CHECK(h_post_recv(&p, RSP, 50 + (uint64_t)i, &rsge, 1) == 0,
			      "post receive");
		CHECK(post(&p, (uint64_t)i, op, &sge, (uintptr_t)mem->base, mem->mr->rkey,
			   (uint32_t)i) == 0,
		      "post %d", i);
		h_settle(&p);
		h_expect_wc(p.side[REQ].scq, "UC sender", (uint64_t)i, XR_WC_SUCCESS,
			    send ? XR_WC_SEND : XR_WC_RDMA_WRITE);
		CHECK(h_first_mismatch(send ? dst->base : mem->base, len, (uint64_t)i) < 0,
		      "message %d: %u bytes landed", i, len);
		if (!recv) {
			h_expect_no_wc(p.side[RSP].rcq, "a plain WRITE consumes no receive");
			continue;
		}
		wc = h_poll_one(p.side[RSP].rcq, "UC receive");
		CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == len &&
			  wc.opcode == (send ? XR_WC_RECV : XR_WC_RECV_RDMA_WITH_IMM) &&
			  (op == XR_WR_SEND ? !(wc.wc_flags & XR_WC_WITH_IMM)
					    : wc.imm_data == htonl((uint32_t)i)),
		      "message %d: completion %s, %u bytes, opcode %d", i,
		      xr_wc_status_str(wc.status), wc.byte_len, wc.opcode);
	}
	CHECK(answers == 0, "the UC responder sent %d frames", answers);
	CHECK(p.side[REQ].qp->cnt.retransmits == 0 && p.side[RSP].core->stats.uc_dropped_msgs == 0,
	      "nothing retransmitted, nothing dropped");
	{
		struct xr_sge sge = h_sge(src, 0, 8);

		CHECK(post(&p, 99, XR_WR_RDMA_READ, &sge, (uintptr_t)mem->base, mem->mr->rkey, 0) ==
			      -EINVAL &&
			  post(&p, 99, XR_WR_ATOMIC_FETCH_AND_ADD, &sge, (uintptr_t)mem->base,
			       mem->mr->rkey, 0) == -EINVAL,
		      "READ and atomics on UC: EINVAL");
	}
	h_pair_destroy(&p);
}

/*
 * 300 three-packet messages, SENDs with immediate (their number) and WRITEs
 * with immediate into a slot each, over loss, duplication and reordering:
 * every message reported is whole and right; the broken ones are not
 * reported at all; the link did break some.
 */
static void test_lossy_link(void)
{
	enum { MSGS = 300, LEN = 2 * MTU + 100 };
	struct xr_mem_impair imp = {
	    .loss = 0.05, .duplicate = 0.03, .reorder = 0.03, .reorder_window = 3};
	struct h_pair p;
	struct h_buf *src, *dst, *mem;
	int reported = 0, whole = 0;
	bool seen[MSGS] = {false};

	uc_setup(&p, 2);
	xr_mem_link_set_impair(&p.link, REQ, &imp);
	src = h_buf(&p, REQ, (size_t)MSGS * LEN, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, RSP, (size_t)MSGS * LEN, XR_ACCESS_LOCAL_WRITE, 0);
	mem = h_buf(&p, RSP, (size_t)MSGS * LEN, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	for (int i = 0; i < MSGS; i++) {
		struct xr_sge rsge = h_sge(dst, (size_t)i * LEN, LEN);

		h_fill(src->base + (size_t)i * LEN, LEN, (uint64_t)i);
		CHECK(h_post_recv(&p, RSP, (uint64_t)i, &rsge, 1) == 0, "post receive %d", i);
	}
	for (int i = 0; i < MSGS; i += 16) {
		for (int k = i; k < i + 16 && k < MSGS; k++) {
			struct xr_sge sge = h_sge(src, (size_t)k * LEN, LEN);
			bool write = k % 2;

			CHECK(post(&p, (uint64_t)k,
				   write ? XR_WR_RDMA_WRITE_WITH_IMM : XR_WR_SEND_WITH_IMM, &sge,
				   (uintptr_t)mem->base + (size_t)k * LEN, mem->mr->rkey,
				   (uint32_t)k) == 0,
			      "post %d", k);
		}
		h_settle(&p);
	}
	for (;;) {
		struct xr_wc wc;
		uint32_t k;
		const uint8_t *at;

		if (h_poll(p.side[RSP].rcq, &wc, 1) != 1)
			break;
		reported++;
		k = ntohl(wc.imm_data);
		if (k >= MSGS || seen[k]) {
			CHECK(0, "a completion for message %u, reported twice or never sent", k);
			continue;
		}
		seen[k] = true;
		/* A SEND lands in the receive WQE it took, whichever that was. */
		at = (k % 2) ? mem->base + (size_t)k * LEN : dst->base + (wc.wr_id * LEN);
		if (wc.status == XR_WC_SUCCESS && wc.byte_len == LEN &&
		    h_first_mismatch(at, LEN, k) < 0)
			whole++;
		else
			CHECK(0, "message %u reported with %s, %u bytes, content %s", k,
			      xr_wc_status_str(wc.status), wc.byte_len,
			      h_first_mismatch(at, LEN, k) < 0 ? "right" : "wrong");
	}
	CHECK(whole == reported, "%d of %d reported messages whole", whole, reported);
	CHECK(reported < MSGS && reported > MSGS / 2,
	      "the link broke some messages and not most: %d of %d reported", reported, MSGS);
	CHECK(p.side[RSP].core->stats.uc_dropped_msgs > 0, "the responder counted broken messages");
	CHECK(p.side[REQ].qp->cnt.retransmits == 0, "UC retransmits nothing");
	CHECK(p.side[REQ].qp->pub.state == XR_QPS_RTS && p.side[RSP].qp->pub.state == XR_QPS_RTS,
	      "loss does not end a UC QP");
	h_pair_destroy(&p);
}

/*
 * A WRITE that claims more than max_msg_sz (1 GiB) is dropped whole: not a
 * byte of its first packet lands, although the region would hold it; the
 * next message is placed as usual.
 */
static void test_longer_than_max_msg(void)
{
	struct h_pair p;
	struct h_buf *mem;
	struct xr_path path;
	struct h_forge f;
	uint32_t psn = 0x4242, flags = xr_opinfo[XR_OP_UC_WRITE_FIRST].flags;
	uint32_t lens[2] = {XR_MAX_MSG_SZ + 1u, MTU};

	uc_setup(&p, 3);
	mem = h_buf(&p, RSP, 2 * MTU, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE, 0);
	path = h_path_from(&p, REQ);
	for (int i = 0; i < 2; i++, psn++) {
		uint8_t op = i == 0 ? XR_OP_UC_WRITE_FIRST : XR_OP_UC_WRITE_ONLY;
		uint8_t *reth;

		if (!h_forge_begin(&f, &path, op, p.side[RSP].qp->pub.qp_num, psn, MTU,
				   (uint8_t)(0xa0 + i)))
			break;
		reth = f.out.bth + xr_reth_off(flags);
		h_put64(reth, (uintptr_t)mem->base + (uint64_t)i * MTU);
		h_put32(reth + 8, mem->mr->rkey);
		h_put32(reth + 12, lens[i]);
		h_forge_deliver(&p, RSP, &f);
	}
	CHECK(h_first_not(mem->base, MTU, 0) < 0, "the over-long WRITE placed nothing");
	CHECK(h_first_not(mem->base + MTU, MTU, 0xa1) < 0, "the next WRITE landed whole");
	CHECK(p.side[RSP].core->stats.uc_dropped_msgs == 1, "one message dropped, counted %llu",
	      (unsigned long long)p.side[RSP].core->stats.uc_dropped_msgs);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("UC SEND/WRITE with and without immediate, 0..3 MTU, nothing sent back",
		test_clean_link);
	h_group("UC over loss/dup/reorder: every reported message whole, broken ones unreported",
		test_lossy_link);
	h_group("UC WRITE longer than max_msg_sz: dropped whole", test_longer_than_max_msg);
	return h_exit_status();
}
