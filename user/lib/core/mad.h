/* SPDX-License-Identifier: MIT */
/*
 * Management datagrams (IBTA vol. 1, 13.4) and the communication manager's
 * messages (12.6), as they travel to QP1 over RoCE: a 256-byte MAD, a
 * 24-byte common header and then the class's data.
 *
 * A field is named as the spec's tables name it: a byte offset into the MAD,
 * a bit offset from the most significant bit of that byte, and a width.
 * xr_mad_get and xr_mad_set read and write it big-endian; one table of
 * fields serves both the messages the CM builds and the ones it parses.
 */
#ifndef XROCE_CORE_MAD_H
#define XROCE_CORE_MAD_H

#include <stdint.h>

#define XR_MAD_SIZE 256
#define XR_MAD_HDR_SIZE 24
#define XR_GSI_QKEY 0x80010000u

#define XR_MGMT_BASE_VERSION 1
#define XR_MGMT_CLASS_CM 0x07
#define XR_CM_CLASS_VERSION 2

enum xr_mad_method {
	XR_MAD_METHOD_GET = 0x01,
	XR_MAD_METHOD_SET = 0x02,
	XR_MAD_METHOD_SEND = 0x03,
	XR_MAD_METHOD_RESP = 0x80, /* the bit every response method carries */
	XR_MAD_METHOD_GET_RESP = 0x81,
};

/* MAD status, bits 4:2 (invalid field). */
enum xr_mad_status {
	XR_MAD_STATUS_BAD_VERSION = 1 << 2, /* class or base version not supported */
	XR_MAD_STATUS_UNSUPPORTED_METHOD = 2 << 2,
	XR_MAD_STATUS_UNSUPPORTED_METHOD_ATTR = 3 << 2,
};

enum xr_cm_attr_id {
	XR_CM_ATTR_REQ = 0x0010,
	XR_CM_ATTR_MRA = 0x0011,
	XR_CM_ATTR_REJ = 0x0012,
	XR_CM_ATTR_REP = 0x0013,
	XR_CM_ATTR_RTU = 0x0014,
	XR_CM_ATTR_DREQ = 0x0015,
	XR_CM_ATTR_DREP = 0x0016,
	XR_CM_ATTR_SIDR_REQ = 0x0017,
	XR_CM_ATTR_SIDR_REP = 0x0018,
	XR_CM_ATTR_LAP = 0x0019,
	XR_CM_ATTR_APR = 0x001a,
};

/* REJ reasons (12.6.7.2) that Linux's ib_cm and xroce use. */
enum xr_cm_rej_reason {
	XR_CM_REJ_NO_QP = 1,
	XR_CM_REJ_NO_RESOURCES = 3,
	XR_CM_REJ_TIMEOUT = 4,
	XR_CM_REJ_UNSUPPORTED = 5,
	XR_CM_REJ_INVALID_COMM_ID = 6,
	XR_CM_REJ_INVALID_COMM_INSTANCE = 7,
	XR_CM_REJ_INVALID_SERVICE_ID = 8,
	XR_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	XR_CM_REJ_STALE_CONN = 10,
	XR_CM_REJ_INVALID_GID = 12,
	XR_CM_REJ_INVALID_MTU = 26,
	XR_CM_REJ_CONSUMER_DEFINED = 28,
	XR_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	XR_CM_REJ_INVALID_CLASS_VERSION = 31,
};

/* What a REJ or an MRA answers (MessageREJected, MessageMRAed). */
enum xr_cm_msg_answered {
	XR_CM_ANSWERS_REQ = 0,
	XR_CM_ANSWERS_REP = 1,
	XR_CM_ANSWERS_OTHER = 2, /* REJ: anything else; MRA: a LAP */
};

