/* SPDX-License-Identifier: MIT */
/*
 * ud_e2e: UD queue pairs and address handles end to end between two
 * processes through the XDP program and AF_XDP, using only the public API
 * (and `xroce stats` for the engine's counters).
 *
 *   ud_e2e server IFNAME [-p PORT] [-g GID_INDEX]             the receiver
 *   ud_e2e client IFNAME SERVER_IP [-p PORT] [-g GID_INDEX]   the senders
 *
 * The server has one UD QP (the receiver); the client three: two with the
 * same Q_Key as the receiver and one with another, each with CQs of its
 * own. UD is unconnected: the out-of-band exchange only tells each side the
 * other's QPNs, Q_Key and MTU. The cases run in lockstep (e2e_common.h),
 * the server checking once the client is done: every datagram is checked
 * through its completion (status, opcode, byte_len = 40 + payload, wc_flags,
 * immediate data, qp_num, src_qp), its 40-byte GRH byte for byte (20 zero
 * bytes then the sender's IPv4 header, or the IPv6 header) and its payload,
 * with a canary around every receive area. Drops are checked against the
 * receiving interface's counters (drop_bad_qkey, in XDP;
 * engine_rx_no_recv, as `xroce stats IFNAME` prints them; the loader's path
 * is in the environment variable XROCE), which must move by exactly the
 * number of datagrams dropped. Each side prints its counters at the start
 * and how many drops it caused on its interface, for the script to check
 * the totals.
 */
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "e2e_common.h"

#define PROG "ud_e2e"
#define DEFAULT_PORT 18791

/* Every UD QP's Q_Key but the client's third one. No high bit: that one means "the QP's own". */
#define QKEY 0x1ee7c0deu
#define OTHER_QKEY (QKEY ^ 0x0f0f0f0fu)
#define WRONG_QKEY (QKEY ^ 0x00005a5au)
#define OWN_QKEY 0x80000000u
#define OWN_QKEY_ALL_BITS 0xffffffffu

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define CASE_TIMEOUT_MS 5000
#define PEER_STEP_TIMEOUT_MS 30000
/* How long "no further completion" is watched for. */
#define QUIET_WAIT_MS 300
/* How long a counter may take to show a drop, and the pause between reads. */
#define COUNTER_TIMEOUT_MS 5000
#define COUNTER_POLL_MS 10
#define COUNTER_MAX_READS (COUNTER_TIMEOUT_MS / COUNTER_POLL_MS + 1)
/* How long `xroce stats` may take, and the most of its output read. */
#define STATS_TIMEOUT_MS 5000
#define STATS_MAX_OUTPUT 8192

/* Every area is filled with this byte first; a write outside a datagram shows. */
#define CANARY 0xc5
#define CANARY_LEN 64

/* Areas of each side's buffer: each holds a GRH, a datagram of 4096 bytes and canaries. */
#define AREA_SIZE 8192u
#define AREAS 8
#define BUF_SIZE (AREAS * AREA_SIZE)
/* The client's areas for the replies of the two-sender case. */
#define REPLY_AREA 4

#define IMM_BASE 0x1a2b3c00u

#define QP_WR 32
#define CQ_ENTRIES 64
#define MAX_SGE 2
#define CLIENT_QPS 3

/* The short receive case: a list one byte short, split before the end of the GRH. */
#define SHORT_SIZE 100
#define SHORT_FIRST_SGE 24

enum case_kind {
	CASE_SIZE, /* param: with immediate */
	CASE_TWO_SENDERS,
	CASE_BAD_QKEY,
	CASE_OWN_QKEY,
	CASE_OVERSIZED,
	CASE_SHORT_RECV,
	CASE_NO_RECV,
};

/* Magic, then 3 QPNs (the server's one, then zeros), Q_Key, MTU enum, then the GID. */
#define HELLO_MAGIC "XRUDE2E1"
#define HELLO_WORDS 5

struct ud_qp {
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_qp *qp;
	uint32_t qkey;
};

struct hello {
	uint32_t qpn[CLIENT_QPS];
	uint32_t qkey;
	uint32_t mtu_enum;
	union xr_gid gid;
};

/* The engine counters a case looks at. */
struct counts {
	uint64_t rx_frames, tx_frames, rx_bad_qkey, rx_no_recv;
};

struct e2e_ctx {
	const char *role;
	const char *ifname;
	bool is_server;
	struct e2e_port port;
	uint8_t *buf;
	struct xr_mr *mr;
	/* Server: qp[0] is the receiver. Client: the three senders. */
	struct ud_qp qp[CLIENT_QPS];
	int nqps;
	/*
	 * Server: QPs created before the receiver and never used, so that its
	 * QPN is none of the client's (both number from the same base) and a
	 * src_qp that names the wrong QP shows.
	 */
	struct xr_cq *spacer_cq;
	struct xr_qp *spacer[CLIENT_QPS];
	struct xr_ah *ah; /* client: to the server */
	uint32_t mtu;
	struct hello peer;
	struct counts before; /* a case's counters before the client acts */
	struct counts start;  /* this side's counters after setup */
	/* Datagrams this side's cases had its engine drop, by reason. */
	uint64_t dropped_bad_qkey, dropped_no_recv;
};

static uint8_t *area(struct e2e_ctx *c, int n)
{
	return c->buf + (size_t)n * AREA_SIZE;
}

static ssize_t canary_mismatch(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != CANARY)
			return (ssize_t)i;
	return -1;
}

static const char *gid_text(const union xr_gid *gid, char *text, size_t len)
{
	return inet_ntop(AF_INET6, gid->raw, text, (socklen_t)len);
}

/* ---- the engine's counters, through `xroce stats` ----------------------------- */

/* Runs "$XROCE stats ifname" into out (NUL-terminated); 0, or -1 with why. */
static int run_stats(const char *ifname, char *out, size_t size, const char **why)
{
	const char *xroce = getenv("XROCE");
	char *argv[] = {(char *)xroce, "stats", (char *)ifname, NULL};
	int64_t deadline = tool_now_ms() + STATS_TIMEOUT_MS;
	posix_spawn_file_actions_t fa;
	int pipefd[2], status, err;
	size_t used = 0;
	pid_t pid;

	if (!xroce || !*xroce) {
		*why = "XROCE (the loader's path) is not set";
		return -1;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		*why = strerror(errno);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	err = posix_spawn(&pid, xroce, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (err) {
		close(pipefd[0]);
		*why = strerror(err);
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (oob_wait_fd(pipefd[0], POLLIN, deadline)) {
			*why = "xroce stats did not finish in time";
			kill(pid, SIGKILL);
			break;
		}
		n = read(pipefd[0], out + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == size - 1)
			break;
	}
	out[used] = '\0';
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!*why)
			*why = "xroce stats failed";
		return -1;
	}
	return *why ? -1 : 0;
}

static bool stats_value(const char *text, const char *name, uint64_t *value)
{
	size_t len = strlen(name);

	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');

		if (!strncmp(line, name, len) && line[len] == ' ') {
			*value = strtoull(line + len, NULL, 10);
			return true;
		}
		if (!end)
			break;
		line = end + 1;
	}
	return false;
}

