/* SPDX-License-Identifier: MIT */
/*
 * forge: the hostile third host of test_hostile_e2e.sh. Sends COUNT crafted
 * RoCEv2 (RC, IPv4) frames with whatever addresses, QPN, PSN, P_Key and keys
 * it is told, through an AF_PACKET socket on IFNAME, with a correct ICRC
 * (built by the core's own frame builder): only the receiver's rules about
 * who may send what can refuse them.
 *
 *   forge IFNAME --op OP --smac MAC --dmac MAC --sip IP --dip IP --count N
 *         (--qpn QPN | --qpn-random [--avoid-qpn QPN]...)
 *         [--psn PSN [--psn-step STEP] | --psn-far REF] [--len BYTES]
 *         [--pkey PKEY] [--ip-id ID] [--sport PORT] [--seed SEED] [--qkey QKEY]
 *         [--local-id ID --remote-id ID --tid TID --remote-qpn QPN]
 *
 * OP: ack, nak-seq, nak-inv, nak-access, rnr (RNR NAK, timer 0), atomic-ack,
 * send, write, read, cas, faa, mad-get. mad-get is a UD datagram from QP 1
 * with the GSI Q_Key: a MAD Get of class 0x04 (performance management),
 * attribute 0x0012, transaction ID 0x5a5a0000 plus the frame's number,
 * its data bytes 0..231 (send it to --qpn 1); --qkey replaces its GSI Q_Key.
 * cm-req is a CM REQ from QP 1 to QP 1 as rping's (RC, service ID of RDMA
 * CM TCP port 7174, the --sip and --dip GIDs, local QPN 0x1a), local
 * communication ID 0x10000 plus the frame's number, transaction ID
 * 0x5a5a0000 plus it. cm-rej (reason 28, consumer defined, answering
 * "other"), cm-dreq and cm-rep are CM messages of an existing connection:
 * --local-id and --remote-id are the communication IDs as the sender
 * would name them (its own, then the receiver's), --tid the transaction ID
 * (all frames alike), --remote-qpn the QPN a DREQ names (the receiver's;
 * a REP carries it as its sender's). With all of them right, only the addresses tell
 * such a frame from the peer's.
 * Requests carry guessed (random) R_Keys and
 * virtual addresses; responses a random MSN. --psn-far REF draws each PSN at
 * least 2^21 away from REF on both sides, far outside any window a live QP
 * has; --psn-step adds STEP (may be negative) per frame. --len is the READ
 * length in the RETH (default 64) and the payload of send and write. --ip-id
 * and --sport mark the frames so that a capture can count them.
 * Prints "forge: sent N OP frames" and exits 0, or says why not and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/mad.h"
#include "core/packet.h"
#include "xroce/xdp_shared.h"

#define PROG "forge"
#define MAX_AVOID 16
#define MAX_PAYLOAD 1024
#define FAR_DISTANCE (1u << 21)
#define DEFAULT_LEN 64
#define SEND_RETRIES 1000

enum forged_op {
	OP_ACK,
	OP_NAK_SEQ,
	OP_NAK_INV,
	OP_NAK_ACCESS,
	OP_RNR,
	OP_ATOMIC_ACK,
	OP_SEND,
	OP_WRITE,
	OP_READ,
	OP_CAS,
	OP_FAA,
	OP_MAD_GET,
	OP_CM_REQ,
	OP_CM_REJ,
	OP_CM_DREQ,
	OP_CM_REP,
	OP_COUNT,
};

static const struct {
	const char *name;
	uint8_t opcode;
	uint8_t syndrome; /* AETH of the responses */
} ops[OP_COUNT] = {
    [OP_ACK] = {"ack", XR_OP_RC_ACK, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED},
    [OP_NAK_SEQ] = {"nak-seq", XR_OP_RC_ACK, XR_AETH_NAK | XR_NAK_PSN_SEQ_ERR},
    [OP_NAK_INV] = {"nak-inv", XR_OP_RC_ACK, XR_AETH_NAK | XR_NAK_INVALID_REQUEST},
    [OP_NAK_ACCESS] = {"nak-access", XR_OP_RC_ACK, XR_AETH_NAK | XR_NAK_REMOTE_ACCESS_ERR},
    [OP_RNR] = {"rnr", XR_OP_RC_ACK, XR_AETH_RNR_NAK | 0},
    [OP_ATOMIC_ACK] = {"atomic-ack", XR_OP_RC_ATOMIC_ACK, XR_AETH_ACK | XR_AETH_ACK_UNLIMITED},
    [OP_SEND] = {"send", XR_OP_RC_SEND_ONLY, 0},
    [OP_WRITE] = {"write", XR_OP_RC_WRITE_ONLY, 0},
    [OP_READ] = {"read", XR_OP_RC_READ_REQUEST, 0},
    [OP_CAS] = {"cas", XR_OP_RC_CMP_SWAP, 0},
    [OP_FAA] = {"faa", XR_OP_RC_FETCH_ADD, 0},
    [OP_MAD_GET] = {"mad-get", XR_OP_UD_SEND_ONLY, 0},
    [OP_CM_REQ] = {"cm-req", XR_OP_UD_SEND_ONLY, 0},
    [OP_CM_REJ] = {"cm-rej", XR_OP_UD_SEND_ONLY, 0},
    [OP_CM_DREQ] = {"cm-dreq", XR_OP_UD_SEND_ONLY, 0},
    [OP_CM_REP] = {"cm-rep", XR_OP_UD_SEND_ONLY, 0},
};

