/* SPDX-License-Identifier: MIT */
/*
 * Multicast in the transport core, on the in-memory link: which GIDs are
 * groups and the MACs they map to; attach and detach as ibv_attach_mcast
 * (UD only, a multicast GID, twice is once, detach of what is not attached
 * EINVAL, destroy while attached EBUSY, the device's group limit ENOMEM);
 * each datagram sent to a group reaches every QP attached to it once, no
 * other QP, and none after detach; a multicast AH keeps its hop limit.
 */
#include "core_harness.h"
#include "ud_harness.h"

#define QKEY 0x11111111u
#define MSG 200

static union xr_gid v4_group(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	union xr_gid g = {
	    .raw = {[10] = 0xff, [11] = 0xff, [12] = a, [13] = b, [14] = c, [15] = d}};

	return g;
}

static void test_gids_and_macs(void)
{
	union xr_gid v6 = {.raw = {0xff, 0x12, [11] = 1, [13] = 2, [15] = 3}};
	union xr_gid unicast6 = {.raw = {0xfe, 0x80, [15] = 1}};
	union xr_gid zero = {0}, top = v4_group(239, 255, 255, 255);
	uint8_t mac[6];

	CHECK(!xr_gid_is_multicast(&zero) && xr_gid_is_multicast(&top),
	      "the zero GID is no group, 239.255.255.255 is");
	CHECK(xr_gid_is_multicast(&v6) && !xr_gid_is_multicast(&unicast6), "IPv6: ff00::/8 only");
	for (int first = 0; first < 256; first += 16) {
		union xr_gid g = v4_group((uint8_t)first, 1, 2, 3);

		CHECK(xr_gid_is_multicast(&g) == (first == 224), "IPv4 %d.1.2.3: only 224/4",
		      first);
	}
	top = v4_group(239, 129, 2, 3);
	xr_mcast_mac(&top, mac);
	CHECK(!memcmp(mac, (uint8_t[6]){0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}, 6),
	      "239.129.2.3: 01:00:5e and the low 23 bits");
	xr_mcast_mac(&v6, mac);
	CHECK(!memcmp(mac, (uint8_t[6]){0x33, 0x33, 0x00, 0x02, 0x00, 0x03}, 6),
	      "ff12::1:2:3: 33:33 and the low 32 bits");
}

static void test_attach_rules(void)
{
	union xr_gid group = v4_group(239, 1, 2, 3), unicast = h_gid_of_side(1);
	struct xr_qp_impl *ud, *other, *extra[XR_MAX_MCAST_GROUPS];
	struct h_qp_opts o = h_default_opts();
	struct h_pair p;
	int idx, err;
	bool edge;

	h_setup(&p, 1, 256, &o); /* the connected RC QPs: p.side[s].qp */
	ud = ud_qp(&p, 1, QKEY, p.side[1].rcq, true);
	other = ud_qp(&p, 1, QKEY, p.side[1].rcq, true);
	CHECK(xr_core_attach_mcast(p.side[1].qp, &group, &idx, &edge) == -EINVAL, "RC: EINVAL");
	CHECK(xr_core_attach_mcast(ud, &unicast, &idx, &edge) == -EINVAL, "unicast GID: EINVAL");
	CHECK(xr_core_attach_mcast(ud, &group, &idx, &edge) == 0 && edge, "first attach");
	CHECK(xr_core_attach_mcast(ud, &group, &idx, &edge) == 0 && !edge &&
		  p.side[1].core->mcast[idx].nqps == 1,
	      "attached twice: no error, one attachment");
	CHECK(xr_core_destroy_qp(ud) == -EBUSY, "destroy while attached: EBUSY");
	CHECK(xr_core_detach_mcast(other, &group, &idx, &edge) == -EINVAL,
	      "detach of a QP not attached: EINVAL");
	CHECK(xr_core_attach_mcast(other, &group, &idx, &edge) == 0 && !edge, "second QP");
	CHECK(xr_core_detach_mcast(ud, &group, &idx, &edge) == 0 && !edge, "detach: one left");
	CHECK(xr_core_detach_mcast(ud, &group, &idx, &edge) == -EINVAL, "detached twice: EINVAL");
	CHECK(xr_core_detach_mcast(other, &group, &idx, &edge) == 0 && edge, "the last detaches");

	/* Every group of the device in use: one more is ENOMEM and changes nothing. */
	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++) {
		union xr_gid g = v4_group(239, 2, 0, (uint8_t)i);

		extra[i] = ud_qp(&p, 1, QKEY, p.side[1].rcq, false);
		err = xr_core_attach_mcast(extra[i], &g, &idx, &edge);
		CHECK(err == 0 && edge, "group %d: %d", i, err);
	}
	CHECK(xr_core_attach_mcast(ud, &group, &idx, &edge) == -ENOMEM && !ud->mcast_groups,
	      "one group more than max_mcast_grp: ENOMEM, not attached");
	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++) {
		union xr_gid g = v4_group(239, 2, 0, (uint8_t)i);

		CHECK(xr_core_detach_mcast(extra[i], &g, &idx, &edge) == 0 && edge, "detach %d", i);
		CHECK(xr_core_destroy_qp(extra[i]) == 0, "destroy %d", i);
	}
	CHECK(xr_core_destroy_qp(ud) == 0 && xr_core_destroy_qp(other) == 0,
	      "destroy once detached");
	h_pair_destroy(&p);
}

