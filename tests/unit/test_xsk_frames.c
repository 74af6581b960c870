/* SPDX-License-Identifier: MIT */
/*
 * Multi-descriptor AF_XDP frames (xsk_frames.h) on rings built here, laid
 * out as the kernel lays out a multi-buffer socket's: a received frame
 * starts 256 bytes into its 4 KiB chunk, so one of path MTU 4096 (4,170
 * bytes) arrives as 3,840 + 330 bytes in two descriptors, the first flagged
 * XDP_PKT_CONTD. A chain is measured only once its last descriptor is in;
 * joined, every byte of the frame is where it should be, in order, whether
 * its two chunks are adjacent (joined in place, nothing else in either
 * chunk or its neighbours touched) or not (copied into scratch); on
 * transmit a frame longer than a chunk is cut at the chunk boundary and a
 * queue is never published in the middle of a chain.
 */
#include <string.h>

#include "check_group.h"
#include "xsk_frames.h"

#define CHUNK 4096u
#define HEADROOM 256u
#define CHUNKS 16u
#define RING_SIZE 8u
#define FRAME_4096 4170u /* Ethernet, IPv4, UDP, BTH, RETH, 4096 bytes, ICRC */

static uint8_t umem[CHUNKS * CHUNK];
static uint8_t expected[CHUNKS * CHUNK];
static struct xdp_desc descs[RING_SIZE];
static struct xsk_ring_cons rx = {.mask = RING_SIZE - 1, .size = RING_SIZE, .ring = descs};

static uint8_t frame_byte(uint32_t frame, uint32_t i)
{
	return (uint8_t)(frame * 131 + i * 7 + (i >> 8));
}

/*
 * Lays frame's len bytes into the given chunks, each segment HEADROOM into
 * its chunk and at most CHUNK - HEADROOM long, as descriptors from ring index
 * idx; the rest of the UMEM is a pattern remembered in expected[].
 */
static uint32_t receive(uint32_t frame, uint32_t len, const uint32_t *chunks, uint32_t idx)
{
	uint32_t at = 0, n = 0;

	while (at < len) {
		uint32_t part = len - at < CHUNK - HEADROOM ? len - at : CHUNK - HEADROOM;
		uint64_t addr = (uint64_t)chunks[n] * CHUNK + HEADROOM;

		for (uint32_t i = 0; i < part; i++)
			umem[addr + i] = frame_byte(frame, at + i);
		descs[(idx + n) & (RING_SIZE - 1)] = (struct xdp_desc){
		    .addr = addr, .len = part, .options = at + part < len ? XDP_PKT_CONTD : 0};
		at += part;
		n++;
	}
	return n;
}

static void reset_umem(void)
{
	for (uint32_t i = 0; i < sizeof(umem); i++)
		umem[i] = (uint8_t)(i * 2654435761u >> 24);
	memset(descs, 0, sizeof(descs));
}

static bool frame_intact(const uint8_t *data, uint32_t frame, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (data[i] != frame_byte(frame, i))
			return false;
	return true;
}

