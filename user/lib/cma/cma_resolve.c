// SPDX-License-Identifier: MIT
/*
 * Address and route resolution. An address resolves as the kernel's
 * rdma_resolve_addr does it: the kernel's route to the destination names
 * the interface (it must have xroce) and the source address, and the next
 * hop's MAC comes from the neighbour table, resolved on the spot when it
 * is missing. That may wait for ARP, so it runs on a thread of its own and
 * ends in ADDR_RESOLVED or ADDR_ERROR; the id cannot go meanwhile (the
 * thread holds a reference). A route is then the path those give, at
 * once.
 */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

struct addr_query {
	struct cma_id *id;
	struct sockaddr_storage dst;
	int timeout_ms;
};

/* What a resolution found, committed to the id only when all of it was. */
struct addr_result {
	struct cma_device *cdev;
	struct sockaddr_storage src; /* the bound one, the wildcard replaced */
	uint8_t dmac[6];
};

static void take_source(struct addr_result *r, const struct sockaddr *addr)
{
	uint16_t port = cma_port((const struct sockaddr *)&r->src);

	memcpy(&r->src, addr, cma_addr_size(addr));
	cma_set_port((struct sockaddr *)&r->src, port);
}

/* A destination that is this host's own: the interface that has it, our MAC. */
static int resolve_local(struct addr_result *r, const struct sockaddr *dst)
{
	int err = cma_device_of_addr(dst, &r->cdev);

	if (err)
		return err == -EADDRNOTAVAIL ? -ENODEV : err;
	if (cma_any_addr((const struct sockaddr *)&r->src))
		take_source(r, dst);
	memcpy(r->dmac, r->cdev->dev->netdev.mac, 6);
	return 0;
}

/* The interface a route leaves by, and the source it gives an id bound to the wildcard. */
static int route_device(struct addr_result *r, const struct xr_nl_route *route)
{
	char ifname[IF_NAMESIZE];

	if (!if_indextoname((unsigned)route->ifindex, ifname))
		return -ENODEV;
	r->cdev = cma_device_get(ifname);
	if (!r->cdev)
		return -errno;
	if (cma_any_addr((const struct sockaddr *)&r->src)) {
		if (!route->has_prefsrc)
			return -EADDRNOTAVAIL;
		take_source(r, (const struct sockaddr *)&route->prefsrc);
	}
	return 0;
}

static int resolve_remote(struct addr_result *r, const struct sockaddr *dst,
			  const struct xr_nl_route *route, int timeout_ms)
{
	const struct sockaddr *hop =
	    route->has_gateway ? (const struct sockaddr *)&route->gateway : dst;
	union xr_gid hop_gid;
	int err = route_device(r, route);

	if (err)
		return err;
	cma_addr_to_gid(hop, &hop_gid);
	err = xr_nl_resolve_neigh(route->ifindex, &hop_gid, r->dmac, timeout_ms);
	/* The neighbour never answered within the time given: the kernel's -ETIMEDOUT. */
	return err == -EHOSTUNREACH ? -ETIMEDOUT : err;
}

/*
 * A group has no neighbour to ask: its MAC comes from its address. An id
 * bound to an address sends from that interface (IPv6 routes ff00::/8 on
 * every interface alike); one bound to the wildcard goes where the route
 * to the group leads.
 */
static int resolve_group(struct cma_id *id, struct addr_result *r, const struct sockaddr *dst,
			 const union xr_gid *group)
{
	struct xr_nl_route route;
	int err;

	if (id->cdev) {
		r->cdev = id->cdev;
	} else {
		err = xr_nl_get_route(dst, (const struct sockaddr *)&r->src, &route);
		if (!err)
			err = route_device(r, &route);
		if (err)
			return err;
	}
	xr_mcast_mac(group, r->dmac);
	return 0;
}

static int resolve(struct cma_id *id, const struct sockaddr *dst, int timeout_ms,
		   struct addr_result *r)
{
	struct xr_nl_route route;
	union xr_gid dgid;
	int err;

	pthread_mutex_lock(&cma_lock);
	r->src = id->pub.route.src_addr;
	pthread_mutex_unlock(&cma_lock);
	cma_addr_to_gid(dst, &dgid);
	if (xr_gid_is_multicast(&dgid)) {
		err = resolve_group(id, r, dst, &dgid);
	} else {
		err = xr_nl_get_route(dst, (const struct sockaddr *)&r->src, &route);
		if (!err)
			err = route.local ? resolve_local(r, dst)
					  : resolve_remote(r, dst, &route, timeout_ms);
	}
	if (err)
		return err;
	/* Bound to an address already: it must be on the interface the route takes. */
	if (id->cdev && id->cdev != r->cdev)
		return -EINVAL;
	if (cma_gid_index(r->cdev->dev, (const struct sockaddr *)&r->src) < 0)
		return -EADDRNOTAVAIL;
	return 0;
}

