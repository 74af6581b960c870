/* SPDX-License-Identifier: MIT */
/*
 * async server DEV GID_INDEX PORT
 * async client DEV GID_INDEX PORT SERVER_IPV4
 *
 * Fork safety, the asynchronous events and the shared receive queue end to
 * end, built against Debian's -libverbs like any application and run under
 * xroce-run (with RDMAV_FORK_SAFE=1), one side per namespace (QP numbers,
 * PSNs, GIDs and keys over TCP). The server:
 *   1. ibv_fork_init is 0 and fork is IBV_FORK_UNNEEDED; the async_fd made
 *      non-blocking, drained, then EAGAIN;
 *   2. an SRQ: what ibv_create_srq and ibv_query_srq report, a limit above
 *      max_wr refused with EINVAL; two RC QPs on it, whose ibv_post_recv is
 *      EINVAL; 8 receives posted in one chain, the limit armed at 4; the QPs
 *      go to RTR only, which receives and acknowledges;
 *   3. fork(): the child writes the registered write area and exits, the
 *      parent writes it too (its own page now), then the client's RDMA
 *      WRITE must land in what the parent sees, and the client's RDMA
 *      READ of the page must return it;
 *   4. the client's 5 SENDs, alternating its two QPs, take the SRQ's
 *      receives in posted order; then COMM_EST for each QP and
 *      SRQ_LIMIT_REACHED, each through poll() on the async_fd, after which
 *      the limit is disarmed;
 *   5. ibv_destroy_srq is EBUSY while QPs use it; QP0 moved to ERR raises
 *      LAST_WQE_REACHED; then nothing is queued (EAGAIN); teardown.
 * The client brings its QPs to RTS and does the WRITE, the READ and the SENDs,
 * checking each completion.
 * Prints "async SIDE: ok: N checks" and exits 0, or names the first failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK_PROGRAM "async"
#include "../check.h"
#include "../two_sided.h"

#define BUF_SIZE (64 * 1024)
#define RECV_SLOT 1024	     /* the SRQ's receives: slots from 0 */
#define WRITE_AREA 16384     /* page-aligned: the page the fork copies */
#define WRITE_LEN 4096	     /* the client's WRITE */
#define SOURCE_AREA 32768    /* the client's WRITE data, then its SENDs' */
#define READ_BACK_AREA 49152 /* where the client READs the server's page back */
#define NUM_QPS 2
#define SRQ_RECVS 8
#define SRQ_LIMIT 4
#define NUM_SENDS 5
#define FIRST_RECV_ID 100
#define TIMEOUT_MS 20000
#define SEND_SEED(k) (11 + 2 * (unsigned int)(k))

/* Distinct, and each fits a receive slot; after the 5th, 3 < SRQ_LIMIT remain. */
static const uint32_t send_len[NUM_SENDS] = {700, 64, 1024, 5, 333};

struct peer {
	uint32_t qpn[NUM_QPS], psn[NUM_QPS], rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[NUM_QPS];
	uint32_t psn[NUM_QPS];
	int gid_index;
	union ibv_gid gid;
	struct peer remote;
	int sock;
};

static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	long long deadline = now_ms() + TIMEOUT_MS;
	int n = 0;

	while (n == 0 && now_ms() < deadline)
		n = ibv_poll_cq(cq, 1, wc);
	CHECK(n >= 0, "%s: ibv_poll_cq: %d", what, n);
	CHECK(n == 1, "%s: no completion in %d ms", what, TIMEOUT_MS);
}

/* ---- the async_fd -------------------------------------------------------------- */

static void expect_no_event(struct side *s, const char *when)
{
	struct ibv_async_event ev;
	int ret;

	errno = 0;
	ret = ibv_get_async_event(s->ctx, &ev);
	CHECK(ret == -1 && errno == EAGAIN,
	      "%s: ibv_get_async_event %d (%s, event %s), want EAGAIN", when, ret, strerror(errno),
	      ret ? "none" : ibv_event_type_str(ev.event_type));
}

