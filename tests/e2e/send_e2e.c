/* SPDX-License-Identifier: MIT */
/*
 * send_e2e: RC SEND end to end between two processes through the XDP program
 * and AF_XDP, using only the public API.
 *
 *   send_e2e server IFNAME [-p PORT]             the receiving side
 *   send_e2e client IFNAME SERVER_IP [-p PORT]   the sending side
 *
 * The two sides connect two QP pairs (a main pair, and a pair that the
 * length-error case is allowed to break) over an out-of-band TCP exchange,
 * then run the cases in lockstep: the server posts its receives and says
 * "ready", the client sends, each side checks what it sees, and the two
 * verdicts are exchanged, so both sides print one line per case with their
 * own verdict and the peer's. The exit status is 1 when any case failed on
 * either side.
 */
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "send_e2e"
#define DEFAULT_PORT 18779

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define CASE_TIMEOUT_MS 20000
#define STREAM_TIMEOUT_MS 120000
/* How long "no further completion" is watched for. */
#define QUIET_WAIT_MS 300

/* Every receive area is surrounded by this byte; a write outside shows. */
#define CANARY 0xc5
#define CANARY_LEN 64

#define BIG_SEND_SIZE (1u << 20)
#define BUF_A_SIZE (2u << 20)
#define BUF_B_SIZE (64u << 10)

#define STREAM_MSGS 10000
#define STREAM_MSG_SIZE 4096
#define STREAM_DEPTH 64
#define STREAM_RECV_SLOTS 256
#define STREAM_SEED 0x5eed0000u

#define UNSIGNALED_SENDS 5
#define UNSIGNALED_AREA 4096

#define ERR_RECV_SIZE 100
#define ERR_SEND_SIZE 500

#define IMM_VALUE 0x12345678u

#define MAIN_SEND_WR 128
#define MAIN_RECV_WR 512
#define MAX_SGE 4

/* Receive areas of the scatter case, deliberately out of address order. */
static const struct {
	uint32_t offset, length;
} scatter_layout[4] = {
    {20000, 333},
    {10000, 1111},
    {30001, 999},
    {5003, 1501},
};
#define SCATTER_SPAN 40000

/* Gather list of the sender: which buffer (0 = A, 1 = B), offset, length. */
static const struct {
	int buffer;
	uint32_t offset, length;
} gather_layout[3] = {
    {0, 101, 1000},
    {1, 7, 1500},
    {0, 9001, 777},
};
#define GATHER_TOTAL (1000 + 1500 + 777)

enum case_kind {
	CASE_SIZE,
	CASE_IMM,
	CASE_SCATTER_GATHER,
	CASE_UNSIGNALED,
	CASE_LENGTH_ERROR,
	CASE_STREAM,
};

/* Magic, then main QPN, main PSN, error-pair QPN, error-pair PSN, path MTU enum, then the GID. */
#define HELLO_MAGIC "XRSENDE1"
#define HELLO_WORDS 5

struct hello {
	uint32_t main_qpn, main_psn, err_qpn, err_psn, mtu_enum;
	union xr_gid gid;
};

struct e2e_ctx {
	const char *role;
	struct e2e_port port;
	uint8_t *buf_a;
	uint8_t *buf_b;
	struct xr_mr *mr_a;
	struct xr_mr *mr_b;
	struct e2e_qp_end main;
	struct e2e_qp_end err;
	uint32_t mtu;
	struct hello peer;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static ssize_t canary_mismatch(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != CANARY)
			return (ssize_t)i;
	return -1;
}

/* ---- completions -------------------------------------------------------- */

static bool wait_one(struct xr_cq *cq, struct xr_wc *wc, int64_t deadline, struct report *r,
		     const char *what)
{
	if (poll_cq_until(cq, wc, 1, 1, deadline) == 1)
		return true;
	report_fail(r, "no %s completion within %d s", what, CASE_TIMEOUT_MS / 1000);
	return false;
}

/* ---- posting -------------------------------------------------------------- */

