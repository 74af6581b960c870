/* SPDX-License-Identifier: MIT */
/* Frame dispatch and progress: where packets and time enter the transport core. */
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cm.h"
#include "core.h"

void xr_core_init(struct xr_core *core, const struct xr_core_port *port)
{
	memset(core, 0, sizeof(*core));
	core->window_wait.prev = core->window_wait.next = &core->window_wait;
	core->port = *port;
	core->nlanes = port->engines ? port->engines : 1;
	if (core->nlanes > XR_MAX_ENGINES)
		core->nlanes = XR_MAX_ENGINES;
	for (uint32_t i = 0; i < core->nlanes; i++) {
		struct xr_ready_link *ready = &core->lanes[i].ready;

		ready->prev = ready->next = ready;
	}
	core->active_mtu = XR_MTU_1024;
	core->caps = XR_DEVICE_MASKED_ATOMICS | XR_DEVICE_SELECTIVE_REPEAT | XR_DEVICE_ECN;
	core->xdp_fast_path = XR_XDP_FAST_ACK | XR_XDP_FAST_DUP;
	/* Keys a peer cannot guess; without getrandom, at least not the same each run. */
	if (getrandom(&core->rng, sizeof(core->rng), GRND_NONBLOCK) != sizeof(core->rng)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		core->rng = (uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid();
	}
}

void xr_core_raise_event(struct xr_core *core, enum xr_event_type type, void *element)
{
	struct xr_async_event *ev;

	if (core->events_head - core->events_tail >= XR_MAX_EVENTS) {
		core->events_lost++;
		return;
	}
	core->event_forgotten[core->events_head % XR_MAX_EVENTS] = false;
	ev = &core->events[core->events_head++ % XR_MAX_EVENTS];
	memset(ev, 0, sizeof(*ev));
	ev->event_type = type;
	switch (xr_event_about(type)) {
	case XR_EVENT_ABOUT_CQ:
		ev->element.cq = element;
		break;
	case XR_EVENT_ABOUT_SRQ:
		ev->element.srq = element;
		break;
	case XR_EVENT_ABOUT_QP:
		ev->element.qp = element;
		break;
	case XR_EVENT_ABOUT_PORT:
		ev->element.port_num = 1;
		break;
	case XR_EVENT_ABOUT_DEVICE:
		break;
	}
}

enum xr_event_about xr_event_about(enum xr_event_type type)
{
	switch (type) {
	case XR_EVENT_CQ_ERR:
		return XR_EVENT_ABOUT_CQ;
	case XR_EVENT_SRQ_ERR:
	case XR_EVENT_SRQ_LIMIT_REACHED:
		return XR_EVENT_ABOUT_SRQ;
	case XR_EVENT_PORT_ACTIVE:
	case XR_EVENT_PORT_ERR:
	case XR_EVENT_GID_CHANGE:
	case XR_EVENT_LID_CHANGE:
	case XR_EVENT_PKEY_CHANGE:
	case XR_EVENT_SM_CHANGE:
	case XR_EVENT_CLIENT_REREGISTER:
		return XR_EVENT_ABOUT_PORT;
	case XR_EVENT_DEVICE_FATAL:
		return XR_EVENT_ABOUT_DEVICE;
	default:
		return XR_EVENT_ABOUT_QP;
	}
}

bool xr_core_take_event(struct xr_core *core, struct xr_async_event *ev)
{
	while (core->events_tail != core->events_head) {
		uint32_t i = core->events_tail++ % XR_MAX_EVENTS;

		if (core->event_forgotten[i])
			continue;
		*ev = core->events[i];
		return true;
	}
	return false;
}

void xr_core_forget_events(struct xr_core *core, const void *element)
{
	for (uint32_t n = core->events_tail; n != core->events_head; n++) {
		uint32_t i = n % XR_MAX_EVENTS;

		/* Every object kind shares the union's first member: its pointer. */
		if (core->events[i].element.qp == element)
			core->event_forgotten[i] = true;
	}
}

/* The slot is shared by every QPN with the same low bits: it must hold this one. */
static struct xr_qp_impl *qp_by_qpn(struct xr_core *core, uint32_t qpn)
{
	struct xr_qp_impl *qp = core->qps[xr_qpn_slot(qpn)];

	return qp && qp->pub.qp_num == qpn ? qp : NULL;
}

static uint32_t transport_of(const struct xr_qp_impl *qp)
{
	switch (qp->pub.qp_type) {
	case XR_QPT_UD:
		return XR_TRANSPORT_UD;
	case XR_QPT_UC:
		return XR_TRANSPORT_UC;
	default:
		return XR_TRANSPORT_RC;
	}
}

static bool mac_is_multicast(const uint8_t mac[6])
{
	return mac[0] & 1;
}

bool xr_core_gid_is_local(const struct xr_core *core, const union xr_gid *gid)
{
	static const union xr_gid empty;

	/* A GID that went away leaves its slot zero: no frame may match it. */
	if (!memcmp(gid, &empty, sizeof(*gid)))
		return false;
	for (int i = 0; i < core->num_gids; i++)
		if (!memcmp(&core->gids[i], gid, sizeof(*gid)))
			return true;
	return false;
}

/*
 * Whether a frame is one the QP it names may believe, by its addresses: a
 * connected QP's only from its peer to its own GID, a datagram's to any GID
 * of this device. Counts the reason when not. Before RTR a connected QP has
 * no path yet; the state check refuses its frames.
 */
static bool fits_path(struct xr_core *core, const struct xr_qp_impl *qp, const struct xr_pkt *pkt)
{
	if (qp->pub.qp_type == XR_QPT_UD) {
		if (xr_core_gid_is_local(core, &pkt->dgid))
			return true;
		core->stats.rx_bad_dst++;
		return false;
	}
	if (qp->pub.state < XR_QPS_RTR)
		return true;
	if (memcmp(&pkt->sgid, &qp->path.dgid, sizeof(pkt->sgid))) {
		core->stats.rx_bad_src++;
		return false;
	}
	if (memcmp(&pkt->dgid, &qp->path.sgid, sizeof(pkt->dgid))) {
		core->stats.rx_bad_dst++;
		return false;
	}
	return true;
}

/*
 * A connected QP's frames leave on the queue its peer's arrive on: there
 * one engine (and on a NIC one CPU's caches) serves both directions. A
 * datagram QP hears from many peers and keeps the queue it was given.
 */
static void follow_rx_queue(struct xr_qp_impl *qp, uint32_t queue)
{
	uint32_t tx_queues = qp->core->port.tx_queues;

	if (qp->pub.qp_type != XR_QPT_UD && queue < tx_queues && queue != qp->tx_queue)
		xr_core_qp_set_queue(qp, queue);
}

void xr_core_rx(struct xr_core *core, const uint8_t *frame, uint32_t len, uint32_t queue,
		uint64_t now)
{
	struct xr_qp_impl *qp;
	struct xr_pkt pkt;

	core->now = now;
	core->stats.rx_frames++;
	if (xr_pkt_parse(frame, len, &pkt) != XR_PARSE_OK) {
		core->stats.rx_malformed++;
		return;
	}
	/* Checked before anything else: a corrupted frame must never touch a QP. */
	if (!xr_pkt_icrc_ok(&pkt)) {
		core->stats.rx_bad_icrc++;
		return;
	}
	/*
	 * A segment that floods unknown unicast shows us frames meant for other
	 * hosts, whose QPNs may well exist here too; only datagrams come to a
	 * group's MAC.
	 */
	if (memcmp(pkt.dmac, core->mac, sizeof(core->mac)) &&
	    !(mac_is_multicast(pkt.dmac) && xr_opcode_transport(pkt.opcode) == XR_TRANSPORT_UD)) {
		core->stats.rx_bad_dst++;
		return;
	}
	if (pkt.dqpn == XR_GSI_QPN) {
		if (pkt.pkey != XR_DEFAULT_PKEY)
			core->stats.rx_bad_pkey++;
		else
			xr_gsi_rx(core, &pkt, now);
		return;
	}
	if (pkt.dqpn == XR_MULTICAST_QPN) {
		if (pkt.pkey != XR_DEFAULT_PKEY)
			core->stats.rx_bad_pkey++;
		else
			xr_mcast_rx(core, &pkt);
		return;
	}
	qp = qp_by_qpn(core, pkt.dqpn);
	if (!qp) {
		if (core->port.rx_foreign &&
		    core->port.rx_foreign(core->port.ctx, frame, len, pkt.dqpn))
			return;
		core->stats.rx_unknown_qp++;
		return;
	}
	if (pkt.pkey != XR_DEFAULT_PKEY) {
		core->stats.rx_bad_pkey++;
		return;
	}
	if (!fits_path(core, qp, &pkt))
		return;
	/* Congestion notification: for the requester of a connected QP, whatever it sends. */
	if (pkt.opflags & XR_OPF_CNP) {
		if ((qp->pub.qp_type == XR_QPT_RC || qp->pub.qp_type == XR_QPT_UC) &&
		    qp->pub.state >= XR_QPS_RTS && qp->pub.state != XR_QPS_ERR)
			xr_dcqcn_cnp_rx(qp, now);
		else
			core->stats.rx_bad_state++;
		return;
	}
	/* A frame of another transport than the QP's, or for a QP that takes none. */
	if (xr_opcode_transport(pkt.opcode) != transport_of(qp) || qp->pub.state < XR_QPS_RTR ||
	    qp->pub.state == XR_QPS_ERR) {
		core->stats.rx_bad_state++;
		return;
	}
	qp->rx_frames++;
	follow_rx_queue(qp, queue);
	/* A switch on the way was congested: tell the sender (UD has no connection to tell). */
	if (pkt.ecn == XR_ECN_CE && qp->pub.qp_type != XR_QPT_UD)
		xr_dcqcn_ce_rx(qp, now);
	/* Whatever the frame does (an ACK to send, WQEs to complete, a NAK to act on). */
	xr_core_qp_ready(qp);
	/* The first packet of a connection that arrives before RTS (verbs' COMM_EST). */
	if (qp->pub.state == XR_QPS_RTR && qp->pub.qp_type != XR_QPT_UD && !qp->comm_established) {
		qp->comm_established = true;
		xr_core_raise_event(core, XR_EVENT_COMM_EST, &qp->pub);
	}
	if (qp->pub.qp_type == XR_QPT_UD) {
		xr_ud_rx(qp, &pkt);
		return;
	}
	if (qp->pub.qp_type == XR_QPT_UC) {
		if (pkt.opflags & XR_OPF_REQUEST)
			xr_uc_rx(qp, &pkt);
		else
			core->stats.rx_bad_state++; /* nothing answers UC */
		return;
	}
	if (pkt.opflags & XR_OPF_REQUEST)
		xr_responder_rx(qp, &pkt, now);
	else if (qp->pub.state >= XR_QPS_RTS)
		xr_completer_rx(qp, &pkt, now);
	else
		core->stats.rx_bad_state++;
}

/* ---- scheduling: the ready list and the timer heap ---------------------- */

static void list_init(struct xr_ready_link *head)
{
	head->prev = head->next = head;
}

static bool list_empty(const struct xr_ready_link *head)
{
	return head->next == head;
}

static void list_append(struct xr_ready_link *head, struct xr_ready_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void list_unlink(struct xr_ready_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* Moves every link of from, in order, in front of those of to. */
static void list_prepend_all(struct xr_ready_link *to, struct xr_ready_link *from)
{
	if (list_empty(from))
		return;
	from->prev->next = to->next;
	to->next->prev = from->prev;
	to->next = from->next;
	from->next->prev = to;
	list_init(from);
}

static struct xr_qp_impl *qp_of_link(struct xr_ready_link *l)
{
	return (struct xr_qp_impl *)((char *)l - offsetof(struct xr_qp_impl, ready));
}

static struct xr_core_lane *lane_of(struct xr_qp_impl *qp)
{
	return &qp->core->lanes[qp->lane];
}

void xr_core_qp_ready(struct xr_qp_impl *qp)
{
	uint32_t bit = 1u << qp->lane;

	if (qp->window_waiting) {
		list_unlink(&qp->ready);
		qp->window_waiting = false;
	}
	if (!qp->ready.next)
		list_append(&lane_of(qp)->ready, &qp->ready);
	/*
	 * One lane needs no bit: its engine is the one to wake. Read by other
	 * threads, the bits are written only when they change.
	 */
	if (qp->core->nlanes > 1 &&
	    !(__atomic_load_n(&qp->core->lanes_readied, __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(&qp->core->lanes_readied, bit, __ATOMIC_SEQ_CST);
}

/*
 * The timers: a binary min-heap of the QPs that have a deadline, each QP
 * holding its position. A deadline moves on nearly every ACK (the
 * retransmit timer restarts), so moving one must be cheap: O(log n) here,
 * where a sorted list costs O(n) per move and a timer wheel needs a
 * resolution to pick and a sort of its slot; the earliest deadline, which
 * the engine sleeps until, is the root.
 */
static void heap_place(struct xr_core_lane *lane, uint32_t i, struct xr_qp_impl *qp)
{
	lane->timers[i] = qp;
	qp->timer_pos = i + 1;
}

static void heap_up(struct xr_core_lane *lane, uint32_t i)
{
	struct xr_qp_impl *qp = lane->timers[i];

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (lane->timers[parent]->timer_at <= qp->timer_at)
			break;
		heap_place(lane, i, lane->timers[parent]);
		i = parent;
	}
	heap_place(lane, i, qp);
}

static void heap_down(struct xr_core_lane *lane, uint32_t i)
{
	struct xr_qp_impl *qp = lane->timers[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= lane->ntimers)
			break;
		if (c + 1 < lane->ntimers &&
		    lane->timers[c + 1]->timer_at < lane->timers[c]->timer_at)
			c++;
		if (qp->timer_at <= lane->timers[c]->timer_at)
			break;
		heap_place(lane, i, lane->timers[c]);
		i = c;
	}
	heap_place(lane, i, qp);
}

/* qp's deadline is at (0: it has none). */
static void timer_set(struct xr_qp_impl *qp, uint64_t at)
{
	struct xr_core_lane *lane = lane_of(qp);
	uint32_t i;

	if (qp->timer_pos && qp->timer_at == at)
		return;
	if (!qp->timer_pos) {
		if (!at)
			return;
		qp->timer_at = at;
		heap_place(lane, lane->ntimers++, qp);
		heap_up(lane, lane->ntimers - 1);
		return;
	}
	i = qp->timer_pos - 1;
	if (!at) {
		struct xr_qp_impl *last = lane->timers[--lane->ntimers];

		qp->timer_pos = 0;
		/* The last entry fills the hole, then finds its place from there. */
		if (last != qp) {
			heap_place(lane, i, last);
			heap_up(lane, i);
			heap_down(lane, last->timer_pos - 1);
		}
		return;
	}
	qp->timer_at = at;
	heap_up(lane, i);
	heap_down(lane, qp->timer_pos - 1);
}

uint32_t xr_core_timer_count(const struct xr_core *core)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < core->nlanes; i++)
		n += core->lanes[i].ntimers;
	return n;
}

/* What qp has sent and not had acknowledged: PSNs it can be asked to send again. */
static uint32_t qp_in_flight(const struct xr_qp_impl *qp)
{
	int32_t n;

	if (qp->pub.qp_type != XR_QPT_RC ||
	    (qp->pub.state != XR_QPS_RTS && qp->pub.state != XR_QPS_SQD))
		return 0;
	n = xr_psn_diff(qp->tx_psn, qp->acked_psn) - 1;
	return n > 0 ? (uint32_t)n : 0;
}

/*
 * Every change of a QP's tx_psn or acked_psn happens in a round or in
 * xr_core_rx, which puts it on the ready list: the count taken after each
 * run is never behind for long, and between counts it errs high (ACKs not
 * counted yet), never low.
 */
static void count_in_flight(struct xr_qp_impl *qp, uint32_t n)
{
	qp->core->in_flight = qp->core->in_flight - qp->in_flight + n;
	lane_of(qp)->in_flight = lane_of(qp)->in_flight - qp->in_flight + n;
	qp->in_flight = n;
}

uint32_t xr_core_window_left(struct xr_qp_impl *qp)
{
	count_in_flight(qp, qp_in_flight(qp));
	return qp->core->in_flight < XR_CORE_WINDOW ? XR_CORE_WINDOW - qp->core->in_flight : 0;
}

void xr_core_qp_forget(struct xr_qp_impl *qp)
{
	if (qp->ready.next)
		list_unlink(&qp->ready);
	qp->window_waiting = false;
	timer_set(qp, 0);
	count_in_flight(qp, 0);
}

void xr_core_qp_set_queue(struct xr_qp_impl *qp, uint32_t queue)
{
	uint32_t lane = queue % qp->core->nlanes;
	uint64_t timer_at = qp->timer_pos ? qp->timer_at : 0;
	bool ready = qp->ready.next && !qp->window_waiting;

	qp->tx_queue = queue;
	if (lane == qp->lane)
		return;
	/* Out of the old lane's lists and counts, into the new one's. */
	if (ready)
		list_unlink(&qp->ready);
	timer_set(qp, 0);
	lane_of(qp)->in_flight -= qp->in_flight;
	qp->lane = lane;
	lane_of(qp)->in_flight += qp->in_flight;
	timer_set(qp, timer_at);
	if (ready)
		xr_core_qp_ready(qp);
	xr_xdp_publish_engine_sleeping(qp);
}

static uint64_t earlier_deadline(uint64_t a, uint64_t b)
{
	return !a || (b && b < a) ? b : a;
}

/* The earliest of qp's retransmit, probe, RNR and pacing deadlines (0: none runs). */
static uint64_t qp_deadline(const struct xr_qp_impl *qp)
{
	return earlier_deadline(
	    earlier_deadline(earlier_deadline(qp->retry_deadline, qp->probe_deadline),
			     qp->rnr_deadline),
	    xr_dcqcn_deadline(qp));
}

static bool recv_held(const struct xr_qp_impl *qp)
{
	return qp->srq ? qp->srq_wqe_held : qp->rq_tail != qp->rq_head;
}

/*
 * Whether qp has anything to do in the next round that needs no frame,
 * post, state change or timer first (those put it back on the list).
 */
static bool has_work(const struct xr_qp_impl *qp)
{
	const struct xr_swqe *tail;

	/* Flushes a full CQ held back. */
	if (qp->pub.state == XR_QPS_ERR)
		return qp->sq_tail != qp->sq_head || recv_held(qp);
	if (qp->pub.state < XR_QPS_RTR)
		return false;
	if (qp->ack_pending || xr_responder_pending(qp))
		return true;
	if (qp->sq_tail == qp->sq_head)
		return qp->sq_draining;
	/* Drained SQD sends nothing until the application moves it back to RTS. */
	if (qp->pub.state == XR_QPS_SQD && !qp->sq_draining)
		return false;
	/* Waiting out an RNR NAK: its timer brings the QP back. */
	if (qp->rnr_deadline)
		return false;
	/* Paced by DCQCN: its timer brings the QP back when it may send. */
	if (qp->pace_blocked)
		return false;
	/*
	 * Everything sent and the oldest WQE awaiting its ACK or response: only
	 * a frame or the retransmit timer moves it on, unless XDP may absorb
	 * ACKs, which only looking at the QP finds.
	 */
	tail = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
	if (!qp->core->xdp_qps && qp->pub.qp_type == XR_QPT_RC && qp->tx_idx == qp->sq_head &&
	    tail->state != XR_SWQE_DONE)
		return false;
	/* Sending, blocked by a window, or completions held back by a full CQ. */
	return true;
}

/*
 * Whether qp waits for nothing but room in the core's window: with nothing
 * in flight it has no ACK to look for, so it waits off the ready list, and
 * a round with a full window costs the QPs that can move, not all of them.
 */
static bool waits_for_window(const struct xr_qp_impl *qp)
{
	return (qp->pub.state == XR_QPS_RTS || qp->pub.state == XR_QPS_SQD) && qp->window_blocked &&
	       !qp->in_flight && !qp->ack_pending && !xr_responder_pending(qp) &&
	       qp->sq_tail == qp->tx_idx;
}

/* As many waiting QPs as the window has room for go back on the ready list, oldest first. */
static void admit_window_waiters(struct xr_core *core)
{
	uint32_t room = core->in_flight < XR_CORE_WINDOW ? XR_CORE_WINDOW - core->in_flight : 0;

	while (room-- && !list_empty(&core->window_wait))
		xr_core_qp_ready(qp_of_link(core->window_wait.next));
}

/* One QP's share of a round: what the old all-slots walk did for each QP. */
static void run_qp(struct xr_qp_impl *qp, uint64_t now)
{
	if (qp->pub.state == XR_QPS_ERR) {
		/* Completions held back by a full CQ go out once it has room. */
		xr_qp_flush(qp);
		return;
	}
	xr_qp_retire_sends(qp);
	if (qp->pub.state < XR_QPS_RTR)
		return;
	if (qp->pub.qp_type == XR_QPT_UD) {
		xr_ud_run(qp, XR_REQUESTER_ROUND_FRAMES);
		xr_qp_check_drained(qp);
		return;
	}
	if (qp->pub.qp_type == XR_QPT_UC) {
		xr_uc_run(qp, XR_REQUESTER_ROUND_FRAMES);
		xr_qp_check_drained(qp);
		return;
	}
	xr_responder_run(qp);
	if (qp->pub.state < XR_QPS_RTS)
		return;
	xr_xdp_poll_acks(qp, now);
	xr_completer_timers(qp, now);
	if (qp->pub.state == XR_QPS_ERR)
		return;
	xr_requester_run(qp, now, XR_REQUESTER_ROUND_FRAMES);
	xr_qp_check_drained(qp);
}

void xr_core_release(struct xr_core *core)
{
	xr_cm_free(core->cm);
	core->cm = NULL;
}

/*
 * A round runs each QP on the lane's ready list once, in list order, each
 * within its budget. One that still has work goes back to the end, unless
 * the transmit pool ran dry before its turn or during it: those go back in
 * front, in their order, so that the next round serves them first.
 */
uint64_t xr_core_progress_lane(struct xr_core *core, uint32_t index, uint64_t now)
{
	struct xr_core_lane *lane = &core->lanes[index];
	uint64_t no_buffer = core->stats.tx_no_buffer, cm_deadline = 0;
	struct xr_ready_link todo, starved, served;

	core->now = now;
	/* The CM's timers are the device's, not a QP's: the first engine's. */
	if (index == 0)
		cm_deadline = xr_cm_timers(core->cm, now);
	while (lane->ntimers && lane->timers[0]->timer_at <= now) {
		struct xr_qp_impl *qp = lane->timers[0];

		timer_set(qp, 0);
		xr_core_qp_ready(qp);
	}
	admit_window_waiters(core);
	list_init(&todo);
	list_init(&starved);
	list_init(&served);
	list_prepend_all(&todo, &lane->ready);
	while (!list_empty(&todo)) {
		struct xr_qp_impl *qp = qp_of_link(todo.next);

		list_unlink(&qp->ready);
		core->qp_visits++;
		run_qp(qp, now);
		timer_set(qp, qp_deadline(qp));
		count_in_flight(qp, qp_in_flight(qp));
		/* Already back on a list if running it gave it new work (ERR) or moved it. */
		if (qp->ready.next || !has_work(qp))
			continue;
		if (waits_for_window(qp)) {
			qp->window_waiting = true;
			list_append(&core->window_wait, &qp->ready);
		} else {
			list_append(core->stats.tx_no_buffer != no_buffer ? &starved : &served,
				    &qp->ready);
		}
	}
	list_prepend_all(&lane->ready, &served);
	list_prepend_all(&lane->ready, &starved);
	if (lane->ntimers && (!cm_deadline || lane->timers[0]->timer_at < cm_deadline))
		return lane->timers[0]->timer_at;
	return cm_deadline;
}

uint64_t xr_core_progress(struct xr_core *core, uint64_t now)
{
	uint64_t deadline = 0;

	for (uint32_t i = 0; i < core->nlanes; i++)
		deadline = earlier_deadline(deadline, xr_core_progress_lane(core, i, now));
	return deadline;
}

bool xr_core_outstanding(const struct xr_core *core)
{
	bool ready = false;

	for (uint32_t i = 0; i < core->nlanes && !ready; i++)
		ready = !list_empty(&core->lanes[i].ready);
	return core->in_flight || ready || !list_empty(&core->window_wait);
}

/*
 * QPs waiting for the core's window are nobody's in particular: the lanes
 * whose QPs have PSNs in flight spin anyway, and their ACKs admit them.
 */
bool xr_core_lane_outstanding(const struct xr_core *core, uint32_t index)
{
	const struct xr_core_lane *lane = &core->lanes[index];

	return lane->in_flight || !list_empty(&lane->ready);
}

void xr_core_path_init(const struct xr_core *core, struct xr_path *path,
		       const struct xr_global_route *grh, const uint8_t dmac[6])
{
	memcpy(path->smac, core->mac, 6);
	memcpy(path->dmac, dmac, 6);
	path->sgid = core->gids[grh->sgid_index];
	path->dgid = grh->dgid;
	path->traffic_class = grh->traffic_class;
	path->flow_label = grh->flow_label;
	/*
	 * ib_core takes a unicast hop limit from the route (64 here), not from
	 * the AH; a multicast AH has no route resolved and keeps its own, as
	 * rxe shows (perftest's 255).
	 */
	path->hop_limit = xr_gid_is_multicast(&grh->dgid) ? grh->hop_limit : 64;
}

uint8_t *xr_core_frame_begin(struct xr_core *core, struct xr_qp_impl *qp,
			     const struct xr_bth_fields *bth, uint32_t payload_len,
			     struct xr_pkt_out *out)
{
	return xr_core_frame_begin_to(core, &qp->path, bth, payload_len, out);
}

uint8_t *xr_core_frame_begin_to(struct xr_core *core, const struct xr_path *path,
				const struct xr_bth_fields *bth, uint32_t payload_len,
				struct xr_pkt_out *out)
{
	uint32_t cap;
	uint8_t *buf = core->port.tx_alloc(core->port.ctx, &cap);

	if (!buf) {
		core->stats.tx_no_buffer++;
		return NULL;
	}
	if (xr_pkt_build(buf, cap, path, bth, payload_len, core->ip_id++, out)) {
		/* The MTU bounds every frame below the buffer size: a bug if reached. */
		core->port.tx_abort(core->port.ctx, buf);
		return NULL;
	}
	return buf;
}

void xr_core_frame_send(struct xr_core *core, struct xr_qp_impl *qp, struct xr_pkt_out *out)
{
	bool plain_ack =
	    out->bth[0] == XR_OP_RC_ACK && (out->ext[0] & XR_AETH_TYPE_MASK) == XR_AETH_ACK;
	uint32_t queue = qp ? qp->tx_queue : 0;

	xr_pkt_seal(out);
	if (plain_ack && core->port.tx_submit_ack) {
		core->port.tx_submit_ack(core->port.ctx, queue, out->frame, out->frame_len);
	} else {
		core->tx_urgent += !plain_ack;
		core->port.tx_submit(core->port.ctx, queue, out->frame, out->frame_len);
	}
	core->stats.tx_frames++;
	if (qp)
		qp->cnt.tx_frames++;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

bool xr_core_send_ack(struct xr_core *core, struct xr_qp_impl *qp, uint8_t syndrome, uint32_t psn)
{
	struct xr_bth_fields bth = {.opcode = XR_OP_RC_ACK, .dqpn = qp->dest_qpn, .psn = psn};
	struct xr_pkt_out out;
	uint8_t *aeth;

	if (!xr_core_frame_begin(core, qp, &bth, 0, &out))
		return false;
	aeth = out.ext;
	aeth[0] = syndrome;
	put24(aeth + 1, qp->msn);
	xr_core_frame_send(core, qp, &out);
	return true;
}
