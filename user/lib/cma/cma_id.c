// SPDX-License-Identifier: MIT
/*
 * rdma_cm ids: their life, their options, the addresses and ports they
 * bind, the devices they land on, and the QPs the CM makes for them.
 *
 * Ports are bound per port space in this process, as the kernel's cma.c
 * binds them per network namespace: the CM runs in the process that owns
 * the device, so no other process on the interface binds rdma_cm ports.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cma.h"

/* The kernel's ephemeral range when its sysctl cannot be read. */
#define CMA_PORT_LOW_DEFAULT 32768
#define CMA_PORT_HIGH_DEFAULT 60999

static pthread_mutex_t cma_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_device *cma_devices;

/* Ids holding a port (under cma_lock). */
struct cma_binding {
	struct cma_id *id;
	struct cma_binding *next;
};
static struct cma_binding *bindings;

/*
 * Starting PSNs and ephemeral ports a third host cannot predict (the
 * kernel's get_random_u32); random() would repeat the same ones in every
 * process.
 */
static uint32_t cma_random(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)random() ^ (uint32_t)(xr_now_ns() >> 10);
	return r;
}

/* ---- devices ---------------------------------------------------------------- */

struct cma_device *cma_device_get(const char *ifname)
{
	const struct xr_device_open_attr attr = {.attach_if_needed = 0};
	struct cma_device *cdev;
	struct xr_device *dev;

	pthread_mutex_lock(&cma_devices_lock);
	for (cdev = cma_devices; cdev; cdev = cdev->next)
		if (!strcmp(cdev->dev->ifname, ifname))
			goto out;
	/* The process's own, if it opened the device already: one core per interface. */
	dev = xr_device_find_open(ifname);
	if (!dev)
		dev = xr_open_device(ifname, &attr);
	if (!dev) {
		/* No xroce on that interface: no RDMA device has the address. */
		errno = ENODEV;
		goto out;
	}
	if (dev->share_guest) {
		errno = EOPNOTSUPP;
		goto out;
	}
	cdev = calloc(1, sizeof(*cdev));
	if (!cdev) {
		errno = ENOMEM;
		goto out;
	}
	cdev->dev = dev;
	cdev->next = cma_devices;
	cma_devices = cdev;
out:
	pthread_mutex_unlock(&cma_devices_lock);
	return cdev;
}

/* The interface that has addr, from the kernel's address list. */
static int ifname_of_addr(const struct sockaddr *addr, char ifname[IF_NAMESIZE])
{
	struct ifaddrs *ifas, *ifa;
	int err = -EADDRNOTAVAIL;

	if (getifaddrs(&ifas))
		return -errno;
	for (ifa = ifas; ifa; ifa = ifa->ifa_next) {
		if (ifa->ifa_addr && cma_addr_equal(ifa->ifa_addr, addr)) {
			snprintf(ifname, IF_NAMESIZE, "%s", ifa->ifa_name);
			err = 0;
			break;
		}
	}
	freeifaddrs(ifas);
	return err;
}

int cma_device_of_addr(const struct sockaddr *addr, struct cma_device **cdev)
{
	char ifname[IF_NAMESIZE];
	int err = ifname_of_addr(addr, ifname);

	if (err)
		return err;
	*cdev = cma_device_get(ifname);
	return *cdev ? 0 : -errno;
}

/* Every interface with xroce attached, for a listener on the wildcard address. */
int cma_devices_all(struct cma_device **out, int max)
{
	struct if_nameindex *names = if_nameindex(), *n;
	int count = 0;

	if (!names)
		return -errno;
	for (n = names; n->if_index && count < max; n++) {
		struct xr_xdp_attachment seen;
		struct cma_device *cdev;

		if (xr_xdp_inspect(n->if_name, &seen) || seen.state != XR_XDP_LIVE)
			continue;
		cdev = cma_device_get(n->if_name);
		if (cdev)
			out[count++] = cdev;
	}
	if_freenameindex(names);
	return count;
}

void cma_id_attach_device(struct cma_id *id, struct cma_device *cdev)
{
	id->cdev = cdev;
	id->pub.verbs = cdev->dev;
	id->pub.port_num = 1;
}

