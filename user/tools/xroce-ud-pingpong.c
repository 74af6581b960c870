/* SPDX-License-Identifier: MIT */
/*
 * xroce-ud-pingpong: a UD SEND ping-pong between two processes, compatible
 * on the wire and on the out-of-band TCP exchange with rdma-core's
 * ibv_ud_pingpong, so either side can be an unmodified ibv_ud_pingpong on
 * Soft-RoCE: the same "LID:QPN:PSN:GID" messages, the Q_Key 0x11111111, one
 * datagram of -s bytes (at most the port's MTU) per message, receive buffers
 * with 40 bytes of GRH space in front of the payload, and the same output.
 * Same options and defaults (-s 1024, what ibv_ud_pingpong really uses,
 * although its help says 2048), except that -d names the network interface
 * and -g is required: RoCE has no LIDs, so the zero GID ibv_ud_pingpong uses
 * without -g cannot work.
 *
 * With --chk, each receive is also checked as a UD receive: XR_WC_GRH, the
 * peer's QPN as src_qp, the GRH (IPv4: 20 zero bytes and the IPv4 header;
 * or the IPv6 header) naming the two GIDs and the datagram's length, and
 * xr_init_ah_from_wc finding the peer's address in it. Datagrams are not
 * retransmitted: a lost one ends the run at the loop's timeout, exit status 1.
 * Options, exchange and loop are pingpong.h's, shared with xroce-pingpong
 * and xroce-uc-pingpong.
 */
#include "pingpong.h"

/* Header bytes of a datagram after the IP header: UDP, BTH, DETH; ICRC after the payload. */
#define UD_UDP_HLEN 8
#define UD_BTH_LEN 12
#define UD_DETH_LEN 8
#define UD_ICRC_LEN 4

static int ud_init_qp(struct pp_ctx *ctx, const struct pp_options *o)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_INIT,
	    .pkey_index = 0,
	    .port_num = (uint8_t)o->ib_port,
	    .qkey = PP_UD_QKEY,
	};
	struct xr_device_attr dev_attr;
	unsigned int mtu;
	int ret;

	/* As ibv_ud_pingpong: a message is one datagram, at most the port's MTU. */
	ret = xr_query_device(ctx->dev, &dev_attr);
	if (ret) {
		fprintf(stderr, "%s: couldn't query device %s: %s\n", o->prog, o->ifname,
			strerror(-ret));
		return -1;
	}
	mtu = 1u << (dev_attr.active_mtu + 7);
	if (o->size > mtu) {
		fprintf(stderr, "%s: requested size larger than port MTU (%u)\n", o->prog, mtu);
		return -1;
	}
	ret =
	    xr_modify_qp(ctx->qp, &attr, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY);
	if (ret) {
		fprintf(stderr, "%s: failed to modify QP to INIT: %s\n", o->prog, strerror(-ret));
		return -1;
	}
	return 0;
}

