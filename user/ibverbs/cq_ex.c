/* SPDX-License-Identifier: MIT */
/*
 * Extended CQs (ibv_create_cq_ex): ibv_start_poll, ibv_next_poll and
 * ibv_end_poll walk the completions one at a time and the ibv_wc_read_*
 * accessors read the current one. Completions are taken from libxroce in
 * batches and kept here until consumed, so ibv_poll_cq on the same CQ
 * (through ibv_cq_ex_to_cq, as perftest polls) hands those out first.
 */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "shim.h"

#define XV_READ_AHEAD 32

/* Every standard field; no timestamps, VLANs, flow tags or tag matching. */
#define XV_WC_EX_FLAGS ((uint64_t)IBV_WC_STANDARD_FLAGS)
#define XV_CREATE_CQ_FLAGS IBV_CREATE_CQ_ATTR_SINGLE_THREADED

struct xv_cq_read_ahead {
	/* Held from ibv_start_poll to ibv_end_poll, unless single-threaded. */
	pthread_mutex_t lock;
	bool single_threaded;
	/* wc[head] is what the accessors read; consumed by next or end_poll. */
	bool have_current;
	int head, count;
	struct xr_wc wc[XV_READ_AHEAD];
};

static struct xv_cq *cq_of(struct ibv_cq_ex *ex)
{
	return xv_container(ex, struct xv_cq, ex);
}

static const struct xr_wc *current_wc(struct ibv_cq_ex *ex)
{
	const struct xv_cq_read_ahead *ra = cq_of(ex)->read_ahead;

	return &ra->wc[ra->head];
}

static void lock(struct xv_cq_read_ahead *ra)
{
	if (!ra->single_threaded)
		pthread_mutex_lock(&ra->lock);
}

static void unlock(struct xv_cq_read_ahead *ra)
{
	if (!ra->single_threaded)
		pthread_mutex_unlock(&ra->lock);
}

static void consume_current(struct xv_cq_read_ahead *ra)
{
	if (!ra->have_current)
		return;
	ra->head++;
	ra->count--;
	ra->have_current = false;
}

/* 0 with the next completion current, or ENOENT (errno set too, as rdma-core's providers). */
static int show_next(struct xv_cq *cq)
{
	struct xv_cq_read_ahead *ra = cq->read_ahead;
	const struct xr_wc *wc;

	if (!ra->count) {
		int n = xr_poll_cq(cq->xr, XV_READ_AHEAD, ra->wc);

		ra->head = 0;
		ra->count = n > 0 ? n : 0;
		if (n <= 0) {
			errno = n < 0 ? xv_errno(n) : ENOENT;
			return errno;
		}
	}
	wc = &ra->wc[ra->head];
	ra->have_current = true;
	cq->ex.status = (enum ibv_wc_status)wc->status;
	cq->ex.wr_id = wc->wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct xv_cq_read_ahead *ra = cq_of(ex)->read_ahead;
	int err;

	if (attr->comp_mask) {
		errno = EINVAL;
		return EINVAL;
	}
	lock(ra);
	err = show_next(cq_of(ex));
	/* Without a completion the poll is over: ibv_end_poll is not called. */
	if (err)
		unlock(ra);
	return err;
}

static int next_poll(struct ibv_cq_ex *ex)
{
	consume_current(cq_of(ex)->read_ahead);
	return show_next(cq_of(ex));
}

static void end_poll(struct ibv_cq_ex *ex)
{
	struct xv_cq_read_ahead *ra = cq_of(ex)->read_ahead;

	consume_current(ra);
	unlock(ra);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ex)
{
	/* Only ibv_wr_opcode work requests reach libxroce from here: their completions agree. */
	return (enum ibv_wc_opcode)current_wc(ex)->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->byte_len;
}

/* Immediate data in network order, or (IBV_WC_WITH_INV) the invalidated rkey, as ibv_wc's union. */
static __be32 read_imm_data(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ex)
{
	return current_wc(ex)->wc_flags;
}

/* RoCE has no LIDs, service levels or path bits: 0, as Soft-RoCE reports them. */
static uint32_t read_slid(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint8_t read_sl(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

struct ibv_cq_ex *xv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct xv_cq_read_ahead *ra;
	struct xv_cq *cq;
	int err;

	if (attr->wc_flags & ~XV_WC_EX_FLAGS)
		return xv_null(EOPNOTSUPP);
	/* No parent domains: no PD for a CQ. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		return xv_null(EOPNOTSUPP);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & ~XV_CREATE_CQ_FLAGS))
		return xv_null(EOPNOTSUPP);
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX)
		return xv_null(EINVAL);
	ra = calloc(1, sizeof(*ra));
	if (!ra)
		return xv_null(ENOMEM);
	cq = xv_create_cq(context, (int)attr->cqe, attr->cq_context, attr->channel,
			  (int)attr->comp_vector);
	if (!cq) {
		err = errno;
		free(ra);
		return xv_null(err);
	}
	ra->single_threaded = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
			      (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	pthread_mutex_init(&ra->lock, NULL);
	cq->read_ahead = ra;
	cq->ex.start_poll = start_poll;
	cq->ex.next_poll = next_poll;
	cq->ex.end_poll = end_poll;
	cq->ex.read_opcode = read_opcode;
	cq->ex.read_vendor_err = read_vendor_err;
	cq->ex.read_byte_len = read_byte_len;
	cq->ex.read_imm_data = read_imm_data;
	cq->ex.read_qp_num = read_qp_num;
	cq->ex.read_src_qp = read_src_qp;
	cq->ex.read_wc_flags = read_wc_flags;
	cq->ex.read_slid = read_slid;
	cq->ex.read_sl = read_sl;
	cq->ex.read_dlid_path_bits = read_dlid_path_bits;
	return &cq->ex;
}

int xv_poll_read_ahead(struct xv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct xv_cq_read_ahead *ra = cq->read_ahead;
	int done = 0, n;

	lock(ra);
	for (; done < num_entries && ra->count; done++, ra->head++, ra->count--)
		xv_wc_from_xr(&ra->wc[ra->head], &wc[done]);
	n = done < num_entries || !num_entries
		? xv_poll_xr_cq(cq->xr, num_entries - done, wc + done)
		: 0;
	unlock(ra);
	if (n < 0)
		return done ? done : n;
	return done + n;
}

void xv_free_read_ahead(struct xv_cq_read_ahead *ra)
{
	if (!ra)
		return;
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}
