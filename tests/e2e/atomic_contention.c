/* SPDX-License-Identifier: MIT */
/*
 * atomic_contention: remote atomics from two initiator processes, and the
 * target's own CPU, on the same words, through the XDP program and AF_XDP.
 *
 *   atomic_contention target IFNAME IFNAME [-p PORT]
 *   atomic_contention initiator IFNAME TARGET_IP ID [-p PORT]    (ID 1 or 2)
 *
 * A process owns the interfaces it opens, so the two initiators live in two
 * namespaces, each joined to the target's namespace by its own veth pair;
 * the target process opens both of its interfaces (one xroce device each)
 * and registers the same memory on both. A bridge would need XDP on every
 * bridge port for redirected frames; two point-to-point links need nothing
 * but xroce on each end.
 *
 * The target exposes an 8-byte counter, an 8-byte lock word and a 64-byte
 * shared record (REMOTE_ATOMIC | REMOTE_WRITE | REMOTE_READ), each surrounded
 * by canary bytes.
 *
 * Phase 1: each initiator does FAA_PER_INITIATOR fetch-and-adds of 1 on the
 * counter, FAA_DEPTH at a time, while a thread of the target adds 1
 * LOCAL_ADDS times with __atomic_fetch_add. The final value must be exact,
 * and the original values returned to all three (sent to the target over the
 * out-of-band connection) must be 0 .. total-1, each exactly once.
 *
 * Phase 2: a spin lock on the lock word (acquire: CAS 0 -> ID; release:
 * CAS ID -> 0, posted right behind the WRITE of the record, which RC
 * executes first) guards read-modify-write cycles of the record (READ it,
 * increment two counters and the initiator's own, WRITE it back). After
 * CS_PER_INITIATOR sections each, both counters equal the total: no update
 * was lost, and no section saw a half-written record.
 *
 * Each process prints one line per phase with the target's verdict; the
 * exit status is 1 when anything failed.
 */
#include <pthread.h>
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "atomic_contention"
#define DEFAULT_PORT 18783

#define N_INITIATORS 2
#define FAA_PER_INITIATOR 40000
#define LOCAL_ADDS 20000
#define TOTAL_ADDS (N_INITIATORS * FAA_PER_INITIATOR + LOCAL_ADDS)
#define CS_PER_INITIATOR 5000
#define TOTAL_CS (N_INITIATORS * CS_PER_INITIATOR)
/* Fetch-and-adds in flight per initiator (capped by the device's max_qp_rd_atom). */
#define FAA_DEPTH 16

/*
 * The local thread adds once per REMOTE_PER_LOCAL remote adds it sees, so its
 * adds spread over the whole remote run instead of finishing first.
 */
#define REMOTE_PER_LOCAL ((N_INITIATORS * FAA_PER_INITIATOR) / LOCAL_ADDS)
#define LOCAL_PACE_MAX_NS 2000000

/* Bounds on every wait. */
#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_RETRY_MS 20000
#define OOB_TIMEOUT_MS 30000
#define PHASE_TIMEOUT_MS 60000
#define OP_TIMEOUT_MS 10000

/* After a lost CAS, wait this long plus up to as much again before the next try. */
#define LOCK_BACKOFF_NS 20000

/* The shared block of the target: three registered areas with canaries between. */
#define CANARY 0xc5
#define BLOCK_SIZE 4096
#define COUNTER_OFFSET 64
#define LOCK_OFFSET 192
#define RECORD_OFFSET 320
#define RECORD_SIZE 64

/* The record's 8 words. */
enum {
	REC_A,
	REC_B,
	REC_BY_1, /* sections of initiator 1 */
	REC_BY_2,
	REC_LAST_HOLDER,
	REC_MAGIC, /* REC_MAGIC.. keep their values: a WRITE of a torn copy would change them */
	REC_WORDS = RECORD_SIZE / 8,
};
#define RECORD_MAGIC 0x5ec0de0000000000ull

static const int remote_all = XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
			      XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC;

enum area { AREA_COUNTER, AREA_LOCK, AREA_RECORD, N_AREAS };

static const struct {
	uint32_t offset, size;
} areas[N_AREAS] = {
    [AREA_COUNTER] = {COUNTER_OFFSET, 8},
    [AREA_LOCK] = {LOCK_OFFSET, 8},
    [AREA_RECORD] = {RECORD_OFFSET, RECORD_SIZE},
};

