/* SPDX-License-Identifier: MIT */
/*
 * middlebox: an L2 bridge between two interfaces that impairs RoCEv2 frames,
 * for end-to-end reliability tests (this kernel has no netem).
 *
 *   middlebox IF_A IF_B [OPTIONS]
 *
 * Every frame received on one interface is sent out of the other through
 * AF_PACKET. Only UDP/4791 frames are impaired, with a seeded generator per
 * direction; ARP, TCP and everything else pass untouched, so a test's
 * out-of-band setup is reliable. Impairment options apply to both directions,
 * or to one with the prefix a2b- (received on IF_A, sent on IF_B) or b2a-:
 *
 *   --loss PCT           drop
 *   --burst N            a loss drops N consecutive RoCE frames of the direction
 *                        (default 1); losses start at PCT / N per frame, so that
 *                        PCT of the frames are still lost in the long run
 *   --dup PCT            send twice
 *   --reorder PCT        hold the frame back until --reorder-gap N (default 3)
 *                        later frames of its direction have gone, or 2 ms (a
 *                        frame both duplicated and held goes out once)
 *   --delay-us US        delay every RoCE frame by US microseconds (FIFO)
 *   --rate-mbps R        a bottleneck: RoCE frames depart one after another, each
 *                        taking its length (Ethernet header on) times 8 / R
 *                        microseconds, and wait for it in a FIFO; --delay-us then
 *                        counts from the departure (default 0: no bottleneck; else
 *                        at least 0.001)
 *   --queue-frames N     the bottleneck holds N frames waiting to depart (default
 *                        1000, at most 4096); one arriving to a full queue is dropped
 *   --ce-threshold N     a frame sent ECT(0) or ECT(1) that arrives at the bottleneck
 *                        when N or more frames wait to depart leaves marked CE (the
 *                        ICRC does not cover the ECN bits); 0, the default, marks
 *                        nothing
 * (--queue-frames and --ce-threshold do nothing without --rate-mbps.)
 *   --corrupt PCT        flip one random bit after the UDP header (the ICRC fails)
 *   --drop-atomic-ack N  drop the Nth atomic ACK (1-based; repeatable)
 *   --drop-write N       drop the Nth RC RDMA WRITE request frame (opcodes 0x06-0x0b,
 *                        or xroce's self-placing 0xe6-0xeb; counted from 1 as they
 *                        arrive, retransmissions included; repeatable): loses one
 *                        chosen packet of one WRITE
 *   --late-write N       pass the Nth RC RDMA WRITE request frame (counted as for
 *                        --drop-write; repeatable) and send a copy of it again
 *                        --late-write-us US (default 300000) later: a duplicate that
 *                        arrives long after the original
 *   --late-write-us US   see --late-write
 *   --drop-read-response N  drop the Nth RC READ response frame (opcodes 0x0d-0x10,
 *                        counted as for --drop-write; repeatable)
 *   --drop-copies-us US  for US microseconds after a --drop-write or
 *                        --drop-read-response frame, also drop the frames of its kind
 *                        that carry its QP and PSN again (a tail-loss probe, a
 *                        retransmission, a replayed response): for tests that must
 *                        act before any copy of the lost packet can arrive
 *   --drop-ack N         drop the Nth plain ACK (opcode 0x11 with an ACK syndrome, not
 *                        a NAK or an RNR NAK; or xroce's SACK, 0xc2, which stands for
 *                        one; counted as for --drop-write; repeatable)
 * (--drop-write, --late-write, --drop-read-response and --drop-ack pick frames
 * by their number alone, for tests whose traffic is known frame by frame.)
 *
 *   --seed N             generator seed (default 1)
 *   --max-seconds S      exit after S seconds (default 300)
 *   --no-xdp-pass        do not attach the XDP pass program (see below)
 *   --verbose            print a line for every RoCE frame impaired
 *
 * It observes what the endpoints send before impairing it and counts, per
 * direction and per destination QP: requests (RC and UC), retransmitted
 * requests (PSN not beyond the highest seen), sends of the first request
 * PSN, ACKs, NAKs, RNR NAKs, atomic ACKs, CNPs. On SIGTERM or SIGINT (or at
 * --max-seconds) it prints the counters, one "KEY VALUE" list per line, and
 * exits 0:
 *
 *   dir a2b frames N roce N dropped N ...
 *   qp b2a 0x000012 requests N retransmits N first_psn_sends N acks N ...
 *
 * The dir lines end with what the picks counted and did: writes,
 * writes_dropped, writes_late, read_responses, read_responses_dropped,
 * plain_acks, plain_acks_dropped, copies_dropped (--drop-copies-us), and
 * requests_dropped: the request frames
 * dropped by --loss, a pick or a full queue, the losses retransmissions are to repair;
 * then sacks and self_placing: the frames of xroce's selective repeat
 * (docs/selective-repeat.md) the sender sent, SACKs and self-placing WRITEs.
 * Last come the bottleneck's: queue_dropped, the frames a full queue
 * dropped (in dropped too); ce_marked, the frames it marked CE; ect, the
 * RoCE frames sent with an ECN field other than Not-ECT (CE included);
 * cnps, the CNPs (opcode 0x81) sent; queue_max, the most frames that ever
 * waited to depart at once.
 *
 * xroce's XDP program on an endpoint answers some frames with XDP_TX; a veth
 * only delivers those when its peer (our interface) has NAPI enabled, which an
 * XDP program does: a two-instruction XDP_PASS program is attached to both
 * interfaces for the run (loaded as taking multi-buffer frames, so jumbo MTUs
 * work). Turn off GRO on them, or TCP segments arrive merged and are too big
 * to send again.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define PROG "middlebox"
#define ROCE_PORT 4791

#define FRAME_MAX 9216
#define RX_BATCH 64
#define SOCKET_BUFFER (8 << 20)
#define DELAY_SLOTS 4096
#define HOLD_SLOTS 64
#define HOLD_MAX_NS 2000000ll
#define MAX_QPS 1024
#define MAX_ATOMIC_ACK_DROPS 16
#define MAX_PICKS 16
#define LATE_WRITE_US_DEFAULT 300000
#define QUEUE_FRAMES_DEFAULT 1000
/* Departures microseconds apart need wakeups about that precise, not the default 50 us. */
#define TIMER_SLACK_NS 1000ul

