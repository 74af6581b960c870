/* SPDX-License-Identifier: MIT */
/*
 * reopen_loop: a device opened, used and closed again and again, as by an
 * application that a supervisor restarts.
 *
 *   reopen_loop server IFNAME [-p PORT] [-n ITERATIONS] [-f FIRST] [-k]
 *   reopen_loop client IFNAME SERVER_IP [-p PORT] [-n ITERATIONS] [-f FIRST]
 *   reopen_loop hold IFNAME PEER_IP [-q QPS]
 *
 * In every iteration each side opens its device (the server only once with
 * -k), creates a PD, an MR, CQs and an RC QP, and the two connect over a new
 * out-of-band TCP connection; the client RDMA-WRITEs a pattern of the
 * iteration into the server's buffer and then SENDs another, the server
 * checks that both landed byte for byte, and both sides destroy everything,
 * close the device and go round again at once. The first failure ends the
 * run with exit status 1, saying in which iteration. At the end each side
 * prints how long opening its device took, and fails if it has more file
 * descriptors open than before the first iteration. Iterations are numbered from
 * FIRST (default 0) on both sides, which must agree: a server that keeps its
 * device open can then serve several clients in turn.
 *
 * hold opens the device, brings QPS (default 3) RC QPs to RTS towards
 * PEER_IP (which need not run anything: nothing is sent), prints
 * "[hold] pid N: QPS QPs in RTS" and waits to be killed (HOLD_MS at most),
 * so that its death leaves behind what a killed owner leaves.
 */
#include <getopt.h>
#include <stdlib.h>

#include "e2e_common.h"

#define PROG "reopen_loop"
#define DEFAULT_PORT 18795
#define DEFAULT_ITERATIONS 200
#define DEFAULT_HOLD_QPS 3
#define MAX_HOLD_QPS 64
/* Whatever the peer has: hold never sends anything. */
#define HOLD_PEER_QPN 0x100

#define WRITE_SIZE (16u << 10) /* several packets at any path MTU */
#define SEND_SIZE 256u
#define BUF_SIZE (WRITE_SIZE + SEND_SIZE)

/* Bounds on every wait. */
#define ITERATION_TIMEOUT_MS 10000
#define ACCEPT_TIMEOUT_MS 30000
#define CONNECT_RETRY_MS 20000
#define CONNECT_ATTEMPT_MS 2000
#define HOLD_MS 60000

#define HELLO_MAGIC "XRREOPEN"
enum {
	HELLO_ITER,
	HELLO_QPN,
	HELLO_PSN,
	HELLO_MTU,
	HELLO_RKEY,
	HELLO_ADDR_HI,
	HELLO_ADDR_LO,
	HELLO_WORDS
};

enum { WR_WRITE = 1, WR_SEND = 2, WR_RECV = 3 };

struct options {
	const char *role;
	const char *ifname;
	const char *server_ip; /* client: the server; hold: the peer */
	unsigned int port;
	unsigned long iterations;
	unsigned long first;
	unsigned long hold_qps;
	bool keep_open;
};

/* How long xr_open_device took, over the run. */
struct open_times {
	double total_ms, max_ms;
	unsigned long count, slowest;
};

/* One iteration's resources on this side. */
struct round {
	struct e2e_port port;
	struct e2e_qp_end end;
	struct xr_mr *mr;
	uint8_t *buf;
};

static uint32_t write_seed(unsigned long iteration)
{
	return (uint32_t)iteration * 2 + 1;
}

static uint32_t send_seed(unsigned long iteration)
{
	return (uint32_t)iteration * 2 + 2;
}

static int open_port(const struct options *o, struct e2e_port *port, struct open_times *t,
		     unsigned long iteration)
{
	int64_t start = tool_now_ns();
	double ms;

	if (e2e_open_port(PROG, o->ifname, -1, port))
		return -1;
	ms = (double)(tool_now_ns() - start) / 1e6;
	t->total_ms += ms;
	t->count++;
	if (ms > t->max_ms) {
		t->max_ms = ms;
		t->slowest = iteration;
	}
	return 0;
}

