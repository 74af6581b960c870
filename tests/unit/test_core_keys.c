/* SPDX-License-Identifier: MIT */
/*
 * Identifiers a peer must not guess, through two transport cores on the
 * in-memory link: an MR's lkey and rkey differ and each works only where it
 * belongs (the rkey from the peer, the lkey in local SGEs); SEND_WITH_INV
 * takes the rkey only, LOCAL_INV either key; a fast registration still
 * changes the key byte of both; the random bits differ between cores and
 * between initialisations; a zeroed key names nothing. QPNs start at random,
 * are not reused after a destroy, cycle through the 24-bit space skipping
 * the reserved numbers, and a frame for a QPN that only shares a QP's slot
 * reaches no QP.
 */
#include "core_harness.h"

#define REQ 0
#define RSP 1
#define LEN 256
#define FILL 0x5a
#define PAGE 4096
#define KEY_RANDOM_BITS 0x000fff00u
#define QPN_LAST 0xfffffeu

static void setup(struct h_pair *p, uint64_t seed)
{
	struct h_qp_opts o = h_default_opts();

	o.rd_atomic = 4;
	h_setup(p, seed, 1024, &o);
	h_allow_atomics(p);
}

static struct xr_send_wr remote_wr(enum xr_wr_opcode op, struct xr_sge *sge, uint64_t raddr,
				   uint32_t rkey)
{
	struct xr_send_wr wr = {
	    .wr_id = 1, .sg_list = sge, .num_sge = 1, .opcode = op, .send_flags = XR_SEND_SIGNALED};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* One WRITE or READ of LEN bytes from REQ into RSP's tgt with rkey, settled. */
static struct xr_wc remote_op(struct h_pair *p, enum xr_wr_opcode op, struct h_buf *local,
			      struct h_buf *tgt, uint32_t rkey)
{
	struct xr_sge sge = h_sge(local, 0, LEN);
	struct xr_send_wr wr = remote_wr(op, &sge, (uintptr_t)tgt->base, rkey), *bad = NULL;

	CHECK(xr_core_post_send(p->side[REQ].qp, &wr, &bad) == 0, "post op %d", op);
	h_settle(p);
	return h_poll_one(p->side[REQ].scq, "remote op");
}

static void test_lkey_is_not_rkey(void)
{
	struct h_pair p;
	struct h_buf *b;

	setup(&p, 1);
	for (int i = 0; i < 32; i++) {
		b = h_buf(&p, RSP, 64, H_REMOTE_ALL, 0);
		CHECK(b->mr->lkey != b->mr->rkey, "lkey %#x = rkey", b->mr->lkey);
		CHECK((b->mr->lkey ^ b->mr->rkey) & KEY_RANDOM_BITS,
		      "lkey %#x and rkey %#x differ in their random bits", b->mr->lkey,
		      b->mr->rkey);
		CHECK((b->mr->lkey & 0xff) == (b->mr->rkey & 0xff),
		      "lkey %#x and rkey %#x share the key byte", b->mr->lkey, b->mr->rkey);
	}
	h_pair_destroy(&p);
}

static void test_remote_takes_rkey_only(void)
{
	static const enum xr_wr_opcode ops[] = {XR_WR_RDMA_WRITE, XR_WR_RDMA_READ};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct h_pair p;
		struct h_buf *local, *tgt;
		struct xr_wc wc;

		setup(&p, 10 + i);
		local = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x11);
		tgt = h_buf(&p, RSP, LEN, H_REMOTE_ALL, FILL);
		wc = remote_op(&p, ops[i], local, tgt, tgt->mr->lkey);
		CHECK(wc.status == XR_WC_REM_ACCESS_ERR, "op %d with the lkey as rkey: %s", ops[i],
		      xr_wc_status_str(wc.status));
		CHECK(h_first_not(tgt->base, LEN, FILL) < 0 &&
			  h_first_not(local->base, LEN, 0x11) < 0,
		      "op %d with the lkey moved bytes", ops[i]);
		h_pair_destroy(&p);

		setup(&p, 20 + i);
		local = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x11);
		tgt = h_buf(&p, RSP, LEN, H_REMOTE_ALL, FILL);
		wc = remote_op(&p, ops[i], local, tgt, tgt->mr->rkey);
		CHECK(wc.status == XR_WC_SUCCESS, "op %d with the rkey: %s", ops[i],
		      xr_wc_status_str(wc.status));
		h_pair_destroy(&p);
	}
}