static void *addr_query_run(void *arg)
{
	struct addr_query *q = arg;
	struct cma_id *id = q->id;
	const struct sockaddr *dst = (const struct sockaddr *)&q->dst;
	struct xr_rdma_cm_event ev = {.event = XR_RDMA_CM_EVENT_ADDR_RESOLVED};
	struct addr_result r = {0};
	int err;

	err = resolve(id, dst, q->timeout_ms, &r);
	if (err) {
		/* Back to bound, as the kernel leaves it: it may resolve again. */
		id->state = CMA_ADDR_BOUND;
		ev.event = XR_RDMA_CM_EVENT_ADDR_ERROR;
		ev.status = err;
	} else {
		pthread_mutex_lock(&cma_lock);
		id->pub.route.src_addr = r.src;
		pthread_mutex_unlock(&cma_lock);
		cma_id_attach_device(id, r.cdev);
		cma_addr_to_gid((const struct sockaddr *)&r.src, &id->pub.route.path.sgid);
		cma_addr_to_gid(dst, &id->pub.route.path.dgid);
		memcpy(id->pub.route.path.dmac, r.dmac, 6);
		id->state = CMA_ADDR_RESOLVED;
	}
	cma_post_event(id, &ev, NULL, 0);
	free(q);
	cma_id_put(id);
	return NULL;
}

int xr_rdma_resolve_addr(struct xr_rdma_cm_id *pub, const struct sockaddr *src,
			 const struct sockaddr *dst, int timeout_ms)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct addr_query *q;
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	if (!id || !dst || timeout_ms < 0)
		return cma_fail(-EINVAL);
	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return cma_fail(-EAFNOSUPPORT);
	if (id->state == CMA_IDLE) {
		struct sockaddr_storage any = {.ss_family = dst->sa_family};

		err = xr_rdma_bind_addr(pub, src ? src : (const struct sockaddr *)&any);
		if (err)
			return err;
	}
	if (id->state != CMA_ADDR_BOUND ||
	    ((struct sockaddr *)&pub->route.src_addr)->sa_family != dst->sa_family)
		return cma_fail(-EINVAL);
	q = calloc(1, sizeof(*q));
	if (!q)
		return cma_fail(-ENOMEM);
	q->id = id;
	memcpy(&q->dst, dst, cma_addr_size(dst));
	q->timeout_ms = timeout_ms;
	memcpy(&pub->route.dst_addr, dst, cma_addr_size(dst));
	id->state = CMA_ADDR_QUERY;
	pthread_mutex_lock(&cma_lock);
	id->refs++;
	pthread_mutex_unlock(&cma_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&thread, &attr, addr_query_run, q);
	pthread_attr_destroy(&attr);
	if (err) {
		id->state = CMA_ADDR_BOUND;
		free(q);
		cma_id_put(id);
		return cma_fail(err);
	}
	return 0;
}

int xr_rdma_resolve_route(struct xr_rdma_cm_id *pub, int timeout_ms)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct xr_rdma_path *path;
	struct xr_device_attr attr;
	struct xr_rdma_cm_event ev = {.event = XR_RDMA_CM_EVENT_ROUTE_RESOLVED};

	if (!id || timeout_ms < 0)
		return cma_fail(-EINVAL);
	if (id->state != CMA_ADDR_RESOLVED)
		return cma_fail(-EINVAL);
	path = &pub->route.path;
	xr_query_device(pub->verbs, &attr);
	path->flow_label = cma_flow_label((const struct sockaddr *)&pub->route.src_addr,
					  (const struct sockaddr *)&pub->route.dst_addr);
	path->hop_limit = 64;
	path->traffic_class = id->tos;
	path->pkey = XR_DEFAULT_PKEY;
	path->mtu = (uint8_t)attr.active_mtu;
	path->packet_life_time = CMA_PACKET_LIFETIME;
	pub->route.num_paths = 1;
	id->state = CMA_ROUTE_RESOLVED;
	return cma_post_event(id, &ev, NULL, 0) ? cma_fail(-ENOMEM) : 0;
}
