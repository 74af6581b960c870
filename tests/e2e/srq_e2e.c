/* SPDX-License-Identifier: MIT */
/*
 * srq_e2e: RC QPs on a shared receive queue end to end between two processes
 * through the XDP program and AF_XDP, using only the public API.
 *
 *   srq_e2e server IFNAME [-p PORT] [-g GID_INDEX]             the receiver
 *   srq_e2e client IFNAME SERVER_IP [-p PORT] [-g GID_INDEX]   the sender
 *
 * NUM_QPS RC QP pairs. The server's QPs take their receives from one SRQ and
 * complete into one CQ; the client's QPs are plain. In each case the client
 * sends MSGS_PER_QP messages on every QP, WINDOW in flight per QP, of 2 to 5
 * packets at path MTU 1024, every other one a SEND with immediate; each
 * message starts with a header (magic, QP index, sequence number, length)
 * and is followed by bytes of its own (pattern_byte of its QP and number).
 * The server posts exactly one receive per message of the case:
 *
 *   starved  an SRQ of SRQ_SMALL buffers against NUM_QPS x WINDOW messages in
 *            flight, refilled only once all SRQ_SMALL posted have completed
 *            and STARVE_MS more have passed: the SRQ is empty while messages
 *            wait, every time, so the server answers RNR NAKs
 *            (test_srq_e2e.sh checks both engines' counters) and the senders
 *            retry (rnr_retry 7, min_rnr_timer 10 us); the SRQ limit
 *            (SRQ_LIMIT) is armed before each filling and must raise
 *            SRQ_LIMIT_REACHED exactly once per arming;
 *   resized  the SRQ grown (xr_modify_srq) to SRQ_LARGE with SRQ_SMALL
 *            receives posted, then filled to NUM_QPS x WINDOW: the posted
 *            ones kept, xr_query_srq reporting the new size; each buffer is
 *            posted again as soon as it has been checked.
 *
 * Both cases pass only if every message arrives exactly once and in order on
 * its QP (its header's QP and number are the next expected on the QP the
 * completion names), with success, the opcode and length it was sent with,
 * its immediate when it had one, every byte as sent and the canary after it
 * untouched; the client's completions come back in order per QP, with
 * success; and no receive is lost: the server gets exactly as many receive
 * completions as it posted receives (one per message), and none more in the
 * QUIET_MS after the last.
 */
#include <fcntl.h>
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "srq_e2e"
#define DEFAULT_PORT 18811
#define HELLO_MAGIC "XRSRQE21"

#define NUM_QPS 16
#define MSGS_PER_QP 64
#define TOTAL_MSGS (NUM_QPS * MSGS_PER_QP)
#define WINDOW 8
#define SRQ_SMALL 16
#define SRQ_LIMIT 4 /* starved: armed after each filling */
#define SRQ_LARGE 256
#define RECV_SLOTS SRQ_LARGE
/* HELLO: path MTU code, first PSN, then NUM_QPS QPNs (QP i's first PSN is PSN + i * PSN_STEP). */
#define HELLO_WORDS (2 + NUM_QPS)
#define PSN_STEP 0x10000u

#define MIN_PACKETS 2
#define MAX_PACKETS 5
#define MTU 1024u
#define MAX_MSG (MAX_PACKETS * MTU)
#define CANARY 0xc5
#define CANARY_LEN 64
#define SLOT (MAX_MSG + CANARY_LEN)
#define MSG_MAGIC 0x53525131u

/* Bounds on every wait (the out-of-band ones are the driver's). */
#define CASE_TIMEOUT_MS 60000
#define PEER_STEP_TIMEOUT_MS 90000
#define QUIET_MS 300
/* starved: how long the SRQ stays empty before each refill. */
#define STARVE_MS 2

enum case_kind { CASE_STARVED, CASE_RESIZED };

struct msg_header {
	uint32_t magic, qp, seq, size; /* network byte order */
};

