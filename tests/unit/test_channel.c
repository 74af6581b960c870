/* SPDX-License-Identifier: MIT */
/*
 * Completion channels without a network: a device with only its core and
 * lock. As in verbs, a CQ can be destroyed with events that fired and were
 * never taken (they go with it, and the channel does not hand them out
 * afterwards), but not with a taken event left unacknowledged.
 */
#include <fcntl.h>
#include <pthread.h>

#include "core_harness.h"
#include "device.h"

static uint8_t *no_tx_alloc(void *ctx, uint32_t *cap)
{
	(void)ctx;
	(void)cap;
	return NULL;
}

static void no_tx(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	(void)ctx;
	(void)queue;
	(void)buf;
	(void)len;
}

static void no_abort(void *ctx, uint8_t *buf)
{
	(void)ctx;
	(void)buf;
}

static struct xr_device *fake_device(void)
{
	struct xr_device *dev = calloc(1, sizeof(*dev));
	struct xr_core_port port = {.ctx = dev,
				    .tx_alloc = no_tx_alloc,
				    .tx_submit = no_tx,
				    .tx_abort = no_abort,
				    .cq_event = xr_channel_cq_event};

	if (!dev)
		exit(2);
	pthread_mutex_init(&dev->lock, NULL);
	xr_core_init(&dev->core, &port);
	dev->core.device = dev;
	return dev;
}

/* One completion on cq, which fires the event it is armed for. */
static void fire(struct xr_cq *cq, uint64_t wr_id)
{
	struct xr_wc wc = {.wr_id = wr_id, .status = XR_WC_SUCCESS, .opcode = XR_WC_RECV};

	CHECK(xr_req_notify_cq(cq, 0) == 0, "arm");
	pthread_mutex_lock(&cq->device->lock);
	xr_cq_push((struct xr_cq_impl *)cq, &wc, false);
	xr_unlock_and_notify(cq->device);
}

static void test_untaken_events_go_with_their_cq(void)
{
	struct xr_device *dev = fake_device();
	struct xr_comp_channel *ch = xr_create_comp_channel(dev);
	struct xr_cq *a, *b, *got = NULL;
	void *ctx;

	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	a = xr_create_cq(dev, 16, ch);
	b = xr_create_cq(dev, 16, ch);
	CHECK(a && b, "create CQs");
	fire(a, 1);
	fire(b, 2);
	/* a's event was never taken: a can go, and its event with it. */
	CHECK(xr_destroy_cq(a) == 0, "destroy a CQ whose event nobody took");
	CHECK(xr_get_cq_event(ch, &got, &ctx) == 0 && got == b, "the next event is b's");
	CHECK(xr_get_cq_event(ch, &got, &ctx) == -EAGAIN, "then none: a's is gone");
	/* Taken and not acknowledged: b stays. */
	CHECK(xr_destroy_cq(b) == -EBUSY, "destroy with an unacknowledged event: EBUSY");
	xr_ack_cq_events(b, 1);
	CHECK(xr_destroy_cq(b) == 0, "destroy once acknowledged");
	CHECK(xr_destroy_comp_channel(ch) == 0, "destroy the channel, no CQ left on it");
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

int main(void)
{
	h_group("completion channels: untaken events go with their CQ, taken ones block it",
		test_untaken_events_go_with_their_cq);
	return h_exit_status();
}
