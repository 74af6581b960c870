/* SPDX-License-Identifier: MIT */
/*
 * xroce: RoCEv2 in software over XDP and AF_XDP, with verbs semantics.
 *
 * The objects, attributes, work requests and completions mirror libibverbs
 * (ibv_*), with the same enum values, so a verbs programmer reads this
 * without a manual. Conventions:
 *   - functions returning int return 0 on success or a negative errno
 *     (-EINVAL, -ENOMEM, ...), and leave the object unchanged on error;
 *   - functions returning a pointer return NULL and set errno on error;
 *   - a device runs its own engine thread: a passive side makes progress
 *     without calls from its application.
 */
#ifndef XROCE_XROCE_H
#define XROCE_XROCE_H

#include <stddef.h>
#include <stdint.h>

#include "xroce/qp_type.h"

#ifdef __cplusplus
extern "C" {
#endif

union xr_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

#define XR_MAX_GIDS 16

struct xr_device;
struct xr_pd;
struct xr_comp_channel;

/* ---- device ---------------------------------------------------------- */

struct xr_device_attr {
	char ifname[16];
	int ifindex;
	uint8_t mac[6];
	uint32_t netdev_mtu;
	int active_mtu; /* enum xr_mtu: largest IB MTU not above netdev MTU - 80 */
	int num_gids;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
	uint32_t max_mr_size;
	uint32_t max_inline_data;
	uint32_t max_qp_rd_atom;      /* READs/atomics a QP answers at once (max_dest_rd_atomic) */
	uint32_t max_qp_init_rd_atom; /* READs/atomics a QP has in flight (max_rd_atomic) */
	uint64_t device_cap_flags;
	uint32_t max_mcast_grp;		    /* groups the device can be attached to */
	uint32_t max_mcast_qp_attach;	    /* QPs per group */
	uint32_t max_total_mcast_qp_attach; /* attachments over all groups */
};

enum xr_device_cap_flags {
	/* Masked compare-and-swap and fetch-and-add (xroce's wire extension). */
	XR_DEVICE_MASKED_ATOMICS = 1 << 0,
	/*
	 * Selective repeat with xroce peers (xroce's wire extension, offered
	 * in band, docs/selective-repeat.md); XROCE_SELECTIVE_REPEAT=0 in the
	 * environment turns it off, leaving go-back-N alone.
	 */
	XR_DEVICE_SELECTIVE_REPEAT = 1 << 1,
	/*
	 * Congestion notification as RoCEv2 NICs do it: RC and UC frames go
	 * ECN-capable (ECT(0)), CNPs answer CE marks and slow the sender
	 * (DCQCN, docs/congestion-control.md); XROCE_ECN=0 in the environment
	 * sends Not-ECT instead, so that no switch marks xroce's frames.
	 */
	XR_DEVICE_ECN = 1 << 2,
};

struct xr_device_open_attr {
	/*
	 * Attach the XDP program if the loader has not (and detach it again
	 * on close). Default for NULL attributes: 1.
	 */
	int attach_if_needed;
	/* Answer masked atomics as a peer without the extension does (for tests). */
	int disable_masked_atomics;
};

/* How long xr_open_device waits for a previous owner of the interface to go. */
#define XR_OPEN_WAIT_MS 5000

/*
 * Opens the RoCE device on network interface ifname (needs CAP_NET_ADMIN/BPF).
 * The first process to open an interface's device owns it: its XDP maps and
 * AF_XDP sockets. A process that opens it while another owns it shares the
 * owner's device, as processes share an RDMA NIC: it has QPs, memory and
 * completions of its own, and its frames pass through the owner, which also
 * loops back the frames between its processes' QPs. When the owner closes
 * the device or exits, the others lose it as a NIC that failed: they get
 * XR_EVENT_DEVICE_FATAL and their QPs move to ERR, work flushed. Multicast
 * groups can be joined by the owner only (EOPNOTSUPP for the others).
 * When the previous owner is exiting, or has just exited and the kernel is
 * still releasing its AF_XDP sockets, this waits for that, XR_OPEN_WAIT_MS
 * at most. Fails with errno EBUSY when the owner (xr_device_holder names it)
 * takes no more processes (15 share it already, or it runs as another
 * user), or when a queue of the interface stays bound to an AF_XDP socket
 * that is not xroce's.
 * Besides the usual errnos, about the XDP attachment (xr_strerror explains):
 * ESTALE the pins under /sys/fs/bpf/xroce/IFNAME belong to an interface that
 * is gone or was re-created; EXDEV they belong to an interface of that name in
 * another network namespace; ENOMEDIUM /sys/fs/bpf here is a private mount
 * namespace's (`ip netns exec`), not the host's bpffs; EPROTO they were
 * pinned by an xroce build with another map layout; EBUSY another XDP
 * program runs on the interface, or the owner takes no more processes.
 */
struct xr_device *xr_open_device(const char *ifname, const struct xr_device_open_attr *attr);
/* strerror(err) (err positive or negative), with what to do for the errors above. */
const char *xr_strerror(int err);
int xr_close_device(struct xr_device *dev);
int xr_query_device(struct xr_device *dev, struct xr_device_attr *attr);
/* GID table in rxe's order: 0 = IPv6 link-local, then the other addresses, IPv4 mapped. */
int xr_query_gid(struct xr_device *dev, int index, union xr_gid *gid);
/*
 * The pid of the process that owns ifname's device (as that process's
 * getpid() gave it), 0 when no process has it open, or a negative errno.
 */
int xr_device_holder(const char *ifname);

/* ---- protection domains and memory regions ---------------------------- */

struct xr_pd *xr_alloc_pd(struct xr_device *dev);
int xr_dealloc_pd(struct xr_pd *pd);

enum xr_access_flags {
	XR_ACCESS_LOCAL_WRITE = 1,
	XR_ACCESS_REMOTE_WRITE = 1 << 1,
	XR_ACCESS_REMOTE_READ = 1 << 2,
	XR_ACCESS_REMOTE_ATOMIC = 1 << 3,
	XR_ACCESS_MW_BIND = 1 << 4,
};

/*
 * An lkey or rkey ends in an 8-bit key byte (bits 7:0) that its owner
 * changes (a memory window on every bind, a fast-registration MR through
 * xr_update_fast_reg_key): a key with a stale key byte fails. The bits above
 * are random, drawn for each key: an MR's lkey and rkey differ, and only the
 * rkey reaches the MR from a peer, only the lkey from a local SGE.
 */
struct xr_mr {
	struct xr_pd *pd;
	void *addr; /* a fast-registration MR: its iova, once mapped */
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	int access;
};

/*
 * As ibv_reg_mr: NULL with errno EFAULT when a page of the range is not
 * mapped with the rights access needs, ENOMEM beyond RLIMIT_MEMLOCK; the
 * pages stay locked in memory until the last MR over them goes.
 */
struct xr_mr *xr_reg_mr(struct xr_pd *pd, void *addr, size_t length, int access);
/* Fails with -EBUSY while memory windows are bound to mr. */
int xr_dereg_mr(struct xr_mr *mr);

/* The next key byte of rkey, as libibverbs' ibv_inc_rkey. */
static inline uint32_t xr_inc_rkey(uint32_t rkey)
{
	return (rkey & 0xffffff00u) | ((rkey + 1) & 0xffu);
}

/*
 * Fast registration, as the kernel's verbs have it (libibverbs has no such
 * call): xr_alloc_mr makes an MR with room for max_num_sg pages and no
 * memory, invalid until an XR_WR_REG_MR work request registers it.
 * xr_map_mr_sg describes the memory that request will register: sg_nents
 * ranges of this process's memory (the lkey of each is ignored), split into
 * pages of page_size (a power of two, 4096 at least); every range but the
 * first starts on a page boundary and every range but the last ends on one.
 * The MR's iova, mr->addr, becomes the first range's address unless iova is
 * given (non-NULL: the peer's addresses then start at *iova). Returns the
 * number of ranges mapped (all of them), or a negative errno. The map is
 * taken when the XR_WR_REG_MR executes, so it may be changed right after an
 * XR_WR_LOCAL_INV is posted, before that has run.
 */
struct xr_mr *xr_alloc_mr(struct xr_pd *pd, uint32_t max_num_sg);
struct xr_sge;
int xr_map_mr_sg(struct xr_mr *mr, const struct xr_sge *sg, int sg_nents, const uint64_t *iova,
		 unsigned int page_size);
/*
 * Sets the key byte of mr's lkey and rkey for the next XR_WR_REG_MR, whose
 * wr.reg.key is then mr->rkey (the kernel's ib_update_fast_reg_key).
 */
void xr_update_fast_reg_key(struct xr_mr *mr, uint8_t newkey);

/* ---- memory windows ---------------------------------------------------- */

enum xr_mw_type {
	XR_MW_TYPE_1 = 1, /* bound by xr_bind_mw, belongs to its PD */
	XR_MW_TYPE_2 = 2, /* bound by XR_WR_BIND_MW, then used through that QP only */
};

struct xr_mw {
	struct xr_device *device;
	struct xr_pd *pd;
	uint32_t rkey;
	uint32_t handle;
	enum xr_mw_type type;
};

/* What a window grants: [addr, addr + length) of mr, with remote access flags. */
struct xr_mw_bind_info {
	struct xr_mr *mr;
	uint64_t addr;
	uint64_t length; /* 0 unbinds */
	unsigned int mw_access_flags;
};

struct xr_mw_bind {
	uint64_t wr_id;
	unsigned int send_flags;
	struct xr_mw_bind_info bind_info;
};

struct xr_mw *xr_alloc_mw(struct xr_pd *pd, enum xr_mw_type type);
int xr_dealloc_mw(struct xr_mw *mw);
struct xr_qp;
/*
 * Binds a type 1 window, in qp's send queue order, as libibverbs does: its
 * rkey becomes xr_inc_rkey(mw->rkey) at once, the bind completes on qp's send
 * CQ (XR_WC_BIND_MW, or XR_WC_MW_BIND_ERR and the QP in ERR when a rule is
 * broken: the MR lacks XR_ACCESS_MW_BIND, the window leaves the MR, remote
 * write or atomic without the MR's local write). As in libibverbs, mw->rkey
 * moves when the bind is posted, also when it then fails; after a failed
 * bind the window keeps its old key and binding (and the QP is in ERR).
 * Posting XR_WR_BIND_MW sets mw->rkey to wr->bind_mw.rkey the same way.
 */
int xr_bind_mw(struct xr_qp *qp, struct xr_mw *mw, struct xr_mw_bind *mw_bind);

/* ---- completion queues ---------------------------------------------- */

enum xr_wc_status {
	XR_WC_SUCCESS,
	XR_WC_LOC_LEN_ERR,
	XR_WC_LOC_QP_OP_ERR,
	XR_WC_LOC_EEC_OP_ERR,
	XR_WC_LOC_PROT_ERR,
	XR_WC_WR_FLUSH_ERR,
	XR_WC_MW_BIND_ERR,
	XR_WC_BAD_RESP_ERR,
	XR_WC_LOC_ACCESS_ERR,
	XR_WC_REM_INV_REQ_ERR,
	XR_WC_REM_ACCESS_ERR,
	XR_WC_REM_OP_ERR,
	XR_WC_RETRY_EXC_ERR,
	XR_WC_RNR_RETRY_EXC_ERR,
	XR_WC_LOC_RDD_VIOL_ERR,
	XR_WC_REM_INV_RD_REQ_ERR,
	XR_WC_REM_ABORT_ERR,
	XR_WC_INV_EECN_ERR,
	XR_WC_INV_EEC_STATE_ERR,
	XR_WC_FATAL_ERR,
	XR_WC_RESP_TIMEOUT_ERR,
	XR_WC_GENERAL_ERR,
};

const char *xr_wc_status_str(enum xr_wc_status status);

enum xr_wc_opcode {
	XR_WC_SEND,
	XR_WC_RDMA_WRITE,
	XR_WC_RDMA_READ,
	XR_WC_COMP_SWAP,
	XR_WC_FETCH_ADD,
	XR_WC_BIND_MW,
	XR_WC_LOCAL_INV,
	XR_WC_MASKED_COMP_SWAP = 9,
	XR_WC_MASKED_FETCH_ADD,
	XR_WC_REG_MR,
	XR_WC_RECV = 1 << 7,
	XR_WC_RECV_RDMA_WITH_IMM,
};

enum xr_wc_flags {
	XR_WC_GRH = 1 << 0,
	XR_WC_WITH_IMM = 1 << 1,
	XR_WC_WITH_INV = 1 << 3,
};

struct xr_wc {
	uint64_t wr_id;
	enum xr_wc_status status;
	enum xr_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data;	   /* XR_WC_WITH_IMM: network byte order, as in verbs */
		uint32_t invalidated_rkey; /* XR_WC_WITH_INV: the key the SEND invalidated */
	};
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
};

