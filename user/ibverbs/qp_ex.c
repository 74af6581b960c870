/* SPDX-License-Identifier: MIT */
/*
 * Extended QPs (ibv_create_qp_ex) and the ibv_wr_* interface. Between
 * ibv_wr_start and ibv_wr_complete the builders and setters collect xr_
 * work requests here; ibv_wr_complete posts them all or none
 * (xr_post_send_all_or_none), ibv_wr_abort drops them. The builders return
 * nothing, so the first error is kept and ibv_wr_complete returns it, with
 * nothing posted; errno values as rdma-core's rxe provider (ENOSPC for too
 * many SGEs or too much inline data, EOPNOTSUPP for an operation the QP was
 * not created for). A builder or setter outside ibv_wr_start..complete has
 * no request to fail and does nothing; ibv_wr_complete there returns EINVAL.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* What ibv_create_qp_ex accepts; no XRC, TSO, RSS, thread domains or creation flags. */
#define XV_QP_INIT_ATTR_MASK                                                                       \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/* The operations each transport carries. */
#define XV_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define XV_UC_SEND_OPS                                                                             \
	(XV_UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define XV_RC_SEND_OPS                                                                             \
	(XV_UC_SEND_OPS | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |           \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |                          \
	 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW)

/* A collected work request; its SGEs (or inline bytes) live in the batch's arrays. */
struct xv_pending_wr {
	struct xr_send_wr wr;
	uint32_t first_sge; /* index into sge[] */
};

struct xv_wr_batch {
	pthread_mutex_t lock; /* held from ibv_wr_start to ibv_wr_complete / abort */
	pthread_t owner;
	bool open;
	int err; /* the first error since ibv_wr_start */
	uint64_t send_ops;
	enum ibv_qp_type qp_type;
	uint32_t max_wr, max_sge, max_inline;
	struct xv_pending_wr *wr;
	uint32_t n_wr, cap_wr;
	/* Inline data's SGE addresses are offsets into inline_data until posted. */
	struct xr_sge *sge;
	uint32_t n_sge, cap_sge;
	uint8_t *inline_data;
	uint32_t n_inline, cap_inline;
};

static struct xv_qp *qp_of(struct ibv_qp_ex *ex)
{
	return xv_container(ex, struct xv_qp, ex);
}

static bool in_region(const struct xv_wr_batch *b)
{
	return b->open && pthread_equal(b->owner, pthread_self());
}

static void fail(struct xv_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Room for need elements of size each in *array; false (and ENOMEM kept) without. */
static bool reserve(struct xv_wr_batch *b, void **array, uint32_t *cap, uint64_t need, size_t size)
{
	uint64_t want = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return true;
	while (want < need)
		want *= 2;
	grown = want <= UINT32_MAX ? realloc(*array, want * size) : NULL;
	if (!grown) {
		fail(b, ENOMEM);
		return false;
	}
	*array = grown;
	*cap = (uint32_t)want;
	return true;
}

/* A builder's new work request, or NULL when there is none to build. */
static struct xr_send_wr *build(struct ibv_qp_ex *ex, uint64_t op_flag, enum xr_wr_opcode opcode)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;
	struct xv_pending_wr *p;

	if (!in_region(b) || b->err)
		return NULL;
	if (!(b->send_ops & op_flag)) {
		fail(b, EOPNOTSUPP);
		return NULL;
	}
	if (ex->wr_flags & ~(unsigned int)XV_SEND_FLAGS) {
		fail(b, EINVAL);
		return NULL;
	}
	if (b->n_wr == b->max_wr) {
		fail(b, ENOMEM);
		return NULL;
	}
	if (!reserve(b, (void **)&b->wr, &b->cap_wr, b->n_wr + 1ull, sizeof(*b->wr)))
		return NULL;
	p = &b->wr[b->n_wr++];
	memset(p, 0, sizeof(*p));
	p->wr.wr_id = ex->wr_id;
	p->wr.opcode = opcode;
	/* Inline is the inline setters' business here, not wr_flags'. */
	p->wr.send_flags = ex->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	p->first_sge = b->n_sge;
	return &p->wr;
}

/* The work request a setter completes: the last one built. */
static struct xv_pending_wr *last_built(struct ibv_qp_ex *ex)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;

	if (!in_region(b) || b->err)
		return NULL;
	if (!b->n_wr) {
		fail(b, EINVAL);
		return NULL;
	}
	return &b->wr[b->n_wr - 1];
}

