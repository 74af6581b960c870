// SPDX-License-Identifier: MIT
/*
 * The AF_XDP port. One UMEM of 4 KiB frames is shared by one socket per rx
 * queue. Each queue owns a fixed set of rx frames that cycle between its fill
 * ring, its rx ring and the engine; the remaining frames form a stack of tx
 * buffers, which any queue's socket sends and its completion ring returns.
 * Every queue that has a tx queue of the same id transmits: a frame goes out
 * on the queue its sender names (the one its connection's traffic arrives
 * on), in the order submitted there. The open path allocates; nothing after
 * it does.
 *
 * A multi-buffer port (XDP_USE_SG) carries frames longer than a chunk as
 * chains of descriptors (xsk_frames.h): its tx buffers are two adjacent
 * chunks, so a frame is built in one run and sent as two descriptors, and a
 * received chain is joined where it lies or, when its chunks are not
 * adjacent, copied into a gather buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <xdp/xsk.h>

#include "xroce/xdp_shared.h"
#include "xsk_frames.h"
#include "xsk_port.h"

#define XR_FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
#define XR_RING_SIZE 2048u
#define XR_DEFAULT_FRAME_COUNT 8192u
/* Frames a copy-mode sendto() transmits at most (the kernel's TX_BATCH_SIZE). */
#define XR_COPY_TX_BATCH 32u
/* Pause between binds while a queue is still bound to a socket being released. */
#define XR_BUSY_RETRY_NS 5000000L
_Static_assert(XR_XSK_SINGLE_BUFFER_FRAME == XR_FRAME_SIZE - 256,
	       "a received frame starts XDP_PACKET_HEADROOM into its chunk");
/* A multi-buffer port's longest frame, each way: any RoCE frame at path MTU 4096 fits. */
#define XR_MULTI_BUFFER_FRAME (2 * XR_FRAME_SIZE)
/* Chains one rx call can copy into gather buffers (the engine's batch). */
#define XR_GATHER_SLOTS 64u

struct xr_xsk_queue {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_prod tx; /* queues below port->tx_queues only */
	uint32_t queue_id;
	bool in_xsk_map;
	/* Descriptors peeked by xr_xsk_port_rx and not yet handed back: they
	 * start at rx_held_idx and are released, in order, by rx_release. */
	uint32_t rx_held;
	uint32_t rx_held_idx;
	/* Submitted, not yet in the tx ring, oldest first: descriptors, each chain whole. */
	struct xdp_desc *tx_pending;
	uint32_t tx_pending_count;
	/* Submitted late: they enter the ring after tx_pending, and not while held. */
	struct xdp_desc *tx_late;
	uint32_t tx_late_count;
	int tx_stalled; /* atomic: the last kick left frames the device did not take */
	/* Atomics: one thread kicks a queue at a time (two would spin on the socket's
	 * mutex in the kernel); one that finds it taken asks the kicker to look again. */
	int tx_kicking, tx_kick_wanted;
	/* Atomic: the TX ring's producer index as of the last kick. A round with
	 * nothing new to send stops there, before the consumer index, which the
	 * kernel writes on another CPU (the two are on separate cache lines). */
	uint32_t tx_kicked;
} __attribute__((aligned(64))); /* the kick state of queues kicked by different threads */

struct xr_xsk_port {
	uint8_t *umem_area;
	size_t umem_size;
	struct xsk_umem *umem;
	int xsk_map_fd;
	bool need_wakeup;	/* XDP_USE_NEED_WAKEUP accepted: ring flags are meaningful */
	bool multi_buffer;	/* bound with XDP_USE_SG */
	int multi_buffer_error; /* why the kernel refused XDP_USE_SG, when it was asked for */
	uint64_t rx_too_long;	/* chains dropped for being longer than max_frame */
	/* Chains that could not be joined in place this rx call, XR_MULTI_BUFFER_FRAME each. */
	uint8_t *gather;
	uint32_t gather_used;

	uint64_t tx_base;     /* UMEM address of the first tx buffer */
	uint32_t tx_buf_size; /* one chunk, or two adjacent ones on a multi-buffer port */
	uint64_t *tx_free;    /* stack of free tx buffer addresses */
	uint32_t tx_free_count;
	bool tx_late_held;
	uint32_t tx_kick_rounds;
	uint32_t tx_frames; /* the transmit pool: buffers tx_alloc can hand out */