struct member {
	struct xr_qp_impl *qp;
	struct xr_cq_impl *cq;
	struct h_buf *buf;
	int received;
};

/* Each member's receive queue holds n buffers; every completion is checked. */
static void post_member_recvs(struct member *m, int n)
{
	for (int i = 0; i < n; i++)
		post_recv_buf(m->qp, m->buf, XR_GRH_SIZE + MSG, (uint64_t)i);
}

/* Called after every send: the buffer holds the newest message, the one numbered received. */
static void drain_member(struct member *m, const char *name, uint8_t ttl)
{
	struct xr_wc wc;

	while (h_poll(m->cq, &wc, 1) == 1) {
		const uint8_t *ip = m->buf->base + XR_GRH_SIZE - 20;

		CHECK(wc.status == XR_WC_SUCCESS && wc.byte_len == XR_GRH_SIZE + MSG &&
			  (wc.wc_flags & XR_WC_GRH),
		      "%s: completion %d: status %d, %u bytes", name, m->received, wc.status,
		      wc.byte_len);
		CHECK(h_first_mismatch(m->buf->base + XR_GRH_SIZE, MSG, (uint64_t)m->received) < 0,
		      "%s: message %d exact", name, m->received);
		CHECK(!memcmp(ip + 16, (uint8_t[4]){239, 1, 2, 3}, 4) && ip[8] == ttl,
		      "%s: the GRH names the group (239.1.2.3) and TTL %u", name, ttl);
		m->received++;
	}
}

static void send_to_group(struct h_pair *p, struct xr_qp_impl *qp, struct xr_ah *ah,
			  struct h_buf *src, uint64_t msg)
{
	struct xr_sge sge = h_sge(src, 0, MSG);

	h_fill(src->base, MSG, msg);
	CHECK(ud_send(qp, ah, XR_MULTICAST_QPN, QKEY, &sge, 1, false, msg) == 0, "post %" PRIu64,
	      msg);
	h_settle(p);
	h_expect_wc(p->side[0].rcq, "the multicast send", msg, XR_WC_SUCCESS, XR_WC_SEND);
}