static void test_local_takes_lkey_only(void)
{
	struct h_pair p;
	struct h_buf *b;
	struct xr_sge sge;

	setup(&p, 30);
	b = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(b, 0, LEN);
	CHECK(xr_core_check_sge(p.side[REQ].core, p.side[REQ].pd, &sge, XR_ACCESS_LOCAL_WRITE) ==
		  XR_WC_SUCCESS,
	      "an SGE with the lkey");
	sge.lkey = b->mr->rkey;
	CHECK(xr_core_check_sge(p.side[REQ].core, p.side[REQ].pd, &sge, 0) == XR_WC_LOC_PROT_ERR,
	      "an SGE with the rkey is refused");
	/* Posted, it fails locally and nothing reaches the peer. */
	CHECK(h_post_send(&p, REQ, 5, &sge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0, "post SEND");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "SEND with the rkey as lkey", 5, XR_WC_LOC_PROT_ERR,
		    XR_WC_SEND);
	h_pair_destroy(&p);
}

static void test_zero_key(void)
{
	struct h_pair p;

	setup(&p, 40);
	h_buf(&p, RSP, LEN, H_REMOTE_ALL, 0);
	CHECK(!xr_core_mr_lookup(p.side[RSP].core, 0), "lkey 0 names an MR");
	CHECK(!xr_core_resolve_rkey(p.side[RSP].qp, 0, 0, 0, XR_ACCESS_REMOTE_READ),
	      "rkey 0 names an MR");
	CHECK(!xr_core_key_obj(p.side[RSP].core, 0, XR_KEY_MR) &&
		  !xr_core_key_obj(p.side[RSP].core, 0, XR_KEY_MW),
	      "key 0 names an object");
	h_pair_destroy(&p);
}

/* Keys of the first MRs of two cores initialised as a device is (getrandom), not as tests are. */
static void first_keys(struct xr_core *core, uint32_t *lkey, uint32_t *rkey)
{
	struct xr_pd *pd = xr_core_alloc_pd(core);
	struct xr_mr *mr;
	uint8_t buf[16];
	int err;

	mr = pd ? xr_core_reg_mr(pd, buf, sizeof(buf), 0, &err) : NULL;
	CHECK(mr, "reg_mr on a fresh core");
	*lkey = mr ? mr->lkey : 0;
	*rkey = mr ? mr->rkey : 0;
	if (mr)
		xr_core_dereg_mr(mr);
	if (pd)
		xr_core_dealloc_pd(pd);
}

static void test_random_between_inits(void)
{
	static struct xr_core cores[2];
	struct xr_core_port port = {0};
	uint32_t lkey[2], rkey[2];
	struct h_pair a, b;
	int same = 0;

	for (int i = 0; i < 2; i++) {
		xr_core_init(&cores[i], &port);
		first_keys(&cores[i], &lkey[i], &rkey[i]);
	}
	CHECK(cores[0].rng != cores[1].rng, "two initialisations seed the same");
	CHECK(lkey[0] != lkey[1] && rkey[0] != rkey[1], "first keys %#x/%#x and %#x/%#x", lkey[0],
	      rkey[0], lkey[1], rkey[1]);
	/* Cores seeded differently: the random bits differ, not only the index. */
	setup(&a, 50);
	setup(&b, 51);
	for (int i = 0; i < 16; i++) {
		uint32_t ka = h_buf(&a, RSP, 64, H_REMOTE_ALL, 0)->mr->rkey;
		uint32_t kb = h_buf(&b, RSP, 64, H_REMOTE_ALL, 0)->mr->rkey;

		same += (ka & KEY_RANDOM_BITS) == (kb & KEY_RANDOM_BITS);
	}
	CHECK(same < 3, "%d of 16 rkeys of two cores share their random bits", same);
	CHECK(a.side[0].qp->pub.qp_num != b.side[0].qp->pub.qp_num,
	      "two cores seeded differently start at QPN %#x", a.side[0].qp->pub.qp_num);
	h_pair_destroy(&a);
	h_pair_destroy(&b);
}

