/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf: perftest's ib_{send,write,read,atomic}_{bw,lat} over xroce,
 * compatible on the wire and on the out-of-band TCP exchange with perftest
 * 4.5 run with -F (perf_oob.h), so either side can be an unmodified perftest
 * on Soft-RoCE.
 *
 *   xroce-perf TEST -d IFNAME [options]            server
 *   xroce-perf TEST -d IFNAME [options] SERVER     client
 *
 * Roles as in perftest: in write_bw, read_bw and atomic_bw the client is
 * the only active side and the server just exchanges keys and prints the
 * client's report; in send_bw the server posts receives and measures what
 * arrives; read_lat and atomic_lat have an active client; send_lat and
 * write_lat ping-pong (write_lat polls the last byte of its buffer). Every
 * wait is bounded; any error completion makes the exit status 1. The QPs are
 * RC, or (-c) UC for SEND and WRITE, or UD for SEND, where -g sends to a
 * multicast group the receiver attached to; as perftest's, the receiving
 * side waits for every UC or UD message, so a lost one fails the run. With
 * --use-srq (send tests) the receiving side's QPs (send_bw's server, both
 * sides of send_lat) take their receives from one shared receive queue of
 * -r entries, as perftest's.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>

#include "perf_oob.h"

#define PROG "xroce-perf"

/* Bounds on every wait: generous, because a TCG-emulated peer is slow. */
#define ACCEPT_TIMEOUT_MS 120000
#define CONNECT_RETRY_MS 20000
#define EXCHANGE_TIMEOUT_MS 60000
#define RUN_BASE_TIMEOUT_MS 60000
#define RUN_PER_OP_MS 20
/* After a short spin, an empty poll sleeps briefly so that engine threads get the cores. */
#define SPIN_POLLS_BEFORE_SLEEP 256
#define IDLE_SLEEP_NS 20000
#define LAT_POLLS_PER_YIELD 64

/* --use-srq, which has no letter. */
#define OPT_USE_SRQ 0x100

/* perftest's defaults and constants. */
#define DEF_PORT 18515
#define DEF_BW_SIZE 65536
#define DEF_LAT_SIZE 2
#define DEF_BW_ITERS 5000
#define DEF_LAT_ITERS 1000
#define DEF_TX_DEPTH 128
#define DEF_RX_DEPTH 512
#define DEF_CQ_MOD 100
#define MIN_LAT_ITERS 5
#define MAX_QPS 16384
/* A bandwidth WR's wr_id: its QP's index above these bits, its number on that QP below. */
#define WR_ID_QP_SHIFT 40
#define ATOMIC_SIZE 8
#define ATOMIC_ADD_VALUE 1
#define ALL_SIZES_MAX_LOG 23
#define DEF_CACHE_LINE 64
#define MIB (1024.0 * 1024.0)
/*
 * UC and UD: without RNR flow control a SEND finding no receive is lost, so
 * perftest posts a receive for every iteration up front, up to this many.
 */
#define UC_MAX_RX 16000
#define DEF_QKEY 0x11111111u

#define RESULT_LINE                                                                                \
	"---------------------------------------------------------------------------------------"  \
	"\n"
#define RESULT_FMT_BW                                                                              \
	" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
#define RESULT_FMT_LAT                                                                             \
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "    \
	"t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n"
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]    tps average\n"

enum perf_verb { VERB_SEND, VERB_WRITE, VERB_READ, VERB_ATOMIC };

enum perf_conn { CONN_RC, CONN_UC, CONN_UD };

static const char *const conn_names[] = {"RC", "UC", "UD"};

struct perf_test {
	const char *name;
	enum perf_verb verb;
	bool lat;
	const char *title;
};

static const struct perf_test perf_tests[] = {
    {"send_bw", VERB_SEND, false, "Send BW Test"},
    {"write_bw", VERB_WRITE, false, "RDMA_Write BW Test"},
    {"read_bw", VERB_READ, false, "RDMA_Read BW Test"},
    {"atomic_bw", VERB_ATOMIC, false, "Atomic %s BW Test"},
    {"send_lat", VERB_SEND, true, "Send Latency Test"},
    {"write_lat", VERB_WRITE, true, "RDMA_Write Latency Test"},
    {"read_lat", VERB_READ, true, "RDMA_Read Latency Test"},
    {"atomic_lat", VERB_ATOMIC, true, "Atomic %s Latency Test"},
};

struct options {
	const struct perf_test *test;
	const char *ifname;
	const char *server;
	unsigned int port;
	uint64_t size;
	uint64_t iters;
	unsigned int duration;
	int gid_index;
	enum xr_mtu mtu;
	bool all_sizes;
	bool cmp_and_swap;
	unsigned int tx_depth;
	unsigned int rx_depth;
	unsigned int num_qps;
	bool outs_set;
	unsigned long outs; /* -o: READs/atomics in flight, checked against the device's maximum */
	bool size_set;
	enum perf_conn conn;
	bool mcg;	   /* -g: UD SENDs to a multicast group */
	bool mgid_set;	   /* -M */
	union xr_gid mgid; /* -M's group */
	bool use_srq;	   /* --use-srq */
};

struct perf_ctx {
	const struct options *o;
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_mr *mr;
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_qp **qps; /* o->num_qps of them, as the arrays below */
	struct xr_srq *srq; /* --use-srq, on the receiving side: every QP's receives */
	struct xr_ah **ahs; /* UD: where each QP sends */
	uint8_t *buf;
	size_t buff_size; /* one slot: each QP sends from one and is the target of another */
	struct perf_oob oob;
	struct perf_dest *mine; /* the first is also the barrier's message */
	struct perf_dest *remote;
	unsigned int cycle_buffer;
	unsigned int cache_line;
	enum xr_mtu mtu;
	int gid_index;
	/* READs/atomics we take as responder and issue at most as requester (-o). */
	unsigned int out_reads;
	unsigned int tx_depth;
	unsigned int rx_depth;
	unsigned int cq_mod;
	uint32_t max_inline;
	unsigned int *recv_posted; /* per QP (SRQ: per QP's buffer): receives posted in the run */
	uint64_t srq_posted;	   /* --use-srq: receives posted to the SRQ in the current run */
	/* The message size, or with -a the largest: UD's is at most the MTU. */
	uint64_t max_size;
	union xr_gid mgid; /* -g: the group our QP receives from */
	bool mcast_attached;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static bool is_client(const struct perf_ctx *ctx)
{
	return ctx->o->server != NULL;
}

/* ---- options ------------------------------------------------------------ */

static void usage(void)
{
	printf("Usage:\n");
	printf("  " PROG
	       " TEST -d IFNAME [options]          start a server and wait for a client\n");
	printf("  " PROG " TEST -d IFNAME [options] SERVER   connect to the server at SERVER\n");
	printf(
	    "\nTEST: send_bw write_bw read_bw atomic_bw send_lat write_lat read_lat atomic_lat\n");
	printf("\nOptions (perftest's letters):\n");
	printf("  -d, --ib-dev=<ifname>    the xroce device of network interface <ifname>\n");
	printf("  -p, --port=<port>        TCP port of the key exchange (default %d)\n", DEF_PORT);
	printf("  -s, --size=<size>        message size (default %d for bw, %d for lat; atomics: "
	       "%d)\n",
	       DEF_BW_SIZE, DEF_LAT_SIZE, ATOMIC_SIZE);
	printf("  -n, --iters=<iters>      iterations (default %d for bw, %d for lat)\n",
	       DEF_BW_ITERS, DEF_LAT_ITERS);
	printf("  -D, --duration=<secs>    run for <secs> seconds instead (active side only: "
	       "write/read/atomic bw, read/atomic lat)\n");
	printf("  -a, --all                all sizes from 2 to 2^%d (UD: to the MTU)\n",
	       ALL_SIZES_MAX_LOG);
	printf("  -A, --atomic_type=<type> CMP_AND_SWAP or FETCH_AND_ADD (default)\n");
	printf("  -x, --gid-index=<index>  local GID index (default: the first IPv4 one)\n");
	printf("  -m, --mtu=<mtu>          path MTU 256..4096 (default: the port's)\n");
	printf("  -q, --qp=<num>           number of QPs, bw tests only (default 1)\n");
	printf("  -c, --connection=<type>  RC, UC (send and write tests) or UD (send tests) "
	       "(default RC)\n");
	printf("  -g, --mcg                send to a multicast group (UD, send tests, one QP)\n");
	printf("  -M, --MGID=<gid>         -g's group, 16 colon-separated bytes (default "
	       "255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0;\n"
	       "                           send_lat's client receives on 1 more in the last "
	       "byte)\n");
	printf("  -o, --outs=<num>         outstanding READs/atomics, read and atomic tests only "
	       "(default: the device's maximum)\n");
	printf("  -t, --tx-depth=<dep>     send queue depth (default %d for bw, 1 for lat)\n",
	       DEF_TX_DEPTH);
	printf("  -r, --rx-depth=<dep>     receive queue depth (default %d); with --use-srq, the "
	       "SRQ's\n",
	       DEF_RX_DEPTH);
	printf("      --use-srq            the receiving side's QPs share one receive queue "
	       "(send tests)\n");
	printf("  -F, --CPU-freq           accepted for compatibility (no CPU frequency check)\n");
}

static unsigned int mtu_bytes(enum xr_mtu mtu)
{
	return 128u << mtu;
}

/* -c, refused for a verb it cannot carry with perftest's words. */
static bool parse_connection(const char *arg, enum perf_verb verb, enum perf_conn *conn)
{
	static const char *const elsewhere[] = {"XRC", "DC", "SRD", "RawEth"};

	if (!strcmp(arg, "RC")) {
		*conn = CONN_RC;
	} else if (!strcmp(arg, "UC")) {
		if (verb == VERB_READ || verb == VERB_ATOMIC) {
			fprintf(stderr, PROG ": UC connection not possible in READ/ATOMIC verbs\n");
			return false;
		}
		*conn = CONN_UC;
	} else if (!strcmp(arg, "UD")) {
		if (verb != VERB_SEND) {
			fprintf(stderr, PROG ": UD connection only possible in SEND verb\n");
			return false;
		}
		*conn = CONN_UD;
	} else {
		for (size_t i = 0; i < sizeof(elsewhere) / sizeof(elsewhere[0]); i++) {
			if (!strcmp(arg, elsewhere[i])) {
				fprintf(stderr,
					PROG ": %s connections are not supported by xroce\n", arg);
				return false;
			}
		}
		fprintf(stderr, PROG ": Invalid Connection type. Please choose from {RC,UC,UD}\n");
		return false;
	}
	return true;
}

/* -M: 16 bytes, each a number as strtol base 0 reads it, separated by colons. */
static bool parse_mgid(const char *arg, union xr_gid *gid)
{
	const char *p = arg;

	for (int i = 0; i < 16; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 0);
		if (errno || end == p || v < 0 || v > 255 || *end != (i == 15 ? '\0' : ':'))
			return false;
		gid->raw[i] = (uint8_t)v;
		p = end + 1;
	}
	return true;
}