#define BTH_SIZE 12
#define OP_WRITE_FIRST 0x06
#define OP_WRITE_ONLY_IMM 0x0b
#define OP_READ_RESPONSE_FIRST 0x0d
#define OP_READ_RESPONSE_ONLY 0x10
#define OP_ACK 0x11
#define OP_SACK 0xc2
#define OP_SR_FIRST 0xe0
#define OP_ATOMIC_ACK 0x12
#define OP_CNP 0x81
#define AETH_TYPE_MASK 0xe0
#define AETH_RNR_NAK 0x20
#define AETH_NAK 0x60
#define ECN_NOT_ECT 0
#define ECN_CE 3

enum dir { A2B, B2A, NDIRS };

static const char *const dir_names[NDIRS] = {"a2b", "b2a"};

struct impairment {
	double loss, dup, reorder, corrupt; /* probabilities, 0..1 */
	unsigned int burst;		    /* frames one loss drops */
	unsigned int reorder_gap;
	unsigned int delay_us;
	double rate_mbps;	   /* the bottleneck's rate, 0 for none */
	unsigned int queue_frames; /* frames waiting to depart it, at most */
	unsigned int ce_threshold; /* frames waiting from which on arrivals get CE */
	unsigned int n_ack_drops;
	uint64_t ack_drops[MAX_ATOMIC_ACK_DROPS];
	/* Which WRITE request frames to drop, or to send again late_write_us later. */
	unsigned int n_write_drops, n_late_writes;
	uint64_t write_drops[MAX_PICKS], late_writes[MAX_PICKS];
	unsigned int late_write_us;
	unsigned int drop_copies_us;
	/* Which READ response frames and which plain ACKs to drop. */
	unsigned int n_read_response_drops, n_plain_ack_drops;
	uint64_t read_response_drops[MAX_PICKS], plain_ack_drops[MAX_PICKS];
};

struct dir_counters {
	uint64_t frames, roce, dropped, duplicated, reordered, delayed, corrupted;
	uint64_t atomic_acks_dropped, send_errors, oversize;
	uint64_t requests, retransmits, acks, naks, rnr_naks, atomic_acks;
	uint64_t writes, writes_dropped, writes_late, copies_dropped;
	uint64_t read_responses, read_responses_dropped, plain_acks, plain_acks_dropped;
	uint64_t requests_dropped;    /* request frames (RC, UC) dropped, for whatever reason */
	uint64_t sacks, self_placing; /* xroce's selective repeat: 0xc2, 0xe6-0xeb */
	uint64_t queue_dropped, ce_marked, ect, cnps, queue_max;
};

/* What one direction carried to one destination QP, as the sender sent it. */
struct qp_counters {
	uint32_t qpn;
	bool seen_request;
	uint32_t max_psn, first_psn;
	uint64_t requests, retransmits, first_psn_sends;
	uint64_t acks, naks, rnr_naks, atomic_acks, cnps;
};

struct frame {
	uint16_t len;
	uint8_t data[FRAME_MAX];
};

struct delayed {
	int64_t departure_ns, release_ns;
	struct frame f;
};

struct held {
	bool used;
	unsigned int frames_left;
	int64_t deadline_ns;
	struct frame f;
};

struct direction {
	struct impairment imp;
	struct dir_counters c;
	struct qp_counters qps[MAX_QPS];
	unsigned int n_qps;
	uint64_t rng;
	unsigned int burst_left; /* frames the loss under way still drops */
	int out_fd;
	/*
	 * FIFO: departures in order plus a fixed delay keep release times in
	 * order. Its last `waiting` frames have not departed (as of the last
	 * look; see queued()).
	 */
	struct delayed *delay_q;
	unsigned int delay_head, delay_count, waiting;
	int64_t last_departure_ns;
	struct held *held;
	/* --drop-copies-us: opcode, QP and PSN of the last frame a pick dropped; until when. */
	uint8_t dropped_opcode;
	uint32_t dropped_qpn, dropped_psn;
	int64_t drop_copies_until;
};

static struct direction dirs[NDIRS];
static bool verbose;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static bool chance(struct direction *d, double p)
{
	return p > 0 && (double)(next_random(&d->rng) >> 11) * 0x1.0p-53 < p;
}

