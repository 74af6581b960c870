// SPDX-License-Identifier: MIT
/*
 * rtnetlink queries (libmnl) in the network namespace of the calling thread.
 * Every call opens its own socket: these are control-path operations, and a
 * private socket keeps them thread-safe without locking.
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "netlink.h"
#include "core/packet.h"

/* Large enough for a whole dump message batch, as the kernel sizes them. */
#define NL_RECV_BUF_SIZE 32768
/* A netlink reply never takes this long; the limit only guards against a hang. */
#define NL_RECV_TIMEOUT_SEC 2
#define NEIGH_POLL_INTERVAL_MS 5

/*
 * Sends req and feeds every reply message to cb until the kernel's final
 * ACK or NLMSG_DONE. Non-dump requests must carry NLM_F_ACK so the exchange
 * has a definite end. Returns 0 or a negative errno (the kernel's own error
 * for a refused request).
 */
static int nl_request(struct nlmsghdr *req, mnl_cb_t cb, void *data)
{
	const struct timeval recv_timeout = {.tv_sec = NL_RECV_TIMEOUT_SEC};
	char buf[NL_RECV_BUF_SIZE];
	struct mnl_socket *nl;
	unsigned int portid;
	int ret;

	nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &recv_timeout,
		       sizeof(recv_timeout)) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	req->nlmsg_seq = 1;

	if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	do {
		ssize_t len = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (len < 0) {
			ret = errno == EAGAIN ? -ETIMEDOUT : -errno;
			goto out;
		}
		ret = mnl_cb_run(buf, len, req->nlmsg_seq, portid, cb, data);
	} while (ret > MNL_CB_STOP);
	ret = ret < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return ret;
}

/* ---- links ----------------------------------------------------------- */

struct link_reply {
	struct xr_netdev_info *info;
	char ifname[IFNAMSIZ]; /* the kernel's name, ifname may be an altname */
	int err;
};

static int link_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (mnl_attr_type_valid(attr, IFLA_MAX) < 0)
		return MNL_CB_OK;
	tb[type] = attr;
	return MNL_CB_OK;
}

static int link_msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[IFLA_MAX + 1] = {0};
	struct link_reply *reply = data;
	struct xr_netdev_info *info = reply->info;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifm), link_attr_cb, tb);

	/* RoCE needs Ethernet framing; loopback has a 6-byte address too. */
	if (ifm->ifi_type != ARPHRD_ETHER || !tb[IFLA_ADDRESS] ||
	    mnl_attr_get_payload_len(tb[IFLA_ADDRESS]) != sizeof(info->mac) || !tb[IFLA_MTU]) {
		reply->err = -EOPNOTSUPP;
		return MNL_CB_OK;
	}
	info->ifindex = ifm->ifi_index;
	if (tb[IFLA_IFNAME])
		snprintf(reply->ifname, sizeof(reply->ifname), "%s",
			 mnl_attr_get_str(tb[IFLA_IFNAME]));
	memcpy(info->mac, mnl_attr_get_payload(tb[IFLA_ADDRESS]), sizeof(info->mac));
	info->mtu = mnl_attr_get_u32(tb[IFLA_MTU]);
	info->num_rx_queues = tb[IFLA_NUM_RX_QUEUES] ? mnl_attr_get_u32(tb[IFLA_NUM_RX_QUEUES]) : 1;
	info->flags = ifm->ifi_flags;
	reply->err = 0;
	return MNL_CB_OK;
}

/*
 * IFLA_NUM_RX_QUEUES counts the queues allocated, not those in use: a veth
 * allocates one per possible CPU but runs one, and an AF_XDP socket can
 * bind only to a queue in use. The driver's channel counts say which are.
 */
static uint32_t rx_queues_in_use(const char *ifname, uint32_t allocated)
{
	struct ethtool_channels channels = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr = {.ifr_data = (void *)&channels};
	uint32_t in_use = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return allocated;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		in_use = channels.rx_count + channels.combined_count;
	close(fd);
	/* Drivers without channel support keep every allocated queue running. */
	return in_use ? in_use : allocated;
}

