/* SPDX-License-Identifier: MIT */
/*
 * mw_e2e: memory windows (type 1 and 2), fast registration, local and
 * remote invalidation and READ with invalidate, end to end between two
 * processes through the XDP program and AF_XDP, using only the public API.
 *
 *   mw_e2e server IFNAME [-p PORT] [--impaired NAME]             the target
 *   mw_e2e client IFNAME SERVER_IP [-p PORT] [--impaired NAME]   the initiator
 *
 * The server owns the memory that is aimed at: a buffer with an MR over it
 * (windows are bound inside it, off page boundaries, narrower than the MR),
 * and pages for fast registration. The client initiates. Every case gets
 * fresh QP pairs for the operations that must fail (an error leaves a pair
 * in ERR); the main pair only ever carries what must succeed. A case runs in
 * lockstep rounds (e2e_common.h): the server prepares (binds, registers,
 * invalidates) and says where the client may aim; the client posts and
 * checks its completions, statuses and opcodes exactly, and what it read;
 * the server then compares its memory byte for byte with the image it
 * expects (both sides compute the same image), checks its own completions
 * and that its QPs reached the states they must.
 *
 * --impaired NAME runs one case meant to go through tests/e2e/middlebox.c,
 * which loses one chosen frame or sends one again late, so that a
 * retransmission or a duplicate reaches the target after the key was
 * invalidated (test_mw_e2e.sh has the middlebox options of each):
 *   retransmit      the WRITE's only packet is lost; the target invalidates
 *                   its type 2 window; the retransmission is refused.
 *   late-duplicate  the WRITE lands, the target invalidates its fast-reg MR
 *                   and rewrites the area; a copy of the WRITE's packet
 *                   arrives 300 ms later and must place nothing.
 *   partial         the last of a 3-packet WRITE is lost; the target
 *                   invalidates once the first two landed; the rest is
 *                   refused and its bytes never land.
 *   read-replay     a READ's response is lost; the target invalidates its
 *                   window; the READ asked again is refused, not replayed.
 *   send-inv-retransmit  the ACK of a SEND_WITH_INV is lost; its
 *                   retransmission is a duplicate: acknowledged, neither
 *                   delivered again nor failing on the key it invalidated.
 * Those pairs use a 537 ms local ACK timeout, so that the target acts
 * before the retransmission.
 */
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "mw_e2e"
#define DEFAULT_PORT 18795

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define CASE_TIMEOUT_MS 10000
/* How long "nothing more arrives" is watched for. */
#define QUIET_WAIT_MS 200
#define ACK_TIMEOUT_CODE 14
#define IMPAIRED_ACK_TIMEOUT_CODE 17 /* 4.096 us * 2^17 = 537 ms */
#define MAX_RD_ATOMIC 4

#define PAGE 4096u
#define CANARY 0xc5

/*
 * Server: the target buffer with one MR over all of it; the window inside,
 * off the page boundary, with MR on both sides; an 8-byte word in the
 * window for the atomics. Its background is a per-case pattern.
 */
#define TBUF_PAGES 32
#define TBUF_SIZE (TBUF_PAGES * PAGE)
#define WIN_OFF (PAGE + 100)
#define WIN_LEN 1000u
#define ATOM_OFF (PAGE + 512)
#define ATOM_INIT 0x0123456789abcdefull
#define ATOM_SWAP 0xfedcba9876543210ull
#define ATOM_ADD 0x0000000100000020ull
/* Server: pages for fast registration (those not mapped must stay untouched), canary. */
#define FBUF_PAGES 4
#define FBUF_SIZE (FBUF_PAGES * PAGE)
#define FR_IOVA 0x7e5700000000ull
#define FR_IOVA2 0x3c1100000000ull
/* Server: the receive buffer of the SENDs. */
#define RBUF_SIZE PAGE
#define RECV_LEN (RBUF_SIZE - 64)
#define SEND_LEN 64u
#define SEND_LONG 2500u /* 3 packets at the veth's path MTU of 1024 */

/* Client: atomic results, WRITE sources, READ landing area; pages for its own fast-reg MRs. */
#define CBUF_PAGES 16
#define CBUF_SIZE (CBUF_PAGES * PAGE)
#define CL_RESULT 64
#define CL_SRC (PAGE + 5)
#define CL_LAND (8 * PAGE + 3)
#define CL_MAX_LEN (7 * PAGE)
#define CF_PAGES 16
#define CF_SIZE (CF_PAGES * PAGE)
#define CL_IOVA 0x51a000000000ull

/* The impaired cases. */
#define LATE_WAIT_MS 600 /* the middlebox's late copy comes 300 ms after the original */
#define PARTIAL_OFF (2 * PAGE + 100)
#define PARTIAL_WIN (3 * PAGE)
#define PARTIAL_TAIL 452u

#define MAX_PAIRS 80
#define MAX_OBJS 64
#define HELLO_MAGIC "XRMWE2E1"

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
static const unsigned int win_all =
    XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
static const int fr_access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			     XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

/* ---- the cases ----------------------------------------------------------- */

enum case_kind {
	CASE_T1_OPS,
	CASE_T1_BOUNDS,
	CASE_T1_READ_ONLY,
	CASE_T1_REBIND, /* param: 0 rebind, 1 unbind (length 0) */
	CASE_T2_LOCAL_INV,
	CASE_T2_OTHER_QP,
	CASE_SEND_INV,	   /* param: 0 type 2 window, 1 fast-reg MR */
	CASE_SEND_INV_BAD, /* param: enum bad_inv */
	CASE_FRMR,
	CASE_FRMR_VALID_REREG,
	CASE_READ_INV,
	CASE_ORDER_LOCAL, /* param: 0 WRITE from the MR, 1 READ into it */
	CASE_ORDER_TARGET,
	CASE_BIND_ERR, /* param: enum bind_err */
	CASE_DEREG_BUSY,
	CASE_EINVAL,
	CASE_LINV_BAD, /* param: 0 type 1 window, 1 xr_reg_mr MR, 2 type 2 elsewhere, 3 invalid */
	CASE_FRMR_REFUSED, /* param: 0 never registered, 1 bad access, 2 READ-only */
	CASE_DEALLOC_MW,   /* param: the window type */
	CASE_MAP_INTACT,
	CASE_T1_ON_FRMR,
	CASE_IMP_RETRANSMIT,
	CASE_IMP_LATE_DUP,
	CASE_IMP_PARTIAL,
	CASE_IMP_READ_REPLAY,
	CASE_IMP_SEND_INV_DUP,
	CASE_KINDS,
};

enum op_kind { OP_WRITE, OP_READ, OP_CAS, OP_FAA, OP_KINDS };

enum bad_inv {
	BAD_INV_TYPE1,
	BAD_INV_REG_MR,
	BAD_INV_DEREGISTERED,
	BAD_INV_INDEX0,
	BAD_INV_T2_OTHER_QP,
};

enum bind_err {
	BIND_ERR_NO_MW_BIND,
	BIND_ERR_BEFORE_MR,
	BIND_ERR_PAST_MR,
	BIND_ERR_WRITE_NO_LOCAL_WRITE,
	BIND_ERR_ATOMIC_NO_LOCAL_WRITE,
	BIND_ERR_MR_OTHER_PD,
	BIND_ERR_MW_OTHER_PD,
	BIND_ERR_T2_NO_MW_BIND,
	BIND_ERR_T2_WRONG_INDEX,
	BIND_ERR_T2_BOUND,
};

struct mw_case {
	const char *name;
	enum case_kind kind;
	int param;
	int pairs; /* fresh QP pairs besides the main one */
	int rounds;
	const char *impaired; /* run only with --impaired this */
};

static const struct mw_case mw_cases[] = {
    {"T1 bind; WRITE/READ/CAS/FAA in it", CASE_T1_OPS, 0, 1, 1, NULL},
    {"T1 narrow window: edges and beyond", CASE_T1_BOUNDS, 0, 5, 1, NULL},
    {"T1 READ-only window: WRITE, atomics", CASE_T1_READ_ONLY, 0, 3, 1, NULL},
    {"T1 rebind: old rkey WRITE/READ/CAS/FAA", CASE_T1_REBIND, 0, 4, 2, NULL},
    {"T1 unbind: old rkey WRITE/READ/CAS/FAA", CASE_T1_REBIND, 1, 5, 2, NULL},
    {"T2 LOCAL_INV, then old rkey WRITE", CASE_T2_LOCAL_INV, OP_WRITE, 1, 3, NULL},
    {"T2 LOCAL_INV, then old rkey READ", CASE_T2_LOCAL_INV, OP_READ, 1, 3, NULL},
    {"T2 LOCAL_INV, then old rkey CAS", CASE_T2_LOCAL_INV, OP_CAS, 1, 3, NULL},
    {"T2 LOCAL_INV, then old rkey FAA", CASE_T2_LOCAL_INV, OP_FAA, 1, 3, NULL},
    {"T2 only through the QP it is bound to", CASE_T2_OTHER_QP, 0, 2, 1, NULL},
    {"SEND_INV of a T2 window", CASE_SEND_INV, 0, 1, 3, NULL},
    {"SEND_INV of a fast-reg MR", CASE_SEND_INV, 1, 4, 3, NULL},
    {"SEND_INV of a T1 window: refused", CASE_SEND_INV_BAD, BAD_INV_TYPE1, 1, 2, NULL},
    {"SEND_INV of an xr_reg_mr MR: refused", CASE_SEND_INV_BAD, BAD_INV_REG_MR, 1, 2, NULL},
    {"SEND_INV of a deregistered key", CASE_SEND_INV_BAD, BAD_INV_DEREGISTERED, 1, 1, NULL},
    {"SEND_INV of key index 0", CASE_SEND_INV_BAD, BAD_INV_INDEX0, 1, 1, NULL},
    {"SEND_INV of a T2 bound to another QP", CASE_SEND_INV_BAD, BAD_INV_T2_OTHER_QP, 1, 2, NULL},
    {"REG_MR of 2 apart pages at an iova", CASE_FRMR, 0, 1, 2, NULL},
    {"REG_MR of a valid MR: LOC_QP_OP_ERR", CASE_FRMR_VALID_REREG, 0, 2, 1, NULL},
    {"READ_WITH_INV into a fast-reg MR", CASE_READ_INV, 0, 1, 1, NULL},
    {"READ_WITH_INV of an xr_reg_mr lkey", CASE_READ_INV, 1, 1, 1, NULL},
    {"WRITE from FRMR + LOCAL_INV at once", CASE_ORDER_LOCAL, 0, 1, 1, NULL},
    {"READ into FRMR + LOCAL_INV at once", CASE_ORDER_LOCAL, 1, 1, 1, NULL},
    {"WRITE, then the target's LOCAL_INV", CASE_ORDER_TARGET, 0, 1, 2, NULL},
    {"bind T1: MR without MW_BIND", CASE_BIND_ERR, BIND_ERR_NO_MW_BIND, 2, 1, NULL},
    {"bind T1: window starts before the MR", CASE_BIND_ERR, BIND_ERR_BEFORE_MR, 2, 1, NULL},
    {"bind T1: window runs past the MR", CASE_BIND_ERR, BIND_ERR_PAST_MR, 2, 1, NULL},
    {"bind T1: remote WRITE, no LOCAL_WRITE", CASE_BIND_ERR, BIND_ERR_WRITE_NO_LOCAL_WRITE, 2, 1,
     NULL},
    {"bind T1: atomic, no LOCAL_WRITE", CASE_BIND_ERR, BIND_ERR_ATOMIC_NO_LOCAL_WRITE, 2, 1, NULL},
    {"bind T1: MR of another PD", CASE_BIND_ERR, BIND_ERR_MR_OTHER_PD, 2, 1, NULL},
    {"bind T1: window of another PD", CASE_BIND_ERR, BIND_ERR_MW_OTHER_PD, 2, 1, NULL},
    {"bind T2: MR without MW_BIND", CASE_BIND_ERR, BIND_ERR_T2_NO_MW_BIND, 2, 1, NULL},
    {"bind T2: new rkey of another index", CASE_BIND_ERR, BIND_ERR_T2_WRONG_INDEX, 2, 1, NULL},
    {"bind T2: already bound", CASE_BIND_ERR, BIND_ERR_T2_BOUND, 1, 1, NULL},
    {"T1 window on a fast-reg MR", CASE_T1_ON_FRMR, 0, 2, 1, NULL},
    {"dereg_mr under a T1 window: EBUSY", CASE_DEREG_BUSY, XR_MW_TYPE_1, 1, 3, NULL},
    {"dereg_mr under a T2 window: EBUSY", CASE_DEREG_BUSY, XR_MW_TYPE_2, 1, 3, NULL},
    {"invalid arguments: EINVAL, no change", CASE_EINVAL, 0, 0, 2, NULL},
    {"LOCAL_INV of a T1 window: refused", CASE_LINV_BAD, 0, 1, 1, NULL},
    {"LOCAL_INV of an xr_reg_mr MR: refused", CASE_LINV_BAD, 1, 1, 1, NULL},
    {"LOCAL_INV of a T2 bound elsewhere", CASE_LINV_BAD, 2, 1, 1, NULL},
    {"LOCAL_INV of an invalid fast-reg MR", CASE_LINV_BAD, 3, 1, 1, NULL},
    {"fast-reg MR before REG_MR: refused", CASE_FRMR_REFUSED, 0, 1, 1, NULL},
    {"REG_MR remote WRITE, no LOCAL_WRITE", CASE_FRMR_REFUSED, 1, 2, 1, NULL},
    {"REG_MR READ-only: WRITE refused", CASE_FRMR_REFUSED, 2, 1, 1, NULL},
    {"dealloc_mw of a bound T1: rkey fails", CASE_DEALLOC_MW, XR_MW_TYPE_1, 1, 2, NULL},
    {"dealloc_mw of a bound T2: rkey fails", CASE_DEALLOC_MW, XR_MW_TYPE_2, 1, 2, NULL},
    {"refused xr_map_mr_sg keeps the map", CASE_MAP_INTACT, 0, 0, 1, NULL},
    {"retransmitted WRITE after LOCAL_INV", CASE_IMP_RETRANSMIT, 0, 1, 2, "retransmit"},
    {"late duplicate WRITE after LOCAL_INV", CASE_IMP_LATE_DUP, 0, 1, 2, "late-duplicate"},
    {"WRITE's last packet after LOCAL_INV", CASE_IMP_PARTIAL, 0, 1, 2, "partial"},
    {"READ asked again after LOCAL_INV", CASE_IMP_READ_REPLAY, 0, 1, 2, "read-replay"},
    {"SEND_WITH_INV retransmitted", CASE_IMP_SEND_INV_DUP, 0, 1, 2, "send-inv-retransmit"},
};
#define N_MW_CASES ((int)(sizeof(mw_cases) / sizeof(mw_cases[0])))
_Static_assert(N_MW_CASES <= E2E_MAX_CASES, "too many cases for the driver");

struct e2e_ctx {
	bool is_server;
	const char *role;
	const char *impaired; /* NULL: the regular cases */
	struct e2e_port port;
	uint8_t ack_timeout;
	/* The cases this run has (indexes into mw_cases) and the first pair of each. */
	int ncases;
	int sel[E2E_MAX_CASES];
	int base[E2E_MAX_CASES];
	/* pairs[0] is the main pair. */
	int npairs;
	struct e2e_qp_end pairs[MAX_PAIRS];
	uint32_t peer_mtu_enum;
	uint32_t peer_qpn[MAX_PAIRS], peer_psn[MAX_PAIRS];
	union xr_gid peer_gid;
	uint32_t mtu;
	/* Server: target memory, its MRs, and the receive buffer. */
	uint8_t *tbuf, *fbuf, *rbuf;
	struct xr_mr *tmr, *nobind_mr, *nolocal_mr, *other_mr, *rmr;
	struct xr_pd *other_pd;
	/* Client: local memory. */
	uint8_t *cbuf, *cf;
	struct xr_mr *cmr;
	/* Both: the image the target buffer must hold (server: tbuf; client: for its READs). */
	uint8_t *model, *fmodel;
	/* What the cases made, freed by teardown (NULL once freed by a case). */
	struct xr_mw *mws[MAX_OBJS];
	int n_mws;
	struct xr_mr *mrs[MAX_OBJS];
	int n_mrs;
	/* What a case carries from one round to the next. */
	struct xr_mw *mw;
	struct xr_mr *mr;
	uint32_t saved_rkey;
	struct e2e_target saved_target;
	uint64_t recv_id, recv_id2, pending_id;
	int64_t posted_ms;
	uint32_t seq;
};

static const struct mw_case *case_of(const struct e2e_ctx *c, const struct e2e_case *tc)
{
	return &mw_cases[c->sel[tc->param]];
}

/* Pair k (from 0) of the case's own. */
static struct e2e_qp_end *pair(struct e2e_ctx *c, const struct e2e_case *tc, int k)
{
	return &c->pairs[c->base[tc->param] + k];
}

