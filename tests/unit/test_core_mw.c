/* SPDX-License-Identifier: MIT */
/*
 * Memory windows, fast registration and invalidation through two transport
 * cores on the in-memory link: a window grants exactly its range and
 * rights; every bind, invalidation and re-registration revokes the old key
 * for WRITE, READ and both atomics, with target memory unchanged; local
 * operations keep send-queue order; a retransmission that arrives after its
 * key was revoked is refused; and all of it holds over a lossy link.
 */
#include "core_harness.h"

#define REQ 0 /* the initiator */
#define RSP 1 /* the target, whose memory the keys grant */
#define FILL 0x5a
#define PAGE 4096

static const int remote_all = H_REMOTE_ALL;
static const int bindable = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ |
			    XR_ACCESS_REMOTE_ATOMIC | XR_ACCESS_MW_BIND;

static void setup(struct h_pair *p, uint64_t seed)
{
	struct h_qp_opts o = h_default_opts();

	o.rd_atomic = 4;
	h_setup(p, seed, 1024, &o);
	h_allow_atomics(p);
}

/* Windows the current test allocated: destroy() deallocates what is left. */
static struct xr_mw *live_mws[16];
static int nlive_mws;

static struct xr_mw *alloc_mw(struct h_pair *p, int s, enum xr_mw_type type)
{
	int err;
	struct xr_mw *mw = xr_core_alloc_mw(p->side[s].pd, type, &err);

	CHECK(mw, "alloc_mw type %d: %s", type, strerror(-err));
	if (mw && nlive_mws < 16)
		live_mws[nlive_mws++] = mw;
	return mw;
}

static int dealloc_mw(struct xr_mw *mw)
{
	for (int i = 0; i < nlive_mws; i++)
		if (live_mws[i] == mw)
			live_mws[i] = live_mws[--nlive_mws];
	return xr_core_dealloc_mw(mw);
}

/* Windows first: they hold their MRs and PDs. */
static void destroy(struct h_pair *p)
{
	while (nlive_mws)
		dealloc_mw(live_mws[0]);
	h_pair_destroy(p);
}

static struct xr_mw_bind_info bind_info(struct xr_mr *mr, uint64_t addr, uint64_t len, int access)
{
	return (struct xr_mw_bind_info){
	    .mr = mr, .addr = addr, .length = len, .mw_access_flags = (unsigned)access};
}

/* A type 1 bind by verb on side s's QP; settles and checks its completion. */
static void bind1(struct h_pair *p, int s, struct xr_mw *mw, struct xr_mw_bind_info bi,
		  enum xr_wc_status want)
{
	struct xr_mw_bind b = {.wr_id = 900, .send_flags = XR_SEND_SIGNALED, .bind_info = bi};

	CHECK(xr_core_bind_mw(p->side[s].qp, mw, &b) == 0, "xr_bind_mw posts");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "bind type 1", 900, want, XR_WC_BIND_MW);
}

static int post_local(struct h_pair *p, int s, struct xr_send_wr *wr)
{
	struct xr_send_wr *bad = NULL;

	wr->send_flags |= XR_SEND_SIGNALED;
	return xr_core_post_send(p->side[s].qp, wr, &bad);
}

/* A type 2 bind by work request on side s's QP, settled and checked. */
static void bind2(struct h_pair *p, int s, struct xr_mw *mw, struct xr_mw_bind_info bi,
		  enum xr_wc_status want)
{
	struct xr_send_wr wr = {.wr_id = 901, .opcode = XR_WR_BIND_MW};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = xr_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bi;
	CHECK(post_local(p, s, &wr) == 0, "post BIND_MW");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "bind type 2", 901, want, XR_WC_BIND_MW);
}

static void local_inv(struct h_pair *p, int s, uint32_t key, enum xr_wc_status want)
{
	struct xr_send_wr wr = {.wr_id = 902, .opcode = XR_WR_LOCAL_INV, .invalidate_rkey = key};

	CHECK(post_local(p, s, &wr) == 0, "post LOCAL_INV");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "LOCAL_INV", 902, want, XR_WC_LOCAL_INV);
}

static void reg_mr(struct h_pair *p, int s, struct xr_mr *mr, int access, enum xr_wc_status want)
{
	struct xr_send_wr wr = {.wr_id = 903, .opcode = XR_WR_REG_MR};

	wr.reg.mr = mr;
	wr.reg.key = mr->rkey;
	wr.reg.access = access;
	CHECK(post_local(p, s, &wr) == 0, "post REG_MR");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "REG_MR", 903, want, XR_WC_REG_MR);
}

/*
 * One remote operation from REQ: WRITE/READ of len bytes, or an atomic (len
 * 8) whose CAS compares with cur, the target's value, so it would swap.
 */
