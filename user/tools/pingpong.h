/* SPDX-License-Identifier: MIT */
/*
 * What xroce-pingpong (RC), xroce-uc-pingpong (UC), xroce-ud-pingpong (UD)
 * and xroce-srq-pingpong (RC QPs on a shared receive queue) share, as
 * rdma-core's pingpong.h does for ibv_rc_pingpong, ibv_uc_pingpong,
 * ibv_ud_pingpong and ibv_srq_pingpong: the options, the out-of-band
 * exchange ("LID:QPN:PSN:GID" messages each way, one per QP, then "done"),
 * the buffer with its --chk pattern, the ping-pong loop and the summary
 * lines. Each one-QP tool brings its queue pair to INIT and connects it
 * (struct pp_kind); everything else is the same code, so that the three stay
 * byte-compatible with their rdma-core counterparts alike.
 * xroce-srq-pingpong (pp_kind.multi_qp: -q and -o) has a loop and QP set-up
 * of its own, over the same options, exchange, buffer, receives (posted to
 * pp_ctx.srq), SENDs, waits and summary.
 *
 * A UD buffer starts with the 40 bytes of GRH space every UD receive needs
 * (pp_ctx.offset): receives land there, the payload follows, and SENDs go
 * out from the payload, as in ibv_ud_pingpong. RC and UC have no offset.
 *
 * Unlike rdma-core's examples, every wait is bounded and a failure
 * (completion error, timeout, corrupted data with --chk) makes the exit
 * status 1. Header-only: every tool is one .c file.
 */
#ifndef XROCE_PINGPONG_H
#define XROCE_PINGPONG_H

#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>

#include "tool_common.h"

enum {
	PINGPONG_RECV_WRID = 1,
	PINGPONG_SEND_WRID = 2,
};

/* "LID:QPN:PSN:GID" + NUL, as rdma-core's pingpong examples send it: 52 bytes. */
#define DEST_MSG_SIZE sizeof("0000:000000:000000:00000000000000000000000000000000")
#define DONE_MSG "done"
#define DONE_MSG_SIZE sizeof(DONE_MSG)

/* ibv_ud_pingpong's Q_Key: its QP's own, and the one each of its SENDs names. */
#define PP_UD_QKEY 0x11111111u

/* Bounds on every wait: generous, because a TCG-emulated peer is slow. */
#define ACCEPT_TIMEOUT_MS 60000
#define CONNECT_RETRY_MS 20000
#define EXCHANGE_TIMEOUT_MS 30000
#define LOOP_BASE_TIMEOUT_MS 60000
#define LOOP_PER_ITER_MS 50

/* An empty poll drives the engine itself; yield now and then all the same. */
#define SPIN_POLLS_BEFORE_YIELD 1024

struct pp_ctx;
struct pp_options;
struct pingpong_dest;

/* What differs between the tools. */
struct pp_kind {
	const char *prog;
	enum xr_qp_type qp_type;
	unsigned int default_size;
	/* GRH space in front of the payload in the buffer (UD: XR_GRH_SIZE). */
	unsigned int buf_offset;
	/* What --help says of -s's default and of -l. */
	const char *size_help;
	const char *sl_help;
	/* Several QPs on one SRQ (ibv_srq_pingpong): takes -q, and -o (refused). */
	bool multi_qp;
	/* Everything after the options, instead of pp_run (xroce-srq-pingpong's own). */
	int (*run)(const struct pp_options *o);
	/* RC and UC take -m (a path MTU); UD sends at most the port's MTU. */
	bool has_mtu_option;
	/* What comes before "GID" in the local address line: ibv_ud_pingpong prints ':'. */
	char local_gid_sep;
	/* RESET -> INIT, once the QP exists (and any check that needs the device). */
	int (*init_qp)(struct pp_ctx *ctx, const struct pp_options *o);
	/* INIT -> RTR -> RTS towards dest, and whatever sending to it needs. */
	int (*connect)(struct pp_ctx *ctx, const struct pp_options *o, unsigned int my_psn,
		       const struct pingpong_dest *dest);
	/* --chk: checks of a receive completion beyond its length and bytes; may be NULL. */
	bool (*check_recv)(const struct pp_ctx *ctx, const struct pp_options *o,
			   const struct xr_wc *wc, unsigned int rcnt);
};