/*
 * The receive queue depth, as perftest settles it: -r or 512, at most the
 * iterations; UC and UD, whose lost SENDs nobody retries, with the default
 * take a receive for every iteration, up to UC_MAX_RX.
 */
static unsigned int rx_depth_of(const struct options *o)
{
	unsigned int rx_depth = o->rx_depth ? o->rx_depth : DEF_RX_DEPTH;

	if (rx_depth > o->iters)
		rx_depth = o->iters;
	/* perftest takes an explicit -r 512 for its default as well. */
	if (o->conn != CONN_RC && rx_depth == DEF_RX_DEPTH)
		rx_depth = o->iters < UC_MAX_RX ? o->iters : UC_MAX_RX;
	return rx_depth;
}

/* Returns 0 to run, 1 for a usage error, 2 when usage was printed on request. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option long_options[] = {
	    {.name = "ib-dev", .has_arg = 1, .val = 'd'},
	    {.name = "port", .has_arg = 1, .val = 'p'},
	    {.name = "size", .has_arg = 1, .val = 's'},
	    {.name = "iters", .has_arg = 1, .val = 'n'},
	    {.name = "duration", .has_arg = 1, .val = 'D'},
	    {.name = "all", .has_arg = 0, .val = 'a'},
	    {.name = "atomic_type", .has_arg = 1, .val = 'A'},
	    {.name = "gid-index", .has_arg = 1, .val = 'x'},
	    {.name = "mtu", .has_arg = 1, .val = 'm'},
	    {.name = "qp", .has_arg = 1, .val = 'q'},
	    {.name = "outs", .has_arg = 1, .val = 'o'},
	    {.name = "tx-depth", .has_arg = 1, .val = 't'},
	    {.name = "rx-depth", .has_arg = 1, .val = 'r'},
	    {.name = "CPU-freq", .has_arg = 0, .val = 'F'},
	    {.name = "connection", .has_arg = 1, .val = 'c'},
	    {.name = "mcg", .has_arg = 0, .val = 'g'},
	    {.name = "MGID", .has_arg = 1, .val = 'M'},
	    {.name = "use-srq", .has_arg = 0, .val = OPT_USE_SRQ},
	    {.name = "help", .has_arg = 0, .val = 'h'},
	    {0},
	};
	bool iters_set = false, qps_set = false;
	unsigned long v;
	int c;

	*o = (struct options){.port = DEF_PORT, .gid_index = -1, .num_qps = 1};
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage();
			return 2;
		}
		fprintf(stderr, PROG ": the first argument must be the test name (see -h)\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(perf_tests) / sizeof(perf_tests[0]); i++)
		if (!strcmp(argv[1], perf_tests[i].name))
			o->test = &perf_tests[i];
	if (!o->test) {
		fprintf(stderr, PROG ": unknown test '%s' (see -h)\n", argv[1]);
		return 1;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:p:s:n:D:aA:x:m:q:o:t:r:Fc:gM:h", long_options,
				NULL)) != -1) {
		switch (c) {
		case 'd':
			o->ifname = optarg;
			break;
		case 'p':
			if (!parse_ulong(optarg, 65535, &v) || !v)
				goto bad_value;
			o->port = v;
			break;
		case 's':
			if (!parse_ulong(optarg, 1ul << 31, &v) || !v)
				goto bad_value;
			o->size = v;
			o->size_set = true;
			break;
		case 'n':
			if (!parse_ulong(optarg, 1ul << 30, &v) || !v)
				goto bad_value;
			o->iters = v;
			iters_set = true;
			break;
		case 'D':
			if (!parse_ulong(optarg, 3600, &v) || !v)
				goto bad_value;
			o->duration = v;
			break;
		case 'a':
			o->all_sizes = true;
			break;
		case 'A':
			if (!strcmp(optarg, "CMP_AND_SWAP"))
				o->cmp_and_swap = true;
			else if (strcmp(optarg, "FETCH_AND_ADD"))
				goto bad_value;
			break;
		case 'x':
			if (!parse_ulong(optarg, XR_MAX_GIDS - 1, &v))
				goto bad_value;
			o->gid_index = v;
			break;
		case 'm':
			if (!parse_ulong(optarg, 4096, &v) || !mtu_from_bytes(v))
				goto bad_value;
			o->mtu = mtu_from_bytes(v);
			break;
		case 'q':
			if (!parse_ulong(optarg, MAX_QPS, &v) || !v) {
				fprintf(stderr, PROG ": num of Qps should be between 1 and %d\n",
					MAX_QPS);
				return 1;
			}
			o->num_qps = v;
			qps_set = true;
			break;
		case 'o':
			/* The range depends on the device: checked once it is open. */
			if (!parse_ulong(optarg, ULONG_MAX, &v))
				goto bad_value;
			o->outs = v;
			o->outs_set = true;
			break;
		case 't':
			if (!parse_ulong(optarg, 16384, &v) || !v)
				goto bad_value;
			o->tx_depth = v;
			break;
		case 'r':
			if (!parse_ulong(optarg, 16384, &v) || !v)
				goto bad_value;
			o->rx_depth = v;
			break;
		case 'F':
			break;
		case 'c':
			if (!parse_connection(optarg, o->test->verb, &o->conn))
				return 1;
			break;
		case 'g':
			if (o->test->verb != VERB_SEND) {
				fprintf(stderr,
					PROG ": MultiCast feature only available on SEND verb\n");
				return 1;
			}
			o->mcg = true;
			break;
		case 'M':
			if (!parse_mgid(optarg, &o->mgid)) {
				fprintf(stderr,
					PROG ": invalid multicast GID '%s': 16 colon-separated "
					     "bytes, e.g. 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0\n",
					optarg);
				return 1;
			}
			o->mgid_set = true;
			break;
		case OPT_USE_SRQ:
			o->use_srq = true;
			break;
		case 'h':
			usage();
			return 2;
		default:
			fprintf(stderr, PROG ": see -h for the options\n");
			return 1;
		}
	}
	if (optind == argc - 1) {
		o->server = argv[optind];
	} else if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind + 1]);
		return 1;
	}
	if (!o->ifname) {
		fprintf(stderr, PROG ": -d IFNAME is required (xroce devices are named by "
				     "network interface)\n");
		return 1;
	}
	/* perftest refuses -q in a latency test even when it asks for one QP. */
	if (o->test->lat && qps_set) {
		fprintf(stderr, PROG ": Multiple QPs only available on bw tests\n");
		return 1;
	}
	if (o->mcg) {
		/* As perftest: -g means UD whatever -c said, and GID 0 unless -x. */
		o->conn = CONN_UD;
		if (o->num_qps > 1) {
			fprintf(stderr, PROG ": Only 1 QP supported in multicast\n");
			return 1;
		}
		if (o->gid_index < 0)
			o->gid_index = 0;
	} else if (o->mgid_set) {
		fprintf(stderr, PROG ": -M names the group of -g, which is not given\n");
		return 1;
	}
	if (o->outs_set && o->test->verb != VERB_READ && o->test->verb != VERB_ATOMIC) {
		fprintf(stderr, PROG ": -o (outstanding READs/atomics) is for read and atomic "
				     "tests only\n");
		return 1;
	}
	if (o->test->verb == VERB_ATOMIC) {
		if (o->size_set && o->size != ATOMIC_SIZE) {
			fprintf(stderr, PROG ": atomics are %d bytes (-s %" PRIu64 ")\n",
				ATOMIC_SIZE, o->size);
			return 1;
		}
		o->size = ATOMIC_SIZE;
		o->all_sizes = false;
	} else if (!o->size_set) {
		o->size = o->test->lat ? DEF_LAT_SIZE : DEF_BW_SIZE;
	}
	if (!iters_set)
		o->iters = o->test->lat ? DEF_LAT_ITERS : DEF_BW_ITERS;
	if (o->test->lat && o->iters < MIN_LAT_ITERS) {
		fprintf(stderr, PROG ": latency tests need -n %d or more\n", MIN_LAT_ITERS);
		return 1;
	}
	if (o->duration &&
	    (o->test->verb == VERB_SEND || (o->test->lat && o->test->verb == VERB_WRITE))) {
		fprintf(stderr,
			PROG ": -D is not supported by %s (both sides would have to "
			     "agree on the count)\n",
			o->test->name);
		return 1;
	}
	if (o->duration && o->all_sizes) {
		fprintf(stderr, PROG ": -D and -a exclude each other\n");
		return 1;
	}
	/* perftest's two refusals, with its words. */
	if (o->use_srq && o->test->verb != VERB_SEND) {
		fprintf(stderr, PROG ": Using SRQ only available in SEND tests\n");
		return 1;
	}
	if (o->use_srq && o->num_qps > rx_depth_of(o)) {
		fprintf(stderr,
			PROG ": Using SRQ depth should be greater than number of QPs (-r %u, -q "
			     "%u)\n",
			rx_depth_of(o), o->num_qps);
		return 1;
	}
	return 0;

