/* SPDX-License-Identifier: MIT */
/*
 * uc_e2e: UC queue pairs end to end between two processes through the XDP
 * program and AF_XDP, using only the public API; test_uc_e2e.sh runs it
 * through the impairing middlebox (tests/e2e/middlebox.c).
 *
 *   uc_e2e server IFNAME [-p PORT] [-g GID_INDEX]             the receiver
 *   uc_e2e client IFNAME SERVER_IP [-p PORT] [-g GID_INDEX]   the sender
 *
 * One UC QP on each side. The client sends bursts of messages of 2 to 8
 * packets, SEND_WITH_IMM and RDMA_WRITE_WITH_IMM, each named by its
 * immediate (IMM_BASE + its number) and with bytes of its own; every WRITE
 * goes to a slot of its own at the server. The cases (one burst each) run in
 * lockstep (e2e_common.h); the server checks once the client's burst is out
 * and nothing has arrived for QUIET_MS. Whatever the link did, every message
 * the server is told of must be one that was sent, of this burst, told once,
 * with status success, the opcode and length it was sent with, and its bytes
 * exact (a SEND's in the receive it took, posted again after the check; a
 * WRITE's in its slot, and the canary after it untouched). Messages that are
 * not reported are counted, not failed: which ones had to be lost, and which
 * ones could not have been, is for the script to tell from the middlebox's
 * log. With UC_E2E_MESSAGES=FILE in its environment, the server writes one
 * line per message there at the end:
 *
 *   NUMBER FIRST_PSN PACKETS send|write reported|missing
 *
 * (PSNs in decimal, as the middlebox's --verbose prints them), and the
 * client prints the PSNs it used.
 */
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "uc_e2e"
#define DEFAULT_PORT 18795
#define HELLO_MAGIC "XRUCE2E1"
/* QPN, first PSN, MTU code, and the WRITE slots: rkey, address (high, low), size of one. */
#define HELLO_WORDS 7

#define RQ_DEPTH 512
#define SQ_DEPTH 64
/* Messages the sender keeps in flight: paces it a little for the middlebox. */
#define SEND_WINDOW 8
#define MAX_PACKETS 8
#define MAX_MSGS 1024
/* No burst may need more receives than half the queue holds. */
#define MAX_BURST (RQ_DEPTH / 2)

#define CANARY 0xc5
#define CANARY_LEN 64
#define IMM_BASE 0x5c000000u

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define SEND_TIMEOUT_MS 10000
#define CHECK_TIMEOUT_MS 20000
#define PEER_STEP_TIMEOUT_MS 60000
/* How long "nothing more arrives" is watched for. */
#define QUIET_MS 300
#define IDLE_SLEEP_NS 200000

enum mix {
	MIX_SEND,
	MIX_WRITE,
	MIX_ALTERNATE, /* SEND, WRITE, SEND, ... */
};

/* How a burst's message sizes go. */
enum sizing {
	SIZE_FIXED,  /* the case's size */
	SIZE_VARIED, /* 2 to 6 packets, the last one full or not */
};

struct msg {
	uint32_t size;
	uint32_t first_off; /* its first PSN, counted from the sender's first */
	uint32_t packets;
	bool write;
	bool reported;
};

struct peer {
	uint32_t qpn, psn, mtu_enum, rkey, slot;
	uint64_t addr;
	union xr_gid gid;
};

struct e2e_ctx {
	const char *role;
	bool is_server;
	struct e2e_port port;
	struct xr_cq *send_cq, *recv_cq;
	struct xr_qp *qp;
	struct xr_mr *mr;
	/* RQ_DEPTH receive slots, then one slot per message (WRITE target, or SEND source). */
	uint8_t *buf;
	size_t buf_size;
	uint32_t slot; /* a message of MAX_PACKETS at the local MTU, and a canary */
	uint32_t psn;
	struct peer peer;
	uint32_t mtu;
	struct msg msgs[MAX_MSGS];
	int nmsgs;
	int case_first[E2E_MAX_CASES];
};

static uint8_t *recv_slot(struct e2e_ctx *c, uint32_t i)
{
	return c->buf + (size_t)i * c->slot;
}

static uint8_t *msg_slot(struct e2e_ctx *c, int g)
{
	return c->buf + (size_t)(RQ_DEPTH + g) * c->slot;
}

static uint32_t msg_seed(int g)
{
	return 0x3c6ef372u ^ (uint32_t)g * 0x9e3779b9u;
}

