// SPDX-License-Identifier: MIT
/*
 * A process sharing a device whose owner goes (user/lib/share.h), through
 * unmodified libibverbs calls:
 *
 *   owner_gone hold DEVICE    opens DEVICE first, so owns it; prints
 *                             "owner_gone hold: pid N" and waits to be killed
 *                             (60 s at most, then fails)
 *   owner_gone share DEVICE   opens DEVICE after that, sharing the owner's;
 *                             with an RC QP in INIT and a receive posted,
 *                             prints "owner_gone share: ready" and waits 20 s
 *                             at most for the owner to go
 *
 * When the owner goes, the sharer must get IBV_EVENT_DEVICE_FATAL on its
 * async fd, its posted receive must complete with IBV_WC_WR_FLUSH_ERR, its
 * QP must be in ERR, and everything must be destroyed and closed cleanly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_PROGRAM "owner_gone"
#include "../check.h"
#include "../qp_setup.h"

#define HOLD_MS 60000
#define WAIT_MS 20000
#define RECV_WR_ID 0x5eedull

static void hold(const char *name)
{
	struct ibv_context *ctx = open_device(name);
	long long until = now_ms() + HOLD_MS;

	printf(CHECK_PROGRAM " hold: pid %d\n", (int)getpid());
	fflush(stdout);
	while (now_ms() < until)
		sleep(1);
	ibv_close_device(ctx);
	CHECK(0, "the owner was not killed within %d ms", HOLD_MS);
}

static void share(const char *name)
{
	struct ibv_context *ctx = open_device(name);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr init = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	static char buf[64];
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_sge sge;
	struct ibv_recv_wr wr = {.wr_id = RECV_WR_ID, .sg_list = &sge, .num_sge = 1}, *bad;
	struct ibv_async_event ev;
	struct ibv_qp_attr attr;
	struct ibv_wc wc;
	struct pollfd pfd;
	long long until;
	int n = 0;

	CHECK(cq != NULL, "ibv_alloc_pd / ibv_create_cq: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "ibv_reg_mr: %s", strerror(errno));
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	CHECK(qp != NULL, "ibv_create_qp: %s", strerror(errno));
	rc_to_init(qp, 0, "INIT");
	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = mr->lkey};
	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "ibv_post_recv");
	printf(CHECK_PROGRAM " share: ready\n");
	fflush(stdout);

	pfd = (struct pollfd){.fd = ctx->async_fd, .events = POLLIN};
	CHECK(poll(&pfd, 1, WAIT_MS) == 1, "no asynchronous event within %d ms", WAIT_MS);
	CHECK(ibv_get_async_event(ctx, &ev) == 0, "ibv_get_async_event: %s", strerror(errno));
	CHECK(ev.event_type == IBV_EVENT_DEVICE_FATAL, "event %s, want IBV_EVENT_DEVICE_FATAL",
	      ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);

	until = now_ms() + 5000;
	while (n == 0 && now_ms() < until)
		n = ibv_poll_cq(cq, 1, &wc);
	CHECK(n == 1, "the posted receive did not complete (ibv_poll_cq %d)", n);
	CHECK(wc.wr_id == RECV_WR_ID && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "completion wr_id %#llx status %s, want %#llx IBV_WC_WR_FLUSH_ERR",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), RECV_WR_ID);
	CHECK(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0, "ibv_query_qp");
	CHECK(attr.qp_state == IBV_QPS_ERR, "QP state %d, want IBV_QPS_ERR", attr.qp_state);

	CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	CHECK_SUMMARY();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "hold"))
		hold(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "share"))
		share(argv[2]);
	else
		CHECK(0, "usage: owner_gone hold|share DEVICE");
	return 0;
}
