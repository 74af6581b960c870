/* SPDX-License-Identifier: MIT */
/*
 * rdma_e2e: RDMA WRITE, WRITE with immediate, READ and atomics end to end
 * between two processes through the XDP program and AF_XDP, using only the
 * public API.
 *
 *   rdma_e2e server IFNAME [-p PORT]             the target: exposes memory regions
 *   rdma_e2e client IFNAME SERVER_IP [-p PORT]   the initiator
 *
 * Over an out-of-band TCP connection the two sides connect a main QP pair and
 * one fresh pair per error case (an error leaves its pair in ERR). Each case
 * runs in lockstep: the server prepares its memory and says where the client
 * may aim (address and rkey, "ready"); the client posts, checks its
 * completions and its own buffers ("done"); the server then checks its memory
 * byte for byte, its completion queue and its QP ("verdict"). Both sides
 * print one line per case with both verdicts; the exit status is 1 when any
 * case failed on either side.
 */
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "rdma_e2e"
#define DEFAULT_PORT 18781

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define CASE_TIMEOUT_MS 20000
/* How long "no completion" and "nothing arrived" are watched for. */
#define QUIET_WAIT_MS 200

/* Every area an operation may touch is surrounded by GUARD bytes of CANARY. */
#define CANARY 0xc5
#define GUARD 4096
#define BIG_SIZE (1u << 20)
/* A whole number of pages, as aligned_alloc requires. */
#define BUF_SIZE (3 * GUARD + BIG_SIZE)
/* Data sits off the page boundary on both sides: nothing may assume alignment. */
#define TARGET_SKEW 3
#define LOCAL_SKEW 5
/* Atomic target word (server) and result word (client), 8-byte aligned. */
#define ATOMIC_OFFSET (GUARD + 64)
#define RESULT_OFFSET GUARD
#define READBACK_OFFSET (GUARD + 64)

/* The error cases aim at the middle of a guarded buffer: ERR_MR_SIZE bytes registered. */
#define ERR_MR_SIZE 4096
#define ERR_BUF_SIZE (2 * GUARD + ERR_MR_SIZE)
#define FLUSHED_WRITE_SIZE 16

#define READ_BATCH 8
#define MAX_RD_ATOMIC 4
#define IMM_VALUE 0x89abcdefu

#define MAIN_SEND_WR 32
#define MAIN_RECV_WR 16
#define RECV_FIFO 16
#define RECV_SENTINEL_WR_ID 0x5e4e5e4eull

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

/* ---- the error cases (one fresh QP pair each) ------------------------------ */

/* Which of the server's keys an error case aims with. */
enum remote_key {
	KEY_FULL,      /* all remote rights, the error pairs' PD */
	KEY_OTHER_PD,  /* all remote rights, but another PD */
	KEY_NO_WRITE,  /* lacks REMOTE_WRITE */
	KEY_NO_READ,   /* lacks REMOTE_READ */
	KEY_NO_ATOMIC, /* lacks REMOTE_ATOMIC */
	KEY_STALE,     /* the rkey of a deregistered MR */
	KEY_COUNT,
};

/* What is wrong on the initiator's side, if anything. */
enum local_fault {
	LOCAL_OK,
	LOCAL_PAST_MR_END,    /* the SGE runs past the end of its MR */
	LOCAL_NO_LOCAL_WRITE, /* a READ lands in an MR without LOCAL_WRITE */
};

struct err_case {
	const char *name;
	enum xr_wr_opcode opcode;
	enum remote_key key;
	int32_t offset; /* from the start of the registered part of the error buffer */
	uint32_t length;
	enum local_fault local;
	enum xr_wc_status status;
};

static const struct err_case err_cases[] = {
    {"WRITE, invalid (deregistered) rkey", XR_WR_RDMA_WRITE, KEY_STALE, 0, 64, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"WRITE, rkey from another PD", XR_WR_RDMA_WRITE, KEY_OTHER_PD, 0, 64, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"WRITE, MR lacks REMOTE_WRITE", XR_WR_RDMA_WRITE, KEY_NO_WRITE, 0, 64, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"READ, MR lacks REMOTE_READ", XR_WR_RDMA_READ, KEY_NO_READ, 0, 64, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"FAA, MR lacks REMOTE_ATOMIC", XR_WR_ATOMIC_FETCH_AND_ADD, KEY_NO_ATOMIC, 0, 8, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"WRITE across the MR end", XR_WR_RDMA_WRITE, KEY_FULL, ERR_MR_SIZE - 100, 200, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"READ from before the MR start", XR_WR_RDMA_READ, KEY_FULL, -64, 128, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"CAS just past the MR end", XR_WR_ATOMIC_CMP_AND_SWP, KEY_FULL, ERR_MR_SIZE, 8, LOCAL_OK,
     XR_WC_REM_ACCESS_ERR},
    {"FAA, misaligned address", XR_WR_ATOMIC_FETCH_AND_ADD, KEY_FULL, 4, 8, LOCAL_OK,
     XR_WC_REM_INV_REQ_ERR},
    {"CAS, misaligned address", XR_WR_ATOMIC_CMP_AND_SWP, KEY_FULL, 12, 8, LOCAL_OK,
     XR_WC_REM_INV_REQ_ERR},
    {"WRITE_IMM, local SGE past its MR", XR_WR_RDMA_WRITE_WITH_IMM, KEY_FULL, 0, 64,
     LOCAL_PAST_MR_END, XR_WC_LOC_PROT_ERR},
    {"READ into MR without LOCAL_WRITE", XR_WR_RDMA_READ, KEY_FULL, 0, 64, LOCAL_NO_LOCAL_WRITE,
     XR_WC_LOC_PROT_ERR},
};
#define N_ERR_CASES ((int)(sizeof(err_cases) / sizeof(err_cases[0])))

