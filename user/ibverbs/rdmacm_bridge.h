/* SPDX-License-Identifier: MIT */
/*
 * What xroce's librdmacm.so.1 (user/rdmacm) reaches in this library, under
 * the private version node XROCE_RDMACM_PRIVATE: the libxroce object behind
 * a verbs object. libxroce is linked into libibverbs.so.1 whole, so the RDMA
 * CM's xr_rdma_* functions are exported under that node too: one copy of
 * libxroce, and of its devices, per process.
 */
#ifndef XROCE_IBVERBS_RDMACM_BRIDGE_H
#define XROCE_IBVERBS_RDMACM_BRIDGE_H

#include <infiniband/verbs.h>

#include "xroce/xroce.h"

struct xr_device *xroce_ibv_device_of(struct ibv_context *context);
struct xr_qp *xroce_ibv_qp_of(struct ibv_qp *qp);
void xroce_ibv_ah_attr_from_xr(const struct xr_ah_attr *in, struct ibv_ah_attr *out);

#endif /* XROCE_IBVERBS_RDMACM_BRIDGE_H */
