/* SPDX-License-Identifier: MIT */
/*
 * The communication manager on the in-memory link, in virtual time. Side 0
 * is the active side, side 1 listens. A scripted consumer on each side logs
 * every event and answers as the test says. Checked:
 *   - a connection up (REQ, REP, RTU) and down (DREQ, DREP), the messages on
 *     the wire in that order, what each side learns of the other (QPNs,
 *     PSNs, private data), both sides in time-wait and then idle, no id left;
 *   - a REQ for a service nobody listens on: REJ, invalid service ID, at once;
 *     a consumer that refuses: REJ, consumer defined; a destroyed
 *     half-accepted id: REJ; a destroyed established one: DREQ, and the id
 *     gone after its time-wait;
 *   - lost messages: a REQ sent again until it gets through; given up
 *     after max_cm_retries with REQ_ERROR; a lost RTU replaced when the REP
 *     comes again; an MRA stretching the REQ's timeout; duplicate REQs
 *     answered without a second event;
 *   - forged messages (a third host, or wrong IDs or transaction ID) dropped
 *     and counted, the connection untouched;
 *   - SIDR: a UD service's QPN and Q_Key, and no service.
 */
#include "core/cm.h"
#include "gsi_harness.h"

#define ACTIVE 0
#define PASSIVE 1
#define SERVICE 0x0000000001061c06ull
#define MAX_EVENTS 32
#define MAX_WIRE 64
#define QPN_ACTIVE 0x1a
#define QPN_PASSIVE 0x2b
#define PSN_ACTIVE 0xc59c0c
#define PSN_PASSIVE 0xda5020
#define SIDR_QKEY 0x11223344u

enum answer {
	ANSWER_NONE, /* hold: the test answers later */
	ANSWER_ACCEPT,
	ANSWER_REFUSE, /* return nonzero from the handler */
	ANSWER_MRA,
};

struct logged {
	enum xr_cm_event_type type;
	struct xr_cm_id *id;
	struct xr_cm_req_param req;
	struct xr_cm_rep_param rep;
	uint16_t rej_reason;
	struct xr_cm_sidr_rep_param sidr_rep;
	uint8_t private_data[8];
	uint64_t at; /* virtual time */
};

struct side_log {
	struct logged ev[MAX_EVENTS];
	int n;
};

struct cm_test {
	struct h_pair p;
	struct side_log log[2];
	enum answer on_req;
	bool lose_rtu;		 /* the active side's RTU is lost (once) */
	uint16_t wire[MAX_WIRE]; /* attribute IDs of the MADs sent, in order */
	int wire_from[MAX_WIRE];
	int nwire;
	struct xr_cm_id *listener, *active_id, *passive_id;
};

static struct cm_test *T;

static void tap(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct cm_test *t = arg;
	struct xr_pkt pkt;

	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK || pkt.dqpn != XR_GSI_QPN ||
	    t->nwire == MAX_WIRE)
		return;
	t->wire_from[t->nwire] = from;
	t->wire[t->nwire++] = (uint16_t)xr_mad_get(pkt.payload, XR_MAD_ATTR_ID);
}

static int side_of(struct xr_cm_id *id)
{
	return (int)(intptr_t)id->context;
}

static const uint8_t passive_private[8] = "passive";
static const uint8_t active_private[8] = "active!";

