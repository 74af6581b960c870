/* SPDX-License-Identifier: MIT */
/* Completion channels and completion queues: creating, polling, events. */
#include <stdlib.h>

#include "shim.h"

#define xv_channel(ch) xv_container(ch, struct xv_comp_channel, ibv)

/* Completions converted per libxroce poll: a bounded stack buffer. */
#define XV_POLL_BATCH 32

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct xv_comp_channel *ch;
	int err;

	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return xv_null(ENOMEM);
	ch->xr = xr_create_comp_channel(xv_ctx(context)->xr);
	if (!ch->xr) {
		err = errno;
		free(ch);
		return xv_null(err);
	}
	ch->ibv.context = context;
	ch->ibv.fd = ch->xr->fd;
	return &ch->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	int err;

	err = xr_destroy_comp_channel(xv_channel(channel)->xr);
	if (err)
		return xv_errno(err);
	free(xv_channel(channel));
	return 0;
}

/* One completion vector: comp_vector is checked and otherwise has no effect. */
struct xv_cq *xv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			   struct ibv_comp_channel *channel, int comp_vector)
{
	struct xv_cq *cq;
	int err;

	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return xv_null(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return xv_null(ENOMEM);
	cq->xr = xr_create_cq(xv_ctx(context)->xr, cqe, channel ? xv_channel(channel)->xr : NULL);
	if (!cq->xr) {
		err = errno;
		free(cq);
		return xv_null(err);
	}
	cq->xr->cq_context = cq;
	cq->ibv.context = context;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	cq->ibv.cqe = cq->xr->cqe;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	if (channel)
		channel->refcnt++;
	return cq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct xv_cq *cq = xv_create_cq(context, cqe, cq_context, channel, comp_vector);

	return cq ? &cq->ibv : NULL;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	int err;

	err = xr_resize_cq(xv_cq(cq)->xr, cqe);
	if (err)
		return xv_errno(err);
	cq->cqe = xv_cq(cq)->xr->cqe;
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct ibv_comp_channel *channel = cq->channel;
	int err;

	err = xr_destroy_cq(xv_cq(cq)->xr);
	if (err)
		return xv_errno(err);
	if (channel)
		channel->refcnt--;
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&cq->mutex);
	xv_free_read_ahead(xv_cq(cq)->read_ahead);
	free(xv_cq(cq));
	return 0;
}

int xv_poll_xr_cq(struct xr_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct xr_wc batch[XV_POLL_BATCH];
	int done = 0, want, n;

	/* An empty poll still runs the engine: num_entries 0 included. */
	do {
		want = num_entries - done < XV_POLL_BATCH ? num_entries - done : XV_POLL_BATCH;
		n = xr_poll_cq(cq, want, batch);
		if (n < 0)
			return done ? done : n;
		for (int i = 0; i < n; i++)
			xv_wc_from_xr(&batch[i], &wc[done + i]);
		done += n;
	} while (n == want && done < num_entries);
	return done;
}

int xv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	if (num_entries < 0)
		return -EINVAL;
	if (xv_cq(cq)->read_ahead)
		return xv_poll_read_ahead(xv_cq(cq), num_entries, wc);
	return xv_poll_xr_cq(xv_cq(cq)->xr, num_entries, wc);
}

int xv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return xv_errno(xr_req_notify_cq(xv_cq(cq)->xr, solicited_only));
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct xr_cq *xcq;
	struct xv_cq *c;
	void *back;
	int err;

	err = xr_get_cq_event(xv_channel(channel)->xr, &xcq, &back);
	if (err) {
		errno = xv_errno(err);
		return -1;
	}
	c = back;
	*cq = &c->ibv;
	*cq_context = c->ibv.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	xr_ack_cq_events(xv_cq(cq)->xr, nevents);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