struct xr_cq {
	struct xr_device *device;
	struct xr_comp_channel *channel;
	void *cq_context; /* the application's; returned by xr_get_cq_event */
	int cqe;
};

/* channel may be NULL; with one, completion events are delivered there. */
struct xr_cq *xr_create_cq(struct xr_device *dev, int cqe, struct xr_comp_channel *channel);
int xr_destroy_cq(struct xr_cq *cq);
/*
 * Returns the number of completions written to wc (0..num_entries), or a
 * negative errno. A poll that finds the CQ empty runs the engine on the
 * calling thread, so a spinning application is its own engine; num_entries
 * 0 does only that, for applications that spin on memory instead.
 */
int xr_poll_cq(struct xr_cq *cq, int num_entries, struct xr_wc *wc);

/* ---- completion channels ----------------------------------------------- */

/*
 * A completion channel wakes a sleeping consumer: arm a CQ with
 * xr_req_notify_cq, block in xr_get_cq_event (or poll() fd for POLLIN),
 * then poll the CQ and acknowledge the event. As in verbs, arming is
 * one-shot, and solicited_only fires on a completion of a message with the
 * solicited event bit, or on an error completion.
 */
struct xr_comp_channel {
	struct xr_device *device;
	int fd;	    /* readable while an event is pending; O_NONBLOCK may be set on it */
	int refcnt; /* CQs using it */
};