struct e2e_ctx {
	const char *role;
	bool is_server;
	struct e2e_port port;
	struct xr_cq *send_cq, *recv_cq;
	struct xr_srq *srq; /* server */
	struct xr_qp *qps[NUM_QPS];
	uint32_t psn; /* QP i's first PSN: psn + i * PSN_STEP */
	struct {
		uint32_t qpn[NUM_QPS];
		uint32_t psn;
		uint32_t mtu_enum;
		union xr_gid gid;
	} peer;
	struct xr_mr *mr;
	uint8_t *buf; /* server: RECV_SLOTS receive slots; client: NUM_QPS x WINDOW send slots */
	size_t buf_size;
	/* Server, per case: receives posted and completed, what each QP expects next. */
	uint32_t posted, completed;
	uint32_t next_seq[NUM_QPS];
	bool slot_busy[RECV_SLOTS];
	/* starved: the checked buffers waiting for the SRQ to run empty, and how often it did. */
	uint32_t idle_slots[RECV_SLOTS], n_idle;
	uint32_t starvations;
	/* starved: the SRQ limit armed after each filling, and the events it raised. */
	uint32_t armings, limit_events;
};

static uint32_t qp_psn(uint32_t first, int q)
{
	return (first + (uint32_t)q * PSN_STEP) & 0xffffff;
}

/* Message seq of QP q in case idx: its length, its seed, its immediate (odd seq only). */
static uint32_t msg_size(int idx, int q, uint32_t seq)
{
	uint32_t span = (MAX_PACKETS - MIN_PACKETS + 1) * MTU - sizeof(struct msg_header);

	return (MIN_PACKETS - 1) * MTU + 1 + ((uint32_t)idx * 7919 + q * 131 + seq * 977) % span;
}

static uint32_t msg_seed(int idx, int q, uint32_t seq)
{
	return 0x5e000000u ^ (uint32_t)idx << 20 ^ (uint32_t)q << 12 ^ seq;
}

static bool msg_has_imm(uint32_t seq)
{
	return seq % 2;
}

static uint32_t msg_imm(int q, uint32_t seq)
{
	return htonl(0x1a000000u | (uint32_t)q << 16 | seq);
}

static int build_cases(struct e2e_ctx *c, struct e2e_case *cases)
{
	int n = 0;

	(void)c;
	e2e_add_case(cases, &n, CASE_STARVED, SRQ_SMALL,
		     "starved: %d QPs x %d in flight, SRQ of %d", NUM_QPS, WINDOW, SRQ_SMALL);
	e2e_add_case(cases, &n, CASE_RESIZED, SRQ_LARGE, "resized: SRQ %d -> %d, %d posted",
		     SRQ_SMALL, SRQ_LARGE, NUM_QPS * WINDOW);
	return n;
}

/* ---- the client: the senders ------------------------------------------------------ */

static uint8_t *send_slot(struct e2e_ctx *c, int q, uint32_t seq)
{
	return c->buf + ((size_t)q * WINDOW + seq % WINDOW) * SLOT;
}

static bool post_msg(struct e2e_ctx *c, int idx, int q, uint32_t seq, struct report *r)
{
	uint8_t *p = send_slot(c, q, seq);
	uint32_t size = msg_size(idx, q, seq);
	struct msg_header h = {htonl(MSG_MAGIC), htonl((uint32_t)q), htonl(seq), htonl(size)};
	struct xr_sge sge = sge_of(c->mr, p, size);
	struct xr_send_wr wr = {
	    .wr_id = (uint64_t)q << 32 | seq,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = msg_has_imm(seq) ? XR_WR_SEND_WITH_IMM : XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = msg_has_imm(seq) ? msg_imm(q, seq) : 0,
	};

	memcpy(p, &h, sizeof(h));
	fill_pattern(p + sizeof(h), msg_seed(idx, q, seq), 0, size - sizeof(h));
	return e2e_post_send(c->qps[q], &wr, r);
}

static void stream_act(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
		       const struct e2e_target *t, struct report *r)
{
	uint32_t posted[NUM_QPS] = {0}, done[NUM_QPS] = {0}, total = 0;
	int64_t start = tool_now_ms(), deadline = start + CASE_TIMEOUT_MS;

	(void)tc;
	(void)t;
	while (total < TOTAL_MSGS && !r->failed) {
		struct xr_wc wc[32];
		int ne;

		for (int q = 0; q < NUM_QPS; q++)
			while (posted[q] < MSGS_PER_QP && posted[q] - done[q] < WINDOW) {
				if (!post_msg(c, idx, q, posted[q], r))
					return;
				posted[q]++;
			}
		ne = poll_cq_until(c->send_cq, wc, 1, 32, deadline);
		if (ne == 0) {
			report_fail(r, "timed out after %d s with %u of %d SENDs completed",
				    CASE_TIMEOUT_MS / 1000, total, TOTAL_MSGS);
			return;
		}
		for (int i = 0; i < ne; i++) {
			int q = (int)(wc[i].wr_id >> 32);

			if (q >= NUM_QPS) {
				report_fail(r, "send completion for unknown wr_id 0x%" PRIx64,
					    wc[i].wr_id);
				return;
			}
			/* In order per QP: the oldest outstanding SEND of that QP. */
			if (!check_wc(&wc[i], (uint64_t)q << 32 | done[q], XR_WC_SUCCESS,
				      XR_WC_SEND, r))
				return;
			done[q]++;
			total++;
		}
	}
	report_ok(r, "%d SENDs on %d QPs (%d in flight each), in order, in %" PRId64 " ms",
		  TOTAL_MSGS, NUM_QPS, WINDOW, tool_now_ms() - start);
}