static uint32_t psn_of(uint32_t first, uint32_t off)
{
	return (first + off) & 0xffffff;
}

/* ---- the plan: bursts and their messages ------------------------------------ */

static int case_count(const struct e2e_case *tc)
{
	return tc->param >> 8;
}

static enum sizing case_sizing(const struct e2e_case *tc)
{
	return (enum sizing)(tc->param >> 4 & 0xf);
}

static uint32_t msg_size(const struct e2e_ctx *c, const struct e2e_case *tc, int k)
{
	if (case_sizing(tc) == SIZE_VARIED)
		return (2 + (uint32_t)k % 5) * c->mtu - (uint32_t)(k % 3) * 37;
	return tc->size;
}

static void add_burst(struct e2e_ctx *c, struct e2e_case *cases, int *n, enum mix mix,
		      enum sizing sizing, uint32_t size, int count, const char *name)
{
	static const char *const mix_names[] = {"SEND_IMM", "WRITE_IMM", "SEND/WRITE_IMM"};
	struct e2e_case *tc;
	uint32_t off = 0;

	if (c->nmsgs) {
		const struct msg *last = &c->msgs[c->nmsgs - 1];

		off = last->first_off + last->packets;
	}
	if (count > MAX_BURST || c->nmsgs + count > MAX_MSGS) {
		fprintf(stderr, PROG ": the plan has too many messages\n");
		exit(2);
	}
	e2e_add_case(cases, n, 0, size, "%s x%d, %s", mix_names[mix], count, name);
	tc = &cases[*n - 1];
	tc->param = count << 8 | (int)sizing << 4 | (int)mix;
	c->case_first[*n - 1] = c->nmsgs;
	for (int k = 0; k < count; k++) {
		struct msg *m = &c->msgs[c->nmsgs++];

		m->size = msg_size(c, tc, k);
		m->packets = (m->size + c->mtu - 1) / c->mtu;
		m->write = mix == MIX_WRITE || (mix == MIX_ALTERNATE && k % 2);
		m->first_off = off;
		m->reported = false;
		off += m->packets;
	}
}

/* The same on both sides, from the agreed path MTU. */
static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	uint32_t m = c->mtu;
	int n = 0;

	c->nmsgs = 0;
	add_burst(c, cases, &n, MIX_SEND, SIZE_FIXED, 2 * m + 100, 200, "3 packets");
	add_burst(c, cases, &n, MIX_WRITE, SIZE_FIXED, 2 * m + 100, 200, "3 packets");
	add_burst(c, cases, &n, MIX_SEND, SIZE_FIXED, 8 * m, 100, "8 full packets");
	add_burst(c, cases, &n, MIX_WRITE, SIZE_FIXED, 8 * m - 1, 100, "8 packets");
	add_burst(c, cases, &n, MIX_ALTERNATE, SIZE_FIXED, m + 1, 100, "2 packets, 1-byte LAST");
	add_burst(c, cases, &n, MIX_ALTERNATE, SIZE_VARIED, 0, 250, "2 to 6 packets");
	return n;
}

/* ---- the sender ------------------------------------------------------------------ */

static bool post_msg(struct e2e_ctx *c, int g, struct report *r)
{
	struct msg *m = &c->msgs[g];
	struct xr_sge sge = sge_of(c->mr, msg_slot(c, g), m->size);
	struct xr_send_wr wr = {
	    .wr_id = (uint64_t)g,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = m->write ? XR_WR_RDMA_WRITE_WITH_IMM : XR_WR_SEND_WITH_IMM,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(IMM_BASE + (uint32_t)g),
	};

	if (m->write) {
		wr.wr.rdma.remote_addr = c->peer.addr + (uint64_t)g * c->peer.slot;
		wr.wr.rdma.rkey = c->peer.rkey;
	}
	fill_pattern(msg_slot(c, g), msg_seed(g), 0, m->size);
	return e2e_post_send(c->qp, &wr, r);
}

