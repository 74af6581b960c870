/* SPDX-License-Identifier: MIT */
/*
 * A device: one network interface with xroce's XDP program, its AF_XDP
 * port, the transport core and the engine thread that drives it. The
 * device lock serialises the core between the engine and API calls.
 */
#ifndef XROCE_DEVICE_H
#define XROCE_DEVICE_H

#include <pthread.h>
#include <stdbool.h>

#include "core/core.h"
#include "loopback.h"
#include "netlink.h"
#include "share.h"
#include "xdp_attach.h"
#include "xsk_port.h"

/*
 * One engine thread: it receives on the queues i with i mod engines ==
 * its index and runs the core's lane of that index (core.h), whose QPs'
 * frames leave on those queues.
 */
struct xr_engine {
	struct xr_device *dev;
	uint32_t index;
	pthread_t thread;
	bool running;
	int wake_fd;		/* eventfd: its lane was given work while it slept */
	int sleeping;		/* atomic: it is (about to be) blocked in poll */
} __attribute__((aligned(64))); /* sleeping is read by every thread that posts */

struct xr_device {
	char ifname[16];
	struct xr_netdev_info netdev;
	struct xr_core core;
	pthread_mutex_t lock;

	int lock_fd; /* device_lock.h: held from before anything shared is touched */
	struct xr_xdp_handle xdp;
	bool attached_by_us;
	/* The AF_XDP port of the owner; NULL in a guest, whose frames go through the owner. */
	struct xr_xsk_port *port;
	/* The longest frame the owner's AF_XDP sockets carry: it bounds the path MTU. */
	uint32_t max_frame;
	struct xr_loopback loopback; /* frames to ourselves, for the next engine round */
	/* Sharing the device with other processes (share.h): one of them, or neither. */
	struct xr_share_owner *share_owner; /* we own it: guests connect to us */
	struct xr_share_guest *share_guest; /* another process owns it */
	/* Per group of core.mcast: the socket holding the interface's membership, or -1. */
	int mcast_fd[XR_MAX_MCAST_GROUPS];

	int async_fd;		    /* eventfd, semaphore: asynchronous events queued (async.c) */
	uint32_t events_signaled;   /* core.events_head when async_fd was last counted up */
	struct mnl_socket *monitor; /* link and address notifications (port_monitor.c) */
	bool port_active;	    /* the interface is up with carrier, as last seen */
	int stop;		    /* atomic */
	uint64_t busy_poll_ns; /* the engine spins this long after its last work before sleeping */
	/* ... and at least this long while an operation is outstanding (UINT64_MAX: until it is
	 * done) */
	uint64_t spin_in_flight_ns;
	/*
	 * While an application drives the engine, the engine thread looks in
	 * on it after XR_APP_POLL_GRACE_NS, then after twice as long each time
	 * it finds the application still polling, up to this long: every look
	 * takes a core from a spinning thread, and an application that polled
	 * for long will likely go on.
	 */
	uint64_t standby_max_ns;
	/*
	 * ACK coalescing (engine.c): plain ACKs go into the TX ring after the
	 * round's other frames, and while the application drives the engine a
	 * round that made nothing but ACKs holds them back for up to
	 * ack_hold_ns, so that the frame the application sends in answer leaves
	 * first and takes them along in its system call. Under the lock: when
	 * the first held ACK was made (0: none), core.tx_urgent as of the last
	 * round that held nothing, whether ACKs left alone since, and whether
	 * holding them pays (the application answers).
	 */
	uint64_t ack_hold_ns;
	uint64_t ack_held_since;
	uint64_t tx_urgent_seen;
	bool ack_sent_alone;
	bool ack_hold_pays;
	/* The engine's syscall and sleep counters (atomic: any thread counts), published by each
	 * round. */
	uint64_t syscalls, sleeps, sleeps_in_flight, standby_looks;
	uint64_t stats_due_ns; /* under the lock: when idle rounds publish the counters again */
	/*
	 * Until this time (atomic, ns) an application thread is spinning in
	 * xr_poll_cq and doing engine rounds itself: the engine thread keeps
	 * off the sockets meanwhile instead of fighting it for the lock.
	 */
	uint64_t app_poll_until;
	struct xr_engine engines[XR_MAX_ENGINES];
	uint32_t nengines; /* engine threads: core.nlanes */
	/*
	 * Channels owed eventfd writes for events the core reported (under
	 * the lock): xr_unlock_and_notify writes them once the lock is released.
	 */
	struct xr_channel_impl *events_owed;
	struct xr_device *next_open; /* the process's open devices (device.c) */
};

