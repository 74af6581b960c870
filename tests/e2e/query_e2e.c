// SPDX-License-Identifier: MIT
/*
 * query_e2e IFNAME --speed MBPS --active-mtu ENUM --max-mtu ENUM
 *           [--peer IPV4 --peer-ns NS --peer-if IF]
 * Queries on a real device (tests/e2e/test_query_e2e.sh runs it in a
 * namespace, one end of a veth pair):
 *   - xr_query_port: ACTIVE and LINK_UP, Ethernet, the active MTU given (and
 *     xr_query_device's), the max MTU given (what the AF_XDP sockets carry:
 *     2048 on single-buffer ones, 4096 on multi-buffer ones), gid_tbl_len = num_gids, width and
 * speed from the interface's MBPS as the kernel maps them, no LIDs, one P_Key; port 0 and 2 are
 * EINVAL;
 *   - with --peer: an RC QP brought RESET -> INIT -> RTR -> RTS to the peer's
 *     address through the API, xr_query_qp after each step returns what was
 *     set, XR_QP_ALT_PATH and XR_QP_PATH_MIG_STATE are refused with
 *     EOPNOTSUPP (errno too) and change nothing; receives flushed by ERR
 *     fill a CQ on a completion channel, whose event arrives (the eventfd
 *     written after the engine released the device lock); xr_resize_cq up,
 *     down to exactly that many, and below (EINVAL) loses none of them;
 *   - then the link: `ip link set IFNAME down` makes the port DOWN and
 *     DISABLED, up makes it ACTIVE again; the peer's end down (no carrier)
 *     makes it DOWN and POLLING, as rxe reports.
 * Prints "ok ..." per check and PASS, or "FAIL: ..." and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xroce/xroce.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok   ");                                                           \
		} else {                                                                           \
			failures++;                                                                \
			printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
		}                                                                                  \
		printf(__VA_ARGS__);                                                               \
		putchar('\n');                                                                     \
		fflush(stdout);                                                                    \
	} while (0)

static const char *ifname, *peer_ip, *peer_ns, *peer_if;
static uint32_t speed_mbps;
static int expect_active_mtu, expect_max_mtu;

/* The kernel's ib_get_width_and_speed for a driver without lanes. */
static void expected_width_speed(uint32_t mbps, int *width, int *speed)
{
	if (mbps <= 1000)
		*width = XR_WIDTH_1X, *speed = XR_SPEED_SDR;
	else if (mbps <= 10000)
		*width = XR_WIDTH_1X, *speed = XR_SPEED_FDR10;
	else if (mbps <= 20000)
		*width = XR_WIDTH_4X, *speed = XR_SPEED_DDR;
	else if (mbps <= 25000)
		*width = XR_WIDTH_1X, *speed = XR_SPEED_EDR;
	else if (mbps <= 40000)
		*width = XR_WIDTH_4X, *speed = XR_SPEED_FDR10;
	else if (mbps <= 50000)
		*width = XR_WIDTH_2X, *speed = XR_SPEED_EDR;
	else if (mbps <= 100000)
		*width = XR_WIDTH_4X, *speed = XR_SPEED_EDR;
	else if (mbps <= 200000)
		*width = XR_WIDTH_4X, *speed = XR_SPEED_HDR;
	else
		*width = XR_WIDTH_4X, *speed = XR_SPEED_NDR;
}

