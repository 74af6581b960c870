/* SPDX-License-Identifier: MIT */
/*
 * The engine thread: receive a batch, run the transport, transmit, fire
 * timers; after a short busy-poll window with nothing to do, block in
 * ppoll() on the AF_XDP sockets and the wake eventfd until the next timer.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "device.h"

#define RX_BATCH 64
#define MAX_SLEEP_NS 100000000ull	 /* wake at least every 100 ms */
#define TX_RETRY_NS 20000ull		 /* a tx backlog is flushed again this soon */
#define MONITOR_POLL_NS 10000000ull	 /* link and address news are at most this late */
#define STATS_IDLE_PUBLISH_NS 1000000ull /* counters of idle rounds are at most this late */

uint64_t xr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The counters into the pinned map, where `xroce stats` reads them. */
static void publish_stats(struct xr_device *dev)
{
	struct xr_engine_stats *stats = &dev->core.stats;

	stats->syscalls = __atomic_load_n(&dev->syscalls, __ATOMIC_RELAXED);
	stats->sleeps = __atomic_load_n(&dev->sleeps, __ATOMIC_RELAXED);
	stats->sleeps_in_flight = __atomic_load_n(&dev->sleeps_in_flight, __ATOMIC_RELAXED);
	stats->standby_looks = __atomic_load_n(&dev->standby_looks, __ATOMIC_RELAXED);
	if (dev->port)
		stats->rx_too_long = xr_xsk_port_rx_too_long(dev->port);
	*dev->xdp.engine_stats = *stats;
}

/*
 * Whether this round's ACKs wait: when the application drives the engine
 * and the round made nothing but plain ACKs, for at most ack_hold_ns from
 * the first of them. The application's answer, if it comes meanwhile, is
 * urgent: it enters the TX ring first and the ACKs follow it, in the same
 * system call. Otherwise the first round after the hold ends sends them:
 * the application's next poll, or the engine thread's once the application
 * has stopped polling (within XR_APP_POLL_GRACE_NS). Closing the device or
 * exiting sends them at once.
 *
 * Holding pays only with an application that answers what it receives:
 * one that only receives would make every peer wait ack_hold_ns for each
 * ACK. So the engine holds only once an ACK that left alone was followed
 * by an urgent frame before any further ACK, and stops when a hold runs out.
 */
static void hold_acks(struct xr_device *dev, uint64_t now)
{
	bool urgent = dev->core.tx_urgent != dev->tx_urgent_seen;
	bool hold = false;

	if (urgent) {
		dev->ack_hold_pays |= dev->ack_sent_alone;
		dev->ack_sent_alone = false;
	} else if (now < __atomic_load_n(&dev->app_poll_until, __ATOMIC_RELAXED) &&
		   xr_xsk_port_tx_late_count(dev->port)) {
		if (dev->ack_hold_pays) {
			if (!dev->ack_held_since)
				dev->ack_held_since = now;
			hold = now - dev->ack_held_since < dev->ack_hold_ns;
			dev->ack_hold_pays = hold; /* ran out: nobody answered */
		} else {
			dev->ack_sent_alone = true;
		}
	}
	if (!hold) {
		dev->ack_held_since = 0;
		dev->tx_urgent_seen = dev->core.tx_urgent;
	}
	xr_xsk_port_tx_hold_late(dev->port, hold);
}

bool xr_engine_round_locked(struct xr_device *dev, uint64_t now, uint64_t *deadline)
{
	struct xr_rx_frame frames[RX_BATCH];
	struct xr_core *core = &dev->core;
	uint64_t tx_before;
	unsigned n;
	bool busy;

	tx_before = core->stats.tx_frames;
	if (!dev->port) {
		/* A guest: every frame comes through the owner. */
		n = xr_share_guest_rx(dev, now);
		*deadline = xr_core_progress(core, now);
		return n || core->stats.tx_frames != tx_before;
	}
	n = xr_xsk_port_rx(dev->port, frames, RX_BATCH);
	for (unsigned i = 0; i < n; i++)
		xr_core_rx(core, frames[i].data, frames[i].len, frames[i].queue, now);
	if (n)
		xr_xsk_port_rx_release(dev->port);
	n += xr_share_owner_poll(dev, now);
	n += xr_loopback_deliver(dev, now);
	*deadline = xr_core_progress(core, now);
	hold_acks(dev, now);
	xr_xsk_port_tx_publish(dev->port);
	/* Frames the device refused for now: come back soon rather than at a timer. */
	if (xr_xsk_port_tx_backlog(dev->port) && (!*deadline || *deadline > now + TX_RETRY_NS))
		*deadline = now + TX_RETRY_NS;
	/* Frames to ourselves are received by the next round, which must not wait. */
	if (xr_loopback_pending(&dev->loopback))
		*deadline = now;
	busy = n || core->stats.tx_frames != tx_before;
	/* Counters change with frames; the syscall and sleep counts also between them. */
	if (busy || now >= dev->stats_due_ns) {
		publish_stats(dev);
		dev->stats_due_ns = now + STATS_IDLE_PUBLISH_NS;
	}
	return busy;
}