static int handler(struct xr_cm_id *id, const struct xr_cm_event *ev)
{
	int s = side_of(id);
	struct side_log *log = &T->log[s];
	struct logged *l = &log->ev[log->n < MAX_EVENTS ? log->n++ : MAX_EVENTS - 1];

	memset(l, 0, sizeof(*l));
	l->type = ev->type;
	l->id = id;
	l->at = T->p.now;
	if (ev->private_data)
		memcpy(l->private_data, ev->private_data, sizeof(l->private_data));
	switch (ev->type) {
	case XR_CM_REQ_RECEIVED: {
		struct xr_cm_rep_param rep = {.qpn = QPN_PASSIVE,
					      .starting_psn = PSN_PASSIVE,
					      .responder_resources = 1,
					      .initiator_depth = 1,
					      .target_ack_delay = 15,
					      .rnr_retry_count = 7,
					      .private_data = passive_private,
					      .private_data_len = sizeof(passive_private)};

		l->req = ev->param.req;
		CHECK(ev->listen_id == T->listener, "REQ on the listener's behalf");
		T->passive_id = id;
		if (T->on_req == ANSWER_REFUSE)
			return 1;
		if (T->on_req == ANSWER_MRA)
			CHECK(xr_cm_send_mra(id, 24, NULL, 0) == 0, "send MRA");
		if (T->on_req == ANSWER_ACCEPT)
			CHECK(xr_cm_send_rep(id, &rep, T->p.now) == 0, "send REP");
		return 0;
	}
	case XR_CM_REP_RECEIVED:
		l->rep = ev->param.rep;
		if (T->lose_rtu) {
			struct xr_mem_impair lose = {.loss = 1.0};

			xr_mem_link_set_impair(&T->p.link, ACTIVE, &lose);
		}
		CHECK(xr_cm_send_rtu(id, active_private, sizeof(active_private)) == 0, "send RTU");
		if (T->lose_rtu) {
			xr_mem_link_set_impair(&T->p.link, ACTIVE, NULL);
			T->lose_rtu = false;
		}
		return 0;
	case XR_CM_DREQ_RECEIVED:
		CHECK(xr_cm_send_drep(id, NULL, 0, T->p.now) == 0, "send DREP");
		return 0;
	case XR_CM_REJ_RECEIVED:
		l->rej_reason = ev->param.rej.reason;
		return 0;
	case XR_CM_SIDR_REQ_RECEIVED: {
		struct xr_cm_sidr_rep_param rep = {
		    .status = XR_CM_SIDR_SUCCESS, .qpn = QPN_PASSIVE, .qkey = SIDR_QKEY};

		T->passive_id = id;
		CHECK(xr_cm_send_sidr_rep(id, &rep) == 0, "send SIDR_REP");
		return 0;
	}
	case XR_CM_SIDR_REP_RECEIVED:
		l->sidr_rep = ev->param.sidr_rep;
		return 0;
	default:
		return 0;
	}
}

static void setup(struct cm_test *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	T = t;
	if (h_pair_init(&t->p, seed, 64)) {
		fprintf(stderr, "test fixture: cannot build two cores\n");
		exit(2);
	}
	xr_mem_link_set_tap(&t->p.link, tap, t);
	t->on_req = ANSWER_ACCEPT;
	CHECK(xr_cm_create_id(t->p.side[PASSIVE].core, handler, (void *)(intptr_t)PASSIVE,
			      &t->listener) == 0,
	      "listener id");
	CHECK(xr_cm_listen(t->listener, SERVICE) == 0, "listen");
	CHECK(xr_cm_create_id(t->p.side[ACTIVE].core, handler, (void *)(intptr_t)ACTIVE,
			      &t->active_id) == 0,
	      "active id");
}

static struct xr_path path_from(struct cm_test *t, int s)
{
	struct xr_path path = {.flow_label = 0x91c8e, .hop_limit = 64};

	memcpy(path.smac, t->p.side[s].mac, 6);
	memcpy(path.dmac, t->p.side[1 - s].mac, 6);
	path.sgid = t->p.side[s].core->gids[0];
	path.dgid = t->p.side[1 - s].core->gids[0];
	return path;
}

static struct xr_cm_req_param req_param(uint64_t service, uint8_t timeout, uint8_t retries)
{
	return (struct xr_cm_req_param){.service_id = service,
					.qpn = QPN_ACTIVE,
					.qp_type = XR_QPT_RC,
					.starting_psn = PSN_ACTIVE,
					.responder_resources = 1,
					.initiator_depth = 1,
					.remote_cm_response_timeout = timeout,
					.local_cm_response_timeout = timeout,
					.retry_count = 7,
					.rnr_retry_count = 7,
					.max_cm_retries = retries,
					.path_mtu = XR_MTU_1024,
					.local_ack_timeout = 19,
					.private_data = active_private,
					.private_data_len = sizeof(active_private)};
}

static int connect_req(struct cm_test *t, uint64_t service, uint8_t timeout, uint8_t retries)
{
	struct xr_path path = path_from(t, ACTIVE);
	struct xr_cm_req_param rp = req_param(service, timeout, retries);

	return xr_cm_send_req(t->active_id, &path, &rp, t->p.now);
}

static int count_events(struct cm_test *t, int s, enum xr_cm_event_type type)
{
	int n = 0;

	for (int i = 0; i < t->log[s].n; i++)
		n += t->log[s].ev[i].type == type;
	return n;
}

static const struct logged *event(struct cm_test *t, int s, enum xr_cm_event_type type)
{
	for (int i = 0; i < t->log[s].n; i++)
		if (t->log[s].ev[i].type == type)
			return &t->log[s].ev[i];
	return NULL;
}

static bool both_established(struct h_pair *p, void *arg)
{
	struct cm_test *t = arg;

	(void)p;
	return t->active_id->state == XR_CM_ESTABLISHED && t->passive_id &&
	       t->passive_id->state == XR_CM_ESTABLISHED;
}