static bool post_one_recv(struct xr_qp *qp, uint64_t wr_id, struct xr_sge *sges, int num_sge,
			  struct report *r)
{
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = sges, .num_sge = num_sge};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(qp, &wr, &bad);

	if (ret)
		report_fail(r, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

/* ---- cases: SEND of a size, with or without immediate ---------------------- */

static bool size_post_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			       struct e2e_target *t, struct report *r)
{
	/* The receive is larger than the message: only byte_len bytes may land. */
	struct xr_sge sge = sge_of(c->mr_a, c->buf_a, tc->size + CANARY_LEN);

	(void)t;
	memset(c->buf_a, CANARY, tc->size + 2 * CANARY_LEN);
	return post_one_recv(c->main.qp, case_wr_id(idx, 0), &sge, 1, r);
}

static void size_check_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				struct report *r)
{
	bool with_imm = tc->kind == CASE_IMM;
	struct xr_wc wc;
	ssize_t bad;

	if (!wait_one(c->main.recv_cq, &wc, tool_now_ms() + CASE_TIMEOUT_MS, r, "receive") ||
	    !check_wc(&wc, case_wr_id(idx, 0), XR_WC_SUCCESS, XR_WC_RECV, r))
		return;
	if (wc.byte_len != tc->size)
		return report_fail(r, "byte_len %u, expected %u", wc.byte_len, tc->size);
	if (wc.qp_num != c->main.qp->qp_num)
		return report_fail(r, "qp_num 0x%x, expected 0x%x", wc.qp_num, c->main.qp->qp_num);
	if (with_imm && !(wc.wc_flags & XR_WC_WITH_IMM))
		return report_fail(r, "XR_WC_WITH_IMM missing (wc_flags 0x%x)", wc.wc_flags);
	if (!with_imm && (wc.wc_flags & XR_WC_WITH_IMM))
		return report_fail(r, "XR_WC_WITH_IMM set on a plain SEND");
	if (with_imm && wc.imm_data != htonl(IMM_VALUE))
		return report_fail(r, "imm_data 0x%08x (host order), expected 0x%08x",
				   ntohl(wc.imm_data), IMM_VALUE);
	bad = pattern_mismatch(c->buf_a, tc->seed, 0, tc->size);
	if (bad >= 0)
		return report_fail(r, "byte %zd is 0x%02x, expected 0x%02x", bad, c->buf_a[bad],
				   pattern_byte(tc->seed, bad));
	bad = canary_mismatch(c->buf_a + tc->size, 2 * CANARY_LEN);
	if (bad >= 0)
		return report_fail(r, "byte %zd past the message was overwritten (0x%02x)", bad,
				   c->buf_a[tc->size + bad]);
	if (!expect_quiet(c->main.recv_cq, 0, r, "receive"))
		return;
	if (with_imm)
		report_ok(r,
			  "byte_len %u, RECV, WITH_IMM, imm_data 0x%08x, content and canary "
			  "intact",
			  wc.byte_len, ntohl(wc.imm_data));
	else
		report_ok(r, "byte_len %u, RECV, content and canary intact", wc.byte_len);
}

static void size_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr_a, c->buf_a, tc->size);
	struct xr_send_wr wr = {
	    .wr_id = case_wr_id(idx, 0),
	    .sg_list = &sge,
	    .num_sge = tc->size ? 1 : 0,
	    .opcode = tc->kind == CASE_IMM ? XR_WR_SEND_WITH_IMM : XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(IMM_VALUE),
	};
	struct xr_wc wc;

	(void)t;
	fill_pattern(c->buf_a, tc->seed, 0, tc->size);
	if (!e2e_post_send(c->main.qp, &wr, r) ||
	    !wait_one(c->main.send_cq, &wc, tool_now_ms() + CASE_TIMEOUT_MS, r, "send") ||
	    !check_wc(&wc, wr.wr_id, XR_WC_SUCCESS, XR_WC_SEND, r) ||
	    !expect_quiet(c->main.send_cq, 0, r, "send"))
		return;
	report_ok(r, "SEND completed with success");
}

/* ---- case: gather list from two MRs into a scatter list of odd sizes ------- */

static bool scatter_post_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				  struct e2e_target *t, struct report *r)
{
	struct xr_sge sges[4];

	(void)tc;
	(void)t;
	memset(c->buf_a, CANARY, SCATTER_SPAN);
	for (int i = 0; i < 4; i++)
		sges[i] =
		    sge_of(c->mr_a, c->buf_a + scatter_layout[i].offset, scatter_layout[i].length);
	return post_one_recv(c->main.qp, case_wr_id(idx, 0), sges, 4, r);
}

