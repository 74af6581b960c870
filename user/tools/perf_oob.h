/* SPDX-License-Identifier: MIT */
/*
 * xroce-perf's out-of-band TCP channel, byte-compatible with perftest 4.5
 * (rdma-core's ib_*_bw / ib_*_lat) run with -F and without -R.
 *
 * Every step is an exchange of two equal-sized messages, the client writing
 * first and the server answering. perftest reads each message with a single
 * read() of exactly its size, so each message goes out in a single write().
 * The sequence (checked against the rxe captures in shared/vectors/rxe):
 *   version (16 bytes, NUL-padded ASCII), cycle buffer and cache line size
 *   (4-byte big-endian each), MTU (the ibv_mtu enum as "%d" in 2 bytes),
 *   the 108-byte keys message (also repeated as a barrier), the bandwidth
 *   report (5 big-endian 8-byte values) and "done" (5 bytes, each side
 *   writes its own and then reads the peer's).
 */
#ifndef XROCE_PERF_OOB_H
#define XROCE_PERF_OOB_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
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

/* The version perftest 4.5-0.17 announces; peers pick message formats by it. */
#define PERF_VERSION "6.06"
#define PERF_VERSION_SIZE 16
/* Older peers use 4-byte iteration counts and other formats we do not speak. */
#define PERF_MIN_PEER_VERSION 5.33
#define PERF_KEYS_SIZE 108
#define PERF_DONE_MSG "done"

struct perf_dest {
	unsigned int lid;
	unsigned int out_reads;
	unsigned int qpn;
	unsigned int psn;
	uint32_t rkey;
	uint64_t vaddr;
	union xr_gid gid;
	unsigned int srqn;
};

/* Bandwidth report of one run, as perftest's xchg_bw_reports sends it. */
struct perf_bw_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};

struct perf_oob {
	int fd;
	bool is_client;
};

static volatile sig_atomic_t perf_stop_signal;

static int64_t perf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready; -ETIMEDOUT at deadline, -EINTR on a stop signal. */
static int perf_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = events};
		int64_t left = deadline - perf_now_ms();
		int n;

		if (perf_stop_signal)
			return -EINTR;
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Reads exactly len bytes; -EPIPE if the peer closes first. */
static int perf_read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n;
		int ret = perf_wait_fd(fd, POLLIN, deadline);

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
		got += n;
	}
	return 0;
}

