/* SPDX-License-Identifier: MIT */
/*
 * Unreliable datagrams through two transport cores on the in-memory link:
 * SEND and SEND with immediate of 0..MTU bytes land after a 40-byte GRH
 * that holds the sender's IP header (IPv4 after 20 zero bytes, or IPv6);
 * completions name the source QP; the Q_Key decides delivery (the high bit
 * meaning the QP's own); oversized posts, short receive lists, missing
 * receives and QPs not ready have their documented outcomes and counters;
 * an address handle made from a completion answers its sender.
 */
#include <arpa/inet.h>
#include <pthread.h>

#include "core_harness.h"
#include "ud_harness.h"
#include "device.h"

#define QKEY 0x11111111u
#define MTU 1024

struct ud_side {
	struct xr_qp_impl *qp;
	struct xr_cq_impl *cq;
	struct xr_ah *ah; /* to the other side's first QP */
};

static struct xr_ah *ah_to(struct h_pair *p, int s)
{
	struct xr_ah_attr attr = {.is_global = 1, .port_num = 1};
	struct xr_ah *ah;
	int err;

	attr.grh.dgid = p->side[1 - s].core->gids[0];
	ah = xr_core_create_ah(p->side[s].pd, &attr, p->side[1 - s].mac, &err);
	CHECK(ah, "create AH: %s", strerror(-err));
	return ah;
}

/* Two cores, a UD QP on each (Q_Key QKEY), and an AH from each to the other. */
static void ud_setup(struct h_pair *p, uint64_t seed, struct ud_side u[2])
{
	if (h_pair_init(p, seed, 256)) {
		fprintf(stderr, "test fixture: cannot build two cores\n");
		exit(2);
	}
	for (int s = 0; s < 2; s++) {
		u[s].cq = p->side[s].rcq;
		u[s].qp = ud_qp(p, s, QKEY, u[s].cq, true);
	}
	for (int s = 0; s < 2; s++)
		u[s].ah = ah_to(p, s);
}

static void ud_teardown(struct h_pair *p, struct ud_side u[2], struct xr_qp_impl *extra)
{
	if (extra)
		xr_core_destroy_qp(extra);
	for (int s = 0; s < 2; s++) {
		xr_core_destroy_ah(u[s].ah);
		xr_core_destroy_qp(u[s].qp);
	}
	h_pair_destroy(p);
}

/* The GRH of an IPv4 datagram: 20 zero bytes, then the sender's IPv4 header. */
static void check_ipv4_grh(const uint8_t *grh, struct h_pair *p, int from, uint32_t len, bool imm,
			   const char *what)
{
	const uint8_t *ip = grh + 20;
	const union xr_gid *src = &p->side[from].core->gids[0],
			   *dst = &p->side[1 - from].core->gids[0];

	CHECK(h_first_not(grh, 20, 0) < 0, "%s: GRH bytes 0-19 zero", what);
	CHECK(ip[0] == 0x45 && ip[9] == 17, "%s: an IPv4 UDP header in bytes 20-39", what);
	/* IPv4, UDP, BTH, DETH, [ImmDt], payload, pad, ICRC */
	CHECK((uint32_t)(ip[2] << 8 | ip[3]) ==
		  20 + 8 + 12 + 8 + (imm ? 4 : 0) + len + ((4 - len % 4) % 4) + 4,
	      "%s: the header's total length", what);
	CHECK(!memcmp(ip + 12, &src->raw[12], 4) && !memcmp(ip + 16, &dst->raw[12], 4),
	      "%s: source and destination addresses", what);
}

