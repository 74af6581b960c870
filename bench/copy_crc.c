/* SPDX-License-Identifier: MIT */
/*
 * What the ICRC costs beside the payload copy, per frame, on this machine:
 *   transmit: the payload copied into the frame then a second pass for the
 *             ICRC (how frames were sealed before), against the copy that
 *             carries the ICRC (xr_pkt_put_payload);
 *   receive:  the ICRC checked over the frame and then the payload copied
 *             into the memory region (what the engine does: a corrupted
 *             frame must not write), against the copy alone, which is what
 *             a check fused into the copy could at best cost.
 * The source is either one 64 KiB buffer used over and over (a benchmark's
 * message, in cache) or a walk through 256 MiB (memory nothing has touched
 * lately); frames rotate through 8 MiB, as a UMEM's do.
 * Prints one line per case: nanoseconds per frame, the median of 15 runs
 * taken in turns with the other variants.
 * Usage: copy_crc [PAYLOAD_BYTES...] (default 1024 4096)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/packet.h"

#define FRAME_SLOT 8192u
#define FRAME_SLOTS 1024u /* 8 MiB */
#define HOT_BYTES (64u << 10)
#define COLD_BYTES (256u << 20)
#define RUNS 15
#define FRAMES_PER_RUN 20000u

static uint8_t *frames, *source, *region;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum variant { TX_COPY_THEN_CRC, TX_FUSED, RX_CHECK_THEN_COPY, RX_COPY_ONLY };

static const char *const variant_names[] = {
    [TX_COPY_THEN_CRC] = "tx copy, then ICRC pass",
    [TX_FUSED] = "tx copy carrying ICRC",
    [RX_CHECK_THEN_COPY] = "rx ICRC check, then copy",
    [RX_COPY_ONLY] = "rx copy alone (floor)",
};

static struct xr_path path;
static volatile uint32_t sink;

static void build(uint8_t *frame, uint32_t len, struct xr_pkt_out *out)
{
	struct xr_bth_fields bth = {.opcode = XR_OP_RC_WRITE_ONLY, .dqpn = 0x11};

	if (xr_pkt_build(frame, FRAME_SLOT, &path, &bth, len, 1, out)) {
		fprintf(stderr, "copy_crc: xr_pkt_build failed\n");
		exit(1);
	}
}

/* Nanoseconds per frame of one run. */
static double run_once(enum variant v, uint32_t len, bool cold, uint64_t *src_pos)
{
	uint64_t src_span = cold ? COLD_BYTES : HOT_BYTES;
	uint64_t t0 = now_ns();

	for (uint32_t i = 0; i < FRAMES_PER_RUN; i++) {
		uint8_t *frame = frames + (size_t)(i % FRAME_SLOTS) * FRAME_SLOT;
		const uint8_t *src;
		struct xr_pkt_out out;

		if (*src_pos + len > src_span)
			*src_pos = 0;
		src = source + *src_pos;
		*src_pos += len;
		switch (v) {
		case TX_COPY_THEN_CRC:
			build(frame, len, &out);
			memcpy(out.payload, src, len);
			xr_pkt_seal(&out);
			break;
		case TX_FUSED:
			build(frame, len, &out);
			xr_pkt_put_payload(&out, 0, src, len);
			xr_pkt_seal(&out);
			break;
		case RX_CHECK_THEN_COPY:
		case RX_COPY_ONLY: {
			/* The received frame's payload stands in for the region's source. */
			uint8_t *dst = region + (src - source);
			const uint8_t *payload = frame + (XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN +
							  XR_BTH_SIZE + XR_RETH_SIZE);
			uint32_t icrc_off = (uint32_t)(payload - frame) + len;

			if (v == RX_CHECK_THEN_COPY)
				sink += xr_icrc(frame, XR_ETH_HLEN, false, icrc_off);
			memcpy(dst, payload, len);
			break;
		}
		}
	}
	return (double)(now_ns() - t0) / FRAMES_PER_RUN;
}

/*
 * Medians per variant, the variants taking turns within each round so that
 * whatever else the machine runs weighs on all of them alike.
 */
static void medians_ns(uint32_t len, bool cold, double *out)
{
	uint64_t samples[RX_COPY_ONLY + 1][RUNS], pos[RX_COPY_ONLY + 1] = {0};

	for (enum variant v = 0; v <= RX_COPY_ONLY; v++)
		run_once(v, len, cold, &pos[v]); /* warm the frames and the code */
	for (int r = 0; r < RUNS; r++)
		for (enum variant v = 0; v <= RX_COPY_ONLY; v++)
			samples[v][r] = (uint64_t)(run_once(v, len, cold, &pos[v]) * 1000.0);
	for (enum variant v = 0; v <= RX_COPY_ONLY; v++) {
		qsort(samples[v], RUNS, sizeof(samples[v][0]), cmp_u64);
		out[v] = samples[v][RUNS / 2] / 1000.0;
	}
}

int main(int argc, char **argv)
{
	uint32_t lens[8] = {1024, 4096};
	int nlens = 2;

	if (argc > 1) {
		nlens = 0;
		for (int i = 1; i < argc && nlens < 8; i++) {
			long l = strtol(argv[i], NULL, 10);

			if (l < 0 || l > 4096) {
				fprintf(stderr, "copy_crc: payload sizes are 0..4096\n");
				return 2;
			}
			lens[nlens++] = (uint32_t)l;
		}
	}
	frames = aligned_alloc(4096, (size_t)FRAME_SLOTS * FRAME_SLOT);
	source = aligned_alloc(4096, COLD_BYTES);
	region = aligned_alloc(4096, COLD_BYTES);
	if (!frames || !source || !region) {
		fprintf(stderr, "copy_crc: out of memory\n");
		return 1;
	}
	memset(frames, 0, (size_t)FRAME_SLOTS * FRAME_SLOT);
	for (size_t i = 0; i < COLD_BYTES; i++)
		source[i] = (uint8_t)(i * 131u);
	memset(region, 0, COLD_BYTES);
	path.smac[5] = 1;
	path.dmac[5] = 2;
	path.sgid.raw[10] = path.sgid.raw[11] = path.dgid.raw[10] = path.dgid.raw[11] = 0xff;
	path.sgid.raw[15] = 1;
	path.dgid.raw[15] = 2;
	path.udp_sport = 0xc000;

	for (int l = 0; l < nlens; l++) {
		for (int cold = 0; cold <= 1; cold++) {
			double ns[RX_COPY_ONLY + 1];

			medians_ns(lens[l], cold, ns);
			for (enum variant v = 0; v <= RX_COPY_ONLY; v++)
				printf("copy_crc %5u B %-4s %-26s %8.1f ns/frame\n", lens[l],
				       cold ? "cold" : "hot", variant_names[v], ns[v]);
		}
	}
	return 0;
}