#define MAD_GET_CLASS 0x04
#define MAD_GET_ATTR 0x0012
#define MAD_GET_TID_BASE 0x5a5a0000u
#define CM_REQ_COMM_ID_BASE 0x10000u
#define CM_REQ_SERVICE_ID 0x0000000001061c06ull

struct forge_args {
	const char *ifname;
	int op;
	struct xr_path path;
	unsigned long count;
	uint32_t qpn;
	bool qpn_random;
	uint32_t avoid[MAX_AVOID];
	int navoid;
	uint32_t psn;
	long psn_step;
	bool psn_far;
	uint32_t len;
	uint16_t pkey;
	uint16_t ip_id;
	unsigned long seed;
	uint32_t qkey; /* mad-get's DETH */
	/* cm-rej, cm-dreq, cm-rep: the connection they claim to belong to */
	uint32_t local_id, remote_id, remote_qpn;
	uint64_t tid;
	bool tid_set;
};

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint64_t random64(void)
{
	return (uint64_t)mrand48() << 32 ^ (uint32_t)mrand48();
}

static uint32_t pick_qpn(const struct forge_args *a)
{
	if (!a->qpn_random)
		return a->qpn;
	for (;;) {
		uint32_t qpn = (uint32_t)lrand48() & XR_QPN_MASK;
		bool taken = qpn < 2 || qpn == XR_MULTICAST_QPN;

		for (int i = 0; i < a->navoid; i++)
			taken |= qpn == a->avoid[i];
		if (!taken)
			return qpn;
	}
}

static uint32_t pick_psn(const struct forge_args *a, unsigned long i)
{
	if (a->psn_far)
		return (a->psn + FAR_DISTANCE +
			(uint32_t)lrand48() % (XR_PSN_MASK + 1 - 2 * FAR_DISTANCE)) &
		       XR_PSN_MASK;
	return (uint32_t)(a->psn + (unsigned long)a->psn_step * i) & XR_PSN_MASK;
}

static bool is_mad_op(int op)
{
	return op == OP_MAD_GET || op == OP_CM_REQ || op == OP_CM_REJ || op == OP_CM_DREQ ||
	       op == OP_CM_REP;
}