static void test_sizes(void)
{
	static const uint32_t sizes[] = {0, 1, MTU - 1, MTU};
	struct ud_side u[2];
	struct h_pair p;
	struct h_buf *src, *dst;

	ud_setup(&p, 1, u);
	src = h_buf(&p, 0, MTU, XR_ACCESS_LOCAL_WRITE, 0);
	dst = h_buf(&p, 1, XR_GRH_SIZE + MTU, XR_ACCESS_LOCAL_WRITE, 0);
	for (size_t i = 0; i < 2 * sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i / 2];
		bool imm = i % 2;
		struct xr_sge sge = h_sge(src, 0, len);
		struct xr_wc wc;
		char what[64];

		snprintf(what, sizeof(what), "%u bytes%s", len, imm ? " with immediate" : "");
		memset(dst->base, 0xee, dst->len);
		h_fill(src->base, len, i);
		post_recv_buf(u[1].qp, dst, (uint32_t)dst->len, 100 + i);
		CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, imm, i) == 0,
		      "%s: post", what);
		h_settle(&p);
		h_expect_wc(p.side[0].rcq, what, i, XR_WC_SUCCESS, XR_WC_SEND);
		wc = h_poll_one(p.side[1].rcq, what);
		CHECK(wc.wr_id == 100 + i && wc.status == XR_WC_SUCCESS &&
			  wc.opcode == XR_WC_RECV && wc.byte_len == XR_GRH_SIZE + len &&
			  (wc.wc_flags & XR_WC_GRH) && wc.src_qp == u[0].qp->pub.qp_num &&
			  wc.qp_num == u[1].qp->pub.qp_num,
		      "%s: completion: status %s byte_len %u flags %#x src_qp %#x", what,
		      xr_wc_status_str(wc.status), wc.byte_len, wc.wc_flags, wc.src_qp);
		CHECK(!imm == !(wc.wc_flags & XR_WC_WITH_IMM) &&
			  (!imm || wc.imm_data == htonl(0xfeed0000u | (uint32_t)i)),
		      "%s: immediate data", what);
		check_ipv4_grh(dst->base, &p, 0, len, imm, what);
		CHECK(h_first_mismatch(dst->base + XR_GRH_SIZE, len, i) < 0, "%s: payload", what);
		CHECK(h_first_not(dst->base + XR_GRH_SIZE + len, MTU - len, 0xee) < 0,
		      "%s: nothing past the payload", what);
	}
	ud_teardown(&p, u, NULL);
}

/* Two QPs of one side send to one QP of the other; each completion names its sender. */
static void test_two_senders_and_reply(void)
{
	struct ud_side u[2];
	struct h_pair p;
	struct h_buf *src, *dst, *reply;
	struct xr_qp_impl *second;
	struct xr_device *dev = calloc(1, sizeof(*dev));
	uint32_t senders[2];
	struct xr_ah_attr back;
	struct xr_cq_impl *reply_cq = NULL;
	struct xr_ah *ah = NULL;
	int err;

	ud_setup(&p, 2, u);
	second = ud_qp(&p, 0, QKEY, p.side[0].scq, true);
	senders[0] = u[0].qp->pub.qp_num;
	senders[1] = second->pub.qp_num;
	src = h_buf(&p, 0, 64, XR_ACCESS_LOCAL_WRITE, 0x61);
	dst = h_buf(&p, 1, 2 * (XR_GRH_SIZE + 64), XR_ACCESS_LOCAL_WRITE, 0);
	reply = h_buf(&p, 0, XR_GRH_SIZE + 64, XR_ACCESS_LOCAL_WRITE, 0);
	for (int k = 0; k < 2; k++) {
		struct xr_sge sge = {.addr = (uintptr_t)dst->base + k * (XR_GRH_SIZE + 64),
				     .length = XR_GRH_SIZE + 64,
				     .lkey = dst->mr->lkey};
		struct xr_recv_wr wr = {.wr_id = 10 + k, .sg_list = &sge, .num_sge = 1};
		struct xr_recv_wr *bad;

		CHECK(xr_core_post_recv(u[1].qp, &wr, &bad) == 0, "post receive %d", k);
	}
	{
		struct xr_sge sge = h_sge(src, 0, 64);

		CHECK(
		    ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 1) == 0 &&
			ud_send(second, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 2) == 0,
		    "post from both senders");
	}
	h_settle(&p);
	/* Each sender has its own CQ: side 0's rcq for the first, scq for the second. */
	h_expect_wc(p.side[0].rcq, "first sender", 1, XR_WC_SUCCESS, XR_WC_SEND);
	h_expect_wc(p.side[0].scq, "second sender", 2, XR_WC_SUCCESS, XR_WC_SEND);
	for (int k = 0; k < 2; k++) {
		struct xr_wc wc = h_poll_one(p.side[1].rcq, "receive");

		CHECK(wc.status == XR_WC_SUCCESS && wc.src_qp == senders[wc.wr_id - 10],
		      "receive %d names sender %#x, got %#x", k, senders[wc.wr_id - 10], wc.src_qp);
		if (k == 0) {
			/* Reply to it through an AH made from the completion and its GRH. */
			dev->core = *p.side[1].core;
			err = xr_init_ah_from_wc(
			    dev, 1, &wc,
			    (const struct xr_grh *)(dst->base +
						    (wc.wr_id - 10) * (XR_GRH_SIZE + 64)),
			    &back);
			CHECK(err == 0 && back.is_global &&
				  !memcmp(&back.grh.dgid, &p.side[0].core->gids[0], 16) &&
				  back.grh.sgid_index == 0,
			      "init_ah_from_wc: the sender's GID, from our GID 0 (err %d)", err);
			ah = xr_core_create_ah(p.side[1].pd, &back, p.side[0].mac, &err);
			CHECK(ah, "AH from the completion");
			if (wc.src_qp == second->pub.qp_num) {
				post_recv_buf(second, reply, (uint32_t)reply->len, 20);
				reply_cq = p.side[0].scq;
			} else {
				post_recv_buf(u[0].qp, reply, (uint32_t)reply->len, 20);
				reply_cq = p.side[0].rcq;
			}
			{
				struct xr_sge sge = h_sge(dst, XR_GRH_SIZE, 64);

				CHECK(ud_send(u[1].qp, ah, wc.src_qp, QKEY, &sge, 1, false, 3) == 0,
				      "post the reply");
			}
		}
	}
	h_settle(&p);
	h_expect_wc(p.side[1].rcq, "the reply's send", 3, XR_WC_SUCCESS, XR_WC_SEND);
	{
		struct xr_wc wc = h_poll_one(reply_cq, "the reply");

		CHECK(wc.wr_id == 20 && wc.status == XR_WC_SUCCESS &&
			  wc.src_qp == u[1].qp->pub.qp_num &&
			  !memcmp(reply->base + XR_GRH_SIZE, src->base, 64),
		      "the reply reached the sender it answered");
	}
	xr_core_destroy_ah(ah);
	free(dev);
	ud_teardown(&p, u, second);
}