/* This side's engine counters; false after reporting why not. */
static bool read_counts(struct e2e_ctx *c, struct counts *k, struct report *r)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
	    {"engine_rx_frames", offsetof(struct counts, rx_frames)},
	    {"engine_tx_frames", offsetof(struct counts, tx_frames)},
	    {"drop_bad_qkey", offsetof(struct counts, rx_bad_qkey)}, /* XDP drops them */
	    {"engine_rx_no_recv", offsetof(struct counts, rx_no_recv)},
	};
	char text[STATS_MAX_OUTPUT];
	const char *why = NULL;

	if (run_stats(c->ifname, text, sizeof(text), &why)) {
		report_fail(r, "xroce stats %s: %s", c->ifname, why);
		return false;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!stats_value(text, fields[i].name,
				 (uint64_t *)((char *)k + fields[i].offset))) {
			report_fail(r, "xroce stats %s prints no %s", c->ifname, fields[i].name);
			return false;
		}
	return true;
}

/*
 * Waits (bounded) until the counter at offset has moved by want since
 * c->before, watches for quiet_ms that no completion arrives on cq, and
 * then checks that it moved by exactly want, and that the other drop
 * counter did not move; after into *now.
 */
static bool expect_drops(struct e2e_ctx *c, size_t offset, const char *name, uint64_t want,
			 struct xr_cq *cq, struct counts *now, struct report *r)
{
	int64_t deadline = tool_now_ms() + COUNTER_TIMEOUT_MS;
	size_t other = offset == offsetof(struct counts, rx_bad_qkey)
			   ? offsetof(struct counts, rx_no_recv)
			   : offsetof(struct counts, rx_bad_qkey);
	uint64_t b, v, ob, ov;

	memcpy(&b, (char *)&c->before + offset, sizeof(b));
	memcpy(&ob, (char *)&c->before + other, sizeof(ob));
	for (int reads = 0; reads < COUNTER_MAX_READS; reads++) {
		if (!read_counts(c, now, r))
			return false;
		memcpy(&v, (char *)now + offset, sizeof(v));
		if (v - b >= want || tool_now_ms() >= deadline)
			break;
		nanosleep(&(struct timespec){.tv_nsec = COUNTER_POLL_MS * 1000000L}, NULL);
	}
	if (!expect_quiet(cq, QUIET_WAIT_MS, r, "receive") || !read_counts(c, now, r))
		return false;
	memcpy(&v, (char *)now + offset, sizeof(v));
	memcpy(&ov, (char *)now + other, sizeof(ov));
	if (v - b != want) {
		report_fail(r, "%s moved by %" PRIu64 ", expected %" PRIu64, name, v - b, want);
		return false;
	}
	if (ov != ob) {
		report_fail(r, "%s moved by %" PRIu64 ", expected 0",
			    offset == offsetof(struct counts, rx_bad_qkey) ? "engine_rx_no_recv"
									   : "drop_bad_qkey",
			    ov - ob);
		return false;
	}
	return true;
}

static bool expect_bad_qkey(struct e2e_ctx *c, uint64_t want, struct report *r)
{
	struct counts now;

	if (!expect_drops(c, offsetof(struct counts, rx_bad_qkey), "drop_bad_qkey", want,
			  c->qp[0].recv_cq, &now, r))
		return false;
	c->dropped_bad_qkey += want;
	return true;
}

static bool expect_no_recv(struct e2e_ctx *c, uint64_t want, struct report *r)
{
	struct counts now;

	if (!expect_drops(c, offsetof(struct counts, rx_no_recv), "engine_rx_no_recv", want,
			  c->qp[0].recv_cq, &now, r))
		return false;
	c->dropped_no_recv += want;
	return true;
}

/* ---- the GRH ------------------------------------------------------------------ */

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t ipv4_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The GRH area of a datagram of len payload bytes from sgid to dgid: over
 * IPv4, 20 zero bytes and the IPv4 header xroce sends (TOS 0, DF, TTL 64,
 * UDP; its identification is the one received, got[24..25], which the
 * checksum then covers); over IPv6, the IPv6 header (traffic class and flow
 * label 0, as the address handles ask, hop limit 64).
 */
static void expected_grh(uint8_t *grh, const uint8_t *got, const union xr_gid *sgid,
			 const union xr_gid *dgid, uint32_t len, bool imm)
{
	/* UDP, BTH, DETH, [ImmDt], payload, pad, ICRC */
	uint32_t l4 = 8 + 12 + 8 + (imm ? 4 : 0) + len + (4 - len % 4) % 4 + 4;

	memset(grh, 0, XR_GRH_SIZE);
	if (gid_is_ipv4_mapped(dgid)) {
		uint8_t *ip = grh + 20;

		ip[0] = 0x45;
		put16(ip + 2, 20 + l4);
		memcpy(ip + 4, got + 24, 2);
		put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, &sgid->raw[12], 4);
		memcpy(ip + 16, &dgid->raw[12], 4);
		put16(ip + 10, ipv4_checksum(ip));
	} else {
		grh[0] = 0x60;
		put16(grh + 4, l4);
		grh[6] = 17;
		grh[7] = 64;
		memcpy(grh + 8, sgid->raw, 16);
		memcpy(grh + 24, dgid->raw, 16);
	}
}

static bool check_grh(const uint8_t *got, const union xr_gid *sgid, const union xr_gid *dgid,
		      uint32_t len, bool imm, struct report *r)
{
	uint8_t want[XR_GRH_SIZE];

	expected_grh(want, got, sgid, dgid, len, imm);
	for (int i = 0; i < XR_GRH_SIZE; i++)
		if (got[i] != want[i]) {
			report_fail(r, "GRH byte %d is 0x%02x, expected 0x%02x (%s)", i, got[i],
				    want[i], gid_is_ipv4_mapped(dgid) ? "IPv4" : "IPv6");
			return false;
		}
	return true;
}

/* ---- posting and completions ----------------------------------------------------- */

static bool wait_one(struct xr_cq *cq, struct xr_wc *wc, struct report *r, const char *what)
{
	if (poll_cq_until(cq, wc, 1, 1, tool_now_ms() + CASE_TIMEOUT_MS) == 1)
		return true;
	report_fail(r, "no %s completion within %d s", what, CASE_TIMEOUT_MS / 1000);
	return false;
}

static bool post_recv(struct xr_qp *qp, uint64_t wr_id, struct xr_sge *sges, int num_sge,
		      struct report *r)
{
	struct xr_recv_wr wr = {.wr_id = wr_id, .sg_list = sges, .num_sge = num_sge};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(qp, &wr, &bad);

