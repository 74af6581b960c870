/* SPDX-License-Identifier: MIT */
/*
 * cm_compare GOLDEN.pcap OURS.pcap active|passive
 *
 * Compares the CM messages xroce sent in OURS (a capture of an exchange with
 * Linux's rdma_cm) with the same messages in GOLDEN (rping between two
 * Soft-RoCE hosts, rdmacm_rping.pcap): active, xroce sent the REQ and the
 * RTU; passive, the REP. Every bit of those MADs is a row of the table
 * below, as are the facts of the frame carrying them (BTH, DETH, UDP port):
 *   same  - what any correct CM sends for rping's parameters: must equal GOLDEN's;
 *   vary  - what each run picks (IDs, QPNs, PSNs, addresses): printed, and
 *           held to the relations that must hold within one capture instead.
 * The relations are checked in both captures, so none of them is one that
 * Linux itself breaks. Exit 0: all equal and every relation holds; 1: not;
 * 2: bad usage or a capture without the three messages.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/pcap_reader.h"
#include "core/cm.h"
#include "core/mad.h"
#include "core/packet.h"
#include "xroce/xdp_shared.h"

enum kind { SAME, VARY };

struct row {
	uint16_t attr;
	const char *name; /* MSG.FIELD, printed with FIELD in lower case */
	enum kind kind;
	/* The value: a field of the MAD, or (width 0) len bytes at off, or a fact of the frame. */
	struct xr_mad_field f;
	uint16_t off, len;
	uint64_t (*fact)(const struct xr_pkt *pkt);
};

#define FACT(m)                                                                                    \
	static uint64_t fact_##m(const struct xr_pkt *pkt)                                         \
	{                                                                                          \
		return pkt->m;                                                                     \
	}
FACT(ipv6)
FACT(udp_sport)
FACT(opcode)
FACT(se)
FACT(padcnt)
FACT(pkey)
FACT(dqpn)
FACT(ackreq)
FACT(psn)
FACT(deth_qkey)
FACT(deth_sqpn)
FACT(payload_len)

/* A field of mad.h's table; the header's; one at a byte and bit of the CM data; bytes of it. */
#define F(msg, fld, k)                                                                             \
	{                                                                                          \
		XR_CM_ATTR_##msg, #msg "." #fld, k, XR_CM_##msg##_##fld, 0, 0, NULL                \
	}
#define H(msg, fld, k)                                                                             \
	{                                                                                          \
		XR_CM_ATTR_##msg, #msg "." #fld, k, XR_MAD_##fld, 0, 0, NULL                       \
	}
#define BITS(msg, name, byte, bit, width, k)                                                       \
	{                                                                                          \
		XR_CM_ATTR_##msg, #msg "." name, k, XR_CM_FIELD(byte, bit, width), 0, 0, NULL      \
	}
#define BYTES(msg, name, off, len, k)                                                              \
	{                                                                                          \
		XR_CM_ATTR_##msg, #msg "." name, k, {0, 0, 0}, off, len, NULL                      \
	}