/* ---- the other cases ------------------------------------------------------ */

enum case_kind {
	CASE_WRITE,
	CASE_WRITE_IMM,
	CASE_READ,
	CASE_READ_BATCH,
	CASE_CAS_HIT,
	CASE_CAS_MISS,
	CASE_FAA,
	CASE_ERROR,
	CASE_KINDS,
};

/*
 * The atomic cases. Values straddle the 32-bit halves: a carry that does not
 * cross, or a compare of one half only, shows.
 */
struct atomic_spec {
	enum xr_wr_opcode opcode;
	enum xr_wc_opcode wc_opcode;
	uint64_t initial, compare_add, swap, after;
};

static const struct atomic_spec atomic_specs[] = {
    [CASE_CAS_HIT] = {XR_WR_ATOMIC_CMP_AND_SWP, XR_WC_COMP_SWAP, 0x0123456789abcdefull,
		      0x0123456789abcdefull, 0xfedcba9876543210ull, 0xfedcba9876543210ull},
    /* The compare value differs only in the high half. */
    [CASE_CAS_MISS] = {XR_WR_ATOMIC_CMP_AND_SWP, XR_WC_COMP_SWAP, 0x0123456789abcdefull,
		       0x1123456789abcdefull, 0xfedcba9876543210ull, 0x0123456789abcdefull},
    [CASE_FAA] = {XR_WR_ATOMIC_FETCH_AND_ADD, XR_WC_FETCH_ADD, 0x00000001fffffff0ull,
		  0x0000000100000020ull, 0, 0x0000000300000010ull},
};

/*
 * build_cases makes 3 kinds x 5 sizes, 4 more, and one per error case (whose
 * e2e_case.param is its index in err_cases and of its QP pair).
 */
_Static_assert(3 * 5 + 4 + N_ERR_CASES <= E2E_MAX_CASES, "too many cases for the driver");

#define HELLO_MAGIC "XRRDMA01"
#define N_PAIRS (1 + N_ERR_CASES)
/* Magic, path MTU enum, pair count, then QPN and PSN of every pair, then the GID. */
#define HELLO_WORDS (2 + 2 * N_PAIRS)
_Static_assert(HELLO_WORDS <= E2E_HELLO_MAX_WORDS, "too many QP pairs for a hello");

struct hello {
	uint32_t mtu_enum;
	uint32_t qpn[N_PAIRS], psn[N_PAIRS];
	union xr_gid gid;
};

struct e2e_ctx {
	bool is_server;
	const char *role;
	struct e2e_port port;
	struct xr_pd *other_pd;
	/* Server: the target memory. Client: the local source and landing area. */
	uint8_t *buf;
	struct xr_mr *mr;
	/* Client: an MR over buf without LOCAL_WRITE. */
	struct xr_mr *read_only_mr;
	/* Server: the error cases' buffer and one MR per enum remote_key. */
	uint8_t *err_buf;
	struct xr_mr *err_mrs[KEY_COUNT];
	uint32_t stale_rkey;
	struct e2e_qp_end main;
	struct e2e_qp_end err[N_ERR_CASES];
	uint32_t mtu;
	/* Server: wr_ids of the receives posted on the main QP, oldest first. */
	uint64_t recv_fifo[RECV_FIFO];
	unsigned int recv_head, recv_tail;
	struct hello peer;
};

/*
 * Checks a whole buffer that must be CANARY except [offset, offset + len),
 * which must be pattern (seed, from ...). Describes the first difference in r.
 */
