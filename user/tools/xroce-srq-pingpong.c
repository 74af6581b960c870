/* SPDX-License-Identifier: MIT */
/*
 * xroce-srq-pingpong: RC SEND ping-pongs on several queue pairs at once, all
 * of them taking their receives from one shared receive queue, compatible on
 * the wire and on the out-of-band TCP exchange with rdma-core's
 * ibv_srq_pingpong, so either side can be an unmodified ibv_srq_pingpong on
 * Soft-RoCE. Same options, defaults and output (-q 16 QPs, -r 500 receives
 * on the SRQ, -s 4096, -m 1024, -n 1000), except that -d names the network
 * interface, -g is required (RoCE has no LIDs) and -o (on-demand paging) is
 * refused.
 *
 * As ibv_srq_pingpong: the QPs share one CQ and one buffer; the exchange is
 * MAX_QP (256) "LID:QPN:PSN:GID" messages each way, the unused slots zero;
 * the client sends on every QP at once, each side answers a QP's SEND on that
 * QP once its own previous SEND on it completed, and -n counts the exchanges
 * of all QPs together (a QP ends when the totals are reached, whatever it
 * did itself); the SRQ is refilled to -r once -q receives or fewer are left.
 *
 * Unlike ibv_srq_pingpong, every wait is bounded, a failure (completion
 * error, timeout, corrupted data with --chk, the peer using another -q)
 * makes the exit status 1, and --chk checks each receive as it completes
 * (the client every echoed byte, the server the first byte of each page).
 * Options, exchange, buffer and summary are pingpong.h's.
 */
#include "pingpong.h"

#define MAX_QP PP_MAX_QP

struct srq_pp {
	struct pp_ctx ctx;
	unsigned int num_qp;
	struct xr_qp *qps[MAX_QP];
	int pending[MAX_QP];
	struct pingpong_dest mine[MAX_QP], remote[MAX_QP];
	struct xr_wc *wc; /* num_qp + rx_depth of them, as ibv_srq_pingpong polls */
	unsigned int num_wc;
	unsigned int scnt, rcnt, routs;
};

/* ---- set-up ------------------------------------------------------------------ */

/* The SRQ (rx_depth deep), and num_qp RC QPs on it in INIT, as ibv_srq_pingpong's pp_init_ctx. */
static int srq_init(struct srq_pp *s, const struct pp_options *o)
{
	struct pp_ctx *ctx = &s->ctx;
	struct xr_srq_init_attr srq_attr = {.attr = {.max_wr = o->rx_depth, .max_sge = 1}};
	int ret;

	s->num_qp = o->num_qp;
	if (pp_init_common(ctx, o, o->rx_depth + o->num_qp))
		return -1;
	ctx->srq = xr_create_srq(ctx->pd, &srq_attr);
	if (!ctx->srq) {
		fprintf(stderr, "%s: couldn't create SRQ: %s\n", o->prog, strerror(errno));
		return -1;
	}
	for (unsigned int i = 0; i < s->num_qp; i++) {
		struct xr_qp_init_attr init_attr = {
		    .send_cq = ctx->cq,
		    .recv_cq = ctx->cq,
		    .srq = ctx->srq,
		    .cap = {.max_send_wr = 1, .max_send_sge = 1},
		    .qp_type = XR_QPT_RC,
		};
		struct xr_qp_attr attr;

		s->qps[i] = xr_create_qp(ctx->pd, &init_attr);
		if (!s->qps[i]) {
			fprintf(stderr, "%s: couldn't create QP[%u]: %s\n", o->prog, i,
				strerror(errno));
			return -1;
		}
		ret = xr_query_qp(s->qps[i], &attr, XR_QP_CAP, &init_attr);
		if (ret) {
			fprintf(stderr, "%s: couldn't query QP[%u]: %s\n", o->prog, i,
				strerror(-ret));
			return -1;
		}
		if (init_attr.cap.max_inline_data >= o->size)
			ctx->send_flags |= XR_SEND_INLINE;
	}
	for (unsigned int i = 0; i < s->num_qp; i++) {
		ret = qp_to_init(s->qps[i], (uint8_t)o->ib_port, 0);
		if (ret) {
			fprintf(stderr, "%s: failed to modify QP[%u] to INIT: %s\n", o->prog, i,
				strerror(-ret));
			return -1;
		}
	}
	s->num_wc = o->rx_depth + s->num_qp;
	s->wc = calloc(s->num_wc, sizeof(*s->wc));
	if (!s->wc) {
		fprintf(stderr, "%s: out of memory for %u completions\n", o->prog, s->num_wc);
		return -1;
	}
	return 0;
}

/*
 * Our QP i to the peer's QP i, with ibv_srq_pingpong's attributes (those of
 * ibv_rc_pingpong: min_rnr_timer 12, one READ/atomic each way, 7 retries,
 * 7 RNR retries). The peer must have as many QPs as we do: a slot of ours
 * that it left empty would have no QP to talk to.
 */