static int post_remote_cas(struct h_pair *p, uint64_t wr_id, enum xr_wr_opcode op,
			   const struct h_buf *local, uint64_t raddr, uint32_t rkey, uint32_t len,
			   uint64_t cur)
{
	struct xr_sge sge = h_sge(local, 0, len);
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;

	if (op == XR_WR_ATOMIC_CMP_AND_SWP || op == XR_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		/* CAS compares with the current value: it would succeed if allowed. */
		wr.wr.atomic.compare_add = op == XR_WR_ATOMIC_CMP_AND_SWP ? cur : 1;
		wr.wr.atomic.swap = ~cur;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

#define FRMR_IOVA 0x10000000ull

/* The target's 8 bytes at raddr: tgt's memory, by pointer or as an FRMR's first page. */
static uint64_t target_value(const struct h_buf *tgt, uint64_t raddr)
{
	uint64_t base = (uintptr_t)tgt->base, v = 0;

	if (raddr >= base && raddr + 8 <= base + tgt->len)
		memcpy(&v, tgt->base + (raddr - base), 8);
	else if (raddr >= FRMR_IOVA && raddr + 8 <= FRMR_IOVA + tgt->len)
		memcpy(&v, tgt->base + (raddr - FRMR_IOVA), 8);
	return v;
}

static int post_remote(struct h_pair *p, uint64_t wr_id, enum xr_wr_opcode op,
		       const struct h_buf *local, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	uint64_t cur = 0;

	if (op == XR_WR_ATOMIC_CMP_AND_SWP)
		memcpy(&cur, (const void *)(uintptr_t)raddr, 8);
	return post_remote_cas(p, wr_id, op, local, raddr, rkey, len, cur);
}

static enum xr_wc_opcode wc_of(enum xr_wr_opcode op)
{
	switch (op) {
	case XR_WR_RDMA_READ:
		return XR_WC_RDMA_READ;
	case XR_WR_ATOMIC_CMP_AND_SWP:
		return XR_WC_COMP_SWAP;
	case XR_WR_ATOMIC_FETCH_AND_ADD:
		return XR_WC_FETCH_ADD;
	default:
		return XR_WC_RDMA_WRITE;
	}
}

static const char *op_name(enum xr_wr_opcode op)
{
	switch (op) {
	case XR_WR_RDMA_READ:
		return "READ";
	case XR_WR_ATOMIC_CMP_AND_SWP:
		return "CAS";
	case XR_WR_ATOMIC_FETCH_AND_ADD:
		return "FAA";
	default:
		return "WRITE";
	}
}

static const enum xr_wr_opcode all_ops[] = {XR_WR_RDMA_WRITE, XR_WR_RDMA_READ,
					    XR_WR_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_FETCH_AND_ADD};

/*
 * Runs op on a settled pair and expects want; a refused op leaves the
 * target's buffer as it was and both QPs in ERR, an allowed one changes
 * what it should (checked by the caller).
 */
static void run_op(struct h_pair *p, const char *what, enum xr_wr_opcode op,
		   const struct h_buf *tgt, uint64_t raddr, uint32_t rkey, uint32_t len,
		   enum xr_wc_status want)
{
	struct h_buf *local = h_buf(p, REQ, len < 8 ? 8 : len, XR_ACCESS_LOCAL_WRITE, 0x11);
	uint8_t *before = malloc(tgt->len);

	memcpy(before, tgt->base, tgt->len);
	CHECK(post_remote_cas(p, 7, op, local, raddr, rkey, len, target_value(tgt, raddr)) == 0,
	      "%s: post %s", what, op_name(op));
	h_settle(p);
	h_expect_wc(p->side[REQ].scq, what, 7, want, wc_of(op));
	if (want != XR_WC_SUCCESS) {
		CHECK(!memcmp(before, tgt->base, tgt->len), "%s: %s changed target memory", what,
		      op_name(op));
		CHECK(p->side[REQ].qp->pub.state == XR_QPS_ERR &&
			  p->side[RSP].qp->pub.state == XR_QPS_ERR,
		      "%s: %s: both QPs in ERR", what, op_name(op));
	}
	free(before);
}

/* What a scenario leaves behind: a key and address that must now be refused. */
struct revoked {
	struct h_buf *tgt;
	uint64_t addr;
	uint32_t rkey;
};

/* For each of WRITE, READ, CAS, FAA on a fresh pair: prepare, then the op is refused. */
static void expect_revoked(const char *what, void (*prepare)(struct h_pair *, struct revoked *))
{
	for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++) {
		struct h_pair p;
		struct revoked r = {0};

		setup(&p, 100 + i);
		prepare(&p, &r);
		run_op(&p, what, all_ops[i], r.tgt, r.addr, r.rkey,
		       all_ops[i] == XR_WR_RDMA_READ || all_ops[i] == XR_WR_RDMA_WRITE ? 64 : 8,
		       XR_WC_REM_ACCESS_ERR);
		destroy(&p);
	}
}

/* ---- keys ------------------------------------------------------------------ */

static void test_keys(void)
{
	struct h_pair a, b;
	uint32_t ka[16], kb[16];
	int consecutive = 0, same = 0;

	setup(&a, 1);
	setup(&b, 2);
	for (int i = 0; i < 16; i++) {
		ka[i] = h_buf(&a, RSP, 64, remote_all, 0)->mr->rkey;
		kb[i] = h_buf(&b, RSP, 64, remote_all, 0)->mr->rkey;
		same += ka[i] == kb[i];
		if (i && (ka[i] >> 8) == (ka[i - 1] >> 8) + 1)
			consecutive++;
	}
	CHECK(same == 0, "%d of 16 keys the same in two cores seeded differently", same);
	CHECK(consecutive < 4, "%d of 15 indexes follow their predecessor", consecutive);
	CHECK(xr_inc_rkey(0x123456ff) == 0x12345600 && xr_inc_rkey(0x12345601) == 0x12345602,
	      "xr_inc_rkey changes the key byte only");
	destroy(&a);
	destroy(&b);
}

/* ---- type 1 windows ---------------------------------------------------------- */

static void test_type1_window(void)
{
	struct h_pair p;
	struct h_buf *tgt, *local;
	struct xr_mw *mw;
	uint64_t base, v;
	uint32_t old;

	setup(&p, 3);
	tgt = h_buf(&p, RSP, 4 * PAGE, bindable, FILL);
	base = (uintptr_t)tgt->base;
	mw = alloc_mw(&p, RSP, XR_MW_TYPE_1);
	old = mw->rkey;
	/* The window: bytes [1000, 1000 + 2048) of the MR, every remote right. */
	bind1(&p, RSP, mw,
	      bind_info(tgt->mr, base + 1000, 2048, remote_all & ~XR_ACCESS_LOCAL_WRITE),
	      XR_WC_SUCCESS);
	CHECK(mw->rkey == xr_inc_rkey(old), "bind moved the rkey to the next key byte");
	local = h_buf(&p, REQ, 2048, XR_ACCESS_LOCAL_WRITE, 0);
	h_fill(local->base, 2048, 1);
	/* The whole window, first and last byte included. */
	CHECK(post_remote(&p, 1, XR_WR_RDMA_WRITE, local, base + 1000, mw->rkey, 2048) == 0,
	      "post WRITE");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "WRITE through the window", 1, XR_WC_SUCCESS,
		    XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(tgt->base + 1000, 2048, 1) < 0, "WRITE content");
	CHECK(h_first_not(tgt->base, 1000, FILL) < 0 &&
		  h_first_not(tgt->base + 3048, 4 * PAGE - 3048, FILL) < 0,
	      "bytes around the window untouched");
	memset(local->base, 0, 2048);
	CHECK(post_remote(&p, 2, XR_WR_RDMA_READ, local, base + 1000, mw->rkey, 2048) == 0,
	      "post READ");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ through the window", 2, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(h_first_mismatch(local->base, 2048, 1) < 0, "READ content");
	memcpy(&v, tgt->base + 1000, 8);
	CHECK(post_remote(&p, 3, XR_WR_ATOMIC_FETCH_AND_ADD, local, base + 1000, mw->rkey, 8) == 0,
	      "post FAA");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "FAA through the window", 3, XR_WC_SUCCESS, XR_WC_FETCH_ADD);
	CHECK(*(uint64_t *)(tgt->base + 1000) == v + 1, "FAA applied once");
	CHECK(post_remote(&p, 4, XR_WR_ATOMIC_CMP_AND_SWP, local, base + 3040, mw->rkey, 8) == 0,
	      "post CAS on the last 8 bytes");
	memcpy(&v, tgt->base + 3040, 8);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "CAS through the window", 4, XR_WC_SUCCESS, XR_WC_COMP_SWAP);
	CHECK(*(uint64_t *)(tgt->base + 3040) == ~v, "CAS swapped");
	/* The MR cannot go while the window is bound to it. */
	CHECK(xr_core_dereg_mr(tgt->mr) == -EBUSY, "dereg of an MR with a bound window: EBUSY");
	CHECK(dealloc_mw(mw) == 0, "dealloc a bound window");
	destroy(&p);
}