	/* Per first queue of an rx call: where its next scan starts, for fairness. */
	uint32_t rx_next_queue[XR_MAX_QUEUES];
	uint32_t nqueues;   /* one socket per rx queue */
	uint32_t tx_queues; /* the first this many sockets transmit */
	struct xr_xsk_queue queues[];
};

static uint32_t clamp_queues(uint32_t count)
{
	if (count == 0)
		return 1;
	return count < XR_MAX_QUEUES ? count : XR_MAX_QUEUES;
}

/*
 * The interface's rx queues (combined channels plus rx-only ones) and, of
 * those, how many have a tx queue of the same id: combined channels plus
 * tx-only ones. One each when the driver cannot say.
 */
static void queue_counts(const char ifname[IFNAMSIZ], uint32_t *rx, uint32_t *tx)
{
	struct ethtool_channels channels = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr = {0};
	int fd;

	*rx = *tx = 1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	memcpy(ifr.ifr_name, ifname, IFNAMSIZ);
	ifr.ifr_data = (void *)&channels;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
		*rx = clamp_queues(channels.combined_count + channels.rx_count);
		*tx = clamp_queues(channels.combined_count + channels.tx_count);
		if (*tx > *rx)
			*tx = *rx;
	}
	close(fd);
}

/*
 * libxdp maps the UMEM's fill and completion rings at xsk_umem__create but
 * only unmaps them when the first socket using them is deleted; without such
 * a socket the mappings would keep the UMEM registered and its pages pinned.
 */
static void unmap_unused_umem_rings(struct xr_xsk_port *port)
{
	struct xr_xsk_queue *q = &port->queues[0];
	struct xdp_mmap_offsets off;
	socklen_t optlen = sizeof(off);

	if (getsockopt(xsk_umem__fd(port->umem), SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen))
		return;
	munmap((uint8_t *)q->fill.ring - off.fr.desc, off.fr.desc + q->fill.size * sizeof(__u64));
	munmap((uint8_t *)q->comp.ring - off.cr.desc, off.cr.desc + q->comp.size * sizeof(__u64));
}

/*
 * Deletes the sockets and the UMEM registration, leaving the memory and the
 * frame lists. libxdp unmaps the UMEM rings with queue 0's socket, if it exists.
 */
static void destroy_xsks(struct xr_xsk_port *port)
{
	bool socket_owns_umem_rings = port->queues[0].xsk != NULL;
	uint32_t i;

	for (i = 0; i < port->nqueues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		if (q->in_xsk_map)
			bpf_map_delete_elem(port->xsk_map_fd, &q->queue_id);
		q->in_xsk_map = false;
		xsk_socket__delete(q->xsk);
		q->xsk = NULL;
	}
	if (port->umem) {
		if (!socket_owns_umem_rings)
			unmap_unused_umem_rings(port);
		xsk_umem__delete(port->umem);
		port->umem = NULL;
	}
}

void xr_xsk_port_close(struct xr_xsk_port *port)
{
	if (!port)
		return;
	destroy_xsks(port);
	if (port->umem_area)
		munmap(port->umem_area, port->umem_size);
	if (port->xsk_map_fd >= 0)
		close(port->xsk_map_fd);
	free(port->tx_free);
	for (uint32_t i = 0; i < port->nqueues; i++) {
		free(port->queues[i].tx_pending);
		free(port->queues[i].tx_late);
	}
	free(port->gather);
	free(port);
}

static int create_socket(struct xr_xsk_port *port, const char *ifname, struct xr_xsk_queue *q,
			 uint16_t bind_flags)
{
	struct xsk_socket_config cfg = {
	    .rx_size = XR_RING_SIZE,
	    .tx_size = XR_RING_SIZE,
	    .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	    .bind_flags = bind_flags,
	};
	bool transmits = q->queue_id < port->tx_queues;

	return xsk_socket__create_shared(&q->xsk, ifname, q->queue_id, port->umem, &q->rx,
					 transmits ? &q->tx : NULL, &q->fill, &q->comp, &cfg);
}

