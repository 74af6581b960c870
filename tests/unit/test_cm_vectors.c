/* SPDX-License-Identifier: MIT */
/*
 * The CM's wire format against rping between two Soft-RoCE hosts
 * (rdmacm_rping.pcap): the five MADs on QP1 (REQ, REP, RTU, DREQ, DREP)
 * must read, field by field, as ib_cm wrote them; a MAD built from those
 * field values alone (and the private data) must equal the captured one
 * byte for byte, so no field lies elsewhere than the table says; and the
 * frame QP1 sends with that MAD along the captured path must equal the
 * captured frame, ICRC included.
 *
 * Run from the repository root; XROCE_VECTORS overrides the capture directory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "check_group.h"
#include "cma/cma.h"
#include "core/core.h"
#include "core/mad.h"
#include "core/packet.h"
#include "pcap_reader.h"

#define CAPTURE "rdmacm_rping.pcap"
#define MAX_FIELDS 40

struct field_value {
	struct xr_mad_field f;
	uint64_t v;
	const char *name;
};

#define FV(field, value)                                                                           \
	{                                                                                          \
		field, value, #field                                                               \
	}

struct cm_vector {
	uint32_t frame; /* tshark's frame.number */
	const char *what;
	struct field_value fields[MAX_FIELDS];
	/* IPv4-mapped GIDs at these offsets (0: none), as 10.77.0.x */
	uint16_t gid_off[2];
	uint8_t gid_host[2];
};

#define RPING_TID 0x0000000299892268ull
#define HDR(attr)                                                                                  \
	FV(XR_MAD_BASE_VERSION, 1), FV(XR_MAD_MGMT_CLASS, XR_MGMT_CLASS_CM),                       \
	    FV(XR_MAD_CLASS_VERSION, XR_CM_CLASS_VERSION), FV(XR_MAD_METHOD, XR_MAD_METHOD_SEND),  \
	    FV(XR_MAD_TID, RPING_TID), FV(XR_MAD_ATTR_ID, attr)

/* What tshark decodes from the capture (its REQ flow label and packet rate are a byte off). */
static const struct cm_vector vectors[] = {
    {1,
     "REQ",
     {HDR(XR_CM_ATTR_REQ), FV(XR_CM_REQ_LOCAL_COMM_ID, 0x68228999),
      FV(XR_CM_REQ_SERVICE_ID, 0x0000000001061c06ull), /* RDMA_PS_TCP, port 7174 */
      FV(XR_CM_REQ_LOCAL_CA_GUID, 0x505400fffe770002ull), FV(XR_CM_REQ_LOCAL_QKEY, 0),
      FV(XR_CM_REQ_LOCAL_QPN, 0x1a), FV(XR_CM_REQ_RESPONDER_RESOURCES, 1),
      FV(XR_CM_REQ_INITIATOR_DEPTH, 1), FV(XR_CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, 20),
      FV(XR_CM_REQ_TRANSPORT_SERVICE_TYPE, 0), /* RC */
      FV(XR_CM_REQ_STARTING_PSN, 0xc59c0c), FV(XR_CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, 20),
      FV(XR_CM_REQ_RETRY_COUNT, 7), FV(XR_CM_REQ_PKEY, 0xffff),
      FV(XR_CM_REQ_PATH_MTU, 3), /* 1024 */
      FV(XR_CM_REQ_RNR_RETRY_COUNT, 7), FV(XR_CM_REQ_MAX_CM_RETRIES, 15), FV(XR_CM_REQ_SRQ, 0),
      FV(XR_CM_REQ_PRIMARY_LOCAL_LID, 0xffff), FV(XR_CM_REQ_PRIMARY_REMOTE_LID, 0xffff),
      /* cma.c's for IPv4: (source port * 31 + destination port) & 0xfffff */
      FV(XR_CM_REQ_PRIMARY_FLOW_LABEL, (0xce78u * 31 + 0x1c06u) & 0xfffff),
      FV(XR_CM_REQ_PRIMARY_PACKET_RATE, 0), FV(XR_CM_REQ_PRIMARY_TRAFFIC_CLASS, 0),
      FV(XR_CM_REQ_PRIMARY_HOP_LIMIT, 64), FV(XR_CM_REQ_PRIMARY_SL, 0),
      FV(XR_CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, 19)},
     {XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, XR_CM_REQ_PRIMARY_REMOTE_GID_OFF},
     {2, 1}},
    {2,
     "REP",
     {HDR(XR_CM_ATTR_REP), FV(XR_CM_REP_LOCAL_COMM_ID, 0xb5444d05),
      FV(XR_CM_REP_REMOTE_COMM_ID, 0x68228999), FV(XR_CM_REP_LOCAL_QKEY, 0),
      FV(XR_CM_REP_LOCAL_QPN, 0x1a), FV(XR_CM_REP_STARTING_PSN, 0xda5020),
      FV(XR_CM_REP_RESPONDER_RESOURCES, 1), FV(XR_CM_REP_INITIATOR_DEPTH, 1),
      FV(XR_CM_REP_TARGET_ACK_DELAY, 15), FV(XR_CM_REP_FAILOVER_ACCEPTED, 0),
      FV(XR_CM_REP_RNR_RETRY_COUNT, 7), FV(XR_CM_REP_SRQ, 0),
      FV(XR_CM_REP_LOCAL_CA_GUID, 0x505400fffe770001ull)},
     {0, 0},
     {0, 0}},
    {3,
     "RTU",
     {HDR(XR_CM_ATTR_RTU), FV(XR_CM_RTU_LOCAL_COMM_ID, 0x68228999),
      FV(XR_CM_RTU_REMOTE_COMM_ID, 0xb5444d05)},
     {0, 0},
     {0, 0}},
    {28,
     "DREQ",
     {HDR(XR_CM_ATTR_DREQ), FV(XR_CM_DREQ_LOCAL_COMM_ID, 0x68228999),
      FV(XR_CM_DREQ_REMOTE_COMM_ID, 0xb5444d05), FV(XR_CM_DREQ_REMOTE_QPN, 0x1a)},
     {0, 0},
     {0, 0}},
    {29,
     "DREP",
     {HDR(XR_CM_ATTR_DREP), FV(XR_CM_DREP_LOCAL_COMM_ID, 0xb5444d05),
      FV(XR_CM_DREP_REMOTE_COMM_ID, 0x68228999)},
     {0, 0},
     {0, 0}},
};
#define NUM_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

