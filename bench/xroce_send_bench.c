/* SPDX-License-Identifier: MIT */
/*
 * xroce_send_bench: RC SEND bandwidth and small-message latency over xroce.
 *
 *   xroce_send_bench server IFNAME
 *   xroce_send_bench client IFNAME SERVER_IP [SECONDS [ITERATIONS]]
 *
 * Phase 1, bandwidth: the client keeps SEND_DEPTH SENDs of BW_SIZE bytes in
 * flight for SECONDS (default 5); the server keeps RECV_DEPTH receives posted.
 * Phase 2, latency: the client sends LAT_SIZE bytes carrying a sequence number,
 * the server echoes them with a SEND, the client times ITERATIONS (default
 * 10000, within SECONDS) round trips. Each phase ends with a SEND with
 * immediate carrying the phase's end marker; RC ordering makes it the last
 * message the server sees.
 *
 * The client prints one line per phase:
 *   send_bw size=65536 depth=16 messages=N seconds=S MB/s=X Gbit/s=X msg/s=X
 *   send_lat size=8 iterations=N avg_us=X p50_us=X p99_us=X
 *
 * Out of band (TCP port 18601): each side sends
 * "xroce-bench qpn=HEX psn=HEX gid=IPV6_TEXT\n", then the server "ready\n";
 * at the end the client sends "done\n".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/random.h>

#include "../user/tools/tool_common.h"

#define BENCH_PORT 18601
#define BW_SIZE (64 * 1024)
#define LAT_SIZE 8
#define SEND_DEPTH 16
#define RECV_DEPTH 64
#define CQ_BATCH 32
#define CQ_SIZE 256
#define END_OF_BW 0xb0b0b0b0u
#define END_OF_LAT 0x1a71a7u
#define WARMUP_ITERATIONS 100
#define MAX_ITERATIONS 1000000L
#define MAX_SECONDS 60
#define OOB_LINE_MAX 160
#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
#define OOB_TIMEOUT_MS 20000
/* The longest wait for any completion before the run is declared stuck. */
#define STALL_TIMEOUT_MS 15000

struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	union xr_gid gid;
};

struct endpoint {
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp *qp;
	struct xr_mr *mr;
	uint8_t *buf;
	int gid_index;
	enum xr_mtu mtu;
	struct peer_info local;
};

/*
 * Buffer layout, the same on both sides: SEND_DEPTH send slots of BW_SIZE,
 * then RECV_DEPTH receive slots of BW_SIZE.
 */
#define SEND_SLOT(ep, i) ((ep)->buf + (size_t)(i)*BW_SIZE)
#define RECV_SLOT(ep, i) ((ep)->buf + (size_t)(SEND_DEPTH + (i)) * BW_SIZE)
#define BUF_SIZE ((size_t)(SEND_DEPTH + RECV_DEPTH) * BW_SIZE)
/* Receive completions carry RECV_TAG | slot as wr_id. */
#define RECV_TAG (1ULL << 63)