/* ---- the server: one SRQ for every QP ----------------------------------------------- */

static uint8_t *recv_slot(struct e2e_ctx *c, uint32_t slot)
{
	return c->buf + (size_t)slot * SLOT;
}

/* Posts slot to the SRQ, canary-filled: stale bytes of a former message would show. */
static bool post_slot(struct e2e_ctx *c, uint32_t slot, struct report *r)
{
	struct xr_sge sge = sge_of(c->mr, recv_slot(c, slot), MAX_MSG);
	struct xr_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
	int ret;

	memset(recv_slot(c, slot), CANARY, SLOT);
	ret = xr_post_srq_recv(c->srq, &wr, &bad);
	if (ret) {
		report_fail(r, "xr_post_srq_recv (receive %u): %s", c->posted + 1, strerror(-ret));
		return false;
	}
	c->slot_busy[slot] = true;
	c->posted++;
	return true;
}

static bool query_max_wr(struct e2e_ctx *c, uint32_t expected, struct report *r)
{
	struct xr_srq_attr attr;
	int ret = xr_query_srq(c->srq, &attr);

	if (ret) {
		report_fail(r, "xr_query_srq: %s", strerror(-ret));
		return false;
	}
	if (attr.max_wr != expected) {
		report_fail(r, "xr_query_srq: max_wr %u, expected %u", attr.max_wr, expected);
		return false;
	}
	return true;
}

/* Arms the SRQ limit: one SRQ_LIMIT_REACHED once fewer than SRQ_LIMIT are posted. */
static bool arm_limit(struct e2e_ctx *c, struct report *r)
{
	struct xr_srq_attr attr = {.srq_limit = SRQ_LIMIT};
	int ret = xr_modify_srq(c->srq, &attr, XR_SRQ_LIMIT);

	if (ret) {
		report_fail(r, "xr_modify_srq(srq_limit %d): %s", SRQ_LIMIT, strerror(-ret));
		return false;
	}
	c->armings++;
	return true;
}

/* Takes the asynchronous events queued (the fd is non-blocking): counts the SRQ's limit events. */
static bool take_events(struct e2e_ctx *c, struct report *r)
{
	struct xr_async_event ev;

	while (xr_get_async_event(c->port.dev, &ev) == 0) {
		bool ours = ev.event_type == XR_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == c->srq;

		xr_ack_async_event(&ev);
		if (!ours) {
			report_fail(r, "an unexpected asynchronous event, type %d", ev.event_type);
			return false;
		}
		c->limit_events++;
	}
	return true;
}

static bool stream_prepare(struct e2e_ctx *c, const struct e2e_case *tc, int idx,
			   struct e2e_target *t, struct report *r)
{
	uint32_t first = tc->kind == CASE_STARVED ? SRQ_SMALL : NUM_QPS * WINDOW;
	struct xr_srq_attr attr = {.max_wr = SRQ_LARGE};
	int ret;

	(void)idx;
	(void)t;
	c->posted = c->completed = 0;
	memset(c->next_seq, 0, sizeof(c->next_seq));
	memset(c->slot_busy, 0, sizeof(c->slot_busy));
	c->n_idle = c->starvations = 0;
	c->armings = c->limit_events = 0;
	if (tc->kind == CASE_RESIZED) {
		/* Grown with SRQ_SMALL posted: those stay, and the rest fit after them. */
		for (uint32_t i = 0; i < SRQ_SMALL; i++)
			if (!post_slot(c, i, r))
				return false;
		ret = xr_modify_srq(c->srq, &attr, XR_SRQ_MAX_WR);
		if (ret) {
			report_fail(r, "xr_modify_srq(max_wr %d): %s", SRQ_LARGE, strerror(-ret));
			return false;
		}
		if (!query_max_wr(c, SRQ_LARGE, r))
			return false;
	} else if (!query_max_wr(c, SRQ_SMALL, r)) {
		return false;
	}
	if (tc->kind == CASE_STARVED && !arm_limit(c, r))
		return false;
	for (uint32_t i = c->posted; i < first; i++)
		if (!post_slot(c, i, r))
			return false;
	return true;
}