/* The MR and QP of an iteration, on an open port; -1 after saying why. */
static int set_up_round(struct round *r, int access)
{
	memset(r->buf, 0, BUF_SIZE);
	r->mr = xr_reg_mr(r->port.pd, r->buf, BUF_SIZE, access);
	if (!r->mr) {
		fprintf(stderr, PROG ": couldn't register an MR: %s\n", strerror(errno));
		return -1;
	}
	return e2e_create_qp_end(PROG, &r->port, &r->end, 2, 1, 1, access);
}

static void tear_down_round(struct round *r, bool close_device)
{
	e2e_destroy_qp_end(&r->end);
	r->end = (struct e2e_qp_end){0};
	if (r->mr)
		xr_dereg_mr(r->mr);
	r->mr = NULL;
	if (close_device) {
		e2e_close_port(&r->port);
		r->port = (struct e2e_port){0};
	}
}

static int send_hello(int fd, const struct round *r, unsigned long iteration)
{
	uint32_t words[HELLO_WORDS] = {
	    [HELLO_ITER] = (uint32_t)iteration,
	    [HELLO_QPN] = r->end.qp->qp_num,
	    [HELLO_PSN] = r->end.psn,
	    [HELLO_MTU] = r->port.mtu_enum,
	    [HELLO_RKEY] = r->mr->rkey,
	    [HELLO_ADDR_HI] = (uint32_t)((uintptr_t)r->buf >> 32),
	    [HELLO_ADDR_LO] = (uint32_t)(uintptr_t)r->buf,
	};

	return e2e_send_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &r->port.gid);
}

/* Reads the peer's hello and connects our QP to its; -1 after saying why. */
static int connect_to_peer(int fd, struct round *r, unsigned long iteration,
			   uint32_t words[HELLO_WORDS])
{
	union xr_gid gid;
	int ret = e2e_recv_hello(fd, HELLO_MAGIC, words, HELLO_WORDS, &gid);

	if (ret) {
		fprintf(stderr, PROG ": iteration %lu: no hello from the peer: %s\n", iteration,
			oob_error(ret));
		return -1;
	}
	if (words[HELLO_ITER] != (uint32_t)iteration) {
		fprintf(stderr, PROG ": iteration %lu: the peer is in iteration %u\n", iteration,
			words[HELLO_ITER]);
		return -1;
	}
	if (e2e_agree_mtu(PROG, &r->port, words[HELLO_MTU]))
		return -1;
	return e2e_connect_qp(PROG, &r->port, &r->end, 1, words[HELLO_QPN], words[HELLO_PSN], &gid);
}

/* Both sides' verdicts: ours is sent, the peer's read; 1 when both are good. */
static int exchange_verdicts(int fd, bool ours, bool send_first, unsigned long iteration)
{
	uint32_t mine = htonl(ours), peer = 0;
	int64_t deadline = tool_now_ms() + ITERATION_TIMEOUT_MS;
	int ret = 0;

	if (send_first)
		ret = oob_write_full(fd, &mine, sizeof(mine), deadline);
	if (!ret)
		ret = oob_read_full(fd, &peer, sizeof(peer), deadline);
	if (!ret && !send_first)
		ret = oob_write_full(fd, &mine, sizeof(mine), deadline);
	if (ret) {
		fprintf(stderr, PROG ": iteration %lu: lost the peer: %s\n", iteration,
			oob_error(ret));
		return 0;
	}
	if (!peer)
		fprintf(stderr, PROG ": iteration %lu: the peer failed\n", iteration);
	return ours && peer;
}