/* A cm-rej, cm-dreq or cm-rep: the fields that tie it to its connection. */
static void fill_cm_reply(const struct forge_args *a, uint8_t *mad)
{
	switch (a->op) {
	case OP_CM_REJ:
		xr_mad_set(mad, XR_MAD_ATTR_ID, XR_CM_ATTR_REJ);
		xr_mad_set(mad, XR_CM_REJ_LOCAL_COMM_ID, a->local_id);
		xr_mad_set(mad, XR_CM_REJ_REMOTE_COMM_ID, a->remote_id);
		xr_mad_set(mad, XR_CM_REJ_MESSAGE_REJECTED, XR_CM_ANSWERS_OTHER);
		xr_mad_set(mad, XR_CM_REJ_REASON, XR_CM_REJ_CONSUMER_DEFINED);
		break;
	case OP_CM_DREQ:
		xr_mad_set(mad, XR_MAD_ATTR_ID, XR_CM_ATTR_DREQ);
		xr_mad_set(mad, XR_CM_DREQ_LOCAL_COMM_ID, a->local_id);
		xr_mad_set(mad, XR_CM_DREQ_REMOTE_COMM_ID, a->remote_id);
		xr_mad_set(mad, XR_CM_DREQ_REMOTE_QPN, a->remote_qpn);
		break;
	default:
		xr_mad_set(mad, XR_MAD_ATTR_ID, XR_CM_ATTR_REP);
		xr_mad_set(mad, XR_CM_REP_LOCAL_COMM_ID, a->local_id);
		xr_mad_set(mad, XR_CM_REP_REMOTE_COMM_ID, a->remote_id);
		xr_mad_set(mad, XR_CM_REP_LOCAL_QPN, a->remote_qpn);
		break;
	}
}

/* The MAD of a mad-get or cm-* frame, its number i. */
static void fill_mad(const struct forge_args *a, uint8_t *mad, unsigned long i)
{
	bool cm = a->op != OP_MAD_GET;

	memset(mad, 0, XR_MAD_SIZE);
	xr_mad_set(mad, XR_MAD_BASE_VERSION, XR_MGMT_BASE_VERSION);
	xr_mad_set(mad, XR_MAD_MGMT_CLASS, cm ? XR_MGMT_CLASS_CM : MAD_GET_CLASS);
	xr_mad_set(mad, XR_MAD_CLASS_VERSION, cm ? XR_CM_CLASS_VERSION : 1);
	xr_mad_set(mad, XR_MAD_METHOD, cm ? XR_MAD_METHOD_SEND : XR_MAD_METHOD_GET);
	xr_mad_set(mad, XR_MAD_TID, a->tid_set ? a->tid : MAD_GET_TID_BASE + i);
	if (!cm) {
		xr_mad_set(mad, XR_MAD_ATTR_ID, MAD_GET_ATTR);
		for (uint32_t k = XR_MAD_HDR_SIZE; k < XR_MAD_SIZE; k++)
			mad[k] = (uint8_t)(k - XR_MAD_HDR_SIZE);
		return;
	}
	if (a->op != OP_CM_REQ) {
		fill_cm_reply(a, mad);
		return;
	}
	xr_mad_set(mad, XR_MAD_ATTR_ID, XR_CM_ATTR_REQ);
	xr_mad_set(mad, XR_CM_REQ_LOCAL_COMM_ID, CM_REQ_COMM_ID_BASE + i);
	xr_mad_set(mad, XR_CM_REQ_SERVICE_ID, CM_REQ_SERVICE_ID);
	xr_mad_set(mad, XR_CM_REQ_LOCAL_QPN, 0x1a);
	xr_mad_set(mad, XR_CM_REQ_STARTING_PSN, 0xc59c0c);
	xr_mad_set(mad, XR_CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, 20);
	xr_mad_set(mad, XR_CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, 20);
	xr_mad_set(mad, XR_CM_REQ_MAX_CM_RETRIES, 15);
	xr_mad_set(mad, XR_CM_REQ_PKEY, XR_DEFAULT_PKEY);
	xr_mad_set(mad, XR_CM_REQ_PATH_MTU, XR_MTU_1024);
	memcpy(mad + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, a->path.sgid.raw, 16);
	memcpy(mad + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, a->path.dgid.raw, 16);
}