	if (ret)
		report_fail(r, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

/* A receive of area n (canary everywhere), large enough for GRH + MTU + 1. */
static bool post_area_recv(struct e2e_ctx *c, struct ud_qp *u, int idx, int n, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr, area(c, n), XR_GRH_SIZE + c->mtu + 1);

	memset(area(c, n), CANARY, AREA_SIZE);
	return post_recv(u->qp, case_wr_id(idx, (uint32_t)n), &sge, 1, r);
}

/* A signaled UD send work request through ah to QP dqpn. */
static struct xr_send_wr ud_wr(uint64_t wr_id, struct xr_sge *sges, int nsge, bool imm,
			       uint32_t imm_host, struct xr_ah *ah, uint32_t dqpn, uint32_t qkey)
{
	struct xr_send_wr wr = {
	    .wr_id = wr_id,
	    .sg_list = sges,
	    .num_sge = nsge,
	    .opcode = imm ? XR_WR_SEND_WITH_IMM : XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(imm_host),
	};

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	return wr;
}

/*
 * Posts datagram n of a case from u: len bytes of pattern seed from area n
 * (which must stay untouched until it completed), through ah to dqpn.
 */
static bool post_dgram(struct e2e_ctx *c, struct ud_qp *u, int idx, int n, uint32_t len,
		       uint32_t seed, bool imm, struct xr_ah *ah, uint32_t dqpn, uint32_t qkey,
		       struct report *r)
{
	struct xr_sge sge = sge_of(c->mr, area(c, n), len);
	struct xr_send_wr wr = ud_wr(case_wr_id(idx, (uint32_t)n), &sge, len ? 1 : 0, imm,
				     IMM_BASE + (uint32_t)n, ah, dqpn, qkey);

	fill_pattern(area(c, n), seed, 0, len);
	return e2e_post_send(u->qp, &wr, r);
}

/* The client's datagram n to the server's QP. */
static bool client_send(struct e2e_ctx *c, int k, int idx, int n, uint32_t len, uint32_t seed,
			bool imm, uint32_t qkey, struct report *r)
{
	return post_dgram(c, &c->qp[k], idx, n, len, seed, imm, c->ah, c->peer.qpn[0], qkey, r);
}

/* Waits for the send completions of datagrams first..first+count-1 of u, in order, then quiet. */
static bool wait_sends(struct ud_qp *u, int idx, int first, int count, struct report *r)
{
	for (int i = 0; i < count; i++) {
		struct xr_wc wc;

		if (!wait_one(u->send_cq, &wc, r, "send") ||
		    !check_wc(&wc, case_wr_id(idx, (uint32_t)(first + i)), XR_WC_SUCCESS,
			      XR_WC_SEND, r))
			return false;
		if (wc.qp_num != u->qp->qp_num) {
			report_fail(r, "send completion's qp_num 0x%x, expected 0x%x", wc.qp_num,
				    u->qp->qp_num);
			return false;
		}
	}
	return expect_quiet(u->send_cq, 0, r, "send");
}

/* What a receive completion and its data must be. */
struct expect {
	uint64_t wr_id;
	uint32_t qp_num, src_qp;
	uint32_t len, seed;
	bool imm;
	uint32_t imm_host;
	const union xr_gid *sgid, *dgid;
};

/* Checks wc and the GRH + payload at data against e. */
static bool check_dgram(const struct xr_wc *wc, const uint8_t *data, const struct expect *e,
			struct report *r)
{
	unsigned int flags = XR_WC_GRH | (e->imm ? XR_WC_WITH_IMM : 0);
	ssize_t bad;

	if (!check_wc(wc, e->wr_id, XR_WC_SUCCESS, XR_WC_RECV, r))
		return false;
	if (wc->byte_len != XR_GRH_SIZE + e->len) {
		report_fail(r, "byte_len %u, expected %u (GRH + %u)", wc->byte_len,
			    XR_GRH_SIZE + e->len, e->len);
		return false;
	}
	if (wc->qp_num != e->qp_num || wc->src_qp != e->src_qp) {
		report_fail(r, "qp_num 0x%x src_qp 0x%x, expected 0x%x and 0x%x", wc->qp_num,
			    wc->src_qp, e->qp_num, e->src_qp);
		return false;
	}
	if (wc->wc_flags != flags) {
		report_fail(r, "wc_flags 0x%x, expected 0x%x", wc->wc_flags, flags);
		return false;
	}
	if (e->imm && wc->imm_data != htonl(e->imm_host)) {
		report_fail(r, "imm_data 0x%08x (host order), expected 0x%08x", ntohl(wc->imm_data),
			    e->imm_host);
		return false;
	}
	if (!check_grh(data, e->sgid, e->dgid, e->len, e->imm, r))
		return false;
	bad = pattern_mismatch(data + XR_GRH_SIZE, e->seed, 0, e->len);
	if (bad >= 0) {
		report_fail(r, "payload byte %zd is 0x%02x, expected 0x%02x", bad,
			    data[XR_GRH_SIZE + bad], pattern_byte(e->seed, (size_t)bad));
		return false;
	}
	return true;
}

/* Checks a datagram received into area n, and that the rest of the area is canary. */
static bool check_area(struct e2e_ctx *c, int n, const struct xr_wc *wc, const struct expect *e,
		       struct report *r)
{
	const uint8_t *a = area(c, n);
	size_t used = XR_GRH_SIZE + e->len;
	ssize_t bad;

	if (!check_dgram(wc, a, e, r))
		return false;
	bad = canary_mismatch(a + used, AREA_SIZE - used);
	if (bad >= 0) {
		report_fail(r, "area byte %zu, past the datagram, was overwritten (0x%02x)",
			    used + (size_t)bad, a[used + bad]);
		return false;
	}
	return true;
}

/* What the server expects of the client's datagram n from its QP k. */
static struct expect from_client(struct e2e_ctx *c, int idx, int n, int k, uint32_t len,
				 uint32_t seed, bool imm)
{
	return (struct expect){.wr_id = case_wr_id(idx, (uint32_t)n),
			       .qp_num = c->qp[0].qp->qp_num,
			       .src_qp = c->peer.qpn[k],
			       .len = len,
			       .seed = seed,
			       .imm = imm,
			       .imm_host = IMM_BASE + (uint32_t)n,
			       .sgid = &c->peer.gid,
			       .dgid = &c->port.gid};
}

/* Server: the one receive of area n completes with the client's datagram. */
static bool receive_one(struct e2e_ctx *c, int n, const struct expect *e, struct report *r)
{
	struct xr_wc wc;

	return wait_one(c->qp[0].recv_cq, &wc, r, "receive") && check_area(c, n, &wc, e, r) &&
	       expect_quiet(c->qp[0].recv_cq, 0, r, "receive");
}

static bool prepare_nothing(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			    struct e2e_target *t, struct report *r)
{
	(void)c;
	(void)tc;
	(void)idx;
	(void)t;
	(void)r;
	return true;
}

/* ---- case: one datagram of a size, with or without immediate ------------------------ */

static bool size_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 struct e2e_target *t, struct report *r)
{
	(void)tc;
	(void)t;
	return post_area_recv(c, &c->qp[0], idx, 0, r);
}

static void size_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		     const struct e2e_target *t, struct report *r)
{
	(void)t;
	if (client_send(c, 0, idx, 0, tc->size, tc->seed, tc->param, c->peer.qkey, r) &&
	    wait_sends(&c->qp[0], idx, 0, 1, r))
		report_ok(r, "SEND completed with success, nothing else");
}

static void size_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	struct expect e = from_client(c, idx, 0, 0, tc->size, tc->seed, tc->param);

	if (receive_one(c, 0, &e, r))
		report_ok(r, "byte_len %u, GRH%s, src_qp 0x%06x, GRH, payload and canary exact",
			  XR_GRH_SIZE + tc->size, tc->param ? ", WITH_IMM" : "", e.src_qp);
}

/* ---- case: two sender QPs to one receiver, and replies through AHs from the completions -- */

static uint32_t two_size(int k)
{
	return 200 + 133 * (uint32_t)k;
}