/* Checks what the client wrote and sent in this iteration; false after saying why. */
static bool check_landed(const struct round *r, unsigned long iteration)
{
	struct xr_wc wc;
	struct report rep = {0};

	if (poll_cq_until(r->end.recv_cq, &wc, 1, 1, tool_now_ms() + ITERATION_TIMEOUT_MS) != 1)
		report_fail(&rep, "no receive completion within %d ms", ITERATION_TIMEOUT_MS);
	else if (check_wc(&wc, WR_RECV, XR_WC_SUCCESS, XR_WC_RECV, &rep) &&
		 wc.byte_len != SEND_SIZE)
		report_fail(&rep, "received %u bytes, expected %u", wc.byte_len, SEND_SIZE);
	for (size_t i = 0; !rep.failed && i < WRITE_SIZE; i++)
		if (r->buf[i] != pattern_byte(write_seed(iteration), i))
			report_fail(&rep, "written byte %zu is 0x%02x, expected 0x%02x", i,
				    r->buf[i], pattern_byte(write_seed(iteration), i));
	for (size_t i = 0; !rep.failed && i < SEND_SIZE; i++)
		if (r->buf[WRITE_SIZE + i] != pattern_byte(send_seed(iteration), i))
			report_fail(&rep, "sent byte %zu is 0x%02x, expected 0x%02x", i,
				    r->buf[WRITE_SIZE + i], pattern_byte(send_seed(iteration), i));
	if (rep.failed)
		fprintf(stderr, PROG ": iteration %lu: %s\n", iteration, rep.detail);
	return !rep.failed;
}

static bool server_iteration(const struct options *o, int listen_fd, struct round *r,
			     unsigned long iteration, struct open_times *t)
{
	uint32_t words[HELLO_WORDS];
	struct xr_sge sge;
	struct xr_recv_wr wr = {.wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1}, *bad;
	const char *why;
	bool ok = false;
	int fd, ret;

	fd = oob_accept_on(listen_fd, tool_now_ms() + ACCEPT_TIMEOUT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, PROG ": iteration %lu: no client: %s\n", iteration, why);
		return false;
	}
	if (!r->port.dev && open_port(o, &r->port, t, iteration))
		goto out;
	if (set_up_round(r, XR_ACCESS_LOCAL_WRITE | XR_ACCESS_REMOTE_WRITE))
		goto out;
	sge = sge_of(r->mr, r->buf + WRITE_SIZE, SEND_SIZE);
	ret = xr_post_recv(r->end.qp, &wr, &bad);
	if (ret) {
		fprintf(stderr, PROG ": couldn't post a receive: %s\n", strerror(-ret));
		goto out;
	}
	if (connect_to_peer(fd, r, iteration, words))
		goto out;
	ret = send_hello(fd, r, iteration);
	if (ret) {
		fprintf(stderr, PROG ": iteration %lu: couldn't send our hello: %s\n", iteration,
			oob_error(ret));
		goto out;
	}
	ok = exchange_verdicts(fd, check_landed(r, iteration), true, iteration);
out:
	close(fd);
	tear_down_round(r, !o->keep_open || !ok);
	return ok;
}

/* Posts the WRITE and the SEND and waits for both; false after saying why. */
static bool client_act(struct round *r, const uint32_t words[HELLO_WORDS], unsigned long iteration)
{
	struct xr_sge write_sge = sge_of(r->mr, r->buf, WRITE_SIZE);
	struct xr_sge send_sge = sge_of(r->mr, r->buf + WRITE_SIZE, SEND_SIZE);
	struct xr_send_wr send = {.wr_id = WR_SEND,
				  .sg_list = &send_sge,
				  .num_sge = 1,
				  .opcode = XR_WR_SEND,
				  .send_flags = XR_SEND_SIGNALED};
	struct xr_send_wr write = {
	    .wr_id = WR_WRITE,
	    .next = &send,
	    .sg_list = &write_sge,
	    .num_sge = 1,
	    .opcode = XR_WR_RDMA_WRITE,
	    .send_flags = XR_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uint64_t)words[HELLO_ADDR_HI] << 32 | words[HELLO_ADDR_LO],
			.rkey = words[HELLO_RKEY]},
	};
	struct report rep = {0};
	struct xr_wc wc[2];

	fill_pattern(r->buf, write_seed(iteration), 0, WRITE_SIZE);
	fill_pattern(r->buf + WRITE_SIZE, send_seed(iteration), 0, SEND_SIZE);
	if (e2e_post_send(r->end.qp, &write, &rep)) {
		if (poll_cq_until(r->end.send_cq, wc, 2, 2, tool_now_ms() + ITERATION_TIMEOUT_MS) !=
		    2)
			report_fail(&rep, "the WRITE and SEND did not complete within %d ms",
				    ITERATION_TIMEOUT_MS);
		else if (check_wc(&wc[0], WR_WRITE, XR_WC_SUCCESS, XR_WC_RDMA_WRITE, &rep))
			check_wc(&wc[1], WR_SEND, XR_WC_SUCCESS, XR_WC_SEND, &rep);
	}
	if (rep.failed)
		fprintf(stderr, PROG ": iteration %lu: %s\n", iteration, rep.detail);
	return !rep.failed;
}

