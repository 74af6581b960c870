/* SPDX-License-Identifier: MIT */
/* The in-memory link: two cores wired together through seeded, impaired queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem_port.h"

/* splitmix64: tiny, seedable, and good enough to pick which frames to hurt. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Draws only when p > 0, so an unimpaired direction consumes no randomness. */
static bool rng_chance(uint64_t *state, double p)
{
	if (p <= 0)
		return false;
	return (double)(rng_next(state) >> 11) * 0x1.0p-53 < p;
}

static uint8_t *slot_frame(struct xr_mem_dir *d, uint32_t slot)
{
	return d->frames + (size_t)slot * XR_MEM_FRAME_SIZE;
}

static uint32_t frame_slot(struct xr_mem_dir *d, const uint8_t *buf)
{
	return (uint32_t)((size_t)(buf - d->frames) / XR_MEM_FRAME_SIZE);
}

static uint8_t *mem_tx_alloc(void *ctx, uint32_t *cap)
{
	struct xr_mem_dir *d = ctx;

	if (!d->nfree) {
		d->counters.alloc_failed++;
		return NULL;
	}
	*cap = XR_MEM_FRAME_SIZE;
	return slot_frame(d, d->free_slots[--d->nfree]);
}

static void release_slot(struct xr_mem_dir *d, uint32_t slot)
{
	d->free_slots[d->nfree++] = slot;
}

/* Sets CE in an ECN-capable frame, as a switch does; the ICRC does not cover the field. */
static bool mark_ce(uint8_t *f, uint32_t len)
{
	struct xr_pkt pkt;
	uint16_t sum;
	uint8_t *ip;

	if (xr_pkt_parse(f, len, &pkt) != XR_PARSE_OK || !pkt.ecn)
		return false;
	ip = f + pkt.l3_off;
	if (pkt.ipv6) {
		ip[1] |= XR_ECN_CE << 4;
		return true;
	}
	ip[1] |= XR_ECN_CE;
	ip[10] = ip[11] = 0;
	sum = xr_ipv4_checksum(ip);
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
	return true;
}

