/* SPDX-License-Identifier: MIT */
/*
 * An in-memory link between two transport cores: each side gets a
 * struct xr_core_port whose frames are queued toward the other side, with
 * seeded impairments (loss, duplication, reordering, single-bit corruption)
 * applied per frame and per direction. Delivery is explicit
 * (xr_mem_link_deliver), so a test decides when frames arrive and what the
 * time is: runs are deterministic for a given seed and call sequence.
 *
 * Every frame buffer is preallocated at init: a full direction makes
 * tx_alloc return NULL, which is the core's back-pressure.
 */
#ifndef XROCE_MEM_PORT_H
#define XROCE_MEM_PORT_H

#include <stdint.h>

#include "core.h"

#define XR_MEM_FRAME_SIZE 4096
/* Most queues a side transmits on; a frame arrives on the queue it was sent on, as on veth. */
#define XR_MEM_QUEUES 4

/* Impairments of one direction. Probabilities are in [0, 1]. */
struct xr_mem_impair {
	double loss;
	double duplicate; /* a second copy is queued (impaired on its own) */
	double reorder;	  /* a frame overtakes up to reorder_window queued frames */
	int reorder_window;
	double corrupt; /* one random bit of the frame is flipped */
	/*
	 * A congested switch: an ECN-capable frame that finds this many or
	 * more queued ahead of it gets CE (0: never marks)
	 */
	uint32_t ce_threshold;
};

/* What happened to the frames sent by one side. */
struct xr_mem_counters {
	uint64_t submitted;    /* handed to tx_submit */
	uint64_t aborted;      /* tx_alloc'd, then tx_abort'ed */
	uint64_t alloc_failed; /* tx_alloc found the direction full */
	uint64_t dropped;      /* lost on purpose */
	uint64_t duplicated;
	uint64_t dup_no_room; /* a duplicate skipped because the direction was full */
	uint64_t reordered;
	uint64_t corrupted;
	uint64_t delivered; /* fed to the peer's xr_core_rx */
	uint64_t ce_marked; /* given CE by ce_threshold */
	uint32_t queue_max; /* the most frames queued at once */
	uint64_t cq_events; /* completion events this side's core reported (port cq_event) */
	uint64_t on_queue[XR_MEM_QUEUES]; /* submitted on each queue */
};

/* Sees every frame a side submits, before impairment. */
typedef void (*xr_mem_tap_fn)(void *arg, int from_side, const uint8_t *frame, uint32_t len);

struct xr_mem_link;

/* One direction: frames sent by side `from`, queued for side 1 - from. */
struct xr_mem_dir {
	struct xr_mem_link *link;
	int from;
	struct xr_mem_impair impair;
	struct xr_mem_counters counters;
	uint64_t rng;
	uint8_t *frames; /* depth * XR_MEM_FRAME_SIZE */
	uint32_t *frame_len;
	uint32_t *frame_queue;
	uint32_t *free_slots; /* stack of unused slot numbers */
	uint32_t nfree;
	uint32_t *queue; /* ring of slot numbers in delivery order */
	uint32_t qhead, qcount;
};

struct xr_mem_link {
	uint32_t depth;	    /* frame slots per direction */
	uint32_t tx_queues; /* each side's port transmits on (0: one; at most XR_MEM_QUEUES) */
	uint32_t engines;   /* each side's core is run by (xr_core_port.engines) */
	struct xr_mem_dir dir[2];
	xr_mem_tap_fn tap;
	void *tap_arg;
};

/* depth: frames in flight per direction (>= 1). Returns 0, -EINVAL or -ENOMEM. */
int xr_mem_link_init(struct xr_mem_link *link, uint32_t depth, uint64_t seed);
void xr_mem_link_destroy(struct xr_mem_link *link);
/* Impairs the frames sent by side from now on (NULL: none). Returns 0 or -EINVAL. */
int xr_mem_link_set_impair(struct xr_mem_link *link, int side, const struct xr_mem_impair *imp);
void xr_mem_link_set_tap(struct xr_mem_link *link, xr_mem_tap_fn tap, void *arg);
/* The port through which the core at side sends. */
void xr_mem_link_port(struct xr_mem_link *link, int side, struct xr_core_port *port);
/* Feeds up to max frames queued toward side to core; returns how many. */
uint32_t xr_mem_link_deliver(struct xr_mem_link *link, int side, struct xr_core *core, uint64_t now,
			     uint32_t max);
/* Loses up to max frames queued toward side, the oldest first; returns how many. */
uint32_t xr_mem_link_discard(struct xr_mem_link *link, int side, uint32_t max);
/* Frames waiting to be delivered to side. */
uint32_t xr_mem_link_queued(const struct xr_mem_link *link, int side);
/* Counters of the frames sent by side. */
const struct xr_mem_counters *xr_mem_link_counters(const struct xr_mem_link *link, int side);

#endif /* XROCE_MEM_PORT_H */