static void nonblocking_and_drained(struct side *s)
{
	int fd = s->ctx->async_fd, flags = fcntl(fd, F_GETFL);
	struct ibv_async_event ev;

	CHECK(flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0,
	      "async_fd %d O_NONBLOCK: %s", fd, strerror(errno));
	for (int i = 0; i < 64 && ibv_get_async_event(s->ctx, &ev) == 0; i++)
		ibv_ack_async_event(&ev);
	expect_no_event(s, "with nothing queued");
}

/* The next event, through poll() on the async_fd as an event loop waits for one. */
static void await_event(struct side *s, struct ibv_async_event *ev, long long deadline,
			const char *what)
{
	struct pollfd p = {.fd = s->ctx->async_fd, .events = POLLIN};
	long long left = deadline - now_ms();
	int n;

	do
		n = poll(&p, 1, left > 0 ? (int)left : 0);
	while (n < 0 && errno == EINTR && now_ms() < deadline);
	CHECK(n == 1 && (p.revents & POLLIN), "%s: async_fd not readable in %d ms (poll %d: %s)",
	      what, TIMEOUT_MS, n, n < 0 ? strerror(errno) : "timed out");
	CHECK(ibv_get_async_event(s->ctx, ev) == 0, "%s: ibv_get_async_event after POLLIN: %s",
	      what, strerror(errno));
}

/* ---- setup --------------------------------------------------------------------- */

static void query_srq(struct side *s, struct ibv_srq_attr *a, uint32_t want_limit, const char *when)
{
	int ret = ibv_query_srq(s->srq, a);

	CHECK(ret == 0, "ibv_query_srq %s: %s", when, strerror(ret));
	CHECK(a->max_wr >= 16 && a->max_sge >= 1, "ibv_query_srq %s: max_wr %u max_sge %u", when,
	      a->max_wr, a->max_sge);
	CHECK(a->srq_limit == want_limit, "ibv_query_srq %s: srq_limit %u, want %u", when,
	      a->srq_limit, want_limit);
}

static void create_srq(struct side *s)
{
	static int marker;
	struct ibv_srq_init_attr init = {.srq_context = &marker,
					 .attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq_attr a;
	int ret;

	s->srq = ibv_create_srq(s->pd, &init);
	CHECK(s->srq != NULL, "ibv_create_srq: %s", strerror(errno));
	CHECK(init.attr.max_wr >= 16, "ibv_create_srq gave max_wr %u, want >= 16",
	      init.attr.max_wr);
	CHECK(s->srq->srq_context == &marker && s->srq->pd == s->pd && s->srq->context == s->ctx,
	      "srq_context %p pd %p context %p: not what was passed", s->srq->srq_context,
	      (void *)s->srq->pd, (void *)s->srq->context);
	query_srq(s, &a, 0, "after create");
	a = (struct ibv_srq_attr){.srq_limit = 100000};
	ret = ibv_modify_srq(s->srq, &a, IBV_SRQ_LIMIT);
	CHECK(ret == EINVAL, "srq_limit 100000 above max_wr: %d, want EINVAL", ret);
	query_srq(s, &a, 0, "after the refused limit");
}

static struct ibv_qp *create_qp(struct side *s)
{
	struct ibv_qp_init_attr attr = {
	    .send_cq = s->scq,
	    .recv_cq = s->rcq,
	    .srq = s->srq,
	    .cap = {.max_send_wr = 8,
		    .max_recv_wr = s->srq ? 0 : 1,
		    .max_send_sge = 1,
		    .max_recv_sge = s->srq ? 0 : 1},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &attr);
	struct ibv_qp_init_attr got;
	struct ibv_qp_attr a;

	CHECK(qp != NULL, "ibv_create_qp: %s", strerror(errno));
	if (s->srq) {
		CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &got) == 0, "ibv_query_qp");
		CHECK(got.srq == s->srq, "ibv_query_qp: init_attr.srq %p, want %p", (void *)got.srq,
		      (void *)s->srq);
	}
	return qp;
}