/* Queues a slot for delivery, corrupting it or letting it overtake others by chance. */
static void enqueue(struct xr_mem_dir *d, uint32_t slot)
{
	uint32_t depth = d->link->depth, len = d->frame_len[slot], pos, ahead = 0;
	const struct xr_mem_impair *imp = &d->impair;

	if (len && rng_chance(&d->rng, imp->corrupt)) {
		uint64_t bit = rng_next(&d->rng) % ((uint64_t)len * 8);

		slot_frame(d, slot)[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		d->counters.corrupted++;
	}
	if (imp->ce_threshold && d->qcount >= imp->ce_threshold &&
	    mark_ce(slot_frame(d, slot), len))
		d->counters.ce_marked++;
	if (imp->reorder_window > 0 && d->qcount && rng_chance(&d->rng, imp->reorder)) {
		uint32_t span = d->qcount < (uint32_t)imp->reorder_window
				    ? d->qcount
				    : (uint32_t)imp->reorder_window;

		ahead = 1 + (uint32_t)(rng_next(&d->rng) % span);
		d->counters.reordered++;
	}
	/* Shift the last `ahead` queued frames back by one to make room. */
	pos = d->qcount - ahead;
	for (uint32_t i = d->qcount; i > pos; i--)
		d->queue[(d->qhead + i) % depth] = d->queue[(d->qhead + i - 1) % depth];
	d->queue[(d->qhead + pos) % depth] = slot;
	d->qcount++;
	if (d->qcount > d->counters.queue_max)
		d->counters.queue_max = d->qcount;
}

static void mem_tx_submit(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct xr_mem_dir *d = ctx;
	struct xr_mem_link *link = d->link;
	uint32_t slot = frame_slot(d, buf);

	d->counters.submitted++;
	if (queue < XR_MEM_QUEUES)
		d->counters.on_queue[queue]++;
	d->frame_len[slot] = len;
	d->frame_queue[slot] = queue;
	if (link->tap)
		link->tap(link->tap_arg, d->from, buf, len);
	if (rng_chance(&d->rng, d->impair.loss)) {
		d->counters.dropped++;
		release_slot(d, slot);
		return;
	}
	if (rng_chance(&d->rng, d->impair.duplicate)) {
		if (d->nfree) {
			uint32_t copy = d->free_slots[--d->nfree];

			memcpy(slot_frame(d, copy), buf, len);
			d->frame_len[copy] = len;
			d->frame_queue[copy] = queue;
			d->counters.duplicated++;
			enqueue(d, copy);
		} else {
			d->counters.dup_no_room++;
		}
	}
	enqueue(d, slot);
}

static void mem_tx_abort(void *ctx, uint8_t *buf)
{
	struct xr_mem_dir *d = ctx;

	d->counters.aborted++;
	release_slot(d, frame_slot(d, buf));
}

int xr_mem_link_init(struct xr_mem_link *link, uint32_t depth, uint64_t seed)
{
	memset(link, 0, sizeof(*link));
	if (depth == 0 || depth > (1u << 20))
		return -EINVAL;
	link->depth = depth;
	for (int s = 0; s < 2; s++) {
		struct xr_mem_dir *d = &link->dir[s];

		d->link = link;
		d->from = s;
		/* Each direction draws from its own stream, derived from the one seed. */
		d->rng = seed ^ (0xa0761d6478bd642full * (uint64_t)(s + 1));
		d->frames = malloc((size_t)depth * XR_MEM_FRAME_SIZE);
		d->frame_len = calloc(depth, sizeof(*d->frame_len));
		d->frame_queue = calloc(depth, sizeof(*d->frame_queue));
		d->free_slots = calloc(depth, sizeof(*d->free_slots));
		d->queue = calloc(depth, sizeof(*d->queue));
		if (!d->frames || !d->frame_len || !d->frame_queue || !d->free_slots || !d->queue) {
			xr_mem_link_destroy(link);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < depth; i++)
			d->free_slots[i] = depth - 1 - i;
		d->nfree = depth;
	}
	return 0;
}

void xr_mem_link_destroy(struct xr_mem_link *link)
{
	for (int s = 0; s < 2; s++) {
		struct xr_mem_dir *d = &link->dir[s];

		free(d->frames);
		free(d->frame_len);
		free(d->frame_queue);
		free(d->free_slots);
		free(d->queue);
	}
	memset(link, 0, sizeof(*link));
}

static bool probability_ok(double p)
{
	return p >= 0 && p <= 1; /* false for NaN too */
}

int xr_mem_link_set_impair(struct xr_mem_link *link, int side, const struct xr_mem_impair *imp)
{
	static const struct xr_mem_impair none;

	if (side != 0 && side != 1)
		return -EINVAL;
	if (!imp)
		imp = &none;
	if (!probability_ok(imp->loss) || !probability_ok(imp->duplicate) ||
	    !probability_ok(imp->reorder) || !probability_ok(imp->corrupt) ||
	    imp->reorder_window < 0)
		return -EINVAL;
	link->dir[side].impair = *imp;
	return 0;
}

void xr_mem_link_set_tap(struct xr_mem_link *link, xr_mem_tap_fn tap, void *arg)
{
	link->tap = tap;
	link->tap_arg = arg;
}

/* No consumer to wake in memory: the events are counted. */
static void mem_cq_event(void *ctx, struct xr_cq *cq)
{
	struct xr_mem_dir *d = ctx;

	(void)cq;
	d->counters.cq_events++;
}

void xr_mem_link_port(struct xr_mem_link *link, int side, struct xr_core_port *port)
{
	*port = (struct xr_core_port){.ctx = &link->dir[side],
				      .tx_queues = link->tx_queues,
				      .engines = link->engines,
				      .tx_alloc = mem_tx_alloc,
				      .tx_submit = mem_tx_submit,
				      .tx_abort = mem_tx_abort,
				      .cq_event = mem_cq_event};
}

/* The slot of the oldest frame queued in d, taken off the queue (still held). */
static uint32_t dequeue(struct xr_mem_dir *d)
{
	uint32_t slot = d->queue[d->qhead];

	d->qhead = (d->qhead + 1) % d->link->depth;
	d->qcount--;
	return slot;
}

uint32_t xr_mem_link_deliver(struct xr_mem_link *link, int side, struct xr_core *core, uint64_t now,
			     uint32_t max)
{
	struct xr_mem_dir *d = &link->dir[1 - side];
	uint32_t n = 0;

	while (n < max && d->qcount) {
		uint32_t slot = dequeue(d);

		/* The slot is released only after rx: the core reads the frame in place. */
		xr_core_rx(core, slot_frame(d, slot), d->frame_len[slot], d->frame_queue[slot],
			   now);
		d->counters.delivered++;
		release_slot(d, slot);
		n++;
	}
	return n;
}

uint32_t xr_mem_link_discard(struct xr_mem_link *link, int side, uint32_t max)
{
	struct xr_mem_dir *d = &link->dir[1 - side];
	uint32_t n = 0;

	while (n < max && d->qcount) {
		release_slot(d, dequeue(d));
		d->counters.dropped++;
		n++;
	}
	return n;
}

uint32_t xr_mem_link_queued(const struct xr_mem_link *link, int side)
{
	return link->dir[1 - side].qcount;
}

const struct xr_mem_counters *xr_mem_link_counters(const struct xr_mem_link *link, int side)
{
	return &link->dir[side].counters;
}