/* Offset of the BTH in a RoCEv2 frame (IPv4 or IPv6, UDP port 4791), or 0. */
static size_t roce_offset(const uint8_t *p, size_t len)
{
	uint16_t ethertype;
	size_t l4;

	if (len < ETH_HLEN)
		return 0;
	ethertype = (uint16_t)(p[12] << 8 | p[13]);
	if (ethertype == ETH_P_IP) {
		size_t ihl;

		if (len < ETH_HLEN + 20)
			return 0;
		ihl = (size_t)(p[ETH_HLEN] & 0x0f) * 4;
		/* Fragments (offset or MF set) are not RoCE frames xroce sends. */
		if (p[ETH_HLEN + 9] != IPPROTO_UDP || ihl < 20 || (p[ETH_HLEN + 6] & 0x3f) ||
		    p[ETH_HLEN + 7])
			return 0;
		l4 = ETH_HLEN + ihl;
	} else if (ethertype == ETH_P_IPV6) {
		if (len < ETH_HLEN + 40 || p[ETH_HLEN + 6] != IPPROTO_UDP)
			return 0;
		l4 = ETH_HLEN + 40;
	} else {
		return 0;
	}
	if (len < l4 + 8 + BTH_SIZE || (p[l4 + 2] << 8 | p[l4 + 3]) != ROCE_PORT)
		return 0;
	return l4 + 8;
}

/* For a frame roce_offset() accepted: IPv4, or else IPv6. */
static bool is_ipv4(const uint8_t *p)
{
	return (p[12] << 8 | p[13]) == ETH_P_IP;
}

/* The IP ECN field: the low bits of the TOS byte, or of the traffic class. */
static unsigned int ecn_of(const uint8_t *p)
{
	const uint8_t *ip = p + ETH_HLEN;

	return is_ipv4(p) ? ip[1] & 3 : (ip[1] >> 4) & 3;
}