/* ---- invalidation and fast registration ---------------------------------- */

static int post_local(struct h_pair *p, int s, struct xr_send_wr *wr)
{
	struct xr_send_wr *bad = NULL;

	wr->send_flags |= XR_SEND_SIGNALED;
	return xr_core_post_send(p->side[s].qp, wr, &bad);
}

struct frmr {
	uint8_t *page;
	struct xr_mr *mr;
};

/* A one-page fast-registration MR on side s, registered with key byte key_byte. */
static void frmr_register(struct h_pair *p, int s, struct frmr *f, uint8_t key_byte,
			  uint32_t reg_key_xor, enum xr_wc_status want)
{
	struct xr_send_wr wr = {.wr_id = 903, .opcode = XR_WR_REG_MR};
	struct xr_sge sg;
	int err;

	if (!f->mr) {
		f->page = aligned_alloc(PAGE, PAGE);
		memset(f->page, FILL, PAGE);
		f->mr = xr_core_alloc_mr(p->side[s].pd, 1, &err);
		CHECK(f->mr, "alloc_mr: %s", strerror(-err));
		sg = (struct xr_sge){.addr = (uintptr_t)f->page, .length = PAGE};
		CHECK(xr_core_map_mr_sg(f->mr, &sg, 1, NULL, PAGE) == 1, "map");
	}
	xr_update_fast_reg_key(f->mr, key_byte);
	wr.reg.mr = f->mr;
	wr.reg.key = f->mr->rkey ^ reg_key_xor;
	wr.reg.access = H_REMOTE_ALL;
	CHECK(post_local(p, s, &wr) == 0, "post REG_MR");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "REG_MR", 903, want, XR_WC_REG_MR);
}

static void frmr_free(struct frmr *f)
{
	CHECK(xr_core_dereg_mr(f->mr) == 0, "dereg FRMR");
	free(f->page);
}

static void local_inv(struct h_pair *p, int s, uint32_t key, enum xr_wc_status want)
{
	struct xr_send_wr wr = {.wr_id = 902, .opcode = XR_WR_LOCAL_INV, .invalidate_rkey = key};

	CHECK(post_local(p, s, &wr) == 0, "post LOCAL_INV");
	h_settle(p);
	h_expect_wc(p->side[s].scq, "LOCAL_INV", 902, want, XR_WC_LOCAL_INV);
}

