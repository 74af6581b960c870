/* SPDX-License-Identifier: MIT */
/* Opening and closing a device: interface, GIDs, XDP program, AF_XDP port, engine. */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/cm.h"
#include "device.h"
#include "device_lock.h"
#include "mcast.h"

#define DEFAULT_BUSY_POLL_NS 50000ull
#define DEFAULT_STANDBY_MAX_NS 5000000ull
/* Long enough for a polling application to answer what it was just handed. */
#define DEFAULT_ACK_HOLD_NS 5000ull
/* Headers the path MTU must leave room for inside the netdev MTU (as rxe). */
#define ROCE_MTU_OVERHEAD 80
/* The Ethernet header, which the netdev MTU leaves out and an AF_XDP frame holds. */
#define ETH_HEADER_LEN 14

/* The core's port: ctx is the device; frames go to its AF_XDP port. */
static uint8_t *port_tx_alloc(void *ctx, uint32_t *cap)
{
	return xr_xsk_port_tx_alloc(((struct xr_device *)ctx)->port, cap);
}

static void port_tx_submit(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct xr_device *dev = ctx;

	if (!xr_loopback_is_own(dev, buf, len))
		xr_xsk_port_tx_submit(dev->port, queue, buf, len);
	else if (!xr_loopback_push(&dev->loopback, buf, len))
		xr_xsk_port_tx_abort(dev->port,
				     buf); /* lost, as on a wire: never, see loopback.h */
}

/* After this round's other frames, and held while the engine holds ACKs. */
static void port_tx_submit_ack(void *ctx, uint32_t queue, uint8_t *buf, uint32_t len)
{
	struct xr_device *dev = ctx;

	if (xr_loopback_is_own(dev, buf, len))
		port_tx_submit(ctx, queue, buf, len);
	else
		xr_xsk_port_tx_submit_late(dev->port, queue, buf, len);
}

static void port_tx_abort(void *ctx, uint8_t *buf)
{
	xr_xsk_port_tx_abort(((struct xr_device *)ctx)->port, buf);
}

/* The largest IB MTU whose frames fit both the interface and the AF_XDP sockets' frames. */
static enum xr_mtu active_mtu_for(uint32_t netdev_mtu, uint32_t max_frame)
{
	enum xr_mtu m = XR_MTU_4096;

	while (m > XR_MTU_256 && (xr_mtu_bytes(m) + ROCE_MTU_OVERHEAD > netdev_mtu ||
				  xr_mtu_bytes(m) + ROCE_MTU_OVERHEAD + ETH_HEADER_LEN > max_frame))
		m--;
	return m;
}

/* The largest IB MTU the AF_XDP sockets' frames carry, whatever the interface's MTU. */
static enum xr_mtu socket_max_mtu(uint32_t max_frame)
{
	return active_mtu_for(UINT32_MAX - ROCE_MTU_OVERHEAD, max_frame);
}

/*
 * Tells `xroce status`, and the processes that share the device, the path
 * MTU and what bounds it; zeroes: no engine.
 */
static void publish_engine_port(struct xr_device *dev, bool open)
{
	struct xr_engine_port p = {0};

	if (open) {
		enum xr_mtu active = active_mtu_for(dev->netdev.mtu, dev->max_frame);

		p.active_mtu = xr_mtu_bytes(active);
		p.interface_bound = active < socket_max_mtu(dev->max_frame);
		p.netdev_mtu = dev->netdev.mtu;
		p.max_frame = dev->max_frame;
		p.multi_buffer = xr_xsk_port_multi_buffer(dev->port);
		p.multi_buffer_error = xr_xsk_port_multi_buffer_error(dev->port);
		p.rx_queues = (uint32_t)xr_xsk_port_nfds(dev->port);
		p.tx_queues = xr_xsk_port_tx_queues(dev->port);
		p.engines = dev->nengines;
	}
	/* Only for operators: a device works without it. */
	(void)xr_xdp_publish_engine_port(&dev->xdp, &p);
}

/*
 * A previous owner, killed perhaps, may have left QP entries and engine
 * sleeping flags behind: XDP would keep answering for QPs that are gone.
 * Every entry is closed before it is cleared, so XDP never acts on a
 * half-cleared one.
 */