static void check_chains(struct group *g)
{
	static const uint32_t chunks_a[] = {1}, chunks_b[] = {3, 4}, chunks_c[] = {6, 9};
	struct xr_xsk_chain c;
	uint32_t idx = 6; /* the ring wraps inside the second frame */

	reset_umem();
	idx += receive(1, 100, chunks_a, idx);
	idx += receive(2, FRAME_4096, chunks_b, idx);
	receive(3, FRAME_4096, chunks_c, idx);

	c = xr_xsk_rx_chain(&rx, 6, 5);
	check(g, c.descs == 1 && c.len == 100, "one-descriptor frame: %u descs, %u bytes", c.descs,
	      c.len);
	c = xr_xsk_rx_chain(&rx, 7, 4);
	check(g, c.descs == 2 && c.len == FRAME_4096,
	      "path MTU 4096 frame across the ring's wrap: %u descs, %u bytes", c.descs, c.len);
	c = xr_xsk_rx_chain(&rx, 7, 1);
	check(g, c.descs == 0, "a chain whose last descriptor is not peeked yet: %u descs",
	      c.descs);
	c = xr_xsk_rx_chain(&rx, 9, 1);
	check(g, c.descs == 0, "the same, second frame: %u descs", c.descs);
	c = xr_xsk_rx_chain(&rx, 9, 2);
	check(g, c.descs == 2 && c.len == FRAME_4096, "second frame whole: %u descs", c.descs);

	/* A chain longer than the kernel builds stops at XR_XSK_MAX_CHAIN. */
	{
		struct xdp_desc long_chain[32];
		struct xsk_ring_cons long_rx = {.mask = 31, .size = 32, .ring = long_chain};

		for (uint32_t i = 0; i < 32; i++)
			long_chain[i] = (struct xdp_desc){
			    .addr = i * CHUNK + HEADROOM, .len = 10, .options = XDP_PKT_CONTD};
		c = xr_xsk_rx_chain(&long_rx, 0, 32);
		check(g, c.descs == XR_XSK_MAX_CHAIN && c.len == 10 * XR_XSK_MAX_CHAIN,
		      "an endless chain ends after %u descriptors: %u", XR_XSK_MAX_CHAIN, c.descs);
	}
}

static void check_join(struct group *g)
{
	static const uint32_t adjacent[] = {3, 4}, apart[] = {9, 5}, short_first[] = {10, 11};
	static uint8_t scratch[2 * CHUNK + 64];
	struct xr_xsk_chain c = {.descs = 2, .len = FRAME_4096};
	uint8_t *data;

	/* Adjacent chunks, the first filled to its end: joined where it lies. */
	reset_umem();
	receive(5, FRAME_4096, adjacent, 0);
	memcpy(expected, umem, sizeof(umem));
	check(g, xr_xsk_rx_joinable_in_place(&rx, 0, c, CHUNK), "adjacent chunks join in place");
	data = xr_xsk_rx_join(&rx, 0, c, umem, CHUNK, NULL);
	check(g, data == umem + 3 * CHUNK + HEADROOM, "joined in place at the first's data");
	check(g, data && frame_intact(data, 5, FRAME_4096), "in place: every byte in order");
	check(g,
	      memcmp(umem, expected, 4 * CHUNK) == 0 &&
		  memcmp(umem + 5 * CHUNK, expected + 5 * CHUNK, sizeof(umem) - 5 * CHUNK) == 0,
	      "in place: nothing outside the two chunks touched");
	check(g,
	      memcmp(umem + 4 * CHUNK + (FRAME_4096 - (CHUNK - HEADROOM)),
		     expected + 4 * CHUNK + (FRAME_4096 - (CHUNK - HEADROOM)),
		     CHUNK - (FRAME_4096 - (CHUNK - HEADROOM))) == 0,
	      "in place: the second chunk past the moved bytes untouched");

	/* Chunks apart (and out of order): copied into scratch, the UMEM left alone. */
	reset_umem();
	receive(6, FRAME_4096, apart, 2);
	memcpy(expected, umem, sizeof(umem));
	memset(scratch, 0xa5, sizeof(scratch));
	check(g, !xr_xsk_rx_joinable_in_place(&rx, 2, c, CHUNK), "chunks apart: not in place");
	check(g, xr_xsk_rx_join(&rx, 2, c, umem, CHUNK, NULL) == NULL,
	      "chunks apart, no scratch: nothing joined");
	data = xr_xsk_rx_join(&rx, 2, c, umem, CHUNK, scratch);
	check(g, data == scratch && frame_intact(scratch, 6, FRAME_4096),
	      "chunks apart: copied whole into scratch");
	check(g, scratch[FRAME_4096] == 0xa5, "scratch: not a byte past the frame");
	check(g, memcmp(umem, expected, sizeof(umem)) == 0, "chunks apart: UMEM unchanged");

	/* Adjacent chunks but a first segment short of its chunk's end: copied. */
	reset_umem();
	receive(7, FRAME_4096, short_first, 4);
	descs[4].len -= 100;
	descs[5].addr -= 100; /* keep the frame's length: the second starts earlier */
	descs[5].len += 100;
	for (uint32_t i = 0; i < descs[5].len; i++)
		umem[descs[5].addr + i] = frame_byte(7, descs[4].len + i);
	check(g, !xr_xsk_rx_joinable_in_place(&rx, 4, c, CHUNK),
	      "first short of its chunk's end: not in place");
	data = xr_xsk_rx_join(&rx, 4, c, umem, CHUNK, scratch);
	check(g, data == scratch && frame_intact(scratch, 7, FRAME_4096),
	      "first short of its chunk's end: copied whole");

	/* A one-descriptor frame is never moved. */
	reset_umem();
	receive(8, 1500, (const uint32_t[]){2}, 0);
	c = (struct xr_xsk_chain){.descs = 1, .len = 1500};
	data = xr_xsk_rx_join(&rx, 0, c, umem, CHUNK, scratch);
	check(g, data == umem + 2 * CHUNK + HEADROOM && frame_intact(data, 8, 1500),
	      "one descriptor: handed over where it lies");
}