static void test_fast_reg_key_byte(void)
{
	struct h_pair p;
	struct frmr f = {0};
	struct h_buf *local;
	uint32_t old_rkey, old_lkey;
	struct xr_wc wc;

	setup(&p, 60);
	local = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x22);
	frmr_register(&p, RSP, &f, 0x40, 0, XR_WC_SUCCESS);
	CHECK(f.mr->lkey != f.mr->rkey && (f.mr->rkey & 0xff) == 0x40 &&
		  (f.mr->lkey & 0xff) == 0x40,
	      "FRMR keys %#x/%#x after the key byte 0x40", f.mr->lkey, f.mr->rkey);
	/* LOCAL_INV names it by its lkey; the re-registration moves both key bytes. */
	local_inv(&p, RSP, f.mr->lkey, XR_WC_SUCCESS);
	old_rkey = f.mr->rkey;
	old_lkey = f.mr->lkey;
	frmr_register(&p, RSP, &f, 0x41, 0, XR_WC_SUCCESS);
	CHECK(f.mr->rkey == xr_inc_rkey(old_rkey) && f.mr->lkey == xr_inc_rkey(old_lkey),
	      "keys %#x/%#x after re-registering %#x/%#x", f.mr->lkey, f.mr->rkey, old_lkey,
	      old_rkey);
	{
		struct h_buf tgt = {.base = f.page, .len = PAGE, .mr = f.mr};

		wc = remote_op(&p, XR_WR_RDMA_WRITE, local, &tgt, f.mr->rkey);
		CHECK(wc.status == XR_WC_SUCCESS && h_first_not(f.page, LEN, 0x22) < 0,
		      "WRITE with the new rkey: %s", xr_wc_status_str(wc.status));
		/* LOCAL_INV by rkey, and a REG_MR whose key has other random bits is refused. */
		local_inv(&p, RSP, f.mr->rkey, XR_WC_SUCCESS);
		frmr_register(&p, RSP, &f, 0x42, 0x100, XR_WC_LOC_QP_OP_ERR);
	}
	frmr_free(&f);
	h_pair_destroy(&p);

	setup(&p, 61);
	local = h_buf(&p, REQ, LEN, XR_ACCESS_LOCAL_WRITE, 0x22);
	f = (struct frmr){0};
	frmr_register(&p, RSP, &f, 0x50, 0, XR_WC_SUCCESS);
	{
		struct h_buf tgt = {.base = f.page, .len = PAGE, .mr = f.mr};

		wc = remote_op(&p, XR_WR_RDMA_WRITE, local, &tgt, xr_inc_rkey(f.mr->rkey));
		CHECK(wc.status == XR_WC_REM_ACCESS_ERR && h_first_not(f.page, PAGE, FILL) < 0,
		      "WRITE with a stale key byte: %s", xr_wc_status_str(wc.status));
	}
	frmr_free(&f);
	h_pair_destroy(&p);
}

/* SEND_WITH_INV naming the target FRMR by key: its lkey is refused, its rkey works. */
static void send_inv_case(uint64_t seed, bool by_lkey)
{
	struct h_pair p;
	struct frmr f = {0};
	struct h_buf *src, *dst;
	struct xr_sge sge, rsge;
	struct xr_wc wc;

	setup(&p, seed);
	frmr_register(&p, RSP, &f, 0x10, 0, XR_WC_SUCCESS);
	dst = h_buf(&p, RSP, 128, XR_ACCESS_LOCAL_WRITE, 0);
	rsge = h_sge(dst, 0, 128);
	CHECK(h_post_recv(&p, RSP, 77, &rsge, 1) == 0, "post receive");
	src = h_buf(&p, REQ, 100, XR_ACCESS_LOCAL_WRITE, 0x33);
	sge = h_sge(src, 0, 100);
	{
		struct xr_send_wr wr = {.wr_id = 8,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = XR_WR_SEND_WITH_INV,
					.send_flags = XR_SEND_SIGNALED,
					.invalidate_rkey = by_lkey ? f.mr->lkey : f.mr->rkey};
		struct xr_send_wr *bad = NULL;

		CHECK(xr_core_post_send(p.side[REQ].qp, &wr, &bad) == 0, "post SEND_WITH_INV");
	}
	h_settle(&p);
	wc = h_poll_one(p.side[RSP].rcq, "receive");
	if (by_lkey) {
		CHECK(wc.status == XR_WC_REM_INV_REQ_ERR, "SEND_WITH_INV by lkey: receive %s",
		      xr_wc_status_str(wc.status));
		CHECK(xr_core_resolve_rkey(p.side[RSP].qp, f.mr->rkey, (uintptr_t)f.page, 8,
					   XR_ACCESS_REMOTE_WRITE),
		      "SEND_WITH_INV by lkey invalidated the FRMR");
	} else {
		CHECK(wc.status == XR_WC_SUCCESS && (wc.wc_flags & XR_WC_WITH_INV) &&
			  wc.invalidated_rkey == f.mr->rkey,
		      "SEND_WITH_INV by rkey: receive %s", xr_wc_status_str(wc.status));
		CHECK(!xr_core_resolve_rkey(p.side[RSP].qp, f.mr->rkey, (uintptr_t)f.page, 8,
					    XR_ACCESS_REMOTE_WRITE),
		      "the FRMR is still valid after SEND_WITH_INV");
	}
	frmr_free(&f);
	h_pair_destroy(&p);
}