struct remote_area {
	uint64_t addr;
	uint32_t rkey;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ns(long ns)
{
	nanosleep(&(struct timespec){.tv_nsec = ns}, NULL);
}

/* ---- out-of-band messages --------------------------------------------------- */

/* A message being built or parsed: big-endian fields at a cursor. */
struct wire {
	uint8_t bytes[128];
	size_t pos;
};

static void put32(struct wire *w, uint32_t v)
{
	uint32_t be = htonl(v);

	memcpy(w->bytes + w->pos, &be, 4);
	w->pos += 4;
}

static void put64(struct wire *w, uint64_t v)
{
	put32(w, (uint32_t)(v >> 32));
	put32(w, (uint32_t)v);
}

static void put_bytes(struct wire *w, const void *p, size_t n)
{
	memcpy(w->bytes + w->pos, p, n);
	w->pos += n;
}

static uint32_t get32(struct wire *w)
{
	uint32_t be;

	memcpy(&be, w->bytes + w->pos, 4);
	w->pos += 4;
	return ntohl(be);
}

static uint64_t get64(struct wire *w)
{
	uint64_t hi = get32(w);

	return hi << 32 | get32(w);
}

static void get_bytes(struct wire *w, void *p, size_t n)
{
	memcpy(p, w->bytes + w->pos, n);
	w->pos += n;
}

#define HELLO_MAGIC 0x58524154u /* "XRAT" */

/* initiator -> target */
struct initiator_hello {
	uint32_t id, qpn, psn, mtu_enum;
	union xr_gid gid;
};
#define INITIATOR_HELLO_SIZE (4 * 5 + 16)

/* target -> initiator */
struct target_hello {
	uint32_t qpn, psn, mtu_enum;
	union xr_gid gid;
	struct remote_area area[N_AREAS];
};
#define TARGET_HELLO_SIZE (4 * 4 + 16 + 12 * N_AREAS)

enum msg_kind {
	MSG_READY = 1, /* initiator: QP connected */
	MSG_GO,	       /* target: start phase 1 */
	MSG_FAA_DONE,  /* initiator: verdict, count; FAA_PER_INITIATOR values follow */
	MSG_GO_LOCK,   /* target: phase 1 verdict; start phase 2 */
	MSG_LOCK_DONE, /* initiator: verdict, lost CAS attempts */
	MSG_FINAL,     /* target: phase 2 verdict */
};

struct msg {
	uint32_t kind;
	uint32_t ok;
	uint64_t value;
};
#define MSG_SIZE 16

static int send_msg(int fd, enum msg_kind kind, bool ok, uint64_t value)
{
	struct wire w = {0};

	put32(&w, kind);
	put32(&w, ok);
	put64(&w, value);
	return oob_write_full(fd, w.bytes, w.pos, tool_now_ms() + OOB_TIMEOUT_MS);
}

static int recv_msg(int fd, enum msg_kind kind, struct msg *m, int timeout_ms)
{
	struct wire w = {0};
	int ret = oob_read_full(fd, w.bytes, MSG_SIZE, tool_now_ms() + timeout_ms);

	if (ret)
		return ret;
	m->kind = get32(&w);
	m->ok = get32(&w);
	m->value = get64(&w);
	return m->kind == (uint32_t)kind ? 0 : -EPROTO;
}

/* ---- verbs helpers -------------------------------------------------------- */

struct qp_end {
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_qp *qp;
	uint32_t psn;
};

/* Opens ifname's device; its IPv4 GID, active MTU and initiator depth. */
static struct xr_device *open_device(const char *ifname, union xr_gid *gid, int *gid_index,
				     enum xr_mtu *mtu, uint32_t *max_rd_atom)
{
	struct xr_device_attr attr;
	struct xr_device *dev = tool_open_device(PROG, ifname);

	if (!dev)
		return NULL;
	*gid_index = find_ipv4_gid(dev, &attr, gid);
	if (*gid_index < 0) {
		fprintf(stderr, PROG ": no IPv4 GID on %s: %s\n", ifname, strerror(-*gid_index));
		xr_close_device(dev);
		return NULL;
	}
	*mtu = attr.active_mtu;
	*max_rd_atom = attr.max_qp_rd_atom < FAA_DEPTH ? attr.max_qp_rd_atom : FAA_DEPTH;
	return dev;
}

static int create_qp_end(struct xr_device *dev, struct xr_pd *pd, struct qp_end *end,
			 uint32_t send_wr)
{
	struct xr_qp_init_attr init = {
	    .cap = {.max_send_wr = send_wr, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = XR_QPT_RC,
	};
	int ret;

	end->send_cq = xr_create_cq(dev, 2 * send_wr, NULL);
	end->recv_cq = xr_create_cq(dev, 2, NULL);
	if (!end->send_cq || !end->recv_cq) {
		fprintf(stderr, PROG ": couldn't create CQ: %s\n", strerror(errno));
		return -1;
	}
	init.send_cq = end->send_cq;
	init.recv_cq = end->recv_cq;
	end->qp = xr_create_qp(pd, &init);
	if (!end->qp) {
		fprintf(stderr, PROG ": couldn't create QP: %s\n", strerror(errno));
		return -1;
	}
	ret = qp_to_init(end->qp, 1, remote_all);
	if (ret) {
		fprintf(stderr, PROG ": couldn't move QP to INIT: %s\n", strerror(-ret));
		return -1;
	}
	end->psn = lrand48() & 0xffffff;
	return 0;
}

static int connect_qp(struct qp_end *end, enum xr_mtu mtu, uint32_t rd_atom, uint32_t dest_qpn,
		      uint32_t dest_psn, const union xr_gid *dgid, int sgid_index)
{
	struct qp_rtr_attr rtr = {
	    .path_mtu = mtu,
	    .dest_qpn = dest_qpn,
	    .rq_psn = dest_psn,
	    .dgid = *dgid,
	    .sgid_index = (uint8_t)sgid_index,
	    .port_num = 1,
	    .hop_limit = 64,
	    .max_dest_rd_atomic = (uint8_t)rd_atom,
	    .min_rnr_timer = 1,
	};
	const char *failed;
	int ret = qp_connect(end->qp, &rtr, end->psn, (uint8_t)rd_atom, &failed);

	if (ret)
		fprintf(stderr, PROG ": couldn't move QP to %s: %s\n", failed, strerror(-ret));
	return ret ? -1 : 0;
}

static void destroy_qp_end(struct qp_end *end)
{
	if (end->qp)
		xr_destroy_qp(end->qp);
	if (end->send_cq)
		xr_destroy_cq(end->send_cq);
	if (end->recv_cq)
		xr_destroy_cq(end->recv_cq);
}

static bool post(struct xr_qp *qp, struct xr_send_wr *wr, struct report *r)
{
	struct xr_send_wr *bad;
	int ret = xr_post_send(qp, wr, &bad);

	if (ret)
		report_fail(r, "xr_post_send: %s", strerror(-ret));
	return !ret;
}

/* ---- the initiator ---------------------------------------------------------- */

struct initiator {
	uint32_t id;
	struct xr_device *dev;
	struct xr_pd *pd;
	struct qp_end end;
	union xr_gid gid;
	int gid_index;
	enum xr_mtu mtu;
	uint32_t rd_atom;
	/* FAA results, then the CAS result word and the local copy of the record. */
	uint8_t *buf;
	struct xr_mr *mr;
	struct remote_area area[N_AREAS];
	int oob_fd;
};

/* Rounded up to whole pages, as aligned_alloc requires. */
#define INIT_BUF_SIZE ((FAA_PER_INITIATOR * 8 + 8 + RECORD_SIZE + 4095) & ~4095)
#define CAS_RESULT_OFFSET (FAA_PER_INITIATOR * 8)
#define RECORD_COPY_OFFSET (CAS_RESULT_OFFSET + 8)

static struct xr_send_wr atomic_wr(uint64_t wr_id, enum xr_wr_opcode opcode, struct xr_sge *sge,
				   const struct remote_area *a, uint64_t compare_add, uint64_t swap)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = opcode,
				.send_flags = XR_SEND_SIGNALED};

