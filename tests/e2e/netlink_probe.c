// SPDX-License-Identifier: MIT
/*
 * Prints what libxroce's rtnetlink module sees, for test_netlink.sh:
 *   netlink_probe IFNAME                  interface facts and GID table
 *   netlink_probe IFNAME resolve IPADDR   the neighbour's MAC address
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netlink.h"

#define MAX_GIDS 64
#define RESOLVE_TIMEOUT_MS 3000

static int parse_gid(const char *text, union xr_gid *gid)
{
	struct in_addr v4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, text, &v4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &v4, sizeof(v4));
		return 0;
	}
	return inet_pton(AF_INET6, text, gid->raw) == 1 ? 0 : -EINVAL;
}

static void print_mac(const char *label, const uint8_t mac[6])
{
	printf("%s %02x:%02x:%02x:%02x:%02x:%02x\n", label, mac[0], mac[1], mac[2], mac[3], mac[4],
	       mac[5]);
}

static int show_link(const struct xr_netdev_info *info)
{
	union xr_gid gids[MAX_GIDS];
	int count = xr_nl_get_gids(info->ifindex, info->mac, gids, MAX_GIDS);

	if (count < 0) {
		fprintf(stderr, "netlink_probe: reading GIDs: %s\n", strerror(-count));
		return 1;
	}
	printf("ifindex %d\n", info->ifindex);
	print_mac("mac", info->mac);
	printf("mtu %u\n", info->mtu);
	printf("queues %u\n", info->num_rx_queues);
	for (int i = 0; i < count; i++) {
		printf("gid %d ", i);
		for (int j = 0; j < 16; j += 2)
			printf("%02x%02x%s", gids[i].raw[j], gids[i].raw[j + 1],
			       j < 14 ? ":" : "\n");
	}
	return 0;
}

static int resolve(const struct xr_netdev_info *info, const char *address)
{
	union xr_gid gid;
	uint8_t mac[6];
	int ret;

	if (parse_gid(address, &gid)) {
		fprintf(stderr, "netlink_probe: not an IPv4 or IPv6 address: %s\n", address);
		return 2;
	}
	ret = xr_nl_resolve_neigh(info->ifindex, &gid, mac, RESOLVE_TIMEOUT_MS);
	if (ret) {
		fprintf(stderr, "netlink_probe: resolving %s: %s\n", address, strerror(-ret));
		return 1;
	}
	print_mac("neigh", mac);
	return 0;
}

int main(int argc, char **argv)
{
	struct xr_netdev_info info;
	int ret;

	if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "resolve"))) {
		fprintf(stderr, "usage: netlink_probe IFNAME [resolve IPADDR]\n");
		return 2;
	}
	ret = xr_nl_get_link(argv[1], &info);
	if (ret) {
		fprintf(stderr, "netlink_probe: interface %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	return argc == 2 ? show_link(&info) : resolve(&info, argv[3]);
}