int cma_gid_index(struct xr_device *dev, const struct sockaddr *addr)
{
	union xr_gid want, gid;

	cma_addr_to_gid(addr, &want);
	for (int i = 0; !xr_query_gid(dev, i, &gid); i++)
		if (!memcmp(&gid, &want, sizeof(gid)))
			return i;
	return -1;
}

/* ---- ports ------------------------------------------------------------------ */

static bool families_overlap(const struct cma_id *a, const struct cma_id *b)
{
	const struct sockaddr *x = (const struct sockaddr *)&a->pub.route.src_addr;
	const struct sockaddr *y = (const struct sockaddr *)&b->pub.route.src_addr;

	if (x->sa_family == y->sa_family)
		return true;
	/* An IPv6 wildcard takes IPv4 too unless it is IPv6 only. */
	if (x->sa_family == AF_INET6 && cma_any_addr(x) && !a->afonly)
		return true;
	return y->sa_family == AF_INET6 && cma_any_addr(y) && !b->afonly;
}

/* Another id of the port space on port would take what addr asks (cma_check_port). */
static bool port_taken_locked(const struct cma_id *id, const struct sockaddr *addr, uint16_t port)
{
	for (const struct cma_binding *b = bindings; b; b = b->next) {
		const struct cma_id *o = b->id;
		const struct sockaddr *oa = (const struct sockaddr *)&o->pub.route.src_addr;

		if (o == id || o->pub.ps != id->pub.ps || cma_port(oa) != port)
			continue;
		if (id->reuseaddr && o->reuseaddr && o->state != CMA_LISTEN)
			continue;
		if (!families_overlap(id, o))
			continue;
		if (cma_any_addr(addr) || cma_any_addr(oa) || cma_addr_equal(addr, oa))
			return true;
	}
	return false;
}

static void local_port_range(int *low, int *high)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

	*low = CMA_PORT_LOW_DEFAULT;
	*high = CMA_PORT_HIGH_DEFAULT;
	if (!f)
		return;
	if (fscanf(f, "%d %d", low, high) != 2 || *low < 1 || *high > 65535 || *low > *high) {
		*low = CMA_PORT_LOW_DEFAULT;
		*high = CMA_PORT_HIGH_DEFAULT;
	}
	fclose(f);
}

/* Under cma_lock: a free port for addr, from a random start as the kernel picks. */
static int pick_port_locked(struct cma_id *id, const struct sockaddr *addr)
{
	int low, high, span, start;

	local_port_range(&low, &high);
	span = high - low + 1;
	start = (int)(cma_random() % (unsigned)span);
	for (int i = 0; i < span; i++) {
		uint16_t port = (uint16_t)(low + (start + i) % span);

		if (!port_taken_locked(id, addr, port))
			return port;
	}
	return -EADDRNOTAVAIL;
}

int cma_bind(struct cma_id *id, const struct sockaddr *addr)
{
	struct sockaddr_storage want;
	struct cma_binding *b;
	int port;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(&want, 0, sizeof(want));
	memcpy(&want, addr, cma_addr_size(addr));
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	pthread_mutex_lock(&cma_lock);
	/* The address goes in first: port_taken_locked compares families through it. */
	id->pub.route.src_addr = want;
	port = cma_port(addr);
	if (!port)
		port = pick_port_locked(id, addr);
	else if (port_taken_locked(id, addr, (uint16_t)port))
		port = -EADDRINUSE;
	if (port < 0) {
		memset(&id->pub.route.src_addr, 0, sizeof(id->pub.route.src_addr));
		pthread_mutex_unlock(&cma_lock);
		free(b);
		return port;
	}
	cma_set_port((struct sockaddr *)&id->pub.route.src_addr, (uint16_t)port);
	b->id = id;
	b->next = bindings;
	bindings = b;
	id->bound = true;
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

static void unbind_locked(struct cma_id *id)
{
	for (struct cma_binding **link = &bindings; *link; link = &(*link)->next) {
		if ((*link)->id == id) {
			struct cma_binding *b = *link;

			*link = b->next;
			free(b);
			break;
		}
	}
	id->bound = false;
}

/* ---- ids -------------------------------------------------------------------- */

static enum xr_qp_type qp_type_of(enum xr_rdma_port_space ps)
{
	return ps == XR_RDMA_PS_UDP || ps == XR_RDMA_PS_IPOIB ? XR_QPT_UD : XR_QPT_RC;
}

static struct cma_id *id_alloc(struct xr_rdma_event_channel *channel, void *context,
			       enum xr_rdma_port_space ps)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->pub.channel = channel;
	id->pub.context = context;
	id->pub.ps = ps;
	id->pub.qp_type = qp_type_of(ps);
	id->refs = 1;
	id->starting_psn = cma_random() & XR_PSN_MASK;
	id->qkey = XR_RDMA_UDP_QKEY;
	pthread_mutex_lock(&cma_lock);
	cma_channel_add_id_locked(channel, 1);
	pthread_mutex_unlock(&cma_lock);
	return id;
}