static const struct xr_engine_stats *stats(struct cm_test *t, int s)
{
	return &t->p.side[s].core->stats;
}

static void teardown(struct cm_test *t)
{
	h_pair_destroy(&t->p);
}

/* ---- cases -------------------------------------------------------------------- */

static void connect_and_disconnect(void)
{
	static const uint16_t expect[] = {XR_CM_ATTR_REQ, XR_CM_ATTR_REP, XR_CM_ATTR_RTU,
					  XR_CM_ATTR_DREQ, XR_CM_ATTR_DREP};
	static const int expect_from[] = {ACTIVE, PASSIVE, ACTIVE, ACTIVE, PASSIVE};
	struct cm_test t;
	const struct logged *req, *rep, *rtu;

	setup(&t, 11);
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE,
	      "established: active %d", t.active_id->state);
	req = event(&t, PASSIVE, XR_CM_REQ_RECEIVED);
	rep = event(&t, ACTIVE, XR_CM_REP_RECEIVED);
	rtu = event(&t, PASSIVE, XR_CM_RTU_RECEIVED);
	CHECK(req && req->req.qpn == QPN_ACTIVE && req->req.starting_psn == PSN_ACTIVE &&
		  req->req.service_id == SERVICE && req->req.path_mtu == XR_MTU_1024 &&
		  req->req.local_ack_timeout == 19 && req->req.retry_count == 7 &&
		  req->req.remote_ca_guid == xr_cm_ca_guid(t.p.side[ACTIVE].mac) &&
		  !memcmp(req->private_data, active_private, 8),
	      "the REQ as the passive side read it");
	CHECK(rep && rep->rep.qpn == QPN_PASSIVE && rep->rep.starting_psn == PSN_PASSIVE &&
		  rep->rep.target_ack_delay == 15 && !memcmp(rep->private_data, passive_private, 8),
	      "the REP as the active side read it");
	CHECK(rtu && !memcmp(rtu->private_data, active_private, 8), "the RTU's private data");
	CHECK(t.active_id->remote_qpn == QPN_PASSIVE && t.passive_id->remote_qpn == QPN_ACTIVE &&
		  t.active_id->remote_id == t.passive_id->local_id &&
		  t.passive_id->remote_id == t.active_id->local_id,
	      "each side knows the other's QPN and communication ID");
	CHECK(t.passive_id->path.flow_label == 0x91c8e,
	      "the passive side keeps the REQ's flow label");

	CHECK(xr_cm_send_dreq(t.active_id, NULL, 0, t.p.now) == 0, "send DREQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	CHECK(t.active_id->state == XR_CM_TIMEWAIT && t.passive_id->state == XR_CM_TIMEWAIT,
	      "both in time-wait: %d %d", t.active_id->state, t.passive_id->state);
	CHECK(count_events(&t, PASSIVE, XR_CM_DREQ_RECEIVED) == 1 &&
		  count_events(&t, ACTIVE, XR_CM_DREP_RECEIVED) == 1,
	      "DREQ and DREP received once each");
	h_settle(&t.p);
	CHECK(count_events(&t, ACTIVE, XR_CM_TIMEWAIT_EXIT) == 1 &&
		  count_events(&t, PASSIVE, XR_CM_TIMEWAIT_EXIT) == 1 &&
		  t.active_id->state == XR_CM_IDLE && t.passive_id->state == XR_CM_IDLE,
	      "time-wait over on both sides");
	CHECK(t.nwire == 5, "%d MADs on the wire, expected 5", t.nwire);
	for (int i = 0; i < 5 && i < t.nwire; i++)
		CHECK(t.wire[i] == expect[i] && t.wire_from[i] == expect_from[i],
		      "MAD %d: attribute %#x from side %d", i, t.wire[i], t.wire_from[i]);
	for (int s = 0; s < 2; s++)
		CHECK(!stats(&t, s)->cm_retries && !stats(&t, s)->cm_unmatched &&
			  !stats(&t, s)->cm_forged && !stats(&t, s)->cm_duplicates,
		      "side %d: a clean exchange moved the CM's counters", s);
	xr_cm_destroy_id(t.active_id, t.p.now);
	xr_cm_destroy_id(t.passive_id, t.p.now);
	xr_cm_destroy_id(t.listener, t.p.now);
	CHECK(xr_cm_ids(t.p.side[0].core->cm) == 0 && xr_cm_ids(t.p.side[1].core->cm) == 0,
	      "ids left: %u and %u", xr_cm_ids(t.p.side[0].core->cm),
	      xr_cm_ids(t.p.side[1].core->cm));
	teardown(&t);
}