int xr_nl_get_link(const char *ifname, struct xr_netdev_info *info)
{
	char req_buf[MNL_SOCKET_BUFFER_SIZE];
	struct link_reply reply = {.info = info, .err = -ENODEV};
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifm;
	int ret;

	if (!ifname || !info)
		return -EINVAL;
	/* No interface can have a name this long; the kernel would say EINVAL. */
	if (strnlen(ifname, IFNAMSIZ) >= IFNAMSIZ || !ifname[0])
		return -ENODEV;

	nlh = mnl_nlmsg_put_header(req_buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	/* Statistics would only make the reply bigger. */
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);

	ret = nl_request(nlh, link_msg_cb, &reply);
	if (ret || reply.err)
		return ret ? ret : reply.err;
	info->num_rx_queues = rx_queues_in_use(reply.ifname, info->num_rx_queues);
	return 0;
}

/* ---- GID table ------------------------------------------------------- */

struct gid_table {
	union xr_gid *gids;
	int count, max;
	int ifindex;
	int family; /* the family being collected by the current dump */
};

static void gid_table_add(struct gid_table *t, const union xr_gid *gid)
{
	/* ib_core's GID cache refuses duplicates, e.g. the EUI-64 link-local. */
	for (int i = 0; i < t->count; i++)
		if (!memcmp(&t->gids[i], gid, sizeof(*gid)))
			return;
	if (t->count < t->max)
		t->gids[t->count++] = *gid;
}

static int addr_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(attr, IFA_MAX) < 0)
		return MNL_CB_OK;
	tb[mnl_attr_get_type(attr)] = attr;
	return MNL_CB_OK;
}

static int addr_msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[IFA_MAX + 1] = {0};
	struct gid_table *t = data;
	const struct nlattr *addr;
	union xr_gid gid = {0};

	if (nlh->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != t->ifindex ||
	    ifa->ifa_family != t->family)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifa), addr_attr_cb, tb);
	/* IFA_ADDRESS is the peer's on point-to-point links; IFA_LOCAL is ours. */
	addr = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!addr)
		return MNL_CB_OK;

	if (t->family == AF_INET) {
		if (mnl_attr_get_payload_len(addr) != 4)
			return MNL_CB_OK;
		gid.raw[10] = 0xff;
		gid.raw[11] = 0xff;
		memcpy(&gid.raw[12], mnl_attr_get_payload(addr), 4);
	} else {
		if (mnl_attr_get_payload_len(addr) != sizeof(gid.raw))
			return MNL_CB_OK;
		memcpy(gid.raw, mnl_attr_get_payload(addr), sizeof(gid.raw));
		if (gid.raw[0] == 0xfe && (gid.raw[1] & 0xc0) == 0x80)
			return MNL_CB_OK;
	}
	gid_table_add(t, &gid);
	return MNL_CB_OK;
}

static int dump_addrs(struct gid_table *t, int family)
{
	char req_buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req_buf);
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = family;
	/* Filtering by ifindex in the kernel needs strict checking; filter here. */
	t->family = family;
	return nl_request(nlh, addr_msg_cb, t);
}

int xr_nl_get_gids(int ifindex, const uint8_t mac[6], union xr_gid *gids, int max)
{
	struct gid_table t = {.gids = gids, .max = max, .ifindex = ifindex};
	union xr_gid default_gid = {0};
	int ret;

	if (ifindex <= 0 || !mac || !gids || max < 1)
		return -EINVAL;

	/* fe80::/64 with the modified EUI-64 of the MAC (RFC 4291 appendix A). */
	default_gid.raw[0] = 0xfe;
	default_gid.raw[1] = 0x80;
	default_gid.raw[8] = mac[0] ^ 0x02;
	default_gid.raw[9] = mac[1];
	default_gid.raw[10] = mac[2];
	default_gid.raw[11] = 0xff;
	default_gid.raw[12] = 0xfe;
	default_gid.raw[13] = mac[3];
	default_gid.raw[14] = mac[4];
	default_gid.raw[15] = mac[5];
	gid_table_add(&t, &default_gid);

	ret = dump_addrs(&t, AF_INET);
	if (!ret)
		ret = dump_addrs(&t, AF_INET6);
	/* A kernel without IPv6 has no AF_INET6 addresses to list. */
	if (ret == -EAFNOSUPPORT)
		ret = 0;
	return ret ? ret : t.count;
}