/* The REQ's private data as cma.c writes it: version 0, IPv4, the client's port and both addresses.
 */
static const uint8_t req_cma_header[36] = {
    0x00, 0x40, 0xce, 0x78, [16] = 10, 77, 0, 2, [32] = 10, 77, 0, 1,
};

struct captured {
	uint8_t frame[512];
	uint32_t len;
};

static struct captured frames[NUM_VECTORS];

static int load(struct group *g)
{
	char path[512];
	struct pcap_file pf;
	struct pcap_record rec;
	int r;

	snprintf(path, sizeof(path), "%s/%s", vector_dir(), CAPTURE);
	r = pcap_open(path, &pf);
	check(g, r == 0, "%s: %s", path, strerror(-r));
	if (r)
		return r;
	while ((r = pcap_next(&pf, &rec)) == 1)
		for (size_t i = 0; i < NUM_VECTORS; i++)
			if (rec.number == vectors[i].frame &&
			    rec.caplen <= sizeof(frames[i].frame)) {
				memcpy(frames[i].frame, rec.data, rec.caplen);
				frames[i].len = rec.caplen;
			}
	pcap_close(&pf);
	for (size_t i = 0; i < NUM_VECTORS; i++)
		check(g, frames[i].len == 322, "%s: frame %u is %u bytes, not 322", vectors[i].what,
		      vectors[i].frame, frames[i].len);
	return 0;
}

static union xr_gid v4_gid(uint8_t host)
{
	return (union xr_gid){.raw = {[10] = 0xff, [11] = 0xff, [12] = 10, 77, 0, host}};
}

/* A frame to QP1 from QP1: UD SEND_ONLY, GSI Q_Key, 256 bytes. */
static const uint8_t *mad_of(struct group *g, size_t i, struct xr_pkt *pkt)
{
	if (xr_pkt_parse(frames[i].frame, frames[i].len, pkt) != XR_PARSE_OK) {
		check(g, false, "%s: does not parse", vectors[i].what);
		return NULL;
	}
	check(g, xr_pkt_icrc_ok(pkt), "%s: ICRC", vectors[i].what);
	check(g,
	      pkt->opcode == XR_OP_UD_SEND_ONLY && pkt->dqpn == XR_GSI_QPN &&
		  pkt->deth_qkey == XR_GSI_QKEY && pkt->deth_sqpn == XR_GSI_QPN &&
		  pkt->payload_len == XR_MAD_SIZE && pkt->ackreq,
	      "%s: opcode %#x dqpn %u qkey %#x sqpn %u payload %u ackreq %d", vectors[i].what,
	      pkt->opcode, pkt->dqpn, pkt->deth_qkey, pkt->deth_sqpn, pkt->payload_len,
	      pkt->ackreq);
	return pkt->payload_len == XR_MAD_SIZE ? pkt->payload : NULL;
}

