/* SPDX-License-Identifier: MIT */
/*
 * Completion channels: an eventfd counting pending events (semaphore mode,
 * one read per event) and the queue of CQs that fired, in order. The engine
 * thread fires events under the device lock; consumers block in read().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "device.h"

struct channel_impl {
	struct xr_comp_channel pub;
	struct xr_cq_impl *head, *tail; /* fired CQs, under the device lock */
};

struct xr_comp_channel *xr_create_comp_channel(struct xr_device *dev)
{
	struct channel_impl *ch;

	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->pub.device = dev;
	ch->pub.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->pub.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	return &ch->pub;
}

int xr_destroy_comp_channel(struct xr_comp_channel *channel)
{
	if (!channel)
		return -(errno = EINVAL);
	if (channel->refcnt)
		return -(errno = EBUSY);
	close(channel->fd);
	free(channel);
	return 0;
}

void xr_channel_notify(struct xr_comp_channel *channel, struct xr_cq_impl *cq)
{
	struct channel_impl *ch = (struct channel_impl *)channel;
	uint64_t one = 1;
	ssize_t r;

	cq->next_event = NULL;
	if (ch->tail)
		ch->tail->next_event = cq;
	else
		ch->head = cq;
	ch->tail = cq;
	cq->events_fired++;
	r = write(channel->fd, &one, sizeof(one));
	(void)r; /* cannot fail: the counter is far from overflowing */
}

int xr_req_notify_cq(struct xr_cq *cq, int solicited_only)
{
	struct xr_cq_impl *c = (struct xr_cq_impl *)cq;

	if (!cq || !cq->channel)
		return -(errno = EINVAL);
	pthread_mutex_lock(&cq->device->lock);
	c->armed = solicited_only ? XR_CQ_ARM_SOLICITED : XR_CQ_ARM_ALL;
	pthread_mutex_unlock(&cq->device->lock);
	/* The application will sleep: hand the sockets back to the engine thread now. */
	__atomic_store_n(&cq->device->app_poll_until, 0, __ATOMIC_RELAXED);
	xr_engine_kick(cq->device);
	return 0;
}

int xr_get_cq_event(struct xr_comp_channel *channel, struct xr_cq **cq, void **cq_context)
{
	struct channel_impl *ch = (struct channel_impl *)channel;
	struct xr_cq_impl *c;
	uint64_t v;

	if (!channel || !cq)
		return -(errno = EINVAL);
	/*
	 * A count may stand for an event of a CQ destroyed since it fired (its
	 * events left the queue with it): read on, for a live one or -EAGAIN.
	 */
	for (;;) {
		if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
			return -errno;
		pthread_mutex_lock(&channel->device->lock);
		c = ch->head;
		if (c) {
			ch->head = c->next_event;
			if (!ch->head)
				ch->tail = NULL;
			c->events_got++;
		}
		pthread_mutex_unlock(&channel->device->lock);
		if (c)
			break;
	}
	*cq = &c->pub;
	if (cq_context)
		*cq_context = c->pub.cq_context;
	return 0;
}

void xr_channel_forget(struct xr_comp_channel *channel, struct xr_cq_impl *cq)
{
	struct channel_impl *ch = (struct channel_impl *)channel;
	struct xr_cq_impl **link = &ch->head;

	ch->tail = NULL;
	while (*link) {
		if (*link == cq) {
			*link = cq->next_event;
			continue;
		}
		ch->tail = *link;
		link = &(*link)->next_event;
	}
}

void xr_ack_cq_events(struct xr_cq *cq, unsigned int nevents)
{
	struct xr_cq_impl *c = (struct xr_cq_impl *)cq;

	if (!cq)
		return;
	pthread_mutex_lock(&cq->device->lock);
	c->events_acked += nevents;
	pthread_mutex_unlock(&cq->device->lock);
}