#define RSVD(msg, byte, len) BYTES(msg, "reserved_" #byte, XR_CM_OFF(byte), len, SAME)
#define RSVD_BITS(msg, byte, bit, width)                                                           \
	BITS(msg, "reserved_" #byte "_" #bit, byte, bit, width, SAME)
#define P(msg, m, k)                                                                               \
	{                                                                                          \
		XR_CM_ATTR_##msg, #msg "." #m, k, {0, 0, 0}, 0, 0, fact_##m                        \
	}

/* The common MAD header (13.4.3); the TID is the requester's pick. */
#define HEADER(msg)                                                                                \
	H(msg, BASE_VERSION, SAME), H(msg, MGMT_CLASS, SAME), H(msg, CLASS_VERSION, SAME),         \
	    H(msg, METHOD, SAME), H(msg, STATUS, SAME), H(msg, CLASS_SPECIFIC, SAME),              \
	    H(msg, TID, VARY), H(msg, ATTR_ID, SAME), BYTES(msg, "reserved_hdr_18", 18, 2, SAME),  \
	    H(msg, ATTR_MOD, SAME)

/*
 * The frame: a UD SEND_ONLY from QP1 to QP1 with the GSI Q_Key, AckReq set,
 * P_Key default, from rxe's UDP source port for QP1; QP1's PSN counts every
 * MAD the host sent before, so it varies.
 */
#define FRAME(msg)                                                                                 \
	P(msg, ipv6, SAME), P(msg, udp_sport, SAME), P(msg, opcode, SAME), P(msg, se, SAME),       \
	    P(msg, padcnt, SAME), P(msg, pkey, SAME), P(msg, dqpn, SAME), P(msg, ackreq, SAME),    \
	    P(msg, psn, VARY), P(msg, deth_qkey, SAME), P(msg, deth_sqpn, SAME),                   \
	    P(msg, payload_len, SAME)

#define REQ_PD(off) (XR_CM_REQ_PRIVATE_DATA_OFF + (off))

/* Together the MAD rows of a message cover each of its 2048 bits once (checked at start). */
static const struct row rows[] = {
    /* REQ (table 106); rping asks responder resources 1 and initiator depth 1. */
    FRAME(REQ),
    HEADER(REQ),
    F(REQ, LOCAL_COMM_ID, VARY),
    RSVD(REQ, 4, 4),
    F(REQ, SERVICE_ID, SAME), /* RDMA_PS_TCP, port 7174 on both */
    F(REQ, LOCAL_CA_GUID, VARY),
    RSVD(REQ, 24, 4),
    F(REQ, LOCAL_QKEY, SAME),
    F(REQ, LOCAL_QPN, VARY),
    F(REQ, RESPONDER_RESOURCES, SAME),
    F(REQ, LOCAL_EECN, SAME),
    F(REQ, INITIATOR_DEPTH, SAME),
    F(REQ, REMOTE_EECN, SAME),
    F(REQ, REMOTE_CM_RESPONSE_TIMEOUT, SAME),
    F(REQ, TRANSPORT_SERVICE_TYPE, SAME),
    F(REQ, END_TO_END_FLOW_CONTROL, SAME),
    F(REQ, STARTING_PSN, VARY),
    F(REQ, LOCAL_CM_RESPONSE_TIMEOUT, SAME),
    F(REQ, RETRY_COUNT, SAME),
    F(REQ, PKEY, SAME),
    F(REQ, PATH_MTU, SAME), /* MTU 1500 on both ends: 1024 */
    F(REQ, RDC_EXISTS, SAME),
    F(REQ, RNR_RETRY_COUNT, SAME),
    F(REQ, MAX_CM_RETRIES, SAME),
    F(REQ, SRQ, SAME),
    F(REQ, EXTENDED_TRANSPORT, SAME),
    F(REQ, PRIMARY_LOCAL_LID, SAME), /* permissive on RoCE */
    F(REQ, PRIMARY_REMOTE_LID, SAME),
    BYTES(REQ, "PRIMARY_LOCAL_GID", XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, 16, VARY),
    BYTES(REQ, "PRIMARY_REMOTE_GID", XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, 16, VARY),
    F(REQ, PRIMARY_FLOW_LABEL, VARY), /* from the ports */
    RSVD_BITS(REQ, 90, 4, 6),
    F(REQ, PRIMARY_PACKET_RATE, SAME),
    F(REQ, PRIMARY_TRAFFIC_CLASS, SAME),
    F(REQ, PRIMARY_HOP_LIMIT, SAME),
    F(REQ, PRIMARY_SL, SAME),
    F(REQ, PRIMARY_SUBNET_LOCAL, SAME),
    RSVD_BITS(REQ, 94, 5, 3),
    F(REQ, PRIMARY_LOCAL_ACK_TIMEOUT, SAME),
    RSVD_BITS(REQ, 95, 5, 3),
    BYTES(REQ, "ALTERNATE_PATH", XR_CM_OFF(96), 44, SAME), /* none: all zero */
    /* The private data: cma.c's header (version, IP version, port, addresses), then rping's. */
    {XR_CM_ATTR_REQ, "REQ.CMA_VERSION", SAME, XR_MAD_FIELD(REQ_PD(0), 0, 8), 0, 0, NULL},
    {XR_CM_ATTR_REQ, "REQ.CMA_IP_VERSION", SAME, XR_MAD_FIELD(REQ_PD(1), 0, 4), 0, 0, NULL},
    {XR_CM_ATTR_REQ, "REQ.CMA_RESERVED", SAME, XR_MAD_FIELD(REQ_PD(1), 4, 4), 0, 0, NULL},
    {XR_CM_ATTR_REQ, "REQ.CMA_SRC_PORT", VARY, XR_MAD_FIELD(REQ_PD(2), 0, 16), 0, 0, NULL},
    BYTES(REQ, "CMA_SRC_ADDR", REQ_PD(4), 16, VARY),
    BYTES(REQ, "CMA_DST_ADDR", REQ_PD(20), 16, VARY),
    BYTES(REQ, "PRIVATE_DATA", REQ_PD(36), XR_CM_REQ_PRIVATE_DATA_SIZE - 36, VARY),

    /* REP (table 110) */
    FRAME(REP),
    HEADER(REP),
    F(REP, LOCAL_COMM_ID, VARY),
    F(REP, REMOTE_COMM_ID, VARY),
    F(REP, LOCAL_QKEY, SAME),
    F(REP, LOCAL_QPN, VARY),
    RSVD(REP, 15, 1),
    F(REP, LOCAL_EECN, SAME),
    RSVD(REP, 19, 1),
    F(REP, STARTING_PSN, VARY),
    RSVD(REP, 23, 1),
    F(REP, RESPONDER_RESOURCES, SAME),
    F(REP, INITIATOR_DEPTH, SAME),
    F(REP, TARGET_ACK_DELAY, SAME),
    F(REP, FAILOVER_ACCEPTED, SAME),
    F(REP, END_TO_END_FLOW_CONTROL, SAME),
    F(REP, RNR_RETRY_COUNT, SAME),
    F(REP, SRQ, SAME),
    RSVD_BITS(REP, 27, 4, 4),
    F(REP, LOCAL_CA_GUID, VARY),
    BYTES(REP, "PRIVATE_DATA", XR_CM_REP_PRIVATE_DATA_OFF, XR_CM_REP_PRIVATE_DATA_SIZE, VARY),

    /* RTU (table 111) */
    FRAME(RTU),
    HEADER(RTU),
    F(RTU, LOCAL_COMM_ID, VARY),
    F(RTU, REMOTE_COMM_ID, VARY),
    BYTES(RTU, "PRIVATE_DATA", XR_CM_RTU_PRIVATE_DATA_OFF, XR_CM_RTU_PRIVATE_DATA_SIZE, VARY),
};
#define NUM_ROWS (sizeof(rows) / sizeof(rows[0]))

static const struct {
	uint16_t attr;
	const char *name;
} msgs[] = {{XR_CM_ATTR_REQ, "REQ"}, {XR_CM_ATTR_REP, "REP"}, {XR_CM_ATTR_RTU, "RTU"}};
enum { REQ, REP, RTU, NUM_MSGS };

struct capture {
	const char *who, *path;
	struct pcap_file pf; /* kept open: the packets point into it */
	struct xr_pkt pkt[NUM_MSGS];
	uint32_t frame[NUM_MSGS]; /* 0: not found */
};

static unsigned n_same, n_diff, n_hold, n_broken;

/* The first CM MAD of each attribute: a UD SEND_ONLY to QP1 of 256 bytes, class CM. */
static void load(struct capture *c)
{
	struct pcap_record rec;
	struct xr_pkt pkt;
	int r = pcap_open(c->path, &c->pf);

	if (r) {
		fprintf(stderr, "cm_compare: %s: %s\n", c->path,
			r == -EPROTO ? "not a classic pcap file" : strerror(-r));
		exit(2);
	}
	if (c->pf.linktype != PCAP_LINKTYPE_ETHERNET) {
		fprintf(stderr, "cm_compare: %s: link type %u, not Ethernet\n", c->path,
			c->pf.linktype);
		exit(2);
	}
	while ((r = pcap_next(&c->pf, &rec)) == 1) {
		if (xr_pkt_parse(rec.data, rec.caplen, &pkt) != XR_PARSE_OK ||
		    pkt.opcode != XR_OP_UD_SEND_ONLY || pkt.dqpn != XR_GSI_QPN ||
		    pkt.payload_len != XR_MAD_SIZE || pkt.payload[1] != XR_MGMT_CLASS_CM)
			continue;
		for (int m = 0; m < NUM_MSGS; m++)
			if (xr_mad_get(pkt.payload, XR_MAD_ATTR_ID) == msgs[m].attr &&
			    !c->frame[m]) {
				c->pkt[m] = pkt;
				c->frame[m] = rec.number;
			}
	}
	if (r < 0) {
		fprintf(stderr, "cm_compare: %s: record %u is cut or corrupt\n", c->path,
			c->pf.records_read + 1);
		exit(2);
	}
	for (int m = 0; m < NUM_MSGS; m++)
		if (!c->frame[m]) {
			fprintf(stderr, "cm_compare: %s has no %s\n", c->path, msgs[m].name);
			exit(2);
		}
}

/* A table that missed or doubled a bit would compare less than it claims. */
static void check_table(void)
{
	for (int m = 0; m < NUM_MSGS; m++) {
		uint8_t seen[XR_MAD_SIZE * 8] = {0};

		for (size_t i = 0; i < NUM_ROWS; i++) {
			const struct row *w = &rows[i];
			unsigned from = w->f.byte * 8 + w->f.bit, n = w->f.width;

			if (w->attr != msgs[m].attr || w->fact)
				continue;
			if (!n)
				from = w->off * 8, n = w->len * 8;
			for (unsigned b = from; b < from + n; b++)
				seen[b]++;
		}
		for (unsigned b = 0; b < sizeof(seen); b++)
			if (seen[b] != 1) {
				fprintf(stderr, "cm_compare: the table has %s's bit %u %u times\n",
					msgs[m].name, b, seen[b]);
				exit(2);
			}
	}
}

static const char *row_name(const struct row *w)
{
	static char buf[64];
	const char *dot = strchr(w->name, '.');
	size_t i = 0;

	for (const char *s = w->name; *s && i < sizeof(buf) - 1; s++)
		buf[i++] = s > dot ? (char)tolower((unsigned char)*s) : *s;
	buf[i] = 0;
	return buf;
}

/*
 * 16 bytes as an address (GIDs; cma.c's addresses, IPv4 ones zero-padded),
 * other bytes in hex without their trailing zeros.
 */
static const char *bytes_str(const uint8_t *p, unsigned len, char *buf, size_t size)
{
	static const uint8_t pad[12];
	unsigned n = len, k = 0;

	if (len == 16 && !memcmp(p, pad, 12))
		return inet_ntop(AF_INET, p + 12, buf, (socklen_t)size);
	if (len == 16)
		return inet_ntop(AF_INET6, p, buf, (socklen_t)size);
	while (n && !p[n - 1])
		n--;
	for (unsigned i = 0; i < n && k + 3 < size; i++)
		k += (unsigned)snprintf(buf + k, size - k, "%02x", p[i]);
	snprintf(buf + k, size - k, n ? " +%u zero bytes" : "%u zero bytes", len - n);
	return buf;
}

static void value_str(const struct row *w, const struct xr_pkt *pkt, char *buf, size_t size)
{
	uint64_t v;

	if (!w->fact && !w->f.width) {
		bytes_str(pkt->payload + w->off, w->len, buf, size);
		return;
	}
	v = w->fact ? w->fact(pkt) : xr_mad_get(pkt->payload, w->f);
	/* Counts, flags and small numbers in decimal; keys, IDs, ports and GUIDs in hex. */
	if (w->fact ? v < 4096 : w->f.width <= 8)
		snprintf(buf, size, "%" PRIu64, v);
	else
		snprintf(buf, size, "%#" PRIx64, v);
}

static void compare(const struct capture *ours, const struct capture *golden, int m)
{
	char o[600], g[600];

	for (size_t i = 0; i < NUM_ROWS; i++) {
		const struct row *w = &rows[i];

		if (w->attr != msgs[m].attr)
			continue;
		value_str(w, &ours->pkt[m], o, sizeof(o));
		value_str(w, &golden->pkt[m], g, sizeof(g));
		if (w->kind == VARY) {
			printf("vary  %s ours %s golden %s\n", row_name(w), o, g);
		} else if (!strcmp(o, g)) {
			n_same++;
			printf("same  %s %s\n", row_name(w), o);
		} else {
			n_diff++;
			printf("DIFF  %s ours %s golden %s\n", row_name(w), o, g);
		}
	}
}

static void rel(const struct capture *c, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void rel(const struct capture *c, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "rel  " : "BAD  ", c->who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(ok ? " ok\n" : "\n");
	if (ok)
		n_hold++;
	else
		n_broken++;
}

static void rel_eq(const struct capture *c, const char *a, uint64_t va, const char *b, uint64_t vb)
{
	rel(c, va == vb, "%s %#" PRIx64 " %s %s %#" PRIx64, a, va, va == vb ? "==" : "!=", b, vb);
}

static bool gid_eq(const union xr_gid *a, const union xr_gid *b)
{
	return !memcmp(a->raw, b->raw, 16);
}

/* cma.c's address: IPv4 in the last 4 of its 16 bytes, the rest zero; IPv6 whole. */
static bool cma_addr_is(const uint8_t *a, const union xr_gid *ip, bool v4)
{
	static const uint8_t zero[12];

	return v4 ? !memcmp(a, zero, 12) && !memcmp(a + 12, ip->raw + 12, 4)
		  : !memcmp(a, ip->raw, 16);
}

/* What must hold within one exchange, whoever picked the values. */
static void relations(const struct capture *c)
{
	const struct xr_pkt *req = &c->pkt[REQ], *rep = &c->pkt[REP], *rtu = &c->pkt[RTU];
	const uint8_t *q = req->payload, *p = rep->payload, *u = rtu->payload;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	uint64_t sport = xr_mad_get(q, XR_MAD_FIELD(REQ_PD(2), 0, 16));
	uint64_t dport = xr_mad_get(q, XR_CM_REQ_SERVICE_ID) & 0xffff;
	bool v4 = q[REQ_PD(1)] >> 4 == 4;

	for (int m = 0; m < NUM_MSGS; m++)
		rel(c, xr_pkt_icrc_ok(&c->pkt[m]), "%s frame %u ICRC%s", msgs[m].name, c->frame[m],
		    xr_pkt_icrc_ok(&c->pkt[m]) ? "" : " does not match the frame");
	/* Each side names the connection by the ID the other picked, and answers in its TID. */
	rel_eq(c, "REP.remote_comm_id", xr_mad_get(p, XR_CM_REP_REMOTE_COMM_ID),
	       "REQ.local_comm_id", xr_mad_get(q, XR_CM_REQ_LOCAL_COMM_ID));
	rel_eq(c, "RTU.local_comm_id", xr_mad_get(u, XR_CM_RTU_LOCAL_COMM_ID), "REQ.local_comm_id",
	       xr_mad_get(q, XR_CM_REQ_LOCAL_COMM_ID));
	rel_eq(c, "RTU.remote_comm_id", xr_mad_get(u, XR_CM_RTU_REMOTE_COMM_ID),
	       "REP.local_comm_id", xr_mad_get(p, XR_CM_REP_LOCAL_COMM_ID));
	rel_eq(c, "REP.tid", xr_mad_get(p, XR_MAD_TID), "REQ.tid", xr_mad_get(q, XR_MAD_TID));
	rel_eq(c, "RTU.tid", xr_mad_get(u, XR_MAD_TID), "REQ.tid", xr_mad_get(q, XR_MAD_TID));
	/* The REQ's path is the one it travels; the REP comes back along it, the RTU follows. */
	inet_ntop(AF_INET6, req->sgid.raw, s, sizeof(s));
	inet_ntop(AF_INET6, req->dgid.raw, d, sizeof(d));
	rel(c, !memcmp(q + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, req->sgid.raw, 16),
	    "REQ.primary_local_gid is the frame's source %s", s);
	rel(c, !memcmp(q + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, req->dgid.raw, 16),
	    "REQ.primary_remote_gid is the frame's destination %s", d);
	rel(c, gid_eq(&rep->sgid, &req->dgid) && gid_eq(&rep->dgid, &req->sgid),
	    "REP travels from %s to %s", d, s);
	rel(c, gid_eq(&rtu->sgid, &req->sgid) && gid_eq(&rtu->dgid, &req->dgid),
	    "RTU travels from %s to %s", s, d);
	rel(c,
	    cma_addr_is(q + REQ_PD(4), &req->sgid, v4) &&
		cma_addr_is(q + REQ_PD(20), &req->dgid, v4),
	    "REQ.cma_src_addr and cma_dst_addr are the frame's %s and %s", s, d);
	/* cma.c's flow label for a RoCE route, from the ports of the connection. */
	rel_eq(c, "REQ.primary_flow_label", xr_mad_get(q, XR_CM_REQ_PRIMARY_FLOW_LABEL),
	       "(cma_src_port * 31 + service port) & 0xfffff", (sport * 31 + dport) & 0xfffff);
	/* rxe's node GUID: the EUI-64 of the MAC the MAD leaves from. */
	rel_eq(c, "REQ.local_ca_guid", xr_mad_get(q, XR_CM_REQ_LOCAL_CA_GUID),
	       "EUI-64 of its source MAC", xr_cm_ca_guid(req->smac));
	rel_eq(c, "REP.local_ca_guid", xr_mad_get(p, XR_CM_REP_LOCAL_CA_GUID),
	       "EUI-64 of its source MAC", xr_cm_ca_guid(rep->smac));
}

int main(int argc, char **argv)
{
	struct capture golden = {.who = "golden"}, ours = {.who = "ours"};
	bool active = argc == 4 && !strcmp(argv[3], "active");

	if (argc != 4 || (!active && strcmp(argv[3], "passive"))) {
		fprintf(stderr,
			"usage: %s GOLDEN.pcap OURS.pcap active|passive\n"
			"  active: xroce sent the REQ and RTU; passive: xroce sent the REP\n",
			argv[0]);
		return 2;
	}
	check_table();
	golden.path = argv[1];
	ours.path = argv[2];
	load(&golden);
	load(&ours);
	printf("# %s (frames %u %u %u) against %s (frames %u %u %u), xroce %s\n", ours.path,
	       ours.frame[REQ], ours.frame[REP], ours.frame[RTU], golden.path, golden.frame[REQ],
	       golden.frame[REP], golden.frame[RTU], active ? "active" : "passive");
	if (active) {
		compare(&ours, &golden, REQ);
		compare(&ours, &golden, RTU);
	} else {
		compare(&ours, &golden, REP);
	}
	relations(&golden);
	relations(&ours);
	printf("cm_compare: %u fields equal, %u differ, %u relations hold, %u broken\n", n_same,
	       n_diff, n_hold, n_broken);
	pcap_close(&golden.pf);
	pcap_close(&ours.pf);
	return n_diff || n_broken ? 1 : 0;
}
