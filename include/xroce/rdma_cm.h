/* SPDX-License-Identifier: MIT */
/*
 * The RDMA connection manager, as librdmacm's rdma_cma.h has it, over
 * xroce's devices: ids named by IP addresses and ports, events on a
 * pollable channel, and connections set up with the InfiniBand CM over QP1,
 * wire-compatible with Linux's rdma_cm. Same objects, enum values and
 * semantics as librdmacm; functions return 0 or a negative errno (and set
 * errno), as the rest of xroce's API does.
 *
 * A device joins the CM when an address resolves to (or binds on) its
 * interface: the one the process has open (which must then stay open while
 * ids use it), or one the CM opens itself and keeps open. The CM answers
 * on QP1, which only the process that owns the device has: in a process
 * sharing the device as a guest, binding and resolving fail with
 * -EOPNOTSUPP.
 */
#ifndef XROCE_RDMA_CM_H
#define XROCE_RDMA_CM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xroce/xroce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* librdmacm's enum rdma_cm_event_type, value for value. */
enum xr_rdma_cm_event_type {
	XR_RDMA_CM_EVENT_ADDR_RESOLVED,
	XR_RDMA_CM_EVENT_ADDR_ERROR,
	XR_RDMA_CM_EVENT_ROUTE_RESOLVED,
	XR_RDMA_CM_EVENT_ROUTE_ERROR,
	XR_RDMA_CM_EVENT_CONNECT_REQUEST,
	XR_RDMA_CM_EVENT_CONNECT_RESPONSE,
	XR_RDMA_CM_EVENT_CONNECT_ERROR,
	XR_RDMA_CM_EVENT_UNREACHABLE,
	XR_RDMA_CM_EVENT_REJECTED,
	XR_RDMA_CM_EVENT_ESTABLISHED,
	XR_RDMA_CM_EVENT_DISCONNECTED,
	XR_RDMA_CM_EVENT_DEVICE_REMOVAL,
	XR_RDMA_CM_EVENT_MULTICAST_JOIN,
	XR_RDMA_CM_EVENT_MULTICAST_ERROR,
	XR_RDMA_CM_EVENT_ADDR_CHANGE,
	XR_RDMA_CM_EVENT_TIMEWAIT_EXIT,
};

/* The port spaces, numbered as the kernel's service IDs carry them. */
enum xr_rdma_port_space {
	XR_RDMA_PS_IPOIB = 0x0002,
	XR_RDMA_PS_TCP = 0x0106,
	XR_RDMA_PS_UDP = 0x0111,
	XR_RDMA_PS_IB = 0x013F,
};

/* The Q_Key of RDMA_PS_UDP ids, as librdmacm's RDMA_UDP_QKEY. */
#define XR_RDMA_UDP_QKEY 0x01234567u

/* xr_rdma_set_option: librdmacm's levels and names. */
enum {
	XR_RDMA_OPTION_ID = 0,
	XR_RDMA_OPTION_IB = 1,
};
enum {
	XR_RDMA_OPTION_ID_TOS = 0,	   /* uint8_t: the traffic class of the route */
	XR_RDMA_OPTION_ID_REUSEADDR = 1,   /* int */
	XR_RDMA_OPTION_ID_AFONLY = 2,	   /* int */
	XR_RDMA_OPTION_ID_ACK_TIMEOUT = 3, /* uint8_t: the QP's local ACK timeout */
};

struct xr_rdma_event_channel {
	int fd; /* readable while an event waits */
};

/* The path a route resolves to (librdmacm's ibv_sa_path_rec, for RoCE). */
struct xr_rdma_path {
	union xr_gid sgid, dgid;
	uint32_t flow_label;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint16_t pkey;
	uint8_t mtu; /* enum xr_mtu */
	uint8_t packet_life_time;
	uint8_t dmac[6]; /* the next hop's */
};

struct xr_rdma_route {
	struct sockaddr_storage src_addr, dst_addr;
	struct xr_rdma_path path;
	int num_paths; /* 1 once resolved */
};

struct xr_rdma_cm_id {
	struct xr_device *verbs; /* once bound to or resolved on a device */
	struct xr_rdma_event_channel *channel;
	void *context;
	struct xr_qp *qp; /* xr_rdma_create_qp's */
	struct xr_rdma_route route;
	enum xr_rdma_port_space ps;
	uint8_t port_num;
	enum xr_qp_type qp_type;
};

struct xr_rdma_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count; /* ignored by xr_rdma_accept */
	uint8_t rnr_retry_count;
	uint8_t srq;	 /* ignored when the id has a QP */
	uint32_t qp_num; /* ignored when the id has a QP */
};

struct xr_rdma_ud_param {
	const void *private_data;
	uint8_t private_data_len;
	struct xr_ah_attr ah_attr;
	uint32_t qp_num;
	uint32_t qkey;
};

struct xr_rdma_cm_event {
	struct xr_rdma_cm_id *id;
	struct xr_rdma_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
	enum xr_rdma_cm_event_type event;
	int status; /* REJECTED: the reject reason; errors: a negative errno */
	union {
		struct xr_rdma_conn_param conn;
		struct xr_rdma_ud_param ud;
	} param;
};

const char *xr_rdma_event_str(enum xr_rdma_cm_event_type event);

