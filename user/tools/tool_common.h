/* SPDX-License-Identifier: MIT */
/*
 * What xroce's tools, benchmarks and end-to-end tests share: an out-of-band
 * TCP channel with a deadline on every wait, and bringing an RC queue pair
 * up to RTS. Each program keeps its own message formats; only the plumbing
 * lives here. Header-only: every program is one .c file.
 *
 * Deadlines are absolute CLOCK_MONOTONIC milliseconds (tool_now_ms() + a
 * timeout). Functions return 0 or a negative errno unless said otherwise.
 */
#ifndef XROCE_TOOL_COMMON_H
#define XROCE_TOOL_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xroce/xroce.h"

/*
 * Two processes and two engine threads share two cores: after a short spin
 * an empty poll sleeps briefly so that the engine threads get to run.
 */
#define TOOL_SPIN_POLLS_BEFORE_SLEEP 256
#define TOOL_IDLE_SLEEP_NS 20000
/* Pause between connection attempts while the server is not listening yet. */
#define TOOL_CONNECT_RETRY_PAUSE_US 100000

/* Set by SIGINT, SIGTERM or SIGHUP once tool_catch_stop_signals() ran; waits below then end. */
static volatile sig_atomic_t tool_stop_signal;

static inline void tool_on_stop_signal(int sig)
{
	tool_stop_signal = sig;
}

/* No SA_RESTART: a stop signal must interrupt poll(), so that the program can clean up. */
static inline void tool_catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = tool_on_stop_signal};

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static inline int64_t tool_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- command lines ------------------------------------------------------- */

/* The path MTU enum for a size in bytes; 0 for a size that is not one. */
static inline enum xr_mtu mtu_from_bytes(unsigned long mtu)
{
	switch (mtu) {
	case 256:
		return XR_MTU_256;
	case 512:
		return XR_MTU_512;
	case 1024:
		return XR_MTU_1024;
	case 2048:
		return XR_MTU_2048;
	case 4096:
		return XR_MTU_4096;
	default:
		return 0;
	}
}

/* A whole number up to max, in decimal, hex (0x) or octal (0); no sign, nothing after it. */
static inline bool parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return false;
	*out = v;
	return true;
}

/* ---- out-of-band TCP channel --------------------------------------------- */

/* Waits until fd is ready for events; -ETIMEDOUT at the deadline. */
static inline int oob_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = events};
		int64_t left = deadline - tool_now_ms();
		int n;

		if (tool_stop_signal)
			return -EINTR;
		if (left <= 0)
			return -ETIMEDOUT;
		/* Wake up every second to notice a stop signal that poll() did not see. */
		n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Reads exactly len bytes; -EPIPE if the peer closes first. */
static inline int oob_read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;
		int ret = oob_wait_fd(fd, POLLIN, deadline);

		if (ret)
			return ret;
		n = read(fd, (char *)buf + got, len - got);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}

static inline int oob_write_full(int fd, const void *buf, size_t len, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;
		int ret = oob_wait_fd(fd, POLLOUT, deadline);

		if (ret)
			return ret;
		n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * The whole message in one send(), or -EIO: rdma-core's examples and perftest
 * read each message with a single read() of exactly its size.
 */
static inline int oob_write_msg(int fd, const void *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int ret = oob_wait_fd(fd, POLLOUT, deadline);

	if (ret)
		return ret;
	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static inline int oob_write_line(int fd, const char *line, int64_t deadline)
{
	return oob_write_full(fd, line, strlen(line), deadline);
}

/* Reads one '\n'-terminated line into line, without the newline. */
static inline int oob_read_line(int fd, char *line, size_t size, int64_t deadline)
{
	/* Byte by byte: what follows the line belongs to the next reader. */
	for (size_t used = 0; used + 1 < size; used++) {
		int ret = oob_read_full(fd, &line[used], 1, deadline);

		if (ret)
			return ret;
		if (line[used] == '\n') {
			line[used] = '\0';
			return 0;
		}
	}
	return -EMSGSIZE;
}

static inline const char *oob_error(int err)
{
	switch (err) {
	case -EPIPE:
		return "peer closed the connection";
	case -EPROTO:
		return "malformed message from the peer";
	default:
		return strerror(-err);
	}
}

/* Non-blocking connect to one address, bounded by deadline; the socket is blocking again after. */
static inline int oob_connect_once(const struct addrinfo *ai, int64_t deadline)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int err = 0, ret = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
		ret = errno == EINPROGRESS ? oob_wait_fd(fd, POLLOUT, deadline) : -errno;
	if (!ret && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		ret = -errno;
	if (!ret && err)
		ret = -err;
	if (!ret && fcntl(fd, F_SETFL, 0) < 0)
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Connects to host:port and returns the socket, retrying for retry_ms while
 * the server is not there yet (still starting up), so that scripts starting
 * both sides need not guess how long to wait; each attempt is bounded by
 * attempt_ms. Returns -1 with *why set on failure.
 */
static inline int oob_connect(const char *host, unsigned int port, int64_t retry_ms,
			      int64_t attempt_ms, const char **why)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char service[8];
	int64_t retry_until = tool_now_ms() + retry_ms;
	int ret, fd = -1;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret) {
		*why = gai_strerror(ret);
		return -1;
	}
	for (;;) {
		for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			ret = oob_connect_once(ai, tool_now_ms() + attempt_ms);
			if (ret >= 0)
				fd = ret;
		}
		if (fd >= 0 ||
		    (ret != -ECONNREFUSED && ret != -ENETUNREACH && ret != -EHOSTUNREACH) ||
		    tool_now_ms() >= retry_until || tool_stop_signal)
			break;
		usleep(TOOL_CONNECT_RETRY_PAUSE_US);
	}
	freeaddrinfo(res);
	if (fd < 0)
		*why = strerror(-ret);
	return fd;
}

