/* SPDX-License-Identifier: MIT */
/*
 * QP1 on the in-memory link: a MAD of a class nobody serves is dropped and
 * counted, and a Get or Set among them is answered with a GetResp of status
 * "unsupported class or version" from QP1 to the sender's QP1 (same TID,
 * attribute and data); responses and Sends are never answered, so two
 * devices cannot bounce MADs forever. Frames for QP1 that are no MAD (wrong
 * Q_Key, P_Key, opcode, length, base version, group or foreign address)
 * are dropped, each under its counter, and answered by nothing.
 */
#include "gsi_harness.h"

#define FROM 1
#define TO 0

struct tapped {
	uint8_t frame[XR_MEM_FRAME_SIZE];
	uint32_t len;
	unsigned count; /* frames side TO sent */
};

static void tap(void *arg, int from_side, const uint8_t *frame, uint32_t len)
{
	struct tapped *t = arg;

	if (from_side != TO)
		return;
	t->count++;
	if (len <= sizeof(t->frame)) {
		memcpy(t->frame, frame, len);
		t->len = len;
	}
}

/* The path a host on side FROM sends along to side TO's QP1. */
static struct xr_path path_to(const struct h_pair *p)
{
	struct xr_path path = {.udp_sport = 0xd872};

	memcpy(path.smac, p->side[FROM].mac, 6);
	memcpy(path.dmac, p->side[TO].mac, 6);
	path.sgid = p->side[FROM].core->gids[0];
	path.dgid = p->side[TO].core->gids[0];
	return path;
}

/* A MAD of class mgmt_class, attribute 0x0012, its data bytes counting up. */
static void mad_init(uint8_t *mad, uint8_t mgmt_class, uint8_t method, uint64_t tid)
{
	h_mad_header(mad, mgmt_class, 1, method, tid, 0x0012);
	for (int i = XR_MAD_HDR_SIZE; i < XR_MAD_SIZE; i++)
		mad[i] = (uint8_t)i;
}

/* Delivers a datagram to side TO's QP1 and lets both sides run until quiet. */
static void deliver(struct h_pair *p, const struct xr_path *path, uint8_t opcode, uint32_t qkey,
		    uint16_t pkey, const uint8_t *payload, uint32_t len)
{
	h_deliver_to_qp1(p, TO, path, opcode, qkey, pkey, payload, len);
	h_settle(p);
}

