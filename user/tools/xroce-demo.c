/* SPDX-License-Identifier: MIT */
/*
 * xroce-demo: two hosts connect one RC queue pair and run each operation
 * xroce supports: SENDs of 1 B, 4 KiB and 1 MiB, SEND with immediate, RDMA
 * WRITE, WRITE with immediate, READ, compare-and-swap, fetch-and-add, and
 * the masked compare-and-swap and fetch-and-add when both devices have them.
 * Each is verified by the side that can see its result: the server checks
 * its memory (received and written bytes, immediates, a READ's source left
 * alone, an atomic's target word afterwards), the client what came back (read
 * bytes, an atomic's original value). The server reports its verdict over
 * TCP; the client prints one line per operation, with the time from posting
 * to its completion (which waits for the ACK or the response).
 *
 * Then memory windows, over a region of the server's that the client has no
 * key for (the MR grants local write and window binding only): the server
 * binds a type 1 window (xr_bind_mw), the client writes the whole window,
 * then the window and one byte more, which is refused; the server binds a
 * type 2 window (XR_WR_BIND_MW), the client writes it, the server
 * invalidates it (XR_WR_LOCAL_INV), and the client's write with that key is
 * refused. A refused access ends the QP pair on both sides, so the demo
 * connects a second QP pair for the type 1 window, which belongs to the PD
 * (bound through the main QP, written through the second pair); the type 2
 * window is bound to the main QP and its refusal is the last step there.
 * The server checks that each window and the bytes after it hold exactly
 * what the accepted writes put there.
 *
 *   xroce-demo server IFNAME
 *   xroce-demo client IFNAME SERVER_IP
 *
 * Out of band (TCP port 18600), each side sends one line:
 *   "xroce-demo qpn=HEX psn=HEX qpn2=HEX psn2=HEX gid=IPV6_TEXT rkey=HEX
 *    addr=HEX masked=0|1\n" (one line)
 * with the QPN and first PSN of its main and second QP, the rkey and address
 * of the region the peer may aim at (the server's; the client sends 0) and
 * whether its device has masked atomics. Then the server sends "ready\n"
 * once its QPs can receive. For each operation both run, the client sends
 * "check N\n" once it has the completion of operation N, and the server
 * answers "ok WHAT IT VERIFIED\n" or "fail REASON\n". The memory-window
 * steps follow, numbered on from the operations: for a WRITE the same
 * "check N\n"; for a bind or an invalidation, which the server runs, the
 * client sends "run N\n" and the server answers "ok NS RKEY ADDR WHAT\n"
 * (from posting to the completion in nanoseconds, then the window's rkey and
 * address in hex) or "fail REASON\n". The client ends with "done\n".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/random.h>

#include "tool_common.h"

#define PROG "xroce-demo"
#define DEMO_PORT 18600
#define OOB_LINE_MAX 256
#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
#define OOB_TIMEOUT_MS 20000
#define COMPLETION_TIMEOUT_MS 20000

struct demo_op {
	enum xr_wr_opcode opcode;
	enum xr_wc_opcode wc_opcode; /* of the client's completion */
	const char *name;
	uint32_t size;
	uint32_t imm;		   /* host order; the *_WITH_IMM operations only */
	uint64_t initial;	   /* atomics: the target word before */
	uint64_t compare_add;	   /* atomics: the compare or add operand */
	uint64_t swap;		   /* (masked) compare-and-swap: the new value */
	uint64_t compare_add_mask; /* masked: compare mask, or the fields' top bits for add */
	uint64_t swap_mask;	   /* masked compare-and-swap: which bits are swapped in */
	uint64_t result;	   /* atomics: the target word after */
};

/* The atomics' results are worked out by hand here, not by the library's code. */
static const struct demo_op demo_ops[] = {
    {.opcode = XR_WR_SEND, .wc_opcode = XR_WC_SEND, .name = "SEND", .size = 1},
    {.opcode = XR_WR_SEND, .wc_opcode = XR_WC_SEND, .name = "SEND", .size = 4096},
    {.opcode = XR_WR_SEND, .wc_opcode = XR_WC_SEND, .name = "SEND", .size = 1 << 20},
    {.opcode = XR_WR_SEND_WITH_IMM,
     .wc_opcode = XR_WC_SEND,
     .name = "SEND_WITH_IMM",
     .size = 4096,
     .imm = 0x600dcafe},
    {.opcode = XR_WR_RDMA_WRITE, .wc_opcode = XR_WC_RDMA_WRITE, .name = "WRITE", .size = 64 << 10},
    {.opcode = XR_WR_RDMA_WRITE_WITH_IMM,
     .wc_opcode = XR_WC_RDMA_WRITE,
     .name = "WRITE_WITH_IMM",
     .size = 4096,
     .imm = 0x0b57ac1e},
    {.opcode = XR_WR_RDMA_READ, .wc_opcode = XR_WC_RDMA_READ, .name = "READ", .size = 64 << 10},
    {.opcode = XR_WR_ATOMIC_CMP_AND_SWP,
     .wc_opcode = XR_WC_COMP_SWAP,
     .name = "CMP_AND_SWAP",
     .size = 8,
     .initial = 0x1111111122222222,
     .compare_add = 0x1111111122222222,
     .swap = 0x3333333344444444,
     .result = 0x3333333344444444},
    /* The carry out of the low 32 bits moves into the high half. */
    {.opcode = XR_WR_ATOMIC_FETCH_AND_ADD,
     .wc_opcode = XR_WC_FETCH_ADD,
     .name = "FETCH_AND_ADD",
     .size = 8,
     .initial = 0x00000001ffffffff,
     .compare_add = 0x0000000100000001,
     .result = 0x0000000300000000},
    /* Compares the low 16 bits only, swaps in the top 16 bits only. */
    {.opcode = XR_WR_MASKED_ATOMIC_CMP_AND_SWP,
     .wc_opcode = XR_WC_MASKED_COMP_SWAP,
     .name = "MASKED_CMP_AND_SWAP",
     .size = 8,
     .initial = 0xaaaa5555aaaa5555,
     .compare_add = 0x0000000000005555,
     .compare_add_mask = 0x000000000000ffff,
     .swap = 0x1234000000000000,
     .swap_mask = 0xffff000000000000,
     .result = 0x12345555aaaa5555},
    /* The same addition as above in two 32-bit fields: the low one wraps, no carry crosses. */
    {.opcode = XR_WR_MASKED_ATOMIC_FETCH_AND_ADD,
     .wc_opcode = XR_WC_MASKED_FETCH_ADD,
     .name = "MASKED_FETCH_AND_ADD",
     .size = 8,
     .initial = 0x00000001ffffffff,
     .compare_add = 0x0000000100000001,
     .compare_add_mask = 0x8000000080000000,
     .result = 0x0000000200000000},
};
#define NUM_OPS (sizeof(demo_ops) / sizeof(demo_ops[0]))