struct xr_comp_channel *xr_create_comp_channel(struct xr_device *dev);
int xr_destroy_comp_channel(struct xr_comp_channel *channel);
int xr_req_notify_cq(struct xr_cq *cq, int solicited_only);
/* Waits for an event (or returns -EAGAIN on a non-blocking fd). */
int xr_get_cq_event(struct xr_comp_channel *channel, struct xr_cq **cq, void **cq_context);
void xr_ack_cq_events(struct xr_cq *cq, unsigned int nevents);

/* ---- queue pairs ------------------------------------------------------ */

enum xr_qp_state {
	XR_QPS_RESET,
	XR_QPS_INIT,
	XR_QPS_RTR,
	XR_QPS_RTS,
	XR_QPS_SQD,
	XR_QPS_SQE,
	XR_QPS_ERR,
};

enum xr_mtu {
	XR_MTU_256 = 1,
	XR_MTU_512 = 2,
	XR_MTU_1024 = 3,
	XR_MTU_2048 = 4,
	XR_MTU_4096 = 5,
};

struct xr_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* ---- shared receive queues ------------------------------------------- */

struct xr_srq {
	struct xr_device *device;
	struct xr_pd *pd;
	void *srq_context;
	uint32_t handle;
};

struct xr_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* armed when not 0: one SRQ_LIMIT_REACHED, then 0 again */
};

