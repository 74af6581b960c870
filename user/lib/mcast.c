/* SPDX-License-Identifier: MIT */
/*
 * A device's side of multicast groups: the interface's membership of the IP
 * group, through the kernel (a socket holding IP_ADD_MEMBERSHIP or
 * IPV6_ADD_MEMBERSHIP sends the IGMP/MLD reports switches snoop and programs
 * the multicast MAC filter), and the group's entry in XDP's group table.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "device.h"
#include "mcast.h"

static int join_ip_group(const struct xr_device *dev, const union xr_gid *gid)
{
	int fd, err = 0;

	if (xr_gid_is_v4mapped(gid)) {
		struct ip_mreqn m = {.imr_ifindex = dev->netdev.ifindex};

		memcpy(&m.imr_multiaddr, &gid->raw[12], 4);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)))
			err = -errno;
	} else {
		struct ipv6_mreq m = {.ipv6mr_interface = dev->netdev.ifindex};

		memcpy(&m.ipv6mr_multiaddr, gid->raw, 16);
		fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &m, sizeof(m)))
			err = -errno;
	}
	if (fd < 0)
		return -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static void gid_key(const union xr_gid *gid, struct xr_mcast_key *key)
{
	memcpy(key->gid, gid->raw, sizeof(key->gid));
}

int xr_mcast_join(struct xr_device *dev, int group, const union xr_gid *gid, uint32_t nqps)
{
	struct xr_mcast_entry entry = {.qps_attached = nqps};
	struct xr_mcast_key key;
	int fd;

	gid_key(gid, &key);
	fd = join_ip_group(dev, gid);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(dev->xdp.mcast_map_fd, &key, &entry, BPF_NOEXIST)) {
		int err = -errno;

		close(fd);
		return err;
	}
	dev->mcast_fd[group] = fd;
	return 0;
}

void xr_mcast_count(struct xr_device *dev, const union xr_gid *gid, uint32_t nqps)
{
	struct xr_mcast_entry entry;
	struct xr_mcast_key key;

	gid_key(gid, &key);
	/* Operators' figure only: the entry's presence is what XDP acts on. */
	if (!bpf_map_lookup_elem(dev->xdp.mcast_map_fd, &key, &entry)) {
		entry.qps_attached = nqps;
		bpf_map_update_elem(dev->xdp.mcast_map_fd, &key, &entry, BPF_EXIST);
	}
}

void xr_mcast_leave(struct xr_device *dev, int group, const union xr_gid *gid)
{
	struct xr_mcast_key key;

	gid_key(gid, &key);
	/* XDP stops steering first; closing the socket leaves the IP group. */
	bpf_map_delete_elem(dev->xdp.mcast_map_fd, &key);
	if (dev->mcast_fd[group] >= 0)
		close(dev->mcast_fd[group]);
	dev->mcast_fd[group] = -1;
}

void xr_mcast_reset(struct xr_device *dev)
{
	struct xr_mcast_key key;

	for (int i = 0; i < XR_MAX_MCAST_GROUPS; i++) {
		if (dev->mcast_fd[i] >= 0)
			close(dev->mcast_fd[i]);
		dev->mcast_fd[i] = -1;
	}
	if (dev->xdp.mcast_map_fd < 0)
		return;
	/* Also the groups of a previous owner that died: the kernel left its IP groups. */
	while (!bpf_map_get_next_key(dev->xdp.mcast_map_fd, NULL, &key))
		if (bpf_map_delete_elem(dev->xdp.mcast_map_fd, &key))
			break;
}