static void to_init(struct side *s)
{
	for (int k = 0; k < NUM_QPS; k++)
		rc_to_init(s->qp[k], IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "INIT");
}

/* The server's QPs stop at RTR: a responder there receives and acknowledges. */
static void bring_up(struct side *s, bool to_rts)
{
	for (int k = 0; k < NUM_QPS; k++) {
		rc_to_rtr(s->qp[k], s->remote.qpn[k], s->remote.psn[k], &s->remote.gid,
			  s->gid_index, 1, "RTR");
		if (to_rts)
			rc_to_rts(s->qp[k], s->psn[k], 1, "RTS");
	}
}

static void post_srq_receives(struct side *s)
{
	struct ibv_sge sge[SRQ_RECVS];
	struct ibv_recv_wr wr[SRQ_RECVS], *bad = NULL, refused, *refused_bad = NULL;
	struct ibv_srq_attr a = {.srq_limit = SRQ_LIMIT};
	int ret;

	for (int i = 0; i < SRQ_RECVS; i++) {
		sge[i] = (struct ibv_sge){.addr = (uintptr_t)(s->buf + (size_t)i * RECV_SLOT),
					  .length = RECV_SLOT,
					  .lkey = s->mr->lkey};
		wr[i] = (struct ibv_recv_wr){.wr_id = FIRST_RECV_ID + (uint64_t)i,
					     .next = i + 1 < SRQ_RECVS ? &wr[i + 1] : NULL,
					     .sg_list = &sge[i],
					     .num_sge = 1};
	}
	/* Had it been taken, it would be the first receive the SENDs complete. */
	refused = (struct ibv_recv_wr){.wr_id = 999, .sg_list = &sge[0], .num_sge = 1};
	for (int k = 0; k < NUM_QPS; k++) {
		ret = ibv_post_recv(s->qp[k], &refused, &refused_bad);
		CHECK(ret == EINVAL && refused_bad == &refused,
		      "ibv_post_recv on QP%d of an SRQ: %d, want EINVAL at the WR", k, ret);
	}
	ret = ibv_post_srq_recv(s->srq, wr, &bad);
	CHECK(ret == 0, "ibv_post_srq_recv of %d: %s", SRQ_RECVS, strerror(ret));
	ret = ibv_modify_srq(s->srq, &a, IBV_SRQ_LIMIT);
	CHECK(ret == 0, "ibv_modify_srq srq_limit %d: %s", SRQ_LIMIT, strerror(ret));
	query_srq(s, &a, SRQ_LIMIT, "after arming");
}

static void setup(struct side *s, const char *dev, int gid_index, bool server)
{
	struct peer me;

	s->ctx = open_device(dev);
	if (server)
		nonblocking_and_drained(s);
	s->gid_index = gid_index;
	CHECK(ibv_query_gid(s->ctx, 1, gid_index, &s->gid) == 0, "ibv_query_gid %d", gid_index);
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd != NULL, "ibv_alloc_pd");
	s->buf = aligned_alloc(4096, BUF_SIZE);
	CHECK(s->buf != NULL, "buffer");
	memset(s->buf, 0, BUF_SIZE);
	for (size_t i = 0; i < WRITE_LEN; i++)
		s->buf[SOURCE_AREA + i] = pattern(i, 7);
	for (int k = 0; k < NUM_SENDS; k++)
		for (size_t i = 0; i < send_len[k]; i++)
			s->buf[SOURCE_AREA + WRITE_LEN + (size_t)k * RECV_SLOT + i] =
			    pattern(i, SEND_SEED(k));
	s->mr =
	    ibv_reg_mr(s->pd, s->buf, BUF_SIZE,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(s->mr != NULL, "ibv_reg_mr: %s", strerror(errno));
	s->scq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
	CHECK(s->scq && s->rcq, "ibv_create_cq: %s", strerror(errno));
	if (server)
		create_srq(s);
	srand48(time(NULL) ^ getpid());
	for (int k = 0; k < NUM_QPS; k++) {
		s->qp[k] = create_qp(s);
		s->psn[k] = (uint32_t)lrand48() & 0xffffff;
	}
	to_init(s);
	/* The server's receives are there before the client can send. */
	if (server)
		post_srq_receives(s);
	me = (struct peer){.rkey = s->mr->rkey, .addr = (uintptr_t)s->buf, .gid = s->gid};
	for (int k = 0; k < NUM_QPS; k++) {
		me.qpn[k] = s->qp[k]->qp_num;
		me.psn[k] = s->psn[k];
	}
	side_xfer(s->sock, &me, sizeof(me), true, "QP numbers");
	side_xfer(s->sock, &s->remote, sizeof(s->remote), false, "the peer's QP numbers");
	bring_up(s, !server);
}

