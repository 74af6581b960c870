/* SPDX-License-Identifier: MIT */
/*
 * Between libibverbs' structures and libxroce's. xroce.h keeps libibverbs'
 * enum values; the assertions below are where the two are known to agree
 * (values cast across unchanged), the rest is translated field by field.
 */
#include <string.h>

#include "shim.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " == " #b)

SAME(IBV_WC_SUCCESS, XR_WC_SUCCESS);
SAME(IBV_WC_LOC_LEN_ERR, XR_WC_LOC_LEN_ERR);
SAME(IBV_WC_REM_ACCESS_ERR, XR_WC_REM_ACCESS_ERR);
SAME(IBV_WC_RETRY_EXC_ERR, XR_WC_RETRY_EXC_ERR);
SAME(IBV_WC_RNR_RETRY_EXC_ERR, XR_WC_RNR_RETRY_EXC_ERR);
SAME(IBV_WC_GENERAL_ERR, XR_WC_GENERAL_ERR); /* the last, so the ones between agree */

SAME(IBV_WC_SEND, XR_WC_SEND);
SAME(IBV_WC_RDMA_WRITE, XR_WC_RDMA_WRITE);
SAME(IBV_WC_RDMA_READ, XR_WC_RDMA_READ);
SAME(IBV_WC_COMP_SWAP, XR_WC_COMP_SWAP);
SAME(IBV_WC_FETCH_ADD, XR_WC_FETCH_ADD);
SAME(IBV_WC_BIND_MW, XR_WC_BIND_MW);
SAME(IBV_WC_LOCAL_INV, XR_WC_LOCAL_INV);
SAME(IBV_WC_RECV, XR_WC_RECV);
SAME(IBV_WC_RECV_RDMA_WITH_IMM, XR_WC_RECV_RDMA_WITH_IMM);

SAME(IBV_ACCESS_LOCAL_WRITE, XR_ACCESS_LOCAL_WRITE);
SAME(IBV_ACCESS_REMOTE_WRITE, XR_ACCESS_REMOTE_WRITE);
SAME(IBV_ACCESS_REMOTE_READ, XR_ACCESS_REMOTE_READ);
SAME(IBV_ACCESS_REMOTE_ATOMIC, XR_ACCESS_REMOTE_ATOMIC);
SAME(IBV_ACCESS_MW_BIND, XR_ACCESS_MW_BIND);

SAME(IBV_WC_GRH, XR_WC_GRH);
SAME(IBV_WC_WITH_IMM, XR_WC_WITH_IMM);
SAME(IBV_WC_WITH_INV, XR_WC_WITH_INV);

SAME(IBV_QPS_RESET, XR_QPS_RESET);
SAME(IBV_QPS_INIT, XR_QPS_INIT);
SAME(IBV_QPS_RTR, XR_QPS_RTR);
SAME(IBV_QPS_RTS, XR_QPS_RTS);
SAME(IBV_QPS_SQD, XR_QPS_SQD);
SAME(IBV_QPS_SQE, XR_QPS_SQE);
SAME(IBV_QPS_ERR, XR_QPS_ERR);

SAME(IBV_MTU_256, XR_MTU_256);
SAME(IBV_MTU_4096, XR_MTU_4096);
SAME(IBV_MIG_MIGRATED, XR_MIG_MIGRATED);
SAME(IBV_MIG_ARMED, XR_MIG_ARMED);

SAME(IBV_QPT_RC, XR_QPT_RC);
SAME(IBV_QPT_UC, XR_QPT_UC);
SAME(IBV_QPT_UD, XR_QPT_UD);

SAME(IBV_SRQ_MAX_WR, XR_SRQ_MAX_WR);
SAME(IBV_SRQ_LIMIT, XR_SRQ_LIMIT);

SAME(IBV_EVENT_CQ_ERR, XR_EVENT_CQ_ERR);
SAME(IBV_EVENT_COMM_EST, XR_EVENT_COMM_EST);
SAME(IBV_EVENT_SRQ_LIMIT_REACHED, XR_EVENT_SRQ_LIMIT_REACHED);
SAME(IBV_EVENT_GID_CHANGE, XR_EVENT_GID_CHANGE); /* the last, so the ones between agree */

SAME(IBV_QP_STATE, XR_QP_STATE);
SAME(IBV_QP_CUR_STATE, XR_QP_CUR_STATE);
SAME(IBV_QP_EN_SQD_ASYNC_NOTIFY, XR_QP_EN_SQD_ASYNC_NOTIFY);
SAME(IBV_QP_ACCESS_FLAGS, XR_QP_ACCESS_FLAGS);
SAME(IBV_QP_PKEY_INDEX, XR_QP_PKEY_INDEX);
SAME(IBV_QP_PORT, XR_QP_PORT);
SAME(IBV_QP_QKEY, XR_QP_QKEY);
SAME(IBV_QP_AV, XR_QP_AV);
SAME(IBV_QP_PATH_MTU, XR_QP_PATH_MTU);
SAME(IBV_QP_TIMEOUT, XR_QP_TIMEOUT);
SAME(IBV_QP_RETRY_CNT, XR_QP_RETRY_CNT);
SAME(IBV_QP_RNR_RETRY, XR_QP_RNR_RETRY);
SAME(IBV_QP_RQ_PSN, XR_QP_RQ_PSN);
SAME(IBV_QP_MAX_QP_RD_ATOMIC, XR_QP_MAX_QP_RD_ATOMIC);
SAME(IBV_QP_ALT_PATH, XR_QP_ALT_PATH);
SAME(IBV_QP_MIN_RNR_TIMER, XR_QP_MIN_RNR_TIMER);
SAME(IBV_QP_SQ_PSN, XR_QP_SQ_PSN);
SAME(IBV_QP_MAX_DEST_RD_ATOMIC, XR_QP_MAX_DEST_RD_ATOMIC);
SAME(IBV_QP_PATH_MIG_STATE, XR_QP_PATH_MIG_STATE);
SAME(IBV_QP_CAP, XR_QP_CAP);
SAME(IBV_QP_DEST_QPN, XR_QP_DEST_QPN);