/* Each window's area: the window, then bytes its MR has past it, where no write may land. */
#define MW_SIZE 4096
#define MW_STRIDE (MW_SIZE + 64)
#define MW_FILL 0xa5 /* what the areas hold before any write */
#define MW_MAIN_PAIR 0
#define MW_SECOND_PAIR 1

struct demo_window {
	enum xr_mw_type type;
	int pair; /* the QP pair its WRITEs go through; both are bound through the main QP */
};

static const struct demo_window demo_windows[] = {
    /* Belongs to the PD: any QP of it binds it and reaches it. */
    {.type = XR_MW_TYPE_1, .pair = MW_SECOND_PAIR},
    /* Bound to the main QP, and reached and invalidated through it only. */
    {.type = XR_MW_TYPE_2, .pair = MW_MAIN_PAIR},
};
#define NUM_WINDOWS (sizeof(demo_windows) / sizeof(demo_windows[0]))

enum mw_action {
	MW_BIND,       /* the server binds the window */
	MW_WRITE,      /* the client writes size bytes from the window's start */
	MW_INVALIDATE, /* the server invalidates it */
};

struct mw_step {
	const char *name;
	enum mw_action action;
	unsigned int window;
	uint32_t size;
	/* The completion expected: the client's for a WRITE, else the server's. */
	enum xr_wc_status status;
};

/* A refused access ends its QP pair: each pair's refusal is its last step. */
static const struct mw_step mw_steps[] = {
    {"MW1_BIND", MW_BIND, 0, MW_SIZE, XR_WC_SUCCESS},
    {"MW1_WRITE_INSIDE", MW_WRITE, 0, MW_SIZE, XR_WC_SUCCESS},
    {"MW1_WRITE_OUTSIDE", MW_WRITE, 0, MW_SIZE + 1, XR_WC_REM_ACCESS_ERR},
    {"MW2_BIND", MW_BIND, 1, MW_SIZE, XR_WC_SUCCESS},
    {"MW2_WRITE_INSIDE", MW_WRITE, 1, MW_SIZE, XR_WC_SUCCESS},
    {"MW2_LOCAL_INV", MW_INVALIDATE, 1, MW_SIZE, XR_WC_SUCCESS},
    {"MW2_WRITE_AFTER_INV", MW_WRITE, 1, MW_SIZE, XR_WC_REM_ACCESS_ERR},
};
#define NUM_MW_STEPS (sizeof(mw_steps) / sizeof(mw_steps[0]))

struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t qpn2; /* the second QP pair's */
	uint32_t psn2;
	union xr_gid gid;
	uint32_t rkey;
	uint64_t addr;
	bool masked_atomics;
};

struct endpoint {
	struct xr_device *dev;
	struct xr_pd *pd;
	struct xr_cq *cq;
	struct xr_qp *qp;
	struct xr_qp *qp2; /* the second QP pair's end: the type 1 window's WRITEs */
	struct xr_mr *mr;
	uint8_t *buf;
	/* The server's windows, over win_buf: win_mr grants no remote access itself. */
	struct xr_mr *win_mr;
	uint8_t *win_buf;
	struct xr_mw *mw[NUM_WINDOWS];
	int gid_index;
	enum xr_mtu mtu;
	struct peer_info local;
};

static bool is_masked(enum xr_wr_opcode opcode)
{
	return opcode == XR_WR_MASKED_ATOMIC_CMP_AND_SWP ||
	       opcode == XR_WR_MASKED_ATOMIC_FETCH_AND_ADD;
}

static bool is_atomic(enum xr_wr_opcode opcode)
{
	return opcode == XR_WR_ATOMIC_CMP_AND_SWP || opcode == XR_WR_ATOMIC_FETCH_AND_ADD ||
	       is_masked(opcode);
}

static bool has_imm(enum xr_wr_opcode opcode)
{
	return opcode == XR_WR_SEND_WITH_IMM || opcode == XR_WR_RDMA_WRITE_WITH_IMM;
}

/* The operations that consume a receive at the server. */
static bool consumes_receive(enum xr_wr_opcode opcode)
{
	return opcode == XR_WR_SEND || has_imm(opcode);
}

