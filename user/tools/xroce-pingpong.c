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
 */
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>

#include "tool_common.h"

#define PROG "xroce-pingpong"

enum {
	PINGPONG_RECV_WRID = 1,
	PINGPONG_SEND_WRID = 2,
};

/* "LID:QPN:PSN:GID" + NUL, as ibv_rc_pingpong sends it: 52 bytes. */
#define DEST_MSG_SIZE sizeof("0000:000000:000000:00000000000000000000000000000000")
#define DONE_MSG "done"
#define DONE_MSG_SIZE sizeof(DONE_MSG)

/* Bounds on every wait: generous, because a TCG-emulated peer is slow. */
#define ACCEPT_TIMEOUT_MS 60000
#define CONNECT_RETRY_MS 20000
#define EXCHANGE_TIMEOUT_MS 30000
#define LOOP_BASE_TIMEOUT_MS 60000
#define LOOP_PER_ITER_MS 50

/* An empty poll drives the engine itself; yield now and then all the same. */
#define SPIN_POLLS_BEFORE_YIELD 1024

struct options {
	const char *ifname;
	const char *servername;
	unsigned int port;
	int ib_port;
	unsigned int size;
	enum xr_mtu mtu;
	unsigned int rx_depth;
	unsigned int iters;
	int sl;
	int gid_index;
	bool use_events;
	bool validate_buf;
};

struct pingpong_dest {
	unsigned int lid;
	unsigned int qpn;
	unsigned int psn;
	union xr_gid gid;
};

struct pingpong_ctx {
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_mr *mr;
	struct xr_comp_channel *channel; /* -e */
	struct xr_cq *cq;
	struct xr_qp *qp;
	uint8_t *buf;
	unsigned int size;
	unsigned int rx_depth;
	unsigned int send_flags;
	int pending;
	long page_size;
};

static void usage(const char *argv0)
{
	printf("Usage:\n");
	printf("  %s -d IFNAME -g IDX            start a server and wait for connection\n", argv0);
	printf("  %s -d IFNAME -g IDX <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<ifname>  use the xroce device of network interface <ifname>\n");
	printf("  -i, --ib-port=<port>   use port <port> of the device (default 1)\n");
	printf("  -s, --size=<size>      size of message to exchange (default 4096)\n");
	printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<sl>          service level value\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -c, --chk              validate received buffer\n");
}