struct pp_options {
	const struct pp_kind *kind;
	const char *prog;
	const char *ifname;
	const char *servername;
	unsigned int port;
	int ib_port;
	unsigned int size;
	enum xr_mtu mtu;
	unsigned int rx_depth;
	unsigned int iters;
	unsigned int num_qp; /* -q: 1 unless multi_qp */
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

struct pp_ctx {
	const char *prog;
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_mr *mr;
	struct xr_comp_channel *channel; /* -e */
	struct xr_cq *cq;
	struct xr_qp *qp;
	struct xr_srq *srq; /* multi_qp: receives go here; its QPs are the tool's */
	struct xr_ah *ah;   /* UD: where SENDs go */
	uint8_t *buf;
	unsigned int offset; /* the payload's place in buf: after the GRH space (UD), or 0 */
	unsigned int size;   /* of the payload */
	unsigned int rx_depth;
	unsigned int send_flags;
	uint32_t remote_qpn; /* UD: the QPN every SEND names */
	struct pingpong_dest local, remote;
	int pending;
	long page_size;
};

/* ---- options ---------------------------------------------------------------- */

static void pp_usage(const struct pp_kind *k, const char *argv0)
{
	printf("Usage:\n");
	printf("  %s -d IFNAME -g IDX            start a server and wait for connection\n", argv0);
	printf("  %s -d IFNAME -g IDX <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<ifname>  use the xroce device of network interface <ifname>\n");
	printf("  -i, --ib-port=<port>   use port <port> of the device (default 1)\n");
	printf("  -s, --size=<size>      size of message to exchange (%s)\n", k->size_help);
	if (k->has_mtu_option)
		printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	if (k->multi_qp)
		printf("  -q, --num-qp=<num>     number of QPs to use (default 16)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	if (k->multi_qp)
		printf(
		    "  -n, --iters=<iters>    number of exchanges, over all QPs (default 1000)\n");
	else
		printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<sl>          %s\n", k->sl_help);
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	if (k->multi_qp)
		printf("  -o, --odp              use on demand paging (not supported: refused)\n");
	printf("  -c, --chk              validate received buffer\n");
}

/* ibv_srq_pingpong's bound: QPs are numbered below it, and every exchange names as many. */
#define PP_MAX_QP 256

/* Returns 0 to run, 1 for a usage error, 2 when usage was printed on request. */
static int pp_parse_options(const struct pp_kind *k, int argc, char **argv, struct pp_options *o)
{
	/* The first two are ibv_srq_pingpong's only: the one-QP tools do not know them. */
	static const struct option long_options[] = {
	    {.name = "num-qp", .has_arg = 1, .val = 'q'},
	    {.name = "odp", .has_arg = 0, .val = 'o'},
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
	/* Without -m, --mtu is unknown too (the 'm' case below refuses it). */
	const char *short_options = k->multi_qp		? "p:d:i:s:m:q:r:n:l:eog:ch"
				    : k->has_mtu_option ? "p:d:i:s:m:r:n:l:eg:ch"
							: "p:d:i:s:r:n:l:eg:ch";
	unsigned long v;
	int c;

	*o = (struct pp_options){
	    .kind = k,
	    .prog = k->prog,
	    .port = 18515,
	    .ib_port = 1,
	    .size = k->default_size,
	    .mtu = XR_MTU_1024,
	    .rx_depth = 500,
	    .iters = 1000,
	    .num_qp = k->multi_qp ? 16 : 1,
	    .gid_index = -1,
	};
	while ((c = getopt_long(argc, argv, short_options,
				k->multi_qp ? long_options : long_options + 2, NULL)) != -1) {
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
			if (!k->has_mtu_option) {
				fprintf(stderr,
					"%s: no -m/--mtu: a datagram is at most the port's MTU\n",
					o->prog);
				goto usage_error;
			}
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
		case 'q':
			if (!parse_ulong(optarg, INT32_MAX, &v) || v < 1)
				goto bad_value;
			o->num_qp = v;
			break;
		case 'o':
			fprintf(stderr,
				"%s: -o/--odp: xroce has no on-demand paging (its memory regions "
				"are pinned by the application)\n",
				o->prog);
			return 1;
		case 'h':
			pp_usage(k, argv[0]);
			return 2;
		default:
			goto usage_error;
		}
	}
	if (optind == argc - 1) {
		o->servername = argv[optind];
	} else if (optind < argc) {
		goto usage_error;
	}
	if (!o->ifname) {
		fprintf(
		    stderr,
		    "%s: -d IFNAME is required (xroce devices are named by network interface)\n",
		    o->prog);
		return 1;
	}
	if (o->gid_index < 0) {
		fprintf(stderr,
			"%s: -g GID_INDEX is required: RoCE addresses by GID (index 1 is usually "
			"the first IPv4 address)\n",
			o->prog);
		return 1;
	}
	/* ibv_srq_pingpong's two refusals, in its order. */
	if (o->num_qp > o->rx_depth) {
		fprintf(stderr,
			"%s: rx_depth %u is too small for %u QPs -- must have at least one receive "
			"per QP.\n",
			o->prog, o->rx_depth, o->num_qp);
		return 1;
	}
	if (o->num_qp >= PP_MAX_QP) {
		fprintf(stderr, "%s: num_qp %u must be less than %d\n", o->prog, o->num_qp,
			PP_MAX_QP);
		return 1;
	}
	return 0;

usage_error:
	pp_usage(k, argv[0]);
	return 1;
bad_value:
	fprintf(stderr, "%s: invalid value '%s' for -%c\n", o->prog, optarg, c);
	return 1;
}

/* ---- out-of-band exchange ------------------------------------------- */

/* The GID as 32 hex digits of its 16 bytes in wire order, as rdma-core's examples write it. */
static void pp_format_dest(const struct pingpong_dest *d, char msg[DEST_MSG_SIZE])
{
	char gid_hex[33];

	for (int i = 0; i < 16; i++)
		sprintf(&gid_hex[i * 2], "%02x", d->gid.raw[i]);
	snprintf(msg, DEST_MSG_SIZE, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn, gid_hex);
}

static int pp_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int pp_parse_dest(const char msg[DEST_MSG_SIZE], struct pingpong_dest *d)
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
		d->gid.raw[i] =
		    pp_hex_digit(gid_hex[2 * i]) << 4 | pp_hex_digit(gid_hex[2 * i + 1]);
	return 0;
}

/* As rdma-core prints them: "  local address:  LID ..., PSN 0x...<sep> GID ...". */
static void pp_print_dest(const char *label, const struct pingpong_dest *d, char gid_sep)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d->gid.raw, gid, sizeof(gid));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%c GID %s\n", label, d->lid, d->qpn, d->psn,
	       gid_sep, gid);
}