static void test_qkeys_and_refusals(void)
{
	struct ud_side u[2];
	struct h_pair p;
	struct h_buf *src, *dst;
	struct xr_sge sge;
	struct xr_wc wc;
	struct xr_qp_impl *not_ready, *own_key;
	uint64_t before;

	ud_setup(&p, 3, u);
	src = h_buf(&p, 0, MTU + 1, XR_ACCESS_LOCAL_WRITE, 0x42);
	dst = h_buf(&p, 1, XR_GRH_SIZE + MTU, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(src, 0, 100);

	/* A wrong Q_Key: dropped and counted, the receive stays posted. */
	post_recv_buf(u[1].qp, dst, (uint32_t)dst->len, 1);
	before = p.side[1].core->stats.rx_bad_qkey;
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY + 1, &sge, 1, false, 1) == 0,
	      "post with a wrong Q_Key");
	h_settle(&p);
	h_expect_wc(p.side[0].rcq, "sender of a wrong Q_Key", 1, XR_WC_SUCCESS, XR_WC_SEND);
	h_expect_no_wc(p.side[1].rcq, "wrong Q_Key");
	CHECK(p.side[1].core->stats.rx_bad_qkey == before + 1, "rx_bad_qkey counted it");

	/* The high bit: the sender's own Q_Key, here the receiver's too. */
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, 0x80000000u, &sge, 1, false, 2) == 0,
	      "post with the high bit set");
	h_settle(&p);
	h_expect_wc(p.side[0].rcq, "sender, own Q_Key", 2, XR_WC_SUCCESS, XR_WC_SEND);
	h_expect_wc(p.side[1].rcq, "received with the sender's own Q_Key", 1, XR_WC_SUCCESS,
		    XR_WC_RECV);
	/* ... which is the sender QP's, not a constant: another QP's own key differs. */
	own_key = ud_qp(&p, 0, 0x2222u, p.side[0].scq, true);
	post_recv_buf(u[1].qp, dst, (uint32_t)dst->len, 3);
	CHECK(ud_send(own_key, u[0].ah, u[1].qp->pub.qp_num, 0x80000000u, &sge, 1, false, 3) == 0,
	      "post from a QP with another Q_Key");
	h_settle(&p);
	h_expect_no_wc(p.side[1].rcq, "a QP's own Q_Key that is not the receiver's");
	/* The receive it did not take is the next datagram's. */
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 33) == 0,
	      "post");
	h_settle(&p);
	h_expect_wc(p.side[0].rcq, "sender", 33, XR_WC_SUCCESS, XR_WC_SEND);
	h_expect_wc(p.side[1].rcq, "the receive left posted", 3, XR_WC_SUCCESS, XR_WC_RECV);

	/* Larger than the MTU: refused at post time, nothing queued. */
	sge = h_sge(src, 0, MTU + 1);
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 4) == -EINVAL,
	      "a datagram over the MTU: EINVAL");
	CHECK(u[0].qp->sq_head == u[0].qp->sq_tail, "nothing was queued");
	/* Operations other than SEND are no datagrams. */
	{
		struct xr_send_wr wr = {.opcode = XR_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1};
		struct xr_send_wr *bad = NULL;

		wr.wr.ud.ah = u[0].ah;
		CHECK(xr_core_post_send(u[0].qp, &wr, &bad) == -EINVAL && bad == &wr,
		      "a WRITE on a UD QP: EINVAL");
	}

	/* A receive list shorter than GRH + payload: a local length error. */
	sge = h_sge(src, 0, 100);
	post_recv_buf(u[1].qp, dst, XR_GRH_SIZE + 99, 5);
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 5) == 0, "post");
	h_settle(&p);
	h_expect_wc(p.side[0].rcq, "sender", 5, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p.side[1].rcq, "short receive");
	CHECK(wc.wr_id == 5 && wc.status == XR_WC_LOC_LEN_ERR, "short receive list: %s",
	      xr_wc_status_str(wc.status));
	CHECK(u[1].qp->pub.state == XR_QPS_RTS, "a short receive does not end a UD QP");

	/* No receive posted: the datagram is lost, counted. */
	before = p.side[1].core->stats.rx_no_recv;
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 6) == 0, "post");
	h_settle(&p);
	h_expect_wc(p.side[0].rcq, "sender", 6, XR_WC_SUCCESS, XR_WC_SEND);
	CHECK(p.side[1].core->stats.rx_no_recv == before + 1, "rx_no_recv counted it");

	/* A QP in INIT takes nothing; in RTR it receives (and cannot send). */
	not_ready = ud_qp(&p, 1, QKEY, p.side[1].rcq, false);
	{
		struct xr_qp_attr a = {.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = QKEY};

		CHECK(xr_core_modify_qp(not_ready, &a, XR_QP_STATE, NULL) == -EINVAL,
		      "RTR->INIT is no transition");
	}
	post_recv_buf(not_ready, dst, (uint32_t)dst->len, 7);
	CHECK(ud_send(u[0].qp, u[0].ah, not_ready->pub.qp_num, QKEY, &sge, 1, false, 7) == 0,
	      "post to a QP in RTR");
	h_settle(&p);
	h_expect_wc(p.side[1].rcq, "a QP in RTR receives", 7, XR_WC_SUCCESS, XR_WC_RECV);
	CHECK(ud_send(not_ready, u[1].ah, u[0].qp->pub.qp_num, QKEY, &sge, 1, false, 8) == -EINVAL,
	      "a QP in RTR cannot send");
	xr_core_destroy_qp(own_key);
	ud_teardown(&p, u, not_ready);
}