static void teardown(struct side *s)
{
	int ret;

	for (int k = 0; k < NUM_QPS; k++)
		CHECK(ibv_destroy_qp(s->qp[k]) == 0, "ibv_destroy_qp QP%d", k);
	if (s->srq) {
		ret = ibv_destroy_srq(s->srq);
		CHECK(ret == 0, "ibv_destroy_srq without QPs: %s", strerror(ret));
	}
	CHECK(ibv_destroy_cq(s->scq) == 0 && ibv_destroy_cq(s->rcq) == 0, "ibv_destroy_cq");
	CHECK(ibv_dereg_mr(s->mr) == 0 && ibv_dealloc_pd(s->pd) == 0, "dereg/dealloc");
	CHECK(ibv_close_device(s->ctx) == 0, "ibv_close_device");
	free(s->buf);
	close(s->sock);
}

/* ---- the client ---------------------------------------------------------------- */

static void post_send_and_complete(struct side *s, int k, enum ibv_wr_opcode opcode, size_t off,
				   uint32_t len, uint64_t wr_id, const char *what)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(s->buf + off), .length = len, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = opcode,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad = NULL;
	enum ibv_wc_opcode want = opcode == IBV_WR_SEND	       ? IBV_WC_SEND
				  : opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ
							       : IBV_WC_RDMA_WRITE;
	struct ibv_wc wc;
	int ret;

	if (opcode != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = s->remote.addr + WRITE_AREA;
		wr.wr.rdma.rkey = s->remote.rkey;
	}
	ret = ibv_post_send(s->qp[k], &wr, &bad);
	CHECK(ret == 0, "%s: ibv_post_send on QP%d: %s", what, k, strerror(ret));
	poll_one(s->scq, &wc, what);
	CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_SUCCESS,
	      "%s: wr_id %llu status %s, want %llu success", what, (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), (unsigned long long)wr_id);
	CHECK(wc.opcode == want && wc.qp_num == s->qp[k]->qp_num,
	      "%s: opcode %d qp_num 0x%x, want %d 0x%x", what, wc.opcode, wc.qp_num, want,
	      s->qp[k]->qp_num);
}