static void format_size(uint32_t size, char *out, size_t out_len)
{
	if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(out, out_len, "%u MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(out, out_len, "%u KiB", size >> 10);
	else
		snprintf(out, out_len, "%u B", size);
}

/* Each operation carries its own pattern, so data landing in the wrong place shows. */
static uint8_t pattern_byte(size_t op_index, size_t offset)
{
	return (uint8_t)(offset * 131 + op_index * 17 + 7);
}

static bool pattern_differs(const uint8_t *data, size_t op_index, size_t size, char *reason,
			    size_t reason_len)
{
	for (size_t off = 0; off < size; off++) {
		if (data[off] != pattern_byte(op_index, off)) {
			snprintf(reason, reason_len, "content differs at byte %zu", off);
			return true;
		}
	}
	return false;
}

/* Where operation i lands in the server's region: one 8-byte aligned area each. */
static size_t server_offset(size_t op_index)
{
	size_t offset = 0;

	for (size_t i = 0; i < op_index; i++)
		offset += (demo_ops[i].size + 7) & ~7u;
	return offset;
}

static size_t largest_op(void)
{
	size_t largest = 0;

	for (size_t i = 0; i < NUM_OPS; i++)
		if (demo_ops[i].size > largest)
			largest = demo_ops[i].size;
	return largest;
}

static bool both_run(const struct endpoint *ep, const struct peer_info *remote, size_t i)
{
	return !is_masked(demo_ops[i].opcode) ||
	       (ep->local.masked_atomics && remote->masked_atomics);
}

/* Memory-window steps are numbered on from the operations (wr_id, pattern, "check N"). */
static size_t mw_index(size_t step)
{
	return NUM_OPS + step;
}

static struct xr_qp *pair_qp(const struct endpoint *ep, int pair)
{
	return pair == MW_SECOND_PAIR ? ep->qp2 : ep->qp;
}

/* Byte off of step j's window area once step j ran: the last accepted WRITE's, or untouched. */
static uint8_t mw_expected_byte(size_t j, size_t off)
{
	for (size_t k = j + 1; k-- > 0;) {
		const struct mw_step *s = &mw_steps[k];

		if (s->window == mw_steps[j].window && s->action == MW_WRITE &&
		    s->status == XR_WC_SUCCESS && off < s->size)
			return pattern_byte(mw_index(k), off);
	}
	return MW_FILL;
}

/* The completion a step should end with, named as in the API. */
static const char *mw_expected_name(const struct mw_step *s)
{
	if (s->status == XR_WC_REM_ACCESS_ERR)
		return "REM_ACCESS_ERR";
	if (s->status != XR_WC_SUCCESS)
		return xr_wc_status_str(s->status);
	return s->action == MW_BIND	    ? "BIND_MW"
	       : s->action == MW_INVALIDATE ? "LOCAL_INV"
					    : "RDMA_WRITE";
}

/* ---- out of band ------------------------------------------------------ */

static int oob_send_line(int fd, const char *line)
{
	return oob_write_line(fd, line, tool_now_ms() + OOB_TIMEOUT_MS);
}

static int oob_recv_line(int fd, char *line, size_t size)
{
	return oob_read_line(fd, line, size, tool_now_ms() + OOB_TIMEOUT_MS);
}

static int oob_exchange(int fd, const struct peer_info *local, struct peer_info *remote)
{
	char line[OOB_LINE_MAX], gid_text[INET6_ADDRSTRLEN];
	int masked, err;

	inet_ntop(AF_INET6, local->gid.raw, gid_text, sizeof(gid_text));
	snprintf(line, sizeof(line),
		 "xroce-demo qpn=%" PRIx32 " psn=%" PRIx32 " qpn2=%" PRIx32 " psn2=%" PRIx32
		 " gid=%s rkey=%" PRIx32 " addr=%" PRIx64 " masked=%d\n",
		 local->qpn, local->psn, local->qpn2, local->psn2, gid_text, local->rkey,
		 local->addr, local->masked_atomics);
	err = oob_send_line(fd, line);
	if (!err)
		err = oob_recv_line(fd, line, sizeof(line));
	if (err)
		return err;
	if (sscanf(line,
		   "xroce-demo qpn=%" SCNx32 " psn=%" SCNx32 " qpn2=%" SCNx32 " psn2=%" SCNx32
		   " gid=%45s rkey=%" SCNx32 " addr=%" SCNx64 " masked=%d",
		   &remote->qpn, &remote->psn, &remote->qpn2, &remote->psn2, gid_text,
		   &remote->rkey, &remote->addr, &masked) != 8 ||
	    inet_pton(AF_INET6, gid_text, remote->gid.raw) != 1)
		return -EPROTO;
	remote->masked_atomics = masked == 1;
	return 0;
}

/* ---- RDMA resources ---------------------------------------------------- */

/* Windows first: an MR with a window bound to it cannot be deregistered. */
static void endpoint_close(struct endpoint *ep)
{
	for (size_t w = 0; w < NUM_WINDOWS; w++)
		if (ep->mw[w])
			xr_dealloc_mw(ep->mw[w]);
	if (ep->qp2)
		xr_destroy_qp(ep->qp2);
	if (ep->qp)
		xr_destroy_qp(ep->qp);
	if (ep->win_mr)
		xr_dereg_mr(ep->win_mr);
	if (ep->mr)
		xr_dereg_mr(ep->mr);
	if (ep->cq)
		xr_destroy_cq(ep->cq);
	if (ep->pd)
		xr_dealloc_pd(ep->pd);
	if (ep->dev)
		xr_close_device(ep->dev);
	free(ep->buf);
	free(ep->win_buf);
}

/*
 * The server's windows: a region with local write and window binding only,
 * so that the client reaches it through the windows alone, and one window
 * of each type, unbound.
 */
static int server_windows_open(struct endpoint *ep)
{
	ep->win_buf = aligned_alloc(64, NUM_WINDOWS * MW_STRIDE);
	if (!ep->win_buf)
		return -ENOMEM;
	memset(ep->win_buf, MW_FILL, NUM_WINDOWS * MW_STRIDE);
	ep->win_mr = xr_reg_mr(ep->pd, ep->win_buf, NUM_WINDOWS * MW_STRIDE,
			       XR_ACCESS_LOCAL_WRITE | XR_ACCESS_MW_BIND);
	if (!ep->win_mr)
		return -errno;
	for (size_t w = 0; w < NUM_WINDOWS; w++) {
		ep->mw[w] = xr_alloc_mw(ep->pd, demo_windows[w].type);
		if (!ep->mw[w])
			return -errno;
	}
	return 0;
}

/* The server's whole buffer is its region: the client may write, read and add there. */
static int endpoint_open(struct endpoint *ep, const char *ifname, bool is_server)
{
	const int access = is_server ? XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE |
					   XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC
				     : XR_ACCESS_LOCAL_WRITE;
	size_t buf_size = is_server ? server_offset(NUM_OPS) : largest_op();
	struct xr_qp_init_attr qp_attr = {
	    .qp_type = XR_QPT_RC,
	    .cap = {.max_send_wr = NUM_OPS,
		    .max_recv_wr = NUM_OPS,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	struct xr_device_attr dev_attr;
	uint32_t psn[2];
	int err;

	ep->dev = tool_open_device(PROG, ifname);
	if (!ep->dev)
		return -errno;
	ep->gid_index = find_ipv4_gid(ep->dev, &dev_attr, &ep->local.gid);
	if (ep->gid_index < 0) {
		fprintf(stderr, PROG ": no IPv4 GID on %s: %s\n", ifname, strerror(-ep->gid_index));
		return ep->gid_index;
	}
	ep->mtu = dev_attr.active_mtu;
	ep->local.masked_atomics = dev_attr.device_cap_flags & XR_DEVICE_MASKED_ATOMICS;
	ep->buf = aligned_alloc(8, buf_size);
	ep->pd = ep->buf ? xr_alloc_pd(ep->dev) : NULL;
	ep->cq = ep->pd ? xr_create_cq(ep->dev, 2 * NUM_OPS, NULL) : NULL;
	ep->mr = ep->cq ? xr_reg_mr(ep->pd, ep->buf, buf_size, access) : NULL;
	qp_attr.send_cq = ep->cq;
	qp_attr.recv_cq = ep->cq;
	ep->qp = ep->mr ? xr_create_qp(ep->pd, &qp_attr) : NULL;
	ep->qp2 = ep->qp ? xr_create_qp(ep->pd, &qp_attr) : NULL;
	if (!ep->qp2) {
		err = ep->buf ? -errno : -ENOMEM;
		fprintf(stderr, PROG ": cannot set up the queue pairs: %s\n", strerror(-err));
		return err;
	}
	err = is_server ? server_windows_open(ep) : 0;
	if (err) {
		fprintf(stderr, PROG ": cannot set up the memory windows: %s\n", strerror(-err));
		return err;
	}
	memset(ep->buf, 0, buf_size);
	if (getrandom(psn, sizeof(psn), 0) != sizeof(psn)) {
		psn[0] = (uint32_t)tool_now_ns();
		psn[1] = psn[0] * 2654435761u;
	}
	ep->local.qpn = ep->qp->qp_num;
	ep->local.psn = psn[0] & 0xffffff;
	ep->local.qpn2 = ep->qp2->qp_num;
	ep->local.psn2 = psn[1] & 0xffffff;
	if (is_server) {
		ep->local.rkey = ep->mr->rkey;
		ep->local.addr = (uintptr_t)ep->buf;
	}
	return 0;
}

/*
 * INIT -> RTR -> RTS, for the main QP (second false) or the second one; one
 * READ or atomic outstanding at a time is all the demo needs.
 */
static int endpoint_connect(struct endpoint *ep, const struct peer_info *remote, bool second)
{
	struct qp_rtr_attr rtr = {
	    .path_mtu = ep->mtu,
	    .dest_qpn = second ? remote->qpn2 : remote->qpn,
	    .rq_psn = second ? remote->psn2 : remote->psn,
	    .dgid = remote->gid,
	    .sgid_index = (uint8_t)ep->gid_index,
	    .port_num = 1,
	    .hop_limit = 64,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	};
	const char *failed;

	return second ? qp_connect(ep->qp2, &rtr, ep->local.psn2, 1, &failed)
		      : qp_connect(ep->qp, &rtr, ep->local.psn, 1, &failed);
}

/* ---- server -------------------------------------------------------------- */

/*
 * Receives go first, so no SEND ever meets an empty receive queue; a WRITE
 * with immediate consumes a receive but places no data in it. The READ's
 * source and the atomics' target words are set up before the client starts.
 */
static int server_prepare(struct endpoint *ep)
{
	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct demo_op *op = &demo_ops[i];
		uint8_t *area = ep->buf + server_offset(i);
		struct xr_sge sge = {
		    .addr = (uintptr_t)area, .length = op->size, .lkey = ep->mr->lkey};
		struct xr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};
		struct xr_recv_wr *bad_wr;
		int err;

		if (op->opcode == XR_WR_RDMA_READ)
			for (size_t off = 0; off < op->size; off++)
				area[off] = pattern_byte(i, off);
		if (is_atomic(op->opcode))
			memcpy(area, &op->initial, sizeof(op->initial));
		if (!consumes_receive(op->opcode))
			continue;
		if (op->opcode == XR_WR_RDMA_WRITE_WITH_IMM)
			wr.num_sge = 0;
		err = xr_post_recv(ep->qp, &wr, &bad_wr);
		if (err)
			return err;
	}
	return 0;
}

/* Checks the receive completion of operation i: the right one, with the right immediate. */
static bool check_receive(size_t i, const struct xr_wc *wc, char *reason, size_t reason_len)
{
	const struct demo_op *op = &demo_ops[i];
	bool want_imm = has_imm(op->opcode);
	enum xr_wc_opcode want_opcode =
	    op->opcode == XR_WR_RDMA_WRITE_WITH_IMM ? XR_WC_RECV_RDMA_WITH_IMM : XR_WC_RECV;

	if (wc->status != XR_WC_SUCCESS) {
		snprintf(reason, reason_len, "receive status %s", xr_wc_status_str(wc->status));
		return false;
	}
	if (wc->wr_id != i || wc->opcode != want_opcode) {
		snprintf(reason, reason_len, "completion for wr_id %" PRIu64 " opcode %d",
			 wc->wr_id, wc->opcode);
		return false;
	}
	if (wc->byte_len != op->size) {
		snprintf(reason, reason_len, "%" PRIu32 " bytes received", wc->byte_len);
		return false;
	}
	if (!!(wc->wc_flags & XR_WC_WITH_IMM) != want_imm) {
		snprintf(reason, reason_len, "immediate flag %s",
			 want_imm ? "missing" : "unexpected");
		return false;
	}
	if (want_imm && ntohl(wc->imm_data) != op->imm) {
		snprintf(reason, reason_len, "immediate 0x%08" PRIx32 " instead of 0x%08" PRIx32,
			 ntohl(wc->imm_data), op->imm);
		return false;
	}
	return true;
}

/* Checks what operation i left in the server's memory; says what was verified or why not. */
static bool server_check(struct endpoint *ep, size_t i, char *what, size_t what_len)
{
	const struct demo_op *op = &demo_ops[i];
	const uint8_t *area = ep->buf + server_offset(i);
	struct xr_wc wc;
	uint64_t word;

	if (consumes_receive(op->opcode)) {
		if (poll_cq_yielding(ep->cq, &wc, 1, 1, tool_now_ms() + COMPLETION_TIMEOUT_MS) !=
		    1) {
			snprintf(what, what_len, "no receive completion");
			return false;
		}
		if (!check_receive(i, &wc, what, what_len))
			return false;
	}
	if (is_atomic(op->opcode)) {
		memcpy(&word, area, sizeof(word));
		snprintf(what, what_len, "target word %s 0x%016" PRIx64,
			 word == op->result ? "now" : "wrong:", word);
		return word == op->result;
	}
	if (pattern_differs(area, i, op->size, what, what_len))
		return false;
	if (op->opcode == XR_WR_RDMA_READ)
		snprintf(what, what_len, "source unchanged");
	else
		snprintf(what, what_len, "content%s verified",
			 has_imm(op->opcode) ? " and immediate" : "");
	return true;
}

/*
 * Runs memory-window step j, a bind or an invalidation, through the server's
 * main QP and waits for its completion; *elapsed_ns is the time from posting
 * to it. Says what was done or why it failed.
 */
static bool server_run_mw(struct endpoint *ep, size_t j, int64_t *elapsed_ns, char *what,
			  size_t what_len)
{
	const struct mw_step *s = &mw_steps[j];
	struct xr_mw *mw = ep->mw[s->window];
	const struct xr_mw_bind_info info = {
	    .mr = ep->win_mr,
	    .addr = (uintptr_t)(ep->win_buf + s->window * MW_STRIDE),
	    .length = MW_SIZE,
	    .mw_access_flags = XR_ACCESS_REMOTE_WRITE,
	};
	uint32_t old_rkey = mw->rkey;
	uint32_t want_rkey = s->action == MW_BIND ? xr_inc_rkey(old_rkey) : old_rkey;
	enum xr_wc_opcode want_opcode = s->action == MW_BIND ? XR_WC_BIND_MW : XR_WC_LOCAL_INV;
	int64_t start = tool_now_ns();
	struct xr_wc wc = {.status = XR_WC_GENERAL_ERR};
	int err;

	if (s->action == MW_BIND && mw->type == XR_MW_TYPE_1) {
		struct xr_mw_bind bind = {
		    .wr_id = mw_index(j), .send_flags = XR_SEND_SIGNALED, .bind_info = info};

		err = xr_bind_mw(ep->qp, mw, &bind);
	} else {
		struct xr_send_wr wr = {
		    .wr_id = mw_index(j),
		    .opcode = s->action == MW_BIND ? XR_WR_BIND_MW : XR_WR_LOCAL_INV,
		    .send_flags = XR_SEND_SIGNALED,
		};
		struct xr_send_wr *bad_wr;

		if (s->action == MW_BIND) {
			wr.bind_mw.mw = mw;
			wr.bind_mw.rkey = want_rkey;
			wr.bind_mw.bind_info = info;
		} else {
			wr.invalidate_rkey = old_rkey;
		}
		err = xr_post_send(ep->qp, &wr, &bad_wr);
	}
	if (!err && poll_cq_yielding(ep->cq, &wc, 1, 1, tool_now_ms() + COMPLETION_TIMEOUT_MS) != 1)
		err = -ETIMEDOUT;
	*elapsed_ns = tool_now_ns() - start;
	if (err) {
		snprintf(what, what_len, "%s: %s", mw_expected_name(s), strerror(-err));
		return false;
	}
	if (wc.status != s->status || wc.wr_id != mw_index(j) ||
	    (wc.status == XR_WC_SUCCESS && wc.opcode != want_opcode)) {
		snprintf(what, what_len, "completion: %s, opcode %d, instead of %s",
			 xr_wc_status_str(wc.status), wc.opcode, mw_expected_name(s));
		return false;
	}
	if (mw->rkey != want_rkey) {
		snprintf(what, what_len, "rkey 0x%08" PRIx32 " instead of 0x%08" PRIx32, mw->rkey,
			 want_rkey);
		return false;
	}
	if (s->action == MW_BIND)
		snprintf(what, what_len,
			 "BIND_MW completed: type %d window, rkey 0x%08" PRIx32 " (was 0x%08" PRIx32
			 ")",
			 (int)mw->type, mw->rkey, old_rkey);
	else
		snprintf(what, what_len, "LOCAL_INV completed: rkey 0x%08" PRIx32 " invalidated",
			 old_rkey);
	return true;
}

/* Checks WRITE step j's window area: what the accepted writes put there, nothing more. */
static bool server_check_mw(const struct endpoint *ep, size_t j, char *what, size_t what_len)
{
	const struct mw_step *s = &mw_steps[j];
	const uint8_t *area = ep->win_buf + s->window * MW_STRIDE;

	for (size_t off = 0; off < MW_STRIDE; off++) {
		uint8_t want = mw_expected_byte(j, off);

		if (area[off] == want)
			continue;
		snprintf(what, what_len, "byte %zu %s the window is 0x%02x instead of 0x%02x",
			 off < MW_SIZE ? off : off - MW_SIZE, off < MW_SIZE ? "of" : "past",
			 area[off], want);
		return false;
	}
	if (s->status == XR_WC_SUCCESS)
		snprintf(what, what_len, "content verified, the %d bytes past the window untouched",
			 MW_STRIDE - MW_SIZE);
	else
		snprintf(what, what_len, "window and the %d bytes past it unchanged",
			 MW_STRIDE - MW_SIZE);
	return true;
}

/* The memory-window steps, after the operations; returns how many failed. */
static int run_server_mw(struct endpoint *ep, int oob)
{
	int failures = 0;

	for (size_t j = 0; j < NUM_MW_STEPS; j++) {
		const struct mw_step *s = &mw_steps[j];
		const char *want = s->action == MW_WRITE ? "check" : "run";
		char size[16], what[128], verb[8], line[OOB_LINE_MAX];
		int64_t elapsed_ns = 0;
		unsigned int index;
		bool ok;

		format_size(s->size, size, sizeof(size));
		if (oob_recv_line(oob, line, sizeof(line)) != 0 ||
		    sscanf(line, "%7s %u", verb, &index) != 2 || strcmp(verb, want) != 0 ||
		    index != mw_index(j)) {
			fprintf(stderr, PROG ": lost the client\n");
			return failures + 1;
		}
		ok = s->action == MW_WRITE ? server_check_mw(ep, j, what, sizeof(what))
					   : server_run_mw(ep, j, &elapsed_ns, what, sizeof(what));
		printf("%-20s %7s  %s%s\n", s->name, size, ok ? "" : "FAILED: ", what);
		if (!ok)
			snprintf(line, sizeof(line), "fail %s\n", what);
		else if (s->action == MW_WRITE)
			snprintf(line, sizeof(line), "ok %s\n", what);
		else
			snprintf(line, sizeof(line), "ok %" PRId64 " %" PRIx32 " %" PRIx64 " %s\n",
				 elapsed_ns, ep->mw[s->window]->rkey,
				 (uint64_t)(uintptr_t)(ep->win_buf + s->window * MW_STRIDE), what);
		failures += !ok;
		if (oob_send_line(oob, line) != 0) {
			fprintf(stderr, PROG ": lost the client\n");
			return failures + 1;
		}
	}
	return failures;
}

static int run_server(struct endpoint *ep, const struct peer_info *remote, int oob)
{
	int failures = 0;

	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct demo_op *op = &demo_ops[i];
		char size[16], what[96], line[OOB_LINE_MAX];
		unsigned int index;
		bool ok;

		format_size(op->size, size, sizeof(size));
		if (!both_run(ep, remote, i)) {
			printf("%-20s %7s  skipped: masked atomics missing on one side\n", op->name,
			       size);
			continue;
		}
		if (oob_recv_line(oob, line, sizeof(line)) != 0 ||
		    sscanf(line, "check %u", &index) != 1 || index != i) {
			fprintf(stderr, PROG ": lost the client\n");
			return failures + 1;
		}
		ok = server_check(ep, i, what, sizeof(what));
		printf("%-20s %7s  %s%s\n", op->name, size, ok ? "" : "FAILED: ", what);
		snprintf(line, sizeof(line), "%s %s\n", ok ? "ok" : "fail", what);
		failures += !ok;
		if (oob_send_line(oob, line) != 0) {
			fprintf(stderr, PROG ": lost the client\n");
			return failures + 1;
		}
	}
	return failures + run_server_mw(ep, oob);
}

