/* SPDX-License-Identifier: MIT */
/*
 * The InfiniBand communication manager (IBTA vol. 1, ch. 12) as Linux's
 * ib_cm speaks it over RoCE: connections set up with REQ, REP and RTU
 * (MRA when a side needs time, REJ when it says no), torn down with DREQ
 * and DREP, then held in time-wait; UD services resolved with SIDR_REQ and
 * SIDR_REP. Sans I/O like the rest of the core: MADs come in through
 * xr_cm_rx (from QP1), go out through xr_gsi_send, and time is a parameter.
 *
 * The API follows the kernel's ib_cm: an xr_cm_id per connection (or
 * listener), created with a handler that the CM calls with each event, from
 * inside the core. A handler may call any xr_cm_ function on any id except
 * destroying the one it was called for: it returns nonzero to have the CM
 * destroy that id when it returns (for a REQ received, the new id; the peer
 * is then rejected).
 *
 * Every message received must fit the connection it names: its
 * communication IDs, its transaction ID where it answers one of ours, the
 * state, and the addresses of the connection's path. Anything else is
 * dropped and counted (xr_engine_stats.cm_*), never acted on.
 */
#ifndef XROCE_CORE_CM_H
#define XROCE_CORE_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "mad.h"
#include "packet.h"
#include "xroce/qp_type.h"

struct xr_core;
struct xr_cm;
struct xr_cm_id;

enum xr_cm_state {
	XR_CM_IDLE,
	XR_CM_LISTEN,
	XR_CM_REQ_SENT,
	XR_CM_REQ_RCVD,
	XR_CM_MRA_REQ_SENT,
	XR_CM_MRA_REQ_RCVD,
	XR_CM_REP_SENT,
	XR_CM_REP_RCVD,
	XR_CM_MRA_REP_SENT,
	XR_CM_MRA_REP_RCVD,
	XR_CM_ESTABLISHED,
	XR_CM_DREQ_SENT,
	XR_CM_DREQ_RCVD,
	XR_CM_TIMEWAIT,
	XR_CM_SIDR_REQ_SENT,
	XR_CM_SIDR_REQ_RCVD,
};

/* In the order of the kernel's enum ib_cm_event_type (without LAP and APR). */
enum xr_cm_event_type {
	XR_CM_REQ_ERROR,	/* no answer to our REQ after every retry */
	XR_CM_REQ_RECEIVED,	/* on a new id; event.listen_id is the listener */
	XR_CM_REP_ERROR,	/* no answer to our REP after every retry */
	XR_CM_REP_RECEIVED,	/* answer with xr_cm_send_rtu (or a REJ) */
	XR_CM_RTU_RECEIVED,	/* established (passive side) */
	XR_CM_USER_ESTABLISHED, /* established by xr_cm_establish (the RTU was lost) */
	XR_CM_DREQ_ERROR,	/* no answer to our DREQ: in time-wait all the same */
	XR_CM_DREQ_RECEIVED,	/* answer with xr_cm_send_drep */
	XR_CM_DREP_RECEIVED,	/* in time-wait */
	XR_CM_TIMEWAIT_EXIT,	/* idle again */
	XR_CM_MRA_RECEIVED,
	XR_CM_REJ_RECEIVED,
	XR_CM_SIDR_REQ_ERROR,
	XR_CM_SIDR_REQ_RECEIVED, /* on a new id; answer with xr_cm_send_sidr_rep */
	XR_CM_SIDR_REP_RECEIVED,
};

const char *xr_cm_event_str(enum xr_cm_event_type type);

/* What a REQ carries, sent or received (xr_cm_send_req, XR_CM_REQ_RECEIVED). */
struct xr_cm_req_param {
	uint64_t service_id;
	uint32_t qpn;
	enum xr_qp_type qp_type; /* RC or UC */
	uint32_t starting_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t remote_cm_response_timeout, local_cm_response_timeout; /* 4.096 us * 2^n */
	uint8_t retry_count, rnr_retry_count;
	uint8_t max_cm_retries;
	uint8_t path_mtu; /* enum xr_mtu */
	uint8_t local_ack_timeout;
	bool srq, flow_control;
	const void *private_data;
	uint8_t private_data_len;
	/* Received only: the peer's CA GUID. */
	uint64_t remote_ca_guid;
};

/* What a REP carries (xr_cm_send_rep, XR_CM_REP_RECEIVED). */
struct xr_cm_rep_param {
	uint32_t qpn;
	uint32_t starting_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t target_ack_delay;
	uint8_t rnr_retry_count;
	bool srq, flow_control;
	const void *private_data;
	uint8_t private_data_len;
};

/* SIDR: a UD service's QPN and Q_Key for its service ID. */
struct xr_cm_sidr_req_param {
	uint64_t service_id;
	uint8_t timeout; /* 4.096 us * 2^n per try */
	uint8_t max_cm_retries;
	const void *private_data;
	uint8_t private_data_len;
};

