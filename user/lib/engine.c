/* SPDX-License-Identifier: MIT */
/*
 * The engine threads: each receives a batch from its queues, runs its
 * lane of the transport, transmits, fires its timers; after a short
 * busy-poll window with nothing to do, it blocks in ppoll() on its AF_XDP
 * sockets and its wake eventfd until its next timer. The first engine also
 * serves what belongs to no queue: the processes sharing the device,
 * frames to ourselves, link news and the CM's timers.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

bool xr_engine_round_locked(struct xr_device *dev, uint32_t lane, uint64_t now, uint64_t *deadline)
{
	struct xr_rx_frame frames[RX_BATCH];
	struct xr_core *core = &dev->core;
	bool all = lane == XR_ENGINE_ALL, first = all || lane == 0;
	uint64_t tx_before;
	unsigned n;
	bool busy;

	tx_before = core->stats.tx_frames;
	if (!dev->port) {
		/* A guest: every frame comes through the owner, to its one engine. */
		n = xr_share_guest_rx(dev, now);
		*deadline = xr_core_progress(core, now);
		return n || core->stats.tx_frames != tx_before;
	}
	if (all)
		n = xr_xsk_port_rx(dev->port, frames, RX_BATCH);
	else
		n = xr_xsk_port_rx_some(dev->port, lane, dev->nengines, frames, RX_BATCH);
	for (unsigned i = 0; i < n; i++)
		xr_core_rx(core, frames[i].data, frames[i].len, frames[i].queue, now);
	if (n)
		xr_xsk_port_rx_release(dev->port);
	if (!all)
		core->stats.rx_by_engine[lane] += n;
	if (first) {
		n += xr_share_owner_poll(dev, now);
		n += xr_loopback_deliver(dev, now);
	}
	*deadline = all ? xr_core_progress(core, now) : xr_core_progress_lane(core, lane, now);
	hold_acks(dev, now);
	xr_xsk_port_tx_publish(dev->port);
	/* Frames the device refused for now: come back soon rather than at a timer. */
	if (xr_xsk_port_tx_backlog(dev->port) && (!*deadline || *deadline > now + TX_RETRY_NS))
		*deadline = now + TX_RETRY_NS;
	/* Frames to ourselves: the first engine's next round takes them, and must not wait. */
	if (xr_loopback_pending(&dev->loopback)) {
		if (first)
			*deadline = now;
		else
			__atomic_fetch_or(&core->lanes_readied, 1u, __ATOMIC_SEQ_CST);
	}
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

/* Wakes the engines of the lanes in bits that sleep. */
static void wake_lanes(struct xr_device *dev, uint32_t bits)
{
	uint64_t one = 1;

	for (uint32_t i = 0; i < dev->nengines; i++) {
		struct xr_engine *e = &dev->engines[i];

		if (!(bits & (1u << i)) || !__atomic_load_n(&e->sleeping, __ATOMIC_SEQ_CST))
			continue;
		ssize_t r = write(e->wake_fd, &one, sizeof(one));
		(void)r;
		xr_count_syscalls(dev, 1);
	}
}

/*
 * One round; returns whether anything was received or sent. Work given to
 * the engine's own lane from now on is what its bit announces: cleared
 * under the lock, before the round looks, so nothing set later is lost.
 */
static bool engine_round(struct xr_engine *e, uint64_t now, uint64_t *deadline, bool *outstanding)
{
	struct xr_device *dev = e->dev;
	struct xr_core *core = &dev->core;
	uint32_t own = 1u << e->index;
	bool busy;

	pthread_mutex_lock(&dev->lock);
	if (__atomic_load_n(&core->lanes_readied, __ATOMIC_RELAXED) & own)
		__atomic_fetch_and(&core->lanes_readied, ~own, __ATOMIC_SEQ_CST);
	busy = xr_engine_round_locked(dev, dev->port ? e->index : XR_ENGINE_ALL, now, deadline);
	*outstanding = xr_core_lane_outstanding(core, e->index);
	xr_unlock_and_notify(dev);
	/*
	 * QPs of other engines this round gave work: a frame on our queue, room
	 * in the window. Our own bit stays: it may announce work posted since
	 * the round looked, and whoever takes it wakes us if we sleep (once
	 * for nothing, when the round itself set it).
	 */
	if (dev->nengines > 1 && (__atomic_load_n(&core->lanes_readied, __ATOMIC_RELAXED) & ~own))
		wake_lanes(dev,
			   __atomic_fetch_and(&core->lanes_readied, own, __ATOMIC_SEQ_CST) & ~own);
	return busy;
}