/*
 * A listening socket on port of family (AF_INET, or AF_UNSPEC for whichever
 * the system offers first). Returns -1 with *why set on failure.
 */
static inline int oob_listen(int family, unsigned int port, int backlog, const char **why)
{
	struct addrinfo hints = {
	    .ai_flags = AI_PASSIVE, .ai_family = family, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char service[8];
	int one = 1, fd = -1, ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(NULL, service, &hints, &res);
	if (ret) {
		*why = gai_strerror(ret);
		return -1;
	}
	*why = "no address to listen on";
	for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
			break;
		*why = strerror(errno);
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Accepts one connection on listen_fd before deadline. Returns -1 with *why set on failure. */
static inline int oob_accept_on(int listen_fd, int64_t deadline, const char **why)
{
	int ret = oob_wait_fd(listen_fd, POLLIN, deadline);
	int fd;

	if (ret) {
		*why = ret == -ETIMEDOUT ? "no client connected in time" : strerror(-ret);
		return -1;
	}
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		*why = strerror(errno);
	return fd;
}

/* Listens on port and accepts one client within timeout_ms. */
static inline int oob_accept(int family, unsigned int port, int64_t timeout_ms, const char **why)
{
	int listen_fd = oob_listen(family, port, 1, why);
	int fd;

	if (listen_fd < 0)
		return -1;
	fd = oob_accept_on(listen_fd, tool_now_ms() + timeout_ms, why);
	close(listen_fd);
	return fd;
}

/* ---- the device ----------------------------------------------------------- */

/*
 * Opens ifname's device. On failure says why on stderr, as "PROG: couldn't
 * open the xroce device of IFNAME: ...", naming the process that owns the
 * device if one does, and returns NULL with errno set.
 */
static inline struct xr_device *tool_open_device(const char *prog, const char *ifname)
{
	struct xr_device *dev = xr_open_device(ifname, NULL);
	int err = errno, holder;

	if (dev)
		return dev;
	holder = err == EBUSY ? xr_device_holder(ifname) : 0;
	if (holder > 0)
		fprintf(stderr,
			"%s: couldn't open the xroce device of %s: process %d owns it and takes "
			"no more processes (15 share it already, or it runs as another user)\n",
			prog, ifname, holder);
	else if (err == EBUSY)
		fprintf(stderr,
			"%s: couldn't open the xroce device of %s: a queue of %s is still bound to "
			"another AF_XDP socket after %d s (stop the program that uses it, or use "
			"another interface)\n",
			prog, ifname, ifname, XR_OPEN_WAIT_MS / 1000);
	else
		fprintf(stderr, "%s: couldn't open the xroce device of %s: %s\n", prog, ifname,
			xr_strerror(err));
	errno = err;
	return NULL;
}

/* ---- queue pairs ----------------------------------------------------------- */

static inline bool gid_is_ipv4_mapped(const union xr_gid *gid)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/*
 * Queries dev into *attr and returns the index of its first IPv4-mapped GID
 * (RoCEv2 over IPv4), with the GID in *gid; -EADDRNOTAVAIL when the
 * interface has no IPv4 address.
 */
static inline int find_ipv4_gid(struct xr_device *dev, struct xr_device_attr *attr,
				union xr_gid *gid)
{
	int ret = xr_query_device(dev, attr);

	if (ret)
		return ret;
	for (int i = 0; i < attr->num_gids; i++)
		if (!xr_query_gid(dev, i, gid) && gid_is_ipv4_mapped(gid))
			return i;
	return -EADDRNOTAVAIL;
}

static inline int qp_to_init(struct xr_qp *qp, uint8_t port_num, unsigned int access)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_INIT, .port_num = port_num, .qp_access_flags = access};

	return xr_modify_qp(qp, &attr,
			    XR_QP_STATE | XR_QP_PKEY_INDEX | XR_QP_PORT | XR_QP_ACCESS_FLAGS);
}

