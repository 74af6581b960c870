/* SPDX-License-Identifier: MIT */
/*
 * State shared between the XDP program and userspace: the layouts of the
 * pinned maps under /sys/fs/bpf/xroce/IFNAME/. The BPF program defines the
 * maps with these value types so their BTF names every field for bpftool.
 */
#ifndef XROCE_XDP_SHARED_H
#define XROCE_XDP_SHARED_H

#include <linux/types.h>

/*
 * QP numbers handed out by a device are XR_QPN_BASE + slot, slot <
 * XR_MAX_QP, so the XDP program finds a QP's entry by subtraction.
 */
#define XR_QPN_BASE 0x11
#define XR_MAX_QP 1024
#define XR_MAX_QUEUES 64

#define XR_PIN_ROOT "/sys/fs/bpf/xroce"

/* Pinned names inside XR_PIN_ROOT/IFNAME/. */
#define XR_PIN_PROG_LINK "link"
#define XR_PIN_QP_MAP "qp_table"
#define XR_PIN_XSK_MAP "xsk_map"
#define XR_PIN_STATS_MAP "stats"
#define XR_PIN_CONFIG_MAP "config"

/* Values of xr_qp_entry.state: 0 means no QP, the XDP program drops. */
enum xr_xdp_qp_state {
	XR_XDP_QP_NONE = 0,
	XR_XDP_QP_ACTIVE = 1, /* accepts frames: steer them to the engine */
	XR_XDP_QP_CLOSED = 2, /* exists but accepts nothing (RESET, ERR) */
};

/*
 * One entry per QP slot in the mmap-able qp_table array. Userspace owns it;
 * the XDP program reads state and type, and only ever increments counters.
 */
struct xr_qp_entry {
	__u32 state; /* enum xr_xdp_qp_state */
	__u32 qp_type; /* enum xr_qp_type from xroce.h */
	__u32 committed_epsn; /* responder: next expected PSN, written by userspace only */
	__u32 acked_psn; /* requester: last acknowledged PSN */
	__u32 msn;
	__u32 engine_sleeping; /* set before the engine blocks */
	__u64 rx_frames; /* frames steered to the engine */
};

/* Per-CPU counters, one field per reason; bpftool prints them by name. */
struct xr_xdp_stats {
	__u64 passed_non_roce; /* not UDP/4791: handed to the kernel */
	__u64 redirected; /* steered to an AF_XDP socket */
	__u64 drop_truncated; /* frame ends inside a header */
	__u64 drop_bad_tver; /* BTH transport version != 0 */
	__u64 drop_bad_opcode; /* opcode not in the table */
	__u64 drop_bad_length; /* headers + pad + ICRC longer than the frame */
	__u64 drop_unknown_qp; /* destination QP not open here */
	__u64 drop_qp_state; /* QP exists but accepts nothing */
	__u64 drop_no_socket; /* no AF_XDP socket on this rx queue */
};

/* Single-entry array with the program's configuration. */
struct xr_xdp_config {
	__u32 ifindex;
	__u32 flags;
};

#endif /* XROCE_XDP_SHARED_H */