	wr.wr.atomic.remote_addr = a->addr;
	wr.wr.atomic.rkey = a->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

static struct xr_send_wr rdma_wr(uint64_t wr_id, enum xr_wr_opcode opcode, struct xr_sge *sge,
				 const struct remote_area *a)
{
	struct xr_send_wr wr = {.wr_id = wr_id,
				.sg_list = sge,
				.num_sge = 1,
				.opcode = opcode,
				.send_flags = XR_SEND_SIGNALED};

	wr.wr.rdma.remote_addr = a->addr;
	wr.wr.rdma.rkey = a->rkey;
	return wr;
}

static uint64_t result_at(const struct initiator *in, size_t offset)
{
	uint64_t v;

	memcpy(&v, in->buf + offset, 8);
	return v;
}

/*
 * FAA_PER_INITIATOR fetch-and-adds of 1, rd_atom in flight. One QP's atomics
 * execute in order, so the values it gets back increase strictly; a step
 * larger than 1 is someone else's add in between.
 */
static void run_faa(struct initiator *in, struct report *r, uint32_t *interleaved)
{
	int64_t deadline = tool_now_ms() + PHASE_TIMEOUT_MS;
	uint32_t posted = 0, completed = 0;
	double start = now_s();

	*interleaved = 0;
	while (completed < FAA_PER_INITIATOR) {
		struct xr_wc wc[FAA_DEPTH];
		int got;

		while (posted < FAA_PER_INITIATOR && posted - completed < in->rd_atom) {
			struct xr_sge sge = {.addr = (uintptr_t)in->buf + (size_t)posted * 8,
					     .length = 8,
					     .lkey = in->mr->lkey};
			struct xr_send_wr wr = atomic_wr(posted, XR_WR_ATOMIC_FETCH_AND_ADD, &sge,
							 &in->area[AREA_COUNTER], 1, 0);

			if (!post(in->end.qp, &wr, r))
				return;
			posted++;
		}
		got = poll_cq_until(in->end.send_cq, wc, 1, 1, deadline);
		if (got == 0)
			return report_fail(r, "%u of %d FAAs completed within %d s", completed,
					   FAA_PER_INITIATOR, PHASE_TIMEOUT_MS / 1000);
		got += xr_poll_cq(in->end.send_cq, FAA_DEPTH - 1, wc + 1);
		for (int i = 0; i < got; i++, completed++)
			if (!check_wc(&wc[i], completed, XR_WC_SUCCESS, XR_WC_FETCH_ADD, r))
				return;
	}
	for (uint32_t i = 1; i < FAA_PER_INITIATOR; i++) {
		uint64_t prev = result_at(in, (size_t)(i - 1) * 8),
			 v = result_at(in, (size_t)i * 8);

		if (v <= prev)
			return report_fail(r,
					   "FAA %u returned %" PRIu64 " after %" PRIu64
					   ": not increasing on one QP",
					   i, v, prev);
		*interleaved += v - prev > 1;
	}
	report_ok(r, "%d FAAs at depth %u in %.1f s; returned values increase, %u steps > 1",
		  FAA_PER_INITIATOR, in->rd_atom, now_s() - start, *interleaved);
}

/* Runs one WR chain and checks its n completions, in order, by wr_id. */
static bool run_chain(struct initiator *in, struct xr_send_wr *wr, int n, struct report *r,
		      const enum xr_wc_opcode *opcodes)
{
	struct xr_wc wc[2];

	if (!post(in->end.qp, wr, r))
		return false;
	if (poll_cq_until(in->end.send_cq, wc, n, n, tool_now_ms() + OP_TIMEOUT_MS) != n) {
		report_fail(r, "no completion within %d s", OP_TIMEOUT_MS / 1000);
		return false;
	}
	for (int i = 0; i < n; i++, wr = wr->next)
		if (!check_wc(&wc[i], wr->wr_id, XR_WC_SUCCESS, opcodes[i], r))
			return false;
	return true;
}

static bool cas_lock(struct initiator *in, uint64_t compare, uint64_t swap, uint64_t *old,
		     struct report *r)
{
	static const enum xr_wc_opcode op[] = {XR_WC_COMP_SWAP};
	struct xr_sge sge = {
	    .addr = (uintptr_t)in->buf + CAS_RESULT_OFFSET, .length = 8, .lkey = in->mr->lkey};
	struct xr_send_wr wr =
	    atomic_wr(1, XR_WR_ATOMIC_CMP_AND_SWP, &sge, &in->area[AREA_LOCK], compare, swap);

