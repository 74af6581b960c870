/* SPDX-License-Identifier: MIT */
/*
 * hostile_exchange: the long RC exchange test_hostile_e2e.sh runs between two
 * xroce hosts while a third one forges frames at them. Both sides are
 * requester and responder on one QP pair, until told to stop (SIGUSR1):
 *
 *   hostile_exchange server IFNAME [-p PORT] [--rate OPS] [--no-atomics]
 *   hostile_exchange client IFNAME SERVER_IP [-p PORT] [--rate OPS] [--no-atomics]
 *
 * Each side posts a stream of SEND (some with immediate), WRITE, WRITE with
 * immediate, READ, FETCH_AND_ADD and COMPARE_AND_SWAP to the other, at most
 * 32 outstanding and about OPS per second (1000; 0: as fast as it goes),
 * drawn from a plan both sides derive from the sender's seed, so that the
 * receiver knows every byte it must get. Checked: every completion succeeds,
 * in order; the source buffer of every SEND and WRITE is unchanged when it
 * completes (a response written into it shows); every READ returns its
 * source and nothing past its length; each FAA and CAS returns the count of
 * those before it; every message arrives once, in order, with its content
 * and immediate; at the end the last WRITE into each slot of the target area
 * is intact, the READ source unchanged, and the atomic words equal the
 * peer's counts. --no-atomics leaves the atomics out of this side's
 * requests (what a forged ATOMIC ACKNOWLEDGE may hit is then never an
 * atomic: RoCE cannot tell a forged response at the exact PSN of an atomic
 * in flight from the real one).
 *
 * Lines the test matches: "[ROLE] qp local 0x.. peer 0x..", "[ROLE] running"
 * once connected, "[ROLE] stop" when SIGUSR1 came, and the last line
 * "[ROLE] PASS: ..." (with the counts, the run time and the longest wait for
 * a completion) or "[ROLE] FAIL: ...".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e_common.h"

#define PROG "hostile_exchange"
#define DEFAULT_PORT 18821
#define DEFAULT_RATE 1000
#define HELLO_MAGIC "HOSTILE1"

#define WINDOW 32
#define RECV_DEPTH 256
#define MAX_MSG 4096
#define WRITE_SLOTS 64
#define READ_AREA_SIZE (256u << 10)
#define LANDING_GUARD 64
#define LANDING_SLOT_SIZE (MAX_MSG + LANDING_GUARD)
#define RD_ATOMIC 16
#define CANARY 0xc5

/* Stopping by itself after this long: the script stops it much sooner. */
#define MAX_RUN_MS 120000
/* No completion for this long while work is outstanding is a hang. */
#define STALL_TIMEOUT_MS 20000
#define QUIET_WAIT_MS 200

/* One memory region with every remote right; offsets into it. */
#define RECV_AREA 0u
#define WRITE_AREA (RECV_AREA + RECV_DEPTH * MAX_MSG)
#define READ_AREA (WRITE_AREA + WRITE_SLOTS * MAX_MSG)
#define FAA_WORD (READ_AREA + READ_AREA_SIZE)
#define CAS_WORD (FAA_WORD + 64)
#define SRC_AREA (FAA_WORD + 4096)
#define LANDING_AREA (SRC_AREA + WINDOW * MAX_MSG)
#define RESULT_AREA (LANDING_AREA + WINDOW * LANDING_SLOT_SIZE)
#define BUF_SIZE (RESULT_AREA + WINDOW * 8)

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

enum op_kind { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FAA, OP_CAS, OP_KINDS };

static const char *const op_names[OP_KINDS] = {"SEND", "SEND_IMM", "WRITE", "WRITE_IMM",
					       "READ", "FAA",	   "CAS"};
/* Percentages, cumulative: the atomics last, so that --no-atomics draws from the first 80. */
static const uint8_t cumulative[OP_KINDS] = {20, 30, 50, 60, 80, 90, 100};
#define NO_ATOMICS_RANGE 80

static const enum xr_wc_opcode wc_opcodes[OP_KINDS] = {
    [OP_SEND] = XR_WC_SEND,	   [OP_SEND_IMM] = XR_WC_SEND,
    [OP_WRITE] = XR_WC_RDMA_WRITE, [OP_WRITE_IMM] = XR_WC_RDMA_WRITE,
    [OP_READ] = XR_WC_RDMA_READ,   [OP_FAA] = XR_WC_FETCH_ADD,
    [OP_CAS] = XR_WC_COMP_SWAP,
};