static void reset_shared_state(struct xr_device *dev)
{
	for (int i = 0; i < XR_QP_TABLE_SLOTS; i++)
		__atomic_store_n(&dev->xdp.qp_table[i].state, XR_XDP_QP_NONE, __ATOMIC_SEQ_CST);
	memset(dev->xdp.qp_table, 0, sizeof(*dev->xdp.qp_table) * XR_QP_TABLE_SLOTS);
	memset(dev->xdp.engine_stats, 0, sizeof(*dev->xdp.engine_stats));
	xr_mcast_reset(dev);
}

static uint32_t ms_until(uint64_t deadline_ns)
{
	uint64_t now = xr_now_ns();

	return now < deadline_ns ? (uint32_t)((deadline_ns - now) / 1000000) : 0;
}

/* We hold the lock: the XDP program, its maps and the AF_XDP queues are ours. */
static int open_as_owner(struct xr_device *dev, const struct xr_device_open_attr *attr,
			 uint64_t deadline, struct xr_core_port *port)
{
	struct xr_xsk_port_config pcfg = {0};
	int err;

	/* Under the lock: a stale attachment is replaced by one process only. */
	err = xr_xdp_prepare_device(dev->ifname, !attr || attr->attach_if_needed,
				    &dev->attached_by_us);
	if (err)
		return err;
	err = xr_xdp_open(dev->ifname, &dev->xdp);
	if (err)
		return err;
	reset_shared_state(dev);

	pcfg.ifindex = dev->netdev.ifindex;
	pcfg.xsk_map_fd = dev->xdp.xsk_map_fd;
	/* We own the device: a queue still bound is a previous owner's socket being released. */
	pcfg.busy_wait_ms = ms_until(deadline);
	pcfg.bind_flags = dev->xdp.xsk_bind_flags;
	/*
	 * Multi-buffer sockets only where the interface carries a larger path
	 * MTU than single-buffer frames do: elsewhere they would cost a second
	 * descriptor and buy nothing.
	 */
	pcfg.multi_buffer = active_mtu_for(dev->netdev.mtu, UINT32_MAX) >
			    socket_max_mtu(XR_XSK_SINGLE_BUFFER_FRAME);
	err = xr_xsk_port_open(&pcfg, &dev->port);
	if (!err) {
		dev->max_frame = xr_xsk_port_max_frame(dev->port);
		dev->nengines = xr_engine_count((uint32_t)xr_xsk_port_nfds(dev->port));
		/* Before guests can join: they take their path MTU from it. */
		publish_engine_port(dev, true);
		err = xr_loopback_init(&dev->loopback, xr_xsk_port_tx_frames(dev->port));
	}
	if (!err)
		err = xr_share_owner_open(dev, deadline);
	*port = (struct xr_core_port){.ctx = dev,
				      .tx_queues = dev->port ? xr_xsk_port_tx_queues(dev->port) : 0,
				      .tx_alloc = port_tx_alloc,
				      .tx_submit = port_tx_submit,
				      .tx_submit_ack = port_tx_submit_ack,
				      .tx_abort = port_tx_abort,
				      .rx_foreign = xr_share_owner_rx_foreign};
	return err;
}

/*
 * Another process owns the device: ours goes through it (share.h), and our
 * QPs take their slots in its XDP program's qp_table as a holder of our own.
 */
static int open_as_guest(struct xr_device *dev, uint64_t deadline, struct xr_core_port *port)
{
	struct xr_engine_port owner;
	int err = xr_share_guest_open(dev, deadline);

	if (err)
		return err;
	xr_share_guest_port(dev, port);
	/* Our frames go out through the owner's sockets; it published them before letting us in. */
	dev->max_frame = XR_XSK_SINGLE_BUFFER_FRAME;
	if (!xr_xdp_read_engine_port(dev->ifname, &owner) && owner.max_frame)
		dev->max_frame =
		    owner.max_frame < XR_SHARE_FRAME_CAP ? owner.max_frame : XR_SHARE_FRAME_CAP;
	return xr_xdp_open(dev->ifname, &dev->xdp);
}

/* The owner, or else a guest of the owner; an owner that goes meanwhile is succeeded. */
static int open_owner_or_guest(struct xr_device *dev, const struct xr_device_open_attr *attr,
			       uint64_t deadline, struct xr_core_port *port)
{
	struct timespec pause = {0, 2000000};
	int err;

	for (;;) {
		dev->lock_fd = xr_device_lock(dev->ifname, deadline);
		if (dev->lock_fd >= 0)
			return open_as_owner(dev, attr, deadline, port);
		if (dev->lock_fd != -EBUSY)
			return dev->lock_fd;
		err = open_as_guest(dev, deadline, port);
		if (err != -EAGAIN)
			return err;
		if (xr_now_ns() >= deadline)
			return -EBUSY;
		nanosleep(&pause, NULL);
	}
}