static uint32_t reply_size(int k)
{
	return 100 + 57 * (uint32_t)k;
}

static bool two_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct e2e_target *t,
			struct report *r)
{
	if (tc->round == 1)
		return prepare_nothing(c, tc, idx, t, r);
	return post_area_recv(c, &c->qp[0], idx, 0, r) && post_area_recv(c, &c->qp[0], idx, 1, r);
}

/* Round 0: receives for the replies first, then one datagram from each of QPs 0 and 1. */
static void two_send(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	for (int k = 0; k < 2; k++)
		if (!post_area_recv(c, &c->qp[k], idx, REPLY_AREA + k, r))
			return;
	for (int k = 0; k < 2; k++)
		if (!client_send(c, k, idx, k, two_size(k), tc->seed + (uint32_t)k, false,
				 c->peer.qkey, r))
			return;
	for (int k = 0; k < 2; k++)
		if (!wait_sends(&c->qp[k], idx, k, 1, r))
			return;
	report_ok(r, "QPs 0x%06x and 0x%06x sent, one SEND completion each", c->qp[0].qp->qp_num,
		  c->qp[1].qp->qp_num);
}

/* Round 1: each sender QP got the reply meant for it, from the server's QP. */
static void two_check_replies(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      struct report *r)
{
	for (int k = 0; k < 2; k++) {
		int n = REPLY_AREA + k;
		struct expect e = {.wr_id = case_wr_id(idx, (uint32_t)n),
				   .qp_num = c->qp[k].qp->qp_num,
				   .src_qp = c->peer.qpn[0],
				   .len = reply_size(k),
				   .seed = tc->seed + 0x100u + (uint32_t)k,
				   .sgid = &c->peer.gid,
				   .dgid = &c->port.gid};
		struct xr_wc wc;

		if (!wait_one(c->qp[k].recv_cq, &wc, r, "reply") || !check_area(c, n, &wc, &e, r) ||
		    !expect_quiet(c->qp[k].recv_cq, 0, r, "reply"))
			return;
	}
	report_ok(r, "each sender QP got its own reply (%u, %u B) from 0x%06x, GRH exact",
		  reply_size(0), reply_size(1), c->peer.qpn[0]);
}

static void two_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		    const struct e2e_target *t, struct report *r)
{
	(void)t;
	if (tc->round == 0)
		two_send(c, tc, idx, r);
	else
		two_check_replies(c, tc, idx, r);
}

/* The address of wc's sender must be the client's GID, answered from our GID. */
static bool check_ah_attr(struct e2e_ctx *c, const struct xr_wc *wc, const struct xr_grh *grh,
			  struct report *r)
{
	struct xr_ah_attr attr;
	char got[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];
	int ret = xr_init_ah_from_wc(c->port.dev, 1, wc, grh, &attr);

	if (ret) {
		report_fail(r, "xr_init_ah_from_wc: %s", strerror(-ret));
		return false;
	}
	if (!attr.is_global || attr.port_num != 1 ||
	    memcmp(attr.grh.dgid.raw, c->peer.gid.raw, 16) ||
	    attr.grh.sgid_index != c->port.gid_index) {
		report_fail(r,
			    "xr_init_ah_from_wc: is_global %u, port %u, dgid %s, sgid_index %u; "
			    "expected 1, 1, %s, %d",
			    attr.is_global, attr.port_num,
			    gid_text(&attr.grh.dgid, got, sizeof(got)), attr.grh.sgid_index,
			    gid_text(&c->peer.gid, want, sizeof(want)), c->port.gid_index);
		return false;
	}
	return true;
}

/* Round 0: both datagrams, each from the QP it names; a reply to each through an AH from it. */
static void two_receive_and_reply(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
				  struct report *r)
{
	struct xr_ah *ahs[2] = {NULL, NULL};
	struct xr_wc wc[2];
	bool seen[2] = {false, false};
	int got = poll_cq_until(c->qp[0].recv_cq, wc, 2, 2, tool_now_ms() + CASE_TIMEOUT_MS);
	int replies = 0;

	if (got < 2) {
		report_fail(r, "%d of 2 receives completed within %d s", got,
			    CASE_TIMEOUT_MS / 1000);
		return;
	}
	for (int i = 0; i < 2; i++) {
		int n = (int)(wc[i].wr_id & 0xffffffffu), k;
		struct expect e;

		/* Which of the client's QPs it names: the content must be that QP's. */
		for (k = 0; k < 2 && wc[i].src_qp != c->peer.qpn[k]; k++)
			;
		if (wc[i].status != XR_WC_SUCCESS || k == 2 || seen[k] || n < 0 || n > 1) {
			report_fail(r,
				    "receive wr_id 0x%" PRIx64 " \"%s\" src_qp 0x%x: expected one "
				    "from each of 0x%x and 0x%x",
				    wc[i].wr_id, xr_wc_status_str(wc[i].status), wc[i].src_qp,
				    c->peer.qpn[0], c->peer.qpn[1]);
			goto out;
		}
		seen[k] = true;
		e = from_client(c, idx, n, k, two_size(k), tc->seed + (uint32_t)k, false);
		if (!check_area(c, n, &wc[i], &e, r) ||
		    !check_ah_attr(c, &wc[i], (const struct xr_grh *)area(c, n), r))
			goto out;
		ahs[k] =
		    xr_create_ah_from_wc(c->port.pd, &wc[i], (const struct xr_grh *)area(c, n), 1);
		if (!ahs[k]) {
			report_fail(r, "xr_create_ah_from_wc: %s", strerror(errno));
			goto out;
		}
		/* The reply to QP k, from area 2 + k, to the QP the completion names. */
		if (!post_dgram(c, &c->qp[0], idx, 2 + k, reply_size(k),
				tc->seed + 0x100u + (uint32_t)k, false, ahs[k], wc[i].src_qp,
				c->peer.qkey, r))
			goto out;
		replies++;
	}
	if (!expect_quiet(c->qp[0].recv_cq, 0, r, "receive"))
		goto out;
	for (int i = 0; i < replies; i++) {
		struct xr_wc s;

		if (!wait_one(c->qp[0].send_cq, &s, r, "reply send"))
			goto out;
		if (s.status != XR_WC_SUCCESS || s.opcode != XR_WC_SEND ||
		    (s.wr_id != case_wr_id(idx, 2) && s.wr_id != case_wr_id(idx, 3))) {
			report_fail(r, "reply send completion wr_id 0x%" PRIx64 " \"%s\" opcode %d",
				    s.wr_id, xr_wc_status_str(s.status), s.opcode);
			goto out;
		}
	}
	if (expect_quiet(c->qp[0].send_cq, 0, r, "send"))
		report_ok(r,
			  "one datagram from each of 0x%06x and 0x%06x, src_qp, GRH and the "
			  "sender's GID (xr_init_ah_from_wc) right; replied through "
			  "xr_create_ah_from_wc",
			  c->peer.qpn[0], c->peer.qpn[1]);
out:
	for (int k = 0; k < 2; k++)
		if (ahs[k])
			xr_destroy_ah(ahs[k]);
}

static void two_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	if (tc->round == 0)
		two_receive_and_reply(c, tc, idx, r);
	else
		report_ok(r, "the client checks the replies");
}

