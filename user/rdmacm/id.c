/* SPDX-License-Identifier: MIT */
/* Ids: creating and destroying them, options, addresses, routes, listening. */
#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

/* The path record a RoCE route is, as the kernel's cma.c fills it. */
static void path_rec_of(const struct xr_rdma_path *in, struct ibv_sa_path_rec *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(&out->dgid, &in->dgid, sizeof(out->dgid));
	memcpy(&out->sgid, &in->sgid, sizeof(out->sgid));
	out->flow_label = htobe32(in->flow_label);
	out->hop_limit = in->hop_limit;
	out->traffic_class = in->traffic_class;
	out->reversible = htobe32(1);
	out->numb_path = 1;
	out->pkey = htobe16(in->pkey);
	out->mtu_selector = 2; /* exactly */
	out->mtu = in->mtu;
	out->rate_selector = 2;
	out->packet_life_time_selector = 2;
	out->packet_life_time = in->packet_life_time;
}

void rc_id_sync(struct rc_id *id)
{
	struct xr_rdma_cm_id *xr = id->xr;
	struct rdma_ib_addr *ib = &id->id.route.addr.addr.ibaddr;

	if (xr->verbs && !id->id.verbs) {
		struct ibv_pd *pd = NULL;

		id->id.verbs = rc_context_of(xr->verbs, &pd);
		if (!id->id.pd)
			id->id.pd = pd;
	}
	memcpy(&id->id.route.addr.src_storage, &xr->route.src_addr, sizeof(xr->route.src_addr));
	memcpy(&id->id.route.addr.dst_storage, &xr->route.dst_addr, sizeof(xr->route.dst_addr));
	id->id.port_num = xr->port_num;
	if (xr->route.num_paths) {
		path_rec_of(&xr->route.path, &id->path);
		id->id.route.path_rec = &id->path;
		id->id.route.num_paths = 1;
		memcpy(&ib->sgid, &xr->route.path.sgid, sizeof(ib->sgid));
		memcpy(&ib->dgid, &xr->route.path.dgid, sizeof(ib->dgid));
		ib->pkey = htobe16(xr->route.path.pkey);
	}
}

static struct rc_id *id_alloc(struct rdma_event_channel *channel, void *context)
{
	struct rc_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			free(id);
			return NULL;
		}
		id->sync = true;
	}
	id->id.channel = channel;
	id->id.context = context;
	return id;
}

static void id_free(struct rc_id *id)
{
	if (id->sync)
		rdma_destroy_event_channel(id->id.channel);
	free(id->qp_init_attr);
	free(id);
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
		   enum rdma_port_space ps)
{
	struct rc_id *id;
	int err;

	if (!out)
		return rc_fail(EINVAL);
	if (rc_init())
		return -1;
	id = id_alloc(channel, context);
	if (!id)
		return rc_fail(errno);
	err = xr_rdma_create_id(rc_channel(id->id.channel)->xr, &id->xr, id,
				(enum xr_rdma_port_space)ps);
	if (err) {
		id_free(id);
		return rc_fail(-err);
	}
	id->id.ps = ps;
	id->id.qp_type = (enum ibv_qp_type)id->xr->qp_type;
	*out = &id->id;
	return 0;
}

struct rc_id *rc_id_new_child(struct rc_id *listener, struct xr_rdma_cm_id *xr)
{
	/* A synchronous listener's requests are synchronous: each on a channel of its own. */
	struct rc_id *id =
	    id_alloc(listener->sync ? NULL : listener->id.channel, listener->id.context);

	if (!id)
		return NULL;
	if (id->sync && xr_rdma_migrate_id(xr, rc_channel(id->id.channel)->xr)) {
		id_free(id);
		return NULL;
	}
	id->xr = xr;
	xr->context = id;
	id->id.ps = listener->id.ps;
	id->id.qp_type = (enum ibv_qp_type)xr->qp_type;
	return id;
}

int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
	struct rc_id *id;
	int err;

	if (!cm_id)
		return rc_fail(EINVAL);
	id = rc_id(cm_id);
	if (cm_id->event) {
		rdma_ack_cm_event(cm_id->event);
		cm_id->event = NULL;
	}
	err = xr_rdma_destroy_id(id->xr);
	if (err)
		return rc_fail(-err);
	id_free(id);
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *cm_id, struct rdma_event_channel *channel)
{
	struct rc_id *id;
	bool sync = false;
	int err;

	if (!cm_id)
		return rc_fail(EINVAL);
	id = rc_id(cm_id);
	if (!channel) {
		/* librdmacm's way to make an id synchronous. */
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
		sync = true;
	}
	err = xr_rdma_migrate_id(id->xr, rc_channel(channel)->xr);
	if (err) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return rc_fail(-err);
	}
	if (id->sync)
		rdma_destroy_event_channel(cm_id->channel);
	id->sync = sync;
	cm_id->channel = channel;
	return 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	if (!id)
		return rc_fail(EINVAL);
	return rc_ret(xr_rdma_set_option(rc_id(id)->xr, level, optname, optval, optlen));
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	err = xr_rdma_bind_addr(rc_id(id)->xr, addr);
	if (err)
		return rc_fail(-err);
	rc_id_sync(rc_id(id));
	return 0;
}

int rc_complete(struct rc_id *id)
{
	struct rdma_cm_event *event;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &id->id.event))
		return -1;
	event = id->id.event;
	if (!event->status)
		return 0;
	if (event->event == RDMA_CM_EVENT_REJECTED)
		return rc_fail(ECONNREFUSED);
	return rc_fail(event->status < 0 ? -event->status : event->status);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	/* What it finds reaches id with its event (the resolution runs meanwhile). */
	err = xr_rdma_resolve_addr(rc_id(id)->xr, src_addr, dst_addr, timeout_ms);
	if (err)
		return rc_fail(-err);
	return rc_complete(rc_id(id));
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	err = xr_rdma_resolve_route(rc_id(id)->xr, timeout_ms);
	if (err)
		return rc_fail(-err);
	return rc_complete(rc_id(id));
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	int err;

	if (!id)
		return rc_fail(EINVAL);
	err = xr_rdma_listen(rc_id(id)->xr, backlog);
	if (err)
		return rc_fail(-err);
	rc_id_sync(rc_id(id));
	return 0;
}

static __be16 port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return port_of(&id->route.addr.src_addr);
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return port_of(&id->route.addr.dst_addr);
}