static void check_tx(struct group *g)
{
	struct xdp_desc out[3], queue[8];
	uint32_t n;

	n = xr_xsk_tx_chain(8 * CHUNK, 100, CHUNK, out);
	check(g, n == 1 && out[0].addr == 8 * CHUNK && out[0].len == 100 && out[0].options == 0,
	      "100 bytes: one descriptor, unflagged");
	n = xr_xsk_tx_chain(8 * CHUNK, CHUNK, CHUNK, out);
	check(g, n == 1 && out[0].len == CHUNK && out[0].options == 0,
	      "a chunk exactly: one descriptor");
	n = xr_xsk_tx_chain(8 * CHUNK, CHUNK + 1, CHUNK, out);
	check(g,
	      n == 2 && out[0].len == CHUNK && out[0].options == XDP_PKT_CONTD &&
		  out[1].addr == 9 * CHUNK && out[1].len == 1 && out[1].options == 0,
	      "a chunk and a byte: two descriptors, the first flagged");
	n = xr_xsk_tx_chain(8 * CHUNK, FRAME_4096, CHUNK, out);
	check(g,
	      n == 2 && out[0].len + out[1].len == FRAME_4096 && out[1].addr == 9 * CHUNK &&
		  out[1].options == 0,
	      "a path MTU 4096 frame: cut at the chunk boundary");

	n = xr_xsk_tx_chain(0, 60, CHUNK, queue);
	n += xr_xsk_tx_chain(2 * CHUNK, FRAME_4096, CHUNK, queue + n);
	n += xr_xsk_tx_chain(4 * CHUNK, 60, CHUNK, queue + n);
	check(g, n == 4, "queue of three frames: %u descriptors", n);
	check(g, xr_xsk_whole_frames(queue, 4) == 4, "all of them fit: all go");
	check(g, xr_xsk_whole_frames(queue, 3) == 3, "room for three: the chain is whole");
	check(g, xr_xsk_whole_frames(queue, 2) == 1,
	      "room for two: the chain waits, the frame before it goes");
	check(g, xr_xsk_whole_frames(queue, 0) == 0, "no room: nothing");
}

int main(void)
{
	struct group chains = {.name = "rx chains measured once whole"},
		     join = {.name = "rx chains joined in place or copied"},
		     tx = {.name = "tx chains cut and published whole"};

	check_chains(&chains);
	finish_group(&chains, NULL);
	check_join(&join);
	finish_group(&join, NULL);
	check_tx(&tx);
	finish_group(&tx, NULL);
	return groups_summary("test_xsk_frames");
}