static void check_port_up(struct xr_device *dev)
{
	struct xr_device_attr da;
	struct xr_port_attr pa;
	int width, speed;

	CHECK(xr_query_device(dev, &da) == 0, "query_device");
	memset(&pa, 0xa5, sizeof(pa));
	CHECK(xr_query_port(dev, 1, &pa) == 0, "query_port 1");
	CHECK(pa.state == XR_PORT_ACTIVE && pa.phys_state == XR_PORT_PHYS_STATE_LINK_UP,
	      "port ACTIVE (%d), phys_state LINK_UP (%d)", pa.state, pa.phys_state);
	CHECK((int)pa.active_mtu == da.active_mtu && (int)pa.active_mtu == expect_active_mtu,
	      "active_mtu %d = query_device's %d = expected %d (netdev MTU %u)", pa.active_mtu,
	      da.active_mtu, expect_active_mtu, da.netdev_mtu);
	CHECK((int)pa.max_mtu == expect_max_mtu && pa.max_mtu >= pa.active_mtu,
	      "max_mtu %d = expected %d: the largest the AF_XDP sockets carry", pa.max_mtu,
	      expect_max_mtu);
	CHECK(pa.gid_tbl_len == da.num_gids && pa.gid_tbl_len >= 2, "gid_tbl_len %d = num_gids %d",
	      pa.gid_tbl_len, da.num_gids);
	expected_width_speed(speed_mbps, &width, &speed);
	CHECK(pa.active_width == width && pa.active_speed == speed,
	      "%u Mb/s: active_width %d (want %d), active_speed %d (want %d)", speed_mbps,
	      pa.active_width, width, pa.active_speed, speed);
	CHECK(pa.link_layer == XR_LINK_LAYER_ETHERNET && pa.link_layer == 2, "link_layer Ethernet");
	CHECK(pa.lid == 0 && pa.sm_lid == 0 && pa.pkey_tbl_len == 1,
	      "lid 0, sm_lid 0, pkey_tbl_len 1");
	CHECK(pa.port_cap_flags == XR_PORT_IP_BASED_GIDS, "port_cap_flags %#x (IP_BASED_GIDS)",
	      pa.port_cap_flags);
	CHECK(pa.max_msg_sz == 1u << 30, "max_msg_sz %#x (1 GiB, as mlx5)", pa.max_msg_sz);
	CHECK(pa.bad_pkey_cntr == 0 && pa.qkey_viol_cntr == 0, "no P_Key or Q_Key violations");
	errno = 0;
	CHECK(xr_query_port(dev, 0, &pa) == -EINVAL && errno == EINVAL, "port 0: EINVAL");
	CHECK(xr_query_port(dev, 2, &pa) == -EINVAL && errno == EINVAL, "port 2: EINVAL");
	CHECK(xr_query_port(dev, 1, NULL) == -EINVAL, "no attr: EINVAL");
}

static int run(const char *cmd)
{
	int st = system(cmd);

	if (st) {
		printf("FAIL: '%s' exited %d\n", cmd, st);
		failures++;
	}
	return st;
}

/* Waits (3 s at most) for the port to reach state; returns the last query. */
static struct xr_port_attr wait_port(struct xr_device *dev, enum xr_port_state state)
{
	struct xr_port_attr pa = {0};

	for (int i = 0; i < 300; i++) {
		if (xr_query_port(dev, 1, &pa) == 0 && pa.state == state)
			break;
		usleep(10000);
	}
	return pa;
}

static void check_link_changes(struct xr_device *dev)
{
	char cmd[256];
	struct xr_port_attr pa;

	snprintf(cmd, sizeof(cmd), "ip link set dev %s down", ifname);
	run(cmd);
	pa = wait_port(dev, XR_PORT_DOWN);
	CHECK(pa.state == XR_PORT_DOWN && pa.phys_state == XR_PORT_PHYS_STATE_DISABLED,
	      "after '%s': DOWN (%d), DISABLED (%d)", cmd, pa.state, pa.phys_state);
	snprintf(cmd, sizeof(cmd), "ip link set dev %s up", ifname);
	run(cmd);
	pa = wait_port(dev, XR_PORT_ACTIVE);
	CHECK(pa.state == XR_PORT_ACTIVE && pa.phys_state == XR_PORT_PHYS_STATE_LINK_UP,
	      "after '%s': ACTIVE, LINK_UP", cmd);
	if (!peer_ns)
		return;
	snprintf(cmd, sizeof(cmd), "ip -n %s link set dev %s down", peer_ns, peer_if);
	run(cmd);
	pa = wait_port(dev, XR_PORT_DOWN);
	CHECK(pa.state == XR_PORT_DOWN && pa.phys_state == XR_PORT_PHYS_STATE_POLLING,
	      "after '%s' (no carrier): DOWN (%d), POLLING (%d)", cmd, pa.state, pa.phys_state);
	snprintf(cmd, sizeof(cmd), "ip -n %s link set dev %s up", peer_ns, peer_if);
	run(cmd);
	pa = wait_port(dev, XR_PORT_ACTIVE);
	CHECK(pa.state == XR_PORT_ACTIVE, "after '%s': ACTIVE again", cmd);
}