bad_value:
	fprintf(stderr, PROG ": invalid value '%s' for -%c\n", optarg, c);
	return 1;
}

/* ---- out-of-band setup ---------------------------------------------------- */

static int oob_open(struct perf_ctx *ctx)
{
	const char *why = NULL;

	ctx->oob.is_client = is_client(ctx);
	if (ctx->oob.is_client)
		ctx->oob.fd = oob_connect(ctx->o->server, ctx->o->port, CONNECT_RETRY_MS,
					  EXCHANGE_TIMEOUT_MS, &why);
	else
		ctx->oob.fd = oob_accept(AF_UNSPEC, ctx->o->port, ACCEPT_TIMEOUT_MS, &why);
	if (ctx->oob.fd < 0) {
		if (ctx->oob.is_client)
			fprintf(stderr, PROG ": couldn't connect to %s:%u: %s\n", ctx->o->server,
				ctx->o->port, why);
		else
			fprintf(stderr, PROG ": port %u: %s\n", ctx->o->port, why);
		return -1;
	}
	return 0;
}

/* Version, then cycle buffer and cache line size (each side keeps the larger), then MTU. */
static int oob_negotiate(struct perf_ctx *ctx, enum xr_mtu port_mtu)
{
	int64_t deadline = tool_now_ms() + EXCHANGE_TIMEOUT_MS;
	char version[PERF_VERSION_SIZE] = PERF_VERSION, remote_version[PERF_VERSION_SIZE + 1];
	uint32_t mine, theirs;
	char mtu_msg[2], remote_mtu[3] = {0};
	long rem_mtu;
	int ret;

	ret = perf_xchg(&ctx->oob, version, remote_version, PERF_VERSION_SIZE, deadline);
	if (ret)
		goto fail;
	remote_version[PERF_VERSION_SIZE] = '\0';
	if (atof(remote_version) < PERF_MIN_PEER_VERSION) {
		fprintf(stderr, PROG ": the peer's perftest version '%s' is older than %.2f\n",
			remote_version, PERF_MIN_PEER_VERSION);
		return -1;
	}

	mine = htobe32(ctx->cycle_buffer);
	ret = perf_xchg(&ctx->oob, &mine, &theirs, sizeof(theirs), deadline);
	if (ret)
		goto fail;
	if (be32toh(theirs) > ctx->cycle_buffer && be32toh(theirs) <= (1u << 24))
		ctx->cycle_buffer = be32toh(theirs);
	mine = htobe32(ctx->cache_line);
	ret = perf_xchg(&ctx->oob, &mine, &theirs, sizeof(theirs), deadline);
	if (ret)
		goto fail;
	if (be32toh(theirs) > ctx->cache_line && be32toh(theirs) <= ctx->cycle_buffer)
		ctx->cache_line = be32toh(theirs);

	ctx->mtu = ctx->o->mtu ? ctx->o->mtu : port_mtu;
	mtu_msg[0] = '0' + ctx->mtu;
	mtu_msg[1] = '\0';
	ret = perf_xchg(&ctx->oob, mtu_msg, remote_mtu, sizeof(mtu_msg), deadline);
	if (ret)
		goto fail;
	rem_mtu = strtol(remote_mtu, NULL, 10);
	if (rem_mtu >= XR_MTU_256 && rem_mtu <= XR_MTU_4096 && rem_mtu < (long)ctx->mtu)
		ctx->mtu = rem_mtu;
	return 0;
fail:
	fprintf(stderr, PROG ": parameter exchange failed: %s\n", oob_error(ret));
	return -1;
}

/*
 * The message size (with -a the largest) once the MTU is agreed: a UD message
 * is one packet. As perftest, a size nobody asked for (the default, -a's)
 * shrinks to the MTU, and one asked for with -s is refused.
 */
static int settle_size(struct perf_ctx *ctx)
{
	const struct options *o = ctx->o;
	unsigned int mtu = mtu_bytes(ctx->mtu);

	ctx->max_size = o->all_sizes ? 1ull << ALL_SIZES_MAX_LOG : o->size;
	if (o->conn != CONN_UD || ctx->max_size <= mtu)
		return 0;
	if (o->all_sizes || !o->size_set) {
		fprintf(stderr, PROG ": Max msg size in UD is MTU %u\n Changing to this MTU\n",
			mtu);
		ctx->max_size = mtu;
		return 0;
	}
	fprintf(stderr, PROG ": Max message size in UD cannot be greater than MTU (%u)\n", mtu);
	return -1;
}

static int barrier(struct perf_ctx *ctx, int64_t timeout_ms, const char *when)
{
	struct perf_dest theirs;
	int ret = perf_xchg_keys(&ctx->oob, &ctx->mine[0], &theirs, tool_now_ms() + timeout_ms);

	if (ret)
		fprintf(stderr, PROG ": key exchange %s failed: %s\n", when, oob_error(ret));
	return ret ? -1 : 0;
}

/* One keys message per QP, in QP order. */
static int xchg_qp_keys(struct perf_ctx *ctx, const char *what)
{
	for (unsigned int q = 0; q < ctx->o->num_qps; q++) {
		int ret = perf_xchg_keys(&ctx->oob, &ctx->mine[q], &ctx->remote[q],
					 tool_now_ms() + EXCHANGE_TIMEOUT_MS);

		if (ret) {
			fprintf(stderr,
				PROG ": exchange of the keys %s failed at QP %u of %u: %s\n", what,
				q + 1, ctx->o->num_qps, oob_error(ret));
			return -1;
		}
	}
	return 0;
}

/* ---- verbs resources ------------------------------------------------------ */

static int mr_access(enum perf_verb verb)
{
	switch (verb) {
	case VERB_WRITE:
		return XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE;
	case VERB_READ:
		return XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_READ;
	case VERB_ATOMIC:
		return XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_ATOMIC;
	default:
		return XR_ACCESS_LOCAL_WRITE;
	}
}

/* The QP access flags perftest sets for each verb. */
static unsigned int qp_access(enum perf_verb verb)
{
	switch (verb) {
	case VERB_WRITE:
		return XR_ACCESS_REMOTE_WRITE;
	case VERB_READ:
		return XR_ACCESS_REMOTE_READ;
	case VERB_ATOMIC:
		return XR_ACCESS_REMOTE_ATOMIC;
	default:
		return XR_ACCESS_REMOTE_WRITE | XR_ACCESS_LOCAL_WRITE;
	}
}

static int open_device(struct perf_ctx *ctx, struct xr_device_attr *dev_attr)
{
	int gid_index, ret;

	ctx->dev = tool_open_device(PROG, ctx->o->ifname);
	if (!ctx->dev)
		return -1;
	/* perftest prefers the first IPv4-mapped GID when -x is not given, else index 0. */
	ret = find_ipv4_gid(ctx->dev, dev_attr, &ctx->mine[0].gid);
	if (ret < 0 && ret != -EADDRNOTAVAIL) {
		fprintf(stderr, PROG ": couldn't query device %s: %s\n", ctx->o->ifname,
			strerror(-ret));
		return -1;
	}
	gid_index = ctx->o->gid_index >= 0 ? ctx->o->gid_index : ret < 0 ? 0 : ret;
	ctx->gid_index = gid_index;
	ret = xr_query_gid(ctx->dev, gid_index, &ctx->mine[0].gid);
	if (ret) {
		fprintf(stderr, PROG ": can't read GID index %d of %s: %s\n", gid_index,
			ctx->o->ifname, strerror(-ret));
		return -1;
	}
	ctx->cycle_buffer = sysconf(_SC_PAGESIZE);
	ctx->cache_line = DEF_CACHE_LINE;

	/* perftest's out_reads: the device's maximum for READ and atomics unless -o, else 1. */
	if (ctx->o->outs_set && (ctx->o->outs < 1 || ctx->o->outs > dev_attr->max_qp_rd_atom)) {
		fprintf(stderr,
			PROG ": -o %lu: outstanding READs/atomics must be between 1 and %u (the "
			     "device's maximum)\n",
			ctx->o->outs, dev_attr->max_qp_rd_atom);
		return -1;
	}
	if (ctx->o->test->verb == VERB_READ || ctx->o->test->verb == VERB_ATOMIC)
		ctx->out_reads = ctx->o->outs_set ? ctx->o->outs : dev_attr->max_qp_rd_atom;
	else
		ctx->out_reads = 1;
	return 0;
}

/* perftest's buffer layout: QP q sends from slot q and is the target of slot num_qps + q. */
static uint8_t *send_slot(const struct perf_ctx *ctx, unsigned int q)
{
	return ctx->buf + q * ctx->buff_size;
}

static uint8_t *target_slot(const struct perf_ctx *ctx, unsigned int q)
{
	return ctx->buf + (ctx->o->num_qps + q) * ctx->buff_size;
}