static void scatter_check_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				   struct report *r)
{
	uint8_t *expected = malloc(SCATTER_SPAN);
	uint32_t placed = 0, in_sge[4] = {0};
	struct xr_wc wc;

	if (!expected)
		return report_fail(r, "out of memory");
	/* The image buf_a must show: canary everywhere except the message, split across the SGEs.
	 */
	memset(expected, CANARY, SCATTER_SPAN);
	for (int i = 0; i < 4 && placed < GATHER_TOTAL; i++) {
		uint32_t n = GATHER_TOTAL - placed;

		if (n > scatter_layout[i].length)
			n = scatter_layout[i].length;
		fill_pattern(expected + scatter_layout[i].offset, tc->seed, placed, n);
		in_sge[i] = n;
		placed += n;
	}
	if (!wait_one(c->main.recv_cq, &wc, tool_now_ms() + CASE_TIMEOUT_MS, r, "receive") ||
	    !check_wc(&wc, case_wr_id(idx, 0), XR_WC_SUCCESS, XR_WC_RECV, r))
		goto out;
	if (wc.byte_len != GATHER_TOTAL) {
		report_fail(r, "byte_len %u, expected %u", wc.byte_len, GATHER_TOTAL);
		goto out;
	}
	for (uint32_t i = 0; i < SCATTER_SPAN; i++) {
		if (c->buf_a[i] == expected[i])
			continue;
		int sge = -1;

		for (int s = 0; s < 4; s++)
			if (i >= scatter_layout[s].offset &&
			    i < scatter_layout[s].offset + scatter_layout[s].length)
				sge = s;
		report_fail(r, "buffer offset %u (%s %d) is 0x%02x, expected 0x%02x", i,
			    sge >= 0 ? "in SGE" : "outside every SGE, after offset", sge,
			    c->buf_a[i], expected[i]);
		goto out;
	}
	if (expect_quiet(c->main.recv_cq, 0, r, "receive"))
		report_ok(r, "byte_len %u split %u/%u/%u/%u across 4 SGEs, gaps intact",
			  wc.byte_len, in_sge[0], in_sge[1], in_sge[2], in_sge[3]);
out:
	free(expected);
}

static void gather_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			const struct e2e_target *t, struct report *r)
{
	struct xr_sge sges[3];
	uint32_t offset = 0;
	struct xr_send_wr wr = {
	    .wr_id = case_wr_id(idx, 0),
	    .sg_list = sges,
	    .num_sge = 3,
	    .opcode = XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	};
	struct xr_wc wc;

	(void)t;
	for (int i = 0; i < 3; i++) {
		uint8_t *base = gather_layout[i].buffer ? c->buf_b : c->buf_a;
		struct xr_mr *mr = gather_layout[i].buffer ? c->mr_b : c->mr_a;

		fill_pattern(base + gather_layout[i].offset, tc->seed, offset,
			     gather_layout[i].length);
		sges[i] = sge_of(mr, base + gather_layout[i].offset, gather_layout[i].length);
		offset += gather_layout[i].length;
	}
	if (!e2e_post_send(c->main.qp, &wr, r) ||
	    !wait_one(c->main.send_cq, &wc, tool_now_ms() + CASE_TIMEOUT_MS, r, "send") ||
	    !check_wc(&wc, wr.wr_id, XR_WC_SUCCESS, XR_WC_SEND, r))
		return;
	report_ok(r, "3-SGE SEND (%u+%u+%u bytes, 2 MRs) completed", gather_layout[0].length,
		  gather_layout[1].length, gather_layout[2].length);
}

/* ---- case: unsignaled SENDs, then a signaled one --------------------------- */

static uint32_t unsignaled_size(uint32_t n)
{
	return 100 + 517 * n;
}

