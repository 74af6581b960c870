/* SPDX-License-Identifier: MIT */
/*
 * What the device learns about its interface while it is open: rtnetlink
 * link and address notifications (libmnl) become PORT_ACTIVE / PORT_ERR
 * when the interface goes up or down, and GID_CHANGE when an address comes
 * or goes (or the MAC the default GID derives from changes). A new MAC is
 * the core's from then on, and XDP's for binding frames. The GID table keeps the indexes of the
 * entries that remain, as rxe's does: a removed address leaves an empty (zero) entry, a new one
 * takes the first empty entry or goes at the end.
 */
#include <errno.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>

#include "device.h"

struct monitor_news {
	int ifindex;
	bool link_seen, active, addrs_changed, mac_seen;
	uint8_t mac[6];
};

/* As xr_query_port tells it now. */
static bool interface_active(const char *ifname)
{
	struct xr_netdev_info link;

	return !xr_nl_get_link(ifname, &link) && xr_link_active(link.flags);
}

/* The link as it is now, for when notifications were lost. */
static void read_link(const char *ifname, struct monitor_news *news)
{
	struct xr_netdev_info link;

	news->link_seen = true;
	news->active = false;
	if (xr_nl_get_link(ifname, &link))
		return;
	news->active = xr_link_active(link.flags);
	memcpy(news->mac, link.mac, sizeof(news->mac));
	news->mac_seen = true;
}

static int link_attr_cb(const struct nlattr *attr, void *data)
{
	struct monitor_news *news = data;

	if (mnl_attr_get_type(attr) == IFLA_ADDRESS &&
	    mnl_attr_get_payload_len(attr) == sizeof(news->mac)) {
		memcpy(news->mac, mnl_attr_get_payload(attr), sizeof(news->mac));
		news->mac_seen = true;
	}
	return MNL_CB_OK;
}

int xr_port_monitor_open(struct xr_device *dev)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
			    MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(nl);
		return err;
	}
	dev->monitor = nl;
	dev->port_active = interface_active(dev->ifname);
	return 0;
}

void xr_port_monitor_close(struct xr_device *dev)
{
	if (dev->monitor)
		mnl_socket_close(dev->monitor);
	dev->monitor = NULL;
}

int xr_port_monitor_fd(const struct xr_device *dev)
{
	return dev->monitor ? mnl_socket_get_fd(dev->monitor) : -1;
}

static int news_cb(const struct nlmsghdr *nlh, void *data)
{
	struct monitor_news *news = data;

	switch (nlh->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK: {
		const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

		if (ifi->ifi_index == news->ifindex) {
			news->link_seen = true;
			news->active =
			    nlh->nlmsg_type == RTM_NEWLINK && xr_link_active(ifi->ifi_flags);
			if (nlh->nlmsg_type == RTM_NEWLINK)
				mnl_attr_parse(nlh, sizeof(*ifi), link_attr_cb, news);
		}
		break;
	}
	case RTM_NEWADDR:
	case RTM_DELADDR: {
		const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);

		if ((int)ifa->ifa_index == news->ifindex)
			news->addrs_changed = true;
		break;
	}
	}
	return MNL_CB_OK;
}

static bool gid_in(const union xr_gid *gid, const union xr_gid *table, int n)
{
	for (int i = 0; i < n; i++)
		if (!memcmp(gid, &table[i], sizeof(*gid)))
			return true;
	return false;
}

/* Merges the interface's GIDs now into the core's table; true if anything changed. */
static bool merge_gids(struct xr_core *core, const union xr_gid *now, int n)
{
	static const union xr_gid empty;
	bool changed = false;

	for (int i = 0; i < core->num_gids; i++)
		if (memcmp(&core->gids[i], &empty, sizeof(empty)) &&
		    !gid_in(&core->gids[i], now, n)) {
			core->gids[i] = empty;
			changed = true;
		}
	for (int k = 0; k < n; k++) {
		int slot;

		if (gid_in(&now[k], core->gids, core->num_gids))
			continue;
		for (slot = 0;
		     slot < core->num_gids && memcmp(&core->gids[slot], &empty, sizeof(empty));
		     slot++)
			;
		if (slot == XR_MAX_GIDS)
			continue; /* no room: as a full hardware table, the address has no GID */
		core->gids[slot] = now[k];
		if (slot == core->num_gids)
			core->num_gids++;
		changed = true;
	}
	return changed;
}

void xr_port_monitor_poll(struct xr_device *dev)
{
	struct monitor_news news = {.ifindex = dev->netdev.ifindex};
	char buf[MNL_SOCKET_BUFFER_SIZE];
	union xr_gid gids[XR_MAX_GIDS];
	bool any = false, mac_changed;
	ssize_t len;
	int ngids = -1;

	if (!dev->monitor)
		return;
	while ((len = mnl_socket_recvfrom(dev->monitor, buf, sizeof(buf))) > 0) {
		mnl_cb_run(buf, (size_t)len, 0, 0, news_cb, &news);
		any = true;
	}
	/* ENOBUFS: notifications were lost; look at everything afresh. */
	if (len < 0 && errno == ENOBUFS) {
		read_link(dev->ifname, &news);
		news.addrs_changed = true;
		any = true;
	}
	if (!any)
		return;
	/* Only this thread writes netdev.mac: it may read it without the lock. */
	mac_changed = news.mac_seen && memcmp(news.mac, dev->netdev.mac, sizeof(news.mac));
	/* Asked outside the device lock: a netlink dump is a round trip to the kernel. */
	if (news.addrs_changed || mac_changed)
		ngids = xr_nl_get_gids(dev->netdev.ifindex,
				       mac_changed ? news.mac : dev->netdev.mac, gids, XR_MAX_GIDS);
	pthread_mutex_lock(&dev->lock);
	if (mac_changed) {
		memcpy(dev->netdev.mac, news.mac, sizeof(dev->netdev.mac));
		xr_core_mac_changed(&dev->core, news.mac);
	}
	if (news.link_seen && news.active != dev->port_active) {
		dev->port_active = news.active;
		xr_core_raise_event(&dev->core,
				    news.active ? XR_EVENT_PORT_ACTIVE : XR_EVENT_PORT_ERR, NULL);
	}
	if (ngids >= 0 && merge_gids(&dev->core, gids, ngids))
		xr_core_raise_event(&dev->core, XR_EVENT_GID_CHANGE, NULL);
	xr_unlock_and_notify(dev);
}