/* ---- client -------------------------------------------------------------- */

static struct xr_send_wr client_wr(const struct endpoint *ep, const struct peer_info *remote,
				   size_t i, struct xr_sge *sge)
{
	const struct demo_op *op = &demo_ops[i];
	uint64_t remote_addr = remote->addr + server_offset(i);
	struct xr_send_wr wr = {
	    .wr_id = i,
	    .sg_list = sge,
	    .num_sge = 1,
	    .opcode = op->opcode,
	    .send_flags = XR_SEND_SIGNALED,
	    .imm_data = htonl(op->imm),
	};

	*sge =
	    (struct xr_sge){.addr = (uintptr_t)ep->buf, .length = op->size, .lkey = ep->mr->lkey};
	if (is_masked(op->opcode)) {
		wr.wr.masked_atomic.remote_addr = remote_addr;
		wr.wr.masked_atomic.rkey = remote->rkey;
		wr.wr.masked_atomic.compare_add = op->compare_add;
		wr.wr.masked_atomic.swap = op->swap;
		wr.wr.masked_atomic.compare_add_mask = op->compare_add_mask;
		wr.wr.masked_atomic.swap_mask = op->swap_mask;
	} else if (is_atomic(op->opcode)) {
		wr.wr.atomic.remote_addr = remote_addr;
		wr.wr.atomic.rkey = remote->rkey;
		wr.wr.atomic.compare_add = op->compare_add;
		wr.wr.atomic.swap = op->swap;
	} else {
		wr.wr.rdma.remote_addr = remote_addr;
		wr.wr.rdma.rkey = remote->rkey;
	}
	return wr;
}

