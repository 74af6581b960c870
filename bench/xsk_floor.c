/* SPDX-License-Identifier: MIT */
/*
 * xsk_floor: the floor under xroce's latency and throughput on this path.
 * Raw RoCEv2 frames go through the xroce XDP program and AF_XDP sockets
 * (xsk_port, as the engine uses them), both sides busy-polling, with none of
 * the transport: no QP, no ACK, no completion, no flow control. What
 * xroce-perf adds on top of this is the engine's; the rest is the kernel's.
 *
 *   xsk_floor echo IFNAME COUNT
 *   xsk_floor ping IFNAME PEER_MAC ITERATIONS [SIZE]
 *   xsk_floor sink IFNAME
 *   xsk_floor blast IFNAME PEER_MAC SECONDS
 *
 * The echo side sends every frame back with the MACs swapped and exits after
 * COUNT frames (the pinger's warm-up ones included) or 60 s. The ping side
 * sends messages of SIZE bytes (default 8), each in frames of 1,024 payload
 * bytes at most (path MTU 1024, as make bench runs xroce-perf) to QPN
 * XR_QPN_BASE, times each round trip until the last frame is back, and
 * prints, like udp_pingpong:
 *   xsk_floor size=N iterations=N half_rtt avg_us=X p50_us=X p99_us=X p999_us=X max_us=X
 *
 * The blast side sends frames of 1,024 payload bytes, ICRC sealed, as fast as
 * the TX ring takes them for SECONDS; the sink counts what arrives and exits
 * once nothing has come for a while (or after 60 s). Frames the sink's ring
 * had no room for are lost, not resent: what the sink counts is what the path
 * delivers. Each side measures from its first frame to its last and prints
 *   xsk_floor blast frames=N seconds=X cpu_s=X
 *   xsk_floor sink frames=N bytes=N seconds=X cpu_s=X gbit_s=X
 * (cpu_s: the process's user and system time over those seconds).
 *
 * The xroce XDP program must be attached to IFNAME on both sides, with no
 * xroce process running.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
#define PATH_MTU 1024			/* as xroce-perf in make bench */
#define SINK_QUIET_NS (500 * 1000000ll) /* nothing for this long after the first frame: done */
#define SINK_SAMPLE_FRAMES 4096
#define BLAST_BATCH 64
#define MAX_BLAST_SECONDS 60

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
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
		fprintf(stderr, "xsk_floor: no interface %s\n", ifname);
		return -1;
	}
	err = xr_xdp_open(ifname, &e->handle);
	if (err) {
		fprintf(stderr, "xsk_floor: xroce is not attached to %s: %s\n", ifname,
			strerror(-err));
		return -1;
	}
	cfg.ifindex = e->link.ifindex;
	cfg.xsk_map_fd = e->handle.xsk_map_fd;
	err = xr_xsk_port_open(&cfg, &e->port);
	if (err) {
		fprintf(stderr, "xsk_floor: AF_XDP on %s: %s\n", ifname, strerror(-err));
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
			xr_xsk_port_tx_submit(e.port, frames[i].queue, buf, frames[i].len);
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
 * Queues one SEND_ONLY frame of len payload bytes with PSN psn, waiting for a
 * TX buffer if all are in flight; -1 if it cannot be built.
 */
static int queue_frame(struct xsk_end *e, const struct xr_path *path, uint32_t psn, uint32_t len)
{
	struct xr_bth_fields bth = {
	    .opcode = XR_OP_RC_SEND_ONLY, .dqpn = XR_QPN_BASE, .psn = psn & XR_PSN_MASK};
	struct xr_pkt_out out;
	uint32_t cap;
	uint8_t *buf;

	while (!(buf = xr_xsk_port_tx_alloc(e->port, &cap)))
		transmit(e->port);
	if (xr_pkt_build(buf, cap, path, &bth, len, (uint16_t)psn, &out)) {
		xr_xsk_port_tx_abort(e->port, buf);
		return -1;
	}
	memset(out.payload, 0x5a, len);
	xr_pkt_seal(&out);
	xr_xsk_port_tx_submit(e->port, 0, buf, out.frame_len);
	return 0;
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

		if (queue_frame(e, path, (*psn)++, len))
			return -1;
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

/* The path to the peer with MAC text peer_mac: 0, or -1 if the MAC is not one. */
static int peer_path(const struct xsk_end *e, const char *peer_mac, struct xr_path *path)
{
	unsigned int mac[6];

	if (sscanf(peer_mac, "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4],
		   &mac[5]) != 6) {
		fprintf(stderr, "xsk_floor: bad peer MAC '%s'\n", peer_mac);
		return -1;
	}
	*path = (struct xr_path){.udp_sport = 0xc000};
	for (int i = 0; i < 6; i++)
		path->dmac[i] = (uint8_t)mac[i];
	memcpy(path->smac, e->link.mac, 6);
	/* Addresses XDP does not look at for a QP without a path: any IPv4-mapped pair. */
	path->sgid.raw[10] = path->sgid.raw[11] = path->dgid.raw[10] = path->dgid.raw[11] = 0xff;
	path->sgid.raw[15] = 1;
	path->dgid.raw[15] = 2;
	return 0;
}

static int run_sink(const char *ifname)
{
	int64_t give_up = now_ns() + ECHO_LIMIT_NS, last_frame = 0, t0 = 0, t1 = 0;
	uint64_t frames_seen = 0, bytes = 0, frames0 = 0, bytes0 = 0, frames1 = 0, bytes1 = 0;
	double cpu0 = 0, cpu1 = 0;
	struct xsk_end e;

	if (open_end(ifname, &e))
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct xr_rx_frame frames[RX_BATCH];
		unsigned n = xr_xsk_port_rx(e.port, frames, RX_BATCH);
		int64_t now = now_ns();

		if (!n) {
			if (now >= give_up || (last_frame && now - last_frame >= SINK_QUIET_NS))
				break;
			continue;
		}
		for (unsigned i = 0; i < n; i++) {
			struct xr_pkt pkt;

			if (xr_pkt_parse(frames[i].data, frames[i].len, &pkt) != XR_PARSE_OK)
				continue;
			/* Samples at every SINK_SAMPLE_FRAMES: the rate is the one between them. */
			if (frames_seen++ % SINK_SAMPLE_FRAMES == 0) {
				if (!t0) {
					t0 = now, cpu0 = cpu_seconds();
					frames0 = frames_seen, bytes0 = bytes;
				} else {
					t1 = now, cpu1 = cpu_seconds();
					frames1 = frames_seen, bytes1 = bytes;
				}
			}
			bytes += pkt.payload_len;
		}
		xr_xsk_port_rx_release(e.port);
		last_frame = now;
	}
	close_end(&e);
	if (t1 <= t0) {
		fprintf(stderr, "xsk_floor: sink saw %llu frames, too few to measure\n",
			(unsigned long long)frames_seen);
		return 1;
	}
	printf("xsk_floor sink frames=%llu bytes=%llu seconds=%.3f cpu_s=%.3f gbit_s=%.2f\n",
	       (unsigned long long)(frames1 - frames0), (unsigned long long)(bytes1 - bytes0),
	       (double)(t1 - t0) / 1e9, cpu1 - cpu0,
	       (double)(bytes1 - bytes0) * 8 / (double)(t1 - t0));
	return 0;
}

static int run_blast(const char *ifname, const char *peer_mac, long seconds)
{
	struct xr_path path;
	struct xsk_end e;
	int64_t start, end;
	uint32_t psn = 0;
	double cpu0;

	if (open_end(ifname, &e))
		return 1;
	if (peer_path(&e, peer_mac, &path)) {
		close_end(&e);
		return 2;
	}
	start = now_ns();
	end = start + seconds * 1000000000ll;
	cpu0 = cpu_seconds();
	while (now_ns() < end) {
		for (int i = 0; i < BLAST_BATCH; i++) {
			if (queue_frame(&e, &path, psn++, PATH_MTU)) {
				close_end(&e);
				return 1;
			}
		}
		transmit(e.port);
	}
	printf("xsk_floor blast frames=%u seconds=%.3f cpu_s=%.3f\n", psn,
	       (double)(now_ns() - start) / 1e9, cpu_seconds() - cpu0);
	close_end(&e);
	return 0;
}

static int run_ping(const char *ifname, const char *peer_mac, long iterations, uint32_t size)
{
	int64_t *samples = calloc((size_t)iterations, sizeof(*samples)), total = 0;
	struct xr_path path;
	struct xsk_end e;
	uint32_t psn = 0;

	if (!samples)
		return 1;
	if (open_end(ifname, &e)) {
		free(samples);
		return 1;
	}
	if (peer_path(&e, peer_mac, &path)) {
		close_end(&e);
		free(samples);
		return 2;
	}
	for (long i = 0; i < WARMUP_ITERATIONS + iterations; i++) {
		int64_t t = round_trip(&e, &path, &psn, size);

		if (t < 0) {
			fprintf(stderr, "xsk_floor: frame %ld did not come back\n", i);
			close_end(&e);
			free(samples);
			return 1;
		}
		if (i >= WARMUP_ITERATIONS) {
			samples[i - WARMUP_ITERATIONS] = t;
			total += t;
		}
	}
	close_end(&e);
	qsort(samples, (size_t)iterations, sizeof(*samples), compare_int64);
	printf("xsk_floor size=%u iterations=%ld half_rtt avg_us=%.2f p50_us=%.2f p99_us=%.2f "
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
	if (argc == 3 && !strcmp(argv[1], "sink"))
		return run_sink(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "blast")) {
		long seconds = atol(argv[4]);

		if (seconds > 0 && seconds <= MAX_BLAST_SECONDS)
			return run_blast(argv[2], argv[3], seconds);
	}
	fprintf(stderr, "usage: xsk_floor echo IFNAME COUNT\n"
			"       xsk_floor ping IFNAME PEER_MAC ITERATIONS (1..10000000) "
			"[SIZE (0..4096)]\n"
			"       xsk_floor sink IFNAME\n"
			"       xsk_floor blast IFNAME PEER_MAC SECONDS (1..60)\n");
	return 2;
}