#define ETH_SPEED_UNKNOWN 0xffffffffu
/* What the kernel assumes of an interface that does not tell its speed. */
#define ETH_SPEED_DEFAULT 1000u

/*
 * The interface's speed in Mb/s (and its lanes, 0 when it does not say),
 * from ethtool as the kernel's __ethtool_get_link_ksettings gives it:
 * ETHTOOL_GLINKSETTINGS (the handshake for the link mode words first), else
 * the legacy ETHTOOL_GSET. ETH_SPEED_UNKNOWN when neither answers. The
 * socket is this process's: the interface is looked up in its namespace.
 */
static uint32_t eth_speed(const char *ifname)
{
	struct {
		struct ethtool_link_settings req;
		uint32_t masks[3 * 127]; /* supported, advertised, peer: 127 words at most */
	} ls;
	struct ethtool_cmd cmd;
	uint32_t speed = ETH_SPEED_UNKNOWN;
	struct ifreq ifr;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return speed;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	memset(&ls, 0, sizeof(ls));
	ls.req.cmd = ETHTOOL_GLINKSETTINGS;
	ifr.ifr_data = (void *)&ls;
	if (!ioctl(fd, SIOCETHTOOL, &ifr) && ls.req.link_mode_masks_nwords < 0) {
		int8_t nwords = (int8_t)-ls.req.link_mode_masks_nwords;

		memset(&ls, 0, sizeof(ls));
		ls.req.cmd = ETHTOOL_GLINKSETTINGS;
		ls.req.link_mode_masks_nwords = nwords;
		if (!ioctl(fd, SIOCETHTOOL, &ifr))
			speed = ls.req.speed;
	} else {
		memset(&cmd, 0, sizeof(cmd));
		cmd.cmd = ETHTOOL_GSET;
		ifr.ifr_data = (void *)&cmd;
		if (!ioctl(fd, SIOCETHTOOL, &ifr))
			speed = ethtool_cmd_speed(&cmd);
	}
	close(fd);
	return speed;
}

/* A setting given in microseconds in the environment, in nanoseconds; dflt if unset. */
static uint64_t env_us_as_ns(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v ? strtoull(v, NULL, 10) * 1000 : dflt;
}