/*
 * Posts operation i and waits for its completion, then checks what came
 * back. Returns false when the QP cannot go on; *local says what happened.
 */
static bool client_execute(struct endpoint *ep, const struct peer_info *remote, size_t i, bool *ok,
			   char *local, size_t local_len)
{
	const struct demo_op *op = &demo_ops[i];
	struct xr_sge sge;
	struct xr_send_wr wr = client_wr(ep, remote, i, &sge), *bad_wr;
	struct xr_wc wc = {.status = XR_WC_GENERAL_ERR};
	uint64_t original;
	int err;

	if (op->opcode == XR_WR_SEND || op->opcode == XR_WR_SEND_WITH_IMM ||
	    op->opcode == XR_WR_RDMA_WRITE || op->opcode == XR_WR_RDMA_WRITE_WITH_IMM)
		for (size_t off = 0; off < op->size; off++)
			ep->buf[off] = pattern_byte(i, off);
	else
		memset(ep->buf, 0, op->size);
	*ok = false;
	err = xr_post_send(ep->qp, &wr, &bad_wr);
	if (!err && poll_cq_yielding(ep->cq, &wc, 1, 1, tool_now_ms() + COMPLETION_TIMEOUT_MS) != 1)
		err = -ETIMEDOUT;
	if (err) {
		snprintf(local, local_len, "post: %s", strerror(-err));
		return false;
	}
	if (wc.status != XR_WC_SUCCESS || wc.wr_id != i || wc.opcode != op->wc_opcode) {
		snprintf(local, local_len, "completion: %s, opcode %d", xr_wc_status_str(wc.status),
			 wc.opcode);
		return wc.status == XR_WC_SUCCESS;
	}
	*ok = true;
	if (op->opcode == XR_WR_RDMA_READ) {
		*ok = !pattern_differs(ep->buf, i, op->size, local, local_len);
		if (*ok)
			snprintf(local, local_len, "read data verified");
	} else if (is_atomic(op->opcode)) {
		memcpy(&original, ep->buf, sizeof(original));
		*ok = original == op->initial;
		snprintf(local, local_len, "original 0x%016" PRIx64 " %s", original,
			 *ok ? "verified" : "WRONG");
	} else {
		local[0] = '\0';
	}
	return true;
}

