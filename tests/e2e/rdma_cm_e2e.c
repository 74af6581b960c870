/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm_e2e: the RDMA connection manager (xroce/rdma_cm.h) end to end
 * between two processes, through the CM alone: no out-of-band socket, every
 * address, QP number and key travels in the CM's own messages.
 *
 *   rdma_cm_e2e server ADDR PORT COUNT         echoes COUNT RC connections, one after another
 *   rdma_cm_e2e server-establish ADDR PORT     accepts any client, takes one message, disconnects
 *   rdma_cm_e2e server-reject ADDR PORT        rejects one request with private data
 *   rdma_cm_e2e client DST PORT SIZE           SENDs SIZE bytes, checks the echo
 *   rdma_cm_e2e client-expect DST PORT EVENT [STATUS]
 *                                              connects, expects EVENT (and STATUS) first
 *   rdma_cm_e2e resolve-expect DST TIMEOUT_MS EVENT
 *                                              resolves DST, expects EVENT, says how long
 *   rdma_cm_e2e ud-server ADDR PORT            answers a SIDR request, checks one datagram
 *   rdma_cm_e2e ud-client DST PORT             SIDR-resolves the server, sends one datagram
 *   rdma_cm_e2e mc-recv SRC GROUP COUNT        checks the join API's errors, joins GROUP
 *                                              from SRC, checks COUNT datagrams and no more
 *   rdma_cm_e2e mc-send SRC GROUP COUNT        joins GROUP send-only, sends COUNT datagrams
 *
 * ADDR and DST are numeric IPv4 or IPv6 addresses; EVENT is an event's name
 * without its RDMA_CM_EVENT_ prefix (REJECTED, ADDR_ERROR, ...); STATUS is
 * the event's status (a reject reason, or a negative errno).
 *
 * What the script checks is on stdout, one line each, flushed at once:
 * "listening", "served N", "server done", "rejected", "echo ok SIZE",
 * "private data: TEXT", "got EVENT status S", "got EVENT status S after MS
 * ms", "accepted", "ud ok", "ud sent SIZE", "join errors ok", "joined",
 * "mc received COUNT", "mc sent COUNT". Every wait is bounded; anything
 * unexpected (an event, a status, a completion, a byte) is described on
 * stderr and the exit status is 1 (2 for a usage error).
 * The helpers they run on are in rdma_cm_common.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* e2e_common.h's helpers need it; the Makefile defines it too */
#endif
#define PROG "rdma_cm_e2e"
#include "rdma_cm_common.h"

#define UD_MSG_SIZE 200
/* Room after the GRH: more than the message, so that a longer datagram shows in byte_len. */
#define UD_RECV_ROOM 256
/* Both sides know it: the UD server has nothing else to learn the client's seed from. */
#define UD_SEED 0x0dda7a00u

/*
 * Multicast: datagram i carries the pattern of MC_SEED + i; after the last,
 * MC_QUIET_MS without another shows that no more arrived than were sent.
 */
#define MC_MAX_COUNT 32
#define MC_MSG_SIZE 512
#define MC_SEED 0x3c057a00u
#define MC_QUIET_MS 500

/* One connection: accept it, echo the one message it sends, and see it go. */
static void serve_one(struct xr_rdma_event_channel *ch, struct xr_rdma_cm_id *listener)
{
	struct endpoint ep;
	struct xr_wc wc;

	accept_echo_endpoint(ch, listener, &ep);

	wc = wait_completion(ep.recv_cq, RECV_WR_ID, XR_WC_RECV, "receive");
	if (wc.byte_len == 0 || wc.byte_len > ECHO_BUF_SIZE)
		die("the receive completed with byte_len %u", wc.byte_len);
	/* The echo leaves from where it arrived: the receive's MR covers it. */
	post_send(&ep, ep.recv_mr, ep.recv_buf, wc.byte_len, NULL);
	wait_completion(ep.send_cq, SEND_WR_ID, XR_WC_SEND, "echo send");

	await_peer_disconnect(ch, ep.id);
	end_endpoint(&ep);
}

static int run_server(char **argv)
{
	unsigned long count = parse_number(argv[3], 1, 1000, "COUNT");
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *listener = listen_on(ch, XR_RDMA_PS_TCP, argv[1], argv[2]);

	for (unsigned long n = 1; n <= count; n++) {
		serve_one(ch, listener);
		printf("served %lu\n", n);
	}
	destroy_id(listener);
	destroy_channel(ch);
	printf("server done\n");
	return 0;
}