/* Returns 0 to run, 1 for a usage error, 2 when usage was printed on request. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option long_options[] = {
	    {.name = "port", .has_arg = 1, .val = 'p'},
	    {.name = "ib-dev", .has_arg = 1, .val = 'd'},
	    {.name = "ib-port", .has_arg = 1, .val = 'i'},
	    {.name = "size", .has_arg = 1, .val = 's'},
	    {.name = "mtu", .has_arg = 1, .val = 'm'},
	    {.name = "rx-depth", .has_arg = 1, .val = 'r'},
	    {.name = "iters", .has_arg = 1, .val = 'n'},
	    {.name = "sl", .has_arg = 1, .val = 'l'},
	    {.name = "events", .has_arg = 0, .val = 'e'},
	    {.name = "gid-idx", .has_arg = 1, .val = 'g'},
	    {.name = "chk", .has_arg = 0, .val = 'c'},
	    {.name = "help", .has_arg = 0, .val = 'h'},
	    {0},
	};
	unsigned long v;
	int c;

	*o = (struct options){
	    .port = 18515,
	    .ib_port = 1,
	    .size = 4096,
	    .mtu = XR_MTU_1024,
	    .rx_depth = 500,
	    .iters = 1000,
	    .gid_index = -1,
	};
	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:ch", long_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_ulong(optarg, 65535, &v))
				goto bad_value;
			o->port = v;
			break;
		case 'd':
			o->ifname = optarg;
			break;
		case 'i':
			if (!parse_ulong(optarg, 255, &v) || v < 1)
				goto bad_value;
			o->ib_port = v;
			break;
		case 's':
			if (!parse_ulong(optarg, INT32_MAX, &v) || v < 1)
				goto bad_value;
			o->size = v;
			break;
		case 'm':
			if (!parse_ulong(optarg, 4096, &v) || !mtu_from_bytes(v))
				goto bad_value;
			o->mtu = mtu_from_bytes(v);
			break;
		case 'r':
			if (!parse_ulong(optarg, INT32_MAX - 1, &v) || v < 1)
				goto bad_value;
			o->rx_depth = v;
			break;
		case 'n':
			if (!parse_ulong(optarg, INT32_MAX, &v) || v < 1)
				goto bad_value;
			o->iters = v;
			break;
		case 'l':
			if (!parse_ulong(optarg, 15, &v))
				goto bad_value;
			o->sl = v;
			break;
		case 'e':
			o->use_events = true;
			break;
		case 'g':
			if (!parse_ulong(optarg, XR_MAX_GIDS - 1, &v))
				goto bad_value;
			o->gid_index = v;
			break;
		case 'c':
			o->validate_buf = true;
			break;
		case 'h':
			usage(argv[0]);
			return 2;
		default:
			usage(argv[0]);
			return 1;
		}
	}
	if (optind == argc - 1) {
		o->servername = argv[optind];
	} else if (optind < argc) {
		usage(argv[0]);
		return 1;
	}
	if (!o->ifname) {
		fprintf(stderr, PROG ": -d IFNAME is required (xroce devices are named by "
				     "network interface)\n");
		return 1;
	}
	if (o->gid_index < 0) {
		fprintf(stderr, PROG ": -g GID_INDEX is required: RoCE addresses by GID "
				     "(index 1 is usually the first IPv4 address)\n");
		return 1;
	}
	return 0;

bad_value:
	fprintf(stderr, PROG ": invalid value '%s' for -%c\n", optarg, c);
	return 1;
}

/* ---- out-of-band exchange ------------------------------------------- */

/* The GID as 32 hex digits of its 16 bytes in wire order, as ibv_rc_pingpong writes it. */
static void format_dest(const struct pingpong_dest *d, char msg[DEST_MSG_SIZE])
{
	char gid_hex[33];

	for (int i = 0; i < 16; i++)
		sprintf(&gid_hex[i * 2], "%02x", d->gid.raw[i]);
	snprintf(msg, DEST_MSG_SIZE, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn, gid_hex);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_dest(const char msg[DEST_MSG_SIZE], struct pingpong_dest *d)
{
	char text[DEST_MSG_SIZE];
	char gid_hex[33];
	int consumed = 0;

	memcpy(text, msg, DEST_MSG_SIZE);
	text[DEST_MSG_SIZE - 1] = '\0';
	if (sscanf(text, "%x:%x:%x:%32[0-9a-fA-F]%n", &d->lid, &d->qpn, &d->psn, gid_hex,
		   &consumed) != 4 ||
	    strlen(gid_hex) != 32 || text[consumed] != '\0')
		return -EINVAL;
	for (int i = 0; i < 16; i++)
		d->gid.raw[i] = hex_digit(gid_hex[2 * i]) << 4 | hex_digit(gid_hex[2 * i + 1]);
	return 0;
}

static void print_dest(const char *label, const struct pingpong_dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid.raw, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", label, d->lid, d->qpn, d->psn,
	       gid);
}

/* Client side: send ours, read theirs, send "done", as ibv_rc_pingpong's client does. */
static int client_exchange(const struct options *o, const struct pingpong_dest *mine,
			   struct pingpong_dest *remote)
{
	char msg[DEST_MSG_SIZE];
	const char *why;
	int64_t deadline;
	int fd, ret;