/*
 * Which of n messages failed, for the messages below: nothing when there is
 * only one, " [i]" (from 0, as ibv_srq_pingpong says it) when there are several.
 */
static const char *pp_msg_index(char buf[16], unsigned int i, unsigned int n)
{
	if (n == 1)
		return "";
	snprintf(buf, 16, " [%u]", i);
	return buf;
}

/* Writes n addresses, each in one send() as rdma-core's examples write them. */
static int pp_send_dests(const struct pp_options *o, int fd, const struct pingpong_dest *mine,
			 unsigned int n, int64_t deadline)
{
	char msg[DEST_MSG_SIZE], idx[16];

	for (unsigned int i = 0; i < n; i++) {
		int ret;

		pp_format_dest(&mine[i], msg);
		ret = oob_write_msg(fd, msg, sizeof(msg), deadline);
		if (ret) {
			fprintf(stderr, "%s: couldn't send local address%s: %s\n", o->prog,
				pp_msg_index(idx, i, n), oob_error(ret));
			return ret;
		}
	}
	return 0;
}

/* Reads n addresses, each exactly DEST_MSG_SIZE bytes. */
static int pp_read_dests(const struct pp_options *o, int fd, struct pingpong_dest *remote,
			 unsigned int n, int64_t deadline)
{
	char msg[DEST_MSG_SIZE], idx[16];

	for (unsigned int i = 0; i < n; i++) {
		int ret = oob_read_full(fd, msg, sizeof(msg), deadline);

		if (ret) {
			fprintf(stderr, "%s: couldn't read remote address%s: %s\n", o->prog,
				pp_msg_index(idx, i, n), oob_error(ret));
			return ret;
		}
		ret = pp_parse_dest(msg, &remote[i]);
		if (ret) {
			fprintf(stderr, "%s: malformed remote address%s '%.*s'\n", o->prog,
				pp_msg_index(idx, i, n), (int)sizeof(msg) - 1, msg);
			return ret;
		}
	}
	return 0;
}

/*
 * Client side: send our n addresses, read the server's n, send "done", as
 * rdma-core's clients do (n is 1, or ibv_srq_pingpong's MAX_QP).
 */
static int pp_client_exchange(const struct pp_options *o, const struct pingpong_dest *mine,
			      struct pingpong_dest *remote, unsigned int n)
{
	const char *why;
	int64_t deadline;
	int fd, ret;