static void test_send_with_invalidate(void)
{
	send_inv_case(70, true);
	send_inv_case(71, false);
}

/* ---- QPNs ------------------------------------------------------------------ */

static struct xr_qp_impl *new_qp(struct h_pair *p)
{
	struct xr_qp_init_attr init = {
	    .send_cq = &p->side[0].scq->pub,
	    .recv_cq = &p->side[0].rcq->pub,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1},
	    .qp_type = XR_QPT_RC,
	};
	int err;
	struct xr_qp_impl *qp;

	qp = xr_core_create_qp(p->side[0].pd, &init, &err);
	CHECK(qp || err == -ENOMEM, "create_qp: %s", strerror(-err));
	return qp;
}

static bool qpn_valid(uint32_t qpn)
{
	return qpn >= XR_QPN_BASE && qpn <= QPN_LAST;
}

static void test_qpn_not_reused(void)
{
	struct h_pair p;
	struct xr_qp_impl *qp;
	uint32_t first, prev;

	CHECK(h_pair_init(&p, 80, 64) == 0, "pair");
	qp = new_qp(&p);
	first = qp->pub.qp_num;
	CHECK(qpn_valid(first) && qp->slot == xr_qpn_slot(first), "first QPN %#x, slot %u", first,
	      qp->slot);
	prev = first;
	for (int i = 0; i < 8; i++) {
		xr_core_destroy_qp(qp);
		qp = new_qp(&p);
		CHECK(qp->pub.qp_num != prev, "QPN %#x came back right after its destroy", prev);
		CHECK(qp->pub.qp_num == (prev >= QPN_LAST ? XR_QPN_BASE : prev + 1),
		      "QPN %#x after %#x", qp->pub.qp_num, prev);
		CHECK(qp->slot == xr_qpn_slot(qp->pub.qp_num), "slot %u of QPN %#x", qp->slot,
		      qp->pub.qp_num);
		prev = qp->pub.qp_num;
	}
	xr_core_destroy_qp(qp);
	h_pair_destroy(&p);
}

static void test_qpn_wraps(void)
{
	struct h_pair p;
	struct xr_qp_impl *a, *b, *c, *d;

	CHECK(h_pair_init(&p, 81, 64) == 0, "pair");
	p.side[0].core->last_qpn = QPN_LAST - 1;
	a = new_qp(&p);
	b = new_qp(&p);
	CHECK(a->pub.qp_num == QPN_LAST, "QPN %#x, not the last", a->pub.qp_num);
	/* 0xffffff (multicast) and everything below XR_QPN_BASE are skipped. */
	CHECK(b->pub.qp_num == XR_QPN_BASE, "after the last QPN: %#x", b->pub.qp_num);
	/* A number whose slot is taken is skipped: 0x11 + XR_MAX_QP shares b's slot. */
	p.side[0].core->last_qpn = XR_QPN_BASE + XR_MAX_QP - 1;
	c = new_qp(&p);
	CHECK(c->pub.qp_num == XR_QPN_BASE + XR_MAX_QP + 1, "QPN %#x after a taken slot",
	      c->pub.qp_num);
	/* The cycle goes on from there: it does not go back to the number it skipped. */
	d = new_qp(&p);
	CHECK(d->pub.qp_num == XR_QPN_BASE + XR_MAX_QP + 2, "QPN %#x", d->pub.qp_num);
	xr_core_destroy_qp(a);
	xr_core_destroy_qp(b);
	xr_core_destroy_qp(c);
	xr_core_destroy_qp(d);
	h_pair_destroy(&p);
}