int xr_rdma_create_id(struct xr_rdma_event_channel *channel, struct xr_rdma_cm_id **id,
		      void *context, enum xr_rdma_port_space ps)
{
	struct cma_id *new_id;

	if (!channel || !id)
		return cma_fail(-EINVAL);
	if (ps != XR_RDMA_PS_TCP && ps != XR_RDMA_PS_UDP && ps != XR_RDMA_PS_IB &&
	    ps != XR_RDMA_PS_IPOIB)
		return cma_fail(-EINVAL);
	new_id = id_alloc(channel, context, ps);
	if (!new_id)
		return cma_fail(-ENOMEM);
	*id = &new_id->pub;
	return 0;
}

struct cma_id *cma_id_new_child(struct cma_id *listener, struct cma_device *cdev)
{
	struct cma_id *id =
	    id_alloc(listener->pub.channel, listener->pub.context, listener->pub.ps);

	if (!id)
		return NULL;
	cma_id_attach_device(id, cdev);
	id->listener = listener;
	id->tos = listener->tos;
	id->tos_set = listener->tos_set;
	id->ack_timeout = listener->ack_timeout;
	id->state = CMA_CONNECT;
	return id;
}

void cma_id_put(struct cma_id *id)
{
	bool last;

	pthread_mutex_lock(&cma_lock);
	last = --id->refs == 0;
	pthread_mutex_unlock(&cma_lock);
	if (last)
		free(id);
}

void cma_id_forget(struct cma_id *id)
{
	pthread_mutex_lock(&cma_lock);
	cma_drop_events_locked(id, &(struct cma_id *){NULL});
	cma_channel_add_id_locked(id->pub.channel, -1);
	pthread_mutex_unlock(&cma_lock);
	cma_id_put(id);
}

void cma_id_destroy_unseen(struct cma_id *id)
{
	cma_conn_release(id);
	cma_id_forget(id);
}

int xr_rdma_destroy_id(struct xr_rdma_cm_id *pub)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL, *orphans = NULL;

	if (!id)
		return cma_fail(-EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (id->destroying) {
		pthread_mutex_unlock(&cma_lock);
		return cma_fail(-EINVAL);
	}
	id->destroying = true;
	pthread_mutex_unlock(&cma_lock);

	cma_conn_release(id);
	cma_mcast_release(id);
	pthread_mutex_lock(&cma_lock);
	cma_drop_events_locked(id, &orphans);
	if (id->bound)
		unbind_locked(id);
	cma_wait_acked_locked(id);
	cma_channel_add_id_locked(pub->channel, -1);
	pthread_mutex_unlock(&cma_lock);
	/* New connections nobody took: rejected, as the kernel does them. */
	while (orphans) {
		struct cma_id *child = orphans;

		orphans = child->listener;
		child->listener = NULL;
		cma_id_destroy_unseen(child);
	}
	cma_id_put(id);
	return 0;
}

int xr_rdma_migrate_id(struct xr_rdma_cm_id *pub, struct xr_rdma_event_channel *channel)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;

	if (!id || !channel)
		return cma_fail(-EINVAL);
	pthread_mutex_lock(&cma_lock);
	cma_wait_acked_locked(id);
	cma_move_events_locked(id, channel);
	cma_channel_add_id_locked(pub->channel, -1);
	cma_channel_add_id_locked(channel, 1);
	pub->channel = channel;
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

