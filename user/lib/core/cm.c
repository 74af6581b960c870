/* SPDX-License-Identifier: MIT */
/*
 * The communication manager's state machine (cm.h). Each id keeps the one
 * request it awaits an answer to (REQ, REP, DREQ, SIDR_REQ) and sends it
 * again until the answer, an MRA or the last retry; and the last answer it
 * gave (MRA, RTU, DREP), for a peer that sends its message again because
 * ours was lost. Ids live in a table whose slot is the low bits of their
 * communication ID; the high bits are random, so that a third host cannot
 * guess one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "core.h"

#define CM_SLOT_BITS 12
#define CM_MAX_IDS (1u << CM_SLOT_BITS)
/* cma.c's packet lifetime for RoCE paths (4.096 us * 2^18, about 1.07 s). */
#define CM_PACKET_LIFETIME 18
/* ib_cm's time-wait for such a path: its ACK timeout, about 2.1 s. */
#define CM_TIMEWAIT_EXP (CM_PACKET_LIFETIME + 1)
/* A request that found no transmit buffer goes out again this much later. */
#define CM_NO_BUFFER_RETRY_NS 1000000ull

struct cm_id_priv {
	struct xr_cm_id pub;
	struct xr_cm *cm;
	xr_cm_handler handler; /* NULL once its consumer destroyed it */
	uint32_t live_index;   /* in cm->live */
	uint64_t tid;	       /* of the exchange in progress */
	/* the request awaiting an answer */
	uint8_t msg[XR_MAD_SIZE];
	bool msg_pending;
	uint8_t retries_left;
	uint64_t msg_timeout_ns; /* per try */
	uint64_t deadline;	 /* the next try, or the end of time-wait; 0: none */
	/* the last answer sent (MRA, RTU, DREP), for duplicates */
	uint8_t reply[XR_MAD_SIZE];
	bool reply_valid;
	/* from the REQ */
	uint8_t max_cm_retries;
	uint8_t remote_cm_response_timeout, local_cm_response_timeout;
};

struct xr_cm {
	struct xr_core *core;
	struct cm_id_priv *slots[CM_MAX_IDS]; /* by local ID's low bits */
	struct cm_id_priv *live[CM_MAX_IDS];  /* the same ids, dense, for scans */
	uint32_t nlive;
	uint32_t next_slot;
	uint32_t tid_hi;   /* the high half of every TID this CM makes */
	uint64_t deadline; /* the earliest of the ids' (or earlier): 0 none */
};

static struct cm_id_priv *priv_of(struct xr_cm_id *id)
{
	return (struct cm_id_priv *)((char *)id - offsetof(struct cm_id_priv, pub));
}

uint64_t xr_cm_timeout_ns(uint8_t exp)
{
	return 4096ull << (exp > 31 ? 31 : exp);
}

uint64_t xr_cm_ca_guid(const uint8_t mac[6])
{
	/* EUI-64 from the MAC: the universal/local bit flipped, ff:fe in the middle. */
	return (uint64_t)(mac[0] ^ 2) << 56 | (uint64_t)mac[1] << 48 | (uint64_t)mac[2] << 40 |
	       0xfffeull << 24 | (uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5];
}