/* A window as the server announced it once bound. */
struct window_key {
	uint32_t rkey;
	uint64_t addr;
};

/*
 * Posts WRITE step j through its window's QP pair and waits for the
 * completion: *ok when it is the one expected, and a refusal left the QP in
 * ERR. *local says what happened.
 */
static void client_mw_write(struct endpoint *ep, size_t j, const struct window_key *key, bool *ok,
			    char *local, size_t local_len)
{
	const struct mw_step *s = &mw_steps[j];
	int pair = demo_windows[s->window].pair;
	struct xr_qp *qp = pair_qp(ep, pair);
	struct xr_sge sge = {.addr = (uintptr_t)ep->buf, .length = s->size, .lkey = ep->mr->lkey};
	struct xr_send_wr wr = {
	    .wr_id = mw_index(j),
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_RDMA_WRITE,
	    .send_flags = XR_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = key->addr, .rkey = key->rkey},
	};
	struct xr_send_wr *bad_wr;
	struct xr_wc wc = {.status = XR_WC_GENERAL_ERR};
	struct xr_qp_attr attr;
	const char *state;
	int err;

	for (size_t off = 0; off < s->size; off++)
		ep->buf[off] = pattern_byte(mw_index(j), off);
	*ok = false;
	err = xr_post_send(qp, &wr, &bad_wr);
	if (!err && poll_cq_yielding(ep->cq, &wc, 1, 1, tool_now_ms() + COMPLETION_TIMEOUT_MS) != 1)
		err = -ETIMEDOUT;
	if (err) {
		snprintf(local, local_len, "post: %s", strerror(-err));
		return;
	}
	if (wc.status != s->status || wc.wr_id != mw_index(j) ||
	    (wc.status == XR_WC_SUCCESS && wc.opcode != XR_WC_RDMA_WRITE)) {
		snprintf(local, local_len, "completion: %s, opcode %d, instead of %s",
			 xr_wc_status_str(wc.status), wc.opcode, mw_expected_name(s));
		return;
	}
	if (s->status == XR_WC_SUCCESS) {
		*ok = true;
		snprintf(local, local_len, "RDMA_WRITE through the %s QP pair",
			 pair == MW_SECOND_PAIR ? "second" : "main");
		return;
	}
	err = xr_query_qp(qp, &attr, XR_QP_STATE, NULL);
	*ok = !err && attr.qp_state == XR_QPS_ERR;
	state = err ? "state unknown" : *ok ? "now in ERR" : "NOT in ERR";
	snprintf(local, local_len, "%s as expected, %s QP %s", mw_expected_name(s),
		 pair == MW_SECOND_PAIR ? "second" : "main", state);
}