/* Waits for the send completions of messages *next.. until at most left_in_flight remain. */
static bool wait_sends(struct e2e_ctx *c, int *next, int posted, int left_in_flight,
		       int64_t deadline, struct report *r)
{
	while (posted - *next > left_in_flight) {
		struct xr_wc wc;
		int g = *next;

		if (poll_cq_until(c->send_cq, &wc, 1, 1, deadline) != 1) {
			report_fail(r, "no send completion for message %d (UC completes once sent)",
				    g);
			return false;
		}
		if (!check_wc(&wc, (uint64_t)g, XR_WC_SUCCESS,
			      c->msgs[g].write ? XR_WC_RDMA_WRITE : XR_WC_SEND, r))
			return false;
		(*next)++;
	}
	return true;
}

static void burst_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	int first = c->case_first[idx], count = case_count(tc), next = first, posted = first;
	int64_t deadline = tool_now_ms() + SEND_TIMEOUT_MS;
	const struct msg *last = &c->msgs[first + count - 1];

	(void)t;
	while (posted < first + count) {
		if (!wait_sends(c, &next, posted, SEND_WINDOW - 1, deadline, r) ||
		    !post_msg(c, posted, r))
			return;
		posted++;
	}
	if (!wait_sends(c, &next, posted, 0, deadline, r))
		return;
	report_ok(r, "%d messages sent, PSNs %u..%u", count,
		  psn_of(c->psn, c->msgs[first].first_off),
		  psn_of(c->psn, last->first_off + last->packets - 1));
}

/* ---- the receiver ----------------------------------------------------------------- */

static bool post_recv(struct e2e_ctx *c, uint32_t i, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr, recv_slot(c, i), c->slot - CANARY_LEN);
	struct xr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
	int ret = xr_post_recv(c->qp, &wr, &bad);

	if (ret)
		report_fail(r, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

/* Nothing may be reported between bursts. */
static bool burst_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	struct xr_wc wc;

	(void)tc;
	(void)idx;
	(void)t;
	if (xr_poll_cq(c->recv_cq, 1, &wc) > 0) {
		report_fail(r, "a completion before the burst: wr_id %" PRIu64 ", imm 0x%08x",
			    wc.wr_id, ntohl(wc.imm_data));
		return false;
	}
	report_ok(r, "ready");
	return true;
}

static ssize_t first_mismatch(const uint8_t *data, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (data[i] != pattern_byte(seed, i))
			return (ssize_t)i;
	return -1;
}

/* One receive completion of burst idx: a whole message of it, never told before. */
static bool check_one(struct e2e_ctx *c, const struct e2e_case *tc, int idx, const struct xr_wc *wc,
		      struct report *r)
{
	int first = c->case_first[idx], count = case_count(tc);
	uint32_t imm = ntohl(wc->imm_data);
	int g = (int)(imm - IMM_BASE);
	const uint8_t *data;
	struct msg *m;
	ssize_t bad;

	if (wc->status != XR_WC_SUCCESS) {
		report_fail(r, "receive %" PRIu64 " completed with \"%s\"", wc->wr_id,
			    xr_wc_status_str(wc->status));
		return false;
	}
	if (!(wc->wc_flags & XR_WC_WITH_IMM) || imm - IMM_BASE >= (uint32_t)c->nmsgs) {
		report_fail(r, "a completion with wc_flags 0x%x, imm 0x%08x: no message of ours",
			    wc->wc_flags, imm);
		return false;
	}
	if (g < first || g >= first + count) {
		report_fail(r, "message %d reported during burst %d (messages %d..%d)", g, idx,
			    first, first + count - 1);
		return false;
	}
	m = &c->msgs[g];
	if (m->reported) {
		report_fail(r, "message %d reported twice", g);
		return false;
	}
	m->reported = true;
	if (wc->wr_id >= RQ_DEPTH || wc->qp_num != c->qp->qp_num) {
		report_fail(r,
			    "message %d: wr_id %" PRIu64 ", qp_num 0x%06x: not a receive of ours",
			    g, wc->wr_id, wc->qp_num);
		return false;
	}
	if (wc->opcode != (m->write ? XR_WC_RECV_RDMA_WITH_IMM : XR_WC_RECV) ||
	    wc->byte_len != m->size) {
		report_fail(r, "message %d (%s of %u bytes) reported with opcode %d, %u bytes", g,
			    m->write ? "WRITE_IMM" : "SEND_IMM", m->size, wc->opcode, wc->byte_len);
		return false;
	}
	data = m->write ? msg_slot(c, g) : recv_slot(c, (uint32_t)wc->wr_id);
	bad = first_mismatch(data, msg_seed(g), m->size);
	if (bad >= 0) {
		report_fail(r, "message %d (%s, %u packets): byte %zd is 0x%02x, expected 0x%02x",
			    g, m->write ? "WRITE_IMM" : "SEND_IMM", m->packets, bad, data[bad],
			    pattern_byte(msg_seed(g), (size_t)bad));
		return false;
	}
	for (uint32_t i = 0; m->write && i < CANARY_LEN; i++)
		if (data[m->size + i] != CANARY) {
			report_fail(r,
				    "message %d: WRITE_IMM of %u bytes wrote byte %u after its end",
				    g, m->size, m->size + i);
			return false;
		}
	/* A WRITE with immediate takes a receive too. */
	return post_recv(c, (uint32_t)wc->wr_id, r);
}