static void rejections(void)
{
	struct cm_test t;
	const struct logged *rej;
	uint64_t start;

	/* Nobody listens: rejected at once, not after a timeout. */
	setup(&t, 12);
	start = t.p.now;
	CHECK(connect_req(&t, SERVICE + 1, 20, 15) == 0, "send REQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	rej = event(&t, ACTIVE, XR_CM_REJ_RECEIVED);
	CHECK(rej && rej->rej_reason == XR_CM_REJ_INVALID_SERVICE_ID, "no listener: REJ reason %d",
	      rej ? rej->rej_reason : -1);
	CHECK(t.active_id->state == XR_CM_IDLE && xr_cm_ids(t.p.side[PASSIVE].core->cm) == 1,
	      "the active id idle, nothing new on the passive side");
	CHECK(rej && rej->at - start < 10000000ull && !stats(&t, ACTIVE)->cm_retries,
	      "the REJ came at once, without a retry");
	teardown(&t);

	/* The consumer refuses: the new id is destroyed and the REQ rejected. */
	setup(&t, 13);
	t.on_req = ANSWER_REFUSE;
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	rej = event(&t, ACTIVE, XR_CM_REJ_RECEIVED);
	CHECK(rej && rej->rej_reason == XR_CM_REJ_CONSUMER_DEFINED, "refused: REJ reason %d",
	      rej ? rej->rej_reason : -1);
	CHECK(xr_cm_ids(t.p.side[PASSIVE].core->cm) == 1, "only the listener left: %u",
	      xr_cm_ids(t.p.side[PASSIVE].core->cm));
	teardown(&t);

	/* A REQ held, then its id destroyed: rejected too. */
	setup(&t, 14);
	t.on_req = ANSWER_NONE;
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	h_run(&t.p, t.p.now + 10000000ull, NULL, NULL);
	CHECK(t.passive_id && t.passive_id->state == XR_CM_REQ_RCVD, "REQ held");
	if (t.passive_id)
		xr_cm_destroy_id(t.passive_id, t.p.now);
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	rej = event(&t, ACTIVE, XR_CM_REJ_RECEIVED);
	CHECK(rej && rej->rej_reason == XR_CM_REJ_CONSUMER_DEFINED &&
		  t.active_id->state == XR_CM_IDLE,
	      "held and destroyed: REJ reason %d", rej ? rej->rej_reason : -1);
	teardown(&t);
}

static void destroy_established(void)
{
	struct cm_test t;

	setup(&t, 15);
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE, "established");
	xr_cm_destroy_id(t.active_id, t.p.now);
	CHECK(xr_cm_ids(t.p.side[ACTIVE].core->cm) == 1, "the destroyed id lives on for its DREQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	CHECK(count_events(&t, PASSIVE, XR_CM_DREQ_RECEIVED) == 1 &&
		  t.passive_id->state == XR_CM_TIMEWAIT,
	      "the peer was disconnected: state %d", t.passive_id->state);
	CHECK(count_events(&t, ACTIVE, XR_CM_DREP_RECEIVED) == 0, "no event for a destroyed id");
	h_settle(&t.p);
	CHECK(xr_cm_ids(t.p.side[ACTIVE].core->cm) == 0, "%u ids left after time-wait",
	      xr_cm_ids(t.p.side[ACTIVE].core->cm));
	teardown(&t);
}

/* Both sides disconnect at once: each answers the other's DREQ, nothing unmatched. */
static void crossing_dreqs(void)
{
	struct cm_test t;

	setup(&t, 25);
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE, "established");
	CHECK(xr_cm_send_dreq(t.active_id, NULL, 0, t.p.now) == 0 &&
		  xr_cm_send_dreq(t.passive_id, NULL, 0, t.p.now) == 0,
	      "both send DREQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	CHECK(t.active_id->state == XR_CM_TIMEWAIT && t.passive_id->state == XR_CM_TIMEWAIT,
	      "both in time-wait: %d %d", t.active_id->state, t.passive_id->state);
	for (int s = 0; s < 2; s++)
		CHECK(!stats(&t, s)->cm_unmatched && !stats(&t, s)->cm_retries &&
			  count_events(&t, s, XR_CM_DREQ_RECEIVED) == 1,
		      "side %d: unmatched %llu retries %llu", s,
		      (unsigned long long)stats(&t, s)->cm_unmatched,
		      (unsigned long long)stats(&t, s)->cm_retries);
	teardown(&t);
}

