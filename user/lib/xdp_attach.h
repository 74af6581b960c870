/* SPDX-License-Identifier: MIT */
/*
 * Attaching the XDP program to an interface and opening what is pinned
 * under /sys/fs/bpf/xroce/IFNAME/ (see xroce/xdp_shared.h): used by the
 * loader and by the library (which attaches by itself when nothing is).
 */
#ifndef XROCE_XDP_ATTACH_H
#define XROCE_XDP_ATTACH_H

#include <stdbool.h>

#include "xroce/xdp_shared.h"

/*
 * Loads the program, attaches it to ifname with a bpf_link and pins the link
 * and every map. Returns 0; -ENODEV no such interface; -EEXIST already
 * attached (by xroce or by another XDP program); -EPERM not permitted; or
 * another negative errno. A failed attach leaves nothing behind.
 */
int xr_xdp_attach(const char *ifname);

/* Detaches and removes the pins. -ENOENT if xroce is not attached to ifname. */
int xr_xdp_detach(const char *ifname);

/* Whether xroce is attached to ifname (its pins exist). */
bool xr_xdp_is_attached(const char *ifname);

/* What a running device uses: the pinned maps, and the QP table mmap'ed. */
struct xr_xdp_handle {
	int qp_map_fd;
	int xsk_map_fd;
	int stats_map_fd;
	int config_map_fd;
	int engine_map_fd;
	struct xr_qp_entry *qp_table;	      /* XR_MAX_QP entries, shared with XDP */
	struct xr_engine_stats *engine_stats; /* the engine's counters, for operators */
};

int xr_xdp_open(const char *ifname, struct xr_xdp_handle *h);
void xr_xdp_close(struct xr_xdp_handle *h);

/* Sum of the per-CPU counters of ifname's program. */
int xr_xdp_read_stats(const char *ifname, struct xr_xdp_stats *sum);
/* The engine's counters on ifname (zero while no engine has run); -EPROTO if
 * another version of xroce pinned them. */
int xr_xdp_read_engine_stats(const char *ifname, struct xr_engine_stats *stats);

#endif /* XROCE_XDP_ATTACH_H */