/*
 * Queue 0's socket owns the UMEM registration and decides the bind flags:
 * the kernel gives the other sockets sharing the UMEM the same.
 */
static int create_xsks(struct xr_xsk_port *port, const char *ifname, uint16_t bind_flags)
{
	struct xsk_umem_config umem_cfg = {
	    .fill_size = XR_RING_SIZE,
	    .comp_size = XR_RING_SIZE,
	    .frame_size = XR_FRAME_SIZE,
	    .frame_headroom = XSK_UMEM__DEFAULT_FRAME_HEADROOM,
	};
	uint32_t i;
	int err;

	err = xsk_umem__create(&port->umem, port->umem_area, port->umem_size, &port->queues[0].fill,
			       &port->queues[0].comp, &umem_cfg);
	if (err) {
		port->umem = NULL;
		return err;
	}
	err = create_socket(port, ifname, &port->queues[0], bind_flags);
	for (i = 1; !err && i < port->nqueues; i++)
		err = create_socket(port, ifname, &port->queues[i], 0);
	return err;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Creates the sockets with need_wakeup if the kernel takes it, else without.
 * A queue still bound to a closed socket stays busy (EBUSY) until the kernel
 * has finished releasing that socket, which it does asynchronously: bind
 * again until busy_wait_ms have passed. A failed bind leaves libxdp's UMEM
 * half set up, so every attempt starts from scratch.
 */
static int bind_sockets(struct xr_xsk_port *port, const char *ifname, uint16_t bind_flags,
			uint32_t busy_wait_ms)
{
	const struct timespec pause = {.tv_nsec = XR_BUSY_RETRY_NS};
	uint64_t deadline = now_ms() + busy_wait_ms;
	int err;

	for (;;) {
		err = create_xsks(port, ifname, bind_flags | XDP_USE_NEED_WAKEUP);
		port->need_wakeup = err == 0;
		if (err && err != -EBUSY) {
			destroy_xsks(port);
			err = create_xsks(port, ifname, bind_flags);
		}
		if (err != -EBUSY || now_ms() >= deadline)
			return err;
		destroy_xsks(port);
		nanosleep(&pause, NULL);
	}
}

static int register_sockets(struct xr_xsk_port *port)
{
	uint32_t i;
	int err;

	for (i = 0; i < port->nqueues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		err = xsk_socket__update_xskmap(q->xsk, port->xsk_map_fd);
		if (err)
			return err < 0 ? err : -errno;
		q->in_xsk_map = true;
	}
	return 0;
}

/* Gives each queue rx_frames frames on its fill ring and stacks the rest as tx buffers. */
static int distribute_frames(struct xr_xsk_port *port, uint32_t rx_frames)
{
	uint64_t next = 0;
	uint32_t i, j, idx;

	for (i = 0; i < port->nqueues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		if (xsk_ring_prod__reserve(&q->fill, rx_frames, &idx) != rx_frames)
			return -ENOSPC;
		for (j = 0; j < rx_frames; j++, next += XR_FRAME_SIZE)
			*xsk_ring_prod__fill_addr(&q->fill, idx + j) = next;
		xsk_ring_prod__submit(&q->fill, rx_frames);
	}
	port->tx_base = next;
	for (i = 0; i < port->tx_frames; i++, next += port->tx_buf_size)
		port->tx_free[port->tx_free_count++] = next;
	return 0;
}

/*
 * Binds with XDP_USE_SG when asked to, and without it when the kernel
 * refuses (older than 6.6, or a zero-copy driver without multi-buffer
 * support), remembering why.
 */
static int bind_port(struct xr_xsk_port *port, const char *ifname,
		     const struct xr_xsk_port_config *cfg)
{
	int err;

	if (cfg->multi_buffer) {
		err = bind_sockets(port, ifname, cfg->bind_flags | XDP_USE_SG, cfg->busy_wait_ms);
		port->multi_buffer = err == 0;
		if (err == 0 || err == -EBUSY)
			return err;
		port->multi_buffer_error = err;
		destroy_xsks(port);
	}
	return bind_sockets(port, ifname, cfg->bind_flags, cfg->busy_wait_ms);
}

/* The tx buffers' bookkeeping, once the bind has said how large they are. */
static int alloc_tx_lists(struct xr_xsk_port *port, uint32_t tx_chunks)
{
	uint32_t descs_per_buf;

	port->tx_buf_size = port->multi_buffer ? XR_MULTI_BUFFER_FRAME : XR_FRAME_SIZE;
	descs_per_buf = port->tx_buf_size / XR_FRAME_SIZE;
	port->tx_frames = tx_chunks / descs_per_buf;
	if (port->tx_frames == 0)
		return -EINVAL;
	/* Copy mode sends a batch of descriptors per call. */
	port->tx_kick_rounds = port->tx_frames * descs_per_buf / XR_COPY_TX_BATCH + 2;
	port->tx_free = calloc(port->tx_frames, sizeof(*port->tx_free));
	if (port->multi_buffer)
		port->gather = malloc(XR_GATHER_SLOTS * XR_MULTI_BUFFER_FRAME);
	if (!port->tx_free || (port->multi_buffer && !port->gather))
		return -ENOMEM;
	/* Each transmitting queue may have every tx buffer submitted to it. */
	for (uint32_t i = 0; i < port->tx_queues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];
		size_t descs = (size_t)port->tx_frames * descs_per_buf;

		q->tx_pending = calloc(descs, sizeof(*q->tx_pending));
		q->tx_late = calloc(descs, sizeof(*q->tx_late));
		if (!q->tx_pending || !q->tx_late)
			return -ENOMEM;
	}
	return 0;
}