static void answered_requests(void)
{
	struct h_pair p;
	struct tapped t = {0};
	struct xr_path path;
	uint8_t mad[XR_MAD_SIZE];
	struct xr_pkt pkt;

	CHECK(h_pair_init(&p, 1, 64) == 0, "pair");
	xr_mem_link_set_tap(&p.link, tap, &t);
	path = path_to(&p);
	for (int method = XR_MAD_METHOD_GET; method <= XR_MAD_METHOD_SET; method++) {
		unsigned before = t.count;
		uint64_t tid = 0x1122334455667700ull + (uint64_t)method;

		mad_init(mad, 0x04, (uint8_t)method, tid); /* performance management */
		deliver(&p, &path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
		CHECK(t.count == before + 1, "method %#x: %u answers", method, t.count - before);
		if (t.count != before + 1 || xr_pkt_parse(t.frame, t.len, &pkt) != XR_PARSE_OK) {
			CHECK(false, "method %#x: no answer that parses", method);
			continue;
		}
		CHECK(pkt.opcode == XR_OP_UD_SEND_ONLY && pkt.dqpn == XR_GSI_QPN &&
			  pkt.deth_sqpn == XR_GSI_QPN && pkt.deth_qkey == XR_GSI_QKEY &&
			  pkt.payload_len == XR_MAD_SIZE && xr_pkt_icrc_ok(&pkt),
		      "method %#x: the answer is no MAD from QP1", method);
		CHECK(!memcmp(pkt.dmac, p.side[FROM].mac, 6) &&
			  !memcmp(pkt.smac, p.side[TO].mac, 6) &&
			  !memcmp(&pkt.dgid, &p.side[FROM].core->gids[0], 16) &&
			  !memcmp(&pkt.sgid, &p.side[TO].core->gids[0], 16),
		      "method %#x: the answer goes elsewhere than to its sender", method);
		CHECK(pkt.udp_sport == 0xd872, "UDP source port %#x, not QP1's", pkt.udp_sport);
		CHECK(xr_mad_get(pkt.payload, XR_MAD_METHOD) == XR_MAD_METHOD_GET_RESP &&
			  xr_mad_get(pkt.payload, XR_MAD_STATUS) == XR_MAD_STATUS_BAD_VERSION &&
			  xr_mad_get(pkt.payload, XR_MAD_TID) == tid &&
			  xr_mad_get(pkt.payload, XR_MAD_MGMT_CLASS) == 0x04 &&
			  !memcmp(pkt.payload + XR_MAD_HDR_SIZE, mad + XR_MAD_HDR_SIZE,
				  XR_MAD_SIZE - XR_MAD_HDR_SIZE),
		      "method %#x: answered with method %#llx status %#llx", method,
		      (unsigned long long)xr_mad_get(pkt.payload, XR_MAD_METHOD),
		      (unsigned long long)xr_mad_get(pkt.payload, XR_MAD_STATUS));
	}
	CHECK(p.side[TO].core->stats.mads_rx == 2 && p.side[TO].core->stats.mads_unserved == 2 &&
		  p.side[TO].core->stats.mads_tx == 2,
	      "rx %llu unserved %llu tx %llu", (unsigned long long)p.side[TO].core->stats.mads_rx,
	      (unsigned long long)p.side[TO].core->stats.mads_unserved,
	      (unsigned long long)p.side[TO].core->stats.mads_tx);
	/* The answers reached side FROM's QP1, which serves that class no more: it answers nothing.
	 */
	CHECK(p.side[FROM].core->stats.mads_rx == 2 && p.side[FROM].core->stats.mads_tx == 0,
	      "the sender's QP1 took %llu and sent %llu",
	      (unsigned long long)p.side[FROM].core->stats.mads_rx,
	      (unsigned long long)p.side[FROM].core->stats.mads_tx);
	h_pair_destroy(&p);
}

static void unanswered(void)
{
	static const uint8_t methods[] = {XR_MAD_METHOD_SEND, XR_MAD_METHOD_GET_RESP,
					  0x05 /* Trap */};
	struct h_pair p;
	struct tapped t = {0};
	struct xr_path path;
	uint8_t mad[XR_MAD_SIZE];

	CHECK(h_pair_init(&p, 2, 64) == 0, "pair");
	xr_mem_link_set_tap(&p.link, tap, &t);
	path = path_to(&p);
	for (size_t i = 0; i < sizeof(methods); i++) {
		mad_init(mad, 0x04, methods[i], 99);
		deliver(&p, &path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
	}
	CHECK(t.count == 0, "%u answers to Sends, responses and traps", t.count);
	CHECK(p.side[TO].core->stats.mads_unserved == sizeof(methods), "unserved %llu",
	      (unsigned long long)p.side[TO].core->stats.mads_unserved);
	h_pair_destroy(&p);
}

static void not_mads(void)
{
	struct h_pair p;
	struct tapped t = {0};
	struct xr_path path, group, foreign;
	uint8_t mad[XR_MAD_SIZE];
	const struct xr_engine_stats *st;

	CHECK(h_pair_init(&p, 3, 64) == 0, "pair");
	xr_mem_link_set_tap(&p.link, tap, &t);
	st = &p.side[TO].core->stats;
	path = group = foreign = path_to(&p);
	memcpy(group.dmac, (uint8_t[6]){0x01, 0x00, 0x5e, 0, 0, 1}, 6);
	foreign.dgid = h_third_gid();
	mad_init(mad, 0x04, XR_MAD_METHOD_GET, 5);

	deliver(&p, &path, XR_OP_UD_SEND_ONLY, 0x11111111, 0, mad, XR_MAD_SIZE);
	CHECK(st->rx_bad_qkey == 1, "another Q_Key: rx_bad_qkey %llu",
	      (unsigned long long)st->rx_bad_qkey);
	deliver(&p, &path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0x7fff, mad, XR_MAD_SIZE);
	CHECK(st->rx_bad_pkey == 1, "another P_Key: rx_bad_pkey %llu",
	      (unsigned long long)st->rx_bad_pkey);
	deliver(&p, &path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, 200);
	deliver(&p, &path, XR_OP_UD_SEND_ONLY_IMM, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
	deliver(&p, &group, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
	deliver(&p, &foreign, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
	xr_mad_set(mad, XR_MAD_BASE_VERSION, 2);
	deliver(&p, &path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
	CHECK(st->mads_malformed == 5,
	      "short, with immediate, to a group, to another IP, base version 2: %llu of 5 counted "
	      "malformed",
	      (unsigned long long)st->mads_malformed);
	CHECK(st->mads_rx == 0 && st->mads_unserved == 0 && t.count == 0,
	      "no MAD taken (%llu) and nothing answered (%u)", (unsigned long long)st->mads_rx,
	      t.count);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("gsi: unserved requests answered", answered_requests);
	h_group("gsi: Sends, responses, traps unanswered", unanswered);
	h_group("gsi: frames that are no MAD dropped", not_mads);
	return h_exit_status();
}