struct xr_srq_init_attr {
	void *srq_context;
	struct xr_srq_attr attr;
};

enum xr_srq_attr_mask {
	XR_SRQ_MAX_WR = 1 << 0,
	XR_SRQ_LIMIT = 1 << 1,
};

/*
 * As ibv_create_srq and friends: RC, UC and UD QPs created with an SRQ take
 * their receives from it (xr_post_recv on them is EINVAL). The SRQ reports
 * in attr the room it really has. xr_modify_srq resizes (XR_SRQ_MAX_WR, not
 * below what is posted) and arms the limit (XR_SRQ_LIMIT, not above
 * max_wr): once fewer receives than srq_limit are posted, an
 * XR_EVENT_SRQ_LIMIT_REACHED event is raised and the limit disarms (0).
 * xr_destroy_srq is EBUSY while a QP uses the SRQ.
 */
struct xr_srq *xr_create_srq(struct xr_pd *pd, struct xr_srq_init_attr *init_attr);
int xr_modify_srq(struct xr_srq *srq, struct xr_srq_attr *attr, int attr_mask);
int xr_query_srq(struct xr_srq *srq, struct xr_srq_attr *attr);
int xr_destroy_srq(struct xr_srq *srq);
struct xr_recv_wr;
int xr_post_srq_recv(struct xr_srq *srq, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr);