static void burst_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	int first = c->case_first[idx], count = case_count(tc), reported = 0;
	int64_t start = tool_now_ms(), deadline = start + CHECK_TIMEOUT_MS, last = start;

	for (;;) {
		struct xr_wc wc[16];
		int64_t now;
		int n = xr_poll_cq(c->recv_cq, 16, wc);

		if (n < 0) {
			report_fail(r, "xr_poll_cq: %s", strerror(-n));
			return;
		}
		for (int i = 0; i < n; i++)
			if (!check_one(c, tc, idx, &wc[i], r))
				return;
		now = tool_now_ms();
		if (n > 0) {
			last = now;
			continue;
		}
		if (now - last >= QUIET_MS)
			break;
		if (now >= deadline) {
			report_fail(r, "completions still arriving after %d ms", CHECK_TIMEOUT_MS);
			return;
		}
		nanosleep(&(struct timespec){.tv_nsec = IDLE_SLEEP_NS}, NULL);
	}
	for (int k = 0; k < count; k++)
		reported += c->msgs[first + k].reported;
	report_ok(r, "%d of %d messages reported, each whole and exact; %d not", reported, count,
		  count - reported);
}

static const struct e2e_case_ops case_ops[] = {
    {.prepare = burst_prepare, .act = burst_act, .check = burst_check},
};

/* ---- setup and the handshake ------------------------------------------------------- */

static int send_hello(struct e2e_ctx *c, int fd)
{
	uint64_t addr = (uint64_t)(uintptr_t)msg_slot(c, 0);
	uint32_t words[HELLO_WORDS] = {
	    c->qp->qp_num,
	    c->psn,
	    c->port.mtu_enum,
	    c->is_server ? c->mr->rkey : 0,
	    (uint32_t)(addr >> 32),
	    (uint32_t)addr,
	    c->slot,
	};

	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->port.gid);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->peer.gid);

	if (ret)
		return ret;
	c->peer.qpn = words[0];
	c->peer.psn = words[1];
	c->peer.mtu_enum = words[2];
	c->peer.rkey = words[3];
	c->peer.addr = (uint64_t)words[4] << 32 | words[5];
	c->peer.slot = words[6];
	return 0;
}