static void test_delivery(void)
{
	union xr_gid group = v4_group(239, 1, 2, 3), other_group = v4_group(239, 1, 2, 4);
	struct xr_ah_attr attr = {.is_global = 1, .port_num = 1};
	const char *names[4] = {"A (attached)", "B (attached)", "C (other group)",
				"D (unattached)"};
	struct member m[4];
	struct xr_qp_impl *sender;
	struct h_buf *src;
	struct xr_ah *ah;
	struct h_pair p;
	__u64 unknown;
	uint8_t mac[6];
	int idx, err;
	bool edge;

	if (h_pair_init(&p, 7, 256))
		exit(2);
	sender = ud_qp(&p, 0, QKEY, p.side[0].rcq, true);
	src = h_buf(&p, 0, MSG, XR_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < 4; i++) {
		int e;

		m[i].cq = xr_core_create_cq(p.side[1].core, 64, &e);
		CHECK(m[i].cq, "CQ %d", i);
		m[i].qp = ud_qp(&p, 1, QKEY, m[i].cq, false);
		m[i].buf = h_buf(&p, 1, XR_GRH_SIZE + MSG, XR_ACCESS_LOCAL_WRITE, 0);
		m[i].received = 0;
		post_member_recvs(&m[i], 8);
	}
	CHECK(xr_core_attach_mcast(m[0].qp, &group, &idx, &edge) == 0, "attach A");
	CHECK(xr_core_attach_mcast(m[1].qp, &group, &idx, &edge) == 0, "attach B");
	CHECK(xr_core_attach_mcast(m[2].qp, &other_group, &idx, &edge) == 0, "attach C");

	attr.grh.dgid = group;
	attr.grh.hop_limit = 255;
	xr_mcast_mac(&group, mac);
	ah = xr_core_create_ah(p.side[0].pd, &attr, mac, &err);
	CHECK(ah, "AH to the group: %d", err);
	for (uint64_t k = 0; k < 3; k++) {
		send_to_group(&p, sender, ah, src, k);
		for (int i = 0; i < 4; i++)
			drain_member(&m[i], names[i], 255);
	}
	CHECK(m[0].received == 3 && m[1].received == 3, "A and B: each message once (%d, %d)",
	      m[0].received, m[1].received);
	CHECK(m[2].received == 0 && m[3].received == 0, "C and D: nothing (%d, %d)", m[2].received,
	      m[3].received);

	/* Detach stops delivery at once: the next message reaches B only. */
	CHECK(xr_core_detach_mcast(m[0].qp, &group, &idx, &edge) == 0, "detach A");
	send_to_group(&p, sender, ah, src, 3);
	drain_member(&m[0], names[0], 255);
	drain_member(&m[1], names[1], 255);
	CHECK(m[0].received == 3 && m[1].received == 4, "after A detached: A %d, B %d",
	      m[0].received, m[1].received);
	CHECK(xr_core_detach_mcast(m[1].qp, &group, &idx, &edge) == 0 && edge, "detach B");
	unknown = p.side[1].core->stats.rx_unknown_qp;
	send_to_group(&p, sender, ah, src, 4);
	for (int i = 0; i < 4; i++) {
		struct xr_wc wc;

		CHECK(h_poll(m[i].cq, &wc, 1) == 0, "%s: nothing once the group is empty",
		      names[i]);
	}
	CHECK(p.side[1].core->stats.rx_unknown_qp == unknown + 1,
	      "the datagram for a group without QPs counted (rx_unknown_qp +%llu)",
	      p.side[1].core->stats.rx_unknown_qp - unknown);

	xr_core_detach_mcast(m[2].qp, &other_group, &idx, &edge);
	xr_core_destroy_ah(ah);
	xr_core_destroy_qp(sender);
	for (int i = 0; i < 4; i++) {
		xr_core_destroy_qp(m[i].qp);
		xr_core_destroy_cq(m[i].cq);
	}
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("multicast GIDs and their MACs (RFC 1112, RFC 2464)", test_gids_and_macs);
	h_group("attach/detach: UD only, multicast GIDs, once, EINVAL, EBUSY, ENOMEM",
		test_attach_rules);
	h_group("a group's datagrams reach every attached QP once, no other, none after detach",
		test_delivery);
	return h_exit_status();
}