/* ---- asynchronous events (values as ibv_event_type) ------------------- */

enum xr_event_type {
	XR_EVENT_CQ_ERR,
	XR_EVENT_QP_FATAL,
	XR_EVENT_QP_REQ_ERR,
	XR_EVENT_QP_ACCESS_ERR,
	XR_EVENT_COMM_EST,
	XR_EVENT_SQ_DRAINED,
	XR_EVENT_PATH_MIG,
	XR_EVENT_PATH_MIG_ERR,
	XR_EVENT_DEVICE_FATAL,
	XR_EVENT_PORT_ACTIVE,
	XR_EVENT_PORT_ERR,
	XR_EVENT_LID_CHANGE,
	XR_EVENT_PKEY_CHANGE,
	XR_EVENT_SM_CHANGE,
	XR_EVENT_SRQ_ERR,
	XR_EVENT_SRQ_LIMIT_REACHED,
	XR_EVENT_QP_LAST_WQE_REACHED,
	XR_EVENT_CLIENT_REREGISTER,
	XR_EVENT_GID_CHANGE,
};

struct xr_qp;
struct xr_async_event {
	union {
		struct xr_cq *cq;
		struct xr_qp *qp;
		struct xr_srq *srq;
		int port_num;
	} element;
	enum xr_event_type event_type;
};

/*
 * As ibv_get_async_event: blocks until an event is queued, unless the fd
 * xr_async_fd returns was made O_NONBLOCK (then -EAGAIN); the fd is readable
 * (poll, epoll) while events are queued. Every event taken is acknowledged
 * with xr_ack_async_event; a QP, CQ or SRQ with events taken and not
 * acknowledged cannot be destroyed (EBUSY). Events still queued for an
 * object that is destroyed are dropped.
 */
int xr_async_fd(struct xr_device *dev);
int xr_get_async_event(struct xr_device *dev, struct xr_async_event *event);
void xr_ack_async_event(struct xr_async_event *event);

struct xr_qp_init_attr {
	void *qp_context;
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_srq *srq; /* NULL: the QP has a receive queue of its own */
	struct xr_qp_cap cap;
	enum xr_qp_type qp_type;
	int sq_sig_all;
};

struct xr_qp {
	struct xr_device *device;
	struct xr_pd *pd;
	void *qp_context;
	struct xr_cq *send_cq;
	struct xr_cq *recv_cq;
	struct xr_srq *srq;
	uint32_t qp_num;
	enum xr_qp_state state;
	enum xr_qp_type qp_type;
};