static bool client_iteration(const struct options *o, struct round *r, unsigned long iteration,
			     struct open_times *t)
{
	uint32_t words[HELLO_WORDS];
	const char *why;
	bool ok = false;
	int fd = -1, ret;

	if (open_port(o, &r->port, t, iteration))
		return false;
	if (set_up_round(r, XR_ACCESS_LOCAL_WRITE))
		goto out;
	fd = oob_connect(o->server_ip, o->port, CONNECT_RETRY_MS, CONNECT_ATTEMPT_MS, &why);
	if (fd < 0) {
		fprintf(stderr, PROG ": iteration %lu: couldn't connect to %s:%u: %s\n", iteration,
			o->server_ip, o->port, why);
		goto out;
	}
	ret = send_hello(fd, r, iteration);
	if (ret) {
		fprintf(stderr, PROG ": iteration %lu: couldn't send our hello: %s\n", iteration,
			oob_error(ret));
		goto out;
	}
	if (connect_to_peer(fd, r, iteration, words))
		goto out;
	ok = exchange_verdicts(fd, client_act(r, words, iteration), false, iteration);
out:
	if (fd >= 0)
		close(fd);
	tear_down_round(r, true);
	return ok;
}

static int run_pair(const struct options *o)
{
	bool is_server = !strcmp(o->role, "server");
	struct open_times t = {0};
	struct round r = {0};
	unsigned long i = 0;
	int listen_fd = -1, fds_before = count_open_fds(), fds_after;
	const char *why;

	r.buf = malloc(BUF_SIZE);
	if (!r.buf) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	if (is_server) {
		listen_fd = oob_listen(AF_INET, o->port, 1, &why);
		if (listen_fd < 0) {
			fprintf(stderr, PROG ": couldn't listen on port %u: %s\n", o->port, why);
			free(r.buf);
			return 1;
		}
	}
	/* With -k the device is open before the first client, and says so. */
	if (is_server && o->keep_open) {
		if (open_port(o, &r.port, &t, 0))
			goto out;
		printf("[server] pid %d: device open in %.1f ms\n", (int)getpid(), t.max_ms);
		fflush(stdout);
	}
	for (i = 0; i < o->iterations && !tool_stop_signal; i++)
		if (!(is_server ? server_iteration(o, listen_fd, &r, o->first + i, &t)
				: client_iteration(o, &r, o->first + i, &t)))
			break;
out:
	tear_down_round(&r, true);
	if (listen_fd >= 0)
		close(listen_fd);
	free(r.buf);
	fds_after = count_open_fds();
	if (fds_after != fds_before) {
		printf(
		    "[%s] FAIL: %d file descriptors open before the first iteration, %d after the "
		    "last\n",
		    o->role, fds_before, fds_after);
		return 1;
	}
	if (i < o->iterations) {
		printf("[%s] FAIL in iteration %lu (%lu of %lu)\n", o->role, o->first + i, i + 1,
		       o->iterations);
		return 1;
	}
	printf("[%s] PASS: %lu iterations; device opened %lu times in %.1f ms on average, "
	       "%.1f ms at most (iteration %lu)\n",
	       o->role, i, t.count, t.total_ms / (double)t.count, t.max_ms, t.slowest);
	return 0;
}