const char *xr_cm_event_str(enum xr_cm_event_type type)
{
	static const char *const names[] = {
	    "REQ error",      "REQ received",	   "REP error",		"REP received",
	    "RTU received",   "established",	   "DREQ error",	"DREQ received",
	    "DREP received",  "time-wait exit",	   "MRA received",	"REJ received",
	    "SIDR_REQ error", "SIDR_REQ received", "SIDR_REP received",
	};

	return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

struct xr_cm *xr_cm_create(struct xr_core *core)
{
	struct xr_cm *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return NULL;
	cm->core = core;
	cm->tid_hi = (uint32_t)xr_core_random(core);
	cm->next_slot = (uint32_t)xr_core_random(core) % CM_MAX_IDS;
	return cm;
}

void xr_cm_free(struct xr_cm *cm)
{
	if (!cm)
		return;
	for (uint32_t i = 0; i < cm->nlive; i++)
		free(cm->live[i]);
	free(cm);
}

uint32_t xr_cm_ids(const struct xr_cm *cm)
{
	return cm ? cm->nlive : 0;
}

/* ---- ids ------------------------------------------------------------------ */

static struct cm_id_priv *id_alloc(struct xr_cm *cm)
{
	struct cm_id_priv *p;
	uint32_t slot = cm->next_slot;

	if (cm->nlive == CM_MAX_IDS)
		return NULL;
	while (cm->slots[slot])
		slot = (slot + 1) % CM_MAX_IDS;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cm = cm;
	/* Never 0: a REJ of a REQ names no local ID with 0. */
	do
		p->pub.local_id = (uint32_t)(xr_core_random(cm->core) << CM_SLOT_BITS) | slot;
	while (p->pub.local_id == slot);
	p->tid = (uint64_t)cm->tid_hi << 32 | p->pub.local_id;
	cm->slots[slot] = p;
	p->live_index = cm->nlive;
	cm->live[cm->nlive++] = p;
	cm->next_slot = (slot + 1) % CM_MAX_IDS;
	return p;
}

static void id_free(struct cm_id_priv *p)
{
	struct xr_cm *cm = p->cm;
	struct cm_id_priv *last = cm->live[--cm->nlive];

	cm->live[p->live_index] = last;
	last->live_index = p->live_index;
	cm->slots[p->pub.local_id % CM_MAX_IDS] = NULL;
	free(p);
}

static struct cm_id_priv *id_by_local(struct xr_cm *cm, uint32_t local_id)
{
	struct cm_id_priv *p = cm->slots[local_id % CM_MAX_IDS];

	return p && p->pub.local_id == local_id ? p : NULL;
}

static void set_deadline(struct cm_id_priv *p, uint64_t at)
{
	p->deadline = at;
	if (at && (!p->cm->deadline || at < p->cm->deadline))
		p->cm->deadline = at;
}

/* The frame came from the id's peer, to our address of the id's path. */
static bool from_peer(struct cm_id_priv *p, const struct xr_pkt *pkt)
{
	if (!memcmp(&pkt->sgid, &p->pub.path.dgid, sizeof(pkt->sgid)) &&
	    !memcmp(&pkt->dgid, &p->pub.path.sgid, sizeof(pkt->dgid)))
		return true;
	p->cm->core->stats.cm_forged++;
	return false;
}

static bool unmatched(struct xr_cm *cm)
{
	cm->core->stats.cm_unmatched++;
	return true;
}

/* Calls the consumer; destroys the id afterwards if it asks. */
static void deliver(struct cm_id_priv *p, const struct xr_cm_event *ev, uint64_t now)
{
	int destroy;

	if (!p->handler)
		return;
	destroy = p->handler(&p->pub, ev);
	if (destroy)
		xr_cm_destroy_id(&p->pub, now);
}

/* ---- building and sending ------------------------------------------------- */

static void mad_begin(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	memset(mad, 0, XR_MAD_SIZE);
	xr_mad_set(mad, XR_MAD_BASE_VERSION, XR_MGMT_BASE_VERSION);
	xr_mad_set(mad, XR_MAD_MGMT_CLASS, XR_MGMT_CLASS_CM);
	xr_mad_set(mad, XR_MAD_CLASS_VERSION, XR_CM_CLASS_VERSION);
	xr_mad_set(mad, XR_MAD_METHOD, XR_MAD_METHOD_SEND);
	xr_mad_set(mad, XR_MAD_TID, tid);
	xr_mad_set(mad, XR_MAD_ATTR_ID, attr);
}

static bool private_fits(uint16_t attr, uint8_t len)
{
	return len <= xr_cm_private_data_of(attr).size;
}

static void put_private(uint8_t *mad, uint16_t attr, const void *data, uint8_t len)
{
	if (len)
		memcpy(mad + xr_cm_private_data_of(attr).off, data, len);
}

static bool transmit(struct cm_id_priv *p, const uint8_t *mad)
{
	return xr_gsi_send(p->cm->core, &p->pub.path, mad);
}

/* Sends the request in p->msg, and again every timeout until answered, retries times. */
static void send_request(struct cm_id_priv *p, uint64_t timeout_ns, uint8_t retries, uint64_t now)
{
	p->msg_pending = true;
	p->retries_left = retries;
	p->msg_timeout_ns = timeout_ns;
	set_deadline(p, transmit(p, p->msg) ? now + timeout_ns : now + CM_NO_BUFFER_RETRY_NS);
}

static void cancel_request(struct cm_id_priv *p)
{
	p->msg_pending = false;
	p->deadline = 0;
}

/* An answer (MRA, RTU, DREP) kept for the peer's duplicates. */
static void send_reply(struct cm_id_priv *p, const uint8_t *mad)
{
	memcpy(p->reply, mad, XR_MAD_SIZE);
	p->reply_valid = true;
	transmit(p, mad);
}

static void enter_timewait(struct cm_id_priv *p, uint64_t now)
{
	cancel_request(p);
	p->pub.state = XR_CM_TIMEWAIT;
	set_deadline(p, now + xr_cm_timeout_ns(CM_TIMEWAIT_EXP));
}

static void reset_to_idle(struct cm_id_priv *p)
{
	cancel_request(p);
	p->reply_valid = false;
	p->pub.state = XR_CM_IDLE;
}

/* A REJ without an id of ours (to a REQ nobody takes, or stale): to the sender. */
static void reject_unknown(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *msg,
			   uint32_t remote_id, uint8_t answers, uint16_t reason)
{
	uint8_t rej[XR_MAD_SIZE];

	mad_begin(rej, XR_CM_ATTR_REJ, xr_mad_get(msg, XR_MAD_TID));
	xr_mad_set(rej, XR_CM_REJ_REMOTE_COMM_ID, remote_id);
	xr_mad_set(rej, XR_CM_REJ_MESSAGE_REJECTED, answers);
	xr_mad_set(rej, XR_CM_REJ_REASON, reason);
	xr_gsi_answer(cm->core, pkt, rej);
}

/*
 * A new id for a request (REQ, SIDR_REQ) that listener takes: the
 * listener's consumer, the request's transaction, the path back to its
 * sender. NULL when no id is free.
 */
static struct cm_id_priv *id_for_request(struct xr_cm *cm, const struct cm_id_priv *listener,
					 const struct xr_pkt *pkt, const uint8_t *m,
					 enum xr_cm_state state, uint32_t remote_id)
{
	struct cm_id_priv *p = id_alloc(cm);

	if (!p)
		return NULL;
	p->handler = listener->handler;
	p->pub.context = listener->pub.context;
	p->pub.state = state;
	p->pub.remote_id = remote_id;
	p->pub.service_id = listener->pub.service_id;
	p->tid = xr_mad_get(m, XR_MAD_TID);
	xr_gsi_path_to_sender(cm->core, pkt, &p->pub.path);
	return p;
}

/* ---- the consumer's calls -------------------------------------------------- */

int xr_cm_create_id(struct xr_core *core, xr_cm_handler handler, void *context,
		    struct xr_cm_id **id)
{
	struct cm_id_priv *p;

	if (!handler || !id)
		return -EINVAL;
	if (!core->cm) {
		core->cm = xr_cm_create(core);
		if (!core->cm)
			return -ENOMEM;
	}
	p = id_alloc(core->cm);
	if (!p)
		return -ENOMEM;
	p->handler = handler;
	p->pub.context = context;
	*id = &p->pub;
	return 0;
}

int xr_cm_listen(struct xr_cm_id *id, uint64_t service_id)
{
	struct cm_id_priv *p = priv_of(id);
	struct xr_cm *cm = p->cm;

	if (id->state != XR_CM_IDLE)
		return -EINVAL;
	for (uint32_t i = 0; i < cm->nlive; i++)
		if (cm->live[i]->pub.state == XR_CM_LISTEN &&
		    cm->live[i]->pub.service_id == service_id)
			return -EBUSY;
	id->service_id = service_id;
	id->state = XR_CM_LISTEN;
	cm->core->stats.cm_listens++;
	return 0;
}

int xr_cm_send_req(struct xr_cm_id *id, const struct xr_path *path,
		   const struct xr_cm_req_param *rp, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t *m = p->msg;

	if (id->state != XR_CM_IDLE || (rp->qp_type != XR_QPT_RC && rp->qp_type != XR_QPT_UC) ||
	    !private_fits(XR_CM_ATTR_REQ, rp->private_data_len) || rp->max_cm_retries > 15 ||
	    rp->retry_count > 7 || rp->rnr_retry_count > 7)
		return -EINVAL;
	id->path = *path;
	id->service_id = rp->service_id;
	id->local_qpn = rp->qpn & XR_QPN_MASK;
	p->max_cm_retries = rp->max_cm_retries;
	p->remote_cm_response_timeout = rp->remote_cm_response_timeout;
	p->local_cm_response_timeout = rp->local_cm_response_timeout;

	mad_begin(m, XR_CM_ATTR_REQ, p->tid);
	xr_mad_set(m, XR_CM_REQ_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_REQ_SERVICE_ID, rp->service_id);
	xr_mad_set(m, XR_CM_REQ_LOCAL_CA_GUID, xr_cm_ca_guid(p->cm->core->mac));
	xr_mad_set(m, XR_CM_REQ_LOCAL_QPN, id->local_qpn);
	xr_mad_set(m, XR_CM_REQ_RESPONDER_RESOURCES, rp->responder_resources);
	xr_mad_set(m, XR_CM_REQ_INITIATOR_DEPTH, rp->initiator_depth);
	xr_mad_set(m, XR_CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT, rp->remote_cm_response_timeout);
	xr_mad_set(m, XR_CM_REQ_TRANSPORT_SERVICE_TYPE, rp->qp_type == XR_QPT_UC);
	xr_mad_set(m, XR_CM_REQ_END_TO_END_FLOW_CONTROL, rp->flow_control);
	xr_mad_set(m, XR_CM_REQ_STARTING_PSN, rp->starting_psn);
	xr_mad_set(m, XR_CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT, rp->local_cm_response_timeout);
	xr_mad_set(m, XR_CM_REQ_RETRY_COUNT, rp->retry_count);
	xr_mad_set(m, XR_CM_REQ_PKEY, XR_DEFAULT_PKEY);
	xr_mad_set(m, XR_CM_REQ_PATH_MTU, rp->path_mtu);
	xr_mad_set(m, XR_CM_REQ_RNR_RETRY_COUNT, rp->rnr_retry_count);
	xr_mad_set(m, XR_CM_REQ_MAX_CM_RETRIES, rp->max_cm_retries);
	xr_mad_set(m, XR_CM_REQ_SRQ, rp->srq);
	/* RoCE has no LIDs: the permissive LID, as ib_cm writes it. */
	xr_mad_set(m, XR_CM_REQ_PRIMARY_LOCAL_LID, 0xffff);
	xr_mad_set(m, XR_CM_REQ_PRIMARY_REMOTE_LID, 0xffff);
	memcpy(m + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, path->sgid.raw, 16);
	memcpy(m + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, path->dgid.raw, 16);
	xr_mad_set(m, XR_CM_REQ_PRIMARY_FLOW_LABEL, path->flow_label);
	xr_mad_set(m, XR_CM_REQ_PRIMARY_TRAFFIC_CLASS, path->traffic_class);
	xr_mad_set(m, XR_CM_REQ_PRIMARY_HOP_LIMIT, path->hop_limit ? path->hop_limit : 64);
	xr_mad_set(m, XR_CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT, rp->local_ack_timeout);
	put_private(m, XR_CM_ATTR_REQ, rp->private_data, rp->private_data_len);
	id->state = XR_CM_REQ_SENT;
	send_request(p,
		     xr_cm_timeout_ns(rp->remote_cm_response_timeout) +
			 2 * xr_cm_timeout_ns(CM_PACKET_LIFETIME),
		     rp->max_cm_retries, now);
	return 0;
}

int xr_cm_send_rep(struct xr_cm_id *id, const struct xr_cm_rep_param *rp, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t *m = p->msg;

	if ((id->state != XR_CM_REQ_RCVD && id->state != XR_CM_MRA_REQ_SENT) ||
	    !private_fits(XR_CM_ATTR_REP, rp->private_data_len) || rp->rnr_retry_count > 7)
		return -EINVAL;
	id->local_qpn = rp->qpn & XR_QPN_MASK;
	mad_begin(m, XR_CM_ATTR_REP, p->tid);
	xr_mad_set(m, XR_CM_REP_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_REP_REMOTE_COMM_ID, id->remote_id);
	xr_mad_set(m, XR_CM_REP_LOCAL_QPN, id->local_qpn);
	xr_mad_set(m, XR_CM_REP_STARTING_PSN, rp->starting_psn);
	xr_mad_set(m, XR_CM_REP_RESPONDER_RESOURCES, rp->responder_resources);
	xr_mad_set(m, XR_CM_REP_INITIATOR_DEPTH, rp->initiator_depth);
	xr_mad_set(m, XR_CM_REP_TARGET_ACK_DELAY, rp->target_ack_delay);
	xr_mad_set(m, XR_CM_REP_END_TO_END_FLOW_CONTROL, rp->flow_control);
	xr_mad_set(m, XR_CM_REP_RNR_RETRY_COUNT, rp->rnr_retry_count);
	xr_mad_set(m, XR_CM_REP_SRQ, rp->srq);
	xr_mad_set(m, XR_CM_REP_LOCAL_CA_GUID, xr_cm_ca_guid(p->cm->core->mac));
	put_private(m, XR_CM_ATTR_REP, rp->private_data, rp->private_data_len);
	p->reply_valid = false;
	id->state = XR_CM_REP_SENT;
	send_request(p,
		     xr_cm_timeout_ns(p->local_cm_response_timeout) +
			 2 * xr_cm_timeout_ns(CM_PACKET_LIFETIME),
		     p->max_cm_retries, now);
	return 0;
}

int xr_cm_send_rtu(struct xr_cm_id *id, const void *private_data, uint8_t len)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t m[XR_MAD_SIZE];

	if ((id->state != XR_CM_REP_RCVD && id->state != XR_CM_MRA_REP_SENT) ||
	    !private_fits(XR_CM_ATTR_RTU, len))
		return -EINVAL;
	mad_begin(m, XR_CM_ATTR_RTU, p->tid);
	xr_mad_set(m, XR_CM_RTU_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_RTU_REMOTE_COMM_ID, id->remote_id);
	put_private(m, XR_CM_ATTR_RTU, private_data, len);
	id->state = XR_CM_ESTABLISHED;
	send_reply(p, m);
	return 0;
}