	fd = oob_connect(o->servername, o->port, CONNECT_RETRY_MS, EXCHANGE_TIMEOUT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, PROG ": couldn't connect to %s:%u: %s\n", o->servername, o->port,
			why);
		return -1;
	}
	deadline = tool_now_ms() + EXCHANGE_TIMEOUT_MS;
	format_dest(mine, msg);
	ret = oob_write_msg(fd, msg, sizeof(msg), deadline);
	if (ret) {
		fprintf(stderr, PROG ": couldn't send local address: %s\n", oob_error(ret));
		goto out;
	}
	ret = oob_read_full(fd, msg, sizeof(msg), deadline);
	if (ret) {
		fprintf(stderr, PROG ": couldn't read remote address: %s\n", oob_error(ret));
		goto out;
	}
	ret = parse_dest(msg, remote);
	if (ret) {
		fprintf(stderr, PROG ": malformed remote address '%.*s'\n", (int)sizeof(msg) - 1,
			msg);
		goto out;
	}
	ret = oob_write_msg(fd, DONE_MSG, DONE_MSG_SIZE, deadline);
	if (ret)
		fprintf(stderr, PROG ": couldn't send 'done': %s\n", oob_error(ret));
out:
	close(fd);
	return ret ? -1 : 0;
}

/* Server side, first half: accept the client and read its address. Returns the connection. */
static int server_accept(const struct options *o, struct pingpong_dest *remote)
{
	char msg[DEST_MSG_SIZE];
	const char *why;
	int fd, ret;

	fd = oob_accept(AF_UNSPEC, o->port, ACCEPT_TIMEOUT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, PROG ": port %u: %s\n", o->port, why);
		return -1;
	}
	ret = oob_read_full(fd, msg, sizeof(msg), tool_now_ms() + EXCHANGE_TIMEOUT_MS);
	if (ret) {
		fprintf(stderr, PROG ": couldn't read remote address: %s\n", oob_error(ret));
		goto fail;
	}
	if (parse_dest(msg, remote)) {
		fprintf(stderr, PROG ": malformed remote address '%.*s'\n", (int)sizeof(msg) - 1,
			msg);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Server side, second half, once our QP is in RTS (the client sends its
 * first SEND as soon as it has our address): send ours, wait for "done".
 */
static int server_reply(int fd, const struct pingpong_dest *mine)
{
	char msg[DEST_MSG_SIZE];
	int64_t deadline = tool_now_ms() + EXCHANGE_TIMEOUT_MS;
	int ret;

	format_dest(mine, msg);
	ret = oob_write_msg(fd, msg, sizeof(msg), deadline);
	if (ret) {
		fprintf(stderr, PROG ": couldn't send local address: %s\n", oob_error(ret));
		goto out;
	}
	ret = oob_read_full(fd, msg, DONE_MSG_SIZE, deadline);
	if (ret) {
		fprintf(stderr, PROG ": couldn't read 'done': %s\n", oob_error(ret));
		goto out;
	}
	if (memcmp(msg, DONE_MSG, DONE_MSG_SIZE)) {
		fprintf(stderr, PROG ": expected 'done' from the client, got '%.*s'\n",
			(int)DONE_MSG_SIZE - 1, msg);
		ret = -EPROTO;
	}
out:
	close(fd);
	return ret ? -1 : 0;
}

/* ---- verbs ------------------------------------------------------------ */

static void close_ctx(struct pingpong_ctx *ctx)
{
	int ret;

	if (ctx->qp && (ret = xr_destroy_qp(ctx->qp)))
		fprintf(stderr, PROG ": couldn't destroy QP: %s\n", strerror(-ret));
	if (ctx->cq && (ret = xr_destroy_cq(ctx->cq)))
		fprintf(stderr, PROG ": couldn't destroy CQ: %s\n", strerror(-ret));
	if (ctx->channel && (ret = xr_destroy_comp_channel(ctx->channel)))
		fprintf(stderr, PROG ": couldn't destroy completion channel: %s\n", strerror(-ret));
	if (ctx->mr && (ret = xr_dereg_mr(ctx->mr)))
		fprintf(stderr, PROG ": couldn't deregister MR: %s\n", strerror(-ret));
	if (ctx->pd && (ret = xr_dealloc_pd(ctx->pd)))
		fprintf(stderr, PROG ": couldn't deallocate PD: %s\n", strerror(-ret));
	if (ctx->dev && (ret = xr_close_device(ctx->dev)))
		fprintf(stderr, PROG ": couldn't close device: %s\n", strerror(-ret));
	free(ctx->buf);
}

static int init_ctx(struct pingpong_ctx *ctx, const struct options *o)
{
	struct xr_device_attr dev_attr;
	struct xr_qp_init_attr init_attr = {
	    .cap = {.max_send_wr = 1,
		    .max_recv_wr = o->rx_depth,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	    .qp_type = XR_QPT_RC,
	};
	struct xr_qp_attr attr;
	size_t alloc_size;
	int ret;

	ctx->size = o->size;
	ctx->rx_depth = o->rx_depth;
	ctx->send_flags = XR_SEND_SIGNALED;
	ctx->page_size = sysconf(_SC_PAGESIZE);
	alloc_size = (o->size + ctx->page_size - 1) / ctx->page_size * ctx->page_size;
	ctx->buf = aligned_alloc(ctx->page_size, alloc_size);
	if (!ctx->buf) {
		fprintf(stderr, PROG ": couldn't allocate a %u-byte buffer\n", o->size);
		return -1;
	}
	/* Like ibv_rc_pingpong: --chk then sees whether a SEND really landed. */
	memset(ctx->buf, 0x7b, o->size);

	ctx->dev = xr_open_device(o->ifname, NULL);
	if (!ctx->dev) {
		fprintf(stderr, PROG ": couldn't open the xroce device of %s: %s\n", o->ifname,
			xr_strerror(errno));
		return -1;
	}
	ret = xr_query_device(ctx->dev, &dev_attr);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query device %s: %s\n", o->ifname, strerror(-ret));
		return -1;
	}
	if (o->rx_depth > dev_attr.max_qp_wr || o->rx_depth + 1 > dev_attr.max_cqe) {
		fprintf(stderr, PROG ": -r %u is more than %s allows (max_qp_wr %u, max_cqe %u)\n",
			o->rx_depth, o->ifname, dev_attr.max_qp_wr, dev_attr.max_cqe);
		return -1;
	}
	ctx->pd = xr_alloc_pd(ctx->dev);
	if (!ctx->pd) {
		fprintf(stderr, PROG ": couldn't allocate PD: %s\n", strerror(errno));
		return -1;
	}
	ctx->mr = xr_reg_mr(ctx->pd, ctx->buf, o->size, XR_ACCESS_LOCAL_WRITE);
	if (!ctx->mr) {
		fprintf(stderr, PROG ": couldn't register MR: %s\n", strerror(errno));
		return -1;
	}
	if (o->use_events) {
		ctx->channel = xr_create_comp_channel(ctx->dev);
		if (!ctx->channel) {
			fprintf(stderr, PROG ": couldn't create completion channel: %s\n",
				strerror(errno));
			return -1;
		}
	}
	ctx->cq = xr_create_cq(ctx->dev, o->rx_depth + 1, ctx->channel);
	if (!ctx->cq) {
		fprintf(stderr, PROG ": couldn't create CQ: %s\n", strerror(errno));
		return -1;
	}
	if (o->use_events && xr_req_notify_cq(ctx->cq, 0)) {
		fprintf(stderr, PROG ": couldn't request CQ notification\n");
		return -1;
	}
	init_attr.send_cq = ctx->cq;
	init_attr.recv_cq = ctx->cq;
	ctx->qp = xr_create_qp(ctx->pd, &init_attr);
	if (!ctx->qp) {
		fprintf(stderr, PROG ": couldn't create QP: %s\n", strerror(errno));
		return -1;
	}
	ret = xr_query_qp(ctx->qp, &attr, XR_QP_CAP, &init_attr);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query QP: %s\n", strerror(-ret));
		return -1;
	}
	if (init_attr.cap.max_inline_data >= o->size)
		ctx->send_flags |= XR_SEND_INLINE;

	ret = qp_to_init(ctx->qp, (uint8_t)o->ib_port, 0);
	if (ret) {
		fprintf(stderr, PROG ": failed to modify QP to INIT: %s\n", strerror(-ret));
		return -1;
	}
	return 0;
}