int xr_xsk_port_open(const struct xr_xsk_port_config *cfg, struct xr_xsk_port **out)
{
	uint32_t frame_count = cfg->frame_count ? cfg->frame_count : XR_DEFAULT_FRAME_COUNT;
	uint32_t nqueues, tx_queues, rx_frames, i;
	char ifname[IFNAMSIZ];
	struct xr_xsk_port *port;
	int err;

	*out = NULL;
	if (!if_indextoname(cfg->ifindex, ifname))
		return -ENODEV;
	queue_counts(ifname, &nqueues, &tx_queues);
	/* Half the frames for rx, at most what a fill ring holds, so that
	 * returning a queue's frames to its fill ring can never fail. */
	rx_frames = frame_count / 2 / nqueues;
	if (rx_frames > XR_RING_SIZE)
		rx_frames = XR_RING_SIZE;
	if (rx_frames == 0)
		return -EINVAL;

	/* Aligned for the queues' kick state (each on cache lines of its own). */
	if (posix_memalign((void **)&port, _Alignof(struct xr_xsk_port),
			   sizeof(*port) + nqueues * sizeof(port->queues[0])))
		return -ENOMEM;
	memset(port, 0, sizeof(*port) + nqueues * sizeof(port->queues[0]));
	port->nqueues = nqueues;
	port->tx_queues = tx_queues;
	port->xsk_map_fd = -1;
	for (i = 0; i < nqueues; i++)
		port->queues[i].queue_id = i;
	port->xsk_map_fd = fcntl(cfg->xsk_map_fd, F_DUPFD_CLOEXEC, 0);
	if (port->xsk_map_fd < 0) {
		err = -errno;
		goto fail;
	}

	port->umem_size = (size_t)frame_count * XR_FRAME_SIZE;
	port->umem_area = mmap(NULL, port->umem_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (port->umem_area == MAP_FAILED) {
		port->umem_area = NULL;
		err = -errno;
		goto fail;
	}
	err = bind_port(port, ifname, cfg);
	if (err)
		goto fail;
	err = alloc_tx_lists(port, frame_count - rx_frames * nqueues);
	if (err)
		goto fail;
	err = distribute_frames(port, rx_frames);
	if (err)
		goto fail;
	err = register_sockets(port);
	if (err)
		goto fail;
	*out = port;
	return 0;

fail:
	xr_xsk_port_close(port);
	return err;
}

bool xr_xsk_port_multi_buffer(const struct xr_xsk_port *port)
{
	return port->multi_buffer;
}

int xr_xsk_port_multi_buffer_error(const struct xr_xsk_port *port)
{
	return port->multi_buffer_error;
}

uint32_t xr_xsk_port_max_frame(const struct xr_xsk_port *port)
{
	return port->multi_buffer ? XR_MULTI_BUFFER_FRAME : XR_XSK_SINGLE_BUFFER_FRAME;
}

uint64_t xr_xsk_port_rx_too_long(const struct xr_xsk_port *port)
{
	return port->rx_too_long;
}

uint32_t xr_xsk_port_tx_queues(const struct xr_xsk_port *port)
{
	return port->tx_queues;
}

int xr_xsk_port_nfds(const struct xr_xsk_port *port)
{
	return (int)port->nqueues;
}

int xr_xsk_port_fd(const struct xr_xsk_port *port, int i)
{
	if (i < 0 || (uint32_t)i >= port->nqueues)
		return -EINVAL;
	return xsk_socket__fd(port->queues[i].xsk);
}

/*
 * The frame of chain as one run of bytes: where it lies, or in a gather
 * buffer. NULL when no gather buffer is left this call.
 */
static uint8_t *join_chain(struct xr_xsk_port *port, struct xr_xsk_queue *q, uint32_t idx,
			   struct xr_xsk_chain chain)
{
	uint8_t *scratch = NULL, *data;

	/* Offered, and taken only if the join copies: it alone decides where. */
	if (port->gather && port->gather_used < XR_GATHER_SLOTS)
		scratch = port->gather + (size_t)port->gather_used * XR_MULTI_BUFFER_FRAME;
	data = xr_xsk_rx_join(&q->rx, idx, chain, port->umem_area, XR_FRAME_SIZE, scratch);
	if (data && data == scratch)
		port->gather_used++;
	return data;
}

/*
 * Takes up to max frames from q's rx ring into frames; returns how many. A
 * chain cut short by the peek, or with no gather buffer left, stays in the
 * ring for the next call.
 */
static unsigned rx_queue(struct xr_xsk_port *port, struct xr_xsk_queue *q,
			 struct xr_rx_frame *frames, unsigned max)
{
	/* Room for a whole chain behind the max-th frame's first descriptor. */
	uint32_t want = max + (port->multi_buffer ? XR_XSK_MAX_CHAIN - 1 : 0);
	uint32_t n, idx, used = 0;
	unsigned got = 0;

	n = xsk_ring_cons__peek(&q->rx, want, &idx);
	while (used < n && got < max) {
		struct xr_xsk_chain chain = xr_xsk_rx_chain(&q->rx, idx + used, n - used);
		uint8_t *data;

		if (chain.descs == 0)
			break;
		/* A single-buffer socket never gets a chain: one would be the kernel's mistake. */
		if (chain.len > xr_xsk_port_max_frame(port) ||
		    (chain.descs > 1 && !port->multi_buffer)) {
			port->rx_too_long++;
			used += chain.descs;
			continue;
		}
		data = join_chain(port, q, idx + used, chain);
		if (!data)
			break;
		frames[got++] =
		    (struct xr_rx_frame){.data = data, .len = chain.len, .queue = q->queue_id};
		used += chain.descs;
	}
	/* What was peeked and not taken is peeked again next time. */
	q->rx.cached_cons -= n - used;
	if (used) {
		if (q->rx_held == 0)
			q->rx_held_idx = idx;
		q->rx_held += used;
	}
	return got;
}

unsigned xr_xsk_port_rx_some(struct xr_xsk_port *port, uint32_t first, uint32_t stride,
			     struct xr_rx_frame *frames, unsigned max)
{
	uint32_t *next, queues;
	unsigned got = 0;

	if (first >= port->nqueues || !stride)
		return 0;
	next = &port->rx_next_queue[first];
	queues = (port->nqueues - first + stride - 1) / stride;
	/* Calls of another stride (an application thread's, over all queues) share the cursor. */
	if (*next >= queues)
		*next = 0;
	for (uint32_t scanned = 0; scanned < queues && got < max; scanned++) {
		struct xr_xsk_queue *q = &port->queues[first + *next * stride];

		if (++*next >= queues)
			*next = 0;
		got += rx_queue(port, q, frames + got, max - got);
	}
	return got;
}

unsigned xr_xsk_port_rx(struct xr_xsk_port *port, struct xr_rx_frame *frames, unsigned max)
{
	return xr_xsk_port_rx_some(port, 0, 1, frames, max);
}

void xr_xsk_port_rx_release(struct xr_xsk_port *port)
{
	uint32_t i, j, idx;

	for (i = 0; i < port->nqueues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		if (q->rx_held == 0)
			continue;
		/* Cannot fail (a queue owns no more frames than its fill ring
		 * holds); if it did, holding the frames beats losing them. */
		if (xsk_ring_prod__reserve(&q->fill, q->rx_held, &idx) != q->rx_held)
			continue;
		for (j = 0; j < q->rx_held; j++) {
			uint64_t addr = xsk_ring_cons__rx_desc(&q->rx, q->rx_held_idx + j)->addr;

			*xsk_ring_prod__fill_addr(&q->fill, idx + j) =
			    addr & ~(uint64_t)(XR_FRAME_SIZE - 1);
		}
		xsk_ring_prod__submit(&q->fill, q->rx_held);
		xsk_ring_cons__release(&q->rx, q->rx_held);
		q->rx_held = 0;
	}
	port->gather_used = 0;
}

static void reclaim_completions(struct xr_xsk_port *port)
{
	for (uint32_t i = 0; i < port->tx_queues; i++) {
		struct xsk_ring_cons *comp = &port->queues[i].comp;
		uint32_t n, idx, j;

		n = xsk_ring_cons__peek(comp, comp->size, &idx);
		for (j = 0; j < n; j++) {
			uint64_t addr = *xsk_ring_cons__comp_addr(comp, idx + j);

			/* A chain completes once per descriptor; its buffer is freed by the first.
			 */
			if (((addr - port->tx_base) & (port->tx_buf_size - 1)) == 0)
				port->tx_free[port->tx_free_count++] = addr;
		}
		xsk_ring_cons__release(comp, n);
	}
}

uint8_t *xr_xsk_port_tx_alloc(struct xr_xsk_port *port, uint32_t *cap)
{
	if (port->tx_free_count == 0)
		reclaim_completions(port);
	if (port->tx_free_count == 0)
		return NULL;
	*cap = port->tx_buf_size;
	return port->umem_area + port->tx_free[--port->tx_free_count];
}

uint32_t xr_xsk_port_tx_frames(const struct xr_xsk_port *port)
{
	return port->tx_frames;
}

void xr_xsk_port_tx_abort(struct xr_xsk_port *port, uint8_t *buf)
{
	port->tx_free[port->tx_free_count++] = (uint64_t)(buf - port->umem_area);
}

/* The queue a frame for queue goes out on: that one if it transmits, else queue 0. */
static struct xr_xsk_queue *tx_queue_of(struct xr_xsk_port *port, uint32_t queue)
{
	return &port->queues[queue < port->tx_queues ? queue : 0];
}

/*
 * Appends buf's descriptors to a list, or gives buf back if the kernel
 * would not take them: it drops an oversized descriptor without completing
 * it, which would leak the buffer.
 */
static void tx_list_append(struct xr_xsk_port *port, uint8_t *buf, uint32_t len,
			   struct xdp_desc *list, uint32_t *count)
{
	if (len == 0 || len > port->tx_buf_size) {
		xr_xsk_port_tx_abort(port, buf);
		return;
	}
	*count +=
	    xr_xsk_tx_chain((uint64_t)(buf - port->umem_area), len, XR_FRAME_SIZE, list + *count);
}

void xr_xsk_port_tx_submit(struct xr_xsk_port *port, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct xr_xsk_queue *q = tx_queue_of(port, queue);

	tx_list_append(port, buf, len, q->tx_pending, &q->tx_pending_count);
}

void xr_xsk_port_tx_submit_late(struct xr_xsk_port *port, uint32_t queue, uint8_t *buf,
				uint32_t len)
{
	struct xr_xsk_queue *q = tx_queue_of(port, queue);

	tx_list_append(port, buf, len, q->tx_late, &q->tx_late_count);
}

void xr_xsk_port_tx_hold_late(struct xr_xsk_port *port, bool hold)
{
	port->tx_late_held = hold;
}

uint32_t xr_xsk_port_tx_late_count(const struct xr_xsk_port *port)
{
	uint32_t count = 0;

	for (uint32_t i = 0; i < port->tx_queues; i++)
		count += port->queues[i].tx_late_count;
	return count;
}

/*
 * Moves as many of the *count descriptors of list as fit into q's tx ring,
 * whole chains only, keeping the rest in order; true when they all went.
 */
static bool publish_list(struct xr_xsk_queue *q, struct xdp_desc *list, uint32_t *count)
{
	uint32_t n = *count, space, idx, j;

	if (n == 0)
		return true;
	space = xsk_prod_nb_free(&q->tx, n);
	if (n > space)
		n = xr_xsk_whole_frames(list, space);
	if (n == 0 || xsk_ring_prod__reserve(&q->tx, n, &idx) != n)
		return false;
	for (j = 0; j < n; j++)
		*xsk_ring_prod__tx_desc(&q->tx, idx + j) = list[j];
	xsk_ring_prod__submit(&q->tx, n);
	*count -= n;
	memmove(list, list + n, *count * sizeof(list[0]));
	return *count == 0;
}

void xr_xsk_port_tx_publish(struct xr_xsk_port *port)
{
	for (uint32_t i = 0; i < port->tx_queues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		if (publish_list(q, q->tx_pending, &q->tx_pending_count) && !port->tx_late_held)
			publish_list(q, q->tx_late, &q->tx_late_count);
	}
	reclaim_completions(port);
}

/* Kicks until q's ring is drained or the device stops taking frames; returns the calls made. */
static unsigned drain_tx_ring(struct xr_xsk_port *port, struct xr_xsk_queue *q)
{
	int fd = xsk_socket__fd(q->xsk);
	unsigned calls = 0;
	bool stalled = false;

	/* In copy mode each call sends a small batch: call until the ring is
	 * drained, or the device stops taking frames (they stay in the ring for
	 * the next kick), or the kernel transmits by itself (no wakeup needed). */
	for (uint32_t round = 0; round < port->tx_kick_rounds; round++) {
		uint32_t cons = __atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE);

		if (cons == __atomic_load_n(q->tx.producer, __ATOMIC_ACQUIRE))
			break;
		if (port->need_wakeup &&
		    !(__atomic_load_n(q->tx.flags, __ATOMIC_ACQUIRE) & XDP_RING_NEED_WAKEUP))
			break;
		calls++;
		if (sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EBUSY && errno != ENOBUFS)
			break;
		if (__atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE) == cons) {
			stalled = true;
			break;
		}
	}
	__atomic_store_n(&q->tx_stalled, stalled, __ATOMIC_RELAXED);
	return calls;
}