/* Over IPv6 GIDs the GRH area is the IPv6 header itself. */
static void test_ipv6_grh(void)
{
	static const uint8_t v6[2][16] = {{0xfd, 0, 0, 0x77, [15] = 1},
					  {0xfd, 0, 0, 0x77, [15] = 2}};
	struct ud_side u[2];
	struct h_pair p;
	struct h_buf *src, *dst;
	struct xr_sge sge;
	struct xr_wc wc;
	const uint8_t *ip;

	if (h_pair_init(&p, 5, 64))
		exit(2);
	for (int s = 0; s < 2; s++) {
		memcpy(p.side[s].core->gids[0].raw, v6[s], 16);
		u[s].cq = p.side[s].rcq;
		u[s].qp = ud_qp(&p, s, QKEY, u[s].cq, true);
	}
	for (int s = 0; s < 2; s++)
		u[s].ah = ah_to(&p, s);
	src = h_buf(&p, 0, 10, XR_ACCESS_LOCAL_WRITE, 0x5c);
	dst = h_buf(&p, 1, XR_GRH_SIZE + 10, XR_ACCESS_LOCAL_WRITE, 0);
	post_recv_buf(u[1].qp, dst, (uint32_t)dst->len, 1);
	sge = h_sge(src, 0, 10);
	CHECK(ud_send(u[0].qp, u[0].ah, u[1].qp->pub.qp_num, QKEY, &sge, 1, false, 1) == 0, "post");
	h_settle(&p);
	wc = h_poll_one(p.side[1].rcq, "IPv6 receive");
	ip = dst->base;
	CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == XR_GRH_SIZE + 10, "completion");
	CHECK((ip[0] >> 4) == 6 && ip[6] == 17 && !memcmp(ip + 8, v6[0], 16) &&
		  !memcmp(ip + 24, v6[1], 16),
	      "an IPv6 header with the two GIDs as addresses");
	CHECK((uint32_t)(ip[4] << 8 | ip[5]) == 8 + 12 + 8 + 10 + 2 + 4,
	      "its payload length: UDP, BTH, DETH, 10 bytes, pad, ICRC");
	CHECK(!memcmp(dst->base + XR_GRH_SIZE, src->base, 10), "payload");
	ud_teardown(&p, u, NULL);
}