static int connect_qp(struct pingpong_ctx *ctx, const struct options *o, unsigned int my_psn,
		      const struct pingpong_dest *dest)
{
	struct qp_rtr_attr rtr = {
	    .path_mtu = o->mtu,
	    .dest_qpn = dest->qpn,
	    .rq_psn = dest->psn,
	    .dgid = dest->gid,
	    .sgid_index = (uint8_t)o->gid_index,
	    .port_num = (uint8_t)o->ib_port,
	    .hop_limit = 1,
	    .sl = (uint8_t)o->sl,
	    .dlid = (uint16_t)dest->lid,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	};
	static const uint8_t zero_gid[16];
	const char *failed;
	int ret;

	if (!memcmp(dest->gid.raw, zero_gid, sizeof(zero_gid))) {
		fprintf(stderr,
			PROG ": the peer sent a zero GID: RoCE needs one (run it with -g)\n");
		return -1;
	}
	ret = qp_connect(ctx->qp, &rtr, my_psn, 1, &failed);
	if (ret) {
		fprintf(stderr, PROG ": failed to modify QP to %s: %s\n", failed, strerror(-ret));
		return -1;
	}
	return 0;
}

static unsigned int post_recv(struct pingpong_ctx *ctx, unsigned int n)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)ctx->buf, .length = ctx->size, .lkey = ctx->mr->lkey};
	struct xr_recv_wr wr = {.wr_id = PINGPONG_RECV_WRID, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad_wr;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		ret = xr_post_recv(ctx->qp, &wr, &bad_wr);
		if (ret)
			break;
	}
	if (ret)
		fprintf(stderr, PROG ": couldn't post receive %u of %u: %s\n", i + 1, n,
			strerror(-ret));
	return i;
}

