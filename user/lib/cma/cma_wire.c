// SPDX-License-Identifier: MIT
/*
 * What Linux's cma.c puts on the wire for an IP-addressed id: the service
 * ID its port space and port make, the CMA header at the start of a REQ's
 * (and SIDR_REQ's) private data, and the flow label of a RoCE route.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "cma.h"

/* cma.c's struct cma_hdr: version, IP version in the high nibble, source port, addresses. */
#define CMA_VERSION 0x00
#define CMA_HDR_IP_VERSION_OFF 1
#define CMA_HDR_PORT_OFF 2
#define CMA_HDR_SRC_OFF 4
#define CMA_HDR_DST_OFF 20
/* An IPv4 address sits in the last 4 bytes of its 16-byte slot. */
#define CMA_HDR_IPV4_IN_SLOT 12
#define CMA_FLOW_LABEL_MASK 0xfffffu

uint64_t cma_service_id(enum xr_rdma_port_space ps, uint16_t port)
{
	return ((uint64_t)ps << 16) + port;
}

uint16_t cma_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void cma_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

bool cma_any_addr(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

socklen_t cma_addr_size(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

void cma_addr_to_gid(const struct sockaddr *sa, union xr_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* Address and family, not port. */
bool cma_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
					  &((const struct sockaddr_in6 *)b)->sin6_addr);
	return false;
}

static void put_addr(uint8_t slot[16], const struct sockaddr *sa)
{
	memset(slot, 0, 16);
	if (sa->sa_family == AF_INET)
		memcpy(slot + CMA_HDR_IPV4_IN_SLOT, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else
		memcpy(slot, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

void cma_hdr_build(uint8_t hdr[CMA_HDR_SIZE], const struct sockaddr *src,
		   const struct sockaddr *dst)
{
	uint16_t port = htons(cma_port(src));

	memset(hdr, 0, CMA_HDR_SIZE);
	hdr[0] = CMA_VERSION;
	hdr[CMA_HDR_IP_VERSION_OFF] = src->sa_family == AF_INET ? 4 << 4 : 6 << 4;
	memcpy(hdr + CMA_HDR_PORT_OFF, &port, sizeof(port));
	put_addr(hdr + CMA_HDR_SRC_OFF, src);
	put_addr(hdr + CMA_HDR_DST_OFF, dst);
}

static void get_addr(struct sockaddr_storage *ss, int family, const uint8_t slot[16], uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, slot + CMA_HDR_IPV4_IN_SLOT, 4);
		sin->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, slot, 16);
		sin6->sin6_port = htons(port);
	}
}

int cma_hdr_parse(const uint8_t *hdr, struct sockaddr_storage *src, struct sockaddr_storage *dst)
{
	uint8_t ip_version = hdr[CMA_HDR_IP_VERSION_OFF] >> 4;
	uint16_t port;
	int family;

	if (hdr[0] != CMA_VERSION)
		return -EINVAL;
	if (ip_version == 4)
		family = AF_INET;
	else if (ip_version == 6)
		family = AF_INET6;
	else
		return -EINVAL;
	memcpy(&port, hdr + CMA_HDR_PORT_OFF, sizeof(port));
	get_addr(src, family, hdr + CMA_HDR_SRC_OFF, ntohs(port));
	get_addr(dst, family, hdr + CMA_HDR_DST_OFF, 0);
	return 0;
}

uint32_t cma_flow_label(const struct sockaddr *src, const struct sockaddr *dst)
{
	if (src->sa_family == AF_INET6) {
		uint32_t fl =
		    ntohl(((const struct sockaddr_in6 *)src)->sin6_flowinfo) & CMA_FLOW_LABEL_MASK;

		if (fl)
			return fl;
	}
	return ((uint32_t)cma_port(src) * 31 + cma_port(dst)) & CMA_FLOW_LABEL_MASK;
}
