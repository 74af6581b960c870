/* SPDX-License-Identifier: MIT */
/*
 * Event channels and events: libxroce's, each under a wrapper of
 * <rdma/rdma_cma.h>'s layout. The channel's fd is libxroce's, readable
 * while an event waits; made non-blocking, rdma_get_cm_event fails with
 * EAGAIN when none does, as librdmacm's.
 */
#include <stdlib.h>

#include "rdmacm.h"

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rc_channel *ch;
	int err;

	if (rc_init())
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->xr = xr_rdma_create_event_channel();
	if (!ch->xr) {
		err = errno;
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ch.fd = ch->xr->fd;
	return &ch->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rc_channel *ch = rc_channel(channel);

	/* librdmacm's returns nothing: a channel ids still use stays (EBUSY). */
	if (!xr_rdma_destroy_event_channel(ch->xr))
		free(ch);
}

static void copy_conn_param(struct rdma_conn_param *out, const struct xr_rdma_conn_param *in)
{
	RC_CONN_PARAM_FIELDS(RC_COPY_FIELD)
}

static void copy_ud_param(struct rdma_ud_param *out, const struct xr_rdma_ud_param *in)
{
	out->private_data = in->private_data;
	out->private_data_len = in->private_data_len;
	xroce_ibv_ah_attr_from_xr(&in->ah_attr, &out->ah_attr);
	out->qp_num = in->qp_num;
	out->qkey = in->qkey;
}

/*
 * A CONNECT_REQUEST's new connection gets its wrapper here, when the
 * application first sees it; one that cannot is refused, as librdmacm
 * refuses a request it cannot take.
 */
static struct rc_id *event_id(struct xr_rdma_cm_event *xe)
{
	struct rc_id *listener, *child;

	if (xe->event != XR_RDMA_CM_EVENT_CONNECT_REQUEST)
		return xe->id->context;
	listener = xe->listen_id->context;
	child = rc_id_new_child(listener, xe->id);
	if (!child) {
		xr_rdma_reject(xe->id, NULL, 0);
		xr_rdma_ack_cm_event(xe);
		xr_rdma_destroy_id(xe->id);
	}
	return child;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct xr_rdma_cm_event *xe;
	struct rc_event *e;
	struct rc_id *id;
	int err;

	if (!channel || !event)
		return rc_fail(EINVAL);
	e = calloc(1, sizeof(*e));
	if (!e)
		return rc_fail(ENOMEM);
	do {
		err = xr_rdma_get_cm_event(rc_channel(channel)->xr, &xe);
		if (err) {
			free(e);
			return rc_ret(err);
		}
		id = event_id(xe);
	} while (!id);
	rc_id_sync(id);
	e->xr = xe;
	e->ev.id = &id->id;
	if (xe->listen_id)
		e->ev.listen_id = &((struct rc_id *)xe->listen_id->context)->id;
	e->ev.event = (enum rdma_cm_event_type)xe->event;
	e->ev.status = xe->status;
	if (xe->id->qp_type == XR_QPT_UD)
		copy_ud_param(&e->ev.param.ud, &xe->param.ud);
	else
		copy_conn_param(&e->ev.param.conn, &xe->param.conn);
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct rc_event *e;
	int err;

	if (!event)
		return rc_fail(EINVAL);
	e = rc_container(event, struct rc_event, ev);
	err = xr_rdma_ack_cm_event(e->xr);
	if (!err)
		free(e);
	return rc_ret(err);
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	return xr_rdma_event_str((enum xr_rdma_cm_event_type)event);
}