static bool check_image(const uint8_t *buf, size_t buf_size, size_t offset, size_t len,
			uint32_t seed, size_t from, const char *what, struct report *r)
{
	for (size_t i = 0; i < buf_size; i++) {
		bool in_data = i >= offset && i - offset < len;
		uint8_t want = in_data ? pattern_byte(seed, from + i - offset) : CANARY;

		if (buf[i] == want)
			continue;
		if (in_data)
			report_fail(r, "%s: data byte %zu is 0x%02x, expected 0x%02x", what,
				    i - offset, buf[i], want);
		else
			report_fail(r, "%s: byte %zd %s the data area changed (0x%02x)", what,
				    i < offset ? (ssize_t)(offset - i)
					       : (ssize_t)(i - offset - len),
				    i < offset ? "before" : "after", buf[i]);
		return false;
	}
	return true;
}

/* ---- completions -------------------------------------------------------- */

static bool wait_one(struct xr_cq *cq, struct xr_wc *wc, struct report *r, const char *what)
{
	if (poll_cq_until(cq, wc, 1, 1, tool_now_ms() + CASE_TIMEOUT_MS) == 1)
		return true;
	report_fail(r, "no %s completion within %d s", what, CASE_TIMEOUT_MS / 1000);
	return false;
}

/* ---- posting -------------------------------------------------------------- */

static bool post_one_recv(struct xr_qp *qp, uint64_t wr_id, struct report *r)
{
	/* RDMA WRITE with immediate places no data into the receive: no SGE. */
	struct xr_recv_wr wr = {.wr_id = wr_id};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(qp, &wr, &bad);

	if (ret)
		report_fail(r, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

static struct xr_send_wr rdma_wr(uint64_t wr_id, enum xr_wr_opcode opcode, struct xr_sge *sge,
				 const struct e2e_target *t)
{
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = sge,
	    .num_sge = sge->length ? 1 : 0,
	    .opcode = opcode,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(IMM_VALUE),
	};

	wr.wr.rdma.remote_addr = t->addr;
	wr.wr.rdma.rkey = t->rkey;
	return wr;
}

static struct xr_send_wr atomic_wr(uint64_t wr_id, enum xr_wr_opcode opcode, struct xr_sge *sge,
				   const struct e2e_target *t, uint64_t compare_add, uint64_t swap)
{
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = sge,
	    .num_sge = 1,
	    .opcode = opcode,
	    .send_flags = XR_SEND_SIGNALED,
	};

	wr.wr.atomic.remote_addr = t->addr;
	wr.wr.atomic.rkey = t->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

/* Posts one WR on qp and waits for its completion, which must be (status, opcode). */
static bool run_wr(struct e2e_qp_end *end, struct xr_send_wr *wr, enum xr_wc_status status,
		   enum xr_wc_opcode opcode, struct report *r)
{
	struct xr_wc wc;

	return e2e_post_send(end->qp, wr, r) && wait_one(end->send_cq, &wc, r, "send") &&
	       check_wc(&wc, wr->wr_id, status, opcode, r);
}

static void recv_fifo_push(struct e2e_ctx *c, uint64_t wr_id)
{
	c->recv_fifo[c->recv_tail++ % RECV_FIFO] = wr_id;
}

/* ---- WRITE and WRITE with immediate --------------------------------------- */

/*
 * The server keeps a receive posted on the main QP at all times (the sentinel,
 * then one per WRITE with immediate): a plain WRITE that consumed one would show.
 */
static bool write_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	memset(c->buf, CANARY, BUF_SIZE);
	*t = (struct e2e_target){.addr = (uintptr_t)c->buf + GUARD + TARGET_SKEW,
				 .rkey = c->mr->rkey};
	if (tc->kind != CASE_WRITE_IMM)
		return true;
	if (!post_one_recv(c->main.qp, case_wr_id(idx, 0), r))
		return false;
	recv_fifo_push(c, case_wr_id(idx, 0));
	return true;
}

static void write_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	uint8_t *src = c->buf + GUARD + LOCAL_SKEW;
	struct xr_sge sge = sge_of(c->mr, src, tc->size);
	bool imm = tc->kind == CASE_WRITE_IMM;
	struct xr_send_wr wr = rdma_wr(case_wr_id(idx, 0),
				       imm ? XR_WR_RDMA_WRITE_WITH_IMM : XR_WR_RDMA_WRITE, &sge, t);

	fill_pattern(src, tc->seed, 0, tc->size);
	if (!run_wr(&c->main, &wr, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, r) ||
	    !expect_quiet(c->main.send_cq, 0, r, "send"))
		return;
	report_ok(r, "%s completed with success", imm ? "WRITE_IMM" : "WRITE");
}

