/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm_faults: the RDMA connection manager (xroce/rdma_cm.h) when things
 * go wrong, end to end between two processes (tests/e2e/test_rdma_cm_faults.sh):
 *
 *   rdma_cm_faults backlog-server ADDR PORT BACKLOG
 *        listens with BACKLOG, takes no event until SIGUSR1, then accepts
 *        every request that was queued and sees each connection go
 *   rdma_cm_faults flood DST PORT COUNT
 *        connects COUNT ids at once; each must end REJECTED (reason 28) or
 *        ESTABLISHED; then disconnects the established ones
 *   rdma_cm_faults die-server ADDR PORT request|accept
 *        on the first request exits at once (request) or right after
 *        accepting it (accept), without destroying anything
 *   rdma_cm_faults orphan-client DST PORT
 *        connects to a die-server: the connection must end (REJECTED, or
 *        ESTABLISHED then REJECTED or DISCONNECTED) with its QP in error,
 *        then everything is destroyed, leaving as many file descriptors
 *        open as after a first resolution;
 *        waits for SIGUSR1 before exiting
 *   rdma_cm_faults hold-server ADDR PORT
 *        accepts one connection and echoes each message until it goes
 *   rdma_cm_faults hold-client DST PORT SIZE
 *        echoes SIZE bytes, waits for SIGUSR1, echoes again and disconnects:
 *        whatever arrived in between must not have touched the connection
 *
 * Result lines on stdout: "listening", "requests N", "established N",
 * "served N", "server done", "got EVENT status S", "flood done established
 * E rejected R", "dying", "send flushed", "clean", "echo ok N", "holding",
 * "echoed N", "client done". Waits for a signal last 30 s at most; every
 * other wait is bounded as in rdma_cm_common.h. Anything unexpected is
 * described on stderr, exit status 1 (2 for a usage error).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* e2e_common.h's helpers need it; the Makefile defines it too */
#endif
#define PROG "rdma_cm_faults"
#include <signal.h>

#include "rdma_cm_common.h"

#define MAX_CONNECTIONS 64
#define SIGNAL_WAIT_S 30
/* After the last connection went: no other request may come within this. */
#define QUIET_MS 500
/* hold-server: how long the connection may stay up, all told. */
#define HOLD_MAX_MS 60000

/* Before any thread exists (the library's inherit the mask): SIGUSR1 is only ever awaited. */
static void block_usr1(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		die("pthread_sigmask failed");
}

static void await_usr1(const char *what)
{
	struct timespec limit = {.tv_sec = SIGNAL_WAIT_S};
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigtimedwait(&set, NULL, &limit) != SIGUSR1)
		die("no SIGUSR1 within %d s (%s)", SIGNAL_WAIT_S, what);
}

static void print_event(const struct cm_event *ev)
{
	printf("got %s status %d\n", event_short_name(ev->type), ev->status);
}

static struct endpoint *endpoint_of(struct endpoint *eps, int n, struct xr_rdma_cm_id *id)
{
	for (int i = 0; i < n; i++)
		if (eps[i].id == id)
			return &eps[i];
	die("an event for id %p, which is none of ours", (void *)id);
}

/* An RC endpoint for a CONNECT_REQUEST's id, accepted. */
static void accept_request(struct endpoint *ep, struct xr_rdma_cm_id *id)
{
	int ret;

	*ep = (struct endpoint){.id = id};
	create_qp(ep, XR_QPT_RC);
	ret = xr_rdma_accept(id, &server_conn_param);
	if (ret)
		die("xr_rdma_accept: %s", strerror(-ret));
}

/* ---- a REQ flood past the backlog -------------------------------------------------------- */