	if (!run_chain(in, &wr, 1, r, op))
		return false;
	*old = result_at(in, CAS_RESULT_OFFSET);
	return true;
}

/* One critical section: acquire, READ, check, update, WRITE back + release. */
static bool critical_section(struct initiator *in, uint32_t n, uint64_t *lost_cas, int64_t deadline,
			     struct report *r)
{
	static const enum xr_wc_opcode read_op[] = {XR_WC_RDMA_READ};
	static const enum xr_wc_opcode write_release_op[] = {XR_WC_RDMA_WRITE, XR_WC_COMP_SWAP};
	uint64_t *rec = (uint64_t *)(in->buf + RECORD_COPY_OFFSET);
	struct xr_sge rec_sge = {
	    .addr = (uintptr_t)rec, .length = RECORD_SIZE, .lkey = in->mr->lkey};
	struct xr_sge cas_sge = {
	    .addr = (uintptr_t)in->buf + CAS_RESULT_OFFSET, .length = 8, .lkey = in->mr->lkey};
	struct xr_send_wr rd = rdma_wr(2, XR_WR_RDMA_READ, &rec_sge, &in->area[AREA_RECORD]);
	struct xr_send_wr wr[2] = {
	    rdma_wr(3, XR_WR_RDMA_WRITE, &rec_sge, &in->area[AREA_RECORD]),
	    atomic_wr(4, XR_WR_ATOMIC_CMP_AND_SWP, &cas_sge, &in->area[AREA_LOCK], in->id, 0),
	};
	uint64_t old;