/* RTR and RTS as ibv_ud_pingpong does them, then the address handle of the peer. */
static int ud_connect(struct pp_ctx *ctx, const struct pp_options *o, unsigned int my_psn,
		      const struct pingpong_dest *dest)
{
	struct xr_qp_attr attr = {.qp_state = XR_QPS_RTR};
	struct xr_ah_attr ah_attr = {
	    .is_global = 1,
	    .dlid = (uint16_t)dest->lid,
	    .sl = (uint8_t)o->sl,
	    .port_num = (uint8_t)o->ib_port,
	    .grh = {.dgid = dest->gid, .sgid_index = (uint8_t)o->gid_index, .hop_limit = 1},
	};
	int ret;

	/* ibv_ud_pingpong makes a global AH only for a GID with an interface id. */
	if (!pp_peer_gid_ok(o, &dest->gid))
		return -1;
	ret = xr_modify_qp(ctx->qp, &attr, XR_QP_STATE);
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
	ctx->ah = xr_create_ah(ctx->pd, &ah_attr);
	if (!ctx->ah) {
		fprintf(stderr, "%s: failed to create AH: %s\n", o->prog, strerror(errno));
		return -1;
	}
	ctx->remote_qpn = dest->qpn;
	return 0;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Why the GRH at the start of the buffer is not that of our peer's datagram; NULL if it is. */
static const char *ud_grh_problem(const struct pp_ctx *ctx)
{
	static const uint8_t zeros[XR_GRH_SIZE - 20];
	const uint8_t *grh = ctx->buf;
	unsigned int pad = -ctx->size & 3;
	unsigned int udp_len =
	    UD_UDP_HLEN + UD_BTH_LEN + UD_DETH_LEN + ctx->size + pad + UD_ICRC_LEN;

	if (gid_is_ipv4_mapped(&ctx->remote.gid)) {
		const uint8_t *ip = grh + XR_GRH_SIZE - 20;

		if (memcmp(grh, zeros, sizeof(zeros)))
			return "its first 20 bytes are not zero (IPv4)";
		if (ip[0] != 0x45)
			return "bytes 20-39 are not an IPv4 header of 20 bytes";
		if (get16(ip + 2) != 20 + udp_len)
			return "the IPv4 total length is not that of the datagram";
		if (ip[9] != IPPROTO_UDP)
			return "the IPv4 protocol is not UDP";
		if (memcmp(ip + 12, &ctx->remote.gid.raw[12], 4))
			return "the IPv4 source is not the peer's address";
		if (memcmp(ip + 16, &ctx->local.gid.raw[12], 4))
			return "the IPv4 destination is not our address";
		return NULL;
	}
	if (grh[0] >> 4 != 6)
		return "it is not an IPv6 header";
	if (get16(grh + 4) != udp_len)
		return "the IPv6 payload length is not that of the datagram";
	if (grh[6] != IPPROTO_UDP)
		return "the IPv6 next header is not UDP";
	if (memcmp(grh + 8, ctx->remote.gid.raw, 16))
		return "the IPv6 source is not the peer's GID";
	if (memcmp(grh + 24, ctx->local.gid.raw, 16))
		return "the IPv6 destination is not our GID";
	return NULL;
}

static bool ud_check_recv(const struct pp_ctx *ctx, const struct pp_options *o,
			  const struct xr_wc *wc, unsigned int rcnt)
{
	struct xr_ah_attr ah_attr;
	const char *why = NULL;
	int ret;

	if (wc->opcode != XR_WC_RECV || wc->wc_flags & XR_WC_WITH_IMM)
		why = "it is not a plain SEND";
	else if (!(wc->wc_flags & XR_WC_GRH))
		why = "XR_WC_GRH is not set";
	else if (wc->src_qp != ctx->remote.qpn)
		why = "src_qp is not the peer's QPN";
	else
		why = ud_grh_problem(ctx);
	if (why) {
		fprintf(stderr, "%s: receive %u: %s (src_qp 0x%06x, wc_flags 0x%x)\n", o->prog,
			rcnt, why, wc->src_qp, wc->wc_flags);
		return false;
	}
	ret = xr_init_ah_from_wc(ctx->dev, (uint8_t)o->ib_port, wc,
				 (const struct xr_grh *)(const void *)ctx->buf, &ah_attr);
	if (ret) {
		fprintf(stderr, "%s: receive %u: xr_init_ah_from_wc: %s\n", o->prog, rcnt,
			strerror(-ret));
		return false;
	}
	if (!ah_attr.is_global || memcmp(ah_attr.grh.dgid.raw, ctx->remote.gid.raw, 16) ||
	    ah_attr.grh.sgid_index != o->gid_index) {
		char gid[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, ah_attr.grh.dgid.raw, gid, sizeof(gid));
		fprintf(stderr,
			"%s: receive %u: xr_init_ah_from_wc answers GID %s from index %u, not the "
			"peer's from index %d\n",
			o->prog, rcnt, gid, ah_attr.grh.sgid_index, o->gid_index);
		return false;
	}
	return true;
}

static const struct pp_kind ud_pingpong = {
    .prog = "xroce-ud-pingpong",
    .qp_type = XR_QPT_UD,
    .default_size = 1024,
    .buf_offset = XR_GRH_SIZE,
    .size_help = "default 1024, at most the port's MTU",
    .sl_help = "send messages with service level <sl> (default 0)",
    .has_mtu_option = false,
    .local_gid_sep = ':',
    .init_qp = ud_init_qp,
    .connect = ud_connect,
    .check_recv = ud_check_recv,
};

int main(int argc, char **argv)
{
	return pp_main(&ud_pingpong, argc, argv);
}
