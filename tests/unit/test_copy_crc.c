/* SPDX-License-Identifier: MIT */
/*
 * The payload copy that carries the ICRC (xr_copy_crc32, xr_pkt_put_payload):
 * for every length from 0 to 4,096 bytes and every source alignment within
 * a cache line, the bytes land exactly where they should and nowhere else,
 * the CRC equals libdeflate's over the same bytes, and a frame built with it
 * carries the ICRC that libdeflate gives over the whole frame, masked here
 * independently of the library. test_packet_build rebuilds frames Soft-RoCE
 * sent through the same path and compares their ICRCs with the captured ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "check_group.h"
#include "core/copy_crc.h"
#include "core/packet.h"

#define MAX_LEN 4096
#define ALIGNMENTS 64
#define GUARD 64
#define GUARD_BYTE 0x5c
#define FRAME_CAP (MAX_LEN + 128)

static uint8_t source[MAX_LEN + ALIGNMENTS];
static uint8_t dest[GUARD + ALIGNMENTS + MAX_LEN + GUARD];

static void fill_source(void)
{
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < sizeof(source); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		source[i] = (uint8_t)x;
	}
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void check_copy(struct group *g)
{
	for (uint32_t len = 0; len <= MAX_LEN; len++) {
		for (uint32_t a = 0; a < ALIGNMENTS; a++) {
			/* The destination's alignment moves too, so that pairs differ. */
			uint32_t da = (a * 7 + len) % ALIGNMENTS;
			const uint8_t *src = source + a;
			uint8_t *dst = dest + GUARD + da;
			uint32_t seed = len & 1 ? 0 : 0x9e3779b9u ^ len;
			uint32_t got, want;

			memset(dest, GUARD_BYTE, sizeof(dest));
			got = xr_copy_crc32(dst, src, len, seed);
			want = (uint32_t)libdeflate_crc32(seed, src, len);
			check(g, got == want, "len %u, alignment %u/%u: CRC %08x, libdeflate %08x",
			      len, a, da, got, want);
			check(g, memcmp(dst, src, len) == 0,
			      "len %u, alignment %u/%u: bytes differ", len, a, da);
			check(
			    g,
			    all_bytes(dest, GUARD + da, GUARD_BYTE) &&
				all_bytes(dst + len, sizeof(dest) - (GUARD + da + len), GUARD_BYTE),
			    "len %u, alignment %u/%u: wrote outside the destination", len, a, da);
		}
	}
}

/* The ICRC as the spec defines it, from the bytes alone: IPv4 or IPv6, then UDP, BTH. */
static uint32_t reference_icrc(const uint8_t *frame, uint32_t frame_len, bool ipv6)
{
	static uint8_t masked[8 + FRAME_CAP];
	uint32_t l3_len = ipv6 ? XR_IPV6_HLEN : XR_IPV4_HLEN;
	uint32_t covered = frame_len - XR_ETH_HLEN - XR_ICRC_SIZE;
	uint8_t *ip = masked + 8, *udp = ip + l3_len, *bth = udp + XR_UDP_HLEN;

	memset(masked, 0xff, 8);
	memcpy(ip, frame + XR_ETH_HLEN, covered);
	if (ipv6) {
		ip[0] |= 0x0f;
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff;
	} else {
		ip[1] = 0xff;
		ip[8] = 0xff;
		ip[10] = ip[11] = 0xff;
	}
	udp[6] = udp[7] = 0xff;
	bth[4] = 0xff;
	return (uint32_t)libdeflate_crc32(0, masked, 8 + covered);
}