	for (;;) {
		if (!cas_lock(in, 0, in->id, &old, r))
			return false;
		if (old == 0)
			break;
		if (old != 3 - in->id) {
			report_fail(r, "section %u: lock word holds %" PRIu64, n, old);
			return false;
		}
		++*lost_cas;
		if (tool_now_ms() >= deadline) {
			report_fail(r, "section %u: lock not acquired within the phase", n);
			return false;
		}
		sleep_ns(LOCK_BACKOFF_NS + lrand48() % LOCK_BACKOFF_NS);
	}
	if (!run_chain(in, &rd, 1, r, read_op))
		return false;
	if (rec[REC_A] != rec[REC_B] || rec[REC_A] != rec[REC_BY_1] + rec[REC_BY_2]) {
		report_fail(r,
			    "section %u read an inconsistent record: a %" PRIu64 ", b %" PRIu64
			    ", by 1 %" PRIu64 ", by 2 %" PRIu64,
			    n, rec[REC_A], rec[REC_B], rec[REC_BY_1], rec[REC_BY_2]);
		return false;
	}
	for (int w = REC_MAGIC; w < REC_WORDS; w++)
		if (rec[w] != (RECORD_MAGIC | (uint64_t)w)) {
			report_fail(r, "section %u: record word %d is 0x%016" PRIx64, n, w, rec[w]);
			return false;
		}
	rec[REC_A]++;
	rec[REC_B]++;
	rec[in->id == 1 ? REC_BY_1 : REC_BY_2]++;
	rec[REC_LAST_HOLDER] = in->id;
	wr[0].next = &wr[1];
	if (!run_chain(in, wr, 2, r, write_release_op))
		return false;
	old = result_at(in, CAS_RESULT_OFFSET);
	if (old != in->id) {
		report_fail(r, "section %u: release found the lock word at %" PRIu64 ", not %u", n,
			    old, in->id);
		return false;
	}
	return true;
}

static void run_lock(struct initiator *in, struct report *r, uint64_t *lost_cas)
{
	int64_t deadline = tool_now_ms() + PHASE_TIMEOUT_MS;
	double start = now_s();

	*lost_cas = 0;
	for (uint32_t n = 0; n < CS_PER_INITIATOR; n++)
		if (!critical_section(in, n, lost_cas, deadline, r))
			return;
	report_ok(r,
		  "%d critical sections in %.1f s, each read a consistent record; %" PRIu64
		  " lost CAS attempts",
		  CS_PER_INITIATOR, now_s() - start, *lost_cas);
}

static int initiator_exchange(struct initiator *in, const char *target_ip, unsigned int port)
{
	struct wire w = {0};
	struct target_hello th;
	int ret;

	in->oob_fd =
	    e2e_oob_open(target_ip, port, ACCEPT_TIMEOUT_MS, CONNECT_RETRY_MS, OOB_TIMEOUT_MS);
	if (in->oob_fd < 0)
		return -1;
	put32(&w, HELLO_MAGIC);
	put32(&w, in->id);
	put32(&w, in->end.qp->qp_num);
	put32(&w, in->end.psn);
	put32(&w, in->mtu);
	put_bytes(&w, in->gid.raw, 16);
	ret = oob_write_full(in->oob_fd, w.bytes, w.pos, tool_now_ms() + OOB_TIMEOUT_MS);
	w.pos = 0;
	if (!ret)
		ret = oob_read_full(in->oob_fd, w.bytes, TARGET_HELLO_SIZE,
				    tool_now_ms() + OOB_TIMEOUT_MS);
	if (!ret && get32(&w) != HELLO_MAGIC)
		ret = -EPROTO;
	if (ret) {
		fprintf(stderr, PROG ": exchange with the target failed: %s\n", oob_error(ret));
		return -1;
	}
	th.qpn = get32(&w);
	th.psn = get32(&w);
	th.mtu_enum = get32(&w);
	get_bytes(&w, th.gid.raw, 16);
	for (int a = 0; a < N_AREAS; a++) {
		in->area[a].addr = get64(&w);
		in->area[a].rkey = get32(&w);
	}
	if (th.mtu_enum < in->mtu)
		in->mtu = th.mtu_enum;
	if (connect_qp(&in->end, in->mtu, in->rd_atom, th.qpn, th.psn, &th.gid, in->gid_index))
		return -1;
	ret = send_msg(in->oob_fd, MSG_READY, true, 0);
	if (ret) {
		fprintf(stderr, PROG ": couldn't tell the target: %s\n", oob_error(ret));
		return -1;
	}
	return 0;
}

/* Returns 0 when both phases passed on this side and at the target. */
static int initiator_run(struct initiator *in)
{
	char role[16];
	struct report faa = {0}, lock = {0};
	uint32_t interleaved;
	uint64_t lost_cas;
	struct msg m;
	int ret;

	snprintf(role, sizeof(role), "initiator %u", in->id);
	ret = recv_msg(in->oob_fd, MSG_GO, &m, PHASE_TIMEOUT_MS);
	if (ret)
		goto lost;
	run_faa(in, &faa, &interleaved);
	ret = send_msg(in->oob_fd, MSG_FAA_DONE, !faa.failed, interleaved);
	if (!ret) {
		/* The values for the target's once-each check, in host order (same machine). */
		ret = oob_write_full(in->oob_fd, in->buf, (size_t)FAA_PER_INITIATOR * 8,
				     tool_now_ms() + PHASE_TIMEOUT_MS);
	}
	if (!ret)
		ret = recv_msg(in->oob_fd, MSG_GO_LOCK, &m, 2 * PHASE_TIMEOUT_MS);
	if (ret)
		goto lost;
	printf("[%s] %-4s FAA contention: %s; target %s\n", role, faa.failed ? "FAIL" : "ok",
	       faa.detail, m.ok ? "ok" : "FAIL");
	if (!m.ok)
		faa.failed = true;
	run_lock(in, &lock, &lost_cas);
	ret = send_msg(in->oob_fd, MSG_LOCK_DONE, !lock.failed, lost_cas);
	if (!ret)
		ret = recv_msg(in->oob_fd, MSG_FINAL, &m, 2 * PHASE_TIMEOUT_MS);
	if (ret)
		goto lost;
	printf("[%s] %-4s CAS spin lock: %s; target %s\n", role, lock.failed ? "FAIL" : "ok",
	       lock.detail, m.ok ? "ok" : "FAIL");
	if (!m.ok)
		lock.failed = true;
	printf("[%s] %s\n", role, faa.failed || lock.failed ? "FAIL" : "PASS");
	return faa.failed || lock.failed ? -1 : 0;
lost:
	fprintf(stderr, PROG ": %s lost the target: %s\n", role, oob_error(ret));
	return -1;
}

static int initiator_main(const char *ifname, const char *target_ip, uint32_t id, unsigned int port)
{
	struct initiator in = {.id = id, .oob_fd = -1};
	int ret = -1;

	in.dev = open_device(ifname, &in.gid, &in.gid_index, &in.mtu, &in.rd_atom);
	if (!in.dev)
		return 1;
	in.pd = xr_alloc_pd(in.dev);
	in.buf = aligned_alloc(4096, INIT_BUF_SIZE);
	if (!in.pd || !in.buf) {
		fprintf(stderr, PROG ": couldn't allocate PD or buffer\n");
		goto out;
	}
	in.mr = xr_reg_mr(in.pd, in.buf, INIT_BUF_SIZE, XR_ACCESS_LOCAL_WRITE);
	if (!in.mr) {
		fprintf(stderr, PROG ": couldn't register an MR: %s\n", strerror(errno));
		goto out;
	}
	if (create_qp_end(in.dev, in.pd, &in.end, 2 * FAA_DEPTH) ||
	    initiator_exchange(&in, target_ip, port))
		goto out;
	ret = initiator_run(&in);
out:
	if (in.oob_fd >= 0)
		close(in.oob_fd);
	destroy_qp_end(&in.end);
	if (in.mr)
		xr_dereg_mr(in.mr);
	if (in.pd)
		xr_dealloc_pd(in.pd);
	xr_close_device(in.dev);
	free(in.buf);
	return ret ? 1 : 0;
}

/* ---- the target -------------------------------------------------------------- */

struct target_dev {
	const char *ifname;
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_mr *mr[N_AREAS];
	union xr_gid gid;
	int gid_index;
	enum xr_mtu mtu;
	uint32_t rd_atom;
};

struct target_peer {
	int oob_fd;
	uint32_t id;
	struct target_dev *tdev;
	struct qp_end end;
	uint64_t *values;
	uint32_t interleaved;
	uint64_t lost_cas;
	bool faa_ok, lock_ok;
};

struct target {
	struct target_dev devs[N_INITIATORS];
	struct target_peer peers[N_INITIATORS];
	uint8_t *block;
	/* The local adder. */
	pthread_t thread;
	bool thread_started;
	bool remote_done;
	uint64_t local_values[LOCAL_ADDS];
	uint32_t local_interleaved;
};

static uint64_t *block_word(struct target *t, uint32_t offset)
{
	return (uint64_t *)(t->block + offset);
}

/*
 * Adds 1 LOCAL_ADDS times, each after the remote side has added about
 * REMOTE_PER_LOCAL more; never waits long, and stops waiting once the
 * initiators are done.
 */
static void *local_adder(void *arg)
{
	struct target *t = arg;
	uint64_t *counter = block_word(t, COUNTER_OFFSET);

	for (uint32_t i = 0; i < LOCAL_ADDS; i++) {
		uint64_t v = __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
		struct timespec start, now;

		t->local_values[i] = v;
		if (i && v - t->local_values[i - 1] > 1)
			t->local_interleaved++;
		clock_gettime(CLOCK_MONOTONIC, &start);
		while (!__atomic_load_n(&t->remote_done, __ATOMIC_ACQUIRE) &&
		       __atomic_load_n(counter, __ATOMIC_RELAXED) < v + 1 + REMOTE_PER_LOCAL) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec -
				start.tv_nsec >
			    LOCAL_PACE_MAX_NS)
				break;
			sleep_ns(TOOL_IDLE_SLEEP_NS);
		}
	}
	return NULL;
}