static void engine_sleep(struct xr_engine *e, uint64_t deadline, bool watch_sockets)
{
	struct pollfd pfd[XR_MAX_QUEUES + 1 + XR_SHARE_MAX_GUESTS + 2];
	struct xr_device *dev = e->dev;
	int nfds = watch_sockets && dev->port ? xr_xsk_port_nfds(dev->port) : 0, n = 0;
	int monitor = -1, owner = -1;
	bool first = e->index == 0;
	uint64_t now = xr_now_ns(), wait = MAX_SLEEP_NS;
	struct timespec ts;
	uint64_t v;

	if (deadline) {
		if (deadline <= now)
			return;
		if (deadline - now < wait)
			wait = deadline - now;
	}
	for (int i = (int)e->index; i < nfds && n < XR_MAX_QUEUES; i += (int)dev->nengines)
		pfd[n++] = (struct pollfd){.fd = xr_xsk_port_fd(dev->port, i), .events = POLLIN};
	if (first && watch_sockets && xr_share_guest_fd(dev) >= 0)
		pfd[n++] = (struct pollfd){.fd = xr_share_guest_fd(dev), .events = POLLIN};
	if (first && watch_sockets) {
		owner = n;
		n += xr_share_owner_pollfds(dev, pfd + n, 1 + XR_SHARE_MAX_GUESTS);
	}
	if (first && xr_port_monitor_fd(dev) >= 0) {
		monitor = n;
		pfd[n++] = (struct pollfd){.fd = xr_port_monitor_fd(dev), .events = POLLIN};
	}
	pfd[n++] = (struct pollfd){.fd = e->wake_fd, .events = POLLIN};
	ts.tv_sec = (time_t)(wait / 1000000000ull);
	ts.tv_nsec = (long)(wait % 1000000000ull);
	xr_count_syscalls(dev, 1);
	if (ppoll(pfd, (nfds_t)n, &ts, NULL) <= 0)
		return;
	if (pfd[n - 1].revents & POLLIN) {
		ssize_t r = read(e->wake_fd, &v, sizeof(v));
		(void)r;
		xr_count_syscalls(dev, 1);
	}
	if (owner >= 0)
		xr_share_owner_polled(dev, pfd + owner);
	if (monitor >= 0 && (pfd[monitor].revents & POLLIN))
		xr_port_monitor_poll(dev);
}

/*
 * While the engine sleeps, XDP must steer its QPs' ACKs to the socket so
 * that they wake it; the round after setting this reads what XDP absorbed
 * before.
 */
