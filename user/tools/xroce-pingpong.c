/* SPDX-License-Identifier: MIT */
/*
 * xroce-pingpong: an RC SEND ping-pong between two processes, compatible on
 * the wire and on the out-of-band TCP exchange with rdma-core's
 * ibv_rc_pingpong, so either side can be an unmodified ibv_rc_pingpong on
 * Soft-RoCE. Same options and defaults, except that -d names the network
 * interface (xroce devices are named by interface) and -g is required: RoCE
 * has no LIDs, so the zero GID ibv_rc_pingpong uses without -g cannot work.
 *
 * Unlike ibv_rc_pingpong, every wait is bounded and a failure (completion
 * error, timeout, corrupted data with --chk) makes the exit status 1.
 * Options, exchange and loop are pingpong.h's, shared with xroce-uc-pingpong
 * and xroce-ud-pingpong; this file connects the RC queue pair.
 */
#include "pingpong.h"

static int rc_connect(struct pp_ctx *ctx, const struct pp_options *o, unsigned int my_psn,
		      const struct pingpong_dest *dest)
{
	struct qp_rtr_attr rtr = pp_rc_rtr_attr(o, dest);
	const char *failed;
	int ret;

	if (!pp_peer_gid_ok(o, &dest->gid))
		return -1;
	ret = qp_connect(ctx->qp, &rtr, my_psn, 1, &failed);
	if (ret) {
		fprintf(stderr, "%s: failed to modify QP to %s: %s\n", o->prog, failed,
			strerror(-ret));
		return -1;
	}
	return 0;
}

static const struct pp_kind rc_pingpong = {
    .prog = "xroce-pingpong",
    .qp_type = XR_QPT_RC,
    .default_size = 4096,
    .buf_offset = 0,
    .size_help = "default 4096",
    .sl_help = "service level value",
    .has_mtu_option = true,
    .local_gid_sep = ',',
    .init_qp = pp_connected_init_qp,
    .connect = rc_connect,
};

int main(int argc, char **argv)
{
	return pp_main(&rc_pingpong, argc, argv);
}