static bool unsignaled_post_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				     struct e2e_target *t, struct report *r)
{
	(void)tc;
	(void)t;
	memset(c->buf_a, CANARY, (UNSIGNALED_SENDS + 1) * UNSIGNALED_AREA);
	for (uint32_t n = 0; n <= UNSIGNALED_SENDS; n++) {
		struct xr_sge sge =
		    sge_of(c->mr_a, c->buf_a + n * UNSIGNALED_AREA, UNSIGNALED_AREA - CANARY_LEN);

		if (!post_one_recv(c->main.qp, case_wr_id(idx, n), &sge, 1, r))
			return false;
	}
	return true;
}

static void unsignaled_check_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				      struct report *r)
{
	struct xr_wc wc[UNSIGNALED_SENDS + 1];
	int got = poll_cq_until(c->main.recv_cq, wc, UNSIGNALED_SENDS + 1, UNSIGNALED_SENDS + 1,
				tool_now_ms() + CASE_TIMEOUT_MS);

	for (int n = 0; n < got; n++) {
		const uint8_t *area = c->buf_a + n * UNSIGNALED_AREA;
		uint32_t size = unsignaled_size(n);
		ssize_t bad;

		if (!check_wc(&wc[n], case_wr_id(idx, n), XR_WC_SUCCESS, XR_WC_RECV, r))
			return;
		if (wc[n].byte_len != size)
			return report_fail(r, "message %d: byte_len %u, expected %u", n,
					   wc[n].byte_len, size);
		bad = pattern_mismatch(area, tc->seed + n, 0, size);
		if (bad >= 0)
			return report_fail(r, "message %d: byte %zd is 0x%02x, expected 0x%02x", n,
					   bad, area[bad], pattern_byte(tc->seed + n, bad));
		bad = canary_mismatch(area + size, UNSIGNALED_AREA - size);
		if (bad >= 0)
			return report_fail(r, "message %d: byte %zd past it was overwritten", n,
					   bad);
	}
	if (got < UNSIGNALED_SENDS + 1)
		return report_fail(r, "%d of %d receives completed within %d s", got,
				   UNSIGNALED_SENDS + 1, CASE_TIMEOUT_MS / 1000);
	if (expect_quiet(c->main.recv_cq, 0, r, "receive"))
		report_ok(r, "%d receives completed in order, content and canaries intact", got);
}

static void unsignaled_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			    const struct e2e_target *t, struct report *r)
{
	struct xr_send_wr wrs[UNSIGNALED_SENDS + 1];
	struct xr_sge sges[UNSIGNALED_SENDS + 1];
	struct xr_wc wc;

	(void)t;
	for (uint32_t n = 0; n <= UNSIGNALED_SENDS; n++) {
		uint8_t *area = c->buf_a + n * UNSIGNALED_AREA;

		fill_pattern(area, tc->seed + n, 0, unsignaled_size(n));
		sges[n] = sge_of(c->mr_a, area, unsignaled_size(n));
		wrs[n] = (struct xr_send_wr){
		    .wr_id = case_wr_id(idx, n),
		    .next = n < UNSIGNALED_SENDS ? &wrs[n + 1] : NULL,
		    .sg_list = &sges[n],
		    .num_sge = 1,
		    .opcode = XR_WR_SEND,
		    .send_flags = n < UNSIGNALED_SENDS ? 0 : XR_SEND_SIGNALED,
		};
	}
	if (!e2e_post_send(c->main.qp, wrs, r) ||
	    !wait_one(c->main.send_cq, &wc, tool_now_ms() + CASE_TIMEOUT_MS, r, "send") ||
	    !check_wc(&wc, case_wr_id(idx, UNSIGNALED_SENDS), XR_WC_SUCCESS, XR_WC_SEND, r) ||
	    !expect_quiet(c->main.send_cq, QUIET_WAIT_MS, r, "send"))
		return;
	report_ok(r, "%d unsignaled + 1 signaled SEND: exactly one send completion",
		  UNSIGNALED_SENDS);
}

/* ---- case: a receive too small for the SEND (on the second QP pair) ------- */

static bool length_error_post_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				       struct e2e_target *t, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr_a, c->buf_a, ERR_RECV_SIZE);

	(void)tc;
	(void)t;
	memset(c->buf_a, CANARY, ERR_RECV_SIZE + 2 * CANARY_LEN);
	return post_one_recv(c->err.qp, case_wr_id(idx, 0), &sge, 1, r);
}

