/* SPDX-License-Identifier: MIT */
/*
 * What the two-process end-to-end tests share besides tool_common.h: a
 * verdict with the first failure or a summary, data patterns that show a
 * shifted or reordered copy, posting and checks of completions, the
 * out-of-band connection and the command line, and the driver of the tests
 * that run a table of cases in lockstep (send_e2e, rdma_e2e).
 */
#ifndef XROCE_E2E_COMMON_H
#define XROCE_E2E_COMMON_H

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>

#include "../../user/tools/tool_common.h"

/* First failure of a case, or a summary of what was checked when it passed. */
struct report {
	bool failed;
	char detail[320];
};

static inline void report_fail(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void report_fail(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = true;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

static inline void report_ok(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void report_ok(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

/* A per-case, position-dependent byte: a shifted or reordered copy shows. */
static inline uint8_t pattern_byte(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 0x9e3779b1u ^ seed * 0x85ebca6bu;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return (uint8_t)x;
}

static inline void fill_pattern(uint8_t *buf, uint32_t seed, size_t from, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern_byte(seed, from + i);
}

/* Index of the first byte of buf that is not pattern (seed, from + i), or -1. */
static inline ssize_t pattern_mismatch(const uint8_t *buf, uint32_t seed, size_t from, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern_byte(seed, from + i))
			return (ssize_t)i;
	return -1;
}

/* Atomic targets and results in host order, as the responder keeps them. */
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void store64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Checks one completion against what it must be; describes the first difference in r. */
static inline bool check_wc(const struct xr_wc *wc, uint64_t wr_id, enum xr_wc_status status,
			    enum xr_wc_opcode opcode, struct report *r)
{
	if (wc->wr_id != wr_id) {
		report_fail(r, "completion for wr_id 0x%" PRIx64 ", expected 0x%" PRIx64 " (%s)",
			    wc->wr_id, wr_id, xr_wc_status_str(wc->status));
		return false;
	}
	if (wc->status != status) {
		report_fail(r, "wr_id 0x%" PRIx64 " completed with \"%s\", expected \"%s\"",
			    wc->wr_id, xr_wc_status_str(wc->status), xr_wc_status_str(status));
		return false;
	}
	/* The opcode of an error completion is undefined in verbs. */
	if (status == XR_WC_SUCCESS && wc->opcode != opcode) {
		report_fail(r, "wr_id 0x%" PRIx64 " has opcode %d, expected %d", wc->wr_id,
			    wc->opcode, opcode);
		return false;
	}
	return true;
}

/* True when nothing arrives on cq for wait_ms; an unexpected completion is described in r. */
static inline bool expect_quiet(struct xr_cq *cq, int wait_ms, struct report *r, const char *what)
{
	struct xr_wc wc;

	if (poll_cq_until(cq, &wc, 1, 1, tool_now_ms() + wait_ms) == 0)
		return true;
	report_fail(r, "unexpected %s completion: wr_id 0x%" PRIx64 ", status \"%s\", opcode %d",
		    what, wc.wr_id, xr_wc_status_str(wc.status), wc.opcode);
	return false;
}

/* A case's wr_ids: the case in the high half, so a stray completion shows whose it is. */
static inline uint64_t case_wr_id(int case_index, uint32_t n)
{
	return (uint64_t)(case_index + 1) << 32 | n;
}

static inline struct xr_sge sge_of(struct xr_mr *mr, uint8_t *addr, uint32_t length)
{
	return (struct xr_sge){.addr = (uintptr_t)addr, .length = length, .lkey = mr->lkey};
}

/* Posts one send WR; a refusal is described in r. */
static inline bool e2e_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct report *r)
{
	struct xr_send_wr *bad;
	int ret = xr_post_send(qp, wr, &bad);

	if (ret)
		report_fail(r, "xr_post_send: %s", strerror(-ret));
	return !ret;
}

/*
 * The test's out-of-band connection: the server (server_ip NULL) accepts
 * the client, the client connects to the server. -1 after saying why.
 */
static inline int e2e_oob_open(const char *server_ip, unsigned int port, int accept_timeout_ms,
			       int connect_retry_ms, int attempt_timeout_ms)
{
	const char *why;
	int fd = server_ip
		     ? oob_connect(server_ip, port, connect_retry_ms, attempt_timeout_ms, &why)
		     : oob_accept(AF_INET, port, accept_timeout_ms, &why);

	if (fd < 0 && server_ip)
		fprintf(stderr, "%s: couldn't connect to %s:%u: %s\n",
			program_invocation_short_name, server_ip, port, why);
	else if (fd < 0)
		fprintf(stderr, "%s: no client on port %u: %s\n", program_invocation_short_name,
			port, why);
	return fd;
}

/* The command line of a two-process test. */
struct e2e_args {
	bool is_server;
	const char *role; /* "server" or "client" */
	const char *ifname;
	const char *server_ip;
	unsigned int port;
	int gid_index; /* -1: the first IPv4-mapped GID */
};

/*
 * Parses "server IFNAME [-p PORT] [-g GID_INDEX]" or "client IFNAME
 * SERVER_IP [-p PORT] [-g GID_INDEX]" into *a (whose port holds the
 * default); false on a usage error.
 */
static inline bool e2e_parse_args(int argc, char **argv, struct e2e_args *a)
{
	int args = 3;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		return false;
	a->is_server = !strcmp(argv[1], "server");
	a->role = argv[1];
	a->ifname = argv[2];
	if (!a->is_server) {
		if (argc < 4)
			return false;
		a->server_ip = argv[args++];
	}
	a->gid_index = -1;
	for (; args + 2 <= argc; args += 2) {
		char *end;
		unsigned long v = strtoul(argv[args + 1], &end, 10);

		if (*end || end == argv[args + 1])
			return false;
		if (!strcmp(argv[args], "-p"))
			a->port = (unsigned int)v;
		else if (!strcmp(argv[args], "-g") && v < XR_MAX_GIDS)
			a->gid_index = (int)v;
		else
			return false;
	}
	return argc == args && a->port > 0 && a->port <= 65535;
}

/* ---- QP state --------------------------------------------------------------- */

/* How long a QP may take to change state: the engine moves it, not the caller. */
#define E2E_STATE_CHANGE_TIMEOUT_MS 2000

/* qp's state and receive PSN into *attr; false after reporting why not. */
static inline bool e2e_query_state(struct xr_qp *qp, struct xr_qp_attr *attr, struct report *r)
{
	int ret = xr_query_qp(qp, attr, XR_QP_STATE | XR_QP_RQ_PSN, NULL);

	if (ret)
		report_fail(r, "xr_query_qp: %s", strerror(-ret));
	return !ret;
}

/* Waits, bounded, for qp (whose: whose QP it is, for the report) to reach state. */
static inline bool e2e_wait_qp_state(struct xr_qp *qp, enum xr_qp_state state, struct report *r,
				     const char *whose)
{
	int64_t deadline = tool_now_ms() + E2E_STATE_CHANGE_TIMEOUT_MS;
	struct xr_qp_attr attr;

	for (;;) {
		if (!e2e_query_state(qp, &attr, r))
			return false;
		if (attr.qp_state == state)
			return true;
		if (tool_now_ms() >= deadline)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	report_fail(r, "%s QP 0x%06x is in state %d, expected %d", whose, qp->qp_num, attr.qp_state,
		    state);
	return false;
}

/* ---- this side's device and QP pairs ----------------------------------------- */

/* This side's device: what every QP is created and connected with. */
struct e2e_port {
	struct xr_device *dev;
	struct xr_pd *pd;
	union xr_gid gid;
	int gid_index;
	enum xr_mtu mtu_enum; /* the device's, then the one agreed with the peer */
};

/* One side of an RC QP pair, with CQs of its own. */
struct e2e_qp_end {
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_qp *qp;
	uint32_t psn;
	uint32_t peer_psn; /* the peer's first PSN, once connected */
};

/*
 * Opens ifname's device, a PD and the GID at gid_index (its first IPv4 GID
 * when -1) into *p; -1 after saying why.
 */
static inline int e2e_open_port(const char *prog, const char *ifname, int gid_index,
				struct e2e_port *p)
{
	struct xr_device_attr dev_attr;
	int ret;

	p->dev = tool_open_device(prog, ifname);
	if (!p->dev)
		return -1;
	if (gid_index < 0) {
		p->gid_index = find_ipv4_gid(p->dev, &dev_attr, &p->gid);
		if (p->gid_index < 0) {
			fprintf(stderr, "%s: no IPv4 GID on %s: %s\n", prog, ifname,
				strerror(-p->gid_index));
			return -1;
		}
	} else {
		p->gid_index = gid_index;
		ret = xr_query_device(p->dev, &dev_attr);
		if (!ret)
			ret = xr_query_gid(p->dev, gid_index, &p->gid);
		if (ret) {
			fprintf(stderr, "%s: no GID %d on %s: %s\n", prog, gid_index, ifname,
				strerror(-ret));
			return -1;
		}
	}
	p->mtu_enum = dev_attr.active_mtu;
	p->pd = xr_alloc_pd(p->dev);
	if (!p->pd) {
		fprintf(stderr, "%s: couldn't allocate a PD: %s\n", prog, strerror(errno));
		return -1;
	}
	return 0;
}

/* Says which GID this side's QPs use: tests check the address family from it. */
static inline void e2e_print_gid(const char *role, const struct e2e_port *p)
{
	char text[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, p->gid.raw, text, sizeof(text));
	printf("[%s] GID %d %s\n", role, p->gid_index, text);
}

static inline void e2e_close_port(struct e2e_port *p)
{
	if (p->pd)
		xr_dealloc_pd(p->pd);
	if (p->dev)
		xr_close_device(p->dev);
}

/* Creates an RC QP with its CQs and moves it to INIT with access; -1 after saying why. */
static inline int e2e_create_qp_end(const char *prog, const struct e2e_port *p,
				    struct e2e_qp_end *end, uint32_t send_wr, uint32_t recv_wr,
				    uint32_t max_sge, int access)
{
	struct xr_qp_init_attr init = {
	    .cap = {.max_send_wr = send_wr,
		    .max_recv_wr = recv_wr,
		    .max_send_sge = max_sge,
		    .max_recv_sge = max_sge},
	    .qp_type = XR_QPT_RC,
	};
	int ret;

	end->send_cq = xr_create_cq(p->dev, 2 * send_wr, NULL);
	end->recv_cq = xr_create_cq(p->dev, 2 * recv_wr, NULL);
	if (!end->send_cq || !end->recv_cq) {
		fprintf(stderr, "%s: couldn't create CQ: %s\n", prog, strerror(errno));
		return -1;
	}
	init.send_cq = end->send_cq;
	init.recv_cq = end->recv_cq;
	end->qp = xr_create_qp(p->pd, &init);
	if (!end->qp) {
		fprintf(stderr, "%s: couldn't create QP: %s\n", prog, strerror(errno));
		return -1;
	}
	ret = qp_to_init(end->qp, 1, access);
	if (ret) {
		fprintf(stderr, "%s: couldn't move QP to INIT: %s\n", prog, strerror(-ret));
		return -1;
	}
	end->psn = lrand48() & 0xffffff;
	return 0;
}

static inline void e2e_destroy_qp_end(struct e2e_qp_end *end)
{
	if (end->qp)
		xr_destroy_qp(end->qp);
	if (end->send_cq)
		xr_destroy_cq(end->send_cq);
	if (end->recv_cq)
		xr_destroy_cq(end->recv_cq);
}

/*
 * Lowers p's path MTU to the peer's when that is smaller; -1 after saying
 * why when the peer's is no MTU code.
 */
static inline int e2e_agree_mtu(const char *prog, struct e2e_port *p, uint32_t peer_mtu_enum)
{
	if (peer_mtu_enum < XR_MTU_256 || peer_mtu_enum > XR_MTU_4096) {
		fprintf(stderr, "%s: peer sent path MTU code %u\n", prog, peer_mtu_enum);
		return -1;
	}
	if (peer_mtu_enum < p->mtu_enum)
		p->mtu_enum = peer_mtu_enum;
	return 0;
}

/* Connects end to the peer's QP (to RTS), rd_atomic deep each way; -1 after saying why. */
static inline int e2e_connect_qp(const char *prog, const struct e2e_port *p, struct e2e_qp_end *end,
				 uint8_t rd_atomic, uint32_t dest_qpn, uint32_t dest_psn,
				 const union xr_gid *dgid)
{
	struct qp_rtr_attr rtr = {
	    .path_mtu = p->mtu_enum,
	    .dest_qpn = dest_qpn,
	    .rq_psn = dest_psn,
	    .dgid = *dgid,
	    .sgid_index = (uint8_t)p->gid_index,
	    .port_num = 1,
	    .hop_limit = 64,
	    .max_dest_rd_atomic = rd_atomic,
	    .min_rnr_timer = 1,
	};
	const char *failed;
	int ret = qp_connect(end->qp, &rtr, end->psn, rd_atomic, &failed);

	end->peer_psn = dest_psn;
	if (ret)
		fprintf(stderr, "%s: couldn't move QP to %s: %s\n", prog, failed, strerror(-ret));
	return ret ? -1 : 0;
}

static inline uint32_t e2e_mtu_bytes(enum xr_mtu mtu)
{
	return 128u << mtu;
}

/* ---- the lockstep case driver ---------------------------------------------- */

/* Bounds on the driver's out-of-band waits. */
#define E2E_ACCEPT_TIMEOUT_MS 30000
#define E2E_CONNECT_RETRY_MS 20000
#define E2E_OOB_TIMEOUT_MS 30000

#define E2E_MAX_CASES 64

/*
 * The context of a test that uses the driver: each such test defines struct
 * e2e_ctx itself; the driver only hands it back to the test's callbacks.
 */
struct e2e_ctx;

/* Where the server lets the client aim in a case. */
struct e2e_target {
	uint64_t addr;
	uint32_t rkey;
};

/* One case; both sides build the same table from the agreed path MTU. */
struct e2e_case {
	char name[48];
	int kind; /* index into the test's e2e_case_ops */
	uint32_t size;
	uint32_t seed;
	int param; /* the test's own, e.g. which error case */
	/*
	 * How many lockstep rounds (prepare, act, check, verdicts) the case
	 * takes; 0 is one. A case whose steps alternate between the sides
	 * (the server changes something, the client acts, and again) runs
	 * one round per step; the rounds stop at the first round that failed
	 * on either side.
	 */
	int rounds;
	int round; /* the round the callbacks are called for, from 0 (set by the driver) */
};

struct e2e_case_ops {
	/* Server, first: gets ready for the client; false when the client must not act. */
	bool (*prepare)(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct e2e_target *t,
			struct report *r);
	/* Client, once the server is ready. */
	void (*act)(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		    const struct e2e_target *t, struct report *r);
	/* Server, when prepare succeeded. */
	void (*check)(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r);
};

struct e2e_driver {
	const char *prog;
	unsigned int default_port;
	/* What each side is in a case's line, e.g. "receiver" and "sender". */
	const char *server_part, *client_part;
	/* Why the client did not act when the server could not prepare. */
	const char *not_prepared;
	int name_width;
	/* The sync messages carry where the client may aim (struct e2e_target). */
	bool sync_carries_target;
	/* The server checks only once the client's verdict is in (what the client did must be
	 * over). */
	bool check_after_act;
	/* The longest one side may wait for the other's next sync message. */
	int peer_step_timeout_ms;
	const struct e2e_case_ops *ops; /* indexed by e2e_case.kind */
	/* Opens the device and creates this side's QPs; -1 after saying why. */
	int (*setup)(struct e2e_ctx *c, const struct e2e_args *args);
	/* This side's QPs to the peer, and the peer's into c: 0 or a negative errno. */
	int (*send_hello)(struct e2e_ctx *c, int fd);
	int (*recv_hello)(struct e2e_ctx *c, int fd);
	/* Connects to the QPs recv_hello read; -1 after saying why. */
	int (*connect)(struct e2e_ctx *c);
	/* Fills cases (at most E2E_MAX_CASES), returns how many. */
	int (*build_cases)(struct e2e_ctx *c, struct e2e_case *cases);
	/* Frees whatever setup got, also after a partial setup. */
	void (*teardown)(struct e2e_ctx *c);
};

static inline void e2e_add_case(struct e2e_case *cases, int *n, int kind, uint32_t size,
				const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static inline void e2e_add_case(struct e2e_case *cases, int *n, int kind, uint32_t size,
				const char *fmt, ...)
{
	struct e2e_case *tc = &cases[(*n)++];
	va_list ap;

	*tc = (struct e2e_case){.kind = kind, .size = size, .seed = 0x1000u * (uint32_t)*n + size};
	va_start(ap, fmt);
	vsnprintf(tc->name, sizeof(tc->name), fmt, ap);
	va_end(ap);
}

/*
 * Sync message kinds. The client's verdict is always E2E_SYNC_VERDICT; the
 * server's is E2E_SYNC_LATE_VERDICT when it checks after the client.
 */
enum e2e_sync_kind {
	E2E_SYNC_READY = 1,
	E2E_SYNC_VERDICT = 2,
	E2E_SYNC_LATE_VERDICT = 3,
};

struct e2e_sync {
	bool ok;
	struct e2e_target target;
};

static inline int e2e_send_sync(const struct e2e_driver *d, int fd, enum e2e_sync_kind kind,
				int idx, const struct e2e_sync *m)
{
	uint32_t msg[6] = {htonl(kind),
			   htonl((uint32_t)idx),
			   htonl(m->ok),
			   htonl(m->target.rkey),
			   htonl((uint32_t)(m->target.addr >> 32)),
			   htonl((uint32_t)m->target.addr)};
	size_t len = d->sync_carries_target ? sizeof(msg) : 3 * sizeof(msg[0]);

	return oob_write_full(fd, msg, len, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
}

static inline int e2e_recv_sync(const struct e2e_driver *d, int fd, enum e2e_sync_kind kind,
				int idx, struct e2e_sync *m)
{
	uint32_t msg[6];
	size_t len = d->sync_carries_target ? sizeof(msg) : 3 * sizeof(msg[0]);
	int ret = oob_read_full(fd, msg, len, tool_now_ms() + d->peer_step_timeout_ms);

	if (ret)
		return ret;
	if (ntohl(msg[0]) != (uint32_t)kind || ntohl(msg[1]) != (uint32_t)idx)
		return -EPROTO;
	m->ok = ntohl(msg[2]) != 0;
	if (d->sync_carries_target) {
		m->target.rkey = ntohl(msg[3]);
		m->target.addr = (uint64_t)ntohl(msg[4]) << 32 | ntohl(msg[5]);
	}
	return 0;
}

#define E2E_HELLO_MAX_WORDS 32

/*
 * A hello, what each side tells the other of its QPs before the cases: an
 * 8-byte magic, nwords 32-bit words in network order, then the GID.
 */
static inline int e2e_send_hello(int fd, const char *magic, const uint32_t *words, int nwords,
				 const union xr_gid *gid)
{
	uint8_t msg[8 + 4 * E2E_HELLO_MAX_WORDS + 16];

	memcpy(msg, magic, 8);
	for (int i = 0; i < nwords; i++) {
		uint32_t word = htonl(words[i]);

		memcpy(msg + 8 + 4 * i, &word, 4);
	}
	memcpy(msg + 8 + 4 * nwords, gid->raw, 16);
	return oob_write_full(fd, msg, 8 + 4 * (size_t)nwords + 16,
			      tool_now_ms() + E2E_OOB_TIMEOUT_MS);
}

/* Reads the peer's hello into words (host order) and gid; -EPROTO when the magic differs. */
static inline int e2e_recv_hello(int fd, const char *magic, uint32_t *words, int nwords,
				 union xr_gid *gid)
{
	uint8_t msg[8 + 4 * E2E_HELLO_MAX_WORDS + 16];
	int ret =
	    oob_read_full(fd, msg, 8 + 4 * (size_t)nwords + 16, tool_now_ms() + E2E_OOB_TIMEOUT_MS);

	if (ret)
		return ret;
	if (memcmp(msg, magic, 8))
		return -EPROTO;
	for (int i = 0; i < nwords; i++) {
		memcpy(&words[i], msg + 8 + 4 * i, 4);
		words[i] = ntohl(words[i]);
	}
	memcpy(gid->raw, msg + 8 + 4 * nwords, 16);
	return 0;
}

/* Server: read the client's QPs, connect ours, then tell the client. Client: the reverse. */
static inline int e2e_exchange_hellos(const struct e2e_driver *d, struct e2e_ctx *c, bool is_server,
				      int fd)
{
	int ret;

	if (is_server) {
		ret = d->recv_hello(c, fd);
		if (ret) {
			fprintf(stderr, "%s: couldn't read the client's QPs: %s\n", d->prog,
				oob_error(ret));
			return -1;
		}
		if (d->connect(c))
			return -1;
		ret = d->send_hello(c, fd);
		if (ret) {
			fprintf(stderr, "%s: couldn't send our QPs: %s\n", d->prog, oob_error(ret));
			return -1;
		}
		return 0;
	}
	ret = d->send_hello(c, fd);
	if (!ret)
		ret = d->recv_hello(c, fd);
	if (ret) {
		fprintf(stderr, "%s: exchange with the server failed: %s\n", d->prog,
			oob_error(ret));
		return -1;
	}
	return d->connect(c);
}

/*
 * One round of case idx on this side: the server prepares and says
 * "ready", the client acts, the server checks, and the verdicts are
 * exchanged. What failed is in *r, the peer's verdict in *peer_ok; returns
 * 0, or a negative errno when the peer cannot be reached.
 */
static inline int e2e_run_round(const struct e2e_driver *d, struct e2e_ctx *c,
				const struct e2e_args *a, int fd, const struct e2e_case *tc,
				int idx, struct report *rep, bool *peer_ok)
{
	const struct e2e_case_ops *ops = &d->ops[tc->kind];
	enum e2e_sync_kind server_verdict =
	    d->check_after_act ? E2E_SYNC_LATE_VERDICT : E2E_SYNC_VERDICT;
	struct e2e_sync mine = {0}, peer = {0};
	struct report r = *rep;
	int ret;

	if (a->is_server) {
		mine.ok = ops->prepare(c, tc, idx, &mine.target, &r);
		ret = e2e_send_sync(d, fd, E2E_SYNC_READY, idx, &mine);
		if (!ret && d->check_after_act)
			ret = e2e_recv_sync(d, fd, E2E_SYNC_VERDICT, idx, &peer);
		/* Checked even when the client failed: what the server saw tells why. */
		if (!ret && mine.ok)
			ops->check(c, tc, idx, &r);
		mine.ok = !r.failed;
		if (!ret)
			ret = e2e_send_sync(d, fd, server_verdict, idx, &mine);
		if (!ret && !d->check_after_act)
			ret = e2e_recv_sync(d, fd, E2E_SYNC_VERDICT, idx, &peer);
	} else {
		struct e2e_sync ready = {0};

		ret = e2e_recv_sync(d, fd, E2E_SYNC_READY, idx, &ready);
		if (!ret && !ready.ok)
			report_fail(&r, "not run: %s", d->not_prepared);
		else if (!ret)
			ops->act(c, tc, idx, &ready.target, &r);
		mine.ok = !r.failed;
		if (!ret)
			ret = e2e_send_sync(d, fd, E2E_SYNC_VERDICT, idx, &mine);
		if (!ret)
			ret = e2e_recv_sync(d, fd, server_verdict, idx, &peer);
	}
	*rep = r;
	*peer_ok = peer.ok;
	return ret;
}

/*
 * Runs case idx on this side, round after round (e2e_case.rounds) until one
 * fails on either side, and prints its line (each passed round but the last
 * one too, marked ".."). Returns the verdict of both sides, or -1 when the
 * peer cannot be reached.
 */
static inline int e2e_run_case(const struct e2e_driver *d, struct e2e_ctx *c,
			       const struct e2e_args *a, int fd, const struct e2e_case *tc, int idx)
{
	int rounds = tc->rounds > 1 ? tc->rounds : 1, k;
	struct e2e_case step = *tc;
	struct report r = {0};
	bool peer_ok = true;
	char round[48] = "";
	int ret = 0;

	for (k = 0; k < rounds && !r.failed && peer_ok && !ret; k++) {
		step.round = k;
		ret = e2e_run_round(d, c, a, fd, &step, idx, &r, &peer_ok);
		/* A round that passed, before the last: a line of its own, then the case's. */
		if (!ret && !r.failed && peer_ok && k + 1 < rounds)
			printf("[%s] %-4s %-*s %s: round %d of %d: %s\n", a->role, "..",
			       d->name_width, tc->name,
			       a->is_server ? d->server_part : d->client_part, k + 1, rounds,
			       r.detail);
	}
	if (ret) {
		fprintf(stderr, "%s: %s: lost the peer during case \"%s\": %s\n", d->prog, a->role,
			tc->name, oob_error(ret));
		return -1;
	}
	/* Which round stopped a case of several. */
	if (rounds > 1 && (r.failed || !peer_ok))
		snprintf(round, sizeof(round), "round %d of %d: ", k, rounds);
	printf("[%s] %-4s %-*s %s: %s%s; peer %s\n", a->role, r.failed ? "FAIL" : "ok",
	       d->name_width, tc->name, a->is_server ? d->server_part : d->client_part, round,
	       r.detail, peer_ok ? "ok" : "FAIL");
	return !r.failed && peer_ok;
}

/*
 * The whole of a lockstep test: command line, setup, the out-of-band
 * handshake, every case and the summary. Returns the exit status: 2 on a
 * usage error, 1 when setup or any case failed on either side.
 */
static inline int e2e_main(int argc, char **argv, const struct e2e_driver *d, struct e2e_ctx *c)
{
	struct e2e_case cases[E2E_MAX_CASES];
	struct e2e_args args = {.port = d->default_port};
	int fd = -1, ncases, failed = 0;

	if (!e2e_parse_args(argc, argv, &args)) {
		fprintf(stderr,
			"usage: %s server IFNAME [-p PORT] [-g GID_INDEX]\n"
			"       %s client IFNAME SERVER_IP [-p PORT] [-g GID_INDEX]\n",
			d->prog, d->prog);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ time(NULL));

	if (!d->setup(c, &args))
		fd = e2e_oob_open(args.server_ip, args.port, E2E_ACCEPT_TIMEOUT_MS,
				  E2E_CONNECT_RETRY_MS, E2E_OOB_TIMEOUT_MS);
	if (fd < 0 || e2e_exchange_hellos(d, c, args.is_server, fd)) {
		if (fd >= 0)
			close(fd);
		d->teardown(c);
		return 1;
	}
	ncases = d->build_cases(c, cases);
	for (int i = 0; i < ncases; i++) {
		int verdict = e2e_run_case(d, c, &args, fd, &cases[i], i);

		if (verdict < 0) {
			failed += ncases - i;
			break;
		}
		failed += !verdict;
	}
	printf("[%s] %s: %d of %d cases failed\n", args.role, failed ? "FAIL" : "PASS", failed,
	       ncases);
	close(fd);
	d->teardown(c);
	return failed ? 1 : 0;
}

/* File descriptors this process has open; -1 when /proc cannot say. */
static inline int count_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *entry;
	int n = 0;

	if (!dir)
		return -1;
	while ((entry = readdir(dir)))
		n += entry->d_name[0] != '.';
	closedir(dir);
	return n - 1; /* the one the count is read through */
}

#endif /* XROCE_E2E_COMMON_H */