/* The window from test_type1_window, on a fresh pair, before any access. */
static struct xr_mw *narrow_window(struct h_pair *p, struct h_buf **tgt, int access)
{
	struct xr_mw *mw;

	*tgt = h_buf(p, RSP, 4 * PAGE, bindable, FILL);
	mw = alloc_mw(p, RSP, XR_MW_TYPE_1);
	bind1(p, RSP, mw, bind_info((*tgt)->mr, (uintptr_t)(*tgt)->base + 1000, 2048, access),
	      XR_WC_SUCCESS);
	return mw;
}

static void test_window_bounds_and_rights(void)
{
	const int remote = XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;
	/* Offsets into the MR and lengths that leave the window by one byte. */
	static const struct {
		const char *what;
		uint64_t off;
		uint32_t len;
	} outside[] = {{"WRITE one byte before the window", 999, 1},
		       {"WRITE one byte after the window", 3048, 1},
		       {"WRITE from inside to one byte after", 3000, 49},
		       {"WRITE from one byte before into it", 999, 2}};

	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		struct h_pair p;
		struct h_buf *tgt;
		struct xr_mw *mw;

		setup(&p, 10 + i);
		mw = narrow_window(&p, &tgt, remote);
		run_op(&p, outside[i].what, XR_WR_RDMA_WRITE, tgt,
		       (uintptr_t)tgt->base + outside[i].off, mw->rkey, outside[i].len,
		       XR_WC_REM_ACCESS_ERR);
		dealloc_mw(mw);
		destroy(&p);
	}
	/* READ one byte past it, an atomic right after it. */
	for (int i = 0; i < 2; i++) {
		struct h_pair p;
		struct h_buf *tgt;
		struct xr_mw *mw;

		setup(&p, 20 + i);
		mw = narrow_window(&p, &tgt, remote);
		if (i == 0)
			run_op(&p, "READ one byte past the window", XR_WR_RDMA_READ, tgt,
			       (uintptr_t)tgt->base + 1000, mw->rkey, 2049, XR_WC_REM_ACCESS_ERR);
		else
			run_op(&p, "FAA just after the window", XR_WR_ATOMIC_FETCH_AND_ADD, tgt,
			       (uintptr_t)tgt->base + 3048, mw->rkey, 8, XR_WC_REM_ACCESS_ERR);
		dealloc_mw(mw);
		destroy(&p);
	}
	/* A READ-only window: READ works, WRITE and both atomics are refused. */
	for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++) {
		struct h_pair p;
		struct h_buf *tgt;
		struct xr_mw *mw;
		bool read = all_ops[i] == XR_WR_RDMA_READ;

		setup(&p, 30 + i);
		mw = narrow_window(&p, &tgt, XR_ACCESS_REMOTE_READ);
		run_op(&p, "READ-only window", all_ops[i], tgt, (uintptr_t)tgt->base + 1000,
		       mw->rkey, read ? 64 : (all_ops[i] == XR_WR_RDMA_WRITE ? 64 : 8),
		       read ? XR_WC_SUCCESS : XR_WC_REM_ACCESS_ERR);
		dealloc_mw(mw);
		destroy(&p);
	}
}

static void prepare_rebound(struct h_pair *p, struct revoked *r)
{
	struct xr_mw *mw = narrow_window(
	    p, &r->tgt, XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC);

	r->addr = (uintptr_t)r->tgt->base + 1000;
	r->rkey = mw->rkey;
	/* Moved elsewhere in the MR, same rights: the old rkey names nothing now. */
	bind1(p, RSP, mw,
	      bind_info(r->tgt->mr, (uintptr_t)r->tgt->base, 8192,
			XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC),
	      XR_WC_SUCCESS);
	CHECK(mw->rkey != r->rkey, "rebinding changed the rkey");
}

static void prepare_unbound(struct h_pair *p, struct revoked *r)
{
	struct xr_mw *mw = narrow_window(
	    p, &r->tgt, XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC);

	r->addr = (uintptr_t)r->tgt->base + 1000;
	bind1(p, RSP, mw, bind_info(NULL, 0, 0, 0), XR_WC_SUCCESS);
	/* Neither the old rkey nor the new one reaches anything. */
	r->rkey = mw->rkey;
	CHECK(xr_mr_impl(r->tgt->mr)->mw_bound == 0, "an unbound window no longer holds its MR");
}

/* ---- type 2 windows --------------------------------------------------------- */

