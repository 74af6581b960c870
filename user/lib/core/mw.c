/* SPDX-License-Identifier: MIT */
/*
 * Memory windows, invalidation, and the one place where a remote key is
 * resolved: every remote access (each packet of a WRITE, each READ response,
 * each atomic) asks xr_core_resolve_rkey again, so a key that was
 * invalidated or rebound moves no byte afterwards, retransmissions included.
 */
#include <errno.h>
#include <stdlib.h>

#include "core.h"

#define REMOTE_ACCESS (XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)

struct xr_mw *xr_core_alloc_mw(struct xr_pd *pd, enum xr_mw_type type, int *err)
{
	struct xr_mw_impl *mw;

	*err = -EINVAL;
	if (type != XR_MW_TYPE_1 && type != XR_MW_TYPE_2)
		return NULL;
	*err = -ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	*err = xr_core_new_key(pd->core, XR_KEY_MW, mw, &mw->key);
	if (*err) {
		free(mw);
		return NULL;
	}
	mw->core = pd->core;
	/* A type 1 window is valid, bound to nothing; a type 2 one is free until bound. */
	mw->state = type == XR_MW_TYPE_1 ? XR_MEM_VALID : XR_MEM_INVALID;
	mw->pub.device = pd->device;
	mw->pub.pd = pd;
	mw->pub.rkey = mw->key;
	/* What binds leave of the rkey: the window's for its whole life. */
	mw->pub.handle = mw->key >> 8;
	mw->pub.type = type;
	pd->refs++;
	return &mw->pub;
}

static void unbind(struct xr_mw_impl *mw)
{
	if (mw->mr)
		mw->mr->mw_bound--;
	mw->mr = NULL;
	mw->addr = mw->length = 0;
	mw->access = 0;
	mw->qp = NULL;
}

int xr_core_dealloc_mw(struct xr_mw *pub)
{
	struct xr_mw_impl *mw = xr_mw_impl(pub);

	unbind(mw);
	xr_core_free_key(mw->core, mw->key);
	pub->pd->refs--;
	free(mw);
	return 0;
}

/* The spec's rules for a bind (o10-36.2, o10-37.2, C10-72..75). */
static bool bind_allowed(const struct xr_qp_impl *qp, const struct xr_mw_impl *mw,
			 const struct xr_bind_args *b)
{
	const struct xr_mr_impl *mr = b->mr;

	/* Only the key byte changes; the window and the QP share a PD. */
	if (((b->new_rkey ^ mw->key) & ~XR_KEY_BYTE) || (b->access & ~REMOTE_ACCESS) ||
	    qp->pub.pd != mw->pub.pd)
		return false;
	/* A type 2 window is bound only when free (invalidate to rebind), and not to nothing. */
	if (mw->pub.type == XR_MW_TYPE_2 && (mw->state != XR_MEM_INVALID || !b->length))
		return false;
	if (!b->length)
		return true;
	if (!mr || mr->state != XR_MEM_VALID || mr->pub.pd != mw->pub.pd)
		return false;
	if (!(mr->access & XR_ACCESS_MW_BIND))
		return false;
	if ((b->access & (XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & XR_ACCESS_LOCAL_WRITE))
		return false;
	return xr_mr_covers(mr, b->addr, b->length);
}

enum xr_wc_status xr_core_exec_bind(struct xr_qp_impl *qp, const struct xr_bind_args *b)
{
	struct xr_mw_impl *mw = b->mw;

	/* The window and the MR must still exist: the WQE holds only their addresses. */
	if (xr_core_key_obj(qp->core, mw ? mw->key : 0, XR_KEY_MW) != mw ||
	    (b->mr && xr_core_key_obj(qp->core, b->mr->lkey, XR_KEY_MR) != b->mr))
		return XR_WC_MW_BIND_ERR;
	if (!bind_allowed(qp, mw, b))
		return XR_WC_MW_BIND_ERR;
	unbind(mw);
	mw->key = b->new_rkey;
	if (b->length) {
		mw->mr = b->mr;
		mw->mr->mw_bound++;
		mw->addr = b->addr;
		mw->length = b->length;
		mw->access = (int)b->access;
	}
	if (mw->pub.type == XR_MW_TYPE_2) {
		mw->qp = qp;
		mw->state = XR_MEM_VALID;
	}
	return XR_WC_SUCCESS;
}

static int invalidate(struct xr_qp_impl *qp, uint32_t key, bool remote)
{
	struct xr_mr_impl *mr = xr_core_key_obj(qp->core, key, XR_KEY_MR);
	struct xr_mw_impl *mw = xr_core_key_obj(qp->core, key, XR_KEY_MW);

	if (mr) {
		/* Only fast registration makes an MR that can be invalidated (and rxe agrees). */
		if ((mr->rkey != key && (remote || mr->lkey != key)) ||
		    mr->kind != XR_MR_FAST_REG || mr->state != XR_MEM_VALID ||
		    mr->pub.pd != qp->pub.pd || mr->mw_bound)
			return -EINVAL;
		mr->state = XR_MEM_INVALID;
		return 0;
	}
	if (!mw || mw->key != key || mw->pub.type != XR_MW_TYPE_2 || mw->state != XR_MEM_VALID ||
	    mw->pub.pd != qp->pub.pd || mw->qp != qp)
		return -EINVAL;
	unbind(mw);
	mw->state = XR_MEM_INVALID;
	return 0;
}

int xr_core_invalidate_key(struct xr_qp_impl *qp, uint32_t key)
{
	return invalidate(qp, key, false);
}

int xr_core_invalidate_rkey(struct xr_qp_impl *qp, uint32_t rkey)
{
	return invalidate(qp, rkey, true);
}

void xr_core_unbind_qp_windows(struct xr_qp_impl *qp)
{
	for (uint32_t i = 1; i < XR_MAX_KEYS; i++) {
		struct xr_mw_impl *mw;

		if (qp->core->keys[i].kind != XR_KEY_MW)
			continue;
		mw = qp->core->keys[i].obj;
		if (mw->qp == qp) {
			unbind(mw);
			mw->state = XR_MEM_INVALID;
		}
	}
}

struct xr_mr_impl *xr_core_resolve_rkey(struct xr_qp_impl *qp, uint32_t rkey, uint64_t va,
					uint64_t len, int access)
{
	struct xr_mr_impl *mr;
	struct xr_mw_impl *mw;

	if (!(qp->access & access))
		return NULL;
	/* By its rkey only: an lkey never leaves this host, and reaches nothing from outside. */
	mr = xr_core_key_obj(qp->core, rkey, XR_KEY_MR);
	if (mr) {
		bool granted = mr->rkey == rkey && mr->state == XR_MEM_VALID &&
			       mr->pub.pd == qp->pub.pd && (mr->access & access) &&
			       xr_mr_covers(mr, va, len);

		return granted ? mr : NULL;
	}
	mw = xr_core_key_obj(qp->core, rkey, XR_KEY_MW);
	if (!mw || mw->key != rkey || mw->state != XR_MEM_VALID || !mw->mr ||
	    mw->pub.pd != qp->pub.pd || !(mw->access & access))
		return NULL;
	if (mw->pub.type == XR_MW_TYPE_2 && mw->qp != qp)
		return NULL;
	if (va < mw->addr || len > mw->length || va - mw->addr > mw->length - len)
		return NULL;
	/* The MR behind it stays valid while bound, but check rather than trust. */
	return mw->mr->state == XR_MEM_VALID && xr_mr_covers(mw->mr, va, len) ? mw->mr : NULL;
}
