/* SPDX-License-Identifier: MIT */
/*
 * Processes sharing one device. The first process to open an interface's
 * device owns it (device_lock.h): the XDP program's maps and the AF_XDP
 * queues. A process opening it after that becomes a guest of the owner. It
 * runs a core of its own (its QPs, memory, completions), claims its QPs'
 * slots in the shared qp_table under a holder number the owner gave it, and
 * exchanges its frames with the owner over a Unix seqpacket socket, one
 * frame per message. The owner transmits what a guest sends, and hands each
 * guest the frames for the QPs it holds, whether they came from the wire or
 * from a process on this device: QPs of two processes connected to each
 * other loop back inside the owner and never reach the wire.
 *
 * The socket's name is abstract, so it belongs to the network namespace, as
 * the interface does. When the owner closes the device or exits, its guests
 * lose it as a NIC that failed: DEVICE_FATAL, and their QPs move to ERR
 * with their work flushed.
 */
#ifndef XROCE_SHARE_H
#define XROCE_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

struct pollfd;
struct xr_core_port;
struct xr_device;

/* Guests an owner serves at once; holders are 1..XR_SHARE_MAX_GUESTS. */
#define XR_SHARE_MAX_GUESTS 15
/* The largest frame: a multi-buffer AF_XDP port's (xsk_port.h). */
#define XR_SHARE_FRAME_CAP 8192u

/* The owner's first message on a guest's connection; frames follow. */
struct xr_share_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t holder; /* the guest's number in qp_table entries; 0: refused */
};

#define XR_SHARE_MAGIC 0x78726f63u /* "xroc" */
#define XR_SHARE_VERSION 1

/* The owner's listening address for ifname; 0 or -ENAMETOOLONG. */
int xr_share_address(const char *ifname, struct sockaddr_un *addr, socklen_t *len);

/* ---- share_owner.c: the owner's side, all under dev->lock but open/close ---- */
/* Listens for guests; an exiting owner's name is waited for until deadline_ns. */
int xr_share_owner_open(struct xr_device *dev, uint64_t deadline_ns);
/* Hangs up on every guest: they see the device fail. */
void xr_share_owner_close(struct xr_device *dev);
/*
 * The owner core's rx_foreign (ctx: the device): a frame for a QP that a
 * guest holds goes to that guest, from the wire, the owner or a guest.
 */
bool xr_share_owner_rx_foreign(void *ctx, const uint8_t *frame, uint32_t len, uint32_t dqpn);
/* Takes in new guests and the frames guests sent; returns how many frames. */
unsigned xr_share_owner_poll(struct xr_device *dev, uint64_t now);
/* The fds the engine sleeps on for guests; returns how many it wrote (<= max). */
int xr_share_owner_pollfds(const struct xr_device *dev, struct pollfd *pfd, int max);
/* Without the lock, after poll() on the fds pollfds wrote: a guest knocking is let in by the next
 * poll. */
void xr_share_owner_polled(struct xr_device *dev, const struct pollfd *pfd);

/* ---- share_guest.c: a guest's side ---- */
/*
 * Joins the owner, waiting for its answer until deadline_ns: 0; -EAGAIN
 * when no owner listens (starting, or gone: try its lock again); -EBUSY when
 * it refuses us or does not answer; another -errno. Leaves nothing behind
 * on failure.
 */
int xr_share_guest_open(struct xr_device *dev, uint64_t deadline_ns);
void xr_share_guest_close(struct xr_device *dev);
/* The core's port of a guest: frames go to the owner. */
void xr_share_guest_port(struct xr_device *dev, struct xr_core_port *port);
/* Under dev->lock: feeds the core what the owner forwarded; returns how many frames. */
unsigned xr_share_guest_rx(struct xr_device *dev, uint64_t now);
/* The fd the engine sleeps on, -1 once the owner is gone. */
int xr_share_guest_fd(const struct xr_device *dev);
uint16_t xr_share_guest_holder(const struct xr_device *dev);

#endif /* XROCE_SHARE_H */
