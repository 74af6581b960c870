/* SPDX-License-Identifier: MIT */
/*
 * xroce_mw_peer: memory windows, fast registration, local invalidation and
 * SEND with invalidate between xroce and a real Soft-RoCE (rdma_rxe) peer
 * running tests/interop/guest/rxe_mw_peer (tests/interop/mw.sh runs both).
 *
 *   xroce_mw_peer -d IFNAME [-p PORT] [-x] CASE OWNER SERVER_IP
 *
 * OWNER is the side whose memory the case exposes, rxe or xroce: it binds
 * the windows (or fast-registers the MR) and invalidates them, and in the
 * send-inv cases it is the target of the SEND with invalidate; the other
 * side accesses. The guest program is a verbs agent: this program holds the
 * cases and runs each step on its own side (xroce's API) or asks the guest
 * for it over the out-of-band TCP connection (see rxe_mw_peer.c for the
 * protocol), so every case is written once and runs in both directions.
 * Each step checks the exact completion status (and opcode, byte count,
 * flags and invalidated key where they apply), and the memory of both sides
 * is checked byte for byte after every transfer and after every refused one.
 * Two RC QP pairs per run: an error moves a pair to ERR, so a case ends each
 * pair with at most one error.
 *
 * Cases:
 *   mw1          type 1 window: bound, read and written through both QPs (a
 *                type 1 window belongs to the PD), rebound elsewhere (the
 *                key byte moves on; the old key is refused, the new one
 *                reads the new range), unbound (its key is refused for READ).
 *   mw2          two type 2 windows bound by work request, one per QP, read
 *                and written, then LOCAL_INV: WRITE and READ are refused,
 *                and a receive waiting at the owner is flushed.
 *   mw2-qp       a type 2 window is refused through another QP, still serves
 *                its own, and (xroce owning: rxe 6.1 bounds window accesses
 *                by the MR only) refuses a WRITE that leaves it by 8 bytes.
 *   mw-access    a read-only type 2 window refuses a WRITE, a write-only
 *                type 1 window a READ (the MR behind them has neither right).
 *   send-inv     SEND with invalidate of 2500 bytes (SEND_LAST_INV) names a
 *                type 2 window: the receive completes WITH_INV and that key,
 *                the key is refused after, and the window binds again.
 *   send-inv-bad SEND with invalidate of 64 bytes (SEND_ONLY_INV) naming a
 *                type 1 window, which cannot be invalidated: the receive
 *                completes REM_INV_REQ_ERR and the target's QP goes to ERR;
 *                xroce NAKs (invalid request: the sender completes with
 *                REM_INV_REQ_ERR), rxe 6.1 ACKs (the sender succeeds); the
 *                window still works through QP 1.
 *   send-inv-fmr (OWNER xroce only: rxe's userspace has no fast
 *                registration) a fast-registration MR, registered by
 *                XR_WR_REG_MR, invalidated by SEND_ONLY_INV, registered again
 *                with a new key byte and invalidated by LOCAL_INV; each
 *                invalidated key is refused.
 * With -x the guest program runs on xroce's libibverbs.so.1 instead of
 * Soft-RoCE (tests/ibverbs/test_ibverbs_mw.sh): the side still called rxe
 * then behaves as xroce does where rxe 6.1 differs (the flag of a WITH_INV
 * receive, a window's end, SEND with invalidate of a type 1 window).
 * Prints one line per step and "RESULT PASS" or "RESULT FAIL: why"; exit
 * status 0 when the case passed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "../../user/tools/tool_common.h"

#define PROG "xroce_mw_peer"
#define DEFAULT_PORT 18610
#define HELLO_TAG "XRMW1"

#define NQP 2
#define MEM_SIZE 65536
#define MAX_MW 8
#define PAGE 4096

/* Bounds on every wait: generous, because the peer is emulated (TCG). */
#define CONNECT_RETRY_MS 30000
#define CONNECT_ATTEMPT_MS 5000
#define HELLO_TIMEOUT_MS 30000
#define COMPLETION_TIMEOUT_MS 20000
/* The guest waits up to 20 s for a completion before it answers. */
#define RPC_TIMEOUT_MS 45000
#define STATE_TIMEOUT_MS 5000
#define STATE_POLL_US 10000
#define LINE_MAX_LEN 512

/*
 * The layout of both sides' 64 KiB buffers: the owner's windows, the
 * accessor's source, landing and receive areas. Windows are 3000 bytes, 3
 * packets at path MTU 1024, so every packet of a transfer is checked.
 */
#define WIN_LEN 3000
#define WIN0_OFF 0x1000
#define WIN1_OFF 0x3000
#define GUARD_LEN 256
#define FMR_OFF 0x6000
#define FMR_LEN (2 * PAGE)
#define FMR_SKEW 100
#define SRC_OFF 0x8000
#define DST_OFF 0xa000
#define DST2_OFF 0xc000
#define RECV_OFF 0xe000
#define RECV_LEN 0x1000

/* ibv_wc_status and ibv_qp_state have the same values as xroce's. */
#define ST_NONE (-1) /* no completion within the timeout */
#define RW (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ)

/* ---- the two sides ---------------------------------------------------------- */

struct side {
	const char *name;
	bool rxe;      /* the guest's side, reached through rxe_mw_peer */
	bool rxe_6_1;  /* with Soft-RoCE 6.1's behaviour, not xroce's */
	uint64_t base; /* the address of its buffer, in its own address space */
};

static struct side xroce_side = {.name = "xroce"},
		   rxe_side = {.name = "rxe", .rxe = true, .rxe_6_1 = true};

/* xroce's objects. */
static struct {
	struct xr_device *dev;
	struct xr_pd *pd;
	uint8_t *mem;
	struct xr_mr *mr;
	struct xr_cq *scq[NQP], *rcq[NQP];
	struct xr_qp *qp[NQP];
	struct xr_mw *mw[MAX_MW];
	int nmw;
	struct xr_mr *fmr;
	union xr_gid gid;
	int gid_index;
} X;

static int rpc_fd = -1;
static int step_no;
static char fail_why[LINE_MAX_LEN];

/* What a step produced: a completion (status ST_NONE when none came) and a key. */
struct result {
	int status;
	int opcode;
	uint32_t byte_len;
	uint32_t flags;
	uint32_t inv_rkey;
	uint32_t rkey;
};

static uint8_t pattern(unsigned int seed, uint32_t i)
{
	return (uint8_t)(seed * 0x9du + i * 7u + (i >> 8) * 3u + 1u);
}

static const char *status_str(int status)
{
	return status == ST_NONE ? "no completion" : xr_wc_status_str((enum xr_wc_status)status);
}