/* A REJ ends a connection attempt; the same communication ID may then come again. */
static void reuse_after_reject(void)
{
	struct cm_test t;
	struct xr_path path;
	struct xr_cm_req_param rp = req_param(SERVICE, 20, 15);

	setup(&t, 26);
	t.on_req = ANSWER_NONE;
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	h_run(&t.p, t.p.now + 10000000ull, NULL, NULL);
	CHECK(t.passive_id && xr_cm_send_rej(t.passive_id, XR_CM_REJ_CONSUMER_DEFINED, NULL, 0,
					     NULL, 0, t.p.now) == 0,
	      "the passive side rejects");
	h_run(&t.p, t.p.now + 10000000ull, NULL, NULL);
	CHECK(t.active_id->state == XR_CM_IDLE && t.passive_id->state == XR_CM_IDLE,
	      "both idle: %d %d", t.active_id->state, t.passive_id->state);
	/* The active id, idle, asks again with its same communication ID. */
	t.on_req = ANSWER_ACCEPT;
	path = path_from(&t, ACTIVE);
	CHECK(xr_cm_send_req(t.active_id, &path, &rp, t.p.now) == 0, "REQ again");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE,
	      "established on the second REQ");
	CHECK(count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED) == 2, "%d REQ events",
	      count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED));
	teardown(&t);
}

static void lost_messages(void)
{
	struct xr_mem_impair lose = {.loss = 1.0};
	struct cm_test t;
	const struct xr_mem_counters *c;

	/* Every REQ lost: tried 1 + max_cm_retries times, then REQ_ERROR. */
	setup(&t, 16);
	xr_mem_link_set_impair(&t.p.link, ACTIVE, &lose);
	CHECK(connect_req(&t, SERVICE, 10, 3) == 0, "send REQ");
	h_settle(&t.p);
	c = xr_mem_link_counters(&t.p.link, ACTIVE);
	CHECK(c->submitted == 4 && stats(&t, ACTIVE)->cm_retries == 3 &&
		  stats(&t, ACTIVE)->cm_timeouts == 1,
	      "REQ sent %llu times, %llu retries, %llu timeouts", (unsigned long long)c->submitted,
	      (unsigned long long)stats(&t, ACTIVE)->cm_retries,
	      (unsigned long long)stats(&t, ACTIVE)->cm_timeouts);
	CHECK(count_events(&t, ACTIVE, XR_CM_REQ_ERROR) == 1 && t.active_id->state == XR_CM_IDLE,
	      "REQ_ERROR, idle");
	teardown(&t);

	/* The first REQs lost, then the link heals: a retry connects. */
	setup(&t, 17);
	xr_mem_link_set_impair(&t.p.link, ACTIVE, &lose);
	CHECK(connect_req(&t, SERVICE, 10, 5) == 0, "send REQ");
	h_run(&t.p, t.p.now + 3 * xr_cm_timeout_ns(18) + 1000, NULL, NULL);
	xr_mem_link_set_impair(&t.p.link, ACTIVE, NULL);
	CHECK(h_run(&t.p, t.p.now + 60000000000ull, both_established, &t) == H_DONE,
	      "established after the link healed");
	CHECK(stats(&t, ACTIVE)->cm_retries >= 1 &&
		  count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED) == 1,
	      "retries %llu, REQ events %d", (unsigned long long)stats(&t, ACTIVE)->cm_retries,
	      count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED));
	teardown(&t);

	/* The RTU lost: the passive side sends its REP again, the active side its RTU. */
	setup(&t, 18);
	t.lose_rtu = true;
	CHECK(connect_req(&t, SERVICE, 10, 5) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 60000000000ull, both_established, &t) == H_DONE,
	      "established despite the lost RTU");
	CHECK(stats(&t, PASSIVE)->cm_retries == 1 && stats(&t, ACTIVE)->cm_duplicates == 1 &&
		  count_events(&t, ACTIVE, XR_CM_REP_RECEIVED) == 1,
	      "REP retries %llu, duplicates at the active side %llu, REP events %d",
	      (unsigned long long)stats(&t, PASSIVE)->cm_retries,
	      (unsigned long long)stats(&t, ACTIVE)->cm_duplicates,
	      count_events(&t, ACTIVE, XR_CM_REP_RECEIVED));
	teardown(&t);
}

static bool active_established(struct h_pair *p, void *arg)
{
	struct cm_test *t = arg;

	(void)p;
	return t->active_id && t->active_id->state == XR_CM_ESTABLISHED;
}

