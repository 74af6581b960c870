/* SPDX-License-Identifier: MIT */
/*
 * Verbs of libibverbs' ABI that this library does not map (yet): they fail
 * as libibverbs fails a verb its provider lacks, with EOPNOTSUPP, returned
 * or in errno by each function's convention.
 */
#include "shim.h"

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context, (void)attr, (void)eth_mac, (void)vid;
	return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	return xv_null(EOPNOTSUPP);
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

/* 0, "not guaranteed": libibverbs' answer for a provider that does not tell. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	return xv_null(EOPNOTSUPP);
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context, (void)pd_handle;
	return xv_null(EOPNOTSUPP);
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd, (void)mr_handle;
	return xv_null(EOPNOTSUPP);
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context, (void)dm_handle;
	return xv_null(EOPNOTSUPP);
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}