struct xr_global_route {
	union xr_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct xr_ah_attr {
	struct xr_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t is_global;
	uint8_t port_num;
};

/* ---- address handles (UD) ----------------------------------------------- */

struct xr_ah {
	struct xr_device *device;
	struct xr_pd *pd;
	uint32_t handle;
};

/*
 * The 40 bytes every UD receive buffer starts with, as libibverbs' ibv_grh:
 * for RoCEv2 over IPv6 the IPv6 header; over IPv4, 20 zero bytes then the
 * IPv4 header (so sgid and dgid do not hold the addresses: use
 * xr_init_ah_from_wc, which reads them from either).
 */
struct xr_grh {
	uint32_t version_tclass_flow;
	uint16_t paylen;
	uint8_t next_hdr;
	uint8_t hop_limit;
	union xr_gid sgid;
	union xr_gid dgid;
};

#define XR_GRH_SIZE 40

/*
 * An address handle: where UD sends go (attr->is_global with grh.dgid and
 * grh.sgid_index; the neighbour's MAC is resolved as for RC, waiting up to 3 s).
 */
struct xr_ah *xr_create_ah(struct xr_pd *pd, struct xr_ah_attr *attr);
int xr_destroy_ah(struct xr_ah *ah);
struct xr_wc;
/*
 * The address of the sender of a UD receive completion wc whose buffer began
 * with grh, to answer it: as ibv_init_ah_from_wc / ibv_create_ah_from_wc.
 */
int xr_init_ah_from_wc(struct xr_device *dev, uint8_t port_num, const struct xr_wc *wc,
		       const struct xr_grh *grh, struct xr_ah_attr *ah_attr);
struct xr_ah *xr_create_ah_from_wc(struct xr_pd *pd, const struct xr_wc *wc,
				   const struct xr_grh *grh, uint8_t port_num);

/* The destination QPN of a datagram sent to a multicast group (as in xroce/wire.h). */
#define XR_MULTICAST_QPN 0xffffffu

/*
 * Multicast, as ibv_attach_mcast / ibv_detach_mcast: a UD QP attached to the
 * group gid (an IPv4-mapped GID of 224.0.0.0/4, or an IPv6 GID of ff00::/8)
 * receives every datagram sent to that group; lid is ignored (RoCE). While
 * any QP is attached, the interface is a member of the IP group (IGMP/MLD
 * through the kernel, which also programs the multicast MAC), and XDP
 * steers the group's frames to the engine; it drops multicast RoCE for other
 * groups. Attaching twice is no error and delivers once; detaching a QP not
 * attached is EINVAL; a QP attached to a group cannot be destroyed (EBUSY).
 * Sending to a group: an AH whose dgid is the group (its MAC is derived, as
 * RFC 1112/2464 map it) and remote_qpn XR_MULTICAST_QPN.
 */
int xr_attach_mcast(struct xr_qp *qp, const union xr_gid *gid, uint16_t lid);
int xr_detach_mcast(struct xr_qp *qp, const union xr_gid *gid, uint16_t lid);

/* Automatic path migration, as ibv_mig_state: xroce has one path, always MIGRATED. */
enum xr_mig_state {
	XR_MIG_MIGRATED,
	XR_MIG_REARM,
	XR_MIG_ARMED,
};

/*
 * As ibv_qp_attr. xroce has no alternate path: XR_QP_ALT_PATH and
 * XR_QP_PATH_MIG_STATE are refused (-EOPNOTSUPP) and the alt_ fields
 * query as zero.
 */
struct xr_qp_attr {
	enum xr_qp_state qp_state;
	enum xr_qp_state cur_qp_state;
	enum xr_mtu path_mtu;
	enum xr_mig_state path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct xr_qp_cap cap;
	struct xr_ah_attr ah_attr;
	struct xr_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
};

enum xr_qp_attr_mask {
	XR_QP_STATE = 1 << 0,
	XR_QP_CUR_STATE = 1 << 1,
	XR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	XR_QP_ACCESS_FLAGS = 1 << 3,
	XR_QP_PKEY_INDEX = 1 << 4,
	XR_QP_PORT = 1 << 5,
	XR_QP_QKEY = 1 << 6,
	XR_QP_AV = 1 << 7,
	XR_QP_PATH_MTU = 1 << 8,
	XR_QP_TIMEOUT = 1 << 9,
	XR_QP_RETRY_CNT = 1 << 10,
	XR_QP_RNR_RETRY = 1 << 11,
	XR_QP_RQ_PSN = 1 << 12,
	XR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	XR_QP_ALT_PATH = 1 << 14,
	XR_QP_MIN_RNR_TIMER = 1 << 15,
	XR_QP_SQ_PSN = 1 << 16,
	XR_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	XR_QP_PATH_MIG_STATE = 1 << 18,
	XR_QP_CAP = 1 << 19,
	XR_QP_DEST_QPN = 1 << 20,
};

struct xr_qp *xr_create_qp(struct xr_pd *pd, struct xr_qp_init_attr *init_attr);
int xr_modify_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int attr_mask);
/*
 * As ibv_query_qp: every attribute (attr_mask is ignored), with the current
 * state and PSNs (sq_psn the next PSN to send, rq_psn the next expected),
 * and init_attr as the QP was created (cap as it really is, rounded up).
 */
