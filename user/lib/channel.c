/* SPDX-License-Identifier: MIT */
/*
 * Completion channels: an eventfd counting pending events (semaphore mode,
 * one read per event) and the queue of CQs that fired, in order. The core
 * reports a fired CQ through its port (xr_channel_cq_event, under the device
 * lock), which queues it and owes the channel an eventfd write; the thread
 * that ran the core makes that write after releasing the lock
 * (xr_unlock_and_notify), so the consumer it wakes finds the lock free.
 * Consumers block in read().
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "device.h"

struct xr_channel_impl {
	struct xr_comp_channel pub;
	struct xr_cq_impl *head, *tail;	   /* fired CQs, under the device lock */
	uint64_t owed;			   /* events queued, eventfd not yet written (lock) */
	struct xr_channel_impl *next_owed; /* in dev->events_owed while owed */
	/* atomic: threads between taking an owed count and writing it */
	int writers;
};

struct xr_comp_channel *xr_create_comp_channel(struct xr_device *dev)
{
	struct xr_channel_impl *ch;

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

/* Takes ch off dev->events_owed (under the lock). */
static void unlink_owed(struct xr_device *dev, struct xr_channel_impl *ch)
{
	struct xr_channel_impl **link = &dev->events_owed;

	while (*link && *link != ch)
		link = &(*link)->next_owed;
	if (*link)
		*link = ch->next_owed;
	ch->owed = 0;
}

int xr_destroy_comp_channel(struct xr_comp_channel *channel)
{
	struct xr_channel_impl *ch = (struct xr_channel_impl *)channel;
	struct xr_device *dev;

	if (!channel)
		return -(errno = EINVAL);
	dev = channel->device;
	pthread_mutex_lock(&dev->lock);
	if (channel->refcnt) {
		pthread_mutex_unlock(&dev->lock);
		return -(errno = EBUSY);
	}
	if (ch->owed)
		unlink_owed(dev, ch);
	pthread_mutex_unlock(&dev->lock);
	/* A thread that took an owed count before the lock came here is writing it. */
	while (__atomic_load_n(&ch->writers, __ATOMIC_ACQUIRE))
		sched_yield();
	close(channel->fd);
	free(ch);
	return 0;
}

void xr_channel_cq_event(void *ctx, struct xr_cq *cq)
{
	struct xr_device *dev = ctx;
	struct xr_cq_impl *c = (struct xr_cq_impl *)cq;
	struct xr_channel_impl *ch = (struct xr_channel_impl *)c->channel;

	c->next_event = NULL;
	if (ch->tail)
		ch->tail->next_event = c;
	else
		ch->head = c;
	ch->tail = c;
	c->events_fired++;
	if (!ch->owed++) {
		ch->next_owed = dev->events_owed;
		dev->events_owed = ch;
	}
}

/* Channels written after one unlock without holding the lock; more is rare. */
#define OWED_BATCH 16

void xr_unlock_and_notify(struct xr_device *dev)
{
	struct {
		struct xr_channel_impl *ch;
		uint64_t n;
	} w[OWED_BATCH];
	struct xr_channel_impl *ch;
	uint64_t raised;
	int nw = 0;
	ssize_t r;

	while ((ch = dev->events_owed)) {
		dev->events_owed = ch->next_owed;
		if (nw == OWED_BATCH) {
			/* Beyond the batch: written here, correct if not as cheap. */
			r = write(ch->pub.fd, &ch->owed, sizeof(ch->owed));
			(void)r;
			xr_count_syscalls(dev, 1);
		} else {
			w[nw].ch = ch;
			w[nw].n = ch->owed;
			/* The channel stays until this write is made (xr_destroy_comp_channel). */
			__atomic_add_fetch(&ch->writers, 1, __ATOMIC_RELAXED);
			nw++;
		}
		ch->owed = 0;
	}
	raised = xr_async_raised_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	xr_engine_transmit(dev);
	xr_async_signal(dev, raised);
	if (nw)
		xr_count_syscalls(dev, (uint64_t)nw);
	for (int i = 0; i < nw; i++) {
		/* Semaphore mode: n adds n events, each read takes one. Cannot overflow. */
		r = write(w[i].ch->pub.fd, &w[i].n, sizeof(w[i].n));
		(void)r;
		__atomic_sub_fetch(&w[i].ch->writers, 1, __ATOMIC_RELEASE);
	}
}

int xr_req_notify_cq(struct xr_cq *cq, int solicited_only)
{
	struct xr_cq_impl *c = (struct xr_cq_impl *)cq;

	if (!cq || !cq->channel)
		return -(errno = EINVAL);
	pthread_mutex_lock(&cq->device->lock);
	c->armed = solicited_only ? XR_CQ_ARM_SOLICITED : XR_CQ_ARM_ALL;
	pthread_mutex_unlock(&cq->device->lock);
	/*
	 * The application will sleep: hand the sockets back to the engine
	 * thread now. Ordered before the kick's look at the engine's sleeping
	 * flag: an engine about to stand by sees either this or the eventfd.
	 */
	__atomic_store_n(&cq->device->app_poll_until, 0, __ATOMIC_SEQ_CST);
	xr_engine_wake_all(cq->device);
	return 0;
}

int xr_get_cq_event(struct xr_comp_channel *channel, struct xr_cq **cq, void **cq_context)
{
	struct xr_channel_impl *ch = (struct xr_channel_impl *)channel;
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
	struct xr_channel_impl *ch = (struct xr_channel_impl *)channel;
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