struct xr_cm_sidr_rep_param {
	uint8_t status; /* enum xr_cm_sidr_status */
	uint32_t qpn, qkey;
	const void *private_data;
	uint8_t private_data_len;
};

struct xr_cm_event {
	enum xr_cm_event_type type;
	struct xr_cm_id *listen_id; /* REQ and SIDR_REQ received: the listener */
	union {
		struct xr_cm_req_param req;
		struct xr_cm_rep_param rep;
		struct {
			uint16_t reason; /* enum xr_cm_rej_reason */
			uint8_t ari_length;
			const uint8_t *ari;
		} rej;
		struct {
			uint8_t service_timeout;
		} mra;
		struct xr_cm_sidr_rep_param sidr_rep;
	} param;
	/* The message's private data, valid during the call only (NULL: none). */
	const void *private_data;
	uint8_t private_data_len;
};

/* Returns nonzero to have the CM destroy id (see above). */
typedef int (*xr_cm_handler)(struct xr_cm_id *id, const struct xr_cm_event *event);

struct xr_cm_id {
	void *context; /* the consumer's */
	enum xr_cm_state state;
	uint32_t local_id, remote_id; /* communication IDs (SIDR: the request ID) */
	uint64_t service_id;
	uint32_t local_qpn, remote_qpn;
	/* The path MADs of this id travel: to the peer, from our address. */
	struct xr_path path;
	uint64_t remote_ca_guid;
};

/* ---- for the core (gsi.c, core.c) ---- */
struct xr_cm *xr_cm_create(struct xr_core *core);
void xr_cm_free(struct xr_cm *cm);
/* A MAD of the CM's class from QP1. False: not the CM's to take (unserved). */
bool xr_cm_rx(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *mad, uint64_t now);
/* Retries and time-waits due by now; returns the next deadline (0: none). */
uint64_t xr_cm_timers(struct xr_cm *cm, uint64_t now);
/* Ids alive, counting those in time-wait whose consumer has gone. */
uint32_t xr_cm_ids(const struct xr_cm *cm);
/*
 * The process is ending without destroying its ids: each peer is told what
 * destroying its id would tell it (REJ, DREQ, DREP), as the kernel does when
 * a process's rdma_cm file closes. The ids stay, unanswered from now on.
 */
void xr_cm_farewell(struct xr_cm *cm, uint64_t now);

/* ---- for the consumer (the RDMA CM) ---- */
int xr_cm_create_id(struct xr_core *core, xr_cm_handler handler, void *context,
		    struct xr_cm_id **id);
/*
 * Ends the id as ib_cm's destroy does: a connection being set up is
 * rejected, an established one disconnected (DREQ, then time-wait), and
 * the id lives on without a handler until its time-wait ends.
 */
void xr_cm_destroy_id(struct xr_cm_id *id, uint64_t now);
/* REQs (and SIDR_REQs) for service_id come to id. -EBUSY: someone listens there. */
int xr_cm_listen(struct xr_cm_id *id, uint64_t service_id);
/* path: to the peer (path->sgid ours), MAC resolved. */
int xr_cm_send_req(struct xr_cm_id *id, const struct xr_path *path,
		   const struct xr_cm_req_param *param, uint64_t now);
int xr_cm_send_rep(struct xr_cm_id *id, const struct xr_cm_rep_param *param, uint64_t now);
int xr_cm_send_rtu(struct xr_cm_id *id, const void *private_data, uint8_t len);
int xr_cm_send_rej(struct xr_cm_id *id, uint16_t reason, const void *ari, uint8_t ari_len,
		   const void *private_data, uint8_t len, uint64_t now);
int xr_cm_send_mra(struct xr_cm_id *id, uint8_t service_timeout, const void *private_data,
		   uint8_t len);
int xr_cm_send_dreq(struct xr_cm_id *id, const void *private_data, uint8_t len, uint64_t now);
int xr_cm_send_drep(struct xr_cm_id *id, const void *private_data, uint8_t len, uint64_t now);
/* The first packet arrived on the QP before the RTU did (verbs' COMM_EST). */
int xr_cm_establish(struct xr_cm_id *id, uint64_t now);
int xr_cm_send_sidr_req(struct xr_cm_id *id, const struct xr_path *path,
			const struct xr_cm_sidr_req_param *param, uint64_t now);
int xr_cm_send_sidr_rep(struct xr_cm_id *id, const struct xr_cm_sidr_rep_param *param);

/* The CA GUID a device of this MAC has (EUI-64, as rxe's node GUID). */
uint64_t xr_cm_ca_guid(const uint8_t mac[6]);
/* 4.096 us * 2^exp, in ns (exp above 31 as 31). */
uint64_t xr_cm_timeout_ns(uint8_t exp);

#endif /* XROCE_CORE_CM_H */
