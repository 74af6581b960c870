/* SPDX-License-Identifier: MIT */
/* Address handles: where a UD QP's sends go, and how to answer a datagram. */
#include <stdlib.h>

#include "shim.h"

/* A UD receive buffer's first 40 bytes are read through either structure. */
_Static_assert(sizeof(struct ibv_grh) == sizeof(struct xr_grh) &&
		   offsetof(struct ibv_grh, paylen) == offsetof(struct xr_grh, paylen) &&
		   offsetof(struct ibv_grh, hop_limit) == offsetof(struct xr_grh, hop_limit) &&
		   offsetof(struct ibv_grh, sgid) == offsetof(struct xr_grh, sgid) &&
		   offsetof(struct ibv_grh, dgid) == offsetof(struct xr_grh, dgid),
	       "ibv_grh and xr_grh have one layout");

static struct ibv_ah *ah_wrap(struct ibv_pd *pd, struct xr_ah *xr)
{
	struct xv_ah *ah;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		xr_destroy_ah(xr);
		return xv_null(ENOMEM);
	}
	ah->xr = xr;
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->ibv.handle = xr->handle;
	return &ah->ibv;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct xr_ah_attr xa;
	struct xr_ah *xr;

	if (!pd || !attr)
		return xv_null(EINVAL);
	xv_ah_attr_to_xr(attr, &xa);
	xr = xr_create_ah(xv_pd(pd)->xr, &xa);
	return xr ? ah_wrap(pd, xr) : NULL;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	int err;

	err = xr_destroy_ah(xv_ah(ah)->xr);
	if (err)
		return xv_errno(err);
	free(xv_ah(ah));
	return 0;
}

/* As libibverbs: 0, or -1 with errno set when the sender's GID is not found. */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct xr_ah_attr xa;
	struct xr_wc xwc;
	int err;

	xv_wc_to_xr(wc, &xwc);
	err = xr_init_ah_from_wc(xv_ctx(context)->xr, port_num, &xwc, (const struct xr_grh *)grh,
				 &xa);
	if (err) {
		errno = xv_errno(err);
		return -1;
	}
	xv_ah_attr_from_xr(&xa, ah_attr);
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