static int run_server_reject(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *listener = listen_on(ch, XR_RDMA_PS_TCP, argv[1], argv[2]);
	struct xr_rdma_cm_id *id = take_request(ch, listener);
	int ret = xr_rdma_reject(id, REJ_PRIVATE_DATA, sizeof(REJ_PRIVATE_DATA) - 1);

	if (ret)
		die("xr_rdma_reject: %s", strerror(-ret));
	destroy_id(id);
	printf("rejected\n");
	destroy_id(listener);
	destroy_channel(ch);
	return 0;
}

static int run_client(char **argv)
{
	uint32_t size = (uint32_t)parse_number(argv[3], 1, ECHO_BUF_SIZE, "SIZE");
	struct xr_rdma_event_channel *ch = create_channel();
	struct endpoint ep = {0};
	struct cm_event ev;
	struct xr_wc wc;

	rc_client_setup(ch, &ep, argv[1], argv[2]);
	ep.send_buf = alloc_registered(&ep, size, &ep.send_mr);
	ep.recv_buf = alloc_registered(&ep, size, &ep.recv_mr);
	/* Seeded by the pid: each client's message differs, so a stale echo shows. */
	fill_pattern(ep.send_buf, (uint32_t)getpid(), 0, size);
	/* Before connecting: the echo may come as soon as the server sees the message. */
	post_recv(&ep, ep.recv_buf, size);
	connect_id(ep.id, &client_conn_param);
	expect_event(ch, XR_RDMA_CM_EVENT_ESTABLISHED, ep.id, &ev);
	check_private_data(&ev, REP_PRIVATE_DATA);

	post_send(&ep, ep.send_mr, ep.send_buf, size, NULL);
	wait_completion(ep.send_cq, SEND_WR_ID, XR_WC_SEND, "send");
	wc = wait_completion(ep.recv_cq, RECV_WR_ID, XR_WC_RECV, "echo receive");
	check_echo(&ep, &wc, size);

	disconnect_and_wait(ch, ep.id);
	end_endpoint(&ep);
	destroy_channel(ch);
	printf("echo ok %u\n", size);
	return 0;
}

/* A signed STATUS (reject reasons are positive, errnos negative). */
static int parse_status(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < -4096 || v > 65535)
		die("STATUS must be a number, not \"%s\"", s);
	return (int)v;
}

static int event_arg(const char *s)
{
	int type = parse_event_name(s);

	if (type < 0)
		die("\"%s\" is no event's name (e.g. REJECTED, ADDR_ERROR)", s);
	return type;
}

static int run_client_expect(char **argv)
{
	enum xr_rdma_cm_event_type want = event_arg(argv[3]);
	bool check_status = argv[4] != NULL; /* the list ends in NULL, as argv does */
	int want_status = check_status ? parse_status(argv[4]) : 0;
	struct xr_rdma_event_channel *ch = create_channel();
	struct endpoint ep = {0};
	struct cm_event ev;
	size_t len;

	rc_client_setup(ch, &ep, argv[1], argv[2]);
	connect_id(ep.id, &client_conn_param);
	next_event(ch, EXPECT_TIMEOUT_MS, want, &ev);
	if (ev.type != want)
		die("expected %s as the first event of the connection, got %s (status %d)",
		    event_str(want), event_str(ev.type), ev.status);
	if (ev.id != ep.id)
		die("%s for id %p, expected it for id %p", event_str(want), (void *)ev.id,
		    (void *)ep.id);
	if (check_status && ev.status != want_status)
		die("%s with status %d, expected %d", event_str(want), ev.status, want_status);
	if (want == XR_RDMA_CM_EVENT_REJECTED && private_text(&ev, &len))
		printf("private data: %.*s\n", (int)len, (const char *)ev.private_data);
	printf("got %s status %d\n", event_names[want], ev.status);

	/* A connection that was expected to come up still ends as it should. */
	if (want == XR_RDMA_CM_EVENT_ESTABLISHED)
		disconnect_and_wait(ch, ep.id);
	end_endpoint(&ep);
	destroy_channel(ch);
	return 0;
}

/*
 * A connection from any client (Linux's rping, in the interop test): accept
 * it, take the first message it sends (rping's buffer advertisement, 16
 * bytes), then end it from this side.
 */