/* ---- case: a wrong Q_Key ------------------------------------------------------------ */

#define BAD_QKEY_SENDS 3

static bool bad_qkey_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct e2e_target *t, struct report *r)
{
	/* Round 1: the receive posted in round 0 is still there. */
	if (tc->round == 1)
		return prepare_nothing(c, tc, idx, t, r);
	return post_area_recv(c, &c->qp[0], idx, 0, r) && read_counts(c, &c->before, r);
}

static void bad_qkey_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	(void)t;
	if (tc->round == 1) {
		if (client_send(c, 0, idx, 0, tc->size, tc->seed + 9, false, c->peer.qkey, r) &&
		    wait_sends(&c->qp[0], idx, 0, 1, r))
			report_ok(r, "a datagram with the right Q_Key sent");
		return;
	}
	for (int n = 0; n < BAD_QKEY_SENDS; n++)
		if (!client_send(c, 0, idx, n, tc->size, tc->seed + (uint32_t)n, false, WRONG_QKEY,
				 r))
			return;
	if (wait_sends(&c->qp[0], idx, 0, BAD_QKEY_SENDS, r))
		report_ok(r, "%d datagrams with Q_Key 0x%08x: each SEND completed with success",
			  BAD_QKEY_SENDS, WRONG_QKEY);
}

static void bad_qkey_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	ssize_t bad;

	if (tc->round == 1) {
		struct expect e = from_client(c, idx, 0, 0, tc->size, tc->seed + 9, false);
		struct counts now;

		if (!receive_one(c, 0, &e, r) || !read_counts(c, &now, r))
			return;
		if (now.rx_bad_qkey != c->before.rx_bad_qkey + BAD_QKEY_SENDS)
			return report_fail(r, "drop_bad_qkey moved again, to +%" PRIu64,
					   now.rx_bad_qkey - c->before.rx_bad_qkey);
		report_ok(r, "the receive left posted took the next datagram, with the right "
			     "Q_Key");
		return;
	}
	if (!expect_bad_qkey(c, BAD_QKEY_SENDS, r))
		return;
	bad = canary_mismatch(area(c, 0), AREA_SIZE);
	if (bad >= 0)
		return report_fail(r, "the posted receive's byte %zd was written", bad);
	report_ok(r, "no completion, receive area untouched, drop_bad_qkey +%d", BAD_QKEY_SENDS);
}

/* ---- case: Q_Keys with the high bit set: the sending QP's own ------------------------- */

static bool own_qkey_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			     struct e2e_target *t, struct report *r)
{
	switch (tc->round) {
	case 0:
		return post_area_recv(c, &c->qp[0], idx, 0, r) &&
		       post_area_recv(c, &c->qp[0], idx, 1, r);
	case 1:
		return post_area_recv(c, &c->qp[0], idx, 2, r) && read_counts(c, &c->before, r);
	default:
		return prepare_nothing(c, tc, idx, t, r);
	}
}

static void own_qkey_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			 const struct e2e_target *t, struct report *r)
{
	(void)t;
	switch (tc->round) {
	case 0:
		/* QP 0's own Q_Key is the receiver's. */
		if (client_send(c, 0, idx, 0, tc->size, tc->seed, false, OWN_QKEY, r) &&
		    client_send(c, 0, idx, 1, tc->size + 1, tc->seed + 1, true, OWN_QKEY_ALL_BITS,
				r) &&
		    wait_sends(&c->qp[0], idx, 0, 2, r))
			report_ok(r, "QP 0x%06x (Q_Key 0x%08x) sent with 0x%08x and 0x%08x",
				  c->qp[0].qp->qp_num, c->qp[0].qkey, OWN_QKEY, OWN_QKEY_ALL_BITS);
		break;
	case 1:
		/* QP 2's is not. */
		if (client_send(c, 2, idx, 2, tc->size + 2, tc->seed + 2, false, OWN_QKEY, r) &&
		    wait_sends(&c->qp[2], idx, 2, 1, r))
			report_ok(r, "QP 0x%06x (Q_Key 0x%08x) sent with 0x%08x",
				  c->qp[2].qp->qp_num, c->qp[2].qkey, OWN_QKEY);
		break;
	default:
		/* ... and it reaches the receiver with the receiver's Q_Key given. */
		if (client_send(c, 2, idx, 3, tc->size + 3, tc->seed + 3, false, c->peer.qkey, r) &&
		    wait_sends(&c->qp[2], idx, 3, 1, r))
			report_ok(r, "QP 0x%06x sent with Q_Key 0x%08x", c->qp[2].qp->qp_num,
				  c->peer.qkey);
		break;
	}
}

static void own_qkey_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	switch (tc->round) {
	case 0: {
		struct xr_wc wc[2];
		int got =
		    poll_cq_until(c->qp[0].recv_cq, wc, 2, 2, tool_now_ms() + CASE_TIMEOUT_MS);

		if (got < 2)
			return report_fail(r, "%d of 2 receives completed within %d s", got,
					   CASE_TIMEOUT_MS / 1000);
		for (int n = 0; n < 2; n++) {
			struct expect e = from_client(c, idx, n, 0, tc->size + (uint32_t)n,
						      tc->seed + (uint32_t)n, n == 1);

			if (!check_area(c, n, &wc[n], &e, r))
				return;
		}
		if (expect_quiet(c->qp[0].recv_cq, 0, r, "receive"))
			report_ok(r, "both delivered in order (the sender's own Q_Key is ours), "
				     "exact");
		break;
	}
	case 1: {
		ssize_t bad;

		if (!expect_bad_qkey(c, 1, r))
			return;
		bad = canary_mismatch(area(c, 2), AREA_SIZE);
		if (bad >= 0)
			return report_fail(r, "the posted receive's byte %zd was written", bad);
		report_ok(r,
			  "dropped (that QP's own Q_Key is not ours), drop_bad_qkey +1 (in XDP)");
		break;
	}
	default: {
		struct expect e = from_client(c, idx, 2, 2, tc->size + 3, tc->seed + 3, false);

		if (receive_one(c, 2, &e, r))
			report_ok(r, "the receive left posted took it: from 0x%06x, exact",
				  e.src_qp);
		break;
	}
	}
}

/* ---- case: a datagram larger than the MTU is refused at post ----------------------------- */

static bool oversized_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			      struct e2e_target *t, struct report *r)
{
	if (tc->round == 1)
		return prepare_nothing(c, tc, idx, t, r);
	/* Room for GRH + MTU + 1: an oversized datagram that was sent would land. */
	return post_area_recv(c, &c->qp[0], idx, 0, r) && read_counts(c, &c->before, r);
}

/* Posts one SEND of sges; it must fail with -EINVAL, naming it as bad_wr. */
static bool expect_refused(struct e2e_ctx *c, int idx, struct xr_sge *sges, int nsge,
			   const char *what, struct report *r)
{
	struct xr_send_wr wr = ud_wr(case_wr_id(idx, 0x100), sges, nsge, false, 0, c->ah,
				     c->peer.qpn[0], c->peer.qkey);
	struct xr_send_wr *bad = NULL;
	int ret = xr_post_send(c->qp[0].qp, &wr, &bad);

	if (ret != -EINVAL || bad != &wr) {
		report_fail(r, "%s: xr_post_send returned %d (%s), bad_wr %s; expected -EINVAL",
			    what, ret, ret ? strerror(-ret) : "success",
			    bad == &wr ? "the WR" : "other");
		return false;
	}
	return true;
}