static void test_qpn_all_slots(void)
{
	static struct xr_qp_impl *qps[XR_MAX_QP];
	struct h_pair p;
	struct xr_qp_impl *extra;
	uint32_t freed;
	int n = 0;

	CHECK(h_pair_init(&p, 82, 64) == 0, "pair");
	while (n < XR_MAX_QP && (qps[n] = new_qp(&p)))
		n++;
	CHECK(n == XR_MAX_QP, "%d QPs created, not %d", n, XR_MAX_QP);
	CHECK(!new_qp(&p), "a QP beyond every slot");
	freed = qps[n / 2]->pub.qp_num;
	xr_core_destroy_qp(qps[n / 2]);
	extra = new_qp(&p);
	CHECK(extra && extra->slot == xr_qpn_slot(freed) && extra->pub.qp_num != freed,
	      "the freed slot of QPN %#x gets QPN %#x", freed, extra ? extra->pub.qp_num : 0);
	qps[n / 2] = extra;
	for (int i = 0; i < n; i++)
		if (qps[i])
			xr_core_destroy_qp(qps[i]);
	CHECK(p.side[0].core->qp_slots_used == 0, "slots used after destroying every QP: %u",
	      p.side[0].core->qp_slots_used);
	h_pair_destroy(&p);
}

/* Frames for a QPN sharing the QP's slot but not its number reach no QP. */
static void test_qpn_alias_refused(void)
{
	struct h_pair p;
	struct h_buf *src, *dst;
	struct xr_sge sge, rsge;
	uint64_t unknown;

	setup(&p, 83);
	dst = h_buf(&p, RSP, 128, XR_ACCESS_LOCAL_WRITE, 0);
	rsge = h_sge(dst, 0, 128);
	CHECK(h_post_recv(&p, RSP, 1, &rsge, 1) == 0, "post receive");
	src = h_buf(&p, REQ, 100, XR_ACCESS_LOCAL_WRITE, 0x44);
	sge = h_sge(src, 0, 100);
	p.side[REQ].qp->dest_qpn = (p.side[RSP].qp->pub.qp_num + XR_MAX_QP) & 0xffffff;
	if (!qpn_valid(p.side[REQ].qp->dest_qpn))
		p.side[REQ].qp->dest_qpn = (p.side[RSP].qp->pub.qp_num - XR_MAX_QP) & 0xffffff;
	unknown = p.side[RSP].core->stats.rx_unknown_qp;
	CHECK(h_post_send(&p, REQ, 2, &sge, 1, XR_WR_SEND, XR_SEND_SIGNALED, 0) == 0, "post SEND");
	h_run(&p, p.now + 1000000, NULL, NULL);
	CHECK(p.side[RSP].core->stats.rx_unknown_qp > unknown, "no frame counted as unknown QP");
	h_expect_no_wc(p.side[RSP].rcq, "receive through an alias QPN");
	CHECK(h_first_not(dst->base, 128, 0) < 0, "bytes landed through an alias QPN");
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("MR keys: lkey and rkey differ in their random bits, share the key byte",
		test_lkey_is_not_rkey);
	h_group("WRITE and READ with the lkey as rkey fail and move nothing; the rkey works",
		test_remote_takes_rkey_only);
	h_group("a local SGE with the rkey as lkey fails", test_local_takes_lkey_only);
	h_group("a zeroed key names nothing", test_zero_key);
	h_group("random bits and first QPN differ between cores and initialisations",
		test_random_between_inits);
	h_group("fast registration: key byte of both keys, LOCAL_INV by either key, bad key "
		"refused",
		test_fast_reg_key_byte);
	h_group("SEND_WITH_INV takes the rkey, not the lkey", test_send_with_invalidate);
	h_group("QPNs: random start, next one after a destroy, not the same", test_qpn_not_reused);
	h_group("QPNs wrap at 2^24 skipping 0xffffff and those below XR_QPN_BASE, skip taken "
		"slots",
		test_qpn_wraps);
	h_group("QPNs: every slot, then ENOMEM; a freed slot gets a new QPN", test_qpn_all_slots);
	h_group("a frame for a QPN that shares a QP's slot reaches no QP", test_qpn_alias_refused);
	return h_exit_status();
}