static void path_for(bool ipv6, struct xr_path *path)
{
	memset(path, 0, sizeof(*path));
	memcpy(path->smac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(path->dmac, "\x02\x00\x00\x00\x00\x02", 6);
	if (ipv6) {
		path->sgid.raw[0] = path->dgid.raw[0] = 0xfd;
		path->sgid.raw[15] = 1;
		path->dgid.raw[15] = 2;
		path->flow_label = 0x12345;
		path->traffic_class = 0x28;
	} else {
		path->sgid.raw[10] = path->sgid.raw[11] = 0xff;
		path->dgid.raw[10] = path->dgid.raw[11] = 0xff;
		memcpy(path->sgid.raw + 12, "\x0a\x00\x00\x01", 4);
		memcpy(path->dgid.raw + 12, "\x0a\x00\x00\x02", 4);
	}
	path->udp_sport = 0xc123;
}

/* A WRITE_ONLY of len bytes from src, its payload put in `pieces` pieces. */
static bool build_write(uint8_t *frame, bool ipv6, const uint8_t *src, uint32_t len, int pieces,
			struct xr_pkt_out *out)
{
	struct xr_bth_fields bth = {.opcode = XR_OP_RC_WRITE_ONLY, .dqpn = 0x11, .psn = len};
	struct xr_path path;
	uint32_t piece = len / (uint32_t)pieces + 1;

	path_for(ipv6, &path);
	if (xr_pkt_build(frame, FRAME_CAP, &path, &bth, len, (uint16_t)len, out))
		return false;
	for (int i = 0; i < XR_RETH_SIZE; i++)
		out->ext[i] = (uint8_t)(0x40 + i);
	for (uint32_t off = 0; off < len; off += piece)
		xr_pkt_put_payload(out, off, src + off, len - off < piece ? len - off : piece);
	xr_pkt_seal(out);
	return true;
}

static uint32_t icrc_in(const struct xr_pkt_out *out)
{
	const uint8_t *c = out->frame + out->icrc_off;

	return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

static void check_frames(struct group *g)
{
	static uint8_t frame[FRAME_CAP];

	for (uint32_t len = 0; len <= MAX_LEN; len++) {
		for (uint32_t a = 0; a < ALIGNMENTS; a++) {
			bool ipv6 = (len + a) % 5 == 0;
			int pieces = 1 + (int)(a % 3);
			struct xr_pkt_out out;
			struct xr_pkt pkt;
			uint32_t want;

			if (!build_write(frame, ipv6, source + a, len, pieces, &out)) {
				check(g, false, "len %u: xr_pkt_build failed", len);
				continue;
			}
			want = reference_icrc(frame, out.frame_len, ipv6);
			check(g, icrc_in(&out) == want,
			      "len %u, alignment %u, %d pieces, %s: ICRC %08x, libdeflate over "
			      "the frame %08x",
			      len, a, pieces, ipv6 ? "IPv6" : "IPv4", icrc_in(&out), want);
			check(g, memcmp(out.payload, source + a, len) == 0,
			      "len %u, alignment %u: payload differs", len, a);
			check(g,
			      xr_pkt_parse(frame, out.frame_len, &pkt) == XR_PARSE_OK &&
				  xr_pkt_icrc_ok(&pkt) && pkt.payload_len == len,
			      "len %u, alignment %u: the parser refuses the frame", len, a);
		}
	}
}

/* Pieces out of order still make a right frame: xr_pkt_seal then covers it all. */
static void check_out_of_order(struct group *g)
{
	static uint8_t frame[FRAME_CAP];
	uint32_t lens[] = {3, 100, 1024, 4096};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i], half = len / 2;
		struct xr_bth_fields bth = {.opcode = XR_OP_RC_SEND_ONLY, .dqpn = 0x11};
		struct xr_path path;
		struct xr_pkt_out out;

		path_for(false, &path);
		if (xr_pkt_build(frame, FRAME_CAP, &path, &bth, len, 7, &out)) {
			check(g, false, "len %u: xr_pkt_build failed", len);
			continue;
		}
		xr_pkt_put_payload(&out, half, source + half, len - half);
		xr_pkt_put_payload(&out, 0, source, half);
		xr_pkt_seal(&out);
		check(g, icrc_in(&out) == reference_icrc(frame, out.frame_len, false),
		      "len %u, second half first: ICRC %08x, want %08x", len, icrc_in(&out),
		      reference_icrc(frame, out.frame_len, false));
		check(g, memcmp(out.payload, source, len) == 0, "len %u: payload differs", len);
	}
}

int main(void)
{
	struct group copy = {.name = "xr_copy_crc32 == memcpy + libdeflate, 0..4096 B, alignments"},
		     frames = {.name = "fused frame ICRC == libdeflate over the whole frame"},
		     order = {.name = "payload put out of order"};

	fill_source();
	check_copy(&copy);
	finish_group(&copy, NULL);
	check_frames(&frames);
	finish_group(&frames, NULL);
	check_out_of_order(&order);
	finish_group(&order, NULL);
	return groups_summary("test_copy_crc");
}
