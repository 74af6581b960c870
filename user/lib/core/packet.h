/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 frames: parsing a received Ethernet frame into a view of its
 * headers, building a frame for an opcode, and the ICRC.
 */
#ifndef XROCE_PACKET_H
#define XROCE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xroce/wire.h"
#include "xroce/xroce.h"

#define XR_ETH_HLEN 14
#define XR_IPV4_HLEN 20
#define XR_IPV6_HLEN 40
#define XR_UDP_HLEN 8

enum xr_parse_result {
	XR_PARSE_OK = 0,
	XR_PARSE_NOT_ROCE,  /* not IPv4/IPv6 UDP to port 4791 */
	XR_PARSE_TRUNCATED, /* ends inside a header */
	XR_PARSE_BAD_TVER,
	XR_PARSE_BAD_OPCODE,
	XR_PARSE_BAD_LENGTH, /* headers + pad + ICRC do not fit the UDP length */
};

/* A parsed frame. Pointers point into the frame; nothing is copied. */
struct xr_pkt {
	const uint8_t *frame;
	uint32_t frame_len;
	uint16_t l3_off, udp_off, bth_off;
	bool ipv6;
	uint8_t smac[6], dmac[6];
	union xr_gid sgid, dgid; /* IPv4 as IPv4-mapped GIDs */
	uint16_t udp_sport;
	uint8_t ecn; /* the IP header's ECN field: XR_ECN_CE when a switch marked it */

	uint8_t opcode;
	uint32_t opflags; /* xr_opinfo[opcode].flags */
	bool se, ackreq;
	bool sr_capable; /* XR_BTH_SR_CAPABLE: the requester speaks selective repeat */
	bool sr_heard;	 /* XR_BTH_SR_HEARD: and knows the responder does */
	uint8_t padcnt;
	uint16_t pkey;
	uint32_t dqpn, psn;

	const uint8_t *payload;
	uint32_t payload_len; /* without pad and ICRC */
	const uint8_t *icrc;  /* the 4 ICRC bytes */
	uint32_t roce_len;    /* IP header .. ICRC, inclusive */

	/* Extension headers, decoded to host order when present. */
	uint64_t reth_va;
	uint32_t reth_rkey, reth_len;
	uint64_t atm_va, atm_swap_add, atm_compare;
	uint64_t atm_swap_mask, atm_compare_mask; /* masked atomics */
	uint32_t atm_rkey;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint64_t atmack_orig;
	uint32_t imm_be; /* ImmDt as on the wire (network order) */
	uint32_t ieth_rkey;
	uint32_t deth_qkey, deth_sqpn;
	uint32_t pleth_offset, pleth_recv_seq; /* selective repeat's placement header */
	uint32_t sack_newest;		       /* SACK: the newest PSN the responder received */
	const uint8_t *sack_bitmap;	       /* SACK: XR_SR_WINDOW bits, or NULL */
};

/* Stores v big-endian, as every header field on the wire. */
static inline void xr_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Parses frame (Ethernet first); the ICRC is not checked here. */
enum xr_parse_result xr_pkt_parse(const uint8_t *frame, uint32_t len, struct xr_pkt *pkt);
const char *xr_parse_result_str(enum xr_parse_result r);

/* ICRC of a frame whose L3 header starts at l3_off, covering l3 .. icrc_off. */
uint32_t xr_icrc(const uint8_t *frame, uint32_t l3_off, bool ipv6, uint32_t icrc_off);
bool xr_pkt_icrc_ok(const struct xr_pkt *pkt);

/* Where a frame goes: Ethernet, IP and UDP fields for one QP's path. */
struct xr_path {
	uint8_t smac[6], dmac[6];
	union xr_gid sgid, dgid; /* both IPv4-mapped, or both IPv6 */
	uint16_t udp_sport;
	uint8_t hop_limit;     /* 0: 64 */
	uint8_t traffic_class; /* its DSCP (bits 7:2) */
	uint8_t ecn;	       /* the ECN codepoint its frames carry (XR_ECN_ECT0 or 0) */
	uint32_t flow_label;
};

struct xr_bth_fields {
	uint8_t opcode;
	bool se, ackreq;
	bool sr_capable, sr_heard; /* XR_BTH_SR_CAPABLE, XR_BTH_SR_HEARD */
	bool becn;		   /* XR_BTH_BECN: a CNP's */
	uint16_t pkey;		   /* 0: XR_DEFAULT_PKEY */
	uint32_t dqpn, psn;
};

/*
 * A frame being built. xr_pkt_build lays out every header for the opcode
 * and payload length; the caller then fills the extension headers
 * (ext points right after the BTH, laid out as xr_opinfo says), then the
 * payload with xr_pkt_put_payload, which carries the ICRC as it copies, and
 * calls xr_pkt_seal to finish the ICRC. A payload written directly instead
 * is covered by xr_pkt_seal in a pass of its own.
 */
struct xr_pkt_out {
	uint8_t *frame;
	uint32_t frame_len;
	uint16_t l3_off;
	bool ipv6;
	uint8_t *bth;
	uint8_t *ext; /* == bth + XR_BTH_SIZE */
	uint8_t *payload;
	uint32_t icrc_off;
	uint8_t *crc_end; /* the ICRC so far covers l3 .. crc_end; NULL: not begun */
	uint32_t crc;
	bool crc_lost; /* the payload came out of order: xr_pkt_seal does it all */
};

/*
 * Returns 0, or -ENOSPC if cap is too small, -EINVAL for an unknown opcode or
 * for a payload that needs padding in a packet that does not end a message.
 */
int xr_pkt_build(uint8_t *buf, uint32_t cap, const struct xr_path *path,
		 const struct xr_bth_fields *bth, uint32_t payload_len, uint16_t ip_id,
		 struct xr_pkt_out *out);
/*
 * Copies len bytes from src to the payload at off. Calls that fill it in
 * order carry the ICRC along; any other order costs xr_pkt_seal a pass.
 */
void xr_pkt_put_payload(struct xr_pkt_out *out, uint32_t off, const void *src, uint32_t len);
void xr_pkt_seal(struct xr_pkt_out *out);

/* Frame bytes needed for an opcode and payload length. */
uint32_t xr_pkt_frame_size(uint8_t opcode, bool ipv6, uint32_t payload_len);

/* UDP source port rxe uses for a UD QP: 0xC000 | 14-bit hash of the QPN. */
uint16_t xr_udp_sport_for_qpn(uint32_t qpn);
/*
 * UDP source port of a connected (RC/UC) QP, as the kernel derives it once the
 * remote QPN is known: from the flow label, or from both QPNs when it is 0.
 */
uint16_t xr_udp_sport_for_conn(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);

bool xr_gid_is_v4mapped(const union xr_gid *gid);

/* The checksum of a 20-byte IPv4 header whose checksum field holds 0. */
uint16_t xr_ipv4_checksum(const uint8_t *h);

#endif /* XROCE_PACKET_H */
