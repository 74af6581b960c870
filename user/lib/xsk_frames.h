/* SPDX-License-Identifier: MIT */
/*
 * Frames that take more than one AF_XDP descriptor (multi-buffer sockets,
 * XDP_USE_SG since Linux 6.6). A UMEM chunk is at most a page, and the
 * kernel writes a received frame behind XDP_PACKET_HEADROOM, so a frame
 * longer than a chunk minus that headroom arrives as a chain of descriptors,
 * every one but the last flagged XDP_PKT_CONTD; a frame is sent the same way.
 * The kernel publishes a received chain whole. These helpers only read
 * rings and move bytes: the port (xsk_port.c) owns the rings.
 */
#ifndef XROCE_XSK_FRAMES_H
#define XROCE_XSK_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

/* Debian 12's kernel headers predate multi-buffer AF_XDP. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

/* The longest chain the kernel builds: an skb's fragments and its head (MAX_SKB_FRAGS + 1). */
#define XR_XSK_MAX_CHAIN 18u

/* The frame whose first descriptor is at idx of an rx ring. */
struct xr_xsk_chain {
	uint32_t descs; /* descriptors it takes; 0: its last is not among those peeked */
	uint32_t len;	/* bytes, all descriptors together */
};

/* Measures the frame starting at idx, looking at no more than avail descriptors. */
struct xr_xsk_chain xr_xsk_rx_chain(const struct xsk_ring_cons *rx, uint32_t idx, uint32_t avail);

/*
 * Whether a two-descriptor frame can be joined where it lies: the first
 * fills its chunk to the end and the second sits in the chunk right after,
 * so moving the second's bytes down over its own headroom makes one run.
 */
bool xr_xsk_rx_joinable_in_place(const struct xsk_ring_cons *rx, uint32_t idx,
				 struct xr_xsk_chain chain, uint32_t chunk_size);

/*
 * Lays out the frame of chain (from idx) as one run of bytes and returns its
 * start: in place when xr_xsk_rx_joinable_in_place, else copied into
 * scratch, which must hold chain.len bytes (scratch NULL: in place only).
 */
uint8_t *xr_xsk_rx_join(const struct xsk_ring_cons *rx, uint32_t idx, struct xr_xsk_chain chain,
			uint8_t *umem, uint32_t chunk_size, uint8_t *scratch);

/*
 * The descriptors that send len bytes at UMEM address addr (a chunk's start
 * when len exceeds chunk_size): one per chunk, all but the last flagged
 * XDP_PKT_CONTD. Writes them to out (room for len / chunk_size + 1) and
 * returns how many.
 */
uint32_t xr_xsk_tx_chain(uint64_t addr, uint32_t len, uint32_t chunk_size, struct xdp_desc *out);

/* How many of the first n descriptors of a tx queue form whole frames (a chain is never split). */
uint32_t xr_xsk_whole_frames(const struct xdp_desc *descs, uint32_t n);

#endif /* XROCE_XSK_FRAMES_H */