/* The headers after the BTH of op, as xr_opinfo lays them out; the payload a pattern. */
static void fill_frame(const struct forge_args *a, struct xr_pkt_out *out, uint32_t payload_len,
		       unsigned long i)
{
	uint8_t *ext = out->ext;

	if (is_mad_op(a->op)) {
		put32(ext, a->qkey);
		put32(ext + 4, XR_GSI_QPN);
		fill_mad(a, out->payload, i);
		return;
	}
	switch (a->op) {
	case OP_SEND:
		break;
	case OP_WRITE:
	case OP_READ:
		put64(ext, random64());
		put32(ext + 8, (uint32_t)mrand48());
		put32(ext + 12, a->len);
		break;
	case OP_CAS:
	case OP_FAA:
		put64(ext, random64() & ~7ull);
		put32(ext + 8, (uint32_t)mrand48());
		put64(ext + 12, random64());
		put64(ext + 20, random64());
		break;
	default: /* responses: AETH, then the original value of an atomic ACK */
		put32(ext, (uint32_t)ops[a->op].syndrome << 24 | ((uint32_t)lrand48() & 0xffffff));
		if (a->op == OP_ATOMIC_ACK)
			put64(ext + XR_AETH_SIZE, random64());
		break;
	}
	for (uint32_t k = 0; k < payload_len; k++)
		out->payload[k] = (uint8_t)(0xa5 ^ k);
}

static int send_all(const struct forge_args *a)
{
	bool mad = is_mad_op(a->op);
	uint32_t payload_len = a->op == OP_SEND || a->op == OP_WRITE ? a->len
			       : mad				     ? XR_MAD_SIZE
								     : 0;
	struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_halen = 6};
	uint8_t frame[XR_ETH_HLEN + XR_IPV4_HLEN + XR_UDP_HLEN + 64 + MAX_PAYLOAD + XR_ICRC_SIZE];
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0) {
		fprintf(stderr, PROG ": AF_PACKET socket: %s\n", strerror(errno));
		return -1;
	}
	to.sll_ifindex = (int)if_nametoindex(a->ifname);
	memcpy(to.sll_addr, a->path.dmac, 6);
	if (!to.sll_ifindex) {
		fprintf(stderr, PROG ": no interface %s\n", a->ifname);
		close(fd);
		return -1;
	}
	for (unsigned long i = 0; i < a->count; i++) {
		struct xr_bth_fields bth = {.opcode = ops[a->op].opcode,
					    .ackreq = ops[a->op].syndrome == 0,
					    .pkey = a->pkey,
					    .dqpn = pick_qpn(a),
					    .psn = pick_psn(a, i)};
		struct xr_pkt_out out;
		int tries = 0;

		if (xr_pkt_build(frame, sizeof(frame), &a->path, &bth, payload_len, a->ip_id,
				 &out)) {
			fprintf(stderr, PROG ": cannot build a %s frame\n", ops[a->op].name);
			close(fd);
			return -1;
		}
		fill_frame(a, &out, payload_len, i);
		xr_pkt_seal(&out);
		/* A storm outruns the veth's queue: wait for room rather than lose frames. */
		while (sendto(fd, frame, out.frame_len, 0, (struct sockaddr *)&to, sizeof(to)) <
		       0) {
			if (errno != ENOBUFS || ++tries > SEND_RETRIES) {
				fprintf(stderr, PROG ": sendto, frame %lu: %s\n", i,
					strerror(errno));
				close(fd);
				return -1;
			}
			nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
		}
	}
	close(fd);
	return 0;
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &end) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			return false;
		mac[i] = (uint8_t)b[i];
	}
	return true;
}

static bool parse_ipv4_gid(const char *s, union xr_gid *gid)
{
	memset(gid->raw, 0, sizeof(gid->raw));
	gid->raw[10] = gid->raw[11] = 0xff;
	return inet_pton(AF_INET, s, gid->raw + 12) == 1;
}