static struct e2e_qp_end *main_pair(struct e2e_ctx *c)
{
	return &c->pairs[0];
}

static uint64_t next_id(struct e2e_ctx *c, int idx)
{
	return case_wr_id(idx, ++c->seq);
}

static uint64_t tb(const struct e2e_ctx *c, size_t off)
{
	return (uintptr_t)(c->tbuf + off);
}

/* ---- images ---------------------------------------------------------------- */

/* What the target buffer holds when a case starts: a per-case pattern, the atomic word. */
static void tbuf_image(uint8_t *img, const struct e2e_case *tc)
{
	fill_pattern(img, tc->seed ^ 0xb6b6b6b6u, 0, TBUF_SIZE);
	store64(img + ATOM_OFF, ATOM_INIT);
}

static void model_write(uint8_t *img, size_t off, uint32_t seed, uint32_t len)
{
	fill_pattern(img + off, seed, 0, len);
}

/* Server: the target buffer and its image as the case starts. Client: the image. */
static void tbuf_reset(struct e2e_ctx *c, const struct e2e_case *tc)
{
	tbuf_image(c->model, tc);
	if (c->is_server)
		memcpy(c->tbuf, c->model, TBUF_SIZE);
}

static void fbuf_reset(struct e2e_ctx *c)
{
	memset(c->fbuf, CANARY, FBUF_SIZE);
	memset(c->fmodel, CANARY, FBUF_SIZE);
}

/* A WRITE of pattern (seed) at iova offset off of a fast-reg MR over the pages listed. */
static void fr_model_write(struct e2e_ctx *c, const int *pages, uint64_t off, uint32_t seed,
			   uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		uint64_t at = off + i;

		c->fmodel[(size_t)pages[at / PAGE] * PAGE + at % PAGE] = pattern_byte(seed, i);
	}
}

static bool check_same(const uint8_t *actual, const uint8_t *expected, size_t size,
		       const char *what, struct report *r)
{
	if (!memcmp(actual, expected, size))
		return true;
	for (size_t i = 0; i < size; i++)
		if (actual[i] != expected[i]) {
			report_fail(r, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i,
				    actual[i], expected[i]);
			break;
		}
	return false;
}

static bool all_canary(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != CANARY)
			return false;
	return true;
}

static bool check_tbuf(struct e2e_ctx *c, struct report *r)
{
	return check_same(c->tbuf, c->model, TBUF_SIZE, "target buffer", r);
}

static bool check_fbuf(struct e2e_ctx *c, struct report *r)
{
	return check_same(c->fbuf, c->fmodel, FBUF_SIZE, "fast-reg pages", r);
}

/* ---- completions and QP states ---------------------------------------------- */

/* Waits for one completion on cq, which must be (wr_id, status, opcode on success). */
static bool wait_wc(struct xr_cq *cq, uint64_t wr_id, enum xr_wc_status status,
		    enum xr_wc_opcode opcode, const char *what, struct xr_wc *out, struct report *r)
{
	struct xr_wc wc;

	if (poll_cq_until(cq, &wc, 1, 1, tool_now_ms() + CASE_TIMEOUT_MS) != 1) {
		report_fail(r, "%s: no completion within %d s", what, CASE_TIMEOUT_MS / 1000);
		return false;
	}
	if (out)
		*out = wc;
	if (wc.wr_id != wr_id) {
		report_fail(r,
			    "%s: completion of wr_id 0x%" PRIx64 " (\"%s\"), expected 0x%" PRIx64,
			    what, wc.wr_id, xr_wc_status_str(wc.status), wr_id);
		return false;
	}
	if (wc.status != status) {
		report_fail(r, "%s: completed with \"%s\", expected \"%s\"", what,
			    xr_wc_status_str(wc.status), xr_wc_status_str(status));
		return false;
	}
	/* The opcode of an error completion is undefined in verbs. */
	if (status == XR_WC_SUCCESS && wc.opcode != opcode) {
		report_fail(r, "%s: completion opcode %d, expected %d", what, wc.opcode, opcode);
		return false;
	}
	return true;
}

/* Server: pairs first .. first + n - 1 of the case reached state, and say nothing more. */
static bool pairs_in_state(struct e2e_ctx *c, const struct e2e_case *tc, int first, int n,
			   enum xr_qp_state state, struct report *r)
{
	for (int k = first; k < first + n; k++) {
		struct e2e_qp_end *end = pair(c, tc, k);

		if (!e2e_wait_qp_state(end->qp, state, r, "target") ||
		    !expect_quiet(end->recv_cq, 0, r, "target receive") ||
		    !expect_quiet(end->send_cq, 0, r, "target send"))
			return false;
	}
	return true;
}

static bool main_quiet(struct e2e_ctx *c, struct report *r)
{
	return expect_quiet(main_pair(c)->recv_cq, 0, r, "main receive") &&
	       expect_quiet(main_pair(c)->send_cq, 0, r, "main send");
}

/* ---- objects the cases make -------------------------------------------------- */

static struct xr_mw *new_mw(struct e2e_ctx *c, struct xr_pd *pd, enum xr_mw_type type,
			    struct report *r)
{
	struct xr_mw *mw;

	if (c->n_mws == MAX_OBJS) {
		report_fail(r, "too many windows for this test");
		return NULL;
	}
	mw = xr_alloc_mw(pd, type);
	if (!mw) {
		report_fail(r, "xr_alloc_mw(type %d): %s", type, strerror(errno));
		return NULL;
	}
	if (mw->type != type || mw->pd != pd || mw->handle != mw->rkey >> 8) {
		report_fail(r, "xr_alloc_mw: type %d, handle 0x%x, rkey 0x%08x", mw->type,
			    mw->handle, mw->rkey);
		xr_dealloc_mw(mw);
		return NULL;
	}
	c->mws[c->n_mws++] = mw;
	return mw;
}

static bool keep_mr(struct e2e_ctx *c, struct xr_mr *mr, struct report *r)
{
	if (c->n_mrs == MAX_OBJS) {
		report_fail(r, "too many MRs for this test");
		xr_dereg_mr(mr);
		return false;
	}
	c->mrs[c->n_mrs++] = mr;
	return true;
}

static void forget_mr(struct e2e_ctx *c, struct xr_mr *mr)
{
	for (int i = 0; i < c->n_mrs; i++)
		if (c->mrs[i] == mr)
			c->mrs[i] = NULL;
}

/* A fast-registration MR of max_pages, mapped over sg at iova (NULL: sg's own addresses). */
static struct xr_mr *new_frmr(struct e2e_ctx *c, uint32_t max_pages, const struct xr_sge *sg, int n,
			      const uint64_t *iova, struct report *r)
{
	struct xr_mr *mr = xr_alloc_mr(c->port.pd, max_pages);
	uint64_t total = 0;
	int ret;

	if (!mr) {
		report_fail(r, "xr_alloc_mr(%u): %s", max_pages, strerror(errno));
		return NULL;
	}
	if (!keep_mr(c, mr, r))
		return NULL;
	ret = xr_map_mr_sg(mr, sg, n, iova, PAGE);
	if (ret != n) {
		report_fail(r, "xr_map_mr_sg: returned %d, expected %d", ret, n);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		total += sg[i].length;
	if ((uintptr_t)mr->addr != (iova ? *iova : sg[0].addr) || mr->length != total) {
		report_fail(r, "mapped MR at %p, %zu B; expected 0x%" PRIx64 ", %" PRIu64 " B",
			    mr->addr, mr->length, iova ? *iova : sg[0].addr, total);
		return NULL;
	}
	return mr;
}

/* Gives mr a key byte it has not now (the next REG_MR's key); checks lkey and rkey. */
static bool new_fr_key(struct xr_mr *mr, struct report *r)
{
	uint32_t old = mr->rkey, old_lkey = mr->lkey;
	uint8_t byte = (uint8_t)(old + 0x3b);

	xr_update_fast_reg_key(mr, byte);
	if (mr->rkey != ((old & 0xffffff00u) | byte) ||
	    mr->lkey != ((old_lkey & 0xffffff00u) | byte)) {
		report_fail(r, "after xr_update_fast_reg_key(0x%02x): lkey 0x%08x, rkey 0x%08x",
			    byte, mr->lkey, mr->rkey);
		return false;
	}
	return true;
}

/* ---- local work requests (each side's own memory) --------------------------------- */

/* Binds a type 1 window with xr_bind_mw: its rkey moves on at once; the bind completes so. */
static bool bind_type1(struct e2e_ctx *c, struct e2e_qp_end *end, struct xr_mw *mw,
		       struct xr_mr *mr, uint64_t addr, uint64_t len, unsigned int access,
		       enum xr_wc_status status, int idx, struct report *r)
{
	uint32_t old = mw->rkey;
	struct xr_mw_bind b = {.wr_id = next_id(c, idx),
			       .send_flags = XR_SEND_SIGNALED,
			       .bind_info = {mr, addr, len, access}};
	int ret = xr_bind_mw(end->qp, mw, &b);

	if (ret) {
		report_fail(r, "xr_bind_mw: %s", strerror(-ret));
		return false;
	}
	if (mw->rkey != xr_inc_rkey(old)) {
		report_fail(r, "rkey 0x%08x after xr_bind_mw, expected 0x%08x", mw->rkey,
			    xr_inc_rkey(old));
		return false;
	}
	if (!wait_wc(end->send_cq, b.wr_id, status, XR_WC_BIND_MW, "type 1 bind", NULL, r))
		return false;
	return status == XR_WC_SUCCESS || e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "binding");
}

/* Binds a type 2 window by XR_WR_BIND_MW with the new rkey given. */
static bool bind_type2_key(struct e2e_ctx *c, struct e2e_qp_end *end, struct xr_mw *mw,
			   uint32_t rkey, struct xr_mr *mr, uint64_t addr, uint64_t len,
			   unsigned int access, enum xr_wc_status status, int idx, struct report *r)
{
	struct xr_send_wr wr = {
	    .wr_id = next_id(c, idx), .opcode = XR_WR_BIND_MW, .send_flags = XR_SEND_SIGNALED};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct xr_mw_bind_info){mr, addr, len, access};
	if (!e2e_post_send(end->qp, &wr, r))
		return false;
	if (mw->rkey != rkey) {
		report_fail(r, "window rkey 0x%08x after posting its bind to 0x%08x", mw->rkey,
			    rkey);
		return false;
	}
	if (!wait_wc(end->send_cq, wr.wr_id, status, XR_WC_BIND_MW, "type 2 bind", NULL, r))
		return false;
	return status == XR_WC_SUCCESS || e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "binding");
}

/* Binds a type 2 window by XR_WR_BIND_MW with the next key byte. */
static bool bind_type2(struct e2e_ctx *c, struct e2e_qp_end *end, struct xr_mw *mw,
		       struct xr_mr *mr, uint64_t addr, uint64_t len, unsigned int access,
		       enum xr_wc_status status, int idx, struct report *r)
{
	return bind_type2_key(c, end, mw, xr_inc_rkey(mw->rkey), mr, addr, len, access, status, idx,
			      r);
}

static struct xr_send_wr local_inv_wr(uint64_t wr_id, uint32_t key)
{
	return (struct xr_send_wr){.wr_id = wr_id,
				   .opcode = XR_WR_LOCAL_INV,
				   .send_flags = XR_SEND_SIGNALED,
				   .invalidate_rkey = key};
}

static bool local_inv(struct e2e_ctx *c, struct e2e_qp_end *end, uint32_t key,
		      enum xr_wc_status status, int idx, struct report *r)
{
	struct xr_send_wr wr = local_inv_wr(next_id(c, idx), key);

	if (!e2e_post_send(end->qp, &wr, r) ||
	    !wait_wc(end->send_cq, wr.wr_id, status, XR_WC_LOCAL_INV, "LOCAL_INV", NULL, r))
		return false;
	return status == XR_WC_SUCCESS || e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "invalidating");
}

static struct xr_send_wr reg_mr_wr(uint64_t wr_id, struct xr_mr *mr, int access)
{
	struct xr_send_wr wr = {
	    .wr_id = wr_id, .opcode = XR_WR_REG_MR, .send_flags = XR_SEND_SIGNALED};

	wr.reg.mr = mr;
	wr.reg.key = mr->rkey;
	wr.reg.access = access;
	return wr;
}

static bool reg_mr(struct e2e_ctx *c, struct e2e_qp_end *end, struct xr_mr *mr, int access,
		   enum xr_wc_status status, int idx, struct report *r)
{
	struct xr_send_wr wr = reg_mr_wr(next_id(c, idx), mr, access);

	if (!e2e_post_send(end->qp, &wr, r) ||
	    !wait_wc(end->send_cq, wr.wr_id, status, XR_WC_REG_MR, "REG_MR", NULL, r))
		return false;
	return status == XR_WC_SUCCESS || e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "registering");
}

/* Server: a receive of RECV_LEN bytes into rbuf (canary), its wr_id in c->recv_id. */
static bool post_recv(struct e2e_ctx *c, struct e2e_qp_end *end, int idx, struct report *r)
{
	struct xr_sge sge = sge_of(c->rmr, c->rbuf, RECV_LEN);
	struct xr_recv_wr wr = {.wr_id = next_id(c, idx), .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad;
	int ret;

	memset(c->rbuf, CANARY, RBUF_SIZE);
	c->recv_id = wr.wr_id;
	ret = xr_post_recv(end->qp, &wr, &bad);
	if (ret)
		report_fail(r, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

/*
 * Server: the receive completion, which must be (status; on success byte_len,
 * invalidated key or none, no immediate, this QP) and the data pattern (seed).
 */
static bool check_recv(struct e2e_ctx *c, struct e2e_qp_end *end, enum xr_wc_status status,
		       uint32_t len, uint32_t seed, bool with_inv, uint32_t inv_key,
		       struct report *r)
{
	struct xr_wc wc;

	if (!wait_wc(end->recv_cq, c->recv_id, status, XR_WC_RECV, "receive", &wc, r))
		return false;
	if (status != XR_WC_SUCCESS)
		return true;
	if (wc.byte_len != len) {
		report_fail(r, "receive byte_len %u, expected %u", wc.byte_len, len);
		return false;
	}
	if (wc.qp_num != end->qp->qp_num || (wc.wc_flags & XR_WC_WITH_IMM)) {
		report_fail(r, "receive qp_num 0x%x (expected 0x%x), wc_flags 0x%x", wc.qp_num,
			    end->qp->qp_num, wc.wc_flags);
		return false;
	}
	if (with_inv && (!(wc.wc_flags & XR_WC_WITH_INV) || wc.invalidated_rkey != inv_key)) {
		report_fail(r,
			    "receive wc_flags 0x%x, invalidated_rkey 0x%08x; expected WITH_INV "
			    "and 0x%08x",
			    wc.wc_flags, wc.invalidated_rkey, inv_key);
		return false;
	}
	if (!with_inv && (wc.wc_flags & XR_WC_WITH_INV)) {
		report_fail(r, "receive has XR_WC_WITH_INV (0x%08x)", wc.invalidated_rkey);
		return false;
	}
	for (uint32_t i = 0; i < RBUF_SIZE; i++) {
		uint8_t want = i < len ? pattern_byte(seed, i) : CANARY;

		if (c->rbuf[i] != want) {
			report_fail(r, "receive buffer byte %u is 0x%02x, expected 0x%02x", i,
				    c->rbuf[i], want);
			return false;
		}
	}
	return true;
}

/* ---- the initiator's operations --------------------------------------------------- */

static const char *const op_names[OP_KINDS] = {"WRITE", "READ", "CAS", "FAA"};
static const enum xr_wr_opcode op_wr[OP_KINDS] = {
    XR_WR_RDMA_WRITE, XR_WR_RDMA_READ, XR_WR_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_FETCH_AND_ADD};
static const enum xr_wc_opcode op_wc[OP_KINDS] = {XR_WC_RDMA_WRITE, XR_WC_RDMA_READ,
						  XR_WC_COMP_SWAP, XR_WC_FETCH_ADD};

/* A remote operation: WRITE of pattern (seed) from CL_SRC, READ to CL_LAND, atomic to CL_RESULT. */
struct op {
	enum op_kind kind;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len; /* WRITE and READ */
	uint32_t seed;
	uint64_t compare_add, swap;
};

static struct xr_send_wr op_wr_of(struct e2e_ctx *c, const struct op *o, uint64_t wr_id,
				  struct xr_sge *sge)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = op_wr[o->kind],
				.send_flags = XR_SEND_SIGNALED};

	switch (o->kind) {
	case OP_WRITE:
		*sge = sge_of(c->cmr, c->cbuf + CL_SRC, o->len);
		break;
	case OP_READ:
		*sge = sge_of(c->cmr, c->cbuf + CL_LAND, o->len);
		break;
	default:
		*sge = sge_of(c->cmr, c->cbuf + CL_RESULT, 8);
		wr.wr.atomic.remote_addr = o->addr;
		wr.wr.atomic.rkey = o->rkey;
		wr.wr.atomic.compare_add = o->compare_add;
		wr.wr.atomic.swap = o->swap;
		return wr;
	}
	wr.wr.rdma.remote_addr = o->addr;
	wr.wr.rdma.rkey = o->rkey;
	return wr;
}

/*
 * Client: runs o on end and waits for its completion, which must have
 * status. After an error the QP is in ERR and nothing landed locally.
 */
static bool client_op(struct e2e_ctx *c, struct e2e_qp_end *end, const struct op *o,
		      enum xr_wc_status status, int idx, const char *what, struct report *r)
{
	struct xr_sge sge;
	struct xr_send_wr wr = op_wr_of(c, o, next_id(c, idx), &sge);
	char label[160];

	if (o->len > CL_MAX_LEN) {
		report_fail(r, "%s of %u B: too long for the test's buffers", op_names[o->kind],
			    o->len);
		return false;
	}
	memset(c->cbuf + CL_RESULT, CANARY, 8);
	if (o->kind == OP_READ)
		memset(c->cbuf + CL_LAND, CANARY, o->len);
	if (o->kind == OP_WRITE)
		fill_pattern(c->cbuf + CL_SRC, o->seed, 0, o->len);
	snprintf(label, sizeof(label), "%s %s (QP 0x%06x)", op_names[o->kind], what,
		 end->qp->qp_num);
	if (!e2e_post_send(end->qp, &wr, r) ||
	    !wait_wc(end->send_cq, wr.wr_id, status, op_wc[o->kind], label, NULL, r))
		return false;
	if (status == XR_WC_SUCCESS)
		return expect_quiet(end->send_cq, 0, r, "initiator");
	if (!e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "initiator"))
		return false;
	if ((o->kind == OP_READ && !all_canary(c->cbuf + CL_LAND, o->len)) ||
	    !all_canary(c->cbuf + CL_RESULT, 8)) {
		report_fail(r, "%s failed, but data landed locally", label);
		return false;
	}
	return true;
}