void xr_engine_transmit(struct xr_device *dev)
{
	unsigned calls;

	if (!dev->port)
		return;
	calls = xr_xsk_port_tx_kick(dev->port);
	if (calls)
		xr_count_syscalls(dev, calls);
}

void xr_engine_release_acks(struct xr_device *dev)
{
	if (!dev->port)
		return;
	pthread_mutex_lock(&dev->lock);
	xr_xsk_port_tx_hold_late(dev->port, false);
	xr_xsk_port_tx_publish(dev->port);
	pthread_mutex_unlock(&dev->lock);
	xr_engine_transmit(dev);
}

/* One round; returns whether anything was received or sent. */
static bool engine_round(struct xr_device *dev, uint64_t now, uint64_t *deadline, bool *outstanding)
{
	bool busy;

	pthread_mutex_lock(&dev->lock);
	busy = xr_engine_round_locked(dev, now, deadline);
	*outstanding = xr_core_outstanding(&dev->core);
	xr_unlock_and_notify(dev);
	return busy;
}

static void engine_sleep(struct xr_device *dev, uint64_t deadline, bool watch_sockets)
{
	struct pollfd pfd[XR_MAX_QUEUES + 1 + XR_SHARE_MAX_GUESTS + 2];
	int nfds = watch_sockets && dev->port ? xr_xsk_port_nfds(dev->port) : 0, n = 0;
	int monitor = -1, owner = -1;
	uint64_t now = xr_now_ns(), wait = MAX_SLEEP_NS;
	struct timespec ts;
	uint64_t v;

	if (deadline) {
		if (deadline <= now)
			return;
		if (deadline - now < wait)
			wait = deadline - now;
	}
	for (int i = 0; i < nfds && n < XR_MAX_QUEUES; i++)
		pfd[n++] = (struct pollfd){.fd = xr_xsk_port_fd(dev->port, i), .events = POLLIN};
	if (watch_sockets && xr_share_guest_fd(dev) >= 0)
		pfd[n++] = (struct pollfd){.fd = xr_share_guest_fd(dev), .events = POLLIN};
	if (watch_sockets) {
		owner = n;
		n += xr_share_owner_pollfds(dev, pfd + n, 1 + XR_SHARE_MAX_GUESTS);
	}
	if (xr_port_monitor_fd(dev) >= 0) {
		monitor = n;
		pfd[n++] = (struct pollfd){.fd = xr_port_monitor_fd(dev), .events = POLLIN};
	}
	pfd[n++] = (struct pollfd){.fd = dev->wake_fd, .events = POLLIN};
	ts.tv_sec = (time_t)(wait / 1000000000ull);
	ts.tv_nsec = (long)(wait % 1000000000ull);
	xr_count_syscalls(dev, 1);
	if (ppoll(pfd, (nfds_t)n, &ts, NULL) <= 0)
		return;
	if (pfd[n - 1].revents & POLLIN) {
		ssize_t r = read(dev->wake_fd, &v, sizeof(v));
		(void)r;
		xr_count_syscalls(dev, 1);
	}
	if (owner >= 0)
		xr_share_owner_polled(dev, pfd + owner);
	if (monitor >= 0 && (pfd[monitor].revents & POLLIN))
		xr_port_monitor_poll(dev);
}

/*
 * While the engine sleeps, XDP must steer ACKs to the socket so that they
 * wake it; the round after setting this reads what XDP absorbed before.
 */
static void set_xdp_sleeping(struct xr_device *dev, bool sleeping)
{
	pthread_mutex_lock(&dev->lock);
	xr_core_set_engine_sleeping(&dev->core, sleeping);
	xr_unlock_and_notify(dev); /* absorbed ACKs may complete work */
}

/*
 * Whether the engine may sleep after a round that found nothing to do:
 * not while an operation is outstanding (until spin_in_flight_ns have
 * passed since it found it so), nor within busy_poll_ns of its last work.
 */
static bool may_sleep(struct xr_device *dev, uint64_t now, bool outstanding, uint64_t idle_since,
		      uint64_t *outstanding_since)
{
	if (!outstanding)
		*outstanding_since = 0;
	else if (!*outstanding_since)
		*outstanding_since = now;
	if (outstanding && now - *outstanding_since < dev->spin_in_flight_ns)
		return false;
	return now - idle_since >= dev->busy_poll_ns;
}