static bool rej_answers(enum xr_cm_state st, uint8_t *answers, bool *local_id)
{
	*local_id = true;
	switch (st) {
	case XR_CM_REQ_RCVD:
		*local_id = false;
		/* fall through */
	case XR_CM_MRA_REQ_SENT:
		*answers = XR_CM_ANSWERS_REQ;
		return true;
	case XR_CM_REP_RCVD:
	case XR_CM_MRA_REP_SENT:
		*answers = XR_CM_ANSWERS_REP;
		return true;
	case XR_CM_REQ_SENT:
	case XR_CM_MRA_REQ_RCVD:
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
		*answers = XR_CM_ANSWERS_OTHER;
		return true;
	default:
		return false;
	}
}

int xr_cm_send_rej(struct xr_cm_id *id, uint16_t reason, const void *ari, uint8_t ari_len,
		   const void *private_data, uint8_t len, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t m[XR_MAD_SIZE], answers;
	bool local_id;

	if (!rej_answers(id->state, &answers, &local_id) || ari_len > XR_CM_REJ_ARI_SIZE ||
	    (ari_len && !ari) || !private_fits(XR_CM_ATTR_REJ, len))
		return -EINVAL;
	mad_begin(m, XR_CM_ATTR_REJ, p->tid);
	xr_mad_set(m, XR_CM_REJ_LOCAL_COMM_ID, local_id ? id->local_id : 0);
	xr_mad_set(m, XR_CM_REJ_REMOTE_COMM_ID, id->remote_id);
	xr_mad_set(m, XR_CM_REJ_MESSAGE_REJECTED, answers);
	xr_mad_set(m, XR_CM_REJ_INFO_LENGTH, ari_len);
	xr_mad_set(m, XR_CM_REJ_REASON, reason);
	if (ari_len)
		memcpy(m + XR_CM_REJ_ARI_OFF, ari, ari_len);
	put_private(m, XR_CM_ATTR_REJ, private_data, len);
	transmit(p, m);
	/* Once a REP told a QPN, the connection waits out its time. */
	switch (id->state) {
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
	case XR_CM_REP_RCVD:
	case XR_CM_MRA_REP_SENT:
		enter_timewait(p, now);
		break;
	default:
		reset_to_idle(p);
	}
	return 0;
}