static void client(struct side *s)
{
	char what[32];

	side_hear(s->sock, 'W');
	post_send_and_complete(s, 0, IBV_WR_RDMA_WRITE, SOURCE_AREA, WRITE_LEN, 1,
			       "WRITE after the fork");
	side_say(s->sock, 'w');
	side_hear(s->sock, 'v');
	/* The page the server's parent sees, through the wire: the WRITE's bytes. */
	memset(s->buf + READ_BACK_AREA, 0, WRITE_LEN);
	post_send_and_complete(s, 0, IBV_WR_RDMA_READ, READ_BACK_AREA, WRITE_LEN, 2,
			       "READ back after the fork");
	for (size_t i = 0; i < WRITE_LEN; i++)
		CHECK(s->buf[READ_BACK_AREA + i] == pattern(i, 7),
		      "READ back: byte %zu 0x%02x, want 0x%02x", i, s->buf[READ_BACK_AREA + i],
		      pattern(i, 7));
	/* One at a time, so the SRQ's receives go out in this order. */
	for (int k = 0; k < NUM_SENDS; k++) {
		snprintf(what, sizeof(what), "SEND %d", k);
		post_send_and_complete(s, k % NUM_QPS, IBV_WR_SEND,
				       SOURCE_AREA + WRITE_LEN + (size_t)k * RECV_SLOT, send_len[k],
				       10 + (uint64_t)k, what);
	}
	side_hear(s->sock, 'D');
}

/* ---- the server ---------------------------------------------------------------- */

static void server_fork(struct side *s)
{
	uint8_t *area = s->buf + WRITE_AREA;
	long long deadline;
	int status = -1;
	pid_t child, reaped;

	child = fork();
	CHECK(child >= 0, "fork: %s", strerror(errno));
	if (child == 0) {
		/* No verbs and no exit handlers in the child: only its copy of the page. */
		memset(area, 0xee, WRITE_LEN);
		_exit(0);
	}
	deadline = now_ms() + TIMEOUT_MS;
	/* Breaks copy-on-write: a new page for the parent, not the one a NIC would DMA to. */
	memset(area, 0, WRITE_LEN);
	while ((reaped = waitpid(child, &status, WNOHANG)) == 0 && now_ms() < deadline)
		usleep(1000);
	CHECK(reaped == child, "the child's exit: not in %d ms (waitpid %d: %s)", TIMEOUT_MS,
	      (int)reaped, reaped < 0 ? strerror(errno) : "still running");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x, want exit 0",
	      status);
	for (size_t i = 0; i < WRITE_LEN; i++)
		CHECK(area[i] == 0, "byte %zu of the parent's area 0x%02x: the child's write", i,
		      area[i]);
	side_say(s->sock, 'W');
	side_hear(s->sock, 'w');
	for (size_t i = 0; i < WRITE_LEN; i++)
		CHECK(area[i] == pattern(i, 7),
		      "WRITE after fork: byte %zu 0x%02x, want 0x%02x (not in the parent's page)",
		      i, area[i], pattern(i, 7));
	side_say(s->sock, 'v');
}

static void server_receives(struct side *s)
{
	struct ibv_wc wc;
	char what[32];

	for (int k = 0; k < NUM_SENDS; k++) {
		uint64_t want_id = FIRST_RECV_ID + (uint64_t)k;
		struct ibv_qp *qp = s->qp[k % NUM_QPS];
		const uint8_t *slot = s->buf + (size_t)k * RECV_SLOT;

		snprintf(what, sizeof(what), "receive of SEND %d", k);
		poll_one(s->rcq, &wc, what);
		CHECK(wc.wr_id == want_id && wc.status == IBV_WC_SUCCESS,
		      "%s: wr_id %llu status %s, want %llu success (SRQ order)", what,
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		      (unsigned long long)want_id);
		CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == send_len[k] &&
			  wc.qp_num == qp->qp_num,
		      "%s: opcode %d byte_len %u qp_num 0x%x, want %d %u 0x%x", what, wc.opcode,
		      wc.byte_len, wc.qp_num, IBV_WC_RECV, send_len[k], qp->qp_num);
		for (size_t i = 0; i < send_len[k]; i++)
			CHECK(slot[i] == pattern(i, SEND_SEED(k)),
			      "%s: byte %zu 0x%02x, want 0x%02x", what, i, slot[i],
			      pattern(i, SEND_SEED(k)));
	}
}