	fd = oob_connect(o->servername, o->port, CONNECT_RETRY_MS, EXCHANGE_TIMEOUT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, "%s: couldn't connect to %s:%u: %s\n", o->prog, o->servername,
			o->port, why);
		return -1;
	}
	deadline = tool_now_ms() + EXCHANGE_TIMEOUT_MS;
	ret = pp_send_dests(o, fd, mine, n, deadline);
	if (!ret)
		ret = pp_read_dests(o, fd, remote, n, deadline);
	if (ret)
		goto out;
	ret = oob_write_msg(fd, DONE_MSG, DONE_MSG_SIZE, deadline);
	if (ret)
		fprintf(stderr, "%s: couldn't send 'done': %s\n", o->prog, oob_error(ret));
out:
	close(fd);
	return ret ? -1 : 0;
}

/* Server side, first half: accept the client and read its n addresses. Returns the connection. */
static int pp_server_accept(const struct pp_options *o, struct pingpong_dest *remote,
			    unsigned int n)
{
	const char *why;
	int fd;

	fd = oob_accept(AF_UNSPEC, o->port, ACCEPT_TIMEOUT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, "%s: port %u: %s\n", o->prog, o->port, why);
		return -1;
	}
	if (pp_read_dests(o, fd, remote, n, tool_now_ms() + EXCHANGE_TIMEOUT_MS)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Server side, second half, once our QPs are ready (the client sends its
 * first SENDs as soon as it has our addresses): send our n, wait for "done".
 */
static int pp_server_reply(const struct pp_options *o, int fd, const struct pingpong_dest *mine,
			   unsigned int n)
{
	char msg[DEST_MSG_SIZE];
	int64_t deadline = tool_now_ms() + EXCHANGE_TIMEOUT_MS;
	int ret;

	ret = pp_send_dests(o, fd, mine, n, deadline);
	if (ret)
		goto out;
	ret = oob_read_full(fd, msg, DONE_MSG_SIZE, deadline);
	if (ret) {
		fprintf(stderr, "%s: couldn't read 'done': %s\n", o->prog, oob_error(ret));
		goto out;
	}
	if (memcmp(msg, DONE_MSG, DONE_MSG_SIZE)) {
		fprintf(stderr, "%s: expected 'done' from the client, got '%.*s'\n", o->prog,
			(int)DONE_MSG_SIZE - 1, msg);
		ret = -EPROTO;
	}
out:
	close(fd);
	return ret ? -1 : 0;
}

/* ---- verbs ------------------------------------------------------------ */

static void pp_close_ctx(struct pp_ctx *ctx)
{
	const char *prog = ctx->prog;
	int ret;

	if (ctx->qp && (ret = xr_destroy_qp(ctx->qp)))
		fprintf(stderr, "%s: couldn't destroy QP: %s\n", prog, strerror(-ret));
	if (ctx->srq && (ret = xr_destroy_srq(ctx->srq)))
		fprintf(stderr, "%s: couldn't destroy SRQ: %s\n", prog, strerror(-ret));
	if (ctx->cq && (ret = xr_destroy_cq(ctx->cq)))
		fprintf(stderr, "%s: couldn't destroy CQ: %s\n", prog, strerror(-ret));
	if (ctx->channel && (ret = xr_destroy_comp_channel(ctx->channel)))
		fprintf(stderr, "%s: couldn't destroy completion channel: %s\n", prog,
			strerror(-ret));
	if (ctx->mr && (ret = xr_dereg_mr(ctx->mr)))
		fprintf(stderr, "%s: couldn't deregister MR: %s\n", prog, strerror(-ret));
	if (ctx->ah && (ret = xr_destroy_ah(ctx->ah)))
		fprintf(stderr, "%s: couldn't destroy AH: %s\n", prog, strerror(-ret));
	if (ctx->pd && (ret = xr_dealloc_pd(ctx->pd)))
		fprintf(stderr, "%s: couldn't deallocate PD: %s\n", prog, strerror(-ret));
	if (ctx->dev && (ret = xr_close_device(ctx->dev)))
		fprintf(stderr, "%s: couldn't close device: %s\n", prog, strerror(-ret));
	free(ctx->buf);
}

/*
 * The buffer, the device, its PD and MR, the completion channel (-e) and a
 * CQ of cq_size entries (armed with -e): what every tool needs before its QPs.
 */
static int pp_init_common(struct pp_ctx *ctx, const struct pp_options *o, unsigned int cq_size)
{
	const struct pp_kind *k = o->kind;
	const char *prog = o->prog;
	struct xr_device_attr dev_attr;
	size_t buf_size, alloc_size;
	int ret;

	ctx->prog = prog;
	ctx->offset = k->buf_offset;
	ctx->size = o->size;
	ctx->rx_depth = o->rx_depth;
	ctx->send_flags = XR_SEND_SIGNALED;
	ctx->page_size = sysconf(_SC_PAGESIZE);
	buf_size = (size_t)ctx->offset + o->size;
	alloc_size = (buf_size + ctx->page_size - 1) / ctx->page_size * ctx->page_size;
	ctx->buf = aligned_alloc(ctx->page_size, alloc_size);
	if (!ctx->buf) {
		fprintf(stderr, "%s: couldn't allocate a %zu-byte buffer\n", prog, buf_size);
		return -1;
	}
	/* Like rdma-core's examples: --chk then sees whether a SEND really landed. */
	memset(ctx->buf, 0x7b, buf_size);

	ctx->dev = tool_open_device(prog, o->ifname);
	if (!ctx->dev)
		return -1;
	ret = xr_query_device(ctx->dev, &dev_attr);
	if (ret) {
		fprintf(stderr, "%s: couldn't query device %s: %s\n", prog, o->ifname,
			strerror(-ret));
		return -1;
	}
	if (o->rx_depth > dev_attr.max_qp_wr || cq_size > dev_attr.max_cqe) {
		fprintf(stderr, "%s: -r %u is more than %s allows (max_qp_wr %u, max_cqe %u)\n",
			prog, o->rx_depth, o->ifname, dev_attr.max_qp_wr, dev_attr.max_cqe);
		return -1;
	}
	ctx->pd = xr_alloc_pd(ctx->dev);
	if (!ctx->pd) {
		fprintf(stderr, "%s: couldn't allocate PD: %s\n", prog, strerror(errno));
		return -1;
	}
	ctx->mr = xr_reg_mr(ctx->pd, ctx->buf, buf_size, XR_ACCESS_LOCAL_WRITE);
	if (!ctx->mr) {
		fprintf(stderr, "%s: couldn't register MR: %s\n", prog, strerror(errno));
		return -1;
	}
	if (o->use_events) {
		ctx->channel = xr_create_comp_channel(ctx->dev);
		if (!ctx->channel) {
			fprintf(stderr, "%s: couldn't create completion channel: %s\n", prog,
				strerror(errno));
			return -1;
		}
	}
	ctx->cq = xr_create_cq(ctx->dev, cq_size, ctx->channel);
	if (!ctx->cq) {
		fprintf(stderr, "%s: couldn't create CQ: %s\n", prog, strerror(errno));
		return -1;
	}
	if (o->use_events && xr_req_notify_cq(ctx->cq, 0)) {
		fprintf(stderr, "%s: couldn't request CQ notification\n", prog);
		return -1;
	}
	return 0;
}

/* Everything up to a QP in RESET, its inline size known; the kind's init_qp then takes it to INIT.
 */
static int pp_init_ctx(struct pp_ctx *ctx, const struct pp_options *o)
{
	const struct pp_kind *k = o->kind;
	const char *prog = o->prog;
	struct xr_qp_init_attr init_attr = {
	    .cap = {.max_send_wr = 1,
		    .max_recv_wr = o->rx_depth,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	    .qp_type = k->qp_type,
	};
	struct xr_qp_attr attr;
	int ret;

	if (pp_init_common(ctx, o, o->rx_depth + 1))
		return -1;
	init_attr.send_cq = ctx->cq;
	init_attr.recv_cq = ctx->cq;
	ctx->qp = xr_create_qp(ctx->pd, &init_attr);
	if (!ctx->qp) {
		fprintf(stderr, "%s: couldn't create QP: %s\n", prog, strerror(errno));
		return -1;
	}
	ret = xr_query_qp(ctx->qp, &attr, XR_QP_CAP, &init_attr);
	if (ret) {
		fprintf(stderr, "%s: couldn't query QP: %s\n", prog, strerror(-ret));
		return -1;
	}
	if (init_attr.cap.max_inline_data >= o->size)
		ctx->send_flags |= XR_SEND_INLINE;
	return 0;
}

/* Whether the peer sent a GID; says why not when it did not (RoCE has no LIDs to fall back on). */
static bool pp_peer_gid_ok(const struct pp_options *o, const union xr_gid *gid)
{
	static const uint8_t zero_gid[16];

	if (memcmp(gid->raw, zero_gid, sizeof(zero_gid)))
		return true;
	fprintf(stderr, "%s: the peer sent a zero GID: RoCE needs one (run it with -g)\n", o->prog);
	return false;
}

/* ibv_rc_pingpong's (and ibv_srq_pingpong's) RTR: min_rnr_timer 12, one READ/atomic each way. */
static inline struct qp_rtr_attr pp_rc_rtr_attr(const struct pp_options *o,
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

	return rtr;
}

/* RESET -> INIT of a connected QP (RC, UC), with no remote access, as rdma-core's examples
 * (inline: UD has no use for it). */
static inline int pp_connected_init_qp(struct pp_ctx *ctx, const struct pp_options *o)
{
	int ret = qp_to_init(ctx->qp, (uint8_t)o->ib_port, 0);

	if (ret) {
		fprintf(stderr, "%s: failed to modify QP to INIT: %s\n", o->prog, strerror(-ret));
		return -1;
	}
	return 0;
}

static unsigned int pp_post_recv(struct pp_ctx *ctx, unsigned int n)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)ctx->buf, .length = ctx->offset + ctx->size, .lkey = ctx->mr->lkey};
	struct xr_recv_wr wr = {.wr_id = PINGPONG_RECV_WRID, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad_wr;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		ret = ctx->srq ? xr_post_srq_recv(ctx->srq, &wr, &bad_wr)
			       : xr_post_recv(ctx->qp, &wr, &bad_wr);
		if (ret)
			break;
	}
	if (ret)
		fprintf(stderr, "%s: couldn't post receive %u of %u: %s\n", ctx->prog, i + 1, n,
			strerror(-ret));
	return i;
}