static unsigned kick_queue(struct xr_xsk_port *port, struct xr_xsk_queue *q)
{
	unsigned calls = 0;

	if (__atomic_load_n(q->tx.producer, __ATOMIC_ACQUIRE) ==
		__atomic_load_n(&q->tx_kicked, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&q->tx_stalled, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&q->tx_kick_wanted, 1, __ATOMIC_SEQ_CST);
	/* The kicker looks again when someone asked while it was at it. */
	while (__atomic_load_n(&q->tx_kick_wanted, __ATOMIC_SEQ_CST) &&
	       !__atomic_exchange_n(&q->tx_kicking, 1, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&q->tx_kick_wanted, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&q->tx_kicked, __atomic_load_n(q->tx.producer, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELAXED);
		calls += drain_tx_ring(port, q);
		__atomic_store_n(&q->tx_kicking, 0, __ATOMIC_SEQ_CST);
	}
	return calls;
}

unsigned xr_xsk_port_tx_kick(struct xr_xsk_port *port)
{
	unsigned calls = 0;

	for (uint32_t i = 0; i < port->tx_queues; i++)
		calls += kick_queue(port, &port->queues[i]);
	return calls;
}

bool xr_xsk_port_tx_backlog(struct xr_xsk_port *port)
{
	for (uint32_t i = 0; i < port->tx_queues; i++) {
		struct xr_xsk_queue *q = &port->queues[i];

		if (q->tx_pending_count || (q->tx_late_count && !port->tx_late_held) ||
		    __atomic_load_n(&q->tx_stalled, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}