int xr_rdma_set_option(struct xr_rdma_cm_id *pub, int level, int optname, const void *optval,
		       size_t optlen)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;

	if (!id || !optval)
		return cma_fail(-EINVAL);
	if (level == XR_RDMA_OPTION_ID) {
		switch (optname) {
		case XR_RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				return cma_fail(-EINVAL);
			id->tos = *(const uint8_t *)optval;
			id->tos_set = true;
			return 0;
		case XR_RDMA_OPTION_ID_REUSEADDR:
		case XR_RDMA_OPTION_ID_AFONLY:
			/* Before the port is bound, as the kernel has it. */
			if (optlen != sizeof(int) || id->bound)
				return cma_fail(-EINVAL);
			if (optname == XR_RDMA_OPTION_ID_REUSEADDR)
				id->reuseaddr = *(const int *)optval != 0;
			else
				id->afonly = *(const int *)optval != 0;
			return 0;
		case XR_RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t) || *(const uint8_t *)optval > 31)
				return cma_fail(-EINVAL);
			id->ack_timeout = *(const uint8_t *)optval;
			return 0;
		}
	}
	/* RDMA_OPTION_IB_PATH sets an InfiniBand path record: RoCE routes resolve. */
	return cma_fail(-ENOSYS);
}

int xr_rdma_bind_addr(struct xr_rdma_cm_id *pub, const struct sockaddr *addr)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct cma_device *cdev = NULL;
	int err;

	if (!id || !addr)
		return cma_fail(-EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return cma_fail(-EAFNOSUPPORT);
	if (id->state != CMA_IDLE)
		return cma_fail(-EINVAL);
	if (!cma_any_addr(addr)) {
		err = cma_device_of_addr(addr, &cdev);
		if (err)
			return cma_fail(err);
	}
	err = cma_bind(id, addr);
	if (err)
		return cma_fail(err);
	if (cdev)
		cma_id_attach_device(id, cdev);
	id->state = CMA_ADDR_BOUND;
	return 0;
}

/* ---- QPs -------------------------------------------------------------------- */

static struct xr_pd *device_pd(struct cma_device *cdev)
{
	pthread_mutex_lock(&cma_devices_lock);
	if (!cdev->pd)
		cdev->pd = xr_alloc_pd(cdev->dev);
	pthread_mutex_unlock(&cma_devices_lock);
	return cdev->pd;
}

static bool qp_fits_id(enum xr_qp_type id_type, enum xr_qp_type qp_type)
{
	if (id_type == XR_QPT_UD)
		return qp_type == XR_QPT_UD;
	return qp_type == XR_QPT_RC || qp_type == XR_QPT_UC;
}

int xr_rdma_create_qp(struct xr_rdma_cm_id *pub, struct xr_pd *pd,
		      struct xr_qp_init_attr *qp_init_attr)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	struct xr_qp *qp;
	int err;

	if (!id || !qp_init_attr || !id->cdev || pub->qp)
		return cma_fail(-EINVAL);
	if (!pd) {
		pd = device_pd(id->cdev);
		if (!pd)
			return cma_fail(-ENOMEM);
	}
	if (pd->device != pub->verbs || !qp_fits_id(pub->qp_type, qp_init_attr->qp_type))
		return cma_fail(-EINVAL);
	qp = xr_create_qp(pd, qp_init_attr);
	if (!qp)
		return cma_fail(-errno);
	pub->qp = qp;
	err = cma_qp_init(id);
	if (err) {
		pub->qp = NULL;
		xr_destroy_qp(qp);
		return cma_fail(err);
	}
	return 0;
}

int xr_rdma_set_qp(struct xr_rdma_cm_id *pub, struct xr_qp *qp)
{
	struct cma_id *id = pub ? cma_id_of(pub) : NULL;
	int err;

	if (!id)
		return cma_fail(-EINVAL);
	if (!qp) {
		cma_mcast_detach_all(id);
		pub->qp = NULL;
		return 0;
	}
	if (!id->cdev || pub->qp || qp->pd->device != pub->verbs ||
	    !qp_fits_id(pub->qp_type, qp->qp_type))
		return cma_fail(-EINVAL);
	pub->qp = qp;
	err = cma_qp_init(id);
	if (err) {
		pub->qp = NULL;
		return cma_fail(err);
	}
	return 0;
}

void xr_rdma_destroy_qp(struct xr_rdma_cm_id *pub)
{
	if (!pub || !pub->qp)
		return;
	cma_mcast_detach_all(cma_id_of(pub));
	xr_destroy_qp(pub->qp);
	pub->qp = NULL;
}