/* RESET->INIT needs the Q_Key, port and P_Key index; RTR->RTS the SQ PSN; nothing RC. */
static void test_transitions(void)
{
	struct h_pair p;
	struct xr_qp_init_attr init = {.cap = {.max_send_wr = 4, .max_recv_wr = 4},
				       .qp_type = XR_QPT_UD};
	struct xr_qp_attr a = {.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = QKEY};
	struct xr_qp_impl *qp;
	int err;

	if (h_pair_init(&p, 4, 16))
		exit(2);
	init.send_cq = init.recv_cq = &p.side[0].rcq->pub;
	qp = xr_core_create_qp(p.side[0].pd, &init, &err);
	CHECK(qp, "create");
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT, NULL) ==
		  -EINVAL,
	      "INIT without a Q_Key: EINVAL");
	CHECK(xr_core_modify_qp(qp, &a,
				XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY |
				    XR_QP_ACCESS_FLAGS,
				NULL) == -EINVAL,
	      "INIT with RC's access flags: EINVAL");
	CHECK(qp->pub.state == XR_QPS_RESET, "still in RESET");
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY,
				NULL) == 0,
	      "RESET->INIT");
	a.qp_state = XR_QPS_RTR;
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_DEST_QPN, NULL) == -EINVAL,
	      "RTR with a destination QPN: EINVAL");
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL) == 0, "INIT->RTR");
	a.qp_state = XR_QPS_RTS;
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE, NULL) == -EINVAL, "RTS without SQ PSN");
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_STATE | XR_QP_SQ_PSN, NULL) == 0, "RTR->RTS");
	a.qkey = 0x77;
	CHECK(xr_core_modify_qp(qp, &a, XR_QP_QKEY, NULL) == 0 && qp->qkey == 0x77,
	      "RTS->RTS may change the Q_Key");
	xr_core_destroy_qp(qp);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("UD SEND and SEND with immediate, 0/1/MTU-1/MTU bytes, GRH and payload exact",
		test_sizes);
	h_group("two senders, one receiver: src_qp; a reply through an AH from the completion",
		test_two_senders_and_reply);
	h_group("Q_Key (and its high bit), oversized post, short receive, no receive, RTR",
		test_qkeys_and_refusals);
	h_group("over IPv6 GIDs the GRH area is the IPv6 header", test_ipv6_grh);
	h_group("UD transitions and the attributes each needs", test_transitions);
	return h_exit_status();
}