static int perf_write_msg(int fd, const void *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int ret = perf_wait_fd(fd, POLLOUT, deadline);

	if (ret)
		return ret;
	n = write(fd, buf, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* One exchange: the client writes first, the server reads first. */
static int perf_xchg(const struct perf_oob *oob, const void *mine, void *theirs, size_t len,
		     int64_t deadline)
{
	int ret;

	if (oob->is_client) {
		ret = perf_write_msg(oob->fd, mine, len, deadline);
		return ret ? ret : perf_read_full(oob->fd, theirs, len, deadline);
	}
	ret = perf_read_full(oob->fd, theirs, len, deadline);
	return ret ? ret : perf_write_msg(oob->fd, mine, len, deadline);
}

static void perf_format_keys(const struct perf_dest *d, char msg[PERF_KEYS_SIZE])
{
	int n = snprintf(msg, PERF_KEYS_SIZE, "%04x:%04x:%06x:%06x:%08x:%016llx:", d->lid,
			 d->out_reads, d->qpn, d->psn, d->rkey, (unsigned long long)d->vaddr);

	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, PERF_KEYS_SIZE - n, "%02x:", d->gid.raw[i]);
	snprintf(msg + n, PERF_KEYS_SIZE - n, "%08x:", d->srqn);
}

static int perf_parse_keys(const char msg[PERF_KEYS_SIZE], struct perf_dest *d)
{
	char text[PERF_KEYS_SIZE];
	unsigned long long vaddr;
	unsigned int gid[16];
	int consumed = 0;

	memcpy(text, msg, PERF_KEYS_SIZE);
	text[PERF_KEYS_SIZE - 1] = '\0';
	if (sscanf(text,
		   "%x:%x:%x:%x:%x:%llx:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%n",
		   &d->lid, &d->out_reads, &d->qpn, &d->psn, &d->rkey, &vaddr, &gid[0], &gid[1],
		   &gid[2], &gid[3], &gid[4], &gid[5], &gid[6], &gid[7], &gid[8], &gid[9], &gid[10],
		   &gid[11], &gid[12], &gid[13], &gid[14], &gid[15], &d->srqn, &consumed) != 23 ||
	    text[consumed] != '\0')
		return -EINVAL;
	d->vaddr = vaddr;
	for (int i = 0; i < 16; i++) {
		if (gid[i] > 0xff)
			return -EINVAL;
		d->gid.raw[i] = gid[i];
	}
	return 0;
}

/* The keys exchange, also used as a barrier: both sides reach the same point. */
static int perf_xchg_keys(const struct perf_oob *oob, const struct perf_dest *mine,
			  struct perf_dest *theirs, int64_t deadline)
{
	char out[PERF_KEYS_SIZE], in[PERF_KEYS_SIZE];
	int ret;

	perf_format_keys(mine, out);
	ret = perf_xchg(oob, out, in, sizeof(in), deadline);
	if (ret)
		return ret;
	return perf_parse_keys(in, theirs) ? -EPROTO : 0;
}

static uint64_t perf_double_bits(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

static double perf_bits_double(uint64_t bits)
{
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/* Five exchanges of 8 big-endian bytes: size, iterations, peak, average, message rate. */
static int perf_xchg_bw_report(const struct perf_oob *oob, const struct perf_bw_report *mine,
			       struct perf_bw_report *theirs, int64_t deadline)
{
	uint64_t out[5] = {
	    htobe64(mine->size), htobe64(mine->iters), htobe64(perf_double_bits(mine->bw_peak)),
	    htobe64(perf_double_bits(mine->bw_avg)), htobe64(perf_double_bits(mine->msg_rate))};
	uint64_t in[5];

	for (int i = 0; i < 5; i++) {
		int ret = perf_xchg(oob, &out[i], &in[i], sizeof(in[i]), deadline);

		if (ret)
			return ret;
	}
	theirs->size = be64toh(in[0]);
	theirs->iters = be64toh(in[1]);
	theirs->bw_peak = perf_bits_double(be64toh(in[2]));
	theirs->bw_avg = perf_bits_double(be64toh(in[3]));
	theirs->msg_rate = perf_bits_double(be64toh(in[4]));
	return 0;
}

/* Each side writes its "done" and then reads the peer's, whichever comes first. */
static int perf_xchg_done(const struct perf_oob *oob, int64_t deadline)
{
	char in[sizeof(PERF_DONE_MSG)];
	int ret = perf_write_msg(oob->fd, PERF_DONE_MSG, sizeof(PERF_DONE_MSG), deadline);

	if (ret)
		return ret;
	ret = perf_read_full(oob->fd, in, sizeof(in), deadline);
	if (ret)
		return ret;
	return memcmp(in, PERF_DONE_MSG, sizeof(in)) ? -EPROTO : 0;
}

/* Non-blocking connect bounded by deadline. */
static int perf_connect_once(const struct addrinfo *ai, int *fdp, int64_t deadline)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int err = 0, ret;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		*fdp = fd;
		return 0;
	}
	ret = errno == EINPROGRESS ? perf_wait_fd(fd, POLLOUT, deadline) : -errno;
	if (!ret && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		ret = -errno;
	if (!ret && err)
		ret = -err;
	if (ret) {
		close(fd);
		return ret;
	}
	*fdp = fd;
	return 0;
}

/*
 * Connects to the server, retrying a refused connection for retry_ms (a
 * server still starting up), so scripts need not guess how long to wait.
 */
static int perf_client_connect(const char *server, unsigned int port, int64_t retry_ms,
			       int64_t timeout_ms, const char **why)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char service[8];
	int64_t retry_until = perf_now_ms() + retry_ms;
	int ret, fd = -1;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(server, service, &hints, &res);
	if (ret) {
		*why = gai_strerror(ret);
		return -1;
	}
	for (;;) {
		for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			ret = perf_connect_once(ai, &fd, perf_now_ms() + timeout_ms);
			if (!ret)
				break;
		}
		if (fd >= 0 || ret != -ECONNREFUSED || perf_now_ms() >= retry_until ||
		    perf_stop_signal)
			break;
		usleep(200000);
	}
	freeaddrinfo(res);
	if (fd < 0) {
		*why = strerror(-ret);
		return -1;
	}
	/* Blocking again: every wait goes through perf_wait_fd anyway. */
	fcntl(fd, F_SETFL, 0);
	return fd;
}

static int perf_server_accept(unsigned int port, int64_t timeout_ms, const char **why)
{
	struct addrinfo hints = {
	    .ai_flags = AI_PASSIVE, .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char service[8];
	int one = 1, listen_fd = -1, fd, ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(NULL, service, &hints, &res);
	if (ret) {
		*why = gai_strerror(ret);
		return -1;
	}
	for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		listen_fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (listen_fd < 0)
			continue;
		setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(listen_fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(listen_fd, 1) == 0)
			break;
		close(listen_fd);
		listen_fd = -1;
	}
	freeaddrinfo(res);
	if (listen_fd < 0) {
		*why = "couldn't listen";
		return -1;
	}
	ret = perf_wait_fd(listen_fd, POLLIN, perf_now_ms() + timeout_ms);
	if (ret) {
		close(listen_fd);
		*why = ret == -ETIMEDOUT ? "no client connected in time" : strerror(-ret);
		return -1;
	}
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	*why = fd < 0 ? strerror(errno) : NULL;
	close(listen_fd);
	return fd;
}

#endif /* XROCE_PERF_OOB_H */