static const char *opcode_str(int opcode)
{
	switch (opcode) {
	case XR_WC_SEND:
		return "SEND";
	case XR_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case XR_WC_RDMA_READ:
		return "RDMA_READ";
	case XR_WC_BIND_MW:
		return "BIND_MW";
	case XR_WC_LOCAL_INV:
		return "LOCAL_INV";
	case XR_WC_REG_MR:
		return "REG_MR";
	case XR_WC_RECV:
		return "RECV";
	default:
		return "?";
	}
}

static const char *state_str(int state)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return state >= 0 && state <= XR_QPS_ERR ? names[state] : "?";
}

/* A completion's status, and its opcode when it succeeded (an error's is undefined). */
static const char *wc_str(const struct result *r)
{
	static char s[96];

	snprintf(s, sizeof(s), "%s%s%s", status_str(r->status), r->status ? "" : " ",
		 r->status ? "" : opcode_str(r->opcode));
	return s;
}

static bool failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_why, sizeof(fail_why), fmt, ap);
	va_end(ap);
	printf("  FAILED: %s\n", fail_why);
	fflush(stdout);
	return false;
}

static void stepf(const char *fmt, ...)
{
	va_list ap;

	printf("  [%2d] ", ++step_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* ---- the guest, over the out-of-band connection --------------------------- */

/* Sends a command; the answer after "OK" goes to out. False unless it was OK. */
static bool rpc(char *out, size_t size, const char *fmt, ...)
{
	char line[LINE_MAX_LEN], answer[LINE_MAX_LEN];
	int64_t deadline = tool_now_ms() + RPC_TIMEOUT_MS;
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return failf("command too long");
	line[n] = '\n';
	line[n + 1] = '\0';
	ret = oob_write_line(rpc_fd, line, deadline);
	if (!ret)
		ret = oob_read_line(rpc_fd, answer, sizeof(answer), deadline);
	if (ret) {
		line[n] = '\0';
		return failf("rxe_mw_peer did not answer \"%s\": %s", line, oob_error(ret));
	}
	if (strncmp(answer, "OK", 2) != 0 || (answer[2] != '\0' && answer[2] != ' ')) {
		line[n] = '\0';
		return failf("rxe_mw_peer answered \"%s\" to \"%s\"", answer, line);
	}
	snprintf(out, size, "%s", answer[2] ? answer + 3 : "");
	return true;
}

static bool rpc_result(struct result *r, const char *fmt, ...)
{
	char cmd[LINE_MAX_LEN], out[LINE_MAX_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	*r = (struct result){0};
	if (!rpc(out, sizeof(out), "%s", cmd))
		return false;
	if (sscanf(out, "%d %d", &r->status, &r->opcode) != 2)
		return failf("malformed answer \"%s\" to \"%s\"", out, cmd);
	return true;
}

/* ---- xroce, locally ---------------------------------------------------------- */

static bool local_completion(struct xr_cq *cq, struct result *r)
{
	struct xr_wc wc;
	int got = poll_cq_until(cq, &wc, 1, 1, tool_now_ms() + COMPLETION_TIMEOUT_MS);

	*r = (struct result){.status = ST_NONE, .opcode = -1};
	if (got != 1)
		return true;
	r->status = wc.status;
	r->opcode = wc.opcode;
	r->byte_len = wc.byte_len;
	r->flags = wc.wc_flags;
	r->inv_rkey = (wc.wc_flags & XR_WC_WITH_INV) ? wc.invalidated_rkey : 0;
	return true;
}

static bool local_post(unsigned int q, struct xr_send_wr *wr, struct result *r)
{
	struct xr_send_wr *bad;
	int ret;

	wr->send_flags |= XR_SEND_SIGNALED;
	ret = xr_post_send(X.qp[q], wr, &bad);
	if (ret)
		return failf("xr_post_send: %s", strerror(-ret));
	return local_completion(X.scq[q], r);
}

static struct xr_sge local_sge(uint32_t off, uint32_t len)
{
	return (struct xr_sge){.addr = (uintptr_t)X.mem + off, .length = len, .lkey = X.mr->lkey};
}

static void local_fill(uint32_t off, uint32_t len, unsigned int seed)
{
	for (uint32_t i = 0; i < len; i++)
		X.mem[off + i] = pattern(seed, i);
}

/* ---- each step on either side ------------------------------------------------ */

static bool s_fill(const struct side *s, uint32_t off, uint32_t len, unsigned int seed)
{
	char out[LINE_MAX_LEN];

	if (s->rxe)
		return rpc(out, sizeof(out), "FILL %x %x %x", off, len, seed);
	local_fill(off, len, seed);
	return true;
}

/* Checks that [off, off + len) of s's buffer holds pattern seed: what (a description) fails. */
static bool s_check(const struct side *s, uint32_t off, uint32_t len, unsigned int seed,
		    const char *what)
{
	char out[LINE_MAX_LEN];
	unsigned int at, got, want;
	int match;

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "CHECK %x %x %x", off, len, seed))
			return false;
		if (sscanf(out, "%d", &match) != 1)
			return failf("malformed CHECK answer \"%s\"", out);
		if (!match) {
			if (sscanf(out, "%d %x %x %x", &match, &at, &got, &want) != 4)
				return failf("malformed CHECK answer \"%s\"", out);
			return failf("%s: rxe's byte at +0x%x is 0x%02x, expected 0x%02x", what,
				     at - off, got, want);
		}
	} else {
		for (uint32_t i = 0; i < len; i++)
			if (X.mem[off + i] != pattern(seed, i))
				return failf("%s: xroce's byte at +0x%x is 0x%02x, expected 0x%02x",
					     what, i, X.mem[off + i], pattern(seed, i));
	}
	stepf("%s: %s's %u bytes at +0x%x hold pattern %u\n", what, s->name, len, off, seed);
	return true;
}

static bool s_alloc_mw(const struct side *s, int type, int *idx, uint32_t *rkey)
{
	char out[LINE_MAX_LEN];
	struct xr_mw *mw;

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "MW %d", type))
			return false;
		if (sscanf(out, "%x %x", idx, rkey) != 2)
			return failf("malformed MW answer \"%s\"", out);
	} else {
		if (X.nmw == MAX_MW)
			return failf("too many memory windows");
		mw = xr_alloc_mw(X.pd, type == 1 ? XR_MW_TYPE_1 : XR_MW_TYPE_2);
		if (!mw)
			return failf("xr_alloc_mw(type %d): %s", type, strerror(errno));
		X.mw[X.nmw] = mw;
		*idx = X.nmw++;
		*rkey = mw->rkey;
	}
	stepf("%s allocates a type %d window: rkey 0x%08x\n", s->name, type, *rkey);
	return true;
}

