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

/* What the pins of an interface name stand for, seen from this network namespace. */
enum xr_xdp_state {
	XR_XDP_NOT_ATTACHED,
	XR_XDP_LIVE,	    /* on the interface of that name here */
	XR_XDP_OTHER_NETNS, /* on a live interface of that name in another network namespace */
	XR_XDP_OTHER_BUILD, /* on a live interface, pinned by a build with another map layout */
	/* Stale: nothing runs for the interface of that name here. */
	XR_XDP_STALE_GONE,     /* its interface was deleted (namespace gone, veth removed) */
	XR_XDP_STALE_OTHER_IF, /* the interface of that name here is not the one attached */
	XR_XDP_STALE_BROKEN,   /* pins incomplete: no link */
};

static inline bool xr_xdp_state_is_stale(enum xr_xdp_state state)
{
	return state >= XR_XDP_STALE_GONE;
}

/* Why an attachment is stale, for messages: "interface was gone", ... */
const char *xr_xdp_stale_reason(enum xr_xdp_state state);
/* Stable names for operators' output: "live", "stale", ...; "native", "generic". */
const char *xr_xdp_state_name(enum xr_xdp_state state);
const char *xr_xdp_mode_name(__u32 mode);

struct xr_xdp_attachment {
	enum xr_xdp_state state;
	__u32 prog_id;
	__u32 link_id;
	__u32 ifindex;	    /* the link's interface, in its namespace; 0 once it is gone */
	__u32 ifindex_here; /* the index of the interface of that name here; 0: none */
	__u32 mode;	    /* enum xr_xdp_mode; 0 when unknown (broken pins) */
	__u32 config_flags; /* enum xr_xdp_config_flags */
};

/* Fills *out for ifname's pins. Returns 0 (also when nothing is attached) or a negative errno. */
int xr_xdp_inspect(const char *ifname, struct xr_xdp_attachment *out);

struct xr_xdp_attach_opts {
	/* 0: native, or generic when the driver has no native XDP (see fell_back). */
	enum xr_xdp_mode mode;
	bool replace_stale; /* a stale attachment of ifname is replaced, not refused */
	bool embedded;	    /* the library attaches for its own device */
};

struct xr_xdp_attach_result {
	enum xr_xdp_mode mode; /* the hook the program runs at */
	bool fell_back;	       /* mode 0 and no native XDP in the driver: generic */
	/* The stale attachment that was replaced, or XR_XDP_NOT_ATTACHED. */
	enum xr_xdp_state replaced;
	/* On -EBUSY: the other XDP program on the interface, and its hook as
	 * `ip link` names it (xdpdrv, xdpgeneric, xdpoffload). */
	__u32 other_prog_id;
	char other_prog_name[16];
	const char *other_prog_hook;
};

/*
 * Loads the program, attaches it to ifname with a bpf_link in opts' mode and
 * pins the link and every map. opts may be NULL (native with fallback, no
 * replacing), res too. Returns 0; -ENODEV no such interface; -EEXIST already
 * attached; -ESTALE a stale attachment and !replace_stale; -EXDEV ifname's
 * pins belong to an interface of that name in another network namespace;
 * -EPROTO they are another build's (a different map layout);
 * -EBUSY another XDP program is on the interface (res names it);
 * -EOPNOTSUPP the driver has no native XDP (mode native);
 * -ENOMEDIUM /sys/fs/bpf is not the host's bpffs but a private mount
 * namespace's (`ip netns exec`): pins would die with it; -EPERM not
 * permitted; or another negative errno. A failed attach leaves nothing behind
 * and changes nothing, but for a stale attachment it was replacing when
 * pinning the new one failed.
 */
int xr_xdp_attach(const char *ifname, const struct xr_xdp_attach_opts *opts,
		  struct xr_xdp_attach_result *res);

/*
 * Detaches and removes the pins (also of a stale attachment). -ENOENT if
 * xroce is not attached to ifname; -EXDEV if its pins belong to an interface
 * of that name in another network namespace (detach there).
 */
int xr_xdp_detach(const char *ifname);

/*
 * Detaches and removes ifname's pins if they are stale: returns 1 and sets
 * *why, 0 when they are not (live, or nothing there), or a negative errno.
 */
int xr_xdp_detach_if_stale(const char *ifname, enum xr_xdp_state *why);

/* Whether xroce is attached to ifname (its pins exist). */
bool xr_xdp_is_attached(const char *ifname);

/*
 * What opening a device needs attached on ifname: a live attachment is used;
 * none is attached when may_attach (embedded default), and a stale one that
 * the library had attached for itself is replaced, both setting
 * *attached_by_us. Else -ENOENT (nothing attached, !may_attach), -ESTALE (a
 * stale attachment from the loader: `xroce attach IF` or `xroce detach
 * --stale`), -EXDEV, -EPROTO, or what xr_xdp_attach returns.
 */
int xr_xdp_prepare_device(const char *ifname, bool may_attach, bool *attached_by_us);

/*
 * Checks that /sys/fs/bpf can hold pins that outlive this process: 0, or
 * -ENOMEDIUM in a private mount namespace without the host's bpffs.
 */
int xr_xdp_check_bpffs(void);

/* What a running device uses: the pinned maps, and the QP table mmap'ed. */
struct xr_xdp_handle {
	int qp_map_fd;
	int xsk_map_fd;
	int stats_map_fd;
	int config_map_fd;
	int engine_map_fd;
	int mcast_map_fd;	      /* the groups local QPs are attached to (xr_mcast_entry) */
	int engine_port_map_fd;	      /* the owning engine's path MTU (xr_engine_port) */
	struct xr_qp_entry *qp_table; /* XR_QP_TABLE_SLOTS entries, shared with XDP */
	struct xr_engine_stats *engine_stats; /* the engine's counters, for operators */
	__u16 xsk_bind_flags;		      /* AF_XDP bind flags the attachment's mode needs */
};

int xr_xdp_open(const char *ifname, struct xr_xdp_handle *h);
void xr_xdp_close(struct xr_xdp_handle *h);

/* Sum of the per-CPU counters of ifname's program. */
int xr_xdp_read_stats(const char *ifname, struct xr_xdp_stats *sum);
/* The engine's counters on ifname (zero while no engine has run); -EPROTO if
 * another version of xroce pinned them. */
int xr_xdp_read_engine_stats(const char *ifname, struct xr_engine_stats *stats);
/* The owning engine writes its port's path MTU and what bounds it; anyone reads it. */
int xr_xdp_publish_engine_port(const struct xr_xdp_handle *h, const struct xr_engine_port *port);
int xr_xdp_read_engine_port(const char *ifname, struct xr_engine_port *port);

#endif /* XROCE_XDP_ATTACH_H */
