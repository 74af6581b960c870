/* SPDX-License-Identifier: MIT */
/*
 * The RDMA CM's insides (include/xroce/rdma_cm.h is its API). It sits on
 * the IB CM of each device's core (core/cm.h) as Linux's cma.c sits on
 * ib_cm: an rdma_cm id is an IP address and port; connecting it sends a
 * REQ whose private data starts with the CMA header, to the service ID of
 * its port space and port.
 *
 * Locks, in the order taken: a device's lock (dev->lock), then cma_lock.
 * The IB CM calls this layer's handler with dev->lock held, so cma_lock
 * is a leaf: nothing takes a device's lock while holding it.
 *   - dev->lock guards what the IB CM's handler reads and writes: an id's
 *     state, its IB CM id, its QP's transitions;
 *   - cma_lock guards the channels' event queues, the ids' event counts,
 *     the ports bound and the devices the CM uses.
 */
#ifndef XROCE_CMA_H
#define XROCE_CMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/cm.h"
#include "../device.h"
#include "xroce/rdma_cm.h"

/* librdmacm's id states, as the kernel's cma.c names them. */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT,
	CMA_DISCONNECT,
	CMA_ADDR_BOUND,
	CMA_LISTEN,
	CMA_DESTROYING,
};

/* cma.c's values for RoCE: CM response timeout 2^20 * 4.096 us, 15 retries. */
#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_MAX_CM_RETRIES 15
/* cma.c's RoCE packet lifetime; the QP's ACK timeout is one more. */
#define CMA_PACKET_LIFETIME 18
/* What an rxe device says of its ACK delay (the REP's target ACK delay). */
#define CMA_TARGET_ACK_DELAY 15
/* The kernel's limit on a listener's backlog (ucma's max_backlog). */
#define CMA_MAX_BACKLOG 1024
/* librdmacm's "as many as the device allows" for both depths. */
#define CMA_MAX_DEPTH 0xff

/* A device the CM has put ids on; kept open until the process exits. */
struct cma_device {
	struct xr_device *dev;
	struct xr_pd *pd; /* xr_rdma_create_qp's when the caller gives none */
	struct cma_device *next;
};

struct cma_id;
struct cma_mcast;

/* A listener's IB CM id on one device. */
struct cma_listen {
	struct cma_id *id;
	struct cma_device *cdev;
	struct xr_cm_id *cm; /* under cdev->dev->lock */
	struct cma_listen *next;
};

struct cma_id {
	struct xr_rdma_cm_id pub;
	enum cma_state state; /* under the device's lock once pub.verbs is set */
	struct cma_device *cdev;
	struct xr_cm_id *cm; /* the connection's IB CM id, under the device lock */
	/* Under cma_lock. */
	uint32_t events_reported, events_acked;
	int refs; /* the API's one, plus an address resolution in flight */
	bool destroying;
	struct cma_listen *listens; /* a listener's, one per device */
	int backlog;		    /* a listener's CONNECT_REQUESTs not yet taken */
	struct cma_id *listener;    /* a new connection's, until its event is taken */
	bool bound;		    /* holds its port in the port table */
	struct cma_mcast *mcasts;   /* the groups a UD id joined */
	/* Options. */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout; /* 0: the path's */
	bool reuseaddr, afonly;
	/* The connection, under the device lock. */
	uint32_t starting_psn; /* in our REQ or REP: what we receive from (cma's seq_num) */
	uint32_t qkey;	       /* a UD id's */
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	struct xr_cm_req_param req; /* a passive id's REQ, private data not kept */
};