static void fail(const char *what, int err)
{
	fprintf(stderr, "xroce_send_bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static void fail_wc(const char *what, const struct xr_wc *wc)
{
	fprintf(stderr, "xroce_send_bench: %s: completion %s (opcode %d)\n", what,
		xr_wc_status_str(wc->status), wc->opcode);
	exit(1);
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* ---- out of band ------------------------------------------------------ */

static int oob_exchange(int fd, const struct peer_info *local, struct peer_info *remote)
{
	char line[OOB_LINE_MAX], gid_text[INET6_ADDRSTRLEN];
	int err;

	inet_ntop(AF_INET6, local->gid.raw, gid_text, sizeof(gid_text));
	snprintf(line, sizeof(line), "xroce-bench qpn=%" PRIx32 " psn=%" PRIx32 " gid=%s\n",
		 local->qpn, local->psn, gid_text);
	err = oob_write_line(fd, line, tool_now_ms() + OOB_TIMEOUT_MS);
	if (!err)
		err = oob_read_line(fd, line, sizeof(line), tool_now_ms() + OOB_TIMEOUT_MS);
	if (err)
		return err;
	if (sscanf(line, "xroce-bench qpn=%" SCNx32 " psn=%" SCNx32 " gid=%45s", &remote->qpn,
		   &remote->psn, gid_text) != 3 ||
	    inet_pton(AF_INET6, gid_text, remote->gid.raw) != 1)
		return -EPROTO;
	return 0;
}

/* ---- RDMA resources ---------------------------------------------------- */

static void endpoint_open(struct endpoint *ep, const char *ifname)
{
	struct xr_qp_init_attr qp_attr = {
	    .qp_type = XR_QPT_RC,
	    .cap = {.max_send_wr = 2 * SEND_DEPTH,
		    .max_recv_wr = RECV_DEPTH,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	struct xr_device_attr dev_attr;
	uint32_t psn;

	ep->dev = xr_open_device(ifname, NULL);
	if (!ep->dev)
		fail("open device", -errno);
	ep->gid_index = find_ipv4_gid(ep->dev, &dev_attr, &ep->local.gid);
	if (ep->gid_index < 0)
		fail("no IPv4 GID", ep->gid_index);
	ep->mtu = dev_attr.active_mtu;
	ep->buf = calloc(1, BUF_SIZE);
	if (!ep->buf)
		fail("buffers", -ENOMEM);
	ep->pd = xr_alloc_pd(ep->dev);
	if (!ep->pd)
		fail("alloc_pd", -errno);
	ep->cq = xr_create_cq(ep->dev, CQ_SIZE, NULL);
	if (!ep->cq)
		fail("create_cq", -errno);
	ep->mr = xr_reg_mr(ep->pd, ep->buf, BUF_SIZE, XR_ACCESS_LOCAL_WRITE);
	if (!ep->mr)
		fail("reg_mr", -errno);
	qp_attr.send_cq = ep->cq;
	qp_attr.recv_cq = ep->cq;
	ep->qp = xr_create_qp(ep->pd, &qp_attr);
	if (!ep->qp)
		fail("create_qp", -errno);
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)tool_now_ns();
	ep->local.qpn = ep->qp->qp_num;
	ep->local.psn = psn & 0xffffff;
}

static void endpoint_close(struct endpoint *ep)
{
	xr_destroy_qp(ep->qp);
	xr_dereg_mr(ep->mr);
	xr_destroy_cq(ep->cq);
	xr_dealloc_pd(ep->pd);
	xr_close_device(ep->dev);
	free(ep->buf);
}

/* INIT -> RTR -> RTS with the attributes verbs requires at each step. */
static int endpoint_connect(struct endpoint *ep, const struct peer_info *remote)
{
	struct qp_rtr_attr rtr = {
	    .path_mtu = ep->mtu,
	    .dest_qpn = remote->qpn,
	    .rq_psn = remote->psn,
	    .dgid = remote->gid,
	    .sgid_index = (uint8_t)ep->gid_index,
	    .port_num = 1,
	    .hop_limit = 64,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 1,
	};
	const char *failed;

	return qp_connect(ep->qp, &rtr, ep->local.psn, 1, &failed);
}

/* ---- work requests --------------------------------------------------------- */

static void post_send(struct endpoint *ep, uint64_t wr_id, const uint8_t *data, uint32_t length,
		      enum xr_wr_opcode opcode, uint32_t imm)
{
	struct xr_sge sge = {.addr = (uintptr_t)data, .length = length, .lkey = ep->mr->lkey};
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = opcode,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(imm),
	};
	struct xr_send_wr *bad_wr;
	int err = xr_post_send(ep->qp, &wr, &bad_wr);

	if (err)
		fail("post_send", err);
}

static void post_recv(struct endpoint *ep, uint32_t slot)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)RECV_SLOT(ep, slot),
	    .length = BW_SIZE,
	    .lkey = ep->mr->lkey,
	};
	struct xr_recv_wr wr = {.wr_id = RECV_TAG | slot, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad_wr;
	int err = xr_post_recv(ep->qp, &wr, &bad_wr);

	if (err)
		fail("post_recv", err);
}

/*
 * Waits for at least one completion and returns how many were written to wc.
 * Yields between empty polls: on a small machine the engine threads need the CPU.
 */
static int wait_completions(struct endpoint *ep, struct xr_wc *wc, int max)
{
	int n = poll_cq_yielding(ep->cq, wc, 1, max, tool_now_ms() + STALL_TIMEOUT_MS);

	if (n == 0)
		fail("waiting for completions", -ETIMEDOUT);
	return n;
}

static bool is_end_marker(const struct xr_wc *wc, uint32_t marker)
{
	return (wc->wc_flags & XR_WC_WITH_IMM) && ntohl(wc->imm_data) == marker;
}

/* ---- server -------------------------------------------------------------- */

static void server_bandwidth_phase(struct endpoint *ep)
{
	int64_t first = 0, last = 0;
	uint64_t messages = 0, bytes = 0;
	struct xr_wc wc[CQ_BATCH];

	for (;;) {
		int n = wait_completions(ep, wc, CQ_BATCH);

		for (int i = 0; i < n; i++) {
			if (wc[i].status != XR_WC_SUCCESS || wc[i].opcode != XR_WC_RECV)
				fail_wc("bandwidth receive", &wc[i]);
			post_recv(ep, (uint32_t)(wc[i].wr_id & ~RECV_TAG));
			if (is_end_marker(&wc[i], END_OF_BW)) {
				double seconds = (double)(last - first) / 1e9;

				printf("server send_bw received messages=%" PRIu64 " MB/s=%.1f\n",
				       messages, seconds > 0 ? (double)bytes / 1e6 / seconds : 0.0);
				return;
			}
			if (messages++ == 0)
				first = tool_now_ns();
			bytes += wc[i].byte_len;
			last = tool_now_ns();
		}
	}
}

/* Echoes every message from the send slot ring until the end marker. */
static void server_latency_phase(struct endpoint *ep)
{
	uint64_t echoes_posted = 0, echoes_completed = 0;
	struct xr_wc wc[CQ_BATCH];
	bool done = false;

	while (!done || echoes_completed < echoes_posted) {
		int n = wait_completions(ep, wc, CQ_BATCH);

		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)(wc[i].wr_id & ~RECV_TAG);

			if (wc[i].status != XR_WC_SUCCESS)
				fail_wc("latency", &wc[i]);
			if (wc[i].opcode == XR_WC_SEND) {
				echoes_completed++;
				continue;
			}
			if (is_end_marker(&wc[i], END_OF_LAT)) {
				done = true;
			} else if (echoes_posted - echoes_completed < SEND_DEPTH) {
				uint8_t *echo = SEND_SLOT(ep, echoes_posted % SEND_DEPTH);

				memcpy(echo, RECV_SLOT(ep, slot), LAT_SIZE);
				post_send(ep, echoes_posted++, echo, LAT_SIZE, XR_WR_SEND, 0);
			} else {
				fail("latency", -ENOBUFS);
			}
			post_recv(ep, slot);
		}
	}
}