static int post_send(struct pingpong_ctx *ctx)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)ctx->buf, .length = ctx->size, .lkey = ctx->mr->lkey};
	struct xr_send_wr wr = {
	    .wr_id = PINGPONG_SEND_WRID,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_SEND,
	    .send_flags = ctx->send_flags,
	};
	struct xr_send_wr *bad_wr;
	int ret = xr_post_send(ctx->qp, &wr, &bad_wr);

	if (ret)
		fprintf(stderr, PROG ": couldn't post send: %s\n", strerror(-ret));
	return ret;
}

/* ---- --chk -------------------------------------------------------------- */

/*
 * ibv_rc_pingpong's client zeroes the first byte of every page before its
 * first SEND and its server checks those bytes. Our client also fills the
 * rest with a position-dependent pattern and checks every echo it receives
 * in full (any ibv_rc_pingpong server echoes the buffer it received); the
 * server can only check what any client writes: the page-start zeros.
 */
static uint8_t pattern_byte(const struct pingpong_ctx *ctx, size_t i)
{
	return i % ctx->page_size == 0 ? 0 : (uint8_t)(1 + i % 251);
}

static void fill_pattern(struct pingpong_ctx *ctx)
{
	for (size_t i = 0; i < ctx->size; i++)
		ctx->buf[i] = pattern_byte(ctx, i);
}

static bool check_received(const struct pingpong_ctx *ctx, bool full_pattern, unsigned int rcnt)
{
	for (size_t i = 0; i < ctx->size; i++) {
		if (!full_pattern && i % ctx->page_size)
			continue;
		if (ctx->buf[i] != pattern_byte(ctx, i)) {
			fprintf(stderr,
				PROG ": invalid data in page %zu (byte %zu is 0x%02x, expected "
				     "0x%02x) after receive %u\n",
				i / ctx->page_size, i, ctx->buf[i], pattern_byte(ctx, i), rcnt);
			return false;
		}
	}
	return true;
}