/* What RTR needs to know about the path and the peer. */
struct qp_rtr_attr {
	enum xr_mtu path_mtu;
	uint32_t dest_qpn;
	uint32_t rq_psn; /* the peer's first PSN */
	union xr_gid dgid;
	uint8_t sgid_index;
	uint8_t port_num;
	uint8_t hop_limit;
	uint8_t sl;
	uint16_t dlid;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
};

static inline int qp_to_rtr(struct xr_qp *qp, const struct qp_rtr_attr *a)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTR,
	    .path_mtu = a->path_mtu,
	    .dest_qp_num = a->dest_qpn,
	    .rq_psn = a->rq_psn,
	    .max_dest_rd_atomic = a->max_dest_rd_atomic,
	    .min_rnr_timer = a->min_rnr_timer,
	    .ah_attr = {.is_global = 1,
			.dlid = a->dlid,
			.sl = a->sl,
			.port_num = a->port_num,
			.grh = {.dgid = a->dgid,
				.sgid_index = a->sgid_index,
				.hop_limit = a->hop_limit}},
	};

	return xr_modify_qp(qp, &attr,
			    XR_QP_STATE | XR_QP_AV | XR_QP_PATH_MTU | XR_QP_DEST_QPN |
				XR_QP_RQ_PSN | XR_QP_MAX_DEST_RD_ATOMIC | XR_QP_MIN_RNR_TIMER);
}

/* RTS with the usual timers: 14 (67 ms) local ACK timeout, 7 retries, 7 RNR retries. */
static inline int qp_to_rts(struct xr_qp *qp, uint32_t sq_psn, uint8_t max_rd_atomic)
{
	struct xr_qp_attr attr = {
	    .qp_state = XR_QPS_RTS,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .sq_psn = sq_psn,
	    .max_rd_atomic = max_rd_atomic,
	};

	return xr_modify_qp(qp, &attr,
			    XR_QP_STATE | XR_QP_TIMEOUT | XR_QP_RETRY_CNT | XR_QP_RNR_RETRY |
				XR_QP_SQ_PSN | XR_QP_MAX_QP_RD_ATOMIC);
}

/* INIT -> RTR -> RTS; on failure *failed names the state the QP did not reach. */
static inline int qp_connect(struct xr_qp *qp, const struct qp_rtr_attr *rtr, uint32_t sq_psn,
			     uint8_t max_rd_atomic, const char **failed)
{
	int ret = qp_to_rtr(qp, rtr);

	*failed = "RTR";
	if (!ret) {
		*failed = "RTS";
		ret = qp_to_rts(qp, sq_psn, max_rd_atomic);
	}
	return ret;
}

/*
 * Polls cq until at least min completions are in wc (at most max), or the
 * deadline passes; returns how many arrived. A polling error is reported on
 * stderr and ends the wait. Between empty polls: sched_yield() when
 * yield_only (latency measurements: a sleep would dominate a round trip),
 * else a short spin and then brief sleeps.
 */
static inline int poll_cq_loop(struct xr_cq *cq, struct xr_wc *wc, int min, int max,
			       int64_t deadline, bool yield_only)
{
	unsigned int idle_polls = 0;
	int got = 0;

	while (got < min) {
		int ne = xr_poll_cq(cq, max - got, wc + got);

		if (ne < 0) {
			fprintf(stderr, "%s: xr_poll_cq: %s\n", program_invocation_short_name,
				strerror(-ne));
			return got;
		}
		got += ne;
		if (ne > 0) {
			idle_polls = 0;
			continue;
		}
		if (tool_now_ms() >= deadline || tool_stop_signal)
			break;
		if (yield_only)
			sched_yield();
		else if (++idle_polls > TOOL_SPIN_POLLS_BEFORE_SLEEP)
			nanosleep(&(struct timespec){.tv_nsec = TOOL_IDLE_SLEEP_NS}, NULL);
	}
	return got;
}

/* Two processes and their engine threads share the cores: sleeps when idle for long. */
static inline int poll_cq_until(struct xr_cq *cq, struct xr_wc *wc, int min, int max,
				int64_t deadline)
{
	return poll_cq_loop(cq, wc, min, max, deadline, false);
}

/* For measuring latency: never sleeps. */
static inline int poll_cq_yielding(struct xr_cq *cq, struct xr_wc *wc, int min, int max,
				   int64_t deadline)
{
	return poll_cq_loop(cq, wc, min, max, deadline, true);
}

#endif /* XROCE_TOOL_COMMON_H */
