/* SPDX-License-Identifier: MIT */
/*
 * What the RDMA CM test programs (rdma_cm_e2e, rdma_cm_faults) share: event
 * names, bounded waits for events and completions, ids, endpoints (an id
 * with its CQs, QP and registered buffers), the RC client's setup and the
 * connection parameters both sides send. Include it after defining PROG
 * (the programs' name in messages); every wait is bounded, and anything
 * unexpected ends the program through die() (exit status 1).
 *
 * Events are copied and acknowledged as soon as they are taken: nothing the
 * CM reported stays unacknowledged, so xr_rdma_destroy_id (which waits for
 * the acknowledgements) never blocks, and a leaked id shows as
 * xr_rdma_destroy_event_channel failing with EBUSY.
 */
#ifndef XROCE_TESTS_RDMA_CM_COMMON_H
#define XROCE_TESTS_RDMA_CM_COMMON_H

#include <ctype.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>

#include "e2e_common.h"
#include "xroce/rdma_cm.h"

/* How long any one wait for an event or a completion may take. */
#define EVENT_TIMEOUT_MS 10000
#define CQ_TIMEOUT_MS 10000
/* client-expect's wait: an UNREACHABLE comes only once the CM gave up resending its REQ. */
#define EXPECT_TIMEOUT_MS 30000
/* Longest poll() in one go, so that the deadline is checked at least this often. */
#define POLL_SLICE_MS 1000

#define RESOLVE_TIMEOUT_MS 2000
#define LISTEN_BACKLOG 8

/* The RC server echoes into one buffer of this size: the largest SIZE a client may send. */
#define ECHO_BUF_SIZE (64u << 10)

#define CQ_DEPTH 16
#define QP_DEPTH 4

#define SEND_WR_ID 0x5e9du
#define RECV_WR_ID 0x9ec7u

/* The private data each side sends, and the reject's (11 bytes, no NUL, as the brief has it). */
#define REQ_PRIVATE_DATA "xroce-cm-req"
#define REP_PRIVATE_DATA "xroce-cm-rep"
#define REJ_PRIVATE_DATA "xroce-cm-no"

/* More than any CM message carries (a REP's 196 bytes, a SIDR REQ's 216). */
#define PRIVATE_DATA_MAX 256

static inline void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static inline void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- event names ------------------------------------------------------------ */