static int v4_gid_index(struct xr_device *dev, int num_gids)
{
	static const uint8_t v4map[12] = {[10] = 0xff, [11] = 0xff};
	union xr_gid gid;

	for (int i = 0; i < num_gids; i++)
		if (!xr_query_gid(dev, i, &gid) && !memcmp(gid.raw, v4map, 12))
			return i;
	return -1;
}

static struct xr_qp_attr query(struct xr_qp *qp, struct xr_qp_init_attr *init)
{
	struct xr_qp_attr a;

	memset(&a, 0xa5, sizeof(a));
	CHECK(xr_query_qp(qp, &a, 0, init) == 0, "query_qp in state %d", a.qp_state);
	return a;
}

#define NRECV 6

static void check_qp_and_cq(struct xr_device *dev)
{
	struct xr_qp_init_attr init = {0}, got_init;
	struct xr_comp_channel *ch;
	struct xr_device_attr da;
	struct xr_cq *scq, *rcq, *ev_cq = NULL;
	struct xr_qp_attr a, q;
	struct xr_wc wc[16];
	struct xr_pd *pd;
	struct xr_mr *mr;
	struct xr_qp *qp;
	struct pollfd pfd;
	static uint8_t buf[NRECV * 256];
	void *ev_ctx = NULL;
	int sgid, n, rc_mask;

	xr_query_device(dev, &da);
	sgid = v4_gid_index(dev, da.num_gids);
	CHECK(sgid >= 0, "an IPv4 GID at index %d", sgid);
	pd = xr_alloc_pd(dev);
	ch = xr_create_comp_channel(dev);
	scq = xr_create_cq(dev, 16, NULL);
	rcq = xr_create_cq(dev, 8, ch);
	mr = xr_reg_mr(pd, buf, sizeof(buf), XR_ACCESS_LOCAL_WRITE);
	CHECK(pd && ch && scq && rcq && mr, "PD, channel, CQs, MR");
	if (!pd || !ch || !scq || !rcq || !mr || sgid < 0)
		return;
	rcq->cq_context = (void *)0xc0ffee;
	init = (struct xr_qp_init_attr){.qp_context = (void *)0xbeef,
					.send_cq = scq,
					.recv_cq = rcq,
					.cap = {.max_send_wr = 10,
						.max_recv_wr = NRECV,
						.max_send_sge = 2,
						.max_recv_sge = 1,
						.max_inline_data = 64},
					.qp_type = XR_QPT_RC,
					.sq_sig_all = 1};
	qp = xr_create_qp(pd, &init);
	CHECK(qp != NULL, "create RC QP");
	if (!qp)
		return;

	a = query(qp, &got_init);
	CHECK(a.qp_state == XR_QPS_RESET && a.cur_qp_state == XR_QPS_RESET, "RESET");
	CHECK(got_init.qp_context == (void *)0xbeef && got_init.send_cq == scq &&
		  got_init.recv_cq == rcq && got_init.qp_type == XR_QPT_RC &&
		  got_init.sq_sig_all == 1 && !memcmp(&got_init.cap, &init.cap, sizeof(init.cap)) &&
		  !memcmp(&a.cap, &init.cap, sizeof(init.cap)),
	      "init attrs as created, cap as create returned (%u send wr, %u inline)",
	      got_init.cap.max_send_wr, got_init.cap.max_inline_data);

	q = (struct xr_qp_attr){.qp_state = XR_QPS_INIT,
				.port_num = 1,
				.qp_access_flags = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ};
	CHECK(xr_modify_qp(qp, &q,
			   XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS) == 0,
	      "to INIT");
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_INIT && a.port_num == 1 && a.pkey_index == 0 &&
		  a.qp_access_flags == (XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ),
	      "INIT: port 1, P_Key index 0, access flags");

	q = (struct xr_qp_attr){.qp_state = XR_QPS_RTR,
				.path_mtu = XR_MTU_1024,
				.dest_qp_num = 0x1234,
				.rq_psn = 0xabcdef,
				.max_dest_rd_atomic = 4,
				.min_rnr_timer = 12,
				.ah_attr = {.is_global = 1,
					    .port_num = 1,
					    .grh = {.sgid_index = (uint8_t)sgid, .hop_limit = 9}}};
	q.ah_attr.grh.dgid.raw[10] = q.ah_attr.grh.dgid.raw[11] = 0xff;
	inet_pton(AF_INET, peer_ip, &q.ah_attr.grh.dgid.raw[12]);
	rc_mask = XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN |
		  XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER;
	errno = 0;
	CHECK(xr_modify_qp(qp, &q, rc_mask | XR_QP_ALT_PATH) == -EOPNOTSUPP && errno == EOPNOTSUPP,
	      "INIT->RTR with XR_QP_ALT_PATH: EOPNOTSUPP");
	CHECK(query(qp, NULL).qp_state == XR_QPS_INIT, "still INIT");
	CHECK(xr_modify_qp(qp, &q, rc_mask) == 0, "to RTR (peer %s)", peer_ip);
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTR && a.path_mtu == XR_MTU_1024 && a.dest_qp_num == 0x1234 &&
		  a.rq_psn == 0xabcdef && a.max_dest_rd_atomic == 4 && a.min_rnr_timer == 12,
	      "RTR: path_mtu, dest_qp_num, rq_psn, max_dest_rd_atomic, min_rnr_timer");
	CHECK(a.ah_attr.is_global && a.ah_attr.port_num == 1 && a.ah_attr.dlid == 0 &&
		  a.ah_attr.grh.sgid_index == sgid && a.ah_attr.grh.hop_limit == 9 &&
		  !memcmp(&a.ah_attr.grh.dgid, &q.ah_attr.grh.dgid, 16),
	      "RTR: ah_attr (dgid, sgid_index, hop_limit, port 1)");

	q = (struct xr_qp_attr){.qp_state = XR_QPS_RTS,
				.sq_psn = 0x42,
				.timeout = 14,
				.retry_cnt = 7,
				.rnr_retry = 6,
				.max_rd_atomic = 2};
	rc_mask = XR_QP_STATE | XR_QP_SQ_PSN | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
		  XR_QP_MAX_QP_RD_ATOMIC;
	errno = 0;
	CHECK(xr_modify_qp(qp, &q, rc_mask | XR_QP_PATH_MIG_STATE) == -EOPNOTSUPP &&
		  errno == EOPNOTSUPP,
	      "RTR->RTS with XR_QP_PATH_MIG_STATE: EOPNOTSUPP");
	CHECK(xr_modify_qp(qp, &q, rc_mask | XR_QP_ALT_PATH) == -EOPNOTSUPP,
	      "RTR->RTS with XR_QP_ALT_PATH: EOPNOTSUPP");
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTR && a.sq_psn == 0, "still RTR, sq_psn untouched");
	CHECK(xr_modify_qp(qp, &q, rc_mask) == 0, "to RTS");
	a = query(qp, NULL);
	CHECK(a.qp_state == XR_QPS_RTS && a.sq_psn == 0x42 && a.timeout == 14 && a.retry_cnt == 7 &&
		  a.rnr_retry == 6 && a.max_rd_atomic == 2 && a.path_mig_state == XR_MIG_MIGRATED &&
		  !a.alt_port_num && !a.sq_draining,
	      "RTS: sq_psn, timeout, retry_cnt, rnr_retry, max_rd_atomic; no alternate path");

	/* NRECV receives, flushed by ERR onto the armed CQ on the channel. */
	for (int i = 0; i < NRECV; i++) {
		struct xr_sge sge = {
		    .addr = (uintptr_t)(buf + i * 256), .length = 256, .lkey = mr->lkey};
		struct xr_recv_wr wr = {.wr_id = 500 + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
		struct xr_recv_wr *bad;

		CHECK(xr_post_recv(qp, &wr, &bad) == 0, "post receive %d", 500 + i);
	}
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	CHECK(xr_req_notify_cq(rcq, 0) == 0, "arm the receive CQ");
	q = (struct xr_qp_attr){.qp_state = XR_QPS_ERR};
	CHECK(xr_modify_qp(qp, &q, XR_QP_STATE) == 0, "to ERR");
	CHECK(query(qp, NULL).qp_state == XR_QPS_ERR, "query says ERR");
	pfd = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	CHECK(poll(&pfd, 1, 2000) == 1, "the channel's fd is readable (the flush's event)");
	CHECK(xr_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == rcq &&
		  ev_ctx == (void *)0xc0ffee,
	      "the event is the receive CQ's, with its context");
	CHECK(xr_get_cq_event(ch, &ev_cq, &ev_ctx) == -EAGAIN, "one event per arming");

	errno = 0;
	CHECK(xr_resize_cq(rcq, NRECV - 1) == -EINVAL && errno == EINVAL,
	      "resize below the %d queued: EINVAL", NRECV);
	CHECK(xr_resize_cq(rcq, 0) == -EINVAL && xr_resize_cq(rcq, (int)da.max_cqe + 1) == -EINVAL,
	      "resize to 0 or above max_cqe (%u): EINVAL", da.max_cqe);
	CHECK(xr_resize_cq(rcq, 300) == 0 && rcq->cqe >= 300, "resize up to 300: cqe %d", rcq->cqe);
	CHECK(xr_resize_cq(rcq, NRECV) == 0 && rcq->cqe >= NRECV, "resize down to %d: cqe %d",
	      NRECV, rcq->cqe);
	n = xr_poll_cq(rcq, 16, wc);
	CHECK(n == NRECV, "%d flushed receives polled after resizing", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == 500 + (uint64_t)i && wc[i].status == XR_WC_WR_FLUSH_ERR,
		      "#%d: wr_id %llu, %s", i, (unsigned long long)wc[i].wr_id,
		      xr_wc_status_str(wc[i].status));
	xr_ack_cq_events(rcq, 1);

	CHECK(xr_destroy_qp(qp) == 0, "destroy QP");
	xr_dereg_mr(mr);
	CHECK(xr_destroy_cq(rcq) == 0 && xr_destroy_cq(scq) == 0, "destroy CQs");
	CHECK(xr_destroy_comp_channel(ch) == 0, "destroy the channel");
	xr_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	struct xr_device *dev;

	if (argc < 2) {
		fprintf(stderr,
			"usage: query_e2e IFNAME --speed MBPS --active-mtu ENUM --max-mtu ENUM "
			"[--peer IPV4 --peer-ns NS --peer-if IF]\n");
		return 2;
	}
	ifname = argv[1];
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--speed"))
			speed_mbps = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--active-mtu"))
			expect_active_mtu = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--max-mtu"))
			expect_max_mtu = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--peer"))
			peer_ip = argv[i + 1];
		else if (!strcmp(argv[i], "--peer-ns"))
			peer_ns = argv[i + 1];
		else if (!strcmp(argv[i], "--peer-if"))
			peer_if = argv[i + 1];
		else
			return fprintf(stderr, "query_e2e: unknown option %s\n", argv[i]), 2;
	}
	dev = xr_open_device(ifname, NULL);
	if (!dev) {
		printf("FAIL: open %s: %s\n", ifname, xr_strerror(errno));
		return 1;
	}
	check_port_up(dev);
	if (peer_ip)
		check_qp_and_cq(dev);
	if (peer_ns)
		check_link_changes(dev);
	CHECK(xr_close_device(dev) == 0, "close");
	if (failures)
		printf("FAIL (%d checks)\n", failures);
	else
		printf("PASS\n");
	return failures ? 1 : 0;
}
