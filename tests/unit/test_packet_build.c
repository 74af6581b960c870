/* SPDX-License-Identifier: MIT */
/*
 * Building frames: xr_pkt_build + filling (the payload through
 * xr_pkt_put_payload, which carries the ICRC) + xr_pkt_seal, given the path
 * and headers of a frame Soft-RoCE sent, must reproduce that frame byte for
 * byte, ICRC included.
 * Also padding, buffer limits, and the parser's rejection of malformed frames.
 *
 * Run from anywhere; XROCE_VECTORS overrides the capture directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_group.h"
#include "core/packet.h"
#include "pcap_reader.h"

#define MAX_FRAME_LEN 2048
#define UNWRITTEN 0xa5 /* buffer filler: shows bytes the builder left alone */

static uint16_t rd16be(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16be(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

static void wr32be(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void wr64be(uint8_t *p, uint64_t v)
{
	wr32be(p, (uint32_t)(v >> 32));
	wr32be(p + 4, (uint32_t)v);
}

/* A frame Soft-RoCE sent, by capture and tshark frame number. */
struct golden {
	const char *file;
	uint32_t number;
	uint8_t opcode; /* what the frame must be, so a wrong pick fails loudly */
	uint8_t data[MAX_FRAME_LEN];
	uint32_t len;
	struct xr_pkt pkt;
};

static struct golden goldens[] = {
    {.file = "rc_pingpong.pcap", .number = 18, .opcode = XR_OP_RC_SEND_FIRST},
    {.file = "rc_pingpong.pcap", .number = 19, .opcode = XR_OP_RC_SEND_LAST},
    {.file = "rc_pingpong.pcap", .number = 20, .opcode = XR_OP_RC_ACK},
    {.file = "verbs_ops.pcap", .number = 13, .opcode = XR_OP_RC_SEND_ONLY},
    {.file = "verbs_ops.pcap", .number = 14, .opcode = XR_OP_RC_ACK},
    {.file = "verbs_ops.pcap", .number = 19, .opcode = XR_OP_RC_SEND_ONLY_IMM},
    {.file = "verbs_ops.pcap", .number = 25, .opcode = XR_OP_RC_SEND_FIRST},
    {.file = "verbs_ops.pcap", .number = 26, .opcode = XR_OP_RC_SEND_MIDDLE},
    {.file = "verbs_ops.pcap", .number = 27, .opcode = XR_OP_RC_SEND_LAST},
    {.file = "verbs_ops.pcap", .number = 35, .opcode = XR_OP_RC_SEND_LAST_IMM},
    {.file = "verbs_ops.pcap", .number = 47, .opcode = XR_OP_RC_WRITE_FIRST},
    {.file = "verbs_ops.pcap", .number = 55, .opcode = XR_OP_RC_WRITE_ONLY_IMM},
    {.file = "verbs_ops.pcap", .number = 69, .opcode = XR_OP_RC_WRITE_ONLY_IMM},
    {.file = "verbs_ops.pcap", .number = 75, .opcode = XR_OP_RC_READ_REQUEST},
    {.file = "verbs_ops.pcap", .number = 82, .opcode = XR_OP_RC_READ_RESPONSE_FIRST},
    {.file = "verbs_ops.pcap", .number = 83, .opcode = XR_OP_RC_READ_RESPONSE_MIDDLE},
    {.file = "verbs_ops.pcap", .number = 89, .opcode = XR_OP_RC_CMP_SWAP},
    {.file = "verbs_ops.pcap", .number = 90, .opcode = XR_OP_RC_ATOMIC_ACK},
    {.file = "verbs_ops.pcap", .number = 102, .opcode = XR_OP_RC_ACK}, /* RNR NAK */
    {.file = "verbs_ops.pcap", .number = 116, .opcode = XR_OP_RC_ACK}, /* NAK */
    {.file = "ud_pingpong.pcap", .number = 14, .opcode = XR_OP_UD_SEND_ONLY},
    {.file = "uc_pingpong.pcap", .number = 14, .opcode = XR_OP_UC_SEND_FIRST},
};
#define NUM_GOLDENS (sizeof(goldens) / sizeof(goldens[0]))

static void load_goldens(struct group *g)
{
	for (size_t i = 0; i < NUM_GOLDENS; i++) {
		struct golden *gd = &goldens[i];
		struct pcap_file pf;
		struct pcap_record rec;
		char path[512];
		int r;

		snprintf(path, sizeof(path), "%s/%s", vector_dir(), gd->file);
		r = pcap_open(path, &pf);
		check(g, r == 0, "%s: %s", path, strerror(-r));
		if (r)
			continue;
		while ((r = pcap_next(&pf, &rec)) == 1 && rec.number != gd->number)
			;
		check(g, r == 1 && rec.caplen <= MAX_FRAME_LEN, "%s has no frame %u", gd->file,
		      gd->number);
		if (r == 1 && rec.caplen <= MAX_FRAME_LEN) {
			enum xr_parse_result pr;

			memcpy(gd->data, rec.data, rec.caplen);
			gd->len = rec.caplen;
			pr = xr_pkt_parse(gd->data, gd->len, &gd->pkt);
			check(g, pr == XR_PARSE_OK && gd->pkt.opcode == gd->opcode,
			      "%s frame %u: %s, opcode 0x%02x, want 0x%02x", gd->file, gd->number,
			      xr_parse_result_str(pr), gd->pkt.opcode, gd->opcode);
			if (pr != XR_PARSE_OK || gd->pkt.opcode != gd->opcode)
				gd->len = 0;
		}
		pcap_close(&pf);
	}
}

/* The path as an engine would hold it for this frame's QP. */
static void path_of(const struct xr_pkt *p, struct xr_path *path)
{
	const uint8_t *ip = p->frame + p->l3_off;

	memset(path, 0, sizeof(*path));
	memcpy(path->smac, p->smac, 6);
	memcpy(path->dmac, p->dmac, 6);
	path->sgid = p->sgid;
	path->dgid = p->dgid;
	path->udp_sport = p->udp_sport;
	path->traffic_class = ip[1];
	path->hop_limit = ip[8];
}

static void bth_of(const struct xr_pkt *p, struct xr_bth_fields *bth)
{
	*bth = (struct xr_bth_fields){
	    .opcode = p->opcode,
	    .se = p->se,
	    .ackreq = p->ackreq,
	    .pkey = p->pkey,
	    .dqpn = p->dqpn,
	    .psn = p->psn,
	};
}

/* Fills the extension headers from decoded values, at the offsets wire.h gives. */
static void fill_ext(const struct xr_pkt *p, struct xr_pkt_out *out)
{
	uint32_t f = p->opflags;
	uint8_t *bth = out->bth;

	if (f & XR_OPF_DETH) {
		wr32be(bth + xr_deth_off(f), p->deth_qkey);
		wr32be(bth + xr_deth_off(f) + 4, p->deth_sqpn);
	}
	if (f & XR_OPF_RETH) {
		wr64be(bth + xr_reth_off(f), p->reth_va);
		wr32be(bth + xr_reth_off(f) + 8, p->reth_rkey);
		wr32be(bth + xr_reth_off(f) + 12, p->reth_len);
	}
	if (f & XR_OPF_ATMETH) {
		wr64be(bth + xr_atmeth_off(f), p->atm_va);
		wr32be(bth + xr_atmeth_off(f) + 8, p->atm_rkey);
		wr64be(bth + xr_atmeth_off(f) + 12, p->atm_swap_add);
		wr64be(bth + xr_atmeth_off(f) + 20, p->atm_compare);
	}
	if (f & XR_OPF_IMMDT)
		memcpy(bth + xr_immdt_off(f), &p->imm_be, 4);
	if (f & XR_OPF_IETH)
		wr32be(bth + xr_ieth_off(f), p->ieth_rkey);
	if (f & XR_OPF_AETH)
		wr32be(bth + xr_aeth_off(f), (uint32_t)p->aeth_syndrome << 24 | p->aeth_msn);
	if (f & XR_OPF_ATMACK)
		wr64be(bth + xr_atmack_off(f), p->atmack_orig);
	/* In three pieces, as from a gather list: the ICRC is carried across them. */
	for (uint32_t off = 0, piece = p->payload_len / 3 + 1; off < p->payload_len; off += piece) {
		uint32_t n = p->payload_len - off < piece ? p->payload_len - off : piece;

		xr_pkt_put_payload(out, off, p->payload + off, n);
	}
}

static int build_like(const struct golden *gd, uint16_t ip_id, uint8_t *buf, uint32_t cap,
		      struct xr_pkt_out *out)
{
	struct xr_path path;
	struct xr_bth_fields bth;
	int r;

	path_of(&gd->pkt, &path);
	bth_of(&gd->pkt, &bth);
	memset(buf, UNWRITTEN, cap);
	r = xr_pkt_build(buf, cap, &path, &bth, gd->pkt.payload_len, ip_id, out);
	if (r == 0) {
		fill_ext(&gd->pkt, out);
		xr_pkt_seal(out);
	}
	return r;
}

static bool ipv4_checksum_ok(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < XR_IPV4_HLEN; i += 2)
		sum += rd16be(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static uint32_t first_difference(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	uint32_t i = 0;

	while (i < len && a[i] == b[i])
		i++;
	return i;
}

static void check_rebuild_identical(struct group *g)
{
	for (size_t i = 0; i < NUM_GOLDENS; i++) {
		const struct golden *gd = &goldens[i];
		uint8_t buf[MAX_FRAME_LEN];
		struct xr_pkt_out out;
		struct xr_pkt re;
		uint16_t ip_id;
		int r;

		if (!gd->len)
			continue;
		ip_id = rd16be(gd->data + gd->pkt.l3_off + 4);
		r = build_like(gd, ip_id, buf, sizeof(buf), &out);
		check(g, r == 0, "%s frame %u: xr_pkt_build: %s", gd->file, gd->number,
		      strerror(-r));
		if (r)
			continue;
		check(g, out.frame_len == gd->len, "%s frame %u: built %u bytes, captured %u",
		      gd->file, gd->number, out.frame_len, gd->len);
		check(g, out.frame_len == xr_pkt_frame_size(gd->opcode, false, gd->pkt.payload_len),
		      "%s frame %u: xr_pkt_frame_size disagrees with xr_pkt_build", gd->file,
		      gd->number);
		if (out.frame_len == gd->len) {
			uint32_t d = first_difference(buf, gd->data, gd->len);

			check(g, d == gd->len,
			      "%s frame %u (opcode 0x%02x): first difference at byte %u: "
			      "built 0x%02x, captured 0x%02x",
			      gd->file, gd->number, gd->opcode, d, buf[d], gd->data[d]);
		}
		r = xr_pkt_parse(buf, out.frame_len, &re);
		check(g, r == XR_PARSE_OK && xr_pkt_icrc_ok(&re),
		      "%s frame %u: rebuilt frame: %s, ICRC %s", gd->file, gd->number,
		      xr_parse_result_str(r),
		      r == XR_PARSE_OK && xr_pkt_icrc_ok(&re) ? "ok" : "bad");
	}
}

/* With another IP ID only the ID, the IP checksum and the ICRC may change. */
static void check_other_ip_id(struct group *g)
{
	for (size_t i = 0; i < NUM_GOLDENS; i++) {
		const struct golden *gd = &goldens[i];
		uint8_t buf[MAX_FRAME_LEN];
		struct xr_pkt_out out;
		struct xr_pkt re;
		uint32_t l3 = gd->pkt.l3_off, icrc_off;
		uint16_t ip_id;

		if (!gd->len)
			continue;
		ip_id = rd16be(gd->data + l3 + 4) ^ 0x5a5a;
		if (build_like(gd, ip_id, buf, sizeof(buf), &out) != 0 ||
		    out.frame_len != gd->len) {
			check(g, false, "%s frame %u: build failed", gd->file, gd->number);
			continue;
		}
		icrc_off = out.icrc_off;
		check(g, rd16be(buf + l3 + 4) == ip_id && ipv4_checksum_ok(buf + l3),
		      "%s frame %u: IP ID 0x%04x or its checksum wrong", gd->file, gd->number,
		      rd16be(buf + l3 + 4));
		for (uint32_t pos = 0; pos < gd->len; pos++) {
			bool may_differ = pos == l3 + 4 || pos == l3 + 5 || pos == l3 + 10 ||
					  pos == l3 + 11 || pos >= icrc_off;

			if (!may_differ)
				check(g, buf[pos] == gd->data[pos],
				      "%s frame %u: byte %u changed with the IP ID", gd->file,
				      gd->number, pos);
		}
		check(g, memcmp(buf + icrc_off, gd->data + icrc_off, XR_ICRC_SIZE) != 0,
		      "%s frame %u: ICRC did not change with the IP ID it covers", gd->file,
		      gd->number);
		check(
		    g, xr_pkt_parse(buf, out.frame_len, &re) == XR_PARSE_OK && xr_pkt_icrc_ok(&re),
		    "%s frame %u: frame with another IP ID does not verify", gd->file, gd->number);
	}
}

static const struct golden *golden_with(uint8_t opcode)
{
	for (size_t i = 0; i < NUM_GOLDENS; i++)
		if (goldens[i].len && goldens[i].opcode == opcode)
			return &goldens[i];
	return NULL;
}

/* Payloads that are not a multiple of 4: PadCnt, zeroed pad, length round trip. */
static void check_padding(struct group *g)
{
	static const uint8_t opcodes[] = {XR_OP_RC_SEND_ONLY, XR_OP_RC_SEND_ONLY_IMM,
					  XR_OP_RC_WRITE_ONLY_IMM, XR_OP_UD_SEND_ONLY};

	for (size_t k = 0; k < sizeof(opcodes); k++) {
		const struct golden *gd = golden_with(opcodes[k]);
		struct xr_path path;
		struct xr_bth_fields bth;

		check(g, gd != NULL, "no golden frame with opcode 0x%02x", opcodes[k]);
		if (!gd)
			continue;
		path_of(&gd->pkt, &path);
		bth_of(&gd->pkt, &bth);
		for (uint32_t len = 0; len <= 13; len++) {
			uint8_t buf[MAX_FRAME_LEN];
			struct xr_pkt_out out;
			struct xr_pkt re;
			uint32_t pad = (4 - len % 4) % 4;
			int r;

			memset(buf, UNWRITTEN, sizeof(buf));
			r = xr_pkt_build(buf, sizeof(buf), &path, &bth, len, 0x1234, &out);
			check(g, r == 0, "opcode 0x%02x len %u: %s", opcodes[k], len, strerror(-r));
			if (r)
				continue;
			memset(out.payload, 0x3c, len);
			xr_pkt_seal(&out);
			check(g, out.frame_len == xr_pkt_frame_size(opcodes[k], false, len),
			      "opcode 0x%02x len %u: frame %u bytes, xr_pkt_frame_size %u",
			      opcodes[k], len, out.frame_len,
			      xr_pkt_frame_size(opcodes[k], false, len));
			check(g,
			      (uint32_t)((out.bth[1] & XR_BTH_PAD_MASK) >> XR_BTH_PAD_SHIFT) == pad,
			      "opcode 0x%02x len %u: PadCnt %u, want %u", opcodes[k], len,
			      (out.bth[1] & XR_BTH_PAD_MASK) >> XR_BTH_PAD_SHIFT, pad);
			for (uint32_t i = 0; i < pad; i++)
				check(g, out.payload[len + i] == 0,
				      "opcode 0x%02x len %u: pad byte %u is 0x%02x", opcodes[k],
				      len, i, out.payload[len + i]);
			check(g, out.payload + len + pad == out.frame + out.icrc_off,
			      "opcode 0x%02x len %u: ICRC not right after the pad", opcodes[k],
			      len);
			/* Extension headers the caller did not fill must not be garbage. */
			for (uint8_t *p = out.ext; p < out.payload; p++)
				check(g, *p == 0, "opcode 0x%02x: extension byte %td not zeroed",
				      opcodes[k], p - out.ext);
			r = xr_pkt_parse(buf, out.frame_len, &re);
			check(g,
			      r == XR_PARSE_OK && re.payload_len == len && re.padcnt == pad &&
				  xr_pkt_icrc_ok(&re),
			      "opcode 0x%02x len %u: re-parse %s, payload %u, PadCnt %u",
			      opcodes[k], len, xr_parse_result_str(r), re.payload_len, re.padcnt);
		}
	}
}

static void check_capacity(struct group *g)
{
	const struct golden *gd = golden_with(XR_OP_RC_SEND_ONLY);
	struct xr_path path;
	struct xr_bth_fields bth;
	struct xr_pkt_out out;
	uint8_t buf[MAX_FRAME_LEN];

	check(g, gd != NULL, "no SEND ONLY golden frame");
	if (!gd)
		return;
	path_of(&gd->pkt, &path);
	bth_of(&gd->pkt, &bth);
	for (uint32_t len = 0; len <= 1024; len += 61) {
		uint32_t need = xr_pkt_frame_size(bth.opcode, false, len);
		bool untouched = true;
		int r;

		memset(buf, UNWRITTEN, sizeof(buf));
		r = xr_pkt_build(buf, need - 1, &path, &bth, len, 0, &out);
		check(g, r == -ENOSPC, "payload %u, cap %u: %d, want -ENOSPC", len, need - 1, r);
		for (uint32_t i = 0; i < sizeof(buf); i++)
			untouched &= buf[i] == UNWRITTEN;
		check(g, untouched, "payload %u: a refused build wrote into the buffer", len);
		r = xr_pkt_build(buf, need, &path, &bth, len, 0, &out);
		check(g, r == 0 && out.frame_len == need, "payload %u, cap %u (exact): %d", len,
		      need, r);
	}
	check(g, xr_pkt_build(buf, sizeof(buf), &path, &bth, 0, 0, &out) == 0, "cap > need");
	check(g, xr_pkt_build(buf, 0, &path, &bth, 0, 0, &out) == -ENOSPC, "cap 0");

	for (unsigned int op = 0; op < 256; op++) {
		int r;

		bth.opcode = (uint8_t)op;
		r = xr_pkt_build(buf, sizeof(buf), &path, &bth, 0, 0, &out);
		check(g, (xr_opinfo[op].flags & XR_OPF_VALID) ? r == 0 : r == -EINVAL,
		      "opcode 0x%02x: xr_pkt_build returned %d", op, r);
	}
}

/* Sets the IPv4 total length and UDP length so that the RoCE part ends at roce_end. */
static void set_lengths(uint8_t *f, const struct xr_pkt *p, uint32_t roce_end)
{
	wr16be(f + p->l3_off + 2, (uint16_t)(roce_end - p->l3_off));
	wr16be(f + p->udp_off + 4, (uint16_t)(roce_end - p->udp_off));
}

static void expect_parse(struct group *g, const uint8_t *f, uint32_t len, enum xr_parse_result want,
			 const char *fmt, ...)
{
	struct xr_pkt pkt;
	enum xr_parse_result r = xr_pkt_parse(f, len, &pkt);
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check(g, r == want, "%s: %s, want %s", what, xr_parse_result_str(r),
	      xr_parse_result_str(want));
}

static void check_rejections(struct group *g)
{
	static const uint8_t opcodes[] = {XR_OP_RC_ACK,	      XR_OP_RC_ATOMIC_ACK,
					  XR_OP_RC_CMP_SWAP,  XR_OP_RC_WRITE_ONLY_IMM,
					  XR_OP_UD_SEND_ONLY, XR_OP_RC_READ_REQUEST};

	for (size_t k = 0; k < sizeof(opcodes); k++) {
		const struct golden *gd = golden_with(opcodes[k]);
		const struct xr_pkt *p;
		uint8_t f[MAX_FRAME_LEN + 16];
		uint32_t hdr_end;

		check(g, gd != NULL, "no golden frame with opcode 0x%02x", opcodes[k]);
		if (!gd)
			continue;
		p = &gd->pkt;
		hdr_end = p->bth_off + xr_opinfo[p->opcode].hdr_len;

		/* The frame cut short: until the UDP destination port it is not RoCE. */
		for (uint32_t len = 0; len < gd->len; len++)
			expect_parse(g, gd->data, len,
				     len < p->udp_off + 4u ? XR_PARSE_NOT_ROCE : XR_PARSE_TRUNCATED,
				     "opcode 0x%02x cut to %u of %u bytes", p->opcode, len,
				     gd->len);

		/* Lengths that agree with each other but end inside a header. */
		for (uint32_t end = p->udp_off + XR_UDP_HLEN; end < hdr_end + XR_ICRC_SIZE; end++) {
			memcpy(f, gd->data, end);
			set_lengths(f, p, end);
			expect_parse(g, f, end,
				     end < hdr_end ? XR_PARSE_TRUNCATED : XR_PARSE_BAD_LENGTH,
				     "opcode 0x%02x ending %u bytes after the UDP header",
				     p->opcode, end - p->udp_off - XR_UDP_HLEN);
		}

		memcpy(f, gd->data, gd->len);
		for (uint8_t tver = 1; tver <= XR_BTH_TVER_MASK; tver++) {
			f[p->bth_off + 1] = (gd->data[p->bth_off + 1] & ~XR_BTH_TVER_MASK) | tver;
			expect_parse(g, f, gd->len, XR_PARSE_BAD_TVER, "TVer %u", tver);
		}

		memcpy(f, gd->data, gd->len);
		for (unsigned int op = 0; op < 256; op++) {
			if (xr_opinfo[op].flags & XR_OPF_VALID)
				continue;
			f[p->bth_off] = (uint8_t)op;
			expect_parse(g, f, gd->len, XR_PARSE_BAD_OPCODE, "opcode 0x%02x", op);
		}

		memcpy(f, gd->data, gd->len);
		wr16be(f + p->udp_off + 4, (uint16_t)(gd->len - p->udp_off + 4));
		expect_parse(g, f, gd->len, XR_PARSE_BAD_LENGTH, "UDP length 4 beyond the frame");
		wr16be(f + p->udp_off + 4, 0xffff);
		expect_parse(g, f, gd->len, XR_PARSE_BAD_LENGTH, "UDP length 0xffff");
		wr16be(f + p->udp_off + 4, XR_UDP_HLEN - 1);
		expect_parse(g, f, gd->len, XR_PARSE_BAD_LENGTH, "UDP length 7");

		memcpy(f, gd->data, gd->len);
		wr16be(f + p->l3_off + 2, (uint16_t)(gd->len - p->l3_off + 1));
		expect_parse(g, f, gd->len, XR_PARSE_TRUNCATED,
			     "IP total length 1 beyond the frame");

		/* PadCnt that does not fit: only payload-less opcodes are sure to overflow. */
		if (!(p->opflags & XR_OPF_PAYLOAD)) {
			memcpy(f, gd->data, gd->len);
			f[p->bth_off + 1] |= 3 << XR_BTH_PAD_SHIFT;
			expect_parse(g, f, gd->len, XR_PARSE_BAD_LENGTH,
				     "opcode 0x%02x with PadCnt 3 and no payload", p->opcode);

			memcpy(f, gd->data, gd->len);
			memset(f + gd->len, 0, 4);
			set_lengths(f, p, gd->len + 4);
			expect_parse(g, f, gd->len + 4, XR_PARSE_BAD_LENGTH,
				     "opcode 0x%02x carrying 4 payload bytes", p->opcode);
		}
	}
}

/* Frames that are valid but laid out differently: Ethernet padding, a VLAN tag. */
static void check_layout_variants(struct group *g)
{
	for (size_t i = 0; i < NUM_GOLDENS; i++) {
		const struct golden *gd = &goldens[i];
		const struct xr_pkt *p = &gd->pkt;
		uint8_t f[MAX_FRAME_LEN + 32];
		struct xr_pkt q;
		enum xr_parse_result r;

		if (!gd->len)
			continue;
		memcpy(f, gd->data, gd->len);
		memset(f + gd->len, 0, 16);
		r = xr_pkt_parse(f, gd->len + 16, &q);
		check(g,
		      r == XR_PARSE_OK && q.payload_len == p->payload_len &&
			  q.icrc - f == p->icrc - gd->data && xr_pkt_icrc_ok(&q),
		      "%s frame %u + 16 bytes of Ethernet padding: %s", gd->file, gd->number,
		      xr_parse_result_str(r));

		/* One tag, 802.1Q or 802.1ad (S-tag): as the XDP program takes them. */
		for (int tpid = 0; tpid < 2; tpid++) {
			memcpy(f, gd->data, 12);
			f[12] = tpid ? 0x88 : 0x81, f[13] = tpid ? 0xa8 : 0x00;
			f[14] = 0x00, f[15] = 0x05; /* VLAN 5 */
			memcpy(f + 16, gd->data + 12, gd->len - 12);
			r = xr_pkt_parse(f, gd->len + 4, &q);
			check(g,
			      r == XR_PARSE_OK && q.l3_off == p->l3_off + 4 &&
				  q.opcode == p->opcode && q.psn == p->psn && q.dqpn == p->dqpn &&
				  q.payload_len == p->payload_len && xr_pkt_icrc_ok(&q),
			      "%s frame %u with an %s tag: %s", gd->file, gd->number,
			      tpid ? "802.1ad" : "802.1Q", xr_parse_result_str(r));
		}
	}
}

/* IPv6 has no golden capture: check the build and parse agree with each other. */
static void check_ipv6_round_trip(struct group *g)
{
	const struct golden *gd = golden_with(XR_OP_RC_SEND_ONLY_IMM);
	struct xr_path path;
	struct xr_bth_fields bth;
	struct xr_pkt_out out;
	struct xr_pkt q;
	uint8_t buf[MAX_FRAME_LEN];
	enum xr_parse_result r;
	uint32_t l3;

	check(g, gd != NULL, "no SEND ONLY IMM golden frame");
	if (!gd)
		return;
	path_of(&gd->pkt, &path);
	bth_of(&gd->pkt, &bth);
	inet_pton(AF_INET6, "fd00:77::1", path.sgid.raw);
	inet_pton(AF_INET6, "fd00:77::2", path.dgid.raw);
	path.traffic_class = 0x28;
	path.flow_label = 0x12345;
	check(g, xr_pkt_build(buf, sizeof(buf), &path, &bth, 37, 0, &out) == 0 && out.ipv6,
	      "IPv6 build failed");
	memset(out.payload, 0x77, 37);
	xr_pkt_seal(&out);
	check(g, out.frame_len == xr_pkt_frame_size(bth.opcode, true, 37),
	      "IPv6 frame %u bytes, xr_pkt_frame_size %u", out.frame_len,
	      xr_pkt_frame_size(bth.opcode, true, 37));
	r = xr_pkt_parse(buf, out.frame_len, &q);
	check(g,
	      r == XR_PARSE_OK && q.ipv6 && memcmp(&q.sgid, &path.sgid, 16) == 0 &&
		  memcmp(&q.dgid, &path.dgid, 16) == 0 && q.payload_len == 37 && q.padcnt == 3 &&
		  q.psn == bth.psn && xr_pkt_icrc_ok(&q),
	      "IPv6 re-parse: %s", xr_parse_result_str(r));
	/* Traffic class, flow label and hop limit are masked out of the ICRC. */
	l3 = out.l3_off;
	for (uint32_t pos = l3; pos < l3 + 4; pos++) {
		buf[pos] ^= pos == l3 ? 0x0f : 0xff;
		check(g, xr_pkt_parse(buf, out.frame_len, &q) == XR_PARSE_OK && xr_pkt_icrc_ok(&q),
		      "IPv6 byte %u (class/flow label) changed: ICRC bad", pos - l3);
		buf[pos] ^= pos == l3 ? 0x0f : 0xff;
	}
	buf[l3 + 7] ^= 0xff;
	check(g, xr_pkt_parse(buf, out.frame_len, &q) == XR_PARSE_OK && xr_pkt_icrc_ok(&q),
	      "IPv6 hop limit changed: ICRC bad");
	buf[l3 + 7] ^= 0xff;
	buf[l3 + 8] ^= 0x01;
	check(g, xr_pkt_parse(buf, out.frame_len, &q) == XR_PARSE_OK && !xr_pkt_icrc_ok(&q),
	      "IPv6 source address changed: ICRC still ok");
}

int main(void)
{
	struct group load = {.name = "golden frames load and parse"},
		     rebuild = {.name = "rebuild == captured, byte for byte"},
		     ip_id = {.name = "another IP ID: only ID, checksum, ICRC"},
		     padding = {.name = "padding (PadCnt, zero pad)"},
		     capacity = {.name = "capacity (-ENOSPC) and opcodes (-EINVAL)"},
		     reject = {.name = "parse rejects malformed frames"},
		     layout = {.name = "Ethernet padding and VLAN tag"},
		     ipv6 = {.name = "IPv6 build/parse round trip"};

	load_goldens(&load);
	finish_group(&load, NULL);
	check_rebuild_identical(&rebuild);
	finish_group(&rebuild, NULL);
	check_other_ip_id(&ip_id);
	finish_group(&ip_id, NULL);
	check_padding(&padding);
	finish_group(&padding, NULL);
	check_capacity(&capacity);
	finish_group(&capacity, NULL);
	check_rejections(&reject);
	finish_group(&reject, NULL);
	check_layout_variants(&layout);
	finish_group(&layout, NULL);
	check_ipv6_round_trip(&ipv6);
	finish_group(&ipv6, NULL);

	return groups_summary("test_packet_build");
}