static void oversized_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  const struct e2e_target *t, struct report *r)
{
	uint32_t half = c->mtu / 2;
	struct xr_sge one = sge_of(c->mr, area(c, 0), c->mtu + 1);
	struct xr_sge two[2] = {sge_of(c->mr, area(c, 0), half),
				sge_of(c->mr, area(c, 1), c->mtu + 1 - half)};
	struct counts before, after;

	(void)t;
	if (tc->round == 1) {
		/* The same QP still sends: exactly MTU bytes, gathered from two SGEs. */
		struct xr_sge sges[2] = {sge_of(c->mr, area(c, 0), half),
					 sge_of(c->mr, area(c, 0) + half, c->mtu - half)};
		struct xr_send_wr wr = ud_wr(case_wr_id(idx, 0), sges, 2, false, 0, c->ah,
					     c->peer.qpn[0], c->peer.qkey);

		fill_pattern(area(c, 0), tc->seed + 1, 0, c->mtu);
		if (e2e_post_send(c->qp[0].qp, &wr, r) && wait_sends(&c->qp[0], idx, 0, 1, r))
			report_ok(r, "a 2-SGE SEND of MTU bytes (%u) completed", c->mtu);
		return;
	}
	fill_pattern(area(c, 0), tc->seed, 0, c->mtu + 1);
	fill_pattern(area(c, 1), tc->seed, half, c->mtu + 1 - half);
	if (!read_counts(c, &before, r) ||
	    !expect_refused(c, idx, &one, 1, "1 SGE of MTU+1 bytes", r) ||
	    !expect_refused(c, idx, two, 2, "2 SGEs of MTU+1 bytes in all", r) ||
	    !expect_quiet(c->qp[0].send_cq, QUIET_WAIT_MS, r, "send") || !read_counts(c, &after, r))
		return;
	if (after.tx_frames != before.tx_frames)
		return report_fail(r, "engine_tx_frames moved by %" PRIu64 ", expected 0",
				   after.tx_frames - before.tx_frames);
	report_ok(r, "MTU+1 bytes (1 and 2 SGEs): -EINVAL, no completion, engine_tx_frames +0");
}

static void oversized_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	struct counts now;
	ssize_t bad;

	if (tc->round == 1) {
		struct expect e = from_client(c, idx, 0, 0, c->mtu, tc->seed + 1, false);

		if (receive_one(c, 0, &e, r))
			report_ok(r, "the receive left posted took the MTU-byte datagram, exact");
		return;
	}
	if (!expect_quiet(c->qp[0].recv_cq, QUIET_WAIT_MS, r, "receive") ||
	    !read_counts(c, &now, r))
		return;
	if (now.rx_frames != c->before.rx_frames)
		return report_fail(r, "engine_rx_frames moved by %" PRIu64 ", expected 0",
				   now.rx_frames - c->before.rx_frames);
	bad = canary_mismatch(area(c, 0), AREA_SIZE);
	if (bad >= 0)
		return report_fail(r, "the posted receive's byte %zd was written", bad);
	report_ok(r, "nothing arrived: no completion, engine_rx_frames +0, area untouched");
}

/* ---- case: a receive list too small for GRH + payload ------------------------------------ */

/*
 * Round 0's receive is GRH + SHORT_SIZE - 1 bytes, round 1's exactly
 * GRH + SHORT_SIZE, both in two SGEs of area n: the first SHORT_FIRST_SGE
 * bytes (the GRH continues in the second), a canary gap, the rest.
 */
static void short_sges(struct e2e_ctx *c, int n, uint32_t total, struct xr_sge sges[2])
{
	sges[0] = sge_of(c->mr, area(c, n), SHORT_FIRST_SGE);
	sges[1] = sge_of(c->mr, area(c, n) + SHORT_FIRST_SGE + CANARY_LEN, total - SHORT_FIRST_SGE);
}

static bool short_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			  struct e2e_target *t, struct report *r)
{
	int n = tc->round;
	struct xr_sge sges[2];

	(void)t;
	memset(area(c, n), CANARY, AREA_SIZE);
	short_sges(c, n, XR_GRH_SIZE + tc->size - (n == 0), sges);
	return post_recv(c->qp[0].qp, case_wr_id(idx, (uint32_t)n), sges, 2, r);
}

static void short_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		      const struct e2e_target *t, struct report *r)
{
	int n = tc->round;

	(void)t;
	if (client_send(c, 0, idx, n, tc->size, tc->seed + (uint32_t)n, false, c->peer.qkey, r) &&
	    wait_sends(&c->qp[0], idx, n, 1, r))
		report_ok(r, "%u-byte SEND completed with success", tc->size);
}

static void short_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	uint8_t data[XR_GRH_SIZE + SHORT_SIZE];
	const uint8_t *a = area(c, tc->round);
	uint32_t total = XR_GRH_SIZE + tc->size;
	struct xr_qp_attr attr;
	struct xr_wc wc;
	ssize_t bad;

	if (!wait_one(c->qp[0].recv_cq, &wc, r, "receive"))
		return;
	if (tc->round == 0) {
		if (!check_wc(&wc, case_wr_id(idx, 0), XR_WC_LOC_LEN_ERR, XR_WC_RECV, r))
			return;
		if (wc.qp_num != c->qp[0].qp->qp_num)
			return report_fail(r, "qp_num 0x%x, expected 0x%x", wc.qp_num,
					   c->qp[0].qp->qp_num);
		bad = canary_mismatch(a + SHORT_FIRST_SGE, CANARY_LEN);
		if (bad >= 0)
			return report_fail(r, "the gap after the first SGE was written (byte %zd)",
					   bad);
		bad = canary_mismatch(
		    a + SHORT_FIRST_SGE + CANARY_LEN + total - 1 - SHORT_FIRST_SGE, CANARY_LEN);
		if (bad >= 0)
			return report_fail(r, "byte %zd past the second SGE was written", bad);
		if (!expect_quiet(c->qp[0].recv_cq, 0, r, "receive") ||
		    !e2e_query_state(c->qp[0].qp, &attr, r))
			return;
		if (attr.qp_state != XR_QPS_RTS)
			return report_fail(r, "QP in state %d after the length error, expected RTS",
					   attr.qp_state);
		report_ok(r, "%u-byte list for GRH + %u: \"%s\", canaries intact, QP still RTS",
			  total - 1, tc->size, xr_wc_status_str(wc.status));
		return;
	}
	/* Round 1: the GRH spans both SGEs; put the datagram together, then check it. */
	memcpy(data, a, SHORT_FIRST_SGE);
	memcpy(data + SHORT_FIRST_SGE, a + SHORT_FIRST_SGE + CANARY_LEN, total - SHORT_FIRST_SGE);
	{
		struct expect e = from_client(c, idx, 1, 0, tc->size, tc->seed + 1, false);

		if (!check_dgram(&wc, data, &e, r))
			return;
	}
	bad = canary_mismatch(a + SHORT_FIRST_SGE, CANARY_LEN);
	if (bad < 0)
		bad = canary_mismatch(a + SHORT_FIRST_SGE + CANARY_LEN + total - SHORT_FIRST_SGE,
				      CANARY_LEN);
	if (bad >= 0)
		return report_fail(r, "a canary next to the SGEs was written (byte %zd)", bad);
	if (expect_quiet(c->qp[0].recv_cq, 0, r, "receive"))
		report_ok(r, "the next receive, exactly GRH + %u in 2 SGEs (%d + %u): exact",
			  tc->size, SHORT_FIRST_SGE, total - SHORT_FIRST_SGE);
}

