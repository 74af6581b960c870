/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events, as ibv_get_async_event: the core raises them into its
 * ring under the device lock; whoever unlocks after that counts them into
 * the device's async fd (an eventfd in semaphore mode, one unit per event),
 * outside the lock (xr_unlock_and_notify); xr_get_async_event takes one unit, then one event.
 */
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "device.h"

int xr_async_open(struct xr_device *dev)
{
	/* Blocking unless the application makes it O_NONBLOCK, as libibverbs' async_fd. */
	dev->async_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	return dev->async_fd < 0 ? -errno : 0;
}

void xr_async_close(struct xr_device *dev)
{
	if (dev->async_fd >= 0)
		close(dev->async_fd);
	dev->async_fd = -1;
}

uint64_t xr_async_raised_locked(struct xr_device *dev)
{
	uint64_t raised = dev->core.events_head - dev->events_signaled;

	dev->events_signaled = dev->core.events_head;
	return raised;
}

void xr_async_signal(struct xr_device *dev, uint64_t raised)
{
	ssize_t r;

	/* The counter cannot overflow: at most XR_MAX_EVENTS units are ever pending. */
	if (raised) {
		r = write(dev->async_fd, &raised, sizeof(raised));
		(void)r;
		xr_count_syscalls(dev, 1);
	}
}

int xr_async_fd(struct xr_device *dev)
{
	return dev ? dev->async_fd : -EINVAL;
}

/* Where the acknowledgements owed for an event are counted; NULL: nothing to destroy waits. */
static uint32_t *unacked_of(const struct xr_async_event *ev)
{
	switch (xr_event_about(ev->event_type)) {
	case XR_EVENT_ABOUT_CQ:
		return &((struct xr_cq_impl *)ev->element.cq)->async_unacked;
	case XR_EVENT_ABOUT_SRQ:
		return &((struct xr_srq_impl *)ev->element.srq)->async_unacked;
	case XR_EVENT_ABOUT_QP:
		return &((struct xr_qp_impl *)ev->element.qp)->async_unacked;
	default:
		return NULL;
	}
}

static struct xr_device *device_of(const struct xr_async_event *ev)
{
	switch (xr_event_about(ev->event_type)) {
	case XR_EVENT_ABOUT_CQ:
		return ev->element.cq->device;
	case XR_EVENT_ABOUT_SRQ:
		return ev->element.srq->device;
	default:
		return ev->element.qp->device;
	}
}

int xr_get_async_event(struct xr_device *dev, struct xr_async_event *ev)
{
	if (!dev || !ev)
		return -EINVAL;
	for (;;) {
		uint64_t unit;
		uint32_t *unacked;
		bool got;

		if (read(dev->async_fd, &unit, sizeof(unit)) != sizeof(unit)) {
			if (errno == EINTR)
				continue;
			return -errno; /* EAGAIN when the fd is non-blocking and nothing is queued
					*/
		}
		pthread_mutex_lock(&dev->lock);
		got = xr_core_take_event(&dev->core, ev);
		unacked = got ? unacked_of(ev) : NULL;
		if (unacked)
			(*unacked)++;
		pthread_mutex_unlock(&dev->lock);
		/* Not got: the event's object was destroyed meanwhile; its unit is spent. */
		if (got)
			return 0;
	}
}

void xr_ack_async_event(struct xr_async_event *ev)
{
	struct xr_device *dev;
	uint32_t *unacked;

	if (!ev || !(unacked = unacked_of(ev)))
		return;
	dev = device_of(ev);
	pthread_mutex_lock(&dev->lock);
	if (*unacked)
		(*unacked)--;
	pthread_mutex_unlock(&dev->lock);
}