static struct op write_op(uint64_t addr, uint32_t rkey, uint32_t len, uint32_t seed)
{
	return (struct op){.kind = OP_WRITE, .addr = addr, .rkey = rkey, .len = len, .seed = seed};
}

static struct op read_op(uint64_t addr, uint32_t rkey, uint32_t len)
{
	return (struct op){.kind = OP_READ, .addr = addr, .rkey = rkey, .len = len};
}

static struct op atomic_op(enum op_kind kind, uint64_t addr, uint32_t rkey, uint64_t compare_add,
			   uint64_t swap)
{
	return (struct op){
	    .kind = kind, .addr = addr, .rkey = rkey, .compare_add = compare_add, .swap = swap};
}

/* Client: the READ that just landed must equal len bytes of expected. */
static bool check_read(struct e2e_ctx *c, const uint8_t *expected, uint32_t len, const char *what,
		       struct report *r)
{
	return check_same(c->cbuf + CL_LAND, expected, len, what, r);
}

static bool check_returned(struct e2e_ctx *c, uint64_t want, const char *what, struct report *r)
{
	uint64_t got = load64(c->cbuf + CL_RESULT);

	if (got == want)
		return true;
	report_fail(r, "%s returned 0x%016" PRIx64 ", expected 0x%016" PRIx64, what, got, want);
	return false;
}

/* Client: a SEND (with invalidate of inv_key when opcode says so) of len bytes of pattern (seed).
 */
static bool client_send(struct e2e_ctx *c, struct e2e_qp_end *end, enum xr_wr_opcode opcode,
			uint32_t len, uint32_t seed, uint32_t inv_key, enum xr_wc_status status,
			int idx, struct report *r)
{
	struct xr_sge sge = sge_of(c->cmr, c->cbuf + CL_SRC, len);
	struct xr_send_wr wr = {.wr_id = next_id(c, idx),
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = opcode,
				.send_flags = XR_SEND_SIGNALED,
				.invalidate_rkey = inv_key};

	fill_pattern(c->cbuf + CL_SRC, seed, 0, len);
	if (!e2e_post_send(end->qp, &wr, r) ||
	    !wait_wc(end->send_cq, wr.wr_id, status, XR_WC_SEND,
		     opcode == XR_WR_SEND_WITH_INV ? "SEND_WITH_INV" : "SEND", NULL, r))
		return false;
	if (status == XR_WC_SUCCESS)
		return expect_quiet(end->send_cq, 0, r, "initiator");
	return e2e_wait_qp_state(end->qp, XR_QPS_ERR, r, "initiator");
}

/* Client: WRITE, READ, CAS and FAA with a key that must be refused, each on its own pair. */
static bool old_key_refused(struct e2e_ctx *c, const struct e2e_case *tc, int idx, int first_pair,
			    uint64_t addr, uint64_t atom, uint32_t rkey, struct report *r)
{
	uint64_t word = load64(c->model + ATOM_OFF);
	struct op ops[OP_KINDS] = {
	    write_op(addr, rkey, 64, tc->seed + 7),
	    read_op(addr, rkey, 64),
	    atomic_op(OP_CAS, atom, rkey, word, ~word),
	    atomic_op(OP_FAA, atom, rkey, ATOM_ADD, 0),
	};

	for (int k = 0; k < OP_KINDS; k++)
		if (!client_op(c, pair(c, tc, first_pair + k), &ops[k], XR_WC_REM_ACCESS_ERR, idx,
			       "with the old rkey", r))
			return false;
	return true;
}

/* ---- type 1: bind, then every operation inside ---------------------------------------- */

/* What the client does to the window, on both sides' images. */
static void t1_ops_effect(uint8_t *img, const struct e2e_case *tc)
{
	model_write(img, WIN_OFF + 16, tc->seed, 300);
	model_write(img, WIN_OFF + 600, tc->seed + 1, 100);
	store64(img + ATOM_OFF, ATOM_SWAP + ATOM_ADD);
}

static bool t1_ops_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	struct xr_mw *mw;

	tbuf_reset(c, tc);
	mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
	if (!mw || !bind_type1(c, main_pair(c), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN, win_all,
			       XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), mw->rkey};
	return true;
}

static void t1_ops_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		       const struct e2e_target *t, struct report *r)
{
	uint64_t atom = t->addr + (ATOM_OFF - WIN_OFF);
	struct op w = write_op(t->addr + 16, t->rkey, 300, tc->seed);
	/* A type 1 window belongs to the PD: any of its QPs may use it. */
	struct op w2 = write_op(t->addr + 600, t->rkey, 100, tc->seed + 1);
	struct op cas = atomic_op(OP_CAS, atom, t->rkey, ATOM_INIT, ATOM_SWAP);
	struct op faa = atomic_op(OP_FAA, atom, t->rkey, ATOM_ADD, 0);
	struct op rd = read_op(t->addr, t->rkey, WIN_LEN);

	tbuf_reset(c, tc);
	t1_ops_effect(c->model, tc);
	if (!client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "in the window", r) ||
	    !client_op(c, pair(c, tc, 0), &w2, XR_WC_SUCCESS, idx, "through another QP", r) ||
	    !client_op(c, main_pair(c), &cas, XR_WC_SUCCESS, idx, "in the window", r) ||
	    !check_returned(c, ATOM_INIT, "CAS", r) ||
	    !client_op(c, main_pair(c), &faa, XR_WC_SUCCESS, idx, "in the window", r) ||
	    !check_returned(c, ATOM_SWAP, "FAA", r) ||
	    !client_op(c, main_pair(c), &rd, XR_WC_SUCCESS, idx, "of the window", r) ||
	    !check_read(c, c->model + WIN_OFF, WIN_LEN, "READ of the window", r))
		return;
	report_ok(r, "rkey 0x%08x: 2 WRITEs (2 QPs), CAS, FAA succeeded; READ of all %u B matches",
		  t->rkey, WIN_LEN);
}

static void t1_ops_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	t1_ops_effect(c->model, tc);
	if (check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
		report_ok(r,
			  "bind completed BIND_MW, rkey moved on at once; %u B buffer as "
			  "expected byte for byte",
			  TBUF_SIZE);
}

/* ---- type 1: a window narrower than its MR ------------------------------------------ */

static void t1_bounds_effect(uint8_t *img, const struct e2e_case *tc)
{
	model_write(img, WIN_OFF, tc->seed, WIN_LEN);
	img[WIN_OFF] = pattern_byte(tc->seed + 1, 0);
	img[WIN_OFF + WIN_LEN - 1] = pattern_byte(tc->seed + 2, 0);
}

static bool t1_bounds_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      struct e2e_target *t, struct report *r)
{
	struct xr_mw *mw;

	tbuf_reset(c, tc);
	mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
	if (!mw ||
	    !bind_type1(c, main_pair(c), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
			XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ, XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), mw->rkey};
	return true;
}

static void t1_bounds_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  const struct e2e_target *t, struct report *r)
{
	uint64_t first = t->addr, last = t->addr + WIN_LEN - 1;
	struct op whole = write_op(first, t->rkey, WIN_LEN, tc->seed);
	struct op w_first = write_op(first, t->rkey, 1, tc->seed + 1);
	struct op w_last = write_op(last, t->rkey, 1, tc->seed + 2);
	struct op r_first = read_op(first, t->rkey, 1), r_last = read_op(last, t->rkey, 1);
	struct op refused[] = {
	    write_op(first - 1, t->rkey, 1, tc->seed + 3),
	    write_op(last + 1, t->rkey, 1, tc->seed),
	    read_op(first - 1, t->rkey, 1),
	    read_op(last + 1, t->rkey, 1),
	    write_op(first, t->rkey, WIN_LEN + 1, tc->seed + 4),
	};
	static const char *const refused_what[] = {"1 B before the window", "1 B after the window",
						   "1 B before the window", "1 B after the window",
						   "of the window + 1 B"};

	tbuf_reset(c, tc);
	t1_bounds_effect(c->model, tc);
	if (!client_op(c, main_pair(c), &whole, XR_WC_SUCCESS, idx, "of the whole window", r) ||
	    !client_op(c, main_pair(c), &w_first, XR_WC_SUCCESS, idx, "of its first byte", r) ||
	    !client_op(c, main_pair(c), &w_last, XR_WC_SUCCESS, idx, "of its last byte", r) ||
	    !client_op(c, main_pair(c), &r_first, XR_WC_SUCCESS, idx, "of its first byte", r) ||
	    !check_read(c, c->model + WIN_OFF, 1, "READ of the first byte", r) ||
	    !client_op(c, main_pair(c), &r_last, XR_WC_SUCCESS, idx, "of its last byte", r) ||
	    !check_read(c, c->model + WIN_OFF + WIN_LEN - 1, 1, "READ of the last byte", r))
		return;
	for (int k = 0; k < 5; k++)
		if (!client_op(c, pair(c, tc, k), &refused[k], XR_WC_REM_ACCESS_ERR, idx,
			       refused_what[k], r))
			return;
	report_ok(r,
		  "first and last byte written and read; 1 B before, 1 B after, %u+1 B: "
		  "REM_ACCESS_ERR",
		  WIN_LEN);
}

static void t1_bounds_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	t1_bounds_effect(c->model, tc);
	if (check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 5, XR_QPS_ERR, r))
		report_ok(r,
			  "only the window changed (the bytes next to it did not); 5 QPs in ERR");
}

/* ---- type 1: a READ-only window ------------------------------------------------------ */

static bool t1_ro_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	struct xr_mw *mw;

	tbuf_reset(c, tc);
	mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
	if (!mw || !bind_type1(c, main_pair(c), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
			       XR_ACCESS_REMOTE_READ, XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), mw->rkey};
	return true;
}

static void t1_ro_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	uint64_t atom = t->addr + (ATOM_OFF - WIN_OFF);
	struct op rd = read_op(t->addr, t->rkey, WIN_LEN);
	struct op refused[] = {
	    write_op(atom, t->rkey, 8, tc->seed),
	    atomic_op(OP_CAS, atom, t->rkey, ATOM_INIT, ATOM_SWAP),
	    atomic_op(OP_FAA, atom, t->rkey, ATOM_ADD, 0),
	};

	tbuf_reset(c, tc);
	if (!client_op(c, main_pair(c), &rd, XR_WC_SUCCESS, idx, "of the window", r) ||
	    !check_read(c, c->model + WIN_OFF, WIN_LEN, "READ of the window", r))
		return;
	for (int k = 0; k < 3; k++)
		if (!client_op(c, pair(c, tc, k), &refused[k], XR_WC_REM_ACCESS_ERR, idx,
			       "in a READ-only window", r))
			return;
	report_ok(r, "READ matches; WRITE, CAS, FAA: REM_ACCESS_ERR, nothing landed locally");
}

static void unchanged_check(struct e2e_ctx *c, const struct e2e_case *tc, int first, int n,
			    struct report *r)
{
	if (check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, first, n, XR_QPS_ERR, r))
		report_ok(r, "%u B buffer unchanged byte for byte; %d QP%s in ERR", TBUF_SIZE, n,
			  n == 1 ? "" : "s");
}

static void t1_ro_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	unchanged_check(c, tc, 0, 3, r);
}

/* ---- type 1: rebind and unbind -------------------------------------------------------- */

static bool t1_rebind_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      struct e2e_target *t, struct report *r)
{
	bool unbind = case_of(c, tc)->param;

	if (tc->round == 0) {
		tbuf_reset(c, tc);
		c->mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
		if (!c->mw || !bind_type1(c, main_pair(c), c->mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
					  win_all, XR_WC_SUCCESS, idx, r))
			return false;
	} else if (unbind) {
		if (!bind_type1(c, main_pair(c), c->mw, NULL, 0, 0, 0, XR_WC_SUCCESS, idx, r))
			return false;
	} else {
		/* The same range and rights: only the key byte tells the old rkey from the new. */
		if (!bind_type1(c, main_pair(c), c->mw, c->tmr, tb(c, WIN_OFF), WIN_LEN, win_all,
				XR_WC_SUCCESS, idx, r))
			return false;
	}
	*t = (struct e2e_target){tb(c, WIN_OFF), c->mw->rkey};
	return true;
}

static void t1_rebind_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  const struct e2e_target *t, struct report *r)
{
	bool unbind = case_of(c, tc)->param;
	uint64_t atom = t->addr + (ATOM_OFF - WIN_OFF);
	struct op w = write_op(t->addr + 8, t->rkey, 64, tc->seed + tc->round);

	if (tc->round == 0) {
		tbuf_reset(c, tc);
		c->saved_rkey = t->rkey;
		if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "in the window", r))
			report_ok(r, "WRITE with rkey 0x%08x succeeded", t->rkey);
		return;
	}
	if (t->rkey != xr_inc_rkey(c->saved_rkey))
		return report_fail(r, "rkey 0x%08x after the %s, expected 0x%08x", t->rkey,
				   unbind ? "unbind" : "rebind", xr_inc_rkey(c->saved_rkey));
	if (!old_key_refused(c, tc, idx, 0, t->addr + 8, atom, c->saved_rkey, r))
		return;
	if (unbind) {
		if (client_op(c, pair(c, tc, 4), &w, XR_WC_REM_ACCESS_ERR, idx,
			      "with the unbound window's rkey", r))
			report_ok(r,
				  "old rkey 0x%08x: WRITE, READ, CAS, FAA REM_ACCESS_ERR; the "
				  "unbound window's 0x%08x too",
				  c->saved_rkey, t->rkey);
		return;
	}
	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the new rkey", r))
		report_ok(r,
			  "old rkey 0x%08x: WRITE, READ, CAS, FAA REM_ACCESS_ERR; new 0x%08x "
			  "WRITE ok",
			  c->saved_rkey, t->rkey);
}

static void t1_rebind_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	bool unbind = case_of(c, tc)->param;

	(void)idx;
	if (tc->round == 0 || !unbind)
		model_write(c->model, WIN_OFF + 8, tc->seed + tc->round, 64);
	if (tc->round == 0) {
		if (check_tbuf(c, r) && main_quiet(c, r))
			report_ok(r, "WRITE placed");
		return;
	}
	if (check_tbuf(c, r) && main_quiet(c, r) &&
	    pairs_in_state(c, tc, 0, unbind ? 5 : 4, XR_QPS_ERR, r))
		report_ok(r, "nothing landed through the old rkey (%s); refusing QPs in ERR",
			  unbind ? "nor the unbound window" : "the new one's WRITE did");
}

/* ---- type 2: bound by a work request, invalidated locally ------------------------------ */

/* What op k does when the window is valid. */
static struct op t2_op(const struct e2e_case *tc, enum op_kind k, const uint8_t *img, uint64_t addr,
		       uint32_t rkey)
{
	uint64_t atom = addr + (ATOM_OFF - WIN_OFF), word = load64(img + ATOM_OFF);

	switch (k) {
	case OP_WRITE:
		return write_op(addr + 8, rkey, 64, tc->seed + tc->round);
	case OP_READ:
		return read_op(addr + 8, rkey, 64);
	case OP_CAS:
		return atomic_op(OP_CAS, atom, rkey, word, ~word);
	default:
		return atomic_op(OP_FAA, atom, rkey, ATOM_ADD, 0);
	}
}