/* ---- case: no receive posted ------------------------------------------------------------ */

#define NO_RECV_SENDS 2

static bool no_recv_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			    struct e2e_target *t, struct report *r)
{
	(void)t;
	if (tc->round == 1)
		return post_area_recv(c, &c->qp[0], idx, 0, r);
	return read_counts(c, &c->before, r);
}

static void no_recv_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			const struct e2e_target *t, struct report *r)
{
	(void)t;
	if (tc->round == 1) {
		if (client_send(c, 0, idx, 0, tc->size + 7, tc->seed + 7, true, c->peer.qkey, r) &&
		    wait_sends(&c->qp[0], idx, 0, 1, r))
			report_ok(r, "one more datagram sent");
		return;
	}
	for (int n = 0; n < NO_RECV_SENDS; n++)
		if (!client_send(c, 0, idx, n, tc->size + (uint32_t)n, tc->seed + (uint32_t)n,
				 false, c->peer.qkey, r))
			return;
	if (wait_sends(&c->qp[0], idx, 0, NO_RECV_SENDS, r))
		report_ok(r, "%d SENDs completed with success", NO_RECV_SENDS);
}

static void no_recv_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	if (tc->round == 1) {
		struct expect e = from_client(c, idx, 0, 0, tc->size + 7, tc->seed + 7, true);
		struct counts now;

		if (!receive_one(c, 0, &e, r) || !read_counts(c, &now, r))
			return;
		if (now.rx_no_recv != c->before.rx_no_recv + NO_RECV_SENDS)
			return report_fail(r, "engine_rx_no_recv moved again, to +%" PRIu64,
					   now.rx_no_recv - c->before.rx_no_recv);
		report_ok(r, "a receive posted then takes the next datagram, not a dropped one");
		return;
	}
	if (expect_no_recv(c, NO_RECV_SENDS, r))
		report_ok(r, "dropped: no completion, engine_rx_no_recv +%d", NO_RECV_SENDS);
}

/* ---- the case table ---------------------------------------------------------------------- */

static const struct e2e_case_ops case_ops[] = {
    [CASE_SIZE] = {size_prepare, size_act, size_check},
    [CASE_TWO_SENDERS] = {two_prepare, two_act, two_check},
    [CASE_BAD_QKEY] = {bad_qkey_prepare, bad_qkey_act, bad_qkey_check},
    [CASE_OWN_QKEY] = {own_qkey_prepare, own_qkey_act, own_qkey_check},
    [CASE_OVERSIZED] = {oversized_prepare, oversized_act, oversized_check},
    [CASE_SHORT_RECV] = {short_prepare, short_act, short_check},
    [CASE_NO_RECV] = {no_recv_prepare, no_recv_act, no_recv_check},
};

static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	uint32_t mtu = c->mtu;
	const struct {
		uint32_t size;
		const char *label;
	} sizes[] = {{0, "0"}, {1, "1"}, {mtu - 1, "MTU-1"}, {mtu, "MTU"}};
	int n = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int imm = 0; imm < 2; imm++) {
			e2e_add_case(cases, &n, CASE_SIZE, sizes[i].size, "%s %s (%u B)",
				     imm ? "SEND_WITH_IMM" : "SEND", sizes[i].label, sizes[i].size);
			cases[n - 1].param = imm;
		}
	e2e_add_case(cases, &n, CASE_TWO_SENDERS, 0, "2 sender QPs, replies by AH from wc");
	cases[n - 1].rounds = 2;
	e2e_add_case(cases, &n, CASE_BAD_QKEY, 64, "wrong Q_Key x%d", BAD_QKEY_SENDS);
	cases[n - 1].rounds = 2;
	e2e_add_case(cases, &n, CASE_OWN_QKEY, 50, "Q_Key high bit: the QP's own");
	cases[n - 1].rounds = 3;
	e2e_add_case(cases, &n, CASE_OVERSIZED, mtu + 1, "MTU+1 bytes: -EINVAL at post");
	cases[n - 1].rounds = 2;
	e2e_add_case(cases, &n, CASE_SHORT_RECV, SHORT_SIZE, "receive list GRH+%u-1", SHORT_SIZE);
	cases[n - 1].rounds = 2;
	e2e_add_case(cases, &n, CASE_NO_RECV, 10, "no receive posted x%d", NO_RECV_SENDS);
	cases[n - 1].rounds = 2;
	return n;
}

/* ---- out-of-band exchange ---------------------------------------------------------------- */

static int send_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS] = {0};

	for (int k = 0; k < c->nqps; k++)
		words[k] = c->qp[k].qp->qp_num;
	words[3] = c->qp[0].qkey;
	words[4] = c->port.mtu_enum;
	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->port.gid);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->peer.gid);

	if (ret)
		return ret;
	for (int k = 0; k < CLIENT_QPS; k++)
		c->peer.qpn[k] = words[k];
	c->peer.qkey = words[3];
	c->peer.mtu_enum = words[4];
	return 0;
}

/* ---- setup ----------------------------------------------------------------------------- */

/* A UD QP with CQs of its own, brought up to RTS with Q_Key qkey; -1 after saying why. */
static int create_ud_qp(struct e2e_ctx *c, struct ud_qp *u, uint32_t qkey)
{
	struct xr_qp_init_attr init = {
	    .cap = {.max_send_wr = QP_WR,
		    .max_recv_wr = QP_WR,
		    .max_send_sge = MAX_SGE,
		    .max_recv_sge = MAX_SGE},
	    .qp_type = XR_QPT_UD,
	};
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = qkey};
	const char *step = "INIT";
	int ret;

	u->send_cq = xr_create_cq(c->port.dev, CQ_ENTRIES, NULL);
	u->recv_cq = xr_create_cq(c->port.dev, CQ_ENTRIES, NULL);
	if (!u->send_cq || !u->recv_cq) {
		fprintf(stderr, PROG ": couldn't create CQ: %s\n", strerror(errno));
		return -1;
	}
	init.send_cq = u->send_cq;
	init.recv_cq = u->recv_cq;
	u->qp = xr_create_qp(c->port.pd, &init);
	if (!u->qp) {
		fprintf(stderr, PROG ": couldn't create a UD QP: %s\n", strerror(errno));
		return -1;
	}
	u->qkey = qkey;
	ret = xr_modify_qp(u->qp, &attr, XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_QKEY);
	if (!ret) {
		step = "RTR";
		attr = (struct xr_qp_attr){.qp_state = XR_QPS_RTR};
		ret = xr_modify_qp(u->qp, &attr, XR_QP_STATE);
	}
	if (!ret) {
		step = "RTS";
		attr = (struct xr_qp_attr){.qp_state = XR_QPS_RTS,
					   .sq_psn = (uint32_t)lrand48() & 0xffffff};
		ret = xr_modify_qp(u->qp, &attr, XR_QP_STATE | XR_QP_SQ_PSN);
	}
	if (!ret) {
		step = "query";
		ret = xr_query_qp(u->qp, &attr, XR_QP_STATE | XR_QP_QKEY, NULL);
		if (!ret && (attr.qp_state != XR_QPS_RTS || attr.qkey != qkey)) {
			fprintf(stderr,
				PROG ": UD QP in state %d with Q_Key 0x%08x, expected RTS, "
				     "0x%08x\n",
				attr.qp_state, attr.qkey, qkey);
			return -1;
		}
	}
	if (ret) {
		fprintf(stderr, PROG ": couldn't move a UD QP to %s: %s\n", step, strerror(-ret));
		return -1;
	}
	return 0;
}

