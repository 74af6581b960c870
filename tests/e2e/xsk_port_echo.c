// SPDX-License-Identifier: MIT
/*
 * xsk_port_echo IFNAME COUNT [FRAMES [HOLD_MS]]: echoes RoCEv2 frames for QP
 * XR_QPN_BASE back where they came from (MACs swapped, on the queue they
 * arrived on) through the AF_XDP port, until COUNT have been received or a
 * time limit passes, with a UMEM of FRAMES frames (0 or absent: the port's).
 * Attaches the xroce XDP program to IFNAME unless it already is, and
 * detaches what it attached. Prints "ready" once frames can arrive, then a
 * summary; exits 0 when exactly COUNT frames were received and echoed.
 *
 * With HOLD_MS, it echoes only once all COUNT frames are in: the first half
 * submitted late, the second half after them the usual way, published and
 * sent with the late ones held; HOLD_MS later it releases the late ones. The
 * second half must come back first, and the first half not within HOLD_MS.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netlink.h"
#include "xdp_attach.h"
#include "xroce/xroce.h"
#include "xsk_port.h"

#define RX_BATCH 64
#define RUN_LIMIT_NS (30 * 1000000000ull)
/* Frames may still wait for the device after the last echo: keep flushing this long. */
#define DRAIN_NS (200 * 1000000ull)
#define ETH_ALEN 6

struct echo_counts {
	unsigned long received;
	unsigned long echoed;
	unsigned long no_tx_buffer;
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Sends what was submitted and reclaims what was sent. */
static void flush(struct xr_xsk_port *port)
{
	xr_xsk_port_tx_publish(port);
	xr_xsk_port_tx_kick(port);
}

/* A tx buffer, flushing to reclaim completed frames while none is free, until the deadline. */
static uint8_t *alloc_tx_buffer(struct xr_xsk_port *port, uint32_t *cap,
				unsigned long long deadline)
{
	uint8_t *buf;

	while (!(buf = xr_xsk_port_tx_alloc(port, cap))) {
		if (now_ns() > deadline)
			return NULL;
		flush(port);
	}
	return buf;
}

static void echo_frame(struct xr_xsk_port *port, const struct xr_rx_frame *frame,
		       struct echo_counts *counts, unsigned long long deadline, bool late)
{
	uint32_t cap;
	uint8_t *buf = alloc_tx_buffer(port, &cap, deadline);

