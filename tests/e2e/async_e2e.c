/* SPDX-License-Identifier: MIT */
/*
 * One end of the asynchronous-events test (test_async_e2e.sh), driven line
 * by line from stdin (tests/e2e/members.sh):
 *
 *   async_e2e IFNAME
 *
 * It opens IFNAME's device with two RC QPs: QP 0 with a receive queue of
 * its own, QP 1 on an SRQ, one CQ, and an epoll set holding the async fd
 * (xr_async_fd). First line: "ready QPN0 QPN1 GID" (its first IPv4 GID).
 * Commands, each answered with one line, "ok ..." or "error ...":
 *   rtr QPN0 QPN1 GID   both QPs to RTR towards the peer's (PSN 0 each way)
 *   rts                 both QPs to RTS
 *   recv Q N            N receives: on QP 0's queue, or (Q 1) on the SRQ
 *   send Q              one signaled 64-byte SEND on QP Q (not waited for)
 *   arm LIMIT           xr_modify_srq(XR_SRQ_LIMIT)
 *   err Q               QP Q to ERR
 *   sqd Q | resume Q    QP Q from RTS to SQD (asking for SQ_DRAINED), or back
 *   quiet MS            epoll_wait on the async fd for MS: nothing may come
 *   expect NAME MS      epoll_wait until the fd is readable (MS at most), then
 *                       xr_get_async_event: it must be NAME (COMM_EST, ...) and
 *                       about the right object; acknowledged; "ok NAME"
 *   empty               the fd non-blocking, xr_get_async_event: EAGAIN
 *   gids                "ok gids I=GID ..." of the GID table (empty entries "-")
 *   quit
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "e2e_common.h"

#define BUF_SIZE 4096
#define MSG 64
#define SLOTS 32

static const char *const event_names[] = {
    [XR_EVENT_CQ_ERR] = "CQ_ERR",
    [XR_EVENT_QP_FATAL] = "QP_FATAL",
    [XR_EVENT_COMM_EST] = "COMM_EST",
    [XR_EVENT_SQ_DRAINED] = "SQ_DRAINED",
    [XR_EVENT_PORT_ACTIVE] = "PORT_ACTIVE",
    [XR_EVENT_PORT_ERR] = "PORT_ERR",
    [XR_EVENT_SRQ_LIMIT_REACHED] = "SRQ_LIMIT_REACHED",
    [XR_EVENT_QP_LAST_WQE_REACHED] = "QP_LAST_WQE_REACHED",
    [XR_EVENT_GID_CHANGE] = "GID_CHANGE",
};

static struct e2e_port port;
static struct xr_cq *cq;
static struct xr_srq *srq;
static struct xr_qp *qps[2];
static struct xr_mr *mr;
static uint8_t *buf;
static int epfd;
static unsigned int slot;

static const char *event_name(enum xr_event_type t)
{
	if ((unsigned)t < sizeof(event_names) / sizeof(event_names[0]) && event_names[t])
		return event_names[t];
	return "OTHER";
}

static int setup(const char *ifname)
{
	struct xr_srq_init_attr sinit = {.attr = {.max_wr = SLOTS, .max_sge = 1}};
	struct epoll_event ev = {.events = EPOLLIN};
	char text[INET6_ADDRSTRLEN];

	if (e2e_open_port("async_e2e", ifname, -1, &port))
		return -1;
	cq = xr_create_cq(port.dev, 256, NULL);
	srq = xr_create_srq(port.pd, &sinit);
	buf = calloc(1, BUF_SIZE);
	if (!cq || !srq || !buf)
		return -1;
	mr = xr_reg_mr(port.pd, buf, BUF_SIZE, XR_ACCESS_LOCAL_WRITE);
	for (int q = 0; q < 2 && mr; q++) {
		struct xr_qp_init_attr init = {
		    .send_cq = cq,
		    .recv_cq = cq,
		    .srq = q ? srq : NULL,
		    .cap = {.max_send_wr = 16,
			    .max_recv_wr = 16,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		    .qp_type = XR_QPT_RC,
		    .sq_sig_all = 1,
		};

		qps[q] = xr_create_qp(port.pd, &init);
		if (!qps[q] || qp_to_init(qps[q], 1, 0))
			return -1;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = xr_async_fd(port.dev);
	if (!mr || epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
		return -1;
	inet_ntop(AF_INET6, port.gid.raw, text, sizeof(text));
	printf("ready %#x %#x %s\n", qps[0]->qp_num, qps[1]->qp_num, text);
	return 0;
}

static struct xr_sge next_sge(void)
{
	struct xr_sge sge = sge_of(mr, buf + (slot % SLOTS) * MSG, MSG);

	slot++;
	return sge;
}

static void cmd_expect(const char *name, int ms)
{
	struct epoll_event ready;
	struct xr_async_event ev;
	bool about_port;
	int n = epoll_wait(epfd, &ready, 1, ms), err;

	if (n != 1) {
		printf("error no event within %d ms\n", ms);
		return;
	}
	err = xr_get_async_event(port.dev, &ev);
	if (err) {
		printf("error xr_get_async_event: %s\n", strerror(-err));
		return;
	}
	about_port = ev.event_type == XR_EVENT_PORT_ACTIVE || ev.event_type == XR_EVENT_PORT_ERR ||
		     ev.event_type == XR_EVENT_GID_CHANGE;
	if (strcmp(event_name(ev.event_type), name))
		printf("error got %s, expected %s\n", event_name(ev.event_type), name);
	else if (about_port && ev.element.port_num != 1)
		printf("error %s for port %d\n", name, ev.element.port_num);
	else if (ev.event_type == XR_EVENT_SRQ_LIMIT_REACHED && ev.element.srq != srq)
		printf("error %s for another SRQ\n", name);
	else if (!about_port && ev.event_type != XR_EVENT_SRQ_LIMIT_REACHED &&
		 ev.element.qp != qps[0] && ev.element.qp != qps[1])
		printf("error %s for another QP\n", name);
	else
		printf("ok %s%s\n", name,
		       about_port || ev.event_type == XR_EVENT_SRQ_LIMIT_REACHED ? ""
		       : ev.element.qp == qps[0]				 ? " qp 0"
										 : " qp 1");
	xr_ack_async_event(&ev);
}

static void cmd_gids(void)
{
	struct xr_device_attr attr;

	xr_query_device(port.dev, &attr);
	printf("ok gids");
	for (int i = 0; i < attr.num_gids; i++) {
		static const union xr_gid empty;
		char text[INET6_ADDRSTRLEN];
		union xr_gid gid;

		if (xr_query_gid(port.dev, i, &gid) || !memcmp(&gid, &empty, sizeof(gid)))
			printf(" %d=-", i);
		else
			printf(" %d=%s", i, inet_ntop(AF_INET6, gid.raw, text, sizeof(text)));
	}
	printf("\n");
}

static void answer(const char *what, int err)
{
	if (err)
		printf("error %s: %s\n", what, strerror(err < 0 ? -err : err));
	else
		printf("ok %s\n", what);
}

static void run(void)
{
	char line[256], gid_text[INET6_ADDRSTRLEN];
	unsigned int a, b;

	while (fgets(line, sizeof(line), stdin)) {
		struct xr_wc wc;

		/* Completions are not this test's subject: take them so the CQ never fills. */
		while (xr_poll_cq(cq, 1, &wc) == 1)
			;
		if (sscanf(line, "rtr %x %x %45s", &a, &b, gid_text) == 3) {
			struct qp_rtr_attr rtr = {.path_mtu = XR_MTU_1024,
						  .sgid_index = (uint8_t)port.gid_index,
						  .port_num = 1,
						  .hop_limit = 64,
						  .max_dest_rd_atomic = 1,
						  .min_rnr_timer = 1};
			int err = inet_pton(AF_INET6, gid_text, rtr.dgid.raw) == 1 ? 0 : -EINVAL;

			rtr.dest_qpn = a;
			if (!err)
				err = qp_to_rtr(qps[0], &rtr);
			rtr.dest_qpn = b;
			if (!err)
				err = qp_to_rtr(qps[1], &rtr);
			answer("rtr", err);
		} else if (!strncmp(line, "rts", 3)) {
			int err = qp_to_rts(qps[0], 0, 1);

			answer("rts", err ? err : qp_to_rts(qps[1], 0, 1));
		} else if (sscanf(line, "recv %u %u", &a, &b) == 2 && a < 2) {
			int err = 0;

			for (unsigned int i = 0; i < b && !err; i++) {
				struct xr_sge sge = next_sge();
				struct xr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};
				struct xr_recv_wr *bad;

				err = a ? xr_post_srq_recv(srq, &wr, &bad)
					: xr_post_recv(qps[0], &wr, &bad);
			}
			answer("recv", err);
		} else if (sscanf(line, "send %u", &a) == 1 && a < 2) {
			struct xr_sge sge = next_sge();
			struct xr_send_wr wr = {
			    .sg_list = &sge, .num_sge = 1, .opcode = XR_WR_SEND};
			struct xr_send_wr *bad;

			answer("send", xr_post_send(qps[a], &wr, &bad));
		} else if (sscanf(line, "arm %u", &a) == 1) {
			struct xr_srq_attr attr = {.srq_limit = a};

			answer("arm", xr_modify_srq(srq, &attr, XR_SRQ_LIMIT));
		} else if (sscanf(line, "sqd %u", &a) == 1 && a < 2) {
			struct xr_qp_attr attr = {.qp_state = XR_QPS_SQD, .en_sqd_async_notify = 1};

			answer("sqd", xr_modify_qp(qps[a], &attr,
						   XR_QP_STATE | XR_QP_EN_SQD_ASYNC_NOTIFY));
		} else if (sscanf(line, "resume %u", &a) == 1 && a < 2) {
			struct xr_qp_attr attr = {.qp_state = XR_QPS_RTS};

			answer("resume", xr_modify_qp(qps[a], &attr, XR_QP_STATE));
		} else if (sscanf(line, "err %u", &a) == 1 && a < 2) {
			struct xr_qp_attr attr = {.qp_state = XR_QPS_ERR};

			answer("err", xr_modify_qp(qps[a], &attr, XR_QP_STATE));
		} else if (sscanf(line, "quiet %u", &a) == 1) {
			struct epoll_event ready;
			int n = epoll_wait(epfd, &ready, 1, (int)a);

			answer("quiet", n == 0 ? 0 : n < 0 ? errno : EEXIST);
		} else if (sscanf(line, "expect %45s %u", gid_text, &a) == 2) {
			cmd_expect(gid_text, (int)a);
		} else if (!strncmp(line, "empty", 5)) {
			struct xr_async_event ev;
			int fd = xr_async_fd(port.dev), err;

			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			err = xr_get_async_event(port.dev, &ev);
			answer("empty", err == -EAGAIN ? 0 : err ? err : EEXIST);
		} else if (!strncmp(line, "gids", 4)) {
			cmd_gids();
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("error unknown command: %s", line);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: async_e2e IFNAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (setup(argv[1])) {
		fprintf(stderr, "async_e2e: setup failed: %s\n", strerror(errno));
		return 1;
	}
	run();
	for (int q = 0; q < 2; q++)
		if (qps[q] && xr_destroy_qp(qps[q]))
			fprintf(stderr, "async_e2e: destroy QP %d: %s\n", q, strerror(errno));
	xr_destroy_srq(srq);
	xr_dereg_mr(mr);
	xr_destroy_cq(cq);
	free(buf);
	e2e_close_port(&port);
	return 0;
}