SAME(IBV_WR_RDMA_WRITE, XR_WR_RDMA_WRITE);
SAME(IBV_WR_RDMA_WRITE_WITH_IMM, XR_WR_RDMA_WRITE_WITH_IMM);
SAME(IBV_WR_SEND, XR_WR_SEND);
SAME(IBV_WR_SEND_WITH_IMM, XR_WR_SEND_WITH_IMM);
SAME(IBV_WR_RDMA_READ, XR_WR_RDMA_READ);
SAME(IBV_WR_ATOMIC_CMP_AND_SWP, XR_WR_ATOMIC_CMP_AND_SWP);
SAME(IBV_WR_ATOMIC_FETCH_AND_ADD, XR_WR_ATOMIC_FETCH_AND_ADD);
SAME(IBV_WR_LOCAL_INV, XR_WR_LOCAL_INV);
SAME(IBV_WR_BIND_MW, XR_WR_BIND_MW);
SAME(IBV_WR_SEND_WITH_INV, XR_WR_SEND_WITH_INV);

SAME(IBV_SEND_FENCE, XR_SEND_FENCE);
SAME(IBV_SEND_SIGNALED, XR_SEND_SIGNALED);
SAME(IBV_SEND_SOLICITED, XR_SEND_SOLICITED);
SAME(IBV_SEND_INLINE, XR_SEND_INLINE);

SAME(IBV_PORT_NOP, XR_PORT_NOP);
SAME(IBV_PORT_ACTIVE_DEFER, XR_PORT_ACTIVE_DEFER);
SAME(IBV_PORT_CM_SUP, XR_PORT_CM_SUP);
SAME(IBV_PORT_IP_BASED_GIDS, XR_PORT_IP_BASED_GIDS);
SAME(IBV_LINK_LAYER_ETHERNET, XR_LINK_LAYER_ETHERNET);

SAME(IBV_EVENT_CQ_ERR, XR_EVENT_CQ_ERR);
SAME(IBV_EVENT_GID_CHANGE, XR_EVENT_GID_CHANGE); /* the last, so the ones between agree */

/* Scatter/gather lists are handed to libxroce as they are. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct xr_sge) &&
		   offsetof(struct ibv_sge, addr) == offsetof(struct xr_sge, addr) &&
		   offsetof(struct ibv_sge, length) == offsetof(struct xr_sge, length) &&
		   offsetof(struct ibv_sge, lkey) == offsetof(struct xr_sge, lkey),
	       "ibv_sge and xr_sge have one layout");

/* The global route is copied whole; the address vectors around it differ (no path bits or rate
 * here). */
_Static_assert(sizeof(struct ibv_global_route) == sizeof(struct xr_global_route) &&
		   offsetof(struct ibv_global_route, dgid) ==
		       offsetof(struct xr_global_route, dgid) &&
		   offsetof(struct ibv_global_route, flow_label) ==
		       offsetof(struct xr_global_route, flow_label) &&
		   offsetof(struct ibv_global_route, sgid_index) ==
		       offsetof(struct xr_global_route, sgid_index) &&
		   offsetof(struct ibv_global_route, hop_limit) ==
		       offsetof(struct xr_global_route, hop_limit) &&
		   offsetof(struct ibv_global_route, traffic_class) ==
		       offsetof(struct xr_global_route, traffic_class),
	       "ibv_global_route and xr_global_route have one layout");

void xv_ah_attr_to_xr(const struct ibv_ah_attr *in, struct xr_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(&out->grh, &in->grh, sizeof(out->grh));
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->is_global = in->is_global;
	out->port_num = in->port_num;
}

void xv_ah_attr_from_xr(const struct xr_ah_attr *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(&out->grh, &in->grh, sizeof(out->grh));
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->is_global = in->is_global;
	out->port_num = in->port_num;
}

/* The completion fields both structures have, of one meaning and width. */
#define WC_SCALARS(copy)                                                                           \
	copy(wr_id) copy(vendor_err) copy(byte_len) copy(imm_data) copy(qp_num) copy(src_qp)       \
	    copy(wc_flags)
#define COPY_FIELD(field) out->field = in->field;

void xv_wc_from_xr(const struct xr_wc *in, struct ibv_wc *out)
{
	memset(out, 0, sizeof(*out));
	WC_SCALARS(COPY_FIELD)
	out->status = (enum ibv_wc_status)in->status;
	/* Only ibv_wr_opcode work requests reach libxroce from here: their completions agree. */
	out->opcode = (enum ibv_wc_opcode)in->opcode;
}

void xv_wc_to_xr(const struct ibv_wc *in, struct xr_wc *out)
{
	memset(out, 0, sizeof(*out));
	WC_SCALARS(COPY_FIELD)
	out->status = (enum xr_wc_status)in->status;
	out->opcode = (enum xr_wc_opcode)in->opcode;
}