/* ---- the ping-pong loop ------------------------------------------------ */

struct loop_state {
	unsigned int scnt, rcnt, routs;
};

static void describe_wait(const struct pingpong_ctx *ctx, const struct loop_state *st,
			  unsigned int iters)
{
	bool send = ctx->pending & PINGPONG_SEND_WRID, recv = ctx->pending & PINGPONG_RECV_WRID;

	fprintf(stderr,
		"  was waiting for %s%s%s (sends completed %u/%u, receives completed %u/%u)\n",
		send ? "the completion of our SEND" : "", send && recv ? " and " : "",
		recv ? "a SEND from the peer" : "", st->scnt, iters, st->rcnt, iters);
}

static int handle_wc(struct pingpong_ctx *ctx, const struct options *o, struct loop_state *st,
		     const struct xr_wc *wc)
{
	if (wc->status != XR_WC_SUCCESS) {
		fprintf(stderr,
			PROG ": %s completion failed: %s (%d), vendor_err %u, after %u sends and "
			     "%u receives\n",
			wc->wr_id == PINGPONG_SEND_WRID ? "send" : "receive",
			xr_wc_status_str(wc->status), wc->status, wc->vendor_err, st->scnt,
			st->rcnt);
		return -1;
	}
	switch (wc->wr_id) {
	case PINGPONG_SEND_WRID:
		st->scnt++;
		break;
	case PINGPONG_RECV_WRID:
		if (--st->routs <= 1) {
			st->routs += post_recv(ctx, ctx->rx_depth - st->routs);
			if (st->routs < ctx->rx_depth)
				return -1;
		}
		st->rcnt++;
		if (o->validate_buf) {
			if (wc->byte_len != ctx->size) {
				fprintf(stderr, PROG ": receive %u has %u bytes, expected %u\n",
					st->rcnt, wc->byte_len, ctx->size);
				return -1;
			}
			if (!check_received(ctx, o->servername != NULL, st->rcnt))
				return -1;
		}
		break;
	default:
		fprintf(stderr, PROG ": completion for unknown wr_id %" PRIu64 "\n", wc->wr_id);
		return -1;
	}
	ctx->pending &= ~(int)wc->wr_id;
	if (st->scnt < o->iters && !ctx->pending) {
		if (post_send(ctx))
			return -1;
		ctx->pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

static int run_loop(struct pingpong_ctx *ctx, const struct options *o, struct loop_state *st)
{
	int64_t timeout_ms = LOOP_BASE_TIMEOUT_MS + (int64_t)o->iters * LOOP_PER_ITER_MS;
	int64_t deadline = tool_now_ms() + timeout_ms;
	unsigned int idle_polls = 0;

	while (st->rcnt < o->iters || st->scnt < o->iters) {
		struct xr_wc wc[2];
		int ne;

		if (o->use_events) {
			/* As rc_pingpong -e: sleep for the event, re-arm, then poll. */
			struct xr_cq *ev_cq;
			int ret = oob_wait_fd(ctx->channel->fd, POLLIN, deadline);

			if (!ret)
				ret = xr_get_cq_event(ctx->channel, &ev_cq, NULL);
			if (ret) {
				fprintf(stderr, PROG ": waiting for a CQ event: %s\n",
					strerror(-ret));
				describe_wait(ctx, st, o->iters);
				return -1;
			}
			xr_ack_cq_events(ev_cq, 1);
			ret = xr_req_notify_cq(ev_cq, 0);
			if (ret) {
				fprintf(stderr, PROG ": couldn't request CQ notification: %s\n",
					strerror(-ret));
				return -1;
			}
			while ((ne = xr_poll_cq(ctx->cq, 2, wc)) > 0)
				for (int i = 0; i < ne; i++)
					if (handle_wc(ctx, o, st, &wc[i]))
						return -1;
			if (ne < 0) {
				fprintf(stderr, PROG ": poll CQ failed: %s\n", strerror(-ne));
				return -1;
			}
			continue;
		}
		ne = xr_poll_cq(ctx->cq, 2, wc);

		if (ne < 0) {
			fprintf(stderr, PROG ": poll CQ failed: %s\n", strerror(-ne));
			return -1;
		}
		for (int i = 0; i < ne; i++)
			if (handle_wc(ctx, o, st, &wc[i]))
				return -1;
		if (ne > 0) {
			idle_polls = 0;
			continue;
		}
		if (tool_stop_signal) {
			fprintf(stderr, PROG ": interrupted by signal %d\n", (int)tool_stop_signal);
			describe_wait(ctx, st, o->iters);
			return -1;
		}
		if (tool_now_ms() >= deadline) {
			fprintf(stderr, PROG ": timed out after %" PRId64 " s\n",
				timeout_ms / 1000);
			describe_wait(ctx, st, o->iters);
			return -1;
		}
		/* Spin as rc_pingpong does (each empty poll drives the engine), yielding now
		 * and then so a busy small machine still schedules everyone. */
		if (++idle_polls % SPIN_POLLS_BEFORE_YIELD == 0)
			sched_yield();
	}
	return 0;
}

static void print_summary(const struct options *o, const struct timespec *start,
			  const struct timespec *end)
{
	double usec = (end->tv_sec - start->tv_sec) * 1e6 + (end->tv_nsec - start->tv_nsec) / 1e3;
	long long bytes = (long long)o->size * o->iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
	       bytes * 8. / usec);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", o->iters, usec / 1e6,
	       usec / o->iters);
}

