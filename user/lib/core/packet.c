/* SPDX-License-Identifier: MIT */
#include "packet.h"

#include "copy_crc.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include <libdeflate.h>

#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_VLAN 0x8100
#define ETH_P_VLAN_S 0x88a8 /* 802.1ad: the XDP program takes one tag of either kind */
#define IPPROTO_UDP_NUM 17
#define DEFAULT_HOP_LIMIT 64

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

bool xr_gid_is_v4mapped(const union xr_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

static void gid_from_v4(union xr_gid *gid, const uint8_t *v4)
{
	memset(gid->raw, 0, 10);
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(gid->raw + 12, v4, 4);
}

const char *xr_parse_result_str(enum xr_parse_result r)
{
	switch (r) {
	case XR_PARSE_OK:
		return "ok";
	case XR_PARSE_NOT_ROCE:
		return "not RoCEv2";
	case XR_PARSE_TRUNCATED:
		return "truncated";
	case XR_PARSE_BAD_TVER:
		return "bad transport version";
	case XR_PARSE_BAD_OPCODE:
		return "unknown opcode";
	case XR_PARSE_BAD_LENGTH:
		return "bad length";
	}
	return "?";
}

/* Network-layer part of the parse: fills l3 fields, returns the UDP offset. */
static enum xr_parse_result parse_l3(const uint8_t *f, uint32_t len, struct xr_pkt *pkt,
				     uint32_t *udp_off, uint32_t *l3_end)
{
	uint32_t off = XR_ETH_HLEN;
	uint16_t proto;

	if (len < XR_ETH_HLEN)
		return XR_PARSE_NOT_ROCE;
	memcpy(pkt->dmac, f, 6);
	memcpy(pkt->smac, f + 6, 6);
	proto = rd16(f + 12);
	if (proto == ETH_P_VLAN || proto == ETH_P_VLAN_S) {
		if (len < off + 4)
			return XR_PARSE_NOT_ROCE;
		proto = rd16(f + off + 2);
		off += 4;
	}
	pkt->l3_off = off;
	if (proto == ETH_P_IPV4) {
		const uint8_t *ip = f + off;
		uint32_t ihl, tot;

		if (len < off + XR_IPV4_HLEN)
			return XR_PARSE_NOT_ROCE;
		ihl = (ip[0] & 0x0f) * 4u;
		if ((ip[0] >> 4) != 4 || ihl < XR_IPV4_HLEN || ip[9] != IPPROTO_UDP_NUM)
			return XR_PARSE_NOT_ROCE;
		if (rd16(ip + 6) & 0x3fff) /* fragment */
			return XR_PARSE_NOT_ROCE;
		tot = rd16(ip + 2);
		/* Not even IP: the kernel, which validates IP itself, decides (as XDP does). */
		if (tot < ihl)
			return XR_PARSE_NOT_ROCE;
		pkt->ipv6 = false;
		pkt->ecn = ip[1] & XR_ECN_MASK;
		gid_from_v4(&pkt->sgid, ip + 12);
		gid_from_v4(&pkt->dgid, ip + 16);
		*udp_off = off + ihl;
		*l3_end = off + tot;
	} else if (proto == ETH_P_IPV6) {
		const uint8_t *ip = f + off;

		if (len < off + XR_IPV6_HLEN)
			return XR_PARSE_NOT_ROCE;
		if ((ip[0] >> 4) != 6 || ip[6] != IPPROTO_UDP_NUM)
			return XR_PARSE_NOT_ROCE;
		pkt->ipv6 = true;
		pkt->ecn = (ip[1] >> 4) & XR_ECN_MASK;
		memcpy(pkt->sgid.raw, ip + 8, 16);
		memcpy(pkt->dgid.raw, ip + 24, 16);
		*udp_off = off + XR_IPV6_HLEN;
		*l3_end = *udp_off + rd16(ip + 4);
	} else {
		return XR_PARSE_NOT_ROCE;
	}
	return XR_PARSE_OK;
}

/*
 * Every field is written, present or not (absent ones as 0): the frame path
 * does not clear the whole struct for each packet.
 */
static void parse_ext_headers(const uint8_t *bth, struct xr_pkt *pkt)
{
	uint32_t f = pkt->opflags;
	const uint8_t *h;

	h = bth + xr_deth_off(f);
	pkt->deth_qkey = f & XR_OPF_DETH ? rd32(h) : 0;
	pkt->deth_sqpn = f & XR_OPF_DETH ? rd24(h + 5) : 0;

	h = bth + xr_reth_off(f);
	pkt->reth_va = f & XR_OPF_RETH ? rd64(h) : 0;
	pkt->reth_rkey = f & XR_OPF_RETH ? rd32(h + 8) : 0;
	pkt->reth_len = f & XR_OPF_RETH ? rd32(h + 12) : 0;

	h = bth + xr_atmeth_off(f);
	if (f & (XR_OPF_ATMETH | XR_OPF_MATMETH)) {
		pkt->atm_va = rd64(h);
		pkt->atm_rkey = rd32(h + 8);
		pkt->atm_swap_add = rd64(h + 12);
		pkt->atm_compare = rd64(h + 20);
	} else {
		pkt->atm_va = pkt->atm_swap_add = pkt->atm_compare = 0;
		pkt->atm_rkey = 0;
	}
	pkt->atm_swap_mask = f & XR_OPF_MATMETH ? rd64(h + 28) : 0;
	pkt->atm_compare_mask = f & XR_OPF_MATMETH ? rd64(h + 36) : 0;

	pkt->imm_be = 0;
	if (f & XR_OPF_IMMDT)
		memcpy(&pkt->imm_be, bth + xr_immdt_off(f), 4);
	pkt->ieth_rkey = f & XR_OPF_IETH ? rd32(bth + xr_ieth_off(f)) : 0;
	h = bth + xr_pleth_off(f);
	pkt->pleth_offset = f & XR_OPF_PLETH ? rd32(h) : 0;
	pkt->pleth_recv_seq = f & XR_OPF_PLETH ? rd24(h + 5) : 0;
	h = bth + xr_sacketh_off(f);
	pkt->sack_newest = f & XR_OPF_SACKETH ? rd24(h + 1) : 0;
	pkt->sack_bitmap = f & XR_OPF_SACKETH ? h + 4 : NULL;

	h = bth + xr_aeth_off(f);
	pkt->aeth_syndrome = f & XR_OPF_AETH ? h[0] : 0;
	pkt->aeth_msn = f & XR_OPF_AETH ? rd24(h + 1) : 0;
	pkt->atmack_orig = f & XR_OPF_ATMACK ? rd64(bth + xr_atmack_off(f)) : 0;
}

enum xr_parse_result xr_pkt_parse(const uint8_t *frame, uint32_t len, struct xr_pkt *pkt)
{
	uint32_t udp_off, l3_end, udp_len, bth_off, roce_end, hdr_len;
	const uint8_t *udp, *bth;
	enum xr_parse_result r;

	pkt->frame = frame;
	pkt->frame_len = len;
	r = parse_l3(frame, len, pkt, &udp_off, &l3_end);
	if (r != XR_PARSE_OK)
		return r;
	udp = frame + udp_off;
	if (len < udp_off + 4 || rd16(udp + 2) != XR_ROCEV2_UDP_PORT)
		return XR_PARSE_NOT_ROCE;
	if (len < udp_off + XR_UDP_HLEN)
		return XR_PARSE_TRUNCATED;
	pkt->udp_off = udp_off;
	pkt->udp_sport = rd16(udp);
	udp_len = rd16(udp + 4);
	if (l3_end > len)
		return XR_PARSE_TRUNCATED;
	/* RoCEv2 sends one datagram per IP packet: the two lengths must agree. */
	if (udp_len < XR_UDP_HLEN || udp_off + udp_len != l3_end)
		return XR_PARSE_BAD_LENGTH;
	bth_off = udp_off + XR_UDP_HLEN;
	roce_end = udp_off + udp_len;
	if (roce_end < bth_off + XR_BTH_SIZE)
		return XR_PARSE_TRUNCATED;
	bth = frame + bth_off;
	pkt->bth_off = bth_off;
	pkt->opcode = bth[0];
	if ((bth[1] & XR_BTH_TVER_MASK) != 0)
		return XR_PARSE_BAD_TVER;
	pkt->opflags = xr_opinfo[pkt->opcode].flags;
	if (!(pkt->opflags & XR_OPF_VALID))
		return XR_PARSE_BAD_OPCODE;
	hdr_len = xr_opinfo[pkt->opcode].hdr_len;
	if (roce_end < bth_off + hdr_len)
		return XR_PARSE_TRUNCATED;
	pkt->se = bth[1] & XR_BTH_SE;
	pkt->padcnt = (bth[1] & XR_BTH_PAD_MASK) >> XR_BTH_PAD_SHIFT;
	pkt->pkey = rd16(bth + 2);
	pkt->dqpn = rd24(bth + 5);
	pkt->ackreq = bth[8] & 0x80;
	pkt->sr_capable = bth[8] & 0x40;
	pkt->sr_heard = bth[8] & 0x20;
	pkt->psn = rd24(bth + 9);
	/* Only the last (or only) packet of a message may be padded. */
	if (pkt->padcnt && !(pkt->opflags & XR_OPF_LAST))
		return XR_PARSE_BAD_LENGTH;
	if (roce_end < bth_off + hdr_len + pkt->padcnt + XR_ICRC_SIZE)
		return XR_PARSE_BAD_LENGTH;
	pkt->payload = bth + hdr_len;
	pkt->payload_len = roce_end - (bth_off + hdr_len) - pkt->padcnt - XR_ICRC_SIZE;
	if (pkt->payload_len && !(pkt->opflags & XR_OPF_PAYLOAD))
		return XR_PARSE_BAD_LENGTH;
	pkt->icrc = frame + roce_end - XR_ICRC_SIZE;
	pkt->roce_len = roce_end - pkt->l3_off;
	parse_ext_headers(bth, pkt);
	return XR_PARSE_OK;
}

/*
 * The ICRC over the first len bytes from l3 on (at least the IP, UDP and base
 * transport headers), with the variant fields masked as the spec says. The
 * bytes are masked in a copy: as many as it holds, so that the extension
 * headers usually come in the same libdeflate call. *covered tells how many
 * bytes it took in.
 */
static uint32_t icrc_masked_prefix(const uint8_t *l3, bool ipv6, uint32_t len, uint32_t *covered)
{
	/* 8 bytes standing in for the LRH, then the IP header (60 at most) onwards */
	uint8_t masked[8 + 160];
	uint32_t l3_len = ipv6 ? XR_IPV6_HLEN : (l3[0] & 0x0f) * 4u;
	uint32_t n = len < sizeof(masked) - 8 ? len : sizeof(masked) - 8;
	uint8_t *ip = masked + 8, *udp, *bth;

	memset(masked, 0xff, 8);
	memcpy(ip, l3, n);
	if (ipv6) {
		ip[0] |= 0x0f; /* traffic class and flow label */
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff; /* hop limit */
	} else {
		ip[1] = 0xff;		/* TOS */
		ip[8] = 0xff;		/* TTL */
		ip[10] = ip[11] = 0xff; /* header checksum */
	}
	udp = ip + l3_len;
	udp[6] = udp[7] = 0xff;
	bth = udp + XR_UDP_HLEN;
	bth[4] = 0xff;
	*covered = n;
	return libdeflate_crc32(0, masked, 8 + n);
}

uint32_t xr_icrc(const uint8_t *frame, uint32_t l3_off, bool ipv6, uint32_t icrc_off)
{
	const uint8_t *l3 = frame + l3_off;
	uint32_t n, crc = icrc_masked_prefix(l3, ipv6, icrc_off - l3_off, &n);

	return libdeflate_crc32(crc, l3 + n, icrc_off - (l3_off + n));
}

bool xr_pkt_icrc_ok(const struct xr_pkt *pkt)
{
	uint32_t icrc_off = (uint32_t)(pkt->icrc - pkt->frame);
	uint32_t want = xr_icrc(pkt->frame, pkt->l3_off, pkt->ipv6, icrc_off);
	const uint8_t *c = pkt->icrc;
	uint32_t got =
	    (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
	return want == got;
}

uint32_t xr_pkt_frame_size(uint8_t opcode, bool ipv6, uint32_t payload_len)
{
	uint32_t pad = (4 - (payload_len & 3)) & 3;
	return XR_ETH_HLEN + (ipv6 ? XR_IPV6_HLEN : XR_IPV4_HLEN) + XR_UDP_HLEN +
	       xr_opinfo[opcode].hdr_len + payload_len + pad + XR_ICRC_SIZE;
}

uint16_t xr_udp_sport_for_qpn(uint32_t qpn)
{
	/* rxe: RXE_ROCE_V2_SPORT + (hash_32(qpn, 14) & 0x3fff) */
	return 0xc000 | (uint16_t)(((uint32_t)(qpn * 0x61c88647u)) >> 18);
}

uint16_t xr_udp_sport_for_conn(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	/* The kernel's rdma_get_udp_sport(), with rdma_calc_flow_label() for label 0. */
	if (!flow_label) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		flow_label = (uint32_t)v & 0xfffff;
	}
	return 0xc000 | (uint16_t)((flow_label & 0x3fff) ^ (flow_label >> 14));
}

uint16_t xr_ipv4_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < XR_IPV4_HLEN; i += 2)
		sum += rd16(h + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int xr_pkt_build(uint8_t *buf, uint32_t cap, const struct xr_path *path,
		 const struct xr_bth_fields *bth, uint32_t payload_len, uint16_t ip_id,
		 struct xr_pkt_out *out)
{
	const struct xr_opinfo *oi = &xr_opinfo[bth->opcode];
	bool ipv6 = !xr_gid_is_v4mapped(&path->dgid);
	uint32_t pad = (4 - (payload_len & 3)) & 3;
	uint32_t l3_len = ipv6 ? XR_IPV6_HLEN : XR_IPV4_HLEN;
	uint32_t udp_len = XR_UDP_HLEN + oi->hdr_len + payload_len + pad + XR_ICRC_SIZE;
	uint32_t frame_len = XR_ETH_HLEN + l3_len + udp_len;
	uint8_t hop = path->hop_limit ? path->hop_limit : DEFAULT_HOP_LIMIT;
	uint8_t *l3 = buf + XR_ETH_HLEN, *udp = l3 + l3_len, *b = udp + XR_UDP_HLEN;
	/* The DSCP is the path's; the ECN field says whether the sender reacts to CE. */
	uint8_t tclass =
	    (uint8_t)((path->traffic_class & ~XR_ECN_MASK) | (path->ecn & XR_ECN_MASK));

	/* The parser refuses a padded packet that does not end a message: never send one. */
	if (!(oi->flags & XR_OPF_VALID) || (pad && !(oi->flags & XR_OPF_LAST)))
		return -EINVAL;
	if (frame_len > cap)
		return -ENOSPC;

	memcpy(buf, path->dmac, 6);
	memcpy(buf + 6, path->smac, 6);
	wr16(buf + 12, ipv6 ? ETH_P_IPV6 : ETH_P_IPV4);
	if (ipv6) {
		wr32(l3, 6u << 28 | (uint32_t)tclass << 20 | (path->flow_label & 0xfffff));
		wr16(l3 + 4, (uint16_t)udp_len);
		l3[6] = IPPROTO_UDP_NUM;
		l3[7] = hop;
		memcpy(l3 + 8, path->sgid.raw, 16);
		memcpy(l3 + 24, path->dgid.raw, 16);
	} else {
		l3[0] = 0x45;
		l3[1] = tclass;
		wr16(l3 + 2, (uint16_t)(l3_len + udp_len));
		wr16(l3 + 4, ip_id);
		wr16(l3 + 6, 0x4000); /* DF, as rxe */
		l3[8] = hop;
		l3[9] = IPPROTO_UDP_NUM;
		wr16(l3 + 10, 0);
		memcpy(l3 + 12, path->sgid.raw + 12, 4);
		memcpy(l3 + 16, path->dgid.raw + 12, 4);
		wr16(l3 + 10, xr_ipv4_checksum(l3));
	}
	wr16(udp, path->udp_sport);
	wr16(udp + 2, XR_ROCEV2_UDP_PORT);
	wr16(udp + 4, (uint16_t)udp_len);
	wr16(udp + 6, 0); /* RoCEv2 over IPv4 carries no UDP checksum */

	b[0] = bth->opcode;
	b[1] = (bth->se ? XR_BTH_SE : 0) | (uint8_t)(pad << XR_BTH_PAD_SHIFT);
	wr16(b + 2, bth->pkey ? bth->pkey : XR_DEFAULT_PKEY);
	wr32(b + 4, (bth->becn ? XR_BTH_BECN : 0) | (bth->dqpn & XR_QPN_MASK));
	wr32(b + 8, (bth->ackreq ? XR_BTH_ACKREQ : 0) | (bth->sr_capable ? XR_BTH_SR_CAPABLE : 0) |
			(bth->sr_heard ? XR_BTH_SR_HEARD : 0) | (bth->psn & XR_PSN_MASK));
	memset(b + XR_BTH_SIZE, 0, oi->hdr_len - XR_BTH_SIZE);
	if (pad)
		memset(b + oi->hdr_len + payload_len, 0, pad);

	out->frame = buf;
	out->frame_len = frame_len;
	out->l3_off = XR_ETH_HLEN;
	out->ipv6 = ipv6;
	out->bth = b;
	out->ext = b + XR_BTH_SIZE;
	out->payload = b + oi->hdr_len;
	out->icrc_off = frame_len - XR_ICRC_SIZE;
	out->crc_end = NULL;
	out->crc_lost = false;
	out->crc = 0;
	return 0;
}

void xr_pkt_put_payload(struct xr_pkt_out *out, uint32_t off, const void *src, uint32_t len)
{
	uint8_t *dst = out->payload + off;

	if (!out->crc_end && off == 0 && !out->crc_lost) {
		const uint8_t *l3 = out->frame + out->l3_off;
		uint32_t hdrs = (uint32_t)(out->payload - l3), n;

		out->crc = icrc_masked_prefix(l3, out->ipv6, hdrs, &n);
		if (hdrs > n) /* headers longer than the masked copy takes */
			out->crc = libdeflate_crc32(out->crc, l3 + n, hdrs - n);
		out->crc_end = out->payload;
	}
	if (dst != out->crc_end) {
		/* Out of order: xr_pkt_seal goes over the whole frame instead. */
		memcpy(dst, src, len);
		out->crc_end = NULL;
		out->crc_lost = true;
		return;
	}
	out->crc = xr_copy_crc32(dst, src, len, out->crc);
	out->crc_end += len;
}

void xr_pkt_seal(struct xr_pkt_out *out)
{
	uint8_t *c = out->frame + out->icrc_off;
	uint32_t crc;

	if (out->crc_end)
		crc = c > out->crc_end
			  ? libdeflate_crc32(out->crc, out->crc_end, (size_t)(c - out->crc_end))
			  : out->crc;
	else
		crc = xr_icrc(out->frame, out->l3_off, out->ipv6, out->icrc_off);
	c[0] = crc;
	c[1] = crc >> 8;
	c[2] = crc >> 16;
	c[3] = crc >> 24;
}