static void t2_effect(uint8_t *img, const struct e2e_case *tc, enum op_kind k)
{
	uint64_t word = load64(img + ATOM_OFF);

	if (k == OP_WRITE)
		model_write(img, WIN_OFF + 8, tc->seed, 64);
	else if (k == OP_CAS)
		store64(img + ATOM_OFF, ~word);
	else if (k == OP_FAA)
		store64(img + ATOM_OFF, word + ATOM_ADD);
}

static bool t2_inv_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	if (tc->round == 0) {
		tbuf_reset(c, tc);
		c->mw = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
		if (!c->mw || !bind_type2(c, pair(c, tc, 0), c->mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
					  win_all, XR_WC_SUCCESS, idx, r))
			return false;
	} else if (tc->round == 1) {
		if (!local_inv(c, pair(c, tc, 0), c->mw->rkey, XR_WC_SUCCESS, idx, r))
			return false;
	} else if (!bind_type2(c, main_pair(c), c->mw, c->tmr, tb(c, WIN_OFF), WIN_LEN, win_all,
			       XR_WC_SUCCESS, idx, r)) {
		/* Invalidated, the window is free: it binds again (to another QP, too). */
		return false;
	}
	*t = (struct e2e_target){tb(c, WIN_OFF), c->mw->rkey};
	return true;
}

static void t2_inv_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		       const struct e2e_target *t, struct report *r)
{
	enum op_kind k = (enum op_kind)case_of(c, tc)->param;
	struct op o;
	uint64_t word;

	if (tc->round == 0) {
		tbuf_reset(c, tc);
		c->saved_rkey = t->rkey;
	}
	if (tc->round == 2) {
		o = write_op(t->addr + 8, t->rkey, 64, tc->seed + 2);
		if (t->rkey != xr_inc_rkey(c->saved_rkey))
			return report_fail(r, "rebound with rkey 0x%08x, expected 0x%08x", t->rkey,
					   xr_inc_rkey(c->saved_rkey));
		if (client_op(c, main_pair(c), &o, XR_WC_SUCCESS, idx, "with the new rkey", r))
			report_ok(r, "bound again to the main QP, rkey 0x%08x: WRITE ok", t->rkey);
		return;
	}
	word = load64(c->model + ATOM_OFF);
	o = t2_op(tc, k, c->model, t->addr, t->rkey);
	if (tc->round == 1) {
		if (client_op(c, pair(c, tc, 0), &o, XR_WC_REM_ACCESS_ERR, idx,
			      "with the invalidated rkey", r))
			report_ok(r, "%s with invalidated rkey 0x%08x: REM_ACCESS_ERR, QP in ERR",
				  op_names[k], t->rkey);
		return;
	}
	if (!client_op(c, pair(c, tc, 0), &o, XR_WC_SUCCESS, idx, "through the bound QP", r))
		return;
	if (k == OP_READ && !check_read(c, c->model + WIN_OFF + 8, 64, "READ", r))
		return;
	if ((k == OP_CAS || k == OP_FAA) && !check_returned(c, word, op_names[k], r))
		return;
	t2_effect(c->model, tc, k);
	report_ok(r, "%s with rkey 0x%08x through its QP succeeded", op_names[k], t->rkey);
}

static void t2_inv_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	if (tc->round == 1)
		return unchanged_check(c, tc, 0, 1, r);
	if (tc->round == 2) {
		model_write(c->model, WIN_OFF + 8, tc->seed + 2, 64);
		if (check_tbuf(c, r) && main_quiet(c, r))
			report_ok(r, "rebound after LOCAL_INV; the new rkey's WRITE placed");
		return;
	}
	t2_effect(c->model, tc, (enum op_kind)case_of(c, tc)->param);
	if (check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
		report_ok(r, "bound by BIND_MW work request; memory as expected");
}

/* ---- type 2: only through the QP it was bound on -------------------------------------- */

static bool t2_qp_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	struct xr_mw *mw;

	tbuf_reset(c, tc);
	mw = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
	if (!mw || !bind_type2(c, pair(c, tc, 0), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN, win_all,
			       XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), mw->rkey};
	return true;
}

static void t2_qp_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	struct op other = write_op(t->addr + 8, t->rkey, 64, tc->seed + 1);
	struct op own = write_op(t->addr + 8, t->rkey, 64, tc->seed);

	if (client_op(c, pair(c, tc, 1), &other, XR_WC_REM_ACCESS_ERR, idx, "through another QP",
		      r) &&
	    client_op(c, pair(c, tc, 0), &own, XR_WC_SUCCESS, idx, "through the bound QP", r))
		report_ok(r, "another QP: REM_ACCESS_ERR; the bound QP: success");
}

static void t2_qp_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	model_write(c->model, WIN_OFF + 8, tc->seed, 64);
	if (check_tbuf(c, r) && pairs_in_state(c, tc, 1, 1, XR_QPS_ERR, r) &&
	    pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
		report_ok(r, "only the bound QP's WRITE landed");
}

/* ---- SEND with invalidate: a type 2 window, a fast-reg MR ------------------------------- */

static bool send_inv_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct e2e_target *t, struct report *r)
{
	bool frmr = case_of(c, tc)->param;

	if (tc->round == 0) {
		struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = 2 * PAGE};

		tbuf_reset(c, tc);
		fbuf_reset(c);
		if (frmr) {
			c->mr = new_frmr(c, 2, &sg, 1, NULL, r);
			if (!c->mr || !new_fr_key(c->mr, r) ||
			    !reg_mr(c, pair(c, tc, 0), c->mr, fr_access, XR_WC_SUCCESS, idx, r))
				return false;
		} else {
			c->mw = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
			if (!c->mw || !bind_type2(c, pair(c, tc, 0), c->mw, c->tmr, tb(c, WIN_OFF),
						  WIN_LEN, win_all, XR_WC_SUCCESS, idx, r))
				return false;
		}
		if (!post_recv(c, pair(c, tc, 0), idx, r))
			return false;
	} else if (tc->round == 2) {
		/* Invalidated by the peer, it is free: bind or register it again. */
		if (frmr && (!new_fr_key(c->mr, r) ||
			     !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r)))
			return false;
		if (!frmr && !bind_type2(c, main_pair(c), c->mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
					 win_all, XR_WC_SUCCESS, idx, r))
			return false;
	}
	*t = frmr ? (struct e2e_target){(uintptr_t)c->mr->addr, c->mr->rkey}
		  : (struct e2e_target){tb(c, WIN_OFF), c->mw->rkey};
	return true;
}

static void send_inv_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	bool frmr = case_of(c, tc)->param;
	struct op w = write_op(t->addr + 8, t->rkey, 64, tc->seed + tc->round);
	struct op wr_old = write_op(t->addr + 8, t->rkey, 64, tc->seed + 9);

	switch (tc->round) {
	case 0:
		c->saved_rkey = t->rkey;
		if (client_op(c, pair(c, tc, 0), &w, XR_WC_SUCCESS, idx, "with the key", r) &&
		    client_send(c, pair(c, tc, 0), XR_WR_SEND_WITH_INV, frmr ? SEND_LONG : SEND_LEN,
				tc->seed + 5, t->rkey, XR_WC_SUCCESS, idx, r))
			report_ok(r, "WRITE, then SEND_WITH_INV of 0x%08x: success", t->rkey);
		return;
	case 1:
		if (frmr ? old_key_refused(c, tc, idx, 0, t->addr + 8, t->addr + 16, t->rkey, r)
			 : client_op(c, pair(c, tc, 0), &wr_old, XR_WC_REM_ACCESS_ERR, idx,
				     "with the invalidated key", r))
			report_ok(r, "invalidated 0x%08x: %s REM_ACCESS_ERR", t->rkey,
				  frmr ? "WRITE, READ, CAS, FAA" : "WRITE");
		return;
	default:
		if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the new key", r))
			report_ok(r, "%s again, new key 0x%08x (old 0x%08x): WRITE ok",
				  frmr ? "registered" : "bound", t->rkey, c->saved_rkey);
	}
}

static void send_inv_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	bool frmr = case_of(c, tc)->param;
	uint32_t key = frmr ? c->mr->rkey : c->mw->rkey;
	struct e2e_qp_end *p0 = pair(c, tc, 0);

	(void)idx;
	if (tc->round == 1) {
		if (check_tbuf(c, r) && check_fbuf(c, r) && main_quiet(c, r) &&
		    pairs_in_state(c, tc, 0, frmr ? 4 : 1, XR_QPS_ERR, r))
			report_ok(r, "memory unchanged; refusing QPs in ERR");
		return;
	}
	if (frmr)
		fr_model_write(c, (const int[]){0, 1}, 8, tc->seed + tc->round, 64);
	else
		model_write(c->model, WIN_OFF + 8, tc->seed + tc->round, 64);
	if (!check_tbuf(c, r) || !check_fbuf(c, r))
		return;
	if (tc->round == 2) {
		if (main_quiet(c, r))
			report_ok(r, "WRITE with the new key placed");
		return;
	}
	if (check_recv(c, p0, XR_WC_SUCCESS, frmr ? SEND_LONG : SEND_LEN, tc->seed + 5, true, key,
		       r) &&
	    pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
		report_ok(r,
			  "RECV with XR_WC_WITH_INV, invalidated_rkey 0x%08x, %u B; WRITE placed",
			  key, frmr ? SEND_LONG : SEND_LEN);
}

/* ---- SEND with invalidate of a key that cannot be invalidated ------------------------- */

static bool bad_inv_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			    struct e2e_target *t, struct report *r)
{
	uint32_t key = 0x000000a5u;
	struct xr_mw *mw;
	struct xr_mr *mr;

	if (tc->round == 1) {
		*t = (struct e2e_target){tb(c, WIN_OFF), c->saved_rkey};
		return true;
	}
	tbuf_reset(c, tc);
	switch ((enum bad_inv)case_of(c, tc)->param) {
	case BAD_INV_TYPE1:
		mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
		if (!mw || !bind_type1(c, main_pair(c), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
				       win_all, XR_WC_SUCCESS, idx, r))
			return false;
		key = mw->rkey;
		break;
	case BAD_INV_REG_MR:
		key = c->tmr->rkey;
		break;
	case BAD_INV_DEREGISTERED:
		mr = xr_reg_mr(c->port.pd, c->tbuf + WIN_OFF, WIN_LEN, remote_all);
		if (!mr) {
			report_fail(r, "xr_reg_mr: %s", strerror(errno));
			return false;
		}
		key = mr->rkey;
		if (xr_dereg_mr(mr)) {
			report_fail(r, "xr_dereg_mr failed");
			return false;
		}
		break;
	case BAD_INV_INDEX0:
		break;
	case BAD_INV_T2_OTHER_QP:
		/* Bound to the main QP: the SEND comes through another one. */
		mw = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
		if (!mw || !bind_type2(c, main_pair(c), mw, c->tmr, tb(c, WIN_OFF), WIN_LEN,
				       win_all, XR_WC_SUCCESS, idx, r))
			return false;
		key = mw->rkey;
		break;
	}
	c->saved_rkey = key;
	if (!post_recv(c, pair(c, tc, 0), idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), key};
	return true;
}

static void bad_inv_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr + 8, t->rkey, 64, tc->seed);

	if (tc->round == 0) {
		if (client_send(c, pair(c, tc, 0), XR_WR_SEND_WITH_INV, SEND_LEN, tc->seed + 5,
				t->rkey, XR_WC_REM_INV_REQ_ERR, idx, r))
			report_ok(r, "SEND_WITH_INV of 0x%08x: REM_INV_REQ_ERR, QP in ERR",
				  t->rkey);
		return;
	}
	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the key afterwards", r))
		report_ok(r, "the key 0x%08x still works: WRITE ok", t->rkey);
}

static void bad_inv_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	if (tc->round == 1) {
		model_write(c->model, WIN_OFF + 8, tc->seed, 64);
		if (check_tbuf(c, r) && main_quiet(c, r))
			report_ok(r, "WRITE placed: the refused invalidation changed nothing");
		return;
	}
	if (check_recv(c, pair(c, tc, 0), XR_WC_REM_INV_REQ_ERR, 0, 0, false, 0, r) &&
	    check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 1, XR_QPS_ERR, r))
		report_ok(r, "receive completed REM_INV_REQ_ERR, QP in ERR, memory unchanged");
}

/* ---- fast registration ----------------------------------------------------------------- */

static const int fr_pages[] = {0, 2}; /* fbuf pages mapped: 1 and 3 must stay untouched */

static void fr_sg(struct e2e_ctx *c, struct xr_sge sg[2])
{
	sg[0] = (struct xr_sge){.addr = (uintptr_t)c->fbuf, .length = PAGE};
	sg[1] = (struct xr_sge){.addr = (uintptr_t)(c->fbuf + 2 * PAGE), .length = PAGE};
}

static bool frmr_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 struct e2e_target *t, struct report *r)
{
	const int access = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ;
	uint64_t iova = tc->round ? FR_IOVA2 : FR_IOVA;
	struct xr_send_wr inv, reg;
	struct xr_sge sg[2];
	int ret;

	fr_sg(c, sg);
	if (tc->round == 0) {
		fbuf_reset(c);
		c->mr = new_frmr(c, 2, sg, 2, &iova, r);
		if (!c->mr || !new_fr_key(c->mr, r) ||
		    !reg_mr(c, main_pair(c), c->mr, access, XR_WC_SUCCESS, idx, r))
			return false;
		*t = (struct e2e_target){FR_IOVA + PAGE - 100, c->mr->rkey};
		return true;
	}
	/*
	 * LOCAL_INV posted, then the map changed (to another iova) before it ran,
	 * then REG_MR with a new key: the map is the one REG_MR finds.
	 */
	inv = local_inv_wr(next_id(c, idx), c->mr->rkey);
	if (!e2e_post_send(main_pair(c)->qp, &inv, r))
		return false;
	ret = xr_map_mr_sg(c->mr, sg, 2, &iova, PAGE);
	if (ret != 2 || (uintptr_t)c->mr->addr != FR_IOVA2) {
		report_fail(r, "xr_map_mr_sg again: %d, addr %p", ret, c->mr->addr);
		return false;
	}
	if (!new_fr_key(c->mr, r))
		return false;
	reg = reg_mr_wr(next_id(c, idx), c->mr, access);
	if (!e2e_post_send(main_pair(c)->qp, &reg, r) ||
	    !wait_wc(main_pair(c)->send_cq, inv.wr_id, XR_WC_SUCCESS, XR_WC_LOCAL_INV, "LOCAL_INV",
		     NULL, r) ||
	    !wait_wc(main_pair(c)->send_cq, reg.wr_id, XR_WC_SUCCESS, XR_WC_REG_MR, "REG_MR", NULL,
		     r))
		return false;
	*t = (struct e2e_target){FR_IOVA2 + PAGE - 50, c->mr->rkey};
	return true;
}

static void frmr_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		     const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr, t->rkey, 200, tc->seed);
	struct op rd = read_op(t->addr, t->rkey, 200);
	struct op all = read_op(t->addr - (PAGE - 100), t->rkey, 2 * PAGE);
	struct op w_old = write_op(t->addr, c->saved_rkey, 100, tc->seed + 9);
	struct op w_new = write_op(t->addr, t->rkey, 100, tc->seed + 1);
	struct op rd_new = read_op(t->addr, t->rkey, 100);
	uint8_t *expect = c->model;

	if (tc->round == 0) {
		c->saved_rkey = t->rkey;
		memset(expect, CANARY, 2 * PAGE);
		model_write(expect, PAGE - 100, tc->seed, 200);
		if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "across the page boundary",
			      r) &&
		    client_op(c, main_pair(c), &rd, XR_WC_SUCCESS, idx, "back", r) &&
		    check_read(c, expect + PAGE - 100, 200, "READ back", r) &&
		    client_op(c, main_pair(c), &all, XR_WC_SUCCESS, idx, "of both pages", r) &&
		    check_read(c, expect, 2 * PAGE, "READ of both pages", r))
			report_ok(r,
				  "200 B WRITE across the pages at iova 0x%" PRIx64
				  ", READ back, %u B READ: all match",
				  t->addr, 2 * PAGE);
		return;
	}
	model_write(expect, 0, tc->seed + 1, 100);
	if (client_op(c, pair(c, tc, 0), &w_old, XR_WC_REM_ACCESS_ERR, idx, "with the old key",
		      r) &&
	    client_op(c, main_pair(c), &w_new, XR_WC_SUCCESS, idx, "with the new key", r) &&
	    client_op(c, main_pair(c), &rd_new, XR_WC_SUCCESS, idx, "with the new key", r) &&
	    check_read(c, expect, 100, "READ with the new key", r))
		report_ok(r,
			  "re-registered: old key 0x%08x REM_ACCESS_ERR; new 0x%08x WRITE, "
			  "READ ok",
			  c->saved_rkey, t->rkey);
}

