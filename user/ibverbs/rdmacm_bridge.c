/* SPDX-License-Identifier: MIT */
/* The libxroce objects behind verbs objects, for xroce's librdmacm.so.1. */
#include "rdmacm_bridge.h"
#include "shim.h"

struct xr_device *xroce_ibv_device_of(struct ibv_context *context)
{
	return xv_ctx(context)->xr;
}

struct xr_qp *xroce_ibv_qp_of(struct ibv_qp *qp)
{
	return xv_qp(qp)->xr;
}

void xroce_ibv_ah_attr_from_xr(const struct xr_ah_attr *in, struct ibv_ah_attr *out)
{
	xv_ah_attr_from_xr(in, out);
}