static int run(const struct options *o)
{
	struct pingpong_ctx ctx = {0};
	struct pingpong_dest mine = {0}, remote;
	struct loop_state st = {0};
	struct timespec start, end;
	int ret, status = 1;

	if (init_ctx(&ctx, o))
		goto out;
	st.routs = post_recv(&ctx, ctx.rx_depth);
	if (st.routs < ctx.rx_depth)
		goto out;

	ret = xr_query_gid(ctx.dev, o->gid_index, &mine.gid);
	if (ret) {
		fprintf(stderr, PROG ": can't read sgid of index %d: %s\n", o->gid_index,
			strerror(-ret));
		goto out;
	}
	mine.lid = 0;
	mine.qpn = ctx.qp->qp_num;
	mine.psn = lrand48() & 0xffffff;
	print_dest("local address: ", &mine);

	if (o->servername) {
		if (client_exchange(o, &mine, &remote))
			goto out;
	} else {
		int fd = server_accept(o, &remote);

		if (fd < 0)
			goto out;
		if (connect_qp(&ctx, o, mine.psn, &remote)) {
			close(fd);
			goto out;
		}
		if (server_reply(fd, &mine))
			goto out;
	}
	print_dest("remote address:", &remote);

	if (o->servername && connect_qp(&ctx, o, mine.psn, &remote))
		goto out;

	ctx.pending = PINGPONG_RECV_WRID;
	if (o->servername) {
		if (o->validate_buf)
			fill_pattern(&ctx);
		if (post_send(&ctx))
			goto out;
		ctx.pending |= PINGPONG_SEND_WRID;
	}

	clock_gettime(CLOCK_MONOTONIC, &start);
	if (run_loop(&ctx, o, &st))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &end);
	print_summary(o, &start, &end);
	status = 0;
out:
	fflush(stdout);
	close_ctx(&ctx);
	return status;
}

int main(int argc, char **argv)
{
	struct options o;
	int ret;

	ret = parse_options(argc, argv, &o);
	if (ret)
		return ret == 2 ? 0 : 1;
	tool_catch_stop_signals();
	srand48(getpid() * time(NULL));
	setvbuf(stdout, NULL, _IOLBF, 0);
	return run(&o);
}