/* Binds window idx of s (type 1 by the verb, type 2 by a work request) over [off, off + len). */
static bool s_bind(const struct side *s, int type, unsigned int q, int idx, uint32_t off,
		   uint32_t len, unsigned int access, struct result *r)
{
	char out[LINE_MAX_LEN];

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "BIND%d %u %u %x %x %x", type, q, idx, off, len, access))
			return false;
		*r = (struct result){0};
		if (sscanf(out, "%d %d %x", &r->status, &r->opcode, &r->rkey) != 3)
			return failf("malformed BIND answer \"%s\"", out);
	} else if (type == 1) {
		struct xr_mw_bind b = {
		    .wr_id = 0xb1,
		    .send_flags = XR_SEND_SIGNALED,
		    .bind_info = {.mr = len ? X.mr : NULL,
				  .addr = len ? (uintptr_t)X.mem + off : 0,
				  .length = len,
				  .mw_access_flags = access},
		};
		int ret = xr_bind_mw(X.qp[q], X.mw[idx], &b);

		if (ret)
			return failf("xr_bind_mw: %s", strerror(-ret));
		if (!local_completion(X.scq[q], r))
			return false;
		r->rkey = X.mw[idx]->rkey;
	} else {
		uint32_t new_rkey = xr_inc_rkey(X.mw[idx]->rkey);
		struct xr_send_wr wr = {
		    .wr_id = 0xb2,
		    .opcode = XR_WR_BIND_MW,
		    .bind_mw = {.mw = X.mw[idx],
				.rkey = new_rkey,
				.bind_info = {.mr = X.mr,
					      .addr = (uintptr_t)X.mem + off,
					      .length = len,
					      .mw_access_flags = access}},
		};

		if (!local_post(q, &wr, r))
			return false;
		r->rkey = new_rkey;
	}
	if (len)
		stepf("%s binds type %d window %d over +0x%x..+0x%x on QP %u: %s, rkey 0x%08x\n",
		      s->name, type, idx, off, off + len, q, wc_str(r), r->rkey);
	else
		stepf("%s unbinds type %d window %d on QP %u: %s, rkey 0x%08x\n", s->name, type,
		      idx, q, wc_str(r), r->rkey);
	return true;
}

static bool s_local_inv(const struct side *s, unsigned int q, uint32_t rkey, struct result *r)
{
	struct xr_send_wr wr = {.wr_id = 0x11, .opcode = XR_WR_LOCAL_INV, .invalidate_rkey = rkey};

	if (s->rxe ? !rpc_result(r, "LINV %u %x", q, rkey) : !local_post(q, &wr, r))
		return false;
	stepf("%s LOCAL_INV 0x%08x on QP %u: %s\n", s->name, rkey, q, wc_str(r));
	return true;
}

/* WRITE of len bytes of pattern seed from s's off to the peer's raddr. */
static bool s_write(const struct side *s, unsigned int q, uint32_t rkey, uint64_t raddr,
		    uint32_t len, uint32_t off, unsigned int seed, struct result *r)
{
	struct xr_sge sge = local_sge(off, len);
	struct xr_send_wr wr = {.wr_id = 0x33,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_RDMA_WRITE,
				.wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

	if (s->rxe) {
		if (!rpc_result(r, "WRITE %u %x %" PRIx64 " %x %x %x", q, rkey, raddr, len, off,
				seed))
			return false;
	} else {
		local_fill(off, len, seed);
		if (!local_post(q, &wr, r))
			return false;
	}
	stepf("%s WRITEs %u bytes (pattern %u) to 0x%" PRIx64 " with rkey 0x%08x on QP %u: %s\n",
	      s->name, len, seed, raddr, rkey, q, wc_str(r));
	return true;
}

static bool s_read(const struct side *s, unsigned int q, uint32_t rkey, uint64_t raddr,
		   uint32_t len, uint32_t off, struct result *r)
{
	struct xr_sge sge = local_sge(off, len);
	struct xr_send_wr wr = {.wr_id = 0x44,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_RDMA_READ,
				.wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

	if (s->rxe ? !rpc_result(r, "READ %u %x %" PRIx64 " %x %x", q, rkey, raddr, len, off)
		   : !local_post(q, &wr, r))
		return false;
	stepf("%s READs %u bytes from 0x%" PRIx64 " with rkey 0x%08x on QP %u: %s\n", s->name, len,
	      raddr, rkey, q, wc_str(r));
	return true;
}

/* SEND with invalidate of rkey, len bytes of pattern seed from s's off. */
static bool s_send_inv(const struct side *s, unsigned int q, uint32_t rkey, uint32_t len,
		       uint32_t off, unsigned int seed, struct result *r)
{
	struct xr_sge sge = local_sge(off, len);
	struct xr_send_wr wr = {.wr_id = 0x55,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_SEND_WITH_INV,
				.invalidate_rkey = rkey};

	if (s->rxe) {
		if (!rpc_result(r, "SINV %u %x %x %x %x", q, rkey, len, off, seed))
			return false;
	} else {
		local_fill(off, len, seed);
		if (!local_post(q, &wr, r))
			return false;
	}
	stepf("%s SEND_WITH_INV of %u bytes (pattern %u) invalidating 0x%08x on QP %u: %s\n",
	      s->name, len, seed, rkey, q, wc_str(r));
	return true;
}

static bool s_post_recv(const struct side *s, unsigned int q, uint32_t off, uint32_t len)
{
	char out[LINE_MAX_LEN];
	struct xr_sge sge = local_sge(off, len);
	struct xr_recv_wr wr = {.wr_id = 0x66, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad;
	int ret;

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "RECV %u %x %x", q, off, len))
			return false;
	} else {
		ret = xr_post_recv(X.qp[q], &wr, &bad);
		if (ret)
			return failf("xr_post_recv: %s", strerror(-ret));
	}
	stepf("%s posts a receive of %u bytes on QP %u\n", s->name, len, q);
	return true;
}

static bool s_poll_recv(const struct side *s, unsigned int q, struct result *r)
{
	char out[LINE_MAX_LEN];

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "PRECV %u", q))
			return false;
		*r = (struct result){0};
		if (sscanf(out, "%d %d %x %x %x", &r->status, &r->opcode, &r->byte_len, &r->flags,
			   &r->inv_rkey) != 5)
			return failf("malformed PRECV answer \"%s\"", out);
	} else if (!local_completion(X.rcq[q], r)) {
		return false;
	}
	stepf("%s's receive on QP %u: %s, %u bytes, flags 0x%x, invalidated rkey 0x%08x\n", s->name,
	      q, wc_str(r), r->byte_len, r->flags, r->inv_rkey);
	return true;
}

