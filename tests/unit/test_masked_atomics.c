/* SPDX-License-Identifier: MIT */
/*
 * Masked compare-and-swap and fetch-and-add: the library's result functions
 * against a bit-by-bit reference model on random cases, then the operations
 * end to end through two cores (wire encoding, execution, the returned
 * original value), and a peer without the extension answering NAK invalid
 * request.
 */
#include "core_harness.h"

#define REQ 0
#define RSP 1
#define CASES 10000

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Random masks with structure: sparse, dense, and byte-aligned fields. */
static uint64_t rnd_mask(void)
{
	switch (rnd() % 4) {
	case 0:
		return rnd() & rnd() & rnd();
	case 1:
		return rnd() | rnd();
	case 2:
		return 0x8080808080808080ull >> (rnd() % 8);
	default:
		return rnd();
	}
}

/* Reference: one bit at a time, carry cleared after each field's top bit. */
static uint64_t ref_faa(uint64_t old, uint64_t add, uint64_t boundary)
{
	uint64_t out = 0, carry = 0;

	for (int i = 0; i < 64; i++) {
		uint64_t s = ((old >> i) & 1) + ((add >> i) & 1) + carry;

		out |= (s & 1) << i;
		carry = (boundary >> i) & 1 ? 0 : s >> 1;
	}
	return out;
}

static uint64_t ref_cas(uint64_t old, uint64_t cmp, uint64_t cmp_mask, uint64_t swap,
			uint64_t swap_mask)
{
	for (int i = 0; i < 64; i++)
		if (((cmp_mask >> i) & 1) && ((cmp >> i) & 1) != ((old >> i) & 1))
			return old;
	uint64_t out = old;
	for (int i = 0; i < 64; i++)
		if ((swap_mask >> i) & 1)
			out = (out & ~(1ull << i)) | (swap & (1ull << i));
	return out;
}

static void test_reference_model(void)
{
	int hits = 0;

	for (int i = 0; i < CASES; i++) {
		uint64_t old = rnd(), add = rnd(), b = rnd_mask();
		uint64_t cm = rnd_mask(), sw = rnd(), sm = rnd_mask();
		/* Half the compares agree with old wherever the mask looks. */
		uint64_t cmp = (rnd() % 2) ? (old & cm) | (rnd() & ~cm) : rnd();
		uint64_t got = xr_masked_faa_result(old, add, b), want = ref_faa(old, add, b);

		CHECK(got == want,
		      "FAA old %016" PRIx64 " add %016" PRIx64 " mask %016" PRIx64 ": %016" PRIx64
		      " want %016" PRIx64,
		      old, add, b, got, want);
		got = xr_masked_cas_result(old, cmp, cm, sw, sm);
		want = ref_cas(old, cmp, cm, sw, sm);
		hits += want != old;
		CHECK(got == want, "CAS old %016" PRIx64 ": %016" PRIx64 " want %016" PRIx64, old,
		      got, want);
	}
	/* Plain FAA and CAS are the all-ones / no-boundary special cases. */
	CHECK(xr_masked_faa_result(~0ull, 1, 0) == 0, "no boundary: a plain 64-bit add");
	CHECK(xr_masked_faa_result(0x00ff00ff, 0x00010001, 0x80008000) == 0x01000100,
	      "16-bit fields add separately");
	CHECK(xr_masked_faa_result(0x0000ffff0000ffffull, 0x0000000100000001ull,
				   0x8000800080008000ull) == 0,
	      "16-bit fields wrap without carrying into the next");
	CHECK(hits > CASES / 10, "only %d of %d CAS cases swapped: the generator is too narrow",
	      hits, CASES);
}

static int post_masked(struct h_pair *p, uint64_t wr_id, struct xr_sge *sge, enum xr_wr_opcode op,
		       uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		       uint64_t compare_add_mask, uint64_t swap, uint64_t swap_mask)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr *bad = NULL;

	wr.wr.masked_atomic.remote_addr = raddr;
	wr.wr.masked_atomic.rkey = rkey;
	wr.wr.masked_atomic.compare_add = compare_add;
	wr.wr.masked_atomic.compare_add_mask = compare_add_mask;
	wr.wr.masked_atomic.swap = swap;
	wr.wr.masked_atomic.swap_mask = swap_mask;
	return xr_core_post_send(p->side[REQ].qp, &wr, &bad);
}

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