static void fields_read(struct group *g)
{
	for (size_t i = 0; i < NUM_VECTORS; i++) {
		const struct cm_vector *v = &vectors[i];
		struct xr_pkt pkt;
		const uint8_t *mad = mad_of(g, i, &pkt);

		if (!mad)
			continue;
		for (const struct field_value *fv = v->fields; fv->name; fv++) {
			uint64_t got = xr_mad_get(mad, fv->f);

			check(g, got == fv->v, "%s: %s is %#" PRIx64 ", not %#" PRIx64, v->what,
			      fv->name, got, fv->v);
		}
		for (int k = 0; k < 2; k++) {
			union xr_gid want = v4_gid(v->gid_host[k]);

			if (v->gid_off[k])
				check(g, !memcmp(mad + v->gid_off[k], want.raw, 16), "%s: GID %d",
				      v->what, k);
		}
	}
}

/* Built from the fields alone, plus the private data: nothing else may differ. */
static void fields_rebuild(struct group *g)
{
	for (size_t i = 0; i < NUM_VECTORS; i++) {
		const struct cm_vector *v = &vectors[i];
		struct xr_pkt pkt;
		const uint8_t *mad = mad_of(g, i, &pkt);
		uint16_t attr =
		    (uint16_t)xr_mad_get(mad ? mad : (uint8_t[XR_MAD_SIZE]){0}, XR_MAD_ATTR_ID);
		struct xr_cm_private_data pd = xr_cm_private_data_of(attr);
		uint8_t built[XR_MAD_SIZE] = {0};

		if (!mad)
			continue;
		for (const struct field_value *fv = v->fields; fv->name; fv++)
			xr_mad_set(built, fv->f, fv->v);
		for (int k = 0; k < 2; k++)
			if (v->gid_off[k])
				memcpy(built + v->gid_off[k], v4_gid(v->gid_host[k]).raw, 16);
		check(g, pd.size && pd.off + pd.size == XR_MAD_SIZE, "%s: private data %u+%u",
		      v->what, pd.off, pd.size);
		if (attr == XR_CM_ATTR_REQ)
			memcpy(built + pd.off, req_cma_header, sizeof(req_cma_header));
		for (unsigned b = 0; b < XR_MAD_SIZE; b++)
			check(g, built[b] == mad[b], "%s: byte %u built %#x, captured %#x", v->what,
			      b, built[b], mad[b]);
		/* Writing a field leaves its neighbours as they were. */
		for (const struct field_value *fv = v->fields; fv->name; fv++) {
			xr_mad_set(built, fv->f, ~fv->v);
			xr_mad_set(built, fv->f, fv->v);
		}
		check(g, !memcmp(built, mad, XR_MAD_SIZE), "%s: set twice over", v->what);
	}
}

/* ---- the frame QP1 sends -------------------------------------------------- */

static uint8_t tx_buf[2048];
static uint32_t tx_len;

static uint8_t *tx_alloc(void *ctx, uint32_t *cap)
{
	(void)ctx;
	*cap = sizeof(tx_buf);
	return tx_buf;
}

static void tx_submit(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	(void)ctx;
	(void)queue;
	(void)buf;
	tx_len = len;
}

static void tx_abort(void *ctx, uint8_t *buf)
{
	(void)ctx;
	(void)buf;
}