static void set_ce(uint8_t *p)
{
	uint8_t *ip = p + ETH_HLEN;
	size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
	uint32_t sum = 0;

	if (!is_ipv4(p)) {
		ip[1] |= ECN_CE << 4;
		return;
	}
	ip[1] |= ECN_CE;
	ip[10] = ip[11] = 0;
	for (size_t i = 0; i + 1 < ihl; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	/* At most 30 words: two folds leave no carry. */
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

/*
 * RC requests, xroce's masked atomics (0xc0, 0xc1) and self-placing WRITEs
 * (0xe6-0xeb), and UC's SENDs and WRITEs (0x20-0x2b). xroce's SACK (0xc2)
 * is a response.
 */
static bool is_request(uint8_t opcode)
{
	return opcode <= 0x0c || opcode == 0x13 || opcode == 0x14 || opcode == 0x16 ||
	       opcode == 0x17 || (opcode >= 0x20 && opcode <= 0x2b) || opcode == 0xc0 ||
	       opcode == 0xc1 || opcode >= 0xe0;
}

static uint32_t bth_qpn(const uint8_t *bth)
{
	return (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]);
}

static uint32_t bth_psn(const uint8_t *bth)
{
	return (uint32_t)(bth[9] << 16 | bth[10] << 8 | bth[11]);
}

static struct qp_counters *qp_of(struct direction *d, uint32_t qpn)
{
	for (unsigned int i = 0; i < d->n_qps; i++)
		if (d->qps[i].qpn == qpn)
			return &d->qps[i];
	if (d->n_qps == MAX_QPS)
		return NULL;
	d->qps[d->n_qps] = (struct qp_counters){.qpn = qpn};
	return &d->qps[d->n_qps++];
}

/* Counts what the sender sent: a request whose PSN is not new is a retransmission. */
static void observe(struct direction *d, const uint8_t *bth, size_t bth_len)
{
	uint8_t opcode = bth[0];
	uint32_t qpn = bth_qpn(bth), psn = bth_psn(bth);
	struct qp_counters *q = qp_of(d, qpn);
	struct qp_counters spare;

	if (!q)
		q = &spare;
	d->c.sacks += opcode == OP_SACK;
	d->c.self_placing += opcode >= OP_SR_FIRST;
	if (opcode == OP_CNP) {
		d->c.cnps++;
		q->cnps++;
		return;
	}
	if (is_request(opcode)) {
		d->c.requests++;
		q->requests++;
		if (!q->seen_request) {
			q->seen_request = true;
			q->first_psn = psn;
			q->max_psn = psn;
		} else if ((int32_t)((psn - q->max_psn) << 8) <= 0) {
			d->c.retransmits++;
			q->retransmits++;
		} else {
			q->max_psn = psn;
		}
		if (psn == q->first_psn)
			q->first_psn_sends++;
		return;
	}
	if (opcode == OP_ATOMIC_ACK) {
		d->c.atomic_acks++;
		q->atomic_acks++;
	}
	if (opcode != OP_ACK || bth_len < BTH_SIZE + 4)
		return;
	switch (bth[BTH_SIZE] & AETH_TYPE_MASK) {
	case AETH_RNR_NAK:
		d->c.rnr_naks++;
		q->rnr_naks++;
		break;
	case AETH_NAK:
		d->c.naks++;
		q->naks++;
		break;
	default:
		d->c.acks++;
		q->acks++;
	}
}

static void log_action(const struct direction *d, const char *action, const uint8_t *bth)
{
	if (!verbose)
		return;
	printf("%s %s opcode 0x%02x qp 0x%06x psn %u\n", dir_names[d - dirs], action, bth[0],
	       (unsigned int)(bth[5] << 16 | bth[6] << 8 | bth[7]),
	       (unsigned int)(bth[9] << 16 | bth[10] << 8 | bth[11]));
}

static void transmit(struct direction *d, const struct frame *f)
{
	if (send(d->out_fd, f->data, f->len, 0) < 0)
		d->c.send_errors++;
}

/*
 * The frames waiting to depart the bottleneck at now. Those that departed
 * since the last look leave the count only here: nothing else needs it.
 */
static unsigned int queued(struct direction *d, int64_t now)
{
	while (d->waiting) {
		unsigned int i = (d->delay_head + d->delay_count - d->waiting) % DELAY_SLOTS;

		if (d->delay_q[i].departure_ns > now)
			break;
		d->waiting--;
	}
	return d->waiting;
}

/* Whether the bottleneck, with n frames waiting, has room for f: else a tail drop. */
static bool admit(struct direction *d, const struct frame *f, unsigned int n)
{
	size_t bth;

	if (n < d->imp.queue_frames)
		return true;
	bth = roce_offset(f->data, f->len);
	d->c.dropped++;
	d->c.queue_dropped++;
	if (is_request(f->data[bth]))
		d->c.requests_dropped++;
	log_action(d, "queue-drop", f->data + bth);
	return false;
}

static void mark_ce(struct direction *d, struct frame *f)
{
	unsigned int ecn = ecn_of(f->data);

	/* A Not-ECT sender cannot take the mark, and a CE frame has it already. */
	if (ecn == ECN_NOT_ECT || ecn == ECN_CE)
		return;
	set_ce(f->data);
	d->c.ce_marked++;
	log_action(d, "ce-mark", f->data + roce_offset(f->data, f->len));
}

/* After any hold: the bottleneck and a fixed delay, or straight out. */
static void output(struct direction *d, const struct frame *f, int64_t now)
{
	struct delayed *slot;
	int64_t departure = now;
	unsigned int n = 0;

	if (!d->imp.delay_us && !d->imp.rate_mbps) {
		transmit(d, f);
		return;
	}
	if (d->imp.rate_mbps) {
		n = queued(d, now);
		if (!admit(d, f, n))
			return;
	}
	if (d->delay_count == DELAY_SLOTS) {
		/*
		 * Never reached at test rates (frames in their delay fill it
		 * too, beyond --queue-frames); a full FIFO behaves as loss.
		 */
		d->c.dropped++;
		return;
	}
	slot = &d->delay_q[(d->delay_head + d->delay_count++) % DELAY_SLOTS];
	slot->f.len = f->len;
	memcpy(slot->f.data, f->data, f->len);
	if (d->imp.rate_mbps) {
		/* len * 8 bits at R bits per microsecond, in ns */
		departure = now > d->last_departure_ns ? now : d->last_departure_ns;
		departure += (int64_t)(f->len * 8000.0 / d->imp.rate_mbps + 0.5);
		d->last_departure_ns = departure;
		if (++d->waiting > d->c.queue_max)
			d->c.queue_max = d->waiting;
		/* The copy is marked: a duplicate's other copy met its own queue. */
		if (d->imp.ce_threshold && n >= d->imp.ce_threshold)
			mark_ce(d, &slot->f);
	}
	slot->departure_ns = departure;
	slot->release_ns = departure + (int64_t)d->imp.delay_us * 1000;
	if (d->imp.delay_us)
		d->c.delayed++;
}

/* Holds a copy of f until frames_left more frames went out or the deadline passed. */
static bool hold_until(struct direction *d, const struct frame *f, unsigned int frames_left,
		       int64_t deadline_ns)
{
	for (int i = 0; i < HOLD_SLOTS; i++) {
		struct held *h = &d->held[i];

		if (h->used)
			continue;
		h->used = true;
		h->frames_left = frames_left;
		h->deadline_ns = deadline_ns;
		h->f.len = f->len;
		memcpy(h->f.data, f->data, f->len);
		return true;
	}
	return false;
}

static bool hold(struct direction *d, const struct frame *f, int64_t now)
{
	return hold_until(d, f, d->imp.reorder_gap, now + HOLD_MAX_NS);
}

/* One frame of the direction went out: held frames move one step closer. */
static void count_down_held(struct direction *d, int64_t now)
{
	for (int i = 0; i < HOLD_SLOTS; i++) {
		struct held *h = &d->held[i];

		if (h->used && --h->frames_left == 0) {
			h->used = false;
			output(d, &h->f, now);
		}
	}
}

static void release_due(struct direction *d, int64_t now)
{
	for (int i = 0; i < HOLD_SLOTS; i++) {
		struct held *h = &d->held[i];

		if (h->used && h->deadline_ns <= now) {
			h->used = false;
			output(d, &h->f, now);
		}
	}
	/* What is released has departed: it must not stay counted as waiting. */
	queued(d, now);
	while (d->delay_count && d->delay_q[d->delay_head].release_ns <= now) {
		transmit(d, &d->delay_q[d->delay_head].f);
		d->delay_head = (d->delay_head + 1) % DELAY_SLOTS;
		d->delay_count--;
	}
}

static int64_t next_deadline(const struct direction *d, int64_t until)
{
	for (int i = 0; i < HOLD_SLOTS; i++)
		if (d->held[i].used && d->held[i].deadline_ns < until)
			until = d->held[i].deadline_ns;
	if (d->delay_count && d->delay_q[d->delay_head].release_ns < until)
		until = d->delay_q[d->delay_head].release_ns;
	return until;
}

static bool drop_this_atomic_ack(struct direction *d)
{
	for (unsigned int i = 0; i < d->imp.n_ack_drops; i++)
		if (d->imp.ack_drops[i] == d->c.atomic_acks)
			return true;
	return false;
}

/* An RC WRITE request, in the standard form or xroce's self-placing one (0xe6-0xeb). */
static bool is_rc_write(uint8_t opcode)
{
	uint8_t rc = opcode >= 0xe0 ? opcode & 0x1f : opcode;

	return rc >= OP_WRITE_FIRST && rc <= OP_WRITE_ONLY_IMM;
}

static bool picked(const uint64_t *list, unsigned int n, uint64_t value)
{
	for (unsigned int i = 0; i < n; i++)
		if (list[i] == value)
			return true;
	return false;
}

/*
 * The --drop-write and --late-write picks: true when f, the WRITE request
 * frame counted now, is dropped. A late copy is held (as a reordered frame
 * is, but only its deadline releases it) and the frame itself goes on.
 */
/* A pick dropped the frame of bth: --drop-copies-us drops its copies from now on. */
static void remember_dropped(struct direction *d, const uint8_t *bth, int64_t now)
{
	d->dropped_opcode = bth[0];
	d->dropped_qpn = bth_qpn(bth);
	d->dropped_psn = bth_psn(bth);
	d->drop_copies_until = now + (int64_t)d->imp.drop_copies_us * 1000;
}

/* Whether the frame of bth is a copy of the one dropped last, within --drop-copies-us. */
static bool drop_copy(struct direction *d, const uint8_t *bth, int64_t now)
{
	if (now >= d->drop_copies_until || bth[0] != d->dropped_opcode ||
	    bth_qpn(bth) != d->dropped_qpn || bth_psn(bth) != d->dropped_psn)
		return false;
	d->c.copies_dropped++;
	log_action(d, "drop-copy", bth);
	return true;
}

static bool pick_write(struct direction *d, const struct frame *f, size_t bth, int64_t now)
{
	d->c.writes++;
	if (picked(d->imp.write_drops, d->imp.n_write_drops, d->c.writes)) {
		d->c.writes_dropped++;
		d->c.requests_dropped++;
		remember_dropped(d, f->data + bth, now);
		log_action(d, "drop-write", f->data + bth);
		return true;
	}
	if (drop_copy(d, f->data + bth, now)) {
		d->c.requests_dropped++;
		return true;
	}
	if (picked(d->imp.late_writes, d->imp.n_late_writes, d->c.writes) &&
	    hold_until(d, f, UINT32_MAX, now + (int64_t)d->imp.late_write_us * 1000)) {
		d->c.writes_late++;
		log_action(d, "late-write", f->data + bth);
	}
	return false;
}

/* The --drop-read-response and --drop-ack picks: true when f is dropped. */
static bool pick_response(struct direction *d, const struct frame *f, size_t bth, int64_t now)
{
	uint8_t opcode = f->data[bth];

	if (opcode >= OP_READ_RESPONSE_FIRST && opcode <= OP_READ_RESPONSE_ONLY) {
		d->c.read_responses++;
		if (!picked(d->imp.read_response_drops, d->imp.n_read_response_drops,
			    d->c.read_responses))
			return drop_copy(d, f->data + bth, now);
		d->c.read_responses_dropped++;
		remember_dropped(d, f->data + bth, now);
		log_action(d, "drop-read-response", f->data + bth);
		return true;
	}
	if ((opcode != OP_ACK && opcode != OP_SACK) || f->len - bth < BTH_SIZE + 4 ||
	    (f->data[bth + BTH_SIZE] & AETH_TYPE_MASK))
		return false;
	d->c.plain_acks++;
	if (!picked(d->imp.plain_ack_drops, d->imp.n_plain_ack_drops, d->c.plain_acks))
		return false;
	d->c.plain_acks_dropped++;
	log_action(d, "drop-ack", f->data + bth);
	return true;
}

/* Whether --loss drops this frame: alone, or as part of a --burst under way. */
static bool random_loss(struct direction *d)
{
	unsigned int burst = d->imp.burst ? d->imp.burst : 1;

	if (d->burst_left) {
		d->burst_left--;
		return true;
	}
	if (!chance(d, d->imp.loss / burst))
		return false;
	d->burst_left = burst - 1;
	return true;
}

static void process(struct direction *d, struct frame *f, int64_t now)
{
	size_t bth = roce_offset(f->data, f->len);
	int copies = 1;

	d->c.frames++;
	if (!bth) {
		transmit(d, f);
		return;
	}
	d->c.roce++;
	observe(d, f->data + bth, f->len - bth);
	d->c.ect += ecn_of(f->data) != ECN_NOT_ECT;
	if (f->data[bth] == OP_ATOMIC_ACK && drop_this_atomic_ack(d)) {
		d->c.atomic_acks_dropped++;
		log_action(d, "drop-atomic-ack", f->data + bth);
		return;
	}
	if (is_rc_write(f->data[bth]) && pick_write(d, f, bth, now))
		return;
	if (pick_response(d, f, bth, now))
		return;
	if (random_loss(d)) {
		d->c.dropped++;
		if (is_request(f->data[bth]))
			d->c.requests_dropped++;
		log_action(d, "drop", f->data + bth);
		return;
	}
	if (chance(d, d->imp.corrupt)) {
		uint64_t bit = next_random(&d->rng) % ((f->len - bth) * 8);

		f->data[bth + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		d->c.corrupted++;
		log_action(d, "corrupt", f->data + bth);
	}
	if (chance(d, d->imp.dup)) {
		copies = 2;
		d->c.duplicated++;
		log_action(d, "duplicate", f->data + bth);
	}
	if (chance(d, d->imp.reorder) && hold(d, f, now)) {
		d->c.reordered++;
		log_action(d, "hold", f->data + bth);
		return;
	}
	for (int i = 0; i < copies; i++) {
		output(d, f, now);
		count_down_held(d, now);
	}
}

static int open_packet_socket(const char *ifname, int *ifindex)
{
	struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	int one = 1, size = SOCKET_BUFFER;
	int fd;

	*ifindex = (int)if_nametoindex(ifname);
	if (!*ifindex) {
		fprintf(stderr, PROG ": no interface %s\n", ifname);
		return -1;
	}
	addr.sll_ifindex = *ifindex;
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		fprintf(stderr, PROG ": AF_PACKET socket: %s\n", strerror(errno));
		return -1;
	}
	/* Our own transmissions on this interface must not come back as input. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		fprintf(stderr, PROG ": binding to %s: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	return fd;
}

static int attach_xdp_pass(int ifindex, const char *ifname)
{
	static const struct bpf_insn pass[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	static int prog_fd = -1;
	int ret;

	if (prog_fd < 0) {
		/* Frags: veth refuses a program without them once the peer's MTU is jumbo. */
		LIBBPF_OPTS(bpf_prog_load_opts, opts, .prog_flags = BPF_F_XDP_HAS_FRAGS);

		prog_fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "mb_pass", "GPL", pass, 2, &opts);
		if (prog_fd < 0) {
			fprintf(stderr, PROG ": loading the XDP pass program: %s\n",
				strerror(-prog_fd));
			return -1;
		}
	}
	ret = bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE, NULL);
	if (ret) {
		fprintf(stderr, PROG ": attaching XDP to %s: %s\n", ifname, strerror(-ret));
		return -1;
	}
	return 0;
}

