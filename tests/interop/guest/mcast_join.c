/* SPDX-License-Identifier: MIT */
/*
 * mcast_join GROUP IFNAME SECONDS: makes IFNAME a member of the IP multicast
 * group GROUP (IPv4 or IPv6) for SECONDS, then leaves it by exiting.
 *
 * Built on the host into rxe-peer's share by tests/interop/perftest.sh and
 * run in the guest next to a multicast receiver (ib_send_bw -g): Soft-RoCE
 * 6.1 attaching a QP to a group neither joins the IP group (no IGMP/MLD
 * report, so no switch or bridge snooping learns it) nor, for an IPv4
 * group, programs the right MAC filter (it asks for 33:33:ef:01:02:03, the
 * IPv6 mapping, instead of 01:00:5e:01:02:03), so the guest's NIC drops the
 * group's frames. A socket's membership does both, as the kernel should
 * have for the QP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: mcast_join GROUP IFNAME SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct in6_addr group6;
	struct in_addr group4;
	unsigned int ifindex;
	char *end;
	long seconds;
	int fd, ret;

	if (argc != 4)
		return usage();
	ifindex = if_nametoindex(argv[2]);
	if (!ifindex) {
		fprintf(stderr, "mcast_join: no interface %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	errno = 0;
	seconds = strtol(argv[3], &end, 10);
	if (errno || end == argv[3] || *end || seconds < 1 || seconds > 86400) {
		fprintf(stderr, "mcast_join: SECONDS must be 1 to 86400, not '%s'\n", argv[3]);
		return usage();
	}
	if (inet_pton(AF_INET, argv[1], &group4) == 1) {
		struct ip_mreqn mreq = {.imr_multiaddr = group4, .imr_ifindex = (int)ifindex};

		if (!IN_MULTICAST(ntohl(group4.s_addr))) {
			fprintf(stderr, "mcast_join: %s is not an IPv4 multicast group\n", argv[1]);
			return 1;
		}
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		ret = fd < 0 ? -1
			     : setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq));
	} else if (inet_pton(AF_INET6, argv[1], &group6) == 1) {
		struct ipv6_mreq mreq = {.ipv6mr_multiaddr = group6, .ipv6mr_interface = ifindex};

		if (!IN6_IS_ADDR_MULTICAST(&group6)) {
			fprintf(stderr, "mcast_join: %s is not an IPv6 multicast group\n", argv[1]);
			return 1;
		}
		fd = socket(AF_INET6, SOCK_DGRAM, 0);
		ret = fd < 0
			  ? -1
			  : setsockopt(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &mreq, sizeof(mreq));
	} else {
		fprintf(stderr, "mcast_join: %s is not an IPv4 or IPv6 address\n", argv[1]);
		return usage();
	}
	if (ret) {
		fprintf(stderr, "mcast_join: joining %s on %s failed: %s\n", argv[1], argv[2],
			strerror(errno));
		return 1;
	}
	printf("mcast_join: %s joined on %s for %ld s\n", argv[1], argv[2], seconds);
	fflush(stdout);
	sleep((unsigned int)seconds);
	close(fd);
	return 0;
}