/* The payload: after the GRH space, which is where a UD receive put what it echoes. */
static int pp_post_send_on(struct pp_ctx *ctx, struct xr_qp *qp)
{
	struct xr_sge sge = {
	    .addr = (uintptr_t)ctx->buf + ctx->offset, .length = ctx->size, .lkey = ctx->mr->lkey};
	struct xr_send_wr wr = {
	    .wr_id = PINGPONG_SEND_WRID,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_SEND,
	    .send_flags = ctx->send_flags,
	};
	struct xr_send_wr *bad_wr;
	int ret;

	if (ctx->ah) {
		wr.wr.ud.ah = ctx->ah;
		wr.wr.ud.remote_qpn = ctx->remote_qpn;
		wr.wr.ud.remote_qkey = PP_UD_QKEY;
	}
	ret = xr_post_send(qp, &wr, &bad_wr);
	if (ret)
		fprintf(stderr, "%s: couldn't post send: %s\n", ctx->prog, strerror(-ret));
	return ret;
}

static int pp_post_send(struct pp_ctx *ctx)
{
	return pp_post_send_on(ctx, ctx->qp);
}

/* ---- --chk -------------------------------------------------------------- */

/*
 * rdma-core's clients zero the first payload byte of every page before
 * their first SEND, and their servers check those bytes. Our client also
 * fills the rest with a position-dependent pattern and checks every echo it
 * receives in full (any rdma-core server echoes the buffer it received); the
 * server can only check what any client writes: the page-start zeros.
 * Positions count from the start of the payload.
 */
