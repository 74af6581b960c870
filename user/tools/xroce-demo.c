/* SPDX-License-Identifier: MIT */
/*
 * xroce-demo: two hosts connect one RC queue pair and exchange SENDs of
 * 1 B, 4 KiB and 1 MiB and a SEND with immediate. The receiver checks every
 * byte and the immediate and reports its verdict to the sender over the
 * out-of-band TCP connection; the sender prints one line per operation, with
 * the time from posting to its send completion (which waits for the ACK).
 *
 *   xroce-demo server IFNAME
 *   xroce-demo client IFNAME SERVER_IP
 *
 * Out of band (TCP port 18600), each side sends one line:
 *   "xroce-demo qpn=HEX psn=HEX gid=IPV6_TEXT\n"
 * then the server sends "ready\n" once its QP can receive, and one verdict
 * line per operation: "ok\n" or "fail REASON\n"; the client ends with "done\n".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xroce/xroce.h"

#define DEMO_PORT 18600
#define OOB_LINE_MAX 160
#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
#define OOB_TIMEOUT_MS 20000
#define COMPLETION_TIMEOUT_NS (20LL * 1000 * 1000 * 1000)

struct demo_op {
	enum xr_wr_opcode opcode;
	uint32_t size;
	uint32_t imm; /* host order; meaningful for SEND_WITH_IMM only */
};

static const struct demo_op demo_ops[] = {
    {XR_WR_SEND, 1, 0},
    {XR_WR_SEND, 4096, 0},
    {XR_WR_SEND, 1 << 20, 0},
    {XR_WR_SEND_WITH_IMM, 4096, 0x600dcafe},
};
#define NUM_OPS (sizeof(demo_ops) / sizeof(demo_ops[0]))

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

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *op_name(enum xr_wr_opcode opcode)
{
	return opcode == XR_WR_SEND_WITH_IMM ? "SEND_WITH_IMM" : "SEND";
}