/* SIDR_REP status (12.11.2). */
enum xr_cm_sidr_status {
	XR_CM_SIDR_SUCCESS = 0,
	XR_CM_SIDR_UNSUPPORTED = 1, /* no service of that ID */
	XR_CM_SIDR_REJECT = 2,
	XR_CM_SIDR_NO_QP = 3,
	XR_CM_SIDR_REDIRECT = 4,
	XR_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

struct xr_mad_field {
	uint16_t byte; /* from the start of the MAD */
	uint8_t bit;   /* from the most significant bit of that byte */
	uint8_t width; /* bit + width <= 64 */
};

#define XR_MAD_FIELD(byte, bit, width) ((struct xr_mad_field){(byte), (bit), (width)})
/* CM fields, as the spec's tables give them: offsets into the MAD's data. */
#define XR_CM_FIELD(byte, bit, width) XR_MAD_FIELD(XR_MAD_HDR_SIZE + (byte), (bit), (width))
#define XR_CM_OFF(byte) (XR_MAD_HDR_SIZE + (byte))

uint64_t xr_mad_get(const uint8_t *mad, struct xr_mad_field f);
void xr_mad_set(uint8_t *mad, struct xr_mad_field f, uint64_t v);

/* ---- the common header (13.4.3) ---- */
#define XR_MAD_BASE_VERSION XR_MAD_FIELD(0, 0, 8)
#define XR_MAD_MGMT_CLASS XR_MAD_FIELD(1, 0, 8)
#define XR_MAD_CLASS_VERSION XR_MAD_FIELD(2, 0, 8)
#define XR_MAD_METHOD XR_MAD_FIELD(3, 0, 8)
#define XR_MAD_STATUS XR_MAD_FIELD(4, 0, 16)
#define XR_MAD_CLASS_SPECIFIC XR_MAD_FIELD(6, 0, 16)
#define XR_MAD_TID XR_MAD_FIELD(8, 0, 64)
#define XR_MAD_ATTR_ID XR_MAD_FIELD(16, 0, 16)
#define XR_MAD_ATTR_MOD XR_MAD_FIELD(20, 0, 32)

/* ---- REQ (table 106) ---- */
#define XR_CM_REQ_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_REQ_SERVICE_ID XR_CM_FIELD(8, 0, 64)
#define XR_CM_REQ_LOCAL_CA_GUID XR_CM_FIELD(16, 0, 64)
#define XR_CM_REQ_LOCAL_QKEY XR_CM_FIELD(28, 0, 32)
#define XR_CM_REQ_LOCAL_QPN XR_CM_FIELD(32, 0, 24)
#define XR_CM_REQ_RESPONDER_RESOURCES XR_CM_FIELD(35, 0, 8)
#define XR_CM_REQ_LOCAL_EECN XR_CM_FIELD(36, 0, 24)
#define XR_CM_REQ_INITIATOR_DEPTH XR_CM_FIELD(39, 0, 8)
#define XR_CM_REQ_REMOTE_EECN XR_CM_FIELD(40, 0, 24)
#define XR_CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT XR_CM_FIELD(43, 0, 5)
#define XR_CM_REQ_TRANSPORT_SERVICE_TYPE XR_CM_FIELD(43, 5, 2)
#define XR_CM_REQ_END_TO_END_FLOW_CONTROL XR_CM_FIELD(43, 7, 1)
#define XR_CM_REQ_STARTING_PSN XR_CM_FIELD(44, 0, 24)
#define XR_CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT XR_CM_FIELD(47, 0, 5)
#define XR_CM_REQ_RETRY_COUNT XR_CM_FIELD(47, 5, 3)
#define XR_CM_REQ_PKEY XR_CM_FIELD(48, 0, 16)
#define XR_CM_REQ_PATH_MTU XR_CM_FIELD(50, 0, 4)
#define XR_CM_REQ_RDC_EXISTS XR_CM_FIELD(50, 4, 1)
#define XR_CM_REQ_RNR_RETRY_COUNT XR_CM_FIELD(50, 5, 3)
#define XR_CM_REQ_MAX_CM_RETRIES XR_CM_FIELD(51, 0, 4)
#define XR_CM_REQ_SRQ XR_CM_FIELD(51, 4, 1)
#define XR_CM_REQ_EXTENDED_TRANSPORT XR_CM_FIELD(51, 5, 3)
#define XR_CM_REQ_PRIMARY_LOCAL_LID XR_CM_FIELD(52, 0, 16)
#define XR_CM_REQ_PRIMARY_REMOTE_LID XR_CM_FIELD(54, 0, 16)
#define XR_CM_REQ_PRIMARY_LOCAL_GID_OFF XR_CM_OFF(56)
#define XR_CM_REQ_PRIMARY_REMOTE_GID_OFF XR_CM_OFF(72)
#define XR_CM_REQ_PRIMARY_FLOW_LABEL XR_CM_FIELD(88, 0, 20)
#define XR_CM_REQ_PRIMARY_PACKET_RATE XR_CM_FIELD(91, 2, 6)
#define XR_CM_REQ_PRIMARY_TRAFFIC_CLASS XR_CM_FIELD(92, 0, 8)
#define XR_CM_REQ_PRIMARY_HOP_LIMIT XR_CM_FIELD(93, 0, 8)
#define XR_CM_REQ_PRIMARY_SL XR_CM_FIELD(94, 0, 4)
#define XR_CM_REQ_PRIMARY_SUBNET_LOCAL XR_CM_FIELD(94, 4, 1)
#define XR_CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT XR_CM_FIELD(95, 0, 5)
#define XR_CM_REQ_PRIVATE_DATA_OFF XR_CM_OFF(140)
#define XR_CM_REQ_PRIVATE_DATA_SIZE 92

/* ---- MRA (table 107) ---- */
#define XR_CM_MRA_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_MRA_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_MRA_MESSAGE_MRAED XR_CM_FIELD(8, 0, 2)
#define XR_CM_MRA_SERVICE_TIMEOUT XR_CM_FIELD(9, 0, 5)
#define XR_CM_MRA_PRIVATE_DATA_OFF XR_CM_OFF(10)
#define XR_CM_MRA_PRIVATE_DATA_SIZE 222

/* ---- REJ (table 108) ---- */
#define XR_CM_REJ_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_REJ_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_REJ_MESSAGE_REJECTED XR_CM_FIELD(8, 0, 2)
#define XR_CM_REJ_INFO_LENGTH XR_CM_FIELD(9, 0, 7)
#define XR_CM_REJ_REASON XR_CM_FIELD(10, 0, 16)
#define XR_CM_REJ_ARI_OFF XR_CM_OFF(12)
#define XR_CM_REJ_ARI_SIZE 72
#define XR_CM_REJ_PRIVATE_DATA_OFF XR_CM_OFF(84)
#define XR_CM_REJ_PRIVATE_DATA_SIZE 148

/* ---- REP (table 110) ---- */
#define XR_CM_REP_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_REP_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_REP_LOCAL_QKEY XR_CM_FIELD(8, 0, 32)
#define XR_CM_REP_LOCAL_QPN XR_CM_FIELD(12, 0, 24)
#define XR_CM_REP_LOCAL_EECN XR_CM_FIELD(16, 0, 24)
#define XR_CM_REP_STARTING_PSN XR_CM_FIELD(20, 0, 24)
#define XR_CM_REP_RESPONDER_RESOURCES XR_CM_FIELD(24, 0, 8)
#define XR_CM_REP_INITIATOR_DEPTH XR_CM_FIELD(25, 0, 8)
#define XR_CM_REP_TARGET_ACK_DELAY XR_CM_FIELD(26, 0, 5)
#define XR_CM_REP_FAILOVER_ACCEPTED XR_CM_FIELD(26, 5, 2)
#define XR_CM_REP_END_TO_END_FLOW_CONTROL XR_CM_FIELD(26, 7, 1)
#define XR_CM_REP_RNR_RETRY_COUNT XR_CM_FIELD(27, 0, 3)
#define XR_CM_REP_SRQ XR_CM_FIELD(27, 3, 1)
#define XR_CM_REP_LOCAL_CA_GUID XR_CM_FIELD(28, 0, 64)
#define XR_CM_REP_PRIVATE_DATA_OFF XR_CM_OFF(36)
#define XR_CM_REP_PRIVATE_DATA_SIZE 196

/* ---- RTU, DREQ, DREP (tables 111-113) ---- */
#define XR_CM_RTU_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_RTU_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_RTU_PRIVATE_DATA_OFF XR_CM_OFF(8)
#define XR_CM_RTU_PRIVATE_DATA_SIZE 224

#define XR_CM_DREQ_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_DREQ_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_DREQ_REMOTE_QPN XR_CM_FIELD(8, 0, 24)
#define XR_CM_DREQ_PRIVATE_DATA_OFF XR_CM_OFF(12)
#define XR_CM_DREQ_PRIVATE_DATA_SIZE 220

#define XR_CM_DREP_LOCAL_COMM_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_DREP_REMOTE_COMM_ID XR_CM_FIELD(4, 0, 32)
#define XR_CM_DREP_PRIVATE_DATA_OFF XR_CM_OFF(8)
#define XR_CM_DREP_PRIVATE_DATA_SIZE 224

/* ---- SIDR_REQ, SIDR_REP (tables 119, 120) ---- */
#define XR_CM_SIDR_REQ_REQUEST_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_SIDR_REQ_PKEY XR_CM_FIELD(4, 0, 16)
#define XR_CM_SIDR_REQ_SERVICE_ID XR_CM_FIELD(8, 0, 64)
#define XR_CM_SIDR_REQ_PRIVATE_DATA_OFF XR_CM_OFF(16)
#define XR_CM_SIDR_REQ_PRIVATE_DATA_SIZE 216

#define XR_CM_SIDR_REP_REQUEST_ID XR_CM_FIELD(0, 0, 32)
#define XR_CM_SIDR_REP_STATUS XR_CM_FIELD(4, 0, 8)
#define XR_CM_SIDR_REP_INFO_LENGTH XR_CM_FIELD(5, 0, 8)
#define XR_CM_SIDR_REP_QPN XR_CM_FIELD(8, 0, 24)
#define XR_CM_SIDR_REP_SERVICE_ID XR_CM_FIELD(12, 0, 64)
#define XR_CM_SIDR_REP_QKEY XR_CM_FIELD(20, 0, 32)
#define XR_CM_SIDR_REP_INFO_OFF XR_CM_OFF(24)
#define XR_CM_SIDR_REP_INFO_SIZE 72
#define XR_CM_SIDR_REP_PRIVATE_DATA_OFF XR_CM_OFF(96)
#define XR_CM_SIDR_REP_PRIVATE_DATA_SIZE 136

/* Where a CM message's private data lies: 0 size for an attribute without any. */
struct xr_cm_private_data {
	uint16_t off, size;
};
struct xr_cm_private_data xr_cm_private_data_of(uint16_t attr_id);

#endif /* XROCE_CORE_MAD_H */