static void write_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	struct xr_wc wc;
	uint64_t expected_wr_id;

	(void)idx;
	if (!check_image(c->buf, BUF_SIZE, GUARD + TARGET_SKEW, tc->size, tc->seed, 0, "target", r))
		return;
	if (tc->kind == CASE_WRITE) {
		if (expect_quiet(c->main.recv_cq, QUIET_WAIT_MS, r, "target"))
			report_ok(r,
				  "%u bytes placed, %d canary bytes each side intact, no "
				  "completion (a receive was posted)",
				  tc->size, GUARD);
		return;
	}
	expected_wr_id = c->recv_fifo[c->recv_head++ % RECV_FIFO];
	if (!wait_one(c->main.recv_cq, &wc, r, "target receive") ||
	    !check_wc(&wc, expected_wr_id, XR_WC_SUCCESS, XR_WC_RECV_RDMA_WITH_IMM, r))
		return;
	if (wc.byte_len != tc->size)
		return report_fail(r, "byte_len %u, expected %u", wc.byte_len, tc->size);
	if (!(wc.wc_flags & XR_WC_WITH_IMM))
		return report_fail(r, "XR_WC_WITH_IMM missing (wc_flags 0x%x)", wc.wc_flags);
	if (wc.imm_data != htonl(IMM_VALUE))
		return report_fail(r, "imm_data 0x%08x (host order), expected 0x%08x",
				   ntohl(wc.imm_data), IMM_VALUE);
	if (wc.qp_num != c->main.qp->qp_num)
		return report_fail(r, "qp_num 0x%x, expected 0x%x", wc.qp_num, c->main.qp->qp_num);
	if (expect_quiet(c->main.recv_cq, 0, r, "target"))
		report_ok(r,
			  "%u bytes placed, canaries intact; RECV_RDMA_WITH_IMM byte_len %u "
			  "imm 0x%08x",
			  tc->size, wc.byte_len, ntohl(wc.imm_data));
}

/* ---- READ ----------------------------------------------------------------- */

static bool read_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 struct e2e_target *t, struct report *r)
{
	uint32_t len = tc->kind == CASE_READ_BATCH ? READ_BATCH * tc->size : tc->size;

	(void)idx;
	(void)r;
	memset(c->buf, CANARY, BUF_SIZE);
	fill_pattern(c->buf + GUARD + TARGET_SKEW, tc->seed, 0, len);
	*t = (struct e2e_target){.addr = (uintptr_t)c->buf + GUARD + TARGET_SKEW,
				 .rkey = c->mr->rkey};
	return true;
}

static void read_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		     const struct e2e_target *t, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr, c->buf + GUARD + LOCAL_SKEW, tc->size);
	struct xr_send_wr wr = rdma_wr(case_wr_id(idx, 0), XR_WR_RDMA_READ, &sge, t);

	memset(c->buf, CANARY, BUF_SIZE);
	if (!run_wr(&c->main, &wr, XR_WC_SUCCESS, XR_WC_RDMA_READ, r) ||
	    !expect_quiet(c->main.send_cq, 0, r, "send") ||
	    !check_image(c->buf, BUF_SIZE, GUARD + LOCAL_SKEW, tc->size, tc->seed, 0, "initiator",
			 r))
		return;
	report_ok(r, "%u bytes read, %d canary bytes each side intact", tc->size, GUARD);
}

/* READ k lands in slot READ_BATCH - 1 - k: a READ answered with another's data shows. */
static void read_batch_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   const struct e2e_target *t, struct report *r)
{
	struct xr_send_wr wrs[READ_BATCH];
	struct xr_sge sges[READ_BATCH];
	struct xr_wc wc[READ_BATCH];
	uint8_t *land = c->buf + GUARD + LOCAL_SKEW;
	int got;

	memset(c->buf, CANARY, BUF_SIZE);
	for (int k = 0; k < READ_BATCH; k++) {
		struct e2e_target tk = {.addr = t->addr + (uint64_t)k * tc->size, .rkey = t->rkey};

		sges[k] = sge_of(c->mr, land + (size_t)(READ_BATCH - 1 - k) * tc->size, tc->size);
		wrs[k] = rdma_wr(case_wr_id(idx, k), XR_WR_RDMA_READ, &sges[k], &tk);
		wrs[k].next = k + 1 < READ_BATCH ? &wrs[k + 1] : NULL;
	}
	if (!e2e_post_send(c->main.qp, wrs, r))
		return;
	got = poll_cq_until(c->main.send_cq, wc, READ_BATCH, READ_BATCH,
			    tool_now_ms() + CASE_TIMEOUT_MS);
	for (int k = 0; k < got; k++)
		if (!check_wc(&wc[k], case_wr_id(idx, k), XR_WC_SUCCESS, XR_WC_RDMA_READ, r))
			return;
	if (got < READ_BATCH)
		return report_fail(r, "%d of %d READs completed within %d s", got, READ_BATCH,
				   CASE_TIMEOUT_MS / 1000);
	if (!expect_quiet(c->main.send_cq, 0, r, "send"))
		return;
	for (int k = 0; k < READ_BATCH; k++) {
		const uint8_t *slot = land + (size_t)(READ_BATCH - 1 - k) * tc->size;

		for (uint32_t i = 0; i < tc->size; i++)
			if (slot[i] != pattern_byte(tc->seed, (size_t)k * tc->size + i))
				return report_fail(
				    r, "READ %d: byte %u is 0x%02x, expected 0x%02x", k, i, slot[i],
				    pattern_byte(tc->seed, (size_t)k * tc->size + i));
	}
	if (check_image(c->buf, GUARD + LOCAL_SKEW, 0, 0, 0, 0, "initiator", r) &&
	    check_image(land + READ_BATCH * tc->size,
			BUF_SIZE - GUARD - LOCAL_SKEW - READ_BATCH * tc->size, 0, 0, 0, 0,
			"initiator", r))
		report_ok(r,
			  "%d READs of %u B posted at once (depth %d) completed in order, "
			  "each in its slot",
			  READ_BATCH, tc->size, MAX_RD_ATOMIC);
}

