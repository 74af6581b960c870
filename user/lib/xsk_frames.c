// SPDX-License-Identifier: MIT
/* Frames that take more than one AF_XDP descriptor: see xsk_frames.h. */
#include <string.h>

#include "xsk_frames.h"

struct xr_xsk_chain xr_xsk_rx_chain(const struct xsk_ring_cons *rx, uint32_t idx, uint32_t avail)
{
	struct xr_xsk_chain chain = {0};

	for (uint32_t i = 0; i < avail; i++) {
		const struct xdp_desc *desc = xsk_ring_cons__rx_desc(rx, idx + i);

		chain.len += desc->len;
		/* A chain longer than the kernel builds ends here all the same: its
		 * remains look like frames of their own and fail as such. */
		if (!(desc->options & XDP_PKT_CONTD) || i + 1 == XR_XSK_MAX_CHAIN) {
			chain.descs = i + 1;
			return chain;
		}
	}
	return (struct xr_xsk_chain){0};
}

static uint64_t chunk_of(uint64_t addr, uint32_t chunk_size)
{
	return addr & ~(uint64_t)(chunk_size - 1);
}

bool xr_xsk_rx_joinable_in_place(const struct xsk_ring_cons *rx, uint32_t idx,
				 struct xr_xsk_chain chain, uint32_t chunk_size)
{
	const struct xdp_desc *first = xsk_ring_cons__rx_desc(rx, idx), *second;
	uint64_t next_chunk = chunk_of(first->addr, chunk_size) + chunk_size;

	if (chain.descs != 2 || first->addr + first->len != next_chunk)
		return false;
	second = xsk_ring_cons__rx_desc(rx, idx + 1);
	return chunk_of(second->addr, chunk_size) == next_chunk;
}

uint8_t *xr_xsk_rx_join(const struct xsk_ring_cons *rx, uint32_t idx, struct xr_xsk_chain chain,
			uint8_t *umem, uint32_t chunk_size, uint8_t *scratch)
{
	const struct xdp_desc *desc = xsk_ring_cons__rx_desc(rx, idx);
	uint32_t at = 0;

	if (chain.descs == 1)
		return umem + desc->addr;
	if (xr_xsk_rx_joinable_in_place(rx, idx, chain, chunk_size)) {
		const struct xdp_desc *second = xsk_ring_cons__rx_desc(rx, idx + 1);

		memmove(umem + chunk_of(second->addr, chunk_size), umem + second->addr,
			second->len);
		return umem + desc->addr;
	}
	if (!scratch)
		return NULL;
	for (uint32_t i = 0; i < chain.descs; i++) {
		desc = xsk_ring_cons__rx_desc(rx, idx + i);
		memcpy(scratch + at, umem + desc->addr, desc->len);
		at += desc->len;
	}
	return scratch;
}

uint32_t xr_xsk_tx_chain(uint64_t addr, uint32_t len, uint32_t chunk_size, struct xdp_desc *out)
{
	uint32_t n = 0;

	do {
		uint32_t part = len < chunk_size ? len : chunk_size;

		out[n++] = (struct xdp_desc){.addr = addr, .len = part};
		addr += part;
		len -= part;
		if (len)
			out[n - 1].options = XDP_PKT_CONTD;
	} while (len);
	return n;
}

uint32_t xr_xsk_whole_frames(const struct xdp_desc *descs, uint32_t n)
{
	while (n && (descs[n - 1].options & XDP_PKT_CONTD))
		n--;
	return n;
}