static void run_server(struct endpoint *ep)
{
	server_bandwidth_phase(ep);
	server_latency_phase(ep);
}

/* ---- client -------------------------------------------------------------- */

static void client_bandwidth_phase(struct endpoint *ep, int seconds)
{
	uint64_t posted = 0, completed = 0;
	int64_t start = tool_now_ns(), deadline = start + seconds * 1000000000LL, elapsed;
	struct xr_wc wc[CQ_BATCH];
	double secs;

	for (;;) {
		bool sending = tool_now_ns() < deadline;

		while (sending && posted - completed < SEND_DEPTH) {
			post_send(ep, posted, SEND_SLOT(ep, posted % SEND_DEPTH), BW_SIZE,
				  XR_WR_SEND, 0);
			posted++;
		}
		if (!sending && completed == posted)
			break;
		int n = wait_completions(ep, wc, CQ_BATCH);

		for (int i = 0; i < n; i++) {
			if (wc[i].status != XR_WC_SUCCESS || wc[i].opcode != XR_WC_SEND)
				fail_wc("bandwidth send", &wc[i]);
			completed++;
		}
	}
	elapsed = tool_now_ns() - start;
	post_send(ep, posted, SEND_SLOT(ep, 0), LAT_SIZE, XR_WR_SEND_WITH_IMM, END_OF_BW);
	if (wait_completions(ep, wc, 1) != 1 || wc[0].status != XR_WC_SUCCESS)
		fail_wc("bandwidth end marker", &wc[0]);
	secs = (double)elapsed / 1e9;
	printf("send_bw size=%d depth=%d messages=%" PRIu64
	       " seconds=%.2f MB/s=%.1f Gbit/s=%.3f msg/s=%.0f\n",
	       BW_SIZE, SEND_DEPTH, completed, secs, (double)completed * BW_SIZE / 1e6 / secs,
	       (double)completed * BW_SIZE * 8 / 1e9 / secs, (double)completed / secs);
}

/* One round trip: returns its duration in ns. */
static int64_t client_round_trip(struct endpoint *ep, uint64_t sequence)
{
	uint8_t *message = SEND_SLOT(ep, sequence % SEND_DEPTH);
	int64_t start = tool_now_ns();
	bool echoed = false, sent = false;
	struct xr_wc wc[CQ_BATCH];

	memcpy(message, &sequence, sizeof(sequence));
	post_send(ep, sequence, message, LAT_SIZE, XR_WR_SEND, 0);
	while (!echoed || !sent) {
		int n = wait_completions(ep, wc, CQ_BATCH);

		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)(wc[i].wr_id & ~RECV_TAG);
			uint64_t echo;

			if (wc[i].status != XR_WC_SUCCESS)
				fail_wc("latency", &wc[i]);
			if (wc[i].opcode == XR_WC_SEND) {
				sent = true;
				continue;
			}
			memcpy(&echo, RECV_SLOT(ep, slot), sizeof(echo));
			if (wc[i].byte_len != LAT_SIZE || echo != sequence)
				fail("latency echo", -EBADMSG);
			post_recv(ep, slot);
			echoed = true;
		}
	}
	return tool_now_ns() - start;
}