static bool parse_number(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_option(struct forge_args *a, const char *opt, const char *val)
{
	long v;

	if (!strcmp(opt, "--op")) {
		for (a->op = 0; a->op < OP_COUNT; a->op++)
			if (!strcmp(val, ops[a->op].name))
				return true;
		return false;
	}
	if (!strcmp(opt, "--smac"))
		return parse_mac(val, a->path.smac);
	if (!strcmp(opt, "--dmac"))
		return parse_mac(val, a->path.dmac);
	if (!strcmp(opt, "--sip"))
		return parse_ipv4_gid(val, &a->path.sgid);
	if (!strcmp(opt, "--dip"))
		return parse_ipv4_gid(val, &a->path.dgid);
	if (!strcmp(opt, "--tid")) {
		char *end;

		errno = 0;
		a->tid = strtoull(val, &end, 0);
		a->tid_set = true;
		return !errno && end != val && !*end && *val != '-';
	}
	if (!strcmp(opt, "--psn-step"))
		return parse_number(val, -(long)XR_PSN_MASK, XR_PSN_MASK, &a->psn_step);
	if (!parse_number(val, 0, 0xffffffffl, &v))
		return false;
	if (!strcmp(opt, "--count"))
		a->count = (unsigned long)v;
	else if (!strcmp(opt, "--qpn") && v <= XR_QPN_MASK)
		a->qpn = (uint32_t)v;
	else if (!strcmp(opt, "--avoid-qpn") && v <= XR_QPN_MASK && a->navoid < MAX_AVOID)
		a->avoid[a->navoid++] = (uint32_t)v;
	else if ((!strcmp(opt, "--psn") || !strcmp(opt, "--psn-far")) && v <= XR_PSN_MASK) {
		a->psn = (uint32_t)v;
		a->psn_far = !strcmp(opt, "--psn-far");
	} else if (!strcmp(opt, "--len") && v <= 0x80000000l)
		a->len = (uint32_t)v;
	else if (!strcmp(opt, "--pkey") && v <= 0xffff)
		a->pkey = (uint16_t)v;
	else if (!strcmp(opt, "--ip-id") && v <= 0xffff)
		a->ip_id = (uint16_t)v;
	else if (!strcmp(opt, "--sport") && v <= 0xffff)
		a->path.udp_sport = (uint16_t)v;
	else if (!strcmp(opt, "--qkey"))
		a->qkey = (uint32_t)v;
	else if (!strcmp(opt, "--seed"))
		a->seed = (unsigned long)v;
	else if (!strcmp(opt, "--local-id"))
		a->local_id = (uint32_t)v;
	else if (!strcmp(opt, "--remote-id"))
		a->remote_id = (uint32_t)v;
	else if (!strcmp(opt, "--remote-qpn") && v <= XR_QPN_MASK)
		a->remote_qpn = (uint32_t)v;
	else
		return false;
	return true;
}

int main(int argc, char **argv)
{
	struct forge_args a = {.op = OP_COUNT,
			       .len = DEFAULT_LEN,
			       .pkey = XR_DEFAULT_PKEY,
			       .path = {.udp_sport = 0xc000},
			       .seed = 1,
			       .qkey = XR_GSI_QKEY};
	bool ok = argc >= 2;

	if (ok)
		a.ifname = argv[1];
	for (int i = 2; ok && i < argc; i++) {
		if (!strcmp(argv[i], "--qpn-random"))
			a.qpn_random = true;
		else
			ok = i + 1 < argc && parse_option(&a, argv[i], argv[i + 1]) && ++i;
	}
	ok = ok && a.op < OP_COUNT && a.count > 0 && xr_gid_is_v4mapped(&a.path.sgid) &&
	     xr_gid_is_v4mapped(&a.path.dgid) &&
	     ((a.op != OP_SEND && a.op != OP_WRITE) || a.len <= MAX_PAYLOAD);
	if (!ok) {
		fprintf(stderr,
			"usage: " PROG " IFNAME --op OP --smac MAC --dmac MAC --sip IP --dip IP "
			"--count N\n"
			"       (--qpn QPN | --qpn-random [--avoid-qpn QPN]...) [--psn PSN "
			"[--psn-step STEP] | --psn-far REF]\n"
			"       [--len BYTES] [--pkey PKEY] [--ip-id ID] [--sport PORT] [--seed "
			"SEED] [--qkey QKEY]\n"
			"       [--local-id ID --remote-id ID --tid TID --remote-qpn QPN]\n");
		return 2;
	}
	srand48((long)a.seed);
	if (send_all(&a))
		return 1;
	printf(PROG ": sent %lu %s frames\n", a.count, ops[a.op].name);
	return 0;
}