int xr_query_qp(struct xr_qp *qp, struct xr_qp_attr *attr, int attr_mask,
		struct xr_qp_init_attr *init_attr);
/* A UD QP's sends posted before it is destroyed still leave, as from a NIC's rung doorbell. */
int xr_destroy_qp(struct xr_qp *qp);

/* ---- work requests ---------------------------------------------------- */

struct xr_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum xr_wr_opcode {
	XR_WR_RDMA_WRITE,
	XR_WR_RDMA_WRITE_WITH_IMM,
	XR_WR_SEND,
	XR_WR_SEND_WITH_IMM,
	XR_WR_RDMA_READ,
	XR_WR_ATOMIC_CMP_AND_SWP,
	XR_WR_ATOMIC_FETCH_AND_ADD,
	XR_WR_LOCAL_INV,
	XR_WR_BIND_MW,
	XR_WR_SEND_WITH_INV,
	XR_WR_MASKED_ATOMIC_CMP_AND_SWP,
	XR_WR_MASKED_ATOMIC_FETCH_AND_ADD,
	/* A READ whose local MR (invalidate_rkey) is invalidated once the data landed. */
	XR_WR_RDMA_READ_WITH_INV,
	/* Fast registration of wr.reg.mr, as the kernel's IB_WR_REG_MR. */
	XR_WR_REG_MR = 0x20,
};

enum xr_send_flags {
	XR_SEND_FENCE = 1 << 0,
	XR_SEND_SIGNALED = 1 << 1,
	XR_SEND_SOLICITED = 1 << 2,
	XR_SEND_INLINE = 1 << 3,
};