static int local_state(unsigned int q, int want)
{
	int64_t deadline = tool_now_ms() + STATE_TIMEOUT_MS;
	struct xr_qp_attr attr;
	struct xr_qp_init_attr init;

	for (;;) {
		if (xr_query_qp(X.qp[q], &attr, XR_QP_STATE, &init))
			return -1;
		if ((int)attr.qp_state == want || tool_now_ms() >= deadline)
			return attr.qp_state;
		usleep(STATE_POLL_US);
	}
}

/* The QP of s must reach state want (within STATE_TIMEOUT_MS). */
static bool s_expect_state(const struct side *s, unsigned int q, int want)
{
	char out[LINE_MAX_LEN];
	int state;

	if (s->rxe) {
		if (!rpc(out, sizeof(out), "STATE %u %d", q, want))
			return false;
		if (sscanf(out, "%d", &state) != 1)
			return failf("malformed STATE answer \"%s\"", out);
	} else {
		state = local_state(q, want);
	}
	if (state != want)
		return failf("%s's QP %u is in %s, expected %s", s->name, q, state_str(state),
			     state_str(want));
	stepf("%s's QP %u is in %s\n", s->name, q, state_str(state));
	return true;
}

/* Fast registration of [off, off + len) of xroce's buffer with a new key byte. */
static bool local_reg_mr(unsigned int q, uint32_t off, uint32_t len, int access, struct result *r)
{
	struct xr_sge sg = {.addr = (uintptr_t)X.mem + off, .length = len};
	struct xr_send_wr wr = {.wr_id = 0x77, .opcode = XR_WR_REG_MR};
	int ret;

	if (!X.fmr) {
		X.fmr = xr_alloc_mr(X.pd, len / PAGE + 1);
		if (!X.fmr)
			return failf("xr_alloc_mr: %s", strerror(errno));
	}
	ret = xr_map_mr_sg(X.fmr, &sg, 1, NULL, PAGE);
	if (ret != 1)
		return failf("xr_map_mr_sg returned %d", ret);
	xr_update_fast_reg_key(X.fmr, (uint8_t)(X.fmr->rkey + 1));
	wr.reg.mr = X.fmr;
	wr.reg.key = X.fmr->rkey;
	wr.reg.access = access;
	if (!local_post(q, &wr, r))
		return false;
	r->rkey = X.fmr->rkey;
	stepf("xroce fast-registers +0x%x..+0x%x at iova 0x%" PRIxPTR " on QP %u: %s, rkey "
	      "0x%08x\n",
	      off, off + len, (uintptr_t)X.fmr->addr, q, wc_str(r), r->rkey);
	return true;
}

/* ---- expectations ------------------------------------------------------------- */

/* A completion with status (and, for a success, opcode: an error's opcode is undefined). */
static bool expect(const char *what, const struct result *r, int status, int opcode)
{
	if (r->status != status)
		return failf("%s: %s, expected %s", what, status_str(r->status),
			     status_str(status));
	if (status == XR_WC_SUCCESS && opcode >= 0 && r->opcode != opcode)
		return failf("%s: opcode %s (%d), expected %s", what, opcode_str(r->opcode),
			     r->opcode, opcode_str(opcode));
	return true;
}

static bool expect_key(const char *what, uint32_t got, uint32_t want)
{
	if (got != want)
		return failf("%s: rkey 0x%08x, expected 0x%08x", what, got, want);
	return true;
}

/*
 * rxe (6.1) puts the kernel's IB_WC_WITH_INVALIDATE, 1 << 2, into a
 * userspace completion as it is: libibverbs reads that bit as
 * IBV_WC_IP_CSUM_OK, and its own IBV_WC_WITH_INV (1 << 3, xroce's value)
 * stays clear. The key is in ibv_wc.invalidated_rkey all the same.
 */
#define RXE_WC_WITH_INVALIDATE (1u << 2)

/* A SEND with invalidate's receive at s: success, RECV, len bytes, WITH_INV and the key. */
static bool expect_inv_recv(const struct side *s, const struct result *r, uint32_t len,
			    uint32_t rkey)
{
	uint32_t with_inv = s->rxe_6_1 ? RXE_WC_WITH_INVALIDATE : XR_WC_WITH_INV;

	if (!expect("receive of the SEND with invalidate", r, XR_WC_SUCCESS, XR_WC_RECV))
		return false;
	if (r->byte_len != len)
		return failf("receive of the SEND with invalidate: %u bytes, expected %u",
			     r->byte_len, len);
	if ((r->flags & (RXE_WC_WITH_INVALIDATE | XR_WC_WITH_INV)) != with_inv)
		return failf("receive of the SEND with invalidate: flags 0x%x, expected bit 0x%x "
			     "(%s's WITH_INV) and not 0x%x",
			     r->flags, with_inv, s->name,
			     with_inv ^ (RXE_WC_WITH_INVALIDATE | XR_WC_WITH_INV));
	return expect_key("the receive's invalidated rkey", r->inv_rkey, rkey);
}

#define TRY(x)                                                                                     \
	do {                                                                                       \
		if (!(x))                                                                          \
			return false;                                                              \
	} while (0)

/* ---- the cases ------------------------------------------------------------------ */

/* own exposes its memory, acc accesses it. */
typedef bool (*case_fn)(const struct side *own, const struct side *acc);