	if (!buf || frame->len > cap || frame->len < 2 * ETH_ALEN) {
		if (buf)
			xr_xsk_port_tx_abort(port, buf);
		counts->no_tx_buffer++;
		return;
	}
	memcpy(buf, frame->data + ETH_ALEN, ETH_ALEN);
	memcpy(buf + ETH_ALEN, frame->data, ETH_ALEN);
	memcpy(buf + 2 * ETH_ALEN, frame->data + 2 * ETH_ALEN, frame->len - 2 * ETH_ALEN);
	if (late)
		xr_xsk_port_tx_submit_late(port, frame->queue, buf, frame->len);
	else
		xr_xsk_port_tx_submit(port, frame->queue, buf, frame->len);
	counts->echoed++;
}

/* Keeps sending for ns: frames may still wait for the device. */
static void flush_for(struct xr_xsk_port *port, unsigned long long ns)
{
	unsigned long long end = now_ns() + ns;

	while (now_ns() < end)
		flush(port);
}

/* Sends for hold_ns, with the late frames held, then everything. */
static void flush_holding_late(struct xr_xsk_port *port, unsigned long long hold_ns)
{
	xr_xsk_port_tx_hold_late(port, true);
	flush_for(port, hold_ns);
	xr_xsk_port_tx_hold_late(port, false);
	flush_for(port, DRAIN_NS);
}

/*
 * Takes all count frames in (the rx ring holds them: count is at most the
 * port's rx frames), then echoes the first half late.
 */
static void run_echo_holding_late(struct xr_xsk_port *port, unsigned long count,
				  unsigned long long hold_ns, struct echo_counts *counts)
{
	struct xr_rx_frame frames[RX_BATCH];
	unsigned long long deadline = now_ns() + RUN_LIMIT_NS;
	unsigned n;

	while (counts->received < count && now_ns() < deadline) {
		n = xr_xsk_port_rx(port, frames + counts->received,
				   (unsigned)(count - counts->received));
		counts->received += n;
	}
	for (unsigned long i = 0; i < counts->received; i++)
		echo_frame(port, &frames[i], counts, deadline, i < count / 2);
	flush_holding_late(port, hold_ns);
	xr_xsk_port_rx_release(port);
}

static void run_echo(struct xr_xsk_port *port, unsigned long count, struct echo_counts *counts)
{
	struct pollfd pfds[XR_MAX_QUEUES];
	struct xr_rx_frame frames[RX_BATCH];
	unsigned long long deadline = now_ns() + RUN_LIMIT_NS;
	int nfds = xr_xsk_port_nfds(port), i;
	unsigned n, j;

	for (i = 0; i < nfds; i++)
		pfds[i] = (struct pollfd){.fd = xr_xsk_port_fd(port, i), .events = POLLIN};
	while (counts->received < count && now_ns() < deadline) {
		n = xr_xsk_port_rx(port, frames, RX_BATCH);
		if (n == 0) {
			flush(port);
			poll(pfds, (nfds_t)nfds, 100);
			continue;
		}
		for (j = 0; j < n; j++)
			echo_frame(port, &frames[j], counts, deadline, false);
		counts->received += n;
		xr_xsk_port_rx_release(port);
		flush(port);
	}
	flush_for(port, DRAIN_NS);
}

int main(int argc, char **argv)
{
	struct xr_xsk_port_config cfg = {0};
	struct echo_counts counts = {0};
	struct xr_xdp_handle handle;
	struct xr_xdp_stats stats = {0};
	struct xr_netdev_info link;
	struct xr_qp_entry *entry;
	struct xr_xsk_port *port;
	bool attached_here = false;
	unsigned long count, hold_ms = 0;
	const char *ifname;
	char *end;
	int err;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: xsk_port_echo IFNAME COUNT [FRAMES [HOLD_MS]]\n");
		return 2;
	}
	ifname = argv[1];
	count = strtoul(argv[2], &end, 10);
	if (*end || count == 0) {
		fprintf(stderr, "xsk_port_echo: bad COUNT '%s'\n", argv[2]);
		return 2;
	}
	if (argc >= 4) {
		cfg.frame_count = (uint32_t)strtoul(argv[3], &end, 10);
		if (*end) {
			fprintf(stderr, "xsk_port_echo: bad FRAMES '%s'\n", argv[3]);
			return 2;
		}
	}
	if (argc == 5) {
		hold_ms = strtoul(argv[4], &end, 10);
		if (*end || hold_ms == 0 || hold_ms > 10000 || count > RX_BATCH) {
			fprintf(stderr, "xsk_port_echo: HOLD_MS '%s' needs 1..10000, COUNT <= %d\n",
				argv[4], RX_BATCH);
			return 2;
		}
	}
	if (xr_nl_get_link(ifname, &link)) {
		fprintf(stderr, "xsk_port_echo: no interface %s\n", ifname);
		return 1;
	}
	cfg.ifindex = link.ifindex;
	if (!xr_xdp_is_attached(ifname)) {
		err = xr_xdp_attach(ifname, NULL, NULL);
		if (err) {
			fprintf(stderr, "xsk_port_echo: attach %s: %s\n", ifname, strerror(-err));
			return 1;
		}
		attached_here = true;
	}
	err = xr_xdp_open(ifname, &handle);
	if (err) {
		fprintf(stderr, "xsk_port_echo: open pins of %s: %s\n", ifname, strerror(-err));
		goto detach;
	}
	cfg.xsk_map_fd = handle.xsk_map_fd;
	err = xr_xsk_port_open(&cfg, &port);
	if (err) {
		fprintf(stderr, "xsk_port_echo: open port on %s: %s\n", ifname, strerror(-err));
		goto close_handle;
	}
	/* An RC QP before it has a path: XDP binds its frames to this interface's MAC only. */
	entry = &handle.qp_table[xr_qpn_slot(XR_QPN_BASE)];
	entry->qp_type = XR_QPT_RC;
	entry->qpn = XR_QPN_BASE;
	memcpy(entry->local_mac, link.mac, ETH_ALEN);
	__atomic_store_n(&entry->state, XR_XDP_QP_ACTIVE, __ATOMIC_SEQ_CST);
	printf("ready queues=%d\n", xr_xsk_port_nfds(port));
	fflush(stdout);

	if (hold_ms)
		run_echo_holding_late(port, count, hold_ms * 1000000ull, &counts);
	else
		run_echo(port, count, &counts);

	__atomic_store_n(&entry->state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
	xr_xsk_port_close(port);
	xr_xdp_read_stats(ifname, &stats);
	printf("received=%lu echoed=%lu no_tx_buffer=%lu xdp_redirected=%llu "
	       "xdp_drop_no_socket=%llu\n",
	       counts.received, counts.echoed, counts.no_tx_buffer,
	       (unsigned long long)stats.redirected, (unsigned long long)stats.drop_no_socket);
	if (counts.received != count || counts.echoed != count)
		err = -EIO;
close_handle:
	xr_xdp_close(&handle);
detach:
	if (attached_here)
		xr_xdp_detach(ifname);
	return err ? 1 : 0;
}