static void set_xdp_sleeping(struct xr_engine *e, bool sleeping)
{
	pthread_mutex_lock(&e->dev->lock);
	xr_core_set_engine_sleeping(&e->dev->core, e->index, sleeping);
	xr_unlock_and_notify(e->dev); /* absorbed ACKs may complete work */
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
	struct xr_engine *e = arg;
	struct xr_device *dev = e->dev;
	uint64_t idle_since = xr_now_ns(), outstanding_since = 0, deadline, next_monitor_poll = 0;
	uint64_t standby_ns = XR_APP_POLL_GRACE_NS;
	bool outstanding;

	while (!__atomic_load_n(&dev->stop, __ATOMIC_ACQUIRE)) {
		uint64_t app_until = __atomic_load_n(&dev->app_poll_until, __ATOMIC_RELAXED);
		uint64_t now = xr_now_ns();

		/* Link and address news: looked at now and then, also when never idle. */
		if (e->index == 0 && now >= next_monitor_poll) {
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
			__atomic_store_n(&e->sleeping, 1, __ATOMIC_SEQ_CST);
			now = xr_now_ns();
			app_until = __atomic_load_n(&dev->app_poll_until, __ATOMIC_SEQ_CST);
			if (now < app_until) {
				engine_sleep(
				    e, app_until > now + standby_ns ? app_until : now + standby_ns,
				    false);
				__atomic_fetch_add(&dev->standby_looks, 1, __ATOMIC_RELAXED);
				standby_ns = standby_ns * 2 < dev->standby_max_ns
						 ? standby_ns * 2
						 : dev->standby_max_ns;
			}
			__atomic_store_n(&e->sleeping, 0, __ATOMIC_SEQ_CST);
			idle_since = xr_now_ns();
			outstanding_since = 0;
			continue;
		}
		standby_ns = XR_APP_POLL_GRACE_NS;
		/* Idle from the busy round's start: a round is short beside busy_poll_ns. */
		if (engine_round(e, now, &deadline, &outstanding)) {
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
		__atomic_store_n(&e->sleeping, 1, __ATOMIC_SEQ_CST);
		set_xdp_sleeping(e, true);
		now = xr_now_ns();
		if (!engine_round(e, now, &deadline, &outstanding) &&
		    may_sleep(dev, now, outstanding, idle_since, &outstanding_since)) {
			__atomic_fetch_add(&dev->sleeps, 1, __ATOMIC_RELAXED);
			if (outstanding)
				__atomic_fetch_add(&dev->sleeps_in_flight, 1, __ATOMIC_RELAXED);
			engine_sleep(e, deadline, true);
		}
		set_xdp_sleeping(e, false);
		__atomic_store_n(&e->sleeping, 0, __ATOMIC_SEQ_CST);
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
	wake_lanes(dev, xr_core_take_readied(&dev->core));
}

void xr_engine_wake_all(struct xr_device *dev)
{
	wake_lanes(dev, UINT32_MAX);
}

uint32_t xr_engine_count(uint32_t rx_queues)
{
	const char *v = getenv("XROCE_ENGINES");
	uint32_t n = rx_queues;
	cpu_set_t cpus;

	if (v && *v) {
		n = (uint32_t)strtoul(v, NULL, 10);
	} else if (!sched_getaffinity(0, sizeof(cpus), &cpus) && (uint32_t)CPU_COUNT(&cpus) < n) {
		n = (uint32_t)CPU_COUNT(&cpus);
	}
	if (n > rx_queues)
		n = rx_queues;
	if (n > XR_MAX_ENGINES)
		n = XR_MAX_ENGINES;
	return n ? n : 1;
}

static void stop_engines(struct xr_device *dev)
{
	uint64_t one = 1;

	__atomic_store_n(&dev->stop, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < dev->nengines; i++) {
		struct xr_engine *e = &dev->engines[i];

		if (e->running) {
			ssize_t r = write(e->wake_fd, &one, sizeof(one));
			(void)r;
			pthread_join(e->thread, NULL);
			e->running = false;
		}
		if (e->wake_fd >= 0)
			close(e->wake_fd);
		e->wake_fd = -1;
	}
}

int xr_engine_start(struct xr_device *dev)
{
	int err = 0;

	for (uint32_t i = 0; i < dev->nengines; i++)
		dev->engines[i] = (struct xr_engine){.dev = dev, .index = i, .wake_fd = -1};
	for (uint32_t i = 0; i < dev->nengines && !err; i++) {
		struct xr_engine *e = &dev->engines[i];
		char name[16];

		e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (e->wake_fd < 0) {
			err = -errno;
			break;
		}
		err = -pthread_create(&e->thread, NULL, engine_main, e);
		if (err)
			break;
		e->running = true;
		/* For top -H and perf: which thread serves which queues. */
		snprintf(name, sizeof(name), "xroce-engine%u", i % XR_MAX_ENGINES);
		pthread_setname_np(e->thread, name);
	}
	if (err)
		stop_engines(dev);
	return err;
}

void xr_engine_stop(struct xr_device *dev)
{
	if (!dev->engines[0].running)
		return;
	stop_engines(dev);
	xr_engine_release_acks(dev);
	if (dev->port) {
		pthread_mutex_lock(&dev->lock);
		publish_stats(dev);
		pthread_mutex_unlock(&dev->lock);
	}
}