static void frmr_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	if (tc->round == 0)
		fr_model_write(c, fr_pages, PAGE - 100, tc->seed, 200);
	else
		fr_model_write(c, fr_pages, PAGE - 50, tc->seed + 1, 100);
	if (!check_fbuf(c, r) || !main_quiet(c, r))
		return;
	if (tc->round == 0)
		report_ok(r, "REG_MR completed; bytes landed in pages 0 and 2, pages 1 and 3 "
			     "untouched");
	else if (pairs_in_state(c, tc, 0, 1, XR_QPS_ERR, r))
		report_ok(r, "LOCAL_INV and REG_MR completed in order; only the new key placed");
}

/* ---- re-registering a valid fast-reg MR ------------------------------------------------- */

static bool rereg_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = PAGE};
	uint32_t valid_key;

	fbuf_reset(c);
	c->mr = new_frmr(c, 1, &sg, 1, NULL, r);
	if (!c->mr || !new_fr_key(c->mr, r) ||
	    !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r))
		return false;
	valid_key = c->mr->rkey;
	xr_update_fast_reg_key(c->mr, (uint8_t)(valid_key + 1));
	if (!reg_mr(c, pair(c, tc, 0), c->mr, fr_access, XR_WC_LOC_QP_OP_ERR, idx, r))
		return false;
	/* The registration failed: the MR keeps the key it has. */
	xr_update_fast_reg_key(c->mr, (uint8_t)valid_key);
	*t = (struct e2e_target){(uintptr_t)c->mr->addr + 8, valid_key};
	return true;
}

static void rereg_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr, t->rkey, 64, tc->seed);
	struct op w_new = write_op(t->addr, xr_inc_rkey(t->rkey), 64, tc->seed + 1);

	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the valid key", r) &&
	    client_op(c, pair(c, tc, 1), &w_new, XR_WC_REM_ACCESS_ERR, idx,
		      "with the refused registration's key", r))
		report_ok(r, "key 0x%08x still valid; 0x%08x never was (REM_ACCESS_ERR)", t->rkey,
			  xr_inc_rkey(t->rkey));
}

static void rereg_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	fr_model_write(c, (const int[]){0}, 8, tc->seed, 64);
	if (check_fbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 2, XR_QPS_ERR, r))
		report_ok(r, "REG_MR of the valid MR: LOC_QP_OP_ERR, that QP in ERR; MR unchanged");
}

/* ---- READ with invalidate ------------------------------------------------------------- */

#define READ_INV_OFF (2 * PAGE + 3)
#define READ_INV_LEN 200u
#define READ_INV_LAND 10u

static bool target_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	(void)idx;
	(void)r;
	tbuf_reset(c, tc);
	*t = (struct e2e_target){tb(c, tc->kind == CASE_READ_INV ? READ_INV_OFF : PAGE),
				 c->tmr->rkey};
	return true;
}

/*
 * READ_WITH_INV naming the lkey of an xr_reg_mr MR, which cannot be
 * invalidated: the READ fails with LOC_QP_OP_ERR, the MR stays usable.
 */
static void read_inv_user_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      const struct e2e_target *t, struct report *r)
{
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	struct xr_sge land = sge_of(c->cmr, c->cbuf + CL_LAND, READ_INV_LEN);
	struct xr_send_wr rd = {.wr_id = next_id(c, idx),
				.opcode = XR_WR_RDMA_READ_WITH_INV,
				.send_flags = XR_SEND_SIGNALED,
				.sg_list = &land,
				.num_sge = 1,
				.invalidate_rkey = c->cmr->lkey};
	struct op again = read_op(t->addr, t->rkey, READ_INV_LEN);

	tbuf_reset(c, tc);
	rd.wr.rdma.remote_addr = t->addr;
	rd.wr.rdma.rkey = t->rkey;
	if (!e2e_post_send(p0->qp, &rd, r) ||
	    !wait_wc(p0->send_cq, rd.wr_id, XR_WC_LOC_QP_OP_ERR, XR_WC_RDMA_READ,
		     "READ_WITH_INV of an xr_reg_mr lkey", NULL, r) ||
	    !e2e_wait_qp_state(p0->qp, XR_QPS_ERR, r, "initiator"))
		return;
	if (client_op(c, main_pair(c), &again, XR_WC_SUCCESS, idx, "into the same MR", r) &&
	    check_read(c, c->model + READ_INV_OFF, READ_INV_LEN, "READ into the same MR", r))
		report_ok(r, "LOC_QP_OP_ERR, QP in ERR; lkey 0x%08x still valid: READ ok",
			  c->cmr->lkey);
}

static void read_inv_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	const uint64_t iova = CL_IOVA;
	struct xr_sge sg = {.addr = (uintptr_t)c->cf, .length = PAGE};
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	struct xr_sge land, src;
	struct xr_send_wr rd = {.opcode = XR_WR_RDMA_READ_WITH_INV,
				.send_flags = XR_SEND_SIGNALED,
				.sg_list = &land,
				.num_sge = 1};
	struct xr_send_wr wr = {.opcode = XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED,
				.sg_list = &src,
				.num_sge = 1};
	struct xr_mr *mr;

	if (case_of(c, tc)->param)
		return read_inv_user_act(c, tc, idx, t, r);
	tbuf_reset(c, tc);
	memset(c->cf, CANARY, CF_SIZE);
	mr = new_frmr(c, 1, &sg, 1, &iova, r);
	if (!mr || !new_fr_key(mr, r) ||
	    !reg_mr(c, p0, mr, XR_ACCESS_LOCAL_WRITE, XR_WC_SUCCESS, idx, r))
		return;
	land =
	    (struct xr_sge){.addr = iova + READ_INV_LAND, .length = READ_INV_LEN, .lkey = mr->lkey};
	src = (struct xr_sge){.addr = iova + READ_INV_LAND, .length = 16, .lkey = mr->lkey};
	rd.wr_id = next_id(c, idx);
	rd.invalidate_rkey = mr->lkey;
	rd.wr.rdma.remote_addr = t->addr;
	rd.wr.rdma.rkey = t->rkey;
	wr.wr_id = next_id(c, idx);
	wr.wr.rdma.remote_addr = t->addr;
	wr.wr.rdma.rkey = t->rkey;
	if (!e2e_post_send(p0->qp, &rd, r) || !wait_wc(p0->send_cq, rd.wr_id, XR_WC_SUCCESS,
						       XR_WC_RDMA_READ, "READ_WITH_INV", NULL, r))
		return;
	if (!check_same(c->cf + READ_INV_LAND, c->model + READ_INV_OFF, READ_INV_LEN,
			"READ_WITH_INV data", r))
		return;
	if (!all_canary(c->cf, READ_INV_LAND) ||
	    !all_canary(c->cf + READ_INV_LAND + READ_INV_LEN,
			CF_SIZE - READ_INV_LAND - READ_INV_LEN))
		return report_fail(r, "READ_WITH_INV wrote outside its SGE");
	if (!e2e_post_send(p0->qp, &wr, r) ||
	    !wait_wc(p0->send_cq, wr.wr_id, XR_WC_LOC_PROT_ERR, XR_WC_RDMA_WRITE,
		     "WRITE from the invalidated MR", NULL, r) ||
	    !e2e_wait_qp_state(p0->qp, XR_QPS_ERR, r, "initiator"))
		return;
	report_ok(r,
		  "%u B landed at iova 0x%" PRIx64 "; then WRITE from lkey 0x%08x: "
		  "LOC_PROT_ERR",
		  READ_INV_LEN, land.addr, mr->lkey);
}

/* The target saw nothing of the initiator's local error: its QP is still in RTS. */
static void target_untouched_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				   struct report *r)
{
	(void)idx;
	if (check_tbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
		report_ok(r, "memory unchanged; QP still in RTS (the failed op never left)");
}

/* ---- ordering: an operation on a fast-reg MR, then LOCAL_INV of it, back to back ------- */

#define ORDER_LEN (CF_PAGES * PAGE)

static void order_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	bool is_read = case_of(c, tc)->param;
	struct xr_sge sg = {.addr = (uintptr_t)c->cf, .length = ORDER_LEN};
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	struct xr_sge sge, again_sge;
	struct xr_send_wr op = {.opcode = is_read ? XR_WR_RDMA_READ : XR_WR_RDMA_WRITE,
				.send_flags = XR_SEND_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1};
	struct xr_send_wr inv, again;
	struct xr_wc wc[2];
	struct xr_mr *mr;
	int got;

	tbuf_reset(c, tc);
	if (is_read)
		memset(c->cf, CANARY, CF_SIZE);
	else
		fill_pattern(c->cf, tc->seed, 0, ORDER_LEN);
	mr = new_frmr(c, CF_PAGES, &sg, 1, NULL, r);
	if (!mr || !new_fr_key(mr, r) ||
	    !reg_mr(c, p0, mr, XR_ACCESS_LOCAL_WRITE, XR_WC_SUCCESS, idx, r))
		return;
	sge = (struct xr_sge){.addr = (uintptr_t)mr->addr, .length = ORDER_LEN, .lkey = mr->lkey};
	again_sge = (struct xr_sge){.addr = (uintptr_t)mr->addr, .length = 16, .lkey = mr->lkey};
	op.wr_id = next_id(c, idx);
	op.wr.rdma.remote_addr = t->addr;
	op.wr.rdma.rkey = t->rkey;
	inv = local_inv_wr(next_id(c, idx), mr->lkey);
	op.next = &inv;
	again = op;
	again.wr_id = next_id(c, idx);
	again.next = NULL;
	again.sg_list = &again_sge;
	if (!e2e_post_send(p0->qp, &op, r))
		return;
	got = poll_cq_until(p0->send_cq, wc, 2, 2, tool_now_ms() + CASE_TIMEOUT_MS);
	if (got != 2)
		return report_fail(r, "%d of 2 completions within %d s", got,
				   CASE_TIMEOUT_MS / 1000);
	if (!check_wc(&wc[0], op.wr_id, XR_WC_SUCCESS, is_read ? XR_WC_RDMA_READ : XR_WC_RDMA_WRITE,
		      r) ||
	    !check_wc(&wc[1], inv.wr_id, XR_WC_SUCCESS, XR_WC_LOCAL_INV, r))
		return;
	if (is_read && !check_same(c->cf, c->model + PAGE, ORDER_LEN, "READ data", r))
		return;
	if (!e2e_post_send(p0->qp, &again, r) ||
	    !wait_wc(p0->send_cq, again.wr_id, XR_WC_LOC_PROT_ERR, 0, "the same op again", NULL,
		     r) ||
	    !e2e_wait_qp_state(p0->qp, XR_QPS_ERR, r, "initiator"))
		return;
	report_ok(r, "%u B %s, then LOCAL_INV: both succeeded in order%s; again: LOC_PROT_ERR",
		  ORDER_LEN, is_read ? "READ" : "WRITE", is_read ? ", data landed" : "");
}

static void order_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	if (!case_of(c, tc)->param)
		model_write(c->model, PAGE, tc->seed, ORDER_LEN);
	target_untouched_check(c, tc, idx, r);
	if (!r->failed && !case_of(c, tc)->param)
		report_ok(r, "all %u B of the WRITE landed; QP in RTS (the op after never left)",
			  ORDER_LEN);
}

/* ---- ordering: the target invalidates its fast-reg MR after a WRITE ---------------------- */

#define ORDER_TARGET_LEN 3000u

static bool order_target_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				 struct e2e_target *t, struct report *r)
{
	struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = 2 * PAGE};

	if (tc->round == 0) {
		fbuf_reset(c);
		c->mr = new_frmr(c, 2, &sg, 1, NULL, r);
		if (!c->mr || !new_fr_key(c->mr, r) ||
		    !reg_mr(c, pair(c, tc, 0), c->mr, fr_access, XR_WC_SUCCESS, idx, r) ||
		    !post_recv(c, pair(c, tc, 0), idx, r))
			return false;
	}
	*t = (struct e2e_target){(uintptr_t)c->mr->addr + 8, c->mr->rkey};
	return true;
}

static void order_target_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     const struct e2e_target *t, struct report *r)
{
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	struct op o = write_op(t->addr, t->rkey, ORDER_TARGET_LEN, tc->seed + tc->round);
	struct xr_sge sge, msg = sge_of(c->cmr, c->cbuf + CL_RESULT, 8);
	struct xr_send_wr w = op_wr_of(c, &o, next_id(c, idx), &sge);
	struct xr_send_wr s = {.wr_id = next_id(c, idx),
			       .sg_list = &msg,
			       .num_sge = 1,
			       .opcode = XR_WR_SEND,
			       .send_flags = XR_SEND_SIGNALED};
	struct xr_wc wc[2];
	int got;

	if (tc->round == 1) {
		if (client_op(c, p0, &o, XR_WC_REM_ACCESS_ERR, idx, "after the target's LOCAL_INV",
			      r))
			report_ok(r, "the next WRITE with 0x%08x: REM_ACCESS_ERR", t->rkey);
		return;
	}
	fill_pattern(c->cbuf + CL_SRC, o.seed, 0, o.len);
	fill_pattern(c->cbuf + CL_RESULT, tc->seed + 5, 0, 8);
	w.next = &s;
	if (!e2e_post_send(p0->qp, &w, r))
		return;
	got = poll_cq_until(p0->send_cq, wc, 2, 2, tool_now_ms() + CASE_TIMEOUT_MS);
	if (got != 2)
		return report_fail(r, "%d of 2 completions within %d s", got,
				   CASE_TIMEOUT_MS / 1000);
	if (check_wc(&wc[0], w.wr_id, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, r) &&
	    check_wc(&wc[1], s.wr_id, XR_WC_SUCCESS, XR_WC_SEND, r))
		report_ok(r, "%u B WRITE and a SEND posted together: both succeeded", o.len);
}

static void order_target_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			       struct report *r)
{
	struct e2e_qp_end *p0 = pair(c, tc, 0);

	if (tc->round == 1) {
		if (check_fbuf(c, r) && main_quiet(c, r) &&
		    pairs_in_state(c, tc, 0, 1, XR_QPS_ERR, r))
			report_ok(r, "nothing landed after the LOCAL_INV; QP in ERR");
		return;
	}
	/* The SEND arrived: the WRITE before it landed; invalidate at once. */
	if (!check_recv(c, p0, XR_WC_SUCCESS, 8, tc->seed + 5, false, 0, r) ||
	    !local_inv(c, p0, c->mr->rkey, XR_WC_SUCCESS, idx, r))
		return;
	fr_model_write(c, (const int[]){0, 1}, 8, tc->seed, ORDER_TARGET_LEN);
	if (check_fbuf(c, r) && main_quiet(c, r))
		report_ok(r, "the SEND's receive, then LOCAL_INV of 0x%08x: the WRITE had landed",
			  c->mr->rkey);
}

/* ---- bind errors ------------------------------------------------------------------------ */

static bool bind_err_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct e2e_target *t, struct report *r)
{
	enum bind_err e = (enum bind_err)case_of(c, tc)->param;
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	const enum xr_wc_status err = XR_WC_MW_BIND_ERR;
	const unsigned int rw = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ;
	uint64_t w = tb(c, WIN_OFF);
	struct xr_mw *mw;
	uint32_t first;
	bool ok = false;

	tbuf_reset(c, tc);
	mw = new_mw(c, e == BIND_ERR_MW_OTHER_PD ? c->other_pd : c->port.pd,
		    e >= BIND_ERR_T2_NO_MW_BIND ? XR_MW_TYPE_2 : XR_MW_TYPE_1, r);
	if (!mw)
		return false;
	switch (e) {
	case BIND_ERR_NO_MW_BIND:
		ok = bind_type1(c, p0, mw, c->nobind_mr, w, WIN_LEN, rw, err, idx, r);
		break;
	case BIND_ERR_BEFORE_MR:
		ok = bind_type1(c, p0, mw, c->tmr, tb(c, 0) - 8, 64, rw, err, idx, r);
		break;
	case BIND_ERR_PAST_MR:
		ok = bind_type1(c, p0, mw, c->tmr, tb(c, TBUF_SIZE - 32), 64, rw, err, idx, r);
		break;
	case BIND_ERR_WRITE_NO_LOCAL_WRITE:
		ok = bind_type1(c, p0, mw, c->nolocal_mr, w, WIN_LEN, XR_ACCESS_REMOTE_WRITE, err,
				idx, r);
		break;
	case BIND_ERR_ATOMIC_NO_LOCAL_WRITE:
		ok = bind_type1(c, p0, mw, c->nolocal_mr, w, WIN_LEN, XR_ACCESS_REMOTE_ATOMIC, err,
				idx, r);
		break;
	case BIND_ERR_MR_OTHER_PD:
		ok = bind_type1(c, p0, mw, c->other_mr, w, WIN_LEN, rw, err, idx, r);
		break;
	case BIND_ERR_MW_OTHER_PD:
		ok = bind_type1(c, p0, mw, c->other_mr, w, WIN_LEN, rw, err, idx, r);
		break;
	case BIND_ERR_T2_NO_MW_BIND:
		ok = bind_type2(c, p0, mw, c->nobind_mr, w, WIN_LEN, rw, err, idx, r);
		break;
	case BIND_ERR_T2_WRONG_INDEX:
		/* Only the key byte may change: the index is the window's. */
		ok = bind_type2_key(c, p0, mw, xr_inc_rkey(mw->rkey) ^ 0x100u, c->tmr, w, WIN_LEN,
				    rw, err, idx, r);
		break;
	case BIND_ERR_T2_BOUND:
		if (!bind_type2(c, main_pair(c), mw, c->tmr, w, WIN_LEN, win_all, XR_WC_SUCCESS,
				idx, r))
			return false;
		first = mw->rkey;
		ok = bind_type2(c, p0, mw, c->tmr, w, WIN_LEN, win_all, err, idx, r);
		/* The key of the binding that stands, not the refused one's. */
		*t = (struct e2e_target){w, first};
		return ok;
	}
	*t = (struct e2e_target){w, mw->rkey};
	return ok;
}