static void format_size(uint32_t size, char *out, size_t out_len)
{
	if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(out, out_len, "%u MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(out, out_len, "%u KiB", size >> 10);
	else
		snprintf(out, out_len, "%u B", size);
}

/* Each operation carries its own pattern, so a message landing in the wrong buffer shows. */
static uint8_t pattern_byte(size_t op_index, size_t offset)
{
	return (uint8_t)(offset * 131 + op_index * 17 + 7);
}

static size_t recv_offset(size_t op_index)
{
	size_t offset = 0;

	for (size_t i = 0; i < op_index; i++)
		offset += demo_ops[i].size;
	return offset;
}

static size_t largest_op(void)
{
	size_t largest = 0;

	for (size_t i = 0; i < NUM_OPS; i++)
		if (demo_ops[i].size > largest)
			largest = demo_ops[i].size;
	return largest;
}

static bool gid_is_ipv4_mapped(const union xr_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/* ---- out of band ------------------------------------------------------ */

static int oob_write_line(int fd, const char *line)
{
	size_t len = strlen(line);

	while (len > 0) {
		ssize_t n = send(fd, line, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		line += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one line without its newline; bounded by OOB_TIMEOUT_MS per byte. */
static int oob_read_line(int fd, char *line, size_t line_len)
{
	size_t used = 0;

	while (used + 1 < line_len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int ready = poll(&pfd, 1, OOB_TIMEOUT_MS);
		char c;
		ssize_t n;

		if (ready == 0)
			return -ETIMEDOUT;
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		n = recv(fd, &c, 1, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (c == '\n') {
			line[used] = '\0';
			return 0;
		}
		line[used++] = c;
	}
	return -EMSGSIZE;
}

static int oob_accept(void)
{
	struct sockaddr_in addr = {
	    .sin_family = AF_INET,
	    .sin_port = htons(DEMO_PORT),
	    .sin_addr.s_addr = htonl(INADDR_ANY),
	};
	struct pollfd pfd;
	int one = 1, listen_fd, fd = -1, ready;

	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(listen_fd, 1) < 0) {
		fd = -errno;
		close(listen_fd);
		return fd;
	}
	pfd = (struct pollfd){.fd = listen_fd, .events = POLLIN};
	ready = poll(&pfd, 1, ACCEPT_TIMEOUT_MS);
	if (ready > 0)
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	else if (ready == 0)
		errno = ETIMEDOUT;
	if (ready <= 0 || fd < 0)
		fd = -errno;
	close(listen_fd);
	return fd;
}

/* Retries while the server is still starting up. */
static int oob_connect(const char *server_ip)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(DEMO_PORT)};
	int64_t deadline = now_ns() + CONNECT_TIMEOUT_MS * 1000000LL;

	if (inet_pton(AF_INET, server_ip, &addr.sin_addr) != 1)
		return -EINVAL;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			return fd;
		close(fd);
		if ((errno != ECONNREFUSED && errno != ENETUNREACH) || now_ns() > deadline)
			return -errno;
		usleep(100 * 1000);
	}
}

static int oob_exchange(int fd, const struct peer_info *local, struct peer_info *remote)
{
	char line[OOB_LINE_MAX], gid_text[INET6_ADDRSTRLEN];
	int err;

	inet_ntop(AF_INET6, local->gid.raw, gid_text, sizeof(gid_text));
	snprintf(line, sizeof(line), "xroce-demo qpn=%" PRIx32 " psn=%" PRIx32 " gid=%s\n",
		 local->qpn, local->psn, gid_text);
	err = oob_write_line(fd, line);
	if (!err)
		err = oob_read_line(fd, line, sizeof(line));
	if (err)
		return err;
	if (sscanf(line, "xroce-demo qpn=%" SCNx32 " psn=%" SCNx32 " gid=%45s", &remote->qpn,
		   &remote->psn, gid_text) != 3 ||
	    inet_pton(AF_INET6, gid_text, remote->gid.raw) != 1)
		return -EPROTO;
	return 0;
}

/* ---- RDMA resources ---------------------------------------------------- */

static int find_ipv4_gid(struct endpoint *ep)
{
	struct xr_device_attr attr;
	int err = xr_query_device(ep->dev, &attr);

	if (err)
		return err;
	ep->mtu = attr.active_mtu;
	for (int i = 0; i < attr.num_gids; i++) {
		err = xr_query_gid(ep->dev, i, &ep->local.gid);
		if (err)
			return err;
		if (gid_is_ipv4_mapped(&ep->local.gid)) {
			ep->gid_index = i;
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

static void endpoint_close(struct endpoint *ep)
{
	if (ep->qp)
		xr_destroy_qp(ep->qp);
	if (ep->mr)
		xr_dereg_mr(ep->mr);
	if (ep->cq)
		xr_destroy_cq(ep->cq);
	if (ep->pd)
		xr_dealloc_pd(ep->pd);
	if (ep->dev)
		xr_close_device(ep->dev);
	free(ep->buf);
}

static int endpoint_open(struct endpoint *ep, const char *ifname, size_t buf_size)
{
	struct xr_qp_init_attr qp_attr = {
	    .qp_type = XR_QPT_RC,
	    .cap = {.max_send_wr = NUM_OPS,
		    .max_recv_wr = NUM_OPS,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	uint32_t psn;
	int err;

	ep->dev = xr_open_device(ifname, NULL);
	if (!ep->dev) {
		fprintf(stderr, "xroce-demo: cannot open %s: %s\n", ifname, strerror(errno));
		return -errno;
	}
	err = find_ipv4_gid(ep);
	if (err) {
		fprintf(stderr, "xroce-demo: no IPv4 GID on %s: %s\n", ifname, strerror(-err));
		return err;
	}
	ep->buf = calloc(1, buf_size);
	ep->pd = ep->buf ? xr_alloc_pd(ep->dev) : NULL;
	ep->cq = ep->pd ? xr_create_cq(ep->dev, 2 * NUM_OPS, NULL) : NULL;
	ep->mr = ep->cq ? xr_reg_mr(ep->pd, ep->buf, buf_size, XR_ACCESS_LOCAL_WRITE) : NULL;
	qp_attr.send_cq = ep->cq;
	qp_attr.recv_cq = ep->cq;
	ep->qp = ep->mr ? xr_create_qp(ep->pd, &qp_attr) : NULL;
	if (!ep->qp) {
		err = ep->buf ? -errno : -ENOMEM;
		fprintf(stderr, "xroce-demo: cannot set up the queue pair: %s\n", strerror(-err));
		return err;
	}
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)now_ns();
	ep->local.qpn = ep->qp->qp_num;
	ep->local.psn = psn & 0xffffff;
	return 0;
}

/* RESET -> INIT: from here on receives can be posted. */
static int endpoint_init(struct endpoint *ep)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_INIT,
	    .port_num = 1,
	    .qp_access_flags = XR_ACCESS_LOCAL_WRITE,
	};

	return xr_modify_qp(ep->qp, &attr,
			    XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS with the attributes verbs requires at each step. */
static int endpoint_connect(struct endpoint *ep, const struct peer_info *remote)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = ep->mtu,
	    .dest_qp_num = remote->qpn,
	    .rq_psn = remote->psn,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = remote->gid,
				.sgid_index = (uint8_t)ep->gid_index,
				.hop_limit = 64}},
	};
	int err = xr_modify_qp(ep->qp, &attr,
			       XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN |
				   XR_QP_RQ_PSN | XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER);

	if (err)
		return err;
	attr = (struct xr_qp_attr){
	    .qp_state = XR_QPS_RTS,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .sq_psn = ep->local.psn,
	    .max_rd_atomic = 1,
	};
	return xr_modify_qp(ep->qp, &attr,
			    XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
				XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
}

/* Yields between empty polls: on a small machine the engine threads need the CPU. */
static int poll_one(struct xr_cq *cq, struct xr_wc *wc)
{
	int64_t deadline = now_ns() + COMPLETION_TIMEOUT_NS;

	for (;;) {
		int n = xr_poll_cq(cq, 1, wc);

		if (n < 0)
			return n;
		if (n == 1)
			return 0;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

/* ---- roles --------------------------------------------------------------- */

/* Returns true when the completion carries exactly what op i sent; otherwise says why. */
static bool check_receive(const struct endpoint *ep, size_t i, const struct xr_wc *wc, char *reason,
			  size_t reason_len)
{
	const struct demo_op *op = &demo_ops[i];
	const uint8_t *data = ep->buf + recv_offset(i);
	bool want_imm = op->opcode == XR_WR_SEND_WITH_IMM;

	if (wc->status != XR_WC_SUCCESS) {
		snprintf(reason, reason_len, "status %s", xr_wc_status_str(wc->status));
		return false;
	}
	if (wc->wr_id != i || wc->opcode != XR_WC_RECV) {
		snprintf(reason, reason_len, "completion for wr_id %" PRIu64 " opcode %d",
			 wc->wr_id, wc->opcode);
		return false;
	}
	if (wc->byte_len != op->size) {
		snprintf(reason, reason_len, "%" PRIu32 " bytes received", wc->byte_len);
		return false;
	}
	if (!!(wc->wc_flags & XR_WC_WITH_IMM) != want_imm) {
		snprintf(reason, reason_len, "immediate flag %s",
			 want_imm ? "missing" : "unexpected");
		return false;
	}
	if (want_imm && ntohl(wc->imm_data) != op->imm) {
		snprintf(reason, reason_len, "immediate 0x%08" PRIx32 " instead of 0x%08" PRIx32,
			 ntohl(wc->imm_data), op->imm);
		return false;
	}
	for (size_t off = 0; off < op->size; off++) {
		if (data[off] != pattern_byte(i, off)) {
			snprintf(reason, reason_len, "content differs at byte %zu", off);
			return false;
		}
	}
	return true;
}

static int post_all_receives(struct endpoint *ep)
{
	for (size_t i = 0; i < NUM_OPS; i++) {
		struct xr_sge sge = {
		    .addr = (uintptr_t)(ep->buf + recv_offset(i)),
		    .length = demo_ops[i].size,
		    .lkey = ep->mr->lkey,
		};
		struct xr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};
		struct xr_recv_wr *bad_wr;
		int err = xr_post_recv(ep->qp, &wr, &bad_wr);

		if (err)
			return err;
	}
	return 0;
}

static int run_server(struct endpoint *ep, int oob)
{
	int failures = 0;

	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct demo_op *op = &demo_ops[i];
		char size[16], reason[96], verdict[OOB_LINE_MAX];
		struct xr_wc wc;
		int err = poll_one(ep->cq, &wc);
		bool ok;

		if (err)
			snprintf(reason, sizeof(reason), "no completion: %s", strerror(-err));
		ok = !err && check_receive(ep, i, &wc, reason, sizeof(reason));
		format_size(op->size, size, sizeof(size));
		if (ok) {
			printf("received %-13s %7s  content verified%s\n", op_name(op->opcode),
			       size,
			       op->opcode == XR_WR_SEND_WITH_IMM ? ", immediate verified" : "");
			snprintf(verdict, sizeof(verdict), "ok\n");
		} else {
			printf("received %-13s %7s  FAILED: %s\n", op_name(op->opcode), size,
			       reason);
			snprintf(verdict, sizeof(verdict), "fail %s\n", reason);
			failures++;
		}
		if (oob_write_line(oob, verdict) != 0) {
			fprintf(stderr, "xroce-demo: lost the client\n");
			return failures + (int)(NUM_OPS - i - 1);
		}
		/* After a failed completion the QP is in the error state: nothing more will arrive.
		 */
		if (err || wc.status != XR_WC_SUCCESS)
			return failures + (int)(NUM_OPS - i - 1);
	}
	return failures;
}

static int run_client(struct endpoint *ep, int oob)
{
	int failures = 0;

	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct demo_op *op = &demo_ops[i];
		struct xr_sge sge = {
		    .addr = (uintptr_t)ep->buf, .length = op->size, .lkey = ep->mr->lkey};
		struct xr_send_wr wr = {
		    .wr_id = i,
		    .sg_list = &sge,
		    .num_sge = 1,
		    .opcode = op->opcode,
		    .send_flags = XR_SEND_SIGNALED,
		    .imm_data = htonl(op->imm),
		};
		struct xr_send_wr *bad_wr;
		char size[16], verdict[OOB_LINE_MAX], outcome[OOB_LINE_MAX + 16];
		struct xr_wc wc = {.status = XR_WC_GENERAL_ERR};
		int64_t start, elapsed_ns;
		bool sent, ok;
		int err;

		for (size_t off = 0; off < op->size; off++)
			ep->buf[off] = pattern_byte(i, off);
		start = now_ns();
		err = xr_post_send(ep->qp, &wr, &bad_wr);
		if (!err)
			err = poll_one(ep->cq, &wc);
		elapsed_ns = now_ns() - start;
		sent =
		    !err && wc.status == XR_WC_SUCCESS && wc.opcode == XR_WC_SEND && wc.wr_id == i;
		if (err)
			snprintf(outcome, sizeof(outcome), "send: %s", strerror(-err));
		else if (!sent)
			snprintf(outcome, sizeof(outcome), "send completion: %s",
				 xr_wc_status_str(wc.status));
		else if (oob_read_line(oob, verdict, sizeof(verdict)) != 0)
			snprintf(outcome, sizeof(outcome), "no verdict from the receiver");
		else if (strncmp(verdict, "fail ", 5) == 0)
			snprintf(outcome, sizeof(outcome), "receiver: %s", verdict + 5);
		else
			snprintf(outcome, sizeof(outcome), "%s", verdict);
		ok = sent && strcmp(outcome, "ok") == 0;
		format_size(op->size, size, sizeof(size));
		printf("%-13s %7s  %-6s %9.3f ms  %s\n", op_name(op->opcode), size,
		       ok ? "OK" : "FAILED", (double)elapsed_ns / 1e6,
		       ok ? (op->opcode == XR_WR_SEND_WITH_IMM
				 ? "receiver verified content and immediate"
				 : "receiver verified content")
			  : outcome);
		if (!ok)
			failures++;
		if (!sent)
			return failures + (int)(NUM_OPS - i - 1);
	}
	return failures;
}

static void print_connection(const struct endpoint *ep, const struct peer_info *remote)
{
	char local_gid[INET6_ADDRSTRLEN], remote_gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, ep->local.gid.raw, local_gid, sizeof(local_gid));
	inet_ntop(AF_INET6, remote->gid.raw, remote_gid, sizeof(remote_gid));
	printf("connected: local qpn 0x%06" PRIx32 " gid %s, remote qpn 0x%06" PRIx32
	       " gid %s, path MTU %d\n",
	       ep->local.qpn, local_gid, remote->qpn, remote_gid, 128 << ep->mtu);
}

static void usage(void)
{
	fprintf(stderr, "usage: xroce-demo server IFNAME\n"
			"       xroce-demo client IFNAME SERVER_IP\n");
}

int main(int argc, char **argv)
{
	bool is_server = argc == 3 && strcmp(argv[1], "server") == 0;
	bool is_client = argc == 4 && strcmp(argv[1], "client") == 0;
	struct endpoint ep = {0};
	struct peer_info remote;
	char line[OOB_LINE_MAX];
	int oob = -1, failures = (int)NUM_OPS, err;

	if (!is_server && !is_client) {
		usage();
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (endpoint_open(&ep, argv[2], is_server ? recv_offset(NUM_OPS) : largest_op()))
		goto out;
	err = endpoint_init(&ep);
	if (err) {
		fprintf(stderr, "xroce-demo: modify_qp to INIT: %s\n", strerror(-err));
		goto out;
	}
	/* Receives go first, so no SEND ever meets an empty receive queue. */
	err = is_server ? post_all_receives(&ep) : 0;
	if (err) {
		fprintf(stderr, "xroce-demo: post_recv: %s\n", strerror(-err));
		goto out;
	}
	if (is_server)
		printf("waiting for a client on TCP port %d\n", DEMO_PORT);
	oob = is_server ? oob_accept() : oob_connect(argv[3]);
	if (oob < 0) {
		fprintf(stderr, "xroce-demo: out-of-band connection: %s\n", strerror(-oob));
		goto out;
	}
	err = oob_exchange(oob, &ep.local, &remote);
	if (err) {
		fprintf(stderr, "xroce-demo: out-of-band exchange: %s\n", strerror(-err));
		goto out;
	}
	err = endpoint_connect(&ep, &remote);
	if (err) {
		fprintf(stderr, "xroce-demo: modify_qp: %s\n", strerror(-err));
		goto out;
	}
	/* The client must not send before the server's QP has left INIT. */
	if (is_server)
		err = oob_write_line(oob, "ready\n");
	else if ((err = oob_read_line(oob, line, sizeof(line))) == 0 && strcmp(line, "ready") != 0)
		err = -EPROTO;
	if (err) {
		fprintf(stderr, "xroce-demo: waiting for the peer: %s\n", strerror(-err));
		goto out;
	}
	print_connection(&ep, &remote);
	failures = is_server ? run_server(&ep, oob) : run_client(&ep, oob);
	/* The server's QP must live until the client has the ACK of its last SEND. */
	if (is_server)
		oob_read_line(oob, line, sizeof(line));
	else
		oob_write_line(oob, "done\n");
	printf("%zu of %zu operations succeeded\n", NUM_OPS - (size_t)failures, NUM_OPS);
out:
	if (oob >= 0)
		close(oob);
	endpoint_close(&ep);
	return failures == 0 ? 0 : 1;
}