static void frames_sent(struct group *g)
{
	static struct xr_core core;
	struct xr_core_port port = {
	    .tx_alloc = tx_alloc, .tx_submit = tx_submit, .tx_abort = tx_abort};

	xr_core_init(&core, &port);
	for (size_t i = 0; i < NUM_VECTORS; i++) {
		const uint8_t *f = frames[i].frame;
		struct xr_pkt pkt;
		const uint8_t *mad = mad_of(g, i, &pkt);
		struct xr_path path = {0};

		if (!mad)
			continue;
		memcpy(path.dmac, pkt.dmac, 6);
		memcpy(path.smac, pkt.smac, 6);
		path.sgid = pkt.sgid;
		path.dgid = pkt.dgid;
		core.gsi_psn = pkt.psn;
		core.ip_id = (uint16_t)(f[XR_ETH_HLEN + 4] << 8 | f[XR_ETH_HLEN + 5]);
		tx_len = 0;
		check(g, xr_gsi_send(&core, &path, mad), "%s: sent", vectors[i].what);
		check(g, tx_len == frames[i].len, "%s: %u bytes sent, %u captured", vectors[i].what,
		      tx_len, frames[i].len);
		for (uint32_t b = 0; b < tx_len && b < frames[i].len; b++)
			check(g, tx_buf[b] == f[b], "%s: frame byte %u sent %#x, captured %#x",
			      vectors[i].what, b, tx_buf[b], f[b]);
		check(g, core.gsi_psn == ((pkt.psn + 1) & XR_PSN_MASK), "%s: QP1's PSN moves on",
		      vectors[i].what);
	}
	check(g, core.stats.mads_tx == NUM_VECTORS, "mads_tx %llu",
	      (unsigned long long)core.stats.mads_tx);
}

/*
 * The RDMA CM's part of the REQ, from the addresses and ports alone: the
 * CMA header cma.c writes, the service ID of RDMA_PS_TCP's port, and the
 * flow label cma.c gives a RoCE route; and the header read back.
 */
static void cma_wire(struct group *g)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(0xce78)};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(7174)};
	struct sockaddr_storage got_src, got_dst;
	uint8_t hdr[CMA_HDR_SIZE];
	struct xr_pkt pkt;
	const uint8_t *req = mad_of(g, 0, &pkt);
	const struct sockaddr *s = (const struct sockaddr *)&src,
			      *d = (const struct sockaddr *)&dst;

	if (!req)
		return;
	inet_pton(AF_INET, "10.77.0.2", &src.sin_addr);
	inet_pton(AF_INET, "10.77.0.1", &dst.sin_addr);
	cma_hdr_build(hdr, s, d);
	check(g, !memcmp(hdr, req + XR_CM_REQ_PRIVATE_DATA_OFF, CMA_HDR_SIZE),
	      "the CMA header differs from the capture's");
	check(g, cma_service_id(XR_RDMA_PS_TCP, 7174) == xr_mad_get(req, XR_CM_REQ_SERVICE_ID),
	      "service ID %#" PRIx64, cma_service_id(XR_RDMA_PS_TCP, 7174));
	check(g, cma_flow_label(s, d) == xr_mad_get(req, XR_CM_REQ_PRIMARY_FLOW_LABEL),
	      "flow label %#x", cma_flow_label(s, d));
	check(g, cma_hdr_parse(req + XR_CM_REQ_PRIVATE_DATA_OFF, &got_src, &got_dst) == 0,
	      "the captured header does not parse");
	check(g,
	      cma_addr_equal((struct sockaddr *)&got_src, s) &&
		  cma_port((struct sockaddr *)&got_src) == 0xce78 &&
		  cma_addr_equal((struct sockaddr *)&got_dst, d),
	      "the header's addresses read back wrong");
	hdr[1] = 0x50; /* neither IPv4 nor IPv6 */
	check(g, cma_hdr_parse(hdr, &got_src, &got_dst) == -EINVAL, "IP version 5 accepted");
	hdr[1] = 0x40;
	hdr[0] = 1; /* a CMA version Linux never wrote */
	check(g, cma_hdr_parse(hdr, &got_src, &got_dst) == -EINVAL, "CMA version 1 accepted");
}

int main(void)
{
	struct group loaded = {.name = "cm: capture loads"},
		     read = {.name = "cm: fields read as ib_cm wrote them"},
		     rebuilt = {.name = "cm: MADs rebuilt from their fields"},
		     sent = {.name = "cm: QP1 frames equal the capture"},
		     cma = {.name = "cm: the RDMA CM's header, service ID and flow label"};

	load(&loaded);
	finish_group(&loaded, vector_dir());
	fields_read(&read);
	finish_group(&read, NULL);
	fields_rebuild(&rebuilt);
	finish_group(&rebuilt, NULL);
	frames_sent(&sent);
	finish_group(&sent, NULL);
	cma_wire(&cma);
	finish_group(&cma, NULL);
	return groups_summary("test_cm_vectors");
}