/* ---- neighbours ------------------------------------------------------ */

struct neigh_reply {
	uint16_t state;
	bool has_lladdr;
	uint8_t lladdr[6];
};

static int neigh_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(attr, NDA_MAX) < 0)
		return MNL_CB_OK;
	tb[mnl_attr_get_type(attr)] = attr;
	return MNL_CB_OK;
}

static int neigh_msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[NDA_MAX + 1] = {0};
	struct neigh_reply *reply = data;

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ndm), neigh_attr_cb, tb);
	reply->state = ndm->ndm_state;
	reply->has_lladdr =
	    tb[NDA_LLADDR] && mnl_attr_get_payload_len(tb[NDA_LLADDR]) == sizeof(reply->lladdr);
	if (reply->has_lladdr)
		memcpy(reply->lladdr, mnl_attr_get_payload(tb[NDA_LLADDR]), sizeof(reply->lladdr));
	return MNL_CB_OK;
}

struct neigh_key {
	int ifindex;
	int family;
	const void *addr;
	int addr_len;
};

static struct nlmsghdr *neigh_msg(char *buf, const struct neigh_key *key, uint16_t type,
				  uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ndmsg *ndm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = key->family;
	ndm->ndm_ifindex = key->ifindex;
	mnl_attr_put(nlh, NDA_DST, key->addr_len, key->addr);
	return nlh;
}

/* The kernel's entry for key; state NUD_NONE when there is none. */
static int neigh_get(const struct neigh_key *key, struct neigh_reply *reply)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int ret;

	memset(reply, 0, sizeof(*reply));
	ret = nl_request(neigh_msg(buf, key, RTM_GETNEIGH, 0), neigh_msg_cb, reply);
	return ret == -ENOENT ? 0 : ret;
}

/*
 * Makes the kernel resolve key now. NTF_USE acts as if a packet were
 * waiting for the neighbour: it creates the entry if needed and sends the
 * ARP request or neighbour solicitation itself, on exactly this interface,
 * independent of routing and without sending anything to the peer's ports
 * (a datagram from a socket would need a route through the interface and
 * would resolve a gateway instead of an off-subnet address).
 */
static int neigh_trigger(const struct neigh_key *key)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = neigh_msg(buf, key, RTM_NEWNEIGH, NLM_F_CREATE);
	struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);

	ndm->ndm_state = NUD_NONE;
	ndm->ndm_flags = NTF_USE;
	return nl_request(nlh, NULL, NULL);
}

static bool neigh_usable(const struct neigh_reply *n)
{
	const uint16_t valid =
	    NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;

	return (n->state & valid) && n->has_lladdr;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int xr_nl_resolve_neigh(int ifindex, const union xr_gid *gid, uint8_t mac[6], int timeout_ms)
{
	static const uint8_t zero[16];
	struct neigh_key key = {.ifindex = ifindex};
	struct neigh_reply n;
	int64_t deadline;
	int polls_left, ret;

	if (ifindex <= 0 || !gid || !mac || timeout_ms < 0 || !memcmp(gid->raw, zero, 16))
		return -EINVAL;
	if (xr_gid_is_v4mapped(gid)) {
		key.family = AF_INET;
		key.addr = &gid->raw[12];
		key.addr_len = 4;
	} else {
		key.family = AF_INET6;
		key.addr = gid->raw;
		key.addr_len = 16;
	}

	ret = neigh_get(&key, &n);
	if (ret)
		return ret;
	if (neigh_usable(&n))
		goto resolved;
	ret = neigh_trigger(&key);
	if (ret)
		return ret;

	/* Both the clock and the count bound the wait. */
	deadline = monotonic_ms() + timeout_ms;
	polls_left = timeout_ms / NEIGH_POLL_INTERVAL_MS + 1;
	for (;;) {
		int64_t remaining;
		struct timespec pause;

		ret = neigh_get(&key, &n);
		if (ret)
			return ret;
		if (neigh_usable(&n))
			break;
		/*
		 * The trigger moved any FAILED entry to INCOMPLETE, so FAILED
		 * now means the kernel gave up on this very attempt.
		 */
		remaining = deadline - monotonic_ms();
		if (n.state == NUD_FAILED || remaining <= 0 || polls_left-- <= 0)
			return -EHOSTUNREACH;
		if (remaining > NEIGH_POLL_INTERVAL_MS)
			remaining = NEIGH_POLL_INTERVAL_MS;
		pause = (struct timespec){.tv_nsec = remaining * 1000000};
		nanosleep(&pause, NULL);
	}
resolved:
	memcpy(mac, n.lladdr, sizeof(n.lladdr));
	return 0;
}

/* ---- routes ---------------------------------------------------------- */

static int route_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(attr, RTA_MAX) < 0)
		return MNL_CB_OK;
	tb[mnl_attr_get_type(attr)] = attr;
	return MNL_CB_OK;
}