static void print_counters(int fds[NDIRS], double elapsed, uint64_t seed)
{
	printf(PROG ": seed %" PRIu64 ", ran %.3f s\n", seed, elapsed);
	for (int i = 0; i < NDIRS; i++) {
		const struct dir_counters *c = &dirs[i].c;
		struct tpacket_stats st = {0};
		socklen_t len = sizeof(st);

		/* Frames the kernel dropped before we read them: losses nobody asked for. */
		getsockopt(fds[i], SOL_PACKET, PACKET_STATISTICS, &st, &len);
		printf("dir %s frames %" PRIu64 " roce %" PRIu64 " dropped %" PRIu64
		       " duplicated %" PRIu64 " reordered %" PRIu64 " delayed %" PRIu64
		       " corrupted %" PRIu64 " atomic_acks_dropped %" PRIu64 " requests %" PRIu64
		       " retransmits %" PRIu64 " acks %" PRIu64 " naks %" PRIu64
		       " rnr_naks %" PRIu64 " atomic_acks %" PRIu64 " send_errors %" PRIu64
		       " oversize %" PRIu64 " socket_drops %u writes %" PRIu64
		       " writes_dropped %" PRIu64 " writes_late %" PRIu64 " read_responses %" PRIu64
		       " read_responses_dropped %" PRIu64 " plain_acks %" PRIu64
		       " plain_acks_dropped %" PRIu64 " copies_dropped %" PRIu64
		       " requests_dropped %" PRIu64 " sacks %" PRIu64 " self_placing %" PRIu64
		       " queue_dropped %" PRIu64 " ce_marked %" PRIu64 " ect %" PRIu64
		       " cnps %" PRIu64 " queue_max %" PRIu64 "\n",
		       dir_names[i], c->frames, c->roce, c->dropped, c->duplicated, c->reordered,
		       c->delayed, c->corrupted, c->atomic_acks_dropped, c->requests,
		       c->retransmits, c->acks, c->naks, c->rnr_naks, c->atomic_acks,
		       c->send_errors, c->oversize, st.tp_drops, c->writes, c->writes_dropped,
		       c->writes_late, c->read_responses, c->read_responses_dropped, c->plain_acks,
		       c->plain_acks_dropped, c->copies_dropped, c->requests_dropped, c->sacks,
		       c->self_placing, c->queue_dropped, c->ce_marked, c->ect, c->cnps,
		       c->queue_max);
	}
	for (int i = 0; i < NDIRS; i++)
		for (unsigned int k = 0; k < dirs[i].n_qps; k++) {
			const struct qp_counters *q = &dirs[i].qps[k];

			printf("qp %s 0x%06x requests %" PRIu64 " retransmits %" PRIu64
			       " first_psn_sends %" PRIu64 " acks %" PRIu64 " naks %" PRIu64
			       " rnr_naks %" PRIu64 " atomic_acks %" PRIu64 " cnps %" PRIu64 "\n",
			       dir_names[i], q->qpn, q->requests, q->retransmits,
			       q->first_psn_sends, q->acks, q->naks, q->rnr_naks, q->atomic_acks,
			       q->cnps);
		}
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: " PROG
			" IF_A IF_B [--seed N] [--max-seconds S] [--no-xdp-pass] [--verbose]\n"
			"       [[a2b-|b2a-]--loss PCT] [--burst N] [--dup PCT] [--reorder PCT] "
			"[--reorder-gap N]\n"
			"       [--delay-us US] [--corrupt PCT] [--drop-atomic-ack N]...\n"
			"       [--drop-write N]... [--late-write N]... [--late-write-us US]\n"
			"       [--drop-read-response N]... [--drop-copies-us US]\n"
			"       [--drop-ack N]...\n"
			"       [--rate-mbps R] [--queue-frames N] [--ce-threshold N]\n"
			"       (a2b-/b2a- after the dashes, e.g. --b2a-loss 5, limits to one "
			"direction)\n");
}

