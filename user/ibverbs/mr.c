/* SPDX-License-Identifier: MIT */
/* Protection domains and memory regions. */
#include <stdlib.h>

#include "shim.h"

/* Access flags go to libxroce as they are (convert.c checks the values agree). */
#define XV_MR_ACCESS                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct xv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return xv_null(ENOMEM);
	pd->xr = xr_alloc_pd(xv_ctx(context)->xr);
	if (!pd->xr) {
		err = errno;
		free(pd);
		return xv_null(err);
	}
	pd->ibv.context = context;
	return &pd->ibv;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int err;

	err = xr_dealloc_pd(xv_pd(pd)->xr);
	if (err)
		return xv_errno(err);
	free(xv_pd(pd));
	return 0;
}

/*
 * Remote peers address an xroce MR by virtual address: an iova other than
 * addr has no libxroce counterpart. Optional access bits may be ignored, as
 * libibverbs allows; other bits (zero-based, on-demand paging) are refused.
 */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct xv_mr *mr;
	int err;

	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (iova != (uintptr_t)addr || (access & ~(unsigned int)XV_MR_ACCESS))
		return xv_null(EOPNOTSUPP);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return xv_null(ENOMEM);
	mr->xr = xr_reg_mr(xv_pd(pd)->xr, addr, length, (int)access);
	if (!mr->xr) {
		err = errno;
		free(mr);
		return xv_null(err);
	}
	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.lkey = mr->xr->lkey;
	mr->ibv.rkey = mr->xr->rkey;
	return &mr->ibv;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct xv_mr *m = xv_container(mr, struct xv_mr, ibv);
	int err;

	err = xr_dereg_mr(m->xr);
	if (err)
		return xv_errno(err);
	free(m);
	return 0;
}

/* libxroce cannot change a registration in place. */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	(void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}
