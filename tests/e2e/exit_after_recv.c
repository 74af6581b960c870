/* SPDX-License-Identifier: MIT */
/*
 * exit_after_recv: a receiver that exits the moment it has its last
 * message, closing nothing, must still acknowledge that message.
 *
 *   exit_after_recv server IFNAME PORT            receives, answers, exits
 *   exit_after_recv client IFNAME SERVER_IP PORT  sends, checks completions
 *
 * The two ping-pong ROUNDS SENDs of 64 B over an RC QP pair, the server
 * answering each one and polling its CQ, so that its engine learns to hold
 * the ACK of what it receives for the answer to take along (the ACK hold).
 * Then the client sends one more SEND; the server polls until it has it and
 * calls exit(0) at once, with its QP, CQs and device still open. The client
 * must see that last SEND complete successfully (the ACK left through the
 * exit-time release), not with a retry error after the server is gone. The
 * server's exit status tells whether the last message arrived whole.
 */
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "exit_after_recv"
#define ROUNDS 200
#define MSG_SIZE 64
#define WAIT_MS 10000
#define HELLO_MAGIC "XRexitRC"

struct side {
	struct e2e_port port;
	struct e2e_qp_end end;
	struct xr_mr *mr;
	uint8_t buf[2 * MSG_SIZE]; /* send half, receive half */
};

static int post_recv(struct side *s)
{
	struct xr_sge sge = sge_of(s->mr, s->buf + MSG_SIZE, MSG_SIZE);
	struct xr_recv_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1}, *bad;
	int ret = xr_post_recv(s->end.qp, &wr, &bad);

	if (ret)
		fprintf(stderr, PROG ": post_recv: %s\n", strerror(-ret));
	return ret;
}

static int post_send(struct side *s, uint32_t seq)
{
	struct xr_sge sge = sge_of(s->mr, s->buf, MSG_SIZE);
	struct xr_send_wr wr = {.wr_id = 1,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = XR_WR_SEND,
				.send_flags = XR_SEND_SIGNALED},
			  *bad;
	int ret;

	fill_pattern(s->buf, seq, 0, MSG_SIZE);
	ret = xr_post_send(s->end.qp, &wr, &bad);
	if (ret)
		fprintf(stderr, PROG ": post_send: %s\n", strerror(-ret));
	return ret;
}

/* One successful completion of wr_id on cq, polled without sleeping (the engine runs in here). */
static int wait_wc(struct xr_cq *cq, uint64_t wr_id, const char *what, uint32_t seq)
{
	struct xr_wc wc;

	if (poll_cq_yielding(cq, &wc, 1, 1, tool_now_ms() + WAIT_MS) != 1) {
		fprintf(stderr, PROG ": no completion for %s %u within %d ms\n", what, seq,
			WAIT_MS);
		return -1;
	}
	if (wc.wr_id == wr_id && wc.status == XR_WC_SUCCESS)
		return 0;
	fprintf(stderr, PROG ": %s %u completed with %s (wr_id %" PRIu64 ")\n", what, seq,
		xr_wc_status_str(wc.status), wc.wr_id);
	return -1;
}

static int received_ok(struct side *s, uint32_t seq)
{
	if (pattern_mismatch(s->buf + MSG_SIZE, seq, 0, MSG_SIZE) < 0)
		return 0;
	fprintf(stderr, PROG ": message %u arrived with other bytes\n", seq);
	return -1;
}

static int setup(struct side *s, const char *ifname, int fd, bool is_server)
{
	uint32_t mine[3], theirs[3];
	union xr_gid peer_gid;
	int ret;

	if (e2e_open_port(PROG, ifname, -1, &s->port) ||
	    e2e_create_qp_end(PROG, &s->port, &s->end, 4, 4, 1, 0))
		return -1;
	s->mr = xr_reg_mr(s->port.pd, s->buf, sizeof(s->buf), XR_ACCESS_LOCAL_WRITE);
	if (!s->mr) {
		fprintf(stderr, PROG ": reg_mr: %s\n", strerror(errno));
		return -1;
	}
	if (post_recv(s))
		return -1;
	mine[0] = s->end.qp->qp_num;
	mine[1] = s->end.psn;
	mine[2] = s->port.mtu_enum;
	ret = e2e_send_hello(fd, HELLO_MAGIC, mine, 3, &s->port.gid);
	if (!ret)
		ret = e2e_recv_hello(fd, HELLO_MAGIC, theirs, 3, &peer_gid);
	if (ret) {
		fprintf(stderr, PROG ": exchange failed: %s\n", oob_error(ret));
		return -1;
	}
	if (e2e_agree_mtu(PROG, &s->port, theirs[2]) ||
	    e2e_connect_qp(PROG, &s->port, &s->end, 1, theirs[0], theirs[1], &peer_gid))
		return -1;
	/* Both at RTS before the first SEND: a byte each way. */
	ret = oob_write_full(fd, "r", 1, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
	if (!ret) {
		char c;

		ret = oob_read_full(fd, &c, 1, tool_now_ms() + E2E_OOB_TIMEOUT_MS);
	}
	if (ret)
		fprintf(stderr, PROG ": %s: barrier failed: %s\n", is_server ? "server" : "client",
			oob_error(ret));
	return ret ? -1 : 0;
}

static int run_server(const char *ifname, unsigned int port)
{
	static struct side s;
	int fd = e2e_oob_open(NULL, port, WAIT_MS, 0, 0);

	if (fd < 0 || setup(&s, ifname, fd, true))
		return 1;
	for (uint32_t seq = 0; seq <= ROUNDS; seq++) {
		if (wait_wc(s.end.recv_cq, 2, "receive", seq) || received_ok(&s, seq))
			return 1;
		if (seq == ROUNDS) {
			printf("[server] %u messages received; exiting with everything open\n",
			       ROUNDS + 1);
			fflush(stdout);
			exit(0);
		}
		if (post_recv(&s) || post_send(&s, seq) || wait_wc(s.end.send_cq, 1, "answer", seq))
			return 1;
	}
	return 1;
}

static int run_client(const char *ifname, const char *server_ip, unsigned int port)
{
	static struct side s;
	int fd = e2e_oob_open(server_ip, port, 0, 100, WAIT_MS);

	if (fd < 0 || setup(&s, ifname, fd, false))
		return 1;
	for (uint32_t seq = 0; seq < ROUNDS; seq++) {
		if (post_send(&s, seq) || wait_wc(s.end.send_cq, 1, "SEND", seq) ||
		    wait_wc(s.end.recv_cq, 2, "answer", seq) || received_ok(&s, seq) ||
		    post_recv(&s))
			return 1;
	}
	if (post_send(&s, ROUNDS) || wait_wc(s.end.send_cq, 1, "last SEND", ROUNDS))
		return 1;
	printf("[client] %u SENDs completed, the last one unanswered\n", ROUNDS + 1);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return run_server(argv[2], (unsigned int)atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return run_client(argv[2], argv[3], (unsigned int)atoi(argv[4]));
	fprintf(stderr, "usage: " PROG " server IFNAME PORT | client IFNAME SERVER_IP PORT\n");
	return 2;
}