static bool parse_number(const char *s, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end && *out >= 0 && *out <= max;
}

/* Applies "--[a2b-|b2a-]NAME VALUE" to the selected directions; false when invalid. */
static bool parse_impairment(const char *opt, const char *value)
{
	int first = A2B, last = B2A;
	double v;

	if (!strncmp(opt, "a2b-", 4) || !strncmp(opt, "b2a-", 4)) {
		first = last = opt[0] == 'a' ? A2B : B2A;
		opt += 4;
	}
	for (int i = first; i <= last; i++) {
		struct impairment *imp = &dirs[i].imp;

		if (!strcmp(opt, "loss") && parse_number(value, 100, &v))
			imp->loss = v / 100;
		else if (!strcmp(opt, "burst") && parse_number(value, 1000, &v) && v >= 1)
			imp->burst = (unsigned int)v;
		else if (!strcmp(opt, "dup") && parse_number(value, 100, &v))
			imp->dup = v / 100;
		else if (!strcmp(opt, "reorder") && parse_number(value, 100, &v))
			imp->reorder = v / 100;
		else if (!strcmp(opt, "corrupt") && parse_number(value, 100, &v))
			imp->corrupt = v / 100;
		else if (!strcmp(opt, "reorder-gap") && parse_number(value, 1000, &v) && v >= 1)
			imp->reorder_gap = (unsigned int)v;
		else if (!strcmp(opt, "delay-us") && parse_number(value, 1e6, &v))
			imp->delay_us = (unsigned int)v;
		/* At 1 kbit/s a jumbo frame takes 74 s; far slower would overflow the ns math. */
		else if (!strcmp(opt, "rate-mbps") && parse_number(value, 1e6, &v) &&
			 (!v || v >= 0.001))
			imp->rate_mbps = v;
		else if (!strcmp(opt, "queue-frames") && parse_number(value, 1e9, &v) && v >= 1)
			imp->queue_frames = (unsigned int)v;
		else if (!strcmp(opt, "ce-threshold") && parse_number(value, 1e9, &v))
			imp->ce_threshold = (unsigned int)v;
		else if (!strcmp(opt, "drop-atomic-ack") && parse_number(value, 1e12, &v) &&
			 v >= 1 && imp->n_ack_drops < MAX_ATOMIC_ACK_DROPS)
			imp->ack_drops[imp->n_ack_drops++] = (uint64_t)v;
		else if (!strcmp(opt, "drop-write") && parse_number(value, 1e12, &v) && v >= 1 &&
			 imp->n_write_drops < MAX_PICKS)
			imp->write_drops[imp->n_write_drops++] = (uint64_t)v;
		else if (!strcmp(opt, "late-write") && parse_number(value, 1e12, &v) && v >= 1 &&
			 imp->n_late_writes < MAX_PICKS)
			imp->late_writes[imp->n_late_writes++] = (uint64_t)v;
		else if (!strcmp(opt, "drop-copies-us") && parse_number(value, 1e7, &v))
			imp->drop_copies_us = (unsigned int)v;
		else if (!strcmp(opt, "late-write-us") && parse_number(value, 1e7, &v))
			imp->late_write_us = (unsigned int)v;
		else if (!strcmp(opt, "drop-read-response") && parse_number(value, 1e12, &v) &&
			 v >= 1 && imp->n_read_response_drops < MAX_PICKS)
			imp->read_response_drops[imp->n_read_response_drops++] = (uint64_t)v;
		else if (!strcmp(opt, "drop-ack") && parse_number(value, 1e12, &v) && v >= 1 &&
			 imp->n_plain_ack_drops < MAX_PICKS)
			imp->plain_ack_drops[imp->n_plain_ack_drops++] = (uint64_t)v;
		else
			return false;
	}
	return true;
}