static void test_type2_window(void)
{
	struct h_pair p;
	struct h_buf *tgt, *local;
	struct xr_mw *mw;
	uint32_t key;

	setup(&p, 4);
	tgt = h_buf(&p, RSP, 2 * PAGE, bindable, FILL);
	local = h_buf(&p, REQ, PAGE, XR_ACCESS_LOCAL_WRITE, 0);
	mw = alloc_mw(&p, RSP, XR_MW_TYPE_2);
	/* Unbound, a type 2 window reaches nothing, and a bind by verb is refused. */
	{
		struct xr_mw_bind b = {.bind_info =
					   bind_info(tgt->mr, (uintptr_t)tgt->base, 64, 0)};

		CHECK(xr_core_bind_mw(p.side[RSP].qp, mw, &b) == -EINVAL,
		      "xr_bind_mw of a type 2 window: EINVAL");
	}
	bind2(&p, RSP, mw,
	      bind_info(tgt->mr, (uintptr_t)tgt->base, PAGE,
			XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ),
	      XR_WC_SUCCESS);
	key = mw->rkey;
	h_fill(local->base, PAGE, 2);
	CHECK(post_remote(&p, 1, XR_WR_RDMA_WRITE, local, (uintptr_t)tgt->base, key, PAGE) == 0,
	      "post WRITE");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "WRITE through a type 2 window", 1, XR_WC_SUCCESS,
		    XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(tgt->base, PAGE, 2) < 0, "WRITE content");
	/* Bound already: binding again without invalidating is a bind error. */
	bind2(&p, RSP, mw, bind_info(tgt->mr, (uintptr_t)tgt->base, 64, XR_ACCESS_REMOTE_READ),
	      XR_WC_MW_BIND_ERR);
	CHECK(p.side[RSP].qp->pub.state == XR_QPS_ERR, "a bind error moves the QP to ERR");
	destroy(&p);
}

static void prepare_type2_invalidated(struct h_pair *p, struct revoked *r)
{
	struct xr_mw *mw;

	r->tgt = h_buf(p, RSP, PAGE, bindable, FILL);
	mw = alloc_mw(p, RSP, XR_MW_TYPE_2);
	bind2(p, RSP, mw, bind_info(r->tgt->mr, (uintptr_t)r->tgt->base, PAGE, remote_all & ~1),
	      XR_WC_SUCCESS);
	r->addr = (uintptr_t)r->tgt->base;
	r->rkey = mw->rkey;
	local_inv(p, RSP, mw->rkey, XR_WC_SUCCESS);
}

/* ---- bind rules ------------------------------------------------------------- */

static void expect_bind_error(const char *what, int mr_access, uint64_t off, uint64_t len,
			      int access)
{
	struct h_pair p;
	struct h_buf *tgt;
	struct xr_mw *mw;

	setup(&p, 40);
	tgt = h_buf(&p, RSP, PAGE, mr_access, FILL);
	mw = alloc_mw(&p, RSP, XR_MW_TYPE_1);
	bind1(&p, RSP, mw, bind_info(tgt->mr, (uintptr_t)tgt->base + off, len, access),
	      XR_WC_MW_BIND_ERR);
	CHECK(p.side[RSP].qp->pub.state == XR_QPS_ERR, "%s: QP in ERR after the bind error", what);
	dealloc_mw(mw);
	destroy(&p);
}

static void test_bind_rules(void)
{
	expect_bind_error("MR without MW_BIND", remote_all, 0, 64, XR_ACCESS_REMOTE_READ);
	expect_bind_error("window past the MR end", bindable, PAGE - 8, 16, XR_ACCESS_REMOTE_READ);
	expect_bind_error("window before the MR", bindable, (uint64_t)-8, 16,
			  XR_ACCESS_REMOTE_READ);
	expect_bind_error("remote write on an MR without local write",
			  XR_ACCESS_REMOTE_READ | XR_ACCESS_MW_BIND, 0, 64, XR_ACCESS_REMOTE_WRITE);
	expect_bind_error("local write is no window right", bindable, 0, 64, XR_ACCESS_LOCAL_WRITE);
}

/* ---- fast registration ---------------------------------------------------- */

/* Two pages far apart, mapped as one region at iova 0x10000000: a page boundary in between. */
struct frmr {
	uint8_t *pages[2];
	struct xr_mr *mr;
};

static void frmr_alloc(struct h_pair *p, int s, struct frmr *f)
{
	int err;

	for (int i = 0; i < 2; i++) {
		f->pages[i] = aligned_alloc(PAGE, PAGE);
		memset(f->pages[i], FILL, PAGE);
	}
	f->mr = xr_core_alloc_mr(p->side[s].pd, 2, &err);
	CHECK(f->mr, "alloc_mr: %s", strerror(-err));
}

static int frmr_map(struct frmr *f)
{
	struct xr_sge sg[2] = {{.addr = (uintptr_t)f->pages[0], .length = PAGE},
			       {.addr = (uintptr_t)f->pages[1], .length = PAGE}};
	uint64_t iova = FRMR_IOVA;

	return xr_core_map_mr_sg(f->mr, sg, 2, &iova, PAGE);
}

static void frmr_free(struct frmr *f)
{
	CHECK(xr_core_dereg_mr(f->mr) == 0, "dereg FRMR");
	free(f->pages[0]);
	free(f->pages[1]);
}

static uint8_t *refused_map_pages;

