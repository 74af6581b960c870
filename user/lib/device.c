/* SPDX-License-Identifier: MIT */
/* Opening and closing a device: interface, GIDs, XDP program, AF_XDP port, engine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "device_lock.h"
#include "mcast.h"

#define DEFAULT_BUSY_POLL_NS 50000ull
/* Headers the path MTU must leave room for inside the netdev MTU (as rxe). */
#define ROCE_MTU_OVERHEAD 80
/* AF_XDP copy mode gives 4096 - 256 bytes of frame: no 4096 IB MTU. */
#define XSK_MAX_IB_MTU XR_MTU_2048

static uint8_t *port_tx_alloc(void *ctx, uint32_t *cap)
{
	return xr_xsk_port_tx_alloc(ctx, cap);
}

static void port_tx_submit(void *ctx, uint8_t *buf, uint32_t len)
{
	xr_xsk_port_tx_submit(ctx, buf, len);
}

static void port_tx_abort(void *ctx, uint8_t *buf)
{
	xr_xsk_port_tx_abort(ctx, buf);
}

static enum xr_mtu active_mtu_for(uint32_t netdev_mtu)
{
	enum xr_mtu m = XSK_MAX_IB_MTU;

	while (m > XR_MTU_256 && xr_mtu_bytes(m) > netdev_mtu - ROCE_MTU_OVERHEAD)
		m--;
	return m;
}

/*
 * A previous owner, killed perhaps, may have left QP entries and engine
 * sleeping flags behind: XDP would keep answering for QPs that are gone.
 * Every entry is closed before it is cleared, so XDP never acts on a
 * half-cleared one.
 */