static void client_latency_phase(struct endpoint *ep, int seconds, long iterations)
{
	int64_t *samples = calloc((size_t)iterations, sizeof(*samples));
	int64_t deadline = tool_now_ns() + seconds * 1000000000LL, total = 0;
	struct xr_wc wc;
	long measured = 0;

	if (!samples)
		fail("latency samples", -ENOMEM);
	for (uint64_t i = 0; i < WARMUP_ITERATIONS; i++)
		client_round_trip(ep, i);
	while (measured < iterations && tool_now_ns() < deadline) {
		samples[measured] = client_round_trip(ep, WARMUP_ITERATIONS + (uint64_t)measured);
		total += samples[measured++];
	}
	post_send(ep, 0, SEND_SLOT(ep, 0), LAT_SIZE, XR_WR_SEND_WITH_IMM, END_OF_LAT);
	if (wait_completions(ep, &wc, 1) != 1 || wc.status != XR_WC_SUCCESS)
		fail_wc("latency end marker", &wc);
	if (measured == 0)
		fail("latency", -ETIMEDOUT);
	qsort(samples, (size_t)measured, sizeof(*samples), compare_int64);
	printf("send_lat size=%d iterations=%ld avg_us=%.2f p50_us=%.2f p99_us=%.2f\n", LAT_SIZE,
	       measured, (double)total / (double)measured / 1e3,
	       (double)samples[measured / 2] / 1e3, (double)samples[measured * 99 / 100] / 1e3);
	free(samples);
}

static void run_client(struct endpoint *ep, int seconds, long iterations)
{
	client_bandwidth_phase(ep, seconds);
	client_latency_phase(ep, seconds, iterations);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: xroce_send_bench server IFNAME\n"
		"       xroce_send_bench client IFNAME SERVER_IP [SECONDS [ITERATIONS]]\n"
		"       (SECONDS 1..%d, default 5; ITERATIONS 1..%ld, default 10000)\n",
		MAX_SECONDS, MAX_ITERATIONS);
	exit(2);
}

int main(int argc, char **argv)
{
	bool is_server = argc == 3 && strcmp(argv[1], "server") == 0;
	bool is_client = argc >= 4 && argc <= 6 && strcmp(argv[1], "client") == 0;
	int seconds = argc >= 5 ? atoi(argv[4]) : 5;
	long iterations = argc >= 6 ? atol(argv[5]) : 10000;
	struct endpoint ep = {0};
	struct peer_info remote;
	char line[OOB_LINE_MAX];
	const char *why;
	int oob, err;

	if ((!is_server && !is_client) || seconds < 1 || seconds > MAX_SECONDS || iterations < 1 ||
	    iterations > MAX_ITERATIONS)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	endpoint_open(&ep, argv[2]);
	err = qp_to_init(ep.qp, 1, XR_ACCESS_LOCAL_WRITE);
	if (err)
		fail("modify_qp to INIT", err);
	/* Receives go first, so no SEND ever meets an empty receive queue. */
	for (uint32_t slot = 0; slot < RECV_DEPTH; slot++)
		post_recv(&ep, slot);
	oob = is_server
		  ? oob_accept(AF_INET, BENCH_PORT, ACCEPT_TIMEOUT_MS, &why)
		  : oob_connect(argv[3], BENCH_PORT, CONNECT_TIMEOUT_MS, CONNECT_TIMEOUT_MS, &why);
	if (oob < 0) {
		fprintf(stderr, "xroce_send_bench: out-of-band connection: %s\n", why);
		exit(1);
	}
	err = oob_exchange(oob, &ep.local, &remote);
	if (err)
		fail("out-of-band exchange", err);
	err = endpoint_connect(&ep, &remote);
	if (err)
		fail("modify_qp", err);
	/* The client must not send before the server's QP has left INIT. */
	if (is_server)
		err = oob_write_line(oob, "ready\n", tool_now_ms() + OOB_TIMEOUT_MS);
	else if ((err = oob_read_line(oob, line, sizeof(line), tool_now_ms() + OOB_TIMEOUT_MS)) ==
		     0 &&
		 strcmp(line, "ready") != 0)
		err = -EPROTO;
	if (err)
		fail("waiting for the peer", err);
	/*
	 * The client says when it has its last completion: the server's QP must
	 * live until its final ACK has arrived.
	 */
	if (is_server) {
		run_server(&ep);
		oob_read_line(oob, line, sizeof(line), tool_now_ms() + OOB_TIMEOUT_MS);
	} else {
		run_client(&ep, seconds, iterations);
		oob_write_line(oob, "done\n", tool_now_ms() + OOB_TIMEOUT_MS);
	}
	close(oob);
	endpoint_close(&ep);
	return 0;
}