static void length_error_check_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
					struct report *r)
{
	int64_t deadline = tool_now_ms() + CASE_TIMEOUT_MS;
	struct xr_sge sge = sge_of(c->mr_a, c->buf_a + ERR_RECV_SIZE + 2 * CANARY_LEN, 64);
	struct xr_wc wc;
	ssize_t bad;

	(void)tc;
	if (!wait_one(c->err.recv_cq, &wc, deadline, r, "receive") ||
	    !check_wc(&wc, case_wr_id(idx, 0), XR_WC_LOC_LEN_ERR, XR_WC_RECV, r))
		return;
	bad = canary_mismatch(c->buf_a + ERR_RECV_SIZE, 2 * CANARY_LEN);
	if (bad >= 0)
		return report_fail(r, "byte %zd past the %d-byte receive was overwritten", bad,
				   ERR_RECV_SIZE);
	if (!e2e_wait_qp_state(c->err.qp, XR_QPS_ERR, r, "the") ||
	    !post_one_recv(c->err.qp, case_wr_id(idx, 1), &sge, 1, r) ||
	    !wait_one(c->err.recv_cq, &wc, deadline, r, "flushed receive") ||
	    !check_wc(&wc, case_wr_id(idx, 1), XR_WC_WR_FLUSH_ERR, XR_WC_RECV, r) ||
	    !expect_quiet(c->err.recv_cq, QUIET_WAIT_MS, r, "receive"))
		return;
	report_ok(r, "receive: \"%s\", QP in ERR, next receive \"%s\"",
		  xr_wc_status_str(XR_WC_LOC_LEN_ERR), xr_wc_status_str(XR_WC_WR_FLUSH_ERR));
}

static void length_error_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      const struct e2e_target *t, struct report *r)
{
	int64_t deadline = tool_now_ms() + CASE_TIMEOUT_MS;
	struct xr_sge sge = sge_of(c->mr_a, c->buf_a, ERR_SEND_SIZE);
	struct xr_send_wr wr = {
	    .wr_id = case_wr_id(idx, 0),
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	};
	struct xr_wc wc;

	(void)t;
	fill_pattern(c->buf_a, tc->seed, 0, ERR_SEND_SIZE);
	if (!e2e_post_send(c->err.qp, &wr, r) ||
	    !wait_one(c->err.send_cq, &wc, deadline, r, "send") ||
	    !check_wc(&wc, wr.wr_id, XR_WC_REM_INV_REQ_ERR, XR_WC_SEND, r) ||
	    !e2e_wait_qp_state(c->err.qp, XR_QPS_ERR, r, "the"))
		return;
	wr.wr_id = case_wr_id(idx, 1);
	if (!e2e_post_send(c->err.qp, &wr, r) ||
	    !wait_one(c->err.send_cq, &wc, deadline, r, "flushed send") ||
	    !check_wc(&wc, wr.wr_id, XR_WC_WR_FLUSH_ERR, XR_WC_SEND, r) ||
	    !expect_quiet(c->err.send_cq, QUIET_WAIT_MS, r, "send"))
		return;
	report_ok(r, "%d-byte SEND: \"%s\", QP in ERR, next SEND \"%s\"", ERR_SEND_SIZE,
		  xr_wc_status_str(XR_WC_REM_INV_REQ_ERR), xr_wc_status_str(XR_WC_WR_FLUSH_ERR));
}

/* ---- case: stream of sequence-numbered SENDs -------------------------------- */

/*
 * Message seq carries seq in its first and last 8 bytes; the rest is the
 * pattern of its sender slot (seq % STREAM_DEPTH), which both sides know.
 */
static void stamp_seq(uint8_t *msg, uint64_t seq)
{
	memcpy(msg, &seq, sizeof(seq));
	memcpy(msg + STREAM_MSG_SIZE - sizeof(seq), &seq, sizeof(seq));
}

static void fill_stream_slot(uint8_t *slot, uint32_t n)
{
	fill_pattern(slot, STREAM_SEED + n, 0, STREAM_MSG_SIZE);
}

