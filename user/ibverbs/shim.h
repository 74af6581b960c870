/* SPDX-License-Identifier: MIT */
/*
 * libibverbs.so.1 over libxroce. Every object an application gets is the
 * ibv_ structure of <infiniband/verbs.h> at the start of an xv_ wrapper that
 * holds the libxroce object behind it; the application reads and writes the
 * ibv_ part as with rdma-core, the inline functions of verbs.h reach the
 * functions here through ibv_context.ops and struct verbs_context.
 *
 * Conventions kept from libibverbs: functions returning int return 0 or a
 * positive errno value (libxroce's are negative); functions returning a
 * pointer return NULL with errno set. A verb libxroce does not implement
 * fails with EOPNOTSUPP.
 */
#ifndef XROCE_IBVERBS_SHIM_H
#define XROCE_IBVERBS_SHIM_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <stddef.h>

#include "xroce/xroce.h"

#define xv_container(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/*
 * What ibv_get_device_list hands out; lives while a list or a context holds
 * it. rdma-core's providers (Debian's libmlx5.so.1 and libefa.so.1, which
 * perftest links) tell their own devices by the ops pointer that follows
 * struct ibv_device in libibverbs' private struct verbs_device: it stays
 * NULL here, so their entry points answer "not this device" for ours.
 */
struct xv_device {
	struct ibv_device ibv;
	const void *provider_ops;
	char ifname[IF_NAMESIZE];
	int refs;
};

_Static_assert(offsetof(struct xv_device, provider_ops) == sizeof(struct ibv_device),
	       "providers read their ops right after struct ibv_device");

struct xv_context {
	struct verbs_context vctx; /* vctx.context is the application's ibv_context */
	struct xr_device *xr;
	struct xv_device *dev;
};

struct xv_pd {
	struct ibv_pd ibv;
	struct xr_pd *xr;
};

struct xv_mr {
	struct ibv_mr ibv;
	struct xr_mr *xr;
};

struct xv_comp_channel {
	struct ibv_comp_channel ibv;
	struct xr_comp_channel *xr;
};

/*
 * xr->cq_context points back here: xr_get_cq_event's answer finds its ibv_cq.
 * ibv_create_cq_ex's CQs are an ibv_cq_ex, which begins as an ibv_cq does.
 */
struct xv_cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ex;
	};
	struct xr_cq *xr;
	struct xv_cq_read_ahead *read_ahead; /* ibv_create_cq_ex's CQs only */
};

_Static_assert(offsetof(struct ibv_cq_ex, async_events_completed) ==
		   offsetof(struct ibv_cq, async_events_completed),
	       "ibv_cq_ex_to_cq casts an ibv_cq_ex to the ibv_cq it begins with");

/*
 * xr->qp_context points back here, for asynchronous events. ibv_create_qp_ex's
 * QPs are an ibv_qp_ex, which begins with its ibv_qp, and have the ibv_wr_*
 * interface.
 */
struct xv_qp {
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ex;
	};
	struct xr_qp *xr;
	struct xv_wr_batch *wr_batch; /* ibv_create_qp_ex's QPs only */
};

struct xv_ah {
	struct ibv_ah ibv;
	struct xr_ah *xr;
};

/* xr->srq_context points back here, for asynchronous events. */
struct xv_srq {
	struct ibv_srq ibv;
	struct xr_srq *xr;
};

struct xv_mw {
	struct ibv_mw ibv;
	struct xr_mw *xr;
};

static inline struct xv_context *xv_ctx(struct ibv_context *context)
{
	return xv_container(context, struct xv_context, vctx.context);
}

static inline struct xv_pd *xv_pd(struct ibv_pd *pd)
{
	return xv_container(pd, struct xv_pd, ibv);
}

static inline struct xv_cq *xv_cq(struct ibv_cq *cq)
{
	return xv_container(cq, struct xv_cq, ibv);
}

static inline struct xv_qp *xv_qp(struct ibv_qp *qp)
{
	return xv_container(qp, struct xv_qp, ibv);
}

static inline struct xv_ah *xv_ah(struct ibv_ah *ah)
{
	return xv_container(ah, struct xv_ah, ibv);
}

static inline struct xv_mr *xv_mr(struct ibv_mr *mr)
{
	return xv_container(mr, struct xv_mr, ibv);
}

static inline struct xv_srq *xv_srq(struct ibv_srq *srq)
{
	return xv_container(srq, struct xv_srq, ibv);
}

static inline struct xv_mw *xv_mw(struct ibv_mw *mw)
{
	return xv_container(mw, struct xv_mw, ibv);
}

/* libxroce's -errno as libibverbs' positive errno value. */
static inline int xv_errno(int ret)
{
	return ret < 0 ? -ret : ret;
}

static inline void *xv_null(int err)
{
	errno = err;
	return NULL;
}

/*
 * Definitions of entry points that exist only to fail, by the convention
 * of the verb they stand for; NAME may carry attributes (a symbol version).
 * The arguments are never read, so they are left undeclared.
 */
#define XV_FAILS_ERRNO(name) /* 0 or an errno value */                                             \
	int name(void);                                                                            \
	int name(void)                                                                             \
	{                                                                                          \
		return EOPNOTSUPP;                                                                 \
	}
#define XV_FAILS_NULL(name) /* an object, or NULL with errno set */                                \
	void *name(void);                                                                          \
	void *name(void)                                                                           \
	{                                                                                          \
		return xv_null(EOPNOTSUPP);                                                        \
	}
#define XV_FAILS_MINUS1(name) /* -1 with errno set */                                              \
	int name(void);                                                                            \
	int name(void)                                                                             \
	{                                                                                          \
		errno = EOPNOTSUPP;                                                                \
		return -1;                                                                         \
	}

/* device.c */
void xv_device_put(struct xv_device *dev);

/* ops.c: fills the context's ops table and its verbs_context extensions. */
void xv_set_ops(struct xv_context *ctx);

/* query.c */
int xv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		  size_t attr_len);
int xv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);

/* cq.c */
struct xv_cq *xv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			   struct ibv_comp_channel *channel, int comp_vector);
int xv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
/* What xv_poll_cq does for a CQ without read-ahead completions. */
int xv_poll_xr_cq(struct xr_cq *cq, int num_entries, struct ibv_wc *wc);
int xv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* cq_ex.c */
struct ibv_cq_ex *xv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
int xv_poll_read_ahead(struct xv_cq *cq, int num_entries, struct ibv_wc *wc);
void xv_free_read_ahead(struct xv_cq_read_ahead *read_ahead);

/* qp.c */
struct xv_qp *xv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init_attr);

/* qp_ex.c */
struct ibv_qp *xv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
void xv_free_wr_batch(struct xv_wr_batch *batch);

/* libibverbs' ibv_send_flags that libxroce has, with their values. */
#define XV_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* post.c */
int xv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int xv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int xv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* mw.c */
struct ibv_mw *xv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int xv_dealloc_mw(struct ibv_mw *mw);
int xv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int xv_bind_mw_wr_to_xr(struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bind_info,
			struct xr_send_wr *out);

/* convert.c: between ibv_ and xr_ attributes, where the layouts differ. */
void xv_ah_attr_to_xr(const struct ibv_ah_attr *in, struct xr_ah_attr *out);
void xv_ah_attr_from_xr(const struct xr_ah_attr *in, struct ibv_ah_attr *out);
void xv_wc_from_xr(const struct xr_wc *in, struct ibv_wc *out);
void xv_wc_to_xr(const struct ibv_wc *in, struct xr_wc *out);

#endif /* XROCE_IBVERBS_SHIM_H */
