/* SPDX-License-Identifier: MIT */
/*
 * What the two-sided programs of tests/ibverbs (a server and a client, one
 * per namespace) share besides qp_setup.h: their arguments, and a TCP side
 * channel to swap QP numbers and keys and to step in turn, and the byte
 * pattern their buffers carry. Include after check.h: every failure is a
 * CHECK.
 */
#ifndef XROCE_TESTS_IBVERBS_TWO_SIDED_H
#define XROCE_TESTS_IBVERBS_TWO_SIDED_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "qp_setup.h"

/* Byte i of a buffer filled for seed: each side and purpose its own seed. */
static inline uint8_t pattern(size_t i, unsigned int seed)
{
	return (uint8_t)(i * seed + 3);
}

/* Beyond the peer's bounded waits between two syncs, so a silent peer is a FAIL, not a hang. */
#define SIDE_CHANNEL_TIMEOUT_S 60

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

/*
 * The side a program's arguments name, when they are "server DEV GID_INDEX
 * PORT" or "client DEV GID_INDEX PORT SERVER_IPV4"; otherwise prints the
 * usage and exits 2.
 */
static inline bool side_is_server(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 6)) {
		fprintf(stderr,
			"usage: %s server DEV GID_INDEX PORT\n"
			"       %s client DEV GID_INDEX PORT SERVER_IPV4\n",
			argv[0], argv[0]);
		exit(2);
	}
	return !strcmp(argv[1], "server");
}

#endif /* XROCE_TESTS_IBVERBS_TWO_SIDED_H */