/*
 * The passive side gives up after its REP (its consumer destroys the id)
 * while the RTU is lost: its REJ reaches an active side already
 * established, which must not be left with a connection that has no other
 * end.
 */
static void rej_after_rep(void)
{
	struct cm_test t;

	setup(&t, 23);
	t.lose_rtu = true;
	CHECK(connect_req(&t, SERVICE, 10, 5) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, active_established, &t) == H_DONE,
	      "the active side established");
	CHECK(t.passive_id && t.passive_id->state == XR_CM_REP_SENT, "the passive side waits: %d",
	      t.passive_id ? (int)t.passive_id->state : -1);
	xr_cm_destroy_id(t.passive_id, t.p.now);
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	CHECK(count_events(&t, ACTIVE, XR_CM_REJ_RECEIVED) == 1 &&
		  event(&t, ACTIVE, XR_CM_REJ_RECEIVED)->rej_reason == XR_CM_REJ_CONSUMER_DEFINED &&
		  t.active_id->state == XR_CM_TIMEWAIT,
	      "REJ taken while established: %d events, state %d",
	      count_events(&t, ACTIVE, XR_CM_REJ_RECEIVED), t.active_id->state);
	CHECK(stats(&t, ACTIVE)->cm_unmatched == 0, "nothing unmatched: %llu",
	      (unsigned long long)stats(&t, ACTIVE)->cm_unmatched);
	teardown(&t);
}

static void slow_peers(void)
{
	struct cm_test t;
	struct xr_cm_rep_param rep = {.qpn = QPN_PASSIVE, .starting_psn = PSN_PASSIVE};
	uint64_t req_timeout = xr_cm_timeout_ns(10) + 2 * xr_cm_timeout_ns(18);

	/* An MRA (service timeout 68 s): the REQ's sender waits, without retrying. */
	setup(&t, 19);
	t.on_req = ANSWER_MRA;
	CHECK(connect_req(&t, SERVICE, 10, 1) == 0, "send REQ");
	h_run(&t.p, t.p.now + 3 * req_timeout, NULL, NULL);
	CHECK(t.active_id->state == XR_CM_MRA_REQ_RCVD && !stats(&t, ACTIVE)->cm_retries &&
		  count_events(&t, ACTIVE, XR_CM_MRA_RECEIVED) == 1,
	      "waiting after the MRA: state %d, retries %llu", t.active_id->state,
	      (unsigned long long)stats(&t, ACTIVE)->cm_retries);
	CHECK(xr_cm_send_rep(t.passive_id, &rep, t.p.now) == 0, "REP after the MRA");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE,
	      "established after the MRA");
	teardown(&t);

	/* No answer yet: the REQ comes again, and makes no second event. */
	setup(&t, 20);
	t.on_req = ANSWER_NONE;
	CHECK(connect_req(&t, SERVICE, 10, 3) == 0, "send REQ");
	h_run(&t.p, t.p.now + 2 * req_timeout + 1000, NULL, NULL);
	CHECK(count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED) == 1 &&
		  stats(&t, PASSIVE)->cm_duplicates >= 1,
	      "REQ events %d, duplicates %llu", count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED),
	      (unsigned long long)stats(&t, PASSIVE)->cm_duplicates);
	CHECK(xr_cm_send_rep(t.passive_id, &rep, t.p.now) == 0, "REP at last");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE, "established");
	teardown(&t);
}

/* A CM message along path, delivered to side `to` at once. */
static void forge_mad(struct cm_test *t, int to, const struct xr_path *path, const uint8_t *mad)
{
	h_deliver_to_qp1(&t->p, to, path, XR_OP_UD_SEND_ONLY, XR_GSI_QKEY, 0, mad, XR_MAD_SIZE);
}

static void cm_mad(uint8_t *m, uint16_t attr, uint64_t tid)
{
	h_mad_header(m, XR_MGMT_CLASS_CM, XR_CM_CLASS_VERSION, XR_MAD_METHOD_SEND, tid, attr);
}

