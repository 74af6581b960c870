/* SPDX-License-Identifier: MIT */
/*
 * reliability_e2e: RC reliability end to end between two processes through
 * XDP and AF_XDP, meant to run across tests/e2e/middlebox.c, which loses,
 * duplicates, reorders and corrupts RoCE frames and counts what went by.
 *
 *   reliability_e2e server IFNAME [-p PORT]
 *   reliability_e2e client IFNAME SERVER_IP [-p PORT] [--case CASE] [OPTIONS]
 *
 * The client (the initiator) chooses the case and sends it, with its QPs and
 * parameters, over an out-of-band TCP connection; the server (the target)
 * builds the same plan from them and checks its side. Cases:
 *
 *   mixed        --ops N (20000) --seed N: SEND (some with immediate), WRITE,
 *                WRITE with immediate, READ, CAS and FAA, up to 64 outstanding.
 *                Every completion must succeed in order; every message arrive
 *                once, in order, with its content; every WRITE land; every
 *                READ return its source; FAA k return k (the counter ends at
 *                the number of FAAs); a CAS chain return and leave exactly
 *                what it should. Prints the elapsed time.
 *   bench        (also --bench) WRITE stream of 64 KiB messages for
 *                --seconds S (3); prints the throughput, labelled --label L.
 *   rnr-late     the server posts its first receive 200 ms after the client
 *                posts a SEND: the SEND must succeed, no sooner than that.
 *   rnr-exhaust  pairs with rnr_retry 0..6 and no receive ever posted: each
 *                SEND must end in RNR_RETRY_EXC_ERR.
 *   peer-gone    the server waits to be killed (or, on SIGUSR1, closes the
 *                out-of-band connection and stays); when the connection
 *                ends, the client posts two SENDs: the first must end in
 *                RETRY_EXC_ERR within (retry_cnt + 1) ACK timeouts (+ slack),
 *                the second and a later WRITE in WR_FLUSH_ERR.
 *   atomic-ack   FAA then CAS on one word, run with the middlebox dropping
 *                atomic ACKs: the retransmitted atomics must return the
 *                original values, and the word must change exactly once each.
 *   idle         ACK timeout 20 (~4.3 s): SEND, WRITE, READ and FAA, each
 *                after both sides idled, must each complete in under 0.5 s,
 *                also when the client sleeps on a completion channel.
 *
 * Options: --timeout N (ACK timeout code), --retry-cnt N, --min-rnr-timer N.
 * Lines that the test scripts match: "[client] qp ..." naming the QP numbers
 * of each pair, and the last line "[ROLE] PASS: ..." or "[ROLE] FAIL: ...".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e_common.h"

#define PROG "reliability_e2e"
#define DEFAULT_PORT 18791

#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_RETRY_MS 20000
#define OOB_TIMEOUT_MS 30000
/* No completion for this long while work is outstanding is a hang. */
#define STALL_TIMEOUT_MS 20000
#define MIXED_TIMEOUT_MS 150000
#define QUIET_WAIT_MS 200

#define MAX_PAIRS 8
#define SEND_DEPTH 128
#define WINDOW 64
#define RECV_DEPTH 256
/* The largest message: four packets at path MTU 4096. */
#define MAX_MSG 16384
#define MAX_RD_ATOMIC 16
#define CANARY 0xc5

/* The server's memory region (one MR with every remote right). */
#define RECV_AREA 0
#define ATOMIC_AREA (RECV_DEPTH * MAX_MSG)
#define FAA_WORD (ATOMIC_AREA)
#define CAS_WORD (ATOMIC_AREA + 64)
#define READ_AREA (ATOMIC_AREA + 4096)
#define READ_AREA_SIZE (1u << 20)
#define WRITE_AREA (READ_AREA + READ_AREA_SIZE)

/* The client's: source data, READ landing slots, atomic results. */
#define LANDING_SLOTS (2 * WINDOW)
#define LANDING_GUARD 64
#define LANDING_SLOT_SIZE (MAX_MSG + LANDING_GUARD)
#define CLIENT_SRC 0
#define CLIENT_LANDING (SEND_DEPTH * MAX_MSG)
#define CLIENT_RESULTS (CLIENT_LANDING + LANDING_SLOTS * LANDING_SLOT_SIZE)
#define CLIENT_BUF_SIZE (CLIENT_RESULTS + SEND_DEPTH * 8)

#define BENCH_MSG (64u << 10)
#define BENCH_DEPTH 16
#define BENCH_BUF_SIZE (BENCH_MSG * BENCH_DEPTH)

#define RNR_LATE_DELAY_MS 200
#define RNR_EXHAUST_PAIRS 7
#define IDLE_MS 300
#define IDLE_BOUND_MS 500
#define ATOMIC_INITIAL 1000u
#define ATOMIC_ADD 5u
#define ATOMIC_SWAP 77u

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

enum test_kind {
	KIND_MIXED = 1,
	KIND_BENCH,
	KIND_RNR_LATE,
	KIND_RNR_EXHAUST,
	KIND_PEER_GONE,
	KIND_ATOMIC_ACK,
	KIND_IDLE,
};

static const char *const kind_names[] = {
    [KIND_MIXED] = "mixed",	    [KIND_BENCH] = "bench",
    [KIND_RNR_LATE] = "rnr-late",   [KIND_RNR_EXHAUST] = "rnr-exhaust",
    [KIND_PEER_GONE] = "peer-gone", [KIND_ATOMIC_ACK] = "atomic-ack",
    [KIND_IDLE] = "idle",
};

/* What the client chose; sent to the server in the hello. */
struct params {
	uint32_t kind;
	uint32_t seed;
	uint32_t ops;
	uint32_t seconds;
	uint32_t timeout;
	uint32_t retry_cnt;
	uint32_t min_rnr_timer;
	uint32_t npairs;
};

struct qp_end {
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_qp *qp;
	uint32_t psn;
	uint32_t peer_qpn;
};

struct ctx {
	bool is_server;
	const char *role;
	struct params p;
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_comp_channel *channel;
	uint8_t *buf;
	size_t buf_size;
	struct xr_mr *mr;
	struct qp_end pairs[MAX_PAIRS];
	union xr_gid gid;
	uint8_t gid_index; /* of gid: the source address of every QP */
	enum xr_mtu mtu_enum;
	uint32_t mtu;
	/* The client: where the server's memory region is. */
	uint64_t remote_addr;
	uint32_t rkey;
	int oob_fd;
};

static bool failed;