int xr_cm_send_mra(struct xr_cm_id *id, uint8_t service_timeout, const void *private_data,
		   uint8_t len)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t m[XR_MAD_SIZE], answers;

	if (id->state == XR_CM_REQ_RCVD)
		answers = XR_CM_ANSWERS_REQ;
	else if (id->state == XR_CM_REP_RCVD)
		answers = XR_CM_ANSWERS_REP;
	else
		return -EINVAL;
	if (service_timeout > 31 || !private_fits(XR_CM_ATTR_MRA, len))
		return -EINVAL;
	mad_begin(m, XR_CM_ATTR_MRA, p->tid);
	xr_mad_set(m, XR_CM_MRA_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_MRA_REMOTE_COMM_ID, id->remote_id);
	xr_mad_set(m, XR_CM_MRA_MESSAGE_MRAED, answers);
	xr_mad_set(m, XR_CM_MRA_SERVICE_TIMEOUT, service_timeout);
	put_private(m, XR_CM_ATTR_MRA, private_data, len);
	id->state = answers == XR_CM_ANSWERS_REQ ? XR_CM_MRA_REQ_SENT : XR_CM_MRA_REP_SENT;
	send_reply(p, m);
	return 0;
}

int xr_cm_send_dreq(struct xr_cm_id *id, const void *private_data, uint8_t len, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t *m = p->msg;

	if (id->state != XR_CM_ESTABLISHED || !private_fits(XR_CM_ATTR_DREQ, len))
		return -EINVAL;
	/* Our own exchange now: the TID is this side's. */
	p->tid = (uint64_t)p->cm->tid_hi << 32 | id->local_id;
	mad_begin(m, XR_CM_ATTR_DREQ, p->tid);
	xr_mad_set(m, XR_CM_DREQ_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_DREQ_REMOTE_COMM_ID, id->remote_id);
	xr_mad_set(m, XR_CM_DREQ_REMOTE_QPN, id->remote_qpn);
	put_private(m, XR_CM_ATTR_DREQ, private_data, len);
	id->state = XR_CM_DREQ_SENT;
	send_request(p,
		     xr_cm_timeout_ns(p->remote_cm_response_timeout) +
			 2 * xr_cm_timeout_ns(CM_PACKET_LIFETIME),
		     p->max_cm_retries, now);
	return 0;
}

int xr_cm_send_drep(struct xr_cm_id *id, const void *private_data, uint8_t len, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t m[XR_MAD_SIZE];

	if (id->state != XR_CM_DREQ_RCVD || !private_fits(XR_CM_ATTR_DREP, len))
		return -EINVAL;
	mad_begin(m, XR_CM_ATTR_DREP, p->tid);
	xr_mad_set(m, XR_CM_DREP_LOCAL_COMM_ID, id->local_id);
	xr_mad_set(m, XR_CM_DREP_REMOTE_COMM_ID, id->remote_id);
	put_private(m, XR_CM_ATTR_DREP, private_data, len);
	send_reply(p, m);
	enter_timewait(p, now);
	return 0;
}

int xr_cm_establish(struct xr_cm_id *id, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	struct xr_cm_event ev = {.type = XR_CM_USER_ESTABLISHED};

	if (id->state != XR_CM_REP_SENT && id->state != XR_CM_MRA_REP_RCVD)
		return id->state == XR_CM_ESTABLISHED ? 0 : -EINVAL;
	cancel_request(p);
	id->state = XR_CM_ESTABLISHED;
	deliver(p, &ev, now);
	return 0;
}

int xr_cm_send_sidr_req(struct xr_cm_id *id, const struct xr_path *path,
			const struct xr_cm_sidr_req_param *sp, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t *m = p->msg;

	if (id->state != XR_CM_IDLE || !private_fits(XR_CM_ATTR_SIDR_REQ, sp->private_data_len) ||
	    sp->max_cm_retries > 15)
		return -EINVAL;
	id->path = *path;
	id->service_id = sp->service_id;
	mad_begin(m, XR_CM_ATTR_SIDR_REQ, p->tid);
	xr_mad_set(m, XR_CM_SIDR_REQ_REQUEST_ID, id->local_id);
	xr_mad_set(m, XR_CM_SIDR_REQ_PKEY, XR_DEFAULT_PKEY);
	xr_mad_set(m, XR_CM_SIDR_REQ_SERVICE_ID, sp->service_id);
	put_private(m, XR_CM_ATTR_SIDR_REQ, sp->private_data, sp->private_data_len);
	id->state = XR_CM_SIDR_REQ_SENT;
	send_request(p, xr_cm_timeout_ns(sp->timeout), sp->max_cm_retries, now);
	return 0;
}

int xr_cm_send_sidr_rep(struct xr_cm_id *id, const struct xr_cm_sidr_rep_param *sp)
{
	struct cm_id_priv *p = priv_of(id);
	uint8_t m[XR_MAD_SIZE];

	if (id->state != XR_CM_SIDR_REQ_RCVD ||
	    !private_fits(XR_CM_ATTR_SIDR_REP, sp->private_data_len))
		return -EINVAL;
	mad_begin(m, XR_CM_ATTR_SIDR_REP, p->tid);
	xr_mad_set(m, XR_CM_SIDR_REP_REQUEST_ID, id->remote_id);
	xr_mad_set(m, XR_CM_SIDR_REP_STATUS, sp->status);
	xr_mad_set(m, XR_CM_SIDR_REP_QPN, sp->qpn & XR_QPN_MASK);
	xr_mad_set(m, XR_CM_SIDR_REP_SERVICE_ID, id->service_id);
	xr_mad_set(m, XR_CM_SIDR_REP_QKEY, sp->qkey);
	put_private(m, XR_CM_ATTR_SIDR_REP, sp->private_data, sp->private_data_len);
	transmit(p, m);
	id->state = XR_CM_IDLE;
	return 0;
}