/* A READ must leave its source as it was. */
static void read_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	uint32_t len = tc->kind == CASE_READ_BATCH ? READ_BATCH * tc->size : tc->size;

	(void)idx;
	if (check_image(c->buf, BUF_SIZE, GUARD + TARGET_SKEW, len, tc->seed, 0, "target", r) &&
	    expect_quiet(c->main.recv_cq, 0, r, "target"))
		report_ok(r, "source and canaries unchanged, no target completion");
}

/* ---- atomics --------------------------------------------------------------- */

static bool atomic_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	uint64_t initial = atomic_specs[tc->kind].initial;

	(void)idx;
	(void)r;
	memset(c->buf, CANARY, BUF_SIZE);
	memcpy(c->buf + ATOMIC_OFFSET, &initial, sizeof(initial));
	*t = (struct e2e_target){.addr = (uintptr_t)c->buf + ATOMIC_OFFSET, .rkey = c->mr->rkey};
	return true;
}

/* Checks the original value returned and, by READ, the new target value. */
static void atomic_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		       const struct e2e_target *t, struct report *r)
{
	const struct atomic_spec *s = &atomic_specs[tc->kind];
	struct xr_sge result = sge_of(c->mr, c->buf + RESULT_OFFSET, 8);
	struct xr_sge readback = sge_of(c->mr, c->buf + READBACK_OFFSET, 8);
	struct xr_send_wr wr =
	    atomic_wr(case_wr_id(idx, 0), s->opcode, &result, t, s->compare_add, s->swap);
	struct xr_send_wr rd = rdma_wr(case_wr_id(idx, 1), XR_WR_RDMA_READ, &readback, t);
	uint64_t returned, now;

	memset(c->buf, CANARY, BUF_SIZE);
	if (!run_wr(&c->main, &wr, XR_WC_SUCCESS, s->wc_opcode, r))
		return;
	returned = load64(c->buf + RESULT_OFFSET);
	if (returned != s->initial)
		return report_fail(r,
				   "returned 0x%016" PRIx64 ", expected the original 0x%016" PRIx64,
				   returned, s->initial);
	if (!run_wr(&c->main, &rd, XR_WC_SUCCESS, XR_WC_RDMA_READ, r) ||
	    !expect_quiet(c->main.send_cq, 0, r, "send"))
		return;
	now = load64(c->buf + READBACK_OFFSET);
	if (now != s->after)
		return report_fail(
		    r, "target reads 0x%016" PRIx64 " afterwards, expected 0x%016" PRIx64, now,
		    s->after);
	/* Only the two 8-byte result words may have changed locally. */
	if (!check_image(c->buf, RESULT_OFFSET, 0, 0, 0, 0, "initiator", r) ||
	    !check_image(c->buf + RESULT_OFFSET + 8, READBACK_OFFSET - RESULT_OFFSET - 8, 0, 0, 0,
			 0, "initiator", r) ||
	    !check_image(c->buf + READBACK_OFFSET + 8, BUF_SIZE - READBACK_OFFSET - 8, 0, 0, 0, 0,
			 "initiator", r))
		return;
	report_ok(r, "returned 0x%016" PRIx64 ", READ back 0x%016" PRIx64, returned, now);
}

static void atomic_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	const struct atomic_spec *s = &atomic_specs[tc->kind];
	uint64_t now = load64(c->buf + ATOMIC_OFFSET);

	(void)idx;
	if (now != s->after)
		return report_fail(r, "target word is 0x%016" PRIx64 ", expected 0x%016" PRIx64,
				   now, s->after);
	if (!check_image(c->buf, ATOMIC_OFFSET, 0, 0, 0, 0, "target", r) ||
	    !check_image(c->buf + ATOMIC_OFFSET + 8, BUF_SIZE - ATOMIC_OFFSET - 8, 0, 0, 0, 0,
			 "target", r) ||
	    !expect_quiet(c->main.recv_cq, 0, r, "target"))
		return;
	report_ok(r, "target word 0x%016" PRIx64 " -> 0x%016" PRIx64 ", neighbours intact",
		  s->initial, now);
}

