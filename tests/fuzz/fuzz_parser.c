// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness of the engine's frame parser: xr_pkt_parse on arbitrary
 * bytes. Whatever it returns it must not read outside the frame (ASan sees
 * the input buffer's exact end); when it says OK, the view it returns must
 * describe a frame the rest of the core can trust: every offset and pointer
 * inside the frame, headers, payload, pad and ICRC laid end to end within
 * the UDP datagram, and extension fields set only for opcodes that carry them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/packet.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_parser: invariant broken: %s\n", #cond);             \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void require_ext_fields_fit(const struct xr_pkt *p)
{
	uint32_t f = p->opflags;

	if (!(f & XR_OPF_RETH))
		REQUIRE(!p->reth_va && !p->reth_rkey && !p->reth_len);
	if (!(f & (XR_OPF_ATMETH | XR_OPF_MATMETH)))
		REQUIRE(!p->atm_va && !p->atm_rkey && !p->atm_swap_add && !p->atm_compare);
	if (!(f & XR_OPF_MATMETH))
		REQUIRE(!p->atm_swap_mask && !p->atm_compare_mask);
	if (!(f & XR_OPF_AETH))
		REQUIRE(!p->aeth_syndrome && !p->aeth_msn);
	if (!(f & XR_OPF_ATMACK))
		REQUIRE(!p->atmack_orig);
	if (!(f & XR_OPF_IMMDT))
		REQUIRE(!p->imm_be);
	if (!(f & XR_OPF_IETH))
		REQUIRE(!p->ieth_rkey);
	if (!(f & XR_OPF_DETH))
		REQUIRE(!p->deth_qkey && !p->deth_sqpn);
}

static void require_view_inside(const uint8_t *frame, uint32_t len, const struct xr_pkt *p)
{
	const uint8_t *end = frame + len;
	uint32_t hdr_len = xr_opinfo[p->opcode].hdr_len;

	REQUIRE(p->frame == frame && p->frame_len == len);
	REQUIRE(p->opflags == xr_opinfo[p->opcode].flags && (p->opflags & XR_OPF_VALID));
	REQUIRE(p->l3_off >= XR_ETH_HLEN);
	REQUIRE(p->udp_off >= p->l3_off + (p->ipv6 ? XR_IPV6_HLEN : XR_IPV4_HLEN));
	REQUIRE(p->bth_off == p->udp_off + XR_UDP_HLEN);
	REQUIRE(p->payload == frame + p->bth_off + hdr_len);
	REQUIRE(p->payload_len == 0 || (p->opflags & XR_OPF_PAYLOAD));
	/* Headers, payload, pad, ICRC: end to end, and the ICRC ends inside the frame. */
	REQUIRE(p->icrc == p->payload + p->payload_len + p->padcnt);
	REQUIRE(p->icrc + XR_ICRC_SIZE <= end);
	REQUIRE(p->roce_len == (uint32_t)(p->icrc + XR_ICRC_SIZE - (frame + p->l3_off)));
	/* The spec puts pad bytes in the last (or only) packet of a message alone. */
	REQUIRE(p->padcnt == 0 || (p->opflags & XR_OPF_LAST));
	REQUIRE(p->padcnt <= 3 && p->dqpn <= XR_QPN_MASK && p->psn <= XR_PSN_MASK);
	require_ext_fields_fit(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xr_pkt pkt, again;
	enum xr_parse_result r;

	if (size > UINT32_MAX)
		return 0;
	/*
	 * The parser clears nothing in bulk: a field it forgot to write keeps
	 * this pattern, which require_ext_fields_fit sees. Both views start
	 * alike so that their padding compares equal too.
	 */
	memset(&pkt, 0xa5, sizeof(pkt));
	memset(&again, 0xa5, sizeof(again));
	r = xr_pkt_parse(data, (uint32_t)size, &pkt);
	REQUIRE(xr_parse_result_str(r)[0] != '?');
	REQUIRE(xr_pkt_parse(data, (uint32_t)size, &again) == r);
	if (r != XR_PARSE_OK)
		return 0;
	REQUIRE(memcmp(&pkt, &again, sizeof(pkt)) == 0);
	require_view_inside(data, (uint32_t)size, &pkt);
	/* The ICRC walks the headers again: it must stay inside them too. */
	(void)xr_pkt_icrc_ok(&pkt);
	return 0;
}
