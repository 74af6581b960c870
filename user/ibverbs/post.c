/* SPDX-License-Identifier: MIT */
/*
 * Posting work requests: each ibv_send_wr or ibv_recv_wr of a chain becomes
 * an xr_ one (the scatter/gather lists are shared, convert.c checks their
 * layouts agree), in bounded batches posted in order, so an error names
 * the application's own first unposted request.
 */
#include <string.h>

#include "shim.h"

#define XV_POST_BATCH 16

static int send_wr_to_xr(enum ibv_qp_type qp_type, const struct ibv_send_wr *in,
			 struct xr_send_wr *out)
{
	memset(out, 0, sizeof(*out));
	if (in->send_flags & ~(unsigned int)XV_SEND_FLAGS)
		return EINVAL;
	out->wr_id = in->wr_id;
	out->sg_list = (struct xr_sge *)in->sg_list;
	out->num_sge = in->num_sge;
	out->send_flags = in->send_flags;
	out->opcode = (enum xr_wr_opcode)in->opcode;
	/* The union of immediate data and the key to invalidate is copied whole. */
	out->imm_data = in->imm_data;
	if (qp_type == IBV_QPT_UD) {
		/* libxroce refuses what a datagram cannot carry; an AH names the peer. */
		if (!in->wr.ud.ah)
			return EINVAL;
		out->wr.ud.ah = xv_ah(in->wr.ud.ah)->xr;
		out->wr.ud.remote_qpn = in->wr.ud.remote_qpn;
		out->wr.ud.remote_qkey = in->wr.ud.remote_qkey;
		return 0;
	}
	switch (in->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		out->wr.rdma.remote_addr = in->wr.rdma.remote_addr;
		out->wr.rdma.rkey = in->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		out->wr.atomic.remote_addr = in->wr.atomic.remote_addr;
		out->wr.atomic.compare_add = in->wr.atomic.compare_add;
		out->wr.atomic.swap = in->wr.atomic.swap;
		out->wr.atomic.rkey = in->wr.atomic.rkey;
		break;
	case IBV_WR_BIND_MW:
		return xv_bind_mw_wr_to_xr(in->bind_mw.mw, in->bind_mw.rkey, &in->bind_mw.bind_info,
					   out);
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		break;
	default:
		/* TSO, atomic write, driver-specific opcodes: not xroce's. */
		return EOPNOTSUPP;
	}
	return 0;
}

int xv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct xr_send_wr batch[XV_POST_BATCH];
	struct ibv_send_wr *from[XV_POST_BATCH];
	struct xr_send_wr *xbad;
	int n, err = 0, bad_conv;

	while (wr) {
		bad_conv = 0;
		for (n = 0; wr && n < XV_POST_BATCH; n++, wr = wr->next) {
			err = send_wr_to_xr(qp->qp_type, wr, &batch[n]);
			if (err) {
				bad_conv = 1;
				break;
			}
			from[n] = wr;
			batch[n].next = NULL;
			if (n)
				batch[n - 1].next = &batch[n];
		}
		if (n) {
			int perr = xr_post_send(xv_qp(qp)->xr, batch, &xbad);

			if (perr) {
				*bad_wr = xbad ? from[xbad - batch] : from[0];
				return xv_errno(perr);
			}
		}
		if (bad_conv) {
			*bad_wr = wr;
			return err;
		}
	}
	return 0;
}

/* Posts to a QP's receive queue or to an SRQ: libxroce has a function for each. */
typedef int post_recv_fn(void *queue, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr);

static int post_recv_chain(post_recv_fn *post, void *queue, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	struct xr_recv_wr batch[XV_POST_BATCH];
	struct ibv_recv_wr *from[XV_POST_BATCH];
	struct xr_recv_wr *xbad;
	int n, err;

	while (wr) {
		for (n = 0; wr && n < XV_POST_BATCH; n++, wr = wr->next) {
			batch[n].wr_id = wr->wr_id;
			batch[n].sg_list = (struct xr_sge *)wr->sg_list;
			batch[n].num_sge = wr->num_sge;
			batch[n].next = NULL;
			if (n)
				batch[n - 1].next = &batch[n];
			from[n] = wr;
		}
		err = post(queue, batch, &xbad);
		if (err) {
			*bad_wr = xbad ? from[xbad - batch] : from[0];
			return xv_errno(err);
		}
	}
	return 0;
}

static int post_to_qp(void *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr)
{
	return xr_post_recv(qp, wr, bad_wr);
}

static int post_to_srq(void *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr)
{
	return xr_post_srq_recv(srq, wr, bad_wr);
}

int xv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return post_recv_chain(post_to_qp, xv_qp(qp)->xr, wr, bad_wr);
}

int xv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return post_recv_chain(post_to_srq, xv_srq(srq)->xr, wr, bad_wr);
}
