/* SPDX-License-Identifier: MIT */
/*
 * xsk_pingpong: the floor under xroce's message latency on this path. Raw
 * RoCEv2 frames go back and forth through the xroce XDP program and AF_XDP
 * sockets (xsk_port, as the engine uses them), both sides busy-polling,
 * with none of the transport: no QP, no ACK, no completion. What xroce-perf's
 * *_lat adds on top of this is the engine's; the rest is the kernel's.
 *
 *   xsk_pingpong echo IFNAME COUNT
 *   xsk_pingpong ping IFNAME PEER_MAC ITERATIONS [SIZE]
 *
 * The echo side sends every frame back with the MACs swapped and exits after
 * COUNT frames (the pinger's warm-up ones included) or 60 s. The ping side
 * sends messages of SIZE bytes (default 8), each in frames of 1,024 payload
 * bytes at most (path MTU 1024, as make bench runs xroce-perf) to QPN
 * XR_QPN_BASE, times each round trip until the last frame is back, and
 * prints, like udp_pingpong:
 *   xsk_pingpong size=N iterations=N half_rtt avg_us=X p50_us=X p99_us=X p999_us=X max_us=X
 * The xroce XDP program must be attached to IFNAME on both sides, with no
 * xroce process running.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/packet.h"
#include "netlink.h"
#include "xdp_attach.h"
#include "xsk_port.h"

#define WARMUP_ITERATIONS 1000
#define MAX_ITERATIONS 10000000L
#define RX_BATCH 16
#define ECHO_LIMIT_NS (60 * 1000000000ll)
#define REPLY_TIMEOUT_NS (200 * 1000000ll)
#define PATH_MTU 1024 /* as xroce-perf in make bench */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct xsk_end {
	struct xr_xdp_handle handle;
	struct xr_xsk_port *port;
	struct xr_qp_entry *entry;
	struct xr_netdev_info link;
};

static int open_end(const char *ifname, struct xsk_end *e)
{
	struct xr_xsk_port_config cfg = {0};
	int err;

	if (xr_nl_get_link(ifname, &e->link)) {
		fprintf(stderr, "xsk_pingpong: no interface %s\n", ifname);
		return -1;
	}
	err = xr_xdp_open(ifname, &e->handle);
	if (err) {
		fprintf(stderr, "xsk_pingpong: xroce is not attached to %s: %s\n", ifname,
			strerror(-err));
		return -1;
	}
	cfg.ifindex = e->link.ifindex;
	cfg.xsk_map_fd = e->handle.xsk_map_fd;
	err = xr_xsk_port_open(&cfg, &e->port);
	if (err) {
		fprintf(stderr, "xsk_pingpong: AF_XDP on %s: %s\n", ifname, strerror(-err));
		xr_xdp_close(&e->handle);
		return -1;
	}
	/* A QP without a path yet: XDP steers its frames by this interface's MAC alone. */
	e->entry = &e->handle.qp_table[xr_qpn_slot(XR_QPN_BASE)];
	e->entry->qp_type = XR_QPT_RC;
	e->entry->qpn = XR_QPN_BASE;
	memcpy(e->entry->local_mac, e->link.mac, 6);
	__atomic_store_n(&e->entry->state, XR_XDP_QP_ACTIVE, __ATOMIC_SEQ_CST);
	return 0;
}