static void bind_err_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	struct op wr = write_op(t->addr + 8, t->rkey, 64, tc->seed);

	if (case_of(c, tc)->param == BIND_ERR_T2_BOUND) {
		if (client_op(c, main_pair(c), &wr, XR_WC_SUCCESS, idx, "through the first binding",
			      r))
			report_ok(r, "the first binding (0x%08x) still works", t->rkey);
		return;
	}
	if (client_op(c, pair(c, tc, 1), &wr, XR_WC_REM_ACCESS_ERR, idx,
		      "with the refused bind's rkey", r))
		report_ok(r, "the window's rkey 0x%08x: REM_ACCESS_ERR", t->rkey);
}

static void bind_err_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	bool t2_bound = case_of(c, tc)->param == BIND_ERR_T2_BOUND;

	(void)idx;
	if (t2_bound)
		model_write(c->model, WIN_OFF + 8, tc->seed, 64);
	if (check_tbuf(c, r) && main_quiet(c, r) &&
	    pairs_in_state(c, tc, 0, t2_bound ? 1 : 2, XR_QPS_ERR, r))
		report_ok(r, "bind completed MW_BIND_ERR, its QP in ERR; memory %s",
			  t2_bound ? "as expected" : "unchanged");
}

/* ---- xr_dereg_mr of an MR with a bound window ------------------------------------------- */

#define DEREG_OFF (2 * PAGE)
#define DEREG_WIN (DEREG_OFF + 64)
#define DEREG_MR_HIT (DEREG_OFF + 512)

static bool dereg_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	enum xr_mw_type type = (enum xr_mw_type)case_of(c, tc)->param;
	bool ok;
	int ret;

	switch (tc->round) {
	case 0:
		tbuf_reset(c, tc);
		c->mr = xr_reg_mr(c->port.pd, c->tbuf + DEREG_OFF, 2 * PAGE,
				  remote_all | XR_ACCESS_MW_BIND);
		if (!c->mr) {
			report_fail(r, "xr_reg_mr: %s", strerror(errno));
			return false;
		}
		if (!keep_mr(c, c->mr, r))
			return false;
		c->mw = new_mw(c, c->port.pd, type, r);
		if (!c->mw)
			return false;
		ok = type == XR_MW_TYPE_1
			 ? bind_type1(c, main_pair(c), c->mw, c->mr, tb(c, DEREG_WIN), 256, win_all,
				      XR_WC_SUCCESS, idx, r)
			 : bind_type2(c, main_pair(c), c->mw, c->mr, tb(c, DEREG_WIN), 256, win_all,
				      XR_WC_SUCCESS, idx, r);
		if (!ok)
			return false;
		errno = 0;
		ret = xr_dereg_mr(c->mr);
		if (ret != -EBUSY || errno != EBUSY) {
			if (!ret)
				forget_mr(c, c->mr);
			report_fail(r,
				    "xr_dereg_mr under a bound window: %d (errno %d), expected "
				    "-EBUSY",
				    ret, errno);
			return false;
		}
		*t = (struct e2e_target){tb(c, DEREG_WIN), c->mw->rkey};
		return true;
	case 1:
		*t = (struct e2e_target){tb(c, DEREG_MR_HIT), c->mr->rkey};
		return true;
	default:
		*t = (struct e2e_target){tb(c, DEREG_MR_HIT), c->saved_rkey};
		return true;
	}
}

static void dereg_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr, t->rkey, 64, tc->seed + tc->round);

	switch (tc->round) {
	case 0:
		if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "through the window", r))
			report_ok(r, "the window 0x%08x works after the refused dereg", t->rkey);
		return;
	case 1:
		if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the MR's rkey", r))
			report_ok(r, "the MR 0x%08x works after the refused dereg", t->rkey);
		return;
	default:
		if (client_op(c, pair(c, tc, 0), &w, XR_WC_REM_ACCESS_ERR, idx,
			      "with the deregistered MR's rkey", r))
			report_ok(r, "deregistered MR's rkey 0x%08x: REM_ACCESS_ERR", t->rkey);
	}
}

static void dereg_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	bool type1 = case_of(c, tc)->param == XR_MW_TYPE_1;
	int ret;

	if (tc->round == 2)
		return unchanged_check(c, tc, 0, 1, r);
	model_write(c->model, tc->round ? DEREG_MR_HIT : DEREG_WIN, tc->seed + tc->round, 64);
	if (!check_tbuf(c, r) || !main_quiet(c, r))
		return;
	if (tc->round == 0)
		return report_ok(r, "xr_dereg_mr: -EBUSY; the window's WRITE landed");
	/* Unbound, the MR can go. */
	if (type1 ? !bind_type1(c, main_pair(c), c->mw, NULL, 0, 0, 0, XR_WC_SUCCESS, idx, r)
		  : !local_inv(c, main_pair(c), c->mw->rkey, XR_WC_SUCCESS, idx, r))
		return;
	c->saved_rkey = c->mr->rkey;
	ret = xr_dereg_mr(c->mr);
	if (ret)
		return report_fail(r, "xr_dereg_mr once %s: %s", type1 ? "unbound" : "invalidated",
				   strerror(-ret));
	forget_mr(c, c->mr);
	c->mr = NULL;
	report_ok(r, "the MR's WRITE landed; %s, then xr_dereg_mr: 0",
		  type1 ? "unbound" : "LOCAL_INV");
}

/* ---- invalid arguments ------------------------------------------------------------------ */

#define EXPECT_EINVAL(r, expr)                                                                     \
	do {                                                                                       \
		int ret_ = (expr);                                                                 \
		if (ret_ != -EINVAL) {                                                             \
			report_fail(r, "%s returned %d, expected -EINVAL", #expr, ret_);           \
			return false;                                                              \
		}                                                                                  \
	} while (0)

#define EXPECT_NULL_EINVAL(r, expr)                                                                \
	do {                                                                                       \
		errno = 0;                                                                         \
		void *p_ = (expr);                                                                 \
		if (p_ || errno != EINVAL) {                                                       \
			report_fail(r, "%s returned %p (errno %d), expected NULL and EINVAL",      \
				    #expr, p_, errno);                                             \
			return false;                                                              \
		}                                                                                  \
	} while (0)

/* Posting wr must fail with -EINVAL, with bad_wr pointing at it. */
static int post_refused(struct xr_qp *qp, struct xr_send_wr *wr)
{
	struct xr_send_wr *bad = NULL;
	int ret = xr_post_send(qp, wr, &bad);

	return ret == -EINVAL && bad != wr ? -EFAULT : ret;
}

static bool einval_calls(struct e2e_ctx *c, struct xr_mw *mw1, struct xr_mw *mw2, struct xr_mr *fr,
			 struct report *r)
{
	struct xr_qp *qp = main_pair(c)->qp;
	struct xr_mw_bind ok_bind = {.bind_info = {c->tmr, tb(c, WIN_OFF), 64, win_all}};
	struct xr_mw_bind no_mr = {.bind_info = {NULL, tb(c, WIN_OFF), 64, win_all}};
	struct xr_send_wr bind_t1 = {.opcode = XR_WR_BIND_MW}, bind_null = bind_t1;
	struct xr_send_wr bind_no_mr = bind_t1, reg_user = {.opcode = XR_WR_REG_MR};
	struct xr_send_wr reg_null = reg_user, inv_sge = local_inv_wr(0, mw2->rkey);
	struct xr_sge sge = sge_of(c->tmr, c->tbuf, 8);
	struct xr_sge p1 = {.addr = (uintptr_t)(c->fbuf + PAGE), .length = PAGE};
	struct xr_sge p3 = {.addr = (uintptr_t)(c->fbuf + 3 * PAGE), .length = PAGE};
	struct xr_sge two[2] = {p1, p3};
	struct xr_sge first_short[2] = {{.addr = p1.addr, .length = PAGE - 8}, p3};
	struct xr_sge empty[1] = {{.addr = p1.addr, .length = 0}};

	bind_t1.bind_mw.mw = mw1;
	bind_t1.bind_mw.rkey = xr_inc_rkey(mw1->rkey);
	bind_t1.bind_mw.bind_info = ok_bind.bind_info;
	bind_null.bind_mw.rkey = 0x100;
	bind_no_mr.bind_mw.mw = mw2;
	bind_no_mr.bind_mw.rkey = xr_inc_rkey(mw2->rkey);
	bind_no_mr.bind_mw.bind_info = no_mr.bind_info;
	reg_user.reg.mr = c->tmr;
	reg_user.reg.key = c->tmr->rkey;
	reg_user.reg.access = XR_ACCESS_LOCAL_WRITE;
	inv_sge.sg_list = &sge;
	inv_sge.num_sge = 1;

	EXPECT_NULL_EINVAL(r, xr_alloc_mw(c->port.pd, (enum xr_mw_type)0));
	EXPECT_NULL_EINVAL(r, xr_alloc_mw(c->port.pd, (enum xr_mw_type)3));
	EXPECT_NULL_EINVAL(r, xr_alloc_mw(NULL, XR_MW_TYPE_1));
	EXPECT_EINVAL(r, xr_dealloc_mw(NULL));
	EXPECT_EINVAL(r, xr_bind_mw(qp, mw2, &ok_bind));
	EXPECT_EINVAL(r, xr_bind_mw(qp, mw1, &no_mr));
	EXPECT_EINVAL(r, xr_bind_mw(NULL, mw1, &ok_bind));
	EXPECT_EINVAL(r, xr_bind_mw(qp, NULL, &ok_bind));
	EXPECT_EINVAL(r, xr_bind_mw(qp, mw1, NULL));
	EXPECT_EINVAL(r, post_refused(qp, &bind_t1));
	EXPECT_EINVAL(r, post_refused(qp, &bind_null));
	EXPECT_EINVAL(r, post_refused(qp, &bind_no_mr));
	EXPECT_EINVAL(r, post_refused(qp, &reg_user));
	EXPECT_EINVAL(r, post_refused(qp, &reg_null));
	EXPECT_EINVAL(r, post_refused(qp, &inv_sge));
	EXPECT_NULL_EINVAL(r, xr_alloc_mr(c->port.pd, 0));
	EXPECT_NULL_EINVAL(r, xr_alloc_mr(NULL, 2));
	EXPECT_EINVAL(r, xr_dereg_mr(NULL));
	EXPECT_EINVAL(r, xr_map_mr_sg(NULL, two, 2, NULL, PAGE));
	EXPECT_EINVAL(r, xr_map_mr_sg(c->tmr, two, 2, NULL, PAGE));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, two, 2, NULL, 1000));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, two, 2, NULL, 2048));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, two, 0, NULL, PAGE));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, NULL, 2, NULL, PAGE));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, empty, 1, NULL, PAGE));
	EXPECT_EINVAL(r, xr_map_mr_sg(fr, first_short, 2, NULL, PAGE));
	return true;
}

static bool einval_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	struct xr_mw *mw1, *mw2;
	uint64_t iova = FR_IOVA;
	struct xr_sge sg[2];
	uint32_t rk1, rk2, frkey;
	struct xr_qp_attr attr;

	if (tc->round == 1) {
		*t = (struct e2e_target){FR_IOVA + PAGE - 32, c->mr->rkey};
		return true;
	}
	tbuf_reset(c, tc);
	fbuf_reset(c);
	fr_sg(c, sg);
	mw1 = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
	mw2 = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
	if (!mw1 || !mw2 ||
	    !bind_type1(c, main_pair(c), mw1, c->tmr, tb(c, WIN_OFF), WIN_LEN, win_all,
			XR_WC_SUCCESS, idx, r))
		return false;
	c->mr = new_frmr(c, 2, sg, 2, &iova, r);
	if (!c->mr)
		return false;
	rk1 = mw1->rkey;
	rk2 = mw2->rkey;
	frkey = c->mr->rkey;
	if (!einval_calls(c, mw1, mw2, c->mr, r))
		return false;
	if (mw1->rkey != rk1 || mw2->rkey != rk2 || c->mr->rkey != frkey ||
	    (uintptr_t)c->mr->addr != FR_IOVA || c->mr->length != 2 * PAGE) {
		report_fail(r,
			    "state changed: windows 0x%08x 0x%08x (were 0x%08x 0x%08x), MR "
			    "0x%08x at %p, %zu B",
			    mw1->rkey, mw2->rkey, rk1, rk2, c->mr->rkey, c->mr->addr,
			    c->mr->length);
		return false;
	}
	if (!main_quiet(c, r) || !e2e_query_state(main_pair(c)->qp, &attr, r))
		return false;
	if (attr.qp_state != XR_QPS_RTS) {
		report_fail(r, "main QP in state %d after the refused calls", attr.qp_state);
		return false;
	}
	/* The refused calls named pages 1 and 3: the registration must map 0 and 2. */
	if (!new_fr_key(c->mr, r) ||
	    !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){tb(c, WIN_OFF), mw1->rkey};
	return true;
}

static void einval_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		       const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr + (tc->round ? 0 : 8), t->rkey, 64, tc->seed + tc->round);

	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx,
		      tc->round ? "through the fast-reg MR" : "through the window", r))
		report_ok(r, "%s 0x%08x still works: WRITE ok",
			  tc->round ? "fast-reg MR" : "window", t->rkey);
}

static void einval_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	if (tc->round == 0) {
		model_write(c->model, WIN_OFF + 8, tc->seed, 64);
		if (check_tbuf(c, r) && main_quiet(c, r))
			report_ok(r, "26 refused calls, -EINVAL each; window, MR, QP unchanged");
		return;
	}
	fr_model_write(c, fr_pages, PAGE - 32, tc->seed + 1, 64);
	if (check_fbuf(c, r) && main_quiet(c, r))
		report_ok(r, "the WRITE landed in pages 0 and 2, none in 1 and 3");
}

/* ---- LOCAL_INV of a key that cannot be invalidated on that QP ------------------------- */

static bool linv_bad_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct e2e_target *t, struct report *r)
{
	int param = case_of(c, tc)->param;
	struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = PAGE};
	uint64_t addr = tb(c, WIN_OFF);
	struct xr_mw *mw;
	uint32_t key;

	tbuf_reset(c, tc);
	fbuf_reset(c);
	switch (param) {
	case 0:
	case 2:
		/* A type 1 window, or a type 2 one bound to the main QP, not to this one. */
		mw = new_mw(c, c->port.pd, param ? XR_MW_TYPE_2 : XR_MW_TYPE_1, r);
		if (!mw ||
		    !(param ? bind_type2 : bind_type1)(c, main_pair(c), mw, c->tmr, addr, WIN_LEN,
						       win_all, XR_WC_SUCCESS, idx, r))
			return false;
		key = mw->rkey;
		break;
	case 1:
		key = c->tmr->rkey;
		break;
	default:
		/* A fast-reg MR invalidated already. */
		c->mr = new_frmr(c, 1, &sg, 1, NULL, r);
		if (!c->mr || !new_fr_key(c->mr, r) ||
		    !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r) ||
		    !local_inv(c, main_pair(c), c->mr->rkey, XR_WC_SUCCESS, idx, r))
			return false;
		key = c->mr->rkey;
		addr = (uintptr_t)c->mr->addr;
	}
	if (!local_inv(c, pair(c, tc, 0), key, XR_WC_LOC_QP_OP_ERR, idx, r))
		return false;
	/* Still invalid (free), it registers again. */
	if (param == 3 && (!new_fr_key(c->mr, r) ||
			   !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r)))
		return false;
	*t = (struct e2e_target){addr, param == 3 ? c->mr->rkey : key};
	return true;
}

static void linv_bad_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr + 8, t->rkey, 64, tc->seed);

	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "with the key afterwards", r))
		report_ok(r, "%s 0x%08x works: WRITE ok",
			  case_of(c, tc)->param == 3 ? "registered again, key" : "the key",
			  t->rkey);
}

