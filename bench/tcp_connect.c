/* SPDX-License-Identifier: MIT */
/*
 * tcp_connect: the kernel-socket baseline for the RDMA connection manager's
 * setup and teardown (cmtime). The client opens COUNT TCP connections to the
 * server one after the other, and closes each before opening the next; the
 * server accepts each, waits for the client's FIN and closes its end.
 *
 *   tcp_connect server PORT COUNT
 *   tcp_connect client SERVER_IP PORT COUNT
 *
 * Each connection, as the client times it:
 *   connect: socket() and a blocking connect() until it returns (the SYN,
 *            SYN-ACK round trip; the server's accept() comes later);
 *   close:   shutdown(SHUT_WR), then recv() until the server's FIN (the
 *            server must have accepted, read the client's FIN and closed),
 *            then close();
 *   cycle:   both.
 * Both sides first go through WARMUP_CONNECTIONS untimed connections. The
 * client ends with one line (wrapped here):
 *   tcp_connect connections=N connect_avg_us=X connect_p50_us=X connect_p99_us=X
 *     close_avg_us=X close_p50_us=X close_p99_us=X cycle_avg_us=X cycle_p50_us=X
 *     cycle_p99_us=X setup_per_s=X cycles_per_s=X
 * setup_per_s being N over the sum of the connects, and cycles_per_s N over
 * the wall-clock time of the N timed cycles.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "samples.h"

#define WARMUP_CONNECTIONS 5
#define MAX_CONNECTIONS 100000L
#define BACKLOG 128
/* How long the server waits for the next connection, and either side for a FIN. */
#define SERVER_IDLE_TIMEOUT_S 30
#define IO_TIMEOUT_S 5

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int set_timeout(int fd, int option, int seconds)
{
	struct timeval tv = {.tv_sec = seconds};

	return setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

/* Reads until the peer's FIN: 0 on EOF, -1 on an error, a timeout or unexpected data. */
static int wait_eof(int fd)
{
	char byte;
	ssize_t n = recv(fd, &byte, sizeof(byte), 0);

	if (n > 0)
		errno = EPROTO;
	return n == 0 ? 0 : -1;
}

static int run_server(uint16_t port, long count)
{
	struct sockaddr_in addr = {
	    .sin_family = AF_INET,
	    .sin_port = htons(port),
	    .sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, BACKLOG) < 0) {
		fprintf(stderr, "tcp_connect: cannot listen on TCP port %u: %s\n", port,
			strerror(errno));
		return 1;
	}
	for (long i = 0; i < count + WARMUP_CONNECTIONS; i++) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int conn, ready = poll(&pfd, 1, SERVER_IDLE_TIMEOUT_S * 1000);

		if (ready <= 0) {
			fprintf(stderr, "tcp_connect: no connection %ld within %d s: %s\n", i,
				SERVER_IDLE_TIMEOUT_S, ready == 0 ? "timed out" : strerror(errno));
			close(fd);
			return 1;
		}
		conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0 || set_timeout(conn, SO_RCVTIMEO, IO_TIMEOUT_S) < 0 ||
		    wait_eof(conn) < 0) {
			fprintf(stderr, "tcp_connect: connection %ld: %s\n", i,
				errno == EAGAIN ? "no FIN from the client" : strerror(errno));
			if (conn >= 0)
				close(conn);
			close(fd);
			return 1;
		}
		close(conn);
	}
	close(fd);
	return 0;
}

/* One connection, opened and closed; its connect and close times in ns, or -1. */
static int one_connection(const struct sockaddr_in *addr, int64_t *connect_ns, int64_t *close_ns)
{
	int64_t start = now_ns(), connected;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* SO_SNDTIMEO bounds a blocking connect(). */
	if (fd < 0 || set_timeout(fd, SO_SNDTIMEO, IO_TIMEOUT_S) < 0 ||
	    connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		fprintf(stderr, "tcp_connect: connect: %s\n",
			errno == EINPROGRESS ? "timed out" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	connected = now_ns();
	if (set_timeout(fd, SO_RCVTIMEO, IO_TIMEOUT_S) < 0 || shutdown(fd, SHUT_WR) < 0 ||
	    wait_eof(fd) < 0) {
		fprintf(stderr, "tcp_connect: close: %s\n",
			errno == EAGAIN ? "no FIN from the server" : strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	*connect_ns = connected - start;
	*close_ns = now_ns() - connected;
	return 0;
}

/* Sorts samples; prints NAME_avg_us, NAME_p50_us and NAME_p99_us. */
static void print_stats(const char *name, int64_t *samples, long n)
{
	int64_t total = 0;

	for (long i = 0; i < n; i++)
		total += samples[i];
	qsort(samples, (size_t)n, sizeof(*samples), compare_int64);
	printf(" %s_avg_us=%.2f %s_p50_us=%.2f %s_p99_us=%.2f", name,
	       (double)total / (double)n / 1e3, name, (double)percentile(samples, n, 0.5) / 1e3,
	       name, (double)percentile(samples, n, 0.99) / 1e3);
}

static int run_client(const char *server_ip, uint16_t port, long count)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	int64_t *connects = calloc((size_t)count, sizeof(*connects));
	int64_t *closes = calloc((size_t)count, sizeof(*closes));
	int64_t *cycles = calloc((size_t)count, sizeof(*cycles));
	int64_t start, elapsed, connect_total = 0, dummy_connect, dummy_close;

	if (!connects || !closes || !cycles || inet_pton(AF_INET, server_ip, &addr.sin_addr) != 1) {
		fprintf(stderr, "tcp_connect: bad address %s or out of memory\n", server_ip);
		return 1;
	}
	for (int i = 0; i < WARMUP_CONNECTIONS; i++) {
		if (one_connection(&addr, &dummy_connect, &dummy_close) < 0) {
			fprintf(stderr, "tcp_connect: warm-up connection %d to %s:%u failed\n", i,
				server_ip, port);
			return 1;
		}
	}
	start = now_ns();
	for (long i = 0; i < count; i++) {
		if (one_connection(&addr, &connects[i], &closes[i]) < 0) {
			fprintf(stderr, "tcp_connect: connection %ld to %s:%u failed\n", i,
				server_ip, port);
			return 1;
		}
		cycles[i] = connects[i] + closes[i];
		connect_total += connects[i];
	}
	elapsed = now_ns() - start;
	printf("tcp_connect connections=%ld", count);
	print_stats("connect", connects, count);
	print_stats("close", closes, count);
	print_stats("cycle", cycles, count);
	printf(" setup_per_s=%.0f cycles_per_s=%.0f\n",
	       connect_total > 0 ? (double)count * 1e9 / (double)connect_total : 0.0,
	       elapsed > 0 ? (double)count * 1e9 / (double)elapsed : 0.0);
	free(connects);
	free(closes);
	free(cycles);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "server") == 0) {
		long count = atol(argv[3]);

		if (count > 0 && count <= MAX_CONNECTIONS)
			return run_server((uint16_t)atoi(argv[2]), count);
	}
	if (argc == 5 && strcmp(argv[1], "client") == 0) {
		long count = atol(argv[4]);

		if (count > 0 && count <= MAX_CONNECTIONS)
			return run_client(argv[2], (uint16_t)atoi(argv[3]), count);
	}
	fprintf(stderr,
		"usage: tcp_connect server PORT COUNT\n"
		"       tcp_connect client SERVER_IP PORT COUNT (1..%ld)\n",
		MAX_CONNECTIONS);
	return 2;
}