static void connect_with_atomics(struct h_pair *p, uint64_t seed)
{
	struct h_qp_opts o = h_default_opts();
	struct xr_qp_attr a = {.qp_state = XR_QPS_RTS, .qp_access_flags = remote_all};

	h_setup(p, seed, 1024, &o);
	for (int s = 0; s < 2; s++)
		CHECK(xr_core_modify_qp(p->side[s].qp, &a, XR_QP_STATE | XR_QP_ACCESS_FLAGS,
					NULL) == 0,
		      "RTS->RTS with remote atomic access");
}

static void test_through_cores(void)
{
	struct h_pair p;
	struct h_buf *target, *res;
	struct xr_sge sge;

	connect_with_atomics(&p, 21);
	target = h_buf(&p, RSP, 8, remote_all, 0);
	res = h_buf(&p, REQ, 8, XR_ACCESS_LOCAL_WRITE, 0);
	sge = h_sge(res, 0, 8);
	for (int i = 0; i < 500; i++) {
		uint64_t old = rnd(), a = rnd(), b = rnd_mask(), sw = rnd(), sm = rnd_mask();
		uint64_t cm = rnd_mask(), cmp = (i % 2) ? (old & cm) | (rnd() & ~cm) : rnd(), got,
			 now;
		bool cas = i % 3 != 0;
		struct xr_wc wc;

		memcpy(target->base, &old, 8);
		CHECK(post_masked(&p, (uint64_t)i, &sge,
				  cas ? XR_WR_MASKED_ATOMIC_CMP_AND_SWP
				      : XR_WR_MASKED_ATOMIC_FETCH_AND_ADD,
				  (uintptr_t)target->base, target->mr->rkey, cas ? cmp : a,
				  cas ? cm : b, sw, sm) == 0,
		      "post masked atomic");
		h_settle(&p);
		wc = h_poll_one(p.side[REQ].scq, "masked atomic");
		CHECK(wc.status == XR_WC_SUCCESS &&
			  wc.opcode == (cas ? XR_WC_MASKED_COMP_SWAP : XR_WC_MASKED_FETCH_ADD),
		      "case %d: %s opcode %d", i, xr_wc_status_str(wc.status), wc.opcode);
		memcpy(&got, res->base, 8);
		memcpy(&now, target->base, 8);
		CHECK(got == old, "case %d: returned %016" PRIx64 ", original %016" PRIx64, i, got,
		      old);
		CHECK(now == (cas ? ref_cas(old, cmp, cm, sw, sm) : ref_faa(old, a, b)),
		      "case %d: target %016" PRIx64, i, now);
	}
	h_pair_destroy(&p);
}

static void test_peer_without_extension(void)
{
	struct h_pair p;
	struct h_buf *target, *res;
	struct xr_sge sge;
	uint64_t v = 42;

	connect_with_atomics(&p, 22);
	p.side[RSP].core->caps &= ~(uint64_t)XR_DEVICE_MASKED_ATOMICS;
	target = h_buf(&p, RSP, 8, remote_all, 0);
	res = h_buf(&p, REQ, 8, XR_ACCESS_LOCAL_WRITE, 0);
	memcpy(target->base, &v, 8);
	sge = h_sge(res, 0, 8);
	CHECK(post_masked(&p, 7, &sge, XR_WR_MASKED_ATOMIC_FETCH_AND_ADD, (uintptr_t)target->base,
			  target->mr->rkey, 1, 0, 0, 0) == 0,
	      "post");
	h_settle(&p);
	h_expect_wc(p.side[REQ].scq, "masked FAA to a peer without it", 7, XR_WC_REM_INV_REQ_ERR,
		    XR_WC_MASKED_FETCH_ADD);
	memcpy(&v, target->base, 8);
	CHECK(v == 42, "the target changed to %" PRIu64, v);
	h_pair_destroy(&p);
}

int main(void)
{
	h_group("masked CAS/FAA result functions vs bit-serial model, 10000 cases",
		test_reference_model);
	h_group("masked CAS/FAA through two cores, 500 cases", test_through_cores);
	h_group("peer without the extension: NAK invalid request, target unchanged",
		test_peer_without_extension);
	return h_exit_status();
}