static int create_spacers(struct e2e_ctx *c)
{
	struct xr_qp_init_attr init = {.cap = {.max_send_wr = 1, .max_recv_wr = 1},
				       .qp_type = XR_QPT_UD};

	c->spacer_cq = xr_create_cq(c->port.dev, 1, NULL);
	if (!c->spacer_cq) {
		fprintf(stderr, PROG ": couldn't create CQ: %s\n", strerror(errno));
		return -1;
	}
	init.send_cq = init.recv_cq = c->spacer_cq;
	for (int k = 0; k < CLIENT_QPS; k++) {
		c->spacer[k] = xr_create_qp(c->port.pd, &init);
		if (!c->spacer[k]) {
			fprintf(stderr, PROG ": couldn't create a UD QP: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	struct report r = {0};

	c->role = args->role;
	c->ifname = args->ifname;
	c->is_server = args->is_server;
	if (e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->buf = aligned_alloc(4096, BUF_SIZE);
	if (!c->buf) {
		fprintf(stderr, PROG ": couldn't allocate the buffer\n");
		return -1;
	}
	memset(c->buf, CANARY, BUF_SIZE);
	c->mr = xr_reg_mr(c->port.pd, c->buf, BUF_SIZE, XR_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		fprintf(stderr, PROG ": couldn't register MR: %s\n", strerror(errno));
		return -1;
	}
	c->nqps = c->is_server ? 1 : CLIENT_QPS;
	if (c->is_server && create_spacers(c))
		return -1;
	for (int k = 0; k < c->nqps; k++)
		if (create_ud_qp(c, &c->qp[k], k == 2 ? OTHER_QKEY : QKEY))
			return -1;
	if (!read_counts(c, &c->start, &r)) {
		fprintf(stderr, PROG ": %s\n", r.detail);
		return -1;
	}
	printf("[%s] counters at start: rx_bad_qkey %" PRIu64 " rx_no_recv %" PRIu64 "\n", c->role,
	       c->start.rx_bad_qkey, c->start.rx_no_recv);
	return 0;
}

/* UD needs no connection: agree on the MTU, check the peer's Q_Key; the client makes its AH. */
static int connect_peer(struct e2e_ctx *c)
{
	struct xr_ah_attr attr = {
	    .is_global = 1,
	    .port_num = 1,
	    .grh = {.dgid = c->peer.gid, .sgid_index = (uint8_t)c->port.gid_index, .hop_limit = 64},
	};
	char peer_gid[INET6_ADDRSTRLEN];

	if (e2e_agree_mtu(PROG, &c->port, c->peer.mtu_enum))
		return -1;
	c->mtu = e2e_mtu_bytes(c->port.mtu_enum);
	for (int k = 0; k < CLIENT_QPS; k++)
		for (int j = 0; j < CLIENT_QPS; j++)
			if (c->peer.qpn[k] && c->qp[j].qp &&
			    c->peer.qpn[k] == c->qp[j].qp->qp_num) {
				fprintf(stderr,
					PROG ": QPN 0x%06x is on both sides: src_qp could not tell "
					     "them apart\n",
					c->peer.qpn[k]);
				return -1;
			}
	if (c->peer.qkey != QKEY) {
		fprintf(stderr, PROG ": the peer's Q_Key is 0x%08x, expected 0x%08x\n",
			c->peer.qkey, QKEY);
		return -1;
	}
	if (!c->is_server) {
		c->ah = xr_create_ah(c->port.pd, &attr);
		if (!c->ah) {
			fprintf(stderr, PROG ": couldn't create an AH to %s: %s\n",
				gid_text(&c->peer.gid, peer_gid, sizeof(peer_gid)),
				strerror(errno));
			return -1;
		}
	}
	if (c->is_server)
		printf("[%s] MTU %u; UD QP 0x%06x (Q_Key 0x%08x); senders 0x%06x, 0x%06x, 0x%06x "
		       "at %s\n",
		       c->role, c->mtu, c->qp[0].qp->qp_num, c->qp[0].qkey, c->peer.qpn[0],
		       c->peer.qpn[1], c->peer.qpn[2],
		       gid_text(&c->peer.gid, peer_gid, sizeof(peer_gid)));
	else
		printf("[%s] MTU %u; UD QPs 0x%06x, 0x%06x (Q_Key 0x%08x), 0x%06x (Q_Key 0x%08x); "
		       "receiver 0x%06x at %s\n",
		       c->role, c->mtu, c->qp[0].qp->qp_num, c->qp[1].qp->qp_num, c->qp[0].qkey,
		       c->qp[2].qp->qp_num, c->qp[2].qkey, c->peer.qpn[0],
		       gid_text(&c->peer.gid, peer_gid, sizeof(peer_gid)));
	return 0;
}

static void teardown(struct e2e_ctx *c)
{
	/* What the script checks this side's counters against once it exited. */
	printf("[%s] dropped on purpose: rx_bad_qkey %" PRIu64 " rx_no_recv %" PRIu64 "\n", c->role,
	       c->dropped_bad_qkey, c->dropped_no_recv);
	if (c->ah)
		xr_destroy_ah(c->ah);
	for (int k = 0; k < CLIENT_QPS; k++) {
		if (c->qp[k].qp)
			xr_destroy_qp(c->qp[k].qp);
		if (c->qp[k].send_cq)
			xr_destroy_cq(c->qp[k].send_cq);
		if (c->qp[k].recv_cq)
			xr_destroy_cq(c->qp[k].recv_cq);
	}
	for (int k = 0; k < CLIENT_QPS; k++)
		if (c->spacer[k])
			xr_destroy_qp(c->spacer[k]);
	if (c->spacer_cq)
		xr_destroy_cq(c->spacer_cq);
	if (c->mr)
		xr_dereg_mr(c->mr);
	e2e_close_port(&c->port);
	free(c->buf);
}

int main(int argc, char **argv)
{
	static const struct e2e_driver driver = {
	    .prog = PROG,
	    .default_port = DEFAULT_PORT,
	    .server_part = "receiver",
	    .client_part = "sender",
	    .not_prepared = "the receiver could not get ready",
	    .name_width = 36,
	    .check_after_act = true,
	    .peer_step_timeout_ms = PEER_STEP_TIMEOUT_MS,
	    .ops = case_ops,
	    .setup = setup,
	    .send_hello = send_hello,
	    .recv_hello = recv_hello,
	    .connect = connect_peer,
	    .build_cases = build_cases,
	    .teardown = teardown,
	};
	struct e2e_ctx c = {0};

	return e2e_main(argc, argv, &driver, &c);
}