static uint8_t pp_pattern_byte(const struct pp_ctx *ctx, size_t i)
{
	return i % ctx->page_size == 0 ? 0 : (uint8_t)(1 + i % 251);
}

static void pp_fill_pattern(struct pp_ctx *ctx)
{
	uint8_t *payload = ctx->buf + ctx->offset;

	for (size_t i = 0; i < ctx->size; i++)
		payload[i] = pp_pattern_byte(ctx, i);
}

static bool pp_check_received(const struct pp_ctx *ctx, bool full_pattern, unsigned int rcnt)
{
	const uint8_t *payload = ctx->buf + ctx->offset;

	for (size_t i = 0; i < ctx->size; i++) {
		if (!full_pattern && i % ctx->page_size)
			continue;
		if (payload[i] != pp_pattern_byte(ctx, i)) {
			fprintf(
			    stderr,
			    "%s: invalid data in page %zu (byte %zu is 0x%02x, expected 0x%02x) "
			    "after receive %u\n",
			    ctx->prog, i / ctx->page_size, i, payload[i], pp_pattern_byte(ctx, i),
			    rcnt);
			return false;
		}
	}
	return true;
}

/* ---- the ping-pong loop ------------------------------------------------ */

struct pp_loop_state {
	unsigned int scnt, rcnt, routs;
};