uint64_t xr_now_ns(void);
/* The device this process has open on ifname, NULL if none. */
struct xr_device *xr_device_find_open(const char *ifname);
/*
 * How many engine threads a device with rx_queues sockets runs:
 * XROCE_ENGINES if set, else one per queue up to the CPUs this process may
 * run on; at most XR_MAX_ENGINES and rx_queues.
 */
uint32_t xr_engine_count(uint32_t rx_queues);
int xr_engine_start(struct xr_device *dev);
void xr_engine_stop(struct xr_device *dev);
/*
 * One receive/transport round of engine lane's queues and QPs, or of all
 * (XR_ENGINE_ALL: an application thread that drives the engine), at time
 * now (the caller's clock read, so that a spinning thread reads the clock
 * once per round), with dev->lock held; true if it did work. The frames it
 * built wait in the TX ring for the kick that xr_unlock_and_notify makes
 * once the lock is released.
 */
bool xr_engine_round_locked(struct xr_device *dev, uint32_t lane, uint64_t now, uint64_t *deadline);
#define XR_ENGINE_ALL UINT32_MAX
/* Without the lock: has the kernel send what rounds put in the TX ring. */
void xr_engine_transmit(struct xr_device *dev);
/*
 * Sends the ACKs a round holds back (ack_hold_ns) now, when the process
 * closes the device or exits: the peer waits for them. Takes the lock.
 */
void xr_engine_release_acks(struct xr_device *dev);
/* Counts n system calls made for the data path (any thread). */
static inline void xr_count_syscalls(struct xr_device *dev, uint64_t n)
{
	__atomic_fetch_add(&dev->syscalls, n, __ATOMIC_RELAXED);
}
/* How long a poll_cq call keeps the engine thread off the sockets. */
#define XR_APP_POLL_GRACE_NS 200000ull

/* port_monitor.c: the engine polls the monitor's fd and calls poll when readable. */
struct mnl_socket;
int xr_port_monitor_open(struct xr_device *dev);
void xr_port_monitor_close(struct xr_device *dev);
int xr_port_monitor_fd(const struct xr_device *dev);
void xr_port_monitor_poll(struct xr_device *dev);

/* async.c */
int xr_async_open(struct xr_device *dev);
void xr_async_close(struct xr_device *dev);
/*
 * For xr_unlock_and_notify: under dev->lock, the events raised since last
 * asked (xr_async_signal adds them to the async fd after the unlock).
 */
uint64_t xr_async_raised_locked(struct xr_device *dev);
void xr_async_signal(struct xr_device *dev, uint64_t raised);

/* Called after posting work: wakes the engines given work if they sleep. */
void xr_engine_kick(struct xr_device *dev);
/* The same, for a caller that knows the application does not drive the engine. */
void xr_engine_wake(struct xr_device *dev);
/* Every engine that sleeps or stands by: the application stopped driving them. */
void xr_engine_wake_all(struct xr_device *dev);

/* ---- channel.c ---- */
/*
 * The core port's cq_event (ctx: the device), under dev->lock: queues cq's
 * event on its channel and owes the channel's eventfd a write, which
 * xr_unlock_and_notify makes.
 */
void xr_channel_cq_event(void *ctx, struct xr_cq *cq);
/*
 * Releases dev->lock, then kicks the transmission of the frames the core
 * built meanwhile, writes the eventfds of the channels it fired events on
 * and counts the asynchronous events it raised into the async fd: no
 * system call is made under the lock, no consumer is woken only to wait
 * for it. Every critical section in which the core may send or complete
 * work ends with this instead of pthread_mutex_unlock.
 */
void xr_unlock_and_notify(struct xr_device *dev);
/* Removes the events of cq (being destroyed) that nobody took from the channel's queue. */
void xr_channel_forget(struct xr_comp_channel *channel, struct xr_cq_impl *cq);

#endif /* XROCE_DEVICE_H */