static void fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a failed check; the run goes on where that still tells something. */
static void fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	failed = true;
	printf("[%s] FAIL: ", c->role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static int64_t now_us(void)
{
	return tool_now_ns() / 1000;
}

static void sleep_ms(int ms)
{
	nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

/* ---- the plan of the mixed case (both sides build it from the seed) ------ */

enum op_kind { OP_SEND, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS, OP_FAA, OP_KINDS };

static const char *const op_names[OP_KINDS] = {"SEND", "WRITE", "WRITE_IMM", "READ", "CAS", "FAA"};

struct op {
	uint8_t kind;
	bool with_imm; /* SEND only */
	bool cas_miss;
	uint32_t size;
	uint32_t offset; /* WRITE: in the write area; READ: in the read area */
	uint64_t expect; /* atomics: the original value returned */
};

struct plan {
	struct op *ops;
	uint32_t n;
	uint32_t n_messages; /* SENDs and WRITE_IMMs: one receive each */
	uint32_t write_bytes;
	uint64_t faa_final, cas_final;
	uint32_t count[OP_KINDS];
};

static uint32_t rand_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* Messages are up to four packets long, and at least 4 KiB may be. */
static uint32_t largest_msg(uint32_t mtu)
{
	return 4 * mtu > 4096 ? 4 * mtu : 4096;
}

/* Sizes around the MTU and a few packets long: the multi-packet paths matter most. */
static uint32_t rand_size(uint64_t *s, uint32_t mtu, uint32_t min)
{
	uint32_t r = rand_next(s) % 100, size;

	if (r < 35)
		size = 1 + rand_next(s) % 64;
	else if (r < 65)
		size = 65 + rand_next(s) % (mtu - 64);
	else
		size = mtu + 1 + rand_next(s) % (largest_msg(mtu) - mtu);
	if (r < 3)
		size = 0;
	return size < min ? min : size;
}

static uint32_t op_seed(uint32_t seed, uint32_t i)
{
	return seed * 0x27d4eb2du ^ (i + 1) * 0x165667b1u;
}

static int build_plan(struct plan *pl, uint32_t seed, uint32_t n, uint32_t mtu)
{
	/* Percentages: SEND 25, WRITE 20, WRITE_IMM 15, READ 20, CAS 10, FAA 10. */
	static const uint8_t cumulative[OP_KINDS] = {25, 45, 60, 80, 90, 100};
	uint64_t s = seed | (uint64_t)seed << 32;
	uint64_t faa = 0, cas = 0;

	*pl = (struct plan){.n = n, .ops = calloc(n, sizeof(*pl->ops))};
	if (!pl->ops)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct op *op = &pl->ops[i];
		uint32_t r = rand_next(&s) % 100;

		while (r >= cumulative[op->kind])
			op->kind++;
		pl->count[op->kind]++;
		switch (op->kind) {
		case OP_SEND:
			op->with_imm = rand_next(&s) & 1;
			op->size = rand_size(&s, mtu, 0);
			pl->n_messages++;
			break;
		case OP_WRITE:
		case OP_WRITE_IMM:
			op->size = rand_size(&s, mtu, 1);
			op->offset = pl->write_bytes;
			pl->write_bytes += op->size;
			pl->n_messages += op->kind == OP_WRITE_IMM;
			break;
		case OP_READ:
			op->size = rand_size(&s, mtu, 1);
			op->offset = rand_next(&s) % (READ_AREA_SIZE - op->size);
			break;
		case OP_CAS:
			/* A quarter miss: the compare value is wrong only in the high half. */
			op->cas_miss = rand_next(&s) % 4 == 0;
			op->expect = cas;
			cas += !op->cas_miss;
			break;
		case OP_FAA:
			op->expect = faa++;
			break;
		}
	}
	pl->faa_final = faa;
	pl->cas_final = cas;
	return 0;
}

static uint32_t read_area_seed(uint32_t seed)
{
	return seed ^ 0x5eadu;
}

/* ---- completions ------------------------------------------------------- */

static bool wait_one(struct ctx *c, struct xr_cq *cq, struct xr_wc *wc, int timeout_ms,
		     const char *what)
{
	if (poll_cq_until(cq, wc, 1, 1, tool_now_ms() + timeout_ms) == 1)
		return true;
	fail(c, "no %s completion within %d ms", what, timeout_ms);
	return false;
}

/* A completion on cq within wait_ms fails the case. */
static bool expect_no_completion(struct ctx *c, struct xr_cq *cq, int wait_ms, const char *what)
{
	struct report r = {0};

	if (expect_quiet(cq, wait_ms, &r, what))
		return true;
	fail(c, "%s", r.detail);
	return false;
}

/* A completion that is not what it must be fails the case, saying what it was for. */
static bool check_completion(struct ctx *c, const struct xr_wc *wc, uint64_t wr_id,
			     enum xr_wc_status status, enum xr_wc_opcode opcode, const char *what)
{
	struct report r = {0};

	if (check_wc(wc, wr_id, status, opcode, &r))
		return true;
	fail(c, "%s: %s", what, r.detail);
	return false;
}

static struct xr_sge buf_sge(struct ctx *c, size_t offset, uint32_t length)
{
	return (struct xr_sge){
	    .addr = (uintptr_t)(c->buf + offset), .length = length, .lkey = c->mr->lkey};
}

static bool post_send(struct ctx *c, struct qp_end *end, struct xr_send_wr *wr)
{
	struct xr_send_wr *bad;
	int ret = xr_post_send(end->qp, wr, &bad);

	if (ret)
		fail(c, "xr_post_send: %s", strerror(-ret));
	return !ret;
}

static bool post_recv(struct ctx *c, struct qp_end *end, uint64_t wr_id, size_t offset,
		      uint32_t length)
{
	struct xr_sge sge = buf_sge(c, offset, length);
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(end->qp, &wr, &bad);

	if (ret)
		fail(c, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

/* ---- out-of-band exchange ---------------------------------------------- */

#define HELLO_MAGIC 0x58524c31u /* "XRL1" */
#define HELLO_WORDS (1 + 8 + 1 + 2 * MAX_PAIRS + 3 + 4)

/* Magic, params, MTU, QPN and PSN per pair, MR address and rkey, GID. */
static int send_hello(struct ctx *c)
{
	uint32_t w[HELLO_WORDS], *p = w;
	const uint32_t *params = (const uint32_t *)&c->p;

	*p++ = htonl(HELLO_MAGIC);
	for (size_t i = 0; i < sizeof(c->p) / 4; i++)
		*p++ = htonl(params[i]);
	*p++ = htonl(c->mtu_enum);
	for (int i = 0; i < MAX_PAIRS; i++) {
		*p++ = htonl(c->pairs[i].qp ? c->pairs[i].qp->qp_num : 0);
		*p++ = htonl(c->pairs[i].psn);
	}
	*p++ = htonl(c->mr ? c->mr->rkey : 0);
	*p++ = htonl((uint32_t)((uintptr_t)c->buf >> 32));
	*p++ = htonl((uint32_t)(uintptr_t)c->buf);
	memcpy(p, c->gid.raw, 16);
	return oob_write_full(c->oob_fd, w, sizeof(w), tool_now_ms() + OOB_TIMEOUT_MS);
}

struct hello {
	struct params p;
	uint32_t mtu_enum;
	uint32_t qpn[MAX_PAIRS], psn[MAX_PAIRS];
	uint32_t rkey;
	uint64_t addr;
	union xr_gid gid;
};

static int recv_hello(struct ctx *c, struct hello *h)
{
	uint32_t w[HELLO_WORDS], *p = w;
	uint32_t *params = (uint32_t *)&h->p;
	int ret = oob_read_full(c->oob_fd, w, sizeof(w), tool_now_ms() + OOB_TIMEOUT_MS);

	if (ret)
		return ret;
	if (ntohl(*p++) != HELLO_MAGIC)
		return -EPROTO;
	for (size_t i = 0; i < sizeof(h->p) / 4; i++)
		params[i] = ntohl(*p++);
	h->mtu_enum = ntohl(*p++);
	for (int i = 0; i < MAX_PAIRS; i++) {
		h->qpn[i] = ntohl(*p++);
		h->psn[i] = ntohl(*p++);
	}
	h->rkey = ntohl(*p++);
	h->addr = (uint64_t)ntohl(p[0]) << 32 | ntohl(p[1]);
	p += 2;
	memcpy(h->gid.raw, p, 16);
	if (h->p.npairs < 1 || h->p.npairs > MAX_PAIRS || h->mtu_enum < XR_MTU_256 ||
	    h->mtu_enum > XR_MTU_4096)
		return -EPROTO;
	return 0;
}

/* A step marker with a verdict and one value, in lockstep between the sides. */
static int send_step(struct ctx *c, uint32_t step, bool ok, uint64_t value)
{
	uint32_t m[4] = {htonl(step), htonl(ok), htonl((uint32_t)(value >> 32)),
			 htonl((uint32_t)value)};

	return oob_write_full(c->oob_fd, m, sizeof(m), tool_now_ms() + OOB_TIMEOUT_MS);
}

static int recv_step(struct ctx *c, uint32_t step, bool *ok, uint64_t *value, int timeout_ms)
{
	uint32_t m[4];
	int ret = oob_read_full(c->oob_fd, m, sizeof(m), tool_now_ms() + timeout_ms);

	if (ret)
		return ret;
	if (ntohl(m[0]) != step)
		return -EPROTO;
	if (ok)
		*ok = ntohl(m[1]) != 0;
	if (value)
		*value = (uint64_t)ntohl(m[2]) << 32 | ntohl(m[3]);
	return 0;
}

/* Exchanges verdicts at the end of a case; true when both sides passed. */
static bool exchange_verdicts(struct ctx *c, uint32_t step)
{
	bool peer_ok = false;
	int ret = send_step(c, step, !failed, 0);

	if (!ret)
		ret = recv_step(c, step, &peer_ok, NULL, MIXED_TIMEOUT_MS);
	if (ret) {
		fail(c, "lost the peer at the verdict: %s", oob_error(ret));
		return false;
	}
	if (!peer_ok)
		printf("[%s] the peer reported a failure\n", c->role);
	return !failed && peer_ok;
}

/* ---- setup ------------------------------------------------------------- */

static int open_device(struct ctx *c, const char *ifname)
{
	struct xr_device_attr attr;
	int ret;

	c->dev = tool_open_device(PROG, ifname);
	if (!c->dev)
		return -1;
	ret = find_ipv4_gid(c->dev, &attr, &c->gid);
	if (ret == -EADDRNOTAVAIL) {
		fprintf(stderr, PROG ": %s has no IPv4 GID\n", ifname);
		return -1;
	}
	if (ret < 0) {
		fprintf(stderr, PROG ": couldn't query %s: %s\n", ifname, strerror(-ret));
		return -1;
	}
	c->gid_index = (uint8_t)ret;
	c->mtu_enum = attr.active_mtu;
	c->pd = xr_alloc_pd(c->dev);
	c->channel = xr_create_comp_channel(c->dev);
	if (!c->pd || !c->channel) {
		fprintf(stderr, PROG ": couldn't allocate a PD or completion channel: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static size_t buffer_size(const struct ctx *c, const struct plan *pl)
{
	if (c->p.kind == KIND_BENCH)
		return BENCH_BUF_SIZE;
	if (c->is_server)
		return WRITE_AREA + (pl ? pl->write_bytes : 0) + 4096;
	return CLIENT_BUF_SIZE;
}

static int setup_memory(struct ctx *c, const struct plan *pl)
{
	c->buf_size = buffer_size(c, pl);
	c->buf = aligned_alloc(4096, (c->buf_size + 4095) & ~(size_t)4095);
	if (!c->buf) {
		fprintf(stderr, PROG ": couldn't allocate %zu bytes\n", c->buf_size);
		return -1;
	}
	memset(c->buf, CANARY, c->buf_size);
	c->mr = xr_reg_mr(c->pd, c->buf, c->buf_size, remote_all);
	if (!c->mr) {
		fprintf(stderr, PROG ": couldn't register %zu bytes: %s\n", c->buf_size,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int create_pairs(struct ctx *c)
{
	for (uint32_t i = 0; i < c->p.npairs; i++) {
		struct qp_end *end = &c->pairs[i];
		/* The idle case's client sleeps on its send CQ through the channel. */
		struct xr_comp_channel *ch = c->p.kind == KIND_IDLE ? c->channel : NULL;
		struct xr_qp_init_attr init = {
		    .cap = {.max_send_wr = SEND_DEPTH,
			    .max_recv_wr = RECV_DEPTH,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		    .qp_type = XR_QPT_RC,
		};
		int ret;

		end->send_cq = xr_create_cq(c->dev, 2 * SEND_DEPTH, ch);
		end->recv_cq = xr_create_cq(c->dev, 2 * RECV_DEPTH, NULL);
		if (!end->send_cq || !end->recv_cq) {
			fprintf(stderr, PROG ": couldn't create a CQ: %s\n", strerror(errno));
			return -1;
		}
		init.send_cq = end->send_cq;
		init.recv_cq = end->recv_cq;
		end->qp = xr_create_qp(c->pd, &init);
		if (!end->qp) {
			fprintf(stderr, PROG ": couldn't create a QP: %s\n", strerror(errno));
			return -1;
		}
		ret = qp_to_init(end->qp, 1, remote_all);
		if (ret) {
			fprintf(stderr, PROG ": couldn't move a QP to INIT: %s\n", strerror(-ret));
			return -1;
		}
		end->psn = lrand48() & 0xffffff;
	}
	return 0;
}

/* rnr-exhaust: pair i retries RNR i times; every other case retries forever (7). */
static uint8_t rnr_retry_of(const struct ctx *c, int pair)
{
	return c->p.kind == KIND_RNR_EXHAUST ? (uint8_t)pair : 7;
}

static int connect_pairs(struct ctx *c, const struct hello *peer)
{
	struct xr_qp_attr attr;
	int ret;

	if (peer->mtu_enum < c->mtu_enum)
		c->mtu_enum = peer->mtu_enum;
	for (uint32_t i = 0; i < c->p.npairs; i++) {
		struct qp_end *end = &c->pairs[i];
		struct qp_rtr_attr rtr = {
		    .path_mtu = c->mtu_enum,
		    .dest_qpn = peer->qpn[i],
		    .rq_psn = peer->psn[i],
		    .dgid = peer->gid,
		    .sgid_index = c->gid_index,
		    .port_num = 1,
		    .hop_limit = 64,
		    .max_dest_rd_atomic = MAX_RD_ATOMIC,
		    .min_rnr_timer = (uint8_t)c->p.min_rnr_timer,
		};
		/* The case's own timers: qp_to_rts would set the usual ones. */
		struct xr_qp_attr a = {
		    .qp_state = XR_QPS_RTS,
		    .timeout = (uint8_t)c->p.timeout,
		    .retry_cnt = (uint8_t)c->p.retry_cnt,
		    .rnr_retry = rnr_retry_of(c, (int)i),
		    .sq_psn = end->psn,
		    .max_rd_atomic = MAX_RD_ATOMIC,
		};

		end->peer_qpn = peer->qpn[i];
		ret = qp_to_rtr(end->qp, &rtr);
		if (ret) {
			fprintf(stderr, PROG ": couldn't move a QP to RTR: %s\n", strerror(-ret));
			return -1;
		}
		ret = xr_modify_qp(end->qp, &a,
				   XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
				       XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
		if (ret) {
			fprintf(stderr, PROG ": couldn't move a QP to RTS: %s\n", strerror(-ret));
			return -1;
		}
		if (!c->is_server)
			printf("[client] qp %u local 0x%06x peer 0x%06x rnr_retry %u\n", i,
			       end->qp->qp_num, end->peer_qpn, rnr_retry_of(c, (int)i));
	}
	ret = xr_query_qp(c->pairs[0].qp, &attr, XR_QP_PATH_MTU, NULL);
	if (ret) {
		fprintf(stderr, PROG ": couldn't query a QP: %s\n", strerror(-ret));
		return -1;
	}
	c->mtu = 128u << attr.path_mtu;
	printf("[%s] case %s, path MTU %u, %u pair(s), ACK timeout code %u, retry_cnt %u, "
	       "min_rnr_timer %u\n",
	       c->role, kind_names[c->p.kind], c->mtu, c->p.npairs, c->p.timeout, c->p.retry_cnt,
	       c->p.min_rnr_timer);
	return 0;
}

static void teardown(struct ctx *c)
{
	if (c->oob_fd >= 0)
		close(c->oob_fd);
	for (int i = 0; i < MAX_PAIRS; i++) {
		if (c->pairs[i].qp)
			xr_destroy_qp(c->pairs[i].qp);
		if (c->pairs[i].send_cq)
			xr_destroy_cq(c->pairs[i].send_cq);
		if (c->pairs[i].recv_cq)
			xr_destroy_cq(c->pairs[i].recv_cq);
	}
	if (c->mr)
		xr_dereg_mr(c->mr);
	if (c->channel)
		xr_destroy_comp_channel(c->channel);
	if (c->pd)
		xr_dealloc_pd(c->pd);
	if (c->dev)
		xr_close_device(c->dev);
	free(c->buf);
}

/* ---- mixed: the client ------------------------------------------------- */

static uint32_t landing_offset(uint32_t i)
{
	return CLIENT_LANDING + (i % LANDING_SLOTS) * LANDING_SLOT_SIZE;
}

static uint32_t result_offset(uint32_t i)
{
	return CLIENT_RESULTS + (i % SEND_DEPTH) * 8;
}

static void build_wr(struct ctx *c, const struct plan *pl, uint32_t i, struct xr_send_wr *wr,
		     struct xr_sge *sge)
{
	const struct op *op = &pl->ops[i];
	uint32_t src = CLIENT_SRC + (i % SEND_DEPTH) * MAX_MSG;

	*wr = (struct xr_send_wr){.wr_id = i, .sg_list = sge, .send_flags = XR_SEND_SIGNALED};
	wr->imm_data = htonl(i);
	switch (op->kind) {
	case OP_SEND:
	case OP_WRITE:
	case OP_WRITE_IMM:
		fill_pattern(c->buf + src, op_seed(c->p.seed, i), 0, op->size);
		*sge = buf_sge(c, src, op->size);
		wr->num_sge = op->size ? 1 : 0;
		wr->opcode = op->kind == OP_SEND ? (op->with_imm ? XR_WR_SEND_WITH_IMM : XR_WR_SEND)
			     : op->kind == OP_WRITE ? XR_WR_RDMA_WRITE
						    : XR_WR_RDMA_WRITE_WITH_IMM;
		wr->wr.rdma.remote_addr = c->remote_addr + WRITE_AREA + op->offset;
		wr->wr.rdma.rkey = c->rkey;
		break;
	case OP_READ:
		memset(c->buf + landing_offset(i), CANARY, LANDING_SLOT_SIZE);
		*sge = buf_sge(c, landing_offset(i), op->size);
		wr->num_sge = 1;
		wr->opcode = XR_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = c->remote_addr + READ_AREA + op->offset;
		wr->wr.rdma.rkey = c->rkey;
		break;
	case OP_CAS:
	case OP_FAA:
		store64(c->buf + result_offset(i), ~0ull);
		*sge = buf_sge(c, result_offset(i), 8);
		wr->num_sge = 1;
		wr->opcode =
		    op->kind == OP_CAS ? XR_WR_ATOMIC_CMP_AND_SWP : XR_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr =
		    c->remote_addr + (op->kind == OP_CAS ? CAS_WORD : FAA_WORD);
		wr->wr.atomic.rkey = c->rkey;
		wr->wr.atomic.compare_add =
		    op->kind == OP_FAA ? 1 : op->expect + (op->cas_miss ? 1ull << 32 : 0);
		wr->wr.atomic.swap = op->expect + 1;
		break;
	}
}

static const enum xr_wc_opcode wc_opcodes[OP_KINDS] = {
    [OP_SEND] = XR_WC_SEND,	 [OP_WRITE] = XR_WC_RDMA_WRITE, [OP_WRITE_IMM] = XR_WC_RDMA_WRITE,
    [OP_READ] = XR_WC_RDMA_READ, [OP_CAS] = XR_WC_COMP_SWAP,	[OP_FAA] = XR_WC_FETCH_ADD,
};

/* Checks the completion of op i, which must be next, and what it brought back. */
static bool check_op_completion(struct ctx *c, const struct plan *pl, uint32_t i,
				const struct xr_wc *wc)
{
	const struct op *op = &pl->ops[i];
	char what[48];

	snprintf(what, sizeof(what), "op %u (%s, %u B)", i, op_names[op->kind], op->size);
	if (!check_completion(c, wc, i, XR_WC_SUCCESS, wc_opcodes[op->kind], what))
		return false;
	if (op->kind == OP_READ) {
		const uint8_t *land = c->buf + landing_offset(i);
		ssize_t bad =
		    pattern_mismatch(land, read_area_seed(c->p.seed), op->offset, op->size);

		if (bad >= 0) {
			fail(c, "%s: byte %zd is 0x%02x, expected 0x%02x", what, bad, land[bad],
			     pattern_byte(read_area_seed(c->p.seed), op->offset + (size_t)bad));
			return false;
		}
		for (uint32_t k = op->size; k < LANDING_SLOT_SIZE; k++)
			if (land[k] != CANARY) {
				fail(c, "%s: wrote %u bytes past its buffer", what,
				     k - op->size + 1);
				return false;
			}
	} else if (op->kind == OP_CAS || op->kind == OP_FAA) {
		uint64_t got = load64(c->buf + result_offset(i));

		if (got != op->expect) {
			fail(c,
			     "%s: returned original value %" PRIu64 ", expected %" PRIu64
			     " (applied twice or lost?)",
			     what, got, op->expect);
			return false;
		}
	}
	return true;
}

static void client_mixed(struct ctx *c, const struct plan *pl)
{
	struct qp_end *end = &c->pairs[0];
	uint32_t posted = 0, completed = 0;
	int64_t start = tool_now_ms(), last_progress = start, deadline = start + MIXED_TIMEOUT_MS;
	unsigned int idle_polls = 0;
	double secs;

	printf("[client] mixed: %u ops (SEND %u, WRITE %u, WRITE_IMM %u, READ %u, CAS %u, FAA "
	       "%u), %u outstanding at most\n",
	       pl->n, pl->count[OP_SEND], pl->count[OP_WRITE], pl->count[OP_WRITE_IMM],
	       pl->count[OP_READ], pl->count[OP_CAS], pl->count[OP_FAA], WINDOW);
	while (completed < pl->n && !failed) {
		struct xr_wc wc[32];
		int64_t now;
		int ne;

		while (posted < pl->n && posted - completed < WINDOW) {
			struct xr_send_wr wr;
			struct xr_sge sge;

			build_wr(c, pl, posted, &wr, &sge);
			if (!post_send(c, end, &wr))
				return;
			posted++;
		}
		ne = xr_poll_cq(end->send_cq, 32, wc);
		if (ne < 0) {
			fail(c, "xr_poll_cq: %s", strerror(-ne));
			return;
		}
		for (int k = 0; k < ne; k++)
			if (!check_op_completion(c, pl, completed++, &wc[k]))
				return;
		now = tool_now_ms();
		if (ne > 0) {
			last_progress = now;
			idle_polls = 0;
			continue;
		}
		if (now - last_progress > STALL_TIMEOUT_MS || now > deadline) {
			fail(c,
			     "stalled: %u of %u ops completed, %u outstanding, no completion for "
			     "%" PRId64 " ms",
			     completed, pl->n, posted - completed, now - last_progress);
			return;
		}
		if (++idle_polls > TOOL_SPIN_POLLS_BEFORE_SLEEP)
			nanosleep(&(struct timespec){.tv_nsec = TOOL_IDLE_SLEEP_NS}, NULL);
	}
	secs = (double)(tool_now_ms() - start) / 1000;
	expect_no_completion(c, end->send_cq, 0, "extra send");
	printf("[client] mixed: %u of %u ops completed with success in %.2f s (%.0f ops/s)\n",
	       completed, pl->n, secs, completed / (secs > 0 ? secs : 1));
}

/* ---- mixed: the server ------------------------------------------------- */

struct msg_check {
	uint32_t next_op; /* where to look for the next message in the plan */
	uint32_t received;
	uint64_t recv_posted;
	bool client_done;
};

static uint32_t next_message(const struct plan *pl, uint32_t from)
{
	while (from < pl->n && pl->ops[from].kind != OP_SEND && pl->ops[from].kind != OP_WRITE_IMM)
		from++;
	return from;
}

/* Receive k sits in slot k % RECV_DEPTH of the receive area; wr_id is k. */
static bool server_post_recv(struct ctx *c, struct msg_check *m)
{
	uint64_t k = m->recv_posted++;

	return post_recv(c, &c->pairs[0], k, RECV_AREA + (k % RECV_DEPTH) * MAX_MSG, MAX_MSG);
}

static bool check_message(struct ctx *c, const struct plan *pl, struct msg_check *m,
			  const struct xr_wc *wc)
{
	uint32_t i = next_message(pl, m->next_op);
	const struct op *op;
	bool write_imm, imm;
	const uint8_t *data;
	char what[64];
	ssize_t bad;

	if (i == pl->n) {
		fail(c, "a message beyond the %u expected: wr_id %" PRIu64 ", %u B", m->received,
		     wc->wr_id, wc->byte_len);
		return false;
	}
	op = &pl->ops[i];
	write_imm = op->kind == OP_WRITE_IMM;
	imm = write_imm || op->with_imm;
	snprintf(what, sizeof(what), "message %u (op %u, %s%s, %u B)", m->received, i,
		 op_names[op->kind], op->with_imm ? " with imm" : "", op->size);
	if (!check_completion(c, wc, m->received, XR_WC_SUCCESS,
			      write_imm ? XR_WC_RECV_RDMA_WITH_IMM : XR_WC_RECV, what))
		return false;
	if (wc->byte_len != op->size) {
		fail(c, "%s: byte_len %u", what, wc->byte_len);
		return false;
	}
	if (!!(wc->wc_flags & XR_WC_WITH_IMM) != imm || (imm && wc->imm_data != htonl(i))) {
		fail(c, "%s: wc_flags 0x%x, imm %u (expected imm %s %u)", what, wc->wc_flags,
		     ntohl(wc->imm_data), imm ? "" : "none, not", i);
		return false;
	}
	data = c->buf + (write_imm ? WRITE_AREA + op->offset
				   : RECV_AREA + (m->received % RECV_DEPTH) * MAX_MSG);
	bad = pattern_mismatch(data, op_seed(c->p.seed, i), 0, op->size);
	if (bad >= 0) {
		fail(c, "%s: byte %zd is 0x%02x, expected 0x%02x", what, bad, data[bad],
		     pattern_byte(op_seed(c->p.seed, i), (size_t)bad));
		return false;
	}
	m->received++;
	m->next_op = i + 1;
	return server_post_recv(c, m);
}

static void check_target_memory(struct ctx *c, const struct plan *pl)
{
	uint64_t faa = load64(c->buf + FAA_WORD), cas = load64(c->buf + CAS_WORD);
	const uint8_t *end = c->buf + WRITE_AREA + pl->write_bytes;

	for (uint32_t i = 0; i < pl->n; i++) {
		const struct op *op = &pl->ops[i];
		ssize_t bad;

		if (op->kind != OP_WRITE && op->kind != OP_WRITE_IMM)
			continue;
		bad = pattern_mismatch(c->buf + WRITE_AREA + op->offset, op_seed(c->p.seed, i), 0,
				       op->size);
		if (bad >= 0)
			return fail(c, "op %u (%s, %u B): byte %zd of its target is wrong", i,
				    op_names[op->kind], op->size, bad);
	}
	for (size_t k = 0; k < 4096; k++)
		if (end[k] != CANARY)
			return fail(c, "byte %zu after the write area changed", k);
	if (pattern_mismatch(c->buf + READ_AREA, read_area_seed(c->p.seed), 0, READ_AREA_SIZE) >= 0)
		return fail(c, "the READ source changed");
	if (faa != pl->faa_final || cas != pl->cas_final)
		return fail(c,
			    "atomic words: FAA counter %" PRIu64 " (expected %" PRIu64
			    "), CAS word %" PRIu64 " (expected %" PRIu64 ")",
			    faa, pl->faa_final, cas, pl->cas_final);
	printf("[server] mixed: %u WRITE targets intact (%u B), FAA counter %" PRIu64
	       " = number of FAAs, CAS word %" PRIu64 " = number of CAS hits\n",
	       pl->count[OP_WRITE] + pl->count[OP_WRITE_IMM], pl->write_bytes, faa, cas);
}

enum step {
	STEP_PREPARED = 1,
	STEP_DONE,
	STEP_VERDICT,
	STEP_START,
	STEP_CHECK,
};

/* Prepares the target memory and keeps receives posted before the client starts. */
static bool server_mixed_prepare(struct ctx *c, struct msg_check *m)
{
	fill_pattern(c->buf + READ_AREA, read_area_seed(c->p.seed), 0, READ_AREA_SIZE);
	store64(c->buf + FAA_WORD, 0);
	store64(c->buf + CAS_WORD, 0);
	for (int k = 0; k < RECV_DEPTH; k++)
		if (!server_post_recv(c, m))
			return false;
	return true;
}

static void server_mixed(struct ctx *c, const struct plan *pl, struct msg_check *m)
{
	int64_t last_progress = tool_now_ms();
	unsigned int idle_polls = 0;

	/* Until the client is done and every message is in, or something is wrong. */
	while (!failed && !(m->client_done && m->received == pl->n_messages)) {
		struct xr_wc wc[32];
		struct pollfd pfd = {.fd = c->oob_fd, .events = POLLIN};
		int ne = xr_poll_cq(c->pairs[0].recv_cq, 32, wc);

		if (ne < 0)
			return fail(c, "xr_poll_cq: %s", strerror(-ne));
		for (int k = 0; k < ne; k++)
			if (!check_message(c, pl, m, &wc[k]))
				return;
		if (ne > 0) {
			last_progress = tool_now_ms();
			idle_polls = 0;
			continue;
		}
		if (!m->client_done && poll(&pfd, 1, 0) == 1) {
			bool ok;
			int ret = recv_step(c, STEP_DONE, &ok, NULL, OOB_TIMEOUT_MS);

			if (ret)
				return fail(c, "lost the client: %s", oob_error(ret));
			m->client_done = true;
			last_progress = tool_now_ms();
		}
		if (tool_now_ms() - last_progress > STALL_TIMEOUT_MS)
			return fail(c, "%u of %u messages received; none for %d s%s", m->received,
				    pl->n_messages, STALL_TIMEOUT_MS / 1000,
				    m->client_done ? " after the client finished" : "");
		if (++idle_polls > TOOL_SPIN_POLLS_BEFORE_SLEEP)
			nanosleep(&(struct timespec){.tv_nsec = TOOL_IDLE_SLEEP_NS}, NULL);
	}
	if (failed)
		return;
	if (!expect_no_completion(c, c->pairs[0].recv_cq, QUIET_WAIT_MS, "extra receive"))
		return;
	printf("[server] mixed: %u messages (SEND, WRITE_IMM) received once each, in order, "
	       "content intact\n",
	       m->received);
	check_target_memory(c, pl);
}

static void run_mixed(struct ctx *c)
{
	struct msg_check m = {0};
	struct plan pl;
	bool ok = false;
	int ret;

	if (build_plan(&pl, c->p.seed, c->p.ops, c->mtu)) {
		fail(c, "out of memory for the plan");
		return;
	}
	if (c->is_server) {
		ok = server_mixed_prepare(c, &m);
		ret = send_step(c, STEP_PREPARED, ok, 0);
		if (ret)
			fail(c, "lost the client: %s", oob_error(ret));
		else if (ok)
			server_mixed(c, &pl, &m);
		/* After a failure here the client still ends its run before the verdicts. */
		if (!ret && !m.client_done) {
			ret = recv_step(c, STEP_DONE, NULL, NULL, MIXED_TIMEOUT_MS);
			if (ret)
				fail(c, "lost the client: %s", oob_error(ret));
		}
	} else {
		ret = recv_step(c, STEP_PREPARED, &ok, NULL, OOB_TIMEOUT_MS);
		if (ret || !ok)
			fail(c, "the server did not prepare: %s", ret ? oob_error(ret) : "failed");
		else
			client_mixed(c, &pl);
		ret = send_step(c, STEP_DONE, !failed, 0);
		if (ret)
			fail(c, "lost the server: %s", oob_error(ret));
	}
	free(pl.ops);
}

/* ---- bench ------------------------------------------------------------- */

static void run_bench(struct ctx *c, const char *label)
{
	struct qp_end *end = &c->pairs[0];
	uint64_t posted = 0, completed = 0;
	int64_t start, stop_at, last_progress;
	double secs;

	if (c->is_server) {
		if (recv_step(c, STEP_DONE, NULL, NULL,
			      (int)c->p.seconds * 1000 + MIXED_TIMEOUT_MS))
			fail(c, "the client did not finish");
		return;
	}
	fill_pattern(c->buf, c->p.seed, 0, BENCH_BUF_SIZE);
	start = tool_now_ms();
	last_progress = start;
	stop_at = start + (int64_t)c->p.seconds * 1000;
	while (!failed) {
		struct xr_wc wc[BENCH_DEPTH];
		int64_t now = tool_now_ms();
		int ne;

		while (now < stop_at && posted - completed < BENCH_DEPTH) {
			uint32_t slot = posted % BENCH_DEPTH;
			struct xr_sge sge = buf_sge(c, (size_t)slot * BENCH_MSG, BENCH_MSG);
			struct xr_send_wr wr = {.wr_id = posted,
						.sg_list = &sge,
						.num_sge = 1,
						.opcode = XR_WR_RDMA_WRITE,
						.send_flags = XR_SEND_SIGNALED};

			wr.wr.rdma.remote_addr = c->remote_addr + (uint64_t)slot * BENCH_MSG;
			wr.wr.rdma.rkey = c->rkey;
			if (!post_send(c, end, &wr))
				break;
			posted++;
		}
		if (now >= stop_at && completed == posted)
			break;
		ne = xr_poll_cq(end->send_cq, BENCH_DEPTH, wc);
		for (int k = 0; k < ne; k++)
			if (check_completion(c, &wc[k], completed, XR_WC_SUCCESS, XR_WC_RDMA_WRITE,
					     "WRITE"))
				completed++;
		if (ne > 0)
			last_progress = now;
		else if (now - last_progress > STALL_TIMEOUT_MS)
			fail(c, "bench stalled: %" PRIu64 " of %" PRIu64 " WRITEs completed",
			     completed, posted);
	}
	secs = (double)(tool_now_ms() - start) / 1000;
	printf("[client] bench %s: WRITE %u KiB x %" PRIu64 " in %.2f s: %.1f MB/s (%.3f Gbit/s), "
	       "depth %d\n",
	       label, BENCH_MSG >> 10, completed, secs, completed * BENCH_MSG / secs / 1e6,
	       completed * BENCH_MSG * 8 / secs / 1e9, BENCH_DEPTH);
	if (send_step(c, STEP_DONE, !failed, 0))
		fail(c, "lost the server");
}

/* ---- RNR --------------------------------------------------------------- */

#define RNR_MSG_SIZE 100

static struct xr_send_wr send_wr(struct ctx *c, uint64_t wr_id, struct xr_sge *sge, uint32_t offset,
				 uint32_t size)
{
	*sge = buf_sge(c, offset, size);
	return (struct xr_send_wr){.wr_id = wr_id,
				   .sg_list = sge,
				   .num_sge = 1,
				   .opcode = XR_WR_SEND,
				   .send_flags = XR_SEND_SIGNALED};
}

static void run_rnr_late(struct ctx *c)
{
	struct qp_end *end = &c->pairs[0];
	struct xr_wc wc;
	int64_t start;
	int ret;

	if (c->is_server) {
		ret = recv_step(c, STEP_START, NULL, NULL, OOB_TIMEOUT_MS);
		if (ret)
			return fail(c, "no start from the client: %s", oob_error(ret));
		sleep_ms(RNR_LATE_DELAY_MS);
		if (!post_recv(c, end, 1, RECV_AREA, MAX_MSG) ||
		    !wait_one(c, end->recv_cq, &wc, STALL_TIMEOUT_MS, "receive") ||
		    !check_completion(c, &wc, 1, XR_WC_SUCCESS, XR_WC_RECV, "late receive"))
			return;
		if (wc.byte_len != RNR_MSG_SIZE ||
		    pattern_mismatch(c->buf + RECV_AREA, c->p.seed, 0, RNR_MSG_SIZE) >= 0)
			return fail(c, "the message arrived with %u bytes or wrong content",
				    wc.byte_len);
		expect_no_completion(c, end->recv_cq, QUIET_WAIT_MS, "extra receive");
		printf("[server] rnr-late: receive posted %d ms after the start; the message "
		       "arrived once, intact\n",
		       RNR_LATE_DELAY_MS);
		return;
	}
	{
		struct xr_sge sge;
		struct xr_send_wr wr = send_wr(c, 1, &sge, 0, RNR_MSG_SIZE);

		fill_pattern(c->buf, c->p.seed, 0, RNR_MSG_SIZE);
		ret = send_step(c, STEP_START, true, 0);
		if (ret)
			return fail(c, "lost the server: %s", oob_error(ret));
		start = tool_now_ms();
		if (!post_send(c, end, &wr) ||
		    !wait_one(c, end->send_cq, &wc, STALL_TIMEOUT_MS, "SEND") ||
		    !check_completion(c, &wc, 1, XR_WC_SUCCESS, XR_WC_SEND,
				      "SEND to a late receiver"))
			return;
	}
	printf("[client] rnr-late: SEND completed with success after %" PRId64
	       " ms (receive posted after %d ms)\n",
	       tool_now_ms() - start, RNR_LATE_DELAY_MS);
	/* The receiver's 200 ms count from the start message, which left a little earlier. */
	if (tool_now_ms() - start < RNR_LATE_DELAY_MS - 20)
		fail(c, "the SEND completed before the receive could have been posted");
}

static void run_rnr_exhaust(struct ctx *c)
{
	if (c->is_server) {
		/* No receive is ever posted; nothing may arrive either. */
		int ret = recv_step(c, STEP_DONE, NULL, NULL, MIXED_TIMEOUT_MS);

		if (ret)
			return fail(c, "the client did not finish: %s", oob_error(ret));
		for (uint32_t i = 0; i < c->p.npairs; i++)
			expect_no_completion(c, c->pairs[i].recv_cq, 0, "receive");
		return;
	}
	for (uint32_t i = 0; i < c->p.npairs; i++) {
		struct qp_end *end = &c->pairs[i];
		struct xr_sge sge;
		struct xr_send_wr wr = send_wr(c, i, &sge, 0, RNR_MSG_SIZE);
		struct xr_wc wc;
		int64_t start = tool_now_ms();

		if (!post_send(c, end, &wr) ||
		    !wait_one(c, end->send_cq, &wc, STALL_TIMEOUT_MS, "SEND"))
			continue;
		printf("[client] rnr-exhaust: rnr_retry %u qp 0x%06x: \"%s\" after %" PRId64
		       " ms\n",
		       i, end->qp->qp_num, xr_wc_status_str(wc.status), tool_now_ms() - start);
		check_completion(c, &wc, i, XR_WC_RNR_RETRY_EXC_ERR, XR_WC_SEND,
				 "SEND, no receive");
	}
	if (send_step(c, STEP_DONE, !failed, 0))
		fail(c, "lost the server");
}

/* ---- peer gone --------------------------------------------------------- */

static void server_peer_gone(struct ctx *c)
{
	sigset_t usr1;
	struct timespec limit = {.tv_sec = 60};

	/* Killed here, or told to close the connection and stay (its XDP detached). */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigaddset(&usr1, SIGTERM);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("[server] peer-gone: connected; waiting to be killed or for SIGUSR1\n");
	if (sigtimedwait(&usr1, NULL, &limit) != SIGUSR1)
		return fail(c, "no SIGUSR1 within 60 s");
	close(c->oob_fd);
	c->oob_fd = -1;
	printf("[server] peer-gone: closed the connection; staying until SIGTERM\n");
	sigdelset(&usr1, SIGUSR1);
	sigtimedwait(&usr1, NULL, &limit);
}

static void client_peer_gone(struct ctx *c)
{
	struct qp_end *end = &c->pairs[0];
	/* Local ACK timeout = 4.096 us * 2^timeout. */
	double t_ms = 4.096e-3 * (double)(1u << c->p.timeout);
	double bound = (c->p.retry_cnt + 1) * t_ms, slack = 300, elapsed;
	struct xr_sge sges[3];
	struct xr_send_wr wrs[2] = {send_wr(c, 1, &sges[0], 0, RNR_MSG_SIZE),
				    send_wr(c, 2, &sges[1], MAX_MSG, RNR_MSG_SIZE)};
	struct xr_send_wr late = send_wr(c, 3, &sges[2], 2 * MAX_MSG, 64);
	struct xr_wc wc;
	char byte;
	int64_t start;
	int ret;

	ret = oob_read_full(c->oob_fd, &byte, 1, tool_now_ms() + 60000);
	if (ret != -EPIPE && ret != -ECONNRESET)
		return fail(c, "the out-of-band connection did not end within 60 s");
	late.opcode = XR_WR_RDMA_WRITE;
	late.wr.rdma.remote_addr = c->remote_addr;
	late.wr.rdma.rkey = c->rkey;
	wrs[0].next = &wrs[1];
	start = now_us();
	if (!post_send(c, end, wrs) ||
	    !wait_one(c, end->send_cq, &wc, (int)(bound + 10000), "SEND to a gone peer"))
		return;
	elapsed = (double)(now_us() - start) / 1000;
	printf("[client] peer-gone: first SEND: \"%s\" after %.1f ms (bound (retry_cnt %u + 1) x "
	       "%.1f ms = %.1f ms, + %.0f ms slack)\n",
	       xr_wc_status_str(wc.status), elapsed, c->p.retry_cnt, t_ms, bound, slack);
	check_completion(c, &wc, 1, XR_WC_RETRY_EXC_ERR, XR_WC_SEND, "SEND to a gone peer");
	if (elapsed > bound + slack)
		fail(c, "the retry error came after %.1f ms, bound %.1f ms", elapsed,
		     bound + slack);
	if (elapsed < 0.9 * bound)
		fail(c, "the retry error came after %.1f ms, before %u ACK timeouts could pass",
		     elapsed, c->p.retry_cnt + 1);
	if (wait_one(c, end->send_cq, &wc, 2000, "second SEND"))
		check_completion(c, &wc, 2, XR_WC_WR_FLUSH_ERR, XR_WC_SEND, "SEND queued behind");
	if (post_send(c, end, &late) && wait_one(c, end->send_cq, &wc, 2000, "later WRITE"))
		check_completion(c, &wc, 3, XR_WC_WR_FLUSH_ERR, XR_WC_RDMA_WRITE,
				 "WRITE posted later");
	expect_no_completion(c, end->send_cq, QUIET_WAIT_MS, "extra send");
	if (!failed)
		printf("[client] peer-gone: the queued SEND and a later WRITE were flushed\n");
}

/* ---- lost atomic ACKs -------------------------------------------------- */

static void run_atomic_ack(struct ctx *c)
{
	struct qp_end *end = &c->pairs[0];
	uint64_t word;
	int ret;

	if (c->is_server) {
		store64(c->buf + FAA_WORD, ATOMIC_INITIAL);
		ret = send_step(c, STEP_PREPARED, true, 0);
		if (!ret)
			ret = recv_step(c, STEP_DONE, NULL, NULL, MIXED_TIMEOUT_MS);
		if (ret)
			return fail(c, "lost the client: %s", oob_error(ret));
		word = load64(c->buf + FAA_WORD);
		if (word != ATOMIC_SWAP)
			return fail(c,
				    "the atomic word is %" PRIu64 ", expected %u (%u + %u once, "
				    "then swapped)",
				    word, ATOMIC_SWAP, ATOMIC_INITIAL, ATOMIC_ADD);
		printf("[server] atomic-ack: word %" PRIu64 ": the FAA and the CAS each applied "
		       "once\n",
		       word);
		return;
	}
	ret = recv_step(c, STEP_PREPARED, NULL, NULL, OOB_TIMEOUT_MS);
	if (ret)
		return fail(c, "lost the server: %s", oob_error(ret));
	for (int k = 0; k < 3 && !failed; k++) {
		static const char *const names[] = {"FAA", "CAS", "READ"};
		static const enum xr_wc_opcode opcodes[] = {XR_WC_FETCH_ADD, XR_WC_COMP_SWAP,
							    XR_WC_RDMA_READ};
		/* What each returns: FAA and CAS the value before them, READ the end value. */
		static const uint64_t expect[] = {ATOMIC_INITIAL, ATOMIC_INITIAL + ATOMIC_ADD,
						  ATOMIC_SWAP};
		struct xr_sge sge = buf_sge(c, CLIENT_RESULTS, 8);
		struct xr_send_wr wr = {.wr_id = (uint64_t)k,
					.sg_list = &sge,
					.num_sge = 1,
					.send_flags = XR_SEND_SIGNALED};
		struct xr_wc wc;
		int64_t start = tool_now_ms();

		store64(c->buf + CLIENT_RESULTS, ~0ull);
		wr.opcode = k == 0   ? XR_WR_ATOMIC_FETCH_AND_ADD
			    : k == 1 ? XR_WR_ATOMIC_CMP_AND_SWP
				     : XR_WR_RDMA_READ;
		if (k < 2) {
			wr.wr.atomic.remote_addr = c->remote_addr + FAA_WORD;
			wr.wr.atomic.rkey = c->rkey;
			wr.wr.atomic.compare_add =
			    k == 0 ? ATOMIC_ADD : ATOMIC_INITIAL + ATOMIC_ADD;
			wr.wr.atomic.swap = ATOMIC_SWAP;
		} else {
			wr.wr.rdma.remote_addr = c->remote_addr + FAA_WORD;
			wr.wr.rdma.rkey = c->rkey;
		}
		if (!post_send(c, end, &wr) ||
		    !wait_one(c, end->send_cq, &wc, STALL_TIMEOUT_MS, names[k]) ||
		    !check_completion(c, &wc, (uint64_t)k, XR_WC_SUCCESS, opcodes[k], names[k]))
			break;
		word = load64(c->buf + CLIENT_RESULTS);
		printf("[client] atomic-ack: %s returned %" PRIu64 " after %" PRId64 " ms\n",
		       names[k], word, tool_now_ms() - start);
		if (word != expect[k])
			fail(c, "%s returned %" PRIu64 ", expected %" PRIu64, names[k], word,
			     expect[k]);
	}
	if (send_step(c, STEP_DONE, !failed, 0))
		fail(c, "lost the server");
}

/* ---- idle engines, long ACK timeout ------------------------------------ */

#define IDLE_ROUNDS 6

/* Waits for one completion asleep on the completion channel, bounded. */
static bool wait_on_channel(struct ctx *c, struct xr_cq *cq, struct xr_wc *wc, int timeout_ms)
{
	int64_t deadline = tool_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = {.fd = c->channel->fd, .events = POLLIN};
		struct xr_cq *ev_cq;
		void *ev_ctx;
		int ret = xr_req_notify_cq(cq, 0);

		if (ret) {
			fail(c, "xr_req_notify_cq: %s", strerror(-ret));
			return false;
		}
		/* A completion that arrived before arming raises no event. */
		if (xr_poll_cq(cq, 1, wc) == 1)
			return true;
		if (tool_now_ms() >= deadline ||
		    poll(&pfd, 1, (int)(deadline - tool_now_ms())) != 1) {
			fail(c, "no completion event within %d ms", timeout_ms);
			return false;
		}
		ret = xr_get_cq_event(c->channel, &ev_cq, &ev_ctx);
		if (ret) {
			fail(c, "xr_get_cq_event: %s", strerror(-ret));
			return false;
		}
		xr_ack_cq_events(ev_cq, 1);
		if (xr_poll_cq(cq, 1, wc) == 1)
			return true;
	}
}

static void run_idle(struct ctx *c)
{
	static const struct {
		const char *name;
		enum xr_wr_opcode opcode;
		enum xr_wc_opcode wc_opcode;
		bool sleep; /* on the completion channel, rather than polling */
	} rounds[IDLE_ROUNDS] = {
	    {"SEND", XR_WR_SEND, XR_WC_SEND, false},
	    {"WRITE", XR_WR_RDMA_WRITE, XR_WC_RDMA_WRITE, false},
	    {"READ", XR_WR_RDMA_READ, XR_WC_RDMA_READ, false},
	    {"FAA", XR_WR_ATOMIC_FETCH_AND_ADD, XR_WC_FETCH_ADD, false},
	    {"SEND", XR_WR_SEND, XR_WC_SEND, true},
	    {"WRITE", XR_WR_RDMA_WRITE, XR_WC_RDMA_WRITE, true},
	};
	struct qp_end *end = &c->pairs[0];
	int sends = 0, ret;

	for (int k = 0; k < IDLE_ROUNDS; k++)
		sends += rounds[k].opcode == XR_WR_SEND;
	if (c->is_server) {
		struct xr_wc wc;

		for (int k = 0; k < sends; k++)
			if (!post_recv(c, end, (uint64_t)k, RECV_AREA + (size_t)k * MAX_MSG,
				       MAX_MSG))
				return;
		/* Blocked on the socket, not polling: the engine alone must answer. */
		ret = send_step(c, STEP_PREPARED, true, 0);
		if (!ret)
			ret = recv_step(c, STEP_CHECK, NULL, NULL, MIXED_TIMEOUT_MS);
		if (ret)
			return fail(c, "lost the client: %s", oob_error(ret));
		for (int k = 0; k < sends; k++)
			if (!wait_one(c, end->recv_cq, &wc, 2000, "receive") ||
			    !check_completion(c, &wc, (uint64_t)k, XR_WC_SUCCESS, XR_WC_RECV,
					      "receive"))
				return;
		expect_no_completion(c, end->recv_cq, QUIET_WAIT_MS, "extra receive");
		return;
	}
	ret = recv_step(c, STEP_PREPARED, NULL, NULL, OOB_TIMEOUT_MS);
	if (ret)
		return fail(c, "lost the server: %s", oob_error(ret));
	for (int k = 0; k < IDLE_ROUNDS; k++) {
		struct xr_sge sge = buf_sge(c, CLIENT_RESULTS, 8);
		struct xr_send_wr wr = {.wr_id = (uint64_t)k,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = rounds[k].opcode,
					.send_flags = XR_SEND_SIGNALED};
		struct xr_wc wc;
		int64_t start;
		bool got;

		wr.wr.rdma.remote_addr = c->remote_addr + READ_AREA;
		wr.wr.rdma.rkey = c->rkey;
		if (rounds[k].opcode == XR_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = c->remote_addr + FAA_WORD;
			wr.wr.atomic.rkey = c->rkey;
			wr.wr.atomic.compare_add = 1;
		}
		sleep_ms(IDLE_MS);
		start = now_us();
		if (!post_send(c, end, &wr))
			return;
		got = rounds[k].sleep ? wait_on_channel(c, end->send_cq, &wc, 10000)
				      : wait_one(c, end->send_cq, &wc, 10000, rounds[k].name);
		if (!got || !check_completion(c, &wc, (uint64_t)k, XR_WC_SUCCESS,
					      rounds[k].wc_opcode, rounds[k].name))
			return;
		printf("[client] idle: %s after %d ms idle, %s: completed in %.2f ms\n",
		       rounds[k].name, IDLE_MS,
		       rounds[k].sleep ? "asleep on the channel" : "polling",
		       (double)(now_us() - start) / 1000);
		if (now_us() - start > IDLE_BOUND_MS * 1000)
			fail(c, "%s took longer than %d ms: a completion waited for a timer",
			     rounds[k].name, IDLE_BOUND_MS);
	}
	if (send_step(c, STEP_CHECK, true, 0))
		fail(c, "lost the server");
}

/* ---- main -------------------------------------------------------------- */

static int server_exchange(struct ctx *c, unsigned int port)
{
	struct hello peer;
	struct plan pl = {0};
	int ret;

	c->oob_fd = e2e_oob_open(NULL, port, ACCEPT_TIMEOUT_MS, CONNECT_RETRY_MS, OOB_TIMEOUT_MS);
	if (c->oob_fd < 0)
		return -1;
	ret = recv_hello(c, &peer);
	if (ret || peer.p.kind < KIND_MIXED || peer.p.kind > KIND_IDLE) {
		fprintf(stderr, PROG ": bad hello from the client: %s\n",
			ret ? oob_error(ret) : "unknown case");
		return -1;
	}
	c->p = peer.p;
	if (c->p.kind == KIND_MIXED) {
		/* The plan's write area size depends on the path MTU the client will use. */
		uint32_t mtu = 128u << (peer.mtu_enum < c->mtu_enum ? peer.mtu_enum : c->mtu_enum);

		if (build_plan(&pl, c->p.seed, c->p.ops, mtu))
			return -1;
	}
	ret = setup_memory(c, &pl);
	free(pl.ops);
	if (ret || create_pairs(c) || connect_pairs(c, &peer))
		return -1;
	ret = send_hello(c);
	if (ret) {
		fprintf(stderr, PROG ": couldn't answer the client: %s\n", oob_error(ret));
		return -1;
	}
	return 0;
}

static int client_exchange(struct ctx *c, const char *server_ip, unsigned int port)
{
	struct hello peer;
	int ret;

	if (setup_memory(c, NULL) || create_pairs(c))
		return -1;
	c->oob_fd =
	    e2e_oob_open(server_ip, port, ACCEPT_TIMEOUT_MS, CONNECT_RETRY_MS, OOB_TIMEOUT_MS);
	if (c->oob_fd < 0)
		return -1;
	ret = send_hello(c);
	if (!ret)
		ret = recv_hello(c, &peer);
	if (ret) {
		fprintf(stderr, PROG ": exchange with the server failed: %s\n", oob_error(ret));
		return -1;
	}
	c->remote_addr = peer.addr;
	c->rkey = peer.rkey;
	return connect_pairs(c, &peer);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " server IFNAME [-p PORT]\n"
		"       " PROG " client IFNAME SERVER_IP [-p PORT] [--case CASE | --bench]\n"
		"           [--ops N] [--seed N] [--seconds S] [--label L] [--timeout N]\n"
		"           [--retry-cnt N] [--min-rnr-timer N]\n"
		"       CASE: mixed bench rnr-late rnr-exhaust peer-gone atomic-ack idle\n");
}

static int kind_of(const char *name)
{
	for (int k = KIND_MIXED; k <= KIND_IDLE; k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

/* Defaults per case: what keeps each one fast and meaningful. */
static void default_params(struct params *p, int kind)
{
	*p = (struct params){.kind = (uint32_t)kind,
			     .seed = 1,
			     .ops = 20000,
			     .seconds = 3,
			     .timeout = 12,
			     .retry_cnt = 7,
			     .min_rnr_timer = 1,
			     .npairs = 1};
	if (kind == KIND_RNR_LATE)
		p->min_rnr_timer = 12;
	if (kind == KIND_RNR_EXHAUST)
		p->npairs = RNR_EXHAUST_PAIRS;
	if (kind == KIND_PEER_GONE) {
		p->timeout = 14;
		p->retry_cnt = 3;
	}
	if (kind == KIND_ATOMIC_ACK)
		p->timeout = 14;
	if (kind == KIND_IDLE)
		p->timeout = 20;
}

static bool parse_uint(const char *s, unsigned long max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

int main(int argc, char **argv)
{
	struct ctx c = {.oob_fd = -1};
	unsigned int port = DEFAULT_PORT;
	const char *server_ip = NULL, *label = "";
	const char *overrides[5][2] = {{0}};
	int args, kind = KIND_MIXED, n_overrides = 0;
	bool ok;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		usage();
		return 2;
	}
	c.is_server = !strcmp(argv[1], "server");
	c.role = argv[1];
	args = 3;
	if (!c.is_server) {
		if (argc < 4) {
			usage();
			return 2;
		}
		server_ip = argv[args++];
	}
	for (; args < argc; args++) {
		const char *opt = argv[args], *val = args + 1 < argc ? argv[args + 1] : NULL;
		uint32_t v;

		if (!strcmp(opt, "--bench") && !c.is_server) {
			kind = KIND_BENCH;
			continue;
		}
		if (!val)
			break;
		if (!strcmp(opt, "-p") && parse_uint(val, 65535, &v) && v)
			port = v;
		else if (!strcmp(opt, "--case") && !c.is_server && kind_of(val) > 0)
			kind = kind_of(val);
		else if (!strcmp(opt, "--label") && !c.is_server)
			label = val;
		else if (!c.is_server && n_overrides < 5 &&
			 (!strcmp(opt, "--ops") || !strcmp(opt, "--seed") ||
			  !strcmp(opt, "--seconds") || !strcmp(opt, "--timeout") ||
			  !strcmp(opt, "--retry-cnt") || !strcmp(opt, "--min-rnr-timer"))) {
			overrides[n_overrides][0] = opt;
			overrides[n_overrides++][1] = val;
		} else
			break;
		args++;
	}
	if (args != argc) {
		usage();
		return 2;
	}
	default_params(&c.p, kind);
	for (int i = 0; i < n_overrides; i++) {
		const char *opt = overrides[i][0];
		uint32_t *field = !strcmp(opt, "--ops")		? &c.p.ops
				  : !strcmp(opt, "--seed")	? &c.p.seed
				  : !strcmp(opt, "--seconds")	? &c.p.seconds
				  : !strcmp(opt, "--timeout")	? &c.p.timeout
				  : !strcmp(opt, "--retry-cnt") ? &c.p.retry_cnt
								: &c.p.min_rnr_timer;
		unsigned long max = field == &c.p.ops	      ? 1000000
				    : field == &c.p.seed      ? 0xffffffffu
				    : field == &c.p.seconds   ? 600
				    : field == &c.p.timeout   ? 31
				    : field == &c.p.retry_cnt ? 7
							      : 31;

		if (!parse_uint(overrides[i][1], max, field)) {
			fprintf(stderr, PROG ": bad value for %s: %s\n", opt, overrides[i][1]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ time(NULL));

	if (open_device(&c, argv[2]) ||
	    (c.is_server ? server_exchange(&c, port) : client_exchange(&c, server_ip, port))) {
		teardown(&c);
		printf("[%s] FAIL: setup\n", c.role);
		return 1;
	}
	switch (c.p.kind) {
	case KIND_MIXED:
		run_mixed(&c);
		break;
	case KIND_BENCH:
		run_bench(&c, label);
		break;
	case KIND_RNR_LATE:
		run_rnr_late(&c);
		break;
	case KIND_RNR_EXHAUST:
		run_rnr_exhaust(&c);
		break;
	case KIND_PEER_GONE:
		if (c.is_server)
			server_peer_gone(&c);
		else
			client_peer_gone(&c);
		break;
	case KIND_ATOMIC_ACK:
		run_atomic_ack(&c);
		break;
	case KIND_IDLE:
		run_idle(&c);
		break;
	}
	/* Cases that end in lockstep compare verdicts; the others have no peer to ask. */
	ok = c.p.kind == KIND_PEER_GONE || c.p.kind == KIND_BENCH || c.p.kind == KIND_RNR_EXHAUST ||
		     c.p.kind == KIND_ATOMIC_ACK
		 ? !failed
		 : exchange_verdicts(&c, STEP_VERDICT);
	printf("[%s] %s: case %s\n", c.role, ok ? "PASS" : "FAIL", kind_names[c.p.kind]);
	teardown(&c);
	return ok ? 0 : 1;
}