/* The short names the command line and the result lines use, by enum value. */
static const char *const event_names[] = {
    [XR_RDMA_CM_EVENT_ADDR_RESOLVED] = "ADDR_RESOLVED",
    [XR_RDMA_CM_EVENT_ADDR_ERROR] = "ADDR_ERROR",
    [XR_RDMA_CM_EVENT_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
    [XR_RDMA_CM_EVENT_ROUTE_ERROR] = "ROUTE_ERROR",
    [XR_RDMA_CM_EVENT_CONNECT_REQUEST] = "CONNECT_REQUEST",
    [XR_RDMA_CM_EVENT_CONNECT_RESPONSE] = "CONNECT_RESPONSE",
    [XR_RDMA_CM_EVENT_CONNECT_ERROR] = "CONNECT_ERROR",
    [XR_RDMA_CM_EVENT_UNREACHABLE] = "UNREACHABLE",
    [XR_RDMA_CM_EVENT_REJECTED] = "REJECTED",
    [XR_RDMA_CM_EVENT_ESTABLISHED] = "ESTABLISHED",
    [XR_RDMA_CM_EVENT_DISCONNECTED] = "DISCONNECTED",
    [XR_RDMA_CM_EVENT_DEVICE_REMOVAL] = "DEVICE_REMOVAL",
    [XR_RDMA_CM_EVENT_MULTICAST_JOIN] = "MULTICAST_JOIN",
    [XR_RDMA_CM_EVENT_MULTICAST_ERROR] = "MULTICAST_ERROR",
    [XR_RDMA_CM_EVENT_ADDR_CHANGE] = "ADDR_CHANGE",
    [XR_RDMA_CM_EVENT_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
};

#define EVENT_NAMES (int)(sizeof(event_names) / sizeof(event_names[0]))

/* The library's name of an event, for messages; never NULL, even for a value it does not know. */
static inline const char *event_str(enum xr_rdma_cm_event_type type)
{
	const char *s = xr_rdma_event_str(type);

	return s ? s : "(unknown event)";
}

/* The short name of an event, for the result lines. */
static inline const char *event_short_name(enum xr_rdma_cm_event_type type)
{
	return (int)type >= 0 && (int)type < EVENT_NAMES && event_names[type] ? event_names[type]
									      : "(unknown)";
}

/* The event named s, with or without the RDMA_CM_EVENT_ prefix; -1 for no event's name. */
static inline int parse_event_name(const char *s)
{
	static const char prefix[] = "RDMA_CM_EVENT_";

	if (!strncmp(s, prefix, sizeof(prefix) - 1))
		s += sizeof(prefix) - 1;
	for (int i = 0; i < EVENT_NAMES; i++)
		if (event_names[i] && !strcmp(s, event_names[i]))
			return i;
	return -1;
}

/* ---- the command line ------------------------------------------------------- */

static inline unsigned long parse_number(const char *s, unsigned long min, unsigned long max,
					 const char *what)
{
	unsigned long v;

	if (!parse_ulong(s, max, &v) || v < min)
		die("%s must be a number from %lu to %lu, not \"%s\"", what, min, max, s);
	return v;
}

/* ADDR (IPv4 or IPv6, numeric only: the test must not depend on a resolver) and PORT. */
static inline void parse_sockaddr(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
	    .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
	    .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res;
	int err = getaddrinfo(host, port, &hints, &res);

	if (err)
		die("\"%s\" port %s is no numeric address: %s", host, port, gai_strerror(err));
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

/* ---- the event channel ---------------------------------------------------------- */

/* An event, copied out of the CM's before it is acknowledged. */
struct cm_event {
	enum xr_rdma_cm_event_type type;
	int status;
	struct xr_rdma_cm_id *id;
	struct xr_rdma_cm_id *listen_id;
	uint8_t private_data[PRIVATE_DATA_MAX];
	size_t private_data_len;
	/* UD ids' events; its private_data pointer is cleared (it dies with the ack). */
	struct xr_rdma_ud_param ud;
	const void *join_context; /* a MULTICAST_JOIN's private_data: the join's context */
};

static inline struct xr_rdma_event_channel *create_channel(void)
{
	struct xr_rdma_event_channel *ch = xr_rdma_create_event_channel();
	int flags;

	if (!ch)
		die("xr_rdma_create_event_channel: %s", strerror(errno));
	/*
	 * Non-blocking, so that xr_rdma_get_cm_event after a poll() that woke
	 * without an event for us can never block past the deadline.
	 */
	flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("couldn't make the event channel's fd non-blocking: %s", strerror(errno));
	return ch;
}

static inline void destroy_channel(struct xr_rdma_event_channel *ch)
{
	int ret = xr_rdma_destroy_event_channel(ch);

	/* EBUSY here means an id was left behind. */
	if (ret)
		die("xr_rdma_destroy_event_channel: %s", strerror(-ret));
}

/* The events whose param librdmacm fills in; in the others it means nothing. */
static inline bool carries_param(enum xr_rdma_cm_event_type type)
{
	switch (type) {
	case XR_RDMA_CM_EVENT_CONNECT_REQUEST:
	case XR_RDMA_CM_EVENT_CONNECT_RESPONSE:
	case XR_RDMA_CM_EVENT_ESTABLISHED:
	case XR_RDMA_CM_EVENT_REJECTED:
	case XR_RDMA_CM_EVENT_UNREACHABLE:
	case XR_RDMA_CM_EVENT_MULTICAST_JOIN:
		return true;
	default:
		return false;
	}
}

/* Copies what the test reads of ev; the private data of a UD id's event is in param.ud. */
static inline void copy_event(const struct xr_rdma_cm_event *ev, struct cm_event *out)
{
	bool ud = ev->id && ev->id->ps == XR_RDMA_PS_UDP;
	const void *data = ud ? ev->param.ud.private_data : ev->param.conn.private_data;
	size_t len = ud ? ev->param.ud.private_data_len : ev->param.conn.private_data_len;

	memset(out, 0, sizeof(*out));
	out->type = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	if (!carries_param(ev->event))
		return;
	if (ud) {
		out->ud = ev->param.ud;
		out->ud.private_data = NULL;
	}
	if (ev->event == XR_RDMA_CM_EVENT_MULTICAST_JOIN) {
		out->join_context = data;
		return;
	}
	if (!data)
		len = 0;
	out->private_data_len = len < PRIVATE_DATA_MAX ? len : PRIVATE_DATA_MAX;
	if (out->private_data_len)
		memcpy(out->private_data, data, out->private_data_len);
}

/*
 * Takes the next event from ch within timeout_ms into *out and acknowledges
 * it; false when none came. waiting_for names what the caller expects, for
 * the messages.
 */
static inline bool poll_event(struct xr_rdma_event_channel *ch, int timeout_ms,
			      enum xr_rdma_cm_event_type waiting_for, struct cm_event *out)
{
	int64_t deadline = tool_now_ms() + timeout_ms;
	struct xr_rdma_cm_event *ev;
	int ret;

	for (;;) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		int64_t left;

		ret = xr_rdma_get_cm_event(ch, &ev);
		if (ret == 0)
			break;
		if (ret != -EAGAIN && ret != -EINTR)
			die("xr_rdma_get_cm_event (waiting for %s): %s", event_str(waiting_for),
			    strerror(-ret));
		left = deadline - tool_now_ms();
		if (left <= 0)
			return false;
		if (poll(&pfd, 1, left > POLL_SLICE_MS ? POLL_SLICE_MS : (int)left) < 0 &&
		    errno != EINTR)
			die("poll on the event channel: %s", strerror(errno));
	}
	copy_event(ev, out);
	ret = xr_rdma_ack_cm_event(ev);
	if (ret)
		die("xr_rdma_ack_cm_event (%s): %s", event_str(out->type), strerror(-ret));
	return true;
}

/* As poll_event, but nothing within timeout_ms is fatal. */
static inline void next_event(struct xr_rdma_event_channel *ch, int timeout_ms,
			      enum xr_rdma_cm_event_type waiting_for, struct cm_event *out)
{
	if (!poll_event(ch, timeout_ms, waiting_for, out))
		die("no event within %d ms: expected %s", timeout_ms, event_str(waiting_for));
}

/* The next event, which must be type, for id (NULL: any), with status 0. */
static inline void expect_event(struct xr_rdma_event_channel *ch, enum xr_rdma_cm_event_type type,
				struct xr_rdma_cm_id *id, struct cm_event *out)
{
	next_event(ch, EVENT_TIMEOUT_MS, type, out);
	if (out->type != type)
		die("expected %s, got %s (status %d)", event_str(type), event_str(out->type),
		    out->status);
	if (id && out->id != id)
		die("%s for id %p, expected it for id %p", event_str(type), (void *)out->id,
		    (void *)id);
	if (out->status)
		die("%s with status %d, expected 0", event_str(type), out->status);
}

/* ---- private data ---------------------------------------------------------------- */

/* The text the private data starts with (up to its first NUL); false unless printable. */
static inline bool private_text(const struct cm_event *ev, size_t *len)
{
	size_t n = 0;

	while (n < ev->private_data_len && ev->private_data[n])
		if (!isprint(ev->private_data[n++]))
			return false;
	*len = n;
	return n > 0;
}

/* ev's private data for a message: its text, or its first bytes in hex. */
static inline const char *describe_private_data(const struct cm_event *ev, char *out, size_t size)
{
	size_t len, used = 0;

	if (!ev->private_data_len) {
		snprintf(out, size, "none");
	} else if (private_text(ev, &len)) {
		snprintf(out, size, "\"%.*s\" (%zu bytes)", (int)len,
			 (const char *)ev->private_data, ev->private_data_len);
	} else {
		used = (size_t)snprintf(out, size, "%zu bytes:", ev->private_data_len);
		for (size_t i = 0; i < ev->private_data_len && i < 16 && used < size; i++)
			used +=
			    (size_t)snprintf(out + used, size - used, " %02x", ev->private_data[i]);
	}
	return out;
}

/* The private data must begin with want; it may be longer (the CM pads it with zeros). */
static inline void check_private_data(const struct cm_event *ev, const char *want)
{
	size_t n = strlen(want);
	char text[128];

	if (ev->private_data_len < n || memcmp(ev->private_data, want, n))
		die("%s carries private data %s, expected it to begin with \"%s\"",
		    event_str(ev->type), describe_private_data(ev, text, sizeof(text)), want);
}

/* ---- ids ---------------------------------------------------------------------------- */

static inline struct xr_rdma_cm_id *create_id(struct xr_rdma_event_channel *ch,
					      enum xr_rdma_port_space ps)
{
	struct xr_rdma_cm_id *id;
	int ret = xr_rdma_create_id(ch, &id, NULL, ps);

	if (ret)
		die("xr_rdma_create_id: %s", strerror(-ret));
	return id;
}

static inline void destroy_id(struct xr_rdma_cm_id *id)
{
	int ret = xr_rdma_destroy_id(id);

	if (ret)
		die("xr_rdma_destroy_id: %s", strerror(-ret));
}

/* A listening id on ADDR:PORT; says "listening" once the CM takes requests. */
static inline struct xr_rdma_cm_id *listen_with_backlog(struct xr_rdma_event_channel *ch,
							enum xr_rdma_port_space ps,
							const char *addr, const char *port,
							int backlog)
{
	struct xr_rdma_cm_id *id = create_id(ch, ps);
	struct sockaddr_storage ss;
	int ret;

	parse_sockaddr(addr, port, &ss);
	ret = xr_rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (ret)
		die("xr_rdma_bind_addr %s port %s: %s", addr, port, strerror(-ret));
	ret = xr_rdma_listen(id, backlog);
	if (ret)
		die("xr_rdma_listen: %s", strerror(-ret));
	printf("listening\n");
	return id;
}

static inline struct xr_rdma_cm_id *listen_on(struct xr_rdma_event_channel *ch,
					      enum xr_rdma_port_space ps, const char *addr,
					      const char *port)
{
	return listen_with_backlog(ch, ps, addr, port, LISTEN_BACKLOG);
}

/* Resolves dst's address and route on id: ADDR_RESOLVED, then ROUTE_RESOLVED. */
static inline void resolve(struct xr_rdma_event_channel *ch, struct xr_rdma_cm_id *id,
			   const struct sockaddr_storage *dst)
{
	struct cm_event ev;
	int ret = xr_rdma_resolve_addr(id, NULL, (const struct sockaddr *)dst, RESOLVE_TIMEOUT_MS);

	if (ret)
		die("xr_rdma_resolve_addr: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_ADDR_RESOLVED, id, &ev);
	ret = xr_rdma_resolve_route(id, RESOLVE_TIMEOUT_MS);
	if (ret)
		die("xr_rdma_resolve_route: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_ROUTE_RESOLVED, id, &ev);
	if (!id->verbs)
		die("the id has no device once its route is resolved");
}

/* ---- one side of a connection: its id, CQs, QP, buffers -------------------------------- */

struct endpoint {
	struct xr_rdma_cm_id *id;
	/* Apart: a SEND's completion and the peer's answer may come in either order. */
	struct xr_cq *send_cq, *recv_cq;
	uint8_t *send_buf, *recv_buf; /* the RC server echoes from recv_buf: send_buf is NULL */
	struct xr_mr *send_mr, *recv_mr;
	struct xr_ah *ah; /* the UD client's, to the server */
};

/* CQs on the id's device and a QP of type through the CM, on the CM's PD, depth WRs deep. */
static inline void create_qp_of_depth(struct endpoint *ep, enum xr_qp_type type, uint32_t depth)
{
	struct xr_qp_init_attr init = {
	    .cap = {.max_send_wr = depth,
		    .max_recv_wr = depth,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	    .qp_type = type,
	};
	int ret;

	if (!ep->id->verbs)
		die("the id has no device to create a QP on");
	ep->send_cq = xr_create_cq(ep->id->verbs, depth > CQ_DEPTH ? (int)depth : CQ_DEPTH, NULL);
	ep->recv_cq = xr_create_cq(ep->id->verbs, depth > CQ_DEPTH ? (int)depth : CQ_DEPTH, NULL);
	if (!ep->send_cq || !ep->recv_cq)
		die("xr_create_cq: %s", strerror(errno));
	init.send_cq = ep->send_cq;
	init.recv_cq = ep->recv_cq;
	ret = xr_rdma_create_qp(ep->id, NULL, &init);
	if (ret)
		die("xr_rdma_create_qp: %s", strerror(-ret));
	if (!ep->id->qp || ep->id->qp->qp_type != type)
		die("xr_rdma_create_qp succeeded but the id has no QP of type %d", type);
}

static inline void create_qp(struct endpoint *ep, enum xr_qp_type type)
{
	create_qp_of_depth(ep, type, QP_DEPTH);
}

/* A zeroed buffer of len bytes registered on the QP's PD for local writes. */
static inline uint8_t *alloc_registered(struct endpoint *ep, size_t len, struct xr_mr **mr)
{
	uint8_t *buf = calloc(1, len);

	if (!buf)
		die("out of memory for %zu bytes", len);
	*mr = xr_reg_mr(ep->id->qp->pd, buf, len, XR_ACCESS_LOCAL_WRITE);
	if (!*mr)
		die("xr_reg_mr of %zu bytes: %s", len, strerror(errno));
	return buf;
}

static inline void post_recv(struct endpoint *ep, uint8_t *buf, uint32_t len)
{
	struct xr_sge sge = sge_of(ep->recv_mr, buf, len);
	struct xr_recv_wr wr = {.wr_id = RECV_WR_ID, .sg_list = &sge, .num_sge = 1};
	struct xr_recv_wr *bad;
	int ret = xr_post_recv(ep->id->qp, &wr, &bad);

	if (ret)
		die("xr_post_recv of %u bytes: %s", len, strerror(-ret));
}

/* Where a UD SEND goes; NULL for RC. */
struct ud_dest {
	struct xr_ah *ah;
	uint32_t qpn, qkey;
};

static inline void post_send(struct endpoint *ep, struct xr_mr *mr, uint8_t *buf, uint32_t len,
			     const struct ud_dest *ud)
{
	struct xr_sge sge = sge_of(mr, buf, len);
	struct xr_send_wr wr = {
	    .wr_id = SEND_WR_ID,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = XR_WR_SEND,
	    .send_flags = XR_SEND_SIGNALED,
	};
	struct xr_send_wr *bad;
	int ret;

	if (ud) {
		wr.wr.ud.ah = ud->ah;
		wr.wr.ud.remote_qpn = ud->qpn;
		wr.wr.ud.remote_qkey = ud->qkey;
	}
	ret = xr_post_send(ep->id->qp, &wr, &bad);
	if (ret)
		die("xr_post_send of %u bytes: %s", len, strerror(-ret));
}

/* The one completion of wr_id on cq, which must be a success of opcode. */
static inline struct xr_wc wait_completion(struct xr_cq *cq, uint64_t wr_id,
					   enum xr_wc_opcode opcode, const char *what)
{
	struct xr_wc wc;

	if (poll_cq_until(cq, &wc, 1, 1, tool_now_ms() + CQ_TIMEOUT_MS) != 1)
		die("no %s completion within %d ms", what, CQ_TIMEOUT_MS);
	if (wc.wr_id != wr_id)
		die("%s completion for wr_id 0x%" PRIx64 ", expected 0x%" PRIx64, what, wc.wr_id,
		    wr_id);
	if (wc.status != XR_WC_SUCCESS)
		die("%s completed with \"%s\" (vendor_err %u)", what, xr_wc_status_str(wc.status),
		    wc.vendor_err);
	if (wc.opcode != opcode)
		die("%s completion has opcode %d, expected %d", what, wc.opcode, opcode);
	return wc;
}

/* The id's QP and what hangs on it, in the order verbs lets them go; the id stays. */
static inline void release_endpoint(struct endpoint *ep)
{
	int ret = 0;

	if (ep->ah && (ret = xr_destroy_ah(ep->ah)))
		die("xr_destroy_ah: %s", strerror(-ret));
	if (ep->id->qp)
		xr_rdma_destroy_qp(ep->id);
	if (ep->send_mr && (ret = xr_dereg_mr(ep->send_mr)))
		die("xr_dereg_mr: %s", strerror(-ret));
	if (ep->recv_mr && (ret = xr_dereg_mr(ep->recv_mr)))
		die("xr_dereg_mr: %s", strerror(-ret));
	if (ep->send_cq && (ret = xr_destroy_cq(ep->send_cq)))
		die("xr_destroy_cq: %s", strerror(-ret));
	if (ep->recv_cq && (ret = xr_destroy_cq(ep->recv_cq)))
		die("xr_destroy_cq: %s", strerror(-ret));
	free(ep->send_buf);
	free(ep->recv_buf);
	*ep = (struct endpoint){.id = ep->id};
}

/* The endpoint released and its id destroyed. */
static inline void end_endpoint(struct endpoint *ep)
{
	release_endpoint(ep);
	destroy_id(ep->id);
	ep->id = NULL;
}

/* ---- RC: the echo server and its client --------------------------------------------------- */

static const struct xr_rdma_conn_param client_conn_param = {
    .private_data = REQ_PRIVATE_DATA,
    .private_data_len = sizeof(REQ_PRIVATE_DATA) - 1,
    .responder_resources = 1,
    .initiator_depth = 1,
    .retry_count = 7,
    .rnr_retry_count = 7,
};

static const struct xr_rdma_conn_param server_conn_param = {
    .private_data = REP_PRIVATE_DATA,
    .private_data_len = sizeof(REP_PRIVATE_DATA) - 1,
    .responder_resources = 1,
    .initiator_depth = 1,
    .rnr_retry_count = 7,
};

/* The next CONNECT_REQUEST on listener; from a client of ours (its private data says so). */
static inline struct xr_rdma_cm_id *take_any_request(struct xr_rdma_event_channel *ch,
						     struct xr_rdma_cm_id *listener,
						     struct cm_event *out)
{
	struct cm_event ev;

	expect_event(ch, XR_RDMA_CM_EVENT_CONNECT_REQUEST, NULL, &ev);
	if (ev.listen_id != listener)
		die("CONNECT_REQUEST names listener %p, expected %p", (void *)ev.listen_id,
		    (void *)listener);
	if (!ev.id || ev.id == listener)
		die("CONNECT_REQUEST without a new id of its own");
	*out = ev;
	return ev.id;
}

static inline struct xr_rdma_cm_id *take_request(struct xr_rdma_event_channel *ch,
						 struct xr_rdma_cm_id *listener)
{
	struct cm_event ev;
	struct xr_rdma_cm_id *id = take_any_request(ch, listener, &ev);

	check_private_data(&ev, REQ_PRIVATE_DATA);
	return id;
}

/*
 * The next request on listener, accepted with a receive of ECHO_BUF_SIZE
 * posted (the peer may send as soon as it is established), once established.
 */
static inline void accept_echo_endpoint(struct xr_rdma_event_channel *ch,
					struct xr_rdma_cm_id *listener, struct endpoint *ep)
{
	struct cm_event ev;
	int ret;

	*ep = (struct endpoint){.id = take_request(ch, listener)};
	create_qp(ep, XR_QPT_RC);
	ep->recv_buf = alloc_registered(ep, ECHO_BUF_SIZE, &ep->recv_mr);
	post_recv(ep, ep->recv_buf, ECHO_BUF_SIZE);
	ret = xr_rdma_accept(ep->id, &server_conn_param);
	if (ret)
		die("xr_rdma_accept: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_ESTABLISHED, ep->id, &ev);
}

/*
 * The passive side's end of a connection: DISCONNECTED, then
 * xr_rdma_disconnect, as librdmacm's rping does (it sends the DREP the
 * peer's DREQ waits for). EINVAL there is reported but tolerated: Linux's
 * rdma_cm returns it for an id whose connection is already gone.
 */
static inline void await_peer_disconnect(struct xr_rdma_event_channel *ch, struct xr_rdma_cm_id *id)
{
	struct cm_event ev;
	int ret;

	expect_event(ch, XR_RDMA_CM_EVENT_DISCONNECTED, id, &ev);
	ret = xr_rdma_disconnect(id);
	if (ret == -EINVAL)
		fprintf(stderr, PROG ": xr_rdma_disconnect after DISCONNECTED: %s (tolerated)\n",
			strerror(-ret));
	else if (ret)
		die("xr_rdma_disconnect after DISCONNECTED: %s", strerror(-ret));
}

/* An RC id to DST:PORT, resolved, with its QP: what both RC clients start from. */
static inline void rc_client_setup(struct xr_rdma_event_channel *ch, struct endpoint *ep,
				   const char *dst, const char *port)
{
	struct sockaddr_storage ss;

	parse_sockaddr(dst, port, &ss);
	ep->id = create_id(ch, XR_RDMA_PS_TCP);
	resolve(ch, ep->id, &ss);
	create_qp(ep, XR_QPT_RC);
}

static inline void connect_id(struct xr_rdma_cm_id *id, const struct xr_rdma_conn_param *param)
{
	int ret = xr_rdma_connect(id, param);

	if (ret)
		die("xr_rdma_connect: %s", strerror(-ret));
}

/* The active side's end of a connection: xr_rdma_disconnect (DREQ), then DISCONNECTED. */
static inline void disconnect_and_wait(struct xr_rdma_event_channel *ch, struct xr_rdma_cm_id *id)
{
	struct cm_event ev;
	int ret = xr_rdma_disconnect(id);

	if (ret)
		die("xr_rdma_disconnect: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_DISCONNECTED, id, &ev);
}

/* The echo must be the message, byte for byte; says where it is not. */
static inline void check_echo(const struct endpoint *ep, const struct xr_wc *wc, uint32_t size)
{
	if (wc->byte_len != size)
		die("the echo is %u bytes, sent %u", wc->byte_len, size);
	if (memcmp(ep->send_buf, ep->recv_buf, size)) {
		size_t i = 0;

		while (ep->send_buf[i] == ep->recv_buf[i])
			i++;
		die("the echo differs from byte %zu of %u on: 0x%02x, sent 0x%02x", i, size,
		    ep->recv_buf[i], ep->send_buf[i]);
	}
}

/* ---- the command line's modes ------------------------------------------------------- */

struct cm_mode {
	const char *name;
	int min_args, max_args; /* after the mode's name */
	int (*run)(char **args);
};

/*
 * Runs the mode argv[1] names with its arguments, stdout line-buffered (the
 * script waits for lines while the process runs: each must reach the log at
 * once); usage() for an unknown mode or a wrong count of arguments.
 */
static inline int run_mode(int argc, char **argv, const struct cm_mode *modes, size_t n,
			   void (*usage)(void))
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc >= 2 && i < n; i++) {
		int nargs = argc - 2;

		if (strcmp(argv[1], modes[i].name))
			continue;
		if (nargs < modes[i].min_args || nargs > modes[i].max_args)
			break;
		/* args[1] is the mode's first argument, as argv[1] is a program's. */
		return modes[i].run(argv + 1);
	}
	usage();
	return 2;
}

#endif /* XROCE_TESTS_RDMA_CM_COMMON_H */
