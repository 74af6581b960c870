/* SPDX-License-Identifier: MIT */
/*
 * Memory windows. Type 1 windows are bound with ibv_bind_mw, type 2 by an
 * IBV_WR_BIND_MW work request (post.c, qp_ex.c). As in rdma-core's
 * providers, ibv_bind_mw moves ibv_mw.rkey to the new key when the bind is
 * posted (the application undoes that if the bind completes in error),
 * while a type 2 bind leaves ibv_mw.rkey alone: its new key is the one the
 * application chose with ibv_inc_rkey, and remembers.
 */
#include <stdlib.h>

#include "shim.h"

_Static_assert((int)IBV_MW_TYPE_1 == (int)XR_MW_TYPE_1 && (int)IBV_MW_TYPE_2 == (int)XR_MW_TYPE_2,
	       "window types are passed to libxroce as they are");

struct ibv_mw *xv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return xv_null(ENOMEM);
	mw->xr = xr_alloc_mw(xv_pd(pd)->xr, (enum xr_mw_type)type);
	if (!mw->xr) {
		err = errno;
		free(mw);
		return xv_null(err);
	}
	mw->ibv.context = pd->context;
	mw->ibv.pd = pd;
	mw->ibv.rkey = mw->xr->rkey;
	mw->ibv.handle = mw->xr->handle;
	mw->ibv.type = type;
	return &mw->ibv;
}

int xv_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = xr_dealloc_mw(xv_mw(mw)->xr);
	if (err)
		return xv_errno(err);
	free(xv_mw(mw));
	return 0;
}

/* Windows are addressed by virtual address, as MRs are: zero-based binds are
 * refused (rxe refuses them too). */
static int bind_info_to_xr(const struct ibv_mw_bind_info *in, struct xr_mw_bind_info *out)
{
	if (in->mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	out->mr = in->mr ? xv_mr(in->mr)->xr : NULL;
	out->addr = in->addr;
	out->length = in->length;
	out->mw_access_flags = in->mw_access_flags;
	return 0;
}

/* A type 2 bind as a work request (IBV_WR_BIND_MW, ibv_wr_bind_mw); libxroce
 * checks the window's type. */
int xv_bind_mw_wr_to_xr(struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bind_info,
			struct xr_send_wr *out)
{
	if (!mw)
		return EINVAL;
	out->bind_mw.mw = xv_mw(mw)->xr;
	out->bind_mw.rkey = rkey;
	return bind_info_to_xr(bind_info, &out->bind_mw.bind_info);
}

/* The inline ibv_bind_mw has checked the window's type, and the MR's PD. */
int xv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct xr_mw_bind xb = {.wr_id = mw_bind->wr_id, .send_flags = mw_bind->send_flags};
	int err;

	if (mw_bind->send_flags & ~(unsigned int)XV_SEND_FLAGS)
		return EINVAL;
	err = bind_info_to_xr(&mw_bind->bind_info, &xb.bind_info);
	if (err)
		return err;
	err = xr_bind_mw(xv_qp(qp)->xr, xv_mw(mw)->xr, &xb);
	if (err)
		return xv_errno(err);
	mw->rkey = xv_mw(mw)->xr->rkey;
	return 0;
}