static int run_backlog_server(char **argv)
{
	int backlog = (int)parse_number(argv[3], 1, MAX_CONNECTIONS, "BACKLOG");
	struct xr_rdma_event_channel *ch;
	struct xr_rdma_cm_id *listener;
	static struct endpoint eps[MAX_CONNECTIONS];
	int requests = 0, established = 0, served = 0;
	struct cm_event ev;

	block_usr1();
	ch = create_channel();
	listener = listen_with_backlog(ch, XR_RDMA_PS_TCP, argv[1], argv[2], backlog);
	await_usr1("to take the queued requests");
	while (!requests || served < requests) {
		next_event(ch, EVENT_TIMEOUT_MS, XR_RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
		switch (ev.type) {
		case XR_RDMA_CM_EVENT_CONNECT_REQUEST:
			if (ev.listen_id != listener || requests == MAX_CONNECTIONS)
				die("CONNECT_REQUEST %d, on listener %p", requests + 1,
				    (void *)ev.listen_id);
			check_private_data(&ev, REQ_PRIVATE_DATA);
			accept_request(&eps[requests++], ev.id);
			break;
		case XR_RDMA_CM_EVENT_ESTABLISHED:
			endpoint_of(eps, requests, ev.id);
			established++;
			break;
		case XR_RDMA_CM_EVENT_DISCONNECTED: {
			struct endpoint *ep = endpoint_of(eps, requests, ev.id);
			int ret = xr_rdma_disconnect(ep->id);

			if (ret && ret != -EINVAL)
				die("xr_rdma_disconnect after DISCONNECTED: %s", strerror(-ret));
			end_endpoint(ep);
			served++;
			break;
		}
		default:
			die("unexpected %s (status %d)", event_str(ev.type), ev.status);
		}
	}
	if (poll_event(ch, QUIET_MS, XR_RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		die("%s (status %d) after every connection went", event_str(ev.type), ev.status);
	printf("requests %d\nestablished %d\nserved %d\n", requests, established, served);
	destroy_id(listener);
	destroy_channel(ch);
	printf("server done\n");
	return 0;
}

static int run_flood(char **argv)
{
	int count = (int)parse_number(argv[3], 1, MAX_CONNECTIONS, "COUNT");
	struct xr_rdma_event_channel *ch = create_channel();
	static struct endpoint eps[MAX_CONNECTIONS];
	int established = 0, rejected = 0;
	struct cm_event ev;

	for (int i = 0; i < count; i++)
		rc_client_setup(ch, &eps[i], argv[1], argv[2]);
	/* Back to back: the listener takes none of them before all are sent. */
	for (int i = 0; i < count; i++)
		connect_id(eps[i].id, &client_conn_param);
	while (established + rejected < count) {
		struct endpoint *ep;

		next_event(ch, EXPECT_TIMEOUT_MS, XR_RDMA_CM_EVENT_ESTABLISHED, &ev);
		ep = endpoint_of(eps, count, ev.id);
		print_event(&ev);
		if (ev.type == XR_RDMA_CM_EVENT_REJECTED && ev.status == 28) {
			end_endpoint(ep);
			rejected++;
		} else if (ev.type == XR_RDMA_CM_EVENT_ESTABLISHED && !ev.status) {
			check_private_data(&ev, REP_PRIVATE_DATA);
			established++;
		} else {
			die("%s with status %d: expected REJECTED (28) or ESTABLISHED",
			    event_str(ev.type), ev.status);
		}
	}
	for (int i = 0; i < count; i++) {
		if (!eps[i].id)
			continue;
		disconnect_and_wait(ch, eps[i].id);
		end_endpoint(&eps[i]);
	}
	destroy_channel(ch);
	printf("flood done established %d rejected %d\n", established, rejected);
	return 0;
}

/* ---- a listener that dies mid-handshake ---------------------------------------------------- */

static int run_die_server(char **argv)
{
	bool accept = !strcmp(argv[3], "accept");
	struct xr_rdma_event_channel *ch;
	struct xr_rdma_cm_id *listener;
	struct endpoint ep;
	struct cm_event ev;

	if (!accept && strcmp(argv[3], "request"))
		die("die-server: request or accept, not %s", argv[3]);
	ch = create_channel();
	listener = listen_on(ch, XR_RDMA_PS_TCP, argv[1], argv[2]);
	ep.id = take_any_request(ch, listener, &ev);
	if (accept)
		accept_request(&ep, ep.id);
	printf("dying\n");
	/* Nothing destroyed: what the peer hears is the library's doing at exit. */
	exit(0);
}

/* The QP of a connection that ended takes no more work: a SEND is flushed. */
static void expect_send_flushed(struct endpoint *ep)
{
	struct xr_wc wc;

	ep->send_buf = alloc_registered(ep, 64, &ep->send_mr);
	post_send(ep, ep->send_mr, ep->send_buf, 64, NULL);
	if (poll_cq_until(ep->send_cq, &wc, 1, 1, tool_now_ms() + CQ_TIMEOUT_MS) != 1)
		die("the SEND after the connection ended did not complete within %d ms",
		    CQ_TIMEOUT_MS);
	if (wc.wr_id != SEND_WR_ID || wc.status != XR_WC_WR_FLUSH_ERR)
		die("the SEND after the connection ended completed with \"%s\", expected \"%s\"",
		    xr_wc_status_str(wc.status), xr_wc_status_str(XR_WC_WR_FLUSH_ERR));
	printf("send flushed\n");
}

/* Resolves DST:PORT with an id of its own, then destroys it. */
static void warm_up(struct xr_rdma_event_channel *ch, const char *dst, const char *port)
{
	struct sockaddr_storage ss;
	struct xr_rdma_cm_id *id = create_id(ch, XR_RDMA_PS_TCP);

	parse_sockaddr(dst, port, &ss);
	resolve(ch, id, &ss);
	destroy_id(id);
}

static int run_orphan_client(char **argv)
{
	int fds_before, fds_after;
	struct xr_rdma_event_channel *ch;
	struct endpoint ep = {0};
	struct cm_event ev;

	block_usr1();
	/*
	 * The CM keeps a device open once it used it, as librdmacm does: the
	 * count to come back to is the one after a first resolution.
	 */
	ch = create_channel();
	warm_up(ch, argv[1], argv[2]);
	fds_before = count_open_fds();
	if (fds_before < 0)
		die("/proc/self/fd cannot be read");
	rc_client_setup(ch, &ep, argv[1], argv[2]);
	connect_id(ep.id, &client_conn_param);
	next_event(ch, EVENT_TIMEOUT_MS, XR_RDMA_CM_EVENT_REJECTED, &ev);
	print_event(&ev);
	if (ev.type == XR_RDMA_CM_EVENT_ESTABLISHED) {
		next_event(ch, EVENT_TIMEOUT_MS, XR_RDMA_CM_EVENT_REJECTED, &ev);
		print_event(&ev);
		if (ev.type == XR_RDMA_CM_EVENT_DISCONNECTED) {
			int ret = xr_rdma_disconnect(ep.id);

			if (ret && ret != -EINVAL)
				die("xr_rdma_disconnect after DISCONNECTED: %s", strerror(-ret));
		} else if (ev.type != XR_RDMA_CM_EVENT_REJECTED) {
			die("after ESTABLISHED: %s, expected REJECTED or DISCONNECTED",
			    event_str(ev.type));
		}
	} else if (ev.type != XR_RDMA_CM_EVENT_REJECTED) {
		die("%s, expected REJECTED or ESTABLISHED", event_str(ev.type));
	}
	expect_send_flushed(&ep);
	end_endpoint(&ep);
	fds_after = count_open_fds();
	destroy_channel(ch);
	if (fds_after != fds_before)
		die("%d file descriptors open before, %d after", fds_before, fds_after);
	printf("clean\n");
	await_usr1("to exit");
	return 0;
}

/* ---- a connection that outlives forged messages ------------------------------------------------
 */

static bool recv_done(struct endpoint *ep, struct xr_wc *wc)
{
	int n = xr_poll_cq(ep->recv_cq, 1, wc);

	if (n < 0)
		die("xr_poll_cq: %s", strerror(-n));
	if (n && (wc->wr_id != RECV_WR_ID || wc->status != XR_WC_SUCCESS))
		die("receive completed with \"%s\"", xr_wc_status_str(wc->status));
	return n == 1;
}

static int run_hold_server(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *listener = listen_on(ch, XR_RDMA_PS_TCP, argv[1], argv[2]);
	int64_t deadline = tool_now_ms() + HOLD_MAX_MS;
	struct endpoint ep;
	struct cm_event ev;
	unsigned echoed = 0;
	int ret;

	accept_echo_endpoint(ch, listener, &ep);
	for (;;) {
		struct xr_wc wc;

		if (tool_now_ms() > deadline)
			die("the connection was still up after %d ms", HOLD_MAX_MS);
		if (recv_done(&ep, &wc)) {
			post_send(&ep, ep.recv_mr, ep.recv_buf, wc.byte_len, NULL);
			wait_completion(ep.send_cq, SEND_WR_ID, XR_WC_SEND, "echo send");
			post_recv(&ep, ep.recv_buf, ECHO_BUF_SIZE);
			echoed++;
			continue;
		}
		if (!poll_event(ch, 10, XR_RDMA_CM_EVENT_DISCONNECTED, &ev))
			continue;
		if (ev.type != XR_RDMA_CM_EVENT_DISCONNECTED || ev.id != ep.id)
			die("unexpected %s (status %d)", event_str(ev.type), ev.status);
		break;
	}
	ret = xr_rdma_disconnect(ep.id);
	if (ret && ret != -EINVAL)
		die("xr_rdma_disconnect after DISCONNECTED: %s", strerror(-ret));
	end_endpoint(&ep);
	destroy_id(listener);
	destroy_channel(ch);
	printf("echoed %u\nserver done\n", echoed);
	return 0;
}

static void echo_once(struct endpoint *ep, uint32_t size, uint32_t seed, int n)
{
	struct xr_wc wc;

	fill_pattern(ep->send_buf, seed, 0, size);
	post_recv(ep, ep->recv_buf, size);
	post_send(ep, ep->send_mr, ep->send_buf, size, NULL);
	wait_completion(ep->send_cq, SEND_WR_ID, XR_WC_SEND, "send");
	wc = wait_completion(ep->recv_cq, RECV_WR_ID, XR_WC_RECV, "echo receive");
	check_echo(ep, &wc, size);
	printf("echo ok %d\n", n);
}

static int run_hold_client(char **argv)
{
	uint32_t size = (uint32_t)parse_number(argv[3], 1, ECHO_BUF_SIZE, "SIZE");
	struct xr_rdma_event_channel *ch;
	struct endpoint ep = {0};
	struct cm_event ev;

	block_usr1();
	ch = create_channel();
	rc_client_setup(ch, &ep, argv[1], argv[2]);
	ep.send_buf = alloc_registered(&ep, size, &ep.send_mr);
	ep.recv_buf = alloc_registered(&ep, size, &ep.recv_mr);
	connect_id(ep.id, &client_conn_param);
	expect_event(ch, XR_RDMA_CM_EVENT_ESTABLISHED, ep.id, &ev);
	echo_once(&ep, size, (uint32_t)getpid(), 1);
	printf("holding\n");
	await_usr1("to go on");
	/* Whatever came meanwhile: no event may be waiting. */
	if (poll_event(ch, 0, XR_RDMA_CM_EVENT_DISCONNECTED, &ev))
		die("%s (status %d) while holding", event_str(ev.type), ev.status);
	echo_once(&ep, size, (uint32_t)getpid() ^ 0x5a5a5a5au, 2);
	disconnect_and_wait(ch, ep.id);
	end_endpoint(&ep);
	destroy_channel(ch);
	printf("client done\n");
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: " PROG " backlog-server ADDR PORT BACKLOG\n"
			"       " PROG " flood DST PORT COUNT\n"
			"       " PROG " die-server ADDR PORT request|accept\n"
			"       " PROG " orphan-client DST PORT\n"
			"       " PROG " hold-server ADDR PORT\n"
			"       " PROG " hold-client DST PORT SIZE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct cm_mode modes[] = {
	    {"backlog-server", 3, 3, run_backlog_server},
	    {"flood", 3, 3, run_flood},
	    {"die-server", 3, 3, run_die_server},
	    {"orphan-client", 2, 2, run_orphan_client},
	    {"hold-server", 2, 2, run_hold_server},
	    {"hold-client", 3, 3, run_hold_client},
	};

	return run_mode(argc, argv, modes, sizeof(modes) / sizeof(modes[0]), usage);
}