static void linv_bad_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	bool frmr = case_of(c, tc)->param == 3;

	(void)idx;
	if (frmr)
		fr_model_write(c, (const int[]){0}, 8, tc->seed, 64);
	else
		model_write(c->model, WIN_OFF + 8, tc->seed, 64);
	if (check_tbuf(c, r) && check_fbuf(c, r) && main_quiet(c, r) &&
	    pairs_in_state(c, tc, 0, 1, XR_QPS_ERR, r))
		report_ok(r, "LOCAL_INV: LOC_QP_OP_ERR, that QP in ERR; the key's WRITE placed");
}

/* ---- fast-reg MRs that refuse access ------------------------------------------------------ */

static bool fr_refused_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			       struct e2e_target *t, struct report *r)
{
	struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = PAGE};
	bool ok = true;

	fbuf_reset(c);
	c->mr = new_frmr(c, 1, &sg, 1, NULL, r);
	if (!c->mr)
		return false;
	switch (case_of(c, tc)->param) {
	case 0:
		/* Allocated and mapped, never registered: invalid. */
		break;
	case 1:
		/* Remote write needs local write: the registration fails, the MR stays invalid. */
		ok =
		    new_fr_key(c->mr, r) && reg_mr(c, pair(c, tc, 0), c->mr, XR_ACCESS_REMOTE_WRITE,
						   XR_WC_LOC_QP_OP_ERR, idx, r);
		break;
	default:
		ok = new_fr_key(c->mr, r) &&
		     reg_mr(c, main_pair(c), c->mr, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ,
			    XR_WC_SUCCESS, idx, r);
	}
	*t = (struct e2e_target){(uintptr_t)c->mr->addr, c->mr->rkey};
	return ok;
}

static void fr_refused_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   const struct e2e_target *t, struct report *r)
{
	int param = case_of(c, tc)->param;
	struct op w = write_op(t->addr, t->rkey, 64, tc->seed);
	struct op rd = read_op(t->addr, t->rkey, 64);

	if (param == 2 &&
	    (!client_op(c, main_pair(c), &rd, XR_WC_SUCCESS, idx, "of a READ-only MR", r) ||
	     !all_canary(c->cbuf + CL_LAND, 64)))
		return report_fail(r,
				   "READ of the READ-only fast-reg MR failed or read wrong data");
	if (client_op(c, pair(c, tc, param == 1 ? 1 : 0), &w, XR_WC_REM_ACCESS_ERR, idx,
		      "with the key", r))
		report_ok(r, "%sWRITE with 0x%08x: REM_ACCESS_ERR", param == 2 ? "READ ok; " : "",
			  t->rkey);
}

static void fr_refused_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct report *r)
{
	(void)idx;
	if (check_fbuf(c, r) && main_quiet(c, r) &&
	    pairs_in_state(c, tc, 0, case_of(c, tc)->pairs, XR_QPS_ERR, r))
		report_ok(r, "pages unchanged; QPs in ERR");
}

/* ---- xr_dealloc_mw of a bound window ------------------------------------------------------ */

static bool dealloc_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			    struct e2e_target *t, struct report *r)
{
	enum xr_mw_type type = (enum xr_mw_type)case_of(c, tc)->param;
	int ret;

	if (tc->round == 0) {
		tbuf_reset(c, tc);
		c->mw = new_mw(c, c->port.pd, type, r);
		if (!c->mw || !(type == XR_MW_TYPE_1
				    ? bind_type1(c, main_pair(c), c->mw, c->tmr, tb(c, WIN_OFF),
						 WIN_LEN, win_all, XR_WC_SUCCESS, idx, r)
				    : bind_type2(c, pair(c, tc, 0), c->mw, c->tmr, tb(c, WIN_OFF),
						 WIN_LEN, win_all, XR_WC_SUCCESS, idx, r)))
			return false;
		c->saved_target = *t = (struct e2e_target){tb(c, WIN_OFF), c->mw->rkey};
		return true;
	}
	for (int i = 0; i < c->n_mws; i++)
		if (c->mws[i] == c->mw)
			c->mws[i] = NULL;
	ret = xr_dealloc_mw(c->mw);
	c->mw = NULL;
	if (ret) {
		report_fail(r, "xr_dealloc_mw of a bound window: %s", strerror(-ret));
		return false;
	}
	*t = c->saved_target;
	return true;
}

static void dealloc_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			const struct e2e_target *t, struct report *r)
{
	bool type1 = case_of(c, tc)->param == XR_MW_TYPE_1;
	struct op w = write_op(t->addr + 8, t->rkey, 64, tc->seed + tc->round);

	if (tc->round == 0) {
		if (client_op(c, type1 ? main_pair(c) : pair(c, tc, 0), &w, XR_WC_SUCCESS, idx,
			      "through the window", r))
			report_ok(r, "WRITE with 0x%08x ok", t->rkey);
		return;
	}
	if (client_op(c, pair(c, tc, 0), &w, XR_WC_REM_ACCESS_ERR, idx,
		      "with the deallocated window's rkey", r))
		report_ok(r, "deallocated window's rkey 0x%08x: REM_ACCESS_ERR", t->rkey);
}

static void dealloc_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	(void)idx;
	if (tc->round == 1)
		return unchanged_check(c, tc, 0, 1, r);
	model_write(c->model, WIN_OFF + 8, tc->seed, 64);
	if (check_tbuf(c, r) && main_quiet(c, r))
		report_ok(r, "WRITE placed");
}

/* ---- a type 1 window on a fast-reg MR: iova addresses, discontiguous pages ---------------- */

#define ON_FR_WIN (PAGE - 50)
#define ON_FR_LEN 100u

static bool t1_on_frmr_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			       struct e2e_target *t, struct report *r)
{
	uint64_t iova = FR_IOVA;
	struct xr_sge sg[2];
	struct xr_mw *mw;

	(void)tc;
	fbuf_reset(c);
	fr_sg(c, sg);
	c->mr = new_frmr(c, 2, sg, 2, &iova, r);
	mw = new_mw(c, c->port.pd, XR_MW_TYPE_1, r);
	if (!c->mr || !mw || !new_fr_key(c->mr, r) ||
	    !reg_mr(c, main_pair(c), c->mr, fr_access | XR_ACCESS_MW_BIND, XR_WC_SUCCESS, idx, r) ||
	    !bind_type1(c, main_pair(c), mw, c->mr, FR_IOVA + ON_FR_WIN, ON_FR_LEN, win_all,
			XR_WC_SUCCESS, idx, r))
		return false;
	/* An MR with a window bound to it is not invalidated. */
	if (!local_inv(c, pair(c, tc, 1), c->mr->rkey, XR_WC_LOC_QP_OP_ERR, idx, r))
		return false;
	*t = (struct e2e_target){FR_IOVA + ON_FR_WIN, mw->rkey};
	return true;
}

static void t1_on_frmr_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr, t->rkey, ON_FR_LEN, tc->seed);
	struct op rd = read_op(t->addr, t->rkey, ON_FR_LEN);
	struct op before = write_op(t->addr - 1, t->rkey, 1, tc->seed + 1);

	fill_pattern(c->model, tc->seed, 0, ON_FR_LEN);
	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "across the pages", r) &&
	    client_op(c, main_pair(c), &rd, XR_WC_SUCCESS, idx, "back", r) &&
	    check_read(c, c->model, ON_FR_LEN, "READ back", r) &&
	    client_op(c, pair(c, tc, 0), &before, XR_WC_REM_ACCESS_ERR, idx,
		      "1 B before the window", r))
		report_ok(r,
			  "WRITE and READ of %u B across the pages through the window; 1 B "
			  "before it: REM_ACCESS_ERR",
			  ON_FR_LEN);
}

static void t1_on_frmr_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct report *r)
{
	(void)idx;
	fr_model_write(c, fr_pages, ON_FR_WIN, tc->seed, ON_FR_LEN);
	if (check_fbuf(c, r) && main_quiet(c, r) && pairs_in_state(c, tc, 0, 2, XR_QPS_ERR, r))
		report_ok(r, "LOCAL_INV of the MR under the window: LOC_QP_OP_ERR; the WRITE "
			     "landed in pages 0 and 2");
}

/* ---- a refused xr_map_mr_sg must leave the map it had ------------------------------------- */

static bool map_intact_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			       struct e2e_target *t, struct report *r)
{
	uint64_t iova = FR_IOVA, bad_iova = FR_IOVA + 8;
	struct xr_sge sg[2];
	struct xr_sge p1 = {.addr = (uintptr_t)(c->fbuf + PAGE), .length = PAGE};
	struct xr_sge p3 = {.addr = (uintptr_t)(c->fbuf + 3 * PAGE), .length = PAGE};
	/* Each is refused only after its first page(s): pages 1 and 3, never to be mapped. */
	struct xr_sge mid_unaligned[2] = {p1, {.addr = p3.addr + 8, .length = PAGE - 8}};
	struct xr_sge three[3] = {p1, p3, p1}, two[2] = {p1, p3};
	int ret[3];

	(void)tc;
	fbuf_reset(c);
	fr_sg(c, sg);
	c->mr = new_frmr(c, 2, sg, 2, &iova, r);
	if (!c->mr)
		return false;
	ret[0] = xr_map_mr_sg(c->mr, mid_unaligned, 2, NULL, PAGE);
	ret[1] = xr_map_mr_sg(c->mr, three, 3, NULL, PAGE);
	ret[2] = xr_map_mr_sg(c->mr, two, 2, &bad_iova, PAGE);
	if (ret[0] != -EINVAL || ret[1] != -EINVAL || ret[2] != -EINVAL) {
		report_fail(r,
			    "xr_map_mr_sg: %d (unaligned middle), %d (3 pages, room for 2), %d "
			    "(iova offset): expected -EINVAL each",
			    ret[0], ret[1], ret[2]);
		return false;
	}
	if ((uintptr_t)c->mr->addr != FR_IOVA || c->mr->length != 2 * PAGE) {
		report_fail(r, "refused maps changed the MR: %p, %zu B", c->mr->addr,
			    c->mr->length);
		return false;
	}
	if (!new_fr_key(c->mr, r) ||
	    !reg_mr(c, main_pair(c), c->mr, fr_access, XR_WC_SUCCESS, idx, r))
		return false;
	*t = (struct e2e_target){FR_IOVA + PAGE - 32, c->mr->rkey};
	return true;
}

static void map_intact_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   const struct e2e_target *t, struct report *r)
{
	struct op w = write_op(t->addr, t->rkey, 64, tc->seed);

	if (client_op(c, main_pair(c), &w, XR_WC_SUCCESS, idx, "across the pages", r))
		report_ok(r, "WRITE of 64 B across the pages at 0x%" PRIx64 " ok", t->addr);
}

/*
 * The WRITE must have landed in pages 0 and 2, which the accepted map named,
 * not in pages 1 and 3, which only the refused xr_map_mr_sg calls did.
 */
static void map_intact_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct report *r)
{
	(void)idx;
	fr_model_write(c, fr_pages, PAGE - 32, tc->seed, 64);
	if (!memcmp(c->fbuf, c->fmodel, FBUF_SIZE)) {
		if (main_quiet(c, r))
			report_ok(r, "the WRITE landed in pages 0 and 2: the refused maps left the "
				     "map alone");
		return;
	}
	check_fbuf(c, r);
}

/* ---- through the middlebox: a late retransmission or duplicate ------------------------ */

static uint32_t imp_len(const struct e2e_ctx *c, const struct e2e_case *tc)
{
	return tc->kind == CASE_IMP_PARTIAL ? 2 * c->mtu + PARTIAL_TAIL : 512;
}

static bool imp_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct e2e_target *t,
			struct report *r)
{
	struct xr_sge sg = {.addr = (uintptr_t)c->fbuf, .length = 2 * PAGE};
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	bool partial = tc->kind == CASE_IMP_PARTIAL;
	uint32_t head = 2 * c->mtu;
	uint64_t first_recv;
	int64_t deadline;

	if (tc->round == 0) {
		tbuf_reset(c, tc);
		fbuf_reset(c);
		if (tc->kind == CASE_IMP_RETRANSMIT || partial) {
			/* Canary: what lands shows. */
			memset(c->tbuf, CANARY, TBUF_SIZE);
			memset(c->model, CANARY, TBUF_SIZE);
		}
		if (tc->kind == CASE_IMP_LATE_DUP) {
			c->mr = new_frmr(c, 2, &sg, 1, NULL, r);
			if (!c->mr || !new_fr_key(c->mr, r) ||
			    !reg_mr(c, p0, c->mr, fr_access, XR_WC_SUCCESS, idx, r))
				return false;
			c->saved_target = *t =
			    (struct e2e_target){(uintptr_t)c->mr->addr + 16, c->mr->rkey};
			return true;
		}
		c->mw = new_mw(c, c->port.pd, XR_MW_TYPE_2, r);
		if (!c->mw ||
		    !bind_type2(c, p0, c->mw, c->tmr, tb(c, partial ? PARTIAL_OFF : WIN_OFF),
				partial ? PARTIAL_WIN : WIN_LEN, win_all, XR_WC_SUCCESS, idx, r))
			return false;
		if (tc->kind == CASE_IMP_SEND_INV_DUP) {
			/* A second receive, that a SEND delivered twice would complete. */
			if (!post_recv(c, p0, idx, r))
				return false;
			first_recv = c->recv_id;
			if (!post_recv(c, p0, idx, r))
				return false;
			c->recv_id2 = c->recv_id;
			c->recv_id = first_recv;
		}
		c->saved_target = *t =
		    (struct e2e_target){tb(c, partial ? PARTIAL_OFF : WIN_OFF + 16), c->mw->rkey};
		return true;
	}
	*t = c->saved_target;
	switch (tc->kind) {
	case CASE_IMP_LATE_DUP:
		/* The original landed and the key is gone; the late copy must place nothing. */
		nanosleep(&(struct timespec){.tv_sec = LATE_WAIT_MS / 1000,
					     .tv_nsec = LATE_WAIT_MS % 1000 * 1000000l},
			  NULL);
		return check_fbuf(c, r);
	case CASE_IMP_SEND_INV_DUP:
		/* Invalidated by the SEND (once, though it came twice). */
		return true;
	case CASE_IMP_PARTIAL:
		/* Wait for the packets before the lost one, then invalidate. */
		model_write(c->model, PARTIAL_OFF, tc->seed, head);
		deadline = tool_now_ms() + E2E_STATE_CHANGE_TIMEOUT_MS;
		while (memcmp(c->tbuf + PARTIAL_OFF, c->model + PARTIAL_OFF, head) &&
		       tool_now_ms() < deadline)
			nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		break;
	case CASE_IMP_READ_REPLAY: {
		/*
		 * The READ's response is lost, but its request must have been taken
		 * first: the out-of-band message that got us here can overtake it.
		 * Taken, it moved the expected PSN past the pair's first one.
		 */
		struct xr_qp_attr attr = {.rq_psn = p0->peer_psn};

		deadline = tool_now_ms() + E2E_STATE_CHANGE_TIMEOUT_MS;
		while (attr.rq_psn == p0->peer_psn && tool_now_ms() < deadline) {
			if (!e2e_query_state(p0->qp, &attr, r))
				return false;
			if (attr.rq_psn == p0->peer_psn)
				nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		}
		if (attr.rq_psn == p0->peer_psn) {
			report_fail(r, "the READ request never arrived");
			return false;
		}
		break;
	}
	default:
		/* The WRITE's only packet was lost. */
		break;
	}
	return check_tbuf(c, r) && local_inv(c, p0, c->mw->rkey, XR_WC_SUCCESS, idx, r);
}

/* Round 0: posts the operation a packet of which the middlebox loses; round 1 waits for it. */
static void imp_post(struct e2e_ctx *c, struct e2e_qp_end *p0, const struct op *o, int idx,
		     struct report *r)
{
	struct xr_sge sge;
	struct xr_send_wr wr;

	c->posted_ms = tool_now_ms();
	c->pending_id = next_id(c, idx);
	if (o->kind == OP_READ)
		memset(c->cbuf + CL_LAND, CANARY, o->len);
	else
		fill_pattern(c->cbuf + CL_SRC, o->seed, 0, o->len);
	wr = op_wr_of(c, o, c->pending_id, &sge);
	if (e2e_post_send(p0->qp, &wr, r) && expect_quiet(p0->send_cq, 0, r, "initiator"))
		report_ok(r, "%u B %s with 0x%08x posted", o->len, op_names[o->kind], o->rkey);
}

