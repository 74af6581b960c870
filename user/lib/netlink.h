/* SPDX-License-Identifier: MIT */
/*
 * What xroce needs from the kernel's network configuration, over rtnetlink
 * (libmnl): the interface, its GID table, and neighbours' MAC addresses.
 */
#ifndef XROCE_NETLINK_H
#define XROCE_NETLINK_H

#include <net/if.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdint.h>

#include "xroce/xroce.h"

struct xr_netdev_info {
	int ifindex;
	uint8_t mac[6];
	uint32_t mtu;
	uint32_t num_rx_queues;
	unsigned int flags; /* IFF_UP, IFF_LOWER_UP (carrier), ... when it was read */
};

/* Returns 0, -ENODEV if there is no such interface, or another negative errno. */
int xr_nl_get_link(const char *ifname, struct xr_netdev_info *info);

/* glibc's net/if.h stops before the kernel's IFF_LOWER_UP (carrier). */
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif

/* An interface's link flags say its RoCE port is active: up, with carrier. */
static inline bool xr_link_active(unsigned int flags)
{
	return (flags & IFF_UP) && (flags & IFF_LOWER_UP);
}

/*
 * Fills gids[0..max) in the order rxe (ib_core's roce_gid_mgmt) uses:
 * index 0 the default GID, fe80::/64 with the EUI-64 of the MAC; then the
 * interface's IPv4 addresses as ::ffff:a.b.c.d, in the kernel's order; then
 * its IPv6 addresses other than link-local. Returns the count or a negative errno.
 */
int xr_nl_get_gids(int ifindex, const uint8_t mac[6], union xr_gid *gids, int max);

/*
 * MAC address of the neighbour with address gid (IPv4-mapped or IPv6)
 * through ifindex, from the kernel's neighbour table; when absent or not
 * yet valid it makes the kernel resolve it and waits up to timeout_ms.
 * Returns 0, -EHOSTUNREACH when resolution failed, or a negative errno.
 */
int xr_nl_resolve_neigh(int ifindex, const union xr_gid *gid, uint8_t mac[6], int timeout_ms);

/* The kernel's route to an address (its answer to `ip route get`). */
struct xr_nl_route {
	bool found;
	bool local; /* the address is this host's */
	int ifindex;
	bool has_gateway, has_prefsrc;
	struct sockaddr_storage gateway; /* the next hop when not on-link */
	struct sockaddr_storage prefsrc; /* the source address the kernel would use */
};

/*
 * The route to dst (AF_INET or AF_INET6; an IPv6 scope ID as the
 * interface; a unicast, local or multicast route), from src when it is
 * given and not the wildcard. Returns 0,
 * -ENETUNREACH when no route leads there, or another negative errno.
 */
int xr_nl_get_route(const struct sockaddr *dst, const struct sockaddr *src,
		    struct xr_nl_route *route);

#endif /* XROCE_NETLINK_H */