static void test_fast_registration(void)
{
	struct h_pair p;
	struct h_buf *local;
	struct frmr f;
	uint32_t old;

	setup(&p, 5);
	frmr_alloc(&p, RSP, &f);
	/* Argument checks: nothing changes on a refusal. */
	{
		struct xr_sge bad[2] = {{.addr = (uintptr_t)f.pages[0] + 8, .length = PAGE - 8},
					{.addr = (uintptr_t)f.pages[1] + 8, .length = 8}};
		uint64_t odd_iova = FRMR_IOVA + 1;

		CHECK(xr_core_map_mr_sg(f.mr, bad, 2, NULL, PAGE) == -EINVAL,
		      "a second range not on a page boundary: EINVAL");
		CHECK(xr_core_map_mr_sg(f.mr, bad, 1, NULL, 1000) == -EINVAL,
		      "page size not a power of two: EINVAL");
		CHECK(xr_core_map_mr_sg(f.mr, bad, 1, &odd_iova, PAGE) == -EINVAL,
		      "an iova whose page offset differs: EINVAL");
	}
	CHECK(frmr_map(&f) == 2, "map two pages");
	CHECK(f.mr->addr == (void *)(uintptr_t)FRMR_IOVA && f.mr->length == 2 * PAGE,
	      "the MR's address is the iova");
	/* A refused map after it leaves it alone: the WRITE below lands in f's pages. */
	{
		uint8_t *other = aligned_alloc(PAGE, 2 * PAGE);
		struct xr_sge sg[2] = {{.addr = (uintptr_t)other, .length = PAGE},
				       {.addr = (uintptr_t)other + PAGE + 8, .length = 8}};

		memset(other, FILL, 2 * PAGE);
		CHECK(xr_core_map_mr_sg(f.mr, sg, 2, NULL, PAGE) == -EINVAL, "a refused map");
		CHECK(f.mr->addr == (void *)(uintptr_t)FRMR_IOVA && f.mr->length == 2 * PAGE,
		      "the refused map changed the MR's address or length");
		refused_map_pages = other;
	}
	/* Not registered yet: its key reaches nothing. */
	local = h_buf(&p, REQ, 2 * PAGE, XR_ACCESS_LOCAL_WRITE, 0);
	old = f.mr->rkey;
	xr_update_fast_reg_key(f.mr, (uint8_t)(old + 7));
	CHECK(f.mr->rkey == ((old & ~0xffu) | ((old + 7) & 0xff)) &&
		  (f.mr->lkey & 0xff) == (f.mr->rkey & 0xff),
	      "xr_update_fast_reg_key sets the key byte of both keys");
	reg_mr(&p, RSP, f.mr, remote_all, XR_WC_SUCCESS);
	h_fill(local->base, 2 * PAGE, 3);
	/* 1000 bytes straddling the page boundary, at iova addresses. */
	CHECK(post_remote(&p, 1, XR_WR_RDMA_WRITE, local, FRMR_IOVA + PAGE - 500, f.mr->rkey,
			  1000) == 0,
	      "post WRITE");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "WRITE across the page boundary", 1, XR_WC_SUCCESS,
		    XR_WC_RDMA_WRITE);
	CHECK(h_first_mismatch(f.pages[0] + PAGE - 500, 500, 3) < 0, "first page's part");
	CHECK(!memcmp(f.pages[1], local->base + 500, 500), "second page's part");
	CHECK(h_first_not(f.pages[0], PAGE - 500, FILL) < 0 &&
		  h_first_not(f.pages[1] + 500, PAGE - 500, FILL) < 0,
	      "nothing else written");
	CHECK(h_first_not(refused_map_pages, 2 * PAGE, FILL) < 0,
	      "nothing written where only the refused map pointed");
	free(refused_map_pages);
	memset(local->base, 0, 2 * PAGE);
	CHECK(post_remote(&p, 2, XR_WR_RDMA_READ, local, FRMR_IOVA + PAGE - 500, f.mr->rkey,
			  1000) == 0,
	      "post READ");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ across the page boundary", 2, XR_WC_SUCCESS,
		    XR_WC_RDMA_READ);
	CHECK(h_first_mismatch(local->base, 1000, 3) < 0, "READ content");
	/* Registering a valid MR again, without invalidating, is refused. */
	reg_mr(&p, RSP, f.mr, remote_all, XR_WC_LOC_QP_OP_ERR);
	CHECK(p.side[RSP].qp->pub.state == XR_QPS_ERR, "the failed REG_MR moved the QP to ERR");
	frmr_free(&f);
	destroy(&p);
}

static struct frmr revoked_frmr;

static void prepare_frmr_reregistered(struct h_pair *p, struct revoked *r)
{
	struct frmr *f = &revoked_frmr;

	frmr_alloc(p, RSP, f);
	CHECK(frmr_map(f) == 2, "map");
	reg_mr(p, RSP, f->mr, remote_all, XR_WC_SUCCESS);
	r->rkey = f->mr->rkey;
	local_inv(p, RSP, f->mr->rkey, XR_WC_SUCCESS);
	xr_update_fast_reg_key(f->mr, (uint8_t)(f->mr->rkey + 1));
	reg_mr(p, RSP, f->mr, remote_all, XR_WC_SUCCESS);
	CHECK(f->mr->rkey != r->rkey, "a new key for the new registration");
	/* Target memory is the first page, seen through a buffer the checks can compare. */
	r->tgt = h_buf(p, RSP, 8, 0, 0);
	free(r->tgt->base);
	r->tgt->base = f->pages[0];
	r->tgt->len = PAGE;
	r->addr = FRMR_IOVA + 64;
}

static void test_frmr_revoked(void)
{
	for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++) {
		struct h_pair p;
		struct revoked r = {0};
		uint8_t *page1;

		setup(&p, 60 + i);
		prepare_frmr_reregistered(&p, &r);
		page1 = revoked_frmr.pages[1];
		run_op(&p, "old key of a re-registered FRMR", all_ops[i], r.tgt, r.addr, r.rkey,
		       all_ops[i] == XR_WR_RDMA_READ || all_ops[i] == XR_WR_RDMA_WRITE ? 64 : 8,
		       XR_WC_REM_ACCESS_ERR);
		/* The harness frees tgt->base: hand it back a heap buffer. */
		r.tgt->base = malloc(8);
		r.tgt->len = 8;
		CHECK(h_first_not(page1, PAGE, FILL) < 0, "second page untouched");
		frmr_free(&revoked_frmr);
		destroy(&p);
	}
}

/* ---- SEND with invalidate, READ with invalidate --------------------------------- */

static void send_inv(struct h_pair *p, uint32_t key, uint64_t wr_id)
{
	struct h_buf *src = h_buf(p, REQ, 100, XR_ACCESS_LOCAL_WRITE, 0x33);
	struct xr_sge sge = h_sge(src, 0, 100);
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_SEND_WITH_INV,
				.send_flags = XR_SEND_SIGNALED,
				.invalidate_rkey = key};
	struct xr_send_wr *bad = NULL;

	CHECK(xr_core_post_send(p->side[REQ].qp, &wr, &bad) == 0, "post SEND_WITH_INV");
}

static void post_target_recv(struct h_pair *p)
{
	struct h_buf *dst = h_buf(p, RSP, 128, XR_ACCESS_LOCAL_WRITE, 0);
	struct xr_sge sge = h_sge(dst, 0, 128);

	CHECK(h_post_recv(p, RSP, 77, &sge, 1) == 0, "post receive");
}

