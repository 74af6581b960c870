/* SPDX-License-Identifier: MIT */
/* Completion queues: a ring of work completions per CQ. */
#include <errno.h>
#include <stdlib.h>

#include "core.h"

/* Slots for cqe completions: a power of two with one slot always free. */
static uint32_t ring_size_for(int cqe)
{
	return xr_pow2_at_least((uint32_t)cqe + 1);
}

struct xr_cq_impl *xr_core_create_cq(struct xr_core *core, int cqe, int *err)
{
	struct xr_cq_impl *cq;
	uint32_t size;

	*err = -EINVAL;
	if (cqe < 1 || cqe > XR_MAX_CQE)
		return NULL;
	size = ring_size_for(cqe);
	*err = -ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->ring = calloc(size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return NULL;
	}
	cq->core = core;
	cq->size = size;
	cq->pub.device = core->device;
	cq->pub.cqe = (int)size - 1;
	*err = 0;
	return cq;
}

int xr_core_resize_cq(struct xr_cq_impl *cq, int cqe)
{
	uint32_t queued = cq->head - cq->tail, size;
	struct xr_wc *ring;

	if (cqe < 1 || cqe > XR_MAX_CQE || (uint32_t)cqe < queued)
		return -EINVAL;
	size = ring_size_for(cqe);
	if (size == cq->size)
		return 0;
	ring = calloc(size, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	/* The queued completions move to the front of the new ring, in order. */
	for (uint32_t i = 0; i < queued; i++)
		ring[i] = cq->ring[(cq->tail + i) & (cq->size - 1)];
	free(cq->ring);
	cq->ring = ring;
	cq->size = size;
	cq->tail = 0;
	__atomic_store_n(&cq->head, queued, __ATOMIC_RELEASE);
	cq->pub.cqe = (int)size - 1;
	return 0;
}

int xr_core_destroy_cq(struct xr_cq_impl *cq)
{
	if (cq->refs || cq->async_unacked)
		return -EBUSY;
	xr_core_forget_events(cq->core, &cq->pub);
	free(cq->ring);
	free(cq);
	return 0;
}

bool xr_cq_full(const struct xr_cq_impl *cq)
{
	return cq->head - cq->tail >= cq->size - 1;
}

void xr_cq_push(struct xr_cq_impl *cq, const struct xr_wc *wc, bool solicited)
{
	if (cq->head - cq->tail >= cq->size - 1) {
		/*
		 * The transport holds completions back while a CQ is full (RNR,
		 * delayed retirement), so this is a completion lost: CQ_ERR, once
		 * until the consumer makes room again.
		 */
		if (!cq->overrun_reported)
			xr_core_raise_event(cq->core, XR_EVENT_CQ_ERR, &cq->pub);
		cq->overrun_reported = true;
		cq->overflows++;
		return;
	}
	cq->ring[cq->head & (cq->size - 1)] = *wc;
	/* Release: a lock-free emptiness check in xr_poll_cq sees the entry first. */
	__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELEASE);
	/* An armed CQ fires once: on any completion, or solicited and error ones. */
	if (cq->armed == XR_CQ_ARM_ALL ||
	    (cq->armed == XR_CQ_ARM_SOLICITED && (solicited || wc->status != XR_WC_SUCCESS))) {
		cq->armed = XR_CQ_ARM_NONE;
		/* Reported through the port: the I/O layer wakes the consumer. */
		if (cq->channel && cq->core->port.cq_event)
			cq->core->port.cq_event(cq->core->port.ctx, &cq->pub);
	}
}

int xr_core_poll_cq(struct xr_cq_impl *cq, int n, struct xr_wc *wc)
{
	int got = 0;

	while (got < n && cq->tail != cq->head) {
		wc[got++] = cq->ring[cq->tail & (cq->size - 1)];
		cq->tail++;
	}
	if (got)
		cq->overrun_reported = false;
	return got;
}