static int open_device(struct xr_device *dev, const char *ifname,
		       const struct xr_device_open_attr *attr)
{
	/* One bound for waiting out an exiting owner and the kernel's release of its sockets. */
	uint64_t deadline = xr_now_ns() + XR_OPEN_WAIT_MS * 1000000ull;
	struct xr_core_port port;
	const char *fast;
	uint32_t speed;
	int err, ngids;

	if (strlen(ifname) >= sizeof(dev->ifname))
		return -EINVAL;
	strcpy(dev->ifname, ifname);
	err = xr_nl_get_link(ifname, &dev->netdev);
	if (err)
		return err;
	if (dev->netdev.mtu < 256 + ROCE_MTU_OVERHEAD)
		return -EINVAL;
	err = open_owner_or_guest(dev, attr, deadline, &port);
	if (err)
		return err;
	/* A guest's frames all come through one socket to the owner: one engine. */
	if (!dev->port)
		dev->nengines = 1;
	port.engines = dev->nengines;

	port.cq_event = xr_channel_cq_event;
	xr_core_init(&dev->core, &port);
	dev->core.device = dev;
	memcpy(dev->core.mac, dev->netdev.mac, 6);
	ngids = xr_nl_get_gids(dev->netdev.ifindex, dev->netdev.mac, dev->core.gids, XR_MAX_GIDS);
	if (ngids < 0)
		return ngids;
	dev->core.num_gids = ngids;
	dev->core.active_mtu = active_mtu_for(dev->netdev.mtu, dev->max_frame);
	dev->core.xdp_qps = dev->xdp.qp_table;
	dev->core.xdp_holder = dev->share_guest ? xr_share_guest_holder(dev) : 0;
	/* QP1 is the owner's: the MADs of every process sharing the device come to it. */
	if (!dev->share_guest)
		xr_xdp_publish_gsi(&dev->core);
	if (attr && attr->disable_masked_atomics)
		dev->core.caps &= ~(uint64_t)XR_DEVICE_MASKED_ATOMICS;

	/* XROCE_SELECTIVE_REPEAT=0: go-back-N only, as a standard peer (for comparisons). */
	fast = getenv("XROCE_SELECTIVE_REPEAT");
	if (fast && !strcmp(fast, "0"))
		dev->core.caps &= ~(uint64_t)XR_DEVICE_SELECTIVE_REPEAT;
	speed = eth_speed(dev->ifname);
	if (speed != ETH_SPEED_UNKNOWN)
		dev->core.line_rate = (uint64_t)speed * 1000000 / 8;
	/* XROCE_ECN=0: Not-ECT frames, which a switch drops rather than marks (for comparisons). */
	fast = getenv("XROCE_ECN");
	if (fast && !strcmp(fast, "0"))
		dev->core.caps &= ~(uint64_t)XR_DEVICE_ECN;
	/* XROCE_XDP_FAST_PATH=0 keeps every frame in userspace (for comparisons). */
	fast = getenv("XROCE_XDP_FAST_PATH");
	if (fast && !strcmp(fast, "0"))
		dev->core.xdp_fast_path = 0;
	dev->busy_poll_ns = env_us_as_ns("XROCE_BUSY_POLL_US", DEFAULT_BUSY_POLL_NS);
	/* Unset: no sleep while an operation is outstanding, as an RDMA NIC never naps. */
	dev->spin_in_flight_ns = env_us_as_ns("XROCE_SPIN_IN_FLIGHT_US", UINT64_MAX);
	dev->standby_max_ns = env_us_as_ns("XROCE_STANDBY_MAX_US", DEFAULT_STANDBY_MAX_NS);
	dev->ack_hold_ns = env_us_as_ns("XROCE_ACK_HOLD_US", DEFAULT_ACK_HOLD_NS);
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
	/* A guest leaves the table and the groups to the owner; its own QPs are gone. */
	bool owner = !dev->share_guest;

	xr_engine_stop(dev);
	xr_core_release(&dev->core);
	xr_port_monitor_close(dev);
	xr_async_close(dev);
	xr_share_owner_close(dev);
	xr_share_guest_close(dev);
	xr_loopback_destroy(&dev->loopback);
	if (dev->port)
		xr_xsk_port_close(dev->port);
	if (owner)
		xr_mcast_reset(dev);
	if (dev->xdp.qp_table) {
		if (owner) {
			memset(dev->xdp.qp_table, 0,
			       sizeof(*dev->xdp.qp_table) * XR_QP_TABLE_SLOTS);
			publish_engine_port(dev, false);
		}
		xr_xdp_close(&dev->xdp);
	}
	if (dev->attached_by_us)
		xr_xdp_detach(dev->ifname);
	if (dev->lock_fd >= 0)
		xr_device_unlock(dev->ifname, dev->lock_fd);
}

/*
 * The process's open devices. A process that exits right after its last
 * completion, without closing the device, must still send the ACK its last
 * round held back (the peer waits for it), and its connection manager must
 * still answer its peers as the kernel's does for an exiting process (a
 * DREP for the DREQ received, a DREQ for a connection left up): exit()
 * sends them all.
 */
static pthread_mutex_t open_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xr_device *open_devices;
static pthread_once_t exit_hook_once = PTHREAD_ONCE_INIT;

static void leave_at_exit(void)
{
	pthread_mutex_lock(&open_devices_lock);
	for (struct xr_device *dev = open_devices; dev; dev = dev->next_open) {
		pthread_mutex_lock(&dev->lock);
		xr_cm_farewell(dev->core.cm, xr_now_ns());
		pthread_mutex_unlock(&dev->lock);
		xr_engine_release_acks(dev);
	}
	pthread_mutex_unlock(&open_devices_lock);
}

static void register_exit_hook(void)
{
	atexit(leave_at_exit);
}

static void add_open_device(struct xr_device *dev)
{
	pthread_once(&exit_hook_once, register_exit_hook);
	pthread_mutex_lock(&open_devices_lock);
	dev->next_open = open_devices;
	open_devices = dev;
	pthread_mutex_unlock(&open_devices_lock);
}

static void remove_open_device(struct xr_device *dev)
{
	pthread_mutex_lock(&open_devices_lock);
	for (struct xr_device **p = &open_devices; *p; p = &(*p)->next_open) {
		if (*p == dev) {
			*p = dev->next_open;
			break;
		}
	}
	pthread_mutex_unlock(&open_devices_lock);
}