static int hold(const struct options *o)
{
	struct e2e_qp_end ends[MAX_HOLD_QPS] = {0};
	struct e2e_port port = {0};
	union xr_gid peer = {.raw = {[10] = 0xff, [11] = 0xff}};
	int64_t until = tool_now_ms() + HOLD_MS;
	unsigned long i;
	int status = 1;

	if (inet_pton(AF_INET, o->server_ip, &peer.raw[12]) != 1) {
		fprintf(stderr, PROG ": %s is no IPv4 address\n", o->server_ip);
		return 2;
	}
	if (e2e_open_port(PROG, o->ifname, -1, &port))
		goto out;
	for (i = 0; i < o->hold_qps; i++)
		if (e2e_create_qp_end(PROG, &port, &ends[i], 1, 1, 1, XR_ACCESS_LOCAL_WRITE) ||
		    e2e_connect_qp(PROG, &port, &ends[i], 1, HOLD_PEER_QPN + (uint32_t)i, 0, &peer))
			goto out;
	printf("[hold] pid %d: %lu QPs in RTS\n", (int)getpid(), o->hold_qps);
	fflush(stdout);
	while (tool_now_ms() < until && !tool_stop_signal)
		usleep(10000);
	if (tool_stop_signal)
		status = 0;
	else
		fprintf(stderr, PROG ": hold: not killed within %d ms\n", HOLD_MS);
out:
	for (i = 0; i < o->hold_qps; i++)
		e2e_destroy_qp_end(&ends[i]);
	e2e_close_port(&port);
	return status;
}

static bool parse_args(int argc, char **argv, struct options *o)
{
	int positional, opt;

	if (argc < 3)
		return false;
	o->role = argv[1];
	o->ifname = argv[2];
	if (!strcmp(o->role, "client") || !strcmp(o->role, "hold")) {
		if (argc < 4)
			return false;
		o->server_ip = argv[3];
		positional = 4;
	} else if (!strcmp(o->role, "server")) {
		positional = 3;
	} else {
		return false;
	}
	optind = positional;
	while ((opt = getopt(argc, argv, "p:n:f:q:k")) != -1) {
		unsigned long v;

		switch (opt) {
		case 'p':
			if (!parse_ulong(optarg, 65535, &v) || !v)
				return false;
			o->port = (unsigned int)v;
			break;
		case 'n':
			if (!parse_ulong(optarg, 1000000, &o->iterations) || !o->iterations)
				return false;
			break;
		case 'f':
			if (!parse_ulong(optarg, 1000000, &o->first))
				return false;
			break;
		case 'q':
			if (!parse_ulong(optarg, MAX_HOLD_QPS, &o->hold_qps) || !o->hold_qps)
				return false;
			break;
		case 'k':
			o->keep_open = true;
			break;
		default:
			return false;
		}
	}
	return optind == argc;
}

int main(int argc, char **argv)
{
	struct options o = {
	    .port = DEFAULT_PORT, .iterations = DEFAULT_ITERATIONS, .hold_qps = DEFAULT_HOLD_QPS};

	if (!parse_args(argc, argv, &o)) {
		fprintf(stderr,
			"usage: %s server IFNAME [-p PORT] [-n ITERATIONS] [-f FIRST] [-k]\n"
			"       %s client IFNAME SERVER_IP [-p PORT] [-n ITERATIONS] [-f FIRST]\n"
			"       %s hold IFNAME PEER_IP [-q QPS]\n",
			PROG, PROG, PROG);
		return 2;
	}
	tool_catch_stop_signals();
	srand48(getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	return !strcmp(o.role, "hold") ? hold(&o) : run_pair(&o);
}
