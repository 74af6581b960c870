/* SPDX-License-Identifier: MIT */
/*
 * What the two-sided programs of tests/ibverbs (a server and a client, one
 * per namespace) share: a TCP side channel to swap QP numbers and keys and
 * to step in turn, a monotonic clock for bounded waits, opening the device
 * by name and modifying a QP. Include after check.h: every failure is a
 * CHECK.
 */
#ifndef XROCE_TESTS_IBVERBS_TWO_SIDED_H
#define XROCE_TESTS_IBVERBS_TWO_SIDED_H

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Beyond the peer's bounded waits between two syncs, so a silent peer is a FAIL, not a hang. */
#define SIDE_CHANNEL_TIMEOUT_S 60

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* All n bytes to (out) or from the peer; what names them in a failure. */
static inline void side_xfer(int sock, void *p, size_t n, bool out, const char *what)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? write(sock, (char *)p + done, n - done)
				: read(sock, (char *)p + done, n - done);

		CHECK(r > 0, "side channel %s (%s): %s", out ? "write" : "read", what,
		      r ? strerror(errno) : "closed");
		done += (size_t)r;
	}
}

static inline void side_say(int sock, char c)
{
	side_xfer(sock, &c, 1, true, "a sync");
}

static inline void side_hear(int sock, char want)
{
	char what[] = "awaiting '?'";
	char c;

	what[10] = want;
	side_xfer(sock, &c, 1, false, what);
	CHECK(c == want, "side channel: '%c', want '%c'", c, want);
}

static inline int side_tcp_connect(bool server, const char *addr, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), conn, one = 1;

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	if (!server) {
		int ret = -1;

		CHECK(inet_pton(AF_INET, addr, &sa.sin_addr) == 1, "bad address %s", addr);
		/* The server may not listen yet: 10 s of tries, each on a new socket. */
		for (int i = 0; i < 100 && ret; i++) {
			if (i) {
				close(fd);
				usleep(100 * 1000);
				fd = socket(AF_INET, SOCK_STREAM, 0);
				CHECK(fd >= 0, "socket: %s", strerror(errno));
			}
			ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		}
		CHECK(ret == 0, "connect %s:%d: %s", addr, port, strerror(errno));
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0,
	      "listen on %d: %s", port, strerror(errno));
	conn = accept(fd, NULL, NULL);
	CHECK(conn >= 0, "accept: %s", strerror(errno));
	close(fd);
	return conn;
}

/* The server listens on port, the client connects to addr:port. */
static inline int side_channel(bool server, const char *addr, int port)
{
	struct timeval tv = {.tv_sec = SIDE_CHANNEL_TIMEOUT_S};
	int fd = side_tcp_connect(server, addr, port);

	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0, "SO_RCVTIMEO: %s",
	      strerror(errno));
	return fd;
}

static inline struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	CHECK(list != NULL, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(ctx != NULL, "no device %s", name);
	return ctx;
}

static inline void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	CHECK(ret == 0, "ibv_modify_qp to %s: %s", what, strerror(ret));
}

#endif /* XROCE_TESTS_IBVERBS_TWO_SIDED_H */