static int run_server_establish(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *listener = listen_on(ch, XR_RDMA_PS_TCP, argv[1], argv[2]);
	const struct xr_rdma_conn_param accept_param = {
	    .responder_resources = 1,
	    .initiator_depth = 1,
	    .rnr_retry_count = 7,
	};
	struct endpoint ep = {0};
	struct cm_event ev;
	struct xr_wc wc;
	int ret;

	ep.id = take_any_request(ch, listener, &ev);
	printf("request\n");
	create_qp(&ep, XR_QPT_RC);
	ep.recv_buf = alloc_registered(&ep, ECHO_BUF_SIZE, &ep.recv_mr);
	post_recv(&ep, ep.recv_buf, ECHO_BUF_SIZE);
	ret = xr_rdma_accept(ep.id, &accept_param);
	if (ret)
		die("xr_rdma_accept: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_ESTABLISHED, ep.id, &ev);
	printf("established\n");
	wc = wait_completion(ep.recv_cq, RECV_WR_ID, XR_WC_RECV, "receive");
	printf("received %u bytes\n", wc.byte_len);
	disconnect_and_wait(ch, ep.id);
	printf("disconnected\n");
	end_endpoint(&ep);
	destroy_id(listener);
	destroy_channel(ch);
	return 0;
}

static int run_resolve_expect(char **argv)
{
	int timeout_ms = (int)parse_number(argv[2], 1, 60000, "TIMEOUT_MS");
	enum xr_rdma_cm_event_type want = event_arg(argv[3]);
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *id = create_id(ch, XR_RDMA_PS_TCP);
	struct sockaddr_storage dst;
	struct cm_event ev;
	int64_t start;
	int ret;

	parse_sockaddr(argv[1], "0", &dst);
	start = tool_now_ms();
	ret = xr_rdma_resolve_addr(id, NULL, (const struct sockaddr *)&dst, timeout_ms);
	if (ret)
		die("xr_rdma_resolve_addr: %s", strerror(-ret));
	/* The CM's own timeout must run out before ours does. */
	next_event(ch, timeout_ms + EVENT_TIMEOUT_MS, want, &ev);
	if (ev.type != want)
		die("expected %s, got %s (status %d) after %" PRId64 " ms", event_str(want),
		    event_str(ev.type), ev.status, tool_now_ms() - start);
	printf("got %s status %d after %" PRId64 " ms\n", event_names[want], ev.status,
	       tool_now_ms() - start);
	destroy_id(id);
	destroy_channel(ch);
	return 0;
}

/* ---- UD: SIDR ------------------------------------------------------------------------------ */

/*
 * The next receive completes into buf: the 40-byte GRH every UD receive
 * starts with, then size bytes of seed's pattern.
 */
static void check_datagram(struct endpoint *ep, const uint8_t *buf, uint32_t size, uint32_t seed,
			   const char *what)
{
	struct xr_wc wc = wait_completion(ep->recv_cq, RECV_WR_ID, XR_WC_RECV, what);
	ssize_t bad;

	if (wc.byte_len != XR_GRH_SIZE + size)
		die("%s's receive has byte_len %u, expected %d + %u", what, wc.byte_len,
		    XR_GRH_SIZE, size);
	bad = pattern_mismatch(buf + XR_GRH_SIZE, seed, 0, size);
	if (bad >= 0)
		die("%s differs at byte %zd: 0x%02x, expected 0x%02x", what, bad,
		    buf[XR_GRH_SIZE + bad], pattern_byte(seed, (size_t)bad));
}

/*
 * Answers one SIDR request with a UD QP of its own (the CM puts its QPN and
 * Q_Key in the reply), then checks the one datagram the client sends it.
 */
static int run_ud_server(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	struct xr_rdma_cm_id *listener = listen_on(ch, XR_RDMA_PS_UDP, argv[1], argv[2]);
	struct endpoint ep = {.id = take_request(ch, listener)};
	const uint32_t room = XR_GRH_SIZE + UD_RECV_ROOM;
	int ret;

	create_qp(&ep, XR_QPT_UD);
	ep.recv_buf = alloc_registered(&ep, room, &ep.recv_mr);
	post_recv(&ep, ep.recv_buf, room);
	/* NULL: with a QP on the id, the CM takes the QPN from it. */
	ret = xr_rdma_accept(ep.id, NULL);
	if (ret)
		die("xr_rdma_accept: %s", strerror(-ret));
	printf("accepted\n");

	check_datagram(&ep, ep.recv_buf, UD_MSG_SIZE, UD_SEED, "the datagram");
	printf("ud ok\n");

	end_endpoint(&ep);
	destroy_id(listener);
	destroy_channel(ch);
	return 0;
}

/* The SIDR reply's QPN and Q_Key must be a UD QP's, with the Q_Key of RDMA_PS_UDP. */
static void check_sidr_reply(const struct cm_event *ev)
{
	if (ev->ud.qp_num == 0 || ev->ud.qp_num > 0xffffff)
		die("ESTABLISHED names QPN 0x%x", ev->ud.qp_num);
	if (ev->ud.qkey != XR_RDMA_UDP_QKEY)
		die("ESTABLISHED names Q_Key 0x%08x, expected 0x%08x", ev->ud.qkey,
		    XR_RDMA_UDP_QKEY);
}

static int run_ud_client(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	struct endpoint ep = {0};
	struct sockaddr_storage ss;
	struct xr_ah_attr ah_attr;
	struct ud_dest dest;
	struct cm_event ev;
	/* UD ids ignore everything but the private data (SIDR has no QP parameters to agree). */
	struct xr_rdma_conn_param param = {
	    .private_data = REQ_PRIVATE_DATA,
	    .private_data_len = sizeof(REQ_PRIVATE_DATA) - 1,
	};

	parse_sockaddr(argv[1], argv[2], &ss);
	ep.id = create_id(ch, XR_RDMA_PS_UDP);
	resolve(ch, ep.id, &ss);
	create_qp(&ep, XR_QPT_UD);
	ep.send_buf = alloc_registered(&ep, UD_MSG_SIZE, &ep.send_mr);
	fill_pattern(ep.send_buf, UD_SEED, 0, UD_MSG_SIZE);
	/* On a UD id this sends a SIDR REQ; the reply comes as ESTABLISHED. */
	connect_id(ep.id, &param);
	expect_event(ch, XR_RDMA_CM_EVENT_ESTABLISHED, ep.id, &ev);
	check_sidr_reply(&ev);

	ah_attr = ev.ud.ah_attr;
	ep.ah = xr_create_ah(ep.id->qp->pd, &ah_attr);
	if (!ep.ah)
		die("xr_create_ah from ESTABLISHED's ah_attr: %s", strerror(errno));
	dest = (struct ud_dest){.ah = ep.ah, .qpn = ev.ud.qp_num, .qkey = ev.ud.qkey};
	post_send(&ep, ep.send_mr, ep.send_buf, UD_MSG_SIZE, &dest);
	wait_completion(ep.send_cq, SEND_WR_ID, XR_WC_SEND, "datagram send");
	printf("ud sent %d\n", UD_MSG_SIZE);

	end_endpoint(&ep);
	destroy_channel(ch);
	return 0;
}

/* ---- UD: multicast -------------------------------------------------------------------------- */

/* The joins' context: MULTICAST_JOIN must hand back this address. */
static int join_context;

static void expect_fails(int ret, int err, const char *what)
{
	if (ret != -err)
		die("%s returned %d (%s), expected -%d (%s)", what, ret, ret ? strerror(-ret) : "",
		    err, strerror(err));
}

static void bind_to(struct xr_rdma_cm_id *id, const char *addr)
{
	struct sockaddr_storage ss;
	int ret;

	parse_sockaddr(addr, "0", &ss);
	ret = xr_rdma_bind_addr(id, (struct sockaddr *)&ss);
	if (ret)
		die("xr_rdma_bind_addr %s: %s", addr, strerror(-ret));
}

/* Each wrong join fails as the API says; no event comes of any of them. */
static void check_join_errors(struct xr_rdma_event_channel *ch, const char *src,
			      const struct sockaddr *group)
{
	struct xr_rdma_cm_id *rc = create_id(ch, XR_RDMA_PS_TCP),
			     *ud = create_id(ch, XR_RDMA_PS_UDP);
	struct xr_rdma_cm_join_mc_attr_ex attr = {
	    .comp_mask = XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS | XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
	    .join_flags = XR_RDMA_MC_JOIN_FLAG_FULLMEMBER,
	    .addr = group,
	};
	struct sockaddr_storage unicast;
	struct xr_rdma_cm_event *ev;

	expect_fails(xr_rdma_join_multicast(ud, group, NULL), EINVAL, "a join before binding");
	bind_to(rc, src);
	expect_fails(xr_rdma_join_multicast(rc, group, NULL), EINVAL, "an RC id's join");
	bind_to(ud, src);
	parse_sockaddr(src, "0", &unicast);
	expect_fails(xr_rdma_join_multicast(ud, (struct sockaddr *)&unicast, NULL), EINVAL,
		     "a join of a unicast address");
	attr.comp_mask |= XR_RDMA_CM_JOIN_MC_ATTR_RESERVED;
	expect_fails(xr_rdma_join_multicast_ex(ud, &attr, NULL), EOPNOTSUPP,
		     "a join with an unknown comp_mask bit");
	attr.comp_mask = XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	expect_fails(xr_rdma_join_multicast_ex(ud, &attr, NULL), EINVAL, "a join without flags");
	attr.comp_mask |= XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = XR_RDMA_MC_JOIN_FLAG_RESERVED;
	expect_fails(xr_rdma_join_multicast_ex(ud, &attr, NULL), EINVAL, "a join of unknown flags");
	expect_fails(xr_rdma_leave_multicast(ud, group), EADDRNOTAVAIL,
		     "leaving a group not joined");
	if (xr_rdma_get_cm_event(ch, &ev) != -EAGAIN)
		die("a join that failed left an event");
	destroy_id(rc);
	destroy_id(ud);
	printf("join errors ok\n");
}

/* The group's GID: IPv4-mapped for an IPv4 group. */
static union xr_gid group_gid(const struct sockaddr *group)
{
	union xr_gid gid = {0};

	if (group->sa_family == AF_INET6) {
		memcpy(gid.raw, &((const struct sockaddr_in6 *)group)->sin6_addr, 16);
	} else {
		gid.raw[10] = gid.raw[11] = 0xff;
		memcpy(gid.raw + 12, &((const struct sockaddr_in *)group)->sin_addr, 4);
	}
	return gid;
}

/* A UD id on src with a QP depth WRs deep, not joined yet. */
static void mc_endpoint(struct xr_rdma_event_channel *ch, struct endpoint *ep, const char *src,
			uint32_t depth)
{
	ep->id = create_id(ch, XR_RDMA_PS_UDP);
	bind_to(ep->id, src);
	create_qp_of_depth(ep, XR_QPT_UD, depth);
}

/* Joins group with flags: MULTICAST_JOIN names the group, QPN 0xFFFFFF and the UDP Q_Key. */
static void mc_join(struct xr_rdma_event_channel *ch, struct endpoint *ep,
		    const struct sockaddr *group, uint32_t flags, struct cm_event *ev)
{
	struct xr_rdma_cm_join_mc_attr_ex attr = {
	    .comp_mask = XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS | XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
	    .join_flags = flags,
	    .addr = group,
	};
	union xr_gid gid = group_gid(group);
	int ret = xr_rdma_join_multicast_ex(ep->id, &attr, &join_context);

	if (ret)
		die("xr_rdma_join_multicast_ex: %s", strerror(-ret));
	expect_event(ch, XR_RDMA_CM_EVENT_MULTICAST_JOIN, ep->id, ev);
	if (ev->join_context != &join_context)
		die("MULTICAST_JOIN carries context %p, not the join's %p", ev->join_context,
		    (void *)&join_context);
	if (ev->ud.qp_num != XR_MULTICAST_QPN || ev->ud.qkey != XR_RDMA_UDP_QKEY)
		die("MULTICAST_JOIN names QPN 0x%x and Q_Key 0x%08x, expected 0x%x and 0x%08x",
		    ev->ud.qp_num, ev->ud.qkey, XR_MULTICAST_QPN, XR_RDMA_UDP_QKEY);
	if (!ev->ud.ah_attr.is_global || memcmp(&ev->ud.ah_attr.grh.dgid, &gid, sizeof(gid)))
		die("MULTICAST_JOIN's address handle is not to the group's GID");
	expect_fails(xr_rdma_join_multicast(ep->id, group, NULL), EADDRINUSE,
		     "joining the same group again");
}

static void mc_leave(struct endpoint *ep, const struct sockaddr *group)
{
	int ret = xr_rdma_leave_multicast(ep->id, group);

	if (ret)
		die("xr_rdma_leave_multicast: %s", strerror(-ret));
	expect_fails(xr_rdma_leave_multicast(ep->id, group), EADDRNOTAVAIL, "leaving twice");
}

static int run_mc_recv(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	uint32_t count = (uint32_t)parse_number(argv[3], 1, MC_MAX_COUNT, "COUNT");
	const uint32_t slot = XR_GRH_SIZE + MC_MSG_SIZE + 64; /* room: a longer one shows */
	struct endpoint ep = {0};
	struct sockaddr_storage group;
	struct cm_event ev;
	struct xr_wc extra;

	parse_sockaddr(argv[2], "0", &group);
	check_join_errors(ch, argv[1], (struct sockaddr *)&group);
	mc_endpoint(ch, &ep, argv[1], count);
	ep.recv_buf = alloc_registered(&ep, (size_t)slot * count, &ep.recv_mr);
	for (uint32_t i = 0; i < count; i++)
		post_recv(&ep, ep.recv_buf + (size_t)slot * i, slot);
	mc_join(ch, &ep, (struct sockaddr *)&group, XR_RDMA_MC_JOIN_FLAG_FULLMEMBER, &ev);
	printf("joined\n");

	for (uint32_t i = 0; i < count; i++) {
		char what[32];

		snprintf(what, sizeof(what), "datagram %u", i);
		check_datagram(&ep, ep.recv_buf + (size_t)slot * i, MC_MSG_SIZE, MC_SEED + i, what);
	}
	if (poll_cq_until(ep.recv_cq, &extra, 1, 1, tool_now_ms() + MC_QUIET_MS))
		die("a datagram more than the %u sent arrived", count);
	mc_leave(&ep, (struct sockaddr *)&group);
	printf("mc received %u\n", count);
	end_endpoint(&ep);
	destroy_channel(ch);
	return 0;
}

static int run_mc_send(char **argv)
{
	struct xr_rdma_event_channel *ch = create_channel();
	uint32_t count = (uint32_t)parse_number(argv[3], 1, MC_MAX_COUNT, "COUNT");
	struct endpoint ep = {0};
	struct sockaddr_storage group;
	struct ud_dest dest;
	struct cm_event ev;

	parse_sockaddr(argv[2], "0", &group);
	mc_endpoint(ch, &ep, argv[1], QP_DEPTH);
	ep.send_buf = alloc_registered(&ep, MC_MSG_SIZE, &ep.send_mr);
	mc_join(ch, &ep, (struct sockaddr *)&group, XR_RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, &ev);
	ep.ah = xr_create_ah(ep.id->qp->pd, &ev.ud.ah_attr);
	if (!ep.ah)
		die("xr_create_ah from MULTICAST_JOIN's ah_attr: %s", strerror(errno));
	dest = (struct ud_dest){.ah = ep.ah, .qpn = ev.ud.qp_num, .qkey = ev.ud.qkey};
	for (uint32_t i = 0; i < count; i++) {
		fill_pattern(ep.send_buf, MC_SEED + i, 0, MC_MSG_SIZE);
		post_send(&ep, ep.send_mr, ep.send_buf, MC_MSG_SIZE, &dest);
		wait_completion(ep.send_cq, SEND_WR_ID, XR_WC_SEND, "datagram send");
	}
	mc_leave(&ep, (struct sockaddr *)&group);
	printf("mc sent %u\n", count);
	end_endpoint(&ep);
	destroy_channel(ch);
	return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: " PROG " server ADDR PORT COUNT\n"
			"       " PROG " server-establish ADDR PORT\n"
			"       " PROG " server-reject ADDR PORT\n"
			"       " PROG " client DST PORT SIZE\n"
			"       " PROG " client-expect DST PORT EVENT [STATUS]\n"
			"       " PROG " resolve-expect DST TIMEOUT_MS EVENT\n"
			"       " PROG " ud-server ADDR PORT\n"
			"       " PROG " ud-client DST PORT\n"
			"       " PROG " mc-recv SRC GROUP COUNT\n"
			"       " PROG " mc-send SRC GROUP COUNT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct cm_mode modes[] = {
	    {"server", 3, 3, run_server},
	    {"server-establish", 2, 2, run_server_establish},
	    {"server-reject", 2, 2, run_server_reject},
	    {"client", 3, 3, run_client},
	    {"client-expect", 3, 4, run_client_expect},
	    {"resolve-expect", 3, 3, run_resolve_expect},
	    {"ud-server", 2, 2, run_ud_server},
	    {"ud-client", 2, 2, run_ud_client},
	    {"mc-recv", 3, 3, run_mc_recv},
	    {"mc-send", 3, 3, run_mc_send},
	};

	return run_mode(argc, argv, modes, sizeof(modes) / sizeof(modes[0]), usage);
}