static void forged(void)
{
	struct cm_test t;
	struct xr_path real, third;
	uint8_t m[XR_MAD_SIZE];
	const struct xr_engine_stats *ps;

	setup(&t, 21);
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE, "established");
	ps = stats(&t, PASSIVE);
	real = path_from(&t, ACTIVE);
	third = real;
	third.sgid = h_third_gid();

	/* A DREQ with the right IDs and QPN, from a third host. */
	cm_mad(m, XR_CM_ATTR_DREQ, 0x77);
	xr_mad_set(m, XR_CM_DREQ_LOCAL_COMM_ID, t.active_id->local_id);
	xr_mad_set(m, XR_CM_DREQ_REMOTE_COMM_ID, t.passive_id->local_id);
	xr_mad_set(m, XR_CM_DREQ_REMOTE_QPN, QPN_PASSIVE);
	forge_mad(&t, PASSIVE, &third, m);
	CHECK(ps->cm_forged == 1, "DREQ from a third host: cm_forged %llu",
	      (unsigned long long)ps->cm_forged);
	/* From the peer's address, with a wrong communication ID, then a wrong QPN. */
	xr_mad_set(m, XR_CM_DREQ_LOCAL_COMM_ID, t.active_id->local_id ^ 0x100);
	forge_mad(&t, PASSIVE, &real, m);
	xr_mad_set(m, XR_CM_DREQ_LOCAL_COMM_ID, t.active_id->local_id);
	xr_mad_set(m, XR_CM_DREQ_REMOTE_QPN, QPN_PASSIVE + 1);
	forge_mad(&t, PASSIVE, &real, m);
	/* A REJ and a DREP with a wrong transaction ID; an RTU for an unknown ID. */
	cm_mad(m, XR_CM_ATTR_REJ, 0x1234);
	xr_mad_set(m, XR_CM_REJ_LOCAL_COMM_ID, t.active_id->local_id);
	xr_mad_set(m, XR_CM_REJ_REMOTE_COMM_ID, t.passive_id->local_id);
	xr_mad_set(m, XR_CM_REJ_MESSAGE_REJECTED, XR_CM_ANSWERS_OTHER);
	xr_mad_set(m, XR_CM_REJ_REASON, XR_CM_REJ_CONSUMER_DEFINED);
	forge_mad(&t, PASSIVE, &real, m);
	cm_mad(m, XR_CM_ATTR_RTU, 0x1234);
	xr_mad_set(m, XR_CM_RTU_LOCAL_COMM_ID, 0xdeadbeef);
	xr_mad_set(m, XR_CM_RTU_REMOTE_COMM_ID, 0xfeedface);
	forge_mad(&t, PASSIVE, &real, m);
	CHECK(ps->cm_unmatched == 4, "wrong IDs, QPN, TID: cm_unmatched %llu of 4",
	      (unsigned long long)ps->cm_unmatched);
	h_run(&t.p, t.p.now + 10000000ull, NULL, NULL);
	CHECK(t.passive_id->state == XR_CM_ESTABLISHED && t.active_id->state == XR_CM_ESTABLISHED &&
		  t.log[PASSIVE].n == 2,
	      "the connection untouched: states %d %d, %d passive events", t.active_id->state,
	      t.passive_id->state, t.log[PASSIVE].n);
	/* A REQ claiming a path other than the one it came along. */
	cm_mad(m, XR_CM_ATTR_REQ, 0x99);
	xr_mad_set(m, XR_CM_REQ_LOCAL_COMM_ID, 0x5555);
	xr_mad_set(m, XR_CM_REQ_SERVICE_ID, SERVICE);
	memcpy(m + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, t.p.side[ACTIVE].core->gids[0].raw, 16);
	memcpy(m + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, t.p.side[PASSIVE].core->gids[0].raw, 16);
	forge_mad(&t, PASSIVE, &third, m);
	CHECK(ps->cm_forged == 2 && count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED) == 1,
	      "REQ naming another path than its own: cm_forged %llu",
	      (unsigned long long)ps->cm_forged);
	teardown(&t);
}

static void stale_and_timewait(void)
{
	struct cm_test t;
	uint8_t m[XR_MAD_SIZE];
	struct xr_path real;
	int rejs_before;

	setup(&t, 22);
	CHECK(connect_req(&t, SERVICE, 20, 15) == 0, "send REQ");
	CHECK(h_run(&t.p, t.p.now + 1000000000ull, both_established, &t) == H_DONE, "established");
	/* A new REQ from the same QP while that QP is connected: stale. */
	real = path_from(&t, ACTIVE);
	cm_mad(m, XR_CM_ATTR_REQ, 0x42);
	xr_mad_set(m, XR_CM_REQ_LOCAL_COMM_ID, 0x6666);
	xr_mad_set(m, XR_CM_REQ_SERVICE_ID, SERVICE);
	xr_mad_set(m, XR_CM_REQ_LOCAL_QPN, QPN_ACTIVE);
	memcpy(m + XR_CM_REQ_PRIMARY_LOCAL_GID_OFF, real.sgid.raw, 16);
	memcpy(m + XR_CM_REQ_PRIMARY_REMOTE_GID_OFF, real.dgid.raw, 16);
	rejs_before = t.nwire;
	forge_mad(&t, PASSIVE, &real, m);
	CHECK(t.nwire == rejs_before + 1 && t.wire[t.nwire - 1] == XR_CM_ATTR_REJ &&
		  count_events(&t, PASSIVE, XR_CM_REQ_RECEIVED) == 1,
	      "a REQ from a QP already connected is rejected");
	teardown(&t);
}