static int alloc_qp_arrays(struct perf_ctx *ctx)
{
	unsigned int n = ctx->o->num_qps;

	ctx->qps = calloc(n, sizeof(*ctx->qps));
	ctx->ahs = calloc(n, sizeof(*ctx->ahs));
	ctx->mine = calloc(n, sizeof(*ctx->mine));
	ctx->remote = calloc(n, sizeof(*ctx->remote));
	ctx->recv_posted = calloc(n, sizeof(*ctx->recv_posted));
	if (ctx->qps && ctx->ahs && ctx->mine && ctx->remote && ctx->recv_posted)
		return 0;
	fprintf(stderr, PROG ": out of memory for %u QPs\n", n);
	return -1;
}

/* INIT: a UD QP takes perftest's Q_Key, the others the access flags of the verb. */
static int qp_init(const struct perf_ctx *ctx, struct xr_qp *qp)
{
	struct xr_qp_attr attr = {.qp_state = XR_QPS_INIT, .port_num = 1, .qkey = DEF_QKEY};

	if (ctx->o->conn != CONN_UD)
		return qp_to_init(qp, 1, qp_access(ctx->o->test->verb));
	return xr_modify_qp(qp, &attr, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY);
}

/* One QP in INIT, and the keys that describe it to the peer. */
static int create_qp(struct perf_ctx *ctx, unsigned int q, struct xr_qp_init_attr *init_attr)
{
	enum perf_verb verb = ctx->o->test->verb;
	struct perf_dest *mine = &ctx->mine[q];
	struct xr_qp_attr attr;
	int ret;

	ctx->qps[q] = xr_create_qp(ctx->pd, init_attr);
	if (!ctx->qps[q]) {
		fprintf(stderr, PROG ": couldn't create QP %u of %u: %s\n", q + 1, ctx->o->num_qps,
			strerror(errno));
		return -1;
	}
	ret = xr_query_qp(ctx->qps[q], &attr, XR_QP_CAP, init_attr);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query QP: %s\n", strerror(-ret));
		return -1;
	}
	ctx->max_inline = init_attr->cap.max_inline_data;

	ret = qp_init(ctx, ctx->qps[q]);
	if (ret) {
		fprintf(stderr, PROG ": failed to modify QP to INIT: %s\n", strerror(-ret));
		return -1;
	}

	mine->lid = 0;
	mine->gid = ctx->mine[0].gid;
	mine->qpn = ctx->qps[q]->qp_num;
	mine->psn = lrand48() & 0xffffff;
	mine->out_reads = ctx->out_reads;
	/* Like rxe: an MR without remote access has no rkey to give. */
	mine->rkey = verb == VERB_SEND ? 0 : ctx->mr->rkey;
	mine->vaddr = (uintptr_t)target_slot(ctx, q);
	return 0;
}

static int create_resources(struct perf_ctx *ctx, const struct xr_device_attr *dev_attr)
{
	const struct options *o = ctx->o;
	enum perf_verb verb = o->test->verb;
	uint64_t max_size = ctx->max_size;
	static const enum xr_qp_type qp_types[] = {
	    [CONN_RC] = XR_QPT_RC, [CONN_UC] = XR_QPT_UC, [CONN_UD] = XR_QPT_UD};
	struct xr_qp_init_attr init_attr = {.qp_type = qp_types[o->conn],
					    .cap = {.max_send_sge = 1}};
	uint64_t send_cqe, recv_cqe;
	unsigned int signaled;
	size_t alloc;

	ctx->tx_depth = o->tx_depth ? o->tx_depth : (o->test->lat ? 1 : DEF_TX_DEPTH);
	if (!o->duration && ctx->tx_depth > o->iters)
		ctx->tx_depth = o->iters;
	ctx->cq_mod = ctx->tx_depth < DEF_CQ_MOD ? ctx->tx_depth : DEF_CQ_MOD;
	ctx->rx_depth = rx_depth_of(o);
	if (ctx->tx_depth > dev_attr->max_qp_wr || ctx->rx_depth > dev_attr->max_qp_wr) {
		fprintf(stderr, PROG ": queue depths %u/%u exceed the device's %u\n", ctx->tx_depth,
			ctx->rx_depth, dev_attr->max_qp_wr);
		return -1;
	}
	if (max_size > dev_attr->max_mr_size / 2) {
		fprintf(stderr, PROG ": size %" PRIu64 " is too large for one MR\n", max_size);
		return -1;
	}

	/* Each slot holds a whole message, and at least the cycle the peer walks through. */
	ctx->buff_size = max_size > ctx->cycle_buffer ? max_size : ctx->cycle_buffer;
	ctx->buff_size =
	    (ctx->buff_size + ctx->cycle_buffer - 1) / ctx->cycle_buffer * ctx->cycle_buffer;
	if (ctx->buff_size > dev_attr->max_mr_size / 2 / o->num_qps) {
		fprintf(stderr, PROG ": %u QPs of %zu bytes each are too large for one MR\n",
			o->num_qps, ctx->buff_size);
		return -1;
	}
	alloc = 2 * o->num_qps * ctx->buff_size;
	/*
	 * A UD receive puts the GRH in front of a cache-line-aligned payload
	 * (post_recvs), which needs a cache line more; a page more keeps the
	 * size a multiple of the alignment.
	 */
	if (o->conn == CONN_UD)
		alloc += ctx->cycle_buffer;
	ctx->buf = aligned_alloc(ctx->cycle_buffer, alloc);
	if (!ctx->buf) {
		fprintf(stderr, PROG ": couldn't allocate %zu bytes\n", alloc);
		return -1;
	}
	memset(ctx->buf, 0, alloc);

	ctx->pd = xr_alloc_pd(ctx->dev);
	if (!ctx->pd) {
		fprintf(stderr, PROG ": couldn't allocate PD: %s\n", strerror(errno));
		return -1;
	}
	ctx->mr = xr_reg_mr(ctx->pd, ctx->buf, alloc, mr_access(verb));
	if (!ctx->mr) {
		fprintf(stderr, PROG ": couldn't register MR: %s\n", strerror(errno));
		return -1;
	}
	/*
	 * Like perftest: one send and one receive CQ that all QPs share. They
	 * are sized by what can be in them at once, so that many QPs fit in
	 * the device's max_cqe: per QP, the signaled requests among tx_depth in
	 * flight (one per cq_mod and the last), and the receives it can take.
	 */
	signaled = (ctx->tx_depth + ctx->cq_mod - 1) / ctx->cq_mod + 1;
	if (signaled > ctx->tx_depth)
		signaled = ctx->tx_depth;
	send_cqe = (uint64_t)signaled * o->num_qps + 1;
	recv_cqe = (uint64_t)(verb == VERB_SEND ? ctx->rx_depth : 1) * o->num_qps + 1;
	if (send_cqe > dev_attr->max_cqe || recv_cqe > dev_attr->max_cqe) {
		fprintf(stderr,
			PROG ": CQs of %" PRIu64 "/%" PRIu64 " entries exceed the device's %u (-q, "
			     "-t, -r)\n",
			send_cqe, recv_cqe, dev_attr->max_cqe);
		return -1;
	}
	ctx->send_cq = xr_create_cq(ctx->dev, (int)send_cqe, NULL);
	ctx->recv_cq = xr_create_cq(ctx->dev, (int)recv_cqe, NULL);
	if (!ctx->send_cq || !ctx->recv_cq) {
		fprintf(stderr, PROG ": couldn't create CQ: %s\n", strerror(errno));
		return -1;
	}
	init_attr.send_cq = ctx->send_cq;
	init_attr.recv_cq = ctx->recv_cq;
	init_attr.cap.max_send_wr = ctx->tx_depth;
	init_attr.cap.max_recv_wr = verb == VERB_SEND ? ctx->rx_depth : 1;
	init_attr.cap.max_recv_sge = 1;
	/* As perftest: the side that receives (no send_bw client) has the SRQ, rx_depth deep. */
	if (o->use_srq && (o->test->lat || !is_client(ctx))) {
		struct xr_srq_init_attr srq_attr = {
		    .attr = {.max_wr = ctx->rx_depth, .max_sge = 1}};

		ctx->srq = xr_create_srq(ctx->pd, &srq_attr);
		if (!ctx->srq) {
			fprintf(stderr, PROG ": Couldn't create SRQ: %s\n", strerror(errno));
			return -1;
		}
		init_attr.srq = ctx->srq;
		init_attr.cap.max_recv_wr = 0;
		init_attr.cap.max_recv_sge = 0;
	}
	/* Like perftest's latency tests: small messages go inline. */
	if (o->test->lat && verb != VERB_READ && verb != VERB_ATOMIC &&
	    max_size <= dev_attr->max_inline_data)
		init_attr.cap.max_inline_data = max_size;
	for (unsigned int q = 0; q < o->num_qps; q++)
		if (create_qp(ctx, q, &init_attr))
			return -1;
	return 0;
}