static bool stream_post_slot(struct e2e_ctx *c, int idx, uint32_t slot, struct report *r)
{
	struct xr_sge sge =
	    sge_of(c->mr_a, c->buf_a + (size_t)slot * STREAM_MSG_SIZE, STREAM_MSG_SIZE);

	return post_one_recv(c->main.qp, case_wr_id(idx, slot), &sge, 1, r);
}

static bool stream_post_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				 struct e2e_target *t, struct report *r)
{
	(void)tc;
	(void)t;
	memset(c->buf_a, CANARY, (size_t)STREAM_RECV_SLOTS * STREAM_MSG_SIZE);
	for (uint32_t slot = 0; slot < STREAM_RECV_SLOTS; slot++)
		if (!stream_post_slot(c, idx, slot, r))
			return false;
	return true;
}

static bool stream_check_message(struct e2e_ctx *c, int idx, const struct xr_wc *wc,
				 uint32_t expected_seq, const uint8_t *reference, struct report *r)
{
	uint32_t slot = expected_seq % STREAM_RECV_SLOTS;
	const uint8_t *msg = c->buf_a + (size_t)slot * STREAM_MSG_SIZE;
	const uint8_t *ref = reference + (size_t)(expected_seq % STREAM_DEPTH) * STREAM_MSG_SIZE;
	uint64_t head, tail;

	if (!check_wc(wc, case_wr_id(idx, slot), XR_WC_SUCCESS, XR_WC_RECV, r))
		return false;
	if (wc->byte_len != STREAM_MSG_SIZE) {
		report_fail(r, "message %u: byte_len %u", expected_seq, wc->byte_len);
		return false;
	}
	memcpy(&head, msg, sizeof(head));
	memcpy(&tail, msg + STREAM_MSG_SIZE - sizeof(tail), sizeof(tail));
	if (head != expected_seq || tail != expected_seq) {
		report_fail(r,
			    "receive %u carries sequence numbers %" PRIu64 "/%" PRIu64
			    " (head/tail): lost, duplicated or reordered",
			    expected_seq, head, tail);
		return false;
	}
	if (memcmp(msg + sizeof(head), ref + sizeof(head),
		   STREAM_MSG_SIZE - sizeof(head) - sizeof(tail))) {
		report_fail(r, "message %u: content differs", expected_seq);
		return false;
	}
	return true;
}

static void stream_check_receives(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				  struct report *r)
{
	uint8_t *reference = malloc((size_t)STREAM_DEPTH * STREAM_MSG_SIZE);
	int64_t deadline = tool_now_ms() + STREAM_TIMEOUT_MS;
	double start = now_s(), seconds;
	uint32_t received = 0;

	(void)tc;
	if (!reference)
		return report_fail(r, "out of memory");
	for (uint32_t n = 0; n < STREAM_DEPTH; n++)
		fill_stream_slot(reference + (size_t)n * STREAM_MSG_SIZE, n);
	while (received < STREAM_MSGS) {
		struct xr_wc wc[32];
		int want = STREAM_MSGS - received < 32 ? STREAM_MSGS - received : 32;
		int got = poll_cq_until(c->main.recv_cq, wc, want, want, deadline);

		for (int i = 0; i < got; i++, received++) {
			if (!stream_check_message(c, idx, &wc[i], received, reference, r))
				goto out;
			/* Always re-posted: a spare receive lets an extra message show. */
			if (!stream_post_slot(c, idx, received % STREAM_RECV_SLOTS, r))
				goto out;
		}
		if (got < want) {
			report_fail(r, "%u of %d messages arrived within %d s", received,
				    STREAM_MSGS, STREAM_TIMEOUT_MS / 1000);
			goto out;
		}
	}
	seconds = now_s() - start;
	if (expect_quiet(c->main.recv_cq, QUIET_WAIT_MS, r, "receive"))
		report_ok(r,
			  "%u messages, each once and in order, none extra; %.1f MB/s, %.0f "
			  "msg/s",
			  received, (double)received * STREAM_MSG_SIZE / seconds / 1e6,
			  received / seconds);
out:
	free(reference);
}