/* COMM_EST for each QP and SRQ_LIMIT_REACHED, in whatever order; anything else fails. */
static void server_traffic_events(struct side *s)
{
	long long deadline = now_ms() + TIMEOUT_MS;
	bool comm_est[NUM_QPS] = {false}, limit = false;
	struct ibv_async_event ev;
	struct ibv_srq_attr a;

	for (int n = 0; n < NUM_QPS + 1; n++) {
		await_event(s, &ev, deadline, "COMM_EST x2 and SRQ_LIMIT_REACHED");
		switch (ev.event_type) {
		case IBV_EVENT_COMM_EST: {
			int k = ev.element.qp == s->qp[0] ? 0 : ev.element.qp == s->qp[1] ? 1 : -1;

			CHECK(k >= 0, "COMM_EST for QP %p, not one of the server's",
			      (void *)ev.element.qp);
			CHECK(!comm_est[k], "a second COMM_EST for QP%d", k);
			comm_est[k] = true;
			break;
		}
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			CHECK(ev.element.srq == s->srq, "SRQ_LIMIT_REACHED for SRQ %p, want %p",
			      (void *)ev.element.srq, (void *)s->srq);
			CHECK(!limit, "a second SRQ_LIMIT_REACHED");
			limit = true;
			break;
		default:
			CHECK(false, "unexpected event %s (%d)", ibv_event_type_str(ev.event_type),
			      ev.event_type);
		}
		ibv_ack_async_event(&ev);
	}
	expect_no_event(s, "after COMM_EST x2 and SRQ_LIMIT_REACHED");
	query_srq(s, &a, 0, "after SRQ_LIMIT_REACHED (disarmed)");
}

static void server_busy_and_error(struct side *s)
{
	struct ibv_qp_attr err_state = {.qp_state = IBV_QPS_ERR};
	struct ibv_async_event ev;
	struct ibv_srq_attr a;
	int ret;

	ret = ibv_destroy_srq(s->srq);
	CHECK(ret == EBUSY, "ibv_destroy_srq with QPs on it: %d, want EBUSY", ret);
	query_srq(s, &a, 0, "after the refused destroy");

	modify(s->qp[0], &err_state, IBV_QP_STATE, "ERR");
	await_event(s, &ev, now_ms() + TIMEOUT_MS, "QP_LAST_WQE_REACHED");
	CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev.element.qp == s->qp[0],
	      "event %s for QP %p, want QP_LAST_WQE_REACHED for QP0 %p",
	      ibv_event_type_str(ev.event_type), (void *)ev.element.qp, (void *)s->qp[0]);
	ibv_ack_async_event(&ev);
	expect_no_event(s, "after QP_LAST_WQE_REACHED");
}

static void server(struct side *s)
{
	server_fork(s);
	server_receives(s);
	server_traffic_events(s);
	server_busy_and_error(s);
	side_say(s->sock, 'D');
}

int main(int argc, char **argv)
{
	struct side s = {0};
	const char *side, *fork_safe = getenv("RDMAV_FORK_SAFE");
	bool is_server;
	int ret;

	is_server = side_is_server(argc, argv);
	side = argv[1];
	/* Before any other verb, as rdma-core asks of ibv_fork_init. */
	ret = ibv_fork_init();
	CHECK(ret == 0, "ibv_fork_init: %d", ret);
	if (is_server) {
		CHECK(fork_safe && !strcmp(fork_safe, "1"), "RDMAV_FORK_SAFE is %s, want 1",
		      fork_safe ? fork_safe : "unset");
		CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED,
		      "ibv_is_fork_initialized %d, want IBV_FORK_UNNEEDED",
		      ibv_is_fork_initialized());
	}
	s.sock = side_channel(is_server, is_server ? NULL : argv[5], atoi(argv[4]));
	setup(&s, argv[2], atoi(argv[3]), is_server);
	if (is_server)
		server(&s);
	else
		client(&s);
	teardown(&s);
	printf("async %s: ok: %d checks\n", side, checks);
	return 0;
}