/* INIT -> RTR -> RTS with what a UC QP takes, and nothing more. */
static int connect_peer(struct e2e_ctx *c)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTR,
	    .dest_qp_num = c->peer.qpn,
	    .rq_psn = c->peer.psn,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = c->peer.gid,
				.sgid_index = (uint8_t)c->port.gid_index,
				.hop_limit = 64}},
	};
	int ret;

	if (e2e_agree_mtu(PROG, &c->port, c->peer.mtu_enum))
		return -1;
	attr.path_mtu = c->port.mtu_enum;
	c->mtu = e2e_mtu_bytes(c->port.mtu_enum);
	ret = xr_modify_qp(c->qp, &attr,
			   XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN);
	if (ret) {
		fprintf(stderr, PROG ": couldn't move the UC QP to RTR: %s\n", strerror(-ret));
		return -1;
	}
	attr.qp_state = XR_QPS_RTS;
	attr.sq_psn = c->psn;
	ret = xr_modify_qp(c->qp, &attr, XR_QP_STATE | XR_QP_SQ_PSN);
	if (ret) {
		fprintf(stderr, PROG ": couldn't move the UC QP to RTS: %s\n", strerror(-ret));
		return -1;
	}
	printf("[%s] path MTU %u; UC QP 0x%06x, first PSN %u; peer's QP 0x%06x, first PSN %u\n",
	       c->role, c->mtu, c->qp->qp_num, c->psn, c->peer.qpn, c->peer.psn);
	return 0;
}

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	struct xr_qp_init_attr init = {
	    .cap = {.max_send_wr = SQ_DEPTH,
		    .max_recv_wr = RQ_DEPTH,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	    .qp_type = XR_QPT_UC,
	};
	int access = args->is_server ? XR_ACCESS_REMOTE_WRITE : 0;
	struct report r = {0};
	int ret;

	c->role = args->role;
	c->is_server = args->is_server;
	if (e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->slot = MAX_PACKETS * e2e_mtu_bytes(c->port.mtu_enum) + CANARY_LEN;
	c->buf_size = (size_t)(RQ_DEPTH + MAX_MSGS) * c->slot;
	c->buf = aligned_alloc(4096, (c->buf_size + 4095) / 4096 * 4096);
	if (!c->buf) {
		fprintf(stderr, PROG ": couldn't allocate %zu bytes\n", c->buf_size);
		return -1;
	}
	memset(c->buf, CANARY, c->buf_size);
	c->mr = xr_reg_mr(c->port.pd, c->buf, c->buf_size, XR_ACCESS_LOCAL_WRITE | access);
	c->send_cq = xr_create_cq(c->port.dev, 2 * SQ_DEPTH, NULL);
	c->recv_cq = xr_create_cq(c->port.dev, 2 * RQ_DEPTH, NULL);
	if (!c->mr || !c->send_cq || !c->recv_cq) {
		fprintf(stderr, PROG ": couldn't register the buffer or create the CQs: %s\n",
			strerror(errno));
		return -1;
	}
	init.send_cq = c->send_cq;
	init.recv_cq = c->recv_cq;
	c->qp = xr_create_qp(c->port.pd, &init);
	if (!c->qp) {
		fprintf(stderr, PROG ": couldn't create a UC QP: %s\n", strerror(errno));
		return -1;
	}
	ret = qp_to_init(c->qp, 1, (unsigned int)access);
	if (ret) {
		fprintf(stderr, PROG ": couldn't move the UC QP to INIT: %s\n", strerror(-ret));
		return -1;
	}
	c->psn = (uint32_t)lrand48() & 0xffffff;
	for (uint32_t i = 0; c->is_server && i < RQ_DEPTH; i++)
		if (!post_recv(c, i, &r)) {
			fprintf(stderr, PROG ": receive %u: %s\n", i, r.detail);
			return -1;
		}
	return 0;
}

/* The server's account of every message, for the script. */
static void write_messages(struct e2e_ctx *c)
{
	const char *path = getenv("UC_E2E_MESSAGES");
	int reported = 0;
	FILE *f;

	for (int g = 0; g < c->nmsgs; g++)
		reported += c->msgs[g].reported;
	printf("[%s] %d messages: %d reported, %d not\n", c->role, c->nmsgs, reported,
	       c->nmsgs - reported);
	if (!path)
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return;
	}
	for (int g = 0; g < c->nmsgs; g++) {
		const struct msg *m = &c->msgs[g];

		fprintf(f, "%d %u %u %s %s\n", g, psn_of(c->peer.psn, m->first_off), m->packets,
			m->write ? "write" : "send", m->reported ? "reported" : "missing");
	}
	if (fclose(f))
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
}

static void teardown(struct e2e_ctx *c)
{
	if (c->is_server && c->nmsgs)
		write_messages(c);
	if (c->qp)
		xr_destroy_qp(c->qp);
	if (c->send_cq)
		xr_destroy_cq(c->send_cq);
	if (c->recv_cq)
		xr_destroy_cq(c->recv_cq);
	if (c->mr)
		xr_dereg_mr(c->mr);
	e2e_close_port(&c->port);
	free(c->buf);
}

int main(int argc, char **argv)
{
	static const struct e2e_driver driver = {
	    .prog = PROG,
	    .default_port = DEFAULT_PORT,
	    .server_part = "receiver",
	    .client_part = "sender",
	    .not_prepared = "the receiver could not get ready",
	    .name_width = 44,
	    .check_after_act = true,
	    .peer_step_timeout_ms = PEER_STEP_TIMEOUT_MS,
	    .ops = case_ops,
	    .setup = setup,
	    .send_hello = send_hello,
	    .recv_hello = recv_hello,
	    .connect = connect_peer,
	    .build_cases = build_cases,
	    .teardown = teardown,
	};
	static struct e2e_ctx c;

	return e2e_main(argc, argv, &driver, &c);
}