static void imp_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		    const struct e2e_target *t, struct report *r)
{
	struct e2e_qp_end *p0 = pair(c, tc, 0);
	bool is_read = tc->kind == CASE_IMP_READ_REPLAY;
	struct op o = is_read ? read_op(t->addr, t->rkey, imp_len(c, tc))
			      : write_op(t->addr, t->rkey, imp_len(c, tc), tc->seed);
	int64_t start = tool_now_ms();

	if (tc->round == 0) {
		switch (tc->kind) {
		case CASE_IMP_LATE_DUP:
			if (client_op(c, p0, &o, XR_WC_SUCCESS, idx, "before the invalidation", r))
				report_ok(r, "%u B WRITE with 0x%08x: success", o.len, t->rkey);
			return;
		case CASE_IMP_SEND_INV_DUP:
			/* Its ACK is lost: it completes once the retransmission is acknowledged. */
			if (client_send(c, p0, XR_WR_SEND_WITH_INV, SEND_LEN, tc->seed + 5, t->rkey,
					XR_WC_SUCCESS, idx, r))
				report_ok(r,
					  "SEND_WITH_INV of 0x%08x completed after %" PRId64
					  " ms: success",
					  t->rkey, tool_now_ms() - start);
			return;
		default:
			return imp_post(c, p0, &o, idx, r);
		}
	}
	if (tc->kind == CASE_IMP_LATE_DUP || tc->kind == CASE_IMP_SEND_INV_DUP) {
		o.seed = tc->seed + 1;
		if (client_op(c, p0, &o, XR_WC_REM_ACCESS_ERR, idx, "after the invalidation", r))
			report_ok(r, "a new WRITE with 0x%08x: REM_ACCESS_ERR", t->rkey);
		return;
	}
	if (!wait_wc(p0->send_cq, c->pending_id, XR_WC_REM_ACCESS_ERR, op_wc[o.kind],
		     is_read ? "the READ asked again after the invalidation"
			     : "the WRITE retransmitted after the invalidation",
		     NULL, r) ||
	    !e2e_wait_qp_state(p0->qp, XR_QPS_ERR, r, "initiator"))
		return;
	if (is_read && !all_canary(c->cbuf + CL_LAND, o.len))
		return report_fail(r, "the refused READ placed data locally");
	report_ok(r, "the %s completed REM_ACCESS_ERR %" PRId64 " ms after posting",
		  op_names[o.kind], tool_now_ms() - c->posted_ms);
}

static void imp_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	struct e2e_qp_end *p0 = pair(c, tc, 0);

	if (tc->round == 1) {
		/* The second receive was flushed when the QP went to ERR. */
		if (tc->kind == CASE_IMP_SEND_INV_DUP &&
		    !wait_wc(p0->recv_cq, c->recv_id2, XR_WC_WR_FLUSH_ERR, XR_WC_RECV,
			     "second receive", NULL, r))
			return;
		if (check_tbuf(c, r) && check_fbuf(c, r) &&
		    pairs_in_state(c, tc, 0, 1, XR_QPS_ERR, r))
			report_ok(r, "%s; QP in ERR",
				  tc->kind == CASE_IMP_PARTIAL
				      ? "the lost packet's bytes never landed, the others had"
				      : "memory unchanged byte for byte");
		return;
	}
	switch (tc->kind) {
	case CASE_IMP_PARTIAL:
		/* The packets before the lost one may land any time now: round 1 waits for them. */
		report_ok(r, "ready to invalidate");
		return;
	case CASE_IMP_SEND_INV_DUP:
		/* One receive, with the invalidation; the duplicate delivered nothing more. */
		if (check_recv(c, p0, XR_WC_SUCCESS, SEND_LEN, tc->seed + 5, true, c->mw->rkey,
			       r) &&
		    expect_quiet(p0->recv_cq, QUIET_WAIT_MS, r, "second receive") &&
		    pairs_in_state(c, tc, 0, 1, XR_QPS_RTS, r))
			report_ok(r,
				  "one RECV with XR_WC_WITH_INV of 0x%08x, none for the "
				  "duplicate; QP in RTS",
				  c->mw->rkey);
		return;
	case CASE_IMP_LATE_DUP:
		break;
	default:
		if (check_tbuf(c, r))
			report_ok(r, "nothing landed yet");
		return;
	}
	/* Landed: invalidate, then rewrite the area, so that a duplicate placed again shows. */
	fr_model_write(c, (const int[]){0, 1}, 16, tc->seed, 512);
	if (!check_fbuf(c, r) || !local_inv(c, p0, c->mr->rkey, XR_WC_SUCCESS, idx, r))
		return;
	fill_pattern(c->fbuf + 16, tc->seed + 2, 0, 512);
	fill_pattern(c->fmodel + 16, tc->seed + 2, 0, 512);
	report_ok(r, "WRITE landed; LOCAL_INV of 0x%08x; area rewritten", c->mr->rkey);
}

/* ---- the case table -------------------------------------------------------------------- */

static const struct e2e_case_ops case_ops[CASE_KINDS] = {
    [CASE_T1_OPS] = {t1_ops_prepare, t1_ops_act, t1_ops_check},
    [CASE_T1_BOUNDS] = {t1_bounds_prepare, t1_bounds_act, t1_bounds_check},
    [CASE_T1_READ_ONLY] = {t1_ro_prepare, t1_ro_act, t1_ro_check},
    [CASE_T1_REBIND] = {t1_rebind_prepare, t1_rebind_act, t1_rebind_check},
    [CASE_T2_LOCAL_INV] = {t2_inv_prepare, t2_inv_act, t2_inv_check},
    [CASE_T2_OTHER_QP] = {t2_qp_prepare, t2_qp_act, t2_qp_check},
    [CASE_SEND_INV] = {send_inv_prepare, send_inv_act, send_inv_check},
    [CASE_SEND_INV_BAD] = {bad_inv_prepare, bad_inv_act, bad_inv_check},
    [CASE_FRMR] = {frmr_prepare, frmr_act, frmr_check},
    [CASE_FRMR_VALID_REREG] = {rereg_prepare, rereg_act, rereg_check},
    [CASE_READ_INV] = {target_prepare, read_inv_act, target_untouched_check},
    [CASE_ORDER_LOCAL] = {target_prepare, order_act, order_check},
    [CASE_ORDER_TARGET] = {order_target_prepare, order_target_act, order_target_check},
    [CASE_BIND_ERR] = {bind_err_prepare, bind_err_act, bind_err_check},
    [CASE_DEREG_BUSY] = {dereg_prepare, dereg_act, dereg_check},
    [CASE_EINVAL] = {einval_prepare, einval_act, einval_check},
    [CASE_LINV_BAD] = {linv_bad_prepare, linv_bad_act, linv_bad_check},
    [CASE_FRMR_REFUSED] = {fr_refused_prepare, fr_refused_act, fr_refused_check},
    [CASE_DEALLOC_MW] = {dealloc_prepare, dealloc_act, dealloc_check},
    [CASE_MAP_INTACT] = {map_intact_prepare, map_intact_act, map_intact_check},
    [CASE_T1_ON_FRMR] = {t1_on_frmr_prepare, t1_on_frmr_act, t1_on_frmr_check},
    [CASE_IMP_RETRANSMIT] = {imp_prepare, imp_act, imp_check},
    [CASE_IMP_LATE_DUP] = {imp_prepare, imp_act, imp_check},
    [CASE_IMP_PARTIAL] = {imp_prepare, imp_act, imp_check},
    [CASE_IMP_READ_REPLAY] = {imp_prepare, imp_act, imp_check},
    [CASE_IMP_SEND_INV_DUP] = {imp_prepare, imp_act, imp_check},
};

static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	int n = 0;

	for (int i = 0; i < c->ncases; i++) {
		const struct mw_case *m = &mw_cases[c->sel[i]];

		e2e_add_case(cases, &n, m->kind, 0, "%s", m->name);
		cases[n - 1].param = i;
		cases[n - 1].rounds = m->rounds;
	}
	return n;
}

/* ---- out-of-band exchange ------------------------------------------------------------- */

/* A hello (path MTU, pair count, GID), then every pair's QPN and PSN. */
static int send_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[2] = {c->port.mtu_enum, (uint32_t)c->npairs}, qps[2 * MAX_PAIRS];
	int ret = e2e_send_hello(fd, HELLO_MAGIC, words, 2, &c->port.gid);

	if (ret)
		return ret;
	for (int i = 0; i < c->npairs; i++) {
		qps[2 * i] = htonl(c->pairs[i].qp->qp_num);
		qps[2 * i + 1] = htonl(c->pairs[i].psn);
	}
	return oob_write_full(fd, qps, 8 * (size_t)c->npairs, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[2], qps[2 * MAX_PAIRS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, 2, &c->peer_gid);

	if (ret)
		return ret;
	/* Both sides must run the same cases. */
	if (words[1] != (uint32_t)c->npairs)
		return -EPROTO;
	c->peer_mtu_enum = words[0];
	ret = oob_read_full(fd, qps, 8 * (size_t)c->npairs, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
	if (ret)
		return ret;
	for (int i = 0; i < c->npairs; i++) {
		c->peer_qpn[i] = ntohl(qps[2 * i]);
		c->peer_psn[i] = ntohl(qps[2 * i + 1]);
	}
	return 0;
}

/* INIT -> RTR -> RTS with this run's local ACK timeout. */
static int connect_pair(struct e2e_ctx *c, int i)
{
	struct e2e_qp_end *end = &c->pairs[i];
	struct qp_rtr_attr rtr = {
	    .path_mtu = c->port.mtu_enum,
	    .dest_qpn = c->peer_qpn[i],
	    .rq_psn = c->peer_psn[i],
	    .dgid = c->peer_gid,
	    .sgid_index = (uint8_t)c->port.gid_index,
	    .port_num = 1,
	    .hop_limit = 64,
	    .max_dest_rd_atomic = MAX_RD_ATOMIC,
	    .min_rnr_timer = 1,
	};
	struct xr_qp_attr rts = {
	    .qp_state = XR_QPS_RTS,
	    .timeout = c->ack_timeout,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .sq_psn = end->psn,
	    .max_rd_atomic = MAX_RD_ATOMIC,
	};
	int ret = qp_to_rtr(end->qp, &rtr);

	end->peer_psn = c->peer_psn[i];
	if (ret) {
		fprintf(stderr, PROG ": couldn't move QP to RTR: %s\n", strerror(-ret));
		return -1;
	}
	ret = xr_modify_qp(end->qp, &rts,
			   XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
			       XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
	if (ret) {
		fprintf(stderr, PROG ": couldn't move QP to RTS: %s\n", strerror(-ret));
		return -1;
	}
	return 0;
}

static int connect_pairs(struct e2e_ctx *c)
{
	struct xr_qp_attr attr;
	int ret;

	if (e2e_agree_mtu(PROG, &c->port, c->peer_mtu_enum))
		return -1;
	for (int i = 0; i < c->npairs; i++)
		if (connect_pair(c, i))
			return -1;
	ret = xr_query_qp(main_pair(c)->qp, &attr, XR_QP_PATH_MTU, NULL);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query QP: %s\n", strerror(-ret));
		return -1;
	}
	c->mtu = e2e_mtu_bytes(attr.path_mtu);
	printf("[%s] path MTU %u; %d QP pairs, local ACK timeout code %u%s%s\n", c->role, c->mtu,
	       c->npairs, c->ack_timeout, c->impaired ? ", impaired case " : "",
	       c->impaired ? c->impaired : "");
	if (c->impaired)
		for (int i = 0; i < c->npairs; i++)
			printf("[%s] qp %d local 0x%06x peer 0x%06x\n", c->role, i,
			       c->pairs[i].qp->qp_num, c->peer_qpn[i]);
	return 0;
}

/* ---- setup ------------------------------------------------------------------------------ */

static struct xr_mr *reg(struct xr_pd *pd, void *addr, size_t length, int access)
{
	struct xr_mr *mr = xr_reg_mr(pd, addr, length, access);

	if (!mr)
		fprintf(stderr, PROG ": couldn't register an MR (access 0x%x): %s\n", access,
			strerror(errno));
	return mr;
}

static uint8_t *page_alloc(size_t size)
{
	uint8_t *p = aligned_alloc(PAGE, size);

	if (p)
		memset(p, CANARY, size);
	else
		fprintf(stderr, PROG ": out of memory\n");
	return p;
}

/* The cases of this run, and the pairs they need. */
static int select_cases(struct e2e_ctx *c)
{
	c->npairs = 1;
	for (int i = 0; i < N_MW_CASES; i++) {
		const struct mw_case *m = &mw_cases[i];

		if (c->impaired ? !m->impaired || strcmp(m->impaired, c->impaired) : !!m->impaired)
			continue;
		c->sel[c->ncases] = i;
		c->base[c->ncases++] = c->npairs;
		c->npairs += m->pairs;
	}
	if (!c->ncases) {
		fprintf(stderr, PROG ": no impaired case \"%s\"\n", c->impaired);
		return -1;
	}
	if (c->npairs > MAX_PAIRS) {
		fprintf(stderr, PROG ": %d QP pairs needed, room for %d\n", c->npairs, MAX_PAIRS);
		return -1;
	}
	return 0;
}

static int setup_server(struct e2e_ctx *c)
{
	struct xr_pd *pd = c->port.pd;

	c->tbuf = page_alloc(TBUF_SIZE);
	c->fbuf = page_alloc(FBUF_SIZE);
	c->rbuf = page_alloc(RBUF_SIZE);
	c->other_pd = xr_alloc_pd(c->port.dev);
	if (!c->tbuf || !c->fbuf || !c->rbuf || !c->other_pd)
		return -1;
	c->tmr = reg(pd, c->tbuf, TBUF_SIZE, remote_all | XR_ACCESS_MW_BIND);
	c->nobind_mr = reg(pd, c->tbuf, TBUF_SIZE, remote_all);
	c->nolocal_mr = reg(pd, c->tbuf, TBUF_SIZE, XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND);
	c->other_mr = reg(c->other_pd, c->tbuf, TBUF_SIZE, remote_all | XR_ACCESS_MW_BIND);
	c->rmr = reg(pd, c->rbuf, RBUF_SIZE, XR_ACCESS_LOCAL_WRITE);
	return c->tmr && c->nobind_mr && c->nolocal_mr && c->other_mr && c->rmr ? 0 : -1;
}

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	c->is_server = args->is_server;
	c->role = args->role;
	c->ack_timeout = c->impaired ? IMPAIRED_ACK_TIMEOUT_CODE : ACK_TIMEOUT_CODE;
	if (select_cases(c) || e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->model = page_alloc(TBUF_SIZE);
	c->fmodel = page_alloc(FBUF_SIZE);
	if (!c->model || !c->fmodel)
		return -1;
	if (c->is_server) {
		if (setup_server(c))
			return -1;
	} else {
		c->cbuf = page_alloc(CBUF_SIZE);
		c->cf = page_alloc(CF_SIZE);
		if (!c->cbuf || !c->cf)
			return -1;
		c->cmr = reg(c->port.pd, c->cbuf, CBUF_SIZE, XR_ACCESS_LOCAL_WRITE);
		if (!c->cmr)
			return -1;
	}
	for (int i = 0; i < c->npairs; i++)
		if (e2e_create_qp_end(PROG, &c->port, &c->pairs[i], 8, 4, 1, remote_all))
			return -1;
	return 0;
}

static void teardown(struct e2e_ctx *c)
{
	struct xr_mr *const mrs[] = {c->tmr,	  c->nobind_mr, c->nolocal_mr,
				     c->other_mr, c->rmr,	c->cmr};

	/* Windows first: an MR with a window bound to it cannot go. */
	for (int i = 0; i < c->n_mws; i++)
		if (c->mws[i])
			xr_dealloc_mw(c->mws[i]);
	for (int i = 0; i < c->npairs; i++)
		e2e_destroy_qp_end(&c->pairs[i]);
	for (int i = 0; i < c->n_mrs; i++)
		if (c->mrs[i])
			xr_dereg_mr(c->mrs[i]);
	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (mrs[i])
			xr_dereg_mr(mrs[i]);
	if (c->other_pd)
		xr_dealloc_pd(c->other_pd);
	e2e_close_port(&c->port);
	free(c->tbuf);
	free(c->fbuf);
	free(c->rbuf);
	free(c->cbuf);
	free(c->cf);
	free(c->model);
	free(c->fmodel);
}

int main(int argc, char **argv)
{
	static const struct e2e_driver driver = {
	    .prog = PROG,
	    .default_port = DEFAULT_PORT,
	    .server_part = "target",
	    .client_part = "initiator",
	    .not_prepared = "the target could not prepare",
	    .name_width = 38,
	    .sync_carries_target = true,
	    .check_after_act = true,
	    .peer_step_timeout_ms = 6 * CASE_TIMEOUT_MS + E2E_OOB_TIMEOUT_MS,
	    .ops = case_ops,
	    .setup = setup,
	    .send_hello = send_hello,
	    .recv_hello = recv_hello,
	    .connect = connect_pairs,
	    .build_cases = build_cases,
	    .teardown = teardown,
	};
	static struct e2e_ctx c;
	char *args[16];
	int n = 0;

	/* --impaired NAME is ours; the driver parses the rest. */
	for (int i = 0; i < argc && n < (int)(sizeof(args) / sizeof(args[0])); i++) {
		if (!strcmp(argv[i], "--impaired") && i + 1 < argc) {
			c.impaired = argv[++i];
			continue;
		}
		args[n++] = argv[i];
	}
	if (n < argc - (c.impaired ? 2 : 0)) {
		fprintf(stderr, PROG ": too many arguments\n");
		return 2;
	}
	return e2e_main(n, args, &driver, &c);
}