static void wr_send(struct ibv_qp_ex *ex)
{
	build(ex, IBV_QP_EX_WITH_SEND, XR_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *ex, __be32 imm_data)
{
	struct xr_send_wr *wr = build(ex, IBV_QP_EX_WITH_SEND_WITH_IMM, XR_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void wr_send_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	struct xr_send_wr *wr = build(ex, IBV_QP_EX_WITH_SEND_WITH_INV, XR_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void wr_local_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	struct xr_send_wr *wr = build(ex, IBV_QP_EX_WITH_LOCAL_INV, XR_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void rdma(struct ibv_qp_ex *ex, uint64_t op_flag, enum xr_wr_opcode opcode, uint32_t rkey,
		 uint64_t remote_addr, __be32 imm_data)
{
	struct xr_send_wr *wr = build(ex, op_flag, opcode);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm_data;
}

static void wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr)
{
	rdma(ex, IBV_QP_EX_WITH_RDMA_WRITE, XR_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr,
			      __be32 imm_data)
{
	rdma(ex, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, XR_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
	     imm_data);
}

static void wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr)
{
	rdma(ex, IBV_QP_EX_WITH_RDMA_READ, XR_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *bind_info)
{
	struct xr_send_wr *wr = build(ex, IBV_QP_EX_WITH_BIND_MW, XR_WR_BIND_MW);
	int err;

	if (!wr)
		return;
	err = xv_bind_mw_wr_to_xr(mw, rkey, bind_info, wr);
	if (err)
		fail(qp_of(ex)->wr_batch, err);
}

static void atomic(struct ibv_qp_ex *ex, uint64_t op_flag, enum xr_wr_opcode opcode, uint32_t rkey,
		   uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct xr_send_wr *wr = build(ex, op_flag, opcode);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare, uint64_t swap)
{
	atomic(ex, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
	       compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr,
				uint64_t add)
{
	atomic(ex, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, XR_WR_ATOMIC_FETCH_AND_ADD, rkey,
	       remote_addr, add, 0);
}

/* The operations this library refuses at creation: here only if called all the same. */
static void refuse(struct ibv_qp_ex *ex)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;

	if (in_region(b))
		fail(b, EOPNOTSUPP);
}

static void wr_send_tso(struct ibv_qp_ex *ex, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	refuse(ex);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t remote_srqn)
{
	(void)remote_srqn;
	refuse(ex);
}

static void wr_atomic_write(struct ibv_qp_ex *ex, uint32_t rkey, uint64_t remote_addr,
			    const void *atomic_wr)
{
	(void)rkey, (void)remote_addr, (void)atomic_wr;
	refuse(ex);
}

static void wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct xv_pending_wr *p = last_built(ex);

	if (!p)
		return;
	/* On RC and UC the union holds the RDMA or atomic fields: an AH has no place there. */
	if (qp_of(ex)->wr_batch->qp_type != IBV_QPT_UD || !ah) {
		fail(qp_of(ex)->wr_batch, EINVAL);
		return;
	}
	p->wr.wr.ud.ah = xv_ah(ah)->xr;
	p->wr.wr.ud.remote_qpn = remote_qpn;
	p->wr.wr.ud.remote_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *ex, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct xv_pending_wr *p = last_built(ex);
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;

	if (!p)
		return;
	if (num_sge > b->max_sge) {
		fail(b, ENOSPC);
		return;
	}
	if (!reserve(b, (void **)&b->sge, &b->cap_sge, b->n_sge + (uint64_t)num_sge,
		     sizeof(*b->sge)))
		return;
	/* A data setter called again replaces what the previous one set. */
	p->wr.send_flags &= ~(unsigned int)XR_SEND_INLINE;
	p->first_sge = b->n_sge;
	p->wr.num_sge = (int)num_sge;
	for (size_t i = 0; i < num_sge; i++)
		b->sge[b->n_sge++] = (struct xr_sge){
		    .addr = sg_list[i].addr, .length = sg_list[i].length, .lkey = sg_list[i].lkey};
}

static void wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	/* A zero-length buffer is a message without data. */
	wr_set_sge_list(ex, length ? 1 : 0, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct xv_pending_wr *p = last_built(ex);
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;
	uint64_t total = 0;

	if (!p)
		return;
	for (size_t i = 0; i < num_buf; i++)
		total += buf_list[i].length;
	if (total > b->max_inline) {
		fail(b, ENOSPC);
		return;
	}
	if (!reserve(b, (void **)&b->sge, &b->cap_sge, b->n_sge + 1ull, sizeof(*b->sge)) ||
	    !reserve(b, (void **)&b->inline_data, &b->cap_inline, b->n_inline + total, 1))
		return;
	/* Copied now, as the verbs promise: the caller may reuse its buffers at once. */
	p->first_sge = b->n_sge;
	p->wr.num_sge = 1;
	p->wr.send_flags |= XR_SEND_INLINE;
	b->sge[b->n_sge++] = (struct xr_sge){.addr = b->n_inline, .length = (uint32_t)total};
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(b->inline_data + b->n_inline, buf_list[i].addr, buf_list[i].length);
		b->n_inline += (uint32_t)buf_list[i].length;
	}
}

static void wr_set_inline_data(struct ibv_qp_ex *ex, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(ex, 1, &buf);
}

static void close_region(struct xv_wr_batch *b)
{
	b->open = false;
	pthread_mutex_unlock(&b->lock);
}

static void wr_start(struct ibv_qp_ex *ex)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;

	/* Started again without completing: that region fails, rather than deadlock. */
	if (in_region(b)) {
		fail(b, EINVAL);
		return;
	}
	pthread_mutex_lock(&b->lock);
	b->owner = pthread_self();
	b->open = true;
	b->err = 0;
	b->n_wr = b->n_sge = b->n_inline = 0;
}

static int post_batch(struct xv_qp *qp)
{
	struct xv_wr_batch *b = qp->wr_batch;
	struct xr_send_wr *bad;

	if (!b->n_wr)
		return 0;
	/* The arrays may have moved while growing: the pointers are made now. */
	for (uint32_t i = 0; i < b->n_wr; i++) {
		struct xr_send_wr *wr = &b->wr[i].wr;

		wr->next = i + 1 < b->n_wr ? &b->wr[i + 1].wr : NULL;
		wr->sg_list = wr->num_sge ? &b->sge[b->wr[i].first_sge] : NULL;
		if (wr->send_flags & XR_SEND_INLINE)
			wr->sg_list[0].addr += (uintptr_t)b->inline_data;
	}
	return xv_errno(xr_post_send_all_or_none(qp->xr, &b->wr[0].wr, &bad));
}

static int wr_complete(struct ibv_qp_ex *ex)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;
	int err;

	if (!in_region(b))
		return EINVAL;
	err = b->err ? b->err : post_batch(qp_of(ex));
	close_region(b);
	return err;
}

static void wr_abort(struct ibv_qp_ex *ex)
{
	struct xv_wr_batch *b = qp_of(ex)->wr_batch;

	if (in_region(b))
		close_region(b);
}

static void set_wr_ops(struct ibv_qp_ex *ex)
{
	ex->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	ex->wr_atomic_fetch_add = wr_atomic_fetch_add;
	ex->wr_bind_mw = wr_bind_mw;
	ex->wr_local_inv = wr_local_inv;
	ex->wr_rdma_read = wr_rdma_read;
	ex->wr_rdma_write = wr_rdma_write;
	ex->wr_rdma_write_imm = wr_rdma_write_imm;
	ex->wr_send = wr_send;
	ex->wr_send_imm = wr_send_imm;
	ex->wr_send_inv = wr_send_inv;
	ex->wr_send_tso = wr_send_tso;
	ex->wr_set_ud_addr = wr_set_ud_addr;
	ex->wr_set_xrc_srqn = wr_set_xrc_srqn;
	ex->wr_set_inline_data = wr_set_inline_data;
	ex->wr_set_inline_data_list = wr_set_inline_data_list;
	ex->wr_set_sge = wr_set_sge;
	ex->wr_set_sge_list = wr_set_sge_list;
	ex->wr_start = wr_start;
	ex->wr_complete = wr_complete;
	ex->wr_abort = wr_abort;
	ex->wr_atomic_write = wr_atomic_write;
}

static uint64_t send_ops_of(enum ibv_qp_type qp_type)
{
	switch (qp_type) {
	case IBV_QPT_RC:
		return XV_RC_SEND_OPS;
	case IBV_QPT_UC:
		return XV_UC_SEND_OPS;
	case IBV_QPT_UD:
		return XV_UD_SEND_OPS;
	default:
		return 0;
	}
}

_Static_assert(offsetof(struct ibv_qp_init_attr_ex, sq_sig_all) ==
		   offsetof(struct ibv_qp_init_attr, sq_sig_all),
	       "ibv_qp_init_attr_ex begins as ibv_qp_init_attr does, as libibverbs relies on");

/*
 * Only IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, on a UD QP: xroce never loops a
 * QP's multicast back to it (the frames leave by the wire), so the flag
 * holds as asked.
 */
static bool create_flags_ok(const struct ibv_qp_init_attr_ex *attr)
{
	return !(attr->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) &&
	       (!attr->create_flags || attr->qp_type == IBV_QPT_UD);
}

struct ibv_qp *xv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	uint64_t send_ops = 0;
	struct xv_wr_batch *b;
	struct xv_qp *qp;
	int err;

	if (attr->comp_mask & ~(uint32_t)XV_QP_INIT_ATTR_MASK)
		return xv_null(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context)
		return xv_null(EINVAL);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && !create_flags_ok(attr))
		return xv_null(EOPNOTSUPP);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		send_ops = attr->send_ops_flags;
		if (send_ops & ~send_ops_of(attr->qp_type))
			return xv_null(EOPNOTSUPP);
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return xv_null(ENOMEM);
	qp = xv_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (!qp) {
		err = errno;
		free(b);
		return xv_null(err);
	}
	pthread_mutex_init(&b->lock, NULL);
	b->send_ops = send_ops;
	b->qp_type = attr->qp_type;
	b->max_wr = attr->cap.max_send_wr;
	b->max_sge = attr->cap.max_send_sge;
	b->max_inline = attr->cap.max_inline_data;
	qp->wr_batch = b;
	set_wr_ops(&qp->ex);
	return &qp->ibv;
}

void xv_free_wr_batch(struct xv_wr_batch *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->wr);
	free(b->sge);
	free(b->inline_data);
	free(b);
}