/* What the peer is told when its connection's id goes: what ib_cm's destroy sends. */
static void say_goodbye(struct cm_id_priv *p, uint64_t now)
{
	struct xr_cm_id *id = &p->pub;
	uint8_t ari[8];

	switch (id->state) {
	case XR_CM_REQ_SENT:
	case XR_CM_MRA_REQ_RCVD:
		/* As ib_cm: a timeout, naming our CA GUID for the peer to find the id by. */
		for (int i = 0; i < 8; i++)
			ari[i] = (uint8_t)(xr_cm_ca_guid(p->cm->core->mac) >> (56 - 8 * i));
		xr_cm_send_rej(id, XR_CM_REJ_TIMEOUT, ari, sizeof(ari), NULL, 0, now);
		break;
	case XR_CM_REQ_RCVD:
	case XR_CM_MRA_REQ_SENT:
	case XR_CM_REP_RCVD:
	case XR_CM_MRA_REP_SENT:
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
		xr_cm_send_rej(id, XR_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, now);
		break;
	case XR_CM_ESTABLISHED:
		xr_cm_send_dreq(id, NULL, 0, now);
		break;
	case XR_CM_DREQ_RCVD:
		xr_cm_send_drep(id, NULL, 0, now);
		break;
	case XR_CM_SIDR_REQ_RCVD: {
		struct xr_cm_sidr_rep_param rej = {.status = XR_CM_SIDR_REJECT};

		xr_cm_send_sidr_rep(id, &rej);
		break;
	}
	default:
		break;
	}
}

void xr_cm_destroy_id(struct xr_cm_id *id, uint64_t now)
{
	struct cm_id_priv *p = priv_of(id);

	p->handler = NULL;
	say_goodbye(p, now);
	/* Until its time-wait ends (or its DREQ is answered), the id lives on, unseen. */
	if (id->state != XR_CM_TIMEWAIT && id->state != XR_CM_DREQ_SENT)
		id_free(p);
}

void xr_cm_farewell(struct xr_cm *cm, uint64_t now)
{
	if (!cm)
		return;
	/* States change, ids stay: the scan sees each once. */
	for (uint32_t i = 0; i < cm->nlive; i++) {
		cm->live[i]->handler = NULL;
		say_goodbye(cm->live[i], now);
	}
}

/* ---- timers ----------------------------------------------------------------- */

static void request_timed_out(struct cm_id_priv *p, uint64_t now)
{
	struct xr_cm_event ev = {0};

	p->cm->core->stats.cm_timeouts++;
	switch (p->pub.state) {
	case XR_CM_REQ_SENT:
	case XR_CM_MRA_REQ_RCVD:
		ev.type = XR_CM_REQ_ERROR;
		reset_to_idle(p);
		break;
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
		ev.type = XR_CM_REP_ERROR;
		reset_to_idle(p);
		break;
	case XR_CM_DREQ_SENT:
		ev.type = XR_CM_DREQ_ERROR;
		enter_timewait(p, now);
		break;
	case XR_CM_SIDR_REQ_SENT:
		ev.type = XR_CM_SIDR_REQ_ERROR;
		reset_to_idle(p);
		break;
	default:
		cancel_request(p);
		return;
	}
	deliver(p, &ev, now);
}

/* One id whose deadline has come: its time-wait ends, or its request goes again or gives up. */
static void fire(struct cm_id_priv *p, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_TIMEWAIT_EXIT};

	p->deadline = 0;
	if (p->pub.state == XR_CM_TIMEWAIT) {
		p->pub.state = XR_CM_IDLE;
		p->reply_valid = false;
		if (!p->handler)
			id_free(p);
		else
			deliver(p, &ev, now);
		return;
	}
	if (!p->msg_pending)
		return;
	if (!p->retries_left) {
		request_timed_out(p, now);
		return;
	}
	if (transmit(p, p->msg)) {
		p->retries_left--;
		p->cm->core->stats.cm_retries++;
		set_deadline(p, now + p->msg_timeout_ns);
	} else {
		set_deadline(p, now + CM_NO_BUFFER_RETRY_NS);
	}
}

uint64_t xr_cm_timers(struct xr_cm *cm, uint64_t now)
{
	uint64_t next;

	if (!cm || !cm->deadline || now < cm->deadline)
		return cm ? cm->deadline : 0;
	/*
	 * One due id at a time, the scan begun again after each: a consumer
	 * called from fire() may create and destroy ids. Each id fired moves
	 * its deadline on, so this ends.
	 */
	for (uint32_t guard = 0; guard <= CM_MAX_IDS; guard++) {
		struct cm_id_priv *due = NULL;

		for (uint32_t i = 0; i < cm->nlive && !due; i++)
			if (cm->live[i]->deadline && cm->live[i]->deadline <= now)
				due = cm->live[i];
		if (!due)
			break;
		fire(due, now);
	}
	next = 0;
	for (uint32_t i = 0; i < cm->nlive; i++)
		if (cm->live[i]->deadline && (!next || cm->live[i]->deadline < next))
			next = cm->live[i]->deadline;
	cm->deadline = next;
	return next;
}

/* ---- messages received ------------------------------------------------------ */

static void read_req(const uint8_t *m, struct xr_cm_req_param *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->service_id = xr_mad_get(m, XR_CM_REQ_SERVICE_ID);
	rp->remote_ca_guid = xr_mad_get(m, XR_CM_REQ_LOCAL_CA_GUID);
	rp->qpn = (uint32_t)xr_mad_get(m, XR_CM_REQ_LOCAL_QPN);
	rp->qp_type = xr_mad_get(m, XR_CM_REQ_TRANSPORT_SERVICE_TYPE) ? XR_QPT_UC : XR_QPT_RC;
	rp->starting_psn = (uint32_t)xr_mad_get(m, XR_CM_REQ_STARTING_PSN);
	rp->responder_resources = (uint8_t)xr_mad_get(m, XR_CM_REQ_RESPONDER_RESOURCES);
	rp->initiator_depth = (uint8_t)xr_mad_get(m, XR_CM_REQ_INITIATOR_DEPTH);
	rp->remote_cm_response_timeout =
	    (uint8_t)xr_mad_get(m, XR_CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT);
	rp->local_cm_response_timeout = (uint8_t)xr_mad_get(m, XR_CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT);
	rp->retry_count = (uint8_t)xr_mad_get(m, XR_CM_REQ_RETRY_COUNT);
	rp->rnr_retry_count = (uint8_t)xr_mad_get(m, XR_CM_REQ_RNR_RETRY_COUNT);
	rp->max_cm_retries = (uint8_t)xr_mad_get(m, XR_CM_REQ_MAX_CM_RETRIES);
	rp->path_mtu = (uint8_t)xr_mad_get(m, XR_CM_REQ_PATH_MTU);
	rp->local_ack_timeout = (uint8_t)xr_mad_get(m, XR_CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT);
	rp->srq = xr_mad_get(m, XR_CM_REQ_SRQ);
	rp->flow_control = xr_mad_get(m, XR_CM_REQ_END_TO_END_FLOW_CONTROL);
}

static void set_private(struct xr_cm_event *ev, const uint8_t *m, uint16_t attr)
{
	struct xr_cm_private_data pd = xr_cm_private_data_of(attr);

	ev->private_data = m + pd.off;
	ev->private_data_len = (uint8_t)pd.size;
}

