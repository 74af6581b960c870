/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo: getaddrinfo(3)'s first answer as an rdma_addrinfo,
 * as librdmacm gives it without ib_acm: a passive lookup fills the source,
 * an active one the destination; the QP type and port space come from the
 * hints, or else from the socket type and protocol. Failures are
 * getaddrinfo's EAI_ codes, for gai_strerror, or -1 with errno set.
 */
#include <infiniband/ib.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

static const struct rdma_addrinfo no_hints;

static void hints_to_ai(const struct rdma_addrinfo *in, struct addrinfo *out)
{
	memset(out, 0, sizeof(*out));
	if (in->ai_flags & RAI_PASSIVE)
		out->ai_flags |= AI_PASSIVE;
	if (in->ai_flags & RAI_NUMERICHOST)
		out->ai_flags |= AI_NUMERICHOST;
	if (in->ai_family != AF_IB)
		out->ai_family = in->ai_family;
	if (in->ai_qp_type == IBV_QPT_RC || in->ai_qp_type == IBV_QPT_UC)
		out->ai_socktype = SOCK_STREAM;
	else if (in->ai_qp_type == IBV_QPT_UD)
		out->ai_socktype = SOCK_DGRAM;
	if (in->ai_port_space == RDMA_PS_TCP)
		out->ai_protocol = IPPROTO_TCP;
	else if (in->ai_port_space == RDMA_PS_UDP)
		out->ai_protocol = IPPROTO_UDP;
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
		     socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return rc_fail(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static int from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		   const struct addrinfo *ai)
{
	char **canon;

	rai->ai_qp_type = hints->ai_qp_type;
	if (!rai->ai_qp_type)
		rai->ai_qp_type = ai->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC;
	rai->ai_port_space = hints->ai_port_space;
	if (!rai->ai_port_space)
		rai->ai_port_space = ai->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP : RDMA_PS_TCP;
	rai->ai_family = ai->ai_family;
	rai->ai_flags = hints->ai_flags & RAI_PASSIVE;
	canon = rai->ai_flags ? &rai->ai_src_canonname : &rai->ai_dst_canonname;
	if (ai->ai_canonname && !(*canon = strdup(ai->ai_canonname)))
		return rc_fail(ENOMEM);
	if (rai->ai_flags)
		return copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr, ai->ai_addrlen);
	return copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return rc_fail(EINVAL);
	/* InfiniBand's own addresses: RoCE has IP ones. */
	if (hints && hints->ai_family == AF_IB)
		return rc_fail(EAFNOSUPPORT);
	if (!hints)
		hints = &no_hints;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return rc_fail(ENOMEM);
	if (node || service) {
		struct addrinfo ai_hints, *ai;

		hints_to_ai(hints, &ai_hints);
		ret = getaddrinfo(node, service, &ai_hints, &ai);
		if (ret)
			goto fail;
		ret = from_ai(rai, hints, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					hints->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && hints->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
	if (ret)
		goto fail;
	*res = rai;
	return 0;
fail:
	rdma_freeaddrinfo(rai);
	return ret;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
