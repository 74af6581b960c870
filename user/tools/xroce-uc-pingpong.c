/* SPDX-License-Identifier: MIT */
/*
 * xroce-uc-pingpong: a UC SEND ping-pong between two processes, compatible
 * on the wire and on the out-of-band TCP exchange with rdma-core's
 * ibv_uc_pingpong, so either side can be an unmodified ibv_uc_pingpong on
 * Soft-RoCE. Same options, defaults and output as ibv_uc_pingpong (-s 4096,
 * -m 1024), except that -d names the network interface and -g is required:
 * RoCE has no LIDs, so the zero GID ibv_uc_pingpong uses without -g cannot
 * work. The QP is brought up as ibv_uc_pingpong does it: no remote access,
 * RTR with the path, the peer's QPN and PSN only (no READ/atomic resources,
 * no RNR timer), RTS with our PSN only (no timeout or retries).
 *
 * UC acknowledges nothing: a SEND completes once its last packet left, and a
 * message a packet of which was lost is dropped whole by the receiver, so
 * that its echo never comes. Where ibv_uc_pingpong would then wait forever,
 * the loop's timeout ends the run with exit status 1.
 * With --chk, each receive must also be a plain SEND (no immediate).
 * Options, exchange and loop are pingpong.h's, shared with xroce-pingpong
 * and xroce-ud-pingpong.
 */
#include "pingpong.h"

/* ibv_uc_pingpong's RTR and RTS: only what a UC QP takes. */
static int uc_connect(struct pp_ctx *ctx, const struct pp_options *o, unsigned int my_psn,
		      const struct pingpong_dest *dest)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = o->mtu,
	    .dest_qp_num = dest->qpn,
	    .rq_psn = dest->psn,
	    .ah_attr = {.is_global = 1,
			.dlid = (uint16_t)dest->lid,
			.sl = (uint8_t)o->sl,
			.port_num = (uint8_t)o->ib_port,
			.grh = {.dgid = dest->gid,
				.sgid_index = (uint8_t)o->gid_index,
				.hop_limit = 1}},
	};
	int ret;

	if (!pp_peer_gid_ok(o, &dest->gid))
		return -1;
	ret = xr_modify_qp(ctx->qp, &attr,
			   XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN | XR_QP_RQ_PSN);
	if (ret) {
		fprintf(stderr, "%s: failed to modify QP to RTR: %s\n", o->prog, strerror(-ret));
		return -1;
	}
	attr.qp_state = XR_QPS_RTS;
	attr.sq_psn = my_psn;
	ret = xr_modify_qp(ctx->qp, &attr, XR_QP_STATE | XR_QP_SQ_PSN);
	if (ret) {
		fprintf(stderr, "%s: failed to modify QP to RTS: %s\n", o->prog, strerror(-ret));
		return -1;
	}
	return 0;
}

static bool uc_check_recv(const struct pp_ctx *ctx, const struct pp_options *o,
			  const struct xr_wc *wc, unsigned int rcnt)
{
	(void)ctx;
	if (wc->opcode != XR_WC_RECV || wc->wc_flags & XR_WC_WITH_IMM) {
		fprintf(stderr, "%s: receive %u is not a plain SEND (opcode %d, wc_flags 0x%x)\n",
			o->prog, rcnt, wc->opcode, wc->wc_flags);
		return false;
	}
	return true;
}

static const struct pp_kind uc_pingpong = {
    .prog = "xroce-uc-pingpong",
    .qp_type = XR_QPT_UC,
    .default_size = 4096,
    .buf_offset = 0,
    .size_help = "default 4096",
    .sl_help = "service level value",
    .has_mtu_option = true,
    .local_gid_sep = ',',
    .init_qp = pp_connected_init_qp,
    .connect = uc_connect,
    .check_recv = uc_check_recv,
};

int main(int argc, char **argv)
{
	return pp_main(&uc_pingpong, argc, argv);
}