static void prepare_send_inv_window(struct h_pair *p, struct revoked *r)
{
	struct xr_mw *mw;
	struct xr_wc wc;

	r->tgt = h_buf(p, RSP, PAGE, bindable, FILL);
	mw = alloc_mw(p, RSP, XR_MW_TYPE_2);
	bind2(p, RSP, mw, bind_info(r->tgt->mr, (uintptr_t)r->tgt->base, PAGE, remote_all & ~1),
	      XR_WC_SUCCESS);
	r->addr = (uintptr_t)r->tgt->base + 8;
	r->rkey = mw->rkey;
	post_target_recv(p);
	send_inv(p, mw->rkey, 8);
	h_settle(p);
	h_expect_wc(p->side[REQ].scq, "SEND_WITH_INV", 8, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p->side[RSP].rcq, "receive of SEND_WITH_INV");
	CHECK(wc.status == XR_WC_SUCCESS && wc.opcode == XR_WC_RECV &&
		  (wc.wc_flags & XR_WC_WITH_INV) && !(wc.wc_flags & XR_WC_WITH_IMM) &&
		  wc.invalidated_rkey == r->rkey && wc.byte_len == 100,
	      "receive: status %s flags %#x key %#x (want %#x) len %u", xr_wc_status_str(wc.status),
	      wc.wc_flags, wc.invalidated_rkey, r->rkey, wc.byte_len);
}

static void prepare_send_inv_frmr(struct h_pair *p, struct revoked *r)
{
	struct frmr *f = &revoked_frmr;
	struct xr_wc wc;

	frmr_alloc(p, RSP, f);
	CHECK(frmr_map(f) == 2, "map");
	reg_mr(p, RSP, f->mr, remote_all, XR_WC_SUCCESS);
	r->rkey = f->mr->rkey;
	post_target_recv(p);
	send_inv(p, f->mr->rkey, 9);
	h_settle(p);
	h_expect_wc(p->side[REQ].scq, "SEND_WITH_INV of an FRMR", 9, XR_WC_SUCCESS, XR_WC_SEND);
	wc = h_poll_one(p->side[RSP].rcq, "receive");
	CHECK((wc.wc_flags & XR_WC_WITH_INV) && wc.invalidated_rkey == r->rkey,
	      "receive names the invalidated FRMR key");
	r->tgt = h_buf(p, RSP, 8, 0, 0);
	free(r->tgt->base);
	r->tgt->base = f->pages[0];
	r->tgt->len = PAGE;
	r->addr = FRMR_IOVA;
}

static void test_send_inv_frmr_revoked(void)
{
	for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++) {
		struct h_pair p;
		struct revoked r = {0};

		setup(&p, 70 + i);
		prepare_send_inv_frmr(&p, &r);
		run_op(&p, "key invalidated by SEND_WITH_INV", all_ops[i], r.tgt, r.addr, r.rkey,
		       all_ops[i] == XR_WR_RDMA_READ || all_ops[i] == XR_WR_RDMA_WRITE ? 64 : 8,
		       XR_WC_REM_ACCESS_ERR);
		r.tgt->base = malloc(8);
		r.tgt->len = 8;
		frmr_free(&revoked_frmr);
		destroy(&p);
	}
}

/* A key SEND with invalidate may not invalidate: both ends fail, with the spec's NAK. */
static void expect_bad_send_inv(const char *what, int which)
{
	struct h_pair p;
	struct h_buf *tgt;
	struct xr_mw *mw = NULL;
	uint32_t key;
	struct xr_wc wc;

	setup(&p, 80 + which);
	tgt = h_buf(&p, RSP, PAGE, bindable, FILL);
	if (which == 0) {
		mw = alloc_mw(&p, RSP, XR_MW_TYPE_1);
		bind1(&p, RSP, mw,
		      bind_info(tgt->mr, (uintptr_t)tgt->base, 64, XR_ACCESS_REMOTE_READ),
		      XR_WC_SUCCESS);
		key = mw->rkey;
	} else if (which == 1) {
		key = tgt->mr->rkey; /* registered, not fast-registered */
	} else {
		key = tgt->mr->rkey ^ 0x80; /* a stale key byte */
	}
	post_target_recv(&p);
	send_inv(&p, key, 10);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, what, 10, XR_WC_REM_INV_REQ_ERR, XR_WC_SEND);
	wc = h_poll_one(p.side[RSP].rcq, what);
	CHECK(wc.wr_id == 77 && wc.status == XR_WC_REM_INV_REQ_ERR,
	      "%s: target's receive completes with %s", what, xr_wc_status_str(wc.status));
	CHECK(p.side[REQ].qp->pub.state == XR_QPS_ERR && p.side[RSP].qp->pub.state == XR_QPS_ERR,
	      "%s: both QPs in ERR", what);
	CHECK(p.side[RSP].qp->cnt.inv_req_naks_tx == 1, "%s: one invalid request NAK", what);
	if (mw)
		dealloc_mw(mw);
	destroy(&p);
}

static void test_send_with_invalidate(void)
{
	expect_revoked("type 2 window after SEND_WITH_INV", prepare_send_inv_window);
	test_send_inv_frmr_revoked();
	expect_bad_send_inv("SEND_WITH_INV of a type 1 window", 0);
	expect_bad_send_inv("SEND_WITH_INV of a registered MR", 1);
	expect_bad_send_inv("SEND_WITH_INV of a stale key", 2);
}

static void test_read_with_invalidate(void)
{
	struct h_pair p;
	struct h_buf *src;
	struct frmr f;
	struct xr_sge sge;
	struct xr_send_wr wr = {.wr_id = 11,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_RDMA_READ_WITH_INV,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;

	setup(&p, 6);
	src = h_buf(&p, RSP, 2 * PAGE, remote_all, 0);
	h_fill(src->base, 2 * PAGE, 4);
	frmr_alloc(&p, REQ, &f);
	CHECK(frmr_map(&f) == 2, "map");
	reg_mr(&p, REQ, f.mr, XR_ACCESS_LOCAL_WRITE, XR_WC_SUCCESS);
	/* Into the local FRMR, across its page boundary, invalidating it when done. */
	sge = (struct xr_sge){.addr = FRMR_IOVA + 100, .length = 5000, .lkey = f.mr->lkey};
	wr.wr.rdma.remote_addr = (uintptr_t)src->base;
	wr.wr.rdma.rkey = src->mr->rkey;
	wr.invalidate_rkey = f.mr->lkey;
	CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post READ_WITH_INV");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ_WITH_INV", 11, XR_WC_SUCCESS, XR_WC_RDMA_READ);
	CHECK(h_first_mismatch(f.pages[0] + 100, PAGE - 100, 4) < 0 &&
		  !memcmp(f.pages[1], src->base + PAGE - 100, 5000 - (PAGE - 100)),
	      "READ landed in both pages");
	/* The lkey is gone: using it locally fails. */
	wr.wr_id = 12;
	wr.opcode = XR_WR_RDMA_READ;
	CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post READ with the dead lkey");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "READ into an invalidated MR", 12, XR_WC_LOC_PROT_ERR,
		    XR_WC_RDMA_READ);
	frmr_free(&f);
	destroy(&p);
}