static bool case_mw1(const struct side *own, const struct side *acc)
{
	uint64_t w0 = own->base + WIN0_OFF, w1 = own->base + WIN1_OFF;
	uint32_t rkey0, rkey1, rkey2;
	struct result r;
	int m;

	TRY(s_alloc_mw(own, 1, &m, &rkey0));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1) && s_fill(own, WIN1_OFF, WIN_LEN, 2));
	TRY(s_bind(own, 1, 0, m, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("bound window", r.rkey, xr_inc_rkey(rkey0)));
	rkey1 = r.rkey;

	TRY(s_read(acc, 0, rkey1, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through the window", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 1, "what the READ brought"));
	/* A type 1 window belongs to the PD: any of its QPs may use it. */
	TRY(s_write(acc, 1, rkey1, w0, WIN_LEN, SRC_OFF, 3, &r));
	TRY(expect("WRITE through the window on the other QP", &r, XR_WC_SUCCESS,
		   XR_WC_RDMA_WRITE));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 3, "what the WRITE placed"));

	/* Rebinding moves the key byte on: the old key is refused, the new one works. */
	TRY(s_bind(own, 1, 0, m, WIN1_OFF, WIN_LEN, RW, &r));
	TRY(expect("rebind", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("rebound window", r.rkey, xr_inc_rkey(rkey1)));
	rkey2 = r.rkey;
	TRY(s_read(acc, 1, rkey2, w1, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through the rebound window", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 2, "what the READ brought"));
	TRY(s_write(acc, 0, rkey1, w0, WIN_LEN, SRC_OFF, 4, &r));
	TRY(expect("WRITE with the key of before the rebind", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 3, "the old range after the refused WRITE"));
	TRY(s_check(own, WIN1_OFF, WIN_LEN, 2, "the new range after the refused WRITE"));
	TRY(s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR));

	/* Unbinding (length 0) through QP 1: the window's key is refused. */
	TRY(s_bind(own, 1, 1, m, 0, 0, 0, &r));
	TRY(expect("unbind", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("unbound window", r.rkey, xr_inc_rkey(rkey2)));
	TRY(s_fill(acc, DST2_OFF, WIN_LEN, 5));
	TRY(s_read(acc, 1, rkey2, w1, WIN_LEN, DST2_OFF, &r));
	TRY(expect("READ through the unbound window", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(acc, DST2_OFF, WIN_LEN, 5, "the READ's landing area after the refusal"));
	TRY(s_check(own, WIN1_OFF, WIN_LEN, 2, "the range after the refused READ"));
	return s_expect_state(acc, 1, XR_QPS_ERR) && s_expect_state(own, 1, XR_QPS_ERR);
}

static bool case_mw2(const struct side *own, const struct side *acc)
{
	uint64_t w0 = own->base + WIN0_OFF, w1 = own->base + WIN1_OFF;
	uint32_t r0, r1, a, b;
	struct result r;
	int m0, m1;

	TRY(s_alloc_mw(own, 2, &m0, &r0) && s_alloc_mw(own, 2, &m1, &r1));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1) && s_fill(own, WIN1_OFF, WIN_LEN, 2));
	TRY(s_bind(own, 2, 0, m0, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind on QP 0", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("window bound on QP 0", r.rkey, xr_inc_rkey(r0)));
	a = r.rkey;
	TRY(s_bind(own, 2, 1, m1, WIN1_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind on QP 1", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("window bound on QP 1", r.rkey, xr_inc_rkey(r1)));
	b = r.rkey;

	TRY(s_write(acc, 0, a, w0, WIN_LEN, SRC_OFF, 3, &r));
	TRY(expect("WRITE through window 0", &r, XR_WC_SUCCESS, XR_WC_RDMA_WRITE));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 3, "what the WRITE placed"));
	TRY(s_read(acc, 0, a, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through window 0", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 3, "what the READ brought"));
	TRY(s_read(acc, 1, b, w1, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through window 1", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 2, "what the READ brought"));

	TRY(s_local_inv(own, 0, a, &r));
	TRY(expect("LOCAL_INV of window 0", &r, XR_WC_SUCCESS, XR_WC_LOCAL_INV));
	TRY(s_local_inv(own, 1, b, &r));
	TRY(expect("LOCAL_INV of window 1", &r, XR_WC_SUCCESS, XR_WC_LOCAL_INV));

	/* A receive waiting at the owner: the error that follows must flush it. */
	TRY(s_fill(own, RECV_OFF, RECV_LEN, 7));
	TRY(s_post_recv(own, 0, RECV_OFF, RECV_LEN));
	TRY(s_write(acc, 0, a, w0, WIN_LEN, SRC_OFF, 4, &r));
	TRY(expect("WRITE through invalidated window 0", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 3, "window 0's range after the refused WRITE"));
	TRY(s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR));
	TRY(s_poll_recv(own, 0, &r));
	TRY(expect("the owner's receive after the error", &r, XR_WC_WR_FLUSH_ERR, -1));
	TRY(s_check(own, RECV_OFF, RECV_LEN, 7, "the flushed receive's buffer"));
	TRY(s_fill(acc, DST2_OFF, WIN_LEN, 5));
	TRY(s_read(acc, 1, b, w1, WIN_LEN, DST2_OFF, &r));
	TRY(expect("READ through invalidated window 1", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(acc, DST2_OFF, WIN_LEN, 5, "the READ's landing area after the refusal"));
	TRY(s_check(own, WIN1_OFF, WIN_LEN, 2, "window 1's range after the refused READ"));
	return s_expect_state(acc, 1, XR_QPS_ERR) && s_expect_state(own, 1, XR_QPS_ERR);
}

static bool case_mw2_qp(const struct side *own, const struct side *acc)
{
	uint64_t w0 = own->base + WIN0_OFF;
	uint32_t r0, a;
	struct result r;
	int m;

	TRY(s_alloc_mw(own, 2, &m, &r0));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1) && s_fill(own, WIN0_OFF + WIN_LEN, GUARD_LEN, 9));
	TRY(s_bind(own, 2, 0, m, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind on QP 0", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("window bound on QP 0", r.rkey, xr_inc_rkey(r0)));
	a = r.rkey;

	/* A type 2 window serves the QP it was bound through, no other. */
	TRY(s_fill(acc, DST2_OFF, WIN_LEN, 5));
	TRY(s_read(acc, 1, a, w0, WIN_LEN, DST2_OFF, &r));
	TRY(expect("READ through QP 1 of a window bound on QP 0", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(acc, DST2_OFF, WIN_LEN, 5, "the READ's landing area after the refusal"));
	TRY(s_expect_state(acc, 1, XR_QPS_ERR) && s_expect_state(own, 1, XR_QPS_ERR));
	TRY(s_read(acc, 0, a, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through QP 0", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 1, "what the READ brought"));

	/*
	 * rxe (6.1) bounds an access through a window by the MR behind it, not
	 * by the window (check_rkey's mr_check_range): the WRITE below lands.
	 */
	if (own->rxe_6_1) {
		stepf("(rxe checks window accesses against the MR only: not testing the window's "
		      "end)\n");
		return s_expect_state(acc, 0, XR_QPS_RTS) && s_expect_state(own, 0, XR_QPS_RTS);
	}
	/* 16 bytes from 8 before the window's end: inside the MR, outside the window. */
	TRY(s_write(acc, 0, a, w0 + WIN_LEN - 8, 16, SRC_OFF, 6, &r));
	TRY(expect("WRITE across the window's end", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 1, "the window after the refused WRITE"));
	TRY(s_check(own, WIN0_OFF + WIN_LEN, GUARD_LEN, 9, "the bytes after the window"));
	return s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR);
}

/* A window grants only the rights it was bound with, whatever the MR's. */
static bool case_mw_access(const struct side *own, const struct side *acc)
{
	uint64_t w0 = own->base + WIN0_OFF, w1 = own->base + WIN1_OFF;
	uint32_t r0, r1, a, b;
	struct result r;
	int m0, m1;

	TRY(s_alloc_mw(own, 2, &m0, &r0) && s_alloc_mw(own, 1, &m1, &r1));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1) && s_fill(own, WIN1_OFF, WIN_LEN, 2));
	TRY(s_bind(own, 2, 0, m0, WIN0_OFF, WIN_LEN, XR_ACCESS_REMOTE_READ, &r));
	TRY(expect("read-only type 2 bind on QP 0", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("read-only window", r.rkey, xr_inc_rkey(r0)));
	a = r.rkey;
	TRY(s_bind(own, 1, 1, m1, WIN1_OFF, WIN_LEN, XR_ACCESS_REMOTE_WRITE, &r));
	TRY(expect("write-only type 1 bind", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("write-only window", r.rkey, xr_inc_rkey(r1)));
	b = r.rkey;

	TRY(s_read(acc, 0, a, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through the read-only window", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 1, "what the READ brought"));
	TRY(s_write(acc, 0, a, w0, WIN_LEN, SRC_OFF, 3, &r));
	TRY(expect("WRITE through the read-only window", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 1, "the read-only window after the refused WRITE"));
	TRY(s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR));

	TRY(s_write(acc, 1, b, w1, WIN_LEN, SRC_OFF, 4, &r));
	TRY(expect("WRITE through the write-only window", &r, XR_WC_SUCCESS, XR_WC_RDMA_WRITE));
	TRY(s_check(own, WIN1_OFF, WIN_LEN, 4, "what the WRITE placed"));
	TRY(s_fill(acc, DST2_OFF, WIN_LEN, 5));
	TRY(s_read(acc, 1, b, w1, WIN_LEN, DST2_OFF, &r));
	TRY(expect("READ through the write-only window", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(acc, DST2_OFF, WIN_LEN, 5, "the READ's landing area after the refusal"));
	return s_expect_state(acc, 1, XR_QPS_ERR) && s_expect_state(own, 1, XR_QPS_ERR);
}

#define SEND_INV_LEN 2500 /* 3 packets: SEND_FIRST, SEND_MIDDLE, SEND_LAST_INV */
#define SEND_INV_SHORT 64 /* SEND_ONLY_INV */

static bool case_send_inv(const struct side *own, const struct side *acc)
{
	uint64_t w0 = own->base + WIN0_OFF;
	uint32_t r0, a;
	struct result r;
	int m;

	TRY(s_alloc_mw(own, 2, &m, &r0));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1));
	TRY(s_bind(own, 2, 0, m, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind on QP 0", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("window bound on QP 0", r.rkey, xr_inc_rkey(r0)));
	a = r.rkey;
	TRY(s_write(acc, 0, a, w0, WIN_LEN, SRC_OFF, 2, &r));
	TRY(expect("WRITE through the window", &r, XR_WC_SUCCESS, XR_WC_RDMA_WRITE));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 2, "what the WRITE placed"));

	TRY(s_post_recv(own, 0, RECV_OFF, RECV_LEN));
	TRY(s_send_inv(acc, 0, a, SEND_INV_LEN, SRC_OFF, 3, &r));
	TRY(expect("SEND with invalidate", &r, XR_WC_SUCCESS, XR_WC_SEND));
	TRY(s_poll_recv(own, 0, &r));
	TRY(expect_inv_recv(own, &r, SEND_INV_LEN, a));
	TRY(s_check(own, RECV_OFF, SEND_INV_LEN, 3, "what the SEND with invalidate brought"));

	TRY(s_write(acc, 0, a, w0, WIN_LEN, SRC_OFF, 4, &r));
	TRY(expect("WRITE through the invalidated window", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, WIN0_OFF, WIN_LEN, 2, "the window's range after the refused WRITE"));
	TRY(s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR));

	/* Invalidated, the window is free: it binds again (on QP 1), with the next key. */
	TRY(s_bind(own, 2, 1, m, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind again on QP 1", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("window bound again", r.rkey, xr_inc_rkey(a)));
	TRY(s_read(acc, 1, r.rkey, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through the window bound again", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 2, "what the READ brought"));
	return s_expect_state(acc, 1, XR_QPS_RTS) && s_expect_state(own, 1, XR_QPS_RTS);
}

/*
 * What each end of a SEND with invalidate of a key the target may not
 * invalidate completes with, by target.
 */
struct bad_inv_outcome {
	int sender_status;
	int recv_status;
	int target_qp_state;
};

static const struct bad_inv_outcome bad_inv_by_xroce = {
    /* xroce NAKs invalid request: rxe completes the SEND with REM_INV_REQ_ERR. */
    .sender_status = XR_WC_REM_INV_REQ_ERR,
    .recv_status = XR_WC_REM_INV_REQ_ERR,
    .target_qp_state = XR_QPS_ERR,
};

/*
 * rxe (6.1) fails the receive and its QP, but answers the SEND with a plain
 * ACK (syndrome 0x1f, its MSN not advanced): the sender sees a success.
 */
static const struct bad_inv_outcome bad_inv_by_rxe = {
    .sender_status = XR_WC_SUCCESS,
    .recv_status = XR_WC_REM_INV_REQ_ERR,
    .target_qp_state = XR_QPS_ERR,
};

static bool case_send_inv_bad(const struct side *own, const struct side *acc)
{
	const struct bad_inv_outcome *o = own->rxe_6_1 ? &bad_inv_by_rxe : &bad_inv_by_xroce;
	uint64_t w0 = own->base + WIN0_OFF;
	uint32_t r0, a;
	struct result r;
	int m;

	TRY(s_alloc_mw(own, 1, &m, &r0));
	TRY(s_fill(own, WIN0_OFF, WIN_LEN, 1));
	TRY(s_bind(own, 1, 0, m, WIN0_OFF, WIN_LEN, RW, &r));
	TRY(expect("bind", &r, XR_WC_SUCCESS, XR_WC_BIND_MW));
	TRY(expect_key("bound window", r.rkey, xr_inc_rkey(r0)));
	a = r.rkey;

	/* A type 1 window is not for invalidation: the message fails at both ends. */
	TRY(s_fill(own, RECV_OFF, RECV_LEN, 7));
	TRY(s_post_recv(own, 0, RECV_OFF, RECV_LEN));
	TRY(s_send_inv(acc, 0, a, SEND_INV_SHORT, SRC_OFF, 3, &r));
	TRY(expect("SEND with invalidate of a type 1 window", &r, o->sender_status, XR_WC_SEND));
	TRY(s_poll_recv(own, 0, &r));
	TRY(expect("its receive", &r, o->recv_status, XR_WC_RECV));
	TRY(s_expect_state(own, 0, o->target_qp_state));
	TRY(s_expect_state(acc, 0, o->sender_status == XR_WC_SUCCESS ? XR_QPS_RTS : XR_QPS_ERR));

	/* The window survived: it still serves reads, through the other QP. */
	TRY(s_read(acc, 1, a, w0, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ through the window after the failed invalidation", &r, XR_WC_SUCCESS,
		   XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 1, "what the READ brought"));
	return s_expect_state(acc, 1, XR_QPS_RTS) && s_expect_state(own, 1, XR_QPS_RTS);
}

static bool case_send_inv_fmr(const struct side *own, const struct side *acc)
{
	uint32_t k1, k2;
	uint64_t iova;
	struct result r;
	int access = XR_ACCESS_LOCAL_WRITE | RW;

	if (own->rxe)
		return failf("send-inv-fmr needs OWNER xroce (rxe's userspace has no fast "
			     "registration)");
	TRY(s_fill(own, FMR_OFF, FMR_LEN, 1));
	TRY(local_reg_mr(0, FMR_OFF, FMR_LEN, access, &r));
	TRY(expect("fast registration", &r, XR_WC_SUCCESS, XR_WC_REG_MR));
	k1 = r.rkey;
	iova = (uintptr_t)X.fmr->addr;

	TRY(s_write(acc, 0, k1, iova + FMR_SKEW, WIN_LEN, SRC_OFF, 2, &r));
	TRY(expect("WRITE into the fast-registered MR", &r, XR_WC_SUCCESS, XR_WC_RDMA_WRITE));
	TRY(s_check(own, FMR_OFF + FMR_SKEW, WIN_LEN, 2, "what the WRITE placed"));
	TRY(s_post_recv(own, 0, RECV_OFF, RECV_LEN));
	TRY(s_send_inv(acc, 0, k1, SEND_INV_SHORT, SRC_OFF, 3, &r));
	TRY(expect("SEND with invalidate of the MR", &r, XR_WC_SUCCESS, XR_WC_SEND));
	TRY(s_poll_recv(own, 0, &r));
	TRY(expect_inv_recv(own, &r, SEND_INV_SHORT, k1));
	TRY(s_check(own, RECV_OFF, SEND_INV_SHORT, 3, "what the SEND with invalidate brought"));
	TRY(s_fill(acc, DST2_OFF, WIN_LEN, 5));
	TRY(s_read(acc, 0, k1, iova + FMR_SKEW, WIN_LEN, DST2_OFF, &r));
	TRY(expect("READ from the invalidated MR", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(acc, DST2_OFF, WIN_LEN, 5, "the READ's landing area after the refusal"));
	TRY(s_expect_state(acc, 0, XR_QPS_ERR) && s_expect_state(own, 0, XR_QPS_ERR));

	/* Registered again with the next key byte, on QP 1; then LOCAL_INV. */
	TRY(local_reg_mr(1, FMR_OFF, FMR_LEN, access, &r));
	TRY(expect("fast registration again", &r, XR_WC_SUCCESS, XR_WC_REG_MR));
	k2 = r.rkey;
	TRY(expect_key("registered again", k2, (k1 & 0xffffff00u) | ((k1 + 1) & 0xffu)));
	TRY(s_read(acc, 1, k2, iova + FMR_SKEW, WIN_LEN, DST_OFF, &r));
	TRY(expect("READ from the MR registered again", &r, XR_WC_SUCCESS, XR_WC_RDMA_READ));
	TRY(s_check(acc, DST_OFF, WIN_LEN, 2, "what the READ brought"));
	TRY(s_local_inv(own, 1, k2, &r));
	TRY(expect("LOCAL_INV of the MR", &r, XR_WC_SUCCESS, XR_WC_LOCAL_INV));
	TRY(s_write(acc, 1, k2, iova + FMR_SKEW, WIN_LEN, SRC_OFF, 6, &r));
	TRY(expect("WRITE into the invalidated MR", &r, XR_WC_REM_ACCESS_ERR, -1));
	TRY(s_check(own, FMR_OFF + FMR_SKEW, WIN_LEN, 2, "the MR after the refused WRITE"));
	return s_expect_state(acc, 1, XR_QPS_ERR) && s_expect_state(own, 1, XR_QPS_ERR);
}

static const struct {
	const char *name;
	case_fn fn;
} cases[] = {
    {"mw1", case_mw1},
    {"mw2", case_mw2},
    {"mw2-qp", case_mw2_qp},
    {"mw-access", case_mw_access},
    {"send-inv", case_send_inv},
    {"send-inv-bad", case_send_inv_bad},
    {"send-inv-fmr", case_send_inv_fmr},
};

/* ---- setting up ------------------------------------------------------------------ */

static bool setup_local(const char *ifname)
{
	struct xr_device_attr attr;
	int ret;

	X.dev = tool_open_device(PROG, ifname);
	if (!X.dev)
		return false;
	ret = find_ipv4_gid(X.dev, &attr, &X.gid);
	if (ret < 0)
		return failf("no IPv4 GID on %s: %s", ifname, strerror(-ret));
	X.gid_index = ret;
	X.pd = xr_alloc_pd(X.dev);
	X.mem = aligned_alloc(PAGE, MEM_SIZE);
	if (!X.pd || !X.mem)
		return failf("xr_alloc_pd or aligned_alloc: %s", strerror(errno));
	memset(X.mem, 0, MEM_SIZE);
	/* No remote rights: the peer gets at this memory through windows or fast registration. */
	X.mr = xr_reg_mr(X.pd, X.mem, MEM_SIZE, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_MW_BIND);
	if (!X.mr)
		return failf("xr_reg_mr: %s", strerror(errno));
	xroce_side.base = (uintptr_t)X.mem;
	for (int i = 0; i < NQP; i++) {
		struct xr_qp_init_attr init = {
		    .qp_type = XR_QPT_RC,
		    .cap = {.max_send_wr = 16,
			    .max_recv_wr = 16,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};

		X.scq[i] = xr_create_cq(X.dev, 32, NULL);
		X.rcq[i] = xr_create_cq(X.dev, 32, NULL);
		if (!X.scq[i] || !X.rcq[i])
			return failf("xr_create_cq: %s", strerror(errno));
		init.send_cq = X.scq[i];
		init.recv_cq = X.rcq[i];
		X.qp[i] = xr_create_qp(X.pd, &init);
		if (!X.qp[i])
			return failf("xr_create_qp: %s", strerror(errno));
		ret = qp_to_init(X.qp[i], 1,
				 XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
				     XR_ACCESS_REMOTE_ATOMIC);
		if (ret)
			return failf("QP %d to INIT: %s", i, strerror(-ret));
	}
	return true;
}

static void gid_to_hex(const union xr_gid *gid, char *hex)
{
	for (int i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", gid->raw[i]);
}

static bool hex_to_gid(const char *hex, union xr_gid *gid)
{
	if (strlen(hex) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		gid->raw[i] = (uint8_t)v;
	}
	return true;
}

static bool connect_peer(const char *host, unsigned int port)
{
	char line[LINE_MAX_LEN], hex[40], peer_hex[40];
	int64_t deadline;
	uint32_t psn[NQP];
	unsigned int nqp, peer_qpn[NQP], peer_psn[NQP];
	union xr_gid peer_gid;
	const char *why = "";
	int ret;

	rpc_fd = oob_connect(host, port, CONNECT_RETRY_MS, CONNECT_ATTEMPT_MS, &why);
	if (rpc_fd < 0)
		return failf("couldn't connect to rxe_mw_peer at %s:%u: %s", host, port, why);
	deadline = tool_now_ms() + HELLO_TIMEOUT_MS;
	srand48((long)tool_now_ns() ^ getpid());
	for (int i = 0; i < NQP; i++)
		psn[i] = (uint32_t)lrand48() & 0xffffff;
	gid_to_hex(&X.gid, hex);
	snprintf(line, sizeof(line), "%s %x %s %" PRIx64 " %x %x %x %x\n", HELLO_TAG, NQP, hex,
		 xroce_side.base, X.qp[0]->qp_num, psn[0], X.qp[1]->qp_num, psn[1]);
	ret = oob_write_line(rpc_fd, line, deadline);
	if (!ret)
		ret = oob_read_line(rpc_fd, line, sizeof(line), deadline);
	if (ret)
		return failf("hello exchange: %s", oob_error(ret));
	if (sscanf(line, HELLO_TAG " %x %39s %" SCNx64 " %x %x %x %x", &nqp, peer_hex,
		   &rxe_side.base, &peer_qpn[0], &peer_psn[0], &peer_qpn[1], &peer_psn[1]) != 7 ||
	    nqp != NQP || !hex_to_gid(peer_hex, &peer_gid))
		return failf("malformed hello from rxe_mw_peer: \"%s\"", line);
	printf("local:  GID index %d, buffer 0x%" PRIx64 ", QPNs 0x%06x 0x%06x\n", X.gid_index,
	       xroce_side.base, X.qp[0]->qp_num, X.qp[1]->qp_num);
	printf("remote: GID %s, buffer 0x%" PRIx64 ", QPNs 0x%06x 0x%06x\n", peer_hex,
	       rxe_side.base, peer_qpn[0], peer_qpn[1]);
	for (int i = 0; i < NQP; i++) {
		struct qp_rtr_attr rtr = {
		    .path_mtu = XR_MTU_1024,
		    .dest_qpn = peer_qpn[i],
		    .rq_psn = peer_psn[i],
		    .dgid = peer_gid,
		    .sgid_index = (uint8_t)X.gid_index,
		    .port_num = 1,
		    .hop_limit = 64,
		    .max_dest_rd_atomic = 4,
		    .min_rnr_timer = 12,
		};
		const char *failed;

		ret = qp_connect(X.qp[i], &rtr, psn[i], 4, &failed);
		if (ret)
			return failf("QP %d to %s: %s", i, failed, strerror(-ret));
	}
	ret = oob_write_line(rpc_fd, "RTS\n", deadline);
	if (!ret)
		ret = oob_read_line(rpc_fd, line, sizeof(line), deadline);
	if (ret || strcmp(line, "RTS") != 0)
		return failf("rxe_mw_peer did not reach RTS: %s", ret ? oob_error(ret) : line);
	return true;
}

static void teardown(void)
{
	for (int i = 0; i < NQP; i++)
		if (X.qp[i])
			xr_destroy_qp(X.qp[i]);
	for (int i = 0; i < X.nmw; i++)
		xr_dealloc_mw(X.mw[i]);
	if (X.fmr)
		xr_dereg_mr(X.fmr);
	if (X.mr)
		xr_dereg_mr(X.mr);
	for (int i = 0; i < NQP; i++) {
		if (X.scq[i])
			xr_destroy_cq(X.scq[i]);
		if (X.rcq[i])
			xr_destroy_cq(X.rcq[i]);
	}
	if (X.pd)
		xr_dealloc_pd(X.pd);
	if (X.dev)
		xr_close_device(X.dev);
	free(X.mem);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s -d IFNAME [-p PORT] [-x] CASE OWNER SERVER_IP\n"
		"  CASE: mw1 mw2 mw2-qp mw-access send-inv send-inv-bad send-inv-fmr\n"
		"  OWNER: rxe or xroce, the side whose memory is exposed and invalidated\n"
		"  -x: rxe_mw_peer runs on xroce's libibverbs, not on Soft-RoCE\n",
		PROG);
}

int main(int argc, char **argv)
{
	const char *ifname = NULL, *host;
	unsigned long port = DEFAULT_PORT;
	const struct side *own, *acc;
	case_fn fn = NULL;
	char out[LINE_MAX_LEN];
	bool ok;
	int c;

	while ((c = getopt(argc, argv, "d:p:xh")) != -1) {
		switch (c) {
		case 'x':
			rxe_side.rxe_6_1 = false;
			break;
		case 'd':
			ifname = optarg;
			break;
		case 'p':
			if (!parse_ulong(optarg, 65535, &port)) {
				usage();
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!ifname || argc - optind != 3) {
		usage();
		return 2;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(argv[optind], cases[i].name) == 0)
			fn = cases[i].fn;
	if (!fn ||
	    (strcmp(argv[optind + 1], "rxe") != 0 && strcmp(argv[optind + 1], "xroce") != 0)) {
		usage();
		return 2;
	}
	own = strcmp(argv[optind + 1], "rxe") == 0 ? &rxe_side : &xroce_side;
	acc = own == &rxe_side ? &xroce_side : &rxe_side;
	host = argv[optind + 2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	tool_catch_stop_signals();

	printf("case %s: %s owns the memory, %s accesses it\n", argv[optind], own->name, acc->name);
	ok = setup_local(ifname) && connect_peer(host, (unsigned int)port) && fn(own, acc);
	if (rpc_fd >= 0) {
		char why[sizeof(fail_why)];

		/* The guest's exit status tells whether the session ended in order. */
		memcpy(why, fail_why, sizeof(why));
		if (!rpc(out, sizeof(out), "BYE")) {
			if (!ok) /* the case's own failure is the one to report */
				memcpy(fail_why, why, sizeof(why));
			ok = false;
		}
		close(rpc_fd);
	}
	teardown();
	if (ok)
		printf("RESULT PASS\n");
	else
		printf("RESULT FAIL: %s\n", fail_why);
	return ok ? 0 : 1;
}
