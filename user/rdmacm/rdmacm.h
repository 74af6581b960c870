/* SPDX-License-Identifier: MIT */
/*
 * librdmacm.so.1 over xroce's RDMA CM (include/xroce/rdma_cm.h), reached
 * through xroce's libibverbs.so.1 (its XROCE_RDMACM_PRIVATE node), which
 * holds the process's one libxroce. Every object an application gets is
 * the structure of <rdma/rdma_cma.h> at the start of an rc_ wrapper around
 * the xr_rdma_ object; the verbs objects in them (ibv_context, ibv_pd,
 * ibv_qp, CQs) are xroce's libibverbs' own, so the application's verbs
 * calls on them work as usual.
 *
 * Conventions kept from librdmacm: functions return 0, or -1 with errno
 * set; an id created without a channel is synchronous: the calls that
 * start an exchange wait for its event themselves.
 */
#ifndef XROCE_RDMACM_H
#define XROCE_RDMACM_H

#include <errno.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdbool.h>
#include <stddef.h>

#include "../ibverbs/rdmacm_bridge.h"
#include "xroce/rdma_cm.h"

#define rc_container(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct rc_channel {
	struct rdma_event_channel ch;
	struct xr_rdma_event_channel *xr;
};

struct rc_id {
	struct rdma_cm_id id;
	struct xr_rdma_cm_id *xr; /* xr->context points back here */
	bool sync;		  /* created without a channel: owns id.channel */
	/* A passive endpoint's (rdma_create_ep): each request's QP is made from it. */
	struct ibv_qp_init_attr *qp_init_attr;
	struct ibv_sa_path_rec path;
};

struct rc_event {
	struct rdma_cm_event ev;
	struct xr_rdma_cm_event *xr;
};

static inline struct rc_id *rc_id(struct rdma_cm_id *id)
{
	return rc_container(id, struct rc_id, id);
}

static inline struct rc_channel *rc_channel(struct rdma_event_channel *ch)
{
	return rc_container(ch, struct rc_channel, ch);
}

/* The fields rdma_conn_param and xr_rdma_conn_param share, of one meaning and width. */
#define RC_CONN_PARAM_FIELDS(copy)                                                                 \
	copy(private_data) copy(private_data_len) copy(responder_resources) copy(initiator_depth)  \
	    copy(flow_control) copy(retry_count) copy(rnr_retry_count) copy(srq) copy(qp_num)
#define RC_COPY_FIELD(field) out->field = in->field;

/* -1 with errno set to err, librdmacm's way of failing. */
static inline int rc_fail(int err)
{
	errno = err;
	return -1;
}

/* A libxroce result (0 or -errno, errno set) as librdmacm's. */
static inline int rc_ret(int xr_ret)
{
	return xr_ret ? rc_fail(-xr_ret) : 0;
}

/* devices.c */
/* Opens every xroce device once per process, as librdmacm's ucma_init. */
int rc_init(void);
/* The context (and the CM's PD on it) of the device an id is on; NULL: ENODEV. */
struct ibv_context *rc_context_of(struct xr_device *dev, struct ibv_pd **pd);

/* id.c */
/* Copies what libxroce learned of the id (device, addresses, route) into id. */
void rc_id_sync(struct rc_id *id);
/* A new connection's wrapper, for the xr id a CONNECT_REQUEST carries. */
struct rc_id *rc_id_new_child(struct rc_id *listener, struct xr_rdma_cm_id *xr);
/* A synchronous id's wait for the event its call started, as librdmacm's ucma_complete. */
int rc_complete(struct rc_id *id);

#endif /* XROCE_RDMACM_H */