struct op {
	enum op_kind kind;
	uint32_t size;
	uint32_t offset; /* READ: in the read area */
};

/* Whose requests a plan describes: the sender's seed and whether it does atomics. */
struct plan {
	uint32_t seed;
	bool no_atomics;
};

struct counts {
	uint32_t ops, messages, faa, cas;
	uint32_t kind[OP_KINDS];
};

struct side {
	const char *role;
	struct e2e_port port;
	struct e2e_qp_end end;
	uint8_t *buf;
	struct xr_mr *mr;
	int oob_fd;
	struct plan mine, peer;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	unsigned long rate;

	/* Requests. */
	struct counts sent;
	uint32_t completed;
	uint64_t expect[WINDOW]; /* atomics: the original value each must return */
	int64_t max_gap_ms;

	/* Messages from the peer. */
	uint32_t received;
	uint32_t next_peer_op; /* where the next message is looked for in the peer's plan */
	uint64_t recv_posted;
};

static bool failed;
static volatile sig_atomic_t stop_requested;

static void fail(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct side *s, const char *fmt, ...)
{
	va_list ap;

	if (failed)
		return;
	failed = true;
	printf("[%s] FAIL: ", s->role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

static uint32_t op_seed(uint32_t seed, uint32_t seq)
{
	return seed * 0x27d4eb2du ^ (seq + 1) * 0x165667b1u;
}

static uint32_t read_area_seed(uint32_t seed)
{
	return seed ^ 0x5eadu;
}

/* Op seq of a plan: sizes around the 1024-byte path MTU and a few packets long. */
static struct op plan_op(const struct plan *pl, uint32_t seq)
{
	uint32_t h = mix(op_seed(pl->seed, seq)), size_draw = mix(h) % 100, size;
	struct op op = {.kind = 0};
	uint32_t r = h % (pl->no_atomics ? NO_ATOMICS_RANGE : 100);

	while (r >= cumulative[op.kind])
		op.kind++;
	h = mix(h + 1);
	if (size_draw < 3)
		size = 0;
	else if (size_draw < 38)
		size = 1 + h % 64;
	else if (size_draw < 68)
		size = 65 + h % 960;
	else
		size = 1025 + h % (MAX_MSG - 1024);
	if (op.kind == OP_FAA || op.kind == OP_CAS)
		size = 8;
	else if (op.kind != OP_SEND && op.kind != OP_SEND_IMM && size == 0)
		size = 1;
	op.size = size;
	if (op.kind == OP_READ)
		op.offset = mix(h + 2) % (READ_AREA_SIZE - size);
	return op;
}

static bool is_message(enum op_kind kind)
{
	return kind == OP_SEND || kind == OP_SEND_IMM || kind == OP_WRITE_IMM;
}

static struct xr_sge buf_sge(struct side *s, uint32_t off, uint32_t len)
{
	return sge_of(s->mr, s->buf + off, len);
}

/* ---- requests ------------------------------------------------------------ */

static bool post_request(struct side *s)
{
	uint32_t seq = s->sent.ops, slot = seq % WINDOW;
	struct op op = plan_op(&s->mine, seq);
	struct xr_send_wr wr = {.wr_id = seq, .send_flags = XR_SEND_SIGNALED, .num_sge = 1};
	struct xr_send_wr *bad;
	struct xr_sge sge;
	int ret;

	wr.sg_list = &sge;
	wr.imm_data = htonl(seq);
	switch (op.kind) {
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE:
	case OP_WRITE_IMM:
		fill_pattern(s->buf + SRC_AREA + slot * MAX_MSG, op_seed(s->mine.seed, seq), 0,
			     op.size);
		sge = buf_sge(s, SRC_AREA + slot * MAX_MSG, op.size);
		wr.num_sge = op.size ? 1 : 0;
		wr.opcode = op.kind == OP_SEND	     ? XR_WR_SEND
			    : op.kind == OP_SEND_IMM ? XR_WR_SEND_WITH_IMM
			    : op.kind == OP_WRITE    ? XR_WR_RDMA_WRITE
						     : XR_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = s->peer_addr + WRITE_AREA + (seq % WRITE_SLOTS) * MAX_MSG;
		wr.wr.rdma.rkey = s->peer_rkey;
		break;
	case OP_READ:
		memset(s->buf + LANDING_AREA + slot * LANDING_SLOT_SIZE, CANARY, LANDING_SLOT_SIZE);
		sge = buf_sge(s, LANDING_AREA + slot * LANDING_SLOT_SIZE, op.size);
		wr.opcode = XR_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = s->peer_addr + READ_AREA + op.offset;
		wr.wr.rdma.rkey = s->peer_rkey;
		break;
	case OP_FAA:
	case OP_CAS:
		store64(s->buf + RESULT_AREA + slot * 8, ~0ull);
		sge = buf_sge(s, RESULT_AREA + slot * 8, 8);
		wr.opcode =
		    op.kind == OP_FAA ? XR_WR_ATOMIC_FETCH_AND_ADD : XR_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = s->peer_addr + (op.kind == OP_FAA ? FAA_WORD : CAS_WORD);
		wr.wr.atomic.rkey = s->peer_rkey;
		s->expect[slot] = op.kind == OP_FAA ? s->sent.faa : s->sent.cas;
		wr.wr.atomic.compare_add = op.kind == OP_FAA ? 1 : s->sent.cas;
		wr.wr.atomic.swap = s->sent.cas + 1ull;
		break;
	case OP_KINDS:
		break;
	}
	ret = xr_post_send(s->end.qp, &wr, &bad);
	if (ret) {
		fail(s, "xr_post_send of op %u (%s): %s", seq, op_names[op.kind], strerror(-ret));
		return false;
	}
	s->sent.ops++;
	s->sent.kind[op.kind]++;
	s->sent.messages += is_message(op.kind);
	s->sent.faa += op.kind == OP_FAA;
	s->sent.cas += op.kind == OP_CAS;
	return true;
}

static bool check_request_completion(struct side *s, const struct xr_wc *wc)
{
	uint32_t seq = s->completed, slot = seq % WINDOW;
	struct op op = plan_op(&s->mine, seq);
	const uint8_t *data;
	ssize_t bad;

	if (wc->wr_id != seq || wc->status != XR_WC_SUCCESS || wc->opcode != wc_opcodes[op.kind]) {
		fail(s, "op %u (%s, %u B): completion wr_id %" PRIu64 " \"%s\" opcode %d", seq,
		     op_names[op.kind], op.size, wc->wr_id, xr_wc_status_str(wc->status),
		     wc->opcode);
		return false;
	}
	switch (op.kind) {
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE:
	case OP_WRITE_IMM:
		data = s->buf + SRC_AREA + slot * MAX_MSG;
		bad = pattern_mismatch(data, op_seed(s->mine.seed, seq), 0, op.size);
		if (bad >= 0) {
			fail(s, "op %u (%s, %u B): byte %zd of its source buffer changed", seq,
			     op_names[op.kind], op.size, bad);
			return false;
		}
		break;
	case OP_READ:
		data = s->buf + LANDING_AREA + slot * LANDING_SLOT_SIZE;
		bad = pattern_mismatch(data, read_area_seed(s->peer.seed), op.offset, op.size);
		if (bad >= 0) {
			fail(s, "op %u (READ, %u B): byte %zd is wrong", seq, op.size, bad);
			return false;
		}
		for (uint32_t k = op.size; k < LANDING_SLOT_SIZE; k++)
			if (data[k] != CANARY) {
				fail(s, "op %u (READ, %u B): wrote past its buffer", seq, op.size);
				return false;
			}
		break;
	case OP_FAA:
	case OP_CAS:
		if (load64(s->buf + RESULT_AREA + slot * 8) != s->expect[slot]) {
			fail(s, "op %u (%s): returned %" PRIu64 ", expected %" PRIu64, seq,
			     op_names[op.kind], load64(s->buf + RESULT_AREA + slot * 8),
			     s->expect[slot]);
			return false;
		}
		break;
	case OP_KINDS:
		break;
	}
	s->completed++;
	return true;
}

/* ---- messages from the peer ----------------------------------------------- */

static bool post_receive(struct side *s)
{
	uint64_t k = s->recv_posted++;
	struct xr_sge sge = buf_sge(s, RECV_AREA + (uint32_t)(k % RECV_DEPTH) * MAX_MSG, MAX_MSG);
	struct xr_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(s->end.qp, &wr, &bad);

	if (ret)
		fail(s, "xr_post_recv: %s", strerror(-ret));
	return !ret;
}

static bool check_message(struct side *s, const struct xr_wc *wc, uint32_t peer_ops)
{
	uint32_t seq = s->next_peer_op;
	struct op op;
	bool imm;
	const uint8_t *data;
	ssize_t bad;

	/* The peer's plan is endless; while it runs, only its count bounds the search. */
	while (!is_message(plan_op(&s->peer, seq).kind) && seq < peer_ops)
		seq++;
	op = plan_op(&s->peer, seq);
	if (seq >= peer_ops) {
		fail(s, "message %u beyond the %u ops the peer posted", s->received, peer_ops);
		return false;
	}
	imm = op.kind != OP_SEND;
	if (wc->wr_id != s->received || wc->status != XR_WC_SUCCESS ||
	    wc->opcode != (op.kind == OP_WRITE_IMM ? XR_WC_RECV_RDMA_WITH_IMM : XR_WC_RECV) ||
	    wc->byte_len != op.size || !!(wc->wc_flags & XR_WC_WITH_IMM) != imm ||
	    (imm && wc->imm_data != htonl(seq))) {
		fail(s,
		     "message %u (peer op %u, %s, %u B): wr_id %" PRIu64
		     " \"%s\" opcode %d, %u B, flags 0x%x, imm %u",
		     s->received, seq, op_names[op.kind], op.size, wc->wr_id,
		     xr_wc_status_str(wc->status), wc->opcode, wc->byte_len, wc->wc_flags,
		     ntohl(wc->imm_data));
		return false;
	}
	if (op.kind != OP_WRITE_IMM) {
		data = s->buf + RECV_AREA + (uint32_t)(wc->wr_id % RECV_DEPTH) * MAX_MSG;
		bad = pattern_mismatch(data, op_seed(s->peer.seed, seq), 0, op.size);
		if (bad >= 0) {
			fail(s, "message %u (peer op %u, %s, %u B): byte %zd is wrong", s->received,
			     seq, op_names[op.kind], op.size, bad);
			return false;
		}
	}
	s->received++;
	s->next_peer_op = seq + 1;
	return post_receive(s);
}

/* What the peer's requests left in this side's memory, once they are all done. */
static void check_target_memory(struct side *s, const struct counts *peer)
{
	uint32_t last[WRITE_SLOTS];
	bool written[WRITE_SLOTS] = {false};

	for (uint32_t seq = 0; seq < peer->ops; seq++) {
		enum op_kind kind = plan_op(&s->peer, seq).kind;

		if (kind == OP_WRITE || kind == OP_WRITE_IMM) {
			last[seq % WRITE_SLOTS] = seq;
			written[seq % WRITE_SLOTS] = true;
		}
	}
	for (uint32_t slot = 0; slot < WRITE_SLOTS; slot++) {
		const uint8_t *data = s->buf + WRITE_AREA + slot * MAX_MSG;

		if (!written[slot]) {
			for (uint32_t k = 0; k < MAX_MSG; k++)
				if (data[k] != CANARY)
					return fail(s, "write slot %u, never written, changed",
						    slot);
			continue;
		}
		if (pattern_mismatch(data, op_seed(s->peer.seed, last[slot]), 0,
				     plan_op(&s->peer, last[slot]).size) >= 0)
			return fail(s,
				    "write slot %u: the last WRITE into it (peer op %u) is wrong",
				    slot, last[slot]);
	}
	if (pattern_mismatch(s->buf + READ_AREA, read_area_seed(s->mine.seed), 0, READ_AREA_SIZE) >=
	    0)
		return fail(s, "the READ source changed");
	if (load64(s->buf + FAA_WORD) != peer->faa || load64(s->buf + CAS_WORD) != peer->cas)
		return fail(
		    s, "atomic words: FAA %" PRIu64 " (peer did %u), CAS %" PRIu64 " (peer did %u)",
		    load64(s->buf + FAA_WORD), peer->faa, load64(s->buf + CAS_WORD), peer->cas);
}

/* ---- the run ---------------------------------------------------------------- */

static bool poll_receives(struct side *s, uint32_t peer_ops, int *got)
{
	struct xr_wc wc[32];
	int ne = xr_poll_cq(s->end.recv_cq, 32, wc);

	*got = ne > 0 ? ne : 0;
	if (ne < 0) {
		fail(s, "xr_poll_cq: %s", strerror(-ne));
		return false;
	}
	for (int k = 0; k < ne; k++)
		if (!check_message(s, &wc[k], peer_ops))
			return false;
	return true;
}

static void idle(unsigned int *idle_polls)
{
	if (++*idle_polls > TOOL_SPIN_POLLS_BEFORE_SLEEP)
		nanosleep(&(struct timespec){.tv_nsec = TOOL_IDLE_SLEEP_NS}, NULL);
}

/* Posts and checks until SIGUSR1 (or MAX_RUN_MS), then until every request completed. */
static void run_requests(struct side *s, int64_t start)
{
	int64_t last_progress = start;
	unsigned int idle_polls = 0;
	bool stopping = false;

	while (!failed) {
		int64_t now = tool_now_ms();
		uint64_t allowed =
		    s->rate ? (uint64_t)(now - start) * s->rate / 1000 + WINDOW : UINT64_MAX;
		struct xr_wc wc[32];
		int ne, got;

		if (!stopping && (stop_requested || now - start > MAX_RUN_MS)) {
			stopping = true;
			printf("[%s] stop%s\n", s->role, stop_requested ? "" : " (time bound)");
		}
		while (!stopping && s->sent.ops - s->completed < WINDOW && s->sent.ops < allowed)
			if (!post_request(s))
				return;
		if (stopping && s->completed == s->sent.ops)
			return;
		ne = xr_poll_cq(s->end.send_cq, 32, wc);
		if (ne < 0)
			return fail(s, "xr_poll_cq: %s", strerror(-ne));
		for (int k = 0; k < ne; k++)
			if (!check_request_completion(s, &wc[k]))
				return;
		/* Messages the peer has not told the count of yet are bounded by its plan only. */
		if (!poll_receives(s, UINT32_MAX, &got))
			return;
		now = tool_now_ms();
		if (ne > 0 || s->completed == s->sent.ops) {
			if (ne > 0 && now - last_progress > s->max_gap_ms)
				s->max_gap_ms = now - last_progress;
			last_progress = now;
		}
		if (ne > 0 || got > 0) {
			idle_polls = 0;
			continue;
		}
		if (now - last_progress > STALL_TIMEOUT_MS)
			return fail(s, "stalled: %u of %u ops completed, none for %" PRId64 " ms",
				    s->completed, s->sent.ops, now - last_progress);
		idle(&idle_polls);
	}
}

static int send_counts(struct side *s, const struct counts *c, bool ok)
{
	uint32_t msg[5] = {htonl(c->ops), htonl(c->messages), htonl(c->faa), htonl(c->cas),
			   htonl(ok)};

	return oob_write_full(s->oob_fd, msg, sizeof(msg), tool_now_ms() + STALL_TIMEOUT_MS);
}

static int recv_counts(struct side *s, struct counts *c, bool *ok)
{
	uint32_t msg[5];
	int ret = oob_read_full(s->oob_fd, msg, sizeof(msg), tool_now_ms() + STALL_TIMEOUT_MS);

	if (ret)
		return ret;
	*c = (struct counts){.ops = ntohl(msg[0]),
			     .messages = ntohl(msg[1]),
			     .faa = ntohl(msg[2]),
			     .cas = ntohl(msg[3])};
	*ok = msg[4] != 0;
	return 0;
}

/* Receives the peer's counts while taking its last messages, then all of them. */
static void finish_receives(struct side *s, struct counts *peer)
{
	int64_t last_progress = tool_now_ms();
	unsigned int idle_polls = 0;
	bool have_counts = false, peer_ok;
	struct xr_wc wc;
	int ret, got;

	while (!failed && !(have_counts && s->received == peer->messages)) {
		struct pollfd pfd = {.fd = s->oob_fd, .events = POLLIN};

		if (!poll_receives(s, have_counts ? peer->ops : UINT32_MAX, &got))
			return;
		if (got) {
			last_progress = tool_now_ms();
			idle_polls = 0;
			continue;
		}
		if (!have_counts && poll(&pfd, 1, 0) == 1) {
			ret = recv_counts(s, peer, &peer_ok);
			if (ret)
				return fail(s, "lost the peer: %s", oob_error(ret));
			if (!peer_ok)
				return fail(s, "the peer failed");
			have_counts = true;
			last_progress = tool_now_ms();
		}
		if (tool_now_ms() - last_progress > STALL_TIMEOUT_MS)
			return fail(s, "%u messages received; none for %d s", s->received,
				    STALL_TIMEOUT_MS / 1000);
		idle(&idle_polls);
	}
	if (!failed && poll_cq_until(s->end.recv_cq, &wc, 1, 1, tool_now_ms() + QUIET_WAIT_MS))
		fail(s, "a message beyond the %u the peer sent: wr_id %" PRIu64 " \"%s\"",
		     peer->messages, wc.wr_id, xr_wc_status_str(wc.status));
}

static void run(struct side *s)
{
	int64_t start = tool_now_ms();
	struct counts peer = {0};
	bool peer_ok = false;
	double secs;
	int ret;

	printf("[%s] running\n", s->role);
	run_requests(s, start);
	secs = (double)(tool_now_ms() - start) / 1000;
	ret = send_counts(s, &s->sent, !failed);
	if (ret)
		return fail(s, "lost the peer: %s", oob_error(ret));
	if (failed)
		return;
	finish_receives(s, &peer);
	if (!failed)
		check_target_memory(s, &peer);
	/* Both verdicts: a side passes only when the other's checks passed too. */
	ret = oob_write_full(s->oob_fd, &(uint32_t){htonl(!failed)}, 4,
			     tool_now_ms() + STALL_TIMEOUT_MS);
	if (!ret) {
		uint32_t word;

		ret = oob_read_full(s->oob_fd, &word, 4, tool_now_ms() + STALL_TIMEOUT_MS);
		peer_ok = !ret && word != 0;
	}
	if (failed)
		return;
	if (!peer_ok)
		return fail(s, "the peer's checks failed");
	printf("[%s] PASS: %u ops (SEND %u, SEND_IMM %u, WRITE %u, WRITE_IMM %u, READ %u, FAA %u, "
	       "CAS %u) in %.2f s, longest wait for a completion %" PRId64
	       " ms; %u messages from the peer intact, its %u WRITE slots, FAA %u, CAS %u\n",
	       s->role, s->sent.ops, s->sent.kind[OP_SEND], s->sent.kind[OP_SEND_IMM],
	       s->sent.kind[OP_WRITE], s->sent.kind[OP_WRITE_IMM], s->sent.kind[OP_READ],
	       s->sent.kind[OP_FAA], s->sent.kind[OP_CAS], secs, s->max_gap_ms, s->received,
	       WRITE_SLOTS, peer.faa, peer.cas);
}

/* ---- setup ------------------------------------------------------------------ */

static int setup(struct side *s, const struct e2e_args *a)
{
	if (e2e_open_port(PROG, a->ifname, a->gid_index, &s->port) ||
	    e2e_create_qp_end(PROG, &s->port, &s->end, 2 * WINDOW, RECV_DEPTH, 1, remote_all))
		return -1;
	/* C11 wants the size a multiple of the alignment (ASan enforces it). */
	s->buf = aligned_alloc(4096, (BUF_SIZE + 4095) & ~4095u);
	if (!s->buf) {
		fprintf(stderr, PROG ": couldn't allocate %u bytes\n", BUF_SIZE);
		return -1;
	}
	memset(s->buf, CANARY, BUF_SIZE);
	fill_pattern(s->buf + READ_AREA, read_area_seed(s->mine.seed), 0, READ_AREA_SIZE);
	store64(s->buf + FAA_WORD, 0);
	store64(s->buf + CAS_WORD, 0);
	s->mr = xr_reg_mr(s->port.pd, s->buf, BUF_SIZE, remote_all);
	if (!s->mr) {
		fprintf(stderr, PROG ": couldn't register memory: %s\n", strerror(errno));
		return -1;
	}
	/* Every receive is posted before the peer learns the QP. */
	for (int k = 0; k < RECV_DEPTH; k++)
		if (!post_receive(s))
			return -1;
	return 0;
}

static int connect_peer(struct side *s, const struct e2e_args *a)
{
	uint32_t words[8] = {s->end.qp->qp_num,
			     s->end.psn,
			     s->mr->rkey,
			     (uint32_t)((uintptr_t)s->buf >> 32),
			     (uint32_t)(uintptr_t)s->buf,
			     s->mine.seed,
			     s->mine.no_atomics,
			     s->port.mtu_enum};
	uint32_t peer[8];
	union xr_gid peer_gid;
	int ret;

	s->oob_fd = e2e_oob_open(a->server_ip, a->port, E2E_ACCEPT_TIMEOUT_MS, E2E_CONNECT_RETRY_MS,
				 E2E_OOB_TIMEOUT_MS);
	if (s->oob_fd < 0)
		return -1;
	ret = e2e_send_hello(s->oob_fd, HELLO_MAGIC, words, 8, &s->port.gid);
	if (!ret)
		ret = e2e_recv_hello(s->oob_fd, HELLO_MAGIC, peer, 8, &peer_gid);
	if (ret) {
		fprintf(stderr, PROG ": hello exchange failed: %s\n", oob_error(ret));
		return -1;
	}
	s->peer_rkey = peer[2];
	s->peer_addr = (uint64_t)peer[3] << 32 | peer[4];
	s->peer = (struct plan){.seed = peer[5], .no_atomics = peer[6] != 0};
	if (e2e_agree_mtu(PROG, &s->port, peer[7]) ||
	    e2e_connect_qp(PROG, &s->port, &s->end, RD_ATOMIC, peer[0], peer[1], &peer_gid))
		return -1;
	printf("[%s] qp local 0x%06x peer 0x%06x, path MTU %u\n", s->role, s->end.qp->qp_num,
	       peer[0], e2e_mtu_bytes(s->port.mtu_enum));
	/* Neither side sends before the other's QP is connected: the one READY word each way. */
	ret =
	    oob_write_full(s->oob_fd, &(uint32_t){htonl(1)}, 4, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
	if (!ret)
		ret = oob_read_full(s->oob_fd, words, 4, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
	if (ret) {
		fprintf(stderr, PROG ": lost the peer while connecting: %s\n", oob_error(ret));
		return -1;
	}
	return 0;
}

static void teardown(struct side *s)
{
	if (s->oob_fd >= 0)
		close(s->oob_fd);
	e2e_destroy_qp_end(&s->end);
	if (s->mr)
		xr_dereg_mr(s->mr);
	free(s->buf);
	e2e_close_port(&s->port);
}

/* Takes --rate and --no-atomics out of argv, for e2e_parse_args to read the rest. */
static bool take_own_options(int *argc, char **argv, struct side *s)
{
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--no-atomics")) {
			s->mine.no_atomics = true;
		} else if (!strcmp(argv[i], "--rate")) {
			if (i + 1 >= *argc || !parse_ulong(argv[i + 1], 1000000, &s->rate))
				return false;
			i++;
		} else {
			argv[out++] = argv[i];
		}
	}
	*argc = out;
	return true;
}

int main(int argc, char **argv)
{
	struct side s = {.oob_fd = -1, .rate = DEFAULT_RATE};
	struct e2e_args args = {.port = DEFAULT_PORT};
	struct sigaction sa = {.sa_handler = on_stop};

	if (!take_own_options(&argc, argv, &s) || !e2e_parse_args(argc, argv, &args)) {
		fprintf(stderr,
			"usage: " PROG " server IFNAME [-p PORT] [--rate OPS] [--no-atomics]\n"
			"       " PROG " client IFNAME SERVER_IP [-p PORT] [--rate OPS] "
			"[--no-atomics]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGUSR1, &sa, NULL);
	srand48(getpid() ^ time(NULL));
	s.role = args.role;
	s.mine.seed = args.is_server ? 0x5e77e7u : 0xc11e47u;
	if (setup(&s, &args) || connect_peer(&s, &args)) {
		printf("[%s] FAIL: setup\n", s.role);
		teardown(&s);
		return 1;
	}
	run(&s);
	teardown(&s);
	return failed ? 1 : 0;
}