static void sidr(void)
{
	struct cm_test t;
	struct xr_cm_sidr_req_param sp = {
	    .service_id = SERVICE, .timeout = 10, .max_cm_retries = 2};
	struct xr_path path;
	const struct logged *rep;

	setup(&t, 23);
	path = path_from(&t, ACTIVE);
	CHECK(xr_cm_send_sidr_req(t.active_id, &path, &sp, t.p.now) == 0, "send SIDR_REQ");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	rep = event(&t, ACTIVE, XR_CM_SIDR_REP_RECEIVED);
	CHECK(rep && rep->sidr_rep.status == XR_CM_SIDR_SUCCESS &&
		  rep->sidr_rep.qpn == QPN_PASSIVE && rep->sidr_rep.qkey == SIDR_QKEY &&
		  t.active_id->state == XR_CM_IDLE,
	      "SIDR_REP: status %d qpn %#x qkey %#x", rep ? rep->sidr_rep.status : -1,
	      rep ? rep->sidr_rep.qpn : 0, rep ? rep->sidr_rep.qkey : 0);
	/* No such service. */
	sp.service_id = SERVICE + 7;
	CHECK(xr_cm_send_sidr_req(t.active_id, &path, &sp, t.p.now) == 0, "send SIDR_REQ again");
	h_run(&t.p, t.p.now + 100000000ull, NULL, NULL);
	CHECK(count_events(&t, ACTIVE, XR_CM_SIDR_REP_RECEIVED) == 2 &&
		  t.log[ACTIVE].ev[t.log[ACTIVE].n - 1].sidr_rep.status == XR_CM_SIDR_UNSUPPORTED,
	      "no service: status %d", t.log[ACTIVE].ev[t.log[ACTIVE].n - 1].sidr_rep.status);
	teardown(&t);
}

static void bad_calls(void)
{
	struct cm_test t;
	struct xr_cm_req_param rp = req_param(SERVICE, 20, 15);
	struct xr_path path;
	uint8_t big[200] = {0};
	struct xr_cm_id *other;

	setup(&t, 24);
	path = path_from(&t, ACTIVE);
	rp.private_data = big;
	rp.private_data_len = XR_CM_REQ_PRIVATE_DATA_SIZE + 1;
	CHECK(xr_cm_send_req(t.active_id, &path, &rp, t.p.now) == -EINVAL,
	      "REQ private data too long");
	rp = req_param(SERVICE, 20, 16);
	CHECK(xr_cm_send_req(t.active_id, &path, &rp, t.p.now) == -EINVAL, "16 CM retries");
	CHECK(t.active_id->state == XR_CM_IDLE && t.nwire == 0, "nothing sent, still idle");
	CHECK(xr_cm_send_rtu(t.active_id, NULL, 0) == -EINVAL &&
		  xr_cm_send_dreq(t.active_id, NULL, 0, t.p.now) == -EINVAL &&
		  xr_cm_send_drep(t.active_id, NULL, 0, t.p.now) == -EINVAL,
	      "RTU, DREQ, DREP from an idle id");
	CHECK(xr_cm_create_id(t.p.side[PASSIVE].core, handler, (void *)(intptr_t)PASSIVE, &other) ==
		  0,
	      "a second id");
	CHECK(xr_cm_listen(other, SERVICE) == -EBUSY, "a second listener on one service");
	xr_cm_destroy_id(other, t.p.now);
	teardown(&t);
}

int main(void)
{
	h_group("cm: connect and disconnect", connect_and_disconnect);
	h_group("cm: rejections", rejections);
	h_group("cm: destroy an established id", destroy_established);
	h_group("cm: DREQs crossing", crossing_dreqs);
	h_group("cm: a rejected ID comes again", reuse_after_reject);
	h_group("cm: lost messages", lost_messages);
	h_group("cm: MRA and duplicate REQs", slow_peers);
	h_group("cm: forged messages", forged);
	h_group("cm: stale REQ", stale_and_timewait);
	h_group("cm: REJ after the REP, RTU lost", rej_after_rep);
	h_group("cm: SIDR", sidr);
	h_group("cm: bad calls", bad_calls);
	return h_exit_status();
}