struct xr_send_wr {
	uint64_t wr_id;
	struct xr_send_wr *next;
	struct xr_sge *sg_list;
	int num_sge;
	enum xr_wr_opcode opcode;
	unsigned int send_flags;
	union {
		uint32_t imm_data; /* network byte order, as in verbs */
		/* SEND_WITH_INV: the peer's key to invalidate; LOCAL_INV, READ_WITH_INV: ours */
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		/*
		 * Masked CAS: swaps in (old & ~swap_mask) | (swap & swap_mask) when
		 * (old ^ compare_add) & compare_add_mask is 0. Masked FAA: adds
		 * compare_add field by field; a bit set in compare_add_mask marks the
		 * most significant bit of a field, and no carry crosses it.
		 */
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint64_t compare_add_mask;
			uint64_t swap_mask;
			uint32_t rkey;
		} masked_atomic;
		/* UD: remote_qkey with the high bit set means the QP's own Q_Key. */
		struct {
			struct xr_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	/* Outside wr, as libibverbs has bind_mw. */
	union {
		/* XR_WR_BIND_MW (type 2): rkey is the window's new rkey (xr_inc_rkey). */
		struct {
			struct xr_mw *mw;
			uint32_t rkey;
			struct xr_mw_bind_info bind_info;
		} bind_mw;
		/* XR_WR_REG_MR: key is mr->rkey after xr_update_fast_reg_key. */
		struct {
			struct xr_mr *mr;
			uint32_t key;
			int access;
		} reg;
	};
};

struct xr_recv_wr {
	uint64_t wr_id;
	struct xr_recv_wr *next;
	struct xr_sge *sg_list;
	int num_sge;
};

/* On error *bad_wr points at the first work request that was not posted. */
int xr_post_send(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad_wr);
/*
 * As xr_post_send, but the whole chain or none of it (ibv_wr_complete's
 * contract): every WR is checked, and room for all of them, before any is
 * posted. On error *bad_wr is the WR refused, or the first when the send
 * queue has no room for the chain (-ENOMEM). (XROCE_0.4)
 */
int xr_post_send_all_or_none(struct xr_qp *qp, struct xr_send_wr *wr, struct xr_send_wr **bad_wr);
int xr_post_recv(struct xr_qp *qp, struct xr_recv_wr *wr, struct xr_recv_wr **bad_wr);

/* ---- ports, and resizing CQs (XROCE_0.3) -------------------------------- */

/* The values of ibv_port_state. */
enum xr_port_state {
	XR_PORT_NOP,
	XR_PORT_DOWN,
	XR_PORT_INIT,
	XR_PORT_ARMED,
	XR_PORT_ACTIVE,
	XR_PORT_ACTIVE_DEFER,
};

/* The port_cap_flags bits of ibv_port_cap_flags that can apply to xroce. */
enum xr_port_cap_flags {
	XR_PORT_CM_SUP = 1 << 16,	 /* not set: xroce has no connection manager */
	XR_PORT_IP_BASED_GIDS = 1 << 26, /* the GIDs are the interface's IP addresses */
};

/* phys_state, as the IBA PortPhysicalState (ibv_devinfo prints them by name). */
enum xr_port_phys_state {
	XR_PORT_PHYS_STATE_SLEEP = 1,
	XR_PORT_PHYS_STATE_POLLING = 2,
	XR_PORT_PHYS_STATE_DISABLED = 3,
	XR_PORT_PHYS_STATE_LINK_UP = 5,
};

/* active_width and active_speed, as the kernel's IB_WIDTH_* and IB_SPEED_*. */
enum xr_port_width {
	XR_WIDTH_1X = 1,
	XR_WIDTH_4X = 2,
	XR_WIDTH_8X = 4,
	XR_WIDTH_12X = 8,
	XR_WIDTH_2X = 16,
};

enum xr_port_speed {
	XR_SPEED_SDR = 1,   /* 2.5 Gb/s per lane */
	XR_SPEED_DDR = 2,   /* 5 */
	XR_SPEED_QDR = 4,   /* 10 */
	XR_SPEED_FDR10 = 8, /* 10.3125 */
	XR_SPEED_FDR = 16,  /* 14.0625 */
	XR_SPEED_EDR = 32,  /* 25.78125 */
	XR_SPEED_HDR = 64,  /* 50 */
	XR_SPEED_NDR = 128, /* 100 */
};

/* The values of ibv_port_attr's link_layer. */
enum xr_link_layer {
	XR_LINK_LAYER_UNSPECIFIED,
	XR_LINK_LAYER_INFINIBAND,
	XR_LINK_LAYER_ETHERNET,
};

/* ibv_port_attr's fields that mean something on RoCE, in its order. */
struct xr_port_attr {
	enum xr_port_state state; /* ACTIVE: the interface is up with carrier; else DOWN */
	enum xr_mtu max_mtu;	  /* the largest path MTU xroce can run (2048, AF_XDP) */
	enum xr_mtu active_mtu;	  /* as xr_device_attr's */
	int gid_tbl_len;	  /* valid xr_query_gid indexes: 0 .. gid_tbl_len - 1 */
	uint32_t port_cap_flags;  /* enum xr_port_cap_flags */
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;	 /* requests dropped for their P_Key */
	uint32_t qkey_viol_cntr; /* datagrams dropped for their Q_Key (engine and XDP) */
	uint16_t pkey_tbl_len;	 /* 1: the default P_Key 0xffff */
	uint16_t lid;		 /* 0: RoCE has no LIDs */
	uint16_t sm_lid;	 /* 0: nor a subnet manager */
	uint8_t active_width;	 /* enum xr_port_width */
	uint8_t active_speed;	 /* enum xr_port_speed */
	uint8_t phys_state;	 /* enum xr_port_phys_state */
	uint8_t link_layer;	 /* XR_LINK_LAYER_ETHERNET */
};

/*
 * As ibv_query_port for the device's one port (port_num 1; else -EINVAL).
 * The link state is the interface's at the time of the call; speed and
 * width derive from its ethtool speed as the kernel's ib_get_eth_speed
 * does (an unknown speed counts as 1000 Mb/s).
 */
int xr_query_port(struct xr_device *dev, uint8_t port_num, struct xr_port_attr *port_attr);

/*
 * As ibv_resize_cq: the CQ gets room for at least cqe completions (cq->cqe
 * says how many), and keeps those queued, in order. -EINVAL when cqe is
 * below 1, above the device's max_cqe, or below the number queued now.
 */
int xr_resize_cq(struct xr_cq *cq, int cqe);

#ifdef __cplusplus
}
#endif

#endif /* XROCE_XROCE_H */
