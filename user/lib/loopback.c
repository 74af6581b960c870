// SPDX-License-Identifier: MIT
/* Frames a device sends to itself, delivered inside the engine (loopback.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "loopback.h"

int xr_loopback_init(struct xr_loopback *lb, uint32_t cap)
{
	memset(lb, 0, sizeof(*lb));
	lb->cap = xr_pow2_at_least(cap ? cap : 1);
	lb->ring = calloc(lb->cap, sizeof(*lb->ring));
	return lb->ring ? 0 : -ENOMEM;
}

void xr_loopback_destroy(struct xr_loopback *lb)
{
	free(lb->ring);
	memset(lb, 0, sizeof(*lb));
}

bool xr_loopback_is_own(const struct xr_device *dev, const uint8_t *frame, uint32_t len)
{
	/* The destination MAC opens the frame. */
	return len >= sizeof(dev->core.mac) && !memcmp(frame, dev->core.mac, sizeof(dev->core.mac));
}

bool xr_loopback_push(struct xr_loopback *lb, uint8_t *buf, uint32_t len)
{
	if (lb->count == lb->cap)
		return false;
	lb->ring[(lb->head + lb->count++) & (lb->cap - 1)] = (struct xr_loopback_frame){buf, len};
	return true;
}

uint32_t xr_loopback_deliver(struct xr_device *dev, uint64_t now)
{
	struct xr_loopback *lb = &dev->loopback;
	uint32_t n = lb->count;

	for (uint32_t i = 0; i < n; i++) {
		struct xr_loopback_frame f = lb->ring[lb->head];

		/* Taken off first: what the core sends in reply may be queued behind. */
		lb->head = (lb->head + 1) & (lb->cap - 1);
		lb->count--;
		xr_core_rx(&dev->core, f.buf, f.len, XR_RX_NO_QUEUE, now);
		dev->core.stats.loopback_frames++;
		xr_xsk_port_tx_abort(dev->port, f.buf);
	}
	return n;
}