static void reset_shared_state(struct xr_device *dev)
{
	for (int i = 0; i < XR_MAX_QP; i++)
		__atomic_store_n(&dev->xdp.qp_table[i].state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
	memset(dev->xdp.qp_table, 0, sizeof(*dev->xdp.qp_table) * XR_MAX_QP);
	memset(dev->xdp.engine_stats, 0, sizeof(*dev->xdp.engine_stats));
	xr_mcast_reset(dev);
}

static uint32_t ms_until(uint64_t deadline_ns)
{
	uint64_t now = xr_now_ns();

	return now < deadline_ns ? (uint32_t)((deadline_ns - now) / 1000000) : 0;
}

static int open_device(struct xr_device *dev, const char *ifname,
		       const struct xr_device_open_attr *attr)
{
	/* One bound for waiting out an exiting owner and the kernel's release of its sockets. */
	uint64_t deadline = xr_now_ns() + XR_OPEN_WAIT_MS * 1000000ull;
	struct xr_core_port port = {
	    .tx_alloc = port_tx_alloc, .tx_submit = port_tx_submit, .tx_abort = port_tx_abort};
	struct xr_xsk_port_config pcfg = {0};
	const char *busy, *fast;
	int err, ngids;

	if (strlen(ifname) >= sizeof(dev->ifname))
		return -EINVAL;
	strcpy(dev->ifname, ifname);
	err = xr_nl_get_link(ifname, &dev->netdev);
	if (err)
		return err;
	if (dev->netdev.mtu < 256 + ROCE_MTU_OVERHEAD)
		return -EINVAL;
	dev->lock_fd = xr_device_lock(ifname, deadline);
	if (dev->lock_fd < 0)
		return dev->lock_fd;
	/* Under the lock: a stale attachment is replaced by one process only. */
	err = xr_xdp_prepare_device(ifname, !attr || attr->attach_if_needed, &dev->attached_by_us);
	if (err)
		return err;
	err = xr_xdp_open(ifname, &dev->xdp);
	if (err)
		return err;
	reset_shared_state(dev);

	pcfg.ifindex = dev->netdev.ifindex;
	pcfg.xsk_map_fd = dev->xdp.xsk_map_fd;
	/* We own the device: a queue still bound is a previous owner's socket being released. */
	pcfg.busy_wait_ms = ms_until(deadline);
	pcfg.bind_flags = dev->xdp.xsk_bind_flags;
	err = xr_xsk_port_open(&pcfg, &dev->port);
	if (err)
		return err;

	port.ctx = dev->port;
	xr_core_init(&dev->core, &port);
	dev->core.device = dev;
	memcpy(dev->core.mac, dev->netdev.mac, 6);
	ngids = xr_nl_get_gids(dev->netdev.ifindex, dev->netdev.mac, dev->core.gids, XR_MAX_GIDS);
	if (ngids < 0)
		return ngids;
	dev->core.num_gids = ngids;
	dev->core.active_mtu = active_mtu_for(dev->netdev.mtu);
	dev->core.xdp_qps = dev->xdp.qp_table;
	if (attr && attr->disable_masked_atomics)
		dev->core.caps &= ~(uint64_t)XR_DEVICE_MASKED_ATOMICS;

	/* XROCE_XDP_FAST_PATH=0 keeps every frame in userspace (for comparisons). */
	fast = getenv("XROCE_XDP_FAST_PATH");
	if (fast && !strcmp(fast, "0"))
		dev->core.xdp_fast_path = 0;
	busy = getenv("XROCE_BUSY_POLL_US");
	dev->busy_poll_ns = busy ? strtoull(busy, NULL, 10) * 1000 : DEFAULT_BUSY_POLL_NS;
	err = pthread_mutex_init(&dev->lock, NULL);
	if (err)
		return -err;
	err = xr_async_open(dev);
	if (!err)
		err = xr_port_monitor_open(dev);
	if (err)
		return err;
	return xr_engine_start(dev);
}

/*
 * The sockets go first, as the kernel releases their queues asynchronously,
 * and the lock last: whoever takes it next finds that release under way.
 */
static void release_device(struct xr_device *dev)
{
	xr_engine_stop(dev);
	xr_port_monitor_close(dev);
	xr_async_close(dev);
	if (dev->port)
		xr_xsk_port_close(dev->port);
	xr_mcast_reset(dev);
	if (dev->xdp.qp_table) {
		memset(dev->xdp.qp_table, 0, sizeof(*dev->xdp.qp_table) * XR_MAX_QP);
		xr_xdp_close(&dev->xdp);
	}
	if (dev->attached_by_us)
		xr_xdp_detach(dev->ifname);
	if (dev->lock_fd >= 0)
		xr_device_unlock(dev->ifname, dev->lock_fd);
}

struct xr_device *xr_open_device(const char *ifname, const struct xr_device_open_attr *attr)
{
	struct xr_device *dev;
	int err;

	if (!ifname) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		errno = ENOMEM;
		return NULL;
	}
	dev->wake_fd = -1;
	dev->async_fd = -1;
	dev->lock_fd = -1;
	dev->xdp.mcast_map_fd = -1;
	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++)
		dev->mcast_fd[i] = -1;
	err = open_device(dev, ifname, attr);
	if (err) {
		release_device(dev);
		free(dev);
		errno = -err;
		return NULL;
	}
	return dev;
}

int xr_close_device(struct xr_device *dev)
{
	if (!dev)
		return -EINVAL;
	for (int i = 0; i < XR_MAX_QP; i++)
		if (dev->core.qps[i])
			return -EBUSY;
	release_device(dev);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
	return 0;
}

int xr_query_device(struct xr_device *dev, struct xr_device_attr *a)
{
	if (!dev || !a)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	strcpy(a->ifname, dev->ifname);
	a->ifindex = dev->netdev.ifindex;
	memcpy(a->mac, dev->netdev.mac, 6);
	a->netdev_mtu = dev->netdev.mtu;
	a->active_mtu = dev->core.active_mtu;
	a->num_gids = dev->core.num_gids;
	a->max_qp = XR_MAX_QP;
	a->max_qp_wr = XR_MAX_WR;
	a->max_sge = XR_MAX_SGE;
	a->max_cqe = XR_MAX_CQE;
	a->max_mr_size = UINT32_MAX;
	a->max_inline_data = XR_MAX_INLINE;
	a->max_qp_rd_atom = XR_MAX_RD_ATOMIC;
	a->device_cap_flags = dev->core.caps;
	a->max_mcast_grp = XR_MAX_MCAST_GROUPS;
	a->max_mcast_qp_attach = XR_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = XR_MAX_TOTAL_MCAST_QP_ATTACH;
	return 0;
}

int xr_query_gid(struct xr_device *dev, int index, union xr_gid *gid)
{
	if (!dev || !gid || index < 0 || index >= dev->core.num_gids)
		return -EINVAL;
	*gid = dev->core.gids[index];
	return 0;
}