/* ---- error cases ----------------------------------------------------------- */

static bool error_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	const struct err_case *e = &err_cases[tc->param];
	uint32_t rkey = e->key == KEY_STALE ? c->stale_rkey : c->err_mrs[e->key]->rkey;

	memset(c->err_buf, CANARY, ERR_BUF_SIZE);
	*t = (struct e2e_target){.addr = (uintptr_t)c->err_buf + GUARD + e->offset, .rkey = rkey};
	/* A receive that a request which was never to be sent would consume. */
	return e->local == LOCAL_OK || post_one_recv(c->err[tc->param].qp, case_wr_id(idx, 0), r);
}

static struct xr_sge error_local_sge(struct e2e_ctx *c, const struct err_case *e)
{
	switch (e->local) {
	case LOCAL_PAST_MR_END:
		return sge_of(c->mr, c->buf + BUF_SIZE - e->length / 2, e->length);
	case LOCAL_NO_LOCAL_WRITE:
		return sge_of(c->read_only_mr, c->buf + GUARD + LOCAL_SKEW, e->length);
	case LOCAL_OK:
		break;
	}
	return sge_of(c->mr, c->buf + GUARD + LOCAL_SKEW, e->length);
}

/*
 * The faulty request earns its status; the QP is then in ERR and the next
 * request is flushed; a READ or atomic left the local landing area alone.
 */
static void error_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	const struct err_case *e = &err_cases[tc->param];
	struct e2e_qp_end *end = &c->err[tc->param];
	struct xr_sge sge = error_local_sge(c, e);
	struct xr_sge flushed_sge = sge_of(c->mr, c->buf + GUARD, FLUSHED_WRITE_SIZE);
	struct xr_send_wr wr, flushed;
	struct xr_wc wc;
	bool writes_locally = e->opcode == XR_WR_RDMA_READ ||
			      e->opcode == XR_WR_ATOMIC_CMP_AND_SWP ||
			      e->opcode == XR_WR_ATOMIC_FETCH_AND_ADD;

	memset(c->buf, CANARY, BUF_SIZE);
	if (!writes_locally)
		fill_pattern(c->buf + GUARD + LOCAL_SKEW, tc->seed, 0, e->length);
	if (e->opcode == XR_WR_ATOMIC_CMP_AND_SWP || e->opcode == XR_WR_ATOMIC_FETCH_AND_ADD)
		wr = atomic_wr(case_wr_id(idx, 0), e->opcode, &sge, t, 1, 2);
	else
		wr = rdma_wr(case_wr_id(idx, 0), e->opcode, &sge, t);
	/* A WRITE the target would accept, were the QP still usable. */
	flushed = rdma_wr(case_wr_id(idx, 1), XR_WR_RDMA_WRITE, &flushed_sge, t);
	if (!run_wr(end, &wr, e->status, 0, r) ||
	    !e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "initiator") ||
	    !e2e_post_send(end->qp, &flushed, r) ||
	    !wait_one(end->send_cq, &wc, r, "flushed send") ||
	    !check_wc(&wc, flushed.wr_id, XR_WC_WR_FLUSH_ERR, 0, r) ||
	    !expect_quiet(end->send_cq, QUIET_WAIT_MS, r, "send"))
		return;
	if (writes_locally && !check_image(c->buf, BUF_SIZE, 0, 0, 0, 0, "initiator", r))
		return;
	report_ok(r, "\"%s\", QP in ERR, next WRITE \"%s\"", xr_wc_status_str(e->status),
		  xr_wc_status_str(XR_WC_WR_FLUSH_ERR));
}

/*
 * Nothing changed in or around the registered part of the error buffer. A
 * remote error moved the target's QP to ERR; a local one must not have
 * reached the target at all: its QP is still in RTS, still expects the first
 * PSN, and the receive posted for it is still there.
 */
static void error_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	const struct err_case *e = &err_cases[tc->param];
	struct e2e_qp_end *end = &c->err[tc->param];
	struct xr_qp_attr attr;

	(void)idx;
	if (!check_image(c->err_buf, ERR_BUF_SIZE, 0, 0, 0, 0, "target", r))
		return;
	if (e->local == LOCAL_OK) {
		if (e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "target") &&
		    expect_quiet(end->recv_cq, 0, r, "target"))
			report_ok(r, "%d bytes around the MR unchanged, target QP in ERR",
				  ERR_BUF_SIZE);
		return;
	}
	if (!expect_quiet(end->recv_cq, QUIET_WAIT_MS, r, "target") ||
	    !e2e_query_state(end->qp, &attr, r))
		return;
	if (attr.qp_state != XR_QPS_RTS)
		return report_fail(r, "target QP is in state %d, expected RTS (%d)", attr.qp_state,
				   XR_QPS_RTS);
	if (attr.rq_psn != end->peer_psn)
		return report_fail(r,
				   "target QP expects PSN 0x%06x, not the first 0x%06x: "
				   "something arrived",
				   attr.rq_psn, end->peer_psn);
	report_ok(r,
		  "target saw nothing: memory unchanged, QP in RTS at PSN 0x%06x, receive "
		  "not consumed",
		  attr.rq_psn);
}