static void close_end(struct xsk_end *e)
{
	__atomic_store_n(&e->entry->state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
	xr_xsk_port_close(e->port);
	xr_xdp_close(&e->handle);
}

static void transmit(struct xr_xsk_port *port)
{
	xr_xsk_port_tx_publish(port);
	xr_xsk_port_tx_kick(port);
}

static int run_echo(const char *ifname, long count)
{
	struct xsk_end e;
	int64_t deadline = now_ns() + ECHO_LIMIT_NS;
	long echoed = 0;

	if (open_end(ifname, &e))
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (echoed < count && now_ns() < deadline) {
		struct xr_rx_frame frames[RX_BATCH];
		unsigned n = xr_xsk_port_rx(e.port, frames, RX_BATCH);

		for (unsigned i = 0; i < n; i++) {
			uint32_t cap;
			uint8_t *buf = xr_xsk_port_tx_alloc(e.port, &cap);

			if (!buf || frames[i].len > cap || frames[i].len < 12) {
				if (buf)
					xr_xsk_port_tx_abort(e.port, buf);
				continue;
			}
			memcpy(buf, frames[i].data + 6, 6);
			memcpy(buf + 6, frames[i].data, 6);
			memcpy(buf + 12, frames[i].data + 12, frames[i].len - 12);
			xr_xsk_port_tx_submit(e.port, buf, frames[i].len);
			echoed++;
		}
		if (n) {
			xr_xsk_port_rx_release(e.port);
			transmit(e.port);
		}
	}
	transmit(e.port);
	close_end(&e);
	return echoed == count ? 0 : 1;
}

/*
 * One round trip of a size-byte message, in frames of PATH_MTU payload bytes
 * at most (all sent with one kick, as the engine does); ns until the last
 * frame came back, or -1 when they did not all come back in time. The
 * message's frames take PSNs from *psn on.
 */
static int64_t round_trip(struct xsk_end *e, const struct xr_path *path, uint32_t *psn,
			  uint32_t size)
{
	uint32_t nframes = size ? (size + PATH_MTU - 1) / PATH_MTU : 1, first = *psn, back = 0;
	int64_t start, deadline;

	for (uint32_t i = 0; i < nframes; i++) {
		uint32_t len = size - i * PATH_MTU < PATH_MTU ? size - i * PATH_MTU : PATH_MTU;
		struct xr_bth_fields bth = {
		    .opcode = XR_OP_RC_SEND_ONLY, .dqpn = XR_QPN_BASE, .psn = *psn & XR_PSN_MASK};
		struct xr_pkt_out out;
		uint32_t cap;
		uint8_t *buf;

		while (!(buf = xr_xsk_port_tx_alloc(e->port, &cap)))
			transmit(e->port);
		if (xr_pkt_build(buf, cap, path, &bth, len, (uint16_t)*psn, &out)) {
			xr_xsk_port_tx_abort(e->port, buf);
			return -1;
		}
		memset(out.payload, 0x5a, len);
		xr_pkt_seal(&out);
		xr_xsk_port_tx_submit(e->port, buf, out.frame_len);
		++*psn;
	}
	start = now_ns();
	deadline = start + REPLY_TIMEOUT_NS;
	transmit(e->port);
	while (now_ns() < deadline) {
		struct xr_rx_frame frames[RX_BATCH];
		unsigned n = xr_xsk_port_rx(e->port, frames, RX_BATCH);

		for (unsigned i = 0; i < n; i++) {
			struct xr_pkt pkt;

			if (xr_pkt_parse(frames[i].data, frames[i].len, &pkt) == XR_PARSE_OK &&
			    ((pkt.psn - first) & XR_PSN_MASK) < nframes)
				back++;
		}
		if (n)
			xr_xsk_port_rx_release(e->port);
		if (back == nframes)
			return now_ns() - start;
	}
	return -1;
}

static int run_ping(const char *ifname, const char *peer_mac, long iterations, uint32_t size)
{
	int64_t *samples = calloc((size_t)iterations, sizeof(*samples)), total = 0;
	struct xr_path path = {.udp_sport = 0xc000};
	unsigned int mac[6];
	struct xsk_end e;
	uint32_t psn = 0;

	if (!samples || sscanf(peer_mac, "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3],
			       &mac[4], &mac[5]) != 6) {
		fprintf(stderr, "xsk_pingpong: bad peer MAC '%s'\n", peer_mac);
		return 2;
	}
	if (open_end(ifname, &e))
		return 1;
	for (int i = 0; i < 6; i++)
		path.dmac[i] = (uint8_t)mac[i];
	memcpy(path.smac, e.link.mac, 6);
	/* Addresses XDP does not look at for a QP without a path: any IPv4-mapped pair. */
	path.sgid.raw[10] = path.sgid.raw[11] = path.dgid.raw[10] = path.dgid.raw[11] = 0xff;
	path.sgid.raw[15] = 1;
	path.dgid.raw[15] = 2;
	for (long i = 0; i < WARMUP_ITERATIONS + iterations; i++) {
		int64_t t = round_trip(&e, &path, &psn, size);

		if (t < 0) {
			fprintf(stderr, "xsk_pingpong: frame %ld did not come back\n", i);
			close_end(&e);
			return 1;
		}
		if (i >= WARMUP_ITERATIONS) {
			samples[i - WARMUP_ITERATIONS] = t;
			total += t;
		}
	}
	close_end(&e);
	qsort(samples, (size_t)iterations, sizeof(*samples), compare_int64);
	printf("xsk_pingpong size=%u iterations=%ld half_rtt avg_us=%.2f p50_us=%.2f p99_us=%.2f "
	       "p999_us=%.2f max_us=%.2f\n",
	       size, iterations, (double)total / (double)iterations / 2000.0,
	       (double)samples[iterations / 2] / 2000.0,
	       (double)samples[(long)(iterations * 0.99)] / 2000.0,
	       (double)samples[(long)(iterations * 0.999)] / 2000.0,
	       (double)samples[iterations - 1] / 2000.0);
	free(samples);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "echo")) {
		long count = atol(argv[3]);

		if (count > 0)
			return run_echo(argv[2], count);
	}
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "ping")) {
		long iterations = atol(argv[4]);
		long size = argc == 6 ? atol(argv[5]) : 8;

		if (iterations > 0 && iterations <= MAX_ITERATIONS && size >= 0 && size <= 4096)
			return run_ping(argv[2], argv[3], iterations, (uint32_t)size);
	}
	fprintf(stderr, "usage: xsk_pingpong echo IFNAME COUNT\n"
			"       xsk_pingpong ping IFNAME PEER_MAC ITERATIONS (1..10000000) "
			"[SIZE (0..4096)]\n");
	return 2;
}