static ssize_t first_mismatch(const uint8_t *data, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (data[i] != pattern_byte(seed, i))
			return (ssize_t)i;
	return -1;
}

/*
 * A checked buffer goes back to the SRQ while messages remain without one:
 * at once, or (starved) once every buffer posted has completed, after
 * STARVE_MS with the SRQ empty.
 */
static bool recycle_slot(struct e2e_ctx *c, const struct e2e_case *tc, uint32_t slot,
			 struct report *r)
{
	if (c->posted >= TOTAL_MSGS)
		return true;
	if (tc->kind != CASE_STARVED)
		return post_slot(c, slot, r);
	c->idle_slots[c->n_idle++] = slot;
	if (c->posted != c->completed)
		return true;
	c->starvations++;
	nanosleep(&(struct timespec){.tv_nsec = STARVE_MS * 1000000L}, NULL);
	/*
	 * Armed before the filling: the engine may take the buffers as soon as
	 * they are posted, and each one posted is taken by a message later on.
	 */
	if (!arm_limit(c, r))
		return false;
	for (uint32_t i = 0; i < c->n_idle; i++)
		if (c->posted < TOTAL_MSGS && !post_slot(c, c->idle_slots[i], r))
			return false;
	c->n_idle = 0;
	return true;
}

/* One receive completion: the next message of the QP it names, whole and exact. */
static bool check_one(struct e2e_ctx *c, const struct e2e_case *tc, int idx, const struct xr_wc *wc,
		      struct report *r)
{
	uint32_t slot = (uint32_t)wc->wr_id, seq, size;
	struct msg_header h;
	const uint8_t *p;
	ssize_t bad;
	int q = -1;

	for (int i = 0; i < NUM_QPS; i++)
		if (c->qps[i]->qp_num == wc->qp_num)
			q = i;
	if (slot >= RECV_SLOTS || !c->slot_busy[slot]) {
		report_fail(r, "receive completion %u: wr_id 0x%" PRIx64 " is no posted receive",
			    c->completed, wc->wr_id);
		return false;
	}
	c->slot_busy[slot] = false;
	if (q < 0) {
		report_fail(r, "receive completion %u names QPN 0x%06x, none of ours", c->completed,
			    wc->qp_num);
		return false;
	}
	seq = c->next_seq[q];
	if (seq >= MSGS_PER_QP) {
		report_fail(r, "QP %d: a receive completion after its %d messages", q, MSGS_PER_QP);
		return false;
	}
	size = msg_size(idx, q, seq);
	if (wc->status != XR_WC_SUCCESS) {
		report_fail(r, "QP %d message %u: receive completed with \"%s\"", q, seq,
			    xr_wc_status_str(wc->status));
		return false;
	}
	if (wc->opcode != XR_WC_RECV || wc->byte_len != size ||
	    !!(wc->wc_flags & XR_WC_WITH_IMM) != msg_has_imm(seq) ||
	    (msg_has_imm(seq) && wc->imm_data != msg_imm(q, seq))) {
		report_fail(r,
			    "QP %d message %u: opcode %d, %u bytes, wc_flags 0x%x, immediate "
			    "0x%08x; expected %d, %u bytes, %s",
			    q, seq, wc->opcode, wc->byte_len, wc->wc_flags, ntohl(wc->imm_data),
			    XR_WC_RECV, size, msg_has_imm(seq) ? "with its immediate" : "none");
		return false;
	}
	p = recv_slot(c, slot);
	memcpy(&h, p, sizeof(h));
	if (ntohl(h.magic) != MSG_MAGIC || ntohl(h.qp) != (uint32_t)q || ntohl(h.seq) != seq ||
	    ntohl(h.size) != size) {
		report_fail(r,
			    "QP %d: expected message %u, got the header of QP %u message %u (%u "
			    "bytes, magic 0x%08x): %s",
			    q, seq, ntohl(h.qp), ntohl(h.seq), ntohl(h.size), ntohl(h.magic),
			    ntohl(h.qp) == (uint32_t)q && ntohl(h.seq) < seq ? "a duplicate"
									     : "out of order");
		return false;
	}
	bad = first_mismatch(p + sizeof(h), msg_seed(idx, q, seq), size - sizeof(h));
	if (bad >= 0) {
		report_fail(r, "QP %d message %u: byte %zd is 0x%02x, expected 0x%02x", q, seq,
			    bad + (ssize_t)sizeof(h), p[sizeof(h) + bad],
			    pattern_byte(msg_seed(idx, q, seq), (size_t)bad));
		return false;
	}
	for (uint32_t i = size; i < SLOT; i++)
		if (p[i] != CANARY) {
			report_fail(r, "QP %d message %u (%u bytes): byte %u of its buffer written",
				    q, seq, size, i);
			return false;
		}
	c->next_seq[q]++;
	c->completed++;
	return recycle_slot(c, tc, slot, r);
}