static struct cm_id_priv *listener_of(struct xr_cm *cm, uint64_t service_id)
{
	for (uint32_t i = 0; i < cm->nlive; i++)
		if (cm->live[i]->pub.state == XR_CM_LISTEN &&
		    cm->live[i]->pub.service_id == service_id)
			return cm->live[i];
	return NULL;
}

/* An id of ours for the peer's communication ID, from that peer. */
static struct cm_id_priv *id_by_remote(struct xr_cm *cm, uint32_t remote_id, uint64_t guid,
				       const union xr_gid *peer)
{
	for (uint32_t i = 0; i < cm->nlive; i++) {
		struct cm_id_priv *p = cm->live[i];

		/* An idle id is done with its peer: that peer may use the ID again. */
		if (p->pub.remote_id == remote_id && p->pub.remote_ca_guid == guid &&
		    p->pub.state != XR_CM_LISTEN && p->pub.state != XR_CM_IDLE &&
		    !memcmp(&p->pub.path.dgid, peer, sizeof(*peer)))
			return p;
	}
	return NULL;
}

static bool connected_state(enum xr_cm_state st)
{
	return st >= XR_CM_REP_SENT && st <= XR_CM_DREQ_RCVD;
}

/* Another connection of ours has the REQ's QP as its peer: the REQ is stale. */
static bool qp_in_use(struct xr_cm *cm, uint32_t remote_qpn, const union xr_gid *peer)
{
	for (uint32_t i = 0; i < cm->nlive; i++) {
		struct cm_id_priv *p = cm->live[i];

		if (connected_state(p->pub.state) && p->pub.remote_qpn == remote_qpn &&
		    !memcmp(&p->pub.path.dgid, peer, sizeof(*peer)))
			return true;
	}
	return false;
}

static bool rx_req(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_REQ_RECEIVED};
	uint32_t remote_id = (uint32_t)xr_mad_get(m, XR_CM_REQ_LOCAL_COMM_ID);
	struct cm_id_priv *p, *listener;
	struct xr_cm_req_param *rp = &ev.param.req;

	read_req(m, rp);
	/* The path it names is the one it came along, or it is not believed. */
	if (memcmp(m + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, pkt->sgid.raw, 16) ||
	    memcmp(m + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, pkt->dgid.raw, 16)) {
		cm->core->stats.cm_forged++;
		return true;
	}
	p = id_by_remote(cm, remote_id, rp->remote_ca_guid, &pkt->sgid);
	if (p) {
		cm->core->stats.cm_duplicates++;
		if (p->pub.state == XR_CM_MRA_REQ_SENT && p->reply_valid)
			transmit(p, p->reply);
		else if ((p->pub.state == XR_CM_REP_SENT || p->pub.state == XR_CM_MRA_REP_RCVD) &&
			 p->msg_pending)
			transmit(p, p->msg);
		else if (p->pub.state == XR_CM_TIMEWAIT)
			reject_unknown(cm, pkt, m, remote_id, XR_CM_ANSWERS_REQ,
				       XR_CM_REJ_STALE_CONN);
		return true;
	}
	if (qp_in_use(cm, rp->qpn, &pkt->sgid)) {
		reject_unknown(cm, pkt, m, remote_id, XR_CM_ANSWERS_REQ, XR_CM_REJ_STALE_CONN);
		return true;
	}
	if (xr_mad_get(m, XR_CM_REQ_TRANSPORT_SERVICE_TYPE) > 1) {
		reject_unknown(cm, pkt, m, remote_id, XR_CM_ANSWERS_REQ,
			       XR_CM_REJ_INVALID_TRANSPORT_TYPE);
		return true;
	}
	listener = listener_of(cm, rp->service_id);
	if (!listener) {
		reject_unknown(cm, pkt, m, remote_id, XR_CM_ANSWERS_REQ,
			       XR_CM_REJ_INVALID_SERVICE_ID);
		return true;
	}
	p = id_for_request(cm, listener, pkt, m, XR_CM_REQ_RCVD, remote_id);
	if (!p) {
		reject_unknown(cm, pkt, m, remote_id, XR_CM_ANSWERS_REQ, XR_CM_REJ_NO_RESOURCES);
		return true;
	}
	p->pub.remote_ca_guid = rp->remote_ca_guid;
	p->pub.remote_qpn = rp->qpn;
	p->max_cm_retries = rp->max_cm_retries;
	p->remote_cm_response_timeout = rp->remote_cm_response_timeout;
	p->local_cm_response_timeout = rp->local_cm_response_timeout;
	p->pub.path.flow_label = (uint32_t)xr_mad_get(m, XR_CM_REQ_PRIMARY_FLOW_LABEL);
	p->pub.path.traffic_class = (uint8_t)xr_mad_get(m, XR_CM_REQ_PRIMARY_TRAFFIC_CLASS);
	ev.listen_id = &listener->pub;
	set_private(&ev, m, XR_CM_ATTR_REQ);
	deliver(p, &ev, now);
	return true;
}

static bool rx_mra(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_MRA_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_MRA_REMOTE_COMM_ID));
	uint8_t answers = (uint8_t)xr_mad_get(m, XR_CM_MRA_MESSAGE_MRAED);
	enum xr_cm_state st;

	if (!p || xr_mad_get(m, XR_MAD_TID) != p->tid)
		return unmatched(cm);
	st = p->pub.state;
	if (!((answers == XR_CM_ANSWERS_REQ &&
	       (st == XR_CM_REQ_SENT || st == XR_CM_MRA_REQ_RCVD)) ||
	      (answers == XR_CM_ANSWERS_REP && (st == XR_CM_REP_SENT || st == XR_CM_MRA_REP_RCVD))))
		return unmatched(cm);
	if (st != XR_CM_REQ_SENT &&
	    (uint32_t)xr_mad_get(m, XR_CM_MRA_LOCAL_COMM_ID) != p->pub.remote_id)
		return unmatched(cm);
	if (!from_peer(p, pkt))
		return true;
	if (st == XR_CM_MRA_REQ_RCVD || st == XR_CM_MRA_REP_RCVD)
		cm->core->stats.cm_duplicates++;
	p->pub.state = answers == XR_CM_ANSWERS_REQ ? XR_CM_MRA_REQ_RCVD : XR_CM_MRA_REP_RCVD;
	/* The answer may take the time the peer asks for, on top of the path's. */
	ev.param.mra.service_timeout = (uint8_t)xr_mad_get(m, XR_CM_MRA_SERVICE_TIMEOUT);
	set_deadline(p, now + xr_cm_timeout_ns(ev.param.mra.service_timeout) +
			    2 * xr_cm_timeout_ns(CM_PACKET_LIFETIME));
	set_private(&ev, m, XR_CM_ATTR_MRA);
	deliver(p, &ev, now);
	return true;
}

static struct cm_id_priv *rejected_id(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m)
{
	uint32_t rej_local = (uint32_t)xr_mad_get(m, XR_CM_REJ_LOCAL_COMM_ID);
	struct cm_id_priv *p;