/* Receives what is waiting on fd (a bounded batch) and passes it on. */
static void drain(int fd, struct direction *d, struct frame *f)
{
	for (int i = 0; i < RX_BATCH; i++) {
		struct sockaddr_ll from;
		socklen_t from_len = sizeof(from);
		ssize_t n = recvfrom(fd, f->data, sizeof(f->data), MSG_TRUNC,
				     (struct sockaddr *)&from, &from_len);

		if (n < 0)
			return;
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if ((size_t)n > sizeof(f->data)) {
			d->c.oversize++;
			continue;
		}
		f->len = (uint16_t)n;
		process(d, f, now_ns());
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t blocked, during_poll;
	int ifindex[NDIRS], fds[NDIRS];
	bool xdp_pass = true;
	uint64_t seed = 1;
	double max_seconds = 300, v;
	int64_t start, end;
	static struct frame rx;

	if (argc < 3) {
		usage();
		return 2;
	}
	for (int i = 0; i < NDIRS; i++) {
		dirs[i].imp.reorder_gap = 3;
		dirs[i].imp.late_write_us = LATE_WRITE_US_DEFAULT;
	}
	for (int i = 3; i < argc; i++) {
		const char *opt = argv[i];

		if (!strcmp(opt, "--no-xdp-pass")) {
			xdp_pass = false;
			continue;
		}
		if (!strcmp(opt, "--verbose")) {
			verbose = true;
			continue;
		}
		if (strncmp(opt, "--", 2) || i + 1 == argc) {
			usage();
			return 2;
		}
		opt += 2;
		if (!strcmp(opt, "seed") && parse_number(argv[i + 1], 1e18, &v))
			seed = (uint64_t)v;
		else if (!strcmp(opt, "max-seconds") && parse_number(argv[i + 1], 86400, &v) &&
			 v > 0)
			max_seconds = v;
		else if (!parse_impairment(opt, argv[i + 1])) {
			fprintf(stderr, PROG ": bad option or value: %s %s\n", argv[i],
				argv[i + 1]);
			return 2;
		}
		i++;
	}
	for (int i = 0; i < NDIRS; i++) {
		struct impairment *imp = &dirs[i].imp;

		/* The waiting frames are slots of the FIFO, which has no more. */
		if (imp->queue_frames > DELAY_SLOTS) {
			fprintf(stderr,
				PROG ": --queue-frames %u (%s): too many, the queue has %d slots\n",
				imp->queue_frames, dir_names[i], DELAY_SLOTS);
			return 2;
		}
		if (!imp->queue_frames)
			imp->queue_frames = QUEUE_FRAMES_DEFAULT;
		if (imp->rate_mbps)
			prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0ul, 0ul, 0ul);
	}
	for (int i = 0; i < NDIRS; i++) {
		dirs[i].rng = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) << 56;
		dirs[i].delay_q = calloc(DELAY_SLOTS, sizeof(*dirs[i].delay_q));
		dirs[i].held = calloc(HOLD_SLOTS, sizeof(*dirs[i].held));
		if (!dirs[i].delay_q || !dirs[i].held) {
			fprintf(stderr, PROG ": out of memory\n");
			return 1;
		}
		fds[i] = open_packet_socket(argv[1 + i], &ifindex[i]);
		if (fds[i] < 0)
			return 1;
	}
	dirs[A2B].out_fd = fds[B2A];
	dirs[B2A].out_fd = fds[A2B];
	/* The signals are only let in while waiting, so none is missed between check and wait. */
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	sigprocmask(SIG_BLOCK, &blocked, &during_poll);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (xdp_pass &&
	    (attach_xdp_pass(ifindex[A2B], argv[1]) || attach_xdp_pass(ifindex[B2A], argv[2])))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf(PROG ": forwarding %s <-> %s\n", argv[1], argv[2]);

	start = now_ns();
	end = start + (int64_t)(max_seconds * 1e9);
	while (!stop) {
		struct pollfd pfds[NDIRS] = {{.fd = fds[A2B], .events = POLLIN},
					     {.fd = fds[B2A], .events = POLLIN}};
		int64_t now = now_ns(), wake = end;
		struct timespec timeout;

		if (now >= end)
			break;
		for (int i = 0; i < NDIRS; i++)
			wake = next_deadline(&dirs[i], wake);
		wake = wake > now ? wake - now : 0;
		timeout =
		    (struct timespec){.tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000};
		if (ppoll(pfds, NDIRS, &timeout, &during_poll) < 0 && errno != EINTR) {
			fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
			break;
		}
		for (int i = 0; i < NDIRS; i++)
			if (pfds[i].revents & POLLIN)
				drain(fds[i], &dirs[i], &rx);
		now = now_ns();
		for (int i = 0; i < NDIRS; i++)
			release_due(&dirs[i], now);
	}
	if (xdp_pass) {
		bpf_xdp_detach(ifindex[A2B], XDP_FLAGS_DRV_MODE, NULL);
		bpf_xdp_detach(ifindex[B2A], XDP_FLAGS_DRV_MODE, NULL);
	}
	print_counters(fds, (double)(now_ns() - start) / 1e9, seed);
	return 0;
}
