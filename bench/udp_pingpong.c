/* SPDX-License-Identifier: MIT */
/*
 * udp_pingpong: the kernel-socket baseline for xroce's message latency.
 * The client sends datagrams of SIZE bytes (default 8) that start with a
 * sequence number, the server echoes them, the client times each round trip.
 *
 *   udp_pingpong server PORT
 *   udp_pingpong client SERVER_IP PORT ITERATIONS [SIZE]
 *
 * The client ends with one line of half round trips (as perftest's latency
 * figures, so that they compare with xroce-perf's *_lat):
 *   udp_pingpong size=N iterations=N half_rtt avg_us=X p50_us=X p99_us=X p999_us=X max_us=X
 * and then sends an 8-byte all-ones datagram, which makes the server exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "samples.h"

#define MIN_SIZE 8     /* the sequence number */
#define MAX_SIZE 65507 /* a UDP datagram over IPv4 */
#define WARMUP_ITERATIONS 1000
#define MAX_ITERATIONS 10000000L
#define STOP_MESSAGE UINT64_MAX
#define SERVER_IDLE_TIMEOUT_S 30
/* Covers the server starting up after the client: lost warm-up messages are resent. */
#define WARMUP_DEADLINE_NS (10LL * 1000 * 1000 * 1000)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int set_receive_timeout(int fd, int seconds, int microseconds)
{
	struct timeval tv = {.tv_sec = seconds, .tv_usec = microseconds};

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* A round trip of ns nanoseconds as half of it, in microseconds. */
static double half_us(double ns)
{
	return ns / 2 / 1e3;
}

static int run_server(uint16_t port)
{
	struct sockaddr_in addr = {
	    .sin_family = AF_INET,
	    .sin_port = htons(port),
	    .sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    set_receive_timeout(fd, SERVER_IDLE_TIMEOUT_S, 0) < 0) {
		fprintf(stderr, "udp_pingpong: cannot listen on UDP port %u: %s\n", port,
			strerror(errno));
		return 1;
	}
	for (long served = 0; served < MAX_ITERATIONS + WARMUP_ITERATIONS; served++) {
		struct sockaddr_in peer;
		socklen_t peer_len = sizeof(peer);
		static uint8_t buf[MAX_SIZE];
		uint64_t message;
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &peer_len);

		if (n < 0) {
			fprintf(stderr, "udp_pingpong: server idle for %d s: %s\n",
				SERVER_IDLE_TIMEOUT_S, strerror(errno));
			close(fd);
			return 1;
		}
		memcpy(&message, buf, sizeof(message));
		if (n == sizeof(message) && message == STOP_MESSAGE)
			break;
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, peer_len);
	}
	close(fd);
	return 0;
}

/* One round trip; returns its duration in ns, or -1 when the echo did not come back. */
static int64_t round_trip(int fd, uint64_t sequence, uint8_t *buf, size_t size)
{
	int64_t start = now_ns();
	uint64_t echo;

	memcpy(buf, &sequence, sizeof(sequence));
	if (send(fd, buf, size, 0) != (ssize_t)size)
		return -1;
	/* A late echo of an earlier message is skipped, not counted. */
	for (int stale = 0; stale < 16; stale++) {
		ssize_t n = recv(fd, buf, size, 0);

		if (n < 0)
			return -1;
		memcpy(&echo, buf, sizeof(echo));
		if (n == (ssize_t)size && echo == sequence)
			return now_ns() - start;
	}
	return -1;
}

static int run_client(const char *server_ip, uint16_t port, long iterations, size_t size)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	int64_t *samples = calloc((size_t)iterations, sizeof(*samples));
	uint8_t *buf = calloc(1, size);
	int64_t warmup_deadline = now_ns() + WARMUP_DEADLINE_NS, total = 0;
	uint64_t sequence = 0, stop = STOP_MESSAGE;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (!samples || !buf || fd < 0 || inet_pton(AF_INET, server_ip, &addr.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    set_receive_timeout(fd, 0, 200 * 1000) < 0) {
		fprintf(stderr, "udp_pingpong: cannot reach %s:%u\n", server_ip, port);
		return 1;
	}
	for (int done = 0; done < WARMUP_ITERATIONS;) {
		if (round_trip(fd, sequence++, buf, size) >= 0)
			done++;
		else if (now_ns() > warmup_deadline) {
			fprintf(stderr, "udp_pingpong: no echo from %s:%u\n", server_ip, port);
			return 1;
		} else {
			usleep(10 * 1000);
		}
	}
	for (long i = 0; i < iterations; i++) {
		samples[i] = round_trip(fd, sequence++, buf, size);
		if (samples[i] < 0) {
			fprintf(stderr, "udp_pingpong: echo %ld lost\n", i);
			return 1;
		}
		total += samples[i];
	}
	send(fd, &stop, sizeof(stop), 0);
	close(fd);
	qsort(samples, (size_t)iterations, sizeof(*samples), compare_int64);
	printf("udp_pingpong size=%zu iterations=%ld half_rtt avg_us=%.2f p50_us=%.2f p99_us=%.2f "
	       "p999_us=%.2f max_us=%.2f\n",
	       size, iterations, half_us((double)total / (double)iterations),
	       half_us((double)percentile(samples, iterations, 0.5)),
	       half_us((double)percentile(samples, iterations, 0.99)),
	       half_us((double)percentile(samples, iterations, 0.999)),
	       half_us((double)samples[iterations - 1]));
	free(samples);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "server") == 0)
		return run_server((uint16_t)atoi(argv[2]));
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "client") == 0) {
		long iterations = atol(argv[4]);
		long size = argc == 6 ? atol(argv[5]) : MIN_SIZE;

		if (iterations > 0 && iterations <= MAX_ITERATIONS && size >= MIN_SIZE &&
		    size <= MAX_SIZE)
			return run_client(argv[2], (uint16_t)atoi(argv[3]), iterations,
					  (size_t)size);
	}
	fprintf(stderr,
		"usage: udp_pingpong server PORT\n"
		"       udp_pingpong client SERVER_IP PORT ITERATIONS (1..%ld) [SIZE (%d..%d)]\n",
		MAX_ITERATIONS, MIN_SIZE, MAX_SIZE);
	return 2;
}
