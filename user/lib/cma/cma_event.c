// SPDX-License-Identifier: MIT
/*
 * Event channels. A channel's fd is an eventfd that is readable exactly
 * while the channel's queue holds an event, as the kernel's rdma_cm file
 * is: both are changed together under cma_lock. Events are counted on the
 * id that will be waited on when it is destroyed (a CONNECT_REQUEST on its
 * listener, as librdmacm counts it), so that no id goes while an event
 * naming it is still in the application's hands.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cma.h"

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;
/* An event was acknowledged (with cma_lock). */
static pthread_cond_t cma_acked = PTHREAD_COND_INITIALIZER;

struct cma_event {
	struct xr_rdma_cm_event pub;
	struct cma_id *counted_on;
	struct cma_event *next;
	uint8_t private_data[XR_MAD_SIZE];
};

struct cma_channel {
	struct xr_rdma_event_channel pub;
	struct cma_event *head, *tail;
	int ids; /* ids on the channel */
};

static struct cma_channel *channel_of(struct xr_rdma_event_channel *ch)
{
	return (struct cma_channel *)ch;
}

int cma_fail(int err)
{
	errno = -err;
	return err;
}

const char *xr_rdma_event_str(enum xr_rdma_cm_event_type event)
{
	/* librdmacm's names, for programs that print them. */
	static const char *const names[] = {
	    "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
	    "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
	    "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
	    "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
	    "RDMA_CM_EVENT_REJECTED",	     "RDMA_CM_EVENT_ESTABLISHED",
	    "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
	    "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
	    "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event] : "UNKNOWN EVENT";
}

struct xr_rdma_event_channel *xr_rdma_create_event_channel(void)
{
	struct cma_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->pub.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->pub.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	return &ch->pub;
}

int xr_rdma_destroy_event_channel(struct xr_rdma_event_channel *channel)
{
	struct cma_channel *ch = channel ? channel_of(channel) : NULL;

	if (!ch)
		return cma_fail(-EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (ch->ids) {
		pthread_mutex_unlock(&cma_lock);
		return cma_fail(-EBUSY);
	}
	pthread_mutex_unlock(&cma_lock);
	/* No id, so no event: an id's go with it. */
	close(ch->pub.fd);
	free(ch);
	return 0;
}

/* Under cma_lock: the fd follows the queue. */
static void fd_set_readable(struct cma_channel *ch, bool readable)
{
	uint64_t one = 1, drained;
	ssize_t r;

	if (readable)
		r = write(ch->pub.fd, &one, sizeof(one));
	else
		r = read(ch->pub.fd, &drained, sizeof(drained));
	(void)r; /* an eventfd at 0 or 1 neither overflows nor blocks */
}

void cma_channel_add_id_locked(struct xr_rdma_event_channel *channel, int delta)
{
	channel_of(channel)->ids += delta;
}

int cma_post_event(struct cma_id *id, const struct xr_rdma_cm_event *event,
		   const void *private_data, uint8_t private_data_len)
{
	struct cma_event *ev = calloc(1, sizeof(*ev));
	struct cma_channel *ch;

	if (!ev)
		return -ENOMEM;
	ev->pub = *event;
	ev->pub.id = &id->pub;
	ev->counted_on = event->listen_id ? cma_id_of(event->listen_id) : id;
	if (private_data_len) {
		memcpy(ev->private_data, private_data, private_data_len);
		/* conn and ud start alike: private data, then its length. */
		ev->pub.param.conn.private_data = ev->private_data;
		ev->pub.param.conn.private_data_len = private_data_len;
	} else {
		/* The event's own pointer stands: a multicast join's context. */
		ev->pub.param.conn.private_data_len = 0;
	}
	pthread_mutex_lock(&cma_lock);
	if (id->destroying ||
	    cma_id_of(ev->pub.listen_id ? ev->pub.listen_id : &id->pub)->destroying) {
		pthread_mutex_unlock(&cma_lock);
		free(ev);
		return -ECANCELED;
	}
	ch = channel_of(id->pub.channel);
	if (ch->tail)
		ch->tail->next = ev;
	else
		ch->head = ev;
	ch->tail = ev;
	if (ch->head == ev)
		fd_set_readable(ch, true);
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

static bool fd_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_NONBLOCK);
}

int xr_rdma_get_cm_event(struct xr_rdma_event_channel *channel, struct xr_rdma_cm_event **event)
{
	struct cma_channel *ch = channel ? channel_of(channel) : NULL;
	struct cma_event *ev;

	if (!ch || !event)
		return cma_fail(-EINVAL);
	for (;;) {
		struct pollfd pfd = {.fd = ch->pub.fd, .events = POLLIN};

		pthread_mutex_lock(&cma_lock);
		ev = ch->head;
		if (ev) {
			ch->head = ev->next;
			if (!ch->head) {
				ch->tail = NULL;
				fd_set_readable(ch, false);
			}
			ev->counted_on->events_reported++;
			/* A new connection taken is no longer its listener's to wait for. */
			if (ev->pub.event == XR_RDMA_CM_EVENT_CONNECT_REQUEST) {
				struct cma_id *child = cma_id_of(ev->pub.id);

				if (child->listener) {
					child->listener->backlog++;
					child->listener = NULL;
				}
			}
			pthread_mutex_unlock(&cma_lock);
			*event = &ev->pub;
			return 0;
		}
		pthread_mutex_unlock(&cma_lock);
		if (fd_nonblocking(ch->pub.fd))
			return cma_fail(-EAGAIN);
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return cma_fail(-errno);
	}
}

int xr_rdma_ack_cm_event(struct xr_rdma_cm_event *event)
{
	struct cma_event *ev = (struct cma_event *)event;
	struct cma_id *id;

	if (!event)
		return cma_fail(-EINVAL);
	pthread_mutex_lock(&cma_lock);
	id = ev->counted_on;
	id->events_acked++;
	pthread_cond_broadcast(&cma_acked);
	pthread_mutex_unlock(&cma_lock);
	free(ev);
	return 0;
}

void cma_drop_events_locked(struct cma_id *id, struct cma_id **orphans)
{
	struct cma_channel *ch = channel_of(id->pub.channel);
	struct cma_event **link = &ch->head, *ev;
	bool had_events = ch->head;

	ch->tail = NULL;
	while ((ev = *link)) {
		if (ev->counted_on != id && ev->pub.id != &id->pub) {
			ch->tail = ev;
			link = &ev->next;
			continue;
		}
		*link = ev->next;
		if (ev->pub.event == XR_RDMA_CM_EVENT_CONNECT_REQUEST && ev->counted_on == id) {
			struct cma_id *child = cma_id_of(ev->pub.id);

			child->listener = *orphans;
			*orphans = child;
		}
		free(ev);
	}
	if (had_events && !ch->head)
		fd_set_readable(ch, false);
}

void cma_wait_acked_locked(struct cma_id *id)
{
	while (id->events_acked != id->events_reported)
		pthread_cond_wait(&cma_acked, &cma_lock);
}

/* Moves id to another channel: its queued events go along (cma_lock held). */
void cma_move_events_locked(struct cma_id *id, struct xr_rdma_event_channel *to)
{
	struct cma_channel *from = channel_of(id->pub.channel), *dst = channel_of(to);
	struct cma_event **link = &from->head, *ev;
	bool had_events = from->head;

	from->tail = NULL;
	while ((ev = *link)) {
		if (ev->counted_on != id) {
			from->tail = ev;
			link = &ev->next;
			continue;
		}
		*link = ev->next;
		ev->next = NULL;
		if (dst->tail)
			dst->tail->next = ev;
		else
			dst->head = ev;
		dst->tail = ev;
		if (dst->head == ev)
			fd_set_readable(dst, true);
	}
	if (had_events && !from->head)
		fd_set_readable(from, false);
}