static void stream_check(struct e2e_ctx *c, const struct e2e_case *tc, int idx, struct report *r)
{
	int64_t start = tool_now_ms(), deadline = start + CASE_TIMEOUT_MS;
	struct xr_wc wc[32];

	while (c->completed < TOTAL_MSGS) {
		int ne = poll_cq_until(c->recv_cq, wc, 1, 32, deadline);

		if (ne == 0) {
			report_fail(r,
				    "timed out after %d s: %u of %d messages received, %u receives "
				    "posted",
				    CASE_TIMEOUT_MS / 1000, c->completed, TOTAL_MSGS, c->posted);
			return;
		}
		for (int i = 0; i < ne; i++)
			if (!check_one(c, tc, idx, &wc[i], r))
				return;
		if (!take_events(c, r))
			return;
	}
	if (c->posted != TOTAL_MSGS) {
		report_fail(r, "%u receives posted for %d messages", c->posted, TOTAL_MSGS);
		return;
	}
	if (!expect_quiet(c->recv_cq, QUIET_MS, r, "extra receive") || !take_events(c, r))
		return;
	if (c->limit_events != c->armings) {
		report_fail(r, "the SRQ limit was armed %u times and fired %u times", c->armings,
			    c->limit_events);
		return;
	}
	report_ok(r,
		  "%d messages on %d QPs, each once, in order, byte-exact; %u receives posted "
		  "to an SRQ of %u (empty %u times), %u completed, none more; SRQ_LIMIT_REACHED "
		  "%u times for %u armings; %" PRId64 " ms",
		  TOTAL_MSGS, NUM_QPS, c->posted, tc->size, c->starvations, c->completed,
		  c->limit_events, c->armings, tool_now_ms() - start);
}

static const struct e2e_case_ops case_ops[] = {
    [CASE_STARVED] = {.prepare = stream_prepare, .act = stream_act, .check = stream_check},
    [CASE_RESIZED] = {.prepare = stream_prepare, .act = stream_act, .check = stream_check},
};

/* ---- setup and the handshake ------------------------------------------------------- */

static int send_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS] = {c->port.mtu_enum, c->psn};

	for (int q = 0; q < NUM_QPS; q++)
		words[2 + q] = c->qps[q]->qp_num;
	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->port.gid);
}

static int recv_hello(struct e2e_ctx *c, int fd)
{
	uint32_t words[HELLO_WORDS];
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &c->peer.gid);

	if (ret)
		return ret;
	c->peer.mtu_enum = words[0];
	c->peer.psn = words[1];
	for (int q = 0; q < NUM_QPS; q++)
		c->peer.qpn[q] = words[2 + q];
	return 0;
}

static int connect_peer(struct e2e_ctx *c)
{
	if (e2e_agree_mtu(PROG, &c->port, c->peer.mtu_enum))
		return -1;
	if (e2e_mtu_bytes(c->port.mtu_enum) != MTU) {
		fprintf(stderr, PROG ": path MTU %u, the messages are sized for %u\n",
			e2e_mtu_bytes(c->port.mtu_enum), MTU);
		return -1;
	}
	for (int q = 0; q < NUM_QPS; q++) {
		/* min_rnr_timer 1 (10 us): the senders come back soon after each RNR NAK. */
		struct e2e_qp_end end = {.qp = c->qps[q], .psn = qp_psn(c->psn, q)};

		if (e2e_connect_qp(PROG, &c->port, &end, 1, c->peer.qpn[q], qp_psn(c->peer.psn, q),
				   &c->peer.gid))
			return -1;
	}
	printf("[%s] path MTU %u; %d RC QPs 0x%06x..0x%06x%s; the peer's 0x%06x..0x%06x\n", c->role,
	       MTU, NUM_QPS, c->qps[0]->qp_num, c->qps[NUM_QPS - 1]->qp_num,
	       c->is_server ? " on one SRQ" : "", c->peer.qpn[0], c->peer.qpn[NUM_QPS - 1]);
	return 0;
}