static void pp_describe_wait(const struct pp_ctx *ctx, const struct pp_loop_state *st,
			     unsigned int iters)
{
	bool send = ctx->pending & PINGPONG_SEND_WRID, recv = ctx->pending & PINGPONG_RECV_WRID;

	fprintf(stderr,
		"  was waiting for %s%s%s (sends completed %u/%u, receives completed %u/%u)\n",
		send ? "the completion of our SEND" : "", send && recv ? " and " : "",
		recv ? "a SEND from the peer" : "", st->scnt, iters, st->rcnt, iters);
}

static int pp_handle_wc(struct pp_ctx *ctx, const struct pp_options *o, struct pp_loop_state *st,
			const struct xr_wc *wc)
{
	if (wc->status != XR_WC_SUCCESS) {
		fprintf(stderr,
			"%s: %s completion failed: %s (%d), vendor_err %u, after %u sends and %u "
			"receives\n",
			ctx->prog, wc->wr_id == PINGPONG_SEND_WRID ? "send" : "receive",
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
			st->routs += pp_post_recv(ctx, ctx->rx_depth - st->routs);
			if (st->routs < ctx->rx_depth)
				return -1;
		}
		st->rcnt++;
		if (o->validate_buf) {
			if (wc->byte_len != ctx->offset + ctx->size) {
				fprintf(stderr, "%s: receive %u has %u bytes, expected %u\n",
					ctx->prog, st->rcnt, wc->byte_len, ctx->offset + ctx->size);
				return -1;
			}
			if (o->kind->check_recv && !o->kind->check_recv(ctx, o, wc, st->rcnt))
				return -1;
			if (!pp_check_received(ctx, o->servername != NULL, st->rcnt))
				return -1;
		}
		break;
	default:
		fprintf(stderr, "%s: completion for unknown wr_id %" PRIu64 "\n", ctx->prog,
			wc->wr_id);
		return -1;
	}
	ctx->pending &= ~(int)wc->wr_id;
	if (st->scnt < o->iters && !ctx->pending) {
		if (pp_post_send(ctx))
			return -1;
		ctx->pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

/*
 * -e: sleep for the CQ's event until deadline, acknowledge it and re-arm, as
 * rdma-core's -e does before it polls. Returns 0; 1 when no event came (the
 * caller says what it was waiting for); -1 when re-arming failed.
 */
static int pp_await_cq_event(struct pp_ctx *ctx, int64_t deadline)
{
	struct xr_cq *ev_cq;
	int ret = oob_wait_fd(ctx->channel->fd, POLLIN, deadline);

	if (!ret)
		ret = xr_get_cq_event(ctx->channel, &ev_cq, NULL);
	if (ret) {
		fprintf(stderr, "%s: waiting for a CQ event: %s\n", ctx->prog, strerror(-ret));
		return 1;
	}
	xr_ack_cq_events(ev_cq, 1);
	ret = xr_req_notify_cq(ev_cq, 0);
	if (ret) {
		fprintf(stderr, "%s: couldn't request CQ notification: %s\n", ctx->prog,
			strerror(-ret));
		return -1;
	}
	return 0;
}

/*
 * After an empty poll: -1, having said why, once a stop signal came or the
 * deadline (timeout_ms after the start) passed; the caller then says what it
 * was waiting for. Else spins as rdma-core's examples do (each empty poll
 * drives the engine), yielding now and then so a busy small machine still
 * schedules everyone.
 */
static int pp_idle(const struct pp_ctx *ctx, int64_t deadline, int64_t timeout_ms,
		   unsigned int *idle_polls)
{
	if (tool_stop_signal) {
		fprintf(stderr, "%s: interrupted by signal %d\n", ctx->prog, (int)tool_stop_signal);
		return -1;
	}
	if (tool_now_ms() >= deadline) {
		fprintf(stderr, "%s: timed out after %" PRId64 " s\n", ctx->prog,
			timeout_ms / 1000);
		return -1;
	}
	if (++*idle_polls % SPIN_POLLS_BEFORE_YIELD == 0)
		sched_yield();
	return 0;
}

static int pp_run_loop(struct pp_ctx *ctx, const struct pp_options *o, struct pp_loop_state *st)
{
	int64_t timeout_ms = LOOP_BASE_TIMEOUT_MS + (int64_t)o->iters * LOOP_PER_ITER_MS;
	int64_t deadline = tool_now_ms() + timeout_ms;
	unsigned int idle_polls = 0;

	while (st->rcnt < o->iters || st->scnt < o->iters) {
		struct xr_wc wc[2];
		int ne;

		if (o->use_events) {
			/* As rdma-core's -e: sleep for the event, re-arm, then poll. */
			int ret = pp_await_cq_event(ctx, deadline);

			if (ret > 0)
				pp_describe_wait(ctx, st, o->iters);
			if (ret)
				return -1;
			while ((ne = xr_poll_cq(ctx->cq, 2, wc)) > 0)
				for (int i = 0; i < ne; i++)
					if (pp_handle_wc(ctx, o, st, &wc[i]))
						return -1;
			if (ne < 0) {
				fprintf(stderr, "%s: poll CQ failed: %s\n", ctx->prog,
					strerror(-ne));
				return -1;
			}
			continue;
		}
		ne = xr_poll_cq(ctx->cq, 2, wc);

		if (ne < 0) {
			fprintf(stderr, "%s: poll CQ failed: %s\n", ctx->prog, strerror(-ne));
			return -1;
		}
		for (int i = 0; i < ne; i++)
			if (pp_handle_wc(ctx, o, st, &wc[i]))
				return -1;
		if (ne > 0) {
			idle_polls = 0;
			continue;
		}
		if (pp_idle(ctx, deadline, timeout_ms, &idle_polls)) {
			pp_describe_wait(ctx, st, o->iters);
			return -1;
		}
	}
	return 0;
}

static void pp_print_summary(const struct pp_options *o, const struct timespec *start,
			     const struct timespec *end)
{
	double usec = (end->tv_sec - start->tv_sec) * 1e6 + (end->tv_nsec - start->tv_nsec) / 1e3;
	long long bytes = (long long)o->size * o->iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
	       bytes * 8. / usec);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", o->iters, usec / 1e6,
	       usec / o->iters);
}