struct xr_rdma_event_channel *xr_rdma_create_event_channel(void);
/* Fails with -EBUSY while ids use the channel. */
int xr_rdma_destroy_event_channel(struct xr_rdma_event_channel *channel);
/* Blocks until an event comes unless channel->fd is non-blocking (-EAGAIN). */
int xr_rdma_get_cm_event(struct xr_rdma_event_channel *channel, struct xr_rdma_cm_event **event);
int xr_rdma_ack_cm_event(struct xr_rdma_cm_event *event);

int xr_rdma_create_id(struct xr_rdma_event_channel *channel, struct xr_rdma_cm_id **id,
		      void *context, enum xr_rdma_port_space ps);
/* Waits until every event reported on id is acknowledged, as librdmacm does. */
int xr_rdma_destroy_id(struct xr_rdma_cm_id *id);
int xr_rdma_migrate_id(struct xr_rdma_cm_id *id, struct xr_rdma_event_channel *channel);
int xr_rdma_set_option(struct xr_rdma_cm_id *id, int level, int optname, const void *optval,
		       size_t optlen);

/* An address of an interface with xroce, or the wildcard; port 0 picks a free one. */
int xr_rdma_bind_addr(struct xr_rdma_cm_id *id, const struct sockaddr *addr);
/* ADDR_RESOLVED, or ADDR_ERROR once timeout_ms pass without the neighbour answering. */
int xr_rdma_resolve_addr(struct xr_rdma_cm_id *id, const struct sockaddr *src,
			 const struct sockaddr *dst, int timeout_ms);
int xr_rdma_resolve_route(struct xr_rdma_cm_id *id, int timeout_ms);

/* A QP on the id's device, moved to INIT (UD: to RTS). pd NULL: the CM's own for the device. */
int xr_rdma_create_qp(struct xr_rdma_cm_id *id, struct xr_pd *pd,
		      struct xr_qp_init_attr *qp_init_attr);
void xr_rdma_destroy_qp(struct xr_rdma_cm_id *id);
/*
 * Gives the id a QP the caller created on the id's device (a verbs layer
 * over xroce keeps its own wrapper of it), moved to INIT (UD: RTS) as
 * xr_rdma_create_qp's is; NULL takes it back without destroying it.
 */
int xr_rdma_set_qp(struct xr_rdma_cm_id *id, struct xr_qp *qp);

int xr_rdma_listen(struct xr_rdma_cm_id *id, int backlog);
int xr_rdma_connect(struct xr_rdma_cm_id *id, const struct xr_rdma_conn_param *conn_param);
/* The active side without a QP of the CM's, after CONNECT_RESPONSE: sends the RTU. */
int xr_rdma_establish(struct xr_rdma_cm_id *id);
int xr_rdma_accept(struct xr_rdma_cm_id *id, const struct xr_rdma_conn_param *conn_param);
int xr_rdma_reject(struct xr_rdma_cm_id *id, const void *private_data, uint8_t private_data_len);
/* Moves the QP to ERR and sends a DREQ (or the DREP a DREQ received waits for). */
int xr_rdma_disconnect(struct xr_rdma_cm_id *id);

/* librdmacm's rdma_cm_join_mc_attr_ex: its comp_mask bits and join flags. */
enum {
	XR_RDMA_CM_JOIN_MC_ATTR_ADDRESS = 1 << 0,
	XR_RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS = 1 << 1,
	XR_RDMA_CM_JOIN_MC_ATTR_RESERVED = 1 << 2,
};
enum xr_rdma_mc_join_flags {
	XR_RDMA_MC_JOIN_FLAG_FULLMEMBER,
	XR_RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, /* sends to the group, receives nothing */
	XR_RDMA_MC_JOIN_FLAG_RESERVED,
};
struct xr_rdma_cm_join_mc_attr_ex {
	uint32_t comp_mask;
	uint32_t join_flags;
	const struct sockaddr *addr;
};

/*
 * Multicast over the CM, as the kernel's rdma_cm does it on RoCE: a UD id
 * bound to (or resolved on) a device joins the IP group addr (224.0.0.0/4
 * or ff00::/8) and gets MULTICAST_JOIN, whose UD parameters address the
 * group (its GID, QPN XR_MULTICAST_QPN, the id's Q_Key) and whose
 * private_data is context. A full member's QP, if the id has one then, is
 * attached to the group (xr_attach_mcast) and receives what is sent to it;
 * if attaching fails the event is MULTICAST_ERROR with the error. Joining a
 * group the id joined already is -EADDRINUSE; leaving one it did not join,
 * -EADDRNOTAVAIL. Leaving, taking the QP away (xr_rdma_set_qp NULL,
 * xr_rdma_destroy_qp) or destroying the id detaches the QP.
 */
int xr_rdma_join_multicast(struct xr_rdma_cm_id *id, const struct sockaddr *addr, void *context);
int xr_rdma_join_multicast_ex(struct xr_rdma_cm_id *id,
			      const struct xr_rdma_cm_join_mc_attr_ex *attr, void *context);
int xr_rdma_leave_multicast(struct xr_rdma_cm_id *id, const struct sockaddr *addr);

#ifdef __cplusplus
}
#endif

#endif /* XROCE_RDMA_CM_H */