static void stream_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			const struct e2e_target *t, struct report *r)
{
	int64_t deadline = tool_now_ms() + STREAM_TIMEOUT_MS;
	uint32_t posted = 0, completed = 0;
	double start = now_s(), seconds;

	(void)tc;
	(void)t;
	for (uint32_t n = 0; n < STREAM_DEPTH; n++)
		fill_stream_slot(c->buf_a + (size_t)n * STREAM_MSG_SIZE, n);
	while (completed < STREAM_MSGS) {
		struct xr_wc wc[STREAM_DEPTH];
		int got, more;

		while (posted < STREAM_MSGS && posted - completed < STREAM_DEPTH) {
			uint8_t *msg = c->buf_a + (size_t)(posted % STREAM_DEPTH) * STREAM_MSG_SIZE;
			struct xr_sge sge = sge_of(c->mr_a, msg, STREAM_MSG_SIZE);
			struct xr_send_wr wr = {
			    .wr_id = case_wr_id(idx, posted),
			    .sg_list = &sge,
			    .num_sge = 1,
			    .opcode = XR_WR_SEND,
			    .send_flags = XR_SEND_SIGNALED,
			};

			stamp_seq(msg, posted);
			if (!e2e_post_send(c->main.qp, &wr, r))
				return;
			posted++;
		}
		got = poll_cq_until(c->main.send_cq, wc, 1, 1, deadline);
		if (got == 0)
			return report_fail(r, "%u of %d SENDs completed within %d s", completed,
					   STREAM_MSGS, STREAM_TIMEOUT_MS / 1000);
		more = xr_poll_cq(c->main.send_cq, STREAM_DEPTH - 1, wc + 1);
		if (more > 0)
			got += more;
		for (int i = 0; i < got; i++, completed++)
			if (!check_wc(&wc[i], case_wr_id(idx, completed), XR_WC_SUCCESS, XR_WC_SEND,
				      r))
				return;
	}
	seconds = now_s() - start;
	if (expect_quiet(c->main.send_cq, 0, r, "send"))
		report_ok(r, "%u SENDs of %d B at depth %d completed in order; %.1f MB/s",
			  completed, STREAM_MSG_SIZE, STREAM_DEPTH,
			  (double)completed * STREAM_MSG_SIZE / seconds / 1e6);
}

/* ---- the case table ------------------------------------------------------ */

static const struct e2e_case_ops case_ops[] = {
    [CASE_SIZE] = {size_post_receives, size_send, size_check_receives},
    [CASE_IMM] = {size_post_receives, size_send, size_check_receives},
    [CASE_SCATTER_GATHER] = {scatter_post_receives, gather_send, scatter_check_receives},
    [CASE_UNSIGNALED] = {unsignaled_post_receives, unsignaled_send, unsignaled_check_receives},
    [CASE_LENGTH_ERROR] = {length_error_post_receives, length_error_send,
			   length_error_check_receives},
    [CASE_STREAM] = {stream_post_receives, stream_send, stream_check_receives},
};

/* The cases, identical on both sides because both derive them from the agreed path MTU. */
static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	uint32_t mtu = c->mtu;
	const struct {
		uint32_t size;
		const char *label;
	} sizes[] = {
	    {0, "0"},
	    {1, "1"},
	    {mtu - 1, "MTU-1"},
	    {mtu, "MTU"},
	    {mtu + 1, "MTU+1"},
	    {3 * mtu + 7, "3*MTU+7"},
	    {BIG_SEND_SIZE, "1 MiB"},
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		e2e_add_case(cases, &n, CASE_SIZE, sizes[i].size, "SEND %s (%u B)", sizes[i].label,
			     sizes[i].size);
	e2e_add_case(cases, &n, CASE_IMM, 2 * mtu + 5, "SEND_WITH_IMM (%u B)", 2 * mtu + 5);
	e2e_add_case(cases, &n, CASE_SCATTER_GATHER, GATHER_TOTAL, "3-SGE gather, 4-SGE scatter");
	e2e_add_case(cases, &n, CASE_UNSIGNALED, 0, "%d unsignaled + 1 signaled", UNSIGNALED_SENDS);
	e2e_add_case(cases, &n, CASE_LENGTH_ERROR, ERR_SEND_SIZE,
		     "receive too small (2nd QP pair)");
	e2e_add_case(cases, &n, CASE_STREAM, STREAM_MSG_SIZE, "stream %d x %d B, depth %d",
		     STREAM_MSGS, STREAM_MSG_SIZE, STREAM_DEPTH);
	return n;
}

