/* SPDX-License-Identifier: MIT */
/*
 * Frames a device sends to itself (two of its QPs connected to each other,
 * a UD send to its own GID): the wire would never bring them back, so they
 * stay in the transmit buffers the core built them in and the engine feeds
 * them to the core's receive path in its next round, as hardware RoCE NICs
 * and Soft-RoCE loop them back. Every buffer the ring holds is a distinct
 * transmit buffer, so a ring as large as the port's transmit pool never
 * fills: a busy loopback takes buffers from the wire and back-pressure
 * comes from tx_alloc as for any frame.
 */
#ifndef XROCE_LOOPBACK_H
#define XROCE_LOOPBACK_H

#include <stdbool.h>
#include <stdint.h>

struct xr_device;

struct xr_loopback_frame {
	uint8_t *buf;
	uint32_t len;
};

struct xr_loopback {
	struct xr_loopback_frame *ring;
	uint32_t cap; /* a power of two */
	uint32_t head, count;
};

/* Room for cap frames; 0 or -ENOMEM. */
int xr_loopback_init(struct xr_loopback *lb, uint32_t cap);
void xr_loopback_destroy(struct xr_loopback *lb);
/* Whether a frame the core built is addressed to this device's own MAC. */
bool xr_loopback_is_own(const struct xr_device *dev, const uint8_t *frame, uint32_t len);
/* Keeps buf for the next round; false (nothing kept) when the ring is full. */
bool xr_loopback_push(struct xr_loopback *lb, uint8_t *buf, uint32_t len);
/*
 * Under dev->lock: feeds the frames queued before this call to the core and
 * returns their buffers to the port; returns how many. Frames they lead to
 * wait for the next call.
 */
uint32_t xr_loopback_deliver(struct xr_device *dev, uint64_t now);

static inline bool xr_loopback_pending(const struct xr_loopback *lb)
{
	return lb->count != 0;
}

#endif /* XROCE_LOOPBACK_H */