	/* A timeout from the REQ's sender names itself by its CA GUID in the ARI. */
	if (xr_mad_get(m, XR_CM_REJ_REASON) == XR_CM_REJ_TIMEOUT &&
	    xr_mad_get(m, XR_CM_REJ_INFO_LENGTH) >= 8 && !xr_mad_get(m, XR_CM_REJ_REMOTE_COMM_ID)) {
		uint64_t guid = xr_mad_get(m, XR_MAD_FIELD(XR_CM_REJ_ARI_OFF, 0, 64));

		return id_by_remote(cm, rej_local, guid, &pkt->sgid);
	}
	p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_REJ_REMOTE_COMM_ID));
	if (!p)
		return NULL;
	/* The REQ's sender knows the REJ's local ID only from a REP or an MRA. */
	if (xr_mad_get(m, XR_CM_REJ_MESSAGE_REJECTED) == XR_CM_ANSWERS_REQ &&
	    (p->pub.state == XR_CM_REQ_SENT || p->pub.state == XR_CM_MRA_REQ_RCVD))
		return p;
	return rej_local == p->pub.remote_id ? p : NULL;
}

static bool rx_rej(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_REJ_RECEIVED};
	struct cm_id_priv *p = rejected_id(cm, pkt, m);
	uint16_t reason = (uint16_t)xr_mad_get(m, XR_CM_REJ_REASON);

	if (!p || xr_mad_get(m, XR_MAD_TID) != p->tid)
		return unmatched(cm);
	switch (p->pub.state) {
	case XR_CM_REQ_SENT:
	case XR_CM_MRA_REQ_RCVD:
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
	case XR_CM_REQ_RCVD:
	case XR_CM_MRA_REQ_SENT:
		if (!from_peer(p, pkt))
			return true;
		if (reason == XR_CM_REJ_STALE_CONN)
			enter_timewait(p, now);
		else
			reset_to_idle(p);
		break;
	case XR_CM_DREQ_SENT:
	case XR_CM_REP_RCVD:
	case XR_CM_MRA_REP_SENT:
	case XR_CM_ESTABLISHED:
		/*
		 * Established too, as ib_cm: the peer gave up after its REP
		 * while our RTU was on its way (its consumer went, its process
		 * exited), so the connection this side sees up has no other end.
		 */
		if (!from_peer(p, pkt))
			return true;
		enter_timewait(p, now);
		break;
	default:
		return unmatched(cm);
	}
	ev.param.rej.reason = reason;
	ev.param.rej.ari_length = (uint8_t)xr_mad_get(m, XR_CM_REJ_INFO_LENGTH);
	if (ev.param.rej.ari_length > XR_CM_REJ_ARI_SIZE)
		ev.param.rej.ari_length = XR_CM_REJ_ARI_SIZE;
	ev.param.rej.ari = m + XR_CM_REJ_ARI_OFF;
	set_private(&ev, m, XR_CM_ATTR_REJ);
	deliver(p, &ev, now);
	return true;
}

static bool rx_rep(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_REP_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_REP_REMOTE_COMM_ID));
	struct xr_cm_rep_param *rp = &ev.param.rep;
	uint32_t remote_id = (uint32_t)xr_mad_get(m, XR_CM_REP_LOCAL_COMM_ID);

	if (!p || xr_mad_get(m, XR_MAD_TID) != p->tid)
		return unmatched(cm);
	switch (p->pub.state) {
	case XR_CM_REQ_SENT:
	case XR_CM_MRA_REQ_RCVD:
		break;
	case XR_CM_ESTABLISHED:
	case XR_CM_MRA_REP_SENT:
	case XR_CM_REP_RCVD:
		/* Our RTU or MRA was lost: the REP came again. */
		if (remote_id != p->pub.remote_id)
			return unmatched(cm);
		if (!from_peer(p, pkt))
			return true;
		cm->core->stats.cm_duplicates++;
		if (p->pub.state != XR_CM_REP_RCVD && p->reply_valid)
			transmit(p, p->reply);
		return true;
	default:
		return unmatched(cm);
	}
	if (!from_peer(p, pkt))
		return true;
	cancel_request(p);
	p->pub.state = XR_CM_REP_RCVD;
	p->pub.remote_id = remote_id;
	p->pub.remote_qpn = (uint32_t)xr_mad_get(m, XR_CM_REP_LOCAL_QPN);
	p->pub.remote_ca_guid = xr_mad_get(m, XR_CM_REP_LOCAL_CA_GUID);
	rp->qpn = p->pub.remote_qpn;
	rp->starting_psn = (uint32_t)xr_mad_get(m, XR_CM_REP_STARTING_PSN);
	rp->responder_resources = (uint8_t)xr_mad_get(m, XR_CM_REP_RESPONDER_RESOURCES);
	rp->initiator_depth = (uint8_t)xr_mad_get(m, XR_CM_REP_INITIATOR_DEPTH);
	rp->target_ack_delay = (uint8_t)xr_mad_get(m, XR_CM_REP_TARGET_ACK_DELAY);
	rp->rnr_retry_count = (uint8_t)xr_mad_get(m, XR_CM_REP_RNR_RETRY_COUNT);
	rp->srq = xr_mad_get(m, XR_CM_REP_SRQ);
	rp->flow_control = xr_mad_get(m, XR_CM_REP_END_TO_END_FLOW_CONTROL);
	set_private(&ev, m, XR_CM_ATTR_REP);
	deliver(p, &ev, now);
	return true;
}

static bool rx_rtu(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_RTU_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_RTU_REMOTE_COMM_ID));

	if (!p || xr_mad_get(m, XR_MAD_TID) != p->tid ||
	    (uint32_t)xr_mad_get(m, XR_CM_RTU_LOCAL_COMM_ID) != p->pub.remote_id)
		return unmatched(cm);
	if (p->pub.state == XR_CM_ESTABLISHED) {
		if (from_peer(p, pkt))
			cm->core->stats.cm_duplicates++;
		return true;
	}
	if (p->pub.state != XR_CM_REP_SENT && p->pub.state != XR_CM_MRA_REP_RCVD)
		return unmatched(cm);
	if (!from_peer(p, pkt))
		return true;
	cancel_request(p);
	p->pub.state = XR_CM_ESTABLISHED;
	set_private(&ev, m, XR_CM_ATTR_RTU);
	deliver(p, &ev, now);
	return true;
}