static int setup(struct e2e_ctx *c, const struct e2e_args *args)
{
	struct xr_srq_init_attr srq_init = {.attr = {.max_wr = SRQ_SMALL, .max_sge = 1}};
	int ret;

	c->role = args->role;
	c->is_server = args->is_server;
	if (e2e_open_port(PROG, args->ifname, args->gid_index, &c->port))
		return -1;
	e2e_print_gid(c->role, &c->port);
	c->buf_size = (size_t)(c->is_server ? RECV_SLOTS : NUM_QPS * WINDOW) * SLOT;
	c->buf = aligned_alloc(4096, (c->buf_size + 4095) / 4096 * 4096);
	if (!c->buf) {
		fprintf(stderr, PROG ": couldn't allocate %zu bytes\n", c->buf_size);
		return -1;
	}
	memset(c->buf, CANARY, c->buf_size);
	c->mr = xr_reg_mr(c->port.pd, c->buf, c->buf_size, XR_ACCESS_LOCAL_WRITE);
	c->send_cq = xr_create_cq(c->port.dev, NUM_QPS * WINDOW * 2, NULL);
	c->recv_cq = xr_create_cq(c->port.dev, RECV_SLOTS * 2, NULL);
	if (!c->mr || !c->send_cq || !c->recv_cq) {
		fprintf(stderr, PROG ": couldn't register the buffer or create the CQs: %s\n",
			strerror(errno));
		return -1;
	}
	if (c->is_server) {
		c->srq = xr_create_srq(c->port.pd, &srq_init);
		if (!c->srq) {
			fprintf(stderr, PROG ": couldn't create the SRQ: %s\n", strerror(errno));
			return -1;
		}
		/* Limit events are taken between completions, never waited for. */
		if (fcntl(xr_async_fd(c->port.dev), F_SETFL,
			  fcntl(xr_async_fd(c->port.dev), F_GETFL) | O_NONBLOCK)) {
			fprintf(stderr, PROG ": async fd: %s\n", strerror(errno));
			return -1;
		}
		if (srq_init.attr.max_wr != SRQ_SMALL) {
			fprintf(stderr, PROG ": the SRQ has room for %u, asked for %d\n",
				srq_init.attr.max_wr, SRQ_SMALL);
			return -1;
		}
	}
	c->psn = (uint32_t)lrand48() & 0xffffff;
	for (int q = 0; q < NUM_QPS; q++) {
		struct xr_qp_init_attr init = {
		    .send_cq = c->send_cq,
		    .recv_cq = c->recv_cq,
		    .srq = c->srq,
		    .cap = {.max_send_wr = WINDOW,
			    .max_recv_wr = c->srq ? 0 : 1,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		    .qp_type = XR_QPT_RC,
		};

		c->qps[q] = xr_create_qp(c->port.pd, &init);
		if (!c->qps[q]) {
			fprintf(stderr, PROG ": couldn't create QP %d: %s\n", q, strerror(errno));
			return -1;
		}
		ret = qp_to_init(c->qps[q], 1, 0);
		if (ret) {
			fprintf(stderr, PROG ": couldn't move QP %d to INIT: %s\n", q,
				strerror(-ret));
			return -1;
		}
	}
	return 0;
}

static void teardown(struct e2e_ctx *c)
{
	for (int q = 0; q < NUM_QPS; q++)
		if (c->qps[q])
			xr_destroy_qp(c->qps[q]);
	if (c->srq) {
		int ret = xr_destroy_srq(c->srq);

		if (ret)
			fprintf(stderr, PROG ": xr_destroy_srq: %s\n", strerror(-ret));
	}
	if (c->send_cq)
		xr_destroy_cq(c->send_cq);
	if (c->recv_cq)
		xr_destroy_cq(c->recv_cq);
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
	    .name_width = 44,
	    .peer_step_timeout_ms = PEER_STEP_TIMEOUT_MS,
	    .ops = case_ops,
	    .setup = setup,
	    .send_hello = send_hello,
	    .recv_hello = recv_hello,
	    .connect = connect_peer,
	    .build_cases = build_cases,
	    .teardown = teardown,
	};
	static struct e2e_ctx c;

	return e2e_main(argc, argv, &driver, &c);
}