/* ---- out-of-band exchange ------------------------------------------------ */

static int send_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS] = {c->main.qp->qp_num, c->main.psn, c->err.qp->qp_num,
				       c->err.psn, c->port.mtu_enum};

	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->port.gid);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	struct hello *h = &c->peer;
	uint32_t words[HELLO_WORDS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &h->gid);

	if (ret)
		return ret;
	h->main_qpn = words[0];
	h->main_psn = words[1];
	h->err_qpn = words[2];
	h->err_psn = words[3];
	h->mtu_enum = words[4];
	return 0;
}

/* ---- setup --------------------------------------------------------------- */

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	c->role = args->role;
	if (e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->buf_a = aligned_alloc(4096, BUF_A_SIZE);
	c->buf_b = aligned_alloc(4096, BUF_B_SIZE);
	if (!c->buf_a || !c->buf_b) {
		fprintf(stderr, PROG ": couldn't allocate buffers\n");
		return -1;
	}
	c->mr_a = xr_reg_mr(c->port.pd, c->buf_a, BUF_A_SIZE, XR_ACCESS_LOCAL_WRITE);
	c->mr_b = xr_reg_mr(c->port.pd, c->buf_b, BUF_B_SIZE, XR_ACCESS_LOCAL_WRITE);
	if (!c->mr_a || !c->mr_b) {
		fprintf(stderr, PROG ": couldn't register MR: %s\n", strerror(errno));
		return -1;
	}
	if (e2e_create_qp_end(PROG, &c->port, &c->main, MAIN_SEND_WR, MAIN_RECV_WR, MAX_SGE, 0) ||
	    e2e_create_qp_end(PROG, &c->port, &c->err, 4, 4, 1, 0))
		return -1;
	return 0;
}

/* Agrees on the smaller path MTU, connects both pairs, and reads the path MTU back. */
static int connect_pairs(struct e2e_ctx *c)
{
	const struct hello *peer = &c->peer;
	struct xr_qp_attr attr;
	int ret;

	if (e2e_agree_mtu(PROG, &c->port, peer->mtu_enum))
		return -1;
	if (e2e_connect_qp(PROG, &c->port, &c->main, 1, peer->main_qpn, peer->main_psn,
			   &peer->gid) ||
	    e2e_connect_qp(PROG, &c->port, &c->err, 1, peer->err_qpn, peer->err_psn, &peer->gid))
		return -1;
	ret = xr_query_qp(c->main.qp, &attr, XR_QP_PATH_MTU, NULL);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query QP: %s\n", strerror(-ret));
		return -1;
	}
	c->mtu = e2e_mtu_bytes(attr.path_mtu);
	printf("[%s] path MTU %u; QPs 0x%06x, 0x%06x connected to 0x%06x, 0x%06x\n", c->role,
	       c->mtu, c->main.qp->qp_num, c->err.qp->qp_num, peer->main_qpn, peer->err_qpn);
	return 0;
}

static void teardown(struct e2e_ctx *c)
{
	e2e_destroy_qp_end(&c->main);
	e2e_destroy_qp_end(&c->err);
	if (c->mr_a)
		xr_dereg_mr(c->mr_a);
	if (c->mr_b)
		xr_dereg_mr(c->mr_b);
	e2e_close_port(&c->port);
	free(c->buf_a);
	free(c->buf_b);
}

int main(int argc, char **argv)
{
	static const struct e2e_driver driver = {
	    .prog = PROG,
	    .default_port = DEFAULT_PORT,
	    .server_part = "receiver",
	    .client_part = "sender",
	    .not_prepared = "the receiver could not post its receives",
	    .name_width = 34,
	    .peer_step_timeout_ms = STREAM_TIMEOUT_MS + E2E_OOB_TIMEOUT_MS,
	    .ops = case_ops,
	    .setup = setup,
	    .send_hello = send_hello,
	    .recv_hello = recv_hello,
	    .connect = connect_pairs,
	    .build_cases = build_cases,
	    .teardown = teardown,
	};
	struct e2e_ctx c = {0};

	return e2e_main(argc, argv, &driver, &c);
}