static int target_open(struct target *t, char **ifnames)
{
	for (int d = 0; d < N_INITIATORS; d++) {
		struct target_dev *td = &t->devs[d];

		td->ifname = ifnames[d];
		td->dev = open_device(td->ifname, &td->gid, &td->gid_index, &td->mtu, &td->rd_atom);
		if (!td->dev)
			return -1;
		td->pd = xr_alloc_pd(td->dev);
		if (!td->pd) {
			fprintf(stderr, PROG ": couldn't allocate a PD: %s\n", strerror(errno));
			return -1;
		}
		/* The same memory on both devices: each has its own keys. */
		for (int a = 0; a < N_AREAS; a++) {
			td->mr[a] = xr_reg_mr(td->pd, t->block + areas[a].offset, areas[a].size,
					      remote_all);
			if (!td->mr[a]) {
				fprintf(stderr, PROG ": couldn't register an MR on %s: %s\n",
					td->ifname, strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

/* The device whose IPv4 address the initiator's TCP connection arrived at. */
static struct target_dev *device_of_connection(struct target *t, int fd)
{
	struct sockaddr_in local;
	socklen_t len = sizeof(local);

	if (getsockname(fd, (struct sockaddr *)&local, &len))
		return NULL;
	for (int d = 0; d < N_INITIATORS; d++)
		if (!memcmp(t->devs[d].gid.raw + 12, &local.sin_addr, 4))
			return &t->devs[d];
	return NULL;
}

/* Accepts the initiators, each on the device it reaches the target through. */
static int target_accept(struct target *t, unsigned int port)
{
	int64_t deadline = tool_now_ms() + ACCEPT_TIMEOUT_MS;
	const char *why;
	int listen_fd = oob_listen(AF_INET, port, N_INITIATORS, &why), ret = -1;

	if (listen_fd < 0) {
		fprintf(stderr, PROG ": couldn't listen on port %u: %s\n", port, why);
		goto out;
	}
	for (int p = 0; p < N_INITIATORS; p++) {
		struct target_peer *peer = &t->peers[p];

		peer->oob_fd = oob_accept_on(listen_fd, deadline, &why);
		if (peer->oob_fd < 0) {
			fprintf(stderr, PROG ": %d of %d initiators connected: %s\n", p,
				N_INITIATORS, why);
			goto out;
		}
		peer->tdev = device_of_connection(t, peer->oob_fd);
		if (!peer->tdev) {
			fprintf(stderr, PROG ": an initiator connected to none of %s, %s\n",
				t->devs[0].ifname, t->devs[1].ifname);
			goto out;
		}
	}
	if (t->peers[0].tdev == t->peers[1].tdev) {
		fprintf(stderr, PROG ": both initiators came in through %s\n",
			t->peers[0].tdev->ifname);
		goto out;
	}
	ret = 0;
out:
	if (listen_fd >= 0)
		close(listen_fd);
	return ret;
}

static int target_connect_peer(struct target_peer *peer)
{
	struct target_dev *td = peer->tdev;
	struct initiator_hello ih;
	struct wire w = {0};
	enum xr_mtu mtu;
	int ret;

	ret = oob_read_full(peer->oob_fd, w.bytes, INITIATOR_HELLO_SIZE,
			    tool_now_ms() + OOB_TIMEOUT_MS);
	if (!ret && get32(&w) != HELLO_MAGIC)
		ret = -EPROTO;
	if (ret) {
		fprintf(stderr, PROG ": couldn't read an initiator's hello: %s\n", oob_error(ret));
		return -1;
	}
	ih.id = get32(&w);
	ih.qpn = get32(&w);
	ih.psn = get32(&w);
	ih.mtu_enum = get32(&w);
	get_bytes(&w, ih.gid.raw, 16);
	peer->id = ih.id;
	mtu = ih.mtu_enum < td->mtu ? ih.mtu_enum : td->mtu;
	if (create_qp_end(td->dev, td->pd, &peer->end, 4) ||
	    connect_qp(&peer->end, mtu, td->rd_atom, ih.qpn, ih.psn, &ih.gid, td->gid_index))
		return -1;
	w.pos = 0;
	put32(&w, HELLO_MAGIC);
	put32(&w, peer->end.qp->qp_num);
	put32(&w, peer->end.psn);
	put32(&w, td->mtu);
	put_bytes(&w, td->gid.raw, 16);
	for (int a = 0; a < N_AREAS; a++) {
		put64(&w, (uintptr_t)td->mr[a]->addr);
		put32(&w, td->mr[a]->rkey);
	}
	ret = oob_write_full(peer->oob_fd, w.bytes, w.pos, tool_now_ms() + OOB_TIMEOUT_MS);
	if (ret) {
		fprintf(stderr, PROG ": couldn't answer initiator %u: %s\n", peer->id,
			oob_error(ret));
		return -1;
	}
	printf("[target] initiator %u via %s: QP 0x%06x -> 0x%06x, depth %u\n", peer->id,
	       td->ifname, peer->end.qp->qp_num, ih.qpn, td->rd_atom);
	return 0;
}

static bool canaries_intact(struct target *t, struct report *r)
{
	for (uint32_t i = 0; i < BLOCK_SIZE; i++) {
		bool inside = false;

		for (int a = 0; a < N_AREAS; a++)
			inside |= i >= areas[a].offset && i < areas[a].offset + areas[a].size;
		if (!inside && t->block[i] != CANARY) {
			report_fail(r, "byte %u of the shared block, outside every MR, is 0x%02x",
				    i, t->block[i]);
			return false;
		}
	}
	return true;
}

/* Every original value 0 .. TOTAL_ADDS-1 was returned to exactly one add. */
static void check_values_once_each(struct target *t, struct report *r)
{
	uint8_t *seen = calloc(TOTAL_ADDS, 1);
	const struct {
		const char *who;
		const uint64_t *v;
		uint32_t n;
	} sources[] = {
	    {"initiator", t->peers[0].values, FAA_PER_INITIATOR},
	    {"initiator", t->peers[1].values, FAA_PER_INITIATOR},
	    {"local thread", t->local_values, LOCAL_ADDS},
	};

	if (!seen)
		return report_fail(r, "out of memory");
	for (size_t s = 0; s < sizeof(sources) / sizeof(sources[0]); s++) {
		for (uint32_t i = 0; i < sources[s].n; i++) {
			uint64_t v = sources[s].v[i];

			if (v >= TOTAL_ADDS || seen[v]) {
				report_fail(r, "%s add %u got original value %" PRIu64 " (%s)",
					    sources[s].who, i, v,
					    v >= TOTAL_ADDS ? "out of range" : "seen twice");
				goto out;
			}
			seen[v] = 1;
		}
	}
out:
	free(seen);
}

static void target_faa_phase(struct target *t, struct report *r)
{
	uint64_t *counter = block_word(t, COUNTER_OFFSET);
	struct msg m;
	int ret;

	for (int p = 0; p < N_INITIATORS; p++) {
		struct target_peer *peer = &t->peers[p];

		ret = recv_msg(peer->oob_fd, MSG_FAA_DONE, &m, 2 * PHASE_TIMEOUT_MS);
		if (!ret)
			ret =
			    oob_read_full(peer->oob_fd, peer->values, (size_t)FAA_PER_INITIATOR * 8,
					  tool_now_ms() + PHASE_TIMEOUT_MS);
		if (ret) {
			report_fail(r, "lost initiator %u: %s", peer->id, oob_error(ret));
			break;
		}
		peer->faa_ok = m.ok;
		peer->interleaved = (uint32_t)m.value;
	}
	__atomic_store_n(&t->remote_done, true, __ATOMIC_RELEASE);
	pthread_join(t->thread, NULL);
	t->thread_started = false;
	if (r->failed)
		return;
	if (!t->peers[0].faa_ok || !t->peers[1].faa_ok)
		return report_fail(r, "an initiator failed its fetch-and-adds");
	if (*counter != TOTAL_ADDS)
		return report_fail(
		    r, "counter is %" PRIu64 " after %d adds (%d + %d remote, %d local)", *counter,
		    TOTAL_ADDS, FAA_PER_INITIATOR, FAA_PER_INITIATOR, LOCAL_ADDS);
	check_values_once_each(t, r);
	if (r->failed || !canaries_intact(t, r))
		return;
	/* Without interleaving the run proves nothing about atomicity. */
	if (!t->peers[0].interleaved || !t->peers[1].interleaved || !t->local_interleaved)
		return report_fail(r,
				   "the adders never interleaved (steps > 1: %u, %u, local %u): no "
				   "contention was tested",
				   t->peers[0].interleaved, t->peers[1].interleaved,
				   t->local_interleaved);
	report_ok(r,
		  "counter exactly %d; original values 0..%d each returned once; interleaved "
		  "steps %u / %u / local %u",
		  TOTAL_ADDS, TOTAL_ADDS - 1, t->peers[0].interleaved, t->peers[1].interleaved,
		  t->local_interleaved);
}

static void target_lock_phase(struct target *t, struct report *r)
{
	const uint64_t *rec = block_word(t, RECORD_OFFSET);
	uint64_t lock;
	struct msg m;
	int ret;

	for (int p = 0; p < N_INITIATORS; p++) {
		struct target_peer *peer = &t->peers[p];

		ret = recv_msg(peer->oob_fd, MSG_LOCK_DONE, &m, 2 * PHASE_TIMEOUT_MS);
		if (ret)
			return report_fail(r, "lost initiator %u: %s", peer->id, oob_error(ret));
		peer->lock_ok = m.ok;
		peer->lost_cas = m.value;
	}
	lock = *block_word(t, LOCK_OFFSET);
	if (!t->peers[0].lock_ok || !t->peers[1].lock_ok)
		return report_fail(r, "an initiator failed its critical sections");
	if (rec[REC_A] != TOTAL_CS || rec[REC_B] != TOTAL_CS || rec[REC_BY_1] != CS_PER_INITIATOR ||
	    rec[REC_BY_2] != CS_PER_INITIATOR)
		return report_fail(r,
				   "record a %" PRIu64 ", b %" PRIu64 ", by 1 %" PRIu64
				   ", by 2 %" PRIu64 "; expected %d, %d, %d, %d",
				   rec[REC_A], rec[REC_B], rec[REC_BY_1], rec[REC_BY_2], TOTAL_CS,
				   TOTAL_CS, CS_PER_INITIATOR, CS_PER_INITIATOR);
	for (int w = REC_MAGIC; w < REC_WORDS; w++)
		if (rec[w] != (RECORD_MAGIC | (uint64_t)w))
			return report_fail(r, "record word %d is 0x%016" PRIx64, w, rec[w]);
	if (lock != 0)
		return report_fail(r, "lock word left at %" PRIu64, lock);
	if (!canaries_intact(t, r))
		return;
	if (!t->peers[0].lost_cas && !t->peers[1].lost_cas)
		return report_fail(r, "no CAS attempt ever lost: the lock was never contended");
	report_ok(r,
		  "record a = b = %d, %d + %d by initiator, lock free, canaries intact; lost "
		  "CAS attempts %" PRIu64 " / %" PRIu64,
		  TOTAL_CS, CS_PER_INITIATOR, CS_PER_INITIATOR, t->peers[0].lost_cas,
		  t->peers[1].lost_cas);
}

static void reset_shared_block(struct target *t)
{
	uint64_t *rec = block_word(t, RECORD_OFFSET);

	memset(t->block, CANARY, BLOCK_SIZE);
	*block_word(t, COUNTER_OFFSET) = 0;
	*block_word(t, LOCK_OFFSET) = 0;
	memset(rec, 0, RECORD_SIZE);
	for (int w = REC_MAGIC; w < REC_WORDS; w++)
		rec[w] = RECORD_MAGIC | (uint64_t)w;
}

static int send_all(struct target *t, enum msg_kind kind, bool ok)
{
	for (int p = 0; p < N_INITIATORS; p++) {
		int ret = send_msg(t->peers[p].oob_fd, kind, ok, 0);

		if (ret) {
			fprintf(stderr, PROG ": lost initiator %u: %s\n", t->peers[p].id,
				oob_error(ret));
			return -1;
		}
	}
	return 0;
}

static int target_run(struct target *t)
{
	struct report faa = {0}, lock = {0};
	struct msg m;
	int ret;

	for (int p = 0; p < N_INITIATORS; p++) {
		ret = recv_msg(t->peers[p].oob_fd, MSG_READY, &m, OOB_TIMEOUT_MS);
		if (ret) {
			fprintf(stderr, PROG ": initiator %u not ready: %s\n", t->peers[p].id,
				oob_error(ret));
			return -1;
		}
	}
	if ((t->peers[0].id != 1 || t->peers[1].id != 2) &&
	    (t->peers[0].id != 2 || t->peers[1].id != 1)) {
		fprintf(stderr, PROG ": initiator IDs are %u and %u, expected 1 and 2\n",
			t->peers[0].id, t->peers[1].id);
		return -1;
	}
	reset_shared_block(t);
	ret = pthread_create(&t->thread, NULL, local_adder, t);
	if (ret) {
		fprintf(stderr, PROG ": couldn't start the local adder: %s\n", strerror(ret));
		return -1;
	}
	t->thread_started = true;
	if (send_all(t, MSG_GO, true))
		return -1;
	target_faa_phase(t, &faa);
	printf("[target] %-4s FAA contention: %s\n", faa.failed ? "FAIL" : "ok", faa.detail);
	reset_shared_block(t);
	if (send_all(t, MSG_GO_LOCK, !faa.failed))
		return -1;
	target_lock_phase(t, &lock);
	printf("[target] %-4s CAS spin lock: %s\n", lock.failed ? "FAIL" : "ok", lock.detail);
	if (send_all(t, MSG_FINAL, !lock.failed))
		return -1;
	printf("[target] %s\n", faa.failed || lock.failed ? "FAIL" : "PASS");
	return faa.failed || lock.failed ? -1 : 0;
}

static int target_main(char **ifnames, unsigned int port)
{
	struct target *t = calloc(1, sizeof(*t));
	int ret = -1;

	if (!t) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int p = 0; p < N_INITIATORS; p++) {
		t->peers[p].oob_fd = -1;
		t->peers[p].values = calloc(FAA_PER_INITIATOR, 8);
		if (!t->peers[p].values)
			goto out;
	}
	t->block = aligned_alloc(4096, BLOCK_SIZE);
	if (!t->block)
		goto out;
	reset_shared_block(t);
	if (target_open(t, ifnames) || target_accept(t, port))
		goto out;
	for (int p = 0; p < N_INITIATORS; p++)
		if (target_connect_peer(&t->peers[p]))
			goto out;
	ret = target_run(t);
out:
	if (t->thread_started) {
		__atomic_store_n(&t->remote_done, true, __ATOMIC_RELEASE);
		pthread_join(t->thread, NULL);
	}
	for (int p = 0; p < N_INITIATORS; p++) {
		if (t->peers[p].oob_fd >= 0)
			close(t->peers[p].oob_fd);
		destroy_qp_end(&t->peers[p].end);
		free(t->peers[p].values);
	}
	for (int d = 0; d < N_INITIATORS; d++) {
		for (int a = 0; a < N_AREAS; a++)
			if (t->devs[d].mr[a])
				xr_dereg_mr(t->devs[d].mr[a]);
		if (t->devs[d].pd)
			xr_dealloc_pd(t->devs[d].pd);
		if (t->devs[d].dev)
			xr_close_device(t->devs[d].dev);
	}
	free(t->block);
	free(t);
	return ret ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: " PROG " target IFNAME IFNAME [-p PORT]\n"
			"       " PROG " initiator IFNAME TARGET_IP ID [-p PORT]   (ID 1 or 2)\n");
}

int main(int argc, char **argv)
{
	unsigned int port = DEFAULT_PORT;
	bool is_target;
	int args;

	if (argc < 4 || (strcmp(argv[1], "target") && strcmp(argv[1], "initiator"))) {
		usage();
		return 2;
	}
	is_target = !strcmp(argv[1], "target");
	args = is_target ? 4 : 5;
	if (argc == args + 2 && !strcmp(argv[args], "-p")) {
		port = (unsigned int)strtoul(argv[args + 1], NULL, 10);
		args += 2;
	}
	if (argc != args || port == 0 || port > 65535) {
		usage();
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ time(NULL));
	if (is_target)
		return target_main(argv + 2, port);
	if (strcmp(argv[4], "1") && strcmp(argv[4], "2")) {
		usage();
		return 2;
	}
	return initiator_main(argv[2], argv[3], (uint32_t)atoi(argv[4]), port);
}
