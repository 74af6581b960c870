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
 * With several QPs (-q N) the keys go out one message per QP, in QP order,
 * in two rounds (send_bw has a barrier between them); every other barrier
 * carries the first QP's.
 */
#ifndef XROCE_PERF_OOB_H
#define XROCE_PERF_OOB_H

#include <endian.h>
#include <stdlib.h>

#include "tool_common.h"

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

/* One exchange: the client writes first, the server reads first. */
static int perf_xchg(const struct perf_oob *oob, const void *mine, void *theirs, size_t len,
		     int64_t deadline)
{
	int ret;

	if (oob->is_client) {
		ret = oob_write_msg(oob->fd, mine, len, deadline);
		return ret ? ret : oob_read_full(oob->fd, theirs, len, deadline);
	}
	ret = oob_read_full(oob->fd, theirs, len, deadline);
	return ret ? ret : oob_write_msg(oob->fd, mine, len, deadline);
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
	int ret = oob_write_msg(oob->fd, PERF_DONE_MSG, sizeof(PERF_DONE_MSG), deadline);

	if (ret)
		return ret;
	ret = oob_read_full(oob->fd, in, sizeof(in), deadline);
	if (ret)
		return ret;
	return memcmp(in, PERF_DONE_MSG, sizeof(in)) ? -EPROTO : 0;
}

#endif /* XROCE_PERF_OOB_H */