/* ---- the case table -------------------------------------------------------- */

static const struct e2e_case_ops case_ops[CASE_KINDS] = {
    [CASE_WRITE] = {write_prepare, write_act, write_check},
    [CASE_WRITE_IMM] = {write_prepare, write_act, write_check},
    [CASE_READ] = {read_prepare, read_act, read_check},
    [CASE_READ_BATCH] = {read_prepare, read_batch_act, read_check},
    [CASE_CAS_HIT] = {atomic_prepare, atomic_act, atomic_check},
    [CASE_CAS_MISS] = {atomic_prepare, atomic_act, atomic_check},
    [CASE_FAA] = {atomic_prepare, atomic_act, atomic_check},
    [CASE_ERROR] = {error_prepare, error_act, error_check},
};

/* The cases, identical on both sides because both derive them from the agreed path MTU. */
static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	uint32_t mtu = c->mtu;
	const struct {
		uint32_t size;
		const char *label;
	} sizes[] = {
	    {0, "0"}, {1, "1"}, {mtu, "MTU"}, {mtu + 1, "MTU+1"}, {BIG_SIZE, "1 MiB"},
	};
	const struct {
		enum case_kind kind;
		const char *name;
	} sized[] = {
	    {CASE_WRITE, "WRITE"},
	    {CASE_WRITE_IMM, "WRITE_IMM"},
	    {CASE_READ, "READ"},
	};
	int n = 0;

	for (size_t k = 0; k < sizeof(sized) / sizeof(sized[0]); k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			e2e_add_case(cases, &n, sized[k].kind, sizes[i].size, "%s %s (%u B)",
				     sized[k].name, sizes[i].label, sizes[i].size);
	e2e_add_case(cases, &n, CASE_READ_BATCH, 3 * mtu + 17, "%d READs of 3*MTU+17 at once",
		     READ_BATCH);
	e2e_add_case(cases, &n, CASE_CAS_HIT, 8, "CAS hit");
	e2e_add_case(cases, &n, CASE_CAS_MISS, 8, "CAS miss (high half differs)");
	e2e_add_case(cases, &n, CASE_FAA, 8, "FAA (carry across halves)");
	for (int e = 0; e < N_ERR_CASES; e++) {
		e2e_add_case(cases, &n, CASE_ERROR, err_cases[e].length, "%s", err_cases[e].name);
		cases[n - 1].param = e;
	}
	return n;
}

/* ---- out-of-band exchange ------------------------------------------------ */

static int send_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS] = {c->port.mtu_enum, N_PAIRS};

	for (int i = 0; i < N_PAIRS; i++) {
		const struct e2e_qp_end *end = i ? &c->err[i - 1] : &c->main;

		words[2 + 2 * i] = end->qp->qp_num;
		words[3 + 2 * i] = end->psn;
	}
	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->port.gid);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	struct hello *h = &c->peer;
	uint32_t words[HELLO_WORDS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &h->gid);

	if (ret)
		return ret;
	/* Both sides must have been built with the same case table. */
	if (words[1] != N_PAIRS)
		return -EPROTO;
	h->mtu_enum = words[0];
	for (int i = 0; i < N_PAIRS; i++) {
		h->qpn[i] = words[2 + 2 * i];
		h->psn[i] = words[3 + 2 * i];
	}
	return 0;
}

/* ---- setup --------------------------------------------------------------- */

static struct xr_mr *reg(struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_mr *mr = xr_reg_mr(pd, addr, length, access);

	if (!mr)
		fprintf(stderr, PROG ": couldn't register an MR (access 0x%x): %s\n", access,
			strerror(errno));
	return mr;
}