struct xr_device *xr_device_find_open(const char *ifname)
{
	struct xr_device *dev;

	pthread_mutex_lock(&open_devices_lock);
	for (dev = open_devices; dev; dev = dev->next_open)
		if (!strcmp(dev->ifname, ifname))
			break;
	pthread_mutex_unlock(&open_devices_lock);
	return dev;
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
	add_open_device(dev);
	return dev;
}

int xr_close_device(struct xr_device *dev)
{
	if (!dev)
		return -EINVAL;
	for (int i = 0; i < XR_MAX_QP; i++)
		if (dev->core.qps[i])
			return -EBUSY;
	remove_open_device(dev);
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
	a->max_qp_init_rd_atom = XR_MAX_INIT_RD_ATOMIC;
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

/* ---- xr_query_port ---------------------------------------------------- */

/*
 * IB width and speed for an Ethernet speed, as the kernel's
 * ib_get_width_and_speed does when the driver reports no lanes (the ioctl
 * interface does not carry them).
 */
static void ib_width_and_speed(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	static const struct {
		uint32_t up_to;
		uint8_t width, speed;
	} map[] = {
	    {1000, XR_WIDTH_1X, XR_SPEED_SDR},	  {10000, XR_WIDTH_1X, XR_SPEED_FDR10},
	    {20000, XR_WIDTH_4X, XR_SPEED_DDR},	  {25000, XR_WIDTH_1X, XR_SPEED_EDR},
	    {40000, XR_WIDTH_4X, XR_SPEED_FDR10}, {50000, XR_WIDTH_2X, XR_SPEED_EDR},
	    {100000, XR_WIDTH_4X, XR_SPEED_EDR},  {200000, XR_WIDTH_4X, XR_SPEED_HDR},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (mbps <= map[i].up_to) {
			*width = map[i].width;
			*speed = map[i].speed;
			return;
		}
	*width = XR_WIDTH_4X;
	*speed = XR_SPEED_NDR;
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int xr_query_port(struct xr_device *dev, uint8_t port_num, struct xr_port_attr *a)
{
	struct xr_netdev_info link;
	struct xr_xdp_stats xdp;
	uint64_t bad_pkey, bad_qkey;
	uint32_t speed;
	int err;

	if (!dev || !a || port_num != 1)
		return -(errno = EINVAL);
	/* The link as it is now: the device may have been opened long ago. */
	err = xr_nl_get_link(dev->ifname, &link);
	if (err)
		return -(errno = -err);
	speed = eth_speed(dev->ifname);
	if (speed == ETH_SPEED_UNKNOWN)
		speed = ETH_SPEED_DEFAULT;

	memset(a, 0, sizeof(*a));
	if (xr_link_active(link.flags)) {
		a->state = XR_PORT_ACTIVE;
		a->phys_state = XR_PORT_PHYS_STATE_LINK_UP;
	} else {
		/* As rxe: administratively up without carrier is still polling. */
		a->state = XR_PORT_DOWN;
		a->phys_state = (link.flags & IFF_UP) ? XR_PORT_PHYS_STATE_POLLING
						      : XR_PORT_PHYS_STATE_DISABLED;
	}
	a->max_mtu = socket_max_mtu(dev->max_frame);
	a->port_cap_flags = XR_PORT_IP_BASED_GIDS;
	a->max_msg_sz = XR_MAX_MSG_SZ;
	a->pkey_tbl_len = 1;
	a->link_layer = XR_LINK_LAYER_ETHERNET;
	ib_width_and_speed(speed, &a->active_width, &a->active_speed);
	pthread_mutex_lock(&dev->lock);
	a->active_mtu = dev->core.active_mtu;
	a->gid_tbl_len = dev->core.num_gids;
	bad_pkey = dev->core.stats.rx_bad_pkey;
	bad_qkey = dev->core.stats.rx_bad_qkey;
	pthread_mutex_unlock(&dev->lock);
	/* Datagrams XDP dropped for their Q_Key never reached the engine. */
	if (!xr_xdp_read_stats(dev->ifname, &xdp))
		bad_qkey += xdp.drop_bad_qkey;
	a->bad_pkey_cntr = sat32(bad_pkey);
	a->qkey_viol_cntr = sat32(bad_qkey);
	return 0;
}