/* The memory-window steps, after the operations; returns how many failed. */
static int run_client_mw(struct endpoint *ep, int oob)
{
	struct window_key keys[NUM_WINDOWS] = {{0}};
	int failures = 0;

	for (size_t j = 0; j < NUM_MW_STEPS; j++) {
		const struct mw_step *s = &mw_steps[j];
		char size[16], local[96] = "", verdict[OOB_LINE_MAX], line[32];
		int64_t start = tool_now_ns(), server_ns;
		bool ok = true, remote_ok;
		const char *remote_detail;
		double elapsed_ms;
		int n = 0;

		format_size(s->size, size, sizeof(size));
		if (s->action == MW_WRITE)
			client_mw_write(ep, j, &keys[s->window], &ok, local, sizeof(local));
		elapsed_ms = (double)(tool_now_ns() - start) / 1e6;
		snprintf(line, sizeof(line), "%s %zu\n", s->action == MW_WRITE ? "check" : "run",
			 mw_index(j));
		if (oob_send_line(oob, line) != 0 ||
		    oob_recv_line(oob, verdict, sizeof(verdict)) != 0) {
			printf("%-20s %7s  FAILED %9.3f ms  %s%sno verdict from the server\n",
			       s->name, size, elapsed_ms, local, local[0] ? "; " : "");
			return failures + 1;
		}
		remote_ok = strncmp(verdict, "ok ", 3) == 0;
		remote_detail = remote_ok			    ? verdict + 3
				: strncmp(verdict, "fail ", 5) == 0 ? verdict + 5
								    : verdict;
		/* A bind or an invalidation: the server's time, and the window's key. */
		if (remote_ok && s->action != MW_WRITE) {
			if (sscanf(verdict, "ok %" SCNd64 " %" SCNx32 " %" SCNx64 " %n", &server_ns,
				   &keys[s->window].rkey, &keys[s->window].addr, &n) != 3 ||
			    n == 0) {
				remote_ok = false;
				remote_detail = "malformed answer";
			} else {
				elapsed_ms = (double)server_ns / 1e6;
				remote_detail = verdict + n;
			}
		}
		ok = ok && remote_ok;
		printf("%-20s %7s  %-6s %9.3f ms  %s%sserver: %s\n", s->name, size,
		       ok ? "OK" : "FAILED", elapsed_ms, local, local[0] ? "; " : "",
		       remote_detail);
		failures += !ok;
	}
	return failures;
}