/* Server: the target buffer, the error buffer's MRs, and an rkey that is no longer valid. */
static int setup_server_mrs(struct e2e_ctx *c)
{
	static const int err_access[KEY_COUNT] = {
	    [KEY_FULL] = remote_all,
	    [KEY_OTHER_PD] = remote_all,
	    [KEY_NO_WRITE] = remote_all & ~XR_ACCESS_REMOTE_WRITE,
	    [KEY_NO_READ] = remote_all & ~XR_ACCESS_REMOTE_READ,
	    [KEY_NO_ATOMIC] = remote_all & ~XR_ACCESS_REMOTE_ATOMIC,
	};
	struct xr_mr *stale;

	c->other_pd = xr_alloc_pd(c->port.dev);
	c->err_buf = aligned_alloc(4096, ERR_BUF_SIZE);
	if (!c->other_pd || !c->err_buf) {
		fprintf(stderr, PROG ": couldn't allocate the second PD or the error buffer\n");
		return -1;
	}
	c->mr = reg(c->port.pd, c->buf, BUF_SIZE, remote_all);
	if (!c->mr)
		return -1;
	for (int k = 0; k < KEY_STALE; k++) {
		c->err_mrs[k] = reg(k == KEY_OTHER_PD ? c->other_pd : c->port.pd,
				    c->err_buf + GUARD, ERR_MR_SIZE, err_access[k]);
		if (!c->err_mrs[k])
			return -1;
	}
	/* Registered last, so that no later registration takes its slot again. */
	stale = reg(c->port.pd, c->err_buf + GUARD, ERR_MR_SIZE, remote_all);
	if (!stale)
		return -1;
	c->stale_rkey = stale->rkey;
	xr_dereg_mr(stale);
	return 0;
}

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	int i;

	c->is_server = args->is_server;
	c->role = args->role;
	if (e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->buf = aligned_alloc(4096, BUF_SIZE);
	if (!c->buf) {
		fprintf(stderr, PROG ": couldn't allocate the buffer\n");
		return -1;
	}
	if (c->is_server) {
		if (setup_server_mrs(c))
			return -1;
	} else {
		c->mr = reg(c->port.pd, c->buf, BUF_SIZE, XR_ACCESS_LOCAL_WRITE);
		c->read_only_mr = reg(c->port.pd, c->buf, BUF_SIZE, 0);
		if (!c->mr || !c->read_only_mr)
			return -1;
	}
	if (e2e_create_qp_end(PROG, &c->port, &c->main, MAIN_SEND_WR, MAIN_RECV_WR, 1, remote_all))
		return -1;
	for (i = 0; i < N_ERR_CASES; i++)
		if (e2e_create_qp_end(PROG, &c->port, &c->err[i], 4, 4, 1, remote_all))
			return -1;
	if (c->is_server) {
		struct report r = {0};

		if (!post_one_recv(c->main.qp, RECV_SENTINEL_WR_ID, &r)) {
			fprintf(stderr, PROG ": %s\n", r.detail);
			return -1;
		}
		recv_fifo_push(c, RECV_SENTINEL_WR_ID);
	}
	return 0;
}

/* Agrees on the smaller path MTU, connects every pair, and reads the path MTU back. */
static int connect_pairs(struct e2e_ctx *c)
{
	const struct hello *peer = &c->peer;
	struct xr_qp_attr attr;
	int ret;

	if (e2e_agree_mtu(PROG, &c->port, peer->mtu_enum))
		return -1;
	if (e2e_connect_qp(PROG, &c->port, &c->main, MAX_RD_ATOMIC, peer->qpn[0], peer->psn[0],
			   &peer->gid))
		return -1;
	for (int i = 0; i < N_ERR_CASES; i++)
		if (e2e_connect_qp(PROG, &c->port, &c->err[i], MAX_RD_ATOMIC, peer->qpn[1 + i],
				   peer->psn[1 + i], &peer->gid))
			return -1;
	ret = xr_query_qp(c->main.qp, &attr, XR_QP_PATH_MTU | XR_QP_MAX_QP_RD_ATOMIC, NULL);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query QP: %s\n", strerror(-ret));
		return -1;
	}
	c->mtu = e2e_mtu_bytes(attr.path_mtu);
	printf("[%s] path MTU %u; main QP 0x%06x -> 0x%06x, max_rd_atomic %u, %d error pairs\n",
	       c->role, c->mtu, c->main.qp->qp_num, peer->qpn[0], attr.max_rd_atomic, N_ERR_CASES);
	return 0;
}

static void teardown(struct e2e_ctx *c)
{
	e2e_destroy_qp_end(&c->main);
	for (int i = 0; i < N_ERR_CASES; i++)
		e2e_destroy_qp_end(&c->err[i]);
	for (int k = 0; k < KEY_COUNT; k++)
		if (c->err_mrs[k])
			xr_dereg_mr(c->err_mrs[k]);
	if (c->read_only_mr)
		xr_dereg_mr(c->read_only_mr);
	if (c->mr)
		xr_dereg_mr(c->mr);
	if (c->other_pd)
		xr_dealloc_pd(c->other_pd);
	e2e_close_port(&c->port);
	free(c->buf);
	free(c->err_buf);
}

int main(int argc, char **argv)
{
	static const struct e2e_driver driver = {
	    .prog = PROG,
	    .default_port = DEFAULT_PORT,
	    .server_part = "target",
	    .client_part = "initiator",
	    .not_prepared = "the target could not prepare",
	    .name_width = 36,
	    .sync_carries_target = true,
	    .check_after_act = true,
	    .peer_step_timeout_ms = 3 * CASE_TIMEOUT_MS + E2E_OOB_TIMEOUT_MS,
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