static int srq_connect(struct srq_pp *s, const struct pp_options *o)
{
	unsigned int peer_qps = 0;

	while (peer_qps < MAX_QP && s->remote[peer_qps].qpn)
		peer_qps++;
	if (peer_qps != s->num_qp) {
		fprintf(stderr,
			"%s: the peer has %u QPs, we have %u: run both sides with the same -q\n",
			o->prog, peer_qps, s->num_qp);
		return -1;
	}
	if (!pp_peer_gid_ok(o, &s->remote[0].gid))
		return -1;
	for (unsigned int i = 0; i < s->num_qp; i++) {
		struct qp_rtr_attr rtr = pp_rc_rtr_attr(o, &s->remote[i]);
		const char *failed;
		int ret = qp_connect(s->qps[i], &rtr, s->mine[i].psn, 1, &failed);

		if (ret) {
			fprintf(stderr, "%s: failed to modify QP[%u] to %s: %s\n", o->prog, i,
				failed, strerror(-ret));
			return -1;
		}
	}
	return 0;
}

/* ---- the ping-pong loop ---------------------------------------------------------- */

static void srq_describe_wait(const struct srq_pp *s, unsigned int iters)
{
	unsigned int sends = 0, recvs = 0;

	for (unsigned int i = 0; i < s->num_qp; i++) {
		sends += !!(s->pending[i] & PINGPONG_SEND_WRID);
		recvs += !!(s->pending[i] & PINGPONG_RECV_WRID);
	}
	fprintf(stderr,
		"  was waiting (sends completed %u/%u, receives completed %u/%u): %u of %u QPs "
		"for the completion of their SEND, %u for a SEND from the peer\n",
		s->scnt, iters, s->rcnt, iters, sends, s->num_qp, recvs);
}

static int srq_find_qp(const struct srq_pp *s, uint32_t qpn)
{
	for (unsigned int i = 0; i < s->num_qp; i++)
		if (s->qps[i]->qp_num == qpn)
			return (int)i;
	return -1;
}