static void destroy_resources(struct perf_ctx *ctx)
{
	int ret;

	for (unsigned int q = 0; ctx->ahs && q < ctx->o->num_qps; q++)
		if (ctx->ahs[q] && (ret = xr_destroy_ah(ctx->ahs[q])))
			fprintf(stderr, PROG ": couldn't destroy AH: %s\n", strerror(-ret));
	if (ctx->mcast_attached && (ret = xr_detach_mcast(ctx->qps[0], &ctx->mgid, 0)))
		fprintf(stderr, PROG ": Couldn't detach QP from MultiCast group: %s\n",
			strerror(-ret));
	for (unsigned int q = 0; ctx->qps && q < ctx->o->num_qps; q++)
		if (ctx->qps[q] && (ret = xr_destroy_qp(ctx->qps[q])))
			fprintf(stderr, PROG ": couldn't destroy QP: %s\n", strerror(-ret));
	if (ctx->srq && (ret = xr_destroy_srq(ctx->srq)))
		fprintf(stderr, PROG ": couldn't destroy SRQ: %s\n", strerror(-ret));
	if (ctx->send_cq && (ret = xr_destroy_cq(ctx->send_cq)))
		fprintf(stderr, PROG ": couldn't destroy CQ: %s\n", strerror(-ret));
	if (ctx->recv_cq && (ret = xr_destroy_cq(ctx->recv_cq)))
		fprintf(stderr, PROG ": couldn't destroy CQ: %s\n", strerror(-ret));
	if (ctx->mr && (ret = xr_dereg_mr(ctx->mr)))
		fprintf(stderr, PROG ": couldn't deregister MR: %s\n", strerror(-ret));
	if (ctx->pd && (ret = xr_dealloc_pd(ctx->pd)))
		fprintf(stderr, PROG ": couldn't deallocate PD: %s\n", strerror(-ret));
	if (ctx->dev && (ret = xr_close_device(ctx->dev)))
		fprintf(stderr, PROG ": couldn't close device: %s\n", strerror(-ret));
	if (ctx->oob.fd >= 0)
		close(ctx->oob.fd);
	free(ctx->buf);
	free(ctx->qps);
	free(ctx->ahs);
	free(ctx->mine);
	free(ctx->remote);
	free(ctx->recv_posted);
}

/*
 * -g: the receiving side (send_bw's server, both sides of send_lat) attaches
 * its QP to the group and announces the group as its GID, with the multicast
 * QPN, so that the peer's SENDs go there. Without -M, send_lat's client
 * receives on a group of its own, one more in the last byte.
 */
static int attach_group(struct perf_ctx *ctx)
{
	/* perftest's default group: 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0. */
	static const union xr_gid def_mgid = {.raw = {255, 1, 0, 0, 0, 2, 201, 133}};
	int ret;

	if (!ctx->o->mcg || (!ctx->o->test->lat && is_client(ctx)))
		return 0;
	ctx->mgid = ctx->o->mgid_set ? ctx->o->mgid : def_mgid;
	if (is_client(ctx) && !ctx->o->mgid_set)
		ctx->mgid.raw[15]++;
	ret = xr_attach_mcast(ctx->qps[0], &ctx->mgid, 0);
	if (ret) {
		fprintf(stderr, PROG ": Couldn't attach QP to MultiCast group: %s\n",
			strerror(-ret));
		return -1;
	}
	ctx->mcast_attached = true;
	ctx->mine[0].gid = ctx->mgid;
	ctx->mine[0].lid = 0;
	ctx->mine[0].qpn = XR_MULTICAST_QPN;
	return 0;
}

/* As perftest: IPv4-mapped GIDs, and ff0e::ffff:a.b.c.d groups, are IPv4. */
static bool gid_is_ipv4(const union xr_gid *gid)
{
	static const uint8_t v4_group[12] = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return gid_is_ipv4_mapped(gid) || !memcmp(gid->raw, v4_group, sizeof(v4_group));
}

/*
 * RC: RTR and RTS with perftest's attributes: the responder takes as many
 * reads as we announced, the requester issues as many as the peer announced.
 * Unlike perftest, whose requester ignores its own -o, ours also keeps to it:
 * -o N means at most N in flight on either side. UC: only the path, the
 * peer's QPN and PSNs. UD: nothing but the states, and the peer's address in
 * an AH. Like perftest, a bandwidth server stays in RTR: it never sends.
 */