/* ---- ordering --------------------------------------------------------------- */

/*
 * WRITE from a fast-registered source, LOCAL_INV of that source posted right
 * behind it, over a link that loses the WRITE's first transmission: the
 * invalidation waits until the WRITE completed (its retransmission reads the
 * source again), then the next WRITE from the source fails locally.
 */
static void test_local_inv_waits_for_write(void)
{
	struct xr_mem_impair lose_all = {.loss = 1.0};
	struct h_pair p;
	struct h_buf *tgt;
	struct frmr f;
	struct xr_sge sge;
	struct xr_send_wr wr = {.sg_list = &sge, .num_sge = 1, .send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr inv = {.wr_id = 21, .opcode = XR_WR_LOCAL_INV};
	struct xr_send_wr *bad = NULL;

	setup(&p, 7);
	tgt = h_buf(&p, RSP, 2 * PAGE, remote_all, FILL);
	frmr_alloc(&p, REQ, &f);
	CHECK(frmr_map(&f) == 2, "map");
	reg_mr(&p, REQ, f.mr, XR_ACCESS_LOCAL_WRITE, XR_WC_SUCCESS);
	h_fill(f.pages[0], PAGE, 5);
	h_fill(f.pages[1], PAGE, 6);
	sge = (struct xr_sge){.addr = FRMR_IOVA, .length = 2 * PAGE, .lkey = f.mr->lkey};
	wr.wr_id = 20;
	wr.opcode = XR_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)tgt->base;
	wr.wr.rdma.rkey = tgt->mr->rkey;
	inv.invalidate_rkey = f.mr->lkey;
	wr.next = &inv;
	xr_mem_link_set_impair(&p.link, REQ, &lose_all);
	CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post WRITE + LOCAL_INV");
	/* The first transmission goes nowhere; the invalidation must not have run. */
	h_run(&p, p.now + 1000000, NULL, NULL);
	CHECK(xr_core_mr_lookup(p.side[REQ].core, f.mr->lkey), "LOCAL_INV waited for the WRITE");
	xr_mem_link_set_impair(&p.link, REQ, NULL);
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "WRITE", 20, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
	h_expect_wc(p.side[REQ].scq, "LOCAL_INV", 21, XR_WC_SUCCESS, XR_WC_LOCAL_INV);
	CHECK(p.side[REQ].qp->cnt.retransmits > 0, "the WRITE was retransmitted");
	CHECK(h_first_mismatch(tgt->base, PAGE, 5) < 0 &&
		  h_first_mismatch(tgt->base + PAGE, PAGE, 6) < 0,
	      "the retransmitted WRITE landed whole");
	wr.wr_id = 22;
	wr.next = NULL;
	CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post WRITE from the dead lkey");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "WRITE after LOCAL_INV", 22, XR_WC_LOC_PROT_ERR,
		    XR_WC_RDMA_WRITE);
	frmr_free(&f);
	destroy(&p);
}

/*
 * A WRITE whose first transmission is lost; meanwhile the target
 * invalidates the window it writes through. The retransmission, arriving
 * after the invalidation, is refused and moves no byte.
 */
static void test_late_retransmission_refused(void)
{
	struct xr_mem_impair lose_all = {.loss = 1.0};
	struct h_pair p;
	struct h_buf *tgt, *local;
	struct xr_mw *mw;
	uint64_t retransmits;

	setup(&p, 8);
	tgt = h_buf(&p, RSP, PAGE, bindable, FILL);
	local = h_buf(&p, REQ, PAGE, XR_ACCESS_LOCAL_WRITE, 0x77);
	mw = alloc_mw(&p, RSP, XR_MW_TYPE_2);
	bind2(&p, RSP, mw, bind_info(tgt->mr, (uintptr_t)tgt->base, PAGE, XR_ACCESS_REMOTE_WRITE),
	      XR_WC_SUCCESS);
	xr_mem_link_set_impair(&p.link, REQ, &lose_all);
	CHECK(post_remote(&p, 30, XR_WR_RDMA_WRITE, local, (uintptr_t)tgt->base, mw->rkey, PAGE) ==
		  0,
	      "post WRITE");
	h_run(&p, p.now + 1000000, NULL, NULL);
	retransmits = p.side[REQ].qp->cnt.retransmits;
	xr_mem_link_set_impair(&p.link, REQ, NULL);
	/* The target revokes the window before the retransmission timer fires. */
	local_inv(&p, RSP, mw->rkey, XR_WC_SUCCESS);
	h_expect_wc(p.side[REQ].scq, "late WRITE", 30, XR_WC_REM_ACCESS_ERR, XR_WC_RDMA_WRITE);
	CHECK(p.side[REQ].qp->cnt.retransmits > retransmits, "the WRITE came again, late");
	CHECK(h_first_not(tgt->base, PAGE, FILL) < 0, "the late WRITE moved no byte");
	dealloc_mw(mw);
	destroy(&p);
}

/* ---- lossy interleaving ------------------------------------------------------- */

/*
 * Over loss, duplication, reordering and corruption both ways: rounds of
 * (target binds a type 2 window at a new place; initiator WRITEs through it
 * and READs back; target invalidates it), and on the initiator's side, in
 * one send queue, WRITEs from a fast-registered source interleaved with
 * LOCAL_INV and REG_MR of that source under a new key. Every round's bytes
 * are exact and every key change keeps its place in the queue.
 */