static int srq_handle_wc(struct srq_pp *s, const struct pp_options *o, const struct xr_wc *wc)
{
	struct pp_ctx *ctx = &s->ctx;
	int i = srq_find_qp(s, wc->qp_num);

	if (wc->status != XR_WC_SUCCESS) {
		fprintf(stderr,
			"%s: %s completion failed on QPN 0x%06x: %s (%d), vendor_err %u, after %u "
			"sends and %u receives\n",
			ctx->prog, wc->wr_id == PINGPONG_SEND_WRID ? "send" : "receive", wc->qp_num,
			xr_wc_status_str(wc->status), wc->status, wc->vendor_err, s->scnt, s->rcnt);
		return -1;
	}
	if (i < 0) {
		fprintf(stderr, "%s: couldn't find QPN %06x\n", ctx->prog, wc->qp_num);
		return -1;
	}
	switch (wc->wr_id) {
	case PINGPONG_SEND_WRID:
		s->scnt++;
		break;
	case PINGPONG_RECV_WRID:
		if (--s->routs <= s->num_qp) {
			s->routs += pp_post_recv(ctx, ctx->rx_depth - s->routs);
			if (s->routs < ctx->rx_depth)
				return -1;
		}
		s->rcnt++;
		if (o->validate_buf) {
			if (wc->byte_len != ctx->size) {
				fprintf(stderr,
					"%s: receive %u (QP[%d]) has %u bytes, expected %u\n",
					ctx->prog, s->rcnt, i, wc->byte_len, ctx->size);
				return -1;
			}
			if (wc->opcode != XR_WC_RECV || wc->wc_flags & XR_WC_WITH_IMM) {
				fprintf(stderr,
					"%s: receive %u (QP[%d]) is not a plain SEND (opcode %d, "
					"wc_flags 0x%x)\n",
					ctx->prog, s->rcnt, i, wc->opcode, wc->wc_flags);
				return -1;
			}
			if (!pp_check_received(ctx, o->servername != NULL, s->rcnt))
				return -1;
		}
		break;
	default:
		fprintf(stderr, "%s: completion for unknown wr_id %" PRIu64 "\n", ctx->prog,
			wc->wr_id);
		return -1;
	}
	s->pending[i] &= ~(int)wc->wr_id;
	if (s->scnt < o->iters && !s->pending[i]) {
		if (pp_post_send_on(ctx, s->qps[i]))
			return -1;
		s->pending[i] = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

/* Polls and handles what the CQ has: 1 when something was there, 0 when nothing, -1 on failure. */
static int srq_poll(struct srq_pp *s, const struct pp_options *o)
{
	int ne = xr_poll_cq(s->ctx.cq, (int)s->num_wc, s->wc);

	if (ne < 0) {
		fprintf(stderr, "%s: poll CQ failed: %s\n", s->ctx.prog, strerror(-ne));
		return -1;
	}
	for (int i = 0; i < ne; i++)
		if (srq_handle_wc(s, o, &s->wc[i]))
			return -1;
	return ne > 0;
}

static int srq_run_loop(struct srq_pp *s, const struct pp_options *o)
{
	int64_t timeout_ms = LOOP_BASE_TIMEOUT_MS + (int64_t)o->iters * LOOP_PER_ITER_MS;
	int64_t deadline = tool_now_ms() + timeout_ms;
	unsigned int idle_polls = 0;

	while (s->rcnt < o->iters || s->scnt < o->iters) {
		int ret;

		if (o->use_events) {
			ret = pp_await_cq_event(&s->ctx, deadline);
			if (ret > 0)
				srq_describe_wait(s, o->iters);
			if (ret)
				return -1;
			while ((ret = srq_poll(s, o)) > 0)
				;
			if (ret < 0)
				return -1;
			continue;
		}
		ret = srq_poll(s, o);
		if (ret < 0)
			return -1;
		if (ret > 0) {
			idle_polls = 0;
			continue;
		}
		if (pp_idle(&s->ctx, deadline, timeout_ms, &idle_polls)) {
			srq_describe_wait(s, o->iters);
			return -1;
		}
	}
	return 0;
}

/* ---- main flow ------------------------------------------------------------------ */

static void srq_close(struct srq_pp *s)
{
	int ret;

	/* The QPs first: the SRQ is busy while any uses it. */
	for (unsigned int i = 0; i < s->num_qp; i++)
		if (s->qps[i] && (ret = xr_destroy_qp(s->qps[i])))
			fprintf(stderr, "%s: couldn't destroy QP[%u]: %s\n", s->ctx.prog, i,
				strerror(-ret));
	pp_close_ctx(&s->ctx);
	free(s->wc);
}

static int srq_run(const struct pp_options *o)
{
	static struct srq_pp s;
	struct pp_ctx *ctx = &s.ctx;
	struct timespec start, end;
	union xr_gid gid;
	int ret, status = 1;

	ctx->prog = o->prog;
	if (srq_init(&s, o))
		goto out;
	s.routs = pp_post_recv(ctx, ctx->rx_depth);
	if (s.routs < ctx->rx_depth)
		goto out;

	ret = xr_query_gid(ctx->dev, o->gid_index, &gid);
	if (ret) {
		fprintf(stderr, "%s: can't read sgid of index %d: %s\n", o->prog, o->gid_index,
			strerror(-ret));
		goto out;
	}
	/* The slots past our QPs stay zero, and are sent as such. */
	for (unsigned int i = 0; i < s.num_qp; i++) {
		s.mine[i].lid = 0;
		s.mine[i].qpn = s.qps[i]->qp_num;
		s.mine[i].psn = lrand48() & 0xffffff;
		s.mine[i].gid = gid;
		pp_print_dest("local address: ", &s.mine[i], ',');
	}

	if (o->servername) {
		if (pp_client_exchange(o, s.mine, s.remote, MAX_QP))
			goto out;
	} else {
		int fd = pp_server_accept(o, s.remote, MAX_QP);

		if (fd < 0)
			goto out;
		if (srq_connect(&s, o)) {
			close(fd);
			goto out;
		}
		if (pp_server_reply(o, fd, s.mine, MAX_QP))
			goto out;
	}
	for (unsigned int i = 0; i < s.num_qp; i++)
		pp_print_dest("remote address:", &s.remote[i], ',');

	if (o->servername && srq_connect(&s, o))
		goto out;

	for (unsigned int i = 0; i < s.num_qp; i++)
		s.pending[i] = PINGPONG_RECV_WRID;
	if (o->servername) {
		if (o->validate_buf)
			pp_fill_pattern(ctx);
		for (unsigned int i = 0; i < s.num_qp; i++) {
			if (pp_post_send_on(ctx, s.qps[i]))
				goto out;
			s.pending[i] |= PINGPONG_SEND_WRID;
		}
	}

	clock_gettime(CLOCK_MONOTONIC, &start);
	if (srq_run_loop(&s, o))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &end);
	pp_print_summary(o, &start, &end);
	status = 0;
out:
	fflush(stdout);
	srq_close(&s);
	return status;
}

static const struct pp_kind srq_pingpong = {
    .prog = "xroce-srq-pingpong",
    .qp_type = XR_QPT_RC,
    .default_size = 4096,
    .buf_offset = 0,
    .size_help = "default 4096",
    .sl_help = "service level value",
    .has_mtu_option = true,
    .multi_qp = true,
    .local_gid_sep = ',',
    .run = srq_run,
};

int main(int argc, char **argv)
{
	return pp_main(&srq_pingpong, argc, argv);
}