static void *engine_main(void *arg)
{
	struct xr_device *dev = arg;
	uint64_t idle_since = xr_now_ns(), outstanding_since = 0, deadline, next_monitor_poll = 0;
	uint64_t standby_ns = XR_APP_POLL_GRACE_NS;
	bool outstanding;

	while (!__atomic_load_n(&dev->stop, __ATOMIC_ACQUIRE)) {
		uint64_t app_until = __atomic_load_n(&dev->app_poll_until, __ATOMIC_RELAXED);
		uint64_t now = xr_now_ns();

		/* Link and address news: looked at now and then, also when never idle. */
		if (now >= next_monitor_poll) {
			xr_port_monitor_poll(dev);
			next_monitor_poll = now + MONITOR_POLL_NS;
		}
		if (now < app_until) {
			/*
			 * The application drives the engine; stand by for when it
			 * stops (see standby_max_ns). ACKs it holds go with its next
			 * rounds, or with this thread's first round after it stopped.
			 * Arming a CQ or posting once it stopped wakes this thread;
			 * one that did so before the flag was visible is seen by
			 * the second look, which must not wait for the stand-by.
			 */
			__atomic_store_n(&dev->sleeping, 1, __ATOMIC_SEQ_CST);
			now = xr_now_ns();
			app_until = __atomic_load_n(&dev->app_poll_until, __ATOMIC_SEQ_CST);
			if (now < app_until) {
				engine_sleep(dev,
					     app_until > now + standby_ns ? app_until
									  : now + standby_ns,
					     false);
				__atomic_fetch_add(&dev->standby_looks, 1, __ATOMIC_RELAXED);
				standby_ns = standby_ns * 2 < dev->standby_max_ns
						 ? standby_ns * 2
						 : dev->standby_max_ns;
			}
			__atomic_store_n(&dev->sleeping, 0, __ATOMIC_SEQ_CST);
			idle_since = xr_now_ns();
			outstanding_since = 0;
			continue;
		}
		standby_ns = XR_APP_POLL_GRACE_NS;
		/* Idle from the busy round's start: a round is short beside busy_poll_ns. */
		if (engine_round(dev, now, &deadline, &outstanding)) {
			idle_since = now;
			continue;
		}
		/* The time this iteration began: no clock read of its own in the spin. */
		if (!may_sleep(dev, now, outstanding, idle_since, &outstanding_since))
			continue;
		/*
		 * Announce the sleep, then look once more: work posted before the
		 * flag was visible is found by this round, work posted after it
		 * sees the flag and writes the eventfd.
		 */
		__atomic_store_n(&dev->sleeping, 1, __ATOMIC_SEQ_CST);
		set_xdp_sleeping(dev, true);
		now = xr_now_ns();
		if (!engine_round(dev, now, &deadline, &outstanding) &&
		    may_sleep(dev, now, outstanding, idle_since, &outstanding_since)) {
			__atomic_fetch_add(&dev->sleeps, 1, __ATOMIC_RELAXED);
			if (outstanding)
				__atomic_fetch_add(&dev->sleeps_in_flight, 1, __ATOMIC_RELAXED);
			engine_sleep(dev, deadline, true);
		}
		set_xdp_sleeping(dev, false);
		__atomic_store_n(&dev->sleeping, 0, __ATOMIC_SEQ_CST);
		idle_since = xr_now_ns();
	}
	return NULL;
}

void xr_engine_kick(struct xr_device *dev)
{
	/* A polling application transmits on its own thread: no need to wake the engine. */
	if (xr_now_ns() < __atomic_load_n(&dev->app_poll_until, __ATOMIC_RELAXED))
		return;
	xr_engine_wake(dev);
}

void xr_engine_wake(struct xr_device *dev)
{
	uint64_t one = 1;

	if (__atomic_load_n(&dev->sleeping, __ATOMIC_SEQ_CST)) {
		ssize_t r = write(dev->wake_fd, &one, sizeof(one));
		(void)r;
		xr_count_syscalls(dev, 1);
	}
}

int xr_engine_start(struct xr_device *dev)
{
	int err;

	dev->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dev->wake_fd < 0)
		return -errno;
	err = pthread_create(&dev->engine, NULL, engine_main, dev);
	if (err) {
		close(dev->wake_fd);
		return -err;
	}
	dev->engine_running = true;
	return 0;
}

void xr_engine_stop(struct xr_device *dev)
{
	uint64_t one = 1;
	ssize_t r;

	if (!dev->engine_running)
		return;
	__atomic_store_n(&dev->stop, 1, __ATOMIC_RELEASE);
	r = write(dev->wake_fd, &one, sizeof(one));
	(void)r;
	pthread_join(dev->engine, NULL);
	close(dev->wake_fd);
	dev->engine_running = false;
	xr_engine_release_acks(dev);
	if (dev->port) {
		pthread_mutex_lock(&dev->lock);
		publish_stats(dev);
		pthread_mutex_unlock(&dev->lock);
	}
}