static bool rx_dreq(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_DREQ_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_DREQ_REMOTE_COMM_ID));

	if (!p || (uint32_t)xr_mad_get(m, XR_CM_DREQ_LOCAL_COMM_ID) != p->pub.remote_id ||
	    (uint32_t)xr_mad_get(m, XR_CM_DREQ_REMOTE_QPN) != p->pub.local_qpn)
		return unmatched(cm);
	switch (p->pub.state) {
	case XR_CM_REP_SENT:
	case XR_CM_MRA_REP_RCVD:
	case XR_CM_DREQ_SENT:
	case XR_CM_ESTABLISHED:
		break;
	case XR_CM_TIMEWAIT:
	case XR_CM_DREQ_RCVD:
		/* Our DREP was lost, or is about to go: the DREQ came again. */
		if (!from_peer(p, pkt))
			return true;
		cm->core->stats.cm_duplicates++;
		if (p->pub.state == XR_CM_TIMEWAIT && p->reply_valid &&
		    xr_mad_get(p->reply, XR_MAD_ATTR_ID) == XR_CM_ATTR_DREP)
			transmit(p, p->reply);
		return true;
	default:
		return unmatched(cm);
	}
	if (!from_peer(p, pkt))
		return true;
	cancel_request(p);
	p->pub.state = XR_CM_DREQ_RCVD;
	p->tid = xr_mad_get(m, XR_MAD_TID);
	if (!p->handler) { /* its consumer has gone: nobody else will answer */
		xr_cm_send_drep(&p->pub, NULL, 0, now);
		return true;
	}
	set_private(&ev, m, XR_CM_ATTR_DREQ);
	deliver(p, &ev, now);
	return true;
}

static bool rx_drep(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_DREP_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_DREP_REMOTE_COMM_ID));

	if (!p || (uint32_t)xr_mad_get(m, XR_CM_DREP_LOCAL_COMM_ID) != p->pub.remote_id)
		return unmatched(cm);
	/*
	 * Both sides sent a DREQ: ours is answered after we answered theirs
	 * (whose TID we took). Nothing is left to act on.
	 */
	if (p->pub.state == XR_CM_TIMEWAIT) {
		if (from_peer(p, pkt))
			cm->core->stats.cm_duplicates++;
		return true;
	}
	if (xr_mad_get(m, XR_MAD_TID) != p->tid ||
	    (p->pub.state != XR_CM_DREQ_SENT && p->pub.state != XR_CM_DREQ_RCVD))
		return unmatched(cm);
	if (!from_peer(p, pkt))
		return true;
	enter_timewait(p, now);
	set_private(&ev, m, XR_CM_ATTR_DREP);
	deliver(p, &ev, now);
	return true;
}

static bool rx_sidr_req(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_SIDR_REQ_RECEIVED};
	uint32_t request_id = (uint32_t)xr_mad_get(m, XR_CM_SIDR_REQ_REQUEST_ID);
	uint64_t service_id = xr_mad_get(m, XR_CM_SIDR_REQ_SERVICE_ID);
	struct cm_id_priv *p, *listener;

	for (uint32_t i = 0; i < cm->nlive; i++) {
		p = cm->live[i];
		if (p->pub.state == XR_CM_SIDR_REQ_RCVD && p->pub.remote_id == request_id &&
		    !memcmp(&p->pub.path.dgid, &pkt->sgid, sizeof(pkt->sgid))) {
			cm->core->stats.cm_duplicates++;
			return true;
		}
	}
	listener = listener_of(cm, service_id);
	p = listener ? id_for_request(cm, listener, pkt, m, XR_CM_SIDR_REQ_RCVD, request_id) : NULL;
	if (!p) {
		uint8_t rep[XR_MAD_SIZE];

		mad_begin(rep, XR_CM_ATTR_SIDR_REP, xr_mad_get(m, XR_MAD_TID));
		xr_mad_set(rep, XR_CM_SIDR_REP_REQUEST_ID, request_id);
		xr_mad_set(rep, XR_CM_SIDR_REP_STATUS,
			   listener ? XR_CM_SIDR_NO_QP : XR_CM_SIDR_UNSUPPORTED);
		xr_mad_set(rep, XR_CM_SIDR_REP_SERVICE_ID, service_id);
		xr_gsi_answer(cm->core, pkt, rep);
		return true;
	}
	ev.listen_id = &listener->pub;
	set_private(&ev, m, XR_CM_ATTR_SIDR_REQ);
	deliver(p, &ev, now);
	return true;
}

static bool rx_sidr_rep(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m, uint64_t now)
{
	struct xr_cm_event ev = {.type = XR_CM_SIDR_REP_RECEIVED};
	struct cm_id_priv *p = id_by_local(cm, (uint32_t)xr_mad_get(m, XR_CM_SIDR_REP_REQUEST_ID));

	if (!p || xr_mad_get(m, XR_MAD_TID) != p->tid || p->pub.state != XR_CM_SIDR_REQ_SENT)
		return unmatched(cm);
	if (!from_peer(p, pkt))
		return true;
	reset_to_idle(p);
	ev.param.sidr_rep.status = (uint8_t)xr_mad_get(m, XR_CM_SIDR_REP_STATUS);
	ev.param.sidr_rep.qpn = (uint32_t)xr_mad_get(m, XR_CM_SIDR_REP_QPN);
	ev.param.sidr_rep.qkey = (uint32_t)xr_mad_get(m, XR_CM_SIDR_REP_QKEY);
	p->pub.remote_qpn = ev.param.sidr_rep.qpn;
	set_private(&ev, m, XR_CM_ATTR_SIDR_REP);
	deliver(p, &ev, now);
	return true;
}

typedef bool (*cm_receiver)(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *m,
			    uint64_t now);

/* By attribute ID, from the REQ's on; none for LAP and APR: RoCE has no alternate paths. */
static const cm_receiver receivers[] = {
    [XR_CM_ATTR_REQ - XR_CM_ATTR_REQ] = rx_req,
    [XR_CM_ATTR_MRA - XR_CM_ATTR_REQ] = rx_mra,
    [XR_CM_ATTR_REJ - XR_CM_ATTR_REQ] = rx_rej,
    [XR_CM_ATTR_REP - XR_CM_ATTR_REQ] = rx_rep,
    [XR_CM_ATTR_RTU - XR_CM_ATTR_REQ] = rx_rtu,
    [XR_CM_ATTR_DREQ - XR_CM_ATTR_REQ] = rx_dreq,
    [XR_CM_ATTR_DREP - XR_CM_ATTR_REQ] = rx_drep,
    [XR_CM_ATTR_SIDR_REQ - XR_CM_ATTR_REQ] = rx_sidr_req,
    [XR_CM_ATTR_SIDR_REP - XR_CM_ATTR_REQ] = rx_sidr_rep,
};

bool xr_cm_rx(struct xr_cm *cm, const struct xr_pkt *pkt, const uint8_t *mad, uint64_t now)
{
	uint64_t i = xr_mad_get(mad, XR_MAD_ATTR_ID) - XR_CM_ATTR_REQ;

	if (!cm || xr_mad_get(mad, XR_MAD_METHOD) != XR_MAD_METHOD_SEND ||
	    i >= sizeof(receivers) / sizeof(receivers[0]))
		return false;
	return receivers[i](cm, pkt, mad, now);
}