static int pp_run(const struct pp_options *o)
{
	const struct pp_kind *k = o->kind;
	struct pp_ctx ctx = {0};
	struct pingpong_dest *mine = &ctx.local, *remote = &ctx.remote;
	struct pp_loop_state st = {0};
	struct timespec start, end;
	int ret, status = 1;

	if (pp_init_ctx(&ctx, o) || k->init_qp(&ctx, o))
		goto out;
	st.routs = pp_post_recv(&ctx, ctx.rx_depth);
	if (st.routs < ctx.rx_depth)
		goto out;

	ret = xr_query_gid(ctx.dev, o->gid_index, &mine->gid);
	if (ret) {
		fprintf(stderr, "%s: can't read sgid of index %d: %s\n", o->prog, o->gid_index,
			strerror(-ret));
		goto out;
	}
	mine->lid = 0;
	mine->qpn = ctx.qp->qp_num;
	mine->psn = lrand48() & 0xffffff;
	pp_print_dest("local address: ", mine, k->local_gid_sep);

	if (o->servername) {
		if (pp_client_exchange(o, mine, remote, 1))
			goto out;
	} else {
		int fd = pp_server_accept(o, remote, 1);

		if (fd < 0)
			goto out;
		if (k->connect(&ctx, o, mine->psn, remote)) {
			close(fd);
			goto out;
		}
		if (pp_server_reply(o, fd, mine, 1))
			goto out;
	}
	pp_print_dest("remote address:", remote, ',');

	if (o->servername && k->connect(&ctx, o, mine->psn, remote))
		goto out;

	ctx.pending = PINGPONG_RECV_WRID;
	if (o->servername) {
		if (o->validate_buf)
			pp_fill_pattern(&ctx);
		if (pp_post_send(&ctx))
			goto out;
		ctx.pending |= PINGPONG_SEND_WRID;
	}

	clock_gettime(CLOCK_MONOTONIC, &start);
	if (pp_run_loop(&ctx, o, &st))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &end);
	pp_print_summary(o, &start, &end);
	status = 0;
out:
	fflush(stdout);
	pp_close_ctx(&ctx);
	return status;
}

static int pp_main(const struct pp_kind *k, int argc, char **argv)
{
	struct pp_options o;
	int ret;

	ret = pp_parse_options(k, argc, argv, &o);
	if (ret)
		return ret == 2 ? 0 : 1;
	tool_catch_stop_signals();
	srand48(getpid() * time(NULL));
	setvbuf(stdout, NULL, _IOLBF, 0);
	return k->run ? k->run(&o) : pp_run(&o);
}

#endif /* XROCE_PINGPONG_H */