static int connect_qp(struct perf_ctx *ctx, unsigned int q)
{
	static const uint8_t zero_gid[16];
	const struct perf_dest *remote = &ctx->remote[q];
	enum perf_conn conn = ctx->o->conn;
	struct xr_ah_attr av = {
	    .is_global = 1,
	    .dlid = (uint16_t)remote->lid,
	    .port_num = 1,
	    .grh = {.dgid = remote->gid, .sgid_index = (uint8_t)ctx->gid_index, .hop_limit = 0xff},
	};
	struct qp_rtr_attr rtr = {
	    .path_mtu = ctx->mtu,
	    .dest_qpn = remote->qpn,
	    .rq_psn = remote->psn,
	    .dgid = remote->gid,
	    .sgid_index = (uint8_t)ctx->gid_index,
	    .port_num = 1,
	    .hop_limit = 0xff,
	    .dlid = (uint16_t)remote->lid,
	    .max_dest_rd_atomic = (uint8_t)ctx->mine[q].out_reads,
	    .min_rnr_timer = 12,
	};
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = ctx->mtu,
	    .dest_qp_num = remote->qpn,
	    .rq_psn = remote->psn,
	    .ah_attr = av,
	};
	unsigned int max_rd_atomic =
	    remote->out_reads < ctx->out_reads ? remote->out_reads : ctx->out_reads;
	int ret;

	if (!memcmp(remote->gid.raw, zero_gid, sizeof(zero_gid))) {
		fprintf(stderr,
			PROG ": the peer sent a zero GID: RoCE needs one (run it with -x)\n");
		return -1;
	}
	if (conn == CONN_RC)
		ret = qp_to_rtr(ctx->qps[q], &rtr);
	else
		ret = xr_modify_qp(ctx->qps[q], &attr,
				   conn == CONN_UD ? XR_QP_STATE
						   : XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU |
							 XR_QP_DEST_QPN | XR_QP_RQ_PSN);
	if (ret) {
		fprintf(stderr, PROG ": failed to modify QP to RTR: %s\n", strerror(-ret));
		return -1;
	}
	if (!ctx->o->test->lat && !is_client(ctx))
		return 0;
	if (conn == CONN_RC) {
		ret = qp_to_rts(ctx->qps[q], ctx->mine[q].psn,
				(uint8_t)(max_rd_atomic ? max_rd_atomic : 1));
	} else {
		attr.qp_state = XR_QPS_RTS;
		attr.sq_psn = ctx->mine[q].psn;
		ret = xr_modify_qp(ctx->qps[q], &attr, XR_QP_STATE | XR_QP_SQ_PSN);
	}
	if (ret) {
		fprintf(stderr, PROG ": failed to modify QP to RTS: %s\n", strerror(-ret));
		return -1;
	}
	if (conn == CONN_UD) {
		ctx->ahs[q] = xr_create_ah(ctx->pd, &av);
		if (!ctx->ahs[q]) {
			fprintf(stderr, PROG ": Failed to create AH: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- printing --------------------------------------------------------------- */

static void print_test_info(const struct perf_ctx *ctx)
{
	const struct options *o = ctx->o;
	char title[64];

	snprintf(title, sizeof(title), o->test->title,
		 o->cmp_and_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	printf(RESULT_LINE);
	/* perftest's multicast title: "Send BW Multicast Test". */
	if (o->mcg)
		printf("                    %.*sMulticast Test\n"
		       " MultiCast runs on UD!\n",
		       (int)(strlen(title) - strlen("Test")), title);
	else
		printf("                    %s\n", title);
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", o->ifname);
	printf(" Number of qps   : %u\t\tTransport type : IB\n", o->num_qps);
	printf(" Connection type : %s\t\tUsing SRQ      : %s\n", conn_names[o->conn],
	       o->use_srq ? "ON" : "OFF");
	if (is_client(ctx) || o->test->lat)
		printf(" TX depth        : %u\n", ctx->tx_depth);
	if (o->test->verb == VERB_SEND && (!is_client(ctx) || o->test->lat))
		printf(" RX depth        : %u\n", ctx->rx_depth);
	if (!o->test->lat)
		printf(" CQ Moderation   : %u\n", ctx->cq_mod);
	printf(" Mtu             : %u[B]\n", mtu_bytes(ctx->mtu));
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", ctx->gid_index);
	if (o->test->verb == VERB_READ || o->test->verb == VERB_ATOMIC)
		printf(" Outstand reads  : %u\n", ctx->mine[0].out_reads);
	printf(" Max inline data : %u[B]\n", ctx->max_inline);
	printf(" Data ex. method : Ethernet\n");
	printf(RESULT_LINE);
}

static void print_dest(const struct perf_ctx *ctx, bool local, const struct perf_dest *d)
{
	const uint8_t *g = d->gid.raw;
	/* As perftest: the server's own group, and the client's view of the server's. */
	bool group = ctx->o->mcg && local != is_client(ctx);

	printf(" %s address: LID %#04x QPN %#06x PSN %#06x", local ? "local" : "remote", d->lid,
	       d->qpn, d->psn);
	if (ctx->o->test->verb == VERB_READ)
		printf(" OUT %#04x", d->out_reads);
	if (ctx->o->test->verb == VERB_READ || ctx->o->test->verb == VERB_WRITE)
		printf(" RKey %#08x VAddr %#016" PRIx64, d->rkey, d->vaddr);
	printf("\n %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:"
	       "%02d\n",
	       group ? "MGID" : "GID", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
	       g[10], g[11], g[12], g[13], g[14], g[15]);
}

static void print_bw_line(const struct perf_bw_report *r)
{
	printf(" %-7" PRIu64 "    %-10" PRIu64 "       %-7.2f            %-7.2f\t\t   %-7.6f\n",
	       r->size, r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The tool links without libm: Newton's method is plenty for a standard deviation. */
static double square_root(double v)
{
	double x = v > 1 ? v : 1;

	if (v <= 0)
		return 0;
	for (int i = 0; i < 200; i++)
		x = (x + v / x) / 2;
	return x;
}

static double percentile(const double *sorted, size_t n, double p)
{
	double rank = p * n;
	size_t i = (size_t)rank + ((double)(size_t)rank < rank);

	return sorted[i ? (i > n ? n : i) - 1 : 0];
}

/* Samples in microseconds, one per iteration (or round trip / 2 for ping-pong). */
static void print_lat_line(uint64_t size, uint64_t iters, double *samples, size_t n)
{
	double sum = 0, var = 0, mean;

	qsort(samples, n, sizeof(*samples), compare_double);
	for (size_t i = 0; i < n; i++)
		sum += samples[i];
	mean = sum / n;
	for (size_t i = 0; i < n; i++)
		var += (samples[i] - mean) * (samples[i] - mean);
	printf(" %-7" PRIu64 " %-7" PRIu64 "    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f  "
	       "   \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
	       size, iters, samples[0], samples[n - 1], samples[n / 2], mean, square_root(var / n),
	       percentile(samples, n, 0.99), percentile(samples, n, 0.999));
}

static void print_lat_duration_line(uint64_t size, uint64_t iters, double total_us)
{
	printf(" %-7" PRIu64 "        %-10" PRIu64 "       %-7.2f        %-7.2f\n", size, iters,
	       total_us / iters, iters / (total_us / 1e6));
}

/* ---- data path helpers -------------------------------------------------------- */

/*
 * Between empty polls. A latency test never sleeps, as perftest's: a sleep
 * would be the round trip it measures; it yields now and then to the
 * threads it shares the cores with. Bandwidth tests sleep once idle.
 */
static void idle(const struct perf_ctx *ctx, unsigned int *idle_polls)
{
	++*idle_polls;
	if (ctx->o->test->lat) {
		if (*idle_polls % LAT_POLLS_PER_YIELD == 0)
			sched_yield();
	} else if (*idle_polls > SPIN_POLLS_BEFORE_SLEEP) {
		nanosleep(&(struct timespec){.tv_nsec = IDLE_SLEEP_NS}, NULL);
	}
}

static int64_t run_timeout_ms(const struct perf_ctx *ctx)
{
	if (ctx->o->duration)
		return RUN_BASE_TIMEOUT_MS + ctx->o->duration * 1000ll;
	return RUN_BASE_TIMEOUT_MS + (int64_t)ctx->o->iters * ctx->o->num_qps * RUN_PER_OP_MS;
}

/* Checks a run's deadline and stop signals; prints why it gives up. */
static int check_wait(const struct perf_ctx *ctx, int64_t deadline, const char *what, uint64_t done,
		      uint64_t total)
{
	if (tool_stop_signal) {
		fprintf(stderr,
			PROG ": interrupted by signal %d while waiting for %s (%" PRIu64 "/%" PRIu64
			     " done)\n",
			(int)tool_stop_signal, what, done, total);
		return -1;
	}
	if (tool_now_ms() >= deadline) {
		fprintf(stderr,
			PROG ": timed out after %" PRId64 " s waiting for %s (%" PRIu64 "/%" PRIu64
			     " done)\n",
			run_timeout_ms(ctx) / 1000, what, done, total);
		return -1;
	}
	return 0;
}

static int check_wc(const struct xr_wc *wc, const char *what, uint64_t done)
{
	if (wc->status == XR_WC_SUCCESS)
		return 0;
	fprintf(stderr,
		PROG ": %s completion failed: %s (%d), vendor_err %u, after %" PRIu64
		     " completions\n",
		what, xr_wc_status_str(wc->status), wc->status, wc->vendor_err, done);
	return -1;
}

/* Polls one completion from cq, bounded by deadline. */
static int wait_one(struct perf_ctx *ctx, struct xr_cq *cq, struct xr_wc *wc, int64_t deadline,
		    const char *what, uint64_t done, uint64_t total)
{
	unsigned int idle_polls = 0;

	for (;;) {
		int ne = xr_poll_cq(cq, 1, wc);

		if (ne < 0) {
			fprintf(stderr, PROG ": poll CQ failed: %s\n", strerror(-ne));
			return -1;
		}
		if (ne)
			return check_wc(wc, what, done);
		if (check_wait(ctx, deadline, what, done, total))
			return -1;
		idle(ctx, &idle_polls);
	}
}

/*
 * Receives of size-byte messages into QP q's target slot; their wr_id names
 * the QP. A UD receive, as perftest's, also takes the GRH, in the 40 bytes
 * before the slot's second cache line, where the payload starts. With an
 * SRQ, as perftest's, they go to the SRQ: their wr_id then names the QP
 * whose slot they fill, and whichever QP takes one completes it.
 */
static int post_recvs(struct perf_ctx *ctx, unsigned int q, unsigned int n, uint64_t size)
{
	bool ud = ctx->o->conn == CONN_UD;
	struct xr_sge sge = {.addr = (uintptr_t)target_slot(ctx, q) +
				     (ud ? ctx->cache_line - XR_GRH_SIZE : 0),
			     .length = ud ? size + XR_GRH_SIZE : ctx->buff_size,
			     .lkey = ctx->mr->lkey};
	struct xr_recv_wr wr = {.wr_id = q, .sg_list = &sge, .num_sge = 1}, *bad_wr;

	for (unsigned int i = 0; i < n; i++) {
		int ret = ctx->srq ? xr_post_srq_recv(ctx->srq, &wr, &bad_wr)
				   : xr_post_recv(ctx->qps[q], &wr, &bad_wr);

		if (ret) {
			fprintf(stderr, PROG ": couldn't post receive%s: %s\n",
				ctx->srq ? " to the SRQ" : "", strerror(-ret));
			return -1;
		}
		ctx->recv_posted[q]++;
		ctx->srq_posted++;
	}
	return 0;
}

/* The receives of a run start: rx_depth per QP, or with an SRQ rx_depth shared out evenly. */
static int post_first_recvs(struct perf_ctx *ctx, uint64_t size)
{
	unsigned int n = ctx->srq ? ctx->rx_depth / ctx->o->num_qps : ctx->rx_depth;

	ctx->srq_posted = 0;
	for (unsigned int q = 0; q < ctx->o->num_qps; q++) {
		ctx->recv_posted[q] = 0;
		if (post_recvs(ctx, q, n, size))
			return -1;
	}
	return 0;
}

/*
 * Whether the receive that just completed into QP q's slot is posted again:
 * while QP q expects more, or with an SRQ while the QPs together do (as
 * many receives posted as messages come in the run, none left over).
 */
static bool repost_recv(const struct perf_ctx *ctx, unsigned int q)
{
	if (ctx->srq)
		return ctx->srq_posted < ctx->o->iters * ctx->o->num_qps;
	return ctx->recv_posted[q] < ctx->o->iters;
}

/* A receive completion's byte count: a UD one counts its GRH. */
static uint64_t recv_len(const struct perf_ctx *ctx, uint64_t size)
{
	return ctx->o->conn == CONN_UD ? size + XR_GRH_SIZE : size;
}

/* Cycles through the cycle buffer as perftest does, one cache-line-aligned slot per message. */
static void next_offset(const struct perf_ctx *ctx, uint64_t size, size_t *off)
{
	uint64_t step = (size + ctx->cache_line - 1) / ctx->cache_line * ctx->cache_line;

	if (size > ctx->cycle_buffer / 2)
		return;
	*off += step;
	if (*off + size > ctx->cycle_buffer)
		*off = 0;
}

/* One work request of the test's verb on QP q, from local offset loc to remote offset rem. */
static int post_op(struct perf_ctx *ctx, unsigned int q, uint64_t size, size_t loc, size_t rem,
		   bool signaled, uint64_t wr_id)
{
	const struct perf_dest *remote = &ctx->remote[q];
	struct xr_sge sge = {
	    .addr = (uintptr_t)send_slot(ctx, q) + loc, .length = size, .lkey = ctx->mr->lkey};
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = &sge,
				.num_sge = 1,
				.send_flags = signaled ? XR_SEND_SIGNALED : 0},
			  *bad_wr;
	int ret;

	switch (ctx->o->test->verb) {
	case VERB_SEND:
		wr.opcode = XR_WR_SEND;
		if (ctx->o->conn == CONN_UD) {
			wr.wr.ud.ah = ctx->ahs[q];
			wr.wr.ud.remote_qpn = remote->qpn;
			wr.wr.ud.remote_qkey = DEF_QKEY;
		}
		break;
	case VERB_WRITE:
		wr.opcode = XR_WR_RDMA_WRITE;
		break;
	case VERB_READ:
		wr.opcode = XR_WR_RDMA_READ;
		break;
	case VERB_ATOMIC:
		wr.opcode =
		    ctx->o->cmp_and_swap ? XR_WR_ATOMIC_CMP_AND_SWP : XR_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = remote->vaddr + rem;
		wr.wr.atomic.rkey = remote->rkey;
		wr.wr.atomic.compare_add = ctx->o->cmp_and_swap ? 0 : ATOMIC_ADD_VALUE;
		wr.wr.atomic.swap = 0;
		break;
	}
	if (ctx->o->test->verb == VERB_WRITE || ctx->o->test->verb == VERB_READ) {
		wr.wr.rdma.remote_addr = remote->vaddr + rem;
		wr.wr.rdma.rkey = remote->rkey;
	}
	if (size <= ctx->max_inline && ctx->o->test->verb != VERB_READ &&
	    ctx->o->test->verb != VERB_ATOMIC)
		wr.send_flags |= XR_SEND_INLINE;
	ret = xr_post_send(ctx->qps[q], &wr, &bad_wr);
	if (ret)
		fprintf(stderr, PROG ": couldn't post %s: %s\n", ctx->o->test->name,
			strerror(-ret));
	return ret ? -1 : 0;
}

/* ---- bandwidth ---------------------------------------------------------------- */

/* Post and completion times per completion batch (one signaled WR per cq_mod). */
struct batch_times {
	double *posted;
	double *completed;
	size_t cap;
};

static int batch_reserve(struct batch_times *t, size_t n)
{
	double *p, *c;
	size_t cap = t->cap ? t->cap : 64;

	if (n <= t->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(t->posted, cap * sizeof(*p));
	if (p)
		t->posted = p;
	c = p ? realloc(t->completed, cap * sizeof(*c)) : NULL;
	if (c)
		t->completed = c;
	if (!p || !c) {
		fprintf(stderr, PROG ": out of memory for %zu time stamps\n", cap);
		return -1;
	}
	t->cap = cap;
	return 0;
}

/*
 * perftest's figures: the average over the whole run, the peak over the best
 * window of consecutive batches, in MiB/s, and the message rate in Mpps.
 */
static void bw_figures(const struct batch_times *t, size_t batches, uint64_t ops,
		       unsigned int cq_mod, uint64_t size, struct perf_bw_report *r)
{
	double total_us = t->completed[batches - 1] - t->posted[0];
	double best = 0;

	for (size_t i = 0; i < batches; i++) {
		for (size_t j = i; j < batches; j++) {
			uint64_t last = j + 1 == batches ? ops : (j + 1) * (uint64_t)cq_mod;
			double us = t->completed[j] - t->posted[i];
			double bw = us > 0 ? (last - i * (uint64_t)cq_mod) * size / us : 0;

			if (bw > best)
				best = bw;
		}
	}
	r->size = size;
	r->iters = ops;
	r->bw_peak = best * 1e6 / MIB;
	r->bw_avg = total_us > 0 ? ops * size / total_us * 1e6 / MIB : 0;
	r->msg_rate = total_us > 0 ? ops / total_us : 0;
}

/* Where one QP of the active side stands in the run. */
struct qp_progress {
	uint64_t posted;
	uint64_t completed;
	size_t loc, rem;
	bool last_posted;
};

/*
 * The active side, as perftest's run_iter_bw: round-robin over the QPs, each
 * with up to tx_depth requests in flight and one signaled per cq_mod of its
 * own. The time stamps count the posts and completions of all QPs together.
 */
static int run_bw_client(struct perf_ctx *ctx, uint64_t size, struct perf_bw_report *report)
{
	const struct options *o = ctx->o;
	unsigned int num_qps = o->num_qps, posting = num_qps;
	int64_t deadline = tool_now_ms() + run_timeout_ms(ctx);
	double end_us = o->duration ? now_us() + o->duration * 1e6 : 0, last_done = 0;
	uint64_t total = o->iters * num_qps, scnt = 0, ccnt = 0;
	struct qp_progress *progress = calloc(num_qps, sizeof(*progress));
	struct batch_times times = {0};
	size_t timed_batches = 0, batches;
	unsigned int idle_polls = 0;
	int ret = -1;

	if (!progress) {
		fprintf(stderr, PROG ": out of memory for %u QPs\n", num_qps);
		return -1;
	}
	while (ccnt < scnt || posting) {
		struct xr_wc wc[16];
		int ne;

		for (unsigned int q = 0; q < num_qps; q++) {
			struct qp_progress *p = &progress[q];

			while (!p->last_posted && p->posted - p->completed < ctx->tx_depth) {
				double t = now_us();
				bool last = o->duration ? t >= end_us : p->posted + 1 == o->iters;
				bool signaled = last || (p->posted + 1) % ctx->cq_mod == 0;

				if (scnt % ctx->cq_mod == 0) {
					if (batch_reserve(&times, scnt / ctx->cq_mod + 1))
						goto out;
					times.posted[scnt / ctx->cq_mod] = t;
				}
				if (post_op(ctx, q, size, p->loc, p->rem, signaled,
					    (uint64_t)q << WR_ID_QP_SHIFT | p->posted))
					goto out;
				p->posted++;
				scnt++;
				if (last) {
					p->last_posted = true;
					posting--;
				}
				next_offset(ctx, size, &p->loc);
				next_offset(ctx, size, &p->rem);
			}
		}
		ne = xr_poll_cq(ctx->send_cq, 16, wc);
		if (ne < 0) {
			fprintf(stderr, PROG ": poll CQ failed: %s\n", strerror(-ne));
			goto out;
		}
		for (int i = 0; i < ne; i++) {
			struct qp_progress *p = &progress[wc[i].wr_id >> WR_ID_QP_SHIFT];
			uint64_t done = (wc[i].wr_id & ((1ull << WR_ID_QP_SHIFT) - 1)) + 1;

			if (check_wc(&wc[i], o->test->name, ccnt))
				goto out;
			/* A signaled completion stands for the unsignaled ones before it. */
			ccnt += done - p->completed;
			p->completed = done;
		}
		if (ne) {
			last_done = now_us();
			for (; timed_batches < ccnt / ctx->cq_mod; timed_batches++)
				times.completed[timed_batches] = last_done;
			idle_polls = 0;
			continue;
		}
		if (check_wait(ctx, deadline, "completions", ccnt, o->duration ? scnt : total))
			goto out;
		idle(ctx, &idle_polls);
	}
	/* The last batch may be short: it ends with the last completion. */
	batches = (scnt + ctx->cq_mod - 1) / ctx->cq_mod;
	for (; timed_batches < batches; timed_batches++)
		times.completed[timed_batches] = last_done;
	bw_figures(&times, batches, scnt, ctx->cq_mod, size, report);
	ret = 0;
out:
	free(progress);
	free(times.posted);
	free(times.completed);
	return ret;
}

/*
 * send_bw's server: count the SENDs of all QPs as they arrive, reposting a
 * receive on the QP that took one while that QP expects more, and measure
 * from the first arrival to the last; like perftest it has no peak (it posts
 * nothing) and counts the iterations of all QPs.
 */
static int run_bw_server_send(struct perf_ctx *ctx, uint64_t size, struct perf_bw_report *report)
{
	uint64_t iters = ctx->o->iters, total = iters * ctx->o->num_qps, rcnt = 0;
	int64_t deadline = tool_now_ms() + run_timeout_ms(ctx);
	double first = 0, last = 0;
	unsigned int idle_polls = 0;

	while (rcnt < total) {
		struct xr_wc wc[16];
		int ne = xr_poll_cq(ctx->recv_cq, 16, wc);

		if (ne < 0) {
			fprintf(stderr, PROG ": poll CQ failed: %s\n", strerror(-ne));
			return -1;
		}
		for (int i = 0; i < ne; i++) {
			unsigned int q = wc[i].wr_id;

			if (check_wc(&wc[i], "receive", rcnt))
				return -1;
			if (wc[i].byte_len != recv_len(ctx, size)) {
				fprintf(stderr,
					PROG ": receive %" PRIu64 " has %u bytes, expected %" PRIu64
					     "\n",
					rcnt + 1, wc[i].byte_len, recv_len(ctx, size));
				return -1;
			}
			last = now_us();
			if (!rcnt++)
				first = last;
			if (repost_recv(ctx, q) && post_recvs(ctx, q, 1, size))
				return -1;
		}
		if (ne) {
			idle_polls = 0;
			continue;
		}
		if (check_wait(ctx, deadline, "SENDs", rcnt, total))
			return -1;
		idle(ctx, &idle_polls);
	}
	*report = (struct perf_bw_report){.size = size, .iters = total};
	if (last > first) {
		report->bw_avg = total * size / (last - first) * 1e6 / MIB;
		report->msg_rate = total / (last - first);
	}
	return 0;
}

/* Receives on every QP for one send_bw run, before the barrier that lets the client start. */
static int prepare_send_bw_server(struct perf_ctx *ctx, uint64_t size)
{
	return post_first_recvs(ctx, size);
}

static int run_bw(struct perf_ctx *ctx)
{
	const struct options *o = ctx->o;
	bool client = is_client(ctx), send = o->test->verb == VERB_SEND;
	struct perf_bw_report mine = {0}, theirs;
	uint64_t size = o->all_sizes ? 2 : ctx->max_size;
	int64_t wait_ms = run_timeout_ms(ctx) * (o->all_sizes ? ALL_SIZES_MAX_LOG : 1);

	if (send && !client && !o->all_sizes && prepare_send_bw_server(ctx, size))
		return -1;
	/* send_bw's receives are posted: only now may the client start. */
	if (send && !o->all_sizes && barrier(ctx, EXCHANGE_TIMEOUT_MS, "before the run"))
		return -1;
	printf(RESULT_FMT_BW);
	if (client || send) {
		for (;;) {
			if (send && o->all_sizes) {
				if (!client && prepare_send_bw_server(ctx, size))
					return -1;
				if (barrier(ctx, wait_ms, "before a size"))
					return -1;
			}
			if (client ? run_bw_client(ctx, size, &mine)
				   : run_bw_server_send(ctx, size, &mine))
				return -1;
			print_bw_line(&mine);
			if (send && o->all_sizes && barrier(ctx, wait_ms, "after a size"))
				return -1;
			if (!o->all_sizes || size >= ctx->max_size)
				break;
			size *= 2;
		}
	}
	if (send)
		return 0;
	/* write/read/atomic: the server learns the result from the client. */
	if (barrier(ctx, wait_ms, "after the run"))
		return -1;
	if (perf_xchg_bw_report(&ctx->oob, &mine, &theirs, tool_now_ms() + EXCHANGE_TIMEOUT_MS)) {
		fprintf(stderr, PROG ": bandwidth report exchange failed\n");
		return -1;
	}
	if (!client)
		print_bw_line(&theirs);
	return 0;
}

/* ---- latency ------------------------------------------------------------------- */

static int wait_send_completion(struct perf_ctx *ctx, int64_t deadline, uint64_t done)
{
	struct xr_wc wc;

	return wait_one(ctx, ctx->send_cq, &wc, deadline, ctx->o->test->name, done, ctx->o->iters);
}

/*
 * write_lat: each side RDMA-writes the whole message into the peer's buffer
 * and learns of the peer's write by polling the last byte of its own buffer,
 * which carries the iteration count. The server writes first.
 */
static int run_write_lat(struct perf_ctx *ctx, uint64_t size, double *tstamp)
{
	uint64_t iters = ctx->o->iters, scnt = 0, rcnt = 0;
	const uint8_t *poll_byte = target_slot(ctx, 0) + size - 1;
	uint8_t *post_byte = send_slot(ctx, 0) + size - 1;
	int64_t deadline = tool_now_ms() + run_timeout_ms(ctx);

	while (scnt < iters || rcnt < iters) {
		if (rcnt < iters && !(scnt < 1 && !is_client(ctx))) {
			unsigned int idle_polls = 0;

			rcnt++;
			while (__atomic_load_n(poll_byte, __ATOMIC_ACQUIRE) != (uint8_t)rcnt) {
				if (check_wait(ctx, deadline, "the peer's RDMA WRITE", rcnt - 1,
					       iters))
					return -1;
				/* Spinning on memory: lend this thread to the engine meanwhile. */
				xr_poll_cq(ctx->send_cq, 0, NULL);
				idle(ctx, &idle_polls);
			}
		}
		if (scnt < iters) {
			tstamp[scnt] = now_us();
			*post_byte = (uint8_t)(scnt + 1);
			if (post_op(ctx, 0, size, 0, 0, true, scnt))
				return -1;
			scnt++;
			if (wait_send_completion(ctx, deadline, scnt - 1))
				return -1;
		}
	}
	return 0;
}

/* send_lat: the client sends first; each side answers every SEND it receives. */
static int run_send_lat(struct perf_ctx *ctx, uint64_t size, double *tstamp)
{
	uint64_t iters = ctx->o->iters, scnt = 0, rcnt = 0;
	int64_t deadline = tool_now_ms() + run_timeout_ms(ctx);

	while (scnt < iters || rcnt < iters) {
		if (rcnt < iters && !(scnt < 1 && is_client(ctx))) {
			struct xr_wc wc;

			if (wait_one(ctx, ctx->recv_cq, &wc, deadline, "receive", rcnt, iters))
				return -1;
			if (wc.byte_len != recv_len(ctx, size)) {
				fprintf(stderr,
					PROG ": receive %" PRIu64 " has %u bytes, expected %" PRIu64
					     "\n",
					rcnt + 1, wc.byte_len, recv_len(ctx, size));
				return -1;
			}
			rcnt++;
			if (repost_recv(ctx, 0) && post_recvs(ctx, 0, 1, size))
				return -1;
		}
		if (scnt < iters) {
			tstamp[scnt] = now_us();
			if (post_op(ctx, 0, size, 0, 0, true, scnt))
				return -1;
			scnt++;
			if (wait_send_completion(ctx, deadline, scnt - 1))
				return -1;
		}
	}
	return 0;
}

/* read_lat, atomic_lat: one request at a time; returns the number done. */
static int64_t run_request_lat(struct perf_ctx *ctx, uint64_t size, double *samples,
			       double *total_us)
{
	const struct options *o = ctx->o;
	int64_t deadline = tool_now_ms() + run_timeout_ms(ctx);
	double start = now_us(), end_us = start + o->duration * 1e6;
	uint64_t n = 0;

	while (o->duration ? now_us() < end_us : n < o->iters) {
		double t = now_us();

		if (post_op(ctx, 0, size, 0, 0, true, n) || wait_send_completion(ctx, deadline, n))
			return -1;
		if (samples)
			samples[n] = now_us() - t;
		n++;
	}
	*total_us = now_us() - start;
	return n;
}

static int run_lat(struct perf_ctx *ctx)
{
	const struct options *o = ctx->o;
	enum perf_verb verb = o->test->verb;
	bool active = verb == VERB_SEND || verb == VERB_WRITE || is_client(ctx);
	uint64_t size = o->all_sizes ? 2 : ctx->max_size;
	double *samples = NULL;
	int ret = -1;

	if (verb == VERB_SEND && post_first_recvs(ctx, size))
		return -1;
	if (barrier(ctx, EXCHANGE_TIMEOUT_MS, "before the run"))
		return -1;
	/* Like perftest, a passive latency server prints no table at all. */
	if (!active)
		return 0;
	printf(o->duration ? RESULT_FMT_LAT_DUR : RESULT_FMT_LAT);
	if (!o->duration) {
		samples = calloc(o->iters, sizeof(*samples));
		if (!samples) {
			fprintf(stderr, PROG ": out of memory for %" PRIu64 " samples\n", o->iters);
			return -1;
		}
	}
	for (;;) {
		if (verb == VERB_SEND || verb == VERB_WRITE) {
			/* Half of each round trip between consecutive posts. */
			if ((verb == VERB_SEND ? run_send_lat : run_write_lat)(ctx, size, samples))
				goto out;
			for (uint64_t i = 0; i + 1 < o->iters; i++)
				samples[i] = (samples[i + 1] - samples[i]) / 2;
			print_lat_line(size, o->iters, samples, o->iters - 1);
		} else {
			double total_us;
			int64_t n = run_request_lat(ctx, size, samples, &total_us);

			if (n <= 0)
				goto out;
			if (o->duration)
				print_lat_duration_line(size, n, total_us);
			else
				print_lat_line(size, n, samples, n);
		}
		if (!o->all_sizes || size >= ctx->max_size)
			break;
		size *= 2;
		/*
		 * As perftest's send_lat -a: the peer sends the next size only
		 * once our receives are posted, which UC and UD depend on.
		 */
		if (verb == VERB_SEND && (post_first_recvs(ctx, size) ||
					  barrier(ctx, EXCHANGE_TIMEOUT_MS, "before a size")))
			goto out;
	}
	ret = 0;
out:
	free(samples);
	return ret;
}

/* ---- main flow ------------------------------------------------------------------ */

static int run(const struct options *o)
{
	struct perf_ctx ctx = {.o = o, .oob = {.fd = -1}};
	struct xr_device_attr dev_attr;
	bool write_lat = o->test->lat && o->test->verb == VERB_WRITE;
	bool send_bw = !o->test->lat && o->test->verb == VERB_SEND;
	bool passive_lat = o->test->lat && !o->server &&
			   (o->test->verb == VERB_READ || o->test->verb == VERB_ATOMIC);
	int64_t close_ms =
	    RUN_BASE_TIMEOUT_MS + run_timeout_ms(&ctx) * (o->all_sizes ? ALL_SIZES_MAX_LOG : 1);
	int ret, status = 1;

	if (alloc_qp_arrays(&ctx) || open_device(&ctx, &dev_attr) || oob_open(&ctx) ||
	    oob_negotiate(&ctx, dev_attr.active_mtu) || settle_size(&ctx) ||
	    create_resources(&ctx, &dev_attr) || attach_group(&ctx))
		goto out;

	/*
	 * perftest 4.5 sends the keys of every QP twice, connecting its QPs in
	 * between, and once more the first QP's after RTR (a capture of its
	 * write_bw -q 2 on rxe shows it); send_bw sends that one before the
	 * second round, the other tests after it. With one QP both orders are
	 * the same 3 messages.
	 */
	if (xchg_qp_keys(&ctx, "of the QPs"))
		goto out;
	if (gid_is_ipv4(&ctx.mine[0].gid) != gid_is_ipv4(&ctx.remote[0].gid)) {
		fprintf(stderr,
			PROG ": Found Incompatibility issue with GID types: one side's GID "
			     "(or group) is IPv4, the other's IPv6; use the same IP version "
			     "on both (-x, -M)\n");
		goto out;
	}
	for (unsigned int q = 0; q < o->num_qps; q++)
		if (connect_qp(&ctx, q))
			goto out;
	if (send_bw ? barrier(&ctx, EXCHANGE_TIMEOUT_MS, "after RTR") ||
			  xchg_qp_keys(&ctx, "of the addresses")
		    : xchg_qp_keys(&ctx, "of the addresses") ||
			  barrier(&ctx, EXCHANGE_TIMEOUT_MS, "after RTR"))
		goto out;
	print_test_info(&ctx);
	for (unsigned int q = 0; q < o->num_qps; q++)
		print_dest(&ctx, true, &ctx.mine[q]);
	for (unsigned int q = 0; q < o->num_qps; q++)
		print_dest(&ctx, false, &ctx.remote[q]);
	printf(RESULT_LINE);

	if (o->test->lat ? run_lat(&ctx) : run_bw(&ctx))
		goto out;
	if (!passive_lat)
		printf(RESULT_LINE);

	if (write_lat) {
		/*
		 * perftest's write_lat ends without a closing exchange: give our
		 * engine time to send the ACK of the peer's last WRITE before the
		 * QP goes away, or the peer retransmits it forever.
		 */
		usleep(200000);
	} else {
		if (barrier(&ctx, close_ms, "before closing"))
			goto out;
		ret = perf_xchg_done(&ctx.oob, tool_now_ms() + EXCHANGE_TIMEOUT_MS);
		if (ret) {
			fprintf(stderr, PROG ": closing 'done' exchange failed: %s\n",
				oob_error(ret));
			goto out;
		}
	}
	status = 0;
out:
	fflush(stdout);
	destroy_resources(&ctx);
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
	signal(SIGPIPE, SIG_IGN);
	srand48(getpid() * time(NULL));
	setvbuf(stdout, NULL, _IOLBF, 0);
	return run(&o);
}