static inline struct cma_id *cma_id_of(struct xr_rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

extern pthread_mutex_t cma_lock;

/* Returns err after setting errno (-err), as xroce's API does. */
int cma_fail(int err);

/* ---- cma_wire.c: what cma.c puts on the wire ---- */
#define CMA_HDR_SIZE 36
uint64_t cma_service_id(enum xr_rdma_port_space ps, uint16_t port);
/* The REQ's and SIDR_REQ's CMA header: from src to dst (AF_INET or AF_INET6). */
void cma_hdr_build(uint8_t hdr[CMA_HDR_SIZE], const struct sockaddr *src,
		   const struct sockaddr *dst);
/* Reads a header into src (with its port) and dst (port 0); -EINVAL if it is not one. */
int cma_hdr_parse(const uint8_t *hdr, struct sockaddr_storage *src, struct sockaddr_storage *dst);
/* cma.c's flow label of a RoCE route: from the ports, or an IPv6 source's own. */
uint32_t cma_flow_label(const struct sockaddr *src, const struct sockaddr *dst);
uint16_t cma_port(const struct sockaddr *sa);
void cma_set_port(struct sockaddr *sa, uint16_t port);
bool cma_any_addr(const struct sockaddr *sa);
socklen_t cma_addr_size(const struct sockaddr *sa);
/* The GID of an address: IPv4-mapped or the IPv6 address. */
void cma_addr_to_gid(const struct sockaddr *sa, union xr_gid *gid);
bool cma_addr_equal(const struct sockaddr *a, const struct sockaddr *b);

/* ---- cma_event.c ---- */
/*
 * Queues an event for id on its channel (cma_lock taken inside; any lock
 * but it may be held). The private data is copied; without any, the
 * event's own pointer is kept (a multicast join's context). -ECANCELED: the id (or,
 * for a CONNECT_REQUEST, its listener) is being destroyed, and nothing is
 * queued; -ENOMEM.
 */
int cma_post_event(struct cma_id *id, const struct xr_rdma_cm_event *event,
		   const void *private_data, uint8_t private_data_len);
/*
 * Under cma_lock: takes id's events nobody got off its channel; new
 * connections a listener's CONNECT_REQUESTs carried are returned through
 * orphans (linked by their listener field) for the caller to destroy.
 */
void cma_drop_events_locked(struct cma_id *id, struct cma_id **orphans);
/* Under cma_lock: blocks until every event reported on id was acknowledged. */
void cma_wait_acked_locked(struct cma_id *id);
/* Under cma_lock: id's queued events follow it to another channel. */
void cma_move_events_locked(struct cma_id *id, struct xr_rdma_event_channel *to);
/* Under cma_lock: ids on the channel, which cannot be destroyed while it has any. */
void cma_channel_add_id_locked(struct xr_rdma_event_channel *channel, int delta);

/* ---- cma_id.c ---- */
/* The CM's record of the device on ifname (the process's, or opened); NULL, errno set. */
struct cma_device *cma_device_get(const char *ifname);
/* The device whose interface has the address: -EADDRNOTAVAIL, -ENODEV without xroce. */
int cma_device_of_addr(const struct sockaddr *addr, struct cma_device **cdev);
/* Every interface with xroce here (a listener on the wildcard): how many, or -errno. */
int cma_devices_all(struct cma_device **out, int max);
void cma_id_attach_device(struct cma_id *id, struct cma_device *cdev);
/* Binds id to addr (port 0: a free one); the caller checks the state. */
int cma_bind(struct cma_id *id, const struct sockaddr *addr);
/* The index of the device's GID for addr, -1 if it has none. */
int cma_gid_index(struct xr_device *dev, const struct sockaddr *addr);
void cma_id_put(struct cma_id *id);
/* A new connection's id on the listener's channel, for its CONNECT_REQUEST. */
struct cma_id *cma_id_new_child(struct cma_id *listener, struct cma_device *cdev);
/* Frees a child that holds no IB CM id and nobody has seen (any lock may be held). */
void cma_id_forget(struct cma_id *id);
/* Ends a child nobody has seen (its CONNECT_REQUEST never taken): the peer is rejected. */
void cma_id_destroy_unseen(struct cma_id *id);

/* ---- cma_conn.c ---- */
/* Takes the device locks: ends id's IB CM ids (REJ or DREQ as ib_cm does on destroy). */
void cma_conn_release(struct cma_id *id);
/* The QP's INIT (UD: up to RTS) when xr_rdma_create_qp made it. */
int cma_qp_init(struct cma_id *id);
/* An address handle from the id's source GID to the destination its route resolved. */
void cma_ah_of_route(const struct cma_id *id, struct xr_ah_attr *ah);

/* ---- cma_mcast.c ---- */
/* Detaches the id's QP from the groups it joined (the QP is being taken away). */
void cma_mcast_detach_all(struct cma_id *id);
/* Leaves every group the id joined (it is being destroyed). */
void cma_mcast_release(struct cma_id *id);

#endif /* XROCE_CMA_H */
