/* SPDX-License-Identifier: MIT */
/*
 * The AF_XDP port: one UMEM shared by one AF_XDP socket per rx queue of an
 * interface (libxdp's xsk API), batched rx and tx. Copy or zero-copy mode,
 * whichever the driver offers; nothing here assumes either.
 */
#ifndef XROCE_XSK_PORT_H
#define XROCE_XSK_PORT_H

#include <stdbool.h>
#include <stdint.h>

struct xr_xsk_port;

struct xr_xsk_port_config {
	int ifindex;
	int xsk_map_fd;	      /* XSKMAP of the attached XDP program: slot = rx queue id */
	uint32_t frame_count; /* UMEM frames; 0: 8192 */
	/* How long a queue still bound to another socket (EBUSY) is tried again. */
	uint32_t busy_wait_ms;
	uint16_t bind_flags; /* XDP_COPY for a program in generic mode */
	/*
	 * Ask for multi-buffer sockets (XDP_USE_SG): frames longer than a
	 * UMEM chunk, up to xr_xsk_port_max_frame, each way. When the kernel
	 * refuses, the port opens without them and says why.
	 */
	bool multi_buffer;
};

/* A received frame, in one run of bytes; valid until the next xr_xsk_port_rx_release. */
struct xr_rx_frame {
	uint8_t *data;
	uint32_t len;
	uint32_t queue; /* the rx queue it arrived on */
};

/* Returns 0 or a negative errno. Registers every socket in the XSKMAP. */
int xr_xsk_port_open(const struct xr_xsk_port_config *cfg, struct xr_xsk_port **out);
void xr_xsk_port_close(struct xr_xsk_port *port);

/* Whether the sockets are multi-buffer; if they were asked to be and are not, the kernel's
 * negative errno. */
bool xr_xsk_port_multi_buffer(const struct xr_xsk_port *port);
int xr_xsk_port_multi_buffer_error(const struct xr_xsk_port *port);
/* A single-buffer socket's frames: a 4 KiB chunk behind the kernel's 256 bytes of headroom. */
#define XR_XSK_SINGLE_BUFFER_FRAME 3840u
/* The longest frame the port receives and sends: that, or 8192 multi-buffer. */
uint32_t xr_xsk_port_max_frame(const struct xr_xsk_port *port);
/* Frames received and dropped for being longer than that. */
uint64_t xr_xsk_port_rx_too_long(const struct xr_xsk_port *port);

/*
 * How many queues transmit: those of ids 0 to this minus 1, the rx queues
 * that have a tx queue of the same id. A frame submitted for another goes
 * out on queue 0.
 */
uint32_t xr_xsk_port_tx_queues(const struct xr_xsk_port *port);

/* Number of pollable fds (one per socket) and the i-th one, for poll(). */
int xr_xsk_port_nfds(const struct xr_xsk_port *port);
int xr_xsk_port_fd(const struct xr_xsk_port *port, int i);

/* Receive up to max frames from all queues; returns how many. */
unsigned xr_xsk_port_rx(struct xr_xsk_port *port, struct xr_rx_frame *frames, unsigned max);
/* The same from the queues first, first + stride, first + 2 * stride, ... only. */
unsigned xr_xsk_port_rx_some(struct xr_xsk_port *port, uint32_t first, uint32_t stride,
			     struct xr_rx_frame *frames, unsigned max);
/* Return the frames of the last xr_xsk_port_rx to the fill rings. */
void xr_xsk_port_rx_release(struct xr_xsk_port *port);

/* A tx buffer of *cap bytes, or NULL when every tx frame is in flight. */
uint8_t *xr_xsk_port_tx_alloc(struct xr_xsk_port *port, uint32_t *cap);
/* How many buffers tx_alloc hands out at most (all of them in use at once). */
uint32_t xr_xsk_port_tx_frames(const struct xr_xsk_port *port);
/*
 * Queue buf (from tx_alloc) with len bytes for queue's TX ring, which it
 * enters at the next publish, after what was submitted there before.
 */
void xr_xsk_port_tx_submit(struct xr_xsk_port *port, uint32_t queue, uint8_t *buf, uint32_t len);
/*
 * Queue buf behind everything submitted the other way: at each publish it
 * enters the ring after those frames, and not at all while late frames are
 * held. For frames that no one waits on first (plain ACKs), so that a frame
 * someone does wait on, submitted after them, still leaves before them.
 */
void xr_xsk_port_tx_submit_late(struct xr_xsk_port *port, uint32_t queue, uint8_t *buf,
				uint32_t len);
void xr_xsk_port_tx_hold_late(struct xr_xsk_port *port, bool hold);
/* Descriptors of late frames not in the rings yet, all queues. */
uint32_t xr_xsk_port_tx_late_count(const struct xr_xsk_port *port);
/* Give up a buffer from tx_alloc without sending it. */
void xr_xsk_port_tx_abort(struct xr_xsk_port *port, uint8_t *buf);
/* Moves submitted frames into the TX rings and takes back the frames the kernel sent. */
void xr_xsk_port_tx_publish(struct xr_xsk_port *port);
/*
 * Asks the kernel to send what is in the TX rings, in as many calls as copy
 * mode takes; returns how many system calls that made. Unlike the rest of
 * the port it needs no lock (it reads the ring's indexes and nothing else):
 * callers make the system calls after releasing theirs.
 */
unsigned xr_xsk_port_tx_kick(struct xr_xsk_port *port);
/*
 * Frames not handed to the device yet and not held: submitted but not in the
 * ring, or refused by the last kick.
 */
bool xr_xsk_port_tx_backlog(struct xr_xsk_port *port);

#endif /* XROCE_XSK_PORT_H */
