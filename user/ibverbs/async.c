/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events on the context's async_fd, which is libxroce's event
 * fd: readable while events are queued, blocking or not as the application
 * set it. Each libxroce object's context pointer leads back to its ibv_
 * wrapper, and the ibv_ pointer an event carries leads to the libxroce
 * object when it is acknowledged. As libibverbs, acknowledging counts the
 * event in the object's events_completed.
 */
#include "shim.h"

enum xv_event_element { XV_ELEMENT_NONE, XV_ELEMENT_CQ, XV_ELEMENT_QP, XV_ELEMENT_SRQ };

static enum xv_event_element element_of(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return XV_ELEMENT_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return XV_ELEMENT_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return XV_ELEMENT_SRQ;
	default:
		/* The port's number, or nothing (the device). */
		return XV_ELEMENT_NONE;
	}
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct xr_async_event xe;
	int err;

	err = xr_get_async_event(xv_ctx(context)->xr, &xe);
	if (err) {
		errno = xv_errno(err);
		return -1;
	}
	event->event_type = (enum ibv_event_type)xe.event_type;
	switch (element_of(event->event_type)) {
	case XV_ELEMENT_CQ:
		event->element.cq = &((struct xv_cq *)xe.element.cq->cq_context)->ibv;
		break;
	case XV_ELEMENT_QP:
		event->element.qp = &((struct xv_qp *)xe.element.qp->qp_context)->ibv;
		break;
	case XV_ELEMENT_SRQ:
		event->element.srq = &((struct xv_srq *)xe.element.srq->srq_context)->ibv;
		break;
	case XV_ELEMENT_NONE:
		event->element.port_num = xe.element.port_num;
		break;
	}
	return 0;
}

static void count_completed(pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *completed)
{
	pthread_mutex_lock(mutex);
	++*completed;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct xr_async_event xe = {.event_type = (enum xr_event_type)event->event_type};

	switch (element_of(event->event_type)) {
	case XV_ELEMENT_CQ: {
		struct ibv_cq *cq = event->element.cq;

		xe.element.cq = xv_cq(cq)->xr;
		count_completed(&cq->mutex, &cq->cond, &cq->async_events_completed);
		break;
	}
	case XV_ELEMENT_QP: {
		struct ibv_qp *qp = event->element.qp;

		xe.element.qp = xv_qp(qp)->xr;
		count_completed(&qp->mutex, &qp->cond, &qp->events_completed);
		break;
	}
	case XV_ELEMENT_SRQ: {
		struct ibv_srq *srq = event->element.srq;

		xe.element.srq = xv_srq(srq)->xr;
		count_completed(&srq->mutex, &srq->cond, &srq->events_completed);
		break;
	}
	case XV_ELEMENT_NONE:
		xe.element.port_num = event->element.port_num;
		break;
	}
	xr_ack_async_event(&xe);
}