static void test_lossy_interleaving(void)
{
	struct xr_mem_impair imp = {
	    .loss = 0.08, .duplicate = 0.05, .reorder = 0.05, .reorder_window = 4, .corrupt = 0.02};
	enum { ROUNDS = 24, CHUNK = 5000 }; /* a CHUNK spans both source pages */
	struct h_pair p;
	struct h_buf *tgt, *back;
	struct xr_mw *mw;
	struct frmr f;

	setup(&p, 9);
	xr_mem_link_set_impair(&p.link, REQ, &imp);
	xr_mem_link_set_impair(&p.link, RSP, &imp);
	tgt = h_buf(&p, RSP, ROUNDS * CHUNK, bindable, 0);
	back = h_buf(&p, REQ, CHUNK, XR_ACCESS_LOCAL_WRITE, 0);
	mw = alloc_mw(&p, RSP, XR_MW_TYPE_2);
	frmr_alloc(&p, REQ, &f);
	CHECK(frmr_map(&f) == 2, "map");
	for (int r = 0; r < ROUNDS && !h_failures; r++) {
		uint64_t at = (uintptr_t)tgt->base + (uint64_t)r * CHUNK;
		struct xr_sge sge = {.addr = FRMR_IOVA + 17, .length = CHUNK};
		struct xr_send_wr reg = {.wr_id = 100, .opcode = XR_WR_REG_MR};
		struct xr_send_wr write = {
		    .wr_id = 101, .sg_list = &sge, .num_sge = 1, .opcode = XR_WR_RDMA_WRITE};
		struct xr_send_wr inv = {.wr_id = 102, .opcode = XR_WR_LOCAL_INV};
		struct xr_send_wr *bad = NULL;
		struct xr_sge rs = h_sge(back, 0, CHUNK);
		struct xr_send_wr read = {.wr_id = 103,
					  .sg_list = &rs,
					  .num_sge = 1,
					  .opcode = XR_WR_RDMA_READ,
					  .send_flags = XR_SEND_SIGNALED};

		bind2(&p, RSP, mw,
		      bind_info(tgt->mr, at, CHUNK, XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ),
		      XR_WC_SUCCESS);
		/* Source: a new key for every round, filled with the round's pattern. */
		xr_update_fast_reg_key(f.mr, (uint8_t)(f.mr->rkey + 1));
		h_fill(f.pages[0] + 17, PAGE - 17, (uint64_t)r * 2);
		h_fill(f.pages[1], CHUNK - (PAGE - 17), (uint64_t)r * 2 + 1);
		reg.reg.mr = f.mr;
		reg.reg.key = f.mr->rkey;
		reg.reg.access = XR_ACCESS_LOCAL_WRITE;
		sge.lkey = f.mr->lkey;
		write.wr.rdma.remote_addr = at;
		write.wr.rdma.rkey = mw->rkey;
		inv.invalidate_rkey = f.mr->lkey;
		read.wr.rdma.remote_addr = at;
		read.wr.rdma.rkey = mw->rkey;
		reg.next = &write;
		write.next = &inv;
		inv.next = &read;
		CHECK(xr_core_post_send(p.side[REQ].qp, &reg, &bad) == 0, "round %d: post", r);
		h_settle(&p);
		/* Every queued WR completes, in queue order (sq_sig_all). */
		h_expect_wc(p.side[REQ].scq, "REG_MR", 100, XR_WC_SUCCESS, XR_WC_REG_MR);
		h_expect_wc(p.side[REQ].scq, "WRITE", 101, XR_WC_SUCCESS, XR_WC_RDMA_WRITE);
		h_expect_wc(p.side[REQ].scq, "LOCAL_INV", 102, XR_WC_SUCCESS, XR_WC_LOCAL_INV);
		h_expect_wc(p.side[REQ].scq, "READ back", 103, XR_WC_SUCCESS, XR_WC_RDMA_READ);
		CHECK(h_first_mismatch(tgt->base + (size_t)r * CHUNK, PAGE - 17, (uint64_t)r * 2) <
			      0 &&
			  h_first_mismatch(tgt->base + (size_t)r * CHUNK + PAGE - 17,
					   CHUNK - (PAGE - 17), (uint64_t)r * 2 + 1) < 0,
		      "round %d: WRITE content", r);
		CHECK(!memcmp(back->base, tgt->base + (size_t)r * CHUNK, CHUNK),
		      "round %d: READ content", r);
		local_inv(&p, RSP, mw->rkey, XR_WC_SUCCESS);
	}
	CHECK(p.side[REQ].qp->pub.state == XR_QPS_RTS && p.side[RSP].qp->pub.state == XR_QPS_RTS,
	      "both QPs still in RTS");
	CHECK(xr_mem_link_counters(&p.link, REQ)->dropped > 0, "the link did lose frames");
	dealloc_mw(mw);
	frmr_free(&f);
	destroy(&p);
}

static void test_rebind_revokes(void)
{
	expect_revoked("rebound type 1 window", prepare_rebound);
	expect_revoked("unbound type 1 window", prepare_unbound);
}

static void test_type2_invalidate_revokes(void)
{
	expect_revoked("type 2 window after LOCAL_INV", prepare_type2_invalidated);
}

int main(void)
{
	h_group("keys: random index and key byte, xr_inc_rkey", test_keys);
	h_group("type 1 window: WRITE, READ, FAA, CAS inside; dereg EBUSY", test_type1_window);
	h_group("window bounds: one byte outside either side fails; READ-only window",
		test_window_bounds_and_rights);
	h_group("type 1 rebind and unbind: the old rkey fails for WRITE, READ, CAS, FAA",
		test_rebind_revokes);
	h_group("type 2 window: bound by WR, used, rebinding while bound is a bind error",
		test_type2_window);
	h_group("type 2 LOCAL_INV: the old rkey fails for WRITE, READ, CAS, FAA",
		test_type2_invalidate_revokes);
	h_group("bind rules: MW_BIND right, inside the MR, write needs local write",
		test_bind_rules);
	h_group("fast registration: two pages at an iova, WRITE/READ across them, re-register "
		"needs invalidate",
		test_fast_registration);
	h_group("re-registered FRMR: the old key fails for WRITE, READ, CAS, FAA",
		test_frmr_revoked);
	h_group("SEND with invalidate: window and FRMR revoked; bad keys fail at both ends",
		test_send_with_invalidate);
	h_group("READ with invalidate: data lands, then the local key is gone",
		test_read_with_invalidate);
	h_group("LOCAL_INV waits for the WRITE before it, retransmission included",
		test_local_inv_waits_for_write);
	h_group("a retransmission arriving after its window was invalidated moves no byte",
		test_late_retransmission_refused);
	h_group("binds, invalidations and re-registrations interleaved with traffic over loss",
		test_lossy_interleaving);
	return h_exit_status();
}