static void sockaddr_from_attr(struct sockaddr_storage *ss, int family, const struct nlattr *attr)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET && mnl_attr_get_payload_len(attr) == 4)
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, mnl_attr_get_payload(attr), 4);
	else if (family == AF_INET6 && mnl_attr_get_payload_len(attr) == 16)
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, mnl_attr_get_payload(attr), 16);
}

static int route_msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[RTA_MAX + 1] = {0};
	struct xr_nl_route *route = data;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*rtm), route_attr_cb, tb);
	route->local = rtm->rtm_type == RTN_LOCAL;
	route->ifindex = tb[RTA_OIF] ? (int)mnl_attr_get_u32(tb[RTA_OIF]) : 0;
	route->has_gateway = tb[RTA_GATEWAY] != NULL;
	if (route->has_gateway)
		sockaddr_from_attr(&route->gateway, rtm->rtm_family, tb[RTA_GATEWAY]);
	route->has_prefsrc = tb[RTA_PREFSRC] != NULL;
	if (route->has_prefsrc)
		sockaddr_from_attr(&route->prefsrc, rtm->rtm_family, tb[RTA_PREFSRC]);
	route->found = rtm->rtm_type == RTN_UNICAST || rtm->rtm_type == RTN_LOCAL ||
		       rtm->rtm_type == RTN_MULTICAST;
	return MNL_CB_OK;
}

int xr_nl_get_route(const struct sockaddr *dst, const struct sockaddr *src,
		    struct xr_nl_route *route)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	const void *daddr, *saddr = NULL;
	uint32_t oif = 0;
	struct rtmsg *rtm;
	int alen, ret;

	if (dst->sa_family == AF_INET) {
		daddr = &((const struct sockaddr_in *)dst)->sin_addr;
		alen = 4;
		if (src && ((const struct sockaddr_in *)src)->sin_addr.s_addr)
			saddr = &((const struct sockaddr_in *)src)->sin_addr;
	} else if (dst->sa_family == AF_INET6) {
		daddr = &((const struct sockaddr_in6 *)dst)->sin6_addr;
		alen = 16;
		oif = ((const struct sockaddr_in6 *)dst)->sin6_scope_id;
		if (src && !IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)src)->sin6_addr))
			saddr = &((const struct sockaddr_in6 *)src)->sin6_addr;
	} else {
		return -EAFNOSUPPORT;
	}
	memset(route, 0, sizeof(*route));
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)dst->sa_family;
	rtm->rtm_dst_len = (unsigned char)(alen * 8);
	mnl_attr_put(nlh, RTA_DST, (size_t)alen, daddr);
	if (saddr) {
		rtm->rtm_src_len = (unsigned char)(alen * 8);
		mnl_attr_put(nlh, RTA_SRC, (size_t)alen, saddr);
	}
	if (oif)
		mnl_attr_put_u32(nlh, RTA_OIF, oif);
	ret = nl_request(nlh, route_msg_cb, route);
	if (ret)
		return ret;
	return route->found ? 0 : -ENETUNREACH;
}