static int run_client(struct endpoint *ep, const struct peer_info *remote, int oob)
{
	int failures = 0;

	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct demo_op *op = &demo_ops[i];
		char size[16], local[96], verdict[OOB_LINE_MAX], line[32];
		int64_t start = tool_now_ns();
		bool usable, ok, remote_ok;
		const char *remote_detail;
		double elapsed_ms;

		format_size(op->size, size, sizeof(size));
		if (!both_run(ep, remote, i)) {
			printf("%-20s %7s  SKIPPED  masked atomics missing on %s\n", op->name, size,
			       ep->local.masked_atomics ? "the server" : "this device");
			continue;
		}
		usable = client_execute(ep, remote, i, &ok, local, sizeof(local));
		elapsed_ms = (double)(tool_now_ns() - start) / 1e6;
		if (!usable) {
			printf("%-20s %7s  FAILED %9.3f ms  %s\n", op->name, size, elapsed_ms,
			       local);
			return failures + 1;
		}
		snprintf(line, sizeof(line), "check %zu\n", i);
		if (oob_send_line(oob, line) != 0 ||
		    oob_recv_line(oob, verdict, sizeof(verdict)) != 0)
			snprintf(verdict, sizeof(verdict), "fail no verdict from the server");
		remote_ok = strncmp(verdict, "ok ", 3) == 0;
		remote_detail = remote_ok			    ? verdict + 3
				: strncmp(verdict, "fail ", 5) == 0 ? verdict + 5
								    : verdict;
		ok = ok && remote_ok;
		printf("%-20s %7s  %-6s %9.3f ms  %s%sserver: %s\n", op->name, size,
		       ok ? "OK" : "FAILED", elapsed_ms, local, local[0] ? "; " : "",
		       remote_detail);
		failures += !ok;
	}
	return failures + run_client_mw(ep, oob);
}

static void print_connection(const struct endpoint *ep, const struct peer_info *remote)
{
	char local_gid[INET6_ADDRSTRLEN], remote_gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, ep->local.gid.raw, local_gid, sizeof(local_gid));
	inet_ntop(AF_INET6, remote->gid.raw, remote_gid, sizeof(remote_gid));
	printf("connected: local qpn 0x%06" PRIx32 " gid %s, remote qpn 0x%06" PRIx32
	       " gid %s, path MTU %d\n",
	       ep->local.qpn, local_gid, remote->qpn, remote_gid, 128 << ep->mtu);
	printf("second QP pair, for a memory window: local qpn 0x%06" PRIx32
	       ", remote qpn 0x%06" PRIx32 "\n",
	       ep->local.qpn2, remote->qpn2);
}

static void usage(void)
{
	fprintf(stderr, "usage: xroce-demo server IFNAME\n"
			"       xroce-demo client IFNAME SERVER_IP\n");
}

/* The operations that ran on both sides. */
static size_t ops_run(const struct endpoint *ep, const struct peer_info *remote)
{
	size_t n = 0;

	for (size_t i = 0; i < NUM_OPS; i++)
		n += both_run(ep, remote, i);
	return n;
}

int main(int argc, char **argv)
{
	bool is_server = argc == 3 && strcmp(argv[1], "server") == 0;
	bool is_client = argc == 4 && strcmp(argv[1], "client") == 0;
	struct endpoint ep = {0};
	struct peer_info remote;
	char line[OOB_LINE_MAX];
	const char *why;
	unsigned int qp_access;
	int oob = -1, failures = 1, err;

	if (!is_server && !is_client) {
		usage();
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (endpoint_open(&ep, argv[2], is_server))
		goto out;
	qp_access = is_server
			? XR_ACCESS_REMOTE_WRITE | XR_ACCESS_REMOTE_READ | XR_ACCESS_REMOTE_ATOMIC
			: XR_ACCESS_LOCAL_WRITE;
	err = qp_to_init(ep.qp, 1, qp_access);
	if (!err)
		err = qp_to_init(ep.qp2, 1, qp_access);
	if (!err && is_server)
		err = server_prepare(&ep);
	if (err) {
		fprintf(stderr, PROG ": preparing the queue pair: %s\n", strerror(-err));
		goto out;
	}
	if (is_server)
		printf("waiting for a client on TCP port %d\n", DEMO_PORT);
	oob = is_server
		  ? oob_accept(AF_INET, DEMO_PORT, ACCEPT_TIMEOUT_MS, &why)
		  : oob_connect(argv[3], DEMO_PORT, CONNECT_TIMEOUT_MS, CONNECT_TIMEOUT_MS, &why);
	if (oob < 0) {
		fprintf(stderr, PROG ": out-of-band connection: %s\n", why);
		goto out;
	}
	err = oob_exchange(oob, &ep.local, &remote);
	if (err) {
		fprintf(stderr, PROG ": out-of-band exchange: %s\n", oob_error(err));
		goto out;
	}
	err = endpoint_connect(&ep, &remote, false);
	if (!err)
		err = endpoint_connect(&ep, &remote, true);
	if (err) {
		fprintf(stderr, PROG ": modify_qp: %s\n", strerror(-err));
		goto out;
	}
	/* The client must not send before the server's QPs have left INIT. */
	if (is_server)
		err = oob_send_line(oob, "ready\n");
	else if ((err = oob_recv_line(oob, line, sizeof(line))) == 0 && strcmp(line, "ready") != 0)
		err = -EPROTO;
	if (err) {
		fprintf(stderr, PROG ": waiting for the peer: %s\n", oob_error(err));
		goto out;
	}
	print_connection(&ep, &remote);
	failures = is_server ? run_server(&ep, &remote, oob) : run_client(&ep, &remote, oob);
	/* The server's QP must live until the client has the ACK of its last operation. */
	if (is_server)
		oob_recv_line(oob, line, sizeof(line));
	else
		oob_send_line(oob, "done\n");
	printf("%zu of %zu operations succeeded",
	       ops_run(&ep, &remote) + NUM_MW_STEPS - (size_t)failures,
	       ops_run(&ep, &remote) + NUM_MW_STEPS);
	if (ops_run(&ep, &remote) < NUM_OPS)
		printf(", %zu skipped", NUM_OPS - ops_run(&ep, &remote));
	printf("\n");
out:
	if (oob >= 0)
		close(oob);
	endpoint_close(&ep);
	return failures == 0 ? 0 : 1;
}
